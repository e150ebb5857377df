"""A run's results.json: what one record of it holds (``Record``), and one checked loader for every tool that reads
one (report build and compare, known-outcome recording, the stability record). A missing, unreadable, empty,
invalid or foreign file is a ``ResultsFileError`` whose message is one line naming the file and what is wrong with it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Required, TypedDict, cast

from harness.files.atomic import JSONFileError, read_json
from harness.outcome.verdict import Verdict


class Figure(TypedDict, total=False):
    """One number a claim test measured (``harness.outcome.figures.Figures.add``)."""

    name: Required[str]  # as the claim's registry entry declares it ("mean_delta_causal")
    value: Any  # a number (NaN for a non-finite one), or a list of them
    paper: Any  # the paper's value for this model, if it reports one (else null)
    ci: Any  # a confidence interval [low, high], if the test gives one (else null)
    note: str  # a few words on how it was measured ("" if none)
    seq_len: int  # a figure the paper reports for this model: the prompt length it was measured at
    paper_check: str  # on a paper model: "within 0.0143 ± 0.00358", "outside ...", or why it was not judged


class Record(TypedDict, total=False):
    """One claim test on one model: an element of results.json's "records" (written by ``harness.run.records``,
    read by the reports, known-outcome recording, the stability record and the notebook API). A plain dict at run
    time; ``_record_problem`` says which keys a file must have for it to be reported. Files written before
    verdicts existed have no "verdict" (``Verdict.of`` reads their "outcome")."""

    test: Required[str]  # the pytest node id: "claims/test_section.py::test_name[smollm2-135m]"
    claim: Required[str]  # the claim's id in the registry (as METHODS.md lists it)
    model: str | None  # the model, or None for a test across models (the §3 softmax property, a size ladder)
    outcome: str  # pytest's outcome: "passed", "failed", "skipped" or "xfailed"
    verdict: str  # a ``Verdict``'s value, never "unstable" (``Verdict.of`` shows it where the stability record says)
    known_outcome: bool  # a recorded known outcome (fixtures/known_outcomes.json) expected it not to hold
    check: str | None  # the failing assertion (``ClaimNotHeld.check``), None where none failed
    reason: str  # the ClaimNotHeld message, the skip or n/a reason, or the error ("" when it held)
    figures: Required[list[Figure]]  # the numbers it measured, in the order it recorded them
    margin: float  # the deciding criterion's margin (harness.spec.decision): positive decided, negative straddling
    decisions: list[dict]  # every criterion decided by the one rule: check, verdict, estimate, interval, margin, ...
    seconds: float  # its wall time, setup and call, less model loading
    forward_seconds: float  # the part of it spent in the forward passes booked to it
    layer_tokens: int  # the forward work booked to it: layers × tokens
    floor_layer_tokens: int  # the least forward work its reads need (the capture plan's floor)
    baseline: dict[str, str]  # {"status", "path"} of the recorded baseline it was compared with (no snapshot)
    unstable: str  # where its verdict differs between seeds: ``stability.describe`` of the stability record's entry
    shape: dict[str, int]  # {"layers", "heads"} of the model (the work scales with it: benchmarks/bench_nightly.py)
    crashed: str  # its xdist worker died while running it (xdist's line); a re-run's record keeps it
    unrecorded: bool  # its model has no recorded outcomes: a not held or inconclusive is the run's result, not a change
    setup_failed: str  # its model's setup failed (weights refused, a conversion failed): "<model>: setup failed: ..."
    run: str  # a merged run's record: the label of the run it comes from (harness.report.merge)
    merged: str  # a merged run's record judged at the merge (a size ladder across runs): how it was judged


class ResultsFileError(JSONFileError):
    """A results.json that cannot be read as a claims run; the message is one line naming the file and why."""

    #: As results.json files have always been described: a folder in the file's place is a file it cannot read.
    PHRASES = {**JSONFileError.PHRASES, "folder": "cannot read it ({detail})"}


def results_file(p) -> Path:
    """The results.json a command-line argument names: the file itself, or results.json in a run folder."""
    p = Path(p)
    return p / "results.json" if p.is_dir() else p


def _record_problem(r) -> str | None:
    """What keeps one record from being reported (None if nothing): the keys document() and diff() rely on."""
    if not isinstance(r, dict):
        return "is not an object"
    for k in ("test", "claim"):
        if not isinstance(r.get(k), str):
            return f'has no "{k}" string'
    if r.get("model") is not None and not isinstance(r["model"], str):
        return '"model" is not a string'
    if r.get("verdict") and (not isinstance(r["verdict"], str) or r["verdict"] not in set(Verdict)):
        return f"has an unknown verdict {r['verdict']!r}"
    if not r.get("verdict") and not isinstance(r.get("outcome"), str):
        return 'has no "outcome" string'
    if not isinstance(r.get("figures"), list) or not all(
        isinstance(f, dict) and isinstance(f.get("name"), str) for f in r["figures"]
    ):
        return 'has no "figures" list of objects with a "name"'
    if not all(_number(r.get(k)) for k in ("seconds", "forward_seconds", "layer_tokens", "floor_layer_tokens")):
        return "has a non-numeric time"
    if not _number(r.get("margin")):
        return '"margin" is not a number'
    for k in ("check", "unstable", "crashed", "run", "merged"):
        if r.get(k) is not None and not isinstance(r[k], str):
            return f'"{k}" is not a string'
    for k in ("baseline", "shape"):
        if r.get(k) is not None and not isinstance(r[k], dict):
            return f'"{k}" is not an object'
    decisions = r.get("decisions")
    if decisions is not None and not isinstance(decisions, list):
        return '"decisions" is not a list'
    for i, d in enumerate(decisions or ()):
        if problem := _decision_problem(d):
            return f"decision {i} {problem}"
    return None


def _number(x) -> bool:
    """A number (NaN and infinities as JSON's NaN/Infinity parse), or nothing (None)."""
    return x is None or (isinstance(x, (int, float)) and not isinstance(x, bool))


def _decision_problem(d) -> str | None:
    """What keeps one of a record's "decisions" (``harness.spec.decision``) from being shown (None if nothing): the keys
    the reports and the notebook read."""
    if not isinstance(d, dict):
        return "is not an object"
    for k in ("check", "verdict"):
        if d.get(k) is not None and not isinstance(d[k], str):
            return f'has a "{k}" that is not a string'
    for k in ("estimate", "margin", "prompts_to_decide"):
        if not _number(d.get(k)):
            return f'has a "{k}" that is not a number'
    interval = d.get("interval")
    if interval is not None and not (isinstance(interval, list) and len(interval) == 2 and all(map(_number, interval))):
        return 'has an "interval" that is not [low, high]'
    return None


#: The shape of what the reports read of a model's provenance (harness.report.provenance, the weights fingerprint)
_MODEL = {"weights_sha256": str, "config_sha256": str, "weights": {"*": str}, "derived": {}}
_CODE = {"commit": str, "commits": [str]}
_MACHINE = {"gpus": [str]}
#: The shape of each top-level section a report reads (``shape_problem``'s grammar); every key may be absent or null
SECTIONS: dict[str, Any] = {
    "run": str,
    "provenance": {
        "code": _CODE,
        "machine": _MACHINE,
        "selection": [str],
        "models": {"*": _MODEL},
        "per_model": {
            "*": {"run": str, "also_from": [str], "code": _CODE, "machine": _MACHINE, "versions": {}, "weights": _MODEL}
        },
    },
    "merged": {
        "runs": [{"run!": str, "models": [str], "sets": [str]}],
        "failed": [{"model!": str, "status!": str, "reason!": str}],
        "warnings": [str],
        "notes": [str],
    },
}


def shape_problem(value, shape, where: str) -> str | None:
    """What keeps ``value`` from having ``shape`` (None if nothing; an absent or null key fits): a type (str: a string;
    ``object``: anything), ``[shape]`` a list of that shape (no nulls in it), ``{key: shape}`` an object whose listed
    keys have their shapes (``"*"``: every value; ``"key!"``: a key it must have; other keys anything). The problem
    names the place: '"merged".runs[0] is not an object'."""
    if value is None or shape is object:
        return None
    if isinstance(shape, list):
        if not isinstance(value, list):
            return f"{where} is not a list"
        items = ((x, f"{where}[{i}]") for i, x in enumerate(value))
        return next(
            (p for x, at in items if (p := f"{at} is null" if x is None else shape_problem(x, shape[0], at))), None
        )
    if isinstance(shape, dict):
        if not isinstance(value, dict):
            return f"{where} is not an object"
        for key, sub in shape.items():
            name = key.removesuffix("!")
            if key.endswith("!") and value.get(name) is None:
                return f'{where} has no "{name}"'
            for k, x in value.items() if key == "*" else [(name, value.get(name))]:
                if problem := shape_problem(x, sub, f"{where}.{k}"):
                    return problem
        return None
    if not isinstance(value, shape) or isinstance(value, bool) and shape is not bool:
        return f"{where} is not a {'string' if shape is str else shape.__name__}"
    return None


def schema_problem(results) -> str | None:
    """What makes parsed JSON not a claims results.json (None if it is one)."""
    if not isinstance(results, dict) or not isinstance(results.get("records"), list):
        return 'no "records" list'
    for key, kind in (("settings", dict), ("versions", dict), ("models", list)):
        if not isinstance(results.get(key) or kind(), kind):
            return f'"{key}" is not a{" dict" if kind is dict else " list"}'
    if not all(isinstance(m, str) for m in results.get("models") or []):
        return '"models" is not a list of names'
    info = results.get("interrupted")  # a partial run: {"by": "SIGTERM", "not_run": [node ids]} (harness.run.records)
    if info is not None and not (isinstance(info, dict) and isinstance(info.get("not_run", []), list)):
        return '"interrupted" is not an object with a "not_run" list'
    for key, shape in SECTIONS.items():
        if problem := shape_problem(results.get(key), shape, f'"{key}"'):
            return problem
    for i, r in enumerate(results["records"]):
        if problem := _record_problem(r):
            name = f", {r['test']}," if isinstance(r, dict) and isinstance(r.get("test"), str) else ""
            return f"record {i}{name} {problem}"
    return None


def load_results(p) -> dict[str, Any]:
    """A run's results.json (a file, or a run folder holding one), checked to be a claims run ("records": a list
    of ``Record``); a missing, unreadable, empty, invalid or foreign file raises ResultsFileError with one line
    naming it and why."""
    path = results_file(p)
    results = read_json(path, "results.json", ResultsFileError)
    if problem := schema_problem(results):
        raise ResultsFileError(f"{path}: not a claims results.json ({problem})")
    return cast(dict[str, Any], results)
