"""No record replaced, no run overwritten, every damaged record one line, rendering inert, a stop at any moment of a
run's end one line, and the whole suite collected in one run.

Each case of the fourth reliability review (`../shared/reviews/reliability-4.md`, probed on f45f170) of this part
that failed there, and the test that holds it now (each fails on f45f170):

P1, nothing recorded is lost or silently dropped
- B41 `stability record` of runs sharing no test replaced a 30-test five-seed record with one-seed entries
                                    test_runs_sharing_no_test_record_nothing
                                    test_a_record_is_never_replaced_by_one_of_fewer_seeds_or_tests (second construction)
- B40 `--merge` of the same runs: silent, rc 0 ...... test_runs_sharing_no_test_record_nothing; a merge that changes
                                                      nothing says so: test_a_merge_with_nothing_new_says_so
- B44 `report merge --stability-record` of `{}` or of other settings dropped every "unstable" mark
                                    test_a_stability_record_that_does_not_cover_the_runs_keeps_their_marks[*]
- B47 `report merge --out` a folder holding another run overwrote its results and report
                                    test_a_merge_never_writes_over_a_run[*]
                                    test_a_merge_may_write_over_its_own_earlier_output_only (second construction)
- "a signal at any moment of a run's end": a window where SIGINT ended with a traceback
                                    test_a_stop_at_any_moment_of_the_runs_end_is_one_line[*]
                                    test_a_stop_deferred_at_the_end_is_acted_on_at_a_checkpoint_only (second)

P3, a bad input is one line
- B42 string seeds in the stability record: a TypeError traceback ...... test_a_damaged_stability_record_is_one_line[*]
- B43 an entry without "unstable", int harness_error_seeds: tracebacks . (the same test)
- B46 JSON nested 200,000 deep: a RecursionError in every reader ........ test_deeply_nested_json_is_one_line_in_every_reader[*]
- B50 a record's "decisions" a string: .table() and `report build` tracebacks
                                    test_a_record_whose_decisions_are_not_decisions_is_one_line_at_load
                                    test_every_record_field_of_a_wrong_type_is_refused_or_read (second construction)

P4, what others read is safe to render
- A13 an e-mail address in a name, label or reason: a mailto: link under GitHub's renderer (cmark-gfm)
                                    test_no_address_in_a_name_is_a_link_under_githubs_renderer
                                    test_md_escape_leaves_no_address_linked[*] (second construction)
- B52 Verdicts.show un-escapes a figure's title into IPython's Markdown . test_show_displays_titles_as_text

Also found this round: `pytest` at the repository root stops at collection (tests/test_synthetic.py and
claims/test_synthetic.py share a basename) ... test_tests_and_claims_are_collected_in_one_run,
                                                test_no_test_module_basename_is_shared_between_tests_and_claims
"""

from __future__ import annotations

import copy
import html
import json
import os
import re
import shutil
import signal
import sys
from pathlib import Path

import pytest
from pytest_runs import run_pytest

from harness.files.paths import ROOT, STABILITY

PY = sys.executable
EXAMPLE = ROOT / "reports" / "example"
SMOL = "smollm2-135m"
EQ3 = "claims/test_s3_mechanism.py::test_EQ3_causal_denominator_makes_weights_depend_on_query_position"


def one_line(text: str) -> str:
    text = str(text).strip()
    assert text and "\n" not in text and "Traceback" not in text, text[-3000:]
    return text


def cli(capsys, *argv) -> tuple[int, str, str]:
    """``abspos-claims ARGV`` in this process: (exit code, stdout, stderr); an exception escaping it fails the test."""
    from harness.cli import main

    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def record(model: str, claim: str = "T9a", verdict: str = "held", **extra) -> dict:
    test = {"T9a": "test_s5_7_position0.py::test_T9a_position0_state_is_identical_across_prompts"}.get(
        claim, f"test_x.py::test_{claim}_x"
    )
    return {
        "test": f"claims/{test}[{model}]",
        "claim": claim,
        "model": model,
        "outcome": "passed",
        "verdict": verdict,
        "reason": "",
        "figures": [],
        **extra,
    }


def run_results(model: str, records: list, seed: int = 0, **extra) -> dict:
    from harness.spec.settings import Settings

    settings = Settings(seed=seed).as_dict()
    return {"run": f"run-{model}-{seed}", "settings": settings, "models": [model], "records": records, **extra}


