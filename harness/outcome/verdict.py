"""What a claim test's verdict is: the ``Verdict`` vocabulary, the exceptions a verdict is read from, ``holds``, and
``decide``, the one function that turns how a claim test ended into its verdict.

A claim that does not hold raises ``ClaimNotHeld`` (an AssertionError); known failures are strict xfails that accept
only this exception, so a snapshot drift or a crash is never hidden by them. A test that the paper's prediction does
not apply to ends in ``NotApplicable`` (a pytest skip to pytest). The numbers a test measured are
``harness.outcome.figures.Figures``, checked by the plugin after the test body.
"""

from __future__ import annotations

import ast
import linecache
import sys
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from enum import StrEnum
from types import FrameType
from typing import Any, NamedTuple, cast

from harness.spec import decision as rule
from harness.spec.decision import INCONCLUSIVE, NOT_HELD, Decision


class Verdict(StrEnum):
    """The outcomes a claim test ends as. The values are what results.json, known outcomes and the stability record
    store; ``meaning`` says what each means, ``label`` and ``css`` how a report shows it."""

    HELD = rule.HELD  # the one rule's three readings (harness.spec.decision), the words a decision stores
    NOT_HELD = rule.NOT_HELD
    INCONCLUSIVE = rule.INCONCLUSIVE
    STALE = "stale"
    HARNESS_ERROR = "harness error"
    NOT_APPLICABLE = "n/a"
    SKIPPED = "skipped"
    UNSTABLE = "unstable"
    REHEARSED = "rehearsed"

    @property
    def meaning(self) -> str:
        return _ABOUT[self][0]

    @property
    def label(self) -> str:
        return _ABOUT[self][1]

    @property
    def css(self) -> str:
        return _ABOUT[self][2]

    @property
    def counted(self) -> str:
        """How a run's totals word a count of it ("2 harness errors"): its label, but where that does not read after
        a number."""
        return _COUNTED.get(self, self.label)


#: (what it means, how a report words it, its css class) per verdict.
_ABOUT = {
    Verdict.HELD: ("the claim held", "held", "held"),
    Verdict.NOT_HELD: (
        "the claim did not hold: the criterion's interval lies wholly on the failing side (the figure measured in this "
        "run)",
        "not held",
        "not",
    ),
    Verdict.INCONCLUSIVE: (
        "the run's interval straddles the criterion's threshold: the data cannot decide",
        "inconclusive",
        "stale",
    ),
    Verdict.STALE: (
        "recorded as not holding, and it now holds: re-take the record (abspos-claims outcomes record)",
        "held — recorded otherwise, re-take the record",
        "stale",
    ),
    Verdict.HARNESS_ERROR: (
        "anything else (a crash, a snapshot drift, a missing capture): no verdict on the claim",
        "harness error (no verdict)",
        "error",
    ),
    Verdict.NOT_APPLICABLE: ("the paper's prediction does not apply to this model", "not applicable", "skip"),
    Verdict.SKIPPED: ("not run (weights absent, a slow variant)", "skipped", "skip"),
    Verdict.UNSTABLE: (
        "the verdict differs between seeds (fixtures/stability.json)",
        "unstable across seeds",
        "unstable",
    ),
    Verdict.REHEARSED: (
        "a rehearsal model (a paper architecture with random weights): the test ran to its verdict without a harness "
        "error; held or not held on random weights is no verdict (the reason says which it would read)",
        "rehearsed (random weights: machinery checked, no verdict)",
        "skip",
    ),
}

_COUNTED = {
    Verdict.HARNESS_ERROR: "harness errors",
    Verdict.STALE: "held, recorded otherwise",
    Verdict.REHEARSED: "rehearsed (random weights, no verdict)",
}

