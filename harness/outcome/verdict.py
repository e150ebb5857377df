"""What a claim test's verdict is made of: the verdict vocabulary, ``holds``, and the exceptions a verdict is read from.

A claim that does not hold raises ``ClaimNotHeld`` (an AssertionError); known failures are strict
xfails that accept only this exception, so a snapshot drift or a crash is never hidden by them.
The numbers a test measured are ``harness.outcome.figures.Figures``, checked by the plugin after the test body.
"""

from __future__ import annotations

import ast
import linecache
import sys
from collections.abc import Mapping
from types import FrameType
from typing import Any, cast

#: The outcomes a claim test ends as, each with what it means (the terminal, results.json and the report).
VERDICTS = {
    "held": "the claim held",
    "not held": "the claim did not hold: ClaimNotHeld with the figure measured in this run",
    "stale": "recorded as not holding, and it now holds: re-take the known outcome",
    "harness error": "anything else (a crash, a snapshot drift, a missing capture): no verdict on the claim",
    "n/a": "the paper's prediction does not apply to this model",
    "skipped": "not run (weights absent, a slow variant)",
    "unstable": "the verdict differs between seeds (fixtures/stability.json)",
    "rehearsed": "a rehearsal model (a paper architecture with random weights): the test ran to its verdict without "
    "a harness error; held or not held on random weights is no verdict (the reason says which it would read)",
}


def verdict_of(r: Mapping[str, Any]) -> str:
    """A run record's verdict as shown (``r``: a ``harness.outcome.results.Record``): "unstable" where the stability
    record says it flips between seeds; results.json files written before verdicts existed are read by their pytest
    outcome."""
    v = r.get("verdict") or {
        "passed": "held",
        "xpassed": "held",
        "xfailed": "not held",
        "failed": "not held" if "ClaimNotHeld" in str(r.get("reason")) else "harness error",
    }.get(r["outcome"], "n/a" if str(r.get("reason")).startswith("not applicable") else "skipped")
    return "unstable" if r.get("unstable") and v in ("held", "not held") else v


class ClaimNotHeld(AssertionError):
    """The paper's claim did not hold on this model; the message carries the figure measured in this run and
    ``check`` names the assertion that failed (a known outcome must match it)."""

    def __init__(self, message: str, check: str = ""):
        super().__init__(message)
        self.check = check


class SnapshotDrift(AssertionError):
    """Measured figures moved beyond the snapshot tolerance: a change in the harness or its dependencies,
    never a verdict on the claim."""


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
    function and the condition's source, e.g. ``test_T10_...: fits['delta_aic'] > AIC_MARGIN``."""
    if not bool(condition):
        if check is None:
            frame = sys._getframe(1)
            check = f"{_function_name(frame)}: {_condition_source(frame)}"
        raise ClaimNotHeld(message, check)
