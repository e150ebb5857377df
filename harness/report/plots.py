"""PNG figures for the run report, chosen by the plot kind each figure declares in its claim's declaration.

Each plot function is pure (figure dicts in, PNG path out) and returns None, writing nothing, when
its figures are absent; its ``*_figure`` twin returns the matplotlib Figure instead (for tests). ``by_model``
maps model -> {figure name -> figure dict} for one claim; ``roles`` maps a role of the plot kind to the
figure names that fill it ("" for the plotted series). Plot kinds (``FigureSpec.plot`` = ``kind`` or
``kind.role``):

* ``bin_profile`` (lists per query bin, ``ci`` per bin drawn as bands), ``bin_profile.x`` (n+1 bin edges),
  ``bin_profile.gap`` (causal - bidirectional per bin, with its paired CI)
  -> per-query-bin profile on a log (or symlog) y axis, one curve per figure, one panel per model (the
  paper's Figure 1), the paper's first-bin values marked; the gap in a second row
* ``layer_ratio`` (list per layer, nulls allowed) -> layer-wise ratio by relative depth, one line per model,
  the paper's mean ratio per paper model as dashed lines
* ``layer_profile`` (list per layer), ``layer_profile.zero`` (a scalar said in the legend)
  -> a per-layer array by relative depth, one line per model (the figure's declared options name the quantity)
* ``norm_removed`` (fraction per ablated layer), ``.x`` (ablated layers), ``.before``, ``.after``, ``.chance``
  -> the rank-1 MLP ablation: norm removed (with the claim's minimum) and topic accuracy before/after
* ``sink_vs_probe`` (accuracy [layers][positions]), ``.sink`` (sink [layers][positions]), ``.chance``
  -> scatter of sink magnitude (log x) against probe accuracy, one point per (layer, position) cell
* ``sink_heatmap`` (nested [layers][heads]) -> heatmap per model, one colour scale across models
* ``sink_bars`` (scalars) -> bars per (model, condition)
* ``length_scaling`` (measured), ``length_scaling.x`` (lengths), ``length_scaling.fit`` (fitted curves),
  ``length_scaling.aic`` (ΔAIC), ``length_scaling.interior`` (whether the breakpoint is inside the grid)
  -> log-log scatter with the fits, one panel per model; fits that coincide are drawn once, the legend
  saying so
* ``ablation_bars`` (scalar, ci [lo, hi] or null) -> bars with CI error bars per (claim, model)
* ``head_map`` (nested [layers][heads]: each head's effect zeroed alone), ``head_map.marked`` ([layer, head])
  -> one panel per model, the values written in the cells, the marked head outlined

Wherever the registry holds the paper's value for a plotted quantity, it is drawn: for a run model that is
the paper model, its own value; for any other model every paper model's value, labelled with its name,
with the registry's tolerance as an error bar.

The report's style (sizes, colours, DPI) and the helpers every kind shares, the paper-reference marks among
them, live in harness/report/plot_style.py.
"""

from __future__ import annotations

import math
import re
import textwrap
import warnings
from collections import defaultdict
from pathlib import Path
from typing import NamedTuple

import numpy as np
from matplotlib.figure import Figure
from matplotlib.patches import Patch, Rectangle
from matplotlib.ticker import MaxNLocator, NullFormatter, ScalarFormatter

from harness.outcome.claim_result import ClaimResult, TargetKind
from harness.outcome.results import RunResult
from harness.report.plot_style import (
    CURVE_STYLES,
    FIT_STYLES,
    HELD_SHADE,
    MODEL_COLORS,
    PaperRef,
    Plot,
    add_title,
    apply_scale,
    arr,
    ci_band,
    depth,
    draw_refs,
    first,
    label,
    legend,
    new,
    panels,
    paper_style,
    profile_scale,
    ref_labels,
    refs_for,
    save,
    scalar,
    styled,
    val,
)
from harness.report.summary_plot import EQUIVALENCE, ONE_SIDED, Criterion, parse_criterion, write_summary
from harness.spec.claims import CLAIMS, FigureSpec, PlotSpec, UndeclaredFigure, claim_test
from harness.spec.decision import interval_of
from harness.stats.heads import decile_split


def plot_spec(claim: str, kind: str) -> PlotSpec | None:
    """What a claim's declaration says of one plot kind (its caption and options), or None."""
    spec = CLAIMS.get(claim)
    return spec.plots.get(kind) if spec is not None else None


def claim_caption(claim: str, kind: str, default: str) -> str:
    """A plot's caption after the claim id: its declaration's, else ``default``."""
    return getattr(plot_spec(claim, kind), "caption", None) or default


def figure_spec(claim: str, name: str | None) -> FigureSpec | None:
    """A recorded figure's declaration, or None (undeclared: a results.json of another version)."""
    spec = CLAIMS.get(claim)
    try:
        return spec.figure(name) if spec is not None and name else None
    except UndeclaredFigure:
        return None


