"""§5.8's and App. B's own figures (claims/s5_8_targeted.py names them with ``draw=``): the targeted ablations'
reductions against the random-head control, and the rank-1 MLP ablation.

``reductions`` draws, for each model, the reductions and the margins the declaration's options name, beside the
paper's values (its options ``paper``, ``paper_source``); where a record carries none of them (an older results.json),
the generic bars of the ablations' mean ΔR² instead. ``norm_removed`` draws the share of the MLP output norm removed
(the plotted series, roles ``.x`` the ablated layers) and the topic-accuracy change the criterion judges
(``.change``, else ``.after`` − ``.before``), each with its interval, against the claim's thresholds its options name
(``floor``, ``accuracy_drop``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import NamedTuple

import numpy as np
from matplotlib.figure import Figure

from harness.report.plot_kinds import ablation_bars
from harness.report.plot_style import (
    HELD_SHADE,
    MODEL_COLORS,
    Drawing,
    PlotInput,
    arr,
    ci_band,
    first,
    legend,
    new,
    panels,
    scalar,
    styled,
    threshold,
    val,
)
from harness.spec.decision import interval_of

#: The caption of the bars drawn where no reduction was recorded.
BARS = "mean ΔR² after targeted vs random-head ablations"


def reductions(plot: PlotInput) -> Iterator[Drawing]:
    figure = reductions_figure(plot.by_model, plot.options)
    if figure is not None:
        yield Drawing(figure, name="reductions")
    else:
        yield from ablation_bars(plot, BARS)


def norm_removed(plot: PlotInput) -> Iterator[Drawing]:
    yield Drawing(norm_removed_figure(plot.by_model, plot.roles, plot.options, plot.claim))


# ---- reductions by targeted and random-head ablations -----------------------------------------------------


class Measured(NamedTuple):
    name: str
    label: str
    value: float
    ci: tuple[float, float] | None


class ReductionPanel(NamedTuple):
    """One model's reductions figures: the reductions, the random draws' own reductions, and the judged margins
    (mean random reduction − |targeted reduction|, held above 0)."""

    model: str
    reductions: list[Measured]
    draws: np.ndarray
    random_mean: float | None
    margins: list[Measured]
    random: str  # the random control's reduction (one of ``reductions``' names)

    def targeted_band(self) -> tuple[float, float] | None:
        """The targeted reductions a margin holds for at the point estimates: |reduction| below the random mean
        (None when the random mean is not positive: nothing can be smaller)."""
        m = self.random_mean
        return (-m, m) if m is not None and m > 0 else None


def _measured(figs: dict, names: dict) -> list[Measured]:
    return [
        Measured(n, lab, float(f["value"]), interval_of(f.get("ci")))
        for n, lab in names.items()
        if scalar((f := figs.get(n) or {}).get("value"))
    ]


def reduction_panels(by_model: dict, o: dict) -> list[ReductionPanel]:
    """One panel per model with the reductions the declaration's options name (the reductions by label, the margins,
    the random control's figure and its draws')."""
    out = []
    for m, figs in by_model.items():
        reductions = _measured(figs, o.get("reductions", {}))
        if not reductions:
            continue
        draws = val(figs, o.get("draws", ""))
        random_mean = next((r.value for r in reductions if r.name == o.get("random")), None)
        out.append(
            ReductionPanel(
                m,
                reductions,
                arr(draws) if isinstance(draws, list) else np.array([]),
                random_mean,
                _measured(figs, o.get("margins", {})),
                o.get("random", ""),
            )
        )
    return out


def _paper_marks(ax, items: list[Measured], xs, paper: dict, what: str):
    """The paper's value of each item, where it gives one, as a black bar across the item's slot with its value
    written beside it: on the axis, one legend entry listing them."""
    drawn = [(x, float(paper[it.name])) for x, it in zip(xs, items) if scalar(paper.get(it.name))]
    for x, v in drawn:
        ax.hlines(v, x + 0.04, x + 0.36, colors="black", lw=2.4, zorder=5, label=f"the paper's value ({what})")
        ax.annotate(f"paper {v:.2f}", (x + 0.2, v), xytext=(0, 3), textcoords="offset points", ha="center", fontsize=8)
    return [v for _, v in drawn]


def _measured_points(ax, items: list[Measured], xs, color: str, label: str):
    for x, it in zip(xs, items):
        err = None if it.ci is None else [[max(it.value - it.ci[0], 0.0)], [max(it.ci[1] - it.value, 0.0)]]
        ax.errorbar(x, it.value, yerr=err, fmt="o", ms=6, color=color, elinewidth=1.8, capsize=5, label=label, zorder=4)


def _span(items: list[Measured], *extra: float) -> tuple[float, float]:
    """The y range showing every value, its CI and ``extra`` (0 among them), padded by a tenth."""
    vals = [v for it in items for v in (it.value, *(it.ci or ()))] + list(extra)
    lo, hi = min(vals), max(vals)
    pad = 0.1 * (hi - lo or abs(hi) or 1.0)
    return lo - pad, hi + pad


@styled
def reductions_figure(by_model: dict, options: dict) -> Figure | None:
    """One column per model: above, each ablation's reduction of mean ΔR² with its 95% CI (the random draws as
    dots, the paper's values on the axis beside each), the random control's criterion (its CI above 0) and, shaded,
    the targeted reductions smaller than the random mean; below, the margins the criterion judges (mean random
    reduction − |targeted reduction|, held when the CI lies above 0), the paper's margins beside them."""
    panels_ = reduction_panels(by_model, options)
    paper, source = options.get("paper", {}), options.get("paper_source", "paper")
    if not panels_:
        return None
    with_margins = any(p.margins for p in panels_)
    fig, rows = panels(len(panels_), w=4.5, h=3.3, rows_per=2 if with_margins else 1, extra=(0, 1.1))
    for col, p in enumerate(panels_):
        ax = rows[0][col]
        xs = np.arange(len(p.reductions), dtype=float)
        targeted = [i for i, r in enumerate(p.reductions) if r.name != p.random]
        band = p.targeted_band()
        if band is not None and targeted:
            ax.fill_between(
                [min(targeted) - 0.4, max(targeted) + 0.4],
                *band,
                color=HELD_SHADE,
                lw=0,
                zorder=0,
                label="|targeted reduction| below the random mean (the held side, at the point estimates)",
            )
        elif targeted:
            ax.text(
                0.02,
                0.97,
                "random mean ≤ 0: no targeted\nreduction can be smaller",
                transform=ax.transAxes,
                va="top",
                fontsize=8,
            )
        ax.axhline(0.0, color="black", lw=1.1, ls="--", label="0: the random control holds when its CI lies above")
        random_x = [x for x, r in zip(xs, p.reductions) if r.name == p.random]
        if random_x and p.draws.size:
            offsets = np.linspace(0.15, 0.3, p.draws.size)
            ax.plot(random_x[0] + offsets, p.draws, ".", color="grey", ms=5, label="one random draw")
        _measured_points(ax, p.reductions, xs - 0.1, "tab:blue", "this run (95% CI over prompts)")
        _paper_marks(ax, p.reductions, xs, paper, source)
        ax.margins(y=0.15)  # room above the highest mark for its value
        ax.set_xticks(xs, [r.label for r in p.reductions])
        ax.set(title=p.model, xlim=(-0.6, len(xs) - 0.4), xlabel="ablation")
        first_col = col % 3 == 0  # the quantity in full there; each panel keeps its own scale, so a short label
        ax.set_ylabel(
            "reduction of mean ΔR²\n(fraction: 1 − ablated / unablated)" if first_col else "reduction (fraction)"
        )
        if not with_margins:
            continue
        ax2 = rows[1][col]
        if not p.margins:
            ax2.set_visible(False)
            continue
        xm = np.arange(len(p.margins), dtype=float)
        lo, hi = _span(p.margins, 0.0, *(float(paper[m.name]) for m in p.margins if scalar(paper.get(m.name))))
        ax2.axhspan(0.0, hi, color=HELD_SHADE, lw=0, zorder=0)
        ax2.axhline(0.0, color="black", lw=1.1, ls="--")
        _measured_points(ax2, p.margins, xm - 0.1, "tab:brown", "judged margin: random − |targeted| (paired 95% CI)")
        _paper_marks(ax2, p.margins, xm, paper, source)
        ax2.set_xticks(xm, [m.label for m in p.margins])
        ax2.set(xlim=(-0.6, len(xm) - 0.4), ylim=(lo, hi), xlabel="targeted ablation (held: CI above 0, shaded)")
        ax2.set_ylabel("random reduction − |targeted|\n(fraction of ΔR²)" if first_col else "margin (fraction)")
    handles = [h for row in rows for ax in row if ax.get_visible() for h in ax.get_legend_handles_labels()[0]]
    legend(fig, rows[0][0], outside=True, handles=handles, ncols=2)
    return fig


