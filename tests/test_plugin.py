"""The pytest plugin refuses bad model selections before anything runs, with a one-line reason."""

import json
import os
import subprocess
from types import SimpleNamespace

import pytest
from pytest_runs import ROOT, run_crafted_file, run_pytest

from harness.run import collection
from harness.run.records import HARNESS_ERROR_EXIT

pytestmark = pytest.mark.long  # every test here runs pytest on the claims in a subprocess


def collect(*args: str) -> subprocess.CompletedProcess:
    return run_pytest("--collect-only", "-q", "--no-report", *args)


@pytest.mark.parametrize(
    "models, says",
    [
        ("tiny-llama", "tiny random-init models test the harness mechanics"),
        ("smollm2-135m,tiny-gemma3", "--models tiny-gemma3"),
        ("tiny", "unknown model 'tiny'"),
        (
            "llama-9b",
            "--models: unknown model 'llama-9b', did you mean 'llama-3.2-3b'?; choose from bundled: smollm2-135m",
        ),
    ],
)
def test_bad_model_selection_is_a_usage_error(models, says):
    """Review U1, U2: one line, listing only what --models accepts (never the tiny models)."""
    r = collect("--models", models)
    assert r.returncode == pytest.ExitCode.USAGE_ERROR, r.stdout + r.stderr
    lines = [x for x in r.stderr.splitlines() if x.strip()]
    assert len(lines) == 1 and says in lines[0], r.stderr
    assert "tiny" in models or "tiny-" not in lines[0]


def test_bundled_selection_collects_every_claim_per_model():
    r = collect("--models", "smollm2-135m")
    assert r.returncode == 0, r.stdout + r.stderr
    ids = [
        line for line in r.stdout.splitlines() if "::" in line and "[" in line and "test_T13" not in line
    ]  # T13: per family
    assert len(ids) > 20 and all("[smollm2-135m" in line for line in ids)


