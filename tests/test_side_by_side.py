"""Two models side by side (harness/report/side_by_side.py, ``python -m harness.report side-by-side``) on synthetic
results.json data and on the committed example run: no models run."""

from __future__ import annotations

import json
import re

import pytest
from test_report import fig, rec  # the synthetic record builders of the report's tests

from harness.files import paths
from harness.outcome.results import loaded
from harness.report import cli as report_cli
from harness.report.side_by_side import PAIR, pair_rows, sides

T2 = "test_T2_without_bos_position0_is_a_saturated_default_sink"
T5 = "test_T5_top30_heads_significant_after_fdr"
T6 = "test_T6_bidirectional_attention_reduces_leakage"
T7 = "test_T7_leakage_concentrates_in_first_query_bin"
T13 = "test_T13_leakage_constant_and_residual_share_rises_with_scale"


def family_record() -> dict:
    """A T13 record over a model family: model None, matched by its whole test id."""
    return {
        **rec("T13", T13, "llama", "skipped", [], reason="not applicable to the llama family: one size"),
        "model": None,
    }


def model_records(model: str) -> list[dict]:
    """base and tuned differ: T6 held on both (figure +50%), T7 held -> not held, T2 not held -> held; T5 on base
    only."""
    base = model == "base"
    recs = [
        rec(
            "T6",
            T6,
            model,
            "passed",
            [
                fig("bidirectional_over_causal", 0.2 if base else 0.3, ci=[0.15, 0.25] if base else [0.25, 0.35]),
                fig("mean_delta_causal", 0.0143 if base else 0.0143 * (1 + 1e-5)),
            ],
        ),
        rec(
            "T7",
            T7,
            model,
            "passed" if base else "xfailed",
            [fig("first_bin_share_of_causal_profile", 0.8 if base else 0.5, ci=[0.7, 0.9] if base else [0.4, 0.6])],
            reason="" if base else "first bin below the share",
        ),
        rec("T2", T2, model, "xfailed" if base else "passed", [fig("sink_at_0_no_bos", 0.8 if base else 0.9)]),
    ]
    return recs + ([rec("T5", T5, model, "passed", [fig("top30_significant", 30)])] if base else [])


def run(models: list[str], **extra) -> dict:
    recs = [r for m in models for r in model_records(m)] + [family_record()]
    return {
        "run": f"run-{'-'.join(models)}",
        "settings": {"n_prompts": 16, "seq_len": 128},
        "models": models,
        "versions": {"transformers": "5.23.0", "torch": "2.13.0"},
        "records": recs,
        "provenance": {
            "code": {"commit": "a" * 40, "dirty": False},
            "models": {
                m: {"source": f"{m} weights", "caveat": f"{m} caveat", "weights_sha256": "b" * 64} for m in models
            },
        },
        **extra,
    }


@pytest.fixture
def runs(tmp_path) -> dict:
    """Folders: "both" (one run, models base and tuned); "base" and "tuned" (one model each; tuned's run uses
    other settings and another transformers)."""
    made = {
        "both": run(["base", "tuned"]),
        "base": run(["base"]),
        "tuned": run(
            ["tuned"],
            settings={"n_prompts": 32, "seq_len": 128},
            versions={"transformers": "5.18.0", "torch": "2.13.0"},
        ),
    }
    for name, results in made.items():
        (tmp_path / name).mkdir()
        (tmp_path / name / "results.json").write_text(json.dumps(results))
    return {name: tmp_path / name for name in made}


def table(md: str, header: list[str]) -> list[list[str]]:
    """The rows of the Markdown table with this header (cells split on unescaped pipes)."""
    lines = [line for line in md.splitlines() if line.startswith("|")]
    split = [[c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]] for line in lines]
    start = split.index(header)
    rows = []
    for row in split[start + 2 :]:
        if len(row) != len(header) or row == header:
            break
        rows.append(row)
    return rows