def write_run(folder: Path, results: dict) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "results.json").write_text(json.dumps(results))
    return folder


# ---- B40, B41: the stability record is never replaced by less ---------------------------------------------------


def seed_runs(tmp_path: Path, claims_per_seed, seeds=(0, 1, 2, 3, 4)) -> list[Path]:
    """One run per seed on SMOL, holding the claims given for that seed."""
    return [
        write_run(tmp_path / f"seed{s}", run_results(SMOL, [record(SMOL, c) for c in claims], seed=s))
        for s, claims in zip(seeds, claims_per_seed)
    ]


@pytest.mark.parametrize("merge", [False, True], ids=["record", "record --merge"])
def test_runs_sharing_no_test_record_nothing(tmp_path, capsys, merge):
    """B40, B41: five seeds, the runs holding different tests: no test has five seeds, nothing is written."""
    path = tmp_path / "stability.json"
    shutil.copy(STABILITY, path)
    before = path.read_bytes()
    runs = seed_runs(tmp_path, [["T9a"], ["T6"], ["T7"], ["T9a"], ["T6"]])
    code, out, err = cli(capsys, "stability", "record", *runs, "--stability-record", path, *["--merge"] * merge)
    assert code == 2 and "nothing to record" in one_line(err), (code, out, err)
    assert path.read_bytes() == before


def test_a_record_is_never_replaced_by_one_of_fewer_seeds_or_tests(tmp_path, capsys):
    """B41, another construction: runs of five seeds sharing two tests would replace the five-seed record of 30
    tests with two; refused until --replace. A record of more seeds and the same tests replaces it."""
    path = tmp_path / "stability.json"
    shutil.copy(STABILITY, path)
    before = path.read_bytes()
    runs = seed_runs(tmp_path, [["T9a", "T6"]] * 5)
    code, _, err = cli(capsys, "stability", "record", *runs, "--stability-record", path)
    assert code == 2 and "refusing to replace the record with less" in one_line(err) and "--replace" in err
    assert path.read_bytes() == before
    code, out, _ = cli(capsys, "stability", "record", *runs, "--stability-record", path, "--replace")
    assert code == 0 and set(json.loads(path.read_text())["tests"]) == {
        "test_T9a_position0_state_is_identical_across_prompts",
        "test_T6_x",
    }
    more = seed_runs(tmp_path / "more", [["T9a", "T6"]] * 6, seeds=(0, 1, 2, 3, 4, 5))
    code, _, err = cli(capsys, "stability", "record", *more, "--stability-record", path)
    assert code == 0, err
    assert json.loads(path.read_text())["seeds"] == [0, 1, 2, 3, 4, 5]
    code, _, err = cli(capsys, "stability", "record", *runs, "--stability-record", path, "--merge")
    assert code == 2 and "with fewer seeds" in one_line(err)  # merged entry by entry: no entry loses seeds either


def test_an_entry_of_fewer_than_five_seeds_is_left_out_and_said(tmp_path, capsys):
    """A test seen under four of the five seeds is no stability evidence: left out of the record, and said."""
    path = tmp_path / "stability.json"
    runs = seed_runs(tmp_path, [["T9a", "T6"]] * 4 + [["T9a"]])
    code, _, err = cli(capsys, "stability", "record", *runs, "--stability-record", path)
    assert code == 0 and "left out 1 test × model entry" in one_line(err) and "test_T6_x on smollm2-135m" in err
    assert list(json.loads(path.read_text())["tests"]) == ["test_T9a_position0_state_is_identical_across_prompts"]


def test_a_merge_with_nothing_new_says_so(tmp_path, capsys):
    """B40: --merge of runs the record already holds, as they are, says so; the file is left as it was."""
    path = tmp_path / "stability.json"
    runs = seed_runs(tmp_path, [["T9a"]] * 5)
    assert cli(capsys, "stability", "record", *runs, "--stability-record", path)[0] == 0
    before = path.stat().st_mtime_ns, path.read_bytes()
    code, out, err = cli(capsys, "stability", "record", *runs, "--stability-record", path, "--merge")
    assert code == 0 and "nothing new" in one_line(out) and err == ""
    assert (path.stat().st_mtime_ns, path.read_bytes()) == before


# ---- B42, B43: a damaged stability record is one line at load --------------------------------------------------


