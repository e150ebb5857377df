"""What an offline bundle packs (harness.bundle): the pinned dependency closure, the build backend, the corpora's and
models' distributions, and this checkout's files, but untracked secrets and the bundle itself."""

from __future__ import annotations

import fnmatch
import re
import subprocess
import tomllib
from importlib import metadata
from pathlib import Path
from typing import Sequence

from packaging.requirements import Requirement

from harness.capture.corpus import DISTRIBUTIONS as CORPUS_DISTRIBUTIONS
from harness.spec.models import REGISTRY

ROOT = Path(__file__).resolve().parents[1]
PROJECT = "abspos-claims"
# untracked files by these names are never packed: a bundle goes to a shared cluster (tracked ones are in git already)
SECRETS = (
    ".env",
    ".env.*",
    "*.env",
    ".netrc",
    ".pypirc",
    ".git-credentials",
    "*.pem",
    "*.key",
    "id_rsa*",
    "id_ecdsa*",
    "id_ed25519*",
    "*.p12",
    "*.pfx",
)


class BundleError(ValueError):
    """A request the bundle cannot satisfy: one line saying which and why."""


def release(version: str) -> str:
    """A version without its local label (torch's 2.13.0+cpu -> 2.13.0): the same release on every index."""
    return version.split("+", 1)[0]


def requirements(torch: str = "included") -> list[str]:
    """The installed dependency closure of abspos-claims[dev], each pinned ``name==version``: what this checkout runs
    with. Without torch where the node supplies it (its own dependencies then come from the node too)."""
    seen: dict[str, str] = {}
    todo = [(PROJECT, ("dev",))]
    while todo:
        name, extras = todo.pop()
        dist = metadata.distribution(name)
        for line in dist.requires or []:
            req = Requirement(line)
            if req.marker is not None and not any(req.marker.evaluate({"extra": e}) for e in (*extras, "")):
                continue
            key = re.sub(r"[-_.]+", "-", req.name).lower()
            if key in seen or (torch == "node" and key == "torch"):
                continue
            try:
                seen[key] = release(metadata.version(req.name))
            except metadata.PackageNotFoundError:
                raise BundleError(
                    f"{req.name} (required by {name}) is not installed here: run `bash scripts/setup.sh` first"
                ) from None
            todo.append((req.name, tuple(req.extras)))
    return [f"{k}=={v}" for k, v in sorted(seen.items())]


def build_requirements() -> list[str]:
    """The build backend the project's editable install needs ([build-system] requires)."""
    return list(tomllib.loads((ROOT / "pyproject.toml").read_text())["build-system"]["requires"])


def data_distributions(models: Sequence[str]) -> list[str]:
    """The corpora's distributions, then each model's weight distributions (all name==version, --no-deps)."""
    return [*CORPUS_DISTRIBUTIONS, *(d for m in models for d in REGISTRY[m].distributions)]


def _git_files(root: Path, *which: str) -> list[str]:
    out = subprocess.run(
        ["git", "ls-files", "-z", *which, "--exclude-standard"], cwd=root, check=True, capture_output=True
    ).stdout.decode()
    return [f for f in out.split("\0") if f]


def untracked_secrets(root: Path = ROOT) -> list[str]:
    """The checkout's untracked, not ignored files named like secrets (``.env``, keys, credentials): never packed."""
    return sorted(f for f in _git_files(root, "--others") if any(fnmatch.fnmatch(Path(f).name, p) for p in SECRETS))


def project_files(root: Path = ROOT, out: Path | None = None) -> list[str]:
    """This checkout's tracked and untracked, not ignored files (what a clone plus the uncommitted work holds), but
    untracked secrets and anything under ``out`` (the bundle being written, which must never pack itself)."""
    files = set(_git_files(root, "--cached", "--others")) - set(untracked_secrets(root))
    if out is not None and out.resolve().is_relative_to(root.resolve()):
        files = {f for f in files if not (root / f).resolve().is_relative_to(out.resolve())}
    return sorted(f for f in files if (root / f).is_file())


def git_commit() -> str:
    r = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    return r.stdout.strip() if r.returncode == 0 else ""
