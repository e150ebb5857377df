"""PNG figures for the run report, chosen by the plot kind each figure declares in the claim registry.

Each plot function is pure (figure dicts in, PNG path out) and returns None, writing nothing, when
its figures are absent. ``by_model`` maps model -> {figure name -> figure dict} for one claim; ``roles``
maps a role of the plot kind to the figure names that fill it ("" for the plotted series). Plot kinds
(``FigureSpec.plot`` = ``kind`` or ``kind.role``):

* ``bin_profile`` (lists per query bin), ``bin_profile.x`` (n+1 bin edges)
  -> per-query-bin profile, one curve per figure, one panel per model (the paper's Figure 1)
* ``layer_ratio`` (list per layer, nulls allowed) -> layer-wise ratio, one line per model
* ``sink_heatmap`` (nested [layers][heads]) -> heatmap per model
* ``sink_bars`` (scalars) -> grouped bars, one group per model
* ``length_scaling`` (measured), ``length_scaling.x`` (lengths), ``length_scaling.fit`` (fitted curves)
  -> log-log scatter with the fits, one panel per model
* ``ablation_bars`` (scalar, ci [lo, hi] or null) -> bars with CI error bars per (claim, model)
"""

from __future__ import annotations

import math
import re
import warnings
from collections import defaultdict
from pathlib import Path
from typing import NamedTuple

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator, NullFormatter, ScalarFormatter

from .claim_registry import CLAIMS, UndeclaredFigure

DPI = 80
CURVE_STYLES = ("o-", "s--", "^:", "d-.")
FIT_STYLES = ("--", "-", ":", "-.")


class Plot(NamedTuple):
    claim: str
    model: str | None
    title: str
    path: Path


def _val(figs: dict, name: str):
    f = figs.get(name)
    return None if f is None else f.get("value")


def _num(x) -> float:
    return math.nan if x is None or isinstance(x, (list, dict, str)) else float(x)


def _arr(v) -> np.ndarray:
    return np.array([_num(x) for x in v], dtype=float)