def run_claims(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return run_pytest("--no-report", "-rs", *args, env=env)


def test_captures_show_progress_in_a_plain_run_and_none_under_ci(tmp_path):
    """pytest's output capture must not swallow the progress line: a long run shows what runs between its dots."""
    plain = {**{k: v for k, v in os.environ.items() if k != "CI"}, "ABSPOS_PROGRESS_AFTER": "0"}  # any speed
    short = ("--models", "smollm2-135m", "-k", "T9a", "-q", "--seq-len", "16", "--baseline-dir", str(tmp_path))
    r = run_claims(*short, env=plain)
    lines = r.stdout.splitlines()
    assert r.returncode == 0, r.stdout + r.stderr
    assert any(line.startswith("[abspos] smollm2-135m ") and " 16 prompts in " in line for line in lines), r.stdout
    quiet = run_claims(*short, env={**plain, "CI": "1"})
    assert quiet.returncode == 0 and " prompts in " not in quiet.stdout + quiet.stderr


def test_every_run_ends_with_the_claims_by_models_matrix():
    r = run_claims("--models", "smollm2-135m", "-k", "EQ3_causal_denominator or T2_moving")
    assert r.returncode == 0, r.stdout + r.stderr
    out = r.stdout
    assert "abspos claims × models" in out
    matrix = out.split("abspos claims × models")[1].splitlines()
    assert "EQ3 without a model: H" in matrix  # a property of the equations: no column of its own
    assert any(line.split() == ["T2", "-"] for line in matrix)  # one mark per test: here not applicable
    ours = matrix[1 : next(k for k, line in enumerate(matrix) if line.startswith("="))]
    assert ours and all(len(line) <= 100 for line in ours), out  # the matrix, its legend and what follows it


def test_inapplicable_predictions_skip_at_collection_with_one_reason():
    r = run_claims("--models", "smollm2-135m", "-k", "T2_moving or T9c_replacing_bos or T8_sliding")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "not applicable to smollm2-135m: the prediction is for models that auto-prepend BOS" in r.stdout
    assert (
        "not applicable to smollm2-135m: the prediction is for the Mistral family and models whose sliding "
        "window binds at the run's length" in r.stdout
    )
    assert (
        "not applicable to smollm2-135m: the prediction is for models with sliding-window layers, run at a "
        "length past the window" in r.stdout
    )
    assert "4 skipped" in r.stdout


SNAP = "test_T9a_position0_state_is_identical_across_prompts[smollm2-135m].json"


def t9a_in(tmp_path, perturb: float) -> subprocess.CompletedProcess:
    """T9a on SmolLM2 (it holds there) from a copy of its claim file and snapshot, the snapshot's
    'min_std_position1' scaled by ``perturb``."""
    (tmp_path / "__snapshots__" / "test_s5_7_position0").mkdir(parents=True)
    (tmp_path / "test_s5_7_position0.py").write_text((ROOT / "claims" / "test_s5_7_position0.py").read_text())
    snap = json.loads((ROOT / "claims" / "__snapshots__" / "test_s5_7_position0" / SNAP).read_text())
    snap["min_std_position1"] *= perturb
    (tmp_path / "__snapshots__" / "test_s5_7_position0" / SNAP).write_text(json.dumps(snap, indent=2))
    return run_crafted_file(
        tmp_path / "test_s5_7_position0.py",
        *("--models", "smollm2-135m", "-k", "T9a", "--no-report", "-q", "--tb=line"),
    )


def test_a_held_claim_is_compared_with_its_snapshot(tmp_path):
    r = t9a_in(tmp_path, 1.0)
    assert r.returncode == 0 and "1 passed" in r.stdout and "1 snapshot passed" in r.stdout, r.stdout + r.stderr


def test_snapshot_drift_fails_a_held_claim_as_a_harness_error(tmp_path):
    r = t9a_in(tmp_path, 1.01)  # 1% > the snapshot's rtol 1e-3
    assert r.returncode == HARNESS_ERROR_EXIT, r.stdout + r.stderr  # its own exit code, never a verdict's
    assert "SnapshotDrift: T9a: measured figures drifted from the snapshot" in r.stdout
    assert "min_std_position1: " in r.stdout and "(-0.99%)" in r.stdout  # the figure that moved, and by how much
    assert "ClaimNotHeld" not in r.stdout


#: Each bad setting's one line; every push runs one per kind of check (a number's range, a corpus's capacity, a
#: device, a folder), the rest weekly: each is a pytest start that imports torch (about 18 s on 2 cores).
OUT_OF_RANGE = [
    ("--n-prompts", "0", "--n-prompts 0: must be a multiple of 4 (balanced topics) and at least 12"),
    ("--n-prompts", "3", "--n-prompts 3: must be a multiple of 4"),
    ("--n-prompts", "8", "with fewer prompts the top 30 heads cannot survive BH"),
    ("--seq-len", "1", "--seq-len 1: must be 8 times a power of two, at least 16"),
    ("--seq-len", "100", "--seq-len 100: must be 8 times a power of two"),
    ("--n-pairs", "0", "--n-pairs 0: must be at least 1000"),
    ("--n-perm", "0", "--n-perm 0: must be at least 100"),
    ("--n-perm", "-5", "--n-perm -5: must be at least 100"),
    ("--n-probe-prompts", "10", "--n-probe-prompts 10: must be a multiple of 4 and at least 20"),
    ("--device", "nonsense", "--device nonsense: not a torch device; expected cpu, cuda, cuda:<index> or mps"),
    ("--dtype", "int8", "argument --dtype: invalid choice: 'int8'"),
    ("--corpus", "nosuch", "argument --corpus: invalid choice: 'nosuch'"),
    ("--seq-len", "100000", "--seq-len 100000: must be 8 times a power of two"),
    (
        "--seq-len",
        "16384",
        "--seq-len 16384: longer than the context of smollm2-135m (8192 tokens) (their context allows at most 8192)",
    ),
    (
        "--seq-len",
        "131072",
        "--seq-len 131072: longer than the context of smollm2-135m (8192 tokens), "
        "gemma3-270m (32768 tokens), qwen2.5-coder-0.5b (32768 tokens) (their context allows at "
        "most 8192)",
    ),
    (
        "--seq-len",
        "8192",
        "--n-probe-prompts and --seq-len: 64 prompts of 8192 tokens need 131072 tokens per topic; "
        "the 'wiki' corpus's smallest topic has 102696 in smollm2-135m's tokenizer; it fills 64 "
        "prompts of at most 4096 tokens or 44 prompts of 8192 tokens (or use --corpus bbc)",
    ),
    (
        "--seq-len",
        "32768",
        "--n-prompts and --seq-len: 16 prompts of 32768 tokens need 131072 tokens per topic; the "
        "'wiki' corpus's smallest topic has 104417 in qwen2.5-coder-0.5b's tokenizer",
    ),
    (
        "--n-prompts",
        "1024",
        "T7's query bins at 512 tokens or --seq-len, with --n-prompts: 1024 prompts of 512 tokens "
        "need 131072 tokens per topic",
    ),
    ("--report-dir", "/proc/forbidden", "--report-dir /proc/forbidden: not writable"),
    ("--report-dir", "/dev/null/x", "--report-dir /dev/null/x: not writable"),
]
EVERY_PUSH = {("--n-prompts", "3"), ("--device", "nonsense"), ("--n-prompts", "1024"), ("--report-dir", "/dev/null/x")}


@pytest.mark.parametrize(
    "option, value, says",
    [pytest.param(*case, marks=() if case[:2] in EVERY_PUSH else pytest.mark.slow) for case in OUT_OF_RANGE],
)
def test_a_setting_out_of_range_is_a_one_line_usage_error_before_any_work(option, value, says):
    """Never a crash in every test, never a meaningless setting reported as a
    claim not held, never a full run that then has nowhere to write its results."""
    models = {"131072": "bundled", "32768": "qwen2.5-coder-0.5b"}.get(value, "smollm2-135m")
    args = ("--models", models, option, value)
    r = (
        collect(*args)
        if option != "--report-dir"
        else run_pytest("--collect-only", "-q", *args)  # collect() passes --no-report
    )
    assert r.returncode == pytest.ExitCode.USAGE_ERROR, r.stdout + r.stderr
    lines = [x for x in r.stderr.splitlines() if x.strip() and "inifile:" not in x and "rootdir:" not in x]
    if "invalid choice" in says:  # argparse's own form: pytest's usage line, then the one error line
        lines = lines[1:]
    assert len(lines) == 1 and says in lines[0], r.stderr


def test_a_paper_model_named_whose_weights_are_absent_is_a_usage_error_unless_asked_to_skip(tmp_path):
    """Named one by one, a paper model was meant to be measured: its absence is one line and exit 4, never "1
    skipped" and exit 0; --skip-absent skips its tests, as the group 'paper' always does."""
    env = {**os.environ, "ABSPOS_MODELS_DIR": str(tmp_path), "HF_HUB_CACHE": str(tmp_path / "hub")}
    r = run_pytest("--collect-only", "-q", "--no-report", "--models", "llama-3.2-1b", "-k", "EQ7", env=env)
    assert r.returncode == pytest.ExitCode.USAGE_ERROR, r.stdout + r.stderr
    line = [x for x in r.stderr.splitlines() if x.startswith("ERROR: ")]
    assert line == [line[0]] and "--models llama-3.2-1b: llama-3.2-1b weights not found" in line[0], r.stderr
    assert line[0].endswith("(or add --skip-absent to skip its tests)")
    for models, extra in (("llama-3.2-1b", ["--skip-absent"]), ("smollm2-135m,paper", [])):
        r = run_pytest("--collect-only", "-q", "--no-report", "--models", models, "-k", "EQ7", *extra, env=env)
        assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.parametrize(
    "xdist", [[], pytest.param(["-n", "1"], marks=pytest.mark.slow)], ids=["plain", "xdist"]
)  # under xdist: a worker's start, weekly
def test_require_weights_fails_a_run_whose_models_are_absent_and_passes_one_whose_are_present(tmp_path, xdist):
    """A nightly (which runs under -n) never goes green having measured nothing (its models' weights absent)."""
    env = {**os.environ, "ABSPOS_MODELS_DIR": str(tmp_path), "HF_HUB_CACHE": str(tmp_path / "hub")}
    r = run_pytest("-q", "--no-report", "-m", "paper and llama", "--require-weights", *xdist, env=env)
    assert r.returncode == pytest.ExitCode.USAGE_ERROR, r.stdout + r.stderr
    line = [x for x in (r.stdout + r.stderr).splitlines() if "--require-weights: " in x]
    assert len(line) == 1 and "llama-3.1-8b weights not found" in line[0], r.stdout + r.stderr
    assert "llama-3.2-1b weights not found" in line[0] and "qwen" not in line[0]  # only the selected models
    assert "INTERNALERROR" not in r.stdout + r.stderr
    assert collect("--models", "smollm2-135m", "--require-weights").returncode == 0


@pytest.mark.parametrize(
    "args, dist, expected",
    [
        (["-n", "2"], "load", "loadgroup"),  # -n alone: xdist's default, made per model
        (["-n", "2", "--dist", "load"], "load", "load"),  # asked for: kept
        (["-n", "2", "--dist=loadfile"], "loadfile", "loadfile"),
        (["-n", "2", "-d"], "load", "load"),
        ([], "no", "no"),
    ],
)
def test_xdist_keeps_one_models_tests_on_one_worker_unless_told_otherwise(args, dist, expected):
    config = SimpleNamespace(option=SimpleNamespace(dist=dist), invocation_params=SimpleNamespace(args=args))
    collection.keep_models_on_one_worker(config)
    assert config.option.dist == expected