def damaged(kind: str) -> dict:
    data = json.loads(STABILITY.read_text())
    entry = next(iter(next(iter(data["tests"].values())).values()))
    if kind == "string seeds":
        data["seeds"] = [str(s) for s in data["seeds"]]
    elif kind == "no unstable":
        del entry["unstable"]
    elif kind == "int harness_error_seeds":
        entry["harness_error_seeds"] = [0]
    elif kind == "a seed that is not a number":
        entry["verdicts"]["x"] = "held"
    elif kind == "an unknown verdict":
        entry["verdicts"]["0"] = "maybe"
    elif kind == "bool seeds":
        data["seeds"] = [True, False]
    return data


@pytest.mark.parametrize(
    "kind",
    [
        "string seeds",
        "no unstable",
        "int harness_error_seeds",
        "a seed that is not a number",
        "an unknown verdict",
        "bool seeds",
    ],
)
def test_a_damaged_stability_record_is_one_line(tmp_path, capsys, kind):
    """B42, B43: every field the readers use is checked at load: `stability methods`, `stability record --merge`
    and a run's --stability-record each refuse it in one line."""
    path = tmp_path / "stability.json"
    path.write_text(json.dumps(damaged(kind)))
    code, _, err = cli(capsys, "stability", "methods", "--stability-record", path)
    assert code == 2 and "not a stability record" in one_line(err) and str(path) in err
    before = path.read_bytes()
    runs = seed_runs(tmp_path, [["T9a"]] * 5)
    code, _, err = cli(capsys, "stability", "record", *runs, "--stability-record", path, "--merge")
    assert code == 2 and "not a stability record" in one_line(err) and path.read_bytes() == before


# ---- B44: a stability record that does not cover the runs keeps their marks --------------------------------------


def marked_runs(tmp_path: Path) -> tuple[list[Path], dict[str, str]]:
    """The example split into one run per model, and {test: its "unstable" mark} of the marked records."""
    example = json.loads((EXAMPLE / "results.json").read_text())
    dirs = []
    for m in example["models"]:
        x = copy.deepcopy(example)
        x.update(run=f"run-{m}", models=[m], records=[r for r in example["records"] if r["model"] in (m, None)])
        x["provenance"]["models"] = {m: example["provenance"]["models"][m]}
        dirs.append(write_run(tmp_path / m, x))
    marks = {r["test"]: r["unstable"] for r in example["records"] if r.get("unstable")}
    assert len(marks) > 3  # the example has unstable verdicts to keep
    return dirs, marks


@pytest.mark.parametrize("kind", ["empty", "other settings", "other tests"])
def test_a_stability_record_that_does_not_cover_the_runs_keeps_their_marks(tmp_path, kind):
    """B44: `{}`, a record of other settings (seq_len 64), or one of these settings without the runs' tests (another
    construction): every "unstable" mark of the runs is kept, and one warning line says why."""
    from harness.report.merge import merge

    dirs, marks = marked_runs(tmp_path)
    data = json.loads(STABILITY.read_text())
    if kind == "empty":
        data = {}
    elif kind == "other settings":
        data["settings"]["seq_len"] = 64
    else:
        data["tests"] = {"test_ZZ_not_in_these_runs": data["tests"][next(iter(data["tests"]))]}
    (tmp_path / "stability.json").write_text(json.dumps(data))
    merged = merge(dirs, stability_record=tmp_path / "stability.json")
    kept = {r["test"]: r["unstable"] for r in merged["records"] if r.get("unstable")}
    assert kept == marks
    (line,) = [w for w in merged["merged"]["warnings"] if "stability record" in w]
    assert one_line(line) and str(tmp_path / "stability.json") in line
    assert ("does not cover these runs" if kind != "other tests" else "has no entry for") in line
    if kind == "other settings":
        assert "seq_len 64 there, 128 here" in line


def test_a_stability_record_of_the_runs_still_reads_their_stability_as_it_stands(tmp_path):
    """B44's fix keeps the option's purpose: the committed record (of these settings) decides the marks of the tests it
    has entries for; the others keep their runs' marks, and one warning line counts them."""
    from harness.outcome.nodeid import test_function
    from harness.report.merge import merge

    dirs, marks = marked_runs(tmp_path)
    entries = json.loads(STABILITY.read_text())["tests"]
    merged = merge(dirs, stability_record=STABILITY)
    uncovered = 0
    for r in merged["records"]:
        entry = entries.get(test_function(r["test"]), {}).get(r.get("model"))
        if entry is not None:
            assert bool(r.get("unstable")) == entry["unstable"], r["test"]
        elif r.get("model") and r["verdict"] in ("held", "not held", "inconclusive"):
            uncovered += 1
            assert r.get("unstable") == marks.get(r["test"]), r["test"]
    warned = [w for w in merged["merged"]["warnings"] if "stability record" in w]
    assert warned == ([] if not uncovered else [warned[0]]) and (not warned or f"for {uncovered} of" in warned[0])


