"""The report's figures (harness/report/plots.py, the registry; plot_kinds.py, the generic kinds; a claim's own
kinds beside its declaration, claims/<section>_plots.py) on the committed example run and on small synthetic records:
no models run.

What they must be: at least 150 dpi, labelled axes with units, readable ticks, a caption naming the claim,
the per-layer arrays plotted, the paper's values drawn where the registry has them, a log (or symlog) y axis for
T7's bin profile, one colour scale for T3's heatmaps, and nothing written (no crash) when the figures are absent.
"""

from __future__ import annotations

import json
import math
import re
import warnings
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("matplotlib")
Image = pytest.importorskip("PIL.Image")

from harness.files.paths import REPORTS  # noqa: E402
from harness.outcome.results import RunResult, loaded, typed  # noqa: E402
from harness.outcome.verdict import DECIDED, Verdict  # noqa: E402
from harness.report import document, methods_page, plot_kinds, plot_style, plots, record_text, summary_plot  # noqa: E402
from harness.report.cells import run_cells  # noqa: E402
from harness.spec.claims import CLAIMS  # noqa: E402

EXAMPLE = REPORTS / "example" / "results.json"


def fig(name, value, ci=None, paper=None):
    return {"name": name, "value": value, "ci": ci, "paper": paper, "note": ""}


def rec(claim, model, figures):
    return {
        "test": f"claims/t.py::test_{claim}[{model}]",
        "claim": claim,
        "model": model,
        "outcome": "passed",
        "reason": "",
        "seconds": 0.1,
        "figures": figures,
    }


@pytest.fixture(scope="module")
def example():
    return json.loads(EXAMPLE.read_text())


@pytest.fixture(scope="module")
def built(example, tmp_path_factory):
    """make_all on the committed example run: (the Plot list, the figures folder)."""
    d = tmp_path_factory.mktemp("figures")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a plot skipped with a warning is a failure here
        return plots.make_all(typed(example), d), d


@pytest.fixture(scope="module")
def by_claim(example):
    return plots.figures_by_claim(typed(example).records)


def roles(claim, by_model, kind):
    return plots.plot_roles(claim, dict.fromkeys(n for f in by_model.values() for n in f))[kind]


def drawn(claim, kind, by_model, records=()) -> list:
    """The figures one claim's kind draws from ``by_model`` (None where it draws nothing)."""
    plot = plots.claim_inputs(claim, by_model, tuple(map(loaded, records)))[kind]
    return [d.figure for d in plots.kind_function(claim, kind)(plot)]


def one(claim, kind, by_model, records=()):
    (figure,) = drawn(claim, kind, by_model, records)
    return figure


def own(claim, name):
    """A function of the module beside a claim's declaration (``<module>.<function>``)."""
    return plots.claim_function(CLAIMS[claim], name)


def texts(figure) -> list[str]:
    """Every text in a figure: titles, axis labels, legend entries, annotations."""
    return [t.get_text() for t in figure.findobj(lambda a: hasattr(a, "get_text"))]


def visible_axes(figure):
    return [a for a in figure.axes if a.get_visible() and a.get_label() != "<colorbar>"]


# ---- the committed example run, built ----------------------------------------------------------------


def test_every_png_is_at_least_150_dpi(built):
    plot_list, d = built
    assert plot_style.DPI >= 150
    pngs = sorted(d.glob("*.png"))
    assert len(pngs) == len(plot_list) >= 15
    for p in pngs:
        with Image.open(p) as im:
            dpi = im.info.get("dpi")  # the PNG's pHYs chunk
            assert dpi is not None and round(dpi[0]) >= 150 and round(dpi[1]) >= 150, (p.name, dpi)
            assert min(im.size) >= 500, (p.name, im.size)  # at least ~3.3 in at 150 dpi


def test_the_per_layer_arrays_are_plotted(built):
    plot_list, d = built
    names = {p.path.name for p in plot_list}
    for png in ("T1_sink_vs_probe.png", "T9a_layer_profile.png", "T9b_layer_profile.png", "T12_norm_removed.png"):
        assert png in names and (d / png).is_file()
    # the figures the registry declares a plot for are still drawn under the same names (report links)
    for png in (
        "T7_bin_profile.png",
        "T8_layer_ratio.png",
        "T2_sink_bars.png",
        "T10_length_scaling.png",
        "T3_sink_heatmap_gemma3-270m.png",
        "T6_ablations_smollm2-135m.png",
        "T11_reductions.png",
        "summary_margins.png",
    ):
        assert png in names


def test_every_title_names_its_claim_and_no_two_claims_share_one(built):
    plot_list, _ = built
    summary = [p for p in plot_list if p.claim is None]
    assert [(p.model, p.path.name) for p in summary] == [(None, "summary_margins.png")]
    for p in plot_list:
        if p.claim is None:
            continue
        assert p.title.startswith(f"{p.claim} — "), p.title
        if p.model is not None:
            assert p.title.endswith(f" — {p.model}")
    per_model = {
        p.claim: p.title.rsplit(" — ", 1)[0].split(" — ", 1)[1]
        for p in plot_list
        if p.model == "gemma3-270m" and p.claim in ("T6", "T9c", "T11")
    }
    assert len(set(per_model.values())) == len(per_model) >= 2


def test_every_figure_has_labelled_axes_readable_ticks_and_no_title_the_caption_repeats(by_claim):
    """Build each example figure in memory, every kind of every claim (and the bars a claim's own kind falls back
    to): axis labels (with units) on every visible panel, ticks >= 8 pt, no title (the report's caption names the
    claim)."""
    built = []
    for claim, by_model in by_claim.items():
        for kind, plot in plots.claim_inputs(claim, by_model, ()).items():
            built += [(claim, d.figure) for d in plots.kind_function(claim, kind)(plot)]
        if claim in ("T6", "T11"):
            bars = roles(claim, by_model, "ablation_bars")
            built += [(claim, plot_kinds.ablation_bars_figure(claim, m, f, bars)) for m, f in by_model.items()]
    assert len(built) >= 23
    for claim, f in built:
        assert f is not None, claim
        assert not f.get_suptitle() and f.dpi >= 150, claim
        for ax in visible_axes(f):
            assert ax.get_xlabel().strip(), (claim, "x label")
            if ax.get_ylabel() == "" and ax.get_shared_y_axes().get_siblings(ax) != [ax]:
                continue  # a panel sharing its row's y axis (the label is on the row's first panel)
            assert ax.get_ylabel().strip(), (claim, "y label")
            for t in ax.get_xticklabels() + ax.get_yticklabels():
                assert t.get_fontsize() >= 8, (claim, t.get_text(), t.get_fontsize())
        assert any("(" in ax.get_ylabel() for ax in visible_axes(f)), (claim, "a unit in parentheses")


