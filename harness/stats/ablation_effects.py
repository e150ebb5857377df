"""Prompt-level statistics of the targeted interventions (§5.8, App. B): the prompt is the unit.

The §5.8 ablations compare the reduction of head-mean ΔR² by a targeted ablation with the mean reduction by
random-head ablations of equal size. Every condition's bootstrap rows come from the same prompt resamples
(multinomial weights on each condition's per-prompt sufficient statistics, ``leakage_view.Leakage.mean_delta_boot``: no
forward pass per resample), so differences row by row are paired. The random draws are a second random factor:
inside each prompt resample the draws are resampled too (a nested, two-stage bootstrap), so the interval
carries both the prompts' and the draws' uncertainty.

The App. B rank-1 MLP ablation compares the topic probe's accuracy before and after an ablation on the same
prompts: the per-prompt out-of-fold correctness, before and after, gives the paired difference, with Newcombe's
hybrid score interval for paired proportions and, reported beside it, the exact McNemar p-value. The fraction of
the MLP output norm an ablation removes gets a prompt-bootstrap interval with the ablated direction held fixed.
Pure numpy, float64.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike
from threadpoolctl import threadpool_limits

from harness.stats.probes import DEFAULT_N_COMPONENTS, fold_predictions, stratified_splits

__all__ = [
    "reduction",
    "random_minus_targeted",
    "probe_correct",
    "paired_change_interval",
    "mcnemar_exact_p",
    "norm_removed_boot",
]


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


def wilson(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """Wilson's score interval of a proportion ``k / n``."""
    from scipy.stats import norm

    return _wilson(k, n, float(norm.ppf(1 - (1 - level) / 2)))


def _wilson(k: int, n: int, z: float) -> tuple[float, float]:
    p, den = k / n, 1 + z * z / n
    centre, half = (p + z * z / (2 * n)) / den, z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    return float(centre - half), float(centre + half)


def paired_change_interval(before: ArrayLike, after: ArrayLike, level: float = 0.95) -> tuple[float, float, float]:
    """(change, lo, hi): the mean per-prompt change of a 0/1 outcome, after − before, and its ``level`` interval by
    Newcombe's hybrid score method for paired proportions (1998, method 10): each proportion's Wilson interval,
    combined through the correlation of the two outcomes over prompts. Unlike inverting McNemar's exact test
    (conditional on the discordant prompts, which covers a one-way change about half the time), it covers the
    change at about its level with few discordant prompts (tests/test_prompt_level_ci.py)."""
    from scipy.stats import norm

    b0, a0 = np.asarray(before, dtype=bool), np.asarray(after, dtype=bool)
    if b0.ndim != 1 or b0.shape != a0.shape or b0.size < 2:
        raise ValueError(f"need two or more prompts' paired 0/1 outcomes, got shapes {b0.shape} and {a0.shape}")
    n, z = b0.size, float(norm.ppf(1 - (1 - level) / 2))
    both, lost, gained = int(np.sum(b0 & a0)), int(np.sum(b0 & ~a0)), int(np.sum(~b0 & a0))
    neither = n - both - lost - gained
    p_after, p_before = (both + gained) / n, (both + lost) / n
    (l_after, u_after), (l_before, u_before) = _wilson(both + gained, n, z), _wilson(both + lost, n, z)
    margins = float(both + lost) * (gained + neither) * (both + gained) * (lost + neither)
    phi = (both * neither - lost * gained) / np.sqrt(margins) if margins > 0 else 0.0
    da, db = p_after - l_after, u_before - p_before
    ua, ub = u_after - p_after, p_before - l_before
    change = p_after - p_before
    lo = change - np.sqrt(max(da * da - 2 * phi * da * db + db * db, 0.0))
    hi = change + np.sqrt(max(ua * ua - 2 * phi * ua * ub + ub * ub, 0.0))
    return float(change), float(lo), float(hi)


def mcnemar_exact_p(before: ArrayLike, after: ArrayLike) -> float:
    """One-sided exact McNemar p-value for a loss: of the m prompts whose outcome changed, P(at least the observed
    number lost | Binomial(m, 1/2)); 1 where none changed."""
    from scipy.stats import binom

    b0, a0 = np.asarray(before, dtype=bool), np.asarray(after, dtype=bool)
    lost, gained = int(np.sum(b0 & ~a0)), int(np.sum(~b0 & a0))
    return 1.0 if lost + gained == 0 else float(binom.sf(lost - 1, lost + gained, 0.5))


def norm_removed_boot(Y: ArrayLike, direction: ArrayLike, weights: np.ndarray) -> np.ndarray:
    """The Frobenius fraction of the norm of per-prompt outputs ``Y`` [N, d] that projecting out the fixed unit
    ``direction`` removes, 1 − ||Y⊥||_F / ||Y||_F, on every prompt resample of ``weights`` [B, N] (all ones: the
    point estimate): the ablation's direction is the one applied, the prompts it is measured on are resampled."""
    Y = np.asarray(Y, dtype=np.float64)
    total = np.sum(Y**2, axis=1)
    kept = total - (Y @ np.asarray(direction, dtype=np.float64)) ** 2
    return 1.0 - np.sqrt((weights @ kept) / (weights @ total))