def paper_from(claim: str, series: str | None) -> str | None:
    """The figure whose paper value is drawn beside a plotted series (its declared ``paper_from``), or None."""
    f = figure_spec(claim, series)
    return f.paper_from if f is not None else None


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


# ---- bin profile (§5.5) -----------------------------------------------------------------------------


@styled
def bin_profile_figure(by_model: dict, roles: dict, *, claim: str = "", title: str | None = None) -> Figure | None:
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
    add_title(fig, title)
    return fig


def _bin_ticks(ax, edges, n: int):
    if isinstance(edges, list) and len(edges) == n + 1:
        labels = [f"{_fmt_edge(edges[i])}–{_fmt_edge(edges[i + 1])}" for i in range(n)]
        ax.set_xticks(np.arange(n), labels, rotation=30 if n > 5 else 0, ha="right" if n > 5 else "center")
    else:
        ax.set_xticks(np.arange(n))


def _fmt_edge(e) -> str:
    return f"{e:g}" if scalar(e) else str(e)


def bin_profile(by_model: dict, roles: dict, out: Path, **kw) -> Path | None:
    return save(bin_profile_figure(by_model, roles, **kw), out)


# ---- layer-wise ratio and its depth slope (§5.6) -----------------------------------------------------


class SlopeSeries(NamedTuple):
    """One measurement of the layer ratio: a model's layer-wise ratio at one length, the slope its criterion judges (the
    least-squares change of r_l over the whole relative depth, ``leakage_view.depth_slope``) with its 95% CI, and that
    criterion (None where the record carries neither a decision nor a flat bound)."""

    model: str
    seq_len: float | None
    ratio: np.ndarray
    slope: float | None
    slope_ci: tuple[float, float] | None
    criterion: Criterion | None


class SlopeGeometry(NamedTuple):
    """What a layer-ratio panel draws over relative depth ``d``: the fitted line and its 95% CI band (lines through the
    layers' centroid with the CI's slopes: a least-squares line passes through it), the threshold lines of the
    criterion through the same centroid, and the held region between them for a band ("flat": inside ±b)."""

    fit: np.ndarray
    band: tuple[np.ndarray, np.ndarray] | None
    thresholds: list[tuple[float, np.ndarray]]  # (slope, line)
    held: tuple[np.ndarray, np.ndarray] | None


def slope_series(by_model: dict, roles: dict, records: list | None = None, claim: str = "") -> list[SlopeSeries]:
    """One series per record carrying the plotted ratio (a model measured at two lengths gets two), else one per
    model of ``by_model``; the criterion is the record's decision on the slope, else ± its flat bound."""
    name = next(iter(roles.get("", [])), None)
    sources = (
        [
            (
                r.model or "-",
                {f["name"]: f for f in r.figures if isinstance(f, dict) and "name" in f},
                r,
            )
            for r in records
            if r.claim == claim
        ]
        if records
        else [(m, figs, None) for m, figs in by_model.items()]
    )
    out = []
    for model, figs, record in sources:
        ratio = val(figs, name)
        if not (isinstance(ratio, list) and ratio):
            continue
        slope = val(figs, "depth_slope")
        slope = float(slope) if scalar(slope) else None
        out.append(
            SlopeSeries(
                model,
                float(n) if scalar(n := val(figs, "seq_len")) else None,
                arr(ratio),
                slope,
                interval_of((figs.get("depth_slope") or {}).get("ci")),
                _slope_criterion(record, figs, slope),
            )
        )
    return out


def _slope_criterion(record: ClaimResult | None, figs: dict, slope: float | None) -> Criterion | None:
    for d in record.decisions if record is not None else ():
        est = d.get("estimate")
        if slope is not None and scalar(est) and math.isclose(float(est), slope, rel_tol=1e-9, abs_tol=1e-15):
            return parse_criterion(d.get("criterion"))
    bound = val(figs, "flat_bound")
    return Criterion(EQUIVALENCE, -float(bound), float(bound)) if scalar(bound) and bound > 0 else None


def slope_geometry(s: SlopeSeries, d: np.ndarray) -> SlopeGeometry | None:
    """The lines a layer-ratio panel draws over depths ``d`` (see SlopeGeometry), None without a recorded slope."""
    x = depth(len(s.ratio))
    ok = np.isfinite(s.ratio)
    if s.slope is None or not ok.any():
        return None
    x0, y0 = float(x[ok].mean()), float(s.ratio[ok].mean())
    line = lambda k: y0 + k * (d - x0)
    band = None
    if s.slope_ci is not None:
        a, b = line(s.slope_ci[0]), line(s.slope_ci[1])
        band = (np.minimum(a, b), np.maximum(a, b))
    thresholds, held = [], None
    if s.criterion is not None:
        slopes = [s.criterion.low] if s.criterion.kind == ONE_SIDED else [s.criterion.low, s.criterion.high]
        thresholds = [(k, line(k)) for k in slopes]
        if s.criterion.kind == EQUIVALENCE:
            a, b = line(s.criterion.low), line(s.criterion.high)
            held = (np.minimum(a, b), np.maximum(a, b))
    return SlopeGeometry(line(s.slope), band, thresholds, held)


