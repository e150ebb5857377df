"""Calibration of the leakage statistics in harness/stats/ on synthetic data (a test of the tests).

Every statistic here is computed per head, all heads at once, so the many synthetic data sets of one
check are the head axis H of a single Y [P, n_pairs, H]: hundreds of data sets cost one call.

Null model (no absolute-position effect; the mean depends on the offset d = i − j only), data set h:

    y[p, k, h] = μ_h(d_k) + sd_prompt·u[p, h] + sd_query·v[p, i_k, h] + sd_noise·s_k·e[p, k, h]

μ_h(d) = a_h·exp(−d/τ_h) with a random amplitude and decay per data set; u is a prompt effect, v a
per-(prompt, query) effect shared by every pair of one query in one prompt (the rows of one softmax row),
e iid noise (normal, Laplace or centred exponential), s_k an optional query-dependent noise scale
(heteroscedastic, still mean-only H0). A planted effect adds β·i_k/L.

Measured rates (the numbers in the docstrings) were taken on this file's own configurations and on larger
runs of the same generators (quoted with their number of data sets).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks.argsort_permutations import within_group_permutations_by_argsort
from harness.stats.intervals import bootstrap_weights, percentile_ci
from harness.stats.leakage import delta_r2, fit_from_stats, prompt_stats
from harness.stats.nulls import benjamini_hochberg, permutation_null, permutation_pvalues, signflip_pvalues
from harness.stats.pairs import PairSet, row_groups, stratified_pairs

ALPHA = 0.05
N_FLIP = 1000  # the claims' setting (Settings.n_perm); only used when 2^(P-1) > 65536, i.e. P = 24 here
CAL = settings(max_examples=5, deadline=None, derandomize=True, database=None)

#: (seq_len, requested pairs) -> the pair set (stratified_pairs keeps fewer when the first bins saturate)
DESIGNS = {(32, 400): stratified_pairs(32, 400, 0), (64, 600): stratified_pairs(64, 600, 1)}


def mc_se(rate: float, n: int) -> float:
    """Monte-Carlo standard error of a rate estimated from n independent data sets."""
    return float(np.sqrt(rate * (1 - rate) / n))


# --------------------------------------------------------------------------
# Synthetic data
# --------------------------------------------------------------------------
def noise_scale(pairs: PairSet, seq_len: int, hetero: float) -> np.ndarray:
    """Per-pair noise scale s_k = exp(−2·hetero·i_k/L) (hetero = 0: homoscedastic)."""
    return np.exp(-2.0 * hetero * pairs.i / seq_len)


def a_sd(pairs: PairSet, seq_len: int, sd_query: float, sd_noise: float, hetero: float = 0.0) -> float:
    """Standard deviation of a prompt's contribution a_p = Σ_k ĩ_k y_pk under the model (unit-variance e, v).

    μ(d) and the prompt effect drop out exactly (ĩ sums to zero in every d-group); the query effect enters
    through c_i = Σ_{k: i_k = i} ĩ_k, the noise through Σ_k ĩ_k² s_k².
    """
    c = np.bincount(pairs.i, weights=pairs.i_tilde, minlength=seq_len)
    s = noise_scale(pairs, seq_len, hetero)
    return float(np.sqrt(sd_noise**2 * np.sum((pairs.i_tilde * s) ** 2) + sd_query**2 * np.dot(c, c)))


def simulate(
    pairs: PairSet,
    seq_len: int,
    n_prompts: int,
    n_sets: int,
    rng: np.random.Generator,
    *,
    sd_prompt: float,
    sd_query: float,
    sd_noise: float,
    noise: str = "normal",
    hetero: float = 0.0,
    beta=0.0,
) -> np.ndarray:
    """Y [P, n_pairs, n_sets] from the model in the module docstring; beta (scalar or [n_sets]) plants β·i/L."""
    N = pairs.n_pairs
    amp = rng.uniform(-1.0, 1.0, n_sets)
    tau = rng.uniform(1.0, 10.0, n_sets)
    Y = amp[None, :] * np.exp(-pairs.offsets[:, None] / tau[None, :])  # μ_h(d) [N, H]
    Y = Y + np.multiply.outer(pairs.i / seq_len, np.broadcast_to(beta, (n_sets,)))
    Y = np.broadcast_to(Y, (n_prompts, N, n_sets)).copy()
    Y += sd_prompt * rng.standard_normal((n_prompts, 1, n_sets))
    Y += sd_query * rng.standard_normal((n_prompts, seq_len, n_sets))[:, pairs.i, :]
    if noise == "normal":
        e = rng.standard_normal((n_prompts, N, n_sets))
    elif noise == "laplace":
        e = rng.laplace(scale=1 / np.sqrt(2), size=(n_prompts, N, n_sets))
    elif noise == "skewed":
        e = rng.exponential(size=(n_prompts, N, n_sets)) - 1.0
    else:
        raise ValueError(noise)
    Y += sd_noise * noise_scale(pairs, seq_len, hetero)[None, :, None] * e
    return Y


def signflip_p(pairs: PairSet, Y: np.ndarray, seed: int) -> np.ndarray:
    """The claims' decision p-value: sign flips of the per-prompt contributions (leakage_view.significance)."""
    return signflip_pvalues(prompt_stats(pairs, Y).a, N_FLIP, seed)


