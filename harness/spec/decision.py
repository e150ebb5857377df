"""The one decision rule every criterion uses: a statistic's prompt-level 95% interval against its threshold.

- **One-sided** (``at_least``, ``at_most``): the interval wholly on the held side of the threshold is *held*, wholly on
  the other side *not held*, straddling it *inconclusive*.
- **Equivalence** (``within``): "flat", "same magnitude", "as the paper reports": the interval wholly inside the
  margin is *held*, wholly outside it *not held*, overlapping an edge *inconclusive*. A paper value is an equivalence:
  the paper's number widened by the declared tolerance.

A one-sided threshold must be passed strictly (``lo > threshold``: "above", "below"); an equivalence margin includes its
edges (the paper's value ± the tolerance is accepted). An interval that does not contain its own estimate (a
percentile interval of a re-ranked maximum can sit off it) is widened to reach it, so the verdict is never read off an
interval that excludes the number reported. A non-finite estimate or threshold is an error, never a verdict. Where no
interval is possible the statistic is judged on its point estimate and the decision says so ("point estimate"): never
silently.

Each decision carries its **margin**, the distance from the threshold (or the margin's nearer edge) to the interval's
nearer end, in the statistic's units: positive when the interval lies wholly on one side (how much room the verdict
has), negative when it straddles (how far the interval would have to shrink). An inconclusive decision also estimates
the prompts that would decide it: the interval's arm shrinks as 1/√n, so about n·(arm / distance)² prompts bring the
arm towards the threshold inside the distance from the estimate to it (none where the estimate sits on the threshold).

Standard library only. The paper values (``PaperValue.decide``, judged by ``Figures.check_paper``) and the claim tests'
statistical criteria (``harness.outcome.verdict.judge``) decide through it; METHODS.md lists what does not and why.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, Literal, NamedTuple, Sequence

Reading = Literal["held", "not held", "inconclusive"]
HELD: Reading = "held"
NOT_HELD: Reading = "not held"
INCONCLUSIVE: Reading = "inconclusive"

#: The most prompts an estimate names; beyond it the decision says "more than" (the run cannot resolve it in practice).
MOST_PROMPTS = 100_000


@dataclass(frozen=True)
class Decision:
    """What the rule decided for one criterion: its reading, its margin (see the module), the interval it was read
    from (None: a point estimate) and, when inconclusive, the prompts that would decide it (None: no estimate)."""

    reading: Reading
    estimate: float
    interval: tuple[float, float] | None
    criterion: str  # "≥ 0.07", "inside [0.06, 0.12]"
    margin: float
    prompts_to_decide: int | None = None
    no_count: str = ""  # why an inconclusive decision names no prompt count
    level: float = 0.95  # the interval's coverage (wider where a criterion is corrected for several comparisons)
    unit: str = "prompt"  # what the interval resamples: a prompt, or a synthetic model's evaluation sample

    @property
    def held(self) -> bool:
        return self.reading == HELD

    @property
    def inconclusive(self) -> bool:
        return self.reading == INCONCLUSIVE

    def describe(self) -> str:
        """One line: the estimate, its interval (or "point estimate") against the criterion, and what decides it."""
        where = (
            "point estimate"
            if self.interval is None
            else f"{100 * self.level:.4g}% {self.unit}-level CI [{self.interval[0]:.4g}, {self.interval[1]:.4g}]"
        )
        text = (
            f"{self.estimate:.4g} ({where}) against {self.criterion}: {self.reading}, margin {self.margin or 0.0:.3g}"
        )
        if self.reading == INCONCLUSIVE:
            if self.prompts_to_decide is None:
                text += f"; {self.no_count or f'no estimate of the {self.unit}s that would decide it'}"
            elif self.prompts_to_decide >= MOST_PROMPTS:
                text += f"; more than {MOST_PROMPTS:,} {self.unit}s would decide it"
            else:
                text += f"; about {self.prompts_to_decide} {self.unit}s would decide it"
        return text


class Judgement(NamedTuple):
    """What a claim's own judging function returns (``AcrossRuns.judge``): its figures, each (name, value, 95% CI or
    None), and its criteria in order, each (condition, the rule's ``Decision``, the message for a reader), read as a
    claim test reads its ``judge`` calls: a not-held criterion decides, else the first inconclusive one, else held."""

    figures: tuple[tuple[str, Any, Any], ...]
    checks: tuple[tuple[str, Decision, str], ...]


def interval_of(ci: Sequence[float] | None) -> tuple[float, float] | None:
    """``ci`` as a finite (lo, hi) pair, or None where it is absent or not a finite pair."""
    if ci is None or isinstance(ci, (str, bytes)) or len(ci) != 2:
        return None
    try:
        lo, hi = float(ci[0]), float(ci[1])
    except (TypeError, ValueError):
        return None
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return None
    return (min(lo, hi), max(lo, hi))


def prompts_to_decide(n: int | None, arm: float, distance: float) -> int | None:
    """About how many prompts shrink an interval arm ``arm`` (measured on ``n`` prompts) to ``distance``."""
    if n is None or n < 1 or distance <= 0 or not math.isfinite(arm) or arm <= 0:
        return None
    needed = n * (arm / distance) ** 2 if arm / distance < math.sqrt(MOST_PROMPTS) else math.inf
    return MOST_PROMPTS if needed >= MOST_PROMPTS else max(n + 1, math.floor(needed) + 1)


def at_least(
    estimate: float,
    ci: Sequence[float] | None,
    threshold: float,
    n: int | None = None,
    level: float = 0.95,
    unit: str = "prompt",
) -> Decision:
    """The statistic is above ``threshold``: held when the whole interval is, not held when none of it is. ``n``: the
    prompts (or other ``unit``) the interval was measured on; ``level``: its coverage."""
    return replace(_one_sided(estimate, ci, threshold, n, above=True), level=level, unit=unit)


def at_most(
    estimate: float,
    ci: Sequence[float] | None,
    threshold: float,
    n: int | None = None,
    level: float = 0.95,
    unit: str = "prompt",
) -> Decision:
    """The statistic is below ``threshold``: held when the whole interval is, not held when none of it is."""
    return replace(_one_sided(estimate, ci, threshold, n, above=False), level=level, unit=unit)


def _bounds(
    estimate: float, ci: Sequence[float] | None, *limits: float
) -> tuple[tuple[float, float] | None, float, float]:
    """The interval to decide on (None: a point estimate) and its ends, widened to reach the estimate."""
    if not all(math.isfinite(x) for x in (estimate, *limits)):
        raise ValueError(f"not a finite statistic or threshold: {estimate} against {limits}")
    interval = interval_of(ci)
    if interval is not None:
        interval = (min(interval[0], estimate), max(interval[1], estimate))
    lo, hi = interval if interval is not None else (estimate, estimate)
    return interval, lo, hi


def _no_count(n: int | None, distance: float) -> str:
    if distance <= 0:
        return "the estimate sits on the threshold: no prompt count decides it"
    return "" if n else "the run's prompt count was not given"


def _one_sided(estimate: float, ci: Sequence[float] | None, threshold: float, n: int | None, above: bool) -> Decision:
    estimate, threshold = float(estimate), float(threshold)
    interval, lo, hi = _bounds(estimate, ci, threshold)
    criterion = f"{'>' if above else '<'} {threshold:.4g}"
    if not above:  # mirror: "below t" is "-x above -t"
        lo, hi, estimate_m, threshold_m = -hi, -lo, -estimate, -threshold
    else:
        estimate_m, threshold_m = estimate, threshold
    if lo > threshold_m:
        return Decision(HELD, estimate, interval, criterion, lo - threshold_m)
    if hi < threshold_m or (interval is None and hi <= threshold_m):
        return Decision(NOT_HELD, estimate, interval, criterion, threshold_m - hi)
    # straddles: the arm reaching across the threshold must shrink inside the estimate's distance from it
    above_it = estimate_m > threshold_m
    arm, crossing = (estimate_m - lo, threshold_m - lo) if above_it else (hi - estimate_m, hi - threshold_m)
    distance = abs(estimate_m - threshold_m)
    needed = prompts_to_decide(n, arm, distance)
    return Decision(INCONCLUSIVE, estimate, interval, criterion, -crossing, needed, _no_count(n, distance))


def within(
    estimate: float,
    ci: Sequence[float] | None,
    low: float,
    high: float,
    n: int | None = None,
    level: float = 0.95,
    unit: str = "prompt",
) -> Decision:
    """An equivalence: the statistic lies inside [low, high]. Held when the whole interval does, not held when the
    interval lies wholly outside, inconclusive when it overlaps an edge."""
    return replace(_within(estimate, ci, low, high, n), level=level, unit=unit)


def _within(estimate: float, ci: Sequence[float] | None, low: float, high: float, n: int | None) -> Decision:
    estimate, low, high = float(estimate), float(low), float(high)
    interval, lo, hi = _bounds(estimate, ci, low, high)
    if not low <= high:
        raise ValueError(f"an equivalence margin needs low ≤ high, got [{low}, {high}]")
    criterion = f"inside [{low:.4g}, {high:.4g}]"
    if low <= lo and hi <= high:
        return Decision(HELD, estimate, interval, criterion, min(lo - low, high - hi))
    if hi < low or lo > high:
        return Decision(NOT_HELD, estimate, interval, criterion, low - hi if hi < low else lo - high)
    if low <= estimate <= high:  # inside: the arms reaching past the edges must shrink to the estimate's room
        needs = [prompts_to_decide(n, estimate - lo, estimate - low) if lo < low else n or 0]
        needs.append(prompts_to_decide(n, hi - estimate, high - estimate) if hi > high else n or 0)
        needed = None if None in needs else max(k for k in needs if k is not None)
        crossing, distance = max(low - lo, hi - high), min(estimate - low, high - estimate)
    elif estimate < low:  # below: the arm reaching into the margin must shrink to the estimate's distance from it
        needed, crossing, distance = prompts_to_decide(n, hi - estimate, low - estimate), hi - low, low - estimate
    else:
        needed, crossing, distance = prompts_to_decide(n, estimate - lo, estimate - high), high - lo, estimate - high
    return Decision(INCONCLUSIVE, estimate, interval, criterion, -crossing, needed, _no_count(n, distance))
