"""Leakage ΔR² engine (paper Eq. 4–5), pure numpy, float64, all heads at once: the per-head statistic.

The pair design is in ``harness.stats.pairs``, the permutation and sign-flip tests in ``harness.stats.nulls``
(their within-group shuffles in ``harness.stats.shuffles``), the bootstrap and intervals in
``harness.stats.intervals``.

The measurement
---------------
For a fixed set of causal pairs (i, j), 0 <= j <= i, shared by every prompt,
and an attention quantity ``Y[prompt, pair, head]`` (post-softmax weight by
default), each head is fitted twice by ordinary least squares over all
prompts × pairs rows:

* baseline: one indicator per distinct offset d = i − j (saturated offset model,
  fitted values = per-d group means);
* full: baseline + mean-centred i + mean-centred j.

Because j = i − d, j lies in span(indicators(d), i): the full model's column
space is span(indicators(d), i) and ΔR² = R²_full − R²_base is the partial
contribution of i after the offset indicators.  By Frisch–Waugh–Lovell, with
ĩ = i − mean(i | d),

    ΔSSE = (Σ_rows ĩ·y)² / Σ_rows ĩ²,   ΔR² = ΔSSE / SST,

SST = Σ (y − ȳ)² over all rows.  (Σ ĩ·ỹ = Σ ĩ·y because ĩ sums to zero in each
d-group.)  ĩ depends only on the pair set, so it is identical for every prompt
and for every prompt weighting; everything reduces to per-prompt sufficient
statistics (``PromptStats``) that are weighted-summed for bootstrap resamples.

Conventions
-----------
* ``Y`` is ``[n_prompts, n_pairs, n_heads]`` or ``[n_pairs, n_heads]`` (one
  prompt); its pair axis follows the order of ``PairSet.i`` / ``PairSet.j``.
* Rows are flattened prompt-major: row r = p * n_pairs + k.
* Rank-aware degeneracies: if no d-group has varying i (Σ ĩ² = 0) the full
  model equals the baseline and ΔR² = 0.  If a head is constant (SST = 0, up to
  a floor of ``SST_REL_TOL`` on its standard deviation relative to max|y|),
  R²_base, R²_full and ΔR² are all defined as 0.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from harness.stats.pairs import PairSet

__all__ = [
    "LeakageFit",
    "PromptStats",
    "prompt_stats",
    "fit_from_stats",
    "PromptMoments",
    "moments_of",
    "delta_from_moments",
    "delta_r2",
    "causal_mask_share",
    "residual_stream_share",
]

#: A head whose standard deviation is <= SST_REL_TOL * max|y| is treated as
#: constant (SST = 0): all its R² values are reported as 0.
SST_REL_TOL = 1e-12

#: Target number of float64 elements per working block (chunking bound; also ``harness.stats.nulls``).
BLOCK_ELEMS = 4_000_000


@dataclass(frozen=True, eq=False)
class LeakageFit:
    """Per-head fit results, float64, each of shape [..., H].

    r2_base: R² of the saturated offset model; r2_full: R² with centred i, j
    added; delta: ΔR² = r2_full − r2_base (Eq. 4).  sst: total sum of squares
    (0 for a head treated as constant);
    delta_sse: SSE reduction of the full model (ΔR² · SST), which, unlike ΔR²,
    is invariant to adding any function of d to y.
    """

    r2_base: np.ndarray
    r2_full: np.ndarray
    delta: np.ndarray
    sst: np.ndarray
    delta_sse: np.ndarray


# --------------------------------------------------------------------------
# Sufficient statistics and the fit
# --------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class PromptStats:
    """Per-prompt sufficient statistics of the centred target yc = y − c_h.

    a: [P, H] ĩ·yc;  s1: [P, H] Σ yc;  s2: [P, H] Σ yc²;  g: [P, n_groups, H]
    per-d-group sums of yc;  scale: [H] max|y| (for the constant-head floor);
    group_sizes: [n_groups];  n_pairs;  i_tilde_sq: Σ_pairs ĩ².
    Centring by a per-head constant c_h changes none of the fitted quantities
    and keeps the sums-of-squares subtractions well conditioned.
    """

    a: np.ndarray
    s1: np.ndarray
    s2: np.ndarray
    g: np.ndarray
    scale: np.ndarray
    group_sizes: np.ndarray
    n_pairs: int
    i_tilde_sq: float


def as_target_3d(pairs: PairSet, Y: np.ndarray) -> np.ndarray:
    """Validate Y and return it as float64 [n_prompts, n_pairs, H]; a 4-D Y [n_prompts, n_pairs, layers, heads] (a
    capture's weights transposed: a view, float32 or float64) is returned as it is and stands for [n_prompts,
    n_pairs, layers x heads] (heads layer-major), never copied whole: the functions here read it a block of prompts at
    a time in float64 (``flat``)."""
    Y = np.asarray(Y)
    if Y.ndim != 4 or Y.dtype not in (np.float32, np.float64):
        Y = np.asarray(Y, dtype=np.float64)
    if Y.ndim == 2:
        Y = Y[None]
    if Y.ndim not in (3, 4):
        raise ValueError(f"Y must be [n_prompts, n_pairs, H] or [n_pairs, H], got shape {Y.shape}")
    if Y.shape[1] != pairs.n_pairs:
        raise ValueError(f"Y has {Y.shape[1]} pairs but the PairSet has {pairs.n_pairs}")
    if Y.shape[0] < 1 or Y.shape[1] < 1:
        raise ValueError("Y must hold at least one prompt and one pair")
    if not np.all(np.isfinite(Y)):
        raise ValueError("Y contains non-finite values")
    return Y


def flat(Y3: np.ndarray) -> np.ndarray:
    """A block of a target as float64 [prompts, pairs, H] (a 4-D block's layers and heads flattened, layer-major:
    a copy of the block only)."""
    return Y3 if Y3.ndim == 3 else Y3.reshape(*Y3.shape[:2], -1).astype(np.float64)


def centred(Y3: np.ndarray) -> np.ndarray:
    """Y minus its per-head grand mean (a shift that leaves every R² unchanged)."""
    return Y3 - Y3.mean(axis=(0, 1), keepdims=True)


def prompt_stats(pairs: PairSet, Y: np.ndarray) -> PromptStats:
    """Per-prompt sufficient statistics for all heads (one pass over Y, a block of prompts at a time: no copy of Y
    is made, only of a block of ``BLOCK_ELEMS`` values)."""
    Y3 = as_target_3d(pairs, Y)
    P, N, H = Y3.shape[0], Y3.shape[1], int(np.prod(Y3.shape[2:]))
    centre = Y3.mean(axis=(0, 1), dtype=np.float64).reshape(H)  # ``centred``'s: each block centred by it
    a, s1, s2 = np.empty((P, H)), np.empty((P, H)), np.empty((P, H))
    g = np.empty((P, pairs.n_groups, H))
    step = max(1, BLOCK_ELEMS // max(1, N * H))
    for s in range(0, P, step):
        Yc = flat(Y3[s : s + step]) - centre
        a[s : s + step] = np.matmul(pairs.i_tilde, Yc)
        g[s : s + step] = np.add.reduceat(Yc[:, pairs.group_order, :], pairs.group_starts, axis=1)
        s1[s : s + step] = Yc.sum(axis=1)
        s2[s : s + step] = np.einsum("pkh,pkh->ph", Yc, Yc)
    return PromptStats(
        a=a,
        s1=s1,
        s2=s2,
        g=g,
        scale=np.maximum(Y3.max(axis=(0, 1)), -Y3.min(axis=(0, 1))).reshape(H).astype(np.float64),
        group_sizes=pairs.group_sizes,
        n_pairs=pairs.n_pairs,
        i_tilde_sq=pairs.i_tilde_sq,
    )


def _between_ss(stats: PromptStats, w: np.ndarray, wsum: np.ndarray) -> np.ndarray:
    """Σ_g (Σ_p w_p G_pg)² / (W n_g): the baseline's explained sum of squares + mean term."""
    P, ng, H = stats.g.shape
    g2 = stats.g.reshape(P, ng * H)
    inv_n = 1.0 / stats.group_sizes.astype(np.float64)
    out = np.empty((w.shape[0], H))
    step = max(1, BLOCK_ELEMS // max(1, ng * H))
    for s in range(0, w.shape[0], step):
        gw = (w[s : s + step] @ g2).reshape(-1, ng, H)
        out[s : s + step] = np.einsum("bgh,g->bh", gw * gw, inv_n) / wsum[s : s + step, None]
    return out


def _check_weights(w: np.ndarray, n_prompts: int) -> np.ndarray:
    """Validate prompt weights, returned as float64 [B, P]."""
    w = np.asarray(w, dtype=np.float64)
    if w.ndim == 1:
        w = w[None]
    if w.ndim != 2 or w.shape[1] != n_prompts:
        raise ValueError(f"weights must be [B, {n_prompts}], got {w.shape}")
    if np.any(w < 0) or np.any(w.sum(axis=1) <= 0) or not np.all(np.isfinite(w)):
        raise ValueError("weights must be finite, non-negative, with a positive sum per row")
    return w


def fit_from_stats(stats: PromptStats, weights: np.ndarray) -> LeakageFit:
    """Weighted pooled fit: R²_base, R²_full, ΔR² for B prompt weightings × H heads.

    weights [B, P]: prompt p's rows count w_bp times (integer counts =
    duplicating prompts; all ones = the plain fit).  Returns arrays [B, H].
    """
    w = _check_weights(weights, stats.a.shape[0])
    wsum = w.sum(axis=1)
    n_rows = wsum * stats.n_pairs
    S1, S2, A = w @ stats.s1, w @ stats.s2, w @ stats.a
    sst = np.maximum(S2 - S1 * S1 / n_rows[:, None], 0.0)
    sse_base = np.maximum(S2 - _between_ss(stats, w, wsum), 0.0)
    ssi = wsum * stats.i_tilde_sq
    if stats.i_tilde_sq > 0:
        dsse = np.minimum(A * A / ssi[:, None], sse_base)
    else:
        dsse = np.zeros_like(A)
    const = sst <= n_rows[:, None] * (SST_REL_TOL * stats.scale[None, :]) ** 2
    safe = np.where(const, 1.0, sst)
    r2_base = np.where(const, 0.0, 1.0 - sse_base / safe)
    delta = np.where(const, 0.0, dsse / safe)
    return LeakageFit(
        r2_base=r2_base,
        r2_full=r2_base + delta,
        delta=delta,
        sst=np.where(const, 0.0, sst),
        delta_sse=np.where(const, 0.0, dsse),
    )


# --------------------------------------------------------------------------
# ΔR² from per-prompt moments (a pass reduced as it runs)
# --------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class PromptMoments:
    """Per prompt and head, the moments ΔR² needs, each about the prompt's own mean (so a pass can reduce each prompt
    as it runs, before any grand mean is known): m [P, H] the mean over pairs; q [P, H] Σ (y − m)²; a [P, H]
    Σ ĩ·(y − m) (= ĩ·y: ĩ sums to 0 in every d-group); x [P, H] max |y|; with n_pairs and i_tilde_sq (Σ ĩ²) of
    the pair set. ΔR² (``delta_from_moments``) is the FWL fit of ``fit_from_stats`` on the same rows, SST assembled
    as Σ_p w_p (q_p + n (m_p − ȳ_w)²); the baseline's SSE (the offset means) is not needed for ΔR²."""

    m: np.ndarray
    q: np.ndarray
    a: np.ndarray
    x: np.ndarray
    n_pairs: int
    i_tilde_sq: float


def moments_of(pairs: PairSet, Y: np.ndarray) -> PromptMoments:
    """The moments of a target [n_prompts, n_pairs, H] (numpy; a pass reduces its own with the same sums)."""
    Y3 = flat(as_target_3d(pairs, Y))
    m = Y3.mean(axis=1)
    d = Y3 - m[:, None, :]
    return PromptMoments(
        m,
        np.einsum("pkh,pkh->ph", d, d),
        np.matmul(pairs.i_tilde, d),
        np.abs(Y3).max(axis=1),
        pairs.n_pairs,
        pairs.i_tilde_sq,
    )


def delta_from_moments(mom: PromptMoments, weights: np.ndarray) -> np.ndarray:
    """ΔR² per head for B prompt weightings from per-prompt moments: [B, H] (``fit_from_stats``' delta: the same
    SST, the same ΔSSE = (Σ_p w_p a_p)² / (W Σĩ²), the same constant-head floor on the prompts' largest |y|)."""
    w = _check_weights(weights, mom.a.shape[0])
    wsum = w.sum(axis=1)
    n_rows = wsum * mom.n_pairs
    mc = mom.m - mom.m.mean(axis=0)  # about the prompts' grand mean: the subtraction below stays well conditioned
    s1 = w @ mc
    sst = np.maximum(w @ mom.q + mom.n_pairs * (w @ (mc * mc) - s1 * s1 / wsum[:, None]), 0.0)
    A = w @ mom.a
    dsse = np.minimum(A * A / (wsum[:, None] * mom.i_tilde_sq), sst) if mom.i_tilde_sq > 0 else np.zeros_like(A)
    const = sst <= n_rows[:, None] * (SST_REL_TOL * mom.x.max(axis=0)[None, :]) ** 2
    return np.where(const, 0.0, dsse / np.where(const, 1.0, sst))


def _squeeze(fit: LeakageFit) -> LeakageFit:
    """Drop the leading weighting axis of a single-weighting fit."""
    return LeakageFit(*(getattr(fit, f)[0] for f in ("r2_base", "r2_full", "delta", "sst", "delta_sse")))


def delta_r2(pairs: PairSet, Y: np.ndarray) -> LeakageFit:
    """Leakage ΔR² (Eq. 4) for every head: R²(offset indicators + centred i, j) − R²(offset indicators).

    Y: [n_prompts, n_pairs, H] or [n_pairs, H]; all prompts' rows are pooled in
    one regression per head.  Returns a LeakageFit of [H] arrays.
    """
    stats = prompt_stats(pairs, Y)
    return _squeeze(fit_from_stats(stats, np.ones((1, stats.a.shape[0]))))


# --------------------------------------------------------------------------
# Causal-mask and residual-stream shares (Eq. 5)
# --------------------------------------------------------------------------
def _ratio(num: ArrayLike, den: ArrayLike) -> float | np.ndarray:
    """num / den with NaN where den == 0; scalar in, float out."""
    num = np.asarray(num, dtype=np.float64)
    den = np.asarray(den, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.where(den == 0, np.nan, num / np.where(den == 0, 1.0, den))
    return float(r) if r.ndim == 0 else r


def residual_stream_share(delta_causal: ArrayLike, delta_bidirectional: ArrayLike) -> float | np.ndarray:
    """Residual-stream share ΔR²_bi / ΔR²_causal (Eq. 5); NaN where ΔR²_causal == 0."""
    return _ratio(delta_bidirectional, delta_causal)


def causal_mask_share(delta_causal: ArrayLike, delta_bidirectional: ArrayLike) -> float | np.ndarray:
    """Causal-mask share 1 − ΔR²_bi / ΔR²_causal (Eq. 5); NaN where ΔR²_causal == 0."""
    r = residual_stream_share(delta_causal, delta_bidirectional)
    return 1.0 - r