def dataset_settings(n_prompts: list[int]):
    """Synthetic null designs: offset-only means plus prompt, (prompt, query) and noise effects of any size."""
    return st.fixed_dictionaries(
        {
            "design": st.sampled_from(sorted(DESIGNS)),
            "n_prompts": st.sampled_from(n_prompts),
            "sd_prompt": st.floats(0.0, 2.0),
            "sd_query": st.floats(0.0, 3.0),
            "sd_noise": st.floats(0.05, 2.0),
            "noise": st.sampled_from(["normal", "laplace", "skewed"]),
            "hetero": st.sampled_from([0.0, 1.0]),
            "seed": st.integers(0, 2**31 - 1),
        }
    )


null_settings = dataset_settings([8, 12, 16, 24])


def _draw(cfg: dict):
    L, _ = cfg["design"]
    kw = {k: cfg[k] for k in ("sd_prompt", "sd_query", "sd_noise", "noise", "hetero")}
    return DESIGNS[cfg["design"]], L, np.random.default_rng(cfg["seed"]), kw


# --------------------------------------------------------------------------
# 1. The prompt-level sign-flip test holds its level under H0
# --------------------------------------------------------------------------
@CAL
@given(null_settings)
def test_signflip_null_rejection_rate_within_alpha(cfg):
    """Under H0 the sign-flip test rejects at most α (+3 MC SE) of 400 null data sets.

    Under the model a_p = Σ_k ĩ_k y_pk has mean 0 whatever μ(d), the prompt effect and the within-prompt
    correlation, and prompts are independent; a_p is exactly symmetric for symmetric noise and nearly so
    (a sum over hundreds of pairs) for the skewed one, so the exact (P <= 16) or Monte-Carlo (P = 24)
    sign-flip test is valid. Observed over a grid of both designs × P ∈ {8, 12, 16, 24} × (sd_prompt,
    sd_query, sd_noise) ∈ {(0, 0, 1), (1, 1, 1), (2, 3, 0.1)} × normal/skewed noise, 400 data sets each:
    rates 0.0275–0.075, mean 0.048 (bound 0.0827). At P = 8 the exact test is discrete (128 patterns,
    p <= 0.05 means at most 6 of them, a true level of 6/128 = 0.047). This test's examples, over several
    versions of this file (derandomize hashes the source, so an edit redraws them): 0.035–0.0675.
    """
    pairs, L, rng, kw = _draw(cfg)
    n_sets = 400
    Y = simulate(pairs, L, cfg["n_prompts"], n_sets, rng, **kw)
    p = signflip_p(pairs, Y, cfg["seed"])
    assert p.shape == (n_sets,)
    assert np.all((p > 0) & (p <= 1))
    rate = float(np.mean(p <= ALPHA))
    assert rate <= ALPHA + 3 * mc_se(ALPHA, n_sets), (rate, cfg)


# --------------------------------------------------------------------------
# 2. ... and has power against a planted position effect
# --------------------------------------------------------------------------
#: Planted effect, fixed before measuring: E[a_p] / sd(a_p) = 1.5 per prompt, i.e. β = 1.5·L·sd(a_p)/Σĩ²
#: (E[a_p] = (β/L)·Σ_k ĩ_k i_k = (β/L)·Σĩ²). A one-sample t-test on a_p would then have power 0.951 at
#: P = 8 and >= 0.997 at P >= 12 (noncentral t, ncp 1.5·sqrt(P)).
STANDARDISED_EFFECT = 1.5


