"""From captures to the paper's leakage figures: the glue between a Session's cached forward passes
and the pure statistics of ``harness.leakage``. Every function returns numbers for all heads at once.

Heads are flattened layer-major (head index = layer * n_heads + h) everywhere.
"""

from __future__ import annotations

import numpy as np

from . import leakage as lk

TARGETS = {"weight": "pattern_pairs", "logit": "score_pairs"}  # post-softmax (default) or pre-softmax


def pair_targets(session, name: str, prompts, conditions: tuple[str, ...] = (), target: str = "weight",
                 interventions=None, tag: str = "", pair_kind: str = "stratified",
                 layers: int | None = None) -> np.ndarray:
    """The regression target at the session's pairs: [n_prompts, n_pairs, n_heads] (first ``layers`` only
    when given: the forward pass then stops there)."""
    if target not in TARGETS:
        raise ValueError(f"unknown target {target!r}; choose from {', '.join(TARGETS)}")
    recipe = TARGETS[target]
    raw = session.measure(name, prompts, recipe, conditions, interventions, tag, pair_kind, layers)[recipe]
    n, l, p, h = raw.shape
    return raw.transpose(0, 2, 1, 3).reshape(n, p, l * h)


def by_layer(per_head: np.ndarray, n_layers: int) -> np.ndarray:
    """[..., n_heads_total] -> [..., n_layers, heads_per_layer]."""
    return per_head.reshape(*per_head.shape[:-1], n_layers, -1)


def significance(pairs: lk.PairSet, Y: np.ndarray, n_perm: int, seed: int, q: float = 0.05) -> dict:
    """ΔR² per head with its permutation p-value and the Benjamini–Hochberg decision (§4, Table 5)."""
    fit = lk.delta_r2(pairs, Y)
    p = lk.permutation_pvalues(fit.delta, lk.permutation_null(pairs, Y, n_perm, seed))
    return {"delta": fit.delta, "p": p, "significant": lk.benjamini_hochberg(p, q)}


def mean_delta_with_ci(pairs: lk.PairSet, Y: np.ndarray, weights: np.ndarray) -> tuple[float, tuple[float, float]]:
    """Head-mean ΔR² and its bootstrap CI over prompts (weights: bootstrap_weights rows)."""
    point = float(lk.delta_r2(pairs, Y).delta.mean())
    return point, lk.mean_ci(lk.bootstrap_delta_r2(pairs, Y, weights=weights))


def bin_profile(pairs: lk.PairSet, Y: np.ndarray, edges: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
    """Head-mean ΔR² per query bin: [n_bins] or, with bootstrap weights [B, P], [B, n_bins]."""
    w = np.ones((1, Y.shape[0])) if weights is None else weights
    out = []
    for lo, hi in zip(edges[:-1], edges[1:]):
        mask = (pairs.i >= lo) & (pairs.i < hi)
        stats = lk.prompt_stats(pairs.subset(mask), Y[:, mask, :])
        out.append(lk.fit_from_stats(stats, w).delta.mean(axis=-1))
    prof = np.stack(out, axis=-1)
    return prof[0] if weights is None else prof


def layer_means(pairs: lk.PairSet, Y: np.ndarray, n_layers: int, weights: np.ndarray | None = None) -> np.ndarray:
    """Per-layer head-mean ΔR²: [n_layers] or, with bootstrap weights [B, P], [B, n_layers]."""
    w = np.ones((1, Y.shape[0])) if weights is None else weights
    delta = lk.fit_from_stats(lk.prompt_stats(pairs, Y), w).delta  # [B, H]
    means = by_layer(delta, n_layers).mean(axis=-1)
    return means[0] if weights is None else means


def depth_slope(values: np.ndarray) -> np.ndarray:
    """Least-squares slope of a per-layer profile against relative depth l/(L-1): [..., L] -> [...].
    Non-finite layers (a layer ratio with a zero denominator) are left out of the fit."""
    x = np.linspace(0.0, 1.0, values.shape[-1])
    ok = np.isfinite(values)
    x_mean = np.where(ok, x, 0.0).sum(-1, keepdims=True) / ok.sum(-1, keepdims=True)
    xd = np.where(ok, x - x_mean, 0.0)  # centred depth over the layers that count
    return (xd * np.where(ok, values, 0.0)).sum(-1) / (xd * xd).sum(-1)


def leakage_inputs(session, name: str, kind: str = "topic"):
    """(pairs, prompts, bootstrap weights) for one model at the session's settings."""
    prompts = session.prompts(name, kind)
    s = session.settings
    return session.pairs(prompts.seq_len), prompts, lk.bootstrap_weights(len(prompts), s.n_boot, s.seed)
