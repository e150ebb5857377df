"""What a claim test uses: the ClaimNotHeld failure, the ``holds`` assertion, and ``Figures``.

A claim that does not hold raises ``ClaimNotHeld`` (an AssertionError); known failures are strict
xfails that accept only this exception, so a snapshot drift or a crash is never hidden by them.
"""

from __future__ import annotations

import math

import numpy as np


class ClaimNotHeld(AssertionError):
    """The paper's claim did not hold on this model; the message carries the measured figure."""


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
    """Numbers measured by one claim test: reported in the run report and snapshotted for bundled models."""

    def __init__(self, node, snapshot=None):
        self.node, self.snapshot, self.values = node, snapshot, {}

    def add(self, name: str, value, paper=None, ci=None, note: str = "") -> object:
        value = _plain(value)
        self.values[name] = value
        self.node.user_properties.append(("figure", {"name": name, "value": value, "paper": _plain(paper),
                                                     "ci": _plain(ci), "note": note}))
        return value

    def check_snapshot(self) -> None:
        """Compare every figure so far with the stored snapshot (bundled models at default settings)."""
        if self.snapshot is not None:
            assert self.values == self.snapshot, "measured figures drifted from the snapshot beyond tolerance"
