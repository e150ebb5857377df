"""Leakage ΔR² engine (paper Eq. 4–5), pure numpy, float64, all heads at once.

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
from functools import cached_property

import numpy as np

__all__ = [
    "PairSet",
    "LeakageFit",
    "PromptStats",
    "query_bins",
    "stratified_pairs",
    "uniform_pairs",
    "prompt_stats",
    "fit_from_stats",
    "delta_r2",
    "row_groups",
    "GroupLayout",
    "group_layout",
    "shuffle_within_blocks",
    "within_group_permutations",
    "within_group_permutations_by_argsort",
    "permutation_null",
    "permutation_pvalues",
    "signflip_pvalues",
    "benjamini_hochberg",
    "bootstrap_weights",
    "bootstrap_delta_r2",
    "mean_ci",
    "causal_mask_share",
    "residual_stream_share",
]

#: A head whose standard deviation is <= SST_REL_TOL * max|y| is treated as
#: constant (SST = 0): all its R² values are reported as 0.
SST_REL_TOL = 1e-12

#: Target number of float64 elements per working block (chunking bound).
_BLOCK_ELEMS = 4_000_000


# --------------------------------------------------------------------------
# Design: the shared pair set
# --------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class PairSet:
    """The shared design: causal pairs (query i, key j), 0 <= j <= i.

    Derived quantities (offsets, d-groups, ĩ) are cached on first use.
    """

    i: np.ndarray  # int64 [n_pairs]
    j: np.ndarray  # int64 [n_pairs]

    def __post_init__(self):
        i = np.asarray(self.i)
        j = np.asarray(self.j)
        if i.ndim != 1 or j.ndim != 1 or i.shape != j.shape:
            raise ValueError(f"i and j must be 1-D of equal length, got {i.shape} and {j.shape}")
        if i.size and not (np.issubdtype(i.dtype, np.integer) and np.issubdtype(j.dtype, np.integer)):
            raise ValueError("i and j must be integer positions")
        i = i.astype(np.int64)
        j = j.astype(np.int64)
        if np.any(j < 0) or np.any(j > i):
            raise ValueError("every pair must be causal: 0 <= j <= i")
        object.__setattr__(self, "i", i)
        object.__setattr__(self, "j", j)

    @property
    def n_pairs(self) -> int:
        """Number of pairs."""
        return int(self.i.size)

    @cached_property
    def offsets(self) -> np.ndarray:
        """Relative offset d = i − j per pair (int64)."""
        return self.i - self.j

    @cached_property
    def _groups(self):
        values, inverse, counts = np.unique(self.offsets, return_inverse=True, return_counts=True)
        return values, inverse.reshape(-1).astype(np.int64), counts.astype(np.int64)

    @property
    def group_values(self) -> np.ndarray:
        """The distinct offsets, ascending (one baseline indicator each)."""
        return self._groups[0]

    @property
    def group(self) -> np.ndarray:
        """Index of each pair's d-group into ``group_values``."""
        return self._groups[1]

    @property
    def group_sizes(self) -> np.ndarray:
        """Number of pairs in each d-group."""
        return self._groups[2]

    @property
    def n_groups(self) -> int:
        """Number of distinct offsets (baseline indicators)."""
        return int(self.group_values.size)

    @cached_property
    def group_order(self) -> np.ndarray:
        """Stable permutation of the pairs that makes d-groups contiguous."""
        return np.argsort(self.group, kind="stable")

    @cached_property
    def group_starts(self) -> np.ndarray:
        """Start index of each d-group in ``group_order`` layout."""
        return np.concatenate([[0], np.cumsum(self.group_sizes)[:-1]]).astype(np.int64)

    @cached_property
    def i_tilde(self) -> np.ndarray:
        """ĩ = i − mean(i within its d-group), float64 [n_pairs].

        Group sums are taken in exact integer arithmetic so a group with a
        single distinct i gives ĩ = 0 exactly.
        """
        sums = np.zeros(self.n_groups, dtype=np.int64)
        np.add.at(sums, self.group, self.i)
        means = sums / self.group_sizes
        return self.i - means[self.group]

    @cached_property
    def i_tilde_sq(self) -> float:
        """Σ_pairs ĩ² (one prompt); 0 means i is confounded with d (ΔR² ≡ 0)."""
        return float(np.dot(self.i_tilde, self.i_tilde))

    def subset(self, mask: np.ndarray) -> "PairSet":
        """The pairs selected by a boolean mask (or index array), same order."""
        return PairSet(self.i[mask], self.j[mask])


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
# Pair sampling
# --------------------------------------------------------------------------
def query_bins(seq_len: int, first: int = 8) -> np.ndarray:
    """Doubling query-position bins in absolute positions: [0, first), [first, 2·first), ..., [L/2, L).

    The causal-mask effect (Eq. 6) is a function of the absolute query position, so the bins are
    absolute: at L = 512 they are the paper's seven bins [0, 8, 16, 32, 64, 128, 256, 512]; a
    shorter prompt has fewer bins with the same first bin. Bin b is [edges[b], edges[b+1]).
    """
    if first < 1 or seq_len < first or seq_len % first or (seq_len // first) & (seq_len // first - 1):
        raise ValueError(f"seq_len={seq_len} must be first={first} times a power of two "
                         f"(doubling query bins ending at seq_len)")
    edges = [0, first]
    while edges[-1] < seq_len:
        edges.append(edges[-1] * 2)
    return np.array(edges, dtype=np.int64)


def _tri_decode(t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Inverse of t = i(i+1)/2 + j (0 <= j <= i), exact for int64 t."""
    t = np.asarray(t, dtype=np.int64)
    i = ((np.sqrt(8.0 * t + 1.0) - 1.0) // 2).astype(np.int64)
    # fix any floating error so that i(i+1)/2 <= t < (i+1)(i+2)/2
    i -= (i * (i + 1) // 2 > t).astype(np.int64)
    i += ((i + 1) * (i + 2) // 2 <= t).astype(np.int64)
    return i, t - i * (i + 1) // 2


def stratified_pairs(seq_len: int, n_pairs: int, seed: int, first: int = 8) -> PairSet:
    """Causal pairs stratified by query bin (``query_bins``), deterministic per seed.

    n_pairs is split equally across the bins (the n_pairs % n_bins leftover
    pairs go one each to the last bins).  Within a bin, pairs (i in bin,
    0 <= j <= i) are drawn uniformly without replacement; a bin with fewer
    causal pairs than its share contributes all of them and the shortfall is
    NOT redistributed, so the result can hold fewer than n_pairs pairs.
    Pairs are sorted by (i, j).
    """
    if n_pairs < 0:
        raise ValueError("n_pairs must be >= 0")
    edges = query_bins(seq_len, first)
    n_bins = edges.size - 1
    base, rem = divmod(int(n_pairs), n_bins)
    shares = np.full(n_bins, base, dtype=np.int64)
    if rem:
        shares[n_bins - rem:] += 1
    rng = np.random.default_rng(seed)
    picks = []
    for b in range(n_bins):
        lo, hi = int(edges[b]), int(edges[b + 1])
        t_lo, t_hi = lo * (lo + 1) // 2, hi * (hi + 1) // 2  # pairs of queries [lo, hi) are contiguous in t
        size = t_hi - t_lo
        k = min(int(shares[b]), size)
        if k == size:
            picks.append(np.arange(t_lo, t_hi, dtype=np.int64))
        elif k > 0:
            picks.append(t_lo + rng.choice(size, size=k, replace=False).astype(np.int64))
    t = np.sort(np.concatenate(picks)) if picks else np.zeros(0, dtype=np.int64)
    i, j = _tri_decode(t)
    return PairSet(i, j)


def uniform_pairs(seq_len: int, n_pairs: int, seed: int) -> PairSet:
    """Causal pairs drawn uniformly without replacement from all seq_len(seq_len+1)/2 (all of them
    when there are fewer), sorted by (i, j). Used where every query position should count by its
    share of pairs (length scaling, §5.8), and for lengths the doubling bins do not divide."""
    total = seq_len * (seq_len + 1) // 2
    rng = np.random.default_rng(seed)
    t = np.arange(total, dtype=np.int64) if n_pairs >= total else np.sort(rng.choice(total, n_pairs, replace=False))
    return PairSet(*_tri_decode(t))


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


def _as_3d(pairs: PairSet, Y: np.ndarray) -> np.ndarray:
    """Validate Y and return it as float64 [n_prompts, n_pairs, H]."""
    Y = np.asarray(Y, dtype=np.float64)
    if Y.ndim == 2:
        Y = Y[None]
    if Y.ndim != 3:
        raise ValueError(f"Y must be [n_prompts, n_pairs, H] or [n_pairs, H], got shape {Y.shape}")
    if Y.shape[1] != pairs.n_pairs:
        raise ValueError(f"Y has {Y.shape[1]} pairs but the PairSet has {pairs.n_pairs}")
    if Y.shape[0] < 1 or Y.shape[1] < 1:
        raise ValueError("Y must hold at least one prompt and one pair")
    if not np.all(np.isfinite(Y)):
        raise ValueError("Y contains non-finite values")
    return Y


def _centred(Y3: np.ndarray) -> np.ndarray:
    """Y minus its per-head grand mean (a shift that leaves every R² unchanged)."""
    return Y3 - Y3.mean(axis=(0, 1), keepdims=True)


def prompt_stats(pairs: PairSet, Y: np.ndarray) -> PromptStats:
    """Per-prompt sufficient statistics for all heads (one pass over Y)."""
    Y3 = _as_3d(pairs, Y)
    Yc = _centred(Y3)
    a = np.einsum("k,pkh->ph", pairs.i_tilde, Yc, optimize=True)
    g = np.add.reduceat(Yc[:, pairs.group_order, :], pairs.group_starts, axis=1)
    return PromptStats(
        a=a,
        s1=Yc.sum(axis=1),
        s2=np.einsum("pkh,pkh->ph", Yc, Yc, optimize=True),
        g=g,
        scale=np.abs(Y3).max(axis=(0, 1)),
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
    step = max(1, _BLOCK_ELEMS // max(1, ng * H))
    for s in range(0, w.shape[0], step):
        gw = (w[s:s + step] @ g2).reshape(-1, ng, H)
        out[s:s + step] = np.einsum("bgh,g->bh", gw * gw, inv_n) / wsum[s:s + step, None]
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
    return LeakageFit(r2_base=r2_base, r2_full=r2_base + delta, delta=delta,
                      sst=np.where(const, 0.0, sst), delta_sse=np.where(const, 0.0, dsse))


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
# Permutation null
# --------------------------------------------------------------------------
def row_groups(pairs: PairSet, n_prompts: int) -> np.ndarray:
    """d-group index of each pooled row (prompt-major: row = p * n_pairs + k)."""
    return np.tile(pairs.group, n_prompts)


@dataclass(frozen=True, eq=False)
class GroupLayout:
    """The rows of a grouping reordered for block shuffles (``group_layout``).

    layout: int64 [n_rows], the rows bucket by bucket: each bucket holds the groups of one size s >= 2,
    each group's rows contiguous and ascending, buckets by ascending s; then the rows of single-row groups.
    blocks: (start, n_groups, s) of each bucket in ``layout``.
    """

    layout: np.ndarray
    blocks: tuple[tuple[int, int, int], ...]


def group_layout(groups: np.ndarray) -> GroupLayout:
    """The block layout of a row grouping (any integer labels, any order): see ``GroupLayout``."""
    groups = np.asarray(groups)
    if groups.ndim != 1 or (groups.size and not np.issubdtype(groups.dtype, np.integer)):
        raise ValueError(f"groups must be a 1-D integer array, got {groups.dtype} {groups.shape}")
    order = np.argsort(groups, kind="stable")
    _, starts, sizes = np.unique(groups[order], return_index=True, return_counts=True)
    pieces, blocks, pos = [], [], 0
    for s in np.unique(sizes[sizes > 1]):
        first = starts[sizes == s]
        pieces.append(order[first[:, None] + np.arange(s)[None, :]].ravel())
        blocks.append((pos, int(first.size), int(s)))
        pos += int(first.size * s)
    pieces.append(order[np.repeat(sizes == 1, sizes)])
    return GroupLayout(np.concatenate(pieces).astype(np.int64), tuple(blocks))


def shuffle_within_blocks(values: np.ndarray, lay: GroupLayout, n_perm: int,
                          rng: np.random.Generator) -> np.ndarray:
    """n_perm copies of ``values`` (laid out as ``lay.layout``), each group's block shuffled: [n_perm, n_rows].

    Every group of every copy gets its own uniform permutation (Fisher–Yates, ``Generator.permuted`` along
    the last axis of the [n_perm, n_groups, s] view of a bucket of equal-size groups, written in place);
    rows of single-row groups stay. The random draws do not depend on the values, so shuffling the row
    indices ``lay.layout`` and shuffling ``values`` consume the stream identically: for any array f,
    shuffle(f[lay.layout]) == f[shuffle(lay.layout)] under the same generator state.
    """
    values = np.asarray(values)
    out = np.empty((n_perm, values.size), dtype=values.dtype)
    tail = sum(g * s for _, g, s in lay.blocks)
    out[:, tail:] = values[tail:]
    for start, n_groups, s in lay.blocks:
        end = start + n_groups * s
        block = np.broadcast_to(values[start:end].reshape(n_groups, s), (n_perm, n_groups, s))
        rng.permuted(block, axis=-1, out=out[:, start:end].reshape(n_perm, n_groups, s))
    return out


def within_group_permutations(groups: np.ndarray, n_perm: int, rng: np.random.Generator) -> np.ndarray:
    """n_perm uniform random permutations of the rows that only mix rows of the same group.

    Returns int64 [n_perm, n_rows]; row r of the permuted data is row perm[r]
    of the original, and groups[perm[r]] == groups[r].  Each group's rows are
    shuffled by their own Fisher–Yates pass (``shuffle_within_blocks``), so
    every within-group permutation is exactly uniform and the groups (and the
    n_perm rows) are independent.  Cost O(n_perm · n_rows) random draws, with
    no sort; ``within_group_permutations_by_argsort`` is the previous,
    O(n_perm · n_rows log n_rows) generator of the same law.
    """
    lay = group_layout(np.asarray(groups, dtype=np.int64))
    to_row_order = np.empty_like(lay.layout)
    to_row_order[lay.layout] = np.arange(lay.layout.size)
    return np.take(shuffle_within_blocks(lay.layout, lay, n_perm, rng), to_row_order, axis=1)


def within_group_permutations_by_argsort(groups: np.ndarray, n_perm: int, rng: np.random.Generator) -> np.ndarray:
    """The previous generator, kept for comparison (tests, benchmark): same contract and law as
    ``within_group_permutations``, by an argsort of group + U(0, 1) keys over all rows per permutation
    (uniform up to ties among 53-bit keys), with a different random stream; about 3.5x slower (5x slower than
    the in-layout shuffle permutation_null uses) at 32,000 rows."""
    groups = np.asarray(groups, dtype=np.int64)
    order = np.argsort(groups, kind="stable")
    keys = groups[order][None, :] + rng.random((n_perm, groups.size))  # group blocks stay in place
    q = order[np.argsort(keys, axis=1)]
    perms = np.empty_like(q)
    perms[:, order] = q
    return perms


def _inverse_perms(perms: np.ndarray) -> np.ndarray:
    """Row-wise inverse of a [n, m] array of permutations."""
    inv = np.empty_like(perms)
    np.put_along_axis(inv, perms, np.broadcast_to(np.arange(perms.shape[1]), perms.shape), axis=1)
    return inv


def permutation_null(pairs: PairSet, Y: np.ndarray, n_perm: int = 1000, seed: int = 0,
                     perms: np.ndarray | None = None) -> np.ndarray:
    """Null ΔR² per head under within-offset-group permutation: [n_perm, H].

    H0: E[y] depends on d only and observations (prompts × pairs rows) that
    share an offset are exchangeable.  Permuting y among rows of the same
    d-group leaves the baseline fit and SST unchanged, so each permuted ΔR² is
    (ĩ_π · y)² / (Σ ĩ² · SST) with ĩ_π the correspondingly permuted ĩ;
    all heads and a chunk of permutations go through one matmul.

    perms (optional) [n_perm, n_rows]: explicit permutations of the y rows
    (permuted data = y[perm]), each mapping rows within their d-group, e.g.
    from ``within_group_permutations``.  Otherwise they are drawn from
    ``seed`` in chunks that bound memory (``_BLOCK_ELEMS // n_rows``
    permutations each): chunk by chunk, ĩ is shuffled by exactly the draws of
    ``within_group_permutations(row_groups(pairs, P), chunk, rng)`` with
    ``rng = default_rng(seed)`` (tested), in the block layout of
    ``group_layout`` so that no permutation array is built.
    """
    Y3 = _as_3d(pairs, Y)
    P, N, H = Y3.shape
    fit = delta_r2(pairs, Y3)
    n_rows = P * N
    yr = _centred(Y3).reshape(n_rows, H)
    i_rows = np.tile(pairs.i_tilde, P)
    groups = row_groups(pairs, P)
    ssi = P * pairs.i_tilde_sq
    const_head = fit.sst <= 0  # constant heads: every R² is defined as 0
    denom = np.where(const_head, 1.0, fit.sst) * ssi
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
    step = max(1, _BLOCK_ELEMS // n_rows)
    if perms is None:
        # Shuffle ĩ within its groups directly, in block layout (rows of one group contiguous), with y's rows
        # put in the same layout once: the same draws as ``within_group_permutations(groups, ·, rng)`` chunk by
        # chunk, used as idx (a uniform within-group permutation and its inverse have the same law), without
        # the scatter to row order or the gather i_rows[idx].
        rng = np.random.default_rng(seed)
        lay = group_layout(groups)
        i_lay, y_lay = i_rows[lay.layout], yr[lay.layout]
        for s in range(0, n_perm, step):
            num = shuffle_within_blocks(i_lay, lay, min(step, n_perm - s), rng) @ y_lay
            out[s:s + num.shape[0]] = num * num / denom
    else:
        for s in range(0, n_perm, step):
            num = i_rows[_inverse_perms(perms[s:s + step])] @ yr
            out[s:s + num.shape[0]] = num * num / denom
    out[:, const_head] = 0.0
    return out


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
SIGNFLIP_EXACT_MAX = 2 ** 16


def _sign_patterns(n_prompts: int, n_flip: int, rng: np.random.Generator) -> tuple[np.ndarray, bool]:
    """All 2^(P-1) sign vectors with the first sign +1 (exact), or n_flip random ones: ([n, P], exact)."""
    if 2 ** (n_prompts - 1) <= SIGNFLIP_EXACT_MAX:
        codes = np.arange(2 ** (n_prompts - 1), dtype=np.int64)[:, None]
        bits = (codes >> np.arange(n_prompts - 1, dtype=np.int64)[None, :]) & 1
        return np.hstack([np.ones((codes.size, 1)), 1.0 - 2.0 * bits]), True
    return rng.choice([-1.0, 1.0], size=(n_flip, n_prompts)), False


def signflip_pvalues(a: np.ndarray, n_flip: int = 1000, seed: int = 0, rtol: float = 1e-9,
                     atol=0.0) -> np.ndarray:
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
    step = max(1, _BLOCK_ELEMS // max(1, a.shape[1]))
    for s in range(0, signs.shape[0], step):
        ge += (np.abs(signs[s:s + step] @ a) >= thr[None, :]).sum(axis=0)
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


# --------------------------------------------------------------------------
# Bootstrap over prompts
# --------------------------------------------------------------------------
def bootstrap_weights(n_prompts: int, n_boot: int, seed: int = 0) -> np.ndarray:
    """Multinomial prompt counts [n_boot, n_prompts]: each row is a resample with replacement."""
    rng = np.random.default_rng(seed)
    return rng.multinomial(n_prompts, np.full(n_prompts, 1.0 / n_prompts), size=n_boot).astype(np.float64)


def bootstrap_delta_r2(pairs: PairSet, Y: np.ndarray, n_boot: int = 1000, seed: int = 0,
                       weights: np.ndarray | None = None) -> np.ndarray:
    """Bootstrap ΔR² per head, resampling prompts with replacement: [n_boot, H].

    Each resample is the pooled fit on the resampled prompts, computed as
    multinomial-count weights on the per-prompt sufficient statistics (no
    per-head refits).  weights (optional) [B, P] replaces the random counts.
    """
    stats = prompt_stats(pairs, Y)
    if weights is None:
        weights = bootstrap_weights(stats.a.shape[0], n_boot, seed)
    return fit_from_stats(stats, weights).delta


def mean_ci(samples: np.ndarray, level: float = 0.95, n: int | None = None) -> tuple[float, float]:
    """Bootstrap CI (``percentile_ci``; expanded with n prompts) of the head-mean ΔR² across bootstrap rows.

    samples: [n_boot, H] (averaged over heads per row) or [n_boot] (already a
    per-row statistic).
    """
    samples = np.asarray(samples, dtype=np.float64)
    m = samples.mean(axis=1) if samples.ndim == 2 else samples
    lo, hi = percentile_ci(m, level, n)
    return float(lo), float(hi)


def expanded_tail(n: int, level: float = 0.95) -> float:
    """Lower tail probability of the expanded percentile interval for n sampling units (Hesterberg 2015):
    Φ(−sqrt(n/(n−1)) · t_{(1+level)/2, n−1}). A plain percentile interval is too narrow by about
    sqrt((n−1)/n) and uses normal rather than t quantiles: at n = 16 prompts its 95% interval covers a mean
    about 92% of the time; the expanded one about 95% (tests/test_calibration.py)."""
    from scipy.stats import norm, t

    if n < 2:
        raise ValueError("an expanded percentile interval needs at least two sampling units")
    return float(norm.cdf(-np.sqrt(n / (n - 1)) * t.ppf((1 + level) / 2, n - 1)))


def percentile_ci(samples, level: float = 0.95, n: int | None = None) -> np.ndarray:
    """Bootstrap interval over bootstrap rows (axis 0): [2] for [n_boot], [..., 2] for [n_boot, ...].

    n (the number of resampled units, the prompts) gives the expanded percentile interval, which the claims
    use; without it, the plain percentile interval."""
    tail = (1 - level) / 2 if n is None else expanded_tail(n, level)
    lo, hi = round(tail, 12), round(1 - tail, 12)  # 0.95 -> exactly 0.025, 0.975
    return np.moveaxis(np.quantile(samples, [lo, hi], axis=0), 0, -1)


def t_interval(values, level: float = 0.95) -> tuple[float, float]:
    """Student-t interval of the mean of independent draws (T11's random-head control over its draws)."""
    from scipy.stats import t

    v = np.asarray(values, dtype=np.float64)
    if v.size < 2:
        raise ValueError("a t-interval needs at least two draws")
    half = t.ppf((1 + level) / 2, v.size - 1) * v.std(ddof=1) / np.sqrt(v.size)
    return float(v.mean() - half), float(v.mean() + half)


# --------------------------------------------------------------------------
# Per-bin profile, causal-mask share, layer ratio
# --------------------------------------------------------------------------
def _ratio(num, den):
    """num / den with NaN where den == 0; scalar in, float out."""
    num = np.asarray(num, dtype=np.float64)
    den = np.asarray(den, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.where(den == 0, np.nan, num / np.where(den == 0, 1.0, den))
    return float(r) if r.ndim == 0 else r


def residual_stream_share(delta_causal, delta_bidirectional):
    """Residual-stream share ΔR²_bi / ΔR²_causal (Eq. 5); NaN where ΔR²_causal == 0."""
    return _ratio(delta_bidirectional, delta_causal)


def causal_mask_share(delta_causal, delta_bidirectional):
    """Causal-mask share 1 − ΔR²_bi / ΔR²_causal (Eq. 5); NaN where ΔR²_causal == 0."""
    r = residual_stream_share(delta_causal, delta_bidirectional)
    return 1.0 - r
