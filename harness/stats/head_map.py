"""A per-head ablation map and the single-head deposit statistic on it, pure numpy.

Each head of a layer is zeroed in turn; its effect on a read-out is the size of the relative change,
``|1 - ablated / base|``, either way (a head whose removal raises the read-out moves it as much as one that lowers
it). The deposit statistic asks whether one head carries a layer's effect: the largest effect's share of the layer's
summed effects, and its gap over the second largest, each with prompt-bootstrap rows that share their resamples
(every condition is refitted on the same prompt resamples), so the share and the gap are paired row by row. The head
is chosen on the whole run and then held fixed in the rows, as every chosen cell of this suite is.

A deposit is judged (``judged``) as a large effect of one head: its own effect above a floor, and its share of the
layer above the share one head carries when each other head moves the read-out at most a fraction ``others`` as much
(``single_head_share``: 1 / (1 + (H - 1) * others), 0.5 at 16 heads with others 1/15, 0.83 at 4), each on its expanded
percentile interval over the units (prompts, or a synthetic model's evaluation samples) through the one decision rule.
An accuracy read-out's map (``accuracy_map``) resamples the units' own accuracies, so every head's rows are paired.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from harness.spec.decision import Decision, at_least
from harness.stats import intervals


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
    effect: float  # its effect
    effect_rows: np.ndarray  # [B]
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
        float(effects[top]),
        rows[:, top],
        float(effects[top] / effects.sum()),
        share_rows,
        float(effects[top] - effects[second]),
        rows[:, top] - rows[:, second],
        second,
    )


def single_head_share(heads: int, others: float) -> float:
    """The share of a layer's summed effects one head carries when each of the other ``heads - 1`` moves the
    read-out ``others`` times as much as it: 1 / (1 + (heads - 1) * others)."""
    if heads < 2 or not 0 < others <= 1:
        raise ValueError(f"need at least 2 heads and others in (0, 1], got {heads} and {others}")
    return 1.0 / (1.0 + (heads - 1) * others)


def interval(rows: np.ndarray, n: int) -> tuple[float, float]:
    """The expanded percentile interval of finite bootstrap rows over ``n`` units."""
    lo, hi = intervals.percentile_ci(rows[np.isfinite(rows)], n=n)
    return float(lo), float(hi)


class Judged(NamedTuple):
    effect: Decision  # the largest head's own effect above the floor
    share: Decision  # its share of the layer above ``single_head_share``
    bound: float  # that share
    uniform: float  # 1 / heads, reported beside it

    @property
    def held(self) -> bool:
        return self.effect.held and self.share.held


def judged(d: Deposit, heads: int, floor: float, others: float, n: int, unit: str = "prompt") -> Judged:
    """The deposit ``d`` of a layer of ``heads`` heads judged as one head's large effect: its effect above ``floor``
    and its share above ``single_head_share(heads, others)``, on intervals over ``n`` units."""
    bound = single_head_share(heads, others)
    effect = at_least(d.effect, interval(d.effect_rows, n), floor, n, unit=unit)
    share = at_least(d.share, interval(d.share_rows, n), bound, n, unit=unit)
    return Judged(effect, share, bound, 1.0 / heads)


class AccuracyMap(NamedTuple):
    accuracy: float  # unablated, over the units
    accuracy_rows: np.ndarray  # [B]
    ablated: np.ndarray  # accuracy with each head zeroed [heads]
    effects: np.ndarray  # |1 - ablated / unablated| [heads]
    rows: np.ndarray  # their bootstrap rows [B, heads]
    units: int  # prompts or evaluation samples: what the rows resample


def accuracy_map(base: np.ndarray, ablated: np.ndarray, n_boot: int = 1000, seed: int = 0) -> AccuracyMap:
    """A head map of an accuracy read-out from each unit's accuracy, unablated ``base`` [n] and with each head
    zeroed alone ``ablated`` [n, heads] (a sample's 0 or 1, a prompt's share of correct positions); every condition
    on the same resamples of the units."""
    base, ablated = np.asarray(base, dtype=np.float64), np.asarray(ablated, dtype=np.float64)
    if base.ndim != 1 or ablated.shape[:1] != base.shape or ablated.ndim != 2:
        raise ValueError(f"need base [n] and ablated [n, heads], got {base.shape} and {ablated.shape}")
    w = intervals.bootstrap_weights(len(base), n_boot, seed)
    base_rows, ablated_rows = w @ base / len(base), w @ ablated / len(base)
    if base.mean() == 0 or np.any(base_rows == 0):
        raise ValueError("accuracy 0 (in a resample) unablated: no relative effect is defined")
    return AccuracyMap(
        float(base.mean()),
        base_rows,
        ablated.mean(axis=0),
        head_effects(base.mean(), ablated.mean(axis=0)),
        head_effects(base_rows, ablated_rows),
        len(base),
    )
