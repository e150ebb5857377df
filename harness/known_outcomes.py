"""Claims measured not to hold on a model: strict xfails, kept as data in fixtures/known_outcomes.json.

Each entry is written after a run, carries the measured figure and the reason, and is strict: if the
claim starts to hold, the xfail fails and the entry must be removed.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

from .paths import KNOWN_OUTCOMES

PATH = KNOWN_OUTCOMES


@lru_cache(maxsize=1)
def table() -> dict:
    return json.loads(PATH.read_text()) if PATH.exists() else {}


def reason(test_name: str, model: str | None) -> str | None:
    entry = table().get(test_name, {})
    return entry.get(model) if model else None


def record(results_json: Path, path: Path = PATH) -> list[str]:
    """Add every claim that failed with ClaimNotHeld in a run to the table, keyed by test function and
    model, with the measured figure in the reason. Failures of any other kind (a crash, a snapshot drift)
    are never recorded. Returns the entries added."""
    results = json.loads(Path(results_json).read_text())
    data = json.loads(path.read_text()) if path.exists() else {}
    added = []
    for r in results["records"]:
        marker = "ClaimNotHeld: "
        if r["outcome"] != "failed" or marker not in r["reason"] or not r["model"]:
            continue
        func = r["test"].split("::")[-1].split("[")[0]
        reason = f"measured: {r['reason'].split(marker, 1)[1]}"
        data.setdefault(func, {})[r["model"]] = reason
        added.append(f"{func}[{r['model']}]: {reason}")
    path.write_text(json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
    table.cache_clear()
    return added


if __name__ == "__main__":  # python -m harness.known_outcomes record reports/latest/results.json
    import sys

    if len(sys.argv) != 3 or sys.argv[1] != "record":
        sys.exit("usage: python -m harness.known_outcomes record RESULTS_JSON")
    print("\n".join(record(Path(sys.argv[2]))) or "nothing to record")
