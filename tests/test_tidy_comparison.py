"""Two runs compared as tidy rows (harness/report/frame.py ``comparison_rows``): one row per (claim test, target,
figure) of either run, changed or not, reachable from ``python -m harness.report compare A B --csv F --json F`` and
from the notebook (``harness.notebook.compare``, ``Verdicts.compare``). Planted runs: no model is run."""

from __future__ import annotations

import copy
import csv
import json
import math

import pytest

from harness.files.paths import REPORTS
from harness.outcome.results import load_run, typed
from harness.report import frame
from harness.report.cli import main as report_main
from harness.report.compare import diff

EXAMPLE = REPORTS / "example" / "results.json"


def fig(name, value, ci=None):
    return {"name": name, "value": value, "paper": None, "ci": ci, "note": ""}


def rec(test, verdict, figures, model="smollm2-135m", claim="T6"):
    return {
        "test": f"claims/test_x.py::{test}[{model}]",
        "claim": claim,
        "model": model,
        "outcome": "passed" if verdict == "held" else "failed",
        "verdict": verdict,
        "reason": "",
        "figures": figures,
    }


def runs() -> tuple[dict, dict]:
    """Before and after: one figure moved, one within tolerance, one vector element moved, a verdict changed, a
    figure and a test in one run only."""
    settings = {"n_prompts": 16, "seq_len": 128, "seed": 0, "device": "cpu", "dtype": "float32"}
    before = {
        "run": "before",
        "settings": settings,
        "models": ["smollm2-135m"],
        "records": [
            rec("test_a", "held", [fig("ratio", 0.5, [0.4, 0.6]), fig("same", 1.0), fig("vec", [1.0, 2.0])]),
            rec("test_b", "held", [fig("x", 3.0), fig("gone", 1.0)]),
            rec("test_old", "held", []),
        ],
    }
    after = copy.deepcopy(before) | {"run": "after"}
    after["records"] = [
        rec("test_a", "held", [fig("ratio", 0.6, [0.5, 0.7]), fig("same", 1.0 + 1e-9), fig("vec", [1.0, 2.5])]),
        rec("test_b", "not held", [fig("x", 3.0), fig("new", 2.0)]),
        rec("test_new", "held", [fig("y", 1.0)]),
    ]
    return before, after


def by_key(table):
    return {(r["test"], r["figure"]): r for r in table}


def test_each_figure_is_a_row_beside_its_counterpart_with_how_it_changed():
    before, after = runs()
    table = frame.comparison_rows(typed(before), typed(after))
    assert all(list(row) == list(frame.COMPARISON_COLUMNS) for row in table)
    rows = by_key(table)
    ratio = rows[("test_a", "ratio")]
    assert (ratio["value_before"], ratio["value_after"], ratio["changed"], ratio["change"]) == (0.5, 0.6, True, "moved")
    assert ratio["relative"] == pytest.approx(0.2) and ratio["model"] == "smollm2-135m" and ratio["claim"] == "T6"
    assert not rows[("test_a", "same")]["changed"] and rows[("test_a", "same")]["change"] == ""  # within tolerance
    vec = rows[("test_a", "vec")]
    assert vec["changed"] and math.isnan(vec["value_before"]) and vec["values_after"] == [1.0, 2.5]
    assert math.isnan(vec["relative"])
    x = rows[("test_b", "x")]  # the figure agrees, the verdict does not: the row says so
    assert (x["verdict_before"], x["verdict_after"], x["verdict_changed"]) == ("held", "not held", True)
    assert x["changed"] and x["change"] == "verdict changed"
    assert rows[("test_b", "gone")]["change"] == "verdict changed; figure only in old"
    assert rows[("test_b", "new")]["change"] == "verdict changed; figure only in new"
    old = rows[("test_old", "")]  # a test without figures is one row
    assert (old["verdict_before"], old["verdict_after"], old["change"]) == ("held", "", "test only in old")
    assert rows[("test_new", "y")]["change"] == "test only in new" and rows[("test_new", "y")]["value_after"] == 1.0
    # every test the table calls changed is one the compare lists, and the other way round
    listed = {row[1].split("::")[-1].split("[")[0] for row in diff(typed(before), typed(after))}
    assert {r["test"] for r in table if r["changed"]} == listed


def test_a_run_against_itself_changes_nothing_and_has_a_row_per_figure():
    run = load_run(EXAMPLE)
    table = frame.comparison_rows(run, run)
    assert len(table) == sum(max(1, len(r.figures)) for r in run.records)
    assert not any(r["changed"] for r in table)
    assert {r["verdict_before"] for r in table} == {r.shown.value for r in run.records}


def test_the_command_writes_the_rows_as_csv_and_json(tmp_path, capsys):
    before, after = runs()
    for name, run in (("a", before), ("b", after)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "results.json").write_text(json.dumps(run))
    out_csv, out_json = tmp_path / "cmp.csv", tmp_path / "cmp.json"
    code = report_main(
        ["compare", str(tmp_path / "a"), str(tmp_path / "b"), "--csv", str(out_csv), "--json", str(out_json)]
    )
    assert code == 1  # something moved: the exit code is compare's own
    printed = capsys.readouterr().out
    expected = frame.comparison_rows(typed(before), typed(after))
    assert f"comparison rows: {len(expected)} ({sum(r['changed'] for r in expected)} changed)" in printed
    with out_csv.open() as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0]) == list(frame.COMPARISON_COLUMNS) and len(rows) == len(expected)
    vec = next(r for r in rows if r["figure"] == "vec")
    assert json.loads(vec["values_after"]) == [1.0, 2.5] and vec["value_after"] == ""  # a vector as JSON, NaN empty
    assert json.loads(out_json.read_text()) == [{k: frame.jsonable(v) for k, v in r.items()} for r in expected]
    # --claims narrows the rows as it narrows the table
    assert (
        report_main(["compare", str(tmp_path / "a"), str(tmp_path / "b"), "--claims", "T6", "--csv", str(out_csv)]) == 1
    )
    assert (
        report_main(["compare", str(tmp_path / "a"), str(tmp_path / "b"), "--claims", "T7", "--csv", str(out_csv)]) == 2
    )


def test_the_notebook_compares_two_runs_into_a_frame(tmp_path):
    pd = pytest.importorskip("pandas")
    from harness.notebook import Comparison, Verdicts, compare

    before, after = runs()
    for name, run in (("a", before), ("b", after)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "results.json").write_text(json.dumps(run))
    got = compare(tmp_path / "a", tmp_path / "b")
    assert isinstance(got, Comparison) and list(got) == frame.comparison_rows(typed(before), typed(after))
    assert Verdicts.load(tmp_path / "b").compare(tmp_path / "a") == got  # from a loaded run, the same rows
    df = got.to_pandas()
    assert isinstance(df, pd.DataFrame) and list(df.columns) == list(frame.COMPARISON_COLUMNS)
    assert set(df[df.changed].test) == {"test_a", "test_b", "test_old", "test_new"}
    assert df[df.verdict_changed].figure.tolist() == ["x", "gone", "new", "", "y"]  # test_old, test_new: one run
    assert len(got.changed()) == int(df.changed.sum())
    assert got.to_csv(tmp_path / "c.csv").read_text().splitlines()[0] == ",".join(frame.COMPARISON_COLUMNS)
    assert "changed" in repr(got)
