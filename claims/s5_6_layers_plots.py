"""§5.6's own figure (claims/s5_6_layers.py names it with ``draw=``): the layer-wise ratio and its depth slope.

Role of ``layer_ratio``: the plotted series (the ratio r_l per layer, nulls allowed). One panel per measurement (a
model measured at two lengths gets two), r_l by relative depth with the fitted depth slope its criterion judges (the
record's ``depth_slope`` and its decision, else ± its ``flat_bound``), the slope's 95% CI as a band, the criterion's
threshold slopes and the paper's mean ratio per paper model.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from typing import NamedTuple

import numpy as np
from matplotlib.figure import Figure

from harness.outcome.claim_result import ClaimResult
from harness.report.plot_style import (
    HELD_SHADE,
    MODEL_COLORS,
    Drawing,
    PlotInput,
    arr,
    depth,
    legend,
    panels,
    paper_from,
    paper_style,
    refs_for,
    scalar,
    styled,
    val,
)
from harness.report.summary_plot import EQUIVALENCE, ONE_SIDED, Criterion, parse_criterion
from harness.spec.decision import interval_of


def layer_ratio(plot: PlotInput) -> Iterator[Drawing]:
    yield Drawing(layer_ratio_figure(plot.by_model, plot.roles, plot.claim, plot.records))


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


def slope_series(
    by_model: dict, roles: dict, records: Sequence[ClaimResult] = (), claim: str = ""
) -> list[SlopeSeries]:
    """One series per record carrying the plotted ratio (a model measured at two lengths gets two), else one per
    model of ``by_model``; the criterion is the record's decision on the slope, else ± its flat bound."""
    name = next(iter(roles.get("", [])), None)
    sources = (
        [
            (r.model or "-", {f["name"]: f for f in r.figures if isinstance(f, dict) and "name" in f}, r)
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
    by_model: dict, roles: dict, claim: str = "", records: Sequence[ClaimResult] = ()
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
    return fig
