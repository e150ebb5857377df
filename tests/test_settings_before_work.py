"""Every bad setting is one line before any work; what others read is safe to render; what the code needs is declared.

Case -> test (each failed on d85fd79, before it was fixed):

C. Every bad setting is one line before any work
  --models "" / "," (pytest: INTERNALERROR KeyError NOTSET)    test_a_bad_setting_is_one_line_before_any_work[models-*]
  abspos-claims run --models "" (ran every model)              test_the_run_command_refuses_naming_no_model
  verify([]) / verify(None) / verify("") / verify(",")        test_verify_naming_no_model_raises_before_anything_runs
  verify(seq_len="abc"): pytest's line discarded              test_verify_passes_pytests_own_usage_line_through
  --seed -1 (traceback)                                        test_a_bad_setting_is_one_line_before_any_work[seed-*]
  --threads -1, ABSPOS_THREADS=abc (INTERNALERROR)             test_a_bad_setting_is_one_line_before_any_work[threads-*]
  --device meta (per-test NotImplementedError)                 test_a_bad_setting_is_one_line_before_any_work[device-meta]
  --n-perm 10^12 (MemoryError after a forward pass)            test_a_bad_setting_is_one_line_before_any_work[n-perm-*]
  --n-pairs 10^7 (claimed though 8,256 pairs exist)            test_a_bad_setting_is_one_line_before_any_work[n-pairs-*],
                                                               test_the_pairs_bound_is_where_the_draw_takes_every_pair
  --seq-len 16: EQ7 a harness error (draws lengths up to 24)   test_EQ7_runs_at_the_shortest_seq_len
  path: model with --n-prompts 100000 (CorpusTooSmall in test) test_a_bad_setting_is_one_line_before_any_work[corpus-*],
                                                               test_a_model_without_a_recorded_budget_is_checked_against_the_corpus
  abspos-claims models --seq-len 7 accepted                   test_the_models_command_refuses_a_seq_len_no_run_accepts
  report compare --rtol -1 lists every figure as moved         test_compare_refuses_a_negative_or_non_finite_tolerance
  report build into a read-only folder (18-line traceback)     test_report_build_into_an_unwritable_folder_is_one_line
  ABSPOS_CACHE= (empty) converts into the working folder       test_an_empty_cache_variable_is_the_default_cache
D. Output that others read
  report.md / summary.md / side_by_side.md carry raw HTML      test_markdown_outputs_neutralise_html[*]
  tqdm bars of the GGUF conversion in non-TTY logs             test_a_conversion_draws_no_progress_bars
  np.nanmean all-NaN warnings from harness/stats/sinks.py:10         test_sink_profiles_with_unread_keys_do_not_warn
Also noticed
  requires-python 3.10 though the check identity needs 3.11   test_the_python_the_check_identity_needs_is_required
  scipy, threadpoolctl, huggingface_hub not declared           test_every_package_the_harness_imports_is_declared
(and from section A, the conversion cache on a full disk: one line, test_a_full_disk_during_conversion_is_one_line)
"""

from __future__ import annotations

import ast
import io
import json
import os
import re
import subprocess
import sys
import tomllib
import warnings
from pathlib import Path

import numpy as np
import pytest
from pytest_runs import run_pytest

import harness
from harness import api, cli, run_command
from harness.report import cli as report_cli
from harness.report import write

ROOT = Path(harness.__file__).resolve().parents[1]  # the tree under test (its claims, plugin and pyproject)
EXAMPLE = ROOT / "reports" / "example" / "results.json"
USAGE = pytest.ExitCode.USAGE_ERROR


def pytest_claims(*args: str, env: dict | None = None, timeout: int = 300) -> subprocess.CompletedProcess:
    return run_pytest("--no-report", *args, env={**os.environ, **(env or {})}, timeout=timeout)


def error_lines(r: subprocess.CompletedProcess) -> list[str]:
    return [x for x in r.stderr.splitlines() if x.strip() and "inifile:" not in x and "rootdir:" not in x]


# ---- C. bad settings: one line, exit 4, before anything is collected ----------------------------------------------