@CAL
@given(null_settings)
def test_signflip_power_against_planted_position_effect(cfg):
    """With β·i/L planted at a standardised per-prompt effect of 1.5 the test rejects >= 80% of 400 data sets.

    Observed (grid as in the null test, normal noise): 0.925–0.95 at P = 8, >= 0.995 at P = 12, 1.0 at
    P >= 16, in line with the t-test prediction (0.951 at P = 8); this test's examples over several
    versions of this file: 0.9175–0.945 at P = 8, 0.99–1.0 at P >= 12.
    """
    pairs, L, rng, kw = _draw(cfg)
    n_sets = 400
    beta = STANDARDISED_EFFECT * L * a_sd(pairs, L, cfg["sd_query"], cfg["sd_noise"], cfg["hetero"]) / pairs.i_tilde_sq
    Y = simulate(pairs, L, cfg["n_prompts"], n_sets, rng, beta=beta, **kw)
    p = signflip_p(pairs, Y, cfg["seed"])
    power = float(np.mean(p <= ALPHA))
    assert power >= 0.8, (power, cfg)


# --------------------------------------------------------------------------
# 3. The pooled within-offset permutation null fails on clustered data
# --------------------------------------------------------------------------
@pytest.mark.parametrize(
    "seq_len,n_pairs,sd_prompt,sd_query,sd_noise,n_sets,observed",
    [
        (32, 400, 0.5, 1.0, 1.0, 400, 0.27),  # 270 pairs, ~8 per query
        (128, 4000, 0.5, 3.0, 1.0, 200, 0.52),  # the suite's L = 128, n_pairs = 4000 (2128 kept), ~17 per query
    ],
)
def test_pooled_permutation_null_overrejects_on_clustered_data(
    seq_len, n_pairs, sd_prompt, sd_query, sd_noise, n_sets, observed
):
    """The paper's within-offset permutation (rows pooled over prompts) rejects far more than α of true nulls.

    It treats all prompts × pairs rows of one offset as exchangeable. But rows that share a prompt and a
    query share one softmax row (here the effect v[p, i]): they are correlated, and the correlation is
    aligned with the query position i, the very regressor tested. The observed Σ ĩ·y carries that
    within-cluster covariance (a variance inflation that grows with the pairs per query); permuting rows
    across queries and prompts destroys it, so the permutation null is too narrow and H0 is rejected too
    often. (A prompt effect alone pushes the other way: it cancels in the observed Σ ĩ·y but not in the
    permuted one.) Observed at P = 8, three seeds each: 0.265, 0.2625, 0.285 (first row, 400 data sets;
    0.26–0.27 at P = 16) and 0.57, 0.485, 0.49 (second row, 200 data sets; 0.48–0.50 at P = 16), the latter
    matching the ~0.52 an independent review measured on attention at L = 128; `observed` is their mean,
    checked to 4 MC SE. On this test's data the sign-flip test rejects 0.0375 and 0.055 (<= α + 3 SE), and
    the permutation null is calibrated when rows are iid (sd_prompt = sd_query = 0: 0.0475 and 0.06). Those
    rates were taken with the previous argsort generator; the block-shuffle generator (the same law, another
    random stream) gives 0.255 and 0.585 on this test's data, iid control 0.04 and 0.06.
    """
    pairs = stratified_pairs(seq_len, n_pairs, 0)
    P, n_perm = 8, 199
    rng = np.random.default_rng(seq_len)
    kw = dict(sd_prompt=sd_prompt, sd_query=sd_query, sd_noise=sd_noise)
    se = mc_se(ALPHA, n_sets)

    Y = simulate(pairs, seq_len, P, n_sets, rng, **kw)
    p_pooled = permutation_pvalues(delta_r2(pairs, Y).delta, permutation_null(pairs, Y, n_perm, seed=1))
    rate_pooled = float(np.mean(p_pooled <= ALPHA))
    rate_signflip = float(np.mean(signflip_p(pairs, Y, 1) <= ALPHA))
    assert rate_pooled > ALPHA + 5 * se, rate_pooled
    assert rate_pooled == pytest.approx(observed, abs=4 * mc_se(observed, n_sets))
    assert rate_signflip <= ALPHA + 3 * se, rate_signflip

    # control: the same null without clustering (iid rows) is calibrated for the pooled permutation
    iid = simulate(pairs, seq_len, P, n_sets, rng, sd_prompt=0.0, sd_query=0.0, sd_noise=sd_noise)
    p_iid = permutation_pvalues(delta_r2(pairs, iid).delta, permutation_null(pairs, iid, n_perm, seed=2))
    assert float(np.mean(p_iid <= ALPHA)) <= ALPHA + 3 * se


