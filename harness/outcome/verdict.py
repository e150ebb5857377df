"""What a claim test's verdict is made of: ``holds``, ``ClaimNotHeld``, and ``Figures``.

A claim that does not hold raises ``ClaimNotHeld`` (an AssertionError); known failures are strict
xfails that accept only this exception, so a snapshot drift or a crash is never hidden by them.
``Figures`` records the numbers a test measured; the plugin checks them after the test body (snapshot,
then the paper's value within its tolerance), so a test body holds only measurements and ``holds``.
"""

from __future__ import annotations

import ast
import json
import linecache
import math
import sys

import numpy as np

from harness.spec.claims import ClaimSpec

#: The outcomes a claim test ends as, each with what it means (the terminal, results.json and the report).
VERDICTS = {
    "held": "the claim held",
    "not held": "the claim did not hold: ClaimNotHeld with the figure measured in this run",
    "stale": "recorded as not holding, and it now holds: re-take the known outcome",
    "harness error": "anything else (a crash, a snapshot drift, a missing capture): no verdict on the claim",
    "n/a": "the paper's prediction does not apply to this model",
    "skipped": "not run (weights absent, a slow variant)",
    "unstable": "the verdict differs between seeds (fixtures/stability.json)",
}


def verdict_of(r: dict) -> str:
    """A run record's verdict as shown: "unstable" where the stability record says it flips between seeds;
    results.json files written before verdicts existed are read by their pytest outcome."""
    v = r.get("verdict") or {"passed": "held", "xpassed": "held", "xfailed": "not held",
                             "failed": "not held" if "ClaimNotHeld" in str(r.get("reason")) else "harness error"}.get(
        r["outcome"], "n/a" if str(r.get("reason")).startswith("not applicable") else "skipped")
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


def _condition_source(frame) -> str:
    """The source of the first argument of the call running in ``frame`` (the ``holds(...)`` being executed),
    located by the instruction's own source span, so aliases, one-line ``else: holds(...)`` and several calls
    in one statement all resolve to the call that failed."""
    try:
        lineno, end, col, end_col = list(frame.f_code.co_positions())[frame.f_lasti // 2]
        lines = [ln.encode() for ln in linecache.getlines(frame.f_code.co_filename)[lineno - 1:end]]
        lines[-1] = lines[-1][:end_col]
        lines[0] = lines[0][col:]
        call = ast.parse(b"".join(lines).decode(), mode="eval").body
        return ast.unparse(call.args[0])
    except (SyntaxError, IndexError, TypeError, AttributeError, ValueError):
        return f"line {frame.f_lineno}"


def _function_name(frame) -> str:
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


def _plain(value):
    if isinstance(value, np.ndarray):
        return _plain(value.tolist())
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, (np.floating, float)):
        v = float(value)
        return v if math.isfinite(v) else float("nan")
    if isinstance(value, (np.integer,)):
        return int(value)
    return value


class Figures:
    """Numbers measured by one claim test: reported in the run report and snapshotted for bundled models.
    Only figures the claim's registry entry declares can be recorded."""

    def __init__(self, node, claim: ClaimSpec, snapshot=None, model: str | None = None, baseline=None,
                 update: bool = False):
        self.node, self.claim, self.snapshot, self.model, self.values = node, claim, snapshot, model, {}
        self.baseline, self.update, self.snapshot_checked = baseline, update, False

    def add(self, name: str, value, paper=None, ci=None, note: str = "") -> object:
        """Record a figure. ``paper`` defaults to the paper's number for this model, if it reports one."""
        ref = self.claim.paper_value(self.model, name)  # raises UndeclaredFigure for a name not in the registry
        value = _plain(value)
        if paper is None and ref is not None:
            paper = ref.value
        self.values[name] = value
        self.node.user_properties.append(("figure", {"name": name, "value": value, "paper": _plain(paper),
                                                     "ci": _plain(ci), "note": note}))
        return value

    def check_snapshot(self) -> None:
        """Compare every figure with the committed snapshot (bundled models at the default settings) or with
        the baseline recorded by the first run at these settings (recorded now if there is none)."""
        self.snapshot_checked = True
        if not self.values:
            return
        if self.snapshot is not None:
            if not (self.values == self.snapshot):
                raise SnapshotDrift(f"{self.claim.id}: measured figures drifted from the snapshot beyond tolerance: "
                                    f"{'; '.join(self._snapshot_moves())[:800]} (run with --snapshot-update to "
                                    f"accept a deliberate change)")
            return
        if self.baseline is None:
            return
        status, path, moved = self.baseline.check(self.model, self.node.originalname, self.values, self.update)
        self.node.user_properties.append(("baseline", {"status": status, "path": str(path)}))
        if moved:
            raise SnapshotDrift(f"{self.claim.id}: measured figures drifted from the baseline {path} beyond "
                                f"tolerance: {'; '.join(moved)[:800]} (--baseline-update re-records it)")

    def _snapshot_moves(self) -> list[str]:
        """The figures that moved against the committed snapshot just compared (syrupy keeps what it recalled)."""
        from harness.outcome.snapshots import ATOL, RTOL, moved_figures

        recalled = self.snapshot.executions[self.snapshot.num_executions - 1].recalled_data
        if recalled is None:
            return ["no snapshot committed for this test"]
        stored = json.loads(recalled)
        tol = stored.pop("_tolerance", {})
        return moved_figures(self.values, stored, tol.get("rtol", RTOL), tol.get("atol", ATOL)) or [
            "the snapshot differs in form (not a figure value)"]

    def check_paper(self) -> None:
        """On the paper's models, every figure the paper reports must be within the registry's tolerance."""
        for name, value in self.values.items():
            ref = self.claim.paper_value(self.model, name)
            if ref is None or not isinstance(value, (int, float)):
                continue
            holds(ref.within(value), f"{name} = {value:.4g} on {self.model}; the paper reports {ref.value} "
                                     f"(tolerance {ref.tolerance:.3g})", check=f"paper value of {name}")