BAD = [  # (id, args, environment, what the one line says)
    ("models-empty", ["--models", ""], {}, "--models '': no model named"),
    ("models-comma", ["--models", ","], {}, "--models ',': no model named"),
    ("seed-negative", ["--seed", "-1"], {}, "--seed -1: must be in 0 .. 2^32 - 1"),
    ("seed-huge", ["--seed", str(2**40)], {}, f"--seed {2**40}: must be in 0 .. 2^32 - 1"),
    ("threads-negative", ["--threads", "-1"], {}, "--threads -1: must be a positive number of CPU threads"),
    ("threads-env-text", [], {"ABSPOS_THREADS": "abc"}, "ABSPOS_THREADS='abc': must be a whole number"),
    ("threads-env-negative", [], {"ABSPOS_THREADS": "-2"}, "ABSPOS_THREADS='-2': must be a whole number"),
    ("device-meta", ["--device", "meta"], {}, "--device meta: the meta device holds shapes, not values"),
    ("n-perm-huge", ["--n-perm", str(10**12)], {}, "--n-perm 1000000000000: at most 1,000,000"),
    (
        "n-pairs-huge",
        ["--n-pairs", str(10**7)],
        {},
        "--n-pairs 10000000: more than any draw of this run can use: 8,256 causal (query, key) pairs exist at "
        "--seq-len 128, 131,328 at the 512 tokens of T7's query bins",
    ),
    (
        "corpus-paper-model",
        ["--models", "llama-3.2-1b", "--n-prompts", "100000"],
        {},
        "--n-prompts and --seq-len: 100000 prompts of 128 tokens need 3200000 tokens per topic; the 'wiki' corpus's "
        "smallest topic makes at most",
    ),
]


@pytest.mark.long
@pytest.mark.parametrize("args, env, says", [pytest.param(a, e, s, id=i) for i, a, e, s in BAD])
def test_a_bad_setting_is_one_line_before_any_work(args, env, says):
    """C: each of these crashed (INTERNALERROR, a traceback), failed in every test, or ran on a setting that cannot
    hold, instead of one line naming the option before anything is collected."""
    if "--models" not in args:
        args = ["--models", "smollm2-135m", *args]
    r = pytest_claims("--collect-only", "-q", *args, env=env)
    assert r.returncode == USAGE, r.stdout + r.stderr
    lines = error_lines(r)
    assert len(lines) == 1 and says in lines[0], r.stderr
    assert "INTERNALERROR" not in r.stdout + r.stderr and "Traceback" not in r.stdout + r.stderr


def test_the_settings_themselves_name_each_bad_value():
    """The same checks on ``Settings`` (no pytest): the defaults and the documented extremes pass."""
    from harness.spec.settings import Settings

    assert Settings().problems() == [] and Settings(seq_len=16).problems() == []
    assert Settings(seed=2**32 - 1, n_perm=1_000_000).problems() == []
    bad = Settings(seed=-1, n_perm=10**12, n_pairs=10**7).problems()
    assert [p.split(" ", 2)[0] for p in bad] == ["--n-pairs", "--n-perm", "--seed"]
    assert "GiB" in bad[1]  # the memory the permutation null would take


