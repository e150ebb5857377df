"""The generic plot kinds: drawings that serve any claim whose figures fill their roles (harness/report/plots.py
registers them by name; a kind one claim alone uses lives beside its declaration, ``claims/<section>_plots.py``).

Each kind takes a ``PlotInput`` and returns its ``Drawing``s (figures, not files: the registry writes them), none when
its figures are absent. Roles (``FigureSpec.plot`` = ``kind`` or ``kind.role``):

* ``layer_profile`` (list per layer), ``layer_profile.zero`` (a scalar said in the legend) -> a per-layer array by
  relative depth, one line per model; the figure's declared options name the quantity (``title``, ``ylabel``,
  ``embedding_first``) and the claim's threshold drawn (``threshold``: its name and a legend label with ``{v}``)
* ``head_map`` (nested [layers][heads]: each head's effect zeroed alone), ``head_map.ci`` ([layers][heads][2]),
  ``head_map.marked`` ([layer, head]) -> one panel per model, the values written in the cells, the marked head
  outlined; the figures' options ``rows`` (what a row is) and ``unit``
* ``ablation_bars`` (scalar, ci [lo, hi] or null) -> bars with CI error bars, one figure per model, the figure's
  ``label`` option naming its bar

Wherever the registry holds the paper's value for a plotted quantity, it is drawn: for a run model that is the paper
model, its own value; for any other model every paper model's value, labelled with its name, with the registry's
tolerance as an error bar.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterator
from typing import NamedTuple

import numpy as np
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from harness.report.plot_style import (
    MODEL_COLORS,
    Drawing,
    PlotInput,
    apply_scale,
    arr,
    depth,
    draw_refs,
    figure_spec,
    first,
    grid,
    label,
    legend,
    new,
    profile_scale,
    ref_labels,
    refs_for,
    scalar,
    styled,
    threshold,
    val,
)

# ---- per-layer arrays ----------------------------------------------------------------------------------


class LayerProfile(NamedTuple):
    title: str
    ylabel: str
    embedding_first: bool  # index 0 is the embedding output, then one entry per decoder layer
    threshold: tuple | None = None  # (the claim's threshold name, legend label with {v})


def layer_profile_spec(claim: str, name: str) -> LayerProfile:
    """How a per-layer figure is drawn, from its declaration's options (title, ylabel, embedding_first, threshold)."""
    f = figure_spec(claim, name)
    o = dict(f.options) if f is not None else {}
    return LayerProfile(
        o.get("title", label(name)), o.get("ylabel", label(name)), o.get("embedding_first", False), o.get("threshold")
    )


def _profiled(by_model: dict, roles: dict) -> str | None:
    """The first plotted series some model recorded as a non-empty list."""
    return next(
        (n for n in roles.get("", []) if any(isinstance(val(f, n), list) and val(f, n) for f in by_model.values())),
        None,
    )


@styled
def layer_profile_figure(by_model: dict, roles: dict, claim: str = "") -> Figure | None:
    name = _profiled(by_model, roles)
    if name is None:
        return None
    spec = layer_profile_spec(claim, name)
    series = {m: arr(v) for m, f in by_model.items() if isinstance(v := val(f, name), list) and v}
    fig = new(7.5, 5.0)
    ax = fig.subplots()
    for (m, y), color in zip(series.items(), MODEL_COLORS):
        layers = len(y) - 1 if spec.embedding_first else len(y)
        ax.plot(depth(len(y)), y, "o-", ms=3.5, lw=1.2, color=color, label=f"{m} ({layers} layers)")
    extra = []
    if spec.threshold:
        t, text = spec.threshold
        v = threshold(claim, t)
        if v is not None:
            ax.axhline(v, color="black", lw=1, ls="--", label=text.format(v=v))
            extra.append(v)
    note = apply_scale(ax, profile_scale(*series.values(), *extra))
    zeros = {m: val(f, n) for m, f in by_model.items() for n in roles.get("zero", []) if scalar(val(f, n))}
    if zeros:
        at0 = [m for m, v in zeros.items() if v == 0]
        text = (
            f"position 0: cross-prompt std exactly 0 at every layer (all {len(at0)} models)"
            if len(at0) == len(zeros)
            else "position 0 max std: " + ", ".join(f"{m} {v:.3g}" for m, v in zeros.items())
        )
        ax.plot([], [], ls="none", label=text)
    xl = "layer (relative depth 0–1; 0 = embedding output)" if spec.embedding_first else "layer (relative depth 0–1)"
    ax.set(xlabel=xl, xlim=(-0.02, 1.02), ylabel=f"{spec.ylabel} ({note})")
    legend(fig, ax, outside=True)
    return fig


def layer_profile(plot: PlotInput) -> Iterator[Drawing]:
    name = _profiled(plot.by_model, plot.roles)
    what = None if name is None else plot.spec.caption or layer_profile_spec(plot.claim, name).title
    yield Drawing(layer_profile_figure(plot.by_model, plot.roles, plot.claim), what)


# ---- per-head ablation map ------------------------------------------------------------------------


