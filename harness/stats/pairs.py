"""The shared design of the leakage regressions (paper Eq. 4): causal pairs (query i, key j), 0 <= j <= i, held
in a ``PairSet`` with its offsets d = i − j, d-groups and ĩ = i − mean(i | d); the deterministic pair draws
(``stratified_pairs`` by doubling query bin) and the d-group of each pooled row.
Pure numpy; rows are flattened prompt-major (row r = p * n_pairs + k)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

__all__ = [
    "PairSet",
    "query_bins",
    "stratified_pairs",
    "row_groups",
]


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

    def __post_init__(self) -> None:
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
    def _groups(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
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
        raise ValueError(
            f"seq_len={seq_len} must be first={first} times a power of two (doubling query bins ending at seq_len)"
        )
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
    return pairs_in_bins(query_bins(seq_len, first), n_pairs, seed)


def pairs_in_bins(edges: np.ndarray, n_pairs: int, seed: int) -> PairSet:
    """``stratified_pairs``' draw over the query bins ``edges`` (any increasing edges from 0)."""
    if n_pairs < 0:
        raise ValueError("n_pairs must be >= 0")
    n_bins = edges.size - 1
    base, rem = divmod(int(n_pairs), n_bins)
    shares = np.full(n_bins, base, dtype=np.int64)
    if rem:
        shares[n_bins - rem :] += 1
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


def row_groups(pairs: PairSet, n_prompts: int) -> np.ndarray:
    """d-group index of each pooled row (prompt-major: row = p * n_pairs + k)."""
    return np.tile(pairs.group, n_prompts)
