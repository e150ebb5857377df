"""Tests of the leakage ΔR² engine (harness/stats/leakage.py) against a plain per-head
least-squares reference, plus property tests of the measurement (Eq. 4–5)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchmarks.argsort_permutations import within_group_permutations_by_argsort
from harness.stats.intervals import bootstrap_delta_r2, bootstrap_weights, mean_ci
from harness.stats.leakage import causal_mask_share, delta_r2, residual_stream_share
from harness.stats.nulls import benjamini_hochberg, permutation_null, permutation_pvalues
from harness.stats.pairs import PairSet, query_bins, row_groups, stratified_pairs
from harness.stats.shuffles import group_layout, shuffle_within_blocks, within_group_permutations

HYP = settings(deadline=None, max_examples=40, suppress_health_check=[HealthCheck.too_slow])


# --------------------------------------------------------------------------
# Plain reference: explicit designs, lstsq, loop over heads (and permutations)
# --------------------------------------------------------------------------
def _rows(pairs: PairSet, Y):
    """Pooled rows (prompt-major): i, j, d [n_rows] and y [n_rows, H]."""
    Y = np.asarray(Y, dtype=np.float64)
    if Y.ndim == 2:
        Y = Y[None]
    P, N, H = Y.shape
    i = np.tile(pairs.i, P).astype(np.float64)
    j = np.tile(pairs.j, P).astype(np.float64)
    return i, j, i - j, Y.reshape(P * N, H)


def _designs(i, j, d):
    """Baseline = one-hot(d) (no intercept; it is in the span); full = + centred i, j."""
    onehot = (d[:, None] == np.unique(d)[None, :]).astype(np.float64)
    full = np.column_stack([onehot, i - i.mean(), j - j.mean()])
    return onehot, full


def _r2(X, y):
    """R² of an OLS fit via lstsq (fitted values are unique even if X is rank deficient)."""
    sst = float(np.sum((y - y.mean()) ** 2))
    if sst == 0:
        return 0.0
    beta = np.linalg.lstsq(X, y, rcond=None)[0]
    return 1.0 - float(np.sum((y - X @ beta) ** 2)) / sst


def ref_fit(pairs: PairSet, Y):
    """Reference R²_base, R²_full, ΔR² per head [H], one lstsq pair per head."""
    i, j, d, y = _rows(pairs, Y)
    Xb, Xf = _designs(i, j, d)
    rb = np.array([_r2(Xb, y[:, h]) for h in range(y.shape[1])])
    rf = np.array([_r2(Xf, y[:, h]) for h in range(y.shape[1])])
    return rb, rf, rf - rb


def ref_null(pairs: PairSet, Y, perms):
    """Reference null: permute y within d-groups (y[perm]) and refit both models, per head."""
    i, j, d, y = _rows(pairs, Y)
    Xb, Xf = _designs(i, j, d)
    out = np.empty((perms.shape[0], y.shape[1]))
    for h in range(y.shape[1]):
        for k, perm in enumerate(perms):
            yp = y[perm, h]
            out[k, h] = _r2(Xf, yp) - _r2(Xb, yp)
    return out


# --------------------------------------------------------------------------
# Data helpers
# --------------------------------------------------------------------------
def random_pairs(seq_len: int, n_pairs: int, seed: int) -> PairSet:
    """Uniform random causal pairs without replacement (any design, not stratified)."""
    rng = np.random.default_rng(seed)
    ii, jj = np.tril_indices(seq_len)
    pick = np.sort(rng.choice(ii.size, size=min(n_pairs, ii.size), replace=False))
    return PairSet(ii[pick], jj[pick])


def causal_softmax_attention(seq_len, n_prompts, n_heads, seed, bidirectional=False):
    """Realistic synthetic attention weights [P, H, L, L]: RoPE-like offset logits
    (sum of cosines of i−j) + per-prompt key content + a small residual-stream
    position term, then a causal (or bidirectional) softmax."""
    rng = np.random.default_rng(seed)
    pos = np.arange(seq_len)
    d = pos[:, None] - pos[None, :]
    freqs = rng.uniform(0.05, 1.5, size=(n_heads, 4))
    amps = rng.normal(0, 1.0, size=(n_heads, 4))
    rel = np.einsum("hf,hfij->hij", amps, np.cos(freqs[:, :, None, None] * d[None, None]))
    content = rng.normal(0, 0.7, size=(n_prompts, n_heads, 1, seq_len))
    absterm = rng.normal(0, 0.02, size=(1, n_heads, 1, 1)) * pos[None, None, None, :]
    logits = rel[None] + content + absterm
    if not bidirectional:
        logits = np.where(d[None, None] >= 0, logits, -np.inf)
    logits -= logits.max(axis=-1, keepdims=True)
    w = np.exp(logits)
    return w / w.sum(axis=-1, keepdims=True)


def gather_pairs(weights, pairs: PairSet):
    """Weights [P, H, L, L] at the pairs -> Y [P, n_pairs, H]."""
    return np.transpose(weights[:, :, pairs.i, pairs.j], (0, 2, 1))


@st.composite
def designs(draw, max_len=20, max_prompts=3, max_heads=4):
    """A random causal pair set plus (P, H)."""
    L = draw(st.integers(2, max_len))
    n_all = L * (L + 1) // 2
    n = draw(st.integers(2, n_all))
    pairs = random_pairs(L, n, draw(st.integers(0, 2**31 - 1)))
    return pairs, draw(st.integers(1, max_prompts)), draw(st.integers(1, max_heads)), draw(st.integers(0, 2**31 - 1))


# --------------------------------------------------------------------------
# Engine == reference
# --------------------------------------------------------------------------
@pytest.mark.parametrize(
    "L,n,P,H,seed", [(6, 21, 1, 3, 0), (16, 60, 1, 5, 1), (24, 120, 3, 4, 2), (40, 300, 2, 6, 3), (12, 40, 5, 2, 4)]
)
def test_engine_matches_reference_random(L, n, P, H, seed):
    pairs = random_pairs(L, n, seed)
    rng = np.random.default_rng(seed)
    Y = rng.normal(size=(P, pairs.n_pairs, H)) + 0.3 * rng.normal(size=H) * pairs.i[None, :, None] / L
    fit = delta_r2(pairs, Y)
    rb, rf, dl = ref_fit(pairs, Y)
    np.testing.assert_allclose(fit.r2_base, rb, atol=1e-8, rtol=0)
    np.testing.assert_allclose(fit.r2_full, rf, atol=1e-8, rtol=0)
    np.testing.assert_allclose(fit.delta, dl, atol=1e-8, rtol=0)


def test_engine_matches_reference_two_dim_input():
    pairs = random_pairs(10, 30, 7)
    Y = np.random.default_rng(7).random((pairs.n_pairs, 3))
    np.testing.assert_allclose(delta_r2(pairs, Y).delta, ref_fit(pairs, Y)[2], atol=1e-8, rtol=0)
    np.testing.assert_allclose(delta_r2(pairs, Y).delta, delta_r2(pairs, Y[None]).delta, atol=1e-14)


@pytest.mark.parametrize("bidirectional", [False, True])
def test_engine_matches_reference_synthetic_attention(bidirectional):
    L, P, H = 64, 3, 5
    pairs = stratified_pairs(L, 350, seed=3)
    Y = gather_pairs(causal_softmax_attention(L, P, H, seed=5, bidirectional=bidirectional), pairs)
    fit = delta_r2(pairs, Y)
    rb, rf, dl = ref_fit(pairs, Y)
    np.testing.assert_allclose(fit.r2_base, rb, atol=1e-8, rtol=0)
    np.testing.assert_allclose(fit.r2_full, rf, atol=1e-8, rtol=0)
    np.testing.assert_allclose(fit.delta, dl, atol=1e-8, rtol=0)
    assert np.all(fit.delta >= 0)


def test_causal_softmax_leaks_more_than_bidirectional():
    """Eq. 3/6: with offset-only logits the causal denominator alone creates ΔR² > 0;
    the bidirectional softmax sums a constant number of terms (only window-edge effects
    remain in its denominator), so its ΔR² is several times smaller."""
    L, P, H = 64, 2, 4
    pairs = stratified_pairs(L, 400, seed=0)
    rng = np.random.default_rng(0)
    d = np.arange(L)[:, None] - np.arange(L)[None, :]
    logits = -0.3 * np.abs(d)[None] + rng.normal(0, 0.5, size=(H, 1, 1)) * np.cos(0.7 * d)[None]
    out = {}
    for name, mask in (("causal", d >= 0), ("bi", np.ones_like(d, bool))):
        lg = np.where(mask[None], logits, -np.inf)
        w = np.exp(lg - lg.max(-1, keepdims=True))
        w /= w.sum(-1, keepdims=True)
        out[name] = delta_r2(pairs, gather_pairs(np.broadcast_to(w, (P, H, L, L)), pairs)).delta
    assert np.all(out["causal"] > 3 * out["bi"] + 1e-6), out
    share = causal_mask_share(out["causal"].mean(), out["bi"].mean())
    assert 0.6 < share <= 1.0


@HYP
@given(designs())
def test_engine_matches_reference_property(design):
    pairs, P, H, seed = design
    rng = np.random.default_rng(seed)
    Y = rng.normal(size=(P, pairs.n_pairs, H)) * rng.uniform(0.1, 10, size=H)
    fit = delta_r2(pairs, Y)
    rb, rf, dl = ref_fit(pairs, Y)
    np.testing.assert_allclose(fit.r2_base, rb, atol=1e-8, rtol=0)
    np.testing.assert_allclose(fit.delta, dl, atol=1e-8, rtol=0)
    assert np.all(fit.delta >= 0) and np.all(fit.r2_full <= 1 + 1e-12)


def test_zero_delta_when_i_confounded_with_d():
    """Each offset appears once: i is fixed within every d-group, Σ ĩ² = 0, ΔR² ≡ 0 (rank-aware)."""
    pairs = PairSet(np.array([0, 3, 5, 9]), np.array([0, 2, 3, 6]))  # d = 0, 1, 2, 3
    Y = np.random.default_rng(0).normal(size=(3, 4, 2))
    assert pairs.i_tilde_sq == 0.0
    fit = delta_r2(pairs, Y)
    np.testing.assert_array_equal(fit.delta, 0.0)
    np.testing.assert_allclose(fit.delta, ref_fit(pairs, Y)[2], atol=1e-8)
    null = permutation_null(pairs, Y, n_perm=20)
    np.testing.assert_array_equal(null, 0.0)
    np.testing.assert_array_equal(permutation_pvalues(fit.delta, null), 1.0)


def test_constant_head_is_zero():
    pairs = random_pairs(12, 40, 1)
    Y = np.random.default_rng(1).normal(size=(2, pairs.n_pairs, 3))
    Y[..., 1] = 0.37
    fit = delta_r2(pairs, Y)
    assert fit.r2_base[1] == 0 and fit.r2_full[1] == 0 and fit.delta[1] == 0 and fit.sst[1] == 0
    assert np.all(permutation_null(pairs, Y, n_perm=10)[:, 1] == 0)


def test_input_validation():
    with pytest.raises(ValueError):
        PairSet(np.array([1, 2]), np.array([2, 0]))  # j > i
    with pytest.raises(ValueError):
        PairSet(np.array([1, 2]), np.array([-1, 0]))
    pairs = random_pairs(5, 8, 0)
    with pytest.raises(ValueError):
        delta_r2(pairs, np.zeros((2, 7, 1)))
    with pytest.raises(ValueError):
        delta_r2(pairs, np.full((8, 1), np.nan))


# --------------------------------------------------------------------------
# Properties of the measurement
# --------------------------------------------------------------------------
@HYP
@given(designs(), st.floats(0.01, 100), st.booleans())
def test_offset_only_signal_has_zero_delta(design, scale, per_prompt):
    """y = f(d) (optionally f_p(d), any function per prompt) -> ΔR² = 0."""
    pairs, P, H, seed = design
    rng = np.random.default_rng(seed)
    f = rng.normal(size=(P if per_prompt else 1, pairs.n_groups, H)) * scale + rng.normal() * 5 * scale
    f = np.where(rng.random(f.shape) < 0.2, np.round(f), f)  # include ties / repeated values
    Y = np.broadcast_to(f[:, pairs.group, :], (P, pairs.n_pairs, H))
    assert np.all(delta_r2(pairs, Y).delta <= 1e-10)


@HYP
@given(designs(), st.floats(0.01, 100))
def test_adding_function_of_d_leaves_i_contribution_unchanged(design, scale):
    """Adding any g(d) leaves ΔSSE = ΔR²·SST and SSE_base unchanged (ĩ ⟂ indicators);
    ΔR² itself is a share of SST, which g(d) inflates, so it can only shrink or stay."""
    pairs, P, H, seed = design
    rng = np.random.default_rng(seed)
    Y = rng.normal(size=(P, pairs.n_pairs, H)) + rng.normal(size=H) * pairs.i[None, :, None] / 10
    Y2 = Y + (rng.normal(size=(pairs.n_groups, H)) * scale)[pairs.group][None]
    a, b = delta_r2(pairs, Y), delta_r2(pairs, Y2)
    tol = 1e-9 * (a.sst + b.sst) + 1e-12
    assert np.all(np.abs(a.delta_sse - b.delta_sse) <= tol)
    assert np.all(np.abs((1 - a.r2_base) * a.sst - (1 - b.r2_base) * b.sst) <= tol)
    both = (a.sst > 0) & (b.sst > 0)
    np.testing.assert_allclose(b.delta[both] * b.sst[both], a.delta[both] * a.sst[both], atol=tol.max())


@HYP
@given(designs(max_prompts=2, max_heads=3), st.floats(-3, 3), st.floats(-3, 3), st.booleans())
def test_exact_linear_position_plus_offset_fits_perfectly(design, alpha, beta, use_j):
    """y = α·i (or α·j) + g(d) lies in the full model's span: R²_full = 1."""
    pairs, P, H, seed = design
    rng = np.random.default_rng(seed)
    pos = (pairs.j if use_j else pairs.i).astype(float)
    y = alpha * pos + (beta * rng.normal(size=pairs.n_groups))[pairs.group]
    fit = delta_r2(pairs, np.broadcast_to(y[None, :, None], (P, pairs.n_pairs, H)))
    if fit.sst[0] > 1e-6:
        np.testing.assert_allclose(fit.r2_full, 1.0, atol=1e-9)