# ---- B46: deeply nested JSON --------------------------------------------------------------------------------------


def nested(kind: str) -> str:
    if kind == "200,000 brackets (B46)":
        return '{"records": ' + "[" * 200_000 + "]" * 200_000 + "}"
    return '{"records": [], "settings": ' + '{"a": ' * 65 + "1" + "}" * 65 + "}"  # objects, just past the limit


DEEP = ["200,000 brackets (B46)", "65 objects"]


@pytest.mark.parametrize("kind", DEEP)
@pytest.mark.parametrize("reader", ["report merge", "report build", "stability methods", "outcomes record"])
def test_deeply_nested_json_is_one_line_in_every_reader(tmp_path, capsys, kind, reader):
    """B46: every reader of the suite's JSON (one loader, ``read_json``) refuses nesting past its limit in one line,
    exit 2, before any parser or reader recurses into it."""
    deep = tmp_path / "deep"
    deep.mkdir()
    (deep / "results.json").write_text(nested(kind))
    (deep / "stability.json").write_text(nested(kind))
    argv = {
        "report merge": ["report", "merge", deep, "--out", tmp_path / "out"],
        "report build": ["report", "build", deep],
        "stability methods": ["stability", "methods", "--stability-record", deep / "stability.json"],
        "outcomes record": ["outcomes", "record", deep, "--known-outcomes", tmp_path / "ko.json"],
    }[reader]
    code, _, err = cli(capsys, *argv)
    assert code == 2 and "levels deep" in one_line(err), (code, err)
    assert not (tmp_path / "out").exists() and not (tmp_path / "ko.json").exists()


@pytest.mark.parametrize("kind", DEEP)
def test_deeply_nested_json_is_one_line_in_the_notebook(tmp_path, kind):
    from harness.notebook import Verdicts
    from harness.outcome.results import ResultsFileError

    (tmp_path / "results.json").write_text(nested(kind))
    with pytest.raises(ResultsFileError) as e:
        Verdicts.load(tmp_path)
    assert "levels deep" in one_line(e.value)


def test_nesting_counts_brackets_outside_strings_only():
    from harness.files.atomic import MAX_JSON_DEPTH, nesting

    assert nesting(json.dumps({"a": "[[[[{{{{" * 40, "b": [[1]]}), MAX_JSON_DEPTH) == 3
    assert nesting(json.dumps({"a": 'x\\"[[[' * 40}), MAX_JSON_DEPTH) == 1
    assert nesting((EXAMPLE / "results.json").read_text(), MAX_JSON_DEPTH) <= 10


# ---- B47: report merge --out never writes over a run ------------------------------------------------------------


@pytest.mark.parametrize("holds", ["results.json and report.md", "latest", "job.json", "figures"])
def test_a_merge_never_writes_over_a_run(tmp_path, holds):
    """B47: --out a folder holding another run (its results.json and report, a `latest` link to one, a job's status,
    its figures) is refused in one line before any work, and the folder is left as it was."""
    from harness.report.merge import MergeError, merge_command

    a = write_run(tmp_path / "a", run_results(SMOL, [record(SMOL)]))
    b = write_run(tmp_path / "b", run_results("gemma3-270m", [record("gemma3-270m")]))
    keep = tmp_path / "keep"
    if holds == "latest":
        write_run(tmp_path / "reports" / "run-q", run_results("qwen2.5-coder-0.5b", [record("qwen2.5-coder-0.5b")]))
        (tmp_path / "reports" / "latest").symlink_to("run-q")
        keep = tmp_path / "reports" / "latest"
    elif holds == "job.json":
        keep.mkdir()
        (keep / "job.json").write_text(json.dumps({"model": "qwen2.5-coder-0.5b", "status": "failed"}))
    elif holds == "figures":
        (keep / "figures").mkdir(parents=True)
        (keep / "figures" / "T9a_layer_profile.png").write_bytes(b"png")
    else:
        write_run(keep, run_results("qwen2.5-coder-0.5b", [record("qwen2.5-coder-0.5b")]))
        (keep / "report.md").write_text("# the qwen run\n")
    before = {p: p.read_bytes() for p in keep.rglob("*") if p.is_file()}
    with pytest.raises(MergeError) as e:
        merge_command([a, b], keep)
    assert "choose another --out" in one_line(e.value)
    assert {p: p.read_bytes() for p in keep.rglob("*") if p.is_file()} == before
    if holds == "latest":  # the report folder itself holds a `latest` run: refused too
        with pytest.raises(MergeError):
            merge_command([a, b], tmp_path / "reports")


