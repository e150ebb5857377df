"""Planted paper values: the one decision rule, on intervals shaped like the bundled models', resolves a faithful
reproduction and never passes one 1.5x or 2x off.

Each kind of paper-valued figure is planted at the paper's value (or a multiple of it) on a synthetic run of prompts
and judged exactly as ``Figures.check_paper`` judges a paper model's figure: its expanded prompt-bootstrap 95% interval
(``harness.stats.intervals``, as the claim tests compute it) through ``PaperValue.decide`` with the catalogue's own
tolerance. Per prompt, a head-mean of ``HEADS`` heterogeneous heads (fixed per-head scales, log-sd 0.5) times a
per-prompt, per-head amplitude, log-normal with log-sd ``SPREAD``: 1.4 puts the 16-prompt interval's upper end about
+50% above the estimate (interquartile +39% to +58%), the middle of what the bundled models' intervals show (+36% to
+77%, ../shared/reviews/fidelity-3.md F1; at 1.6, +61%, a faithful plant at 16 prompts is not held in about 5% of
seeds, the percentile interval's undercoverage on so skewed a mean, and held in 89% at 512 prompts). Ratios and shares are planted as two such figures on the same prompts
(paired) and bootstrapped as the claim tests do, as a ratio of resampled means.

What is checked, over ``SEEDS`` seeds (issue 37's bar):
- a faithful plant is *not held* in at most 5% of seeds at 16 prompts and at the nightly's count, and *held* in at
  least 80% at the nightly's count (``NIGHTLY_PROMPTS``: the evidence for that count);
- a plant at 1.5x or 0.67x is held in at most 10% at the nightly's count;
- a plant at 2x or 0.5x is held in at most 1% at either count, and not held in at least 90% at the nightly's count.

The sinks (T1, T2) are point estimates (no interval: METHODS), and T5's peak and top-30 median are order statistics
over heads whose plant needs the head-level engine: neither is planted here.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from harness.spec.claims import PaperValue, claim
from harness.spec.decision import HELD, NOT_HELD
from harness.spec.models import LLAMA_3B, QWEN
from harness.stats import intervals

HEADS, SPREAD, SEEDS, N_BOOT = 4, 1.4, 200, 1000
DEFAULT_PROMPTS = 16
#: The prompt count at which a faithful reproduction at the bundled models' skew is resolved (held in >= 80% of
#: seeds for every kind below): README's nightly command uses it.
NIGHTLY_PROMPTS = 512


@dataclass(frozen=True)
class Kind:
    """A kind of paper-valued figure: where its paper value lives in the catalogue, and how a run measures it."""

    claim: str
    figure: str
    model: str
    form: str  # "mean", "ratio" (numerator over denominator) or "share" (1 - numerator / denominator)

    @property
    def paper(self) -> PaperValue:
        ref = claim(self.claim).paper_value(self.model, self.figure)
        assert ref is not None, self
        return ref


KINDS = {
    "whole-range mean": Kind("T6", "mean_delta_causal", LLAMA_3B, "mean"),
    "first-bin mean": Kind("T7", "first_bin_bidirectional", LLAMA_3B, "mean"),
    "T9c first bin": Kind("T9c", "first_bin:bi+replace-embedding", LLAMA_3B, "mean"),
    "small ratio": Kind("T6", "bidirectional_over_causal", QWEN, "ratio"),
    "mean r_l (small)": Kind("T8", "mean_layer_ratio", QWEN, "ratio"),
    "mean r_l": Kind("T8", "mean_layer_ratio", LLAMA_3B, "ratio"),
    "share": Kind("T7", "first_bin_causal_mask_share", LLAMA_3B, "share"),
}


def per_prompt(rng: np.random.Generator, n: int, spread: float) -> np.ndarray:
    """[n] per-prompt head means of heterogeneous heads with skewed amplitudes, population mean 1."""
    scales = np.exp(0.5 * rng.standard_normal(HEADS))
    scales /= scales.mean()
    amplitude = np.exp(spread * rng.standard_normal((n, HEADS)) - spread**2 / 2)
    return (scales * amplitude).mean(axis=1)


def measured(kind: Kind, value: float, n: int, seed: int) -> tuple[float, np.ndarray]:
    """One run of ``n`` prompts whose population figure is ``value``: (estimate, expanded 95% prompt-bootstrap CI)."""
    rng = np.random.default_rng(seed)
    weights = intervals.bootstrap_weights(n, N_BOOT, seed)
    if kind.form == "mean":
        x = value * per_prompt(rng, n, SPREAD)
        return float(x.mean()), intervals.percentile_ci(weights @ x / n, n=n)
    # two figures on the same prompts: the denominator (the causal one) less skewed, the prompts' effects shared
    denominator = per_prompt(rng, n, 0.3)
    ratio = value if kind.form == "ratio" else 1 - value
    numerator = ratio * denominator * per_prompt(rng, n, SPREAD / 2)
    estimate, boot = numerator.sum() / denominator.sum(), (weights @ numerator) / (weights @ denominator)
    if kind.form == "share":
        estimate, boot = 1 - estimate, 1 - boot
    return float(estimate), intervals.percentile_ci(boot, n=n)


def rates(kind: Kind, factor: float, n: int, seeds: int = SEEDS) -> dict[str, float]:
    """The share of seeds each verdict reads, for a plant at ``factor`` times the paper's value."""
    ref = kind.paper
    readings = [ref.decide(*measured(kind, factor * ref.value, n, seed), n=n).reading for seed in range(seeds)]
    return {r: readings.count(r) / seeds for r in (HELD, NOT_HELD, "inconclusive")}


