"""The run report (harness/report/document.py, harness/report/plots.py) on synthetic results.json data: no models run."""

from __future__ import annotations

import html
import json
import re

import pytest

from harness.files import paths
from harness.outcome.results import RunResult, loaded, typed
from harness.report import cli as report_cli
from harness.report import compare, document, methods_page, record_text, write
from harness.report.cells import run_cells
from harness.spec.claims import CLAIMS, PlotSpec

pytest.importorskip("matplotlib")
from harness.report import plots
from harness.report.plot_style import PlotInput

MODELS = ["smollm2-135m", "qwen-tiny"]


def fig(name, value, paper=None, ci=None, note=""):
    return {"name": name, "value": value, "paper": paper, "ci": ci, "note": note}


def pages(results, made=()) -> document.Pages:
    """The report's and summary.md's blocks of a typed run, as harness.report.write.build assembles them."""
    cells = run_cells(results)
    return document.pages(cells, list(made), methods_page.links(cells.claims))


def rec(claim, test, model, outcome, figures, reason=""):
    return {
        "test": f"claims/test_x.py::{test}[{model}]",
        "claim": claim,
        "model": model,
        "outcome": outcome,
        "reason": reason,
        "seconds": 0.5,
        "figures": figures,
    }


def synthetic() -> dict:
    recs = []
    for k, m in enumerate(MODELS):
        s = 1 + k
        recs += [
            rec(
                "T7",
                "test_bin_profile",
                m,
                "passed",
                [
                    fig("delta_r2_by_bin_causal", [0.3 / s, 0.1, 0.05, 0.03, 0.02, 0.02, 0.01], paper=0.296),
                    fig("delta_r2_by_bin_bidirectional", [0.11 / s, 0.08, 0.05, 0.03, 0.02, 0.02, 0.01]),
                    fig("bin_edges", [1, 2, 4, 8, 16, 32, 64, 128]),
                ],
            ),
            rec(
                "T8",
                "test_layer_ratio",
                m,
                "xfailed",
                [fig("layer_ratio", [0.2, None, 0.3 * s, 0.4, 0.5])],
                reason="ratio grows with depth in this model",
            ),
            rec(
                "T2",
                "test_bos_moved",
                m,
                "passed",
                [fig("sink_at_8_default", 0.01), fig("sink_at_8_bos_moved", 0.9, paper=0.92)],
            ),
            rec(
                "T3",
                "test_consistency",
                m,
                "passed",
                [fig("sink_by_layer_head", [[0.1 * (i + j) / s for j in range(6)] for i in range(4)])],
            ),
            rec("T2", "test_random_token", m, "skipped", [], reason="weights unavailable"),
            rec(
                "T10",
                "test_length_scaling",
                m,
                "failed",
                [
                    fig("lengths", [16, 32, 64, 128, 256]),
                    fig("delta_r2_by_length", [0.05, 0.05, 0.03, 0.015, 0.008]),
                    fig("power_law_prediction", [0.06, 0.042, 0.029, 0.02, 0.014]),
                    fig("piecewise_prediction", [0.05, 0.05, 0.03, 0.015, 0.0075]),
                ],
                reason="AssertionError: piecewise | power",
            ),
            rec(
                "T6",
                "test_ablations",
                m,
                "passed",
                [
                    fig("mean_delta_causal", 0.0143, paper=0.0143, ci=[0.0137, 0.0149]),
                    fig("mean_delta_bidirectional", 0.0051, ci=[0.004, 0.006]),
                    fig("mean_delta_identity_rope", 0.04),
                    fig("bidirectional_over_causal", 0.123456789, note="bi / baseline"),
                ],
            ),
        ]
    return {
        "run": "run-synthetic",
        "settings": {"n_prompts": 8, "seq_len": 128},
        "models": MODELS,
        "versions": {"python": "3.11", "torch": "2.x"},
        "records": recs,
    }


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    d = tmp_path_factory.mktemp("run")
    (d / "results.json").write_text(json.dumps(synthetic()))
    md_path = write.build(d / "results.json")
    return d, md_path.read_text(), (d / "report.html").read_text()


