"""The paper's numbers as a claim's declaration holds them: a value it reports for one of its models, with the
tolerance a reproduction may differ by (``PaperValue``; ``magnitude``, ``share``, ``sink``), when such a value is
judged (the paper's design: ``paper_design_gap``, ``paper_level``), and a threshold a verdict compares against, with
the paper's sentence it comes from (``Threshold``). The claim schema and registry are harness/spec/claims.py's.

Paper tolerances: rtol 0.25 for leakage magnitudes (our prompts are a different draw of the same kind of
corpus; the paper's own bootstrap CI on Llama-3.2-3B is ±4%, so 25% allows corpus and sampling differences
without hiding a factor-of-two change); atol 0.10 for shares and ratios (rtol ⅓ below 0.3, where 0.10 would accept
2×); atol 0.05 for sink magnitudes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from harness.spec.decision import Decision, within


@dataclass(frozen=True)
class PaperValue:
    """A number the paper reports for one of its models, with the tolerance a reproduction may differ by."""

    value: float
    rtol: float = 0.0
    atol: float = 0.0

    @property
    def tolerance(self) -> float:
        return self.atol + self.rtol * abs(self.value)

    @property
    def margin(self) -> tuple[float, float]:
        """The equivalence margin: the paper's value widened by the tolerance."""
        return self.value - self.tolerance, self.value + self.tolerance

    def decide(
        self,
        measured: float,
        ci: Sequence[float] | None = None,
        n: int | None = None,
        unit: str = "prompt",
        level: float = 0.95,
    ) -> Decision:
        """The run reproduces the paper's number (``decision.within`` the margin): held when this run's interval
        (at ``level``: 95%, or wider where a test judges several paper values, ``paper_level``) lies inside the margin,
        not held when it lies wholly outside, inconclusive when the run cannot resolve it (``n``: its prompts, for the
        estimate of how many would); a figure without an interval is judged on its point estimate, and the decision
        says so."""
        return within(measured, ci, *self.margin, n=n, unit=unit, level=level)


#: The paper's design for its reported numbers: 512-token prompts (§5.5's seven query bins [0, 8), ..., [256, 512)
#: end at 512; METHODS.md, "The paper's design for paper values"). A paper value is judged only on a figure measured
#: at that length; at any other length it is reported beside the figure, not judged.
PAPER_SEQ_LEN = 512
#: The fewest prompts a paper value is judged on: at 16 a faithful run as skewed as the bundled runs' most skewed
#: figures (+77% upper arms) read not held in 12% of planted runs and held in none; from 64, not held in at most 5%
#: (tests/test_planted_paper_values.py; METHODS.md, "paper-design").
PAPER_MIN_PROMPTS = 64


def paper_design_gap(seq_len: int | None, n_prompts: int | None = None) -> str | None:
    """Why a figure measured on ``n_prompts`` prompts of ``seq_len`` tokens is not judged against the paper's value
    (None: it is)."""
    if seq_len != PAPER_SEQ_LEN:
        return (
            f"reported, not judged: measured on {seq_len}-token prompts, the paper's design is {PAPER_SEQ_LEN} "
            f"(--seq-len {PAPER_SEQ_LEN} judges it)"
        )
    if n_prompts is not None and n_prompts < PAPER_MIN_PROMPTS:
        return (
            f"reported, not judged: measured on {n_prompts} prompts, too few to resolve the paper's value (a paper "
            f"value is judged from {PAPER_MIN_PROMPTS}: --n-prompts {PAPER_MIN_PROMPTS} or more judges it)"
        )
    return None


def paper_level(judged: int) -> float:
    """The interval level of each paper value a test judges, ``judged`` of them on its model: 95% for one, and
    Bonferroni's 1 - 0.05 / k for k, so that a faithful reproduction is not held in at most 5% of runs for the test
    as a whole (METHODS.md, "paper-design")."""
    return 1 - 0.05 / max(1, judged)


#: Shares below this get a relative tolerance, ``SMALL_SHARE_RTOL`` (0.10 / 0.3: the two tolerances meet at 0.3).
SMALL_SHARE, SMALL_SHARE_RTOL = 0.3, 1 / 3


def magnitude(value: float) -> PaperValue:  # leakage magnitudes
    return PaperValue(value, rtol=0.25)


def share(value: float) -> PaperValue:
    """Shares and ratios: ±0.10, and ±⅓ of the value below 0.3 (where 0.10 would accept 2× of 0.09; the two meet at
    0.3)."""
    return PaperValue(value, atol=0.10) if value >= SMALL_SHARE else PaperValue(value, rtol=SMALL_SHARE_RTOL)


def sink(value: float) -> PaperValue:  # sink magnitudes
    return PaperValue(value, atol=0.05)


@dataclass(frozen=True)
class Threshold:
    """A number a verdict compares against: ``sentence`` is the paper's words, ``reading`` how we turn them
    into this number (METHODS.md says more)."""

    value: object  # a number, a [low, high] pair or a table: the claim's test knows which
    sentence: str
    reading: str
