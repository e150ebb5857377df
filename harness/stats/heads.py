"""Sink-reading heads (paper §5.2, §5.8): how consistent a head's output is across prompts, the top and
bottom deciles by sink-reading strength, and the first principal component of its outputs.
Pure numpy, float64, on arrays a capture produced.

* ``cosine_consistency`` / ``decile_split`` – cross-prompt cosine consistency of each head's output, and the
  top / bottom decile by sink-reading strength (the sink-head comparisons).
* ``pc1_scores`` – each prompt's score on the first principal component of a head's outputs (the token-0 identity
  probe reads it).
"""

from __future__ import annotations

import math

import numpy as np

from harness.stats.probes import noise_tol

__all__ = ["cosine_consistency", "decile_split", "pc1_scores"]


# --------------------------------------------------------------------------
# Cosine consistency and deciles (the sink-head comparisons)
# --------------------------------------------------------------------------
def cosine_consistency(outputs: np.ndarray) -> np.ndarray:
    """Mean pairwise cosine similarity across prompts, per head: [n_prompts, *heads, d] -> [*heads].

    For each head, the mean of cos(o_p, o_q) over the n(n-1)/2 unordered pairs of
    distinct prompts p < q.  Vectorised with the Gram identity: with unit vectors u_p,
    Σ_{p<q} u_p·u_q = (||Σ_p u_p||² − Σ_p ||u_p||²) / 2.

    Zero-norm vectors have no direction: their cosine with anything is defined as 0
    (u_p = 0) and they still count in the n(n−1)/2 pairs, so a head that writes zero
    on some prompts is less consistent; a head that is zero on every prompt scores 0.
    Needs n_prompts >= 2; results are clipped to [−1, 1].
    """
    o = np.asarray(outputs, dtype=np.float64)
    if o.ndim < 2:
        raise ValueError(f"outputs must be [n_prompts, *heads, d], got shape {o.shape}")
    n = o.shape[0]
    if n < 2:
        raise ValueError("cosine consistency needs at least two prompts")
    if not np.all(np.isfinite(o)):
        raise ValueError("outputs contain non-finite values")
    norms = np.linalg.norm(o, axis=-1, keepdims=True)
    u = np.divide(o, norms, out=np.zeros_like(o), where=norms > 0)
    total = u.sum(axis=0)
    sq_sum = np.einsum("...d,...d->...", total, total)
    self_sum = (norms[..., 0] > 0).sum(axis=0)
    mean = (sq_sum - self_sum) / (n * (n - 1))
    return np.clip(mean, -1.0, 1.0)


def cosine_consistency_boot(outputs: np.ndarray, weights: np.ndarray, chunk: int = 100) -> np.ndarray:
    """``cosine_consistency`` under prompt resampling: [n_prompts, *heads, d], weights [B, n_prompts] -> [B, *heads].

    A bootstrap row draws prompts with multiplicities w_p (``intervals.bootstrap_weights``). A prompt drawn twice
    is still one prompt: pairs of a prompt with its own copy are left out (their cosine is 1 by construction),
    so row b is Σ_{p≠q} w_p w_q u_p·u_q / Σ_{p≠q} w_p w_q = (||Σ w_p u_p||² − Σ w_p² ||u_p||²) / ((Σ w)² − Σ w²).
    All-ones weights give ``cosine_consistency`` exactly. Rows with fewer than two distinct prompts are NaN.
    """
    o = np.asarray(outputs, dtype=np.float64)
    w = np.atleast_2d(np.asarray(weights, dtype=np.float64))
    if w.shape[1] != o.shape[0]:
        raise ValueError(f"weights are over {w.shape[1]} prompts, outputs have {o.shape[0]}")
    norms = np.linalg.norm(o, axis=-1, keepdims=True)
    u = np.divide(o, norms, out=np.zeros_like(o), where=norms > 0)
    nonzero = (norms[..., 0] > 0).astype(np.float64)  # [n, *heads]
    flat = u.reshape(u.shape[0], -1)
    out = []
    for lo in range(0, w.shape[0], chunk):
        wb = w[lo : lo + chunk]
        total = (wb @ flat).reshape(len(wb), *u.shape[1:])  # [b, *heads, d]
        sq = np.einsum("b...d,b...d->b...", total, total)
        self_sum = np.tensordot(wb**2, nonzero, axes=(1, 0))  # [b, *heads]
        pairs = wb.sum(1) ** 2 - (wb**2).sum(1)
        den = pairs.reshape(-1, *([1] * (sq.ndim - 1)))
        with np.errstate(invalid="ignore", divide="ignore"):
            out.append(np.where(den > 0, (sq - self_sum) / np.where(den > 0, den, 1), np.nan))
    return np.clip(np.concatenate(out), -1.0, 1.0)


def decile_split(strength: np.ndarray, frac: float = 0.1) -> tuple[np.ndarray, np.ndarray]:
    """Flat indices of the top and bottom ``frac`` of heads by ``strength`` (any shape, e.g. [L, H]).

    Each group has k = ceil(frac · n_heads) heads (at least 1): ceil because the paper's
    "top-decile sink-reading heads" of Llama-3.2-1B's 512 heads are 52.  ``top`` is
    ordered strongest first, ``bottom`` weakest first.  Both come from one stable
    descending order, so the groups are disjoint even under ties: among tied heads the
    lower flat index ranks stronger.  Needs 2k <= n_heads.  Use ``np.unravel_index(idx, strength.shape)`` for (layer, head).
    """
    s = np.asarray(strength, dtype=np.float64).ravel()
    if not 0.0 < frac <= 0.5:
        raise ValueError(f"frac must be in (0, 0.5], got {frac}")
    if np.isnan(s).any():
        raise ValueError("strength contains NaN")
    n = s.size
    k = max(1, math.ceil(frac * n - 1e-9))
    if 2 * k > n:
        raise ValueError(f"{n} heads cannot give disjoint top and bottom groups of {k}")
    order = np.argsort(-s, kind="stable")  # strongest first, ties -> lower flat index first
    return order[:k], order[::-1][:k]


# --------------------------------------------------------------------------
# The first principal component of a head's outputs (harness.stats.sinks.pc1_heldout_identity)
# --------------------------------------------------------------------------
def pc1_scores(outputs: np.ndarray) -> tuple[np.ndarray, float]:
    """(each prompt's score on the first principal component of ``outputs`` [n_prompts, d] centred, that component's
    share of the variance, s_1² / Σ s_i²); outputs constant across prompts (PC1 within noise) give (zeros, 0)."""
    o = np.asarray(outputs, dtype=np.float64)
    if o.ndim != 2:
        raise ValueError(f"outputs must be [n_prompts, d], got shape {o.shape}")
    if not np.all(np.isfinite(o)):
        raise ValueError("outputs contain non-finite values")
    oc = o - o.mean(axis=0)
    u, s, _ = np.linalg.svd(oc, full_matrices=False)
    total = float(np.sum(s**2))
    if total <= 0.0 or s[0] <= noise_tol(o, s):
        return np.zeros(o.shape[0]), 0.0
    return u[:, 0] * s[0], float(s[0] ** 2 / total)