def _scalar(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _panels(n: int, w: float = 4.2, h: float = 3.2):
    cols = min(n, 3)
    rows = math.ceil(n / cols)
    fig = Figure(figsize=(w * cols, h * rows))
    axes = fig.subplots(rows, cols, squeeze=False).ravel()
    for ax in axes[n:]:
        ax.set_visible(False)
    return fig, axes[:n]


def _save(fig: Figure, out: Path) -> Path:
    out.parent.mkdir(parents=True, exist_ok=True)
    FigureCanvasAgg(fig)
    fig.tight_layout()
    fig.savefig(out, dpi=DPI)
    return out


def _label(name: str, *prefixes: str) -> str:
    for p in prefixes:
        name = name.removeprefix(p)
    return name.replace("_", " ")


def bin_profile(by_model: dict, roles: dict, out: Path) -> Path | None:
    curves = [(k, _label(k, "delta_r2_by_bin_"), s) for k, s in zip(roles.get("", []), CURVE_STYLES)]
    models = [m for m, f in by_model.items() if any(isinstance(_val(f, k), list) for k, _, _ in curves)]
    if not models:
        return None
    fig, axes = _panels(len(models))
    for ax, m in zip(axes, models):
        f, edges = by_model[m], next((_val(by_model[m], k) for k in roles.get("x", [])), None)
        n = 0
        for key, label, style in curves:
            y = _val(f, key)
            if isinstance(y, list):
                n = max(n, len(y))
                ax.plot(np.arange(len(y)), _arr(y), style, label=label)
        if isinstance(edges, list) and len(edges) == n + 1:
            ax.set_xticks(np.arange(n), [f"{edges[i]}–{edges[i + 1]}" for i in range(n)], rotation=45, fontsize=7)
        ax.set(title=m, xlabel="query-position bin", ylabel="ΔR²")
        ax.legend(fontsize=8)
    return _save(fig, out)


def layer_ratio(by_model: dict, roles: dict, out: Path) -> Path | None:
    name = next(iter(roles.get("", [])), None)
    series = {m: _arr(v) for m, f in by_model.items() if isinstance(v := _val(f, name), list) and v}
    if not series:
        return None
    fig = Figure(figsize=(6.5, 3.6))
    ax = fig.subplots()
    for m, y in series.items():
        mean = np.nanmean(y) if np.isfinite(y).any() else math.nan
        ax.plot(np.arange(len(y)), y, "o-", ms=5, label=f"{m} (mean {mean:.2f})")
    ax.axhline(1.0, color="grey", lw=0.8, ls=":")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set(xlabel="layer", ylabel="ΔR²(bidirectional) / ΔR²(causal)", title="layer-wise ratio")
    ax.legend(fontsize=8)
    return _save(fig, out)


def sink_heatmap(model: str, figs: dict, roles: dict, out: Path) -> Path | None:
    v = next((_val(figs, k) for k in roles.get("", [])), None)
    if not (isinstance(v, list) and v and all(isinstance(row, list) for row in v)):
        return None
    width = max(len(row) for row in v)
    grid = np.array([list(_arr(row)) + [math.nan] * (width - len(row)) for row in v], dtype=float)
    fig = Figure(figsize=(min(max(4.5, 2 + 0.25 * width), 12), min(max(3.0, 1.5 + 0.18 * len(v)), 10)))
    ax = fig.subplots()
    im = ax.imshow(grid, aspect="auto", origin="lower", cmap="viridis", interpolation="nearest")
    fig.colorbar(im, ax=ax, label="sink magnitude")
    ax.set(xlabel="head", ylabel="layer", title=model)
    return _save(fig, out)


def sink_bars(by_model: dict, roles: dict, out: Path) -> Path | None:
    names = [n for n in roles.get("", []) if any(_scalar(_val(f, n)) for f in by_model.values())]
    models = [m for m, f in by_model.items() if any(_scalar(_val(f, n)) for n in names)]
    if not models:
        return None
    fig = Figure(figsize=(max(5.0, 1.6 * len(models) * max(1, len(names)) / 2), 3.6))
    ax = fig.subplots()
    width = 0.8 / len(names)
    for k, name in enumerate(names):
        xs = np.arange(len(models)) + (k - (len(names) - 1) / 2) * width
        ys = [_num(_val(by_model[m], name)) if _scalar(_val(by_model[m], name)) else math.nan for m in models]
        ax.bar(xs, ys, width, label=name)
        paper = [_num((by_model[m].get(name) or {}).get("paper")) for m in models]
        ax.plot(xs, paper, "kx", ms=7, label="paper" if k == 0 else None)
    ax.set_xticks(np.arange(len(models)), models, fontsize=8)
    ax.set(ylabel="sink magnitude", title="token-anchored sink")
    ax.legend(fontsize=8, ncols=2)
    return _save(fig, out)


def length_scaling(by_model: dict, roles: dict, out: Path) -> Path | None:
    x_name, y_name = next(iter(roles.get("x", [])), None), next(iter(roles.get("", [])), None)
    fits = [(k, _label(k).removesuffix(" prediction"), s) for k, s in zip(roles.get("fit", []), FIT_STYLES)]
    models = [m for m, f in by_model.items()
              if isinstance(_val(f, x_name), list) and isinstance(_val(f, y_name), list)]
    if not models:
        return None
    fig, axes = _panels(len(models))
    for ax, m in zip(axes, models):
        f = by_model[m]
        x = _arr(_val(f, x_name))
        ax.plot(x, _arr(_val(f, y_name)), "ko", ms=4, label="measured")
        for key, label, style in fits:
            y = _val(f, key)
            if isinstance(y, list) and len(y) == len(x):
                ax.plot(x, _arr(y), style, label=label)
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_formatter(ScalarFormatter())
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_yscale("log", nonpositive="mask")
        ax.set(title=m, xlabel="sequence length", ylabel="mean ΔR²")
        ax.legend(fontsize=8)
    return _save(fig, out)


def ablation_bars(claim: str, model: str, figs: dict, roles: dict, out: Path) -> Path | None:
    items = [(n.split(":", 1)[-1], f) for n, f in figs.items()
             if n in roles.get("", []) and _scalar(f.get("value"))]
    if not items:
        return None
    ys = np.array([float(f["value"]) for _, f in items])
    err = np.zeros((2, len(items)))
    for i, (_, f) in enumerate(items):
        ci = f.get("ci")
        if isinstance(ci, list) and len(ci) == 2 and all(_scalar(c) for c in ci):
            err[:, i] = [max(ys[i] - ci[0], 0), max(ci[1] - ys[i], 0)]
    fig = Figure(figsize=(max(4.0, 1.1 * len(items)), 3.4))
    ax = fig.subplots()
    ax.bar(np.arange(len(items)), ys, 0.6, yerr=err, capsize=4, color="tab:blue")
    ax.plot(np.arange(len(items)), [_num(f.get("paper")) for _, f in items], "kx", ms=7, label="paper")
    ax.set_xticks(np.arange(len(items)), [n for n, _ in items], rotation=20, fontsize=8)
    ax.set(ylabel="value", title=f"{claim} ablations — {model}")
    ax.legend(fontsize=8)
    return _save(fig, out)


def _slug(*parts: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", "_".join(parts)) + ".png"


def plot_roles(claim: str, names) -> dict:
    """{plot kind: {role: [figure names]}} for the recorded figure names of one claim (registry order kept)."""
    out: dict = defaultdict(lambda: defaultdict(list))
    spec = CLAIMS.get(claim)
    for name in names:
        try:
            f = spec.figure(name) if spec else None
        except UndeclaredFigure:  # a results.json from another version of the registry: not plotted
            f = None
        if f is not None and f.plot_kind:
            out[f.plot_kind][f.plot_role].append(name)
    return out


PER_CLAIM = {"bin_profile": ("per-query-bin ΔR² profile, causal vs bidirectional", bin_profile),
             "layer_ratio": ("layer-wise ratio ΔR²(bi)/ΔR²(causal)", layer_ratio),
             "sink_bars": ("sink magnitude by anchor condition", sink_bars),
             "length_scaling": ("length scaling (log-log) with power-law and piecewise fits", length_scaling)}


def make_all(results: dict, fig_dir: Path) -> list[Plot]:
    """Every plot the run's figures support, written into fig_dir (stale PNGs there are removed)."""
    by_claim: dict = defaultdict(lambda: defaultdict(dict))
    for r in results.get("records", []):
        for f in r.get("figures") or []:
            by_claim[r["claim"]][r.get("model") or "-"].setdefault(f["name"], f)
    for stale in Path(fig_dir).glob("*.png"):
        stale.unlink()
    plots: list[Plot] = []

    def add(claim, model, title, fn, *args):
        try:
            path = fn(*args)
        except Exception as e:  # a malformed figure must never cost the rest of the report
            warnings.warn(f"plot {fn.__name__} for {claim}/{model} skipped: {e!r}")
            return
        if path is not None:
            plots.append(Plot(claim, model, title, path))

    d = Path(fig_dir)
    for claim, by_model in by_claim.items():
        kinds = plot_roles(claim, dict.fromkeys(n for figs in by_model.values() for n in figs))
        for kind, (title, fn) in PER_CLAIM.items():
            if kind in kinds:
                add(claim, None, title, fn, by_model, kinds[kind], d / _slug(claim, kind))
        for m, figs in by_model.items():
            if "sink_heatmap" in kinds:
                add(claim, m, f"sink magnitude per layer and head — {m}", sink_heatmap, m, figs,
                    kinds["sink_heatmap"], d / _slug(claim, "sink_heatmap", m))
            if "ablation_bars" in kinds:
                add(claim, m, f"ablations — {m}", ablation_bars, claim, m, figs, kinds["ablation_bars"],
                    d / _slug(claim, "ablations", m))
    return plots
