"""Sink-reading heads (paper §5.2, §5.8): how consistent a head's output is across prompts, the top and
bottom deciles by sink-reading strength, and whether the output carries the identity of the token at 0.
Pure numpy, float64, on arrays a capture produced.

* ``cosine_consistency`` / ``decile_split`` – cross-prompt cosine consistency of each head's output, and the
  top / bottom decile by sink-reading strength (T3, T11).
* ``pc1_identity_r2`` / ``pc1_identity_null`` / ``pc1_identity_pvalue`` – the sink-token-identity probe (T4).
"""

from __future__ import annotations

import math

import numpy as np

from harness.stats.nulls import permutation_pvalues
from harness.stats.probes import noise_tol

__all__ = ["cosine_consistency", "decile_split", "pc1_identity_r2", "pc1_identity_null", "pc1_identity_pvalue"]


# --------------------------------------------------------------------------
# Cosine consistency and deciles (T3, T11)
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
# Sink-token identity probe (T4)
# --------------------------------------------------------------------------
def _pc1_scores(outputs: np.ndarray) -> tuple[np.ndarray, float]:
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


def _onehot(token_ids: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    token_ids = np.asarray(token_ids)
    if token_ids.shape != (n,):
        raise ValueError(f"token_ids must be [n_prompts] = [{n}], got {token_ids.shape}")
    _, inv = np.unique(token_ids, return_inverse=True)
    G = np.zeros((n, inv.max() + 1), dtype=np.float64)
    G[np.arange(n), inv] = 1.0
    return G, G.sum(axis=0)


def _between_share(Z: np.ndarray, G: np.ndarray, sizes: np.ndarray, sst: float) -> np.ndarray:
    """R² of each row of Z [m, n] on one-hot groups G [n, g]: between-group SS / total SS."""
    sums = Z @ G  # [m, g]
    ssb = (sums**2 / sizes).sum(axis=-1) - Z.sum(axis=-1) ** 2 / Z.shape[-1]
    return np.clip(ssb / sst, 0.0, 1.0)


def pc1_identity_r2(outputs: np.ndarray, token_ids: np.ndarray) -> tuple[float, float]:
    """(R², PC1 variance fraction) of a head's output projected on its first principal component.

    ``outputs`` [n_prompts, d] is one head's output at the probed position for prompts
    that differ only in the token at position 0 (``token_ids`` [n_prompts]).  The
    outputs are centred, the first principal component taken by SVD, and each prompt's
    PC1 score z_p regressed by OLS with intercept on a one-hot encoding of its
    position-0 token.  With a full set of group indicators that R² is the between-group
    share of variance, Σ_g n_g (z̄_g − z̄)² / Σ_p (z_p − z̄)².

    The PC1 variance fraction is s_1² / Σ s_i² of the centred outputs (the paper keeps
    heads above a threshold).  Outputs that are constant across prompts give (0, 0).
    Caution: with G distinct tokens among n prompts the R² of any variable has
    permutation mean (G − 1)/(n − 1); if every prompt has its own token, R² ≡ 1.
    Judge R² against ``pc1_identity_null``.
    """
    z, frac, G, sizes, sst = _pc1_setup(outputs, token_ids)
    if sst <= 0.0:
        return 0.0, frac
    return float(_between_share(z[None, :], G, sizes, sst)[0]), frac


def _pc1_setup(outputs: np.ndarray, token_ids: np.ndarray) -> tuple[np.ndarray, float, np.ndarray, np.ndarray, float]:
    """(PC1 scores z, PC1 variance fraction, one-hot groups, group sizes, total SS of z)."""
    z, frac = _pc1_scores(outputs)
    G, sizes = _onehot(token_ids, z.size)
    return z, frac, G, sizes, float(np.sum((z - z.mean()) ** 2))


def pc1_identity_null(
    outputs: np.ndarray, token_ids: np.ndarray, n_perm: int = 1000, seed: int = 0, chunk: int = 4096
) -> np.ndarray:
    """Permutation null of ``pc1_identity_r2``: [n_perm] R² values with the token ids shuffled across prompts.

    PC1 does not depend on the labels, so the scores z are computed once; permuting
    labels is the same as permuting z against fixed groups.  All permutations at once:
    the group sums are z[perms] @ one-hot ([n_perm, n] @ [n, G]), the between-group SS
    follows from them (group sizes are permutation-invariant).  Permutations come from
    ``np.random.default_rng(seed)``.
    """
    z, _, G, sizes, sst = _pc1_setup(outputs, token_ids)
    n = z.size
    if sst <= 0.0:
        return np.zeros(n_perm)
    rng = np.random.default_rng(seed)
    out = np.empty(n_perm, dtype=np.float64)
    for start in range(0, n_perm, chunk):
        m = min(chunk, n_perm - start)
        perms = rng.permuted(np.tile(np.arange(n), (m, 1)), axis=1)
        out[start : start + m] = _between_share(z[perms], G, sizes, sst)
    return out


def pc1_identity_pvalue(observed: float, null: np.ndarray) -> float:
    """Permutation p-value (1 + #{null >= observed}) / (1 + n_perm), ties within 1e-9 relative counted (conservative)."""
    return float(permutation_pvalues(np.asarray(observed, dtype=np.float64), np.asarray(null, dtype=np.float64)))