def test_build_writes_all_figure_kinds(built):
    d, md, _ = built
    pngs = sorted(p.name for p in (d / "figures").glob("*.png"))
    for kind in (
        "T7_bin_profile",
        "T8_layer_ratio",
        "T2_sink_bars",
        "T10_length_scaling",
        "T3_sink_heatmap_smollm2-135m",
        "T3_sink_heatmap_qwen-tiny",
        "T6_ablations_qwen-tiny",
    ):
        assert f"{kind}.png" in pngs
        assert f"](figures/{kind}.png)" in md
    assert all((d / "figures" / p).read_bytes().startswith(b"\x89PNG") for p in pngs)


def test_html_is_self_contained(built):
    _, _, html = built
    imgs = re.findall(r"<img[^>]*>", html)
    assert len(imgs) == 8 and all('src="data:image/png;base64,' in i for i in imgs)
    assert 'src="figures/' not in html and "http" not in " ".join(imgs)
    assert "<link" not in html and "<script" not in html and "<style>" in html


def test_markdown_tables_per_claim_and_verdicts(built):
    _, md, html = built
    for claim in ("T2", "T6", "T7", "T8", "T10"):
        assert f"## {claim} — {record_text.claim_texts()[claim]}" in md

    def figure_id(cell: str) -> str:  # "words (unit) — `id` (note)": the id; a figure without words: its name
        return re.search(r"`([^`]+)`", cell)[1] if "`" in cell else cell

    rows = {
        figure_id(line.split(" | ")[2]): line for line in md.splitlines() if line.startswith("| smollm2-135m | test_")
    }
    assert rows["delta_r2_by_bin_causal"].endswith("| 0.296 | [0.3, 0.1, 0.05, 0.03, 0.02, 0.02, … (7)] |  | held |")
    assert "| [0.2, null, 0.3, 0.4, 0.5] |  | not held: ratio grows with depth" in rows["layer_ratio"]
    assert "harness error (no verdict): AssertionError: piecewise \\| power" in rows["lengths"]
    assert "| mean_delta_causal | 0.0143 | 0.0143 | [0.0137, 0.0149] | held |" in rows["mean_delta_causal"]
    assert "leakage bidirectional ÷ causal (ratio) — `bidirectional_over_causal` (bi / baseline)" in md
    assert "0.1235" in rows["bidirectional_over_causal"] and "[4×6 array" in rows["sink_by_layer_head"]
    assert "| test_random_token |  |  |  |  | skipped: weights unavailable |" in md
    assert "| claim | test | smollm2-135m | qwen-tiny |" in md  # the claims × models matrix, a row per test
    assert (
        "| T8 | layer ratio | not held | not held |" in md and "One row per claim test, its verdict on each model" in md
    )
    assert 'class="not">not held: ratio grows' in html and 'class="error">harness error' in html


def test_compare_identical_runs_pass(tmp_path, capsys):
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "results.json").write_text(json.dumps(synthetic()))
    assert report_cli.main(["compare", str(tmp_path / "a" / "results.json"), str(tmp_path / "b")]) == 0
    assert "0 change(s)" in capsys.readouterr().out


def test_compare_flags_perturbed_figure_and_outcome(tmp_path, capsys):
    old, new = synthetic(), synthetic()
    new["records"][0]["figures"][1]["value"][3] *= 1.01  # 1% > rtol 1e-3
    new["records"][0]["figures"][0]["value"][2] *= 1 + 1e-4  # within tolerance
    new["records"][1]["outcome"] = "passed"
    new["records"][2]["figures"].append(fig("peak_layer", 3))
    (tmp_path / "old.json").write_text(json.dumps(old))
    (tmp_path / "new.json").write_text(json.dumps(new))
    assert report_cli.main(["compare", str(tmp_path / "old.json"), str(tmp_path / "new.json")]) == 1
    out = capsys.readouterr().out
    assert "| delta_r2_by_bin_bidirectional | [3] | 0.03 | 0.0303 | moved |" in out
    assert "delta_r2_by_bin_causal" not in out
    assert "| not held | held | verdict changed |" in out and "| peak_layer |  |  | 3 | figure only in new |" in out
    old, new = typed(old), typed(new)
    assert len(compare.diff(old, new)) == 3
    assert compare.diff(old, new, rtol=0.05) == compare.diff(old, new)[1:]  # looser rtol: only outcome + new figure


