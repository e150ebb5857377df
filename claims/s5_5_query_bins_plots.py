"""§5.5's own figure (claims/s5_5_query_bins.py names it with ``draw=``): the per-query-bin profile of ΔR².

Roles of ``bin_profile``: the plotted series (lists per query bin, ``ci`` per bin drawn as bands), ``.x`` (n+1 bin
edges), ``.gap`` (causal − bidirectional per bin, with its paired CI). One curve per series on a log (or symlog) y
axis, one panel per model (the paper's Figure 1), the paper's first-bin values marked left of the first bin; the
gap in a second row.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator

import numpy as np
from matplotlib.figure import Figure

from harness.report.plot_style import (
    CURVE_STYLES,
    MODEL_COLORS,
    Drawing,
    PlotInput,
    apply_scale,
    arr,
    ci_band,
    draw_refs,
    first,
    label,
    legend,
    panels,
    paper_from,
    paper_style,
    profile_scale,
    refs_for,
    scalar,
    styled,
    val,
)


def bin_profile(plot: PlotInput) -> Iterator[Drawing]:
    yield Drawing(bin_profile_figure(plot.by_model, plot.roles, plot.claim))


@styled
def bin_profile_figure(by_model: dict, roles: dict, claim: str = "") -> Figure | None:
    curves = [(k, label(k, "delta_r2_by_bin_"), s, c) for k, s, c in zip(roles.get("", []), CURVE_STYLES, MODEL_COLORS)]
    models = [m for m, f in by_model.items() if any(isinstance(val(f, k), list) for k, *_ in curves)]
    if not models:
        return None
    gaps = {m: first(by_model[m], roles.get("gap", [])) for m in models}
    with_gap = any(v is not None for _, v in gaps.values())
    everything = [arr(v) for m in models for k, *_ in curves if isinstance(v := val(by_model[m], k), list)]
    scale = profile_scale(*everything)
    fig, rows = panels(len(models), h=3.4, rows_per=2 if with_gap else 1, sharey="row", extra=(0, 1.0))
    note = ""
    for col, (ax, m) in enumerate(zip(rows[0], models)):
        f = by_model[m]
        _, edges = first(f, roles.get("x", []))
        n = 0
        for key, curve_label, style, color in curves:
            y = val(f, key)
            if not isinstance(y, list):
                continue
            n = max(n, len(y))
            x = np.arange(len(y))
            ax.plot(x, arr(y), style, color=color, ms=5, label=f"{curve_label} (this run)")
            band = ci_band((f.get(key) or {}).get("ci"), len(y))
            if band is not None:
                ax.fill_between(x, *band, color=color, alpha=0.2, lw=0, label=f"{curve_label} 95% CI")
        note = apply_scale(ax, scale)
        # the paper's first-bin values, left of the first bin: one mark per paper model, in the curve's colour
        per_model: dict = defaultdict(list)
        for key, curve_label, _, color in curves:
            refs = refs_for(claim, paper_from(claim, key), m)
            draw_refs(ax, refs, -0.62, 0.42, color=color, ms=5, labels={r.model: "_paper" for r in refs})
            for r in refs:
                per_model[(r.model, r.label)].append(f"{curve_label} {r.value:.3g}")
        for (pm, lab), vals in per_model.items():  # legend proxies in black, values listed
            c, marker = paper_style(pm)
            ax.plot(
                [],
                [],
                marker,
                color="white",
                mec="black",
                ls="none",
                label=f"{lab.replace('paper,', 'paper first bin,')} (± tolerance): {', '.join(vals)}",
            )
        _bin_ticks(ax, edges, n)
        ax.set(title=m, xlabel="query position bin (tokens)")
        if col == 0:
            ax.set_ylabel(f"ΔR² per bin\n(fraction of variance)\n{note}")
        ax.set_xlim(-0.75, n - 0.5)
    if with_gap:
        gap_vals = [arr(v) for _, v in gaps.values() if v is not None]
        gscale = profile_scale(*gap_vals, signed=True)  # a gap can take either sign: symlog
        for col, (ax, m) in enumerate(zip(rows[1], models)):
            name, g = gaps[m]
            if g is None:
                ax.set_visible(False)
                continue
            x = np.arange(len(g))
            ax.plot(x, arr(g), "o-", color="black", ms=4, label="causal − bidirectional")
            band = ci_band((by_model[m].get(name) or {}).get("ci"), len(g))
            if band is not None:
                ax.fill_between(x, *band, color="grey", alpha=0.3, lw=0, label="paired 95% CI of the gap")
            ax.axhline(0.0, color="grey", lw=0.8, ls=":")
            gnote = apply_scale(ax, gscale)
            _bin_ticks(ax, first(by_model[m], roles.get("x", []))[1], len(g))
            ax.set(xlabel="query position bin (tokens)", xlim=(-0.75, len(g) - 0.5))
            if col == 0:
                ax.set_ylabel(f"causal − bidirectional ΔR²\n(fraction of variance)\n{gnote}")
    handles = [h for row in rows for ax in row if ax.get_visible() for h in ax.get_legend_handles_labels()[0]]
    legend(fig, rows[0][0], outside=True, handles=handles)
    return fig


def _bin_ticks(ax, edges, n: int):
    if isinstance(edges, list) and len(edges) == n + 1:
        labels = [f"{_fmt_edge(edges[i])}–{_fmt_edge(edges[i + 1])}" for i in range(n)]
        ax.set_xticks(np.arange(n), labels, rotation=30 if n > 5 else 0, ha="right" if n > 5 else "center")
    else:
        ax.set_xticks(np.arange(n))


def _fmt_edge(e) -> str:
    return f"{e:g}" if scalar(e) else str(e)
