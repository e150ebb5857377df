"""A per-head ablation map and the single-head deposit statistic on it, pure numpy.

Each head of a layer is zeroed in turn; its effect on a read-out is the size of the relative change,
``|1 - ablated / base|``, either way (a head whose removal raises the read-out moves it as much as one that lowers
it). The deposit statistic asks whether one head carries a layer's effect: the largest effect's share of the layer's
summed effects, and its gap over the second largest, each with prompt-bootstrap rows that share their resamples
(every condition is refitted on the same prompt resamples), so the share and the gap are paired row by row. The head
is chosen on the whole run and then held fixed in the rows, as every chosen cell of this suite is.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np


def head_effects(base, ablated) -> np.ndarray:
    """``|1 - ablated / base|``: ``base`` a scalar (or bootstrap rows [B]), ``ablated`` [heads] (or [B, heads])."""
    base = np.asarray(base, dtype=np.float64)
    ablated = np.asarray(ablated, dtype=np.float64)
    if base.ndim == 1 and ablated.ndim == 2:
        base = base[:, None]
    if np.any(base == 0):
        raise ValueError("the unablated read-out is 0: no relative effect is defined")
    return np.abs(1.0 - ablated / base)


class Deposit(NamedTuple):
    head: int  # the head with the largest effect (its index in the layer)
    share: float  # its effect over the layer's summed effects
    share_rows: np.ndarray  # [B]
    gap: float  # its effect minus the second largest
    gap_rows: np.ndarray  # [B]
    second: int  # the head with the second largest effect


def deposit(effects: np.ndarray, rows: np.ndarray) -> Deposit:
    """The deposit statistic of one layer from its heads' effects [heads] and their bootstrap rows [B, heads]."""
    effects = np.asarray(effects, dtype=np.float64)
    rows = np.asarray(rows, dtype=np.float64)
    if effects.ndim != 1 or effects.size < 2 or rows.ndim != 2 or rows.shape[1] != effects.size:
        raise ValueError(f"need effects [heads >= 2] and rows [B, heads], got {effects.shape} and {rows.shape}")
    if not effects.sum() > 0:
        raise ValueError("no head of the layer has any effect: no share is defined")
    order = np.argsort(effects, kind="stable")[::-1]
    top, second = int(order[0]), int(order[1])
    totals = rows.sum(axis=1)
    share_rows = np.divide(rows[:, top], totals, out=np.full(len(rows), np.nan), where=totals > 0)
    return Deposit(
        top,
        float(effects[top] / effects.sum()),
        share_rows,
        float(effects[top] - effects[second]),
        rows[:, top] - rows[:, second],
        second,
    )