def test_plots_skip_missing_data(tmp_path):
    empty = {"m": {"other": fig("other", 1.0)}}
    roles = {"": ["absent"], "x": ["absent_x"], "fit": ["absent_fit"]}
    for claim, kind in (
        ("T7", "bin_profile"),
        ("T8", "layer_ratio"),
        ("T2", "sink_bars"),
        ("T10", "length_scaling"),
        ("T3", "sink_heatmap"),
        ("T9c", "ablation_bars"),
    ):
        plot = PlotInput(claim, empty, roles, spec=plots.plot_spec(claim, kind) or PlotSpec())
        assert all(d.figure is None for d in plots.kind_function(claim, kind)(plot)), (claim, kind)
    assert (
        plots.make_all(RunResult.of({"records": [rec("T1", "t", "m", "passed", [fig("x", [1, 2])])]}), tmp_path) == []
    )
    assert list(tmp_path.iterdir()) == []


def test_build_without_figures_or_models(tmp_path):
    res = {
        "run": "r",
        "settings": {},
        "models": [],
        "versions": {},
        "records": [
            {
                "test": "claims/t.py::test_eq2",
                "claim": "EQ2",
                "model": None,
                "outcome": "passed",
                "reason": "",
                "seconds": 0.1,
                "figures": [],
            }
        ],
    }
    (tmp_path / "results.json").write_text(json.dumps(res))
    md = write.build(tmp_path / "results.json").read_text()
    assert (
        "| (no model) | test_eq2 |  |  |  |  | held |" in md
        and "data:image" not in (tmp_path / "report.html").read_text()
    )


def _no_claim():
    res = synthetic()
    del res["records"][3]["claim"]
    return json.dumps(res)


#: Unreadable inputs: (how the bad path is made in a folder, what the one-line message says).
BAD_INPUTS = {
    "missing": (lambda d: d / "nosuch.json", "no such file"),
    "folder without results.json": (lambda d: d, "results.json: no such file"),
    "empty": (lambda d: d / "results.json", "empty file", ""),
    "truncated": (
        lambda d: d / "results.json",
        "not valid JSON (truncated? Unterminated string",
        json.dumps(synthetic(), indent=1)[:3000],
    ),
    "list": (lambda d: d / "results.json", 'not a claims results.json (no "records" list)', "[1, 2, 3]"),
    "pytest-json-report": (
        lambda d: d / "report.json",
        'no "records" list',
        json.dumps(
            {
                "created": 1.0,
                "exitcode": 0,
                "summary": {"passed": 1},
                "tests": [{"nodeid": "t.py::test_a", "outcome": "passed"}],
            }
        ),
    ),
    "record without claim": (
        lambda d: d / "results.json",
        'record 3, claims/test_x.py::test_consistency[smollm2-135m], has no "claim" string',
        _no_claim(),
    ),
    "syrupy snapshot": (
        lambda d: d / "test_T6.json",
        'no "records" list',
        json.dumps({"_tolerance": {"rtol": 1e-3, "atol": 1e-6}, "mean_delta_causal": 0.0143}),
    ),
}


@pytest.mark.parametrize("case", BAD_INPUTS)
@pytest.mark.parametrize("cmd", ["build BAD", "compare good BAD", "compare BAD good"])
def test_unreadable_input_is_one_line_and_exit_2(tmp_path, capsys, case, cmd):
    make, says, *text = BAD_INPUTS[case]
    (tmp_path / "good").mkdir()
    (tmp_path / "good" / "results.json").write_text(json.dumps(synthetic()))
    (tmp_path / "bad").mkdir()
    bad = make(tmp_path / "bad")
    if text:
        bad.write_text(text[0])
    before = sorted((tmp_path / "bad").rglob("*"))
    argv = [{"BAD": str(bad), "good": str(tmp_path / "good")}.get(w, w) for w in cmd.split()]
    assert report_cli.main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.endswith("\n") and len(err.splitlines()) == 1
    assert err.startswith(f"harness.report: {bad}") and says in err
    assert sorted((tmp_path / "bad").rglob("*")) == before  # no report.md, report.html or figures/


def test_usage_error_exits_2():
    with pytest.raises(SystemExit) as e:
        report_cli.main(["compare", "only-one.json"])
    assert e.value.code == 2


