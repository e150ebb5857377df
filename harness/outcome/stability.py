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

from harness.files.atomic import write_text
from harness.files.paths import STABILITY
from harness.outcome.known_outcomes import test_function
from harness.outcome.results import load_results

DECIDED = ("held", "not held")


def _scalars(record: dict) -> dict:
    return {f["name"]: f["value"] for f in record.get("figures") or []
            if isinstance(f.get("value"), (int, float)) and not isinstance(f.get("value"), bool)}


def combine(runs: list[dict]) -> dict:
    """{"settings", "seeds", "tests": {test: {model: {"verdicts": {seed: verdict}, "unstable", "ranges"}}}}.
    The runs must share every setting but the seed, and have at least three distinct seeds."""
    from harness.spec.settings import Settings

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


class StabilityError(ValueError):
    """A stability record that cannot be used; the message is one line naming the file and what is wrong."""


def _entry_problem(e) -> str | None:
    if not isinstance(e, dict):
        return "is not an object"
    if not isinstance(e.get("verdicts"), dict) or not all(isinstance(v, str) for v in e["verdicts"].values()):
        return 'has no "verdicts" object of seed: verdict'
    if not isinstance(e.get("unstable", False), bool):
        return '"unstable" is not true or false'
    ranges = e.get("ranges", {})
    if not isinstance(ranges, dict) or not all(
            isinstance(r, list) and len(r) == 2 and all(isinstance(x, (int, float)) for x in r) for r in ranges.values()):
        return '"ranges" is not an object of [low, high] pairs'
    if not isinstance(e.get("harness_error_seeds", []), list):
        return '"harness_error_seeds" is not a list'
    return None


def problem(data) -> str | None:
    """What makes parsed JSON not a stability record (None if it is one; {} is the empty record)."""
    if not isinstance(data, dict):
        return "not a JSON object"
    if not data:
        return None
    if not isinstance(data.get("settings"), dict):
        return 'no "settings" object'
    if not isinstance(data.get("seeds"), list):
        return 'no "seeds" list'
    if not isinstance(data.get("tests"), dict):
        return 'no "tests" object'
    for test, per in data["tests"].items():
        if not isinstance(per, dict):
            return f"the entry for {test} is not an object of models"
        for model, e in per.items():
            if p := _entry_problem(e):
                return f"the entry for {test} on {model} {p}"
    return None


def load(path: Path = STABILITY, required: bool = False) -> dict:
    """The stability record at ``path``, checked ({} where there is none, unless ``required``: a path given on
    the command line must exist); a damaged or wrong-shaped file raises ``StabilityError``, one line naming it."""
    path = Path(path)
    if not path.exists():
        if required:
            raise StabilityError(f"{path}: no such file")
        return {}
    try:
        text = path.read_text(encoding="utf-8")
    except IsADirectoryError:
        raise StabilityError(f"{path}: a folder, not a stability record file") from None
    except (OSError, UnicodeDecodeError) as e:
        raise StabilityError(f"{path}: cannot read it ({getattr(e, 'strerror', None) or e})") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise StabilityError(f"{path}: not valid JSON (truncated? {e.msg}: line {e.lineno} column {e.colno}); "
                             f"re-record it: python -m harness.stability record RUN RUN RUN") from None
    if p := problem(data):
        raise StabilityError(f"{path}: not a stability record ({p}); re-record it: python -m harness.stability "
                             f"record RUN RUN RUN")
    return data


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
        try:
            print(methods_list(load()), end="")
        except StabilityError as e:
            print(f"stability: {e}", file=sys.stderr)
            return 2
        return 0
    if len(argv) < 4 or argv[0] != "record":
        print("usage: python -m harness.stability record RUN RUN RUN [...] | methods", file=sys.stderr)
        return 2
    try:
        data = combine([load_results(p) for p in argv[1:]])
    except (OSError, ValueError, KeyError) as e:
        print(f"stability: {e}", file=sys.stderr)
        return 2
    try:
        write_text(STABILITY, json.dumps(data, indent=1, sort_keys=True, allow_nan=True) + "\n")
    except OSError as e:
        print(f"stability: {e}", file=sys.stderr)
        return 2
    print(methods_list(data), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
