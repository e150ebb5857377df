"""Prompt-level statistics of the targeted interventions (§5.8 T11, App. B T12): the prompt is the unit.

T11 compares the reduction of head-mean ΔR² by a targeted ablation with the mean reduction by random-head
ablations of equal size. Every condition's bootstrap rows come from the same prompt resamples (multinomial
weights on each condition's per-prompt sufficient statistics, ``measure.Leakage.mean_delta_boot``: no forward
pass per resample), so differences row by row are paired. The random draws are a second random factor:
inside each prompt resample the draws are resampled too (a nested, two-stage bootstrap), so the interval
carries both the prompts' and the draws' uncertainty.

T12 compares the topic probe's accuracy before and after an ablation on the same prompts: the per-prompt
out-of-fold correctness, before and after, gives the paired difference and its standard error.
Pure numpy, float64.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike
from threadpoolctl import threadpool_limits

from harness.stats.probes import DEFAULT_N_COMPONENTS, fold_predictions, stratified_splits

__all__ = ["reduction", "random_minus_targeted", "probe_correct", "paired_difference"]


def reduction(base: ArrayLike, ablated: ArrayLike) -> np.ndarray:
    """Reduction of head-mean ΔR² by an ablation, 1 − ablated / base, row by row (the paper's "drops it by")."""
    return 1.0 - np.asarray(ablated, dtype=np.float64) / np.asarray(base, dtype=np.float64)


def random_minus_targeted(
    base: ArrayLike, targeted: dict[str, ArrayLike], random: ArrayLike, seed: int | None = None
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Per bootstrap row: the mean random-head reduction, and per targeted ablation the margin
    (mean random reduction − |targeted reduction|), > 0 where the targeted effect is the smaller.

    ``base`` [B] and each ``targeted[name]`` [B] are head-mean ΔR² on the same B prompt resamples (B = 1 with
    all-ones weights: the point estimate); ``random`` [D, B], one row per random draw (trailing axes, e.g. many
    synthetic data sets, broadcast: base [B, ...], random [D, B, ...]); a scalar base takes ``random`` [D]. With
    ``seed`` the D draws are resampled with replacement inside every prompt resample (the nested bootstrap), their
    deviations from that row's draw mean widened by √(D/(D−1)), the small-sample correction of a bootstrap over
    D units (10 draws); without it the draws are averaged as they are (the point estimate). Returns ([B], {name: [B]})."""
    base = np.atleast_1d(np.asarray(base, dtype=np.float64))
    rand = np.asarray(random, dtype=np.float64)
    if rand.ndim == base.ndim:
        rand = rand.reshape(rand.shape + (1,) * (base.ndim + 1 - rand.ndim))
    if rand.shape[1:] != base.shape:
        raise ValueError(f"random must be [draws, *{base.shape}], got {rand.shape}")
    red = reduction(base[None], rand)  # [D, B, ...]
    if seed is not None and red.shape[0] > 1:  # resampled draws' deviations widened by √(D/(D−1)) (draws are few)
        d = red.shape[0]
        centre = red.mean(axis=0, keepdims=True)
        idx = np.random.default_rng(seed).integers(0, d, size=red.shape)
        red = centre + np.sqrt(d / (d - 1)) * (np.take_along_axis(red, idx, axis=0) - centre)
    mean_random = red.mean(axis=0)
    margins = {k: mean_random - np.abs(reduction(base, np.atleast_1d(v))) for k, v in targeted.items()}
    return mean_random, margins


def probe_correct(
    X: np.ndarray, labels: np.ndarray, seed: int = 0, n_components: int = DEFAULT_N_COMPONENTS, folds: int = 5
) -> np.ndarray:
    """Per prompt, whether the topic probe (``probes.topic_probe_accuracy``'s folds and pipeline, the same
    seed) predicts its topic out of fold: bool [n_prompts]. Its per-fold means are that function's accuracy."""
    X = np.asarray(X, dtype=np.float64)
    labels = np.asarray(labels)
    if X.ndim != 2 or labels.shape != (X.shape[0],):
        raise ValueError(f"X must be [n_prompts, d] and labels [n_prompts], got {X.shape} and {labels.shape}")
    if not np.all(np.isfinite(X)):
        raise ValueError("X contains non-finite values")
    with threadpool_limits(limits=1, user_api="blas"):
        pred = fold_predictions(X, labels, stratified_splits(labels, folds, seed), n_components, 1.0, 200)
    return pred == labels


def paired_difference(before: ArrayLike, after: ArrayLike) -> tuple[float, float]:
    """Mean of the per-prompt differences after − before and its standard error sd(d) / sqrt(n) (ddof 1):
    the paired difference of two conditions on the same prompts (0 SE only when every prompt's difference is
    the same)."""
    d = np.asarray(after, dtype=np.float64) - np.asarray(before, dtype=np.float64)
    if d.ndim != 1 or d.size < 2:
        raise ValueError(f"need two or more prompts' paired values, got shape {d.shape}")
    return float(d.mean()), float(d.std(ddof=1) / np.sqrt(d.size))