@pytest.mark.parametrize("design,n_prompts,noise,seed", [((32, 400), 8, "normal", 0), ((64, 600), 4, "skewed", 1)])
def test_permutation_pvalues_calibrated_under_exchangeable_null(design, n_prompts, noise, seed):
    """Rows exchangeable within offset groups (offset-only means, iid noise): the within-offset permutation
    p-values (the block-shuffle generator, n_perm = 199) of 600 data sets are uniform (KS) and reject α within
    3 binomial SE. Observed: KS p 0.17 and 0.12, rejection rates 0.047 and 0.050 (band 0.023–0.077)."""
    from scipy.stats import kstest

    pairs, L = DESIGNS[design], design[0]
    n_sets = 600
    Y = simulate(
        pairs, L, n_prompts, n_sets, np.random.default_rng(seed), sd_prompt=0.0, sd_query=0.0, sd_noise=1.0, noise=noise
    )
    p = permutation_pvalues(delta_r2(pairs, Y).delta, permutation_null(pairs, Y, 199, seed=seed))
    assert kstest(p, "uniform").pvalue > 1e-3
    assert abs(float(np.mean(p <= ALPHA)) - ALPHA) <= 3 * mc_se(ALPHA, n_sets), float(np.mean(p <= ALPHA))


def test_block_shuffle_null_matches_argsort_null():
    """On the same data the null ΔR² of the block-shuffle generator and of the previous argsort generator agree
    within Monte-Carlo error: for 8 data sets (one with a planted position effect) and q = 0.5, 0.9, 0.99, the
    share of the argsort null at or below the block null's q-quantile is q within 4 SE (sqrt(2 q (1 − q) / n),
    two independent samples of n = 4000), and a two-sample KS test does not separate them (p > 1e-3 / 8).
    Observed: largest deviation 2.4 SE, smallest KS p 0.34."""
    from scipy.stats import ks_2samp

    pairs, L, P, n = DESIGNS[(32, 400)], 32, 4, 4000
    Y = simulate(
        pairs,
        L,
        P,
        8,
        np.random.default_rng(5),
        sd_prompt=0.5,
        sd_query=0.5,
        sd_noise=1.0,
        beta=np.r_[np.zeros(7), 0.3],
    )
    block = permutation_null(pairs, Y, n, seed=5)
    old = permutation_null(
        pairs, Y, perms=within_group_permutations_by_argsort(row_groups(pairs, P), n, np.random.default_rng(6))
    )
    for h in range(Y.shape[-1]):
        for q in (0.5, 0.9, 0.99):
            share = float(np.mean(old[:, h] <= np.quantile(block[:, h], q)))
            assert abs(share - q) <= 4 * np.sqrt(2 * q * (1 - q) / n), (h, q, share)
        assert ks_2samp(block[:, h], old[:, h]).pvalue > 1e-3 / Y.shape[-1], h


# --------------------------------------------------------------------------
# 4. Bootstrap interval coverage (the claims' expanded percentile interval)
# --------------------------------------------------------------------------
N_BOOT = 1000  # the claims' setting (Settings.n_boot)


def _values(family: str, n: int, n_sets: int, mean: float, sd: float, rng: np.random.Generator) -> np.ndarray:
    """Per-prompt values x [n, n_sets] from a symmetric family with the given mean and standard deviation."""
    if family == "normal":
        z = rng.standard_normal((n, n_sets))
    elif family == "uniform":
        z = rng.uniform(-np.sqrt(3), np.sqrt(3), (n, n_sets))
    elif family == "laplace":
        z = rng.laplace(scale=1 / np.sqrt(2), size=(n, n_sets))
    else:
        raise ValueError(family)
    return mean + sd * z


def _coverage(ci: np.ndarray, truth) -> float:
    return float(np.mean((ci[..., 0] <= truth) & (truth <= ci[..., 1])))


