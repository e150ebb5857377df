"""Sink and position-0 measurements (paper §3 Eq. 7, §4, §5.1, §5.2, §5.7, App. A). Pure functions on captures.

* ``top_cells`` / ``sink_cells_at_chance`` – the highest (layer, position) cells of a grid, and the §5.1 decision
  that the highest-sink cells' topic probes are at chance (an equivalence bound, not a failure to reject).
* ``pc1_heldout_identity`` / ``pc1_heldout_rows`` / ``identity_significance`` / ``carrier_decision`` – §5.2 Table 4:
  a head's PC1 projection regressed on the identity of the token at 0, R² held out across prompts (each identity
  recurs on prompts whose other tokens vary), against a permutation null, its interval over prompts; and the decision
  over a set of heads (the BH gate, then the best significant head's R² floor by the one rule).
"""

from __future__ import annotations

import warnings

import numpy as np

from harness.spec.decision import Decision, at_least, at_most
from harness.stats.heads import pc1_scores
from harness.stats.intervals import percentile_ci
from harness.stats.nulls import benjamini_hochberg, permutation_pvalues
from harness.stats.probes import accuracy_interval


def sink_magnitude_by_layer(profile: np.ndarray) -> np.ndarray:
    """[N, L, H, n] sink profiles -> [L, n]: per layer, the prompt- and head-mean weight later queries give each key
    (NaN for a key no later query reads, e.g. the last position: without numpy's all-NaN warning for it)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Mean of empty slice", RuntimeWarning)
        return np.nanmean(profile, axis=(0, 2))


def sink_by_prompt(profile: np.ndarray) -> np.ndarray:
    """[N, L, H, n] sink profiles -> [N, L, n]: per prompt, the head-mean weight later queries give each key (the
    prompt-level values whose mean is ``sink_magnitude_by_layer``; NaN where no later query reads the key)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Mean of empty slice", RuntimeWarning)
        return np.nanmean(profile, axis=2)


def peak_sink(profile: np.ndarray, position: int) -> tuple[float, int]:
    """(magnitude, layer) of the strongest layer for key ``position``: one figure per prompt variant (Table 2)."""
    by_layer = sink_magnitude_by_layer(profile)[:, position]
    layer = int(np.nanargmax(by_layer))
    return float(by_layer[layer]), layer


def sink_reading_strength(profile: np.ndarray) -> np.ndarray:
    """[N, L, H, n] -> [L, H]: each head's mean weight on position 0 (over queries i >= 1 and prompts)."""
    return np.nanmean(profile[..., 0], axis=0)


def cross_prompt_std(states: np.ndarray) -> np.ndarray:
    """[N, L, D] states at one position -> [L]: the largest per-dimension std across prompts, per layer."""
    return states.std(axis=0).max(axis=-1)


def norm_ratio_position0(resid_norms: np.ndarray, mid: tuple[float, float] = (0.25, 0.75)) -> np.ndarray:
    """[N, L, n] residual norms -> [L]: mean norm at position 0 over the median norm at mid-sequence
    positions [mid0*n, mid1*n) ('typical mid-sequence norm', App. A)."""
    n = resid_norms.shape[-1]
    lo, hi = int(mid[0] * n), int(mid[1] * n)
    return resid_norms[:, :, 0].mean(axis=0) / np.median(resid_norms[:, :, lo:hi], axis=(0, 2))


def top_cells(values: np.ndarray, k: int) -> list[tuple[int, int]]:
    """The k (row, column) cells with the largest finite values, largest first (NaN never chosen first)."""
    order = np.argsort(np.nan_to_num(values, nan=-np.inf).ravel(), kind="stable")[::-1][:k]
    rows, cols = np.unravel_index(order, values.shape)
    return [(int(r), int(c)) for r, c in zip(rows, cols)]


def sink_cells_at_chance(
    sink: np.ndarray, accuracy_at, n: int, bound: float, k: int = 3, alpha: float = 0.05
) -> tuple[list[tuple[int, int]], list[float], list[Decision]]:
    """The §5.1 decision: (the k highest-sink cells of ``sink`` [layers, positions], their probe accuracies, the one
    rule's decision on each). ``accuracy_at(cell)`` gives a cell's probe accuracy (a grid's entry, or a probe fitted
    on that cell alone). Each accuracy is judged below ``bound`` (``decision.at_most``) on its two-sided (1 - 2 alpha)
    Clopper-Pearson interval over ``n`` prompts, whose ends are the one-sided (1 - alpha) bounds: held when the upper
    bound is below ``bound`` ('at chance' shown as an equivalence, so a probe too noisy to reject chance does not
    pass), not held when the lower bound is above it, inconclusive between."""
    cells = top_cells(sink, k)
    acc = [float(accuracy_at(c)) for c in cells]
    level = 1 - 2 * alpha
    return cells, acc, [at_most(a, accuracy_interval(a, n, level), bound, n, level=level) for a in acc]