def test_compare_says_when_settings_or_models_differ(tmp_path, capsys):
    old, new = synthetic(), synthetic()
    new["settings"] = {"n_prompts": 16, "seq_len": 128, "seed": 3}
    (tmp_path / "old.json").write_text(json.dumps(old))
    (tmp_path / "new.json").write_text(json.dumps(new))
    assert report_cli.main(["compare", str(tmp_path / "old.json"), str(tmp_path / "new.json")]) == 0  # nothing moved
    lines = capsys.readouterr().out.splitlines()
    assert "0 change(s)" in lines[0] and lines[1].startswith("versions: transformers ")  # the versions first
    assert lines[2].startswith("settings differ: n_prompts 8 -> 16, seed (unset) -> 3 (")
    new["models"], new["records"] = MODELS[:1], [r for r in new["records"] if r["model"] == MODELS[0]]
    (tmp_path / "new.json").write_text(json.dumps(new))
    assert report_cli.main(["compare", str(tmp_path / "old.json"), str(tmp_path / "new.json")]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[2].startswith("settings differ: n_prompts 8 -> 16, seed (unset) -> 3")
    assert lines[3].startswith("models differ: smollm2-135m, qwen-tiny -> smollm2-135m (")
    assert "test only in old" in "\n".join(lines[3:])


LEAD = ["claim", "criterion (held when)", "model", "paper", "measured [95% CI]", "verdict", "method"]


def lead_rows(md: str) -> list[list[str]]:
    """The lead table's rows (cells split on unescaped pipes)."""
    lines = md.split("## Claims at a glance", 1)[1].split("\n## ", 1)[0].split("<details>")[0].splitlines()
    table = [line for line in lines if line.startswith("|")]
    split = [[c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]] for line in table]
    assert split[0] == LEAD, split[0]
    return split[2:]


@pytest.mark.parametrize("which", ["synthetic", "committed example"])
def test_the_report_leads_with_one_row_per_test_and_model_with_criterion_paper_and_method(built, which):
    """Every claim row states its criterion (with thresholds), the paper's number labelled with its
    paper model, and links the claim's decision on the run folder's own methods page."""
    md = built[1] if which == "synthetic" else (paths.REPORTS / "example" / "report.md").read_text()
    rows = lead_rows(md)
    assert rows
    for claim, criterion, model, _paper, _measured, verdict, method in rows:
        assert criterion and verdict and model, (claim, criterion)
        first = claim.split(",")[0]  # a model's checks of the paper's equations, all held: one row, "EQ2,EQ3,EQ7"
        assert re.fullmatch(rf"\[METHODS {re.escape(first)}\]\(methods\.md#decision-{first.lower()}\)", method)
    folded = [r for r in rows if r[1].endswith(f"of the paper's equations ({r[0].replace(',', ', ')}), all held")]
    if which == "committed example":  # every claim test there has a registry criterion and the paper's number
        assert len(folded) == 4  # the three models', and EQ3's model-free check
        rows = [r for r in rows if r not in folded]
        assert {html.unescape(r[1].replace("\\|", "|")) for r in rows} <= {
            c.words(cid) for cid in CLAIMS for c in CLAIMS[cid].claim_tests.values()
        }
        assert all(r[3].startswith("paper") for r in rows)
        t6 = [r for r in rows if r[0] == "T6" and r[1].startswith("bidirectional")]
        assert t6 and all("paper, Llama-3.2-3B: 0.35" in r[3] for r in t6)


def test_a_run_records_its_provenance_and_the_report_shows_it(tmp_path):
    """Commit and dirty flag, machine, versions, the pytest selection, each model's weights and caveat."""
    from harness.spec.settings import Settings

    rec = {
        "test": "claims/t.py::test_T9a_position0_state_is_identical_across_prompts[smollm2-135m]",
        "claim": "T9a",
        "model": "smollm2-135m",
        "outcome": "passed",
        "verdict": "held",
        "figures": [],
        "seconds": 1.0,
    }
    out = write.write_run(tmp_path, "run-p", [rec], Settings(), ["smollm2-135m"], ["claims", "-k", "T9a"])
    p = json.loads((out / "results.json").read_text())["provenance"]
    assert len(p["code"]["commit"]) == 40 and isinstance(p["code"]["dirty"], bool)
    assert p["machine"]["cpu"] and p["selection"] == ["claims", "-k", "T9a"]
    assert "instruction-tuned" in p["models"]["smollm2-135m"]["caveat"]
    versions = json.loads((out / "results.json").read_text())["versions"]
    assert {"torch", "transformers", "accelerate", "tokenizers", "syrupy"} <= set(versions)
    md = (out / "report.md").read_text()
    assert "selection: claims -k T9a" in md and "| smollm2-135m | instruction-tuned (SmolLM2-135M-Instruct)" in md
    summary = (out / "summary.md").read_text()
    assert summary.startswith(
        "## abspos claims — run-p\n\n**1 claim test on 1 model: 1 held · 0 not held · 0 inconclusive · 0 not applicable "
        "· 0 harness errors**\n\nModels: smollm2-135m · cpu, float32 · "
    )
    assert "\n\n| claim | test |" in summary