def possible(kind: Kind, factor: float) -> bool:
    """A share cannot be planted at or beyond 1."""
    return kind.form != "share" or factor * kind.paper.value < 1


def test_the_plant_is_what_it_says_an_unbiased_run_with_the_bundled_models_skew():
    kind = KINDS["whole-range mean"]
    runs = [measured(kind, 1.0, DEFAULT_PROMPTS, seed) for seed in range(400)]
    assert np.mean([e for e, _ in runs]) == pytest.approx(1.0, rel=0.08)
    upper = np.median([ci[1] / e - 1 for e, ci in runs])
    assert 0.36 <= upper <= 0.77, upper  # the bundled models' range (fidelity-3 F1)
    for kind in KINDS.values():
        estimates = [measured(kind, kind.paper.value, 64, seed)[0] for seed in range(100)]
        assert np.mean(estimates) == pytest.approx(kind.paper.value, rel=0.1), kind


@pytest.mark.long
@pytest.mark.parametrize("name", list(KINDS))
def test_at_the_default_count_a_faithful_plant_is_never_not_held_and_one_twice_off_never_held(name):
    """Every push: the 16-prompt half of the bar (cheap); the nightly count's half is weekly, below."""
    kind = KINDS[name]
    assert rates(kind, 1.0, DEFAULT_PROMPTS)[NOT_HELD] <= 0.05
    for factor in (2.0, 0.5):
        if possible(kind, factor):
            assert rates(kind, factor, DEFAULT_PROMPTS)[HELD] <= 0.01, factor


@pytest.mark.slow  # 200 seeds of 512 prompts per kind and factor: 10 minutes of CPU, weekly
@pytest.mark.parametrize("name", list(KINDS))
def test_a_faithful_reproduction_is_never_not_held_and_is_held_at_the_nightlys_count(name):
    kind = KINDS[name]
    at_default, at_nightly = rates(kind, 1.0, DEFAULT_PROMPTS), rates(kind, 1.0, NIGHTLY_PROMPTS)
    assert at_default[NOT_HELD] <= 0.05 and at_nightly[NOT_HELD] <= 0.05, (at_default, at_nightly)
    assert at_nightly[HELD] >= 0.80, at_nightly


@pytest.mark.slow  # as above
@pytest.mark.parametrize("factor", [1.5, 1 / 1.5])
@pytest.mark.parametrize("name", list(KINDS))
def test_a_reproduction_a_half_off_is_rarely_held_at_the_nightlys_count(name, factor):
    kind = KINDS[name]
    if not possible(kind, factor):
        pytest.skip(f"{kind.figure} cannot be planted at {factor:.2f}x {kind.paper.value}")
    assert rates(kind, factor, NIGHTLY_PROMPTS)[HELD] <= 0.10


@pytest.mark.slow  # as above
@pytest.mark.parametrize("factor", [2.0, 0.5])
@pytest.mark.parametrize("name", list(KINDS))
def test_a_reproduction_twice_off_is_never_held_and_is_not_held_at_the_nightlys_count(name, factor):
    kind = KINDS[name]
    if not possible(kind, factor):
        pytest.skip(f"{kind.figure} cannot be planted at {factor:.2f}x {kind.paper.value}")
    at_default, at_nightly = rates(kind, factor, DEFAULT_PROMPTS), rates(kind, factor, NIGHTLY_PROMPTS)
    assert at_default[HELD] <= 0.01 and at_nightly[HELD] <= 0.01, (at_default, at_nightly)
    assert at_nightly[NOT_HELD] >= 0.90, at_nightly
