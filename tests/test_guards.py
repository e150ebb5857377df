"""The run's guards: only the model named is measured, nothing measured is lost or stale, nothing from a folder or a
results file runs, and what others read is safe to render.

Each case of the third reliability review (`../shared/reviews/reliability-3.md`, probed on aaed007) that failed
there, and the test that holds it now (each fails on aaed007):

P2, only the described model is measured
- RH3 a full-size rehearsal without its marker at a paper model's place: measured, its baseline recorded
                                                         test_untrained_weights_at_a_paper_models_place_are_refused
                                                         test_a_rehearsal_build_is_recognised_from_its_weights
                                                         test_recorded_published_hashes_decide
- RH4 another model's tokenizer in a paper model's folder: measured ... test_another_models_tokenizer_in_a_paper_folder_is_refused
- RH5 a rehearsal folder with another tokenizer: still "rehearsed" .... test_a_rehearsal_with_another_tokenizer_is_refused
- NW1 one NaN in a folder's weights: two "not held" verdicts .......... test_a_nan_in_real_weights_is_one_line_before_any_work
- NW2 all-zero weights: one held, one not held ......................... test_weights_of_zeros_are_refused
- MG10 a job.json naming one model pointing at another's results ...... test_a_job_pointing_at_another_models_results_is_failed

P1, nothing measured is lost, and a partial run says so
- SB9 a re-used --folder: a killed job shown as the earlier submission's success
                                                                        test_a_killed_job_in_a_reused_folder_is_failed_not_stale
- SG1 a stop signal while the report is written: exit 130, 80 lines, no pointer
                                                                        test_a_stop_while_the_report_is_written_ends_like_ctrl_c
- SG2 the nightly then uploads no results for the model ............... (the same test: the nightly's status step on that run)
- MG3 `report merge --out` onto an input overwrites it ................ test_a_merge_never_writes_into_an_input
- XD1 a crashed xdist worker leaves no trace ........................... test_a_crashed_worker_is_recorded_against_its_test

P3, a bad input is one line before any work
- SB10 submit passes bad pytest options to every job .................. test_submit_checks_the_options_once_before_submitting
- TK4 a path: folder whose tokenizer outruns its embedding: an IndexError per test
                                                                        test_a_tokenizer_larger_than_the_embedding_is_refused
- SB4 a damaged submit.json: a traceback, exit 1 ....................... test_a_damaged_submission_file_is_one_line
- SB1 submit's argparse errors exit 2 ("merge refused") ................ test_submit_usage_errors_exit_4
- TK2 --require-weights ignores rehearsals ............................. test_require_weights_covers_rehearsals
- RH10 two full-size builds, no check of memory or disk; unbuilt "present"
                                                                        test_full_size_builds_are_one_at_a_time_and_fit_first
- NW3 ABSPOS_CACHE naming a file: a 50-line error per test ............. test_a_cache_that_is_a_file_is_one_line
- MG11 /dev/zero or a FIFO as a results file: read until killed ........ test_a_results_file_that_is_not_a_regular_file_is_one_line

P4, nothing from a folder runs, and outputs are safe to render
- SB11 `submit --collect` unpickles a result file from the folder ...... test_collect_never_unpickles_a_file_from_the_folder
- MG2 Markdown links and images in run labels and job reasons ......... test_markdown_outputs_carry_no_link_or_image_from_names
- MI2 a Markdown link in a model name ................................... (the same test), and the committed examples:
                                                                        test_the_example_reports_render_only_the_suites_links

Notes of the review, fixed: RH7's "a rehearsal rehearsal build" (test_a_rehearsal_build_is_recognised_from_its_weights),
SB5's folder error under --executor (test_submit_usage_errors_exit_4), a rehearsal's weights written 0600
(test_a_rehearsal_build_is_recognised_from_its_weights), TK1's skip naming the paper model, not the rehearsal
(test_require_weights_covers_rehearsals).
"""

from __future__ import annotations

import json
import math
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import types
from pathlib import Path

import pytest
import torch
from pytest_runs import run_pytest
from safetensors import safe_open
from safetensors.torch import load_file, save_file

from harness.files.paths import ROOT
from harness.model import references, rehearsal, weights
from harness.model.rehearsal_mark import MARKER
from harness.model.tokenizers import save_paper_tokenizer
from harness.spec.models import LLAMA_1B, LLAMA_8B, REGISTRY, WeightsUnavailable, WrongWeights, get_spec
from harness.spec.paper_configs import PAPER_CONFIGS

PY = sys.executable
SMOL = "smollm2-135m"
TOKENIZER = ("tokenizer.json", "tokenizer_config.json")
pytestmark = pytest.mark.usefixtures("restore_registry")  # tests/conftest.py


def one_line(text: str) -> str:
    text = str(text).strip()
    assert text and "\n" not in text, text[-3000:]
    return text


