"""Planted runs of paper-valued figures, vectorised over seeds: the engine of tests/test_planted_paper_values.py.

A *kind* is a paper-valued figure of the catalogue (claim, figure, paper model) and how a run measures it: a prompt
mean ("mean"), a ratio or share of two prompt means on the same prompts ("ratio", "share"), the largest or the
top-30 median of many heads' prompt means, re-ranked in every resample as T5 does ("peak", "median30"), or a sink,
a prompt mean of per-prompt weights in (0, 1) ("sink"). ``measure`` draws ``seeds`` runs of ``n`` prompts of a plant
whose population figure is ``value`` and returns each run's estimate and its expanded 95% prompt-bootstrap interval,
computed as the claim tests compute them (``intervals.bootstrap_weights``, ``intervals.percentile_ci`` with the
prompts' count): every seed resamples with the harness's own weights at the run's seed 0, so the bootstrap is the
claim tests' exactly and one matrix product serves every seed.

Skew: per prompt and head, a log-normal amplitude of mean 1 and log-sd ``skew``, times fixed heterogeneous head scales
(log-sd 0.5); a ratio's numerator carries it over a mildly skewed denominator (log-sd 0.3) on the same prompts.
``calibrated`` finds the log-sd that puts the median 16-prompt upper arm (the interval's upper end over the estimate)
at a target, so a kind is planted at the skew a bundled run shows (``reports/example*/results.json``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cache

import numpy as np

from harness.spec.claims import claim
from harness.spec.decision import HELD, INCONCLUSIVE, NOT_HELD, Decision, within
from harness.spec.paper_values import PaperValue
from harness.stats import intervals

HEADS, N_BOOT = 4, 1000
DENOMINATOR_SKEW = 0.3  # the causal figure under a ratio: less skewed than the bidirectional one over it
T5_HEADS, TOP = 48, 30  # a model's heads for T5's peak and top-30 median (Llama-3.2-1B's 16 x 32 = 512: a subset)
SINK_SPREAD = 0.6  # a per-prompt sink's spread on the logit scale: the bundled sinks' +2% to +5% upper arms


@dataclass(frozen=True)
class Kind:
    """A kind of paper-valued figure: where its paper value lives in the catalogue, and how a run measures it."""

    claim: str
    figure: str
    model: str
    form: str  # "mean", "ratio", "share", "peak", "median30" or "sink"
    skew: float = 1.4  # log-sd of the skewed part (a sink: its logit-scale spread)
    note: str = ""  # the bundled figure whose skew it carries

    @property
    def paper(self) -> PaperValue:
        ref = claim(self.claim).paper_value(self.model, self.figure)
        assert ref is not None, self
        return ref

    def at(self, skew: float, note: str = "") -> Kind:
        return replace(self, skew=skew, note=note or self.note)


def amplitudes(rng: np.random.Generator, shape: tuple[int, ...], skew: float) -> np.ndarray:
    """Log-normal amplitudes of mean 1 and log-sd ``skew``."""
    return np.exp(skew * rng.standard_normal(shape) - skew**2 / 2)


def head_means(rng: np.random.Generator, seeds: int, n: int, skew: float) -> np.ndarray:
    """[seeds, n] per-prompt means of ``HEADS`` heterogeneous heads with skewed amplitudes, population mean 1."""
    scales = np.exp(0.5 * rng.standard_normal((seeds, 1, HEADS)))
    scales /= scales.mean(axis=-1, keepdims=True)
    return (scales * amplitudes(rng, (seeds, n, HEADS), skew)).mean(axis=-1)


@cache
def weights(n: int) -> np.ndarray:
    """[N_BOOT, n] the harness's prompt-resample counts for n prompts at the run's seed 0, over n (mean weights)."""
    return intervals.bootstrap_weights(n, N_BOOT, 0) / n


def interval(rows: np.ndarray, n: int, level: float = 0.95) -> np.ndarray:
    """[seeds, 2] the expanded percentile interval of bootstrap rows [seeds, N_BOOT]."""
    return intervals.percentile_ci(rows.T, level, n=n)


def t5_profile(form: str) -> np.ndarray:
    """[T5_HEADS] head population means, largest first, decaying as Llama-3.2-1B's Table 5 does (top-30 median 0.59
    of the peak): the largest is 1 for "peak", the top-30 median is 1 for "median30"."""
    q = 0.59 ** (1 / ((TOP - 1) / 2))
    m = q ** np.arange(T5_HEADS, dtype=float)
    return m / (m[0] if form == "peak" else np.median(m[:TOP]))


@cache
def sink_centre(value: float, spread: float) -> float:
    """The logit centre whose logit-normal weights (logit-scale sd ``spread``) have mean ``value``."""
    z = np.random.default_rng(12345).standard_normal(200_000)
    lo, hi = -12.0, 12.0
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if (1 / (1 + np.exp(-(mid + spread * z)))).mean() < value else (lo, mid)
    return (lo + hi) / 2


def measure(kind: Kind, value: float, n: int, seeds: int, start: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``seeds`` runs of ``n`` prompts whose population figure is ``value``: (estimates [seeds], 95% CIs [seeds, 2]).
    Every form but the sink is linear in its value (a share in 1 - value), so a plant at any multiple of the paper's
    value reuses one draw (common random numbers: the factors compared on the same prompts)."""
    if kind.form == "sink":
        rng = np.random.default_rng([start, seeds, n, 5])
        x = 1 / (1 + np.exp(-(sink_centre(value, kind.skew) + kind.skew * rng.standard_normal((seeds, n)))))
        return x.mean(axis=1), interval(x @ weights(n).T, n)
    est, ci = _unit(kind.form, kind.skew, n, seeds, start)
    if kind.form == "share":  # 1 - (1 - value) * the unit ratio, its interval's ends swapped
        return 1 - (1 - value) * est, 1 - (1 - value) * ci[:, ::-1]
    return value * est, value * ci


