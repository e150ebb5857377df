"""Planted paper values at the real runs' skew: the one decision rule resolves a faithful reproduction and never passes
one 1.5x or 2x off, kind by kind.

Each kind of paper-valued figure is planted at the paper's value, and at 1.5x, 0.67x, 2x and 0.5x of it, on synthetic
runs of prompts (``tests/planted.py``, vectorised over seeds) and judged as ``Figures.check_paper`` judges a paper
model's figure: its expanded prompt-bootstrap 95% interval (the claim tests' own) through the one rule's equivalence
with the catalogue's tolerance. The skews are the bundled runs' (``reports/example*/results.json``: the median
16-prompt upper arm, the CI's upper end over the estimate): means at +48% to +77% (the first-bin and bidirectional
means: SmolLM2's first-bin bidirectional +76%, the 1.5B's bidirectional +73%), small ratios, r_l and the causal-mask
share's ratio at +35% (SmolLM2), +55% (Qwen-0.5B) and +77% (the 1.5B), a large r_l at +10% (Gemma) and +37%
(SmolLM2), T5's peak and top-30 median at +10% and +8% (re-ranked over 48 heads in every resample, as T5 does), T2's
sinks at +5%. Gemma's T9c embedding swap, +115%, is measured beside them (``STRESS``), never resolved.

The bars (issue 37's), over ``SEEDS`` seeds:
- **safety**, every kind at every skew: a faithful plant not held in at most 5% at 64 prompts (the fewest a paper value
  is judged on, ``paper_values.PAPER_MIN_PROMPTS``) and at the nightly's count; 2x and 0.5x held in at most 1% at both;
  1.5x and 0.67x held in at most 10% at the nightly's count;
- **power**, at the nightly's count (``NIGHTLY_PROMPTS``): a faithful plant held in at least 80%, 2x and 0.5x not
  held in at least 90%, for every kind at the skews up to +55% (the bulk of the bundled figures). At +77% the power
  is below the bar at any count the corpus holds (METHODS.md, "paper-design", gives the rates): the nightly reads such
  a figure inconclusive more often than held, never not held.

Below 64 prompts no paper value is judged: at 16 a faithful plant of the +77% kinds is not held in 10% or more of
seeds and held in none (``test_sixteen_prompts_cannot_judge_a_paper_value``). With last round's band swapped in
(|estimate - paper| <= max(tolerance, CI half-width), before 2026-11-28) the safety bar fails at the real skew
(``test_last_rounds_band_fails_the_bars``).
"""

from __future__ import annotations

import numpy as np
import pytest
from planted import DENOMINATOR_SKEW, Kind, head_means, measure, old_band, rates, readings, upper_arm

from harness.spec.decision import HELD, NOT_HELD
from harness.spec.models import LLAMA_1B, LLAMA_3B, QWEN
from harness.spec.paper_values import PAPER_MIN_PROMPTS, PaperValue, paper_level
from harness.stats import intervals

SEEDS = 400  # a 1% bar resolved to about ±0.5% (one MC standard error), a 5% or 80% bar to about ±1-2%
DEFAULT_PROMPTS = 16
#: The nightly's prompts (.github/workflows/nightly-gpu.yml, docs/gpus.md): the wiki corpus holds 640 to 704 prompts
#: of 512 tokens for the bundled tokenizers, so 512 is the most every tokenizer fills with a margin.
NIGHTLY_PROMPTS = 512
#: (log-sd of the plant's skewed part: the median 16-prompt upper arm it gives, ``tests/planted.calibrated``)
SKEW = {
    "mean": {0.48: 1.4, 0.55: 1.501, 0.77: 1.969, 1.15: 2.778},
    "ratio": {0.10: 0.346, 0.35: 1.016, 0.37: 1.057, 0.55: 1.422, 0.77: 1.873, 1.15: 2.675},
    "peak": {0.10: 0.251},
    "median30": {0.08: 0.258},
    "sink": {0.05: 1.5},
}


def kind(claim: str, figure: str, model: str, form: str, arm: float, note: str) -> tuple[str, Kind]:
    table = SKEW["ratio" if form == "share" else form]
    return f"{figure} {model} +{arm:.0%}", Kind(claim, figure, model, form, table[arm], note)