#: The verdicts a claim test reaches on its data (a seed can flip one of them into another: unstable).
DECIDED = (Verdict.HELD, Verdict.NOT_HELD, Verdict.INCONCLUSIVE)
#: The verdicts a report colours a cell of several by, worst first.
SEVERITY = (
    Verdict.HARNESS_ERROR,
    Verdict.STALE,
    Verdict.UNSTABLE,
    Verdict.INCONCLUSIVE,
    Verdict.NOT_HELD,
    Verdict.HELD,
)
#: The verdicts of tests that measured nothing on purpose (the prediction is for other models, or it was not run).
NOT_RUN = (Verdict.NOT_APPLICABLE, Verdict.SKIPPED)


class ClaimNotHeld(AssertionError):
    """The paper's claim did not hold on this model; the message carries the figure measured in this run and
    ``check`` names the assertion that failed (a known outcome must match it)."""

    def __init__(self, message: str, check: str = "", judged: Judged | None = None):
        super().__init__(message)
        self.check = check
        self.judged = judged  # the criterion the one rule decided it on (``judge``), None for a ``holds``


class Inconclusive(ClaimNotHeld):
    """The run's interval straddles a criterion's threshold: the data cannot decide (``judge``). A ClaimNotHeld to
    the machinery that records and expects outcomes (a known outcome names its check and its verdict), but never
    "not held": ``decide`` reads it as ``Verdict.INCONCLUSIVE``."""


class SnapshotDrift(AssertionError):
    """Measured figures moved beyond the snapshot tolerance: a change in the harness or its dependencies,
    never a verdict on the claim."""


class NotApplicable(Exception):
    """The paper's prediction does not apply to this model (decided at collection from the claim's applicability,
    or in a test body from what it measured); the message says why. The plugin ends the test as a pytest skip and
    hands ``decide`` this type ("n/a" to the suite, never "skipped")."""


class KnownOutcomeMismatch(AssertionError):
    """A claim recorded as not holding failed at a different assertion than the recorded one: a new finding
    (or a broken check), never accepted by the recorded xfail."""


