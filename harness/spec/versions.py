"""The releases of transformers and torch the suite measures with: the one statement of its supported range.

pyproject.toml's requirements, the weekly version matrix (.github/workflows/version-matrix.yml), README and
docs/gpus.md say the same floors (tests/test_version_range.py holds them to it). A floor is the oldest release under
which every bundled model was measured and agreed with the committed example (``RECORD``: the bundled claims under
the floor and under the newest release, compared with reports/example). Below a floor a claims run is refused in one
line before any work (harness.run.context), unless ``--allow-untested-versions``; the report then flags the run in
its run line (harness.report.document). There is no ceiling: a newer release is what the suite exists to check
(docs/running.md, "After a transformers update").

Pure standard library: versions are compared by their leading release numbers ("2.13.0+cpu" is 2.13.0; a pre-release
"5.24.0rc1" counts as 5.24.0).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import metadata

#: The committed record of the measurement that sets the floors below.
RECORD = "reports/versions-2026-11-29"


@dataclass(frozen=True)
class Floor:
    package: str
    oldest: str  # the oldest release measured
    why: str  # what goes wrong below it, in a phrase


FLOORS = (
    Floor(
        "transformers",
        "5.18.0",
        "5.17 and older convert the bundled Gemma-3's GGUF tokenizer to other token ids: its prompts, and so its "
        "figures, differ",
    ),
    Floor("torch", "2.6.0", "transformers 5 disables PyTorch below 2.6, so no model loads"),
)
NEWEST_MEASURED = {"transformers": "5.24.0", "torch": "2.13.0"}  # the newest releases in RECORD


def release(version: str) -> tuple[int, ...]:
    """The leading release numbers of a version string: "2.13.0+cpu" -> (2, 13, 0); "5.24.0rc1" -> (5, 24, 0)."""
    numbers = re.match(r"\s*v?(\d+(?:\.\d+)*)", version)
    if numbers is None:
        raise ValueError(f"not a release version: {version!r}")
    parts = [int(x) for x in numbers.group(1).split(".")]
    while len(parts) > 1 and parts[-1] == 0:
        parts.pop()
    return tuple(parts)


def installed(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def untested(versions: dict | None = None) -> list[str]:
    """One phrase per package of ``versions`` ({package: version}; default: as installed here) older than its floor,
    e.g. "transformers 5.17.0 is older than the oldest release this suite measures with, 5.18.0 (…)"."""
    out = []
    for floor in FLOORS:
        found = (versions or {}).get(floor.package) if versions is not None else installed(floor.package)
        below = [v for v in str(found or "").split(" / ") if v and _older(v, floor.oldest)]  # a merge joins " / "
        if below:
            out.append(
                f"{floor.package} {' / '.join(below)} is older than the oldest release this suite measures with, "
                f"{floor.oldest} ({floor.why}; {RECORD})"
            )
    return out


def _older(version: str, oldest: str) -> bool:
    try:
        return release(version) < release(oldest)
    except ValueError:
        return False  # a version string of no release numbers: nothing to judge


def refusal(problems: list[str]) -> str:
    """The one line a claims run outside the supported range ends with (exit 4)."""
    return (
        "; ".join(problems)
        + ": install a supported release (pip install 'transformers>="
        + FLOORS[0].oldest
        + "' 'torch>="
        + FLOORS[1].oldest
        + "'), or pass --allow-untested-versions to run anyway (the report flags the run)"
    )


def requirement(package: str) -> str:
    """The pyproject.toml requirement of a floored package: "transformers>=5.18.0"."""
    return f"{package}>={next(f.oldest for f in FLOORS if f.package == package)}"