@styled
def head_map_figure(by_model: dict, roles: dict, claim: str = "") -> Figure | None:
    """One panel per model, stacked: each head's effect when zeroed alone [layers][heads] (``head_map``), its value
    written in the cell with its interval under it (``head_map.ci``, [layers][heads][2]), the ``head_map.marked``
    head ([layer, head]) outlined; one colour scale across models."""
    grids = {
        m: g
        for m, f in by_model.items()
        if (g := grid(first(f, roles.get(""), lambda v: grid(v) is not None)[1])) is not None
    }
    if not grids:
        return None
    hi = max(float(np.nanmax(g)) for g in grids.values() if np.isfinite(g).any()) or 1.0
    widest = max(g.shape[1] for g in grids.values())
    fig = new(max(6.5, 0.62 * widest + 3.2), 1.25 * sum(g.shape[0] for g in grids.values()) + 1.1 * len(grids) + 0.6)
    axes = list(fig.subplots(len(grids), 1, squeeze=False)[:, 0])  # one row per model: heads read across
    specs = [f for n in roles.get("", []) if (f := figure_spec(claim, n)) is not None]
    options = {k: v for f in reversed(specs) for k, v in f.options.items()}  # what the map's figures declare
    im = None
    for ax, (m, g) in zip(axes, grids.items()):
        im = ax.imshow(g, aspect="auto", origin="lower", cmap="magma", vmin=0, vmax=hi, interpolation="nearest")
        ci = val(by_model[m], next(iter(roles.get("ci", [])), None))
        ci = np.asarray(ci, dtype=float) if ci is not None else None
        ci = ci if ci is not None and ci.shape == (*g.shape, 2) else None
        for (layer, head), v in np.ndenumerate(g):
            if np.isfinite(v):
                color = "white" if v < hi / 2 else "black"
                below = "" if ci is None else "\n[{:.3f}, {:.3f}]".format(*ci[layer, head])
                ax.text(head, layer, f"{v:.3f}{below}", ha="center", va="center", fontsize=6, color=color)
        marked = val(by_model[m], next(iter(roles.get("marked", [])), None))
        if isinstance(marked, list) and len(marked) == 2:
            ax.add_patch(Rectangle((marked[1] - 0.5, marked[0] - 0.5), 1, 1, fill=False, ec="tab:cyan", lw=2.2))
        ax.set_xticks(range(g.shape[1]))
        ax.set_yticks(range(g.shape[0]))
        ax.set(title=m, xlabel="head (index)", ylabel=f"{options.get('rows', 'layer')} (index)")
    if im is not None:
        unit = options.get("unit", "relative change of mean ΔR²")
        wrapped = "\n".join(textwrap.wrap(f"({unit})", 30))  # a long unit would run off the figure's edge
        fig.colorbar(im, ax=axes, label=f"|1 − ablated / unablated|\n{wrapped}")
    if roles.get("marked"):
        axes[0].plot([], [], ls="none", label="outlined: the layer-0 head with the largest effect")
    legend(fig, axes[0], outside=True)
    return fig


def head_map(plot: PlotInput) -> Iterator[Drawing]:
    yield Drawing(head_map_figure(plot.by_model, plot.roles, plot.claim))


# ---- bars with their intervals, one figure per model ----------------------------------------------------


def bar_label(claim: str, name: str) -> str:
    """A bar's legend label: its figure's declared ``label`` option, else its name in words."""
    f = figure_spec(claim, name)
    return (f.options.get("label") if f is not None else None) or label(name)


@styled
def ablation_bars_figure(claim: str, model: str, figs: dict, roles: dict) -> Figure | None:
    items = [(n, f) for n, f in figs.items() if n in roles.get("", []) and scalar(f.get("value"))]
    if not items:
        return None
    ys = np.array([float(f["value"]) for _, f in items])
    err = np.zeros((2, len(items)))
    for i, (_, f) in enumerate(items):
        ci = f.get("ci")
        if isinstance(ci, list) and len(ci) == 2 and all(scalar(c) for c in ci):
            err[:, i] = [max(ys[i] - ci[0], 0), max(ci[1] - ys[i], 0)]
    refs = [refs_for(claim, n, model, f) for n, f in items]
    fig = new(max(6.0, 1.35 * len(items) + 1.5), 5.4 if any(refs) else 4.2)
    ax = fig.subplots()
    xs = np.arange(len(items), dtype=float)
    ax.bar(
        xs,
        ys,
        0.5,
        yerr=err,
        capsize=4,
        color="tab:blue",
        ecolor="black",
        label="this run (95% CI)" if err.any() else "this run",
    )
    labels = ref_labels(refs)
    for x, r in zip(xs, refs):
        draw_refs(ax, r, x + 0.27, 0.42, labels=labels)
    names = [label(n.split(":", 1)[-1], "mean_delta_").replace(" rope", " RoPE") for n, _ in items]
    wide = max(map(len, names)) > 12
    ax.set_xticks(xs, names, rotation=20 if wide else 0, ha="right" if wide else "center")
    first_bin = all(n.startswith("first_bin") for n, _ in items)
    ranged = any("range" in (f.get("note") or "") for _, f in items)  # random heads: min-max over draws
    bars_note = "; random heads: min–max over draws" if ranged else ""
    ax.set(
        ylabel=("first-bin ΔR²" if first_bin else "mean ΔR²") + "\n(fraction of variance)",
        xlabel="condition" + (f" (error bars: 95% CI{bars_note})" if err.any() else ""),
    )
    if any(refs):  # a bar chart of this run alone needs no legend (one that would sit over a bar)
        legend(fig, ax, outside=True, ncols=1)
    return fig


def ablation_bars(plot: PlotInput, what: str | None = None) -> Iterator[Drawing]:
    """One figure per model (file ``<claim>_ablations_<model>.png``); ``what``: the caption, else the declaration's."""
    for m, figs in plot.by_model.items():
        yield Drawing(ablation_bars_figure(plot.claim, m, figs, plot.roles), what, m, "ablations")
