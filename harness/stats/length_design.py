"""The design of the length-scaling measurement (paper §4 "Length-scaling", §5.8), pure numpy.

§4: "For length-scaling we capture logits at the first four layers and heads of Llama-3.2-1B at sixteen sequence
lengths"; "For ΔR² we sample stratified causal pairs". The suite reads "logits" as the post-softmax weights (as the
paper does in §6–7 and the suite everywhere else: the causal-mask component §5.8 names as the cause of the decay
exists only after the softmax, Eq. 6), stratified by the harness's doubling query bins, at heads 0–3 of layers 0–3.

* ``LENGTHS``: the sixteen lengths, geometric from 16 to 512 (three per doubling).
* ``length_bins``: the harness's doubling query bins [0, 8), [8, 16), … (``pairs.query_bins``), the last one ending
  at the prompt length when that is not 8 times a power of two (20 → [0, 8), [8, 16), [16, 20)).
* ``length_stratified_pairs``: ``pairs.stratified_pairs``'s draw on those bins; at 16, 32, …, 512 it returns exactly
  ``stratified_pairs(seq_len, n_pairs, seed)`` (the pairs every other leakage claim reads).
* ``first_cells``: the flat (layer-major) indices of heads 0..k−1 of layers 0..k−1.
"""

from __future__ import annotations

import numpy as np

from harness.stats.pairs import PairSet, pairs_in_bins

__all__ = ["LENGTHS", "FIRST", "length_bins", "length_stratified_pairs", "first_cells"]

#: The paper's sixteen sequence lengths: 16 ... 512, geometric (16·2^(k/3), rounded).
LENGTHS = tuple(int(round(16 * 2 ** (k / 3))) for k in range(16))

#: "the first four layers and heads": layers 0–3, heads 0–3 of each.
FIRST = 4


def length_bins(seq_len: int, first: int = 8) -> np.ndarray:
    """Doubling query bins [0, first), [first, 2·first), … cut at ``seq_len`` (the last bin may be shorter than a
    doubling); equal to ``pairs.query_bins`` where that is defined (seq_len = first · 2^k)."""
    if first < 1 or seq_len < first:
        raise ValueError(f"seq_len={seq_len} must be at least first={first}")
    edges = [0, first]
    while edges[-1] < seq_len:
        edges.append(min(edges[-1] * 2, seq_len))
    return np.array(edges, dtype=np.int64)


def length_stratified_pairs(seq_len: int, n_pairs: int, seed: int, first: int = 8) -> PairSet:
    """Causal pairs stratified by ``length_bins``, drawn as ``pairs.stratified_pairs`` draws them: n_pairs split
    equally over the bins (the leftover one each to the last bins), uniform without replacement within a bin (all
    of a bin's pairs when it holds fewer than its share; no redistribution), sorted by (i, j)."""
    return pairs_in_bins(length_bins(seq_len, first), n_pairs, seed)


def first_cells(n_heads: int, k: int = FIRST) -> np.ndarray:
    """Layer-major flat indices (layer · n_heads + head) of heads 0..k−1 of layers 0..k−1 (all heads of a layer
    with fewer than k)."""
    h = min(k, n_heads)
    return np.array([layer * n_heads + head for layer in range(k) for head in range(h)], dtype=np.int64)