KINDS = dict(
    [
        kind("T6", "mean_delta_causal", LLAMA_3B, "mean", 0.48, "a whole-range mean, beyond the bundled +2-6%"),
        kind("T6", "mean_delta_bidirectional", QWEN, "mean", 0.55, "Qwen-0.5B's bidirectional mean +54%"),
        kind("T7", "first_bin_bidirectional", LLAMA_3B, "mean", 0.77, "SmolLM2's first-bin bidirectional +76%"),
        kind("T6", "mean_delta_bidirectional", QWEN, "mean", 0.77, "the 1.5B's bidirectional mean +73%"),
        kind("T6", "bidirectional_over_causal", QWEN, "ratio", 0.35, "SmolLM2's bidirectional / causal +35%"),
        kind("T6", "bidirectional_over_causal", QWEN, "ratio", 0.55, "Qwen-0.5B's bidirectional / causal +53%"),
        kind("T6", "bidirectional_over_causal", QWEN, "ratio", 0.77, "the 1.5B's bidirectional / causal +77%"),
        kind("T8", "mean_layer_ratio", QWEN, "ratio", 0.55, "Qwen-0.5B's mean r_l +52%"),
        kind("T8", "mean_layer_ratio", QWEN, "ratio", 0.77, "the 1.5B's mean r_l +75%"),
        kind("T8", "mean_layer_ratio", LLAMA_3B, "ratio", 0.10, "Gemma's mean r_l (1.08) +10%"),
        kind("T8", "mean_layer_ratio", LLAMA_3B, "ratio", 0.37, "SmolLM2's mean r_l +37%"),
        kind("T7", "first_bin_causal_mask_share", LLAMA_3B, "share", 0.35, "a share whose ratio is +35%"),
        kind("T7", "first_bin_causal_mask_share", LLAMA_3B, "share", 0.55, "Gemma's mask share's ratio"),
        kind("T7", "first_bin_causal_mask_share", LLAMA_3B, "share", 0.77, "SmolLM2's mask share's ratio +80%"),
        kind("T5", "peak_delta", LLAMA_1B, "peak", 0.10, "T5's peak, +6% to +10%"),
        kind("T5", "median_top30_delta", LLAMA_1B, "median30", 0.08, "T5's top-30 median, +3% to +8%"),
        kind("T2", "sink_at_8_bos_moved", LLAMA_1B, "sink", 0.05, "T2's sinks, +2% to +5%"),
    ]
)
#: Gemma's T9c embedding swap, +115%: measured (METHODS.md), not held to a bar.
STRESS = dict(
    [
        kind("T9c", "first_bin:bi+replace-embedding", LLAMA_3B, "mean", 1.15, "Gemma's T9c embedding swap +115%"),
        kind("T6", "bidirectional_over_causal", QWEN, "ratio", 1.15, "a ratio at +115%"),
    ]
)
POWERED = [name for name, k in KINDS.items() if k.skew <= SKEW["ratio" if k.form == "share" else k.form].get(0.55, 9)]


def possible(k: Kind, factor: float) -> bool:
    """A share or a sink cannot be planted at or beyond 1."""
    return k.form not in ("share", "sink") or factor * k.paper.value < 1


def test_each_kind_is_planted_at_the_skew_it_names():
    """The calibration: each kind's median 16-prompt upper arm is its bundled counterpart's (within 0.04), and a
    faithful plant's estimates average the paper's value at 64 prompts (the mean's own Monte-Carlo error, a few
    percent; T5's re-ranked peak is biased upward by the selection, as a run's is)."""
    for name, k in {**KINDS, **STRESS}.items():
        arm = float(name.rsplit("+", 1)[1].rstrip("%")) / 100
        assert upper_arm(k) == pytest.approx(arm, abs=0.04), name
        if name in KINDS:
            est, _ = measure(k, k.paper.value, 64, SEEDS, start=3)
            assert np.mean(est) == pytest.approx(k.paper.value, rel=0.08), name


def test_the_vectorised_rule_is_the_rule():
    """``planted.readings`` reads each seed exactly as ``PaperValue.decide`` does."""
    for k in (KINDS["bidirectional_over_causal qwen-2.5-3b +55%"], KINDS["peak_delta llama-3.2-1b +10%"]):
        est, cis = measure(k, 1.3 * k.paper.value, 64, 200)
        fast = readings(k.paper, est, cis)
        assert list(fast) == [k.paper.decide(e, ci).reading for e, ci in zip(est, cis)]


@pytest.mark.parametrize("name", list(KINDS))
def test_safety_a_faithful_plant_is_never_not_held_and_one_twice_off_never_held(name):
    k = KINDS[name]
    for n in (PAPER_MIN_PROMPTS, NIGHTLY_PROMPTS):
        assert rates(k, 1.0, n, SEEDS)[NOT_HELD] <= 0.05, n
        for factor in (2.0, 0.5):
            if possible(k, factor):
                assert rates(k, factor, n, SEEDS)[HELD] <= 0.01, (n, factor)
    for factor in (1.5, 1 / 1.5):
        if possible(k, factor):
            assert rates(k, factor, NIGHTLY_PROMPTS, SEEDS)[HELD] <= 0.10, factor


