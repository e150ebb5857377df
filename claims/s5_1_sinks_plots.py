"""§5.1's own figures (claims/s5_1_sinks.py names them with ``draw=``): the sink against the topic probe, and the
sink under each anchor condition.

``sink_vs_probe``: the plotted series (probe accuracy [layers][positions]), ``.sink`` (sink [layers][positions]),
``.chance``: a scatter of sink magnitude (log x) against probe accuracy, one point per (layer, position) cell, one
panel per model. ``sink_bars``: scalars, one bar per (model, condition), the paper's values beside them, each bar
labelled by its figure's ``label`` option.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
from matplotlib.figure import Figure

from harness.report.plot_kinds import bar_label
from harness.report.plot_style import (
    MODEL_COLORS,
    Drawing,
    PlotInput,
    depth,
    draw_refs,
    first,
    grid,
    legend,
    new,
    panels,
    refs_for,
    scalar,
    styled,
    val,
)


def sink_vs_probe(plot: PlotInput) -> Iterator[Drawing]:
    yield Drawing(sink_vs_probe_figure(plot.by_model, plot.roles))


def sink_bars(plot: PlotInput) -> Iterator[Drawing]:
    yield Drawing(sink_bars_figure(plot.by_model, plot.roles, plot.claim))


@styled
def sink_vs_probe_figure(by_model: dict, roles: dict) -> Figure | None:
    cells = {}
    for m, f in by_model.items():
        acc = grid(first(f, roles.get("", []))[1])
        sink = grid(first(f, roles.get("sink", []))[1])
        if acc is not None and sink is not None and acc.shape == sink.shape:
            cells[m] = (sink, acc, first(f, roles.get("chance", []), scalar)[1])
    if not cells:
        return None
    fig, rows = panels(len(cells), w=4.0, h=3.6, sharey=True, extra=(1.0, 0.6))
    sc = None
    for col, (ax, (m, (sink, acc, chance))) in enumerate(zip(rows[0], cells.items())):
        cell_depth = np.repeat(depth(sink.shape[0])[:, None], sink.shape[1], axis=1)
        ok = np.isfinite(sink) & np.isfinite(acc) & (sink > 0)
        sc = ax.scatter(
            sink[ok],
            acc[ok],
            c=cell_depth[ok],
            cmap="viridis",
            vmin=0,
            vmax=1,
            s=14,
            alpha=0.85,
            edgecolors="none",
            label="(layer, position) cell",
        )
        top = np.argsort(np.where(ok, sink, -np.inf).ravel())[::-1][:3]
        ax.scatter(
            sink.ravel()[top],
            acc.ravel()[top],
            s=70,
            facecolors="none",
            edgecolors="red",
            lw=1.4,
            label="3 highest-sink cells",
        )
        if scalar(chance):
            ax.axhline(chance, color="black", lw=1, ls="--", label=f"chance ({chance:.2f})")
        ax.set_xscale("log")
        ax.set(
            title=f"{m} ({sink.shape[0]} layers × {sink.shape[1]} positions)",
            xlabel="sink magnitude (attention weight\nlater queries give the position; log scale)",
        )
        if col == 0:
            ax.set_ylabel("topic-probe accuracy (fraction correct)")
        hidden = [
            f"{n} {what}"
            for n, what in (
                (int((np.isnan(sink) & np.isfinite(acc)).sum()), "without a sink value (no later query)"),
                (int((sink <= 0).sum()), "with sink ≤ 0"),
            )
            if n
        ]
        if hidden:
            ax.text(0.02, 0.02, "not shown: cells " + "; ".join(hidden), transform=ax.transAxes, fontsize=8)
    fig.colorbar(sc, ax=rows[0], label="layer (relative depth 0–1)", shrink=0.9)
    legend(fig, rows[0][0], outside=True, ncols=3)
    return fig


@styled
def sink_bars_figure(by_model: dict, roles: dict, claim: str = "") -> Figure | None:
    names = [n for n in roles.get("", []) if any(scalar(val(f, n)) for f in by_model.values())]
    models = [m for m, f in by_model.items() if any(scalar(val(f, n)) for n in names)]
    if not models:
        return None
    colors = dict(zip(names, MODEL_COLORS))
    n_bars = sum(scalar(val(by_model[m], n)) for m in models for n in names)
    fig = new(max(6.5, 1.1 * n_bars + 1.5), 5.0)
    ax = fig.subplots()
    pos, centres = 0.0, []
    for m in models:
        start = pos
        for n in names:
            v = val(by_model[m], n)
            if not scalar(v):
                continue
            ax.bar(pos, float(v), 0.55, color=colors[n], label=bar_label(claim, n))
            draw_refs(ax, refs_for(claim, n, m, by_model[m].get(n)), pos + 0.28, 0.4)
            pos += 1
        centres.append(((start + pos - 1) / 2, m))
        pos += 0.6
    ax.set_xticks([c for c, _ in centres], [m for _, m in centres])
    ax.set(
        ylabel="peak sink magnitude\n(attention weight on the key, peak layer)",
        xlabel="model",
        ylim=(0, max(1.05, ax.get_ylim()[1])),
    )
    legend(fig, ax, outside=True)
    return fig