@HYP
@given(designs(), st.floats(0.1, 100), st.floats(-50, 50))
def test_affine_invariance_and_pair_order(design, a, b):
    """R² values are invariant to y -> a·y + b and to reordering the pairs consistently."""
    pairs, P, H, seed = design
    rng = np.random.default_rng(seed)
    Y = rng.normal(size=(P, pairs.n_pairs, H)) + 0.1 * pairs.i[None, :, None]
    base = delta_r2(pairs, Y)
    np.testing.assert_allclose(delta_r2(pairs, a * Y + b).delta, base.delta, atol=1e-9)
    order = rng.permutation(pairs.n_pairs)
    shuffled = delta_r2(PairSet(pairs.i[order], pairs.j[order]), Y[:, order])
    np.testing.assert_allclose(shuffled.delta, base.delta, atol=1e-10)
    np.testing.assert_allclose(shuffled.r2_base, base.r2_base, atol=1e-10)


@settings(deadline=None, max_examples=25)
@given(st.integers(0, 2**31 - 1), st.floats(0.2, 2.0), st.integers(1, 2))
def test_position_term_is_detected(seed, beta, P):
    """noise + β·i: ΔR² > 0 and the permutation p-value is minimal and <= that of the noise alone."""
    pairs = random_pairs(32, 250, seed)
    rng = np.random.default_rng(seed)
    noise = rng.normal(size=(P, pairs.n_pairs, 1))
    sig = noise + beta * pairs.i[None, :, None]
    n_perm = 99
    d_sig, d_noise = delta_r2(pairs, sig).delta, delta_r2(pairs, noise).delta
    p_sig = permutation_pvalues(d_sig, permutation_null(pairs, sig, n_perm, seed=seed))
    p_noise = permutation_pvalues(d_noise, permutation_null(pairs, noise, n_perm, seed=seed))
    assert d_sig[0] > 0.05
    assert p_sig[0] == pytest.approx(1 / (n_perm + 1))
    assert p_sig[0] <= p_noise[0]