def test_every_declared_drawing_is_a_function_beside_its_declaration():
    """Each ``PlotSpec.draw`` names a function of a ``claims/<section>_plots.py`` beside the declaration; every other
    kind a figure names is generic."""
    declared = [(c, k, p.draw) for c in CLAIMS for k, p in CLAIMS[c].plots.items() if p.draw]
    assert len(declared) >= 9
    for claim, kind, ref in declared:
        assert ref.split(".")[0] == CLAIMS[claim].source.removeprefix("claims/").removesuffix(".py") + "_plots"
        assert callable(plots.kind_function(claim, kind))
    for claim in CLAIMS:
        for f in CLAIMS[claim].figures:
            kind = (f.plot or "").partition(".")[0]
            if kind and kind not in plots.GENERIC:
                assert CLAIMS[claim].plots[kind].draw, (claim, f.name)
    with pytest.raises(plots.UnknownKind, match="names no function"):
        plots.claim_function(CLAIMS["T7"], "no_such_plots.draw")
    with pytest.raises(plots.UnknownKind, match="has no function"):
        plots.claim_function(CLAIMS["T7"], "s5_5_query_bins_plots.no_such_function")


def test_figures_are_pure(by_claim, tmp_path, monkeypatch):
    """A plot kind draws figures and writes nothing (the registry writes them), leaving its input unchanged."""
    monkeypatch.chdir(tmp_path)
    by_model = by_claim["T7"]
    before = json.dumps(by_model, sort_keys=True)
    assert one("T7", "bin_profile", by_model) is not None
    assert json.dumps(by_model, sort_keys=True) == before and not list(tmp_path.iterdir())


# ---- T7: a log or symlog y axis, the paper's first bins, CI bands ----------------------------------


def test_profile_scale_is_log_for_positive_values_and_symlog_otherwise():
    assert plot_style.profile_scale([0.28, 0.04, 3e-4], [0.14, 0.002]) == ("log", {})
    kind, kw = plot_style.profile_scale([0.28, 0.0, 3e-4], [-2e-5, 0.1])
    assert kind == "symlog" and kw["linthresh"] == pytest.approx(1e-5)
    assert plot_style.profile_scale([0.1, 0.2], signed=True)[0] == "symlog"
    assert plot_style.profile_scale([np.nan, 0.0])[0] == "symlog"


def test_T7_bin_profile_uses_a_log_y_axis_and_marks_the_papers_first_bin(by_claim):
    by_model = by_claim["T7"]
    f = one("T7", "bin_profile", by_model)
    profile = [ax for ax in visible_axes(f) if ax.get_title()][: len(by_model)]  # the gap row (if any) is untitled
    assert len(profile) == len(by_model) and all(ax.get_yscale() in ("log", "symlog") for ax in profile)
    assert (
        profile[0].get_yscale() in profile[0].get_ylabel().replace("log scale", "log")
        and "bin (tokens)" in profile[0].get_xlabel()
    )
    legend = " | ".join(texts(f))
    for paper_model, causal, bi in (
        ("Llama-3.2-3B", 0.296, 0.114),
        ("Qwen2.5-3B", 0.254, 0.05),
        ("Mistral-7B-v0.3", 0.313, 0.161),
    ):
        assert f"paper first bin, {paper_model} (± tolerance): causal {causal:g}, bidirectional {bi:g}" in legend


def test_T7_with_zero_bins_ci_bands_and_the_gap_uses_symlog(tmp_path):
    causal, bi = [0.28, 0.04, 0.002, 4e-4], [0.03, 0.003, 0.0, -1e-4]
    by_model = {
        "smollm2-135m": {
            f["name"]: f
            for f in [
                fig("bin_edges", [0, 8, 16, 32, 64]),
                fig("delta_r2_by_bin_causal", causal, ci=[[c * 0.9, c * 1.1] for c in causal]),
                fig("delta_r2_by_bin_bidirectional", bi),
                fig(
                    "gap_by_bin",
                    [c - b for c, b in zip(causal, bi)],
                    ci=[[c - b - 1e-3, c - b + 1e-3] for c, b in zip(causal, bi)],
                ),
            ]
        }
    }
    r = roles("T7", by_model, "bin_profile")
    assert r["gap"] == ["gap_by_bin"] and r["x"] == ["bin_edges"]
    f = one("T7", "bin_profile", by_model)
    profile, gap = visible_axes(f)
    assert profile.get_yscale() == "symlog" and "symlog" in profile.get_ylabel()
    assert gap.get_yscale() == "symlog" and "causal − bidirectional" in gap.get_ylabel()
    assert len(profile.collections) >= 1 and len(gap.collections) >= 1  # the CI bands (fill_between)
    assert "causal 95% CI" in texts(f) and "paired 95% CI of the gap" in texts(f)
    assert plot_style.save(f, tmp_path / "t7.png").is_file()


# ---- the paper's values ------------------------------------------------------------------------------


