"""The run report's figure style and what its plot kinds share (the registry: harness/report/plots.py; the generic
kinds: harness/report/plot_kinds.py; a claim's own: ``claims/<section>_plots.py``).

Sizes, colours and resolution (``DPI``, ``RC``, the curve, fit, model and verdict styles), what a kind is handed
(``PlotInput``) and hands back (``Drawing``), the ``Plot`` record of a written figure, small helpers that read figure
dicts (``val``, ``first``, ``arr``, ``grid``, ...) and lay out, label and save matplotlib figures, and the paper's
values from the claim registry drawn as reference marks (``paper_refs``, ``refs_for``, ``draw_refs``) with the log /
symlog y scale of profiles (``profile_scale``).
"""

from __future__ import annotations

import functools
import math
from pathlib import Path
from typing import Any, NamedTuple

import matplotlib
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from harness.outcome.claim_result import ClaimResult
from harness.outcome.verdict import Verdict
from harness.spec.claims import CLAIMS, FigureSpec, PlotSpec, UndeclaredFigure
from harness.spec.models import display_name
from harness.spec.paper_models import PAPER_MODELS as PAPER_DECLARATIONS

DPI = 150
#: Font sizes in points (tick labels 9 pt: nothing below the 8 pt a slide or a HiDPI screen needs).
RC = {
    "font.size": 9.5,
    "axes.titlesize": 10,
    "axes.labelsize": 9.5,
    "xtick.labelsize": 9,
    "ytick.labelsize": 9,
    "legend.fontsize": 8.5,
    "figure.titlesize": 11,
    "figure.dpi": DPI,
    "savefig.dpi": DPI,
}
CURVE_STYLES = ("o-", "s--", "^:", "d-.")
FIT_STYLES = ("--", "-", ":", "-.")
MODEL_COLORS = (
    "tab:blue",
    "tab:orange",
    "tab:green",
    "tab:red",
    "tab:purple",
    "tab:brown",
    "tab:pink",
    "tab:olive",
    "tab:cyan",
    "tab:gray",
)
#: The paper's models: display name (harness/spec/models.py), colour and marker of their reference marks (each one's
#: declaration, harness/spec/paper_models.py).
PAPER_MODELS = {p.spec.name: (display_name(p.spec.name), *p.style) for p in PAPER_DECLARATIONS}
LOG_NOTE = "log scale"
#: Marks and lines coloured by a decision's verdict: the hues of the report's verdict cells (render.CSS's td.held,
#: td.not, td.stale and td.unstable backgrounds), dark enough to read as thin lines on white.
VERDICT_COLORS = {
    Verdict.HELD: "#2e7d32",
    Verdict.NOT_HELD: "#c62828",
    Verdict.INCONCLUSIVE: "#d68a00",
    Verdict.UNSTABLE: "#7b3fa0",
}
#: The held side of a criterion, shaded: td.held's background.
HELD_SHADE = "#e6f4e6"
OTHER_VERDICT_COLOR = "#777777"


class Plot(NamedTuple):
    """A written figure: ``claim`` None for the run-wide summary figure (harness/report/summary_plot.py), ``model``
    None for a figure over every model; ``title`` is the report's caption (the figure itself draws none); ``also``:
    the other claims whose sections show it after their own plots (``PlotSpec.shown_with``)."""

    claim: str | None
    model: str | None
    title: str
    path: Path
    also: tuple[tuple[str, str], ...] = ()


class PlotInput(NamedTuple):
    """What a plot kind draws from: one claim's recorded figures by model ("-" for none), the figure names filling each
    role of the kind ("" for the plotted series), the claim's records, and the claim's ``PlotSpec`` for the kind
    (its caption and options; an empty one where the declaration gives none)."""

    claim: str
    by_model: dict[str, dict[str, dict]]
    roles: dict[str, list[str]]
    records: tuple[ClaimResult, ...] = ()
    spec: PlotSpec = PlotSpec()

    @property
    def options(self) -> dict[str, Any]:
        return dict(self.spec.options)


class Drawing(NamedTuple):
    """One figure a plot kind drew (None: nothing to draw), with ``what`` the report's caption after the claim's id
    (None: the declaration's caption), the model it shows (None: every model) and ``name`` its file's name after the
    claim's id (None: the kind's)."""

    figure: Figure | None
    what: str | None = None
    model: str | None = None
    name: str | None = None