def test_position_term_strictly_smaller_pvalue():
    pairs = stratified_pairs(64, 300, seed=1)
    rng = np.random.default_rng(1)
    noise = rng.normal(size=(2, pairs.n_pairs, 1))
    sig = noise + 0.1 * pairs.i[None, :, None]
    p = [
        permutation_pvalues(delta_r2(pairs, y).delta, permutation_null(pairs, y, 199, seed=2))[0] for y in (sig, noise)
    ]
    assert p[0] == pytest.approx(1 / 200) and p[0] < p[1]


# --------------------------------------------------------------------------
# Permutation null
# --------------------------------------------------------------------------
@pytest.mark.parametrize("P,H", [(1, 3), (3, 2)])
def test_permutation_null_matches_reference(P, H):
    pairs = random_pairs(14, 50, P)
    rng = np.random.default_rng(P)
    Y = rng.normal(size=(P, pairs.n_pairs, H)) + 0.05 * pairs.i[None, :, None]
    perms = within_group_permutations(row_groups(pairs, P), 15, rng)
    np.testing.assert_allclose(permutation_null(pairs, Y, perms=perms), ref_null(pairs, Y, perms), atol=1e-8, rtol=0)


def test_permutation_null_identity_perm_gives_observed():
    pairs = random_pairs(10, 30, 0)
    Y = np.random.default_rng(0).normal(size=(2, pairs.n_pairs, 4))
    ident = np.arange(2 * pairs.n_pairs)[None]
    np.testing.assert_allclose(permutation_null(pairs, Y, perms=ident)[0], delta_r2(pairs, Y).delta, atol=1e-12)