def claims(*args: str, env: dict | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
    return run_pytest(*args, env={**os.environ, **(env or {})}, timeout=timeout)


def usage_line(proc: subprocess.CompletedProcess) -> str:
    """The one line of a usage error (exit 4) that ended a claims run before collection."""
    out = proc.stdout + proc.stderr
    assert proc.returncode == 4, out[-3000:]
    lines = [ln for ln in out.splitlines() if ln.startswith("ERROR: ") or "Exit: " in ln]  # (pytest.exit's form)
    assert len(lines) == 1 and "Traceback" not in out, out[-3000:]
    return lines[0]


@pytest.fixture(scope="module")
def smol() -> Path:
    """The bundled SmolLM2's converted folder (config, tokenizer, safetensors)."""
    return weights.converted_folder(get_spec(SMOL), log=lambda *a: None)


def linked_copy(src: Path, dest: Path, skip=()) -> Path:
    dest.mkdir(parents=True)
    for f in src.iterdir():
        if f.name not in (*skip, "abspos-converted.json"):
            (dest / f.name).symlink_to(f)
    return dest


def trained_looking(shapes: dict[str, tuple[int, ...]], seed: int = 0) -> dict[str, torch.Tensor]:
    """Tensors of the given shapes with what training leaves: norm scales that vary, matrices of differing spread."""
    g = torch.Generator().manual_seed(seed)
    out = {}
    for i, (name, shape) in enumerate(shapes.items()):
        if len(shape) == 1:
            out[name] = 1 + 0.3 * torch.randn(shape, generator=g)
        else:
            out[name] = (0.01 + 0.02 * i) * torch.randn(shape, generator=g)
    return out


@pytest.fixture
def memory_folder():
    """A folder in memory (/dev/shm) when it has ``size`` bytes free, else ``tmp_path``: a test that writes and
    reads a paper model's weights spends seconds on them, not a disk's minute."""
    made = []

    def make(tmp_path: Path, size: int) -> Path:
        shm = Path("/dev/shm")
        if shm.is_dir() and os.access(shm, os.W_OK) and shutil.disk_usage(shm).free > 2 * size:
            made.append(Path(tempfile.mkdtemp(dir=shm, prefix="abspos-test-")))
            return made[-1]
        return tmp_path

    yield make
    for folder in made:
        shutil.rmtree(folder, ignore_errors=True)


def paper_slot(models_dir: Path, name: str = LLAMA_1B) -> Path:
    """Where ``$ABSPOS_MODELS_DIR`` holds paper model ``name``, with its published config.json."""
    folder = models_dir / get_spec(name).hub_id
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps({**PAPER_CONFIGS[name], "torch_dtype": "bfloat16"}))
    return folder


# ---- P2: only the described model is measured --------------------------------------------------------------------


def write_initialised(path: Path, shapes: dict[str, tuple[int, ...]]) -> None:
    """A safetensors file of bfloat16 weights as an initialiser draws them: norm scales 1, every matrix N(0, 0.02)
    (one 2^20-value draw, tiled: the check reads each tensor's spread and the norms, which tiling keeps), written
    block by block (a paper model's 2.5 GB never held in memory)."""
    draw = (0.02 * torch.randn(1 << 20, generator=torch.Generator().manual_seed(0))).to(torch.bfloat16)
    block = draw.view(torch.int16).numpy().tobytes()
    ones = torch.ones(1 << 16, dtype=torch.bfloat16).view(torch.int16).numpy().tobytes()
    header: dict = {"__metadata__": {"format": "pt"}}
    offset = 0
    for name, shape in shapes.items():
        size = 2 * math.prod(shape)
        header[name] = {"dtype": "BF16", "shape": list(shape), "data_offsets": [offset, offset + size]}
        offset += size
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(len(text).to_bytes(8, "little") + text)
        for shape in shapes.values():
            left, source = 2 * math.prod(shape), ones if len(shape) == 1 else block
            while left:
                f.write(source[: min(left, len(source))])
                left -= min(left, len(source))


@pytest.mark.long
def test_untrained_weights_at_a_paper_models_place_are_refused(tmp_path, monkeypatch, memory_folder):
    """RH3. Llama-3.2-1B's published config exactly, its real tokenizer, untrained weights of every tensor its config
    gives (``write_initialised``; the output head tied to the embedding, as published) and no marker, where its
    weights go: refused in one line wherever the model is named, before any work, and no baseline is written."""
    from transformers import AutoModelForCausalLM

    models = memory_folder(tmp_path, 3 << 30) / "models"  # 2.5 GB written and read back
    folder = paper_slot(models)
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(rehearsal._hf_config(PAPER_CONFIGS[LLAMA_1B]))
    shapes = {k: tuple(v.shape) for k, v in model.state_dict().items() if k != "lm_head.weight"}
    write_initialised(folder / "model.safetensors", shapes)
    save_paper_tokenizer(LLAMA_1B, folder, log=lambda *a: None)
    monkeypatch.setenv("ABSPOS_MODELS_DIR", str(models))
    with pytest.raises(WrongWeights) as e:
        weights.ensure_available(get_spec(LLAMA_1B))
    assert "untrained weights: every norm weight is constant" in one_line(e.value) and str(folder) in str(e.value)
    proc = claims(
        "--models", LLAMA_1B, "-k", "EQ7 or T9a", "--baseline-dir", str(tmp_path / "baselines"),
        env={"ABSPOS_MODELS_DIR": str(models)},
    )  # fmt: skip
    assert "untrained weights" in usage_line(proc) and f"--models {LLAMA_1B}" in usage_line(proc)
    assert not (tmp_path / "baselines").exists()