def identity_folds(token_ids: np.ndarray, seed: int = 0) -> np.ndarray:
    """[n] fold of each prompt for ``pc1_heldout_identity``: within each token identity its prompts are shuffled
    (seeded) and dealt to folds 0, 1, ..., K-1 in turn, K the smallest identity's count (at least 2), so every fold
    holds each identity and every training fold all of them."""
    token_ids = np.asarray(token_ids)
    _, inv, counts = np.unique(token_ids, return_inverse=True, return_counts=True)
    if counts.min() < 2:
        raise ValueError("every token identity needs at least two prompts for a held-out R²")
    rng = np.random.default_rng(seed)
    folds = np.empty(token_ids.size, dtype=np.int64)
    for g in range(counts.size):
        members = rng.permutation(np.flatnonzero(inv == g))
        folds[members] = np.arange(members.size) % counts.min()
    return folds


def _heldout_errors(Z: np.ndarray, G: np.ndarray, folds: np.ndarray) -> np.ndarray:
    """[m, n] each prompt's held-out squared error for each row of Z [m, n] on one-hot identities G [n, g]: each
    fold's prompts predicted by their identity's mean over the other folds (the training mean where the identity is
    absent)."""
    err = np.zeros(Z.shape)
    for f in np.unique(folds):
        test, train = folds == f, folds != f
        counts = G[train].sum(axis=0)
        grand = Z[:, train].mean(axis=1, keepdims=True)
        means = np.where(counts > 0, (Z[:, train] @ G[train]) / np.maximum(counts, 1), grand)
        err[:, test] = (Z[:, test] - means @ G[test].T) ** 2
    return err


def _heldout_r2(Z: np.ndarray, G: np.ndarray, folds: np.ndarray, sst: float) -> np.ndarray:
    """Held-out R² of each row of Z [m, n] (``_heldout_errors``): 1 - SSE / SST."""
    return 1.0 - _heldout_errors(Z, G, folds).sum(axis=1) / sst


def _design(outputs: np.ndarray, token_ids: np.ndarray, seed: int):
    """(PC1 scores z [n], their variance fraction, one-hot identities G [n, g], folds [n])."""
    z, frac = pc1_scores(outputs)
    token_ids = np.asarray(token_ids)
    if token_ids.shape != (z.size,):
        raise ValueError(f"token_ids must be [n_prompts] = [{z.size}], got {token_ids.shape}")
    _, inv = np.unique(token_ids, return_inverse=True)
    return z, frac, np.eye(inv.max() + 1)[inv], identity_folds(token_ids, seed)