def test_generated_permutations_are_within_group_and_deterministic():
    pairs = stratified_pairs(64, 300, seed=0)
    g = row_groups(pairs, 3)
    perms = within_group_permutations(g, 50, np.random.default_rng(4))
    assert np.all(np.sort(perms, axis=1) == np.arange(g.size))
    assert np.all(g[perms] == g)
    assert np.array_equal(perms, within_group_permutations(g, 50, np.random.default_rng(4)))
    assert not np.all(perms == np.arange(g.size))
    Y = np.random.default_rng(0).random((3, pairs.n_pairs, 2))
    np.testing.assert_array_equal(permutation_null(pairs, Y, 30, seed=9), permutation_null(pairs, Y, 30, seed=9))


@st.composite
def group_layouts(draw):
    """Row group labels in random order: groups of unequal sizes (1 to 7 rows), arbitrary (also negative) labels."""
    sizes = draw(st.lists(st.integers(1, 7), min_size=1, max_size=12))
    labels = draw(st.lists(st.integers(-50, 50), min_size=len(sizes), max_size=len(sizes), unique=True))
    groups = np.repeat(np.array(labels, dtype=np.int64), sizes)
    return groups[np.random.default_rng(draw(st.integers(0, 2**31 - 1))).permutation(groups.size)]