@pytest.mark.parametrize("name", POWERED)
def test_power_at_the_nightlys_count_a_faithful_plant_is_held_and_one_twice_off_not_held(name):
    k = KINDS[name]
    assert rates(k, 1.0, NIGHTLY_PROMPTS, SEEDS)[HELD] >= 0.80
    for factor in (2.0, 0.5):
        if possible(k, factor):
            assert rates(k, factor, NIGHTLY_PROMPTS, SEEDS)[NOT_HELD] >= 0.90, factor


def test_sixteen_prompts_cannot_judge_a_paper_value():
    """Why no paper value is judged below 64 prompts: at 16, a faithful plant as skewed as the bundled runs' most
    skewed figures is not held in 10% or more of seeds, and held in none."""
    k = KINDS["first_bin_bidirectional llama-3.2-3b +77%"]
    at16 = rates(k, 1.0, DEFAULT_PROMPTS, 1000)
    assert at16[NOT_HELD] >= 0.10 and at16[HELD] == 0.0, at16
    assert rates(k, 1.0, PAPER_MIN_PROMPTS, 1000)[NOT_HELD] <= 0.05


def test_last_rounds_band_fails_the_bars():
    """The mutation: last round's band in place of the rule, on the same plants, holds a 2x ratio in most seeds where
    the rule holds none, and fails a faithful one far more often."""
    k = KINDS["bidirectional_over_causal qwen-2.5-3b +55%"]
    for n in (DEFAULT_PROMPTS, PAPER_MIN_PROMPTS):
        mutant = rates(k, 2.0, n, SEEDS, decide=old_band)
        assert mutant[HELD] > 0.01, (n, mutant)  # the safety bar it fails
        assert rates(k, 2.0, n, SEEDS)[HELD] <= 0.01
    mean = KINDS["first_bin_bidirectional llama-3.2-3b +77%"]
    assert rates(mean, 2.0, DEFAULT_PROMPTS, SEEDS, decide=old_band)[HELD] > 0.5


def test_a_test_judging_several_paper_values_is_not_held_for_a_faithful_run_in_at_most_5_percent():
    """Multiplicity (N4): T6a judges Table 6's causal mean, bidirectional mean and their ratio on one model, on the
    same prompts. Each at 1 - 0.05/3 (``paper_values.paper_level``), a faithful run is not held for the test as a whole in at
    most 5% of seeds at 64 prompts and at the nightly's, the bidirectional mean at the bundled runs' +55%."""
    refs = [
        PaperValue(0.0153, rtol=0.25),  # causal mean, Qwen-2.5-3B
        PaperValue(0.0014, rtol=0.25),  # bidirectional
        PaperValue(0.09, rtol=1 / 3),  # their ratio
    ]
    level = paper_level(len(refs))
    for n in (PAPER_MIN_PROMPTS, NIGHTLY_PROMPTS):
        rng = np.random.default_rng([n, 57])
        w = intervals.bootstrap_weights(n, 1000, 0) / n
        causal = 0.0153 * head_means(rng, SEEDS, n, DENOMINATOR_SKEW)
        bi = causal * (0.0014 / 0.0153) * head_means(rng, SEEDS, n, SKEW["ratio"][0.55])
        figures = [
            (causal.mean(1), causal @ w.T),
            (bi.mean(1), bi @ w.T),
            (bi.sum(1) / causal.sum(1), (bi @ w.T) / (causal @ w.T)),
        ]
        got = np.stack(
            [readings(ref, est, intervals.percentile_ci(rows.T, level, n=n)) for (est, rows), ref in zip(figures, refs)]
        )
        assert np.mean((got == NOT_HELD).any(axis=0)) <= 0.05, n
    assert np.mean((got == HELD).all(axis=0)) >= 0.8  # at the nightly's count the test as a whole holds it


@pytest.mark.slow  # the stress plants and every kind's full table: what METHODS.md quotes, about a minute
def test_the_rates_methods_quotes():
    """METHODS.md's table of rates at 16, 64 and 512 prompts for every kind (printed with -s)."""
    for name, k in {**KINDS, **STRESS}.items():
        for n in (DEFAULT_PROMPTS, PAPER_MIN_PROMPTS, NIGHTLY_PROMPTS):
            r = {f: rates(k, f, n, SEEDS) for f in (1.0, 1.5, 1 / 1.5, 2.0, 0.5) if possible(k, f)}
            print(name, n, {f"{f:.2f}": (round(v[HELD], 3), round(v[NOT_HELD], 3)) for f, v in r.items()})
