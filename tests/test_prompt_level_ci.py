"""Prompt-level intervals of T11 (nested prompt × draw bootstrap), T12 (paired accuracy change, norm removed) and T13 (the
scale ladder's paired CIs): coverage at the nominal rate on synthetic clustered data where the prompt is the unit,
and T13's pure check function on hand-made ladders.

Every synthetic data set carries a prompt effect shared by all conditions of that prompt (the clustering the
prompt-level bootstrap must respect: a pooled or per-condition interval would get it wrong), and the statistics
are ratios of prompt sums, as the head-mean ΔR² is. Many data sets are one array axis, so a coverage check is a
handful of vectorised calls (the whole file runs in a few seconds).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.stats.ablation_effects import (
    mcnemar_exact_p,
    norm_removed_boot,
    paired_change_interval,
    random_minus_targeted,
    reduction,
)
from harness.stats.intervals import bootstrap_means, bootstrap_weights, percentile_ci
from harness.stats.scaling import composition_checks, composition_intervals

CAL = settings(max_examples=4, deadline=None, derandomize=True, database=None)
N_SETS = 400  # data sets per coverage check
N_BOOT = 1000  # the claims' setting


def mc_se(rate: float, n: int) -> float:
    return float(np.sqrt(rate * (1 - rate) / n))


def weighted_mean(w: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Resampled ratio-of-sums means: w [B, P], x [..., P, S] -> [..., B, S]."""
    return np.einsum("bp,...ps->...bs", w, x) / w.sum(axis=1)[:, None]


# ---- T11: mean random reduction − |targeted reduction| ----------------------------------------------------


def t11_data(rng, n_prompts: int, draws: int, sd_prompt: float, sd_draw: float, sd_noise: float):
    """Per-prompt contributions [P, S] of the base, a targeted ablation and D random draws [D, P, S] for S data
    sets: base μ(1 + u_p) + e; an ablation with true reduction ρ scales the prompt's contribution by (1 − ρ) and
    adds its own noise. The random draws' reductions are r + δ_d (δ_d ~ N(0, sd_draw), a random factor); the
    target is r − |t|."""
    mu, r, t = 1.0, 0.17, 0.05
    u = sd_prompt * rng.standard_normal((n_prompts, N_SETS))

    def condition(rho, shape=()):
        e = sd_noise * rng.standard_normal((*shape, n_prompts, N_SETS))
        return mu * (1 - rho) * (1 + u) + e

    delta = sd_draw * rng.standard_normal((draws, 1, N_SETS))
    return condition(0.0), condition(t), condition(r + delta, (draws,)), r - abs(t)


@CAL
@given(
    n_prompts=st.sampled_from([12, 16, 32]),
    sd_prompt=st.floats(0.05, 0.5),
    sd_draw=st.floats(0.0, 0.02),
    sd_noise=st.floats(0.02, 0.2),
    seed=st.integers(0, 2**31 - 1),
)
def test_t11_nested_bootstrap_covers_the_margin(n_prompts, sd_prompt, sd_draw, sd_noise, seed):
    """The 95% CI of (mean random reduction − |targeted reduction|), prompts resampled and the 10 draws
    resampled inside each prompt resample, covers the true margin in at least 95% − 3 MC SE (and at most 99%)
    of 400 data sets. Measured on a grid of these ranges (P 12/16/32, 3 seeds each): 0.935–0.985, conservative
    where the prompt effect is large (base and ablations share it, so much of it cancels in the reductions).
    A limit, stated rather than tested: where the spread of the draws dominates (sd_draw 0.05 against sd_noise
    0.02) coverage is 0.925–0.97 even with the √(D/(D−1)) widening, a bootstrap over only 10 draws; on the
    bundled models the per-draw reductions spread by 0.02–0.05, so both regimes are plausible there."""
    rng = np.random.default_rng(seed)
    base, targ, rand, truth = t11_data(rng, n_prompts, 10, sd_prompt, sd_draw, sd_noise)
    w = bootstrap_weights(n_prompts, N_BOOT, seed)
    _, margin = random_minus_targeted(
        weighted_mean(w, base), {"t": weighted_mean(w, targ)}, weighted_mean(w, rand), seed=seed
    )
    ci = percentile_ci(margin["t"], n=n_prompts)  # [N_SETS, 2]
    rate = float(np.mean((ci[:, 0] <= truth) & (truth <= ci[:, 1])))
    assert 0.95 - 3 * mc_se(0.95, N_SETS) <= rate <= 0.99, rate