@HYP
@given(group_layouts(), st.integers(1, 6), st.integers(0, 2**31 - 1))
def test_block_generator_maps_every_row_into_its_own_group(groups, n_perm, seed):
    """Every generated row is a permutation of the rows that maps each row into its own group (int64 [n, rows]),
    singleton groups stay, the draws are reproducible, and the in-layout shuffle of any values is the gather of
    the generated permutations (what permutation_null relies on)."""
    perms = within_group_permutations(groups, n_perm, np.random.default_rng(seed))
    assert perms.dtype == np.int64 and perms.shape == (n_perm, groups.size)
    assert np.all(np.sort(perms, axis=1) == np.arange(groups.size))
    assert np.all(groups[perms] == groups)
    labels, counts = np.unique(groups, return_counts=True)
    single = np.isin(groups, labels[counts == 1])
    assert np.all(perms[:, single] == np.nonzero(single)[0])
    np.testing.assert_array_equal(perms, within_group_permutations(groups, n_perm, np.random.default_rng(seed)))
    lay = group_layout(groups)
    assert np.array_equal(np.sort(lay.layout), np.arange(groups.size))
    values = np.random.default_rng(seed).normal(size=groups.size)
    np.testing.assert_array_equal(
        shuffle_within_blocks(values[lay.layout], lay, n_perm, np.random.default_rng(seed)),
        values[perms[:, lay.layout]],
    )


