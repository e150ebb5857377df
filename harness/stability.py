"""Borderline verdicts: the verdict of every claim test on every model under several seeds.

Each seed redraws everything random (prompts, pairs, sign flips and permutations, bootstrap resamples;
``--seed``). A verdict that differs between seeds is **unstable**: the report shows it as such with the range
of its figures, and METHODS.md lists it (``python -m harness.stability methods`` prints the list).

    bash scripts/stability.sh                      # three bundled runs (seeds 0, 1, 2), then:
    python -m harness.stability record RUN_DIR RUN_DIR RUN_DIR [...]   # -> fixtures/stability.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from .known_outcomes import test_function
from .paths import STABILITY
from .results import load_results

DECIDED = ("held", "not held")


def _scalars(record: dict) -> dict:
    return {f["name"]: f["value"] for f in record.get("figures") or []
            if isinstance(f.get("value"), (int, float)) and not isinstance(f.get("value"), bool)}


def combine(runs: list[dict]) -> dict:
    """{"settings", "seeds", "tests": {test: {model: {"verdicts": {seed: verdict}, "unstable", "ranges"}}}}.
    The runs must share every setting but the seed, and have at least three distinct seeds."""
    from .session import Settings

    settings = [Settings.from_dict(r.get("settings") or {}) for r in runs]
    if len({json.dumps(s.verdict_key(), sort_keys=True) for s in settings}) != 1:
        raise ValueError("the runs differ in more than the seed: " + "; ".join(
            s.describe(s.verdict_key()) for s in settings))
    seeds = [s.seed for s in settings]
    if len(set(seeds)) < 3 or len(set(seeds)) != len(seeds):
        raise ValueError(f"need at least three runs with distinct seeds, got seeds {seeds}")
    tests: dict = {}
    for seed, run in zip(seeds, runs):
        for r in run["records"]:
            if r.get("model") and r.get("verdict") not in ("n/a", "skipped", None):
                e = tests.setdefault(test_function(r["test"]), {}).setdefault(r["model"], {"verdicts": {}, "figures": {}})
                e["verdicts"][str(seed)] = "held" if r["verdict"] == "stale" else r["verdict"]
                for name, v in _scalars(r).items():
                    e["figures"].setdefault(name, []).append(v)
    for per_model in tests.values():
        for e in per_model.values():
            e["unstable"] = len({v for v in e["verdicts"].values() if v in DECIDED}) > 1
            e["harness_error_seeds"] = sorted(k for k, v in e["verdicts"].items() if v == "harness error")
            figs = e.pop("figures")
            e["ranges"] = {k: [min(v), max(v)] for k, v in figs.items()} if e["unstable"] else {}
    return {"settings": settings[0].verdict_key(), "seeds": sorted(seeds), "tests": tests}


def load(path: Path = STABILITY) -> dict:
    return json.loads(Path(path).read_text()) if Path(path).exists() else {}


def unstable(data: dict, test: str, model: str, key: dict) -> dict | None:
    """The stability entry of an unstable (test, model) at these verdict settings, else None."""
    if not data or data.get("settings") != key:
        return None
    e = data.get("tests", {}).get(test, {}).get(model)
    return e if e and e.get("unstable") else None


def describe(entry: dict) -> str:
    """'held at seeds 0, 2; not held at 1' plus the range of each figure across the seeds."""
    by: dict = {}
    for seed, v in entry["verdicts"].items():
        by.setdefault(v, []).append(seed)
    text = "; ".join(f"{v} at seed{'s' if len(s) > 1 else ''} {', '.join(s)}" for v, s in by.items())
    ranges = ", ".join(f"{k} {lo:.4g}–{hi:.4g}" for k, (lo, hi) in entry.get("ranges", {}).items() if lo != hi)
    return text + (f" (range across seeds: {ranges})" if ranges else "")


def methods_list(data: dict) -> str:
    """The METHODS.md list of unstable verdicts."""
    if not data:
        return "- (no stability record: run `bash scripts/stability.sh`)\n"
    rows = [f"- `{t}` on {m}: {describe(e)}" for t, per in sorted(data["tests"].items())
            for m, e in sorted(per.items()) if e["unstable"]]
    rows += [f"- `{t}` on {m}: a harness error at seed{'s' if len(e['harness_error_seeds']) > 1 else ''} "
             f"{', '.join(e['harness_error_seeds'])} (no verdict there)" for t, per in sorted(data["tests"].items())
             for m, e in sorted(per.items()) if e.get("harness_error_seeds")]
    head = f"Seeds {', '.join(map(str, data['seeds']))}; every other setting at its default.\n\n"
    return head + ("\n".join(rows) if rows else "- none: every verdict is the same under every seed") + "\n"


def main(argv: list[str]) -> int:
    if len(argv) >= 1 and argv[0] == "methods":
        print(methods_list(load()), end="")
        return 0
    if len(argv) < 4 or argv[0] != "record":
        print("usage: python -m harness.stability record RUN RUN RUN [...] | methods", file=sys.stderr)
        return 2
    try:
        data = combine([load_results(p) for p in argv[1:]])
    except (OSError, ValueError, KeyError) as e:
        print(f"stability: {e}", file=sys.stderr)
        return 2
    STABILITY.write_text(json.dumps(data, indent=1, sort_keys=True, allow_nan=True) + "\n")
    print(methods_list(data), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
