"""A run's results.json: what one record of it holds (``Record``), and one checked loader for every tool that reads
one (report build and compare, known-outcome recording, the stability record). A missing, unreadable, empty,
invalid or foreign file is a ``ResultsFileError`` whose message is one line naming the file and what is wrong with it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from harness.files.atomic import JSONFileError, read_json
from harness.outcome.claim_result import RECORD_KEYS, ClaimResult, Figure, Record, Target, TargetKind
from harness.outcome.nodeid import parse
from harness.outcome.verdict import Verdict
from harness.spec.models import FAMILIES
from harness.spec.settings import Settings

__all__ = ["Figure", "Record", "ResultsFileError", "RunResult", "load_results", "load_run", "loaded", "typed"]


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
    target = r.get("target")
    if target is not None and not (
        isinstance(target, dict) and target.get("kind") in set(TargetKind) and isinstance(target.get("name", ""), str)
    ):
        return '"target" is not an object with a "kind" (model, family, synthetic or none) and a "name"'
    if r.get("function") is not None and not isinstance(r["function"], str):
        return '"function" is not a string'
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


def target_of(nodeid: str, model: str | None) -> Target:
    """What a test ran on, from its record's model and node id (a record written before records said so): the model,
    else the node id's parameter as a synthetic set (synthetic-<size>-<arch>) or a family, else none."""
    if model:
        return Target(TargetKind.MODEL, model)
    param = parse(nodeid).param
    if param.startswith("synthetic-"):
        return Target(TargetKind.SYNTHETIC, param)
    return Target(TargetKind.FAMILY, param) if param in FAMILIES else Target()


def _recorded_verdict(r: Mapping[str, Any]) -> Verdict:
    """A record's verdict as its test decided it; a file written before verdicts existed is read by its pytest
    outcome (a failure is not held only where its reason names ClaimNotHeld)."""
    if r.get("verdict"):
        return Verdict(r["verdict"])
    return {
        "passed": Verdict.HELD,
        "xpassed": Verdict.HELD,
        "xfailed": Verdict.NOT_HELD,
        "failed": Verdict.NOT_HELD if "ClaimNotHeld" in str(r.get("reason")) else Verdict.HARNESS_ERROR,
    }.get(
        r["outcome"],
        Verdict.NOT_APPLICABLE if str(r.get("reason")).startswith(Verdict.NOT_APPLICABLE.label) else Verdict.SKIPPED,
    )


def claim_result(r: Mapping[str, Any]) -> ClaimResult:
    """One checked results.json record as a ``ClaimResult``: an older file's record (no "verdict", "target",
    "function" or "known_outcome") converted here, the one place that does."""
    target = r.get("target")
    return ClaimResult(
        test=r["test"],
        claim=r["claim"],
        model=r.get("model"),
        verdict=_recorded_verdict(r),
        known_outcome=bool(r.get("known_outcome", r.get("outcome") == "xfailed")),  # older than the field: an xfail
        check=r.get("check"),
        reason=str(r.get("reason") or ""),
        figures=tuple(r.get("figures") or ()),
        baseline=r.get("baseline"),
        margin=r.get("margin"),
        decisions=tuple(r.get("decisions") or ()),
        unrecorded=bool(r.get("unrecorded")),
        target=Target.from_dict(target) if target else target_of(r["test"], r.get("model")),
        function=r.get("function") or parse(r["test"]).function,
        outcome=r.get("outcome"),
        unstable=r.get("unstable") or None,
        recorded={k: v for k, v in r.items() if k not in RECORD_KEYS},
    )


def loaded(r: ClaimResult | Mapping[str, Any]) -> ClaimResult:
    """A record as a ``ClaimResult``: for a reader still handed results.json's dicts (the merge's records)."""
    return r if isinstance(r, ClaimResult) else claim_result(r)


@dataclass(frozen=True)
class RunResult:
    """A run's results.json, loaded once: its name, settings (None: the file has none), the models it loaded, its
    records typed, its library versions, its provenance and, for a partial or merged run, how it was interrupted and
    what it merges; ``file`` is the file as read (a section no reader types, carried through a merge)."""

    settings: Settings | None
    models: tuple[str, ...]
    records: tuple[ClaimResult, ...]
    file: Mapping[str, Any]
    name: str | None = None  # "run": the run's id
    versions: Mapping[str, Any] = field(default_factory=dict)
    provenance: Mapping[str, Any] = field(default_factory=dict)
    interrupted: Any = None  # {"by", "not_run"}, or a merge's {input run: that}
    merged: Mapping[str, Any] | None = None  # a merged run's "merged" section (harness.report.merge)
    #: The settings the file records, {name: value} in ``Settings``' order ({} where it has none): for a line that
    #: lists them, where a setting a run did not record reads as unset, never as the default it may not have run with.
    recorded_settings: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, results: Mapping[str, Any]) -> RunResult:
        """A results.json already parsed (and checked: ``schema_problem``), typed: what ``load_run`` returns."""
        settings = results.get("settings")
        typed_settings = Settings.from_dict(settings) if settings else None
        values = typed_settings.as_dict() if typed_settings is not None else {}
        return cls(
            typed_settings,
            tuple(results.get("models") or ()),
            tuple(claim_result(r) for r in results["records"]),
            results,
            results.get("run"),
            results.get("versions") or {},
            results.get("provenance") or {},
            results.get("interrupted"),
            results.get("merged"),
            {k: v for k, v in values.items() if k in (settings or {})},
        )


def typed(results: Mapping[str, Any]) -> RunResult:
    """A results.json built in memory (a test's, a merge's) checked as ``load_results`` checks a file, and typed;
    ResultsFileError (one line) where it is not a claims run."""
    if problem := schema_problem(results):
        raise ResultsFileError(f"not a claims results.json ({problem})")
    return RunResult.of(results)


def load_run(p) -> RunResult:
    """A run's results.json (a file, or a run folder holding one), checked (``load_results``) and typed."""
    return RunResult.of(load_results(p))


def load_results(p) -> dict[str, Any]:
    """A run's results.json (a file, or a run folder holding one), checked to be a claims run ("records": a list
    of ``Record``); a missing, unreadable, empty, invalid or foreign file raises ResultsFileError with one line
    naming it and why."""
    path = results_file(p)
    results = read_json(path, "results.json", ResultsFileError)
    if problem := schema_problem(results):
        raise ResultsFileError(f"{path}: not a claims results.json ({problem})")
    return cast(dict[str, Any], results)
