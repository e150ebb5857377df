"""``ClaimResult``: what one claim test on one model concluded, built once where the test ends (the plugin's report
hook, from the exception's type: ``harness.outcome.verdict.decide``), carried to the run's controller as one pytest
user property (xdist serialises it), and written to results.json as one ``Record``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any, Required, TypedDict, cast

from harness.outcome.verdict import CHANGED, DECIDED, NO_RECORD, Verdict


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
    time, read as a ``ClaimResult`` by ``harness.outcome.results.load_run``, which converts older files (no "verdict",
    no "target") there and only there."""

    test: Required[str]  # the pytest node id: "claims/test_section.py::test_name[smollm2-135m]"
    claim: Required[str]  # the claim's id in the registry (as METHODS.md lists it)
    model: str | None  # the model, or None for a test across models (the §3 softmax property, a size ladder)
    target: dict[str, str]  # what it ran on: {"kind": a ``TargetKind``, "name": ...} (older files: from the node id)
    function: str  # the test function's name (older files: from the node id)
    outcome: str  # pytest's outcome: "passed", "failed", "skipped" or "xfailed"
    verdict: str  # a ``Verdict``'s value, never "unstable" (``ClaimResult.shown`` applies the stability record)
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


#: The user property a claim test's report carries its result in.
PROPERTY = "abspos_result"

#: The forward work booked to a test that reports none (it never reached its body).
NO_WORK = {"seconds": 0.0, "layer_tokens": 0}


class TargetKind(StrEnum):
    """What a claim test ran on."""

    MODEL = "model"  # one model (``model_name``)
    FAMILY = "family"  # a model family's size ladder (``family``)
    SYNTHETIC = "synthetic"  # a set of the related paper's synthetic models, trained here: synthetic-<size>-<arch>
    NONE = "none"  # no model (a property of the equations)


@dataclass(frozen=True)
class Target:
    """What a claim test ran on, with its name ("" for none)."""

    kind: TargetKind = TargetKind.NONE
    name: str = ""

    @property
    def label(self) -> str:
        """How a report names it: the model, the synthetic set, "llama family", or "(no model)"."""
        if self.kind == TargetKind.FAMILY:
            return f"{self.name} family"
        return self.name if self.kind in (TargetKind.MODEL, TargetKind.SYNTHETIC) else "(no model)"

    def as_dict(self) -> dict[str, str]:
        return {"kind": self.kind.value, "name": self.name}

    @classmethod
    def of_params(cls, params: Mapping[str, Any]) -> Target:
        """What a claim test with these pytest parameters runs on: its ``model_name``, its ``family`` (a size
        ladder) or its ``synthetic`` set; none without any."""
        kinds = (("model_name", TargetKind.MODEL), ("family", TargetKind.FAMILY), ("synthetic", TargetKind.SYNTHETIC))
        return next((cls(kind, str(params[p])) for p, kind in kinds if params.get(p)), cls())

    @classmethod
    def from_dict(cls, d: Mapping[str, str]) -> Target:
        return cls(TargetKind(d["kind"]), d.get("name", ""))


#: The keys of a ``Record`` a ``ClaimResult`` holds as fields; the rest of a loaded record is its ``recorded``.
RECORD_KEYS = (
    *("test", "claim", "model", "target", "function", "outcome", "verdict", "known_outcome", "check", "reason"),
    *("figures", "margin", "decisions", "baseline", "unstable", "unrecorded"),
)