def _criterion_words(c: Criterion | None) -> str:
    if c is None:
        return "no criterion recorded"
    if c.kind == EQUIVALENCE:
        return f"held inside [{c.low:g}, {c.high:g}]"
    return f"held {'>' if c.above else '<'} {c.low:g}"


@styled
def layer_ratio_figure(
    by_model: dict, roles: dict, *, claim: str = "", title: str | None = None, records: list | None = None
) -> Figure | None:
    """Per measurement (model and length), r_l by relative depth with the fitted depth slope its criterion
    judges, the slope's 95% CI as a band, the criterion's threshold slopes (dashed, through the same centre; the held
    region shaded for "flat") and the paper's mean ratios (dotted)."""
    series = slope_series(by_model, roles, records, claim)
    if not series:
        return None
    fig, rows = panels(len(series), w=4.3, h=3.6, extra=(0, 1.0))
    colors = {m: c for m, c in zip(dict.fromkeys(s.model for s in series), MODEL_COLORS)}
    d = np.linspace(0.0, 1.0, 50)
    for col, (ax, s) in enumerate(zip(rows[0], series)):
        color = colors[s.model]
        ax.plot(depth(len(s.ratio)), s.ratio, "o", ms=3.5, color=color, alpha=0.8, label="r_l per layer (this run)")
        geo = slope_geometry(s, d)
        if geo is not None:
            if geo.held is not None:
                ax.fill_between(d, *geo.held, color=HELD_SHADE, lw=0, zorder=0, label="held region of the slope")
            for _, line in geo.thresholds:
                ax.plot(d, line, "--", color="black", lw=1.1, label="criterion's threshold slope(s)")
            if geo.band is not None:
                ax.fill_between(d, *geo.band, color=color, alpha=0.25, lw=0, label="95% CI of the fitted slope")
            ax.plot(d, geo.fit, "-", color=color, lw=2, label="fitted depth slope (least squares)")
        for r in refs_for(claim, paper_from(claim, next(iter(roles.get("", [])), None)), s.model):
            c, _ = paper_style(r.model)
            ax.axhline(r.value, color=c, lw=1.0, ls=":", label=f"{r.label} mean r_l: {r.value:.2f}")
        head = f"{s.model}" + (f", {s.seq_len:g} tokens" if s.seq_len else "")
        if s.slope is not None:
            ci = f" [{s.slope_ci[0]:.3g}, {s.slope_ci[1]:.3g}]" if s.slope_ci else ""
            head += f"\nslope {s.slope:+.3g}{ci}; {_criterion_words(s.criterion)}"
        ax.set_title(head, fontsize=9)
        ax.set(xlabel="layer (relative depth 0–1)", xlim=(-0.03, 1.03))
        # the quantity in full beside each row's first panel; the rest keep their own scales, so a short label
        ax.set_ylabel("r_l = ΔR²(bidirectional) / ΔR²(causal)\n(ratio per layer)" if col % 3 == 0 else "r_l (ratio)")
    handles = [h for ax in rows[0] for h in ax.get_legend_handles_labels()[0]]
    legend(fig, rows[0][0], outside=True, handles=handles, ncols=3)
    add_title(fig, title)
    return fig


def layer_ratio(by_model: dict, roles: dict, out: Path, **kw) -> Path | None:
    return save(layer_ratio_figure(by_model, roles, **kw), out)


# ---- per-layer arrays (App. A) ---------------------------------------------------------------------


@styled
def layer_profile_figure(by_model: dict, roles: dict, *, claim: str = "", title: str | None = None) -> Figure | None:
    name = next(
        (n for n in roles.get("", []) if any(isinstance(val(f, n), list) and val(f, n) for f in by_model.values())),
        None,
    )
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
        try:
            v = CLAIMS[claim].threshold(t)
            ax.axhline(v, color="black", lw=1, ls="--", label=text.format(v=v))
            extra.append(v)
        except KeyError:
            pass
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
    add_title(fig, f"{claim} — {spec.title}" if title is None else title)
    return fig


def layer_profile(by_model: dict, roles: dict, out: Path, **kw) -> Path | None:
    return save(layer_profile_figure(by_model, roles, **kw), out)


# ---- rank-1 MLP ablation (App. B) -------------------------------------------------------------------


