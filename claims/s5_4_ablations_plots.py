"""§5.4's own figure (claims/s5_4_ablations.py names it with ``draw=``): each ablation's mean ΔR² over causal, as
the ratios its criteria judge.

For each model, every ratio the declaration's ``ratios`` option names (figure -> label, threshold, held side,
the figures whose paper values give the paper's ratio) with its paired 95% CI on a log axis, over the held side of
its criterion (shaded, the threshold dashed) and the paper's ratios; a model whose record carries none of them (an
older results.json) gets the generic bars of the ablations' mean ΔR².
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import NamedTuple

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import NullFormatter

from harness.report.plot_kinds import ablation_bars_figure
from harness.report.plot_style import (
    HELD_SHADE,
    Drawing,
    PaperRef,
    PlotInput,
    draw_refs,
    legend,
    new,
    ref_labels,
    refs_for,
    scalar,
    styled,
)
from harness.spec.claims import CLAIMS
from harness.spec.decision import interval_of


def ablation_ratios(plot: PlotInput) -> Iterator[Drawing]:
    """One figure per model (file ``<claim>_ablations_<model>.png``): the ratios, else the bars."""
    for m, figs in plot.by_model.items():
        figure = ablation_ratios_figure(plot.claim, m, figs, plot.options.get("ratios", {}))
        if figure is None:
            figure = ablation_bars_figure(plot.claim, m, figs, plot.roles)
        yield Drawing(figure, model=m, name="ablations")


class RatioCriterion(NamedTuple):
    """One ratio a claim's criteria judge, as its declaration's ``ratios`` option gives it (figure -> these)."""

    label: str
    threshold: str  # the claim's threshold
    held: str  # "below" or "above" the threshold, or "within" a factor of it either way
    paper_from: tuple[str, str] | None  # (numerator, denominator) figures whose paper values give the paper's ratio


class RatioItem(NamedTuple):
    """One judged ratio of a model: its value and 95% CI, the ratios its criterion holds for, and the paper's."""

    name: str
    label: str
    value: float
    ci: tuple[float, float] | None
    held_region: tuple[float, float]  # (0, t) below t, (t, inf) above t, (1/f, f) within a factor f
    criterion: str
    refs: list[PaperRef]


def ratio_items(claim: str, model: str, figs: dict, ratios: dict) -> list[RatioItem]:
    """A claim's recorded ratios with their criteria (``ratios``: its declaration's option); the paper's ratio is the
    declared value where there is one, else the ratio of the paper's two figures it divides."""
    spec = CLAIMS.get(claim)
    out = []
    for name, c in ((n, RatioCriterion(*v)) for n, v in ratios.items()):
        f = figs.get(name) or {}
        if spec is None or not scalar(f.get("value")):
            continue
        try:
            t = float(spec.threshold(c.threshold))
        except KeyError:
            continue
        region, words = {
            "below": ((0.0, t), f"held < {t:.3g}"),
            "above": ((t, math.inf), f"held > {t:.3g}"),
            "within": ((1 / t, t), f"held within {t:.3g}×"),
        }[c.held]
        refs = refs_for(claim, name, model, f)
        if not refs and c.paper_from:
            num, den = ({r.model: r for r in refs_for(claim, n, model)} for n in c.paper_from)
            refs = [PaperRef(m, r.label, r.value / den[m].value, 0.0) for m, r in num.items() if m in den]
        out.append(RatioItem(name, c.label, float(f["value"]), interval_of(f.get("ci")), region, words, refs))
    return out


def _ratio_ticks(ax, lo: float, hi: float):
    """Plain-number ticks (0.1, 0.2, 0.5, 1, 2, 5, ...) on a log ratio axis."""
    ticks = [m * 10.0**e for e in range(-3, 3) for m in (1, 2, 5) if lo <= m * 10.0**e <= hi]
    ax.set_yticks(ticks, [f"{t:g}" for t in ticks])
    ax.yaxis.set_minor_formatter(NullFormatter())


@styled
def ablation_ratios_figure(claim: str, model: str, figs: dict, ratios: dict) -> Figure | None:
    """One model: each judged ratio of an ablation's mean ΔR² to causal (and identity- to scrambled-RoPE) with
    its paired 95% CI, over the held side of its criterion (shaded, the threshold dashed) and the paper's ratios."""
    items = ratio_items(claim, model, figs, ratios)
    if not items:
        return None
    span = [it.value for it in items] + [v for it in items for v in (it.ci or ())]
    span += [e for it in items for e in it.held_region if 0 < e < math.inf] + [r.value for it in items for r in it.refs]
    span = [v for v in span if v > 0 and math.isfinite(v)]
    lo, hi = min(span) / 1.6, max(span) * 1.6
    fig = new(max(6.0, 1.7 * len(items) + 2.2), 5.6)
    ax = fig.subplots()
    ax.set_yscale("log")
    xs = np.arange(len(items), dtype=float)
    for x, it in zip(xs, items):
        a, b = it.held_region
        ax.fill_between(
            [x - 0.45, x + 0.45], max(a, lo), min(b, hi), color=HELD_SHADE, lw=0, zorder=0, label="held side"
        )
        for edge in (a, b):
            if 0 < edge < math.inf:
                ax.hlines(edge, x - 0.45, x + 0.45, colors="black", linestyles="--", lw=1.2, label="threshold")
        err = None
        if it.ci is not None:
            err = [[max(it.value - it.ci[0], 0.0)], [max(it.ci[1] - it.value, 0.0)]]
        ax.errorbar(
            x - 0.12,
            it.value,
            yerr=err,
            fmt="o",
            ms=7,
            color="tab:blue",
            ecolor="tab:blue",
            elinewidth=1.8,
            capsize=5,
            label="this run (paired 95% CI)" if err is not None else "this run",
            zorder=4,
        )
    labels = ref_labels([it.refs for it in items])
    for x, it in zip(xs, items):
        draw_refs(ax, it.refs, x + 0.02, 0.4, labels=labels)
    if any(it.refs and it.refs[0].tolerance == 0.0 for it in items):
        ax.plot([], [], ls="none", label="paper RoPE factors: ratios of the paper's mean ΔR² (Table 6), no tolerance")
    ax.axhline(1.0, color="grey", lw=0.8, ls=":", label="ratio 1 (no change)")
    ax.set_xticks(xs, [f"{it.label}\n{it.criterion}" for it in items])
    _ratio_ticks(ax, lo, hi)
    ax.set(
        xlim=(-0.6, len(items) - 0.4),
        ylim=(lo, hi),
        xlabel="ratio judged, with its criterion (claim registry)",
        ylabel="ablated / causal mean ΔR²\n(ratio, log scale)",
    )
    legend(fig, ax, outside=True, ncols=2)
    return fig