# ---- the rank-1 MLP ablation (App. B) ----------------------------------------------------------------


def _per_layer(f: dict | None, n: int) -> tuple[np.ndarray, np.ndarray | None] | None:
    """A figure's per-layer values (length ``n``) and their intervals as error-bar lengths [2][n], None without it."""
    v = (f or {}).get("value")
    if not (isinstance(v, list) and len(v) == n):
        return None
    y = arr(v)
    band = ci_band((f or {}).get("ci"), n)
    return y, None if band is None else np.abs(np.vstack([y - band[0], band[1] - y]))


@styled
def norm_removed_figure(by_model: dict, roles: dict, options: dict, claim: str = "") -> Figure | None:
    """Left, the share of the MLP output norm the rank-1 ablation removes at each ablated layer with its interval over
    prompts, against the claim's minimum (``floor``); right, the paired per-prompt topic-accuracy change (after −
    before) at each ablated layer with its interval, against the claim's largest drop (``accuracy_drop``), the held
    side shaded. An older record without the change: after − before at the point estimates."""
    name = next(iter(roles.get("", [])), None)
    series = {m: arr(v) for m, f in by_model.items() if isinstance(v := val(f, name), list) and v}
    if not series:
        return None
    floor, drop = threshold(claim, options.get("floor")), threshold(claim, options.get("accuracy_drop"))
    ablated = {m: arr(x) for m in series if isinstance(x := first(by_model[m], roles.get("x", []))[1], list)}
    levels = options.get("intervals", "interval over prompts")
    changes = {}
    for m, y in series.items():
        change = _per_layer(by_model[m].get(next(iter(roles.get("change", [])), "")), len(y))
        before = first(by_model[m], roles.get("before", []), scalar)[1]
        after = first(by_model[m], roles.get("after", []))[1]
        if change is None and scalar(before) and isinstance(after, list) and len(after) == len(y):
            change = (arr(after) - before, None)
        if change is not None:
            changes[m] = (*change, before, after)
    slots = sum(len(y) + 1 for y in series.values())  # a bar per ablated layer, a gap after each model
    fig = new(max(11.5, 0.8 * slots + 1.5) if changes else max(7.5, 0.5 * slots + 1.5), 5.0)
    axes = fig.subplots(1, 2 if changes else 1, squeeze=False, width_ratios=[1, 1] if changes else None)[0]
    ax = axes[0]
    pos, ticks = 0.0, []
    for (m, y), color in zip(series.items(), MODEL_COLORS):
        xs = pos + np.arange(len(y))
        err = (_per_layer(by_model[m].get(name), len(y)) or (y, None))[1]
        ax.bar(xs, y, 0.8, color=color, label=m, yerr=err, capsize=3, ecolor="black")
        lay = ablated.get(m, np.array([]))
        ticks += [(x, f"{int(lay[i])}" if i < len(lay) and np.isfinite(lay[i]) else "?") for i, x in enumerate(xs)]
        pos += len(y) + 1
    ax.set_xticks([t[0] for t in ticks], [t[1] for t in ticks])
    ax.plot([], [], ls="none", marker="|", color="black", ms=10, label=f"error bars: {levels}")
    if floor is not None:
        ax.axhline(floor, color="black", lw=1, ls="--", label=f"{floor:.3g}: the claim's minimum share removed")
    ax.set(
        xlabel="ablated layer (index), grouped by model",
        ylabel="MLP output norm removed\n(fraction, 0–1)",
        ylim=(0, None),
    )
    if changes:
        a2 = axes[1]
        pos, ticks = 0.0, []
        for (m, (y, err, before, after)), color in zip(changes.items(), MODEL_COLORS):
            xs = pos + np.arange(len(y))
            a2.errorbar(xs, y, yerr=err, fmt="o", ms=6, color=color, elinewidth=1.8, capsize=4, label="_change")
            lay = ablated.get(m, np.array([]))
            for i, x in enumerate(xs):
                layer = f"{int(lay[i])}" if i < len(lay) and np.isfinite(lay[i]) else "?"
                moved = f"\n{before:.2f}\n→{after[i]:.2f}" if scalar(before) and isinstance(after, list) else ""
                ticks.append((x, f"{layer}{moved}"))
            pos += len(y) + 1
        if drop is not None:
            bottom, top = a2.get_ylim()
            bottom, top = min(bottom, -1.2 * drop), max(top, 0.05)
            a2.axhspan(-drop, top, color=HELD_SHADE, lw=0, zorder=0, label="held side")
            a2.set_ylim(bottom, top)
            a2.axhline(-drop, color="black", lw=1, ls="--", label=f"−{drop:g}: the claim's largest accuracy drop")
        a2.axhline(0.0, color="grey", lw=0.8, ls=":", label="no change")
        a2.set_xticks([t[0] for t in ticks], [t[1] for t in ticks], fontsize=8)
        a2.set(
            xlabel="ablated layer (index; accuracy before→after), grouped by model",
            ylabel="topic-probe accuracy change\n(after − before, fraction correct)",
        )
        a2.plot([], [], "o", color="grey", label="paired accuracy change, per layer")
    handles = [h for a in axes for h in a.get_legend_handles_labels()[0]]
    legend(fig, ax, outside=True, handles=handles, ncols=3)
    return fig