def pc1_heldout_identity(
    outputs: np.ndarray, token_ids: np.ndarray, n_perm: int = 1000, seed: int = 0
) -> tuple[float, float, np.ndarray]:
    """(held-out R², PC1 variance fraction, permutation null [n_perm]) of one head (§4 / Table 4).

    ``outputs`` [n_prompts, d] is the head's output, ``token_ids`` [n_prompts] the token at 0; each identity recurs
    on prompts whose other tokens differ. The outputs are projected on their first principal component (PC1 does
    not depend on the identities), and the projection z regressed on one-hot identity with R² held out across
    prompts (``identity_folds``: a prompt is predicted by its identity's mean over the other folds): R² = 1 - SSE /
    SST, SST about the mean of all z. A head whose output does not carry the identity scores about 0 or below,
    unlike the in-sample R², whose permutation mean is (G - 1) / (n - 1). The null permutes z across prompts with
    identities and folds fixed (the same exchangeability as permuting identities, every fold kept balanced);
    permutations from ``np.random.default_rng(seed)``. Outputs constant across prompts give (0, 0, zeros)."""
    z, frac, G, folds = _design(outputs, token_ids, seed)
    sst = float(np.sum((z - z.mean()) ** 2))
    if sst <= 0.0:
        return 0.0, frac, np.zeros(n_perm)
    r2 = float(_heldout_r2(z[None, :], G, folds, sst)[0])
    perms = np.random.default_rng(seed).permuted(np.tile(np.arange(z.size), (n_perm, 1)), axis=1)
    null = np.concatenate([_heldout_r2(z[p], G, folds, sst) for p in np.array_split(perms, max(1, n_perm // 1000))])
    return r2, frac, null


def pc1_heldout_rows(outputs: np.ndarray, token_ids: np.ndarray, weights: np.ndarray, seed: int = 0) -> np.ndarray:
    """[B] the held-out R² of ``pc1_heldout_identity`` on B prompt resamples (``weights`` [B, n]: each prompt's count,
    ``intervals.bootstrap_weights``): the fold predictions held fixed (as a fitted direction is where its norm fraction is resampled), each
    prompt's held-out squared error and squared deviation from the mean resampled together, R² = 1 - Σ w e² / Σ w d².
    The interval of these rows is over the prompts the R² is measured on, not over refits; constant outputs give
    zeros."""
    z, _, G, folds = _design(outputs, token_ids, seed)
    dev = (z - z.mean()) ** 2
    if dev.sum() <= 0.0:
        return np.zeros(len(weights))
    err = _heldout_errors(z[None, :], G, folds)[0]
    return 1.0 - (weights @ err) / np.maximum(weights @ dev, np.finfo(float).tiny)


def heldout_shrinkage(token_ids: np.ndarray) -> float:
    """How far ``pc1_heldout_identity``'s held-out R² falls below the population R² ρ on this design: E[1 - R²] is
    about (1 - ρ) (1 + 1/m) n / (n - 1), m an identity's prompts in the training folds (the predicting mean's noise)
    and n the prompts (SST about the estimated mean). 8 identities x 8 prompts, 8 folds: (8/7)(64/63) = 1.161."""
    _, counts = np.unique(np.asarray(token_ids), return_counts=True)
    k, n = max(2, int(counts.min())), int(counts.sum())
    m = counts.min() * (k - 1) / k
    return float((1 + 1 / m) * n / (n - 1))


def corrected_r2(r2, shrinkage: float):
    """The held-out R² on the population scale, 1 - (1 - R²) / shrinkage (``heldout_shrinkage``): what is compared
    with Table 4's in-sample values, so the declared tolerance is not spent on the estimator's shrinkage."""
    return 1 - (1 - np.asarray(r2, dtype=np.float64)) / shrinkage


def identity_significance(r2: np.ndarray, null: np.ndarray, q: float) -> tuple[np.ndarray, np.ndarray]:
    """Which heads' held-out R² beats its permutation null after Benjamini-Hochberg at ``q`` over the heads:
    (significant [heads], p-values [heads]); ``r2`` [heads], ``null`` [n_perm, heads], p = (1 + #{null >= R²}) /
    (1 + n_perm). A multiple test of the heads, not an interval: the gate before the R² floor
    (``carrier_decision``)."""
    p = permutation_pvalues(np.asarray(r2, dtype=np.float64), np.asarray(null, dtype=np.float64))
    return benjamini_hochberg(p, q), p


def carrier_decision(
    r2: np.ndarray, rows: np.ndarray, significant: np.ndarray, r2_min: float, shrinkage: float, n: int
) -> tuple[int, Decision]:
    """The token-0 identity carrier by the one rule: (the head judged, its decision). The head is the BH-significant
    one (``significant``, not all False) with the largest held-out R²; its R² corrected for the held-out shrinkage
    (``corrected_r2``) is judged above ``r2_min`` on the interval of its prompt-resampled rows (``rows`` [B, heads],
    ``pc1_heldout_rows``, corrected alike) at 1 - 0.05 / k, k the significant heads it was chosen among
    (Bonferroni: the largest of k is read as one)."""
    candidates = np.flatnonzero(significant)
    if candidates.size == 0:
        raise ValueError("no head beats its permutation null: there is no carrier to judge")
    head = int(candidates[np.argmax(np.asarray(r2)[candidates])])
    level = 1 - 0.05 / candidates.size
    ci = tuple(float(x) for x in percentile_ci(corrected_r2(np.asarray(rows)[:, head], shrinkage), level, n=n))
    return head, at_least(float(corrected_r2(r2[head], shrinkage)), ci, r2_min, n, level=level)
