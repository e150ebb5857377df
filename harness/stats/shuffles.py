"""Uniform random permutations of rows within groups (the d-groups of the leakage permutation null): the block
layout of a grouping, an in-layout Fisher–Yates shuffle of each group, and permutation arrays drawn with it.
Pure numpy; the draws depend only on the grouping and the generator (``harness.stats.nulls`` relies on it)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = [
    "GroupLayout",
    "group_layout",
    "shuffle_within_blocks",
    "within_group_permutations",
]


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


def shuffle_within_blocks(values: np.ndarray, lay: GroupLayout, n_perm: int, rng: np.random.Generator) -> np.ndarray:
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
    no sort; ``within_group_permutations_by_argsort`` (benchmarks/argsort_permutations.py) is the
    previous, O(n_perm · n_rows log n_rows) generator of the same law.
    """
    lay = group_layout(np.asarray(groups, dtype=np.int64))
    to_row_order = np.empty_like(lay.layout)
    to_row_order[lay.layout] = np.arange(lay.layout.size)
    return np.take(shuffle_within_blocks(lay.layout, lay, n_perm, rng), to_row_order, axis=1)