def test_paper_refs_come_from_the_registry():
    refs = plot_style.paper_refs("T6", "mean_delta_causal")
    assert [r.label for r in refs] == [
        "paper, Llama-3.2-1B",
        "paper, Llama-3.2-3B",
        "paper, Llama-3.1-8B",
        "paper, Qwen2.5-3B",
        "paper, Mistral-7B-v0.3",
    ]
    llama3b = refs[1]
    pv = CLAIMS["T6"].figure("mean_delta_causal").paper["llama-3.2-3b"]
    assert (llama3b.value, llama3b.tolerance) == (0.0143, pytest.approx(pv.tolerance)) and pv.tolerance > 0
    assert plot_style.paper_refs("T11", "ablation:baseline") == []  # no paper number in the registry
    assert plot_style.paper_refs("T6", "not_a_declared_figure") == [] and plot_style.paper_refs("T99", "x") == []
    # a paper model run gets its own value only; a bundled model every paper model's
    assert [r.model for r in plot_style.refs_for("T6", "mean_delta_causal", "qwen-2.5-3b")] == ["qwen-2.5-3b"]
    assert len(plot_style.refs_for("T6", "mean_delta_causal", "smollm2-135m")) == 5
    # an older results.json's recorded paper value, where the registry has none
    assert plot_style.refs_for("T9a", "max_std_position0", "m", fig("max_std_position0", 0.0, paper=0.0)) == [
        plot_style.PaperRef("", "paper", 0.0, 0.0)
    ]
    assert plot_style.paper_label("mistral-7b-v0.3") == "Mistral-7B-v0.3"


def test_paper_marks_are_drawn_where_the_registry_has_values_and_only_there(by_claim):
    t6 = by_claim["T6"]
    f = plot_kinds.ablation_bars_figure("T6", "gemma3-270m", t6["gemma3-270m"], roles("T6", t6, "ablation_bars"))
    legend = " | ".join(texts(f))
    assert "paper, Llama-3.2-3B (± tolerance): 0.0143 / 0.0051 / 0.0413 / 0.0388" in legend
    assert "paper, Llama-3.2-1B (± tolerance): 0.0121 / 0.0022 / – / –" in legend
    assert "mean ΔR²\n(fraction of variance)" == visible_axes(f)[0].get_ylabel()
    t11 = by_claim["T11"]
    f = plot_kinds.ablation_bars_figure("T11", "gemma3-270m", t11["gemma3-270m"], roles("T11", t11, "ablation_bars"))
    assert not any("paper" in t for t in texts(f)) and not f.legends and visible_axes(f)[0].get_legend() is None
    t8 = by_claim["T8"]
    f = one("T8", "layer_ratio", t8)
    ax = visible_axes(f)[0]
    dotted = {ln.get_label(): ln.get_ydata()[0] for ln in ax.get_lines() if ln.get_linestyle() == ":"}
    assert dotted == {
        "paper, Llama-3.2-3B mean r_l: 0.62": 0.62,
        "paper, Qwen2.5-3B mean r_l: 0.21": 0.21,
        "paper, Mistral-7B-v0.3 mean r_l: 0.66": 0.66,
    }
    assert ax.get_xlabel() == "layer (relative depth 0–1)" and ax.get_xlim()[1] <= 1.05
    t2 = by_claim["T2"]
    f = one("T2", "sink_bars", t2)
    legend = " | ".join(texts(f))
    assert "paper, Llama-3.2-1B: 0.92" in legend and "paper, Qwen2.5-3B: 1" in legend


# ---- the other figures ---------------------------------------------------------------


def test_T1_scatter_has_log_sink_axis_one_point_per_cell_and_chance(by_claim):
    t1 = by_claim["T1"]
    f = one("T1", "sink_vs_probe", t1)
    axes = visible_axes(f)
    with_grid = [m for m, figs in t1.items() if "sink_by_layer_position" in figs]  # no-BOS models (the at-chance test)
    assert len(axes) == len(with_grid) >= 2 and all(ax.get_xscale() == "log" for ax in axes)
    grid = np.array(t1["smollm2-135m"]["sink_by_layer_position"]["value"], dtype=float)
    ax = axes[[a.get_title().split(" ")[0] for a in axes].index("smollm2-135m")]
    points = ax.collections[0].get_offsets()
    assert len(points) == int(np.isfinite(grid).sum())
    assert any(ln.get_label() == "chance (0.25)" for ln in ax.get_lines())


def test_T9_per_layer_plots_carry_their_thresholds(by_claim):
    t9b = by_claim["T9b"]
    f = one("T9b", "layer_profile", t9b)
    ax = visible_axes(f)[0]
    assert ax.get_yscale() == "log" and any(
        ln.get_ydata()[0] == CLAIMS["T9b"].threshold("norm_factor")
        for ln in ax.get_lines()
        if ln.get_linestyle() == "--"
    )
    t9a = by_claim["T9a"]
    f = one("T9a", "layer_profile", t9a)
    assert "0 = embedding output" in visible_axes(f)[0].get_xlabel()
    assert any("std exactly 0 at every layer" in t for t in texts(f))


def test_T12_draws_its_intervals_and_both_thresholds_its_criterion_uses(by_claim):
    """Left, the share of the norm removed per ablated layer with its interval, against the claim's minimum; right,
    the paired accuracy change per ablated layer with its interval, against the claim's largest drop (from the
    declaration, never restated), the held side shaded."""
    t12 = by_claim["T12"]
    left, right = visible_axes(one("T12", "norm_removed", t12))
    dashed = lambda ax: {ln.get_ydata()[0] for ln in ax.get_lines() if ln.get_linestyle() == "--"}
    assert CLAIMS["T12"].threshold("min_norm_removed") in dashed(left)
    assert -CLAIMS["T12"].threshold("accuracy_drop") in dashed(right)
    layers = sum(len(f["ablated_layers"]["value"]) for f in t12.values())
    assert len(left.patches) == layers  # one bar per ablated layer and model
    bars = [c for c in left.collections if c.get_segments()]  # the bars' intervals
    assert sum(len(c.get_segments()) for c in bars) == layers
    ci = t12["gemma3-270m"]["topic_accuracy_change_by_ablated_layer"]["ci"]
    spans = sorted(
        (round(float(s[0][1]), 6), round(float(s[1][1]), 6))
        for c in right.collections
        if hasattr(c, "get_segments")
        for s in c.get_segments()
        if len(s) == 2 and s[0][0] == s[1][0]
    )
    assert all((round(lo, 6), round(hi, 6)) in spans for lo, hi in ci)  # the Newcombe intervals, as judged
    # an older record without the change: after − before at the point estimates, the layers on the ticks
    three = {
        "m": {
            f["name"]: f
            for f in [
                fig("fraction_norm_removed_by_layer", [0.2, 0.3, 0.1]),
                fig("ablated_layers", [27, 28, 29]),
                fig("chance", 0.25),
                fig("topic_accuracy_before", 0.9),
                fig("topic_accuracy_after_by_ablated_layer", [0.9, 0.88, 0.91]),
            ]
        }
    }
    left, right = visible_axes(one("T12", "norm_removed", three))
    assert [t.get_text() for t in left.get_xticklabels()] == ["27", "28", "29"] and len(left.patches) == 3
    assert [t.get_text() for t in right.get_xticklabels()] == ["27\n0.90\n→0.90", "28\n0.90\n→0.88", "29\n0.90\n→0.91"]
    (points,) = [ln for ln in right.get_lines() if ln.get_marker() == "o" and len(ln.get_ydata()) == 3]
    assert list(points.get_ydata()) == pytest.approx([0.0, -0.02, 0.01])


