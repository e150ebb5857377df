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
from harness.outcome.results import loaded
from harness.outcome.verdict import Verdict
from harness.report.frame import COLUMNS as FRAME_COLUMNS
from harness.report.matrix import totals_line
from harness.spec.claims import CLAIMS, UnknownClaim

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
    # the report's own totals line (as the report writes it from these records), its non-zero counts in its order
    report_totals = totals_line(RECORDS)
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


def test_to_pandas_is_tidy_a_row_per_figure_with_its_deciding_flag(example):
    """Issue 59: one vocabulary in ``verdict`` (no "(as recorded)" folded in), ``recorded``/``changed``/``unrecorded``
    beside it, a number in ``value`` (a vector in ``values``), the registry's paper value on every row it declares one
    for, and the deciding criterion on the deciding figure's row only."""
    pd = pytest.importorskip("pandas")
    frame = example.to_pandas()
    assert list(frame.columns) == list(FRAME_COLUMNS)
    assert len(frame) == sum(max(1, len(r["figures"])) for r in RECORDS)
    assert set(frame.verdict) <= {v.value for v in Verdict}
    # every not-held test, and only those, whatever its standing against the record
    not_held = {(r["test"].split("::")[1].split("[")[0], r["model"]) for r in RECORDS if loaded(r).shown == "not held"}
    assert set(zip(frame[frame.verdict == "not held"].test, frame[frame.verdict == "not held"].model)) == not_held
    assert len(not_held) == 20
    for column in ("recorded", "changed", "unrecorded", "deciding"):
        assert frame[column].dtype == bool, column
    changed = frame[frame.changed]
    # the example's run ended 0: each of its not held and inconclusive verdicts is one its known outcomes record
    assert changed.empty and frame[frame.verdict.isin(["not held", "inconclusive"])].recorded.all()
    assert not (frame.changed & frame.recorded).any()
    assert frame.value.dtype == float and frame["values"].notna().any()
    assert all(isinstance(x, (list, dict, bool, str)) for x in frame["values"].dropna())
    assert frame[frame["values"].notna()].value.isna().all()

    want = raw(T6, "gemma3-270m")
    figure = next(f for f in want["figures"] if f["name"] == "bidirectional_over_causal")
    (row,) = frame[(frame.test == T6) & (frame.model == "gemma3-270m") & (frame.figure == figure["name"])].itertuples()
    assert (row.claim, row.verdict, row.value, row.recorded, row.changed) == (
        "T6",
        "not held",
        figure["value"],
        True,
        False,
    )
    assert [row.ci_low, row.ci_high] == figure["ci"] and row.reason == want["reason"]
    assert (row.deciding, row.criterion, row.margin) == (True, "< 0.46", want["margin"])
    others = frame[(frame.test == T6) & (frame.model == "gemma3-270m") & ~frame.deciding]
    assert len(others) and others.criterion.isna().all() and others.margin.isna().all()
    # the deciding flag: at most one figure per test, its value the deciding decision's estimate
    deciding = frame[frame.deciding]
    assert deciding.groupby(["test", "model"]).size().max() == 1
    for d in deciding.itertuples():
        decision = next(x for x in raw(d.test, d.model)["decisions"] if x["margin"] == d.margin)
        assert d.value == pytest.approx(decision["estimate"]) and d.criterion == decision["criterion"]
    # the registry's paper value on every row whose figure it declares one for, whatever the run recorded
    for r in frame.itertuples():
        declared = CLAIMS[r.claim].figure(r.figure).paper if r.claim in CLAIMS and r.figure else {}
        declared = {} if not r.figure or r.figure not in {f.name for f in CLAIMS[r.claim].figures} else declared
        if declared:
            on = r.model if r.model in declared else next(iter(declared))
            assert (r.paper, r.paper_model) == (declared[on].value, on), r
    assert frame.paper.notna().sum() > 60  # 6 of 446 before: only where the run recorded one
    assert (frame.paper_words != "").mean() > 0.9
    paper = frame[(frame.claim == "T5") & (frame.figure == "top30_significant")]
    assert list(paper.paper) == [30, 30, 30]
    bare = frame[frame.claim == "EQ2"]
    assert len(bare) == 3 and set(bare.figure) == {""} and not bare.deciding.any()
    assert isinstance(frame, pd.DataFrame)


