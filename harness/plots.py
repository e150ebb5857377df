"""PNG figures for the run report, chosen by the names of the figures a claim test recorded.

Each plot function is pure (figure dicts in, PNG path out) and returns None, writing nothing, when
its figures are absent. ``by_model`` maps model -> {figure name -> figure dict} for one claim.
Conventions (figure names, per model):

* ``delta_r2_by_bin_causal``, ``delta_r2_by_bin_bidirectional`` (lists), ``bin_edges`` (n+1 ints)
  -> per-query-bin profile, causal vs bidirectional, one panel per model (the paper's Figure 1)
* ``layer_ratio`` (list per layer, nulls allowed) -> layer-wise ratio, one line per model
* ``sink_by_layer_head`` (nested [layers][heads]) -> heatmap per model
* ``sink_at_8_default``, ``sink_at_8_bos_moved``, ``sink_at_0_default``, ``sink_at_0_random_token``,
  ``sink_at_0_no_bos`` (scalars) -> grouped bars, one group per model
* ``lengths``, ``delta_r2_by_length``, ``power_law_prediction``, ``piecewise_prediction`` -> log-log
  scatter with both fits, one panel per model
* ``ablation:<name>`` (scalar, ci [lo, hi] or null) -> bars with CI error bars per (claim, model)
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

DPI = 80
BIN_CURVES = (("delta_r2_by_bin_causal", "causal", "o-"), ("delta_r2_by_bin_bidirectional", "bidirectional", "s--"))
SINK_BARS = ("sink_at_8_default", "sink_at_8_bos_moved", "sink_at_0_default", "sink_at_0_random_token",
             "sink_at_0_no_bos")
FITS = (("power_law_prediction", "power law", "--"), ("piecewise_prediction", "piecewise", "-"))


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


def bin_profile(by_model: dict, out: Path) -> Path | None:
    models = [m for m, f in by_model.items() if any(isinstance(_val(f, k), list) for k, _, _ in BIN_CURVES)]
    if not models:
        return None
    fig, axes = _panels(len(models))
    for ax, m in zip(axes, models):
        f, edges = by_model[m], _val(by_model[m], "bin_edges")
        n = 0
        for key, label, style in BIN_CURVES:
            y = _val(f, key)
            if isinstance(y, list):
                n = max(n, len(y))
                ax.plot(np.arange(len(y)), _arr(y), style, label=label)
        if isinstance(edges, list) and len(edges) == n + 1:
            ax.set_xticks(np.arange(n), [f"{edges[i]}–{edges[i + 1]}" for i in range(n)], rotation=45, fontsize=7)
        ax.set(title=m, xlabel="query-position bin", ylabel="ΔR²")
        ax.legend(fontsize=8)
    return _save(fig, out)


def layer_ratio(by_model: dict, out: Path) -> Path | None:
    series = {m: _arr(v) for m, f in by_model.items() if isinstance(v := _val(f, "layer_ratio"), list) and v}
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


def sink_heatmap(model: str, figs: dict, out: Path) -> Path | None:
    v = _val(figs, "sink_by_layer_head")
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


def sink_bars(by_model: dict, out: Path) -> Path | None:
    names = [n for n in SINK_BARS if any(_scalar(_val(f, n)) for f in by_model.values())]
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


def length_scaling(by_model: dict, out: Path) -> Path | None:
    models = [m for m, f in by_model.items()
              if isinstance(_val(f, "lengths"), list) and isinstance(_val(f, "delta_r2_by_length"), list)]
    if not models:
        return None
    fig, axes = _panels(len(models))
    for ax, m in zip(axes, models):
        f = by_model[m]
        x = _arr(_val(f, "lengths"))
        ax.plot(x, _arr(_val(f, "delta_r2_by_length")), "ko", ms=4, label="measured")
        for key, label, style in FITS:
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


def ablation_bars(claim: str, model: str, figs: dict, out: Path) -> Path | None:
    items = [(n.removeprefix("ablation:"), f) for n, f in figs.items()
             if n.startswith("ablation:") and _scalar(f.get("value"))]
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

    for claim, by_model in by_claim.items():
        d = Path(fig_dir)
        add(claim, None, "per-query-bin ΔR² profile, causal vs bidirectional", bin_profile, by_model,
            d / _slug(claim, "bin_profile"))
        add(claim, None, "layer-wise ratio ΔR²(bi)/ΔR²(causal)", layer_ratio, by_model, d / _slug(claim, "layer_ratio"))
        add(claim, None, "sink magnitude by anchor condition", sink_bars, by_model, d / _slug(claim, "sink_bars"))
        add(claim, None, "length scaling (log-log) with power-law and piecewise fits", length_scaling, by_model,
            d / _slug(claim, "length_scaling"))
        for m, figs in by_model.items():
            add(claim, m, f"sink magnitude per layer and head — {m}", sink_heatmap, m, figs,
                d / _slug(claim, "sink_heatmap", m))
            add(claim, m, f"ablations — {m}", ablation_bars, claim, m, figs, d / _slug(claim, "ablations", m))
    return plots
