"""The run's summary figure: every claim test and model on one page, sized for a slide.

One row per test and model decided by the one rule (harness/spec/decision.py): the decision that gave the test its
verdict, drawn as its estimate with its 95% interval against its threshold and coloured by the test's verdict; the
tests decided otherwise (an exact check, a count, a fit's shape) are named under the figure. Rows of different statistics are made comparable by
moving each onto a common scale:

* one-sided criteria ("> t", "< t"): the distance past the threshold in units of the row's scale, the larger of |t|
  and the interval's width (so a threshold of 0 does not blow the row up), with the held side to the right: 0 is
  the threshold of every row;
* equivalences ("inside [a, b]"): the position in the band, a at −1 and b at +1: the held region is [−1, 1].

"1" would mean two different things on one axis, so the two kinds get a panel each. Rows reaching past the axis are
clipped at its edge with an arrow, so that one far row does not squash the rest; the right-hand column gives every
row's numbers as recorded.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from pathlib import Path
from typing import NamedTuple

import numpy as np
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from harness.outcome.claim_result import ClaimResult
from harness.outcome.results import RunResult
from harness.outcome.verdict import DECIDED, Verdict
from harness.report.plot_style import (
    HELD_SHADE,
    OTHER_VERDICT_COLOR,
    VERDICT_COLORS,
    legend,
    new,
    save,
    scalar,
    styled,
)
from harness.report.record_text import (
    claim_key,
    deciding,
    figure_judged,
    is_property_check,
    test_words,
)

ONE_SIDED, EQUIVALENCE = "one-sided", "equivalence"
NAN = float("nan")  # a row with no mark: a test decided without an interval against a threshold
#: How far from 0 a row is drawn before it is clipped at the axis edge (one-sided: threshold units; equivalence:
#: half-bands, the band's edges at ±1).
CLIP = {ONE_SIDED: 3.0, EQUIVALENCE: 4.0}
#: Vertical room per row and around the panels, inches.
ROW_HEIGHT, FRAME_HEIGHT = 0.17, 1.9


class Criterion(NamedTuple):
    """A decision's criterion as harness.spec.decision writes it: "> t", "< t" (``low`` = ``high`` = t) or
    "inside [a, b]"."""

    kind: str  # ONE_SIDED or EQUIVALENCE
    low: float
    high: float
    above: bool = True  # one-sided: held above the threshold


class SummaryRow(NamedTuple):
    """One decision on its panel's common scale (``low`` ≤ ``estimate`` ≤ ``high``, held to the right of 0 or inside
    [−1, 1]), unclipped; ``numbers`` is the row as recorded ("0.187 [0.156, 0.252] < 0.46")."""

    claim: str
    label: str  # "<claim> · reduced · smollm2"
    kind: str
    low: float
    estimate: float
    high: float
    verdict: Verdict  # the test's, as shown
    color: str
    point: bool  # no interval: judged on its point estimate
    numbers: str


def parse_criterion(text) -> Criterion | None:
    """The criterion of a decision, None for a string the rule does not write."""
    text = str(text or "").strip()
    if m := re.fullmatch(r"inside \[\s*(\S+),\s*(\S+)\s*\]", text):
        try:
            a, b = float(m.group(1)), float(m.group(2))
        except ValueError:
            return None
        return Criterion(EQUIVALENCE, a, b) if math.isfinite(a) and math.isfinite(b) and a < b else None
    if m := re.fullmatch(r"([<>])\s*(\S+)", text):
        try:
            t = float(m.group(2))
        except ValueError:
            return None
        return Criterion(ONE_SIDED, t, t, m.group(1) == ">") if math.isfinite(t) else None
    return None


def to_common_scale(estimate: float, interval, criterion: Criterion) -> tuple[float, float, float]:
    """(low, estimate, high) of one decision on its panel's scale (see the module); the interval is widened to reach
    the estimate, as the rule does, and is the estimate alone when absent."""
    lo, hi = (float(interval[0]), float(interval[1])) if interval is not None else (estimate, estimate)
    lo, hi = min(lo, hi, estimate), max(lo, hi, estimate)
    if criterion.kind == EQUIVALENCE:
        centre, half = (criterion.low + criterion.high) / 2, (criterion.high - criterion.low) / 2
        return (lo - centre) / half, (estimate - centre) / half, (hi - centre) / half
    t = criterion.low
    scale = max(abs(t), hi - lo) or abs(estimate - t) or 1.0
    if criterion.above:
        return (lo - t) / scale, (estimate - t) / scale, (hi - t) / scale
    return (t - hi) / scale, (t - estimate) / scale, (t - lo) / scale


def clip(low: float, estimate: float, high: float, limit: float) -> tuple[float, float, float, bool, bool]:
    """The row as drawn inside [−limit, limit]: (low, estimate, high, past the left edge, past the right edge)."""
    c = lambda v: min(max(v, -limit), limit)
    return c(low), c(estimate), c(high), low < -limit, high > limit


def short_models(models) -> dict[str, str]:
    """Each model by the fewest leading '-'-parts of its name that no other model shares (gemma3-270m -> gemma3,
    llama-3.2-1b beside llama-3.2-3b -> llama-3.2-1b)."""
    models = sorted(set(models))
    out = {}
    for m in models:
        parts = m.split("-")
        for k in range(1, len(parts) + 1):
            short = "-".join(parts[:k])
            if not any(o != m and (o == short or o.startswith(short + "-")) for o in models):
                break
        out[m] = short
    return out


def check_name(check: str, record: ClaimResult) -> str:
    """The check's short name: the part after the colon when the part before it only names the test or helper that
    judged it ("test_<claim>_...: reduced" -> "reduced"), else the whole check ("bi+replace-Lstar: direction")."""
    where, sep, what = str(check or "").partition(": ")
    if not sep:
        return where or record.function
    test_named = re.fullmatch(r"(test|check)_\w+", where)
    if test_named and re.fullmatch(r"[\w.]+\(.*\)", what):  # left unnamed: the judged call's source text
        return test_words(record.function, record.claim)
    return what if test_named else f"{where}: {what}"


def matched_figure(record: ClaimResult, estimate: float) -> str | None:
    """The record's scalar figure the decision's estimate is, shortened ("identity_over_causal" -> "identity/causal"),
    to tell apart two decisions of one check; None when no figure matches."""
    name = figure_judged(record.figures, estimate)
    return None if name is None else name.replace("_over_", "/").replace("_minus_", " − ").replace("_", " ")


def _fmt(v: float) -> str:
    return f"{v:.3g}"


def exact_criterion(d: dict, criterion: Criterion) -> Criterion:
    """A one-sided criterion with its threshold recovered from the decision's margin where the rule's reading fixes
    it (held or not held: the interval's end less or plus the margin), so that a row a hair from a threshold the
    criterion's text rounds to 4 digits is drawn on the side it was decided on."""
    interval, margin, reading = d.get("interval"), d.get("margin"), d.get("verdict")
    if criterion.kind != ONE_SIDED or not isinstance(interval, list) or len(interval) != 2 or not scalar(margin):
        return criterion
    lo, hi = min(interval), max(interval)
    ends = {(Verdict.HELD, True): lo - margin, (Verdict.HELD, False): hi + margin}
    ends |= {(Verdict.NOT_HELD, True): hi + margin, (Verdict.NOT_HELD, False): lo - margin}
    t = ends.get((reading, criterion.above))
    return criterion if t is None or not math.isfinite(t) else criterion._replace(low=t, high=t)


def drawn_verdict(r: ClaimResult) -> Verdict:
    """The test's verdict as the figure colours it: held again after a recorded not held as held, every other as
    shown (a verdict a seed can flip, unstable across seeds, in a colour of its own)."""
    return Verdict.HELD if r.shown is Verdict.STALE else r.shown


def summary_rows(results: RunResult) -> list[SummaryRow]:
    """One row per claim test and model decided by the rule: the decision that gave the test its verdict (the one
    whose margin is the test's), coloured by the test's verdict, in claim order (then test, model); then, in each
    claim, its tests decided otherwise (``undrawn_rows``)."""
    every = list(results.records)
    records = sorted(filter(drawn, every), key=lambda r: (claim_key(r.claim), r.function, r.target.label))
    short = short_models(r.model for r in every if r.model)
    picked = []
    for r in records:
        d = deciding(r)
        assert d is not None  # drawn(r)
        criterion = exact_criterion(d, parse_criterion(d.get("criterion")))  # type: ignore[arg-type]
        interval = d.get("interval")
        interval = tuple(interval) if isinstance(interval, list) and len(interval) == 2 else None
        picked.append((r, d, criterion, float(d["estimate"]), interval))
    base = [
        f"{r.claim} · {check_name(d.get('check', ''), r)} · {short.get(r.model or '', r.target.label)}"
        for r, d, *_ in picked
    ]
    # one check deciding two tests of one model: told apart by the figure each judged where every one of them
    # matches a different scalar figure, else numbered in the tests' order
    details = [matched_figure(r, estimate) for r, _, _, estimate, _ in picked]
    by_label: dict = {}
    for label, detail in zip(base, details):
        by_label.setdefault(label, []).append(detail)
    named = {lab: None not in ds and len(set(ds)) == len(ds) for lab, ds in by_label.items()}
    nth: Counter = Counter()
    rows = []
    for label, detail, (r, d, criterion, estimate, interval) in zip(base, details, picked):
        if len(by_label[label]) > 1:
            nth[label] += 1
            claim, check, model = label.split(" · ")
            label = f"{claim} · {check} ({detail if named[label] else f'#{nth[label]}'}) · {model}"
        low, mid, high = to_common_scale(estimate, interval, criterion)
        verdict, colour = r.shown, VERDICT_COLORS.get(drawn_verdict(r), OTHER_VERDICT_COLOR)
        ci = f" [{_fmt(interval[0])}, {_fmt(interval[1])}]" if interval is not None else " (point)"
        rows.append(
            SummaryRow(
                r.claim,
                label,
                criterion.kind,
                low,
                mid,
                high,
                verdict,
                colour,
                interval is None,
                f"{_fmt(estimate)}{ci}  {d.get('criterion')}",
            )
        )
    rows += undrawn_rows(every, short)
    return sorted(rows, key=lambda row: claim_key(row.claim))  # stable: each claim's drawn rows first


def drawn(r: ClaimResult) -> bool:
    """Whether a record is a row of the figure: a verdict on its data, decided by the rule on a finite estimate."""
    d = deciding(r)
    return (
        r.shown in (*DECIDED, Verdict.UNSTABLE, Verdict.STALE)
        and d is not None
        and parse_criterion(d.get("criterion")) is not None
        and scalar(d.get("estimate"))
        and math.isfinite(d["estimate"])
    )


def undrawn_rows(records: list[ClaimResult], short: dict) -> list[SummaryRow]:
    """The tests with a verdict on their data that no interval against a threshold decided (an exact check, a count,
    a fit's shape): a row each on the one-sided panel, with no mark, its verdict in words and colour, so that a test
    missing from the drawing never reads as one that held. The checks of the paper's equations are left out."""
    rows = []
    for r in records:
        if r.shown not in (*DECIDED, Verdict.UNSTABLE, Verdict.STALE) or drawn(r) or is_property_check(r):
            continue
        model = short.get(r.model or "", r.target.label)
        colour = VERDICT_COLORS.get(drawn_verdict(r), OTHER_VERDICT_COLOR)
        label = f"{r.claim} · {test_words(r.function, r.claim)} · {model}"
        words = f"{r.shown.label}: no interval against a threshold (see the table)"
        rows.append(SummaryRow(r.claim, label, ONE_SIDED, NAN, NAN, NAN, r.shown, colour, False, words))
    return rows


PANELS = {
    ONE_SIDED: (
        "one-sided criteria (> t, < t)",
        "distance past the threshold, in threshold units (|t|, or the 95% CI's width where larger); held →",
    ),
    EQUIVALENCE: (
        "equivalence criteria (inside [a, b])",
        "position in the criterion's band (a = −1, b = +1); held inside",
    ),
}


def _draw_panel(ax, rows: list[SummaryRow], kind: str):
    limit = CLIP[kind]
    n = len(rows)
    y = np.arange(n)[::-1]  # the first row on top
    if kind == ONE_SIDED:
        ax.axvspan(0, limit * 1.08, color=HELD_SHADE, lw=0, zorder=0)
        ax.axvline(0, color="black", lw=1.1, zorder=1)
    else:
        ax.axvspan(-1, 1, color=HELD_SHADE, lw=0, zorder=0)
        for edge in (-1, 1):
            ax.axvline(edge, color="black", lw=1.0, ls="--", zorder=1)
    claims = [r.claim for r in rows]
    for i in range(1, n):  # a rule between claims, and every other claim's rows shaded
        if claims[i] != claims[i - 1]:
            ax.axhline(y[i] + 0.5, color="#bbbbbb", lw=0.6, zorder=1)
    order = list(dict.fromkeys(claims))
    for yi, r in zip(y, rows):
        if order.index(r.claim) % 2:
            ax.axhspan(yi - 0.5, yi + 0.5, color="black", alpha=0.04, lw=0, zorder=0)
        ax.text(1.01, yi, r.numbers, transform=ax.get_yaxis_transform(), va="center", fontsize=8, color=r.color)
        if not math.isfinite(r.estimate):  # decided without an interval: its verdict in words only
            continue
        lo, est, hi, past_left, past_right = clip(r.low, r.estimate, r.high, limit)
        ax.plot([lo, hi], [yi, yi], color=r.color, lw=2.2, solid_capstyle="butt", zorder=3)
        if abs(r.estimate) <= limit:
            ax.plot(
                est, yi, "D" if r.point else "o", ms=4.2, color=r.color, mfc="white" if r.point else r.color, zorder=4
            )
        for past, edge, marker in ((past_left, -limit, "<"), (past_right, limit, ">")):
            if past:
                ax.plot(edge, yi, marker, ms=6, color=r.color, zorder=5)
    ax.set_yticks(y, [r.label for r in rows], fontsize=8)
    ax.set_ylim(-0.6, n - 0.4)
    ax.set_xlim(-limit * 1.08, limit * 1.08)
    title, xlabel = PANELS[kind]
    ax.set_title(title, loc="left", fontsize=9.5)
    ax.set_xlabel(xlabel)
    ax.tick_params(axis="y", length=0)
    ax.grid(axis="x", color="#dddddd", lw=0.5, zorder=0)


@styled
def summary_figure(results: RunResult) -> Figure | None:
    """The summary figure (see the module), None when no record carries a decision. With both kinds of criteria the
    panels stand side by side (a slide's shape), the taller on the left and the legend under the shorter."""
    rows = summary_rows(results)
    if not any(math.isfinite(r.estimate) for r in rows):  # nothing the rule decided: no figure to draw
        return None
    per_kind = {k: [r for r in rows if r.kind == k] for k in (ONE_SIDED, EQUIVALENCE)}
    kinds = sorted((k for k in per_kind if per_kind[k]), key=lambda k: -len(per_kind[k]))
    if not kinds:
        return None
    room = 2.5  # rows' worth of height for a panel's title and x label
    tall = len(per_kind[kinds[0]]) + room
    if len(kinds) == 1:
        fig = new(9.0, ROW_HEIGHT * tall + FRAME_HEIGHT)
        axes = [fig.subplots()]
        legend_ax = None
    else:
        short = len(per_kind[kinds[1]]) + room
        below = max(tall - short, 8.0)  # the legend's cell
        fig = new(18.5, ROW_HEIGHT * max(tall, short + below) + FRAME_HEIGHT - 0.6)
        grid = fig.add_gridspec(2, 2, height_ratios=[short, below])
        axes = [fig.add_subplot(grid[:, 0]), fig.add_subplot(grid[0, 1])]
        legend_ax = fig.add_subplot(grid[1, 1])
        legend_ax.set_axis_off()
    for ax, k in zip(axes, kinds):
        _draw_panel(ax, per_kind[k], k)
    handles = _legend_handles(rows)
    if legend_ax is None:
        legend(fig, axes[0], outside=True, handles=handles, ncols=len(handles))
    else:
        legend_ax.legend(handles=handles, loc="upper left", frameon=False, title="each row: estimate and its 95% CI")
    return fig


def _legend_handles(rows: list[SummaryRow]) -> list:
    colours = {r.verdict: r.color for r in rows}  # each verdict shown, as the rows colour it
    order = [*(v for v in VERDICT_COLORS if v in colours), *(v for v in colours if v not in VERDICT_COLORS)]
    handles: list = [Line2D([], [], color=colours[v], marker="o", lw=2.2, label=v.label) for v in order]
    if any(r.point for r in rows):
        handles.append(
            Line2D([], [], color="black", marker="D", mfc="white", ls="none", label="point estimate (no CI)")
        )
    if any(clip(r.low, r.estimate, r.high, CLIP[r.kind])[3:] != (False, False) for r in rows):
        handles.append(Line2D([], [], color="black", marker=">", ls="none", label="runs past the axis (clipped)"))
    handles.append(Patch(facecolor=HELD_SHADE, label="held side of the criterion"))
    return handles


def write_summary(results: RunResult, out: Path) -> Path | None:
    """The summary figure written to ``out`` (a PNG), None (nothing written) when no record carries a decision."""
    return save(summary_figure(results), out)