def constructed() -> Verdicts:
    """Four records, one of each standing: repeats its record, new since it, stale, on a model without a record."""

    def one(model, verdict, figures, **extra):
        return {
            "test": f"claims/test_s5_4.py::{T6}[{model}]",
            "claim": "T6",
            "model": model,
            "outcome": "passed",
            "verdict": verdict,
            "reason": f"{verdict} on {model}",
            "known_outcome": False,
            "figures": figures,
            **extra,
        }

    decision = {"check": "c", "verdict": "not held", "estimate": 0.9, "interval": [0.8, 1.0], "criterion": "< 0.46"}
    judged = {"name": "bidirectional_over_causal", "value": 0.9, "ci": [0.8, 1.0], "paper": None, "note": ""}
    vector = {"name": "by_layer", "value": [0.1, 0.2], "ci": None, "paper": None, "note": ""}
    decided = {"margin": 0.44, "decisions": [{**decision, "margin": 0.44}]}
    records = [
        one("smollm2-135m", "not held", [judged, vector], known_outcome=True, **decided),
        one("gemma3-270m", "not held", [judged], **decided),
        one("qwen2.5-coder-0.5b", "stale", []),
        one("path-mine", "not held", [judged], unrecorded=True, **decided),
    ]
    return Verdicts.from_results({"records": records, "models": []})


def test_to_pandas_of_constructed_records_marks_each_standing(tmp_path):
    pytest.importorskip("pandas")
    v = constructed()
    frame = v.to_pandas()
    by = {m: frame[frame.model == m] for m in frame.model}
    standing = {
        m: (f.verdict.iloc[0], f.recorded.iloc[0], f.changed.iloc[0], f.unrecorded.iloc[0]) for m, f in by.items()
    }
    assert standing == {
        "smollm2-135m": ("not held", True, False, False),
        "gemma3-270m": ("not held", False, True, False),
        "qwen2.5-coder-0.5b": ("stale", False, True, False),
        "path-mine": ("not held", False, False, True),
    }
    assert len(frame[frame.verdict == "not held"].groupby("model")) == 3
    mine = by["smollm2-135m"].set_index("figure")
    assert mine.loc["bidirectional_over_causal", "deciding"] and not mine.loc["by_layer", "deciding"]
    assert mine.loc["by_layer", "values"] == [0.1, 0.2] and pd_isna(mine.loc["by_layer", "value"])
    assert pd_isna(mine.loc["by_layer", "criterion"]) and mine.loc["bidirectional_over_causal", "criterion"] == "< 0.46"
    assert by["qwen2.5-coder-0.5b"].figure.tolist() == [""]
    assert [r["verdict_words"] for r in v] == [
        "not held · changed since the record",
        "not held (no record for this model)",
        "held — recorded otherwise, re-take the record · changed since the record",
        "not held",
    ]  # claim, test, then model order
    written = v.to_json(tmp_path / "v.json")
    rows = json.loads((tmp_path / "v.json").read_text())
    assert written == (tmp_path / "v.json").read_text() and len(rows) == len(frame)
    assert [r["verdict"] for r in rows] == frame.verdict.tolist() and rows[0].keys() == set(FRAME_COLUMNS)
    csv = v.to_csv(tmp_path / "v.csv")
    import pandas as pd

    back = pd.read_csv(csv)
    assert list(back.columns) == list(FRAME_COLUMNS) and len(back) == len(frame)
    assert json.loads(back[back.figure == "by_layer"]["values"].iloc[0]) == [0.1, 0.2]


def pd_isna(x) -> bool:
    import pandas as pd

    return bool(pd.isna(x))


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
    assert totals.startswith("abspos total: 101 claim tests on 3 models: 37 held · ") and "**" not in totals
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