@pytest.mark.parametrize("generator", [within_group_permutations, within_group_permutations_by_argsort])
def test_within_group_permutations_are_uniform(generator):
    """60,000 draws on groups of sizes 3, 3, 2 and 1 (two groups of one size share a block shuffle): the 3!·3!·2! =
    72 joint outcomes are equally likely (chi-square, fixed seed), so each group's permutation is uniform and the
    groups are independent. Observed p: 0.47 (block shuffle), 0.75 (argsort); the bound 1e-3 is far below both."""
    from scipy.stats import chisquare

    groups = np.array([7, 2, 7, 5, 2, 9, 7, 5, 2])  # sizes 3 (7), 3 (2), 2 (5), 1 (9), interleaved
    n = 60_000
    perms = generator(groups, n, np.random.default_rng(20240517))
    assert np.all(groups[perms] == groups)
    _, counts = np.unique(perms, axis=0, return_counts=True)
    assert counts.size == 72
    p = chisquare(counts).pvalue
    assert p > 1e-3, p


def test_seeded_null_draws_the_generators_permutations(monkeypatch):
    """permutation_null(seed) shuffles ĩ by exactly the draws of within_group_permutations(·, chunk, default_rng(
    seed)), chunk by chunk (the in-layout shuffle equals the generated permutation arrays); chunks of 7 here."""
    from harness.stats import nulls
    from harness.stats.nulls import _inverse_perms

    pairs = random_pairs(40, 300, 3)
    P, n_perm, chunk = 3, 50, 7
    Y = np.random.default_rng(3).normal(size=(P, pairs.n_pairs, 4)) + 0.02 * pairs.i[None, :, None]
    groups = row_groups(pairs, P)
    monkeypatch.setattr(nulls, "BLOCK_ELEMS", chunk * groups.size)
    rng = np.random.default_rng(11)
    idx = np.concatenate(
        [within_group_permutations(groups, min(chunk, n_perm - s), rng) for s in range(0, n_perm, chunk)]
    )
    np.testing.assert_allclose(
        permutation_null(pairs, Y, n_perm, seed=11),
        permutation_null(pairs, Y, perms=_inverse_perms(idx)),
        rtol=1e-12,
        atol=1e-15,
    )


def test_invalid_perms_rejected():
    pairs = random_pairs(8, 20, 0)
    Y = np.random.default_rng(0).normal(size=(1, pairs.n_pairs, 1))
    bad = np.random.default_rng(0).permutation(pairs.n_pairs)[None]  # mixes d-groups
    with pytest.raises(ValueError):
        permutation_null(pairs, Y, perms=bad)


def test_null_pvalues_roughly_uniform_under_h0():
    pairs = stratified_pairs(64, 350, seed=0)
    Y = np.random.default_rng(11).normal(size=(2, pairs.n_pairs, 300))
    p = permutation_pvalues(delta_r2(pairs, Y).delta, permutation_null(pairs, Y, 99, seed=3))
    assert 0.02 < np.mean(p <= 0.05) < 0.1
    assert 0.4 < np.mean(p) < 0.6


def test_pvalue_formula():
    null = np.array([[0.1, 0.0], [0.3, 0.0], [0.2, 0.0], [0.5, 0.0]])
    np.testing.assert_allclose(permutation_pvalues(np.array([0.25, 0.0]), null), [3 / 5, 5 / 5])
    np.testing.assert_allclose(permutation_pvalues(np.array([0.6, 0.0]), null)[0], 1 / 5)