def test_a_rehearsal_build_is_recognised_from_its_weights(tmp_path, monkeypatch, smol):
    """RH3 through any path: a rehearsal build's weights carry a mark in their safetensors header, so its folder
    without REHEARSAL.json is refused as a model (and its weights file is readable by all, like its folder)."""

    def smol_tokenizer(name, folder):
        for f in TOKENIZER:
            shutil.copy(smol / f, folder / f)

    from harness.model.checkpoint_checks import REHEARSAL_KEY

    folder = rehearsal.build_rehearsal(LLAMA_1B, "rehearsal", tmp_path / "build", save_tokenizer=smol_tokenizer)
    (weights_file,) = folder.glob("*.safetensors")
    with safe_open(str(weights_file), framework="pt") as f:
        note = json.loads(f.metadata()[REHEARSAL_KEY])
    assert note == {"model": LLAMA_1B, "hub_id": "meta-llama/Llama-3.2-1B", "size": "rehearsal", "seed": 0,
                    "weights": "random"}  # fmt: skip
    assert stat.S_IMODE(weights_file.stat().st_mode) == 0o644
    with pytest.raises(WrongWeights, match="a narrow rehearsal build of llama-3.2-1b"):
        references.register(f"path:{folder}")  # its marker file: one line, no doubled word
    (folder / MARKER).unlink()
    with pytest.raises(WrongWeights) as e:
        references.register(f"path:{folder}")
    assert "holds a narrow rehearsal build of llama-3.2-1b (random weights: model.safetensors is marked" in one_line(
        e.value
    )


def test_another_models_tokenizer_in_a_paper_folder_is_refused(tmp_path, monkeypatch, smol):
    """RH4. A folder at Llama-3.2-1B's place with its config and weights that pass as trained, but SmolLM2's
    tokenizer (no BOS, 49,152 tokens): refused in one line, where it is found and at selection; with Llama 3's own
    tokenizer the same folder is accepted."""
    models = tmp_path / "models"
    folder = paper_slot(models)
    shapes = {"model.norm.weight": (64,), "model.layers.0.input_layernorm.weight": (64,)}
    shapes |= {f"model.layers.0.self_attn.{p}_proj.weight": (64, 64) for p in "qkvo"}
    save_file(trained_looking(shapes), str(folder / "model.safetensors"), metadata={"format": "pt"})
    for f in TOKENIZER:
        shutil.copy(smol / f, folder / f)
    monkeypatch.setenv("ABSPOS_MODELS_DIR", str(models))
    with pytest.raises(WrongWeights) as e:
        weights.ensure_available(get_spec(LLAMA_1B))
    assert "tokenizer" in one_line(e.value) and "does not prepend the BOS token 128000" in str(e.value)
    proc = claims("--models", LLAMA_1B, "-k", "EQ7", "--co", env={"ABSPOS_MODELS_DIR": str(models)})
    assert "does not prepend the BOS token 128000" in usage_line(proc)
    for f in TOKENIZER:
        (folder / f).unlink()
    save_paper_tokenizer(LLAMA_1B, folder, log=lambda *a: None)
    weights.ensure_available(get_spec(LLAMA_1B))  # the published tokenizer: accepted


def test_a_rehearsal_with_another_tokenizer_is_refused(tmp_path, monkeypatch, smol):
    """RH5. The registered rehearsal's folder with SmolLM2's tokenizer: its "real tokenizer" is checked on load."""
    monkeypatch.setenv("ABSPOS_CACHE", str(tmp_path / "cache"))
    rehearsal.register_rehearsals()
    spec = get_spec(f"{LLAMA_1B}-rehearsal")

    def smol_tokenizer(name, folder):
        for f in TOKENIZER:
            shutil.copy(smol / f, folder / f)

    folder = rehearsal.paper_layout(LLAMA_1B, rehearsal.build_root(spec))
    rehearsal.build_rehearsal(LLAMA_1B, "rehearsal", folder, save_tokenizer=smol_tokenizer)
    assert rehearsal.is_built(spec)
    for load in (weights.checked_paper_folder, lambda s: weights.load_pretrained(s, "float32", "cpu")):
        with pytest.raises(WrongWeights) as e:
            load(spec)
        assert f"{spec.name}: the tokenizer in {folder}" in one_line(e.value)