@styled
def norm_removed_figure(by_model: dict, roles: dict, *, claim: str = "", title: str | None = None) -> Figure | None:
    name = next(iter(roles.get("", [])), None)
    series = {m: arr(v) for m, f in by_model.items() if isinstance(v := val(f, name), list) and v}
    if not series:
        return None
    try:
        floor_name = getattr(plot_spec(claim, "norm_removed"), "options", {}).get("floor")
        floor = CLAIMS[claim].threshold(floor_name) if floor_name else None
    except KeyError:
        floor = None
    acc = {
        m: (
            first(by_model[m], roles.get("before", []), scalar)[1],
            first(by_model[m], roles.get("after", []))[1],
            first(by_model[m], roles.get("chance", []), scalar)[1],
        )
        for m in series
    }
    with_acc = any(b is not None or a is not None for b, a, _ in acc.values())
    fig = new(11.5 if with_acc else 7.5, 5.0)
    axes = fig.subplots(1, 2 if with_acc else 1, squeeze=False, width_ratios=[3, 2] if with_acc else None)[0]
    ax = axes[0]
    ablated = {m: arr(x) for m in series if isinstance(x := first(by_model[m], roles.get("x", []))[1], list)}
    per_ablated = all(m in ablated and len(ablated[m]) == len(y) for m, y in series.items())
    if per_ablated:  # one value per ablated layer (the last three): bars grouped by model
        pos, ticks = 0.0, []
        for (m, y), color in zip(series.items(), MODEL_COLORS):
            xs = pos + np.arange(len(y))
            ax.bar(xs, y, 0.8, color=color, label=m)
            ticks += [(x, f"{int(l)}" if np.isfinite(l) else "?") for x, l in zip(xs, ablated[m])]
            pos += len(y) + 1
        ax.set_xticks([t[0] for t in ticks], [t[1] for t in ticks])
        ax.set_xlabel("ablated layer (index), grouped by model")
    else:  # a value at every layer: lines by relative depth, the ablated layers starred
        for (m, y), color in zip(series.items(), MODEL_COLORS):
            x = depth(len(y))
            ax.plot(x, y, "o-", ms=3, lw=1.1, color=color, label=f"{m} ({len(y)} layers)")
            idx = [int(l) for l in ablated.get(m, []) if np.isfinite(l) and 0 <= int(l) < len(y)]
            if idx:
                ax.plot(x[idx], y[idx], "*", ms=12, color=color, mec="black", label="_ablated")
        if any(ablated.values()):
            ax.plot([], [], "*", ms=12, color="white", mec="black", ls="none", label="ablated layer")
        ax.set(xlabel="layer (relative depth 0–1)", xlim=(-0.02, 1.02))
    if floor is not None:
        ax.axhline(
            floor, color="black", lw=1, ls="--", label=f"{floor:g}: App. B's smallest per-layer value (claim minimum)"
        )
    ax.set(ylabel="fraction of MLP output norm removed\n(fraction, 0–1)", ylim=(0, None))
    if with_acc:
        a2 = axes[1]
        pos, ticks = 0.0, []
        for (m, (before, after, chance)), color in zip(acc.items(), MODEL_COLORS):
            after = arr(after) if isinstance(after, list) else np.array([])
            xs = pos + np.arange(max(len(after), 1))
            if after.size:
                a2.bar(xs, after, 0.8, color=color, alpha=0.85, label="_after")
            if scalar(before):
                a2.hlines(before, xs[0] - 0.45, xs[-1] + 0.45, color="black", lw=2, label="before (no ablation)")
            if scalar(chance):
                a2.hlines(chance, xs[0] - 0.45, xs[-1] + 0.45, color="grey", lw=1.2, ls=":", label="chance")
            lay = ablated.get(m, [])
            ticks += [(x, f"{int(lay[i])}" if i < len(lay) and np.isfinite(lay[i]) else "") for i, x in enumerate(xs)]
            pos += len(xs) + 1
        a2.set_xticks([t[0] for t in ticks], [t[1] for t in ticks])
        a2.set(
            xlabel="ablated layer (index), grouped by model",
            ylim=(0, 1.05),
            ylabel="topic-probe accuracy at the target\n(fraction correct)",
        )
        handles = [h for a in axes for h in a.get_legend_handles_labels()[0]]
        handles.append(Patch(facecolor="lightgrey", label="accuracy after ablating that layer (bar, model's colour)"))
        legend(fig, ax, outside=True, handles=handles, ncols=3)
        add_title(fig, title)
    else:
        legend(fig, ax, outside=True)
        add_title(fig, title)
    return fig


def norm_removed(by_model: dict, roles: dict, out: Path, **kw) -> Path | None:
    return save(norm_removed_figure(by_model, roles, **kw), out)


# ---- sink vs probe accuracy (§5.1) ------------------------------------------------------------------


def _grid(v) -> np.ndarray | None:
    if not (isinstance(v, list) and v and all(isinstance(row, list) for row in v)):
        return None
    width = max(len(row) for row in v)
    return np.array([list(arr(row)) + [math.nan] * (width - len(row)) for row in v], dtype=float)