def test_a_merge_may_write_over_its_own_earlier_output_only(tmp_path, capsys):
    """B47, another construction: a merge re-run into its own output is allowed (a later --collect); once a run's
    results.json is copied over that output, it is a run no merge wrote, and refused."""
    from harness.report.cli import main as report_main

    a = write_run(tmp_path / "a", run_results(SMOL, [record(SMOL)]))
    b = write_run(tmp_path / "b", run_results("gemma3-270m", [record("gemma3-270m")]))
    out = tmp_path / "merged"
    assert report_main(["merge", str(a), str(b), "--out", str(out)]) == 0
    assert report_main(["merge", str(a), str(b), "--out", str(out)]) == 0  # its own earlier output
    shutil.copy(a / "results.json", out / "results.json")
    capsys.readouterr()
    assert report_main(["merge", str(a), str(b), "--out", str(out)]) == 2
    assert "choose another --out" in one_line(capsys.readouterr().err)
    assert (out / "results.json").read_bytes() == (a / "results.json").read_bytes()


# ---- B50: every record field a reader uses is checked at load -----------------------------------------------------


@pytest.mark.parametrize("decisions", ["oops", ["oops"]])
def test_a_record_whose_decisions_are_not_decisions_is_one_line_at_load(tmp_path, capsys, decisions):
    """B50: load (so Verdicts.load, before .table()) and `report build` refuse it in one line."""
    from harness.notebook import Verdicts
    from harness.outcome.results import ResultsFileError

    write_run(tmp_path, run_results(SMOL, [record(SMOL, decisions=decisions)]))
    with pytest.raises(ResultsFileError) as e:
        Verdicts.load(tmp_path).table()
    assert "decision" in one_line(e.value)
    code, _, err = cli(capsys, "report", "build", tmp_path)
    assert code == 2 and "decision" in one_line(err) and not (tmp_path / "report.md").exists()


FULL_RECORD = {
    **record(SMOL, "T9a", "not held"),
    "outcome": "failed",
    "check": "c",
    "figures": [{"name": "position0_spread", "value": 3.0, "ci": [2.0, 4.0], "paper": None, "note": "n"}],
    "margin": -0.5,
    "decisions": [
        {
            "check": "c: spread",
            "verdict": "not held",
            "estimate": 3.0,
            "interval": [2.0, 4.0],
            "criterion": "< 1",
            "margin": -0.5,
            "prompts_to_decide": 4,
        }
    ],
    "seconds": 1.0,
    "forward_seconds": 0.5,
    "layer_tokens": 10,
    "floor_layer_tokens": 5,
    "baseline": {"status": "first", "path": "x"},
    "unstable": "held at seed 0; not held at seed 1",
    "shape": {"layers": 30, "heads": 9},
    "known_outcome": False,
}
WRONG = ["oops", ["oops"], {"x": 1}, 5, [None]]


def wrong_records():
    for key in FULL_RECORD:
        if key not in ("test", "claim", "figures"):  # (those three: covered by the loader's own tests)
            for w in WRONG:
                yield f"{key}={w!r}", {**FULL_RECORD, key: w}
    for key in FULL_RECORD["decisions"][0]:
        for w in WRONG:
            yield f"decisions[0].{key}={w!r}", {**FULL_RECORD, "decisions": [{**FULL_RECORD["decisions"][0], key: w}]}


