"""Tests of the length-scaling fits (harness/stats/scaling.py, claim T10) on synthetic curves."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from harness.stats.scaling import (
    MSE_FLOOR,
    compare_aic,
    fit_piecewise,
    fit_power_law,
    gaussian_aic,
    interior_breakpoint,
    piecewise_law,
    power_law,
)

HYP = settings(deadline=None, max_examples=40, suppress_health_check=[HealthCheck.too_slow])

#: Sixteen lengths, log-spaced (the paper: "sixteen lengths between [..] and [..] tokens").
L16 = np.unique(np.round(np.geomspace(32, 2048, 16)))


def _noisy(y, seed, sd=0.05):
    return y * np.exp(np.random.default_rng(seed).normal(0, sd, y.size))


def test_sixteen_lengths():
    assert L16.size == 16


def test_power_law_recovers_exact_parameters():
    fit = fit_power_law(L16, power_law(L16, 0.07, -0.45))
    assert fit.params["a"] == pytest.approx(0.07, rel=1e-10)
    assert fit.params["b"] == pytest.approx(-0.45, abs=1e-10)
    assert fit.k == 2 and fit.n == 16 and fit.rss < 1e-20
    assert fit.aic == pytest.approx(16 * np.log(MSE_FLOOR) + 4)  # exact fit hits the floor


def test_piecewise_recovers_exact_parameters_with_breakpoint_between_lengths():
    y = piecewise_law(L16, 0.02, -0.8, 300.0)
    fit = fit_piecewise(L16, y)
    assert not np.isin(300.0, L16)
    assert fit.params["c"] == pytest.approx(0.02, rel=1e-8)
    assert fit.params["b"] == pytest.approx(-0.8, abs=1e-8)
    assert fit.params["L0"] == pytest.approx(300.0, rel=1e-8)
    np.testing.assert_allclose(fit.prediction, y, rtol=1e-8)
    np.testing.assert_allclose(fit.predict(L16), fit.prediction)


@pytest.mark.parametrize("seed", range(5))
def test_piecewise_data_favours_piecewise_and_recovers_parameters(seed):
    res = compare_aic(L16, _noisy(piecewise_law(L16, 0.02, -0.8, 300.0), seed))
    assert res["delta_aic"] > 10 and res["preferred"] == "piecewise"
    p = res["piecewise"].params
    assert p["c"] == pytest.approx(0.02, rel=0.05)
    assert p["b"] == pytest.approx(-0.8, abs=0.15)
    assert 200 < p["L0"] < 450


def test_power_law_data_does_not_favour_piecewise():
    deltas = np.array([compare_aic(L16, _noisy(power_law(L16, 0.05, -0.5), s))["delta_aic"] for s in range(20)])
    assert np.all(deltas >= -2 - 1e-9)  # nesting: the breakpoint can sit at the first length
    assert np.median(deltas) <= 0 and np.all(deltas < 4)
    assert np.mean(deltas <= 0) >= 0.8
    fit = fit_power_law(L16, _noisy(power_law(L16, 0.05, -0.5), 0))
    assert fit.params["b"] == pytest.approx(-0.5, abs=0.05)


def test_continuous_breakpoint_is_the_exact_optimum():
    """The exact partition search matches a dense grid of breakpoints."""
    rng = np.random.default_rng(3)
    for _ in range(5):
        y = _noisy(piecewise_law(L16, 0.03, rng.uniform(-1.5, -0.2), rng.uniform(40, 1500)), rng.integers(1e6), 0.1)
        u, v = np.log(L16), np.log(y)
        x = np.maximum(u[None, :] - np.linspace(u.min(), u.max(), 20001)[:, None], 0)  # [T, n] hinge
        xc, vc = x - x.mean(1, keepdims=True), v - v.mean()
        sxx = (xc**2).sum(1)
        rss = (vc**2).sum() - np.divide((xc @ vc) ** 2, sxx, out=np.zeros_like(sxx), where=sxx > 0)
        assert fit_piecewise(L16, y).rss <= rss.min() + 1e-12


@HYP
@given(y=arrays(np.float64, 16, elements=st.floats(1e-4, 1.0)))
def test_piecewise_nests_the_power_law(y):
    res = compare_aic(L16, y)
    assert res["piecewise"].rss <= res["power"].rss * (1 + 1e-9) + 1e-15
    assert res["delta_aic"] >= -2 - 1e-6
    assert res["piecewise"].k == 3 and res["power"].k == 2


def test_aic_definitions():
    assert gaussian_aic(2.0, 16, 3) == pytest.approx(16 * np.log(2.0 / 16) + 6)
    fit = fit_power_law(L16, _noisy(power_law(L16, 1.0, -1.0), 1))
    assert fit.aicc == pytest.approx(fit.aic + 2 * 2 * 3 / 13)


def test_invalid_inputs():
    with pytest.raises(ValueError):
        fit_power_law(L16, -np.ones(16))
    with pytest.raises(ValueError):
        fit_piecewise([1.0, 2.0, 2.0], [1.0, 1.0, 1.0])
    with pytest.raises(ValueError):
        compare_aic(L16, np.ones(15))


def test_a_breakpoint_at_the_edge_of_the_grid_is_not_interior():
    """A convex log-log decay (steep, then flattening) drives the flat-then-decay hinge to the first length, where
    it is the power law itself: ΔAIC is then exactly −2 (the extra parameter), a constant, not a measurement."""
    L = np.array([16, 20, 25, 32, 40, 50, 64, 80, 101, 128, 161, 203, 256, 322, 406, 512], dtype=float)
    y = 0.02 * (L / 16) ** -1.2 + 0.006  # decays, then flattens
    fits = compare_aic(L, y)
    assert not interior_breakpoint(L, fits["piecewise"].params["L0"])
    assert fits["delta_aic"] == pytest.approx(-2.0, abs=1e-6)
    flat_then_decay = piecewise_law(L, 0.02, -1.0, 100.0)
    assert interior_breakpoint(L, fit_piecewise(L, flat_then_decay).params["L0"])
    assert not interior_breakpoint(L, float(np.exp(np.log(16.0)))) and not interior_breakpoint(L, 512.0)