@pytest.mark.parametrize("which", ["synthetic", "committed example"])
def test_the_report_opens_with_the_paper_the_totals_and_the_matrix(built, which):
    """The answer first: the title names the paper, one totals line counts every verdict, the models and design
    follow, then the claims × models matrix, before the per-test table; every claim heading has its verdict strip."""
    md = built[1] if which == "synthetic" else (paths.REPORTS / "example" / "report.md").read_text()
    head = md.splitlines()
    assert head[0] == "# Claims report: Where does Absolute Position come from in decoder-only Transformers?"
    totals = re.fullmatch(r"\*\*(\d+) claim tests? on (\d+) models?: (.*)\*\*", head[2])
    assert totals, head[2]
    counts = dict((w, int(n)) for n, w in (re.match(r"(\d+) (.*)", part).groups() for part in totals[3].split(" · ")))
    assert list(counts)[:5] == ["held", "not held", "inconclusive", "not applicable", "harness errors"]
    moved = counts.pop("changed since the record", None)  # not a verdict: a mark on some of them, shown where any
    assert sum(counts.values()) == int(totals[1]) and moved != 0
    assert head[4].startswith("Models: ")
    assert md.index("## Claims × models") < md.index("## Claims at a glance") < md.index("## Glossary")
    claims = re.findall(r"^## ((?:EQ|T)\d+[a-z]?) — ", md, re.M)
    strips = re.findall(r"^## (?:EQ|T)\d+[a-z]? — .*\n\n\*\*Verdicts\*\* — .+", md, re.M)
    assert claims and len(strips) == len(claims)


@pytest.mark.parametrize("which", ["synthetic", "example", "example-ladder"])
def test_no_reader_facing_text_speaks_pytest(built, which):
    """held / not held / inconclusive / not applicable / harness error, and "as recorded": never pytest's xfail,
    the exception's name or "known outcome" in the report or the job summary (the committed examples included)."""
    folder = built[0] if which == "synthetic" else paths.REPORTS / which
    for name in ("report.md", "report.html", "summary.md"):
        text = (folder / name).read_text().lower()
        for word in ("xfail", "claimnotheld", "known outcome"):
            assert word not in text, f"{name} says {word!r}"


def test_a_report_of_synthetic_sets_alone_speaks_of_the_related_paper_and_each_sets_size():
    """Issue 56: a run of the related paper's trained sets is titled with that paper, names each set with its shape,
    and every verdict at a size other than the paper's says so, in the matrix and the lead table; at the paper's size,
    and beside a real model, the report reads as before."""
    from harness.report.render import to_markdown

    def ds(verdict, target):
        return {
            "test": f"claims/test_synthetic.py::test_DS1_rope_learns_task1_where_nope_cannot[{target}]",
            "claim": "DS1",
            "model": None,
            "outcome": "passed" if verdict == "held" else "failed",
            "verdict": verdict,
            "reason": "",
            "seconds": 1.0,
            "figures": [],
        }

    settings = {"device": "cpu", "dtype": "float32"}
    pilot = {"records": [ds("held", "synthetic-pilot-authors")], "models": [], "settings": settings}
    text = to_markdown(pages(typed(pilot)).report, paths.ROOT)
    assert text.startswith("# Claims report: Deconstructing Positional Information")
    assert (
        "synthetic-pilot-authors (pilot size: d_model 64, 4 heads, 2 layers, 64 tokens, 20,000 samples, 30 epochs"
        in text
    )
    assert "| DS1 | RoPE learns task1 where nope cannot | at pilot size, 4 heads: held |" in text  # the matrix
    assert text.count("at pilot size, 4 heads: held") >= 2  # and the lead table
    paper = {"records": [ds("not held", "synthetic-paper-authors")], "models": [], "settings": settings}
    text = to_markdown(pages(typed(paper)).report, paths.ROOT)
    assert "at paper size, 16 heads" not in text and "| not held · **changed since the record** |" in text
    assert "synthetic-paper-authors (paper size: d_model 256, 16 heads, 6 layers, 128 tokens" in text
    mixed = pilot | {"models": ["smollm2-135m"]}
    assert document.title(run_cells(typed(mixed))) == f"Claims report: {document.PAPER_TITLE}"