@pytest.mark.long  # ~100 small reports
def test_every_record_field_of_a_wrong_type_is_refused_or_read(tmp_path):
    """B50, another construction: each field of a full record, and of its decision, given a string, a list, an
    object, a number or a list holding null: refused at load in one line, or read by every reader (the report, the
    notebook's table, repr, Markdown and DataFrames) without an error."""
    from harness.notebook import Verdicts
    from harness.outcome.results import ResultsFileError, load_results
    from harness.report.write import build

    failures = []
    for i, (name, rec) in enumerate(wrong_records()):
        folder = write_run(tmp_path / f"c{i}", run_results(SMOL, [rec]))
        try:
            load_results(folder)
        except ResultsFileError as e:
            one_line(e)
            continue
        try:
            build(folder)
            v = Verdicts.load(folder)
            v.table(), repr(v), v._repr_markdown_(), v.to_json()
            if __import__("importlib").util.find_spec("pandas"):
                v.to_pandas(), v.to_pandas(decisions=True)
        except Exception as e:  # noqa: BLE001 - what the test looks for
            failures.append(f"{name}: {type(e).__name__}: {e}")
    assert failures == []


# ---- A13: no address becomes a link under GitHub's renderer ------------------------------------------------------

#: GitHub's extended e-mail autolink (cmark-gfm's autolink extension), for the fallback renderer
GFM_EMAIL = re.compile(r"(?<![\w.+-])(?:(?:mailto|xmpp):)?[\w.+-]+@[\w-]+(?:\.[\w-]+)+")


def gfm_links(text: str) -> list[tuple[str, str]]:
    """(kind, target) of every link and image GitHub's renderer makes of ``text``: cmark-gfm itself (the cmarkgfm
    binding, the dev extra), else markdown-it-py's gfm-like preset with linkify plus GFM's e-mail autolink on each text
    node (as cmark-gfm's autolink extension applies it: after entities and escapes are decoded)."""
    try:
        import cmarkgfm
        from cmarkgfm.cmark import Options
    except ImportError:
        cmarkgfm = None
    if cmarkgfm is not None:
        rendered = cmarkgfm.github_flavored_markdown_to_html(text, options=Options.CMARK_OPT_UNSAFE)
        found = [("link", html.unescape(h)) for h in re.findall(r'<a\b[^>]*\bhref="([^"]*)"', rendered)]
        return found + [("image", html.unescape(s)) for s in re.findall(r'<img\b[^>]*\bsrc="([^"]*)"', rendered)]
    markdown_it = pytest.importorskip("markdown_it")
    md = markdown_it.MarkdownIt("gfm-like")
    md.linkify.set({"fuzzy_link": False})
    out, stack = [], md.parse(text)
    while stack:
        token = stack.pop()
        stack += list(reversed(token.children or []))
        if token.type == "link_open":
            out.append(("link", token.attrGet("href")))
        elif token.type == "image":
            out.append(("image", token.attrGet("src")))
        elif token.type == "text":
            out += [("link", f"mailto:{m}") for m in GFM_EMAIL.findall(token.content)]
    return out


def suites_own(kind: str, target: str) -> bool:
    """A link or image the report writes itself: an anchor, a figure beside it, a claim's decision on the run's methods page (or METHODS.md)."""
    return (
        "://" not in target
        and ":" not in target.split("/")[0]
        and (target.startswith(("#", "figures/", "methods.md#", "methods.html#")) or "METHODS.md" in target)
    )


ADDRESSES = {
    "mail": "run mail evil@tracker.example",
    "mailto": "mailto:evil@tracker.example",
    "xmpp": "xmpp:evil@tracker.example/x",
    "mention": "ping @evil-user",
    "plus": "a.b+c@d-e.tracker.example.",
    "bare": "see https://evil.example/y and www.evil.example",
}


@pytest.mark.parametrize("text", list(ADDRESSES.values()), ids=list(ADDRESSES))
def test_md_escape_leaves_no_address_linked(text):
    """A13, another construction: each kind of address GitHub links without brackets, escaped as text, a table cell,
    a heading and a link's text, renders no link of its own; in an image's alt it shows as written."""
    from harness.report.render import Link, md_escape, to_markdown

    md = to_markdown([("h2", text, "a"), ("p", text), ("table", ["h"], [[text]]), ("p", [Link(text, "#a")])], Path("."))
    assert [t for k, t in gfm_links(md) if not suites_own(k, t)] == []
    assert gfm_links(md_escape(text)) == []
    assert md_escape(text, alt=True).count("<wbr>") == 0