@styled
def sink_vs_probe_figure(by_model: dict, roles: dict, *, claim: str = "", title: str | None = None) -> Figure | None:
    cells = {}
    for m, f in by_model.items():
        acc = _grid(first(f, roles.get("", []))[1])
        sink = _grid(first(f, roles.get("sink", []))[1])
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
    add_title(fig, title)
    return fig


def sink_vs_probe(by_model: dict, roles: dict, out: Path, **kw) -> Path | None:
    return save(sink_vs_probe_figure(by_model, roles, **kw), out)


# ---- sink heatmap (§5.2) ----------------------------------------------------------------------------


def top_decile(strength: np.ndarray, frac: float = 0.1) -> np.ndarray:
    """Flat indices of the top ``frac`` of heads (ceil, at least 1; ties to the lower index): the top group of
    harness.stats.heads.decile_split, which picks them for the consistency comparison, with NaN heads ranked last."""
    s = np.nan_to_num(np.asarray(strength, dtype=float).ravel(), nan=-np.inf)
    return decile_split(s, frac)[0]


@styled
def sink_heatmap_figure(
    model: str, figs: dict, roles: dict, *, claim: str = "", title: str | None = None, vmax: float | None = None
) -> Figure | None:
    grid = _grid(first(figs, roles.get(""), lambda v: _grid(v) is not None)[1])
    if grid is None:
        return None
    n_layers, width = grid.shape
    fig = new(min(max(6.0, 2.8 + 0.28 * width), 12), min(max(4.4, 2.4 + 0.2 * n_layers), 10.5))
    ax = fig.subplots()
    hi = vmax if vmax is not None and np.isfinite(vmax) and vmax > 0 else np.nanmax(grid)
    im = ax.imshow(grid, aspect="auto", origin="lower", cmap="viridis", interpolation="nearest", vmin=0, vmax=hi)
    fig.colorbar(
        im, ax=ax, label="sink-reading strength per head\n(attention weight on position 0; one scale across models)"
    )
    if np.isfinite(grid).any() and grid.size >= 2:
        top = top_decile(grid)
        ly, hx = np.unravel_index(top, grid.shape)
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
    add_title(fig, f"{claim} — sink-reading strength per head — {model}" if title is None else title)
    return fig


def sink_heatmap(model: str, figs: dict, roles: dict, out: Path, **kw) -> Path | None:
    return save(sink_heatmap_figure(model, figs, roles, **kw), out)


def heatmap_vmax(by_model: dict, roles: dict) -> float | None:
    """The largest sink-reading strength over every model's heatmap: one colour scale across models."""
    highs = [
        np.nanmax(g)
        for f in by_model.values()
        if (g := _grid(first(f, roles.get(""), lambda v: _grid(v) is not None)[1])) is not None and np.isfinite(g).any()
    ]
    return float(max(highs)) if highs else None


# ---- per-head ablation map ------------------------------------------------------------------------


