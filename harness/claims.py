"""What a claim test uses: the ClaimNotHeld failure, the ``holds`` assertion, and ``Figures``.

A claim that does not hold raises ``ClaimNotHeld`` (an AssertionError); known failures are strict
xfails that accept only this exception, so a snapshot drift or a crash is never hidden by them.
"""

from __future__ import annotations

import json
import math
from functools import lru_cache
from pathlib import Path

import numpy as np

REFERENCE = Path(__file__).resolve().parent.parent / "fixtures" / "paper_reference.json"


@lru_cache(maxsize=1)
def paper_reference() -> dict:
    return json.loads(REFERENCE.read_text())


def paper_value(model: str | None, name: str) -> dict | None:
    """The paper's number for a figure on one of its models: {"value", "rtol"|"atol"} or None."""
    return paper_reference().get(model or "", {}).get(name)


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

    def __init__(self, node, snapshot=None, model: str | None = None):
        self.node, self.snapshot, self.model, self.values = node, snapshot, model, {}

    def add(self, name: str, value, paper=None, ci=None, note: str = "") -> object:
        """Record a figure. ``paper`` defaults to the paper's number for this model, if it reports one."""
        value = _plain(value)
        ref = paper_value(self.model, name)
        if paper is None and ref is not None:
            paper = ref["value"]
        self.values[name] = value
        self.node.user_properties.append(("figure", {"name": name, "value": value, "paper": _plain(paper),
                                                     "ci": _plain(ci), "note": note}))
        return value

    def verify(self) -> None:
        """Compare every figure so far with the stored snapshot (bundled models at default settings), then,
        on the paper's models, with the paper's numbers within the tolerance stated in paper_reference.json."""
        if self.snapshot is not None:
            assert self.values == self.snapshot, "measured figures drifted from the snapshot beyond tolerance"
        for name, value in self.values.items():
            ref = paper_value(self.model, name)
            if ref is None or not isinstance(value, (int, float)):
                continue
            tol = ref.get("atol", 0.0) + ref.get("rtol", 0.0) * abs(ref["value"])
            holds(abs(value - ref["value"]) <= tol,
                  f"{name} = {value:.4g} on {self.model}; the paper reports {ref['value']} (tolerance {tol:.3g})")