@pytest.mark.long  # builds three small reports
def test_no_address_in_a_name_is_a_link_under_githubs_renderer(tmp_path):
    """A13: a run label, a model name, a reason and a job reason carrying e-mail addresses: report.md and summary.md,
    single and merged, render no link the suite did not write (GitHub's renderer finds mailto: links in the raw
    text, which the markdown-it test of test_guards cannot see)."""
    from harness.report.merge import merge_command
    from harness.report.write import build

    model = "path-evil@tracker.example"
    rec = record(model, "T9a", "not held", outcome="failed", reason=" ".join(ADDRESSES.values()))
    results = run_results(model, [rec, record(model, "T6", "held")], run="run mail evil@tracker.example")
    run = write_run(tmp_path / "run", results)
    build(run)
    job = tmp_path / "job"
    job.mkdir()
    (job / "job.json").write_text(json.dumps({"model": "gemma-x", "status": "failed", "reason": ADDRESSES["mailto"]}))
    merge_command([run, job], tmp_path / "merged", allow_mixed=True)
    for folder in (run, tmp_path / "merged"):
        for file in ("report.md", "summary.md"):
            text = (folder / file).read_text()
            assert "tracker.example" in text  # shown, as text
            assert [(k, t) for k, t in gfm_links(text) if not suites_own(k, t)] == [], folder / file


# ---- B52: the notebook shows escaped text only ----------------------------------------------------------------


def test_show_displays_titles_as_text(tmp_path, monkeypatch):
    """B52: a model name holding HTML (and, another construction, a link and an e-mail address) in a figure's title:
    Verdicts.show hands IPython's Markdown the title escaped, as the report shows it, never the raw HTML."""
    display = pytest.importorskip("IPython.display")
    from harness.notebook import Verdicts
    from harness.report.render import md_escape

    model = "path-<img src=x onerror=alert(1)>"
    write_run(tmp_path, run_results(model, [record(model, "T9a")]))
    (tmp_path / "figures").mkdir()
    png = next((EXAMPLE / "figures").glob("T9a_*.png"))
    titles = {
        "T9a_a.png": f"T9a — layer profile — {model}",
        "T9a_b.png": "T9a — [x](https://evil.example) ![p](https://tracker.example/p.png) evil@tracker.example",
    }
    lines = []
    for name, title in titles.items():
        shutil.copy(png, tmp_path / "figures" / name)
        lines.append(f"![{md_escape(title, alt=True)}](figures/{name})")
    (tmp_path / "report.md").write_text("\n\n".join(lines) + "\n")
    shown = []
    monkeypatch.setattr(sys.modules["IPython"], "get_ipython", lambda: object())
    monkeypatch.setattr(display, "display", lambda *objs: shown.append(objs))
    Verdicts.load(tmp_path).show("T9a")
    texts = [objs[0].data for objs in shown]
    assert len(texts) == 2 and all("<img" not in t for t in texts), texts
    assert "path-&lt;img src=x onerror=alert(1)>" in texts[0]
    assert [gfm_links(t) for t in texts] == [[], []]


# ---- a stop signal at any moment of a run's end ---------------------------------------------------------------

STOP_AT = '''
"""A SIGINT to this process at one moment of the run's end, named by ABSPOS_STOP_AT."""
import os, signal


def _stop_then(fn):
    def stopped(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGINT)
        return fn(*args, **kwargs)

    return stopped


def pytest_configure(config):
    from harness.report import document, plots, write
    from harness.run import records

    where = os.environ["ABSPOS_STOP_AT"]
    if where == "results":  # as results.json's folder is made
        write.run_folder = _stop_then(write.run_folder)
    elif where == "plots":  # as the first figure is drawn
        plots.write_summary = _stop_then(plots.write_summary)
    elif where == "summary":  # as the report's and summary.md's pages are composed
        document.pages = _stop_then(document.pages)
    elif where == "latest":  # as `latest` is moved to the finished run
        write.point_link = _stop_then(write.point_link)
    elif where == "after the report":  # the moment write_run returns
        run = records.write_run

        def after(*args, **kwargs):
            out = run(*args, **kwargs)
            os.kill(os.getpid(), signal.SIGINT)
            return out

        records.write_run = after
    elif where == "terminal summary":
        records.RecordCollector.report_lines = _stop_then(records.RecordCollector.report_lines)
'''

MOMENTS = {  # where the stop comes: whether the report is left unwritten
    "results": True,
    "plots": True,
    "summary": True,
    "latest": False,
    "after the report": False,
    "terminal summary": False,
}