@dataclass(frozen=True)
class ClaimResult:
    """One claim test on one ``target`` (``model``: the model's name, None for any other target). The plugin builds
    it where the test ends; ``harness.outcome.results.load_run`` builds it from a results.json record, adding what
    the run recorded after the test (``outcome``, ``unstable``, ``recorded``)."""

    test: str  # the pytest node id
    claim: str  # the claim's id in the catalogue
    model: str | None
    verdict: Verdict  # as the test decided it, never UNSTABLE (``shown`` applies the stability record)
    known_outcome: bool = False  # a recorded known outcome (fixtures/known_outcomes.json) expected it not to hold
    check: str | None = None  # the failing assertion (``ClaimNotHeld.check``), None where none failed
    reason: str = ""  # the ClaimNotHeld message, the skip or n/a reason, or the error ("" when it held)
    figures: tuple[dict, ...] = ()  # the numbers it measured, in the order it recorded them
    work: dict[str, Any] = field(default_factory=lambda: dict(NO_WORK))  # forward work booked to it (the plugin)
    baseline: dict[str, str] | None = None  # {"status", "path"} of the recorded baseline it was compared with
    margin: float | None = None  # the deciding criterion's margin (harness.spec.decision), None: no rule decided it
    decisions: tuple[dict, ...] = ()  # every criterion decided by the rule (``Judged.as_dict``), in order
    unrecorded: bool = False  # its model has no recorded outcomes (``known_outcomes.without_record``)
    target: Target = Target()  # what it ran on
    function: str = ""  # the test function's name
    outcome: str | None = None  # pytest's outcome (a loaded record; the plugin's result has none yet)
    unstable: str | None = None  # where its verdict flips between seeds: the stability record's description
    recorded: dict[str, Any] = field(default_factory=dict)  # a loaded record's other keys (times, shape, crash, ...)

    @property
    def name(self) -> str:
        """The test as its node id's last part names it: the function and, where it has one, its target in brackets
        ("test_T13_x[llama]")."""
        return f"{self.function}[{self.target.name}]" if self.target.name else self.function

    @property
    def shown(self) -> Verdict:
        """The verdict as a report shows it: UNSTABLE where the stability record says a decided verdict flips."""
        return Verdict.UNSTABLE if self.unstable and self.verdict in DECIDED else self.verdict

    @property
    def changed(self) -> bool:
        """Whether its verdict differs from its record: held where a known outcome records a not held or inconclusive
        (stale), or a not held or inconclusive that no known outcome records at its criterion, on a model with recorded
        outcomes. A verdict on a model without a record is no change, nor is a harness error (no verdict), an n/a, a
        skip or a rehearsal; seed instability (``shown``) is not the record's and is ignored."""
        if self.verdict == Verdict.STALE:
            return True
        return (
            self.verdict in (Verdict.NOT_HELD, Verdict.INCONCLUSIVE) and not self.known_outcome and not self.unrecorded
        )

    @property
    def badge(self) -> str:
        """What follows its verdict's label: " · changed since the record" where it differs from its record, " (no
        record for this model)" where it is not held or inconclusive on a model without recorded outcomes, else ""."""
        if self.changed:
            return f" · {CHANGED}"
        unrecorded = self.unrecorded and self.verdict in (Verdict.NOT_HELD, Verdict.INCONCLUSIVE)
        return f" ({NO_RECORD})" if unrecorded else ""

    def as_property(self) -> tuple[str, dict]:
        """The (name, value) user property that carries it: plain JSON data."""
        return PROPERTY, {
            **asdict(self),
            "verdict": self.verdict.value,
            "figures": list(self.figures),
            "decisions": list(self.decisions),
            "target": self.target.as_dict(),
        }

    @classmethod
    def from_report(cls, report) -> ClaimResult | None:
        """The result a claim test's report carries, or None (not a claim test, or a phase that concluded nothing)."""
        value = next((v for k, v in getattr(report, "user_properties", ()) if k == PROPERTY), None)
        if value is None:
            return None
        return cls(
            **{
                **value,
                "verdict": Verdict(value["verdict"]),
                "figures": tuple(value["figures"]),
                "decisions": tuple(value.get("decisions", ())),
                "target": Target.from_dict(value["target"]) if value.get("target") else Target(),
            }
        )

    def record(
        self, outcome: str, seconds: float, *, unstable: str | None = None, crashed: str | None = None
    ) -> Record:
        """Its results.json record: ``outcome`` pytest's, ``seconds`` its wall time less model loading, ``unstable``
        the stability record's description where its verdict flips between seeds, ``crashed`` the line of an xdist
        worker that died running it."""
        work = self.work
        record: dict[str, Any] = {
            "test": self.test,
            "claim": self.claim,
            "model": self.model,
            "target": self.target.as_dict(),
            "function": self.function,
            "outcome": outcome,
            "verdict": self.verdict.value,
            "known_outcome": self.known_outcome,
            "check": self.check,
            "reason": self.reason,
            "figures": list(self.figures),
            **({"margin": self.margin} if self.margin is not None else {}),
            **({"decisions": list(self.decisions)} if self.decisions else {}),
            "seconds": round(max(0.0, seconds - work.get("load_seconds", 0.0)), 2),
            "forward_seconds": work["seconds"],
            "layer_tokens": work["layer_tokens"],
            "floor_layer_tokens": work.get("floor_layer_tokens", work["layer_tokens"]),
            **({"baseline": self.baseline} if self.baseline else {}),
            **({"unstable": unstable} if unstable else {}),
            **({"shape": work["shape"]} if "shape" in work else {}),
            **({"crashed": crashed} if crashed else {}),
            **({"unrecorded": True} if self.unrecorded else {}),
        }
        return cast(Record, record)

    def to_dict(self) -> Record:
        """A loaded record as results.json holds it (converted: an older file's record gains "verdict", "target",
        "function" and "known_outcome")."""
        record: dict[str, Any] = {
            "test": self.test,
            "claim": self.claim,
            "model": self.model,
            "target": self.target.as_dict(),
            "function": self.function,
            **({"outcome": self.outcome} if self.outcome is not None else {}),
            "verdict": self.verdict.value,
            "known_outcome": self.known_outcome,
            "check": self.check,
            "reason": self.reason,
            "figures": list(self.figures),
            **({"margin": self.margin} if self.margin is not None else {}),
            **({"decisions": list(self.decisions)} if self.decisions else {}),
            **({"baseline": self.baseline} if self.baseline else {}),
            **({"unstable": self.unstable} if self.unstable else {}),
            **({"unrecorded": True} if self.unrecorded else {}),
            **self.recorded,
        }
        return cast(Record, record)