# --------------------------------------------------------------------------
# Benjamini–Hochberg
# --------------------------------------------------------------------------
def test_bh_hand_example():
    p = np.array([0.01, 0.041, 0.03, 0.005, 0.2])  # thresholds (q=.05): .01 .02 .03 .04 .05
    np.testing.assert_array_equal(benjamini_hochberg(p, 0.05), [True, False, True, True, False])
    # step-up: the 1st and 2nd smallest fail their own thresholds but the 3rd passes
    p = np.array([0.5, 0.07, 0.03, 0.06])  # q=.1 thresholds .025 .05 .075 .1
    np.testing.assert_array_equal(benjamini_hochberg(p, 0.1), [False, True, True, True])
    np.testing.assert_array_equal(benjamini_hochberg(np.array([0.2, 0.9]), 0.05), [False, False])
    np.testing.assert_array_equal(benjamini_hochberg(np.array([0.01, np.nan]), 0.05), [True, False])
    assert benjamini_hochberg(np.array([])).shape == (0,)


@HYP
@given(st.lists(st.floats(0, 1), min_size=1, max_size=40), st.floats(0.001, 0.5))
def test_bh_matches_bruteforce(p, q):
    p = np.array(p)
    m = p.size
    k = max([r for r in range(1, m + 1) if np.sort(p)[r - 1] <= q * r / m], default=0)
    expect = p <= np.sort(p)[k - 1] if k else np.zeros(m, bool)
    got = benjamini_hochberg(p, q)
    assert got.sum() == k
    np.testing.assert_array_equal(got, expect)
    assert np.all(got[p <= q / m])  # contains the Bonferroni rejections


# --------------------------------------------------------------------------
# Bootstrap
# --------------------------------------------------------------------------
def test_bootstrap_all_ones_reproduces_point_estimate():
    pairs = stratified_pairs(64, 300, seed=2)
    Y = gather_pairs(causal_softmax_attention(64, 4, 3, seed=2), pairs)
    boot = bootstrap_delta_r2(pairs, Y, weights=np.ones((2, 4)))
    np.testing.assert_allclose(boot, np.broadcast_to(delta_r2(pairs, Y).delta, (2, 3)), atol=1e-12)


@HYP
@given(designs(max_prompts=4, max_heads=3), st.data())
def test_bootstrap_weights_equal_prompt_duplication(design, data):
    pairs, P, H, seed = design
    w = np.array(data.draw(st.lists(st.integers(0, 3), min_size=P, max_size=P).filter(lambda x: sum(x) > 0)))
    Y = np.random.default_rng(seed).normal(size=(P, pairs.n_pairs, H)) + 0.1 * pairs.i[None, :, None]
    boot = bootstrap_delta_r2(pairs, Y, weights=w[None])[0]
    np.testing.assert_allclose(boot, delta_r2(pairs, np.repeat(Y, w, axis=0)).delta, atol=1e-9)


def test_bootstrap_shape_determinism_and_ci():
    pairs = stratified_pairs(64, 300, seed=0)
    Y = gather_pairs(causal_softmax_attention(64, 6, 4, seed=1), pairs)
    b1 = bootstrap_delta_r2(pairs, Y, n_boot=200, seed=5)
    assert b1.shape == (200, 4)
    np.testing.assert_array_equal(b1, bootstrap_delta_r2(pairs, Y, n_boot=200, seed=5))
    w = bootstrap_weights(6, 200, seed=5)
    assert np.all(w.sum(axis=1) == 6)
    lo, hi = mean_ci(b1)
    point = delta_r2(pairs, Y).delta.mean()
    assert lo <= hi and lo - 1e-3 <= point <= hi + 1e-3
    assert mean_ci(np.array([[1.0, 3.0]] * 5)) == (2.0, 2.0)


# --------------------------------------------------------------------------
# Pair sampling and query bins
# --------------------------------------------------------------------------
def test_query_bins():
    np.testing.assert_array_equal(query_bins(512), [0, 8, 16, 32, 64, 128, 256, 512])
    np.testing.assert_array_equal(query_bins(128), [0, 8, 16, 32, 64, 128])
    np.testing.assert_array_equal(query_bins(64, first=1), [0, 1, 2, 4, 8, 16, 32, 64])
    for bad in (100, 0, 4, 96):
        with pytest.raises(ValueError, match="power of two"):
            query_bins(bad)


