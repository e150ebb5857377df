"""§5.2's own figure (claims/s5_2_sink_heads.py names it with ``draw=``): the sink-reading strength of every head.

``sink_heatmap``: the plotted series (nested [layers][heads]), one heatmap per model on one colour scale across
models, the top-decile heads the comparison picks circled.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from harness.report.plot_style import Drawing, PlotInput, first, grid, legend, new, styled
from harness.stats.heads import decile_split


def sink_heatmap(plot: PlotInput) -> Iterator[Drawing]:
    """One figure per model (file ``<claim>_sink_heatmap_<model>.png``), one colour scale across them."""
    vmax = heatmap_vmax(plot.by_model, plot.roles)
    for m, figs in plot.by_model.items():
        yield Drawing(sink_heatmap_figure(figs, plot.roles, vmax), model=m)


def top_decile(strength: np.ndarray, frac: float = 0.1) -> np.ndarray:
    """Flat indices of the top ``frac`` of heads (ceil, at least 1; ties to the lower index): the top group of
    harness.stats.heads.decile_split, which picks them for the consistency comparison, with NaN heads ranked last."""
    s = np.nan_to_num(np.asarray(strength, dtype=float).ravel(), nan=-np.inf)
    return decile_split(s, frac)[0]


@styled
def sink_heatmap_figure(figs: dict, roles: dict, vmax: float | None = None) -> Figure | None:
    values = grid(first(figs, roles.get(""), lambda v: grid(v) is not None)[1])
    if values is None:
        return None
    n_layers, width = values.shape
    fig = new(min(max(6.0, 2.8 + 0.28 * width), 12), min(max(4.4, 2.4 + 0.2 * n_layers), 10.5))
    ax = fig.subplots()
    hi = vmax if vmax is not None and np.isfinite(vmax) and vmax > 0 else np.nanmax(values)
    im = ax.imshow(values, aspect="auto", origin="lower", cmap="viridis", interpolation="nearest", vmin=0, vmax=hi)
    fig.colorbar(
        im, ax=ax, label="sink-reading strength per head\n(attention weight on position 0; one scale across models)"
    )
    if np.isfinite(values).any() and values.size >= 2:
        top = top_decile(values)
        ly, hx = np.unravel_index(top, values.shape)
        ax.plot(
            hx,
            ly,
            "o",
            ms=4,
            mfc="none",
            mec="red",
            mew=1.2,
            ls="none",
            label=f"top-decile heads ({len(top)}, the heads compared)",
        )
        legend(fig, ax, outside=True)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set(xlabel="head (index)", ylabel="layer (index)")
    return fig


def heatmap_vmax(by_model: dict, roles: dict) -> float | None:
    """The largest sink-reading strength over every model's heatmap: one colour scale across models."""
    highs = [
        np.nanmax(g)
        for f in by_model.values()
        if (g := grid(first(f, roles.get(""), lambda v: grid(v) is not None)[1])) is not None and np.isfinite(g).any()
    ]
    return float(max(highs)) if highs else None
