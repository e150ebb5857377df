"""``ClaimResult``: what one claim test on one model concluded, built once where the test ends (the plugin's report
hook, from the exception's type: ``harness.outcome.verdict.decide``), carried to the run's controller as one pytest
user property (xdist serialises it), and written to results.json as one ``Record``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, cast

from harness.outcome.results import Record
from harness.outcome.verdict import Verdict

#: The user property a claim test's report carries its result in.
PROPERTY = "abspos_result"

#: The forward work booked to a test that reports none (it never reached its body).
NO_WORK = {"seconds": 0.0, "layer_tokens": 0}


@dataclass(frozen=True)
class ClaimResult:
    """One claim test on one model (``model`` None: a test across models, or per family)."""

    test: str  # the pytest node id
    claim: str  # the claim's id in the catalogue
    model: str | None
    verdict: Verdict
    known_outcome: bool = False  # a recorded known outcome (fixtures/known_outcomes.json) expected it not to hold
    check: str | None = None  # the failing assertion (``ClaimNotHeld.check``), None where none failed
    reason: str = ""  # the ClaimNotHeld message, the skip or n/a reason, or the error ("" when it held)
    figures: tuple[dict, ...] = ()  # the numbers it measured, in the order it recorded them
    work: dict[str, Any] = field(default_factory=lambda: dict(NO_WORK))  # forward work booked to it (the plugin)
    baseline: dict[str, str] | None = None  # {"status", "path"} of the recorded baseline it was compared with
    margin: float | None = None  # the deciding criterion's margin (harness.spec.decision), None: no rule decided it
    decisions: tuple[dict, ...] = ()  # every criterion decided by the rule (``Judged.as_dict``), in order
    unrecorded: bool = False  # its model has no recorded outcomes (``known_outcomes.without_record``)

    def as_property(self) -> tuple[str, dict]:
        """The (name, value) user property that carries it: plain JSON data."""
        return PROPERTY, {
            **asdict(self),
            "verdict": self.verdict.value,
            "figures": list(self.figures),
            "decisions": list(self.decisions),
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