def test_T10_coinciding_fits_are_one_legend_entry(by_claim):
    t10 = by_claim["T10"]
    f = one("T10", "length_scaling", t10)
    legend = [t.get_text() for lg in f.legends for t in lg.get_texts()]
    assert legend == ["measured", "piecewise fit = power-law fit (breakpoint at the first length)"]
    for ax in visible_axes(f):
        assert len(ax.get_lines()) == 2  # measured + one fit: the coinciding one is not drawn twice
    coincide = own("T10", "s5_8_length_scaling_plots.fits_coincide")
    assert coincide([1.0, 2.0], [1.0, 2.0 + 1e-12]) and not coincide([1.0, 2.0], [1.0, 2.1])


def test_T3_heatmaps_share_one_colour_scale(by_claim):
    t3 = by_claim["T3"]
    vmax = own("T3", "s5_2_sink_heads_plots.heatmap_vmax")(t3, roles("T3", t3, "sink_heatmap"))
    highs = [np.nanmax(np.array(f["sink_by_layer_head"]["value"], dtype=float)) for f in t3.values()]
    assert vmax == pytest.approx(max(highs))
    clims = set()
    figures = drawn("T3", "sink_heatmap", t3)
    assert len(figures) == len(t3)
    for f in figures:
        clims.add(f.axes[0].get_images()[0].get_clim())
        assert "sink-reading strength per head" in " ".join(texts(f))
        assert any("top-decile heads" in t for t in texts(f))
    assert clims == {(0.0, vmax)}
    top_decile = own("T3", "s5_2_sink_heads_plots.top_decile")
    assert list(top_decile(np.array([[0.1, 0.9], [0.5, 0.9]]), 0.25)) == [1]  # ties: the lower flat index


# ---- absent or malformed figures: nothing written, no crash ------------------------------------------


def test_missing_figures_write_nothing(tmp_path):
    results = {
        "records": [
            rec("T1", "m", [fig("sink_by_layer_position", [[0.5, 0.1]])]),  # no accuracy grid to pair it with
            rec("T7", "m", [fig("bin_edges", [0, 8, 16])]),  # edges without a profile
            rec("T8", "m", [fig("mean_layer_ratio", 0.4)]),  # the mean without the per-layer ratio
            rec("T9a", "m", [fig("max_std_position0", 0.0)]),
            rec("T12", "m", [fig("ablated_layers", [27, 28, 29]), fig("chance", 0.25)]),
            rec("T6", "m", []),
            {**rec("T9b", "m", []), "figures": None},
            rec("T10", "m", [fig("lengths", [16, 32])]),
            rec("T3", "m", [fig("sink_by_layer_head", [])]),
            rec("T99", "m", [fig("layer_ratio", [1.0, 2.0])]),  # a claim the registry does not know
            rec("T1", "m", [fig("not_declared", [1, 2])]),
        ]
    }
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert plots.make_all(RunResult.of(results), tmp_path / "figures") == []  # a null figures list too
    assert not list((tmp_path / "figures").glob("*"))
    empty = {"m": {"other": fig("other", 1.0)}}
    all_roles = {"": ["absent"], "x": ["absent_x"], "fit": ["absent_fit"], "sink": ["absent"], "gap": ["absent"]}
    every = [(c, k) for c in CLAIMS for k in CLAIMS[c].plots] + [("T1", k) for k in plots.GENERIC]
    for claim, kind in every:
        plot = plot_style.PlotInput(claim, empty, all_roles, spec=plots.plot_spec(claim, kind) or plots.PlotSpec())
        assert all(d.figure is None for d in plots.kind_function(claim, kind)(plot)), (claim, kind)


def test_malformed_figures_are_skipped_with_a_warning_not_a_crash(tmp_path):
    results = {
        "records": [
            rec(
                "T1",
                "m",
                [
                    fig("sink_by_layer_position", [[0.5, 0.1], [0.2, 0.01]]),
                    fig("probe_accuracy_by_layer_position", [[0.3, 0.9]]),
                ],
            ),  # shapes differ: not plotted
            rec("T9b", "m", [fig("norm_ratio_by_layer", [12.0, None, "x", 30.0])]),  # odd entries: NaN
            rec(
                "T10",
                "m",
                [fig("lengths", [16, 32]), fig("delta_r2_by_length", [0.1, 0.05]), fig("power_law_prediction", [0.1])],
            ),  # a fit of the wrong length: left out
        ]
    }
    out = plots.make_all(typed(results), tmp_path)
    assert sorted(p.path.name for p in out) == ["T10_length_scaling.png", "T9b_layer_profile.png"]
    assert sorted(p.name for p in tmp_path.glob("*.png")) == ["T10_length_scaling.png", "T9b_layer_profile.png"]


# ---- the summary of every decision (harness/report/summary_plot.py) -----------------------------------------


def decision(verdict, estimate, interval, criterion, check="test_T6_x: reduced"):
    return {"check": check, "verdict": verdict, "estimate": estimate, "interval": interval, "criterion": criterion}