def nan_copy(smol: Path, dest: Path, tensor: str = "model.layers.20.self_attn.o_proj.weight") -> Path:
    """SmolLM2's converted folder with one value of ``tensor`` set to NaN (the rest linked)."""
    linked_copy(smol, dest, skip=("model.safetensors",))
    tensors = load_file(str(smol / "model.safetensors"))
    tensors[tensor][0, 0] = float("nan")
    save_file(tensors, str(dest / "model.safetensors"), metadata={"format": "pt"})
    return dest


@pytest.mark.long
def test_a_nan_in_real_weights_is_one_line_before_any_work(tmp_path, smol):
    """NW1. SmolLM2's real weights with one NaN: one line at selection (exit 4), never a verdict or a baseline; and a
    NaN that appears only once loaded (here: set after the folder's check) is refused at load."""
    folder = nan_copy(smol, tmp_path / "smol-nan")
    with pytest.raises(WrongWeights) as e:
        references.register(f"path:{folder}")
    assert "weights that are not finite (1 NaN or inf values in 1 tensor(s), first model.layers.20" in one_line(e.value)
    proc = claims("--models", f"path:{folder}", "-k", "EQ7 or T9a", "--baseline-dir", str(tmp_path / "baselines"))
    assert "weights that are not finite" in usage_line(proc) and not (tmp_path / "baselines").exists()
    spec = get_spec(SMOL)
    model = weights.random_init_model(get_spec("tiny-llama"))
    with torch.no_grad():
        next(model.parameters())[0, 0] = float("inf")
    with pytest.raises(WrongWeights, match="not finite once loaded"):
        weights.check_finite(spec, model, smol)


def test_weights_of_zeros_are_refused(tmp_path, smol):
    """NW2. Every tensor zero: refused in one line (it gave one held and one not held)."""
    folder = linked_copy(smol, tmp_path / "smol-zero", skip=("model.safetensors",))
    with safe_open(str(smol / "model.safetensors"), framework="pt") as f:
        zeros = {k: torch.zeros(f.get_slice(k).get_shape()) for k in f.keys()}
    save_file(zeros, str(folder / "model.safetensors"), metadata={"format": "pt"})
    with pytest.raises(WrongWeights) as e:
        references.register(f"path:{folder}")
    assert "holds weight matrices of zeros (" in one_line(e.value)


def test_recorded_published_hashes_decide(tmp_path, monkeypatch):
    """RH3, where the published files' sha256 is recorded (spec/paper_configs.PUBLISHED): weight files that differ are
    refused in one line naming the file; the published files pass (hashed once, then from the folder's record)."""
    from harness.model import checkpoint_checks
    from harness.spec.paper_configs import PUBLISHED

    monkeypatch.setenv("ABSPOS_CACHE", str(tmp_path / "cache"))
    folder = tmp_path / "Llama-3.2-1B"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"initializer_range": 0.02}))
    save_file({"w": torch.randn(8, 8) * 0.02}, str(folder / "model.safetensors"), metadata={"format": "pt"})
    digest = checkpoint_checks.file_hashes(folder, {}, log=lambda *_: None)["model.safetensors"]
    spec = REGISTRY[LLAMA_1B]
    monkeypatch.setitem(PUBLISHED, LLAMA_1B, {**PUBLISHED[LLAMA_1B], "weights_sha256": {"model.safetensors": "0" * 64}})
    with pytest.raises(WrongWeights) as e:
        checkpoint_checks.check_weights(spec, folder, log=lambda *_: None)
    assert "not the published checkpoint (model.safetensors: sha256 " in one_line(e.value)
    monkeypatch.setitem(PUBLISHED, LLAMA_1B, {**PUBLISHED[LLAMA_1B], "weights_sha256": {"model.safetensors": digest}})
    checkpoint_checks.check_weights(spec, folder, log=lambda *_: None)  # random weights, but the published file's hash
    said = []
    checkpoint_checks.check_weights(spec, folder, log=said.append)
    assert not said  # the hash is read from the folder's record


def minimal_results(model: str, **extra) -> dict:
    """A claims results.json of one held record on ``model``."""
    record = {
        "test": f"claims/test_s5_7_position0.py::test_T9a_position0_state_is_identical_across_prompts[{model}]",
        "claim": "T9a",
        "model": model,
        "outcome": "passed",
        "verdict": "held",
        "reason": "",
        "figures": [],
    }
    return {"run": f"run-{model}", "settings": {}, "models": [model], "versions": {}, "records": [record], **extra}


def write_run(folder: Path, results: dict) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "results.json").write_text(json.dumps(results))
    return folder


