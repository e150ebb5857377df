"""A faithful ΔR² reproduction is never not held by the paper-value checks; a value 2x off is never held.

A synthetic model on the harness's own engine (``stats.leakage``, ``stats.pairs``, ``stats.intervals``, the same
calls ``capture.leakage_view.Leakage`` makes) at the paper's design (512-token prompts, 4,000 stratified pairs) and the
default 16 prompts: offset-only structure plus a planted absolute-position component, the causal mask's own 1/(i+1)
(Eq. 6: uniform attention over i+1 keys) with a per-prompt amplitude (log-normal, sd 0.3 on the log scale), plus noise
whose variance differs between the first query bin and the later ones. The two noise levels are solved in closed form
so that the population values of the whole-range mean ΔR² and the first-bin ΔR² equal Table 6's and Table 7's
numbers for Llama-3.2-3B, causal and bidirectional. The check each claim test's figure
meets on a paper model (``PaperValue.decide`` on the figure's own CI, as ``Figures.check_paper`` calls it) must read
"not held" in at most 5% of draws, and "held" in at most 1% of draws from a model planted 2x (or 1/2x) off; 16 prompts
are below the 64 a paper value is judged from (``paper_values.PAPER_MIN_PROMPTS``), so this bounds the rule where it is
stricter than it is ever asked to be. The other
kinds of paper-valued figure, at the bundled models' skew and at the nightly's prompt count, are planted in
``tests/test_planted_paper_values.py``.
"""

from __future__ import annotations

import numpy as np
import pytest

from harness.spec.claims import claim
from harness.spec.decision import HELD, NOT_HELD
from harness.spec.models import LLAMA_3B
from harness.spec.paper_values import PAPER_SEQ_LEN
from harness.spec.settings import Settings
from harness.stats import intervals
from harness.stats import leakage as lk
from harness.stats.pairs import PairSet, query_bins, stratified_pairs

DEFAULTS = Settings()
N_HEADS, N_SEEDS = 4, 200
OFFSET_SCALE = 0.02  # offset-only structure: a relative-position decay every query shares
SPREAD = 0.3  # the planted component's amplitude per prompt: log-normal, mean 1, log-sd 0.3 (always positive)


def design() -> tuple[PairSet, np.ndarray]:
    pairs = stratified_pairs(PAPER_SEQ_LEN, DEFAULTS.n_pairs, seed=0)
    return pairs, pairs.i < query_bins(PAPER_SEQ_LEN)[1]


def mean_and_component(pairs: PairSet) -> tuple[np.ndarray, np.ndarray]:
    return OFFSET_SCALE * np.exp(-pairs.offsets / 16.0), 1.0 / (pairs.i + 1.0)


def explained_and_spread(pairs: PairSet) -> tuple[float, float]:
    """Per prompt as the prompts grow: the sum of squares the query position explains after the offsets
    (``leakage``'s Frisch–Waugh form on the expectation), and the sum of squares of everything but the noise."""
    f, g = mean_and_component(pairs)
    mu, it = f + g, pairs.i_tilde
    return float((it @ mu) ** 2 / (it @ it)), float(((mu - mu.mean()) ** 2).sum() + np.expm1(SPREAD**2) * (g * g).sum())


def population_delta(pairs: PairSet, in_first: np.ndarray, noise: tuple[float, float]) -> float:
    explained, spread = explained_and_spread(pairs)
    return explained / (spread + in_first.sum() * noise[0] + (~in_first).sum() * noise[1])


def plant(whole: float, first: float) -> tuple[float, float]:
    """Noise variances (first bin, later bins) whose population first-bin and whole-range ΔR² are ``first`` and
    ``whole``: closed form, the first bin's fit sees only its own noise."""
    pairs, in_first = design()
    e1, v1 = explained_and_spread(pairs.subset(in_first))
    noise_first = (e1 / first - v1) / in_first.sum()
    e, v = explained_and_spread(pairs)
    noise_later = (e / whole - v - in_first.sum() * noise_first) / (~in_first).sum()
    assert noise_first > 0 and noise_later > 0, (whole, first)
    return noise_first, noise_later