def _condition_source(frame: FrameType) -> str:
    """The source of the first argument of the call running in ``frame`` (the ``holds(...)`` being executed),
    located by the instruction's own source span, so aliases, one-line ``else: holds(...)`` and several calls
    in one statement all resolve to the call that failed."""
    try:
        span = list(frame.f_code.co_positions())[frame.f_lasti // 2]  # None where unknown: a TypeError below
        lineno, end, col, end_col = cast(tuple[int, int, int, int], span)
        lines = [ln.encode() for ln in linecache.getlines(frame.f_code.co_filename)[lineno - 1 : end]]
        lines[-1] = lines[-1][:end_col]
        lines[0] = lines[0][col:]
        call = cast(ast.Call, ast.parse(b"".join(lines).decode(), mode="eval").body)  # not a call: AttributeError
        return ast.unparse(call.args[0])
    except (SyntaxError, IndexError, TypeError, AttributeError, ValueError):
        return f"line {frame.f_lineno}"


def _function_name(frame: FrameType) -> str:
    """The enclosing function, skipping comprehension frames (inlined from Python 3.12 on)."""
    while frame.f_code.co_name.startswith("<") and frame.f_back is not None:
        frame = frame.f_back
    return frame.f_code.co_name


def holds(condition: bool, message: str, check: str | None = None) -> None:
    """Raise ``ClaimNotHeld(message)`` unless ``condition``. The check's identity defaults to the calling
    function and the condition's source, e.g. ``test_name: fits['delta_aic'] > AIC_MARGIN``."""
    if not bool(condition):
        if check is None:
            frame = sys._getframe(1)
            check = f"{_function_name(frame)}: {_condition_source(frame)}"
        raise ClaimNotHeld(message, check)


class Judged(NamedTuple):
    """One criterion decided in a claim test: its check, the test's words for it, and the rule's ``Decision``."""

    check: str
    message: str
    decision: Decision

    def as_dict(self) -> dict[str, Any]:
        d = self.decision
        interval = list(d.interval) if d.interval is not None else None
        return {
            "check": self.check,
            "verdict": d.reading,
            "estimate": d.estimate,
            "interval": interval,
            "criterion": d.criterion,
            "margin": d.margin,
            "prompts_to_decide": d.prompts_to_decide,
        }


_JUDGED: ContextVar[list[Judged] | None] = ContextVar("judged", default=None)


@contextmanager
def judging() -> Iterator[list[Judged]]:
    """Collect every ``judge`` of the claim test run inside (the plugin opens one per test): an inconclusive
    criterion does not end the test, so a later criterion that is not held still decides it (``conclude``)."""
    log: list[Judged] = []
    token = _JUDGED.set(log)
    try:
        yield log
    finally:
        _JUDGED.reset(token)


def judge(decision: Decision, message: str, check: str | None = None) -> None:
    """The one decision rule's verdict on a criterion (``harness.spec.decision``): not held raises ``ClaimNotHeld``
    at once, with ``message`` and the decision's interval and margin; inconclusive is kept for ``conclude`` (raised
    at once outside a claim test); held returns. ``check`` defaults as in ``holds``."""
    if check is None:
        frame = sys._getframe(1)
        check = f"{_function_name(frame)}: {_condition_source(frame)}"
    judged = Judged(check, message, decision)
    log = _JUDGED.get()
    if log is not None:
        log.append(judged)
    if decision.reading == NOT_HELD:
        raise ClaimNotHeld(f"{message}: {decision.describe()}", check, judged)
    if decision.reading == INCONCLUSIVE and log is None:
        conclude([judged])


def conclude(log: list[Judged]) -> None:
    """After a claim test's body and paper values: raise ``Inconclusive`` for its first inconclusive criterion
    (naming how many others there were), if any."""
    pending = [j for j in log if j.decision.reading == INCONCLUSIVE]
    if pending:
        first = pending[0]
        more = f" (and {len(pending) - 1} more inconclusive: {', '.join(j.check for j in pending[1:])})"
        raise Inconclusive(
            f"{first.message}: {first.decision.describe()}{more if len(pending) > 1 else ''}", first.check, first
        )


def deciding_margin(log: list[Judged], not_held: ClaimNotHeld | None) -> float | None:
    """The margin of the criterion that decided the verdict: the not-held or inconclusive one's (``not_held.judged``),
    or, where every criterion held, the closest call (the smallest margin relative to its interval's width); None
    where no criterion went through the rule."""
    if not_held is not None:
        return not_held.judged.decision.margin if not_held.judged is not None else None
    if not log:
        return None

    def relative(j: Judged) -> float:
        lo, hi = j.decision.interval or (j.decision.estimate, j.decision.estimate)
        return j.decision.margin / (hi - lo) if hi > lo else float("inf")

    return min(log, key=relative).decision.margin


def read_checks(
    checks: Iterable[tuple[str, Decision, str]], test: str
) -> tuple[Verdict, ClaimNotHeld | None, list[Judged]]:
    """A claim's criteria (a ``Judgement``'s checks, each named ``test: condition``) read as a claim test reads its
    ``judge`` calls: a not-held criterion decides and ends them, else the first inconclusive one, else held. Returns
    (the verdict, what did not hold or was inconclusive, the criteria judged)."""
    judged: list[Judged] = []
    for condition, decision, message in checks:
        judged.append(Judged(f"{test}: {condition}", message, decision))
        if decision.reading == NOT_HELD:
            last = judged[-1]
            return Verdict.NOT_HELD, ClaimNotHeld(f"{message}: {decision.describe()}", last.check, last), judged
    try:
        conclude(judged)
    except Inconclusive as e:
        return Verdict.INCONCLUSIVE, e, judged
    return Verdict.HELD, None, judged


def verdict_of(not_held: ClaimNotHeld) -> Verdict:
    """What a claim's own failing criterion reads: inconclusive (``Inconclusive``) or not held."""
    return Verdict.INCONCLUSIVE if isinstance(not_held, Inconclusive) else Verdict.NOT_HELD


def known_verdict(known: Mapping[str, Any]) -> Verdict:
    """The verdict a recorded known outcome expects: not held, unless the entry says inconclusive."""
    return Verdict(known.get("verdict", Verdict.NOT_HELD.value))


def recorded(known: Mapping[str, Any]) -> str:
    """A recorded known outcome in words: "recorded not held at CHECK: MEASURED"."""
    return f"recorded {known_verdict(known).value} at {known['check']}: {known['measured']}"


#: how a verdict of a model without recorded outcomes is worded (``known_outcomes.without_record``)
NO_RECORD = "no record for this model"
#: the badge on a verdict that differs from its record (``ClaimResult.changed``): a report marks changes, not sameness
CHANGED = "changed since the record"


def _error_text(e: BaseException) -> str:
    """``Type: message`` of an exception, its type named in full unless it is a builtin or the harness's own."""
    kind = type(e)
    own = kind.__module__ == "builtins" or kind.__module__.startswith("harness.")
    name = kind.__qualname__ if own else f"{kind.__module__}.{kind.__qualname__}"
    text = str(e)
    return f"{name}: {text}" if text else name


def decide(
    phase: str,
    error: BaseException | None,
    *,
    known: Mapping[str, Any] | None = None,
    rehearses: str | None = None,
    not_held: ClaimNotHeld | None = None,
    unrecorded: bool = False,
) -> tuple[Verdict, bool, str, str | None]:
    """(verdict, whether a recorded known outcome expected it, the reason in this run, the failing assertion) of a
    claim test that ended in ``phase`` ("setup" or "call") with ``error`` (None: it ran to its end). ``known``: the
    recorded known outcome it is expected to repeat; ``rehearses``: the paper model(s) a rehearsal stands for (random
    weights: held and not held alike end the call without an error, and it reads "rehearsed"); ``not_held``: the
    ClaimNotHeld its body or its paper values raised, if any; ``unrecorded``: the model has no recorded outcomes, so
    a not held or inconclusive ends the call without an error and reads as itself. Decided by the exception's type
    alone."""
    import pytest  # here: the verdict vocabulary loads without pytest (the report, the notebook API)

    check = not_held.check if not_held is not None else None
    if isinstance(error, NotApplicable):
        return Verdict.NOT_APPLICABLE, False, str(error), None
    if isinstance(error, pytest.skip.Exception):  # weights absent, a slow variant, an incomplete ladder
        return Verdict.SKIPPED, False, error.msg or "", None
    if phase != "call":
        return Verdict.HARNESS_ERROR, False, _error_text(error) if error is not None else "", None
    if error is None:
        if unrecorded and not_held is not None and not rehearses:  # a verdict on a model without a record
            return verdict_of(not_held), False, str(not_held), check
        if rehearses:
            would = f"{verdict_of(not_held)} at {check}: {not_held}" if not_held is not None else "held"
            return Verdict.REHEARSED, False, f"rehearsal of {rehearses} (random weights), would read: {would}", check
        if known is not None:
            was = Verdict.INCONCLUSIVE.label if known_verdict(known) == Verdict.INCONCLUSIVE else "not holding"
            return (
                Verdict.STALE,
                False,
                f"held in this run, but recorded as {was} ({recorded(known)}): re-take the record",
                None,
            )
        return Verdict.HELD, False, "", None
    if isinstance(error, KnownOutcomeMismatch) and not_held is not None:
        return verdict_of(not_held), False, str(not_held), check
    if isinstance(error, ClaimNotHeld) and not isinstance(error, KnownOutcomeMismatch):
        return verdict_of(error), known is not None, str(error), error.check
    return Verdict.HARNESS_ERROR, False, _error_text(error), check