def margin_of(d) -> float:
    """The rule's margin for a decision (harness/spec/decision.py): positive on its verdict's side."""
    lo, hi = d["interval"] or (d["estimate"], d["estimate"])
    if d["criterion"].startswith("inside"):
        a, b = (float(x) for x in d["criterion"][8:-1].split(","))
        return min(lo - a, b - hi) if d["verdict"] == "held" else (a - hi if hi < a else lo - b)
    above, t = d["criterion"][0] == ">", float(d["criterion"][2:])
    if d["verdict"] == "held":
        return lo - t if above else t - hi
    return t - hi if above else lo - t


def decided(claim, model, d, figures=(), test=None):
    """A record the rule decided by ``d`` alone: its verdict, its margin."""
    r = {**rec(claim, model, list(figures)), "test": f"claims/t.py::{test or d['check'].split(':')[0]}[{model}]"}
    d = {**d, "margin": d.get("margin", margin_of(d))}
    return {**r, "verdict": d["verdict"], "margin": d["margin"], "decisions": [d]}


def test_summary_has_one_row_per_test_and_model_of_the_example_run(example):
    """Each test with a verdict on its data: its deciding decision drawn, or (decided without an interval) named
    with its verdict; the checks of the paper's equations left out."""
    shown = [
        r
        for r in typed(example).records
        if r.shown in (*DECIDED, Verdict.UNSTABLE, Verdict.STALE) and not record_text.is_property_check(r)
    ]
    rows = summary_plot.summary_rows(typed(example))
    drawn = [r for r in rows if math.isfinite(r.estimate)]
    assert len(rows) == len(shown) and len(drawn) == sum(record_text.deciding(r) is not None for r in shown)
    assert "EQ2" not in {r.claim for r in rows}
    order = [record_text.claim_key(r.claim) for r in rows]
    assert order == sorted(order)  # grouped by claim, in claim order
    labels = [r.label for r in rows]
    assert len(set(labels)) == len(labels)
    for label in (
        "T6 · reduced · smollm2",
        "T6 · rises · gemma3",
        "T8 · flat · qwen2.5",
        "T9c · bi+replace-Lstar: direction · gemma3",
    ):
        assert label in labels
    t10 = next(r for r in rows if r.label == "T10 · leakage decays with length piecewise · gemma3")
    assert not math.isfinite(t10.estimate) and t10.numbers.startswith("not held")  # a not held test is never missing
    assert t10.color == plot_style.VERDICT_COLORS[Verdict.NOT_HELD]


def test_summary_rows_lie_on_the_side_of_their_tests_verdict(example):
    """On the common scale a held one-sided row lies wholly right of 0, a not-held one wholly left, an inconclusive
    one across it; an equivalence row held lies inside [-1, 1]; each coloured by its test's verdict."""
    seen = set()
    for r in summary_plot.summary_rows(typed(example)):
        if not math.isfinite(r.estimate) or r.verdict not in ("held", "not held", "inconclusive"):
            continue
        assert r.low <= r.estimate <= r.high and r.color == plot_style.VERDICT_COLORS[r.verdict]
        if r.kind == summary_plot.ONE_SIDED:
            side = {"held": r.low > 0, "not held": r.high < 0, "inconclusive": r.low <= 0 <= r.high}
        else:
            side = {
                "held": -1 <= r.low and r.high <= 1,
                "not held": r.high < -1 or r.low > 1,
                "inconclusive": r.low < -1 <= r.high or r.low <= 1 < r.high,
            }
        assert side[r.verdict], r
        seen.add((r.kind, r.verdict))
    assert seen >= {
        (summary_plot.ONE_SIDED, "held"),
        (summary_plot.ONE_SIDED, "not held"),
        (summary_plot.ONE_SIDED, "inconclusive"),
        (summary_plot.EQUIVALENCE, "held"),
        (summary_plot.EQUIVALENCE, "not held"),
        (summary_plot.EQUIVALENCE, "inconclusive"),
    }


def test_inconclusive_and_unstable_have_colours_of_their_own_in_the_figures_and_the_matrix(example):
    """Two different things a reader must tell apart: the data cannot decide (inconclusive) and a seed can flip the
    verdict (unstable across seeds). Each its own colour in the summary figure and its own cell class in the matrix."""
    colours = plot_style.VERDICT_COLORS
    assert len({colours[v] for v in (*DECIDED, Verdict.UNSTABLE)}) == 4
    assert Verdict.UNSTABLE.css != Verdict.INCONCLUSIVE.css
    from harness.report.render import CSS

    backgrounds = dict(re.findall(r"td\.(\w+)\{background:(#[0-9a-f]+)", CSS))
    assert backgrounds[Verdict.UNSTABLE.css] != backgrounds[Verdict.INCONCLUSIVE.css]
    rows = summary_plot.summary_rows(typed(example))
    by_verdict = {r.verdict: r.color for r in rows}
    assert by_verdict[Verdict.UNSTABLE] == colours[Verdict.UNSTABLE] != by_verdict[Verdict.INCONCLUSIVE]
    legend = {h.get_label(): h.get_color() for h in summary_plot._legend_handles(rows) if hasattr(h, "get_color")}
    assert legend[Verdict.UNSTABLE.label] != legend[Verdict.INCONCLUSIVE.label]