def test_stratified_pairs_counts_and_causality():
    pairs = stratified_pairs(512, 4000, seed=0)
    edges = query_bins(512)
    counts = np.histogram(pairs.i, edges)[0]
    # bins [0,8) [8,16) [16,32) hold 36, 100, 392 causal pairs (< share 571): taken whole, not redistributed;
    # the 4000 % 7 = 3 leftover pairs go to the last three bins
    np.testing.assert_array_equal(counts, [36, 100, 392, 571, 572, 572, 572])
    assert pairs.n_pairs == counts.sum()
    assert np.all((pairs.j >= 0) & (pairs.j <= pairs.i) & (pairs.i < 512))
    keys = pairs.i * 512 + pairs.j
    assert np.all(np.diff(keys) > 0)  # sorted by (i, j), no duplicates
    full = stratified_pairs(
        64, 7 * 1552, seed=0, first=1
    )  # share >= largest bin [32,64) (1552 pairs): all causal pairs
    assert full.n_pairs == 64 * 65 // 2


@given(st.sampled_from([64, 128, 512, 2048]), st.integers(7, 3000), st.integers(0, 10**6))
@settings(deadline=None, max_examples=30)
def test_stratified_pairs_property(L, n, seed):
    a, b = stratified_pairs(L, n, seed), stratified_pairs(L, n, seed)
    np.testing.assert_array_equal(a.i, b.i)
    np.testing.assert_array_equal(a.j, b.j)
    edges = query_bins(L)
    nb = edges.size - 1
    counts = np.histogram(a.i, edges)[0]
    available = np.array([(e1 * (e1 + 1) - e0 * (e0 + 1)) // 2 for e0, e1 in zip(edges[:-1], edges[1:])])
    shares = np.full(nb, n // nb)
    shares[nb - n % nb :] += n % nb > 0
    np.testing.assert_array_equal(counts, np.minimum(shares, available))
    assert np.all((a.j >= 0) & (a.j <= a.i)) and np.all(np.diff(a.i * L + a.j) > 0)


def test_stratified_pairs_seed_changes_sample():
    a, b = stratified_pairs(512, 2000, 0), stratified_pairs(512, 2000, 1)
    assert a.n_pairs == b.n_pairs and not np.array_equal(a.j, b.j)


# --------------------------------------------------------------------------
# Per-bin profile, shares, layer ratio
# --------------------------------------------------------------------------
def test_causal_mask_share_and_residual_stream_share():
    assert causal_mask_share(0.296, 0.114) == pytest.approx(1 - 0.114 / 0.296)
    assert residual_stream_share(0.296, 0.114) == pytest.approx(0.114 / 0.296)
    assert isinstance(causal_mask_share(0.2, 0.1), float)
    np.testing.assert_allclose(causal_mask_share(np.array([0.2, 0.0]), np.array([0.05, 0.1])), [0.75, np.nan])


def test_signflip_pvalues_exact_enumeration_and_degenerate_heads():
    """Exact p over all 2^(P-1) patterns; an exact null (y a function of d alone: every prompt carries the same
    rounding residue) gets p = 1, not the smallest p; a non-finite contribution gets NaN, never rejected."""
    from harness.capture.leakage_view import significance
    from harness.stats.leakage import prompt_stats
    from harness.stats.nulls import SIGNFLIP_EXACT_MAX, signflip_pvalues

    a = np.array([[1.0, 2.0], [2.0, -2.0], [3.0, 2.0], [4.0, -2.0]])  # P = 4: 8 patterns
    p = signflip_pvalues(a)
    assert p[0] == pytest.approx(1 / 8)  # only the identity reaches |1+2+3+4|
    assert p[1] == 1.0  # |Σ| = 0
    assert 2**15 <= SIGNFLIP_EXACT_MAX  # the default 16 prompts are enumerated exactly
    pairs = stratified_pairs(32, 300, 0)
    mu = np.exp(-pairs.offsets / 5.0)
    Y = np.stack([np.tile(mu, (16, 1)), np.random.default_rng(0).normal(size=(16, pairs.n_pairs))], axis=-1)
    sig = significance(prompt_stats(pairs, Y), pairs, Y, n_perm=50, seed=0)
    assert sig["p"][0] == 1.0 and not sig["significant"][0]
    bad = np.array([[1.0, np.nan], [2.0, 1.0]])
    assert np.isnan(signflip_pvalues(bad)[1]) and not benjamini_hochberg(signflip_pvalues(bad), 1.0)[1]