@pytest.mark.parametrize("seq_len", [16, 64, 128, 512, 1024])
def test_the_pairs_bound_is_where_the_draw_takes_every_pair(seq_len):
    """--n-pairs beyond the bound draws nothing new at any length the run draws pairs at (the bound at the longest,
    T7's 512 tokens or --seq-len); at the bound every causal pair is drawn, one fewer leaves one out."""
    from harness.spec.settings import Settings
    from harness.stats.pairs import stratified_pairs

    def causal_pairs(n):
        return n * (n + 1) // 2

    longest = max(seq_len, 512)  # T7's query bins run at 512 tokens whatever --seq-len
    n_bins, last_bin = (longest // 8).bit_length(), causal_pairs(longest) - causal_pairs(longest // 2)
    most = n_bins * (last_bin - 1) + 1  # an equal share per bin, the remainder to the last bins
    assert len(stratified_pairs(longest, most, 0).i) == causal_pairs(longest)
    assert len(stratified_pairs(longest, most - 1, 0).i) == causal_pairs(longest) - 1
    assert Settings(seq_len=seq_len, n_pairs=most).problems() == []
    (line,) = Settings(seq_len=seq_len, n_pairs=most + 1).problems()
    assert f"{causal_pairs(seq_len):,} causal (query, key) pairs exist at --seq-len {seq_len}" in line
    assert line.endswith(f"choose at most {most}")


def test_a_model_without_a_recorded_budget_is_checked_against_the_corpus():
    """C: a path: model (and a paper model) records no token budget, so --n-prompts 100000 went unchecked and each
    test failed with CorpusTooSmall; the corpus's bytes bound the tokens of any tokenizer."""
    import dataclasses

    from harness.capture.corpus import topic_texts
    from harness.run.selection import corpus_problems
    from harness.spec.models import REGISTRY
    from harness.spec.settings import Settings

    local = dataclasses.replace(REGISTRY["smollm2-135m"], name="path-my-model", group="local", corpus_tokens={})
    (line,) = corpus_problems(Settings(n_prompts=100000), [local])
    assert "no token count is recorded for path-my-model" in line and "(or use --corpus bbc)" in line
    assert corpus_problems(Settings(), [local]) == []  # the defaults fit whatever the tokenizer
    recorded = REGISTRY["smollm2-135m"].corpus_tokens["wiki"][0]
    smallest = min(sum(len(d.encode()) for d in docs) for docs in topic_texts("wiki").values())
    fits = 4 * (recorded // 128)  # prompts of 128 tokens smollm2's tokenizer certainly cannot exceed
    assert recorded <= smallest and corpus_problems(Settings(n_prompts=fits - fits % 4), [local]) == []


@pytest.mark.long
def test_EQ7_runs_at_the_shortest_seq_len(tmp_path):
    """C: at --seq-len 16 (the documented minimum) EQ7 drew prompt lengths up to 24 and was a harness error."""
    r = pytest_claims(
        "--models",
        "smollm2-135m",
        "--seq-len",
        "16",
        "-k",
        "test_EQ7",
        "-q",
        "--baseline-dir",
        str(tmp_path),
        "--report-dir",
        str(tmp_path / "reports"),
        timeout=600,
    )
    assert r.returncode == 0 and "1 passed" in r.stdout, r.stdout[-3000:] + r.stderr[-2000:]


# ---- C. the command and the API -----------------------------------------------------------------------------------


@pytest.mark.parametrize("models", ["", ","])
def test_the_run_command_refuses_naming_no_model(monkeypatch, capsys, models):
    """C: `abspos-claims run --models ""` dropped --models and ran every bundled and paper model."""
    ran = []
    monkeypatch.setattr(run_command, "call", lambda argv: ran.append(argv) or 0)
    assert cli.main(["run", "--models", models]) == USAGE
    assert ran == []
    err = [x for x in capsys.readouterr().err.splitlines() if x.strip()]
    assert len(err) == 1 and "no model named" in err[0]


@pytest.mark.parametrize("models", [[], None, "", ","], ids=["empty-list", "None", "empty-string", "comma"])
def test_verify_naming_no_model_raises_before_anything_runs(monkeypatch, models):
    """C: verify([]), verify(None), verify("") ran every bundled and paper model."""
    ran = []
    monkeypatch.setattr(api, "run_pytest", lambda argv, echo=True: ran.append(argv) or (0, ""))
    with pytest.raises(api.RunFailed, match="no model named") as e:
        api.verify(models, quiet=True)
    assert ran == [] and e.value.returncode == USAGE and "\n" not in str(e.value)


@pytest.mark.long
def test_verify_passes_pytests_own_usage_line_through():
    """C: verify(seq_len="abc") raised RunFailed("rootdir: ..."), pytest's 'invalid int value' line discarded."""
    with pytest.raises(api.RunFailed) as e:
        api.verify("smollm2-135m", seq_len="abc", quiet=True)
    assert e.value.returncode == USAGE
    assert "argument --seq-len: invalid int value: 'abc'" in str(e.value), str(e.value)


def test_the_models_command_refuses_a_seq_len_no_run_accepts(capsys):
    """C: `abspos-claims models --seq-len 7` listed applicability at a length every run refuses."""
    assert cli.main(["models", "smollm2-135m", "--seq-len", "7"]) == USAGE
    out = capsys.readouterr()
    err = [x for x in out.err.splitlines() if x.strip()]
    assert len(err) == 1 and "--seq-len 7: must be 8 times a power of two, at least 16" in err[0]
    assert out.out == ""


@pytest.mark.parametrize("option, value", [("--rtol", "-1"), ("--atol", "-0.5"), ("--rtol", "nan")])
def test_compare_refuses_a_negative_or_non_finite_tolerance(capsys, option, value):
    """C: `report compare --rtol -1` listed every identical figure as moved."""
    with pytest.raises(SystemExit) as e:
        report_cli.main(["compare", str(EXAMPLE), str(EXAMPLE), option, value])
    assert e.value.code == 2
    out = capsys.readouterr()
    assert f"argument {option}: " in out.err and "moved" not in out.out
    assert report_cli.main(["compare", str(EXAMPLE), str(EXAMPLE), option, "0"]) == 0  # identical runs: nothing moved


@pytest.mark.long
def test_report_build_into_an_unwritable_folder_is_one_line(tmp_path, capsys):
    """C: `report build` into a read-only folder was an 18-line traceback. (Run as root here, where permissions do
    not stop a write: the report's own file is made a folder, which no user can write as a file.)"""
    (tmp_path / "results.json").write_text(EXAMPLE.read_text())
    (tmp_path / "report.html").mkdir()
    if os.geteuid() != 0:
        os.chmod(tmp_path, 0o555)
    try:
        assert report_cli.main(["build", str(tmp_path)]) == 2
    finally:
        os.chmod(tmp_path, 0o755)
    err = [x for x in capsys.readouterr().err.splitlines() if x.strip()]
    assert len(err) == 1 and "cannot write the report there" in err[0], err


@pytest.mark.parametrize("value", ["", " "])
def test_an_empty_cache_variable_is_the_default_cache(monkeypatch, tmp_path, value):
    """C: ABSPOS_CACHE= (empty) wrote a 517 MB conversion into the working folder."""
    from harness.model.weights import cache_root

    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("ABSPOS_CACHE", value)
    assert cache_root() == tmp_path / ".cache" / "abspos-claims"
    monkeypatch.setenv("ABSPOS_CACHE", str(tmp_path / "mine"))
    assert cache_root() == tmp_path / "mine"


# ---- D. output that others read -----------------------------------------------------------------------------------

HOSTILE = {  # where a hostile text enters a report, and the text
    "model name": "m<script>alert('model')</script>",
    "figure note": "<img src=x onerror=alert('note')>",
    "reason": "<script>alert('reason')</script> &amp; <!-- comment",
    "setting": "<iframe src=javascript:alert('setting')>",
    "figure name": "<b onmouseover=alert('figure')>f</b>",
}


def hostile_results() -> dict:
    m = HOSTILE["model name"]

    def record(test, claim, outcome, figures, reason=""):
        return {
            "test": f"claims/test_x.py::{test}[{m}]",
            "claim": claim,
            "model": m,
            "outcome": outcome,
            "reason": reason,
            "seconds": 0.5,
            "figures": figures,
        }

    figure = {"name": HOSTILE["figure name"], "value": 0.5, "paper": None, "ci": None, "note": HOSTILE["figure note"]}
    t7 = {
        "name": "first_bin_share_of_causal_profile",
        "value": 0.5,
        "paper": None,
        "ci": [0.4, 0.6],
        "note": HOSTILE["figure note"],
    }
    return {
        "run": "run-hostile",
        "settings": {"n_prompts": 16, "seq_len": 128, "corpus": HOSTILE["setting"]},
        "models": [m],
        "versions": {"transformers": "5.23.0", "torch": "2.13.0"},
        "provenance": {
            "code": {"commit": "a" * 40, "dirty": False},
            "models": {m: {"source": HOSTILE["setting"], "caveat": HOSTILE["reason"]}},
        },
        "records": [
            record("test_T7_leakage_concentrates_in_first_query_bin", "T7", "xfailed", [t7, figure], HOSTILE["reason"]),
            record("test_T9a_position0_state_is_identical_across_prompts", "T9a", "passed", [figure]),
            record("test_T2_without_bos_position0_is_a_saturated_default_sink", "T2", "skipped", [], HOSTILE["reason"]),
        ],
    }


@pytest.fixture(scope="module")
def hostile_outputs(tmp_path_factory) -> dict[str, str]:
    """report.md, summary.md (CI's job summary) and side_by_side.md of a run whose names, notes, reasons and
    settings carry HTML."""
    folder = tmp_path_factory.mktemp("hostile")
    results = hostile_results()
    (folder / "a").mkdir()
    (folder / "a" / "results.json").write_text(json.dumps(results))
    other = {
        **results,
        "run": "run-other",
        "models": ["base"],
        "records": [
            {**r, "model": "base", "test": r["test"].replace(HOSTILE["model name"], "base")} for r in results["records"]
        ],
    }
    (folder / "b").mkdir()
    (folder / "b" / "results.json").write_text(json.dumps(other))
    write.build(folder / "a" / "results.json")
    from harness.report.side_by_side import side_by_side

    side_by_side(str(folder / "a"), str(folder / "b"), folder / "sbs")
    return {
        "report.md": (folder / "a" / "report.md").read_text(),
        "summary.md": (folder / "a" / "summary.md").read_text(),
        "side_by_side.md": (folder / "sbs" / "side_by_side.md").read_text(),
    }


TAG = re.compile(r"<\s*/?\s*(script|img|iframe|b)\b|<!--", re.I)


@pytest.mark.parametrize("output", ["report.md", "summary.md", "side_by_side.md"])
def test_markdown_outputs_neutralise_html(hostile_outputs, output):
    """D: the Markdown outputs copied raw HTML from a model or folder name, a figure note, a reason or a setting
    (to_markdown escaped only | and newlines); the HTML report escaped it."""
    md = hostile_outputs[output]
    assert not TAG.search(md), TAG.search(md) and md[max(0, TAG.search(md).start() - 200) : TAG.search(md).end() + 50]
    assert "&lt;script>alert('model')&lt;/script>" in md  # shown as written, not dropped
    if output == "report.md":  # every hostile text is there, each shown as typed (an entity in it too)
        assert all(v.replace("&", "&amp;").replace("<", "&lt;") in md for v in HOSTILE.values())


def test_markdown_escaping_leaves_the_renderers_own_markup_and_arrows():
    from harness.report.render import Link, to_markdown

    md = to_markdown(
        [
            ("h2", "a <b>", "anchor"),
            ("p", ["x -> y >= 1 & z ", Link("<i>", "r.md#a")]),
            ("table", ["h<1>"], [["a|b<c"]]),
            ("details", "s<", [("p", "in <s>")]),
        ],
        Path("."),
    )
    assert '<a id="anchor"></a>' in md and "## a &lt;b>" in md
    assert "x -> y >= 1 &amp; z [&lt;i>](r.md#a)" in md
    assert "| h&lt;1> |" in md and "| a\\|b&lt;c |" in md
    assert "<details><summary>s&lt;</summary>" in md and "in &lt;s>" in md and md.count("<") == 6


def test_a_conversion_draws_no_progress_bars(tmp_path, capsys):
    """D: the GGUF conversion's tqdm bars (transformers' de-quantisation loop, tqdm.auto) filled non-TTY logs; the
    TQDM_DISABLE set around it is read by tqdm only when first imported."""
    from tqdm.auto import tqdm

    from harness.model import cache

    def convert(into: Path) -> None:
        for _ in tqdm(range(5), desc="Converting and de-quantizing GGUF tensors..."):
            pass
        (into / "weights.bin").write_bytes(b"w")

    cache.ensure(tmp_path / "model", "f" * 16, convert, log=lambda *a: None)
    err = capsys.readouterr().err
    assert "Converting and de-quantizing" not in err and "\r" not in err, err
    buf = io.StringIO()
    for _ in tqdm(range(2), file=buf):  # bars are back after the conversion
        pass
    assert "2/2" in buf.getvalue()


def test_a_full_disk_during_conversion_is_one_line(tmp_path):
    """(Section A, the cache side:) a conversion onto a full disk was an ~80-line SafetensorError in every test."""
    import errno

    from harness.model import cache

    def convert(into: Path) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    with pytest.raises(cache.CacheError) as e:
        cache.ensure(tmp_path / "model", "f" * 16, convert, log=lambda *a: None, what="smollm2-135m")
    assert "no space left" in str(e.value) and "ABSPOS_CACHE" in str(e.value) and "\n" not in str(e.value)
    assert list(tmp_path.iterdir()) == [tmp_path / ".model.lock"] or not any(
        p.name.startswith(".model.partial") for p in tmp_path.iterdir()
    )


def test_sink_profiles_with_unread_keys_do_not_warn():
    """D: np.nanmean of an all-NaN slice (a key no later query reads) warned from harness/stats/sinks.py in every run."""
    from harness.stats.sinks import peak_sink, sink_magnitude_by_layer

    profile = np.random.default_rng(0).random((2, 3, 4, 8))
    profile[..., -1] = np.nan
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        by_layer = sink_magnitude_by_layer(profile)
        peak_sink(profile, 0)
    assert np.isnan(by_layer[:, -1]).all() and np.isfinite(by_layer[:, :-1]).all()  # the figures are unchanged
    np.testing.assert_allclose(by_layer[:, :-1], profile[..., :-1].mean(axis=(0, 2)))


# ---- Also noticed -------------------------------------------------------------------------------------------------


def pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_the_python_the_check_identity_needs_is_required():
    """Also noticed: the check identity reads co_positions() (Python 3.11+) while pyproject allowed 3.10, where every
    check became 'line N' and no recorded known outcome matched."""
    spec = pyproject()["project"]["requires-python"].replace(" ", "")
    assert spec == ">=3.11", spec
    assert "needs Python ≥ 3.11" in (ROOT / "README.md").read_text()
    assert hasattr((lambda: 0).__code__, "co_positions")  # what harness/outcome/verdict.py reads


DISTRIBUTION = {
    "sklearn": "scikit-learn",
    "yaml": "pyyaml",
    "_pytest": "pytest",
}  # import name -> distribution, where they differ


def imported_packages(folder: Path) -> set[str]:
    """Top-level third-party modules the .py files under ``folder`` import (an import guarded by ``except
    ImportError`` is optional and not counted)."""
    out: set[str] = set()
    for path in folder.rglob("*.py"):
        tree = ast.parse(path.read_text())
        optional = {
            id(n)
            for t in ast.walk(tree)
            if isinstance(t, ast.Try) and any("ImportError" in ast.unparse(h.type or ast.Name("")) for h in t.handlers)
            for s in t.body
            for n in ast.walk(s)
        }
        for node in ast.walk(tree):
            if id(node) in optional:
                continue
            if isinstance(node, ast.Import):
                out |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                out.add(node.module.split(".")[0])
    return {m for m in out if m not in sys.stdlib_module_names and m not in ("harness", "__future__")}


def test_every_package_the_harness_imports_is_declared():
    """Also noticed: scipy, threadpoolctl and huggingface_hub were imported but not declared in pyproject."""
    declared = {
        re.split(r"[<>=!~ \[;]", d, maxsplit=1)[0].lower().replace("_", "-")
        for d in pyproject()["project"]["dependencies"]
    }
    wanted = {DISTRIBUTION.get(m, m).lower().replace("_", "-") for m in imported_packages(ROOT / "harness")}
    assert {"scipy", "threadpoolctl", "huggingface-hub"} <= wanted
    assert wanted - declared == set(), f"imported by harness/ but not declared: {sorted(wanted - declared)}"