def test_a_job_pointing_at_another_models_results_is_failed(tmp_path):
    """MG10. job.json says gemma3-270m succeeded but its results hold smollm2-135m: gemma is failed, with why."""
    from harness.report.merge import merge

    smol_run = write_run(tmp_path / "smol" / "run-1", minimal_results(SMOL))
    job = tmp_path / "gemma"
    job.mkdir()
    (job / "job.json").write_text(
        json.dumps({"model": "gemma3-270m", "status": "succeeded", "results": str(smol_run / "results.json")})
    )
    merged = merge([job])
    failed = {f["model"]: f["reason"] for f in merged["merged"]["failed"]}
    assert set(failed) == {"gemma3-270m"} and f"hold {SMOL}, not gemma3-270m" in failed["gemma3-270m"]
    assert SMOL not in merged["models"] or not merged["records"]


# ---- P1: nothing measured is lost, and a partial run says so ---------------------------------------------------------

KILLER = '''
import os, signal
from pathlib import Path

def pytest_configure(config):
    """Kill this claims run's job (its parent, submitit's job process) and itself: as the OOM killer would."""
    parent = os.getppid()
    if b"submitit" in Path(f"/proc/{parent}/cmdline").read_bytes():
        os.kill(parent, signal.SIGKILL)
        os._exit(137)
'''


