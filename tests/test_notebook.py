"""The notebook view of a run (harness/notebook.py, harness/api.py): ``Verdicts.load`` of the committed example run,
its one-line repr, its pandas frames, ``show`` of a claim's plots, and ``verify``'s progress line in place of
pytest's output."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from harness import Verdicts, api, verify
from harness.files.paths import ROOT
from harness.notebook import PANDAS_MISSING
from harness.spec.claims import UnknownClaim

EXAMPLE = ROOT / "reports" / "example"
RECORDS = json.loads((EXAMPLE / "results.json").read_text())["records"]
T6 = "test_T6_bidirectional_attention_reduces_leakage"


@pytest.fixture(scope="module")
def example() -> Verdicts:
    return Verdicts.load(EXAMPLE)


def raw(test: str, model: str) -> dict:
    return next(r for r in RECORDS if f"::{test}[" in r["test"] and r["model"] == model)


# ---- Verdicts.load --------------------------------------------------------------------------------------------


def test_load_reads_every_record_of_a_run_folder_and_its_report(example):
    assert len(example) == len(RECORDS) and isinstance(example, Verdicts)
    assert example.report == (EXAMPLE / "report.md").resolve() and example.folder == EXAMPLE.resolve()
    assert example.results["records"] == RECORDS
    assert Verdicts.load(EXAMPLE / "results.json") == example


def test_load_follows_a_report_folders_latest_to_its_run(tmp_path, example):
    (tmp_path / "latest").symlink_to(EXAMPLE, target_is_directory=True)
    v = Verdicts.load(tmp_path)
    assert v == example and v.folder == EXAMPLE.resolve() and v.report == (EXAMPLE / "report.md").resolve()


@pytest.mark.parametrize("where", ["empty", "nowhere"])
def test_load_of_anything_else_is_one_line(tmp_path, where):
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError) as e:
        Verdicts.load(tmp_path / where)
    message = str(e.value)
    assert message.startswith(f"{tmp_path / where}: ") and "\n" not in message
    assert "give a run folder, its results.json, or a report folder holding `latest`" in message


# ---- the repr -------------------------------------------------------------------------------------------------


def test_the_repr_is_one_short_line_of_totals_and_what_to_call(example):
    text = repr(example)
    assert text.startswith("Verdicts: 101 tests on 3 models (smollm2-135m, gemma3-270m, qwen2.5-coder-0.5b) — ")
    assert len(text) < 300 and "\n" not in text and "[" not in text  # no arrays, no records
    for hidden in ("xfail", "ClaimNotHeld", "known outcome"):
        assert hidden not in text
    # the report's own totals line, its non-zero counts in its order
    report_totals = next(line for line in (EXAMPLE / "report.md").read_text().splitlines() if "claim tests on" in line)
    counts = [p for p in report_totals.strip("*").split(": ", 1)[1].split(" · ") if not p.startswith("0 ")]
    assert text.split(" — ", 1)[1].split("; ")[0] == " · ".join(counts)
    assert text.endswith('; .table(), .to_pandas(), .show("T2")')  # a claim not held with plots in this run
    assert str(example) == text


def test_the_repr_of_a_part_and_of_none(example):
    part = example.not_held().by_model()["gemma3-270m"]
    n = sum(1 for r in RECORDS if r["model"] == "gemma3-270m" and r["verdict"] == "not held" and not r.get("unstable"))
    assert (
        repr(part)
        == f'Verdicts: {n} tests on 1 model (gemma3-270m) — {n} not held; .table(), .to_pandas(), .show("T2")'
    )
    assert repr(Verdicts()) == "Verdicts: no tests"


def test_the_markdown_table_is_still_every_row(example):
    lines = example._repr_markdown_().strip().splitlines()
    assert lines[0] == "| claim | test | model | verdict | headline |" and len(lines) == len(RECORDS) + 2


# ---- pandas ---------------------------------------------------------------------------------------------------


def test_to_pandas_has_a_row_per_figure_with_the_deciding_criterion(example):
    pytest.importorskip("pandas")
    frame = example.to_pandas()
    assert list(frame.columns) == [
        "claim",
        "test",
        "model",
        "verdict",
        "figure",
        "value",
        "ci_low",
        "ci_high",
        "paper",
        "criterion",
        "margin",
        "reason",
    ]
    assert len(frame) == sum(max(1, len(r["figures"])) for r in RECORDS)
    want = raw(T6, "gemma3-270m")
    figure = next(f for f in want["figures"] if f["name"] == "bidirectional_over_causal")
    row = frame[(frame.test == T6) & (frame.model == "gemma3-270m") & (frame.figure == figure["name"])]
    assert len(row) == 1
    row = row.iloc[0]
    assert (row.claim, row.verdict, row.value) == ("T6", "not held (as recorded)", figure["value"]) and figure[
        "paper"
    ] is None
    assert frame.paper.isna()[row.name]  # pandas's missing value
    assert [row.ci_low, row.ci_high] == figure["ci"]
    assert (row.criterion, row.margin, row.reason) == ("< 0.46", want["margin"], want["reason"])
    paper = frame[(frame.claim == "T5") & (frame.figure == "top30_significant")]
    assert list(paper.paper) == [30, 30, 30]
    bare = frame[frame.claim == "EQ2"]
    assert len(bare) == 3 and set(bare.figure) == {""} and set(bare.criterion) == {""}


def test_to_pandas_decisions_is_a_row_per_decision_one_deciding_each(example):
    pytest.importorskip("pandas")
    frame = example.to_pandas(decisions=True)
    assert list(frame.columns)[3:] == [
        "check",
        "verdict",
        "estimate",
        "interval_low",
        "interval_high",
        "criterion",
        "margin",
        "prompts_to_decide",
        "deciding",
    ]
    assert len(frame) == sum(len(r.get("decisions") or ()) for r in RECORDS)
    decided = frame[frame.deciding]
    assert len(decided) == len({(t, m) for t, m in zip(decided.test, decided.model)})  # at most one per test
    assert len(decided) == sum(1 for r in RECORDS if r.get("decisions") and r.get("margin") is not None)
    (t6,) = decided[(decided.test == T6) & (decided.model == "gemma3-270m")].itertuples()
    (d,) = raw(T6, "gemma3-270m")["decisions"]
    assert (t6.estimate, [t6.interval_low, t6.interval_high], t6.criterion) == (
        d["estimate"],
        d["interval"],
        "< 0.46",
    )


def test_to_pandas_without_pandas_says_how_to_install_it(example, monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)  # import pandas raises ImportError
    with pytest.raises(ImportError, match=r'^pandas is not installed: pip install -e "\.\[notebook\]"$'):
        example.to_pandas()
    assert "\n" not in PANDAS_MISSING


def test_the_notebook_extra_is_declared_and_ci_installs_it_through_dev():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert extras["notebook"] == ["pandas>=2", "ipython>=8"]
    assert {"pandas", "ipython"} <= {e.split(">")[0].split("[")[0] for e in extras["dev"]}


def test_importing_the_api_loads_neither_pandas_nor_ipython():
    code = "import sys, harness.api; print(sorted({'pandas', 'IPython', 'matplotlib'} & set(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT).stdout
    assert out.strip() == "[]"


# ---- show -----------------------------------------------------------------------------------------------------


def test_show_returns_the_claims_plots(example, capsys):
    paths = example.show("T6")
    assert [p.name for p in paths] == [
        f"T6_ablations_{m}.png" for m in ("gemma3-270m", "qwen2.5-coder-0.5b", "smollm2-135m")
    ]
    assert all(p.is_file() and p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in paths)
    assert capsys.readouterr().out == ""  # outside IPython: the paths only
    assert [p.name for p in example.show("T9a")] == ["T9a_layer_profile.png"]  # not T9b's or T9c's


def test_show_in_ipython_displays_each_plot_under_its_report_title(example, monkeypatch):
    display = pytest.importorskip("IPython.display")
    shown = []
    monkeypatch.setattr(sys.modules["IPython"], "get_ipython", lambda: object())  # as if a shell were running
    monkeypatch.setattr(display, "display", lambda *objs: shown.append(objs))
    paths = example.show("T6")
    assert len(shown) == len(paths) == 3
    title, image = shown[0]
    caption = re.search(r"!\[([^\]]*)\]\(figures/T6_ablations_gemma3-270m\.png\)", example.report.read_text())[1]
    assert title.data == f"**{caption}**" and "gemma3-270m" in caption
    assert isinstance(image, display.Image) and image.filename == str(paths[0])


@pytest.mark.parametrize("given, hint", [("t6", "did you mean 'T6'?"), ("T99", "registered: EQ2")])
def test_show_of_an_unknown_claim_raises_unknown_claim(example, given, hint):
    with pytest.raises(UnknownClaim, match=f"unknown claim '{given}'") as e:
        example.show(given)
    assert hint in str(e.value)


def test_show_of_a_claim_without_plots_is_one_line_and_no_paths(example, capsys):
    assert example.show("EQ2") == []
    out = capsys.readouterr().out
    assert out.startswith("EQ2: no plots in ") and out.count("\n") == 1
    assert Verdicts(list(example)).show("T6") == [] and "no run folder" in capsys.readouterr().out


# ---- verify's progress line -----------------------------------------------------------------------------------

PYTEST_LINES = [
    "============================= test session starts ==============================\n",
    "collected 120 items / 116 deselected / 4 selected\n",
    "\n",
    "claims/test_s5_4_ablations.py ..                                          [ 50%]\n",
    "claims/test_s5_5_bins.py xF                                               [100%]\n",
    "abspos total: 4 claim tests on 1 model: 2 held · 2 not held\n",
]


@pytest.fixture
def a_run(monkeypatch):
    """``api.run_pytest`` replaced by one giving pytest's lines as the real one does (to ``echo``, a function or
    True) and writing the example's results as the run's."""
    seen = {}

    def run(argv, echo=True):
        seen["echo"] = echo
        for line in PYTEST_LINES:
            if callable(echo):
                echo(line)
            elif echo:
                sys.stdout.write(line)
        folder = Path(argv[argv.index("--report-dir") + 1]) / argv[argv.index("--run-id") + 1]
        folder.mkdir(parents=True)
        shutil.copy(EXAMPLE / "results.json", folder)
        shutil.copy(EXAMPLE / "report.md", folder)
        return 0, ""

    monkeypatch.setattr(api, "run_pytest", run)
    return seen


def test_verify_shows_one_progress_line_then_the_totals(a_run, tmp_path, capsys):
    v = verify("smollm2-135m", "T6", report_dir=tmp_path)
    out = capsys.readouterr().out
    progress, totals, report = out.split("\n")[:3]
    shown = progress.split("\r")[1:]
    assert all(len(b) >= len(a.rstrip()) for a, b in zip(shown, shown[1:]))  # a shorter text blanks out a longer
    assert [s.rstrip() for s in shown] == [
        "abspos: collecting the claim tests",
        "abspos: running 4 tests",
        "abspos: 50% of 4 tests finished",
        "abspos: 100% of 4 tests finished; writing the results and the report",
    ]
    assert totals.startswith("abspos total: 101 claim tests on 3 models: 39 held · ") and "**" not in totals
    assert report == f"abspos report: {v.report}" and v.report.parent.parent == tmp_path  # (no report.html here)
    assert "claims/test_s5" not in out and "collected" not in out  # pytest's own lines stay out of the cell
    assert v.folder == v.report.parent and len(v) == len(RECORDS)


def test_verify_echo_streams_pytests_output_and_quiet_prints_nothing(a_run, tmp_path, capsys):
    verify("smollm2-135m", report_dir=tmp_path, echo=True)
    assert a_run["echo"] is True and capsys.readouterr().out == "".join(PYTEST_LINES)
    verify("smollm2-135m", report_dir=tmp_path, quiet=True)
    assert a_run["echo"] is False and capsys.readouterr().out == ""


@pytest.mark.parametrize(
    "lines, text",
    [
        (
            ["created: 2/2 workers\n", "2 workers [92 items]\n", "..sx..F.                              [  8%]\n"],
            "8% of 92",
        ),
        (["collected 1 item\n", "[gw0] [100%] PASSED claims/test_x.py::test_T7[smollm2-135m]\n"], "100% of 1 test "),
        (
            ["collected 3 items\n", "claims/test_x.py::test_T7[smollm2-135m] XFAIL (ClaimNotHeld)    [ 33%]\n"],
            "33% of 3",
        ),
    ],
    ids=["xdist", "xdist-verbose", "verbose"],
)
def test_the_progress_line_reads_pytests_counts_and_percentages(lines, text, capsys):
    progress = api.Progress()
    for line in lines:
        progress(line)
    progress.end()
    out = capsys.readouterr().out
    assert out.endswith("\n") and out.count("\n") == 1 and text in out.rsplit("\r", 1)[1]