@styled
def head_map_figure(by_model: dict, roles: dict, *, claim: str = "", title: str | None = None) -> Figure | None:
    """One panel per model, stacked: each head's effect when zeroed alone [layers][heads] (``head_map``), its value written in
    the cell with its interval under it (``head_map.ci``, [layers][heads][2]), the ``head_map.marked`` head ([layer,
    head]) outlined; one colour scale across models."""
    grids = {
        m: g
        for m, f in by_model.items()
        if (g := _grid(first(f, roles.get(""), lambda v: _grid(v) is not None)[1])) is not None
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
    add_title(fig, f"{claim} — per-head ablation map" if title is None else title)
    return fig


def head_map(by_model: dict, roles: dict, out: Path, **kw) -> Path | None:
    return save(head_map_figure(by_model, roles, **kw), out)


# ---- bars (sink conditions, ablations) ----------------------------------------------------------------


def bar_label(claim: str, name: str) -> str:
    """A bar's legend label: its figure's declared ``label`` option, else its name in words."""
    f = figure_spec(claim, name)
    return (f.options.get("label") if f is not None else None) or label(name)


@styled
def sink_bars_figure(by_model: dict, roles: dict, *, claim: str = "", title: str | None = None) -> Figure | None:
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
    add_title(fig, title)
    return fig


def sink_bars(by_model: dict, roles: dict, out: Path, **kw) -> Path | None:
    return save(sink_bars_figure(by_model, roles, **kw), out)


@styled
def ablation_bars_figure(claim: str, model: str, figs: dict, roles: dict, *, title: str | None = None) -> Figure | None:
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
    add_title(
        fig, f"{claim} — {claim_caption(claim, 'ablation_bars', 'ablations')} — {model}" if title is None else title
    )
    return fig


def ablation_bars(claim: str, model: str, figs: dict, roles: dict, out: Path, **kw) -> Path | None:
    return save(ablation_bars_figure(claim, model, figs, roles, **kw), out)


# ---- ratios a claim's criteria judge -----------------------------------------------------------------


class RatioCriterion(NamedTuple):
    """One ratio a claim's criteria judge, as its declaration's "ablation_ratios" options give it (figure -> these)."""

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


def ratio_items(claim: str, model: str, figs: dict) -> list[RatioItem]:
    """A claim's recorded ratios with their criteria (its declaration's "ablation_ratios"); the paper's ratio is the
    declared value where there is one, else the ratio of the paper's two figures it divides."""
    spec = CLAIMS.get(claim)
    out = []
    ratios = getattr(plot_spec(claim, "ablation_ratios"), "options", {})
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
def ablation_ratios_figure(claim: str, model: str, figs: dict, *, title: str | None = None) -> Figure | None:
    """One model: each judged ratio of an ablation's mean ΔR² to causal (and identity- to scrambled-RoPE) with
    its paired 95% CI, over the held side of its criterion (shaded, the threshold dashed) and the paper's ratios."""
    items = ratio_items(claim, model, figs)
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
    add_title(
        fig, f"{claim} — {claim_caption(claim, 'ablation_bars', 'ablations')} — {model}" if title is None else title
    )
    return fig


def ablation_ratios(claim: str, model: str, figs: dict, out: Path, **kw) -> Path | None:
    return save(ablation_ratios_figure(claim, model, figs, **kw), out)


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


def reduction_panels(by_model: dict, claim: str) -> list[ReductionPanel]:
    """One panel per model with the reductions the claim's declaration names (its "reductions" options: the
    reductions by label, the margins, the random control's figure and its draws')."""
    o = getattr(plot_spec(claim, "reductions"), "options", {})
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


def _paper_sentence(claim: str) -> str:
    """The paper's numbers for the claim's tests where the registry words them and records no per-figure value."""
    spec = CLAIMS.get(claim)
    texts = [c.paper for t in (spec.tests if spec else {}) if (c := claim_test(t)) is not None and c.paper]
    return "; ".join(dict.fromkeys(texts))


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
def reductions_figure(by_model: dict, *, claim: str = "", title: str | None = None) -> Figure | None:
    """One column per model: above, each ablation's reduction of mean ΔR² with its 95% CI (the random draws as
    dots, the paper's values where the registry holds them), the random control's criterion (its CI above 0) and,
    shaded, the targeted reductions smaller than the random mean; below, the margins the criterion judges (mean
    random reduction − |targeted reduction|, held when the CI lies above 0)."""
    panels_ = reduction_panels(by_model, claim)
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
        refs = [refs_for(claim, r.name, p.model, by_model[p.model].get(r.name)) for r in p.reductions]
        labels = ref_labels(refs)
        for x, r in zip(xs, refs):
            draw_refs(ax, r, x + 0.02, 0.35, labels=labels)
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
        lo, hi = _span(p.margins, 0.0)
        ax2.axhspan(0.0, hi, color=HELD_SHADE, lw=0, zorder=0)
        ax2.axhline(0.0, color="black", lw=1.1, ls="--")
        _measured_points(ax2, p.margins, xm, "tab:purple", "judged margin: random − |targeted| (paired 95% CI)")
        ax2.set_xticks(xm, [m.label for m in p.margins])
        ax2.set(xlim=(-0.6, len(xm) - 0.4), ylim=(lo, hi), xlabel="targeted ablation (held: CI above 0, shaded)")
        ax2.set_ylabel("random reduction − |targeted|\n(fraction of ΔR²)" if first_col else "margin (fraction)")
    paper = _paper_sentence(claim)
    if paper:
        rows[0][0].plot([], [], ls="none", label=f"paper, no per-model values in the registry: {paper}")
    handles = [h for row in rows for ax in row if ax.get_visible() for h in ax.get_legend_handles_labels()[0]]
    legend(fig, rows[0][0], outside=True, handles=handles, ncols=2)
    add_title(fig, title)
    return fig


def reductions(by_model: dict, out: Path, **kw) -> Path | None:
    return save(reductions_figure(by_model, **kw), out)


# ---- length scaling (§5.8) -------------------------------------------------------------------------


def fits_coincide(a, b, rtol: float = 1e-6) -> bool:
    """Whether two fitted curves are the same curve (the piecewise fit collapsed onto the power law)."""
    a, b = arr(a), arr(b)
    return a.shape == b.shape and a.size > 0 and bool(np.allclose(a, b, rtol=rtol, atol=0, equal_nan=True))


@styled
def length_scaling_figure(by_model: dict, roles: dict, *, claim: str = "", title: str | None = None) -> Figure | None:
    x_name, y_name = next(iter(roles.get("x", [])), None), next(iter(roles.get("", [])), None)
    fits = [
        (k, label(k).removesuffix(" prediction").replace("power law", "power-law"), s)
        for k, s in zip(roles.get("fit", []), FIT_STYLES)
    ]
    models = [m for m, f in by_model.items() if isinstance(val(f, x_name), list) and isinstance(val(f, y_name), list)]
    if not models:
        return None
    # which fitted curves coincide, per model: the second is then not drawn, and the legend says so
    same: dict = {}
    for m in models:
        f, n = by_model[m], len(val(by_model[m], x_name))
        curves = [(k, lab) for k, lab, _ in fits if isinstance(val(f, k), list) and len(val(f, k)) == n]
        for i, (k, lab) in enumerate(curves):
            earlier = next(((k0, l0) for k0, l0 in curves[:i] if fits_coincide(val(f, k0), val(f, k))), None)
            if earlier is not None:
                interior = first(f, roles.get("interior", []), lambda v: isinstance(v, bool))[1]
                where = "" if interior else " (breakpoint at the first length)"
                same.setdefault((earlier[0], f"{lab} fit = {earlier[1]} fit{where}"), []).append((m, k))
    fig, rows = panels(len(models), w=4.0, h=3.4, sharey=True, extra=(0, 0.5))
    for col, (ax, m) in enumerate(zip(rows[0], models)):
        f = by_model[m]
        x = arr(val(f, x_name))
        ax.plot(x, arr(val(f, y_name)), "ko", ms=4, label="measured")
        hidden = {k for pairs in same.values() for mm, k in pairs if mm == m}
        for key, fit_label, style in fits:
            y = val(f, key)
            if key in hidden or not (isinstance(y, list) and len(y) == len(x)):
                continue
            merged = [
                (text, pairs) for (k0, text), pairs in same.items() if k0 == key and any(mm == m for mm, _ in pairs)
            ]
            if merged:  # an invisible second line: say so in this line's legend entry (naming the models
                text, pairs = merged[0]  # when not every model's fits coincide)
                ms = sorted({mm for mm, _ in pairs})
                fit_label = text if len(ms) == len(models) else f"{text}: {', '.join(ms)}"
            else:
                fit_label = f"{fit_label} fit"
            ax.plot(x, arr(y), style, lw=1.4, label=fit_label)
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_formatter(ScalarFormatter())
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_yscale("log", nonpositive="mask")
        aic = first(f, roles.get("aic", []), scalar)[1]
        ax.set(
            title=m + (f"\nΔAIC(power − piecewise) = {aic:.2f}" if aic is not None else ""),
            xlabel="sequence length (tokens, log₂ scale)",
        )
        if col == 0:
            ax.set_ylabel("mean ΔR²\n(fraction of variance, log scale)")
    handles = [h for ax in rows[0] for h in ax.get_legend_handles_labels()[0]]
    legend(fig, rows[0][0], outside=True, handles=handles, ncols=3)
    add_title(fig, title)
    return fig


def length_scaling(by_model: dict, roles: dict, out: Path, **kw) -> Path | None:
    return save(length_scaling_figure(by_model, roles, **kw), out)


# ---- the report's set --------------------------------------------------------------------------------


def _slug(*parts: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", "_".join(parts)) + ".png"


def plot_kind_of(claim: str, name: str) -> str | None:
    """``kind`` or ``kind.role`` of one recorded figure, from the registry, else None (figures undeclared in the
    registry, from a results.json of another version, are not plotted)."""
    spec = CLAIMS.get(claim)
    try:
        f = spec.figure(name) if spec else None
    except UndeclaredFigure:
        return None
    return f.plot if f is not None and f.plot else None


def plot_roles(claim: str, names) -> dict:
    """{plot kind: {role: [figure names]}} for the recorded figure names of one claim (registry order kept)."""
    out: dict = defaultdict(lambda: defaultdict(list))
    for name in names:
        plot = plot_kind_of(claim, name)
        if plot:
            kind, _, role = plot.partition(".")
            out[kind][role].append(name)
    return out


#: Plot kinds drawn once per claim: title (after the claim id) and function.
PER_CLAIM = {
    "bin_profile": ("per-query-bin ΔR², causal vs bidirectional, paper's first bin marked", bin_profile),
    "layer_ratio": ("layer-wise ratio ΔR²(bidirectional)/ΔR²(causal) by relative depth", layer_ratio),
    "layer_profile": (None, layer_profile),
    "norm_removed": ("rank-1 MLP ablation: fraction of the MLP output norm removed and topic accuracy", norm_removed),
    "sink_vs_probe": ("sink magnitude vs topic-probe accuracy per (layer, position) cell", sink_vs_probe),
    "sink_bars": ("peak sink magnitude by anchor condition", sink_bars),
    "length_scaling": ("mean ΔR² vs sequence length (log-log) with power-law and piecewise fits", length_scaling),
    "head_map": ("relative change of the read-out when each head is zeroed alone", head_map),
}


def _claim_title(claim: str, kind: str, what: str | None, roles: dict, by_model: dict) -> str:
    if what is None and kind == "layer_profile":
        titled = (
            f.options["title"] for n in roles.get("", []) if (f := figure_spec(claim, n)) and "title" in f.options
        )
        what = next(titled, None) or label(next(iter(roles.get("", [])), kind))
    return f"{claim} — {claim_caption(claim, kind, what or kind)}"


def figures_by_claim(results: RunResult) -> dict:
    """{claim: {model ("-" for none): {figure name: figure dict}}}, the first record of a name winning."""
    by_claim: dict = defaultdict(lambda: defaultdict(dict))
    for r in results.records:
        for f in r.figures:
            if isinstance(f, dict) and "name" in f:
                target = r.target.name if r.target.kind in (TargetKind.MODEL, TargetKind.SYNTHETIC) else "-"
                by_claim[r.claim][target].setdefault(f["name"], f)
    return by_claim


#: The run-wide summary figure (harness/report/summary_plot.py): its file and the report's caption for it.
SUMMARY_PNG = "summary_margins.png"
SUMMARY_TITLE = (
    "Every decision of the run: its estimate and 95% CI against its threshold, coloured by verdict "
    "(one-sided criteria as the distance past the threshold, equivalences as the position in their band)"
)


def make_all(results: RunResult, fig_dir: Path, stop=None) -> list[Plot]:
    """Every plot the run's figures support, written into fig_dir (stale PNGs there are removed), the summary of
    every decision first. A figure draws no title of its own: the report captions it with the Plot's title. ``stop``
    (a run's ``Interrupts.check``) is called before each plot: a stop signal ends the drawing there, between figures."""
    by_claim = figures_by_claim(results)
    for stale in Path(fig_dir).glob("*.png"):
        stale.unlink()
    plots: list[Plot] = []

    def add(cid, model, caption, fn, *args, **kw) -> bool:
        if stop is not None:
            stop()  # (raises KeyboardInterrupt, which the handler below lets through)
        try:
            path = fn(*args, **kw)
        except Exception as e:  # a malformed figure must never cost the rest of the report
            warnings.warn(f"plot {fn.__name__} for {cid}/{model} skipped: {e!r}", stacklevel=2)
            return False
        if path is not None:
            plots.append(Plot(cid, model, caption, path))
        return path is not None

    d = Path(fig_dir)
    add(None, None, SUMMARY_TITLE, write_summary, results, d / SUMMARY_PNG)
    records: dict = defaultdict(list)
    for r in results.records:
        records[r.claim].append(r)
    for claim, by_model in by_claim.items():
        kinds = plot_roles(claim, dict.fromkeys(n for figs in by_model.values() for n in figs))
        for kind, (what, fn) in PER_CLAIM.items():
            if kind in kinds:
                if add(
                    claim,
                    None,
                    _claim_title(claim, kind, what, kinds[kind], by_model),
                    fn,
                    by_model,
                    kinds[kind],
                    d / _slug(claim, kind),
                    claim=claim,
                    title="",
                    **({"records": records[claim]} if kind == "layer_ratio" else {}),
                ) and (shown_with := getattr(plot_spec(claim, kind), "shown_with", {})):
                    plots[-1] = plots[-1]._replace(also=tuple(shown_with.items()))
        bars = "ablation_bars" in kinds
        # a claim whose criteria judge ratios or reductions rather than the bars' mean ΔR² declares that plot: drawn
        # as what the criteria test, the bars only where those figures were not recorded
        if plot_spec(claim, "reductions") is not None:
            caption = f"{claim} — {claim_caption(claim, 'reductions', 'reductions')}"
            bars &= not add(
                claim, None, caption, reductions, by_model, d / _slug(claim, "reductions"), claim=claim, title=""
            )
        vmax = heatmap_vmax(by_model, kinds["sink_heatmap"]) if "sink_heatmap" in kinds else None
        for m, figs in by_model.items():
            if "sink_heatmap" in kinds:
                add(
                    claim,
                    m,
                    f"{claim} — sink-reading strength per head (attention weight on position 0) — {m}",
                    sink_heatmap,
                    m,
                    figs,
                    kinds["sink_heatmap"],
                    d / _slug(claim, "sink_heatmap", m),
                    claim=claim,
                    vmax=vmax,
                    title="",
                )
            if not bars:
                continue
            caption, out = (
                f"{claim} — {claim_caption(claim, 'ablation_bars', 'ablations')} — {m}",
                d / _slug(claim, "ablations", m),
            )
            if plot_spec(claim, "ablation_ratios") is not None and add(
                claim, m, caption, ablation_ratios, claim, m, figs, out, title=""
            ):
                continue
            add(claim, m, caption, ablation_bars, claim, m, figs, kinds["ablation_bars"], out, title="")
    return plots
