"""§5.8's length-scaling figure (claims/s5_8_length_scaling.py names it with ``draw=``).

Roles of ``length_scaling``: the plotted series (mean ΔR² measured per length), ``.x`` (the lengths), ``.fit``
(fitted curves), ``.aic`` (ΔAIC), ``.interior`` (whether the breakpoint is inside the grid). A log-log scatter with
the fits, one panel per model; fits that coincide are drawn once, the legend saying so.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import NullFormatter, ScalarFormatter

from harness.report.plot_style import (
    FIT_STYLES,
    Drawing,
    PlotInput,
    arr,
    first,
    label,
    legend,
    panels,
    scalar,
    styled,
    val,
)


def length_scaling(plot: PlotInput) -> Iterator[Drawing]:
    yield Drawing(length_scaling_figure(plot.by_model, plot.roles))


def fits_coincide(a, b, rtol: float = 1e-6) -> bool:
    """Whether two fitted curves are the same curve (the piecewise fit collapsed onto the power law)."""
    a, b = arr(a), arr(b)
    return a.shape == b.shape and a.size > 0 and bool(np.allclose(a, b, rtol=rtol, atol=0, equal_nan=True))


@styled
def length_scaling_figure(by_model: dict, roles: dict) -> Figure | None:
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
    return fig