@pytest.mark.long  # six claims runs of a model-free test, ~8 s each
@pytest.mark.parametrize("moment", list(MOMENTS))
def test_a_stop_at_any_moment_of_the_runs_end_is_one_line(tmp_path, moment):
    """A SIGINT at six moments of a run's end (results.json, a figure, the summary, `latest`, after the report, the
    terminal summary): exit 2 (interrupted), no traceback, results.json whole; before the report is written, no
    report and one line naming the kept results; after it, the report and `latest` as a finished run's. (f45f170:
    a stop at `latest` or just after the report ended with exit 130 and a traceback.)"""
    (tmp_path / "plugins").mkdir()
    (tmp_path / "plugins" / "stop_at.py").write_text(STOP_AT)
    reports = tmp_path / "reports"
    proc = run_pytest(
        "-k", "EQ3_causal_denominator", "--models", SMOL, "-p", "stop_at", "--report-dir", str(reports),
        "--baseline-dir", str(tmp_path / "baselines"),
        env={
            **os.environ,
            "ABSPOS_STOP_AT": moment,
            "PYTHONPATH": f"{tmp_path / 'plugins'}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
        },
    )  # fmt: skip
    out = proc.stdout + proc.stderr
    assert proc.returncode == 2 and "Traceback" not in out and "KeyboardInterrupt" not in out, out[-3000:]
    (run,) = [p.parent for p in reports.glob("*/results.json") if not p.parent.is_symlink()]
    assert [r["test"] for r in json.loads((run / "results.json").read_text())["records"]] == [EQ3]
    if MOMENTS[moment]:
        kept = "abspos: interrupted by SIGINT before the report was written: no report; the results are kept in "
        assert [ln for ln in out.splitlines() if ln.startswith("abspos: interrupted by SIGINT before")] == [
            kept + f"{run / 'results.json'} (build it with python -m harness.report build {run})"
        ]
        assert not (run / "report.md").exists() and not (reports / "latest").exists()
    else:
        assert (run / "report.md").exists() and (reports / "latest").resolve() == run.resolve()
        assert "abspos: interrupted by SIGINT after" in out


def test_a_stop_deferred_at_the_end_is_acted_on_at_a_checkpoint_only():
    """Another construction, in this process: inside the deferred block a stop raises nothing where it lands; the
    next ``check`` raises it; the same stop delivered again within the repeat window (a terminal's group and a
    forwarding parent) is not a second stop, so a run stopped during its tests still gets its report."""
    from harness.run.signals import Interrupts

    stops = Interrupts().install()
    try:
        with stops.deferred():
            os.kill(os.getpid(), signal.SIGINT)  # lands here: noted
            landed = True  # (a line after the signal: nothing raised)
            with pytest.raises(KeyboardInterrupt, match="interrupted by SIGINT"):
                stops.check()
        assert landed
        tests_stop = Interrupts().install()
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGTERM)  # a stop during the tests
        with tests_stop.deferred():
            os.kill(os.getpid(), signal.SIGTERM)  # the same stop again, at once, as the end begins
            tests_stop.check()  # not a new stop: the report of what finished is still written
        tests_stop.restore()
    finally:
        stops.restore()


# ---- the whole suite collected in one run --------------------------------------------------------------------


def test_no_test_module_basename_is_shared_between_tests_and_claims():
    """Without __init__.py files, pytest imports test modules by basename: two test_x.py in tests/ and claims/ stop
    `pytest` (testpaths: tests, claims) at collection with "import file mismatch"."""
    tests, claims = ({p.name for p in (ROOT / f).glob("test_*.py")} for f in ("tests", "claims"))
    assert tests & claims == set()


@pytest.mark.long  # imports every test module: ~15 s
@pytest.mark.parametrize(
    "target, args", [(None, []), ("tests", ["claims", "-m", "gpu"])], ids=["pytest", "pytest tests claims -m gpu"]
)
def test_tests_and_claims_are_collected_in_one_run(target, args):
    """`pytest` with no arguments at the repository root (testpaths) and `pytest tests claims -m gpu` collect the
    modules of both folders without an error."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_XDIST")}
    proc = run_pytest(*args, "--co", "-q", target=target, env=env, timeout=600)
    out = proc.stdout + proc.stderr
    last = out.strip().splitlines()[-1]
    assert proc.returncode == 0 and "import file mismatch" not in out and "error" not in last, out[-3000:]
    if target is None:
        assert "tests/test_synthetic_training.py::" in out and "claims/test_s3_mechanism.py::" in out
