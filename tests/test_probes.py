"""Tests of the probe measurements (harness/stats/probes.py, heads.py, directions.py) on synthetic data, against plain references.

No model runs here: every array is synthetic, float64, small.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import harness.stats.probes as probes
from harness.stats.directions import dominant_direction, fraction_norm_removed, project_out, rank1_direction
from harness.stats.heads import (
    cosine_consistency,
    cosine_consistency_boot,
    decile_split,
    pc1_scores,
)
from harness.stats.probes import (
    above_chance,
    binomial_sf,
    chance_level,
    effective_n_components,
    topic_probe_accuracy,
    topic_probe_grid,
)

HYP = settings(deadline=None, max_examples=30, suppress_health_check=[HealthCheck.too_slow])
FEW = settings(deadline=None, max_examples=5, suppress_health_check=[HealthCheck.too_slow])

LABELS_200 = np.repeat(np.arange(4), 50)
FINITE = st.floats(-10, 10, allow_nan=False, allow_infinity=False, width=64)


def _separable(rng, labels, d, shift=3.0):
    X = rng.normal(size=(labels.size, d))
    X[:, : labels.max() + 1] += shift * np.eye(labels.max() + 1)[labels]
    return X


# --------------------------------------------------------------------------
# Topic probe
# --------------------------------------------------------------------------
def test_component_guard():
    assert effective_n_components(50, 160, 4096) == 50
    assert effective_n_components(50, 32, 4096) == 31  # n_train - 1
    assert effective_n_components(50, 160, 8) == 8  # d
    assert effective_n_components(50, 1, 8) == 1  # never below 1
    with pytest.raises(ValueError):
        effective_n_components(0, 10, 10)


def test_probe_is_at_chance_on_label_independent_noise():
    rng = np.random.default_rng(0)
    accs = [topic_probe_accuracy(rng.normal(size=(200, 32)), LABELS_200, seed=s) for s in range(3)]
    assert abs(np.mean(accs) - 0.25) < 0.05
    assert not any(above_chance(a, 200, chance_level(LABELS_200)) for a in accs)


def test_probe_is_high_on_separable_data():
    acc = topic_probe_accuracy(_separable(np.random.default_rng(1), LABELS_200, 32), LABELS_200)
    assert acc > 0.9
    assert above_chance(acc, 200, 0.25, alpha=1e-6)


def test_probe_stays_at_chance_when_n_much_smaller_than_d():
    # 40 prompts, 2000 dims, labels independent of X: with n_components capped at
    # n_train - 1 = 31 the training fold is separable, but held-out rows must stay at chance.
    rng = np.random.default_rng(2)
    labels = np.repeat(np.arange(4), 10)
    accs = [topic_probe_accuracy(rng.normal(size=(40, 2000)), labels, seed=s) for s in range(4)]
    assert abs(np.mean(accs) - 0.25) < 0.1
    assert not above_chance(np.mean(accs), 160, 0.25)


def test_pca_is_fitted_inside_each_training_fold(monkeypatch):
    """Every PCA fit sees exactly one training fold, never a test row."""
    from sklearn.model_selection import StratifiedKFold

    rng = np.random.default_rng(3)
    X = rng.normal(size=(100, 20))
    labels = np.repeat(np.arange(4), 25)
    seen = []
    real = probes._fit_pca

    def spy(X_train, k):
        seen.append(X_train.copy())
        return real(X_train, k)

    monkeypatch.setattr(probes, "_fit_pca", spy)
    topic_probe_accuracy(X, labels, folds=5, seed=7)
    splits = list(StratifiedKFold(5, shuffle=True, random_state=7).split(X, labels))
    assert len(seen) == 5
    for fitted, (train, test) in zip(seen, splits):
        assert fitted.shape == (80, 20)
        np.testing.assert_array_equal(fitted, X[train])
        assert not any((fitted == X[t]).all(axis=1).any() for t in test)


def test_probe_matches_an_explicit_within_fold_sklearn_reference():
    from sklearn.decomposition import PCA
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    rng = np.random.default_rng(4)
    X = _separable(rng, LABELS_200, 24, shift=0.8)
    ref = []
    for train, test in StratifiedKFold(5, shuffle=True, random_state=0).split(X, LABELS_200):
        pipe = make_pipeline(
            PCA(n_components=10, svd_solver="full"), StandardScaler(), LogisticRegression(C=1.0, max_iter=1000)
        )
        pipe.fit(X[train], LABELS_200[train])
        ref.append(np.mean(pipe.predict(X[test]) == LABELS_200[test]))
    assert topic_probe_accuracy(X, LABELS_200, n_components=10, max_iter=1000) == pytest.approx(np.mean(ref), abs=0.011)


def test_constant_states_score_exactly_chance():
    # Position 0 with a fixed BOS: bit-identical states (up to rounding in the mean).
    X = np.tile(np.random.default_rng(5).normal(size=(1, 64)) * 0.1, (200, 1))
    assert topic_probe_accuracy(X, LABELS_200) == pytest.approx(0.25)


@FEW
@given(scale=st.floats(1e-3, 1e3), shift=st.floats(-100, 100))
def test_probe_is_invariant_to_scale_and_offset(scale, shift):
    rng = np.random.default_rng(6)
    labels = np.repeat(np.arange(4), 10)
    X = _separable(rng, labels, 8, shift=1.0)
    a = topic_probe_accuracy(X, labels, n_components=6)
    assert topic_probe_accuracy(X * scale + shift, labels, n_components=6) == pytest.approx(a)


def test_grid_matches_per_cell_probe_and_finds_the_decodable_cell():
    rng = np.random.default_rng(8)
    labels = np.repeat(np.arange(4), 10)
    S = rng.normal(size=(40, 2, 2, 12))
    S[:, 1, 0, :] = _separable(rng, labels, 12)
    grid = topic_probe_grid(S, labels, n_components=8)
    assert grid.shape == (2, 2)
    for layer in range(2):
        for pos in range(2):
            assert grid[layer, pos] == topic_probe_accuracy(S[:, layer, pos], labels, n_components=8)
    assert grid[1, 0] > 0.8
    assert np.delete(grid.ravel(), 2).max() < 0.6


def test_probe_rejects_bad_input():
    with pytest.raises(ValueError):
        topic_probe_accuracy(np.zeros((10, 3)), np.zeros(9))
    with pytest.raises(ValueError):  # a class with fewer prompts than folds
        topic_probe_accuracy(np.zeros((10, 3)), np.r_[np.zeros(7), np.ones(3)])
    with pytest.raises(ValueError):
        topic_probe_accuracy(np.full((20, 3), np.nan), np.repeat([0, 1], 10))


# --------------------------------------------------------------------------
# Chance and the binomial test
# --------------------------------------------------------------------------
def test_chance_level_is_the_majority_share():
    assert chance_level(LABELS_200) == 0.25
    assert chance_level(np.array([0, 0, 0, 1])) == 0.75


@HYP
@given(n=st.integers(1, 60), k=st.integers(-2, 62), p=st.sampled_from([0.0, 0.1, 0.25, 0.5, 0.9, 1.0]))
def test_binomial_tail_matches_exact_rational_sum(n, k, p):
    pf = Fraction(p)
    exact = sum(math.comb(n, j) * pf**j * (1 - pf) ** (n - j) for j in range(max(k, 0), n + 1))
    assert binomial_sf(k, n, p) == pytest.approx(float(exact), rel=1e-9, abs=1e-300)


def test_binomial_tail_matches_scipy_for_large_n():
    stats = pytest.importorskip("scipy.stats")
    for n, k, p in [(2000, 560, 0.25), (5000, 1200, 0.25), (200, 83, 0.25)]:
        assert binomial_sf(k, n, p) == pytest.approx(stats.binom.sf(k - 1, n, p), rel=1e-8)


def test_paper_table1_accuracies_against_chance():
    # Qwen's highest-sink positions (0.219) are at chance; Mistral's content positions
    # (0.395-0.415) are above it for any plausible prompt count.
    for n in (100, 200, 400):
        assert not above_chance(0.219, n, 0.25)
        assert above_chance(0.395, n, 0.25)


# --------------------------------------------------------------------------
# Cosine consistency and deciles
# --------------------------------------------------------------------------
def _cosine_loop(o):
    n, H, _ = o.shape
    out = np.zeros(H)
    for h in range(H):
        vals = []
        for p in range(n):
            for q in range(p + 1, n):
                a, b = o[p, h], o[q, h]
                na, nb = np.linalg.norm(a), np.linalg.norm(b)
                vals.append(0.0 if na == 0 or nb == 0 else a @ b / (na * nb))
        out[h] = np.mean(vals)
    return out


def test_cosine_consistency_is_one_for_identical_directions():
    rng = np.random.default_rng(9)
    v = rng.normal(size=(1, 3, 16))
    o = v * rng.uniform(0.1, 10, size=(12, 1, 1))  # same direction, different norms
    np.testing.assert_allclose(cosine_consistency(o), 1.0, atol=1e-12)


def test_cosine_consistency_is_near_zero_for_random_high_dim_vectors():
    c = cosine_consistency(np.random.default_rng(10).normal(size=(40, 6, 4096)))
    assert np.abs(c).max() < 0.01


def test_cosine_consistency_edge_cases():
    a = np.array([1.0, 2.0, 0.0])
    assert cosine_consistency(np.stack([a, -a])[:, None])[0] == pytest.approx(-1.0)
    assert cosine_consistency(np.zeros((5, 2, 3))).tolist() == [0.0, 0.0]
    # one zero prompt among three identical: pairs (1, 1, 0, 0 ...) -> 1/3
    o = np.stack([a, a, np.zeros(3)])[:, None]
    assert cosine_consistency(o)[0] == pytest.approx(1 / 3)
    # any head layout: [n, L, H, d] -> [L, H]
    assert cosine_consistency(np.ones((3, 2, 5, 4))).shape == (2, 5)
    with pytest.raises(ValueError):
        cosine_consistency(np.ones((1, 2, 3)))


@HYP
@given(o=arrays(np.float64, st.tuples(st.integers(2, 6), st.integers(1, 4), st.integers(1, 5)), elements=FINITE))
def test_cosine_consistency_matches_pairwise_loop(o):
    o = np.where(np.abs(o) < 1e-3, 0.0, o)  # keep exact zeros, avoid subnormal-scale vectors
    np.testing.assert_allclose(cosine_consistency(o), _cosine_loop(o), atol=1e-10)


def test_decile_split_uses_ceil_and_orders_groups():
    s = np.random.default_rng(11).permutation(512).reshape(16, 32).astype(float)
    top, bot = decile_split(s)
    assert top.size == bot.size == 52  # the paper's 52 heads for Llama-3.2-1B
    flat = s.ravel()
    assert flat[top].tolist() == sorted(flat, reverse=True)[:52]
    assert flat[bot].tolist() == sorted(flat)[:52]
    assert decile_split(np.arange(30.0))[0].size == 3  # 0.1 * 30 is 3, not 4
    assert [x.tolist() for x in decile_split(np.array([3.0, 1.0, 2.0]))] == [[0], [1]]
    assert [x.tolist() for x in decile_split(np.zeros(4), 0.5)] == [[0, 1], [3, 2]]  # ties stay disjoint
    with pytest.raises(ValueError):
        decile_split(np.array([1.0]))


@HYP
@given(
    s=st.lists(st.integers(0, 5).map(float), min_size=2, max_size=60).map(np.array),
    frac=st.sampled_from([0.1, 0.25, 0.5]),
)
def test_decile_split_properties(s, frac):
    k = max(1, math.ceil(frac * s.size - 1e-9))
    if 2 * k > s.size:
        with pytest.raises(ValueError):
            decile_split(s, frac)
        return
    top, bot = decile_split(s, frac)
    assert top.size == bot.size == k
    assert len(set(top) | set(bot)) == 2 * k  # disjoint
    assert s[top].min() >= np.sort(s)[::-1][k - 1] and s[bot].max() <= np.sort(s)[k - 1]


# --------------------------------------------------------------------------
# Sink-token identity probe
# --------------------------------------------------------------------------
def _identity_data(rng, n=60, G=5, d=32, noise=0.0):
    tokens = rng.integers(0, G, size=n)
    level = rng.normal(size=G) * 3
    v = rng.normal(size=d)
    out = level[tokens][:, None] * v + rng.normal(size=d) + noise * rng.normal(size=(n, d))
    return out, tokens


def test_pc1_scores_and_variance_fraction_match_sklearn():
    from sklearn.decomposition import PCA

    out, _ = _identity_data(np.random.default_rng(14), noise=1.0)
    z, frac = pc1_scores(out)
    pca = PCA(n_components=1).fit(out)
    assert frac == pytest.approx(pca.explained_variance_ratio_[0], rel=1e-10)
    ref = pca.transform(out)[:, 0]
    np.testing.assert_allclose(np.abs(z), np.abs(ref), atol=1e-8)  # the component's sign is arbitrary


def test_pc1_of_constant_outputs_is_nothing():
    z, frac = pc1_scores(np.tile(np.arange(4.0) * 0.1, (10, 1)))
    assert frac == 0.0 and not z.any()


# --------------------------------------------------------------------------
# Rank-1 directions and norm removal
# --------------------------------------------------------------------------
@pytest.mark.parametrize("n,d", [(400, 32), (50, 200)])
def test_rank1_direction_recovers_a_planted_position_direction(n, d):
    rng = np.random.default_rng(16)
    u = rng.normal(size=d)
    u /= np.linalg.norm(u)
    pos = np.tile(np.arange(n // 10), 10)
    E = rng.normal(size=(n, d)) * 0.05
    E -= np.outer(E @ u, u)  # noise orthogonal to u: position is exactly linear in X·u
    X = 5 + 0.2 * pos[:, None] * u + E
    w = rank1_direction(X, pos)
    assert np.linalg.norm(w) == pytest.approx(1.0)
    # Right direction, oriented with position.  With n < d, u is not in the row space of
    # the centred states, so the (near) minimum-norm solution is only close to u.
    assert w @ u > (0.9999 if n > d else 0.9)
    np.testing.assert_allclose(rank1_direction(X * 1e4, pos), w, atol=1e-8)  # scale-free ridge


def test_rank1_direction_dual_and_primal_forms_agree():
    rng = np.random.default_rng(17)
    X, pos = rng.normal(size=(30, 60)), rng.permutation(30).astype(float)
    w = rank1_direction(X, pos, alpha=1e-2)
    Xc, pc = X - X.mean(0), pos - pos.mean()
    lam = 1e-2 * np.sum(Xc**2) / 60
    ref = np.linalg.solve(Xc.T @ Xc + lam * np.eye(60), Xc.T @ pc)
    np.testing.assert_allclose(w, ref / np.linalg.norm(ref), atol=1e-10)
    with pytest.raises(ValueError):
        rank1_direction(X, np.ones(30))


def test_project_out_and_dominant_direction():
    rng = np.random.default_rng(18)
    Y = rng.normal(size=(20, 8)) + 4 * rng.normal(size=8)
    u = dominant_direction(Y)
    _, s, vt = np.linalg.svd(Y)
    assert abs(u @ vt[0]) == pytest.approx(1.0) and (Y @ u).sum() > 0
    np.testing.assert_allclose(project_out(Y, u) @ u, 0, atol=1e-10)
    f = fraction_norm_removed(Y, u)
    assert f == pytest.approx(1 - math.sqrt(1 - s[0] ** 2 / np.sum(s**2)), rel=1e-10)
    assert fraction_norm_removed(Y, u, "energy") == pytest.approx(s[0] ** 2 / np.sum(s**2), rel=1e-10)


def test_fraction_norm_removed_extremes():
    y = np.array([[3.0, 0.0], [5.0, 0.0]])
    for mode in ("frobenius", "mean", "energy"):
        assert fraction_norm_removed(y, [1.0, 0.0], mode) == pytest.approx(1.0)
        assert fraction_norm_removed(y, [0.0, 2.0], mode) == pytest.approx(0.0)
        assert fraction_norm_removed(np.zeros((2, 2)), [1.0, 0.0], mode) == 0.0
    # one vector at 45 degrees: norm drops to 1/sqrt(2)
    assert fraction_norm_removed(np.array([1.0, 1.0]), [1.0, 0.0]) == pytest.approx(1 - 2**-0.5)
    with pytest.raises(ValueError):
        fraction_norm_removed(y, [1.0, 0.0], "bogus")


@HYP
@given(
    Y=arrays(np.float64, st.tuples(st.integers(1, 6), st.just(4)), elements=FINITE),
    u=arrays(np.float64, 4, elements=st.floats(0.1, 1)),
)
def test_fraction_norm_removed_is_a_fraction(Y, u):
    for mode in ("frobenius", "mean", "energy"):
        assert -1e-12 <= fraction_norm_removed(Y, u, mode) <= 1 + 1e-12


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(2, 9), st.integers(0, 10_000))
def test_bootstrap_consistency_with_unit_weights_equals_the_point_value(n, seed):
    o = np.random.default_rng(seed).normal(size=(n, 3, 2, 5))
    boot = cosine_consistency_boot(o, np.ones((1, n)))
    np.testing.assert_allclose(boot[0], cosine_consistency(o), atol=1e-12)


@given(st.integers(0, 10_000))
@settings(max_examples=25, deadline=None)
def test_bootstrap_consistency_counts_a_repeated_prompt_as_one_prompt(seed):
    rng = np.random.default_rng(seed)
    o = rng.normal(size=(5, 4, 6))
    w = rng.multinomial(5, np.full(5, 0.2), size=3).astype(float)
    boot = cosine_consistency_boot(o, w)
    for row, counts in zip(boot, w):  # brute force: every pair of draws that are distinct prompts
        idx = np.repeat(np.arange(5), counts.astype(int))
        u = o / np.linalg.norm(o, axis=-1, keepdims=True)
        pairs = [(a, b) for a in range(len(idx)) for b in range(len(idx)) if idx[a] != idx[b]]
        want = np.mean([np.einsum("hd,hd->h", u[idx[a]], u[idx[b]]) for a, b in pairs], axis=0) if pairs else np.nan
        np.testing.assert_allclose(row, want, atol=1e-12)