def test_summary_rows_move_each_criterion_onto_a_common_scale():
    ds = [
        decision("held", 0.187, [0.156, 0.252], "< 0.46"),  # below: held side to the right
        decision("not held", 1.95, [1.89, 2.01], "> 2.02", "test_T6_y: rises"),
        decision("inconclusive", 0.01, [-0.03, 0.05], "> 0", "test_T6_z: straddles"),  # scale: the CI's width
        decision("held", 1.025, [0.9, 1.15], "inside [0.8, 1.25]", "test_T6_w: alike"),
        decision("not held", -1.54, [-1.78, -1.35], "inside [-0.1, 0.1]", "test_T6_v: flat"),
        decision("held", -1.0, None, "< 0", "test_T6_u: point"),
    ]
    rows = {
        r.label.split(" · ")[1]: r
        for r in summary_plot.summary_rows(typed({"records": [decided("T6", "m", d) for d in ds]}))
    }
    approx = lambda r: pytest.approx((r.low, r.estimate, r.high))
    assert approx(rows["reduced"]) == ((0.46 - 0.252) / 0.46, (0.46 - 0.187) / 0.46, (0.46 - 0.156) / 0.46)
    assert rows["reduced"].low > 0 and rows["reduced"].color == plot_style.VERDICT_COLORS[Verdict.HELD]
    assert approx(rows["rises"]) == ((1.89 - 2.02) / 2.02, (1.95 - 2.02) / 2.02, (2.01 - 2.02) / 2.02)
    assert rows["rises"].high < 0 and rows["rises"].color == plot_style.VERDICT_COLORS[Verdict.NOT_HELD]
    assert approx(rows["straddles"]) == (-0.375, 0.125, 0.625)  # (x - 0) / 0.08, the interval's width
    assert rows["straddles"].color == plot_style.VERDICT_COLORS[Verdict.INCONCLUSIVE]
    assert approx(rows["alike"]) == ((0.9 - 1.025) / 0.225, 0.0, (1.15 - 1.025) / 0.225)  # a -> -1, b -> +1
    assert rows["alike"].kind == summary_plot.EQUIVALENCE and -1 < rows["alike"].low < rows["alike"].high < 1
    assert approx(rows["flat"]) == (-17.8, -15.4, -13.5)
    assert rows["point"].point and approx(rows["point"]) == (1.0, 1.0, 1.0)  # no interval: |estimate| is the scale
    assert rows["reduced"].numbers == "0.187 [0.156, 0.252]  < 0.46"
    assert summary_plot.parse_criterion("≥ 3") is None and summary_plot.parse_criterion("inside [1, 0]") is None


def test_a_check_left_unnamed_is_labelled_by_its_tests_words_not_the_source_text_of_its_call():
    unnamed = decision(
        "held", 0.62, [0.61, 0.63], "> 0", "test_DS1_rope_learns_task1_where_nope_cannot: at_least(x, ci)"
    )
    named = decision("held", 0.62, [0.61, 0.63], "> 0", "test_DS1_other: RoPE above NoPE")
    rows = summary_plot.summary_rows(typed({"records": [decided("DS1", "m", d) for d in (unnamed, named)]}))
    assert {r.label for r in rows} == {"DS1 · RoPE learns task1 where nope cannot · m", "DS1 · RoPE above NoPE · m"}


def test_a_row_a_hair_from_a_rounded_threshold_is_drawn_on_the_side_it_was_decided_on():
    """The criterion's text rounds its threshold to 4 digits; the margin says where it was."""
    d = decision("held", 0.50003, [0.4999998, 0.50009], "> 0.5")  # the threshold itself: 0.4999996, held
    r = decided("T6", "m", {**d, "margin": 2e-7})
    (row,) = summary_plot.summary_rows(typed({"records": [r]}))
    assert row.low > 0 and row.low == pytest.approx(2e-7 / 0.4999996)  # at "0.5" it would sit left of 0


def test_summary_clips_far_rows_at_the_axis_edge():
    assert summary_plot.clip(-17.8, -15.4, -13.5, 4.0) == (-4.0, -4.0, -4.0, True, False)
    assert summary_plot.clip(-0.5, 2.0, 9.0, 3.0) == (-0.5, 2.0, 3.0, False, True)
    assert summary_plot.clip(-0.5, 0.1, 0.5, 3.0)[3:] == (False, False)
    results = {
        "records": [
            decided("T8", "m", decision("not held", -1.54, [-1.78, -1.35], "inside [-0.1, 0.1]", "test_T8_f: flat")),
            decided("T8", "n", decision("held", 0.02, [0.01, 0.03], "inside [-0.1, 0.1]", "test_T8_f: flat")),
        ]
    }
    f = summary_plot.summary_figure(typed(results))
    (ax,) = visible_axes(f)
    limit = summary_plot.CLIP[summary_plot.EQUIVALENCE]
    arrows = [ln for ln in ax.get_lines() if ln.get_marker() == "<"]
    assert len(arrows) == 1 and arrows[0].get_xdata()[0] == -limit
    assert ax.get_xlim()[0] >= -limit * 1.1  # the far row does not stretch the axis
    assert "runs past the axis (clipped)" in texts(f)


def test_summary_figure_labels_and_is_placed_after_the_matrix(example, built):
    f = summary_plot.summary_figure(typed(example))
    panels = [ax for ax in visible_axes(f) if ax.axison]  # the legend's cell has no axis
    assert len(panels) == 2 and all(ax.get_xlabel() and ax.get_yticklabels() for ax in panels)
    assert sum(len(ax.get_yticklabels()) for ax in panels) == len(summary_plot.summary_rows(typed(example)))
    assert "held →" in panels[0].get_xlabel() and "band" in panels[1].get_xlabel()
    assert not f.get_suptitle()  # the report captions it
    for ax in panels:
        assert all(t.get_fontsize() >= 8 for t in ax.get_xticklabels() + ax.get_yticklabels())
    assert summary_plot.summary_figure(typed({"records": [rec("T1", "m", [])]})) is None
    plot_list, _ = built
    cells = run_cells(typed(example))
    blocks = document.pages(cells, plot_list, methods_page.links(cells.claims)).report
    kinds = [b[0] for b in blocks]
    img = kinds.index("img")
    assert blocks[img][1] == plots.SUMMARY_TITLE and blocks[img][2].name == "summary_margins.png"
    assert kinds[img + 1] == "toc" and blocks[img - 1][0] == "p" and blocks[img - 2][0] == "table"  # the matrix
    assert sum(1 for b in blocks if b[0] == "img" and b[2].name == "summary_margins.png") == 1


# ---- the figures draw what their criteria test (T6, T8, T11) ----------------------------------------------