@pytest.mark.slow  # a killed claims run, 1 minute: weekly
@pytest.mark.long
def test_a_killed_job_in_a_reused_folder_is_failed_not_stale(tmp_path, monkeypatch, capsys):
    """SB9. The folder holds an earlier submission's succeeded job (and its run); this submission's job is killed
    before writing anything: it is failed, never the earlier one's success."""
    pytest.importorskip("submitit")
    from harness.submit import submit_command

    folder = tmp_path / "sub"
    earlier = write_run(folder / SMOL / "run-earlier", minimal_results(SMOL))
    (folder / SMOL / "job.json").write_text(
        json.dumps({"model": SMOL, "status": "succeeded", "results": str(earlier / "results.json"), "exit": 0})
    )
    (tmp_path / "plugins").mkdir()
    (tmp_path / "plugins" / "killer.py").write_text(KILLER)
    monkeypatch.setenv("PYTHONPATH", f"{tmp_path / 'plugins'}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    monkeypatch.chdir(ROOT)
    code = submit_command(
        ["--models", SMOL, "--executor", "local", "--folder", str(folder), "-k", "EQ7", "-p", "killer"]
    )
    out = capsys.readouterr().out
    status = json.loads((folder / SMOL / "job.json").read_text())
    assert status["status"] == "failed" and status["submission"], status
    assert f"{SMOL}: failed" in out and f"{SMOL}: succeeded" not in out, out
    assert code == 1  # merged, with a failed job


def test_a_merge_never_writes_into_an_input(tmp_path):
    """MG3. --out an input's folder (or a folder inside it; the input given as a folder or as its results.json) is refused, and the input is left as it was."""
    from harness.report.merge import MergeError, merge_command

    a = write_run(tmp_path / "a" / "run-a", minimal_results(SMOL))
    b = write_run(tmp_path / "b" / "run-b", minimal_results("gemma3-270m"))
    before = (a / "results.json").read_bytes()
    for given, out in ((a, a), (a, a / "merged"), (a / "results.json", a)):
        with pytest.raises(MergeError) as e:
            merge_command([given, b], out)
        assert "the merge would write over it: choose another --out" in one_line(e.value)
    assert (a / "results.json").read_bytes() == before and not (a / "report.md").exists()
    merge_command([a, b], tmp_path / "out")  # anywhere else: merged


STOP_IN_REPORT = '''
import os, signal

def pytest_configure(config):
    """A stop signal as the report starts to be written (what a scheduler's time limit does at the worst moment)."""
    from harness.report import write
    build = write.build

    def stopped(path):
        os.kill(os.getpid(), signal.SIGTERM)
        return build(path)

    write.build = stopped
'''


@pytest.mark.slow  # a claims run stopped at the report, 1.5 minutes: weekly; the signal tests cover a stop in a run
@pytest.mark.long
def test_a_stop_while_the_report_is_written_ends_like_ctrl_c(tmp_path):
    """SG1, SG2. SIGTERM while the report is being written: exit 2, the kept results.json named, the report's absence
    said, no traceback; the nightly's status step then uploads that run's results."""
    (tmp_path / "plugins").mkdir()
    (tmp_path / "plugins" / "stop_in_report.py").write_text(STOP_IN_REPORT)
    proc = claims(
        "--models", SMOL, "-k", "EQ7", "-p", "stop_in_report", "--report-dir", str(tmp_path / "reports"),
        "--baseline-dir", str(tmp_path / "baselines"), "--n-prompts", "12", "--seq-len", "32",
        "--n-probe-prompts", "20",
        env={"PYTHONPATH": f"{tmp_path / 'plugins'}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"},
    )  # fmt: skip
    out = proc.stdout + proc.stderr
    assert proc.returncode == 2 and "Traceback" not in out, out[-3000:]
    (run,) = [p.parent for p in (tmp_path / "reports").glob("*/results.json")]
    assert [r["verdict"] for r in json.loads((run / "results.json").read_text())["records"]] == ["held"]
    assert (
        f"abspos: interrupted by SIGTERM before the report was written: no report; the results are kept in "
        f"{run / 'results.json'}" in out
    )
    assert f"abspos results: {run / 'results.json'} (no report" in out
    assert not (run / "report.md").exists() and not (tmp_path / "reports" / "latest").exists()
    env = {
        **os.environ,
        "REPORT_DIR": str(tmp_path / "reports"),
        "MODEL": SMOL,
        "CLAIMS_OUTCOME": "failure",
        "JOB_STATUS": "failure",
    }
    upload = tmp_path / "upload"
    subprocess.run(
        [PY, str(ROOT / "scripts" / "nightly_job_status.py"), str(upload)], env=env, check=True, capture_output=True
    )
    assert (upload / "results.json").read_bytes() == (run / "results.json").read_bytes()
    job = json.loads((upload / "job.json").read_text())
    assert job["status"] == "succeeded" and "report was not built" in job["reason"]


def test_a_crashed_worker_is_recorded_against_its_test(tmp_path):
    """XD1. xdist reports a dead worker's test with when="???" (xdist.dsession.handle_crashitem): it is a harness
    error naming the crash, and a re-run on another worker keeps the crash in its record."""
    from harness.outcome.claim_result import ClaimResult
    from harness.outcome.verdict import Verdict
    from harness.run.records import RecordCollector
    from harness.spec.settings import Settings

    run = types.SimpleNamespace(stability_record=tmp_path / "none.json", requested=Settings(), models=(SMOL,))
    collector = RecordCollector(run)
    test = f"claims/test_s5_7_position0.py::test_T9a_position0_state_is_identical_across_prompts[{SMOL}]"
    crash = pytest.TestReport(
        nodeid=test,
        location=("claims/test_s5_7_position0.py", None, "claims/test_s5_7_position0.py"),
        keywords={},
        outcome="failed",
        longrepr=f"worker 'gw0' crashed while running {test!r}",
        when="???",
    )
    collector.pytest_runtest_logreport(crash)
    (record,) = collector.records
    assert record["verdict"] == "harness error" and "worker 'gw0' crashed" in record["reason"]
    rerun = pytest.TestReport(
        nodeid=test,
        location=crash.location,
        keywords={},
        outcome="passed",
        longrepr=None,
        when="call",
        user_properties=[ClaimResult(test, "T9a", SMOL, Verdict.HELD).as_property()],
    )
    collector.pytest_runtest_logreport(rerun)
    (record,) = collector.records
    assert record["verdict"] == "held" and "worker 'gw0' crashed" in record["crashed"]
    assert "crashed" in record["reason"] and "re-run" in record["reason"]


# ---- P3: a bad input is one line before any work ----------------------------------------------------------------------


@pytest.mark.long
def test_submit_checks_the_options_once_before_submitting(tmp_path, monkeypatch, capsys):
    """SB10. A bad pytest option is refused once, in one line, before any job is submitted or folder written."""
    pytest.importorskip("submitit")
    from harness.submit import submit_command

    monkeypatch.chdir(ROOT)
    folder = tmp_path / "sub"
    code = submit_command(
        ["--models", f"{SMOL},gemma3-270m", "--executor", "local", "--folder", str(folder), "--n-prompts", "3"]
    )
    err = capsys.readouterr().err
    assert code == 4 and "--n-prompts" in one_line(err) and "refused by pytest" in err
    assert not folder.exists()


def test_a_tokenizer_larger_than_the_embedding_is_refused(tmp_path, smol):
    """TK4. SmolLM2's weights (49,152 embedding rows) with Qwen2.5's 151k tokenizer: one line, not an IndexError."""
    qwen = weights.converted_folder(get_spec("qwen2.5-coder-0.5b"), log=lambda *a: None)
    folder = linked_copy(smol, tmp_path / "smol-qwentok", skip=TOKENIZER)
    for f in TOKENIZER:
        (folder / f).symlink_to(qwen / f)
    with pytest.raises(references.ReferenceError) as e:
        references.register(f"path:{folder}")
    assert "its tokenizer has 151,936 tokens and its embedding 49,152 rows" in one_line(e.value)


def submission(folder: Path, executor: str, jobs) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "submit.json").write_text(json.dumps({"executor": executor, "models": [SMOL], "jobs": jobs}))
    return folder


