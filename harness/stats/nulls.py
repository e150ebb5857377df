"""Significance of the leakage ΔR² per head: the within-offset permutation null (``permutation_null``, its
p-values), the prompt-level sign-flip test (``signflip_pvalues``, the claims' decision) and the
Benjamini–Hochberg FDR step-up. Pure numpy, float64, all heads at once."""

from __future__ import annotations

import numpy as np

from harness.stats.leakage import BLOCK_ELEMS, as_target_3d, delta_r2, flat
from harness.stats.pairs import PairSet, row_groups
from harness.stats.shuffles import group_layout, shuffle_within_blocks

__all__ = [
    "permutation_null",
    "permutation_pvalues",
    "signflip_pvalues",
    "benjamini_hochberg",
]


#: Shuffled ĩ values per matrix product of the permutation null (256 MB): at many prompts a chunk of draws is a few
#: permutations (``BLOCK_ELEMS`` // rows), and each product reads (and upcasts) all of y; chunks are stacked to
#: ``MIN_PRODUCT`` permutations per product (at the default 16 prompts a chunk is 117 at 128 tokens: none are; at 512
#: prompts x 128 tokens 27 permutations a product, 38 products where 84 took 33% more CPU).
GEMM_ELEMS = 8 * BLOCK_ELEMS
MIN_PRODUCT = 64  # permutations per product below which chunks are stacked


def _inverse_perms(perms: np.ndarray) -> np.ndarray:
    """Row-wise inverse of a [n, m] array of permutations."""
    inv = np.empty_like(perms)
    np.put_along_axis(inv, perms, np.broadcast_to(np.arange(perms.shape[1]), perms.shape), axis=1)
    return inv


