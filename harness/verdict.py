"""What a claim test's verdict is made of: ``holds``, ``ClaimNotHeld``, and ``Figures``.

A claim that does not hold raises ``ClaimNotHeld`` (an AssertionError); known failures are strict
xfails that accept only this exception, so a snapshot drift or a crash is never hidden by them.
``Figures`` records the numbers a test measured; the plugin checks them after the test body (snapshot,
then the paper's value within its tolerance), so a test body holds only measurements and ``holds``.
"""

from __future__ import annotations

import math

import numpy as np

from .claim_registry import ClaimSpec


class ClaimNotHeld(AssertionError):
    """The paper's claim did not hold on this model; the message carries the measured figure."""


class SnapshotDrift(AssertionError):
    """Measured figures moved beyond the snapshot tolerance: a change in the harness or its dependencies,
    never a verdict on the claim."""


def holds(condition: bool, message: str) -> None:
    if not bool(condition):
        raise ClaimNotHeld(message)


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

    def __init__(self, node, claim: ClaimSpec, snapshot=None, model: str | None = None):
        self.node, self.claim, self.snapshot, self.model, self.values = node, claim, snapshot, model, {}

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
        """Compare every figure with the stored snapshot (bundled models at default settings)."""
        if self.snapshot is not None and self.values and not (self.values == self.snapshot):
            raise SnapshotDrift(f"{self.claim.id}: measured figures drifted from the snapshot beyond tolerance "
                                f"(run with --snapshot-update to accept a deliberate change)")

    def check_paper(self) -> None:
        """On the paper's models, every figure the paper reports must be within the registry's tolerance."""
        for name, value in self.values.items():
            ref = self.claim.paper_value(self.model, name)
            if ref is None or not isinstance(value, (int, float)):
                continue
            holds(ref.within(value), f"{name} = {value:.4g} on {self.model}; the paper reports {ref.value} "
                                     f"(tolerance {ref.tolerance:.3g})")