@cache
def _unit(form: str, skew: float, n: int, seeds: int, start: int) -> tuple[np.ndarray, np.ndarray]:
    """(estimates, CIs) of a plant of population value 1 (a share: its ratio 1 - share at 1)."""
    rng = np.random.default_rng([start, seeds, n, sum(map(ord, form))])
    w = weights(n)
    if form == "mean":
        x = head_means(rng, seeds, n, skew)
        return x.mean(axis=1), interval(x @ w.T, n)
    if form in ("ratio", "share"):
        den = head_means(rng, seeds, n, DENOMINATOR_SKEW)
        num = den * head_means(rng, seeds, n, skew)
        return num.sum(1) / den.sum(1), interval((num @ w.T) / (den @ w.T), n)
    if form in ("peak", "median30"):
        # each head's per-prompt contribution: its population mean times a skewed amplitude with a prompt effect
        # every head shares (a prompt that leaks more leaks more in every head)
        m = t5_profile(form)
        shared = amplitudes(rng, (seeds, n, 1), skew / 2)
        x = m * shared * amplitudes(rng, (seeds, n, T5_HEADS), skew / 2)  # [seeds, n, heads]
        means = x.mean(axis=1)  # [seeds, heads]
        rows = (w @ x.transpose(1, 0, 2).reshape(n, -1)).reshape(len(w), seeds, T5_HEADS).transpose(1, 0, 2)
        if form == "peak":
            return means.max(axis=1), interval(rows.max(axis=2), n)
        top_rows = -np.sort(-rows, axis=2)[:, :, :TOP]
        return np.median(-np.sort(-means, axis=1)[:, :TOP], axis=1), interval(np.median(top_rows, axis=2), n)
    raise ValueError(f"unknown form {form!r}")


def widened(estimates: np.ndarray, cis: np.ndarray) -> np.ndarray:
    """The intervals as the rule reads them: widened to reach their estimates (``decision._bounds``)."""
    return np.stack([np.minimum(cis[:, 0], estimates), np.maximum(cis[:, 1], estimates)], axis=1)


def readings(ref: PaperValue, estimates: np.ndarray, cis: np.ndarray) -> np.ndarray:
    """Each run's reading by the one rule's equivalence (``decision.within`` on the paper value's margin),
    vectorised; ``test_the_vectorised_rule_is_the_rule`` checks it against ``PaperValue.decide`` run by run."""
    low, high = ref.margin
    lo, hi = widened(estimates, cis).T
    out = np.full(estimates.shape, INCONCLUSIVE, dtype=object)
    out[(hi < low) | (lo > high)] = NOT_HELD
    out[(low <= lo) & (hi <= high)] = HELD
    return out


def rates(kind: Kind, factor: float, n: int, seeds: int, start: int = 0, decide=None) -> dict[str, float]:
    """The share of seeds each verdict reads, for a plant at ``factor`` times the paper's value. ``decide``
    (ref, estimates, CIs) -> readings replaces the rule (a mutation: last round's band)."""
    ref = kind.paper
    est, cis = measure(kind, factor * ref.value, n, seeds, start)
    got = (decide or readings)(ref, est, cis)
    return {r: float(np.mean(got == r)) for r in (HELD, NOT_HELD, INCONCLUSIVE)}


def upper_arm(kind: Kind, n: int = 16, seeds: int = 400) -> float:
    """The median relative upper arm (CI upper end / estimate - 1) of a faithful plant at ``n`` prompts; for a share,
    the arm of its ratio 1 - share (a causal-mask share's skew is its bidirectional / causal ratio's)."""
    est, cis = measure(kind, kind.paper.value, n, seeds, start=7)
    if kind.form == "share":
        est, cis = 1 - est, 1 - cis[:, ::-1]
    return float(np.median(np.maximum(cis[:, 1], est) / est - 1))


def calibrated(kind: Kind, arm: float, n: int = 16) -> Kind:
    """``kind`` at the log-sd whose median ``n``-prompt upper arm is ``arm`` (bisection over 0.1 to 3.5)."""
    lo, hi = 0.1, 3.5
    for _ in range(14):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if upper_arm(kind.at(mid), n) < arm else (lo, mid)
    return kind.at(round((lo + hi) / 2, 3))


def old_band(ref: PaperValue, estimates: np.ndarray, cis: np.ndarray) -> np.ndarray:
    """Last round's defective check (before 2026-11-28): held when |estimate - paper| <= max(tolerance, the CI's
    half-width), else not held; a wide interval widened the band (fidelity-3 F1)."""
    band = np.maximum(ref.tolerance, (cis[:, 1] - cis[:, 0]) / 2)
    return np.where(np.abs(estimates - ref.value) <= band, HELD, NOT_HELD).astype(object)


def decide_one(ref: PaperValue, estimate: float, ci) -> Decision:
    """The rule itself on one run: what ``readings`` must equal."""
    return within(float(estimate), ci, *ref.margin)