class PaperRef(NamedTuple):
    """One paper number drawn as a reference mark: ``model`` is the registry name ("" when only the record
    carries it), ``label`` what the legend says."""

    model: str
    label: str
    value: float
    tolerance: float


# ---- small helpers ---------------------------------------------------------------------------------


def val(figs: dict, name: str | None):
    f = figs.get(name) if name is not None else None
    return None if f is None else f.get("value")


def num(x) -> float:
    return math.nan if x is None or isinstance(x, (list, dict, str)) else float(x)


def arr(v) -> np.ndarray:
    return np.array([num(x) for x in v], dtype=float)


def scalar(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def first(figs: dict, names, test=lambda v: isinstance(v, list) and len(v) > 0):
    """(name, value) of the first of ``names`` whose value passes ``test``, else (None, None)."""
    for n in names or []:
        v = val(figs, n)
        if test(v):
            return n, v
    return None, None


def grid(v) -> np.ndarray | None:
    """A nested [rows][columns] figure value as a float array (short rows padded with NaN), else None."""
    if not (isinstance(v, list) and v and all(isinstance(row, list) for row in v)):
        return None
    width = max(len(row) for row in v)
    return np.array([list(arr(row)) + [math.nan] * (width - len(row)) for row in v], dtype=float)


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


def threshold(claim: str, name: str | None):
    """One of the claim's declared thresholds by name, None when the claim or the name is not declared."""
    spec = CLAIMS.get(claim)
    try:
        return spec.threshold(name) if spec is not None and name else None
    except KeyError:
        return None


def depth(n: int) -> np.ndarray:
    """Relative depth l/(L-1) of n per-layer entries (0 = first, 1 = last), as leakage_view.depth_slope uses."""
    return np.linspace(0.0, 1.0, n) if n > 1 else np.zeros(n)


def label(name: str, *prefixes: str) -> str:
    for p in prefixes:
        name = name.removeprefix(p)
    return name.replace("_", " ")


def ci_band(ci, n: int):
    """(lo, hi) arrays from a per-entry CI list [[lo, hi], ...] of length n, else None."""
    if not (isinstance(ci, list) and len(ci) == n and n > 0):
        return None
    if not all(isinstance(c, list) and len(c) == 2 for c in ci):
        return None
    band = np.array([[num(c[0]), num(c[1])] for c in ci], dtype=float)
    return (band[:, 0], band[:, 1]) if np.isfinite(band).any() else None


def styled(fn):
    """Run a figure builder under the report's font sizes and resolution."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with matplotlib.rc_context(RC):
            return fn(*args, **kwargs)

    return wrapper


def new(w: float, h: float) -> Figure:
    return Figure(figsize=(w, h), dpi=DPI, layout="constrained")


def panels(n: int, w: float = 4.2, h: float = 3.3, rows_per: int = 1, sharey=False, extra=(0.0, 0.0)):
    """A figure with one panel per model (up to 3 a row), ``rows_per`` stacked panels each; returns
    (figure, [[the k-th panel of each model] for k in range(rows_per)])."""
    cols = min(n, 3)
    rows = math.ceil(n / cols)
    fig = new(w * cols + extra[0], h * rows * rows_per + extra[1])  # extra: room for a legend or colour bar
    axes = fig.subplots(rows * rows_per, cols, squeeze=False, sharey=sharey)
    at = lambda i, k: axes[(i // cols) * rows_per + k, i % cols]
    for i in range(n, rows * cols):
        for k in range(rows_per):
            at(i, k).set_visible(False)
    return fig, [[at(i, k) for i in range(n)] for k in range(rows_per)]


def legend(
    fig: Figure, ax, outside: bool = False, handles=None, loc: str = "outside lower center", ncols: int = 2, **kw
):
    """A legend that covers no data: below the axes (``loc``, an "outside" place) for busy plots, else
    loc="best" inside. Entries without a label, or repeating one, are left out."""
    if handles is None:
        handles, labels = ax.get_legend_handles_labels()
    else:
        labels = [h.get_label() for h in handles]
    seen, keep = set(), []
    ncols = 1 if any(len(lab) > 48 for lab in labels if lab) else ncols
    for h, lab in zip(handles, labels):
        if lab and not lab.startswith("_") and lab not in seen:
            seen.add(lab)
            keep.append((h, lab))
    if not keep:
        return None
    if outside:
        return fig.legend(*zip(*keep), loc=loc, ncols=min(ncols, len(keep)), **kw)
    return ax.legend(*zip(*keep), loc="best", **kw)


def save(fig: Figure | None, out: Path) -> Path | None:
    if fig is None:
        return None
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    FigureCanvasAgg(fig)
    with matplotlib.rc_context(RC):
        fig.savefig(out, dpi=DPI)
    return out


# ---- the paper's values as reference marks ---------------------------------------------------------


def paper_label(model: str) -> str:
    """The paper's name for one of its models (the registry name when it is not one)."""
    return PAPER_MODELS.get(model, (model,))[0]


def paper_style(model: str):
    name, color, marker = PAPER_MODELS.get(model, (model, "black", "x"))
    return color, marker


def paper_refs(claim: str, name: str | None) -> list[PaperRef]:
    """The paper's values for one recorded figure of a claim, one per paper model (registry order of
    PAPER_MODELS), from the claim's declaration; [] when the registry has none or does not declare it."""
    spec = CLAIMS.get(claim)
    if spec is None or name is None:
        return []
    try:
        f = spec.figure(name)
    except UndeclaredFigure:
        return []
    order = list(PAPER_MODELS) + [m for m in f.paper if m not in PAPER_MODELS]
    return [
        PaperRef(m, f"paper, {paper_label(m)}", float(f.paper[m].value), float(f.paper[m].tolerance))
        for m in order
        if m in f.paper
    ]


def refs_for(claim: str, name: str | None, model: str | None, fig: dict | None = None) -> list[PaperRef]:
    """The paper marks to draw beside a figure measured on ``model``: the model's own paper value when it is a
    paper model, else every paper model's value; a value only the record carries (an older registry) last."""
    refs = paper_refs(claim, name)
    own = [r for r in refs if r.model == model]
    if own:
        return own
    recorded = (fig or {}).get("paper")
    if not refs and scalar(recorded):
        return [PaperRef("", "paper", float(recorded), 0.0)]
    return refs


def draw_refs(ax, refs: list[PaperRef], x: float, span: float, color=None, ms: float = 5, labels: dict | None = None):
    """Reference marks for one bar or point: markers spread over [x, x + span], the registry's tolerance as
    error bars; the marker shape (and, unless ``color`` is given, the colour) names the paper model; the legend
    label is ``labels[model]`` or "paper, <model>: <value>"."""
    if not refs:
        return
    step = span / len(refs)
    for k, r in enumerate(refs):
        c, marker = paper_style(r.model)
        label = (labels or {}).get(r.model, f"{r.label}: {r.value:.3g}")
        ax.errorbar(
            x + (k + 0.5) * step,
            r.value,
            yerr=r.tolerance or None,
            fmt=marker,
            ms=ms,
            mfc=color or c,
            mec="black" if color else c,
            mew=0.8,
            ecolor=color or c,
            elinewidth=1,
            capsize=2,
            label=label,
            zorder=5,
        )


def ref_labels(refs_per_item: list[list[PaperRef]]) -> dict:
    """One legend label per paper model listing its values over the items in order ("–" where it has none)."""
    models = {r.model: r.label for refs in refs_per_item for r in refs}
    out = {}
    for m, label in models.items():
        vals = [next((f"{r.value:.3g}" for r in refs if r.model == m), "–") for refs in refs_per_item]
        out[m] = f"{label} (± tolerance): {' / '.join(vals)}"
    return out


def profile_scale(*arrays, signed: bool = False) -> tuple[str, dict]:
    """The y scale for profiles whose small values matter (the later query bins, the layer ratios): ("log", {}) when every
    finite value is positive (and ``signed`` is not set: a gap can take either sign), else ("symlog",
    {"linthresh": t}) with t the power of ten at or below the smallest non-zero |value| (at least 1e-6), so
    zeros and negative values stay on the axis."""
    vals = np.concatenate([np.asarray(a, dtype=float).ravel() for a in arrays]) if arrays else np.array([])
    vals = vals[np.isfinite(vals)]
    if not signed and (vals.size == 0 or np.all(vals > 0)):
        return "log", {}
    nz = np.abs(vals[vals != 0])
    t = 10.0 ** math.floor(math.log10(nz.min())) if nz.size else 1e-3
    return "symlog", {"linthresh": max(t, 1e-6)}


def apply_scale(ax, scale: tuple[str, dict]) -> str:
    """Set the y scale; the note to add to the y label."""
    kind, kw = scale
    ax.set_yscale(kind, **kw)
    if kind == "symlog":
        return f"symlog (linear ±{kw['linthresh']:.0e})"
    return LOG_NOTE
