"""A check of the deposit rule itself (DP1, DS2: ``harness.stats.head_map``): planted per-head accuracy effects, as
noisy and skewed per unit as the real runs, judged by exactly the functions the claim tests call (``accuracy_map``,
``deposit``, ``judged``) at the claims' thresholds.

A deposit is a large effect of one head: a head whose zeroing costs 1% of the read-out is never held a deposit,
however concentrated the layer's effects are, at 4, 9, 14 and 16 heads (Gemma-3 and the pilot, SmolLM2,
Qwen2.5-0.5B, the paper's layer), on 16 prompts (the default run) and on 512 (the nightly's count); a head that costs
60% with every other head at 1% is held in at least 95% of draws on 512 prompts and on a synthetic model's 6,000
held-out samples, and on 16 prompts, whose noise cannot resolve the share, never denied (inconclusive, not "not
held").

The noise, measured on SmolLM2-135M's copying map (the constants' comment): a prompt's unablated accuracy is its
share of ``POSITIONS`` scored tokens, each correct with the prompt's own probability (a Beta of concentration
``DISPERSION``); zeroing a head keeps each correct token with probability (1 - the prompt's own drop)(1 - ``CHURN``)
and turns wrong ones right at the rate that keeps the mean, so a head without effect still moves a prompt either way;
a prompt's own drop is drawn from a Beta whose mean is the planted effect and whose concentration is ``SKEW``: at 1%
most prompts lose nothing and a few nearly all. A synthetic model's unit is one held-out sample (its correctness 0 or
1: the real runs' own skew, no churn), 6,000 of them as the pilot's Task 1 split.
"""

from __future__ import annotations

import numpy as np
import pytest

from harness.spec.claims import claim
from harness.stats.head_map import accuracy_map, deposit, judged, single_head_share

DP1 = claim("DP1")
FLOOR, OTHERS = DP1.threshold("effect"), DP1.threshold("others")
POSITIONS = 31  # copying: the second copy's scored tokens per prompt
# measured on SmolLM2-135M's copying map (16 prompts, 2026-11-29, the run whose figures DP1 records): its prompts copy
# 0.58 of their tokens (per-prompt sd 0.13: a Beta of concentration 26 behind the binomial's own spread); a layer-0
# head with no effect changes a prompt's accuracy by a relative 0.11-0.15 either way (tokens turning wrong and right:
# a churn of 0.1 gives 0.114), the heads of 2-6% effects lose it by losing one prompt of 16 almost whole (0.92) and
# the others little, and its largest heads' per-prompt drops (0.34, 0.42 on average) spread from 0 to 1: a Beta of
# concentration 0.7 around the mean
BASE = 0.58
DISPERSION = 26.0
CHURN = 0.1
SKEW = 0.7
DRAWS = 100  # draws of a planted layer: a held share of at least 0.95 allows 5 misses
N_BOOT = 1000


def planted(rng, n: int, effects: np.ndarray, positions: int) -> tuple[np.ndarray, np.ndarray]:
    """Each unit's unablated accuracy [n] and with each head zeroed [n, heads], from per-head planted effects: a unit
    keeps each correct token with probability (1 - its own drop)(1 - ``CHURN``) and turns each wrong one right at the
    rate that leaves the mean unchanged (``CHURN`` p / (1 - p)), its own drop drawn Beta with the planted effect as
    its mean and concentration ``SKEW``."""
    p = rng.beta(BASE * DISPERSION, (1 - BASE) * DISPERSION, size=n) if positions > 1 else np.full(n, BASE)
    hits = rng.binomial(positions, p)
    e = np.clip(effects, 1e-12, 1 - 1e-12)
    drop = rng.beta(e * SKEW, (1 - e) * SKEW, size=(n, effects.size)) * (effects > 0)
    churn = CHURN if positions > 1 else 0.0  # a sample is one token: its change is its drop alone
    kept = rng.binomial(hits[:, None], (1 - drop) * (1 - churn))
    gained = rng.binomial((positions - hits)[:, None], np.clip(churn * p / (1 - p), 0, 1)[:, None])
    return hits / positions, (kept + gained) / positions


def readings(
    heads: int, top: float, rest: float, n: int, positions: int = POSITIONS, seed: int = 0, draws: int = DRAWS
) -> dict[str, float]:
    """The share of ``draws`` in which the deposit reads held (both criteria held), not held (either not held) or
    inconclusive, with one head at ``top`` and the others at ``rest``; the planted head at a random index each draw."""
    rng = np.random.default_rng(seed)
    out = {"held": 0, "not held": 0, "inconclusive": 0}
    for k in range(draws):
        effects = np.full(heads, rest)
        effects[rng.integers(heads)] = top
        base, ablated = planted(rng, n, effects, positions)
        m = accuracy_map(base, ablated, N_BOOT, seed=k)
        decided = judged(deposit(m.effects, m.rows), heads, FLOOR, OTHERS, n)
        either = (decided.effect.reading, decided.share.reading)
        out["held" if decided.held else "not held" if "not held" in either else "inconclusive"] += 1
    return {k: v / draws for k, v in out.items()}


@pytest.mark.parametrize("heads", [4, 9, 14, 16])
def test_a_one_percent_head_is_never_a_deposit(heads):
    for n in (16, 512):
        assert readings(heads, 0.01, 0.0, n, draws=30)["held"] == 0.0  # alone in the layer, yet no large effect
        assert readings(heads, 0.01, 0.001, n, draws=30)["held"] == 0.0


@pytest.mark.parametrize("heads", [4, 9, 14, 16])
def test_a_sixty_percent_head_is_a_deposit_where_the_prompts_can_show_it_and_never_denied(heads):
    """At the nightly's 512 prompts a 60% head with the others at 1% is held in at least 95% of draws. At the default
    16 the prompts' own noise (a null head moves a prompt's accuracy by a relative 0.11 either way, and a small one
    loses a whole prompt now and then) leaves the share undecided: it reads inconclusive, never not held."""
    assert readings(heads, 0.60, 0.01, 512)["held"] >= 0.95
    assert readings(heads, 0.60, 0.01, 16)["not held"] <= 0.05


@pytest.mark.parametrize("heads", [4, 16])
def test_on_a_synthetic_models_held_out_samples_too(heads):
    """DS2's unit: one held-out sample, correct or not; the pilot's 6,000."""
    assert readings(heads, 0.01, 0.0, 6000, positions=1, draws=10)["held"] == 0.0
    assert readings(heads, 0.60, 0.01, 6000, positions=1, draws=40)["held"] >= 0.95  # at most 2 of 40 missed


def test_spread_effects_are_not_a_deposit_however_large():
    """Four heads each costing 40%: every one a large effect, none carrying the layer."""
    rng = np.random.default_rng(1)
    base, ablated = planted(rng, 512, np.full(4, 0.4), POSITIONS)
    m = accuracy_map(base, ablated, N_BOOT)
    decided = judged(deposit(m.effects, m.rows), 4, FLOOR, OTHERS, 512)
    assert decided.effect.held and not decided.share.held and not decided.held


def test_the_share_bound_is_the_papers_reading_at_each_head_count():
    assert single_head_share(16, OTHERS) == pytest.approx(0.5)
    assert [round(single_head_share(h, OTHERS), 3) for h in (4, 9, 12, 14)] == [0.833, 0.652, 0.577, 0.536]
    with pytest.raises(ValueError):
        single_head_share(1, OTHERS)
