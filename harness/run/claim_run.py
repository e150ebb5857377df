"""One claim test's run: ``ClaimRun``, created when the test is collected and kept on its item (harness.run.plugin).

It holds what collection settled for the test (why its model's prediction does not apply, the paper model(s) it
rehearses, its recorded known outcome, that its model has no record) and what its run leaves (the ``ClaimNotHeld`` it
raised, the criteria it judged, the forward work booked to it), and it turns how the test ended into its one
``ClaimResult`` (``decide``: the exception's type), attached to pytest's report as one user property.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field

import pytest

from harness.capture.workload import Workload
from harness.outcome import claim_result as outcome
from harness.outcome import known_outcomes
from harness.outcome.figures import Figures
from harness.outcome.verdict import (
    CHANGED,
    DECIDED,
    ClaimNotHeld,
    KnownOutcomeMismatch,
    NotApplicable,
    conclude,
    decide,
    deciding_margin,
    judging,
    recorded,
)
from harness.run.collection import SYNTHETIC_SMOKE, rehearsal_of
from harness.run.context import RunContext
from harness.spec.applies import Target, family_sizes
from harness.spec.claims import ClaimSpec, claim
from harness.spec.models import REGISTRY


def params_of(item) -> dict:
    """The parameters a test item runs with (its model, family or synthetic set); {} for an unparametrized one."""
    return item.callspec.params if hasattr(item, "callspec") else {}


def skip_not_applicable(item, reason: str):
    """End a claim test its model's prediction does not apply to: a skip to pytest (shown at the test's own line),
    remembered on its ``ClaimRun`` so that its result reads ``NotApplicable`` (``ClaimRun.result``)."""
    item.stash[CLAIM_RUN].not_applicable = reason
    raise pytest.skip.Exception(reason, _use_item_location=True)


@dataclass
class ClaimRun:
    """A claim test's state from its collection to its report: set at collection (``collect``), during its run
    (``setup``, ``call``), and read once where it ended (``report``)."""

    claim: ClaimSpec
    not_applicable: str | None = None  # why the paper's prediction does not apply to the test's model
    rehearses: str | None = None  # the paper model(s) a rehearsal's claim test rehearses
    known: dict | None = None  # the recorded outcome the test is expected to repeat
    unrecorded: bool = False  # its model has no recorded outcomes: a not held is its result, not a failure
    not_held: ClaimNotHeld | None = None  # the ClaimNotHeld the test's body or paper values raised
    judged: list = field(default_factory=list)  # every criterion it decided by the rule (verdict.judge)
    work: dict | None = None  # the forward work booked to it (harness.capture.workload)
    work_at_setup: tuple | None = None  # the workload when its setup began: its fixtures' passes are its own
    load_at_setup: float | None = None  # model-loading seconds then: a load in its setup is not the test's time

    @classmethod
    def collect(cls, item, run: RunContext) -> ClaimRun:
        """A collected claim test's run: registry applicability -> not applicable (raised as the test is set up); slow
        variants -> skips; known outcomes -> strict xfails."""
        spec = claim(item.get_closest_marker("claim").args[0])
        applies = spec.tests.get(item.originalname)
        if applies is None:
            where = spec.source or "its declaration (claims/<section>.py)"
            raise pytest.UsageError(
                f"{item.nodeid}: test not listed under claim {spec.id} in {where}: add it to the claim's claim_tests"
            )
        params = params_of(item)
        model, family = params.get("model_name"), params.get("family")
        this = cls(spec)
        why_not = applies.why_not(Target(REGISTRY[model] if model else None, family, run.models, run.settings.seq_len))
        this.not_applicable = why_not or None
        if this.not_applicable is None and item.get_closest_marker("slow") and not run.run_slow:
            item.add_marker(pytest.mark.skip(reason="slow variant: run with --run-slow"))
        this.rehearses = rehearsal_of(model, family, run.models)
        if str(params.get("synthetic", "")).startswith("synthetic-smoke"):
            this.rehearses = SYNTHETIC_SMOKE  # machinery only: never a verdict
        # random weights: no known outcome, and its verdict is "rehearsed" (``call``); a family-level test is
        # recorded under its ladder
        key = model or (known_outcomes.ladder_key(family_sizes(family, run.models)) if family else None)
        key = key or params.get("synthetic")
        verdict_key = run.requested.verdict_key()
        known = (
            None if this.rehearses else known_outcomes.lookup(item.originalname, key, verdict_key, run.known_outcomes)
        )
        if known:
            this.known = known
            item.add_marker(pytest.mark.xfail(strict=True, raises=ClaimNotHeld, reason=recorded(known)))
        elif known_outcomes.without_record(model, run.known_outcomes):  # (a rehearsal's model is never one)
            this.unrecorded = True
        return this

    def setup(self, item, workload: Workload):
        """(A hook wrapper's body.) A test its model's prediction does not apply to ends here, before any fixture:
        nothing is loaded or measured for it. The forward work booked to the test starts here, so passes run by its
        fixtures (the targeted and position-0 ablations') are booked to it."""
        if self.not_applicable is not None:
            skip_not_applicable(item, self.not_applicable)
        self.work_at_setup, self.load_at_setup = workload.totals(), workload.load_seconds
        return (yield)

    def call(self, item, workload: Workload):
        """(A hook wrapper's body.) Book the forward-pass share of the test's time (since its setup began); after the
        body, check its figures: the snapshot or baseline first (a drift is a harness error whatever the verdict), then,
        if the claim held, the paper's values, then ``conclude`` its inconclusive criteria. A ClaimNotHeld (the body's,
        a paper value's, an Inconclusive) is recorded with its assertion and this run's message, and must be the
        recorded known outcome's assertion and verdict to be accepted as it. On a rehearsal (random weights) every
        paper value is checked too, and held, not held or inconclusive all pass, recorded as "rehearsed" with what it
        would read (harness.outcome.verdict.decide); any other exception fails as on any model."""
        figures = getattr(item, "funcargs", {}).get("figures")
        paper_checked = False
        with judging() as judged:
            self.judged = judged
            try:
                try:
                    result = yield
                finally:
                    model = getattr(item, "funcargs", {}).get("model")
                    self.work = workload.booked_since(self.work_at_setup, self.load_at_setup, model)
                if figures is not None:
                    figures.check_snapshot()
                    paper_checked = True
                    figures.check_paper()
                conclude(judged)
                return result
            except ClaimNotHeld as e:
                self.not_held = e
                if figures is not None and not figures.snapshot_checked:
                    figures.check_snapshot()
                if self.rehearses:
                    if figures is not None and not paper_checked:  # the paper values' checks run too
                        with contextlib.suppress(ClaimNotHeld):
                            figures.check_paper()
                    return None
                if self.unrecorded:  # a verdict on a model without a record: the run's result
                    return None
                mismatch = known_outcomes.mismatch(self.known, e)
                if mismatch:
                    raise KnownOutcomeMismatch(mismatch) from e
                raise
            except NotApplicable as e:  # decided by the body from what it measured (every top sink at position 0, say)
                skip_not_applicable(item, str(e))

    def report(self, item, call, report):
        """The test's result, decided once from how it ended, attached to the report of the phase that concluded it
        (its call, or a setup that skipped or failed) as one user property; a verdict on the data that fails the run is
        said in words, with no traceback."""
        if not (call.when == "call" or (call.when == "setup" and call.excinfo is not None)):
            return report
        result = self.result(item, call.when, call.excinfo.value if call.excinfo is not None else None)
        report.user_properties = [*report.user_properties, result.as_property()]
        if report.failed and result.verdict in DECIDED:
            said = str(call.excinfo.value) if call.excinfo is not None else ""  # a mismatch's: which assertion
            text = result.reason if said in result.reason else f"{said} — {result.reason}"
            report.longrepr = f"{result.verdict.label} · {CHANGED}: {text}"
        return report

    def result(self, item, phase: str, error: BaseException | None) -> outcome.ClaimResult:
        """The ``ClaimResult`` of the test that ended in ``phase`` with ``error`` (None: it ran to its end)."""
        if isinstance(error, pytest.skip.Exception) and self.not_applicable is not None:
            error = NotApplicable(self.not_applicable)  # the skip that ``skip_not_applicable`` raised
        verdict, known, reason, check = decide(
            phase,
            error,
            known=self.known,
            rehearses=self.rehearses,
            not_held=self.not_held,
            unrecorded=self.unrecorded,
        )
        params = params_of(item)
        figures = getattr(item, "funcargs", {}).get("figures") if phase == "call" else None
        return outcome.ClaimResult(
            test=item.nodeid,
            claim=self.claim.id,
            model=params.get("model_name"),
            verdict=verdict,
            known_outcome=known,
            check=check,
            reason=reason,
            figures=tuple(figures.reported) if isinstance(figures, Figures) else (),
            **({"work": self.work} if self.work is not None else {}),
            baseline=figures.baseline_status if isinstance(figures, Figures) else None,
            margin=deciding_margin(self.judged, self.not_held),
            decisions=tuple(j.as_dict() for j in self.judged),
            unrecorded=self.unrecorded,
            target=outcome.Target.of_params(params),
            function=item.originalname,
        )


CLAIM_RUN = pytest.StashKey[ClaimRun]()  # a claim test's run, on its item from collection on