@CAL
@given(
    st.sampled_from([16, 32]),
    st.sampled_from(["normal", "uniform"]),
    st.floats(-5, 5),
    st.floats(0.1, 10),
    st.integers(0, 2**31 - 1),
)
def test_expanded_percentile_interval_covers_the_mean(n, family, mean, sd, seed):
    """The claims' interval (percentile_ci(rows, n=n) over bootstrap_weights rows) covers the mean >= 95% − 3 SE.

    1000 data sets of n per-prompt values each, the statistic the (weighted) mean, rows = W @ x / n
    (n_boot = 1000 as in the claims). The interval is location-scale equivariant, so mean and sd only
    exercise the arithmetic. Coverage on 20 000 data sets (MC SE 0.0015, bound 0.9455 at that precision):
    n = 16: normal 0.948, uniform 0.954; n = 32: 0.948, 0.950, so the property holds for these light-tailed
    families at any precision. Heavier tails fall short (test_expanded_interval_covers_laplace_mean).
    This test's examples over several versions of this file: 0.940–0.954 (plain interval 0.912–0.947).
    """
    n_sets = 1000
    rng = np.random.default_rng(seed)
    x = _values(family, n, n_sets, mean, sd, rng)
    rows = bootstrap_weights(n, N_BOOT, seed) @ x / n
    cov = _coverage(percentile_ci(rows, n=n), mean)
    assert cov >= 0.95 - 3 * mc_se(0.95, n_sets), (cov, n, family)


def test_plain_percentile_interval_undercovers_at_16_prompts():
    """The plain percentile interval covers a mean of 16 normal values only ~92% of the time.

    It is narrower than a t-interval by sqrt((n−1)/n) and uses normal quantiles; the expanded interval
    (Hesterberg 2015, leakage.expanded_tail) corrects both, which is why the claims use it. On these 4000
    data sets (fixed seed): plain 0.922, expanded 0.948 (20 000 data sets: 0.920 and 0.948).
    """
    n, n_sets = 16, 4000
    rng = np.random.default_rng(2015)
    x = _values("normal", n, n_sets, 0.3, 2.0, rng)
    rows = bootstrap_weights(n, N_BOOT, 7) @ x / n
    plain, expanded = _coverage(percentile_ci(rows), 0.3), _coverage(percentile_ci(rows, n=n), 0.3)
    assert plain < 0.935, plain
    assert expanded - plain > 0.015, (plain, expanded)  # the same data sets: the difference is nearly exact
    assert expanded >= 0.95 - 3 * mc_se(0.95, n_sets), expanded


@pytest.mark.xfail(
    strict=True,
    reason=(
        "the expanded percentile interval under-covers the mean of heavy-tailed (Laplace) values: 0.938–0.942 at "
        "n = 16 on 20 000 data sets (MC SE 0.0015), against a bound of 0.9455"
    ),
)
def test_expanded_interval_covers_laplace_mean():
    """As test_expanded_percentile_interval_covers_the_mean, Laplace values, n = 16, at high MC precision.

    Measured coverage on 20 000 data sets (seeds 0, 1, 2): 0.938, 0.942, 0.940; at n = 32: 0.9405; t3 values
    0.941 (n = 16). The plain interval gives 0.912 at n = 16, a t-interval on the same kind of data 0.956.
    The expansion is a normal-theory correction (sqrt(n/(n−1)) and t quantiles) and leaves the interval about
    one point short of 95% for heavy tails. Known limitation (strict xfail).
    """
    n, n_sets = 16, 20_000
    x = _values("laplace", n, n_sets, 0.0, 1.0, np.random.default_rng(0))
    rows = bootstrap_weights(n, N_BOOT, 0) @ x / n
    cov = _coverage(percentile_ci(rows, n=n), 0.0)
    assert cov >= 0.95 - 3 * mc_se(0.95, n_sets), cov