def side_by_side(argv: list[str], capsys) -> tuple[int, str, str]:
    code = report_cli.main(["side-by-side", *argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("form", ["one run, two models", "two runs"])
def test_one_row_per_test_in_claim_order_with_verdicts_figures_and_changes(runs, tmp_path, capsys, form):
    specs = (
        [f"{runs['both']}#base", f"{runs['both']}#tuned"]
        if form == "one run, two models"
        else [str(runs["base"]), str(runs["tuned"] / "results.json")]
    )
    code, out, err = side_by_side([*specs, "--out", str(tmp_path / "out")], capsys)
    assert (code, err) == (0, "") and out.strip() == str(tmp_path / "out" / "side_by_side.md")
    md = (tmp_path / "out" / "side_by_side.md").read_text()
    rows = {r[1]: r for r in table(md, PAIR)}
    assert list(rows) == [T2, T5, T6, T7, f"{T13}[llama]"]  # claim-registry order; one row per test
    assert rows[T6][3:] == ["held", "held", "0.2 [0.15, 0.25]", "0.3 [0.25, 0.35]", "same; +50.0%"]
    assert rows[T7][3:] == ["held", "not held", "0.8 [0.7, 0.9]", "0.5 [0.4, 0.6]", "held → not held; -37.5%"]
    assert rows[T2][3:] == ["not held", "held", "0.8", "0.9", "not held → held; +12.5%"]
    assert rows[T5][3:] == ["held", "not run", "30", "", "held → not run"]
    assert rows[f"{T13}[llama]"][3:5] == ["n/a", "n/a"] and rows[f"{T13}[llama]"][7] == "same"
    assert rows[T6][2] == "bidirectional / causal mean ΔR² below 0.46 (its paired 95% prompt-bootstrap CI)"  # claims.py
    assert "5 tests: 2 same verdict, 2 changed (1 not held → held, 1 held → not held), 1 run on one side only." in md
    moved = table(md, ["claim", "test", "figure: A -> B"])
    assert moved == [
        ["T2", T2, "sink_at_0_no_bos: 0.8 -> 0.9 (+12.50%)"],
        ["T6", T6, "bidirectional_over_causal: 0.2 -> 0.3 (+50.00%)"],  # mean_delta_causal is within rtol
        ["T7", T7, "first_bin_share_of_causal_profile: 0.8 -> 0.5 (-37.50%)"],
    ]
    html = (tmp_path / "out" / "side_by_side.html").read_text()
    assert html.startswith("<!DOCTYPE html>") and '<td class="not">not held</td>' in html


def test_provenance_lines_and_the_settings_warning(runs, tmp_path, capsys):
    assert (
        side_by_side([f"{runs['both']}#base", f"{runs['both']}#tuned", "--out", str(tmp_path / "one")], capsys)[0] == 0
    )
    one = (tmp_path / "one" / "side_by_side.md").read_text()
    assert one.startswith("# Side by side — run-base-tuned#base vs run-base-tuned#tuned\n")
    assert (
        "A = run-base-tuned#base: model base; weights base weights; differs from the paper's models: base caveat; "
        "transformers 5.23.0, torch 2.13.0; code aaaaaaaaaaaa; fingerprint weights sha256 bbbbbbbbbbbbbbbb"
    ) in one
    assert "B = run-base-tuned#tuned: model tuned; weights tuned weights" in one and "Warning" not in one
    assert side_by_side([str(runs["base"]), str(runs["tuned"]), "--out", str(tmp_path / "two")], capsys)[0] == 0
    two = (tmp_path / "two" / "side_by_side.md").read_text()
    assert (
        "B = run-tuned#tuned: model tuned; weights tuned weights; differs from the paper's models: tuned caveat; "
        "transformers 5.18.0" in two
    )
    warning = [line for line in two.splitlines() if line.startswith("Warning")]
    assert len(warning) == 1 and warning[0].startswith("Warning: settings differ: n_prompts 16 -> 32 (")
    assert two.index("Warning") < two.index("| claim | test |")  # at the top, before the table


def test_the_two_forms_pair_the_same_rows(runs):
    one = pair_rows(*sides([f"{runs['both']}#base", f"{runs['both']}#tuned"]))
    two = pair_rows(*sides([str(runs["base"]), f"{runs['tuned']}#tuned"]))
    assert one == two and len(one) == 5


def test_the_report_goes_next_to_a_by_default(runs, capsys):
    code, out, _ = side_by_side([f"{runs['both']}#tuned", str(runs["base"])], capsys)
    assert code == 0 and out.strip() == str(runs["both"] / "side_by_side.md")
    assert (runs["both"] / "side_by_side.html").exists()


#: Bad sides: (the two specs, given the runs' folders; what the one stderr line says).
BAD_SIDES = {
    "model not in the run": (
        lambda r: [f"{r['both']}#large", f"{r['both']}#base"],
        "no model 'large' in this run (its models: base, tuned)",
    ),
    "several models, none named": (
        lambda r: [str(r["both"]), str(r["base"])],
        "the run has several models (base, tuned); name one as RUN#MODEL",
    ),
    "model not in the second run": (
        lambda r: [str(r["base"]), f"{r['tuned']}#base"],
        "no model 'base' in this run (its models: tuned)",
    ),
    "the same side twice": (
        lambda r: [f"{r['both']}#base", f"{r['both'] / 'results.json'}#base"],
        "are the same side (run-base-tuned#base): name two models or two runs",
    ),
    "the same one-model run twice": (
        lambda r: [str(r["base"]), str(r["base"] / "results.json")],
        "are the same side (run-base#base)",
    ),
    "an unreadable run": (lambda r: [str(r["base"]), f"{r['base'].parent / 'nosuch'}#tuned"], "no such file"),
}


@pytest.mark.parametrize("case", BAD_SIDES)
def test_bad_sides_are_one_line_exit_2_and_write_nothing(runs, tmp_path, capsys, case):
    specs, says = BAD_SIDES[case]
    before = sorted(tmp_path.rglob("*"))
    code, out, err = side_by_side(specs(runs), capsys)
    assert code == 2 and out == "" and err.endswith("\n") and len(err.splitlines()) == 1
    assert err.startswith("harness.report: ") and says in err, err
    assert sorted(tmp_path.rglob("*")) == before


def test_the_committed_example_side_by_side_shows_each_models_verdicts(tmp_path, capsys):
    example = paths.REPORTS / "example"
    a, b = "smollm2-135m", "qwen2.5-coder-0.5b"
    code, out, err = side_by_side([f"{example}#{a}", f"{example}#{b}", "--out", str(tmp_path)], capsys)
    assert (code, err) == (0, "") and out.strip() == str(tmp_path / "side_by_side.md")
    rows = table((tmp_path / "side_by_side.md").read_text(), PAIR)
    records = json.loads((example / "results.json").read_text())["records"]

    family = {a: "llama", b: "qwen"}

    def verdicts(model: str) -> dict:  # a family-level record (T13) only on its family's side
        return {
            r["test"].split("::")[-1].replace(f"[{model}]", ""): loaded(r).shown
            for r in records
            if r["model"] == model
            or (
                r["model"] is None
                and (
                    not r["test"].endswith(tuple(f"[{f}]" for f in ("llama", "qwen", "mistral", "gemma")))
                    or r["test"].endswith(f"[{family[model]}]")
                )
            )
        }

    va, vb = verdicts(a), verdicts(b)
    assert (
        len(rows) == len(set(va) | set(vb))
        and "test_T13_leakage_constant_and_residual_share_rises_with_scale[qwen]" not in va
    )
    assert all((row[3], row[4]) == (va.get(row[1], "not run"), vb.get(row[1], "not run")) for row in rows)
    kinds = {row[7].split(";")[0] for row in rows}
    assert "same" in kinds and any("→" in k for k in kinds)  # both kinds of row, whichever verdicts moved