def test_T6_draws_each_judged_ratio_against_its_threshold(by_claim):
    figs = by_claim["T6"]["smollm2-135m"]
    ratios = CLAIMS["T6"].plots["ablation_bars"].options["ratios"]
    ratio_items = own("T6", "s5_4_ablations_plots.ratio_items")
    items = {it.name: it for it in ratio_items("T6", "smollm2-135m", figs, ratios)}
    assert list(items) == [
        "bidirectional_over_causal",
        "identity_over_causal",
        "scrambled_over_causal",
        "identity_over_scrambled",
    ]
    bi, ident, scr, alike = items.values()
    factor = CLAIMS["T6"].threshold("nearly_equal")
    assert bi.held_region == (0.0, 0.46) and bi.criterion == "held < 0.46"
    assert ident.held_region == (2.02, math.inf) == scr.held_region
    assert alike.held_region == pytest.approx((1 / factor, factor))
    assert bi.value == figs["bidirectional_over_causal"]["value"] and bi.ci == tuple(
        figs["bidirectional_over_causal"]["ci"]
    )
    # the paper's ratios: the registry's for bidirectional, Table 6's mean ΔR² divided for the RoPE factors
    assert {r.model: r.value for r in bi.refs}["qwen-2.5-3b"] == 0.09
    paper = CLAIMS["T6"].figure
    assert {r.model: r.value for r in ident.refs}["llama-3.2-3b"] == pytest.approx(
        paper("mean_delta_identity_rope").paper["llama-3.2-3b"].value
        / paper("mean_delta_causal").paper["llama-3.2-3b"].value
    )
    assert [r.model for r in ratio_items("T6", "qwen-2.5-3b", figs, ratios)[1].refs] == ["qwen-2.5-3b"]
    f = own("T6", "s5_4_ablations_plots.ablation_ratios_figure")("T6", "smollm2-135m", figs, ratios)
    ax = visible_axes(f)[0]
    assert ax.get_yscale() == "log" and not f.get_suptitle()
    dashed = sorted(
        {
            round(float(seg[0][1]), 4)
            for c in ax.collections
            if c.get_linestyle() and hasattr(c, "get_segments")
            for seg in c.get_segments()
        }
    )
    assert {0.46, 2.02, round(factor, 4), round(1 / factor, 4)} <= set(dashed)


def test_T8_draws_the_fitted_depth_slope_its_criterion_judges(example, by_claim):
    t8 = by_claim["T8"]
    slope_series = own("T8", "s5_6_layers_plots.slope_series")
    slope_geometry = own("T8", "s5_6_layers_plots.slope_geometry")
    records = typed(example).records
    series = slope_series(t8, roles("T8", t8, "layer_ratio"), records, claim="T8")
    assert [(s.model, s.seq_len) for s in series] == [
        ("gemma3-270m", 128.0),
        ("gemma3-270m", 1024.0),  # the sliding-window test at a length past the window: its own panel
        ("qwen2.5-coder-0.5b", 128.0),
        ("smollm2-135m", 128.0),
    ]
    flat, rises = series[0], series[1]
    assert flat.criterion == summary_plot.Criterion(summary_plot.EQUIVALENCE, -0.1, 0.1)
    assert rises.criterion.kind == summary_plot.ONE_SIDED and rises.criterion.low == 0.0 and rises.criterion.above
    d = np.linspace(0.0, 1.0, 11)
    for s in series:
        x = plot_style.depth(len(s.ratio))
        ok = np.isfinite(s.ratio)
        assert s.slope == pytest.approx(np.polyfit(x[ok], s.ratio[ok], 1)[0])  # the recorded slope is this fit's
        geo = slope_geometry(s, d)
        assert (geo.fit[-1] - geo.fit[0]) == pytest.approx(s.slope)
        lo, hi = geo.band
        assert hi[0] - lo[0] > 0 and hi[-1] - lo[-1] > 0  # the slope's CI as a band
    geo = slope_geometry(flat, d)
    assert sorted(round(k, 6) for k, _ in geo.thresholds) == [-0.1, 0.1] and geo.held is not None
    assert [k for k, _ in slope_geometry(rises, d).thresholds] == [0.0]
    # without records (an older results.json): one series per model, the criterion from its flat bound
    bounds = {  # the flat band of each model's T8 test as its run recorded it (relative below a mean r_l of 0.3)
        r["model"]: next(f["value"] for f in r["figures"] if f["name"] == "flat_bound")
        for r in example["records"]
        if "test_T8_layer_ratio_is_flat_with_depth" in r["test"]
    }
    assert sorted(bounds.values()) != [0.1] * 3  # two of the three below 0.3: a relative band
    assert [(s.model, s.criterion.high) for s in slope_series(t8, roles("T8", t8, "layer_ratio"), claim="T8")] == [
        (m, pytest.approx(bounds[m])) for m in ("gemma3-270m", "qwen2.5-coder-0.5b", "smollm2-135m")
    ]
    f = one("T8", "layer_ratio", t8, typed(example).records)
    assert len(visible_axes(f)) == 4 and not f.get_suptitle()
    assert "slope -2.94 [-4.67, -2.39]; held > 0" in visible_axes(f)[1].get_title()