def test_t11_point_estimate_and_draw_resampling():
    """The point estimate averages the draws as they are; the nested resample only redraws them (a constant
    draw set is unchanged by it); shapes and the sign convention (> 0: the targeted effect is the smaller)."""
    base, rand = np.array([0.02]), np.array([0.017, 0.0165, 0.0175])
    mean, margin = random_minus_targeted(base, {"a": 0.0195, "b": 0.0215}, rand)
    assert (
        mean == pytest.approx([0.15])
        and margin["a"] == pytest.approx([0.125])
        and margin["b"] == pytest.approx([0.075])
    )
    rows = np.full((5, 4), 0.02)
    same = np.full((3, 5, 4), 0.017)
    m, _ = random_minus_targeted(rows, {}, same, seed=1)
    assert m.shape == (5, 4) and np.allclose(m, reduction(0.02, 0.017))
    with pytest.raises(ValueError):
        random_minus_targeted(rows, {}, np.ones((3, 4)))


# ---- T12: the paired accuracy difference ---------------------------------------------------------------------


@CAL
@given(
    n_prompts=st.sampled_from([64, 128]),
    difficulty=st.floats(0.5, 2.0),
    drop=st.floats(0.0, 0.5),
    noise=st.sampled_from([0.5, 0.1]),
    level=st.sampled_from([0.95, 1 - 0.05 / 3]),
    seed=st.integers(0, 2**31 - 1),
)
def test_t12_paired_interval_covers_the_accuracy_change(n_prompts, difficulty, drop, noise, level, seed):
    """Per prompt, correctness before and after shares the prompt's difficulty z_p (the clustering): correct =
    1[a + z_p + e > 0], after with a lowered by ``drop``; a small ``noise`` makes the change one-way (a handful of
    discordant prompts, all lost), where inverting McNemar's exact test covers the change about half the time.
    Newcombe's interval covers the true change P(after) − P(before) within 5 points of its level, less 3 MC SE of
    400 data sets (measured on a grid of these ranges, 2000 sets each: 0.94–1.0 at 95%, 0.97–1.0 at 98.3%, but for
    the one-way case at 64 prompts, difficulty 2, drop 0.2: 0.90 and 0.92, its known weak spot)."""
    from scipy.stats import norm

    rng = np.random.default_rng(seed)
    a = 1.0
    z = difficulty * rng.standard_normal((N_SETS, n_prompts))
    before = a + z + noise * rng.standard_normal(z.shape) > 0
    after = a - drop + z + noise * rng.standard_normal(z.shape) > 0
    s = np.hypot(difficulty, noise)
    truth = norm.cdf((a - drop) / s) - norm.cdf(a / s)
    est = np.array([paired_change_interval(b, f, level) for b, f in zip(before, after)])
    hit = (est[:, 1] <= truth) & (truth <= est[:, 2])
    assert hit.mean() >= level - 0.05 - 3 * mc_se(0.9, N_SETS), hit.mean()


def test_t12_paired_interval_and_mcnemar_on_hand_counts():
    same = np.array([True, False, True, True] * 16)
    change, lo, hi = paired_change_interval(same, same)
    assert change == 0.0 and lo < 0 < hi and hi - lo < 0.12  # no prompt changed: a narrow interval around 0
    assert mcnemar_exact_p(same, same) == 1.0
    five_lost = same.copy()
    five_lost[np.flatnonzero(same)[:5]] = False  # 5 of 64 prompts lost, none gained
    change, lo, hi = paired_change_interval(same, five_lost, 1 - 0.05 / 3)
    assert change == pytest.approx(-5 / 64) and -0.2 < lo < -5 / 64 < hi < 0.02
    assert mcnemar_exact_p(same, five_lost) == pytest.approx(1 / 32)  # 0.5 ** 5
    with pytest.raises(ValueError):
        paired_change_interval(same, same[:-1])


def test_t12_norm_removed_rows_are_the_point_estimate_at_unit_weights():
    from harness.stats.directions import dominant_direction, fraction_norm_removed

    rng = np.random.default_rng(0)
    Y = rng.standard_normal((32, 8)) + np.r_[3.0, np.zeros(7)]
    d = dominant_direction(Y)
    rows = norm_removed_boot(Y, d, np.vstack([np.ones(32), bootstrap_weights(32, 200, 1)]))
    assert rows[0] == pytest.approx(fraction_norm_removed(Y, d))
    assert np.all((rows >= 0) & (rows <= 1)) and rows[1:].std() > 0


def test_bootstrap_means_are_paired_across_calls():
    rng = np.random.default_rng(0)
    x, y = rng.random((16, 3)), rng.random(16)
    mx, my = bootstrap_means(x, 300, seed=4), bootstrap_means(y, 300, seed=4)
    w = bootstrap_weights(16, 300, 4)
    assert mx.shape == (300, 3) and np.allclose(my, w @ y / 16) and np.allclose(mx, w @ x / 16)


# ---- T13: the ladder's paired CIs -----------------------------------------------------------------------------