@pytest.mark.parametrize(
    "jobs", ["x", None, [{"model": SMOL}], [1]], ids=["a string", "missing", "no report_dir", "not objects"]
)
def test_a_damaged_submission_file_is_one_line(tmp_path, capsys, jobs):
    """SB4. submit.json whose "jobs" is not a list of job objects: one line, exit 4 (a usage error)."""
    from harness.submit import submit_command

    folder = submission(tmp_path / "sub", "local", jobs)
    if jobs is None:
        (folder / "submit.json").write_text(json.dumps({"executor": "local"}))
    assert submit_command(["--collect", str(folder)]) == 4
    assert "damaged" in one_line(capsys.readouterr().err)


@pytest.mark.parametrize(
    "args", [["--executor", "nosuch"], ["--gpus", "abc"], ["--time"]], ids=["executor", "gpus", "time"]
)
def test_submit_usage_errors_exit_4(tmp_path, args, capsys):
    """SB1. argparse's errors are usage errors (4), never "the merge was refused" (2); SB5: an unwritable --folder is
    said under --folder."""
    from harness.submit import submit_command

    with pytest.raises(SystemExit) as e:
        submit_command(["--models", SMOL, *args])
    assert e.value.code == 4
    assert "error:" in capsys.readouterr().err
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    code = submit_command(["--models", SMOL, "--executor", "local", "--folder", str(blocker / "sub")])
    err = capsys.readouterr().err
    assert code == 4 and one_line(err).startswith(f"abspos-claims submit: --folder {blocker / 'sub'}")


@pytest.mark.long
def test_require_weights_covers_rehearsals(tmp_path):
    """TK2. A rehearsal whose tokenizer source is altered: --require-weights refuses it (exit 4), naming the
    rehearsal; without it, its tests skip with the same reason."""
    cache = tmp_path / "cache"
    (cache / "tokenizer-sources").mkdir(parents=True)
    source = weights.cache_root() / "tokenizer-sources" / "llama3-tokenizer.model"
    data = bytearray(source.read_bytes())
    data[100] ^= 1
    (cache / "tokenizer-sources" / "llama3-tokenizer.model").write_bytes(bytes(data))
    model = f"{LLAMA_1B}-rehearsal"
    proc = claims("--models", model, "-k", "EQ7", "--require-weights", "--co", env={"ABSPOS_CACHE": str(cache)})
    line = usage_line(proc)
    assert f"{model} (built with {LLAMA_1B}: the llama3 tokenizer" in line and "is not the recorded file" in line


def test_full_size_builds_are_one_at_a_time_and_fit_first(tmp_path, monkeypatch, capsys):
    """RH10. Two full-size builds in one run are refused; a build larger than the free disk or memory is refused
    before anything is allocated; `abspos-claims models` says an unbuilt one is built on first use, not present."""
    from harness import cli
    from harness.run.selection import UsageError, model_problems, selected_models

    with pytest.raises(UsageError, match="full-size rehearsal builds are named one at a time"):
        selected_models("llama-3.2-1b-full-rehearsal,llama-3.1-8b-full-rehearsal", log=lambda *a: None)
    (name,) = selected_models("llama-3.1-8b-full-rehearsal", log=lambda *a: None)
    assert rehearsal.weights_bytes(LLAMA_8B, "full") > 30e9
    monkeypatch.setattr(rehearsal.shutil, "disk_usage", lambda p: types.SimpleNamespace(free=10**9))
    (problem,) = model_problems([REGISTRY[name]])
    assert "its build writes 32.1 GB of float32 weights" in one_line(problem) and "1.0 GB is free" in problem
    monkeypatch.setattr(rehearsal.shutil, "disk_usage", lambda p: types.SimpleNamespace(free=10**12))
    monkeypatch.setattr(rehearsal, "_memory_available", lambda: 8 * 10**9)
    with pytest.raises(WeightsUnavailable, match="holds 32.1 GB of float32 weights in memory"):
        rehearsal.ensure_built(REGISTRY[name], log=lambda *a: None)
    monkeypatch.setattr(rehearsal, "_memory_available", lambda: None)
    assert cli.weights_status(REGISTRY[name]).startswith("not built yet: built on first use (32.1 GB")


def test_a_cache_that_is_a_file_is_one_line(tmp_path):
    """NW3. ABSPOS_CACHE naming a file: one line at configure time (exit 4), not a 50-line error per test."""
    afile = tmp_path / "hostname"
    afile.write_text("x")
    proc = claims("--models", f"{LLAMA_1B}-rehearsal", "-k", "EQ7", "--co", env={"ABSPOS_CACHE": str(afile)})
    assert f"ABSPOS_CACHE={afile}: {afile} is a file, not a folder" in usage_line(proc)