def measured(seed: int, noise: tuple[float, float]) -> dict[str, tuple[float, np.ndarray]]:
    """One run of 16 prompts: (value, 95% CI) of the whole-range mean ΔR² (as ``Leakage.mean_delta_with_ci``) and
    of the first-bin ΔR² (as T7's ``bin_profile`` and ``prompt_ci``), head means over N_HEADS heads."""
    pairs, in_first = design()
    f, g = mean_and_component(pairs)
    rng = np.random.default_rng(seed)
    n = DEFAULTS.n_prompts
    amplitude = np.exp(SPREAD * rng.standard_normal((n, 1, N_HEADS)) - SPREAD**2 / 2)
    sd = np.sqrt(np.where(in_first, noise[0], noise[1]))[None, :, None]
    Y = f[None, :, None] + amplitude * g[None, :, None] + sd * rng.standard_normal((n, pairs.n_pairs, N_HEADS))
    weights = intervals.bootstrap_weights(n, DEFAULTS.n_boot, seed)
    out = {}
    for name, ps, y in (("whole", pairs, Y), ("first", pairs.subset(in_first), Y[:, in_first])):
        stats = lk.prompt_stats(ps, y)
        value = float(lk.fit_from_stats(stats, np.ones((1, n))).delta[0].mean())
        boot = lk.fit_from_stats(stats, weights).delta.mean(axis=-1)
        out[name] = (value, intervals.percentile_ci(boot, n=n))
    return out


FIGURES = {  # Llama-3.2-3B: (Table 6 whole-range figure, Table 7 first-bin figure) per condition
    "causal": (("T6", "mean_delta_causal"), ("T7", "first_bin_causal")),
    "bidirectional": (("T6", "mean_delta_bidirectional"), ("T7", "first_bin_bidirectional")),
}


def paper(cid_figure):
    return claim(cid_figure[0]).paper_value(LLAMA_3B, cid_figure[1])


def rates(whole: float, first: float, whole_ref, first_ref, reading: str) -> tuple[float, float]:
    """The share of seeds whose whole-range and first-bin figures read ``reading`` against the paper's values."""
    noise = plant(whole, first)
    runs = [measured(seed, noise) for seed in range(N_SEEDS)]
    n = DEFAULTS.n_prompts
    return (
        np.mean([whole_ref.decide(*r["whole"], n=n).reading == reading for r in runs]),
        np.mean([first_ref.decide(*r["first"], n=n).reading == reading for r in runs]),
    )


def test_planted_values_equal_the_papers_at_the_papers_design():
    """The plant is what it says: population values equal to Table 6 and Table 7, and a 16-prompt run's mean near."""
    pairs, in_first = design()
    for w, f in FIGURES.values():
        noise = plant(paper(w).value, paper(f).value)
        assert population_delta(pairs, in_first, noise) == pytest.approx(paper(w).value, rel=1e-9)
        first = pairs.subset(in_first)
        assert population_delta(first, np.ones(first.n_pairs, bool), noise) == pytest.approx(paper(f).value, rel=1e-9)
    w, f = FIGURES["causal"]
    runs = [measured(seed, plant(paper(w).value, paper(f).value)) for seed in range(20)]
    assert np.mean([r["whole"][0] for r in runs]) == pytest.approx(paper(w).value, rel=0.05)
    assert np.mean([r["first"][0] for r in runs]) == pytest.approx(paper(f).value, rel=0.05)


@pytest.mark.long
@pytest.mark.parametrize("condition", list(FIGURES))
def test_a_faithful_reproduction_is_never_not_held_by_the_paper_value_checks(condition):
    w, f = FIGURES[condition]
    whole_rate, first_rate = rates(paper(w).value, paper(f).value, paper(w), paper(f), NOT_HELD)
    assert whole_rate <= 0.05 and first_rate <= 0.05, (condition, whole_rate, first_rate)


@pytest.mark.long
@pytest.mark.parametrize("condition", list(FIGURES))
def test_a_value_two_times_off_is_never_held_by_the_paper_value_checks(condition):
    """2x the paper's whole-range mean (first bin as the paper's), and half its first-bin value (whole as the
    paper's); twice the first bin is beyond what this planted component can reach (the first bin's ΔR² without
    noise is about 0.4), so the first bin is tested below the paper's value."""
    w, f = FIGURES[condition]
    whole_rate, _ = rates(2 * paper(w).value, paper(f).value, paper(w), paper(f), HELD)
    _, first_rate = rates(paper(w).value, paper(f).value / 2, paper(w), paper(f), HELD)
    assert whole_rate <= 0.01 and first_rate <= 0.01, (condition, whole_rate, first_rate)