def ladder_rows(rng, n_prompts: int, mean_base, share, sd_prompt: float, sd_noise: float):
    """Per-prompt contributions [sizes, P] of the causal and bidirectional head-mean ΔR² of one ladder: a prompt
    effect shared by every size and both conditions (the sizes read the same prompts)."""
    u = sd_prompt * rng.standard_normal(n_prompts)
    mb, sh = np.asarray(mean_base)[:, None], np.asarray(share)[:, None]
    base = mb * (1 + u) + sd_noise * mb * rng.standard_normal((len(mb), n_prompts))
    bi = mb * sh * (1 + u) + sd_noise * mb * sh * rng.standard_normal((len(mb), n_prompts))
    return base, bi


@CAL
@given(
    n_prompts=st.sampled_from([12, 16, 32]),
    sd_prompt=st.floats(0.0, 0.4),
    sd_noise=st.floats(0.05, 0.3),
    seed=st.integers(0, 2**31 - 1),
)
def test_t13_intervals_cover_rise_and_spread(n_prompts, sd_prompt, sd_noise, seed):
    """On ladders with the paper's Table 11 values (0.0121/0.0143/0.0135; shares 0.18/0.35/0.36): the rise's 95%
    CI covers the true rise, and the spread's CI upper end (the equivalence bound) lies above the true spread, at
    the nominal rates ± 3 MC SE over 200 ladders (measured on a grid, P 12/16/32: rise 0.925–0.96, upper end 0.98–1.0)."""
    rng = np.random.default_rng(seed)
    mean_base, share = np.array([0.0121, 0.0143, 0.0135]), np.array([0.18, 0.35, 0.36])
    true_spread = np.abs(mean_base / mean_base.mean() - 1).max()
    w = bootstrap_weights(n_prompts, N_BOOT, seed)
    n, rise_hit, spread_hit = 200, 0, 0
    for _ in range(n):
        base, bi = ladder_rows(rng, n_prompts, mean_base, share, sd_prompt, sd_noise)
        rows = (w @ base.T / w.sum(1)[:, None]).T, (w @ bi.T / w.sum(1)[:, None]).T
        _, st_ = composition_intervals(base.mean(1), bi.mean(1), *rows, n=n_prompts)
        lo, hi = st_["rise"][1]
        rise_hit += lo <= share[1] - share[0] <= hi
        spread_hit += st_["spread"][1][1] >= true_spread
    assert abs(rise_hit / n - 0.95) <= 3 * mc_se(0.95, n), rise_hit / n
    assert spread_hit / n >= 0.975 - 3 * mc_se(0.975, n), spread_hit / n


def check_names(base, bi, rows=None, n=16, reading="not held"):
    _, checks = composition_checks(base, bi, 0.25, *(rows or (None, None)), n=n)
    return [c for c, d, _ in checks if d.reading == reading]


def test_t13_checks_on_synthetic_ladders():
    """The pure check function: the paper's own ladder holds; each failure names its criterion; a noisy ladder whose
    point estimates pass is not held on its CIs (equivalence and direction judged on the interval, not the point)."""
    rng = np.random.default_rng(0)
    paper_base, paper_bi = [0.0121, 0.0143, 0.0135], [0.0022, 0.0051, 0.0048]
    assert check_names(paper_base, paper_bi) == []
    assert check_names([0.01, 0.02, 0.012], [0.002, 0.01, 0.0066]) == ["constant"]
    assert check_names([0.012, 0.013, 0.0125], [0.006, 0.0052, 0.0056]) == ["rises", "saturates"]
    assert check_names([0.012, 0.013, 0.0125], [0.0024, 0.0052, 0.0113]) == ["saturates"]
    assert check_names([0.012, 0.013], [0.0024, 0.0065]) == []  # two sizes: no saturation check
    # tight prompt-level rows: the paper's ladder holds on its CIs too
    w = bootstrap_weights(16, N_BOOT, 0)
    base, bi = ladder_rows(rng, 16, paper_base, np.divide(paper_bi, paper_base), 0.05, 0.05)
    rows = (w @ base.T / w.sum(1)[:, None]).T, (w @ bi.T / w.sum(1)[:, None]).T
    assert check_names(base.mean(1), bi.mean(1), rows) == []
    assert check_names(base.mean(1), bi.mean(1), rows, reading="held") == ["constant", "rises", "saturates"]
    # noisy rows (a fresh draw, sd_noise 0.5): the point estimates pass every check, the CIs straddle each threshold
    base, bi = ladder_rows(np.random.default_rng(0), 16, paper_base, np.divide(paper_bi, paper_base), 0.0, 0.5)
    rows = (w @ base.T / w.sum(1)[:, None]).T, (w @ bi.T / w.sum(1)[:, None]).T
    assert check_names(base.mean(1), bi.mean(1)) == []
    assert check_names(base.mean(1), bi.mean(1), rows, reading="inconclusive") == ["constant", "rises", "saturates"]