def test_an_na_implied_by_another_check_says_so_in_the_matrix():
    """T1a where every highest-sink cell is at position 0: its cell reads "implied by EQ7", the words its n/a reason
    opens with, not "not applicable" (which says the prediction is for other models); other n/a cells are unchanged."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("sinks_claims", paths.ROOT / "claims" / "test_s5_1_sinks.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    record = {"test": "claims/test_s5_1_sinks.py::test_T1_x[smollm2-135m]", "claim": "T1", "model": "smollm2-135m"}
    implied = loaded({**record, "verdict": "n/a", "outcome": "skipped", "reason": mod.IMPLIED_BY_EQ7, "figures": []})
    other = loaded(
        {**record, "verdict": "n/a", "outcome": "skipped", "reason": "not applicable: a BOS model", "figures": []}
    )
    assert record_text.verdict_label(implied) == "implied by EQ7"
    assert record_text.verdict_label(other) == "not applicable"
    assert record_text.verdict_text(implied, False) == "implied by EQ7"


def test_a_changed_verdict_is_badged_and_counted_and_an_as_recorded_one_is_not_marked(tmp_path):
    """Issue 59: the report marks changes, not sameness. A not held that no known outcome records, and a held where
    one records a not held (stale), carry "changed since the record" in the matrix, the lead table and the figure rows
    of report.md, report.html and summary.md, and the totals line counts them; a not held that repeats its record,
    a held, and a not held on a model without a record carry no such mark (and no "as recorded" anywhere)."""
    from harness.outcome.results import loaded
    from harness.outcome.verdict import CHANGED
    from harness.report.render import to_html, to_markdown

    def one(test, verdict, **extra):
        r = rec("T6", test, "smollm2-135m", "passed", [fig("ratio", 0.9, ci=[0.8, 1.0])], reason=f"{test} reason")
        return {**r, "verdict": verdict, "known_outcome": False, **extra}

    records = [
        one("test_new", "not held"),
        one("test_recorded", "not held", known_outcome=True),
        one("test_stale", "stale"),
        one("test_held", "held"),
        one("test_mine", "not held", unrecorded=True),
    ]
    results = [loaded(r) for r in records]
    words = [r.shown.label + r.badge for r in results]
    assert [r.changed for r in results] == [True, False, True, False, False]
    assert words[0] == "not held · changed since the record" and words[1] == "not held"
    assert words[4] == "not held (no record for this model)"
    results = typed({"records": records, "models": ["smollm2-135m"], "settings": {"device": "cpu"}})
    report, summary = pages(results)
    md, html_text, summary = to_markdown(report, tmp_path), to_html(report), to_markdown(summary, tmp_path)
    assert md.splitlines()[2].endswith(f" · 2 {CHANGED}**") and f"2 {CHANGED}" in summary
    assert "as recorded" not in md + html_text + summary
    for text in (md, summary):
        marked = {line.split(" | ")[1] for line in text.splitlines() if f"**{CHANGED}**" in line and "| T6 |" in line}
        assert {"test_new", "test_stale"} <= {t for t in ("test_new", "test_stale") if any(t in m for m in marked)}
        rows = [line for line in text.splitlines() if "reason" in line and line.startswith("| T6")]
        for line in rows:
            badged = f"**{CHANGED}**" in line
            assert badged == ("test_new reason" in line or "test_stale reason" in line), line
    badges = re.findall(r'<td class="([^"]*)">([^<]*)<strong>changed since the record</strong>', html_text)
    assert badges and {c for c, _ in badges} <= {"not changed", "stale changed"}
    assert "not held (no record for this model)" in md