@pytest.mark.xfail(
    strict=True,
    reason=(
        "head-mean ΔR² over many independent heads: the finite-prompt bias of ΔR² (a ratio, O(1/P)) does not "
        "shrink with the number of heads while the interval does; measured coverage 0.42–0.52 for 32-head "
        "means at P = 16, sd_prompt = 1 (0.94 for a single head)"
    ),
)
def test_expanded_interval_covers_head_mean_delta_r2():
    """Coverage of the population head-mean ΔR² by the claims' interval on fit_from_stats bootstrap rows.

    Population value of a head for this fixed pair set (the limit P -> ∞):
        θ = (β/L)² Σĩ² / (Σ_k (m_k − m̄)² + N (sd_prompt² + sd_query² + sd_noise²)),  m_k = μ(d_k) + β i_k/L.
    Planted effect as in the power test but standardised 3.0 per prompt, P = 16, 1024 heads in 32 groups of
    32 (this test: 0.44). Measured on 4 × 2048 heads: one head 0.938; 8-head means 0.82; 32-head means 0.47
    (0.42–0.52). The estimate's relative bias is ~2% (SST loses the between-prompt degree of freedom, about
    sd_prompt²/(P·Var y); E[ΔSSE] adds the null floor Var(a_p)/Σĩ², a relative 1/(P·effect²)): small against
    one head's sampling error, but a mean over independent heads narrows the interval by sqrt(#heads) and
    leaves the bias. With sd_prompt = 0 the 32-head coverage is 0.93 (effect 3.0) and 0.74 (effect 1.0); with
    sd_prompt = 0.5, 0.83 and 0.68. Real heads share prompts and their errors correlate, which slows the
    narrowing: independent heads are the unfavourable extreme. Known limitation (strict xfail).
    """
    pairs = DESIGNS[(32, 400)]
    L, P, H, G = 32, 16, 1024, 32
    sd_prompt, sd_query, sd_noise = 1.0, 1.0, 1.0
    rng = np.random.default_rng(3)
    beta = 3.0 * L * a_sd(pairs, L, sd_query, sd_noise) / pairs.i_tilde_sq
    Y = simulate(pairs, L, P, H, rng, sd_prompt=sd_prompt, sd_query=sd_query, sd_noise=sd_noise, beta=beta)
    # recover each head's mean function m_k from the noiseless part (P -> ∞ population value)
    m = simulate(pairs, L, 1, H, np.random.default_rng(3), sd_prompt=0.0, sd_query=0.0, sd_noise=0.0, beta=beta)[0]
    theta = (
        (beta / L) ** 2
        * pairs.i_tilde_sq
        / (((m - m.mean(axis=0)) ** 2).sum(axis=0) + pairs.n_pairs * (sd_prompt**2 + sd_query**2 + sd_noise**2))
    )
    boot = fit_from_stats(prompt_stats(pairs, Y), bootstrap_weights(P, N_BOOT, 3)).delta  # [n_boot, H]
    head_mean_rows = boot.reshape(N_BOOT, H // G, G).mean(axis=-1)
    cov = _coverage(percentile_ci(head_mean_rows, n=P), theta.reshape(H // G, G).mean(axis=-1))
    assert cov >= 0.95 - 3 * mc_se(0.95, H // G), cov


# --------------------------------------------------------------------------
# 5. Benjamini–Hochberg on sign-flip p-values controls the FDR
# --------------------------------------------------------------------------
@settings(max_examples=3, deadline=None, derandomize=True, database=None)
@given(dataset_settings([12, 16]))
def test_bh_on_signflip_pvalues_controls_fdr(cfg):
    """100 families of 20 heads, 4 with a planted position effect: mean false discovery proportion <= q + 3 SE.

    BH with independent p-values has FDR = q·m0/m = 0.04 (less with discrete p-values). The non-null
    heads carry the power test's standardised effect 1.5. Observed over this test's examples (several
    versions of this file): mean FDP 0.029–0.056 (MC SE 0.007–0.009), 3.8–4.0 of the 4 true effects found
    per family on average.
    """
    pairs, L, rng, kw = _draw(cfg)
    q, m, m1, R = 0.05, 20, 4, 100
    beta = np.zeros((R, m))
    beta[:, :m1] = (
        STANDARDISED_EFFECT * L * a_sd(pairs, L, cfg["sd_query"], cfg["sd_noise"], cfg["hetero"]) / pairs.i_tilde_sq
    )
    Y = simulate(pairs, L, cfg["n_prompts"], R * m, rng, beta=beta.ravel(), **kw)
    p = signflip_p(pairs, Y, cfg["seed"]).reshape(R, m)
    reject = np.stack([benjamini_hochberg(p[r], q) for r in range(R)])
    false = reject[:, m1:].sum(axis=1)
    fdp = false / np.maximum(reject.sum(axis=1), 1)
    se = fdp.std(ddof=1) / np.sqrt(R)
    assert fdp.mean() <= q + 3 * se, (fdp.mean(), se, cfg)
    assert reject[:, :m1].sum() > 0
