"""The terminal within 100 columns: the end-of-run summary of the committed example runs (per-test lines, the
claims × models matrix, the total), `claims list` and `models`; the matrix one mark per test, with a legend, no
column that stands empty, and its columns continued in blocks when the models do not fit; pytest's "xfailed" count
said in the suite's words."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from harness import cli
from harness.outcome.results import loaded
from harness.outcome.verdict import Verdict
from harness.report.matrix import MARKS, totals_line
from harness.run.records import RecordCollector
from harness.run.terminal import WIDTH, total_lines

pytest_plugins = ["pytester"]
ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = [ROOT / "reports" / "example" / "results.json", ROOT / "reports" / "example-ladder" / "results.json"]


def summary(results: Path) -> tuple[list[str], list[str], list[str]]:
    """(the per-test lines, the matrix's lines, the total's lines) the run of ``results`` ends with."""
    data = json.loads(results.read_text())
    collector = SimpleNamespace(records=data["records"], run=SimpleNamespace(models=data["models"]))
    tests = RecordCollector.test_lines(collector)
    matrix = RecordCollector.matrix(collector)
    return tests, matrix, total_lines("abspos total: " + totals_line(data["records"]).strip("*"))


@pytest.mark.parametrize("results", EXAMPLES, ids=lambda p: p.parent.name)
def test_the_example_run_s_summary_fits_100_columns(results):
    tests, matrix, total = summary(results)
    too_wide = [line for line in tests + matrix + total if len(line) > WIDTH]
    assert not too_wide, f"{len(too_wide)} lines over {WIDTH} columns, the widest {max(map(len, too_wide))}"
    # the matrix: a legend of the marks used, a header of the models, one row per claim with a mark per test
    legend, header = matrix[0], next(line for line in matrix if line.startswith("claim "))
    models = header.split()[1:]
    assert models == json.loads(results.read_text())["models"]  # no "(no model)" nor family columns standing empty
    assert "H held" in legend and "N not held" in legend and "- not applicable" in legend
    rows = [line.split() for line in matrix[matrix.index(header) + 1 :] if line[:1].isupper() and ":" not in line]
    assert rows and all(len(row) == len(models) + 1 for row in rows), rows  # a mark in every cell
    assert all(set(cell) <= {*MARKS.values(), "*", "."} for row in rows for cell in row[1:])
    assert any(line.startswith("T13 per family: ") for line in matrix)  # said in a line, not a column per family


def test_the_matrix_counts_every_test_once():
    _, matrix, _ = summary(EXAMPLES[0])
    records = [loaded(r) for r in json.loads(EXAMPLES[0].read_text())["records"]]
    header = next(line for line in matrix if line.startswith("claim "))
    cells = "".join("".join(line.split()[1:]) for line in matrix[matrix.index(header) + 1 :] if ":" not in line)
    ours = [r for r in records if r.target.kind in ("model", "synthetic")]
    assert len(cells) == len(ours)
    for verdict, mark in MARKS.items():
        assert cells.count(mark) == sum(r.shown == verdict for r in ours), verdict


def test_many_models_continue_in_blocks_of_columns_that_fit():
    records = json.loads(EXAMPLES[0].read_text())["records"]
    names = [f"a-model-with-a-long-name-{k}" for k in range(8)]
    many = [
        {**r, "model": m, "test": r["test"].replace("[smollm2-135m]", f"[{m}]"), "target": {"kind": "model", "name": m}}
        for m in names
        for r in records
        if r.get("model") == "smollm2-135m"
    ]
    collector = SimpleNamespace(records=many, run=SimpleNamespace(models=names))
    matrix = RecordCollector.matrix(collector)
    assert max(map(len, matrix)) <= WIDTH
    headers = [line.split()[1:] for line in matrix if line.startswith("claim ")]
    assert len(headers) > 1 and [m for h in headers for m in h] == names  # each model once, in order
    assert all(len(line) <= WIDTH for line in RecordCollector.test_lines(collector))


def test_every_tested_line_names_its_figure_and_its_threshold():
    """A decided test's entry reads "figure in words: value [lo, hi] vs threshold"; an exact check's "figure in
    words: value, held when <its criterion>"."""
    tests, _, _ = summary(EXAMPLES[0])
    entries: list[str] = []
    for line in tests[:-1]:
        if line.startswith("  ") and not line.startswith("   "):
            entries.append(line)
        elif line.startswith("   "):
            entries[-1] += " " + line.strip()
    decided = [e for e in entries if " vs " in e]
    assert len(decided) > 40 and all(": " in e.split(" vs ")[0] for e in decided)
    checks = [e for e in entries if "held when" in e]
    assert len(checks) >= 9 and all(": " in e.split(", held when")[0] for e in checks)
    rest = [e for e in entries if e not in decided and e not in checks]
    # no figure recorded (T10's breakpoint at the grid's edge): its reason; the property checks folded in a line
    assert all("no interior breakpoint" in e or " of the paper's equations (" in e for e in rest), rest


def test_claims_list_fits_100_columns(capsys):
    assert cli.main(["claims", "list"]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") > 20 and max(len(line) for line in out.splitlines()) <= WIDTH


def test_a_total_wider_than_the_terminal_breaks_between_its_counts():
    total = "abspos total: 9 claim tests on 3 models: " + " · ".join(f"{k} {v.label}" for k, v in enumerate(Verdict))
    lines = total_lines(total)
    assert len(lines) > 1 and max(map(len, lines)) <= WIDTH
    assert " ".join(x.strip() for x in lines) == total
    assert all(x.rstrip().endswith("·") for x in lines[:-1])  # never inside "3 not held"


RECORDED = """
import pytest
from harness import holds


@pytest.mark.claim("T5")
def test_T5_leakage_is_content_independent(model_name):
    holds(1.35 <= 1.25, "ratio 1.35 [1.29, 1.40] against inside [0.8, 1.25]")
"""


def test_a_recorded_not_held_is_counted_in_words_not_as_xfailed(pytester):
    from harness.spec.settings import Settings

    pytester.makepyfile(test_stand_ins=RECORDED)
    check = "test_T5_leakage_is_content_independent: 1.35 <= 1.25"
    entry = [{"settings": Settings().verdict_key(), "check": check, "measured": "ratio 1.35"}]
    (pytester.path / "known.json").write_text(
        json.dumps({"test_T5_leakage_is_content_independent": {"smollm2-135m": entry}})
    )
    (pytester.path / "none.json").write_text("{}")
    result = pytester.runpytest_inprocess(
        *("-p", "harness.run.plugin", "-p", "no:randomly", "-p", "no:cacheprovider", "-n", "0"),
        *("--models", "smollm2-135m", "--report-dir", str(pytester.path / "reports")),
        *("--known-outcomes", str(pytester.path / "known.json")),
        *("--stability-record", str(pytester.path / "none.json")),
    )
    out = "\n".join(result.outlines)
    assert result.ret == 0, out
    last = next(line for line in reversed(result.outlines) if line.startswith("="))
    assert "1 not held" in last and "xfailed" not in last, out
