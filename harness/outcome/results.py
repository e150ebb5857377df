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
    if not all(isinstance(r.get(k) or 0, (int, float)) for k in ("seconds", "forward_seconds", "layer_tokens")):
        return "has a non-numeric time"
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