def test_a_results_file_that_is_not_a_regular_file_is_one_line(tmp_path):
    """MG11. /dev/zero and a FIFO given as results: one line at once (exit 2), never read until killed or blocked."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for given, kind in (("/dev/zero", "a device"), (str(fifo), "a FIFO")):
        for command in (["merge", given, "--out", str(tmp_path / "out")], ["build", given]):
            proc = subprocess.run(
                [PY, "-m", "harness.report", *command], cwd=ROOT, capture_output=True, text=True, timeout=60
            )
            assert proc.returncode == 2, proc.stderr
            assert f"not a regular file ({kind})" in one_line(proc.stderr)


# ---- P4: nothing from a folder runs; outputs are safe to render ----------------------------------------------------

PICKLE = """
import os, pickle, sys

class Boom:
    def __reduce__(self):
        return (os.system, (f"touch {sys.argv[2]}",))

with open(sys.argv[1], "wb") as f:
    pickle.dump(("success", Boom()), f)
"""


def test_collect_never_unpickles_a_file_from_the_folder(tmp_path, capsys):
    """SB11. A SLURM submission folder whose result pickle runs code when unpickled: collect reads the job's state and
    its job.json, never the pickle."""
    pytest.importorskip("submitit")
    from harness.submit import submit_command

    folder = submission(tmp_path / "sub", "slurm", [{"model": SMOL, "job": "123", "report_dir": str(tmp_path / "r")}])
    (folder / "logs").mkdir()
    pwned = tmp_path / "PWNED"
    subprocess.run([PY, "-c", PICKLE, str(folder / "logs" / "123_0_result.pkl"), str(pwned)], check=True)
    code = submit_command(["--collect", str(folder)])
    assert not pwned.exists()
    assert code in (1, 2) and f"{SMOL}: failed: job 123 ended without results" in capsys.readouterr().out


HOSTILE = {
    "link": "[x](https://evil.example/x)",
    "image": "![pixel](https://tracker.example/p.png?leak=1)",
    "bare": "see https://evil.example/y",
}


def markdown_links(text: str) -> list[tuple[str, str]]:
    """(kind, target) of every link and image a GitHub-like Markdown renderer makes of ``text`` (markdown-it-py's
    gfm-like preset, linking bare addresses as GitHub does: schemes and www., no bare domains)."""
    markdown_it = pytest.importorskip("markdown_it")
    md = markdown_it.MarkdownIt("gfm-like")
    md.linkify.set({"fuzzy_link": False})
    out, stack = [], md.parse(text)
    while stack:
        token = stack.pop()
        stack += token.children or []
        if token.type == "link_open":
            out.append(("link", token.attrGet("href")))
        elif token.type == "image":
            out.append(("image", token.attrGet("src")))
    return out


def suites_own(kind: str, target: str) -> bool:
    """A link or image the report writes itself: an anchor, a figure beside it, a claim's decision on the run folder's
    methods page (or METHODS.md's, in a report built before the page was shipped with the run)."""
    if "://" in target or target.startswith("//"):
        return False
    return target.startswith(("#", "figures/", "methods.md#", "methods.html#")) or "METHODS.md" in target


@pytest.mark.slow  # a claims run on a crafted name: weekly; the escaping stays unit-tested in test_settings_before_work
def test_markdown_outputs_carry_no_link_or_image_from_names(tmp_path):
    """MG2, MI2. A model name, a run label, a job reason, a record's reason and the machine's CPU name carrying
    Markdown links, images and bare addresses: report.md and summary.md, single and merged, render none of them."""
    from harness.report.merge import merge_command
    from harness.report.write import build

    name = f"path-{HOSTILE['link']}"
    results = json.loads((ROOT / "reports" / "example" / "results.json").read_text().replace(SMOL, name))
    results["run"] = f"run {HOSTILE['image']}"
    results["provenance"]["machine"]["cpu"] = HOSTILE["image"]
    results["records"][0]["reason"] = " ".join(HOSTILE.values())
    run = write_run(tmp_path / "run", results)
    build(run / "results.json")
    job = tmp_path / "job"
    job.mkdir()
    (job / "job.json").write_text(json.dumps({"model": "gemma-x", "status": "failed", "reason": HOSTILE["image"]}))
    merge_command([run, job], tmp_path / "merged", allow_mixed=True)
    for folder in (run, tmp_path / "merged"):
        for file in ("report.md", "summary.md"):
            text = (folder / file).read_text()
            assert "evil.example" in text or file == "summary.md"  # the names are there, as text
            found = [(k, t) for k, t in markdown_links(text) if not suites_own(k, t)]
            assert found == [], (folder / file, found)
            assert "www." not in text.lower() or "www&#46;" in text


def test_the_example_reports_render_only_the_suites_links():
    """MI2 on what is committed: every link and image in the example reports is one the suite wrote."""
    for example in ("example", "example-ladder"):
        for file in ("report.md", "summary.md"):
            path = ROOT / "reports" / example / file
            if path.exists():
                found = [(k, t) for k, t in markdown_links(path.read_text()) if not suites_own(k, t)]
                assert found == [], (path, found)
