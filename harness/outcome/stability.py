"""Borderline verdicts: the verdict of every claim test on every model under several seeds.

Each seed redraws everything random (prompts, pairs, sign flips and permutations, bootstrap resamples;
``--seed``). A verdict that differs between seeds is **unstable**: the report shows it as such with the range
of its figures, and METHODS.md lists it (``abspos-claims stability methods`` prints the list).

    bash scripts/stability.sh                      # five bundled runs (seeds 0 to 4), then:
    abspos-claims stability record RUN_DIR ... (five)             # -> fixtures/stability.json

Each entry keeps, per seed, the decision that gave the verdict (``deciding``: its check, estimate, interval,
criterion and margin, as harness.spec.decision measures it), so a reader sees how far each seed's interval was from
its threshold, not only which way it fell.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, cast

from harness.files.atomic import JSONFileError, read_json, write_text
from harness.files.paths import STABILITY
from harness.outcome.nodeid import test_function
from harness.outcome.results import Record, load_results
from harness.outcome.verdict import DECIDED, NOT_RUN, Verdict

#: The fewest distinct seeds a stability entry is taken over: with three, a verdict that flips one seed in five is
#: missed about half the time (0.8^3), with five a third of the time.
MIN_SEEDS = 5


def deciding(record: Record) -> dict | None:
    """The decision that gave a record its verdict (the one whose margin is the record's), as the stability record
    keeps it; None where no rule decided it (an exact check, a count)."""
    margin = record.get("margin")
    d = next((d for d in record.get("decisions") or () if margin is not None and d.get("margin") == margin), None)
    if d is None:
        return None
    return {k: d.get(k) for k in ("check", "verdict", "estimate", "interval", "criterion", "margin")}


def _scalars(record: Record) -> dict[str, float]:
    return {
        f["name"]: f["value"]
        for f in record.get("figures") or []
        if isinstance(f.get("value"), (int, float)) and not isinstance(f.get("value"), bool)
    }


def combine(runs: list[dict[str, Any]], complete_only: bool = False, left_out: list | None = None) -> dict[str, Any]:
    """{"settings", "seeds", "tests": {test: {model: {"verdicts": {seed: verdict}, "deciding": {seed: decision},
    "unstable", "ranges"}}}}. The runs must share every setting but the seed, and have at least ``MIN_SEEDS`` distinct
    seeds; so must each (test, model) entry: one with verdicts under fewer seeds is left out (appended to ``left_out``
    as "test on model (seeds 0, 1)"), and runs that leave no entry raise ValueError ("nothing to record").
    ``complete_only``: only the (test, model) pairs with a verdict in every run (runs of a few claims beside a full
    one)."""
    from harness.spec.settings import Settings

    settings = [Settings.from_dict(r.get("settings") or {}) for r in runs]
    if len({json.dumps(s.verdict_key(), sort_keys=True) for s in settings}) != 1:
        raise ValueError(
            "the runs differ in more than the seed: " + "; ".join(s.describe(s.verdict_key()) for s in settings)
        )
    seeds = [s.seed for s in settings]
    if len(set(seeds)) < MIN_SEEDS or len(set(seeds)) != len(seeds):
        raise ValueError(f"need at least {MIN_SEEDS} runs with distinct seeds, got seeds {seeds}")
    tests: dict = {}
    for seed, run in zip(seeds, runs):
        r: Record
        for r in run["records"]:
            if r.get("model") and r.get("verdict") not in (*NOT_RUN, None):
                e = tests.setdefault(test_function(r["test"]), {}).setdefault(
                    r["model"], {"verdicts": {}, "figures": {}, "deciding": {}}
                )
                e["verdicts"][str(seed)] = Verdict.HELD.value if r["verdict"] == Verdict.STALE else r["verdict"]
                if (d := deciding(r)) is not None:
                    e["deciding"][str(seed)] = d
                for name, v in _scalars(r).items():
                    e["figures"].setdefault(name, []).append(v)
    least = len(runs) if complete_only else MIN_SEEDS
    short = [(t, m, e) for t, per in tests.items() for m, e in per.items() if len(e["verdicts"]) < least]
    if not complete_only and left_out is not None:
        left_out += [
            f"{t} on {m} (seed{'s' * (len(e['verdicts']) > 1)} {', '.join(e['verdicts'])})" for t, m, e in short
        ]
    tests = {
        t: kept for t, per in tests.items() if (kept := {m: e for m, e in per.items() if len(e["verdicts"]) >= least})
    }
    if not tests:
        raise ValueError(
            "no test has a verdict in every run: nothing to record"
            if complete_only
            else f"no test has verdicts under {MIN_SEEDS} or more seeds (each run holds other tests): nothing to record"
        )
    for per_model in tests.values():
        for e in per_model.values():
            e["unstable"] = len({v for v in e["verdicts"].values() if v in DECIDED}) > 1
            e["harness_error_seeds"] = sorted(k for k, v in e["verdicts"].items() if v == Verdict.HARNESS_ERROR)
            figs = e.pop("figures")
            e["ranges"] = {k: [min(v), max(v)] for k, v in figs.items()} if e["unstable"] else {}
    return {"settings": settings[0].verdict_key(), "seeds": sorted(seeds), "tests": tests}


class StabilityError(JSONFileError):
    """A stability record that cannot be used; the message is one line naming the file and what is wrong."""

    #: As the stability record has always worded them: undecodable text is unreadable, an empty file invalid JSON.
    PHRASES = {
        **JSONFileError.PHRASES,
        "undecodable": JSONFileError.PHRASES["unreadable"],
        "empty": JSONFileError.PHRASES["invalid"],
    }
    ADVICE = "re-record it: abspos-claims stability record RUN RUN RUN RUN RUN (one per seed, 0-4)"


def _number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _entry_problem(e) -> str | None:
    """What keeps one (test, model) entry from being read (None if nothing): every key the readers use
    (``describe``, ``methods_list``, ``unstable``, ``merge``)."""
    if not isinstance(e, dict):
        return "is not an object"
    verdicts = e.get("verdicts")
    if not isinstance(verdicts, dict) or not all(isinstance(v, str) for v in verdicts.values()):
        return 'has no "verdicts" object of seed: verdict'
    if not all(k.isdigit() for k in verdicts) or not all(v in set(Verdict) for v in verdicts.values()):
        return 'has "verdicts" that are not of whole-number seeds and known verdicts'
    if not isinstance(e.get("unstable"), bool):
        return 'has no "unstable" true or false'
    ranges = e.get("ranges", {})
    if not isinstance(ranges, dict) or not all(
        isinstance(r, list) and len(r) == 2 and all(map(_number, r)) for r in ranges.values()
    ):
        return '"ranges" is not an object of [low, high] pairs'
    errors = e.get("harness_error_seeds", [])
    if not isinstance(errors, list) or not all(isinstance(x, str) and x in verdicts for x in errors):
        return '"harness_error_seeds" is not a list of its seeds (as strings, "0")'
    if not isinstance(e.get("deciding", {}), dict) or not all(
        isinstance(d, dict) for d in e.get("deciding", {}).values()
    ):
        return '"deciding" is not an object of seed: decision'
    return None


def problem(data) -> str | None:
    """What makes parsed JSON not a stability record (None if it is one; {} is the empty record)."""
    if not isinstance(data, dict):
        return "not a JSON object"
    if not data:
        return None
    if not isinstance(data.get("settings"), dict):
        return 'no "settings" object'
    if not isinstance(data.get("seeds"), list) or not all(
        isinstance(x, int) and not isinstance(x, bool) for x in data["seeds"]
    ):
        return 'no "seeds" list of whole numbers'
    if not isinstance(data.get("tests"), dict):
        return 'no "tests" object'
    for test, per in data["tests"].items():
        if not isinstance(per, dict):
            return f"the entry for {test} is not an object of models"
        for model, e in per.items():
            if p := _entry_problem(e):
                return f"the entry for {test} on {model} {p}"
    return None


def load(path: Path = STABILITY, required: bool = False) -> dict[str, Any]:
    """The stability record at ``path``, checked ({} where there is none, unless ``required``: a path given on
    the command line must exist); a damaged or wrong-shaped file raises ``StabilityError``, one line naming it."""
    path = Path(path)
    if not path.exists():
        if required:
            raise StabilityError.of(path, "missing", "stability record")
        return {}
    data = read_json(path, "stability record", StabilityError)
    if p := problem(data):
        raise StabilityError(f"{path}: not a stability record ({p}); {StabilityError.ADVICE}")
    return cast(dict[str, Any], data)


def unstable(data: dict, test: str, model: str, key: dict) -> dict | None:
    """The stability entry of an unstable (test, model) at these verdict settings, else None."""
    if not data or data.get("settings") != key:
        return None
    e = data.get("tests", {}).get(test, {}).get(model)
    return e if e and e.get("unstable") else None


def describe(entry: dict) -> str:
    """'held at seeds 0, 2; not held at 1' plus the range of each figure across the seeds, and each seed's deciding
    estimate, interval and margin where the record keeps them."""
    by: dict = {}
    for seed, v in entry["verdicts"].items():
        by.setdefault(v, []).append(seed)
    text = "; ".join(f"{v} at seed{'s' if len(s) > 1 else ''} {', '.join(s)}" for v, s in by.items())
    ranges = ", ".join(f"{k} {lo:.4g}–{hi:.4g}" for k, (lo, hi) in entry.get("ranges", {}).items() if lo != hi)
    text += f" (range across seeds: {ranges})" if ranges else ""
    margins = margins_text(entry)
    return text + (f"; deciding criterion by seed: {margins}" if margins else "")


def margins_text(entry: dict) -> str:
    """'0: 1.09 [0.815, 1.26] margin +0.482, 1: ...': each seed's deciding estimate, interval and margin."""
    out = []
    for seed, d in sorted((entry.get("deciding") or {}).items(), key=lambda kv: int(kv[0])):
        ci = d.get("interval")
        where = f" [{ci[0]:.3g}, {ci[1]:.3g}]" if isinstance(ci, list) and len(ci) == 2 else " (point estimate)"
        estimate, margin = d.get("estimate"), d.get("margin")
        shown = f"{estimate:.3g}" if isinstance(estimate, (int, float)) else "?"
        out.append(f"{seed}: {shown}{where}" + (f" margin {margin:+.3g}" if isinstance(margin, (int, float)) else ""))
    return ", ".join(out)


def methods_list(data: dict) -> str:
    """The METHODS.md list of unstable verdicts."""
    if not data:
        return "- (no stability record: run `bash scripts/stability.sh`)\n"
    rows = [
        f"- `{t}` on {m}: {describe(e)}"
        for t, per in sorted(data["tests"].items())
        for m, e in sorted(per.items())
        if e["unstable"]
    ]
    rows += [
        f"- `{t}` on {m}: a harness error at seed{'s' if len(e['harness_error_seeds']) > 1 else ''} "
        f"{', '.join(e['harness_error_seeds'])} (no verdict there)"
        for t, per in sorted(data["tests"].items())
        for m, e in sorted(per.items())
        if e.get("harness_error_seeds")
    ]
    head = (
        f"Seeds {', '.join(map(str, data['seeds']))} (each entry says which it was run under); every other setting "
        "at its default.\n\n"
    )
    return head + ("\n".join(rows) if rows else "- none: every verdict is the same under every seed") + "\n"


class NothingNew(ValueError):
    """``record --merge`` of runs whose entries the record already holds as they are: nothing is written."""


def _entries(data: dict) -> dict[tuple[str, str], dict]:
    return {(t, m): e for t, per in (data.get("tests") or {}).items() for m, e in per.items()}


def _seeds(seeds) -> str:
    return ", ".join(map(str, seeds)) or "none"


def merge(old: dict, new: dict, replace: bool = False) -> dict:
    """The record ``old`` with each (test, model) entry of ``new`` in place of its own, the rest kept: a few tests
    re-taken under more seeds without re-running every claim. Both must be of the same verdict settings; an entry of
    ``new`` under fewer seeds than the one it would replace is refused (ValueError) unless ``replace``; a ``new``
    that changes nothing raises ``NothingNew``."""
    if old and old.get("settings") != new["settings"]:
        raise ValueError("the runs are of other settings than the stability record: re-record it whole")
    before = _entries(old)
    fewer = [
        (k, e) for k, e in _entries(new).items() if k in before and len(e["verdicts"]) < len(before[k]["verdicts"])
    ]
    if fewer and not replace:
        (t, m), e = fewer[0]
        raise ValueError(
            f"these runs would replace {len(fewer)} entr{'y' if len(fewer) == 1 else 'ies'} of the record with fewer "
            f"seeds (e.g. {t} on {m}: seeds {_seeds(before[(t, m)]['verdicts'])} there, {_seeds(e['verdicts'])} here): "
            "add runs of its seeds, or pass --replace to replace them"
        )
    tests = {t: dict(per) for t, per in (old.get("tests") or {}).items()}
    for t, per in new["tests"].items():
        tests.setdefault(t, {}).update(per)
    merged = {"settings": new["settings"], "seeds": sorted({*old.get("seeds", []), *new["seeds"]}), "tests": tests}
    if old and merged == old:
        raise NothingNew(f"nothing new: the record already holds these {len(_entries(new))} entries as they are")
    return merged


def less_than(old: dict, new: dict) -> str | None:
    """What a whole new record ``new`` would lose of ``old`` (fewer seeds, or any of its (test, model) entries), in a
    few words; None when it loses nothing."""
    if not old:
        return None
    lost = [k for k in _entries(old) if k not in _entries(new)]
    if len(new["seeds"]) >= len(old["seeds"]) and not lost:
        return None
    n_old, n_new = len(_entries(old)), len(_entries(new))
    return (
        f"it holds {n_old} test × model entr{'y' if n_old == 1 else 'ies'} under seeds {_seeds(old['seeds'])}, these "
        f"runs {n_new} under seeds {_seeds(new['seeds'])}"
        + (f", without {len(lost)} of its entries (e.g. {lost[0][0]} on {lost[0][1]})" if lost else "")
    )


def record(runs: list, path: Path = STABILITY, merged: bool = False, replace: bool = False, left_out=None) -> dict:
    """Combine the runs (results.json files or run folders, one per seed) and write the record to ``path``
    (atomically); returns it. ``merged``: only the (test, model) pairs every run has, merged into the record at
    ``path`` (``merge``). A record with fewer seeds or fewer entries than the one at ``path`` is refused unless
    ``replace``. An unreadable run, runs that cannot be combined, or a refused replacement raise ValueError or OSError
    (one line) before anything is written; ``left_out`` (a list) gets the entries of too few seeds (``combine``)."""
    data = combine([load_results(p) for p in runs], complete_only=merged, left_out=left_out)
    if merged:
        data = merge(load(path), data, replace)
    elif not replace and (loss := less_than(load(path), data)):
        raise ValueError(
            f"{path}: refusing to replace the record with less: {loss} (--merge adds these runs' tests to it; "
            "--replace replaces it)"
        )
    write_text(path, json.dumps(data, indent=1, sort_keys=True, allow_nan=True) + "\n")
    return data


def unstable_text(data: dict, nodeid: str, model: str | None, verdict: str, key: dict) -> str | None:
    """What a record's "unstable" says (``describe``) where the stability record ``data`` lists its test on its
    model as flipping between seeds at the design ``key``; None for a model-free test, a rehearsal, or a stable one."""
    entry = model and verdict != Verdict.REHEARSED and unstable(data, test_function(nodeid), model, key)
    return describe(entry) if entry else None


def not_covering(data: dict, key: dict) -> str | None:
    """Why the stability record ``data`` says nothing of runs at the design ``key`` (it is empty, or of other
    settings: which differ), in a few words; None when it is of these settings."""
    if not data:
        return "it is empty"
    if data.get("settings") != key:
        theirs = data["settings"]
        differ = [k for k in dict.fromkeys([*key, *theirs]) if key.get(k) != theirs.get(k)]
        return (
            "it is of other settings ("
            + ", ".join(f"{k} {theirs.get(k, '(unset)')} there, {key.get(k, '(unset)')} here" for k in differ)
            + ")"
        )
    return None


def restabilise(records: list[dict], data: dict, key: dict) -> list[dict]:
    """Each record's "unstable" as the stability record ``data`` (of the design ``key``: ``not_covering`` says None)
    has it (a run made before its model's seeds were re-taken shows what the seeds say now; ``harness.report.merge``).
    A decided record the record has no entry for keeps its run's mark; returns those records."""
    uncovered = []
    for r in records:
        model, verdict = r.get("model"), r.get("verdict", "")
        entry = (data.get("tests") or {}).get(test_function(r["test"]), {}).get(model) if model else None
        if entry is None and model and verdict in DECIDED:
            uncovered.append(r)
            continue
        text = unstable_text(data, r["test"], model, verdict, key)
        if text:
            r["unstable"] = text
        else:
            r.pop("unstable", None)
    return uncovered