def test_T11_draws_the_reductions_and_the_margins_it_judges_beside_the_papers_values(by_claim):
    t11 = by_claim["T11"]
    options = CLAIMS["T11"].plots["ablation_bars"].options
    by_model = {p.model: p for p in own("T11", "s5_8_targeted_plots.reduction_panels")(t11, options)}
    assert list(by_model) == list(t11)
    qwen, gemma = by_model["qwen2.5-coder-0.5b"], by_model["gemma3-270m"]
    assert [r.name for r in qwen.reductions] == ["reduction_rank1", "reduction_sink_heads", "reduction_random_heads"]
    assert qwen.reductions[0].ci == tuple(t11["qwen2.5-coder-0.5b"]["reduction_rank1"]["ci"])
    assert len(qwen.draws) == 10 and qwen.random_mean == t11["qwen2.5-coder-0.5b"]["reduction_random_heads"]["value"]
    assert qwen.targeted_band() == (-qwen.random_mean, qwen.random_mean)
    assert gemma.random_mean < 0 and gemma.targeted_band() is None  # nothing can be smaller than no reduction
    assert [m.name for m in gemma.margins] == ["random_minus_rank1", "random_minus_sink_heads"]
    f = one("T11", "ablation_bars", t11)
    axes = visible_axes(f)
    assert len(axes) == 2 * len(t11) and not f.get_suptitle()
    for ax in axes:  # the criteria's threshold, 0, on every panel
        assert any(ln.get_linestyle() == "--" and ln.get_ydata()[0] == 0.0 for ln in ax.get_lines())
    # the paper's values on the axis (the declaration's, §5.8 Table 10), inside its range, each written beside it
    paper = options["paper"]
    for row, names in ((axes[: len(t11)], qwen.reductions), (axes[len(t11) :], qwen.margins)):
        for ax in row:
            segments = [s for c in ax.collections if hasattr(c, "get_segments") for s in c.get_segments()]
            marks = sorted(round(float(s[0][1]), 6) for s in segments if len(s) == 2)
            want = [round(paper[n.name], 6) for n in names]
            assert all(v in marks for v in want), (marks, want)
            assert ax.get_ylim()[1] > max(want)
            assert {f"paper {v:.2f}" for v in want} <= {t.get_text() for t in ax.texts}
    assert not any("no per-model values" in t for t in texts(f))


def test_T11_without_its_reductions_draws_the_bars():
    """An older record with the ablations' mean ΔR² and none of the reductions: T11's own kind falls back to the
    generic bars, one figure per model, under the bars' caption."""
    t11 = {"m": {"ablation:baseline": fig("ablation:baseline", 0.1), "ablation:rank-1 position probe": fig("x", 0.09)}}
    plot = plots.claim_inputs("T11", t11, ())["ablation_bars"]
    (d,) = plots.kind_function("T11", "ablation_bars")(plot)
    assert d.figure is not None and (d.model, d.name) == ("m", "ablations") and d.what and "ΔR²" in d.what


def test_the_head_map_writes_each_effect_and_outlines_the_marked_head():
    """The per-head ablation map (the related paper's deposit, DP1): one panel per model, every head's effect written
    in its cell, the marked head outlined, axes and the colour bar labelled."""
    grid = [[0.05, 0.61, 0.02, 0.04], [0.01, 0.02, 0.03, 0.02]]
    by_model = {
        "m1": {"head_effects": {"value": grid}, "deposit_head": {"value": [0, 1]}},
        "m2": {"head_effects": {"value": [[0.2, 0.2], [0.1, 0.3]]}, "deposit_head": {"value": [0, 0]}},
    }
    f = plot_kinds.head_map_figure(by_model, {"": ["head_effects"], "marked": ["deposit_head"]}, "DP1")
    axes = visible_axes(f)
    assert [a.get_title() for a in axes] == ["m1", "m2"]
    assert all(a.get_xlabel() == "head (index)" and a.get_ylabel() == "layer (index)" for a in axes)
    assert "0.610" in texts(f) and any("relative change of mean ΔR²" in t for t in texts(f))
    outlined = [p for p in axes[0].patches if not p.get_fill()]
    assert len(outlined) == 1 and outlined[0].get_xy() == (0.5, -0.5)
    assert plot_kinds.head_map_figure({"m": {}}, {"": ["head_effects"]}) is None
    ci = [[[0.0, 0.1], [0.4, 0.83], [0.0, 0.05], [0.0, 0.1]], [[0.0, 0.02]] * 4]
    by_model["m1"]["head_effects_ci"] = {"value": ci}
    f = plot_kinds.head_map_figure(
        by_model, {"": ["head_effects"], "marked": ["deposit_head"], "ci": ["head_effects_ci"]}
    )
    assert "0.610\n[0.400, 0.830]" in texts(f)  # each effect's interval under it
    assert "0.200" in texts(f) and not any(t.startswith("0.200\n") for t in texts(f))  # m2 recorded none


def test_a_head_map_over_training_seeds_labels_its_rows_so():
    """DS2's map (the related paper's synthetic models): one row per training seed, as its figure declares."""
    by_model = {"synthetic-pilot-authors": {"head_effects_by_seed": {"value": [[0.6, 0.1], [0.5, 0.2], [0.7, 0.0]]}}}
    f = plot_kinds.head_map_figure(by_model, {"": ["head_effects_by_seed"]}, "DS2")
    (ax,) = visible_axes(f)
    assert ax.get_ylabel() == "training seed (index)" and "0.700" in texts(f)
    assert not [p for p in ax.patches if not p.get_fill()]  # no head marked


def test_a_plot_shown_with_another_claim_follows_that_claims_own_plots(tmp_path):
    """The deposit map (DP1) is T11's per-head yardstick: its declaration's ``shown_with`` puts it in T11's section
    too, after T11's own plots, with the reason, and still in DP1's own."""
    spec = CLAIMS["DP1"].plots["head_map"]
    assert set(spec.shown_with) == {"T11"}
    grid, ci = [[0.05, 0.61], [0.01, 0.02]], [[[0.0, 0.1], [0.4, 0.8]], [[0.0, 0.02], [0.0, 0.04]]]
    dp1 = [fig("head_effects", grid), fig("head_effects_ci", ci), fig("deposit_head", [0, 1])]
    t11 = [fig("ablation:baseline", 0.1), fig("ablation:random heads (2, 10 draws)", 0.08)]
    results = {"records": [rec("T11", "m", t11), rec("DP1", "m", dp1)]}
    made = plots.make_all(typed(results), tmp_path)
    dp_map = next(p for p in made if p.claim == "DP1")
    assert dp_map.also == (("T11", spec.shown_with["T11"]),)
    sections = {
        c: document.claim_section(c, [r], made, {}) for c, r in zip(("T11", "DP1"), run_cells(typed(results)).records)
    }
    images = {c: [b for b in blocks if b[0] == "img"] for c, blocks in sections.items()}
    assert [Path(b[2]) for b in images["DP1"]] == [Path(dp_map.path)]
    assert Path(images["T11"][-1][2]) == Path(dp_map.path) and len(images["T11"]) >= 2
    assert images["T11"][-1][1].endswith(f"beside T11: {spec.shown_with['T11']}")