def permutation_null(
    pairs: PairSet,
    Y: np.ndarray,
    n_perm: int = 1000,
    seed: int = 0,
    perms: np.ndarray | None = None,
    sst: np.ndarray | None = None,
) -> np.ndarray:
    """Null ΔR² per head under within-offset-group permutation: [n_perm, H].

    H0: E[y] depends on d only and observations (prompts × pairs rows) that
    share an offset are exchangeable.  Permuting y among rows of the same
    d-group leaves the baseline fit and SST unchanged, so each permuted ΔR² is
    (ĩ_π · y)² / (Σ ĩ² · SST) with ĩ_π the correspondingly permuted ĩ;
    all heads and a chunk of permutations go through one matmul.

    perms (optional) [n_perm, n_rows]: explicit permutations of the y rows
    (permuted data = y[perm]), each mapping rows within their d-group, e.g.
    from ``within_group_permutations``.  Otherwise they are drawn from
    ``seed`` in chunks that bound memory (``BLOCK_ELEMS // n_rows``
    permutations each): chunk by chunk, ĩ is shuffled by exactly the draws of
    ``within_group_permutations(row_groups(pairs, P), chunk, rng)`` with
    ``rng = default_rng(seed)`` (tested), in the block layout of
    ``group_layout`` so that no permutation array is built.

    sst (optional) [H]: the heads' total sums of squares as ``delta_r2`` gives them (0 for a constant head), where
    the caller has fitted Y already (one pass over Y fewer).
    """
    Y3 = as_target_3d(pairs, Y)
    P, N = Y3.shape[:2]
    sst = delta_r2(pairs, Y3).sst if sst is None else np.asarray(sst, dtype=np.float64)
    H = sst.size
    n_rows = P * N
    groups = row_groups(pairs, P)
    ssi = P * pairs.i_tilde_sq
    const_head = sst <= 0  # constant heads: every R² is defined as 0
    denom = np.where(const_head, 1.0, sst) * ssi
    if perms is not None:
        perms = np.asarray(perms, dtype=np.int64)
        if perms.ndim != 2 or perms.shape[1] != n_rows:
            raise ValueError(f"perms must be [n_perm, {n_rows}]")
        if np.any(np.sort(perms, axis=1) != np.arange(n_rows)) or np.any(groups[perms] != groups):
            raise ValueError("each row of perms must be a permutation within d-groups")
        n_perm = perms.shape[0]
    out = np.zeros((n_perm, H))
    if ssi <= 0 or n_perm == 0:
        return out
    step = max(1, BLOCK_ELEMS // n_rows)
    centre = Y3.mean(axis=(0, 1), dtype=np.float64).reshape(H)  # ``centred``'s, subtracted from one copy of y's rows
    if perms is None:
        _null_by_shuffles(out, pairs, Y3, centre, denom, step, seed)
    else:
        yr = flat(Y3).reshape(n_rows, H) - centre
        i_rows = np.tile(pairs.i_tilde, P)
        for s in range(0, n_perm, step):
            num = i_rows[_inverse_perms(perms[s : s + step])] @ yr
            out[s : s + num.shape[0]] = num * num / denom
    out[:, const_head] = 0.0
    return out


def _null_by_shuffles(out, pairs, Y3, centre, denom, step, seed) -> None:
    """``permutation_null``'s drawn permutations, written into ``out`` [n_perm, H]. ĩ is shuffled within its groups
    directly, in block layout (rows of one group contiguous), with y's rows put in the same layout once: the same
    draws as ``within_group_permutations(groups, ·, rng)`` chunk by chunk, used as idx (a uniform within-group
    permutation and its inverse have the same law), without the scatter to row order or the gather i_rows[idx].
    y's rows are copied in its own dtype: a capture's float32 weights stay float32 (half a float64 copy) and are
    upcast and centred a block at a time in each product (``_upcast_product``). Where a chunk is fewer than
    ``MIN_PRODUCT`` permutations, whole chunks are stacked (to at most ``GEMM_ELEMS`` shuffled values) so that at
    many prompts (a chunk of one permutation) the rows of y still meet several permutations in one product."""
    (P, N), H = Y3.shape[:2], out.shape[1]
    n_rows, n_perm = P * N, out.shape[0]
    rng = np.random.default_rng(seed)
    lay = group_layout(row_groups(pairs, P))
    i_lay = np.tile(pairs.i_tilde, P)[lay.layout]
    y_lay = _rows_in_layout(Y3, lay.layout, H)
    if y_lay.dtype == np.float64:  # a copy of our own: centred in place, one product per chunk of draws
        y_lay -= centre
    # whole chunks per product (the draws stay chunk by chunk), stacked only where a chunk is fewer than
    # ``MIN_PRODUCT`` permutations, and to at most ``GEMM_ELEMS`` values
    per_product = step * max(1, min(-(-MIN_PRODUCT // step), GEMM_ELEMS // (n_rows * step)))
    for s in range(0, n_perm, per_product):
        stop = min(n_perm, s + per_product)
        if stop - s <= step:
            shuffled = shuffle_within_blocks(i_lay, lay, stop - s, rng)
        else:
            shuffled = np.empty((stop - s, n_rows))
            for c in range(s, stop, step):
                shuffled[c - s : c - s + step] = shuffle_within_blocks(i_lay, lay, min(step, stop - c), rng)
        num = shuffled @ y_lay if y_lay.dtype == np.float64 else _upcast_product(shuffled, y_lay, centre)
        out[s:stop] = num * num / denom


def _rows_in_layout(Y3: np.ndarray, layout: np.ndarray, H: int) -> np.ndarray:
    """y's rows [n_rows, H] in the null's block layout: one copy, in the target's own dtype (a 4-D view's float32
    weights stay float32), gathered a block of rows at a time."""
    if Y3.ndim == 3:
        return Y3.reshape(-1, H)[layout]
    y_lay = np.empty((layout.size, H), dtype=Y3.dtype)
    p, k = np.divmod(layout, Y3.shape[1])
    step_rows = max(1, BLOCK_ELEMS // H)
    for b in range(0, layout.size, step_rows):
        y_lay[b : b + step_rows] = Y3[p[b : b + step_rows], k[b : b + step_rows]].reshape(-1, H)
    return y_lay


def _upcast_product(shuffled: np.ndarray, y_lay: np.ndarray, centre: np.ndarray) -> np.ndarray:
    """shuffled [k, n_rows] @ (float64(y_lay) - centre) [n_rows, H], ``BLOCK_ELEMS`` values of y upcast and centred
    at a time into one buffer: no float64 copy of y is made (float32 weights upcast exactly, so this is the float64
    product up to the order of its sums)."""
    num = np.zeros((shuffled.shape[0], y_lay.shape[1]))
    step = max(1, BLOCK_ELEMS // max(1, y_lay.shape[1]))
    buf = np.empty((min(step, y_lay.shape[0]), y_lay.shape[1]))
    for b in range(0, y_lay.shape[0], step):
        block = buf[: min(step, y_lay.shape[0] - b)]
        np.subtract(y_lay[b : b + step], centre, out=block)
        num += shuffled[:, b : b + len(block)] @ block
    return num


def permutation_pvalues(observed: np.ndarray, null: np.ndarray, rtol: float = 1e-9) -> np.ndarray:
    """Per-head permutation p-value (1 + #{null >= observed}) / (1 + n_perm).

    Null values within a relative rtol below the observed value count as ties
    (conservative against floating-point noise).  NaN observed -> NaN.
    """
    observed = np.asarray(observed, dtype=np.float64)
    null = np.asarray(null, dtype=np.float64)
    thr = observed - rtol * np.abs(observed)
    ge = (null >= thr[None, ...]).sum(axis=0)
    p = (1.0 + ge) / (1.0 + null.shape[0])
    return np.where(np.isnan(observed), np.nan, p)


# --------------------------------------------------------------------------
# Prompt-level test (the decision): sign flips of per-prompt contributions
# --------------------------------------------------------------------------
#: Up to this many sign patterns (2^(P-1), the first prompt's sign fixed) the test enumerates them all.
SIGNFLIP_EXACT_MAX = 2**16


def _sign_patterns(n_prompts: int, n_flip: int, rng: np.random.Generator) -> tuple[np.ndarray, bool]:
    """All 2^(P-1) sign vectors with the first sign +1 (exact), or n_flip random ones: ([n, P], exact)."""
    if 2 ** (n_prompts - 1) <= SIGNFLIP_EXACT_MAX:
        codes = np.arange(2 ** (n_prompts - 1), dtype=np.int64)[:, None]
        bits = (codes >> np.arange(n_prompts - 1, dtype=np.int64)[None, :]) & 1
        return np.hstack([np.ones((codes.size, 1)), 1.0 - 2.0 * bits]), True
    return rng.choice([-1.0, 1.0], size=(n_flip, n_prompts)), False


def signflip_pvalues(
    a: np.ndarray, n_flip: int = 1000, seed: int = 0, rtol: float = 1e-9, atol: float | np.ndarray = 0.0
) -> np.ndarray:
    """Prompt-level sign-flip p-value of ΔR² per head: a [P, H] per-prompt contributions ĩ·y -> p [H].

    ΔR² = (Σ_p a_p)² / (P Σĩ² SST) with a_p = Σ_k ĩ_k y_pk (``PromptStats.a``). Under H0 (the mean of y
    depends on the offset only, or on the prompt and the offset) E[a_p] = Σ_g μ_pg Σ_{k in g} ĩ_k = 0, whatever
    the correlation of rows within a prompt; prompts are independent draws, so a_p is symmetric about 0 to the
    extent that prompts are exchangeable with their mirror image, and flipping signs prompt by prompt is the
    randomisation the data support. The statistic |Σ_p ε_p a_p| is monotone in the flipped ΔR² (SST and Σĩ²
    do not change). With 2^(P-1) <= ``SIGNFLIP_EXACT_MAX`` every pattern is enumerated and p = #{|S_ε| >=
    |S|} / 2^(P-1) (minimum 2^-(P-1)); otherwise p = (1 + #{...}) / (1 + n_flip) over random patterns.
    Values within a relative rtol below the observed one count as ties (conservative). A head whose |Σ_p a_p|
    is at most ``atol`` (scalar or [H]: rounding residue, e.g. y a function of d alone, where every prompt
    carries the same tiny residue and would otherwise reach the smallest p) gets p = 1; a head with a
    non-finite contribution gets NaN (never rejected by ``benjamini_hochberg``).
    """
    a = np.asarray(a, dtype=np.float64)
    if a.ndim != 2 or a.shape[0] < 1:
        raise ValueError(f"a must be [n_prompts, H] with at least one prompt, got shape {a.shape}")
    signs, exact = _sign_patterns(a.shape[0], n_flip, np.random.default_rng(seed))
    observed = np.abs(a.sum(axis=0))
    thr = observed - rtol * observed
    ge = np.zeros(a.shape[1], dtype=np.int64)
    step = max(1, BLOCK_ELEMS // max(1, a.shape[1]))
    for s in range(0, signs.shape[0], step):
        ge += (np.abs(signs[s : s + step] @ a) >= thr[None, :]).sum(axis=0)
    p = ge / signs.shape[0] if exact else (1.0 + ge) / (1.0 + signs.shape[0])
    p = np.where(observed <= atol, 1.0, p)
    return np.where(np.isfinite(a).all(axis=0), p, np.nan)


def benjamini_hochberg(p: np.ndarray, q: float = 0.05) -> np.ndarray:
    """Benjamini–Hochberg step-up: bool mask of hypotheses rejected at FDR q.

    Rejects the k smallest p-values, k = max{k : p_(k) <= k q / m}; NaN
    p-values are never rejected but count in m.
    """
    p = np.asarray(p, dtype=np.float64)
    flat = np.where(np.isnan(p), np.inf, p).ravel()
    m = flat.size
    reject = np.zeros(m, dtype=bool)
    if m == 0:
        return reject.reshape(p.shape)
    order = np.argsort(flat, kind="stable")
    ok = flat[order] <= q * np.arange(1, m + 1) / m
    if ok.any():
        k = int(np.nonzero(ok)[0].max()) + 1
        reject[order[:k]] = True
    return reject.reshape(p.shape)
