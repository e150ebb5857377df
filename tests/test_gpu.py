"""The GPU tier (``pytest tests -m gpu``), where torch sees a CUDA device; collected everywhere (CI included, so it
cannot rot) and skipped with one line where none is visible. It checks what only a GPU can show: the rehearsal tier
on CUDA in float32 and bfloat16 (every claim reaches its outcome, no harness error), the capture on CUDA equal to the
CPU's in float32 on a tiny and a rehearsal model, the fused pair read equal to eager attention on CUDA, each xdist
worker on its GPU, and a model split by accelerate's ``device_map`` (forced by ``$ABSPOS_GPU_MEMORY_GIB``) giving the
figures of the unsplit one. ``benchmarks/gpu_check.sh`` runs it, then the dress rehearsal, from an offline bundle.
"""

from __future__ import annotations

import json
import os
import subprocess

import numpy as np
import pytest
import torch
from pytest_runs import ROOT, run_pytest
from test_rehearsal_tier import not_rehearsed

from harness.capture.corpus import PromptSet
from harness.capture.plan import Plan
from harness.capture.progress import Progress
from harness.capture.reads import PatternAtPairs, ResidNorms, Run, SinkProfile
from harness.capture.session import Session
from harness.model import attention, devices, weights
from harness.model.edits import Bidirectional, ZeroHeads
from harness.model.rehearsal import SUFFIX, register_rehearsals
from harness.spec.models import PAPER, WeightsUnavailable, get_spec, names
from harness.spec.settings import Settings

NO_GPU = "no CUDA device visible (torch.cuda.is_available() is False): the GPU tier runs where one is, `pytest -m gpu`"


def gpu(test):
    """A test of the GPU tier: marked ``gpu``, skipped with one line where no CUDA device is visible."""
    return pytest.mark.gpu(pytest.mark.skipif(not torch.cuda.is_available(), reason=NO_GPU)(test))


def needs_weights(*models: str) -> None:
    """Skip (one line) where a bundled model's weights are not installed: a GPU node given only the checkout and the
    tokenizers, not the bundle (``benchmarks/gpu_check.sh`` without ``--bundle``)."""
    for name in models:
        try:
            weights.ensure_available(get_spec(name))
        except WeightsUnavailable as e:
            pytest.skip(f"{name}'s weights are not installed here: {e}")


pytestmark = pytest.mark.usefixtures("restore_registry")  # rehearsals registered by a test are removed after it


N, SEQ = 8, 64
READS = (PatternAtPairs(), ResidNorms(), SinkProfile())
REHEARSAL = PAPER[0].name + SUFFIX  # Llama-3.2-1B's narrow build: its architecture, random weights, real tokenizer


def session_on(device: str, name: str, dtype: str = "float32", n_pairs: int = 400) -> tuple[Session, object]:
    """A session on ``device`` with ``name`` loaded; a tiny model (no tokenizer) gets prompts of random ids. A
    rehearsal is registered for the test only (``restore_registry``: the tests after it see the registry as it was)."""
    if name.endswith(SUFFIX):
        register_rehearsals()
    s = Session(
        Settings(n_prompts=N, seq_len=SEQ, n_pairs=n_pairs, n_probe_prompts=16, n_boot=20, device=device, dtype=dtype),
        log=lambda *a: None,
        progress=Progress(enabled=False),
        plan=Plan(),
    )
    model = s.model(name)
    if model.tokenizer is None:
        ids = np.random.default_rng(0).integers(3, 250, size=(N, SEQ))
        s._prompts[(name, "topic", SEQ, N)] = PromptSet(ids, np.repeat(np.arange(4), N // 4), ("a", "b", "c", "d"), "t")
    return s, model


def capture(device: str, name: str, *edits, reads=READS, **kw) -> list[np.ndarray]:
    s, model = session_on(device, name, **kw)
    out = s.capture(model, Run(s.prompts(model), edits), *reads)
    return [c.values for c in (out if isinstance(out, tuple) else (out,))]


@gpu
@pytest.mark.parametrize("name", [names("tiny")[0], REHEARSAL])
@pytest.mark.parametrize("edits", [(), (Bidirectional(),), (ZeroHeads([(0, 1)]),)], ids=["causal", "bi", "zero"])
def test_the_capture_on_cuda_equals_the_cpu_capture_in_float32(name, edits):
    """Pair weights, residual norms and sink profiles: the same prompts, edits and reads on both devices."""
    for on_cpu, on_gpu, read in zip(capture("cpu", name, *edits), capture("cuda", name, *edits), READS):
        np.testing.assert_allclose(on_gpu, on_cpu, rtol=1e-4, atol=1e-5, err_msg=type(read).__name__)


@gpu
@pytest.mark.parametrize("edits", [(), (Bidirectional(),), (ZeroHeads([(0, 1)]),)], ids=["causal", "bi", "zero"])
def test_the_fused_pair_read_equals_eager_attention_on_cuda(edits, monkeypatch):
    """The pair weights from the fused kernel's logsumexp (which must serve them) equal eager attention's."""
    served = []
    real = attention.pairs_attention
    monkeypatch.setattr(attention, "pairs_attention", lambda *a: served.append(real(*a)) or served[-1])
    s, model = session_on("cuda", REHEARSAL, n_pairs=50)
    run = Run(s.prompts(model), edits)
    fused = s.capture(model, run, PatternAtPairs()).values
    assert served and all(out is not None for out in served)
    eager_hooks = {f"blocks.{layer}.attn.hook_scores": lambda v, h: None for layer in range(model.n_layers)}
    s_eager, eager_model = session_on("cuda", REHEARSAL, n_pairs=50)
    with eager_model.hooks(eager_hooks):  # a scores read forces the eager path in every layer
        eager = s_eager.capture(eager_model, Run(s_eager.prompts(eager_model), edits), PatternAtPairs()).values
    np.testing.assert_allclose(fused, eager, atol=1e-6, rtol=0)


@gpu
def test_each_xdist_worker_runs_on_its_gpu_round_robin():
    n = torch.cuda.device_count()
    for k in range(2 * n):
        device = devices.resolve_device("cuda", f"gw{k}", n)
        assert device == f"cuda:{k % n}"
        assert torch.ones(3, device=device).sum().item() == 3.0


@gpu
@pytest.mark.long
def test_two_workers_run_two_models_on_the_gpus(tmp_path):
    """-n 2 --device cuda: each model's tests on one worker (loadgroup, the default here), each worker on a GPU."""
    needs_weights("smollm2-135m", "gemma3-270m")
    r = run_pytest(
        *("--models", "smollm2-135m,gemma3-270m", "-k", "T9a or T9b", "-n", "2", "--device", "cuda"),
        *("--report-dir", str(tmp_path), "--baseline-dir", str(tmp_path / "b"), "-p", "no:randomly", "-q"),
    )
    assert r.returncode in (0, 1), r.stdout[-3000:] + r.stderr[-2000:]
    records = json.loads(next(tmp_path.glob("run-*/results.json")).read_text())["records"]
    assert {x["model"] for x in records} == {"smollm2-135m", "gemma3-270m"}
    assert not [x["test"] for x in records if x["verdict"] == "harness error"]


@gpu
def test_a_model_split_by_device_map_gives_the_figures_of_the_unsplit_one(monkeypatch):
    needs_weights("smollm2-135m")
    whole = capture("cuda", "smollm2-135m")
    monkeypatch.setenv(devices.MEMORY_CAP_ENV, "0.2")  # 135M float32 parameters are 0.54 GB: most go to the CPU
    s, model = session_on("cuda", "smollm2-135m")
    placed = {str(d) for d in getattr(model.hf, "hf_device_map", {}).values()}
    assert "cpu" in placed and placed - {"cpu"}, placed  # split between the GPU and the CPU
    split = [c.values for c in s.capture(model, Run(s.prompts(model)), *READS)]
    for a, b, read in zip(whole, split, READS):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6, err_msg=type(read).__name__)


@gpu
@pytest.mark.long
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_every_claim_reaches_its_outcome_on_every_paper_architecture_on_cuda(tmp_path, dtype):
    """The rehearsal tier (tests/test_rehearsal_tier.py) on the GPU, in both precisions the nightly may use."""
    proc = run_pytest(
        *("--models", "rehearsal", "--device", "cuda", "--dtype", dtype, "-p", "no:randomly", "-q"),
        *("--report-dir", str(tmp_path), "--baseline-dir", str(tmp_path / "b")),
        timeout=1800,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    out = proc.stdout[-4000:] + proc.stderr[-2000:]
    found = list(tmp_path.glob("run-*/results.json"))
    assert found, out
    results = json.loads(found[0].read_text())
    assert results["settings"]["device"].startswith("cuda") and results["settings"]["dtype"] == dtype
    assert not not_rehearsed(results["records"]), out
    assert proc.returncode == 0, out


def test_the_tiers_helpers_run_here_on_the_cpu():
    """Where no GPU is, the tier's own helpers still run (on the CPU), so a change of the harness's API breaks this
    file in CI, not on the first GPU it meets."""
    pairs, norms, sinks = capture("cpu", names("tiny")[0], ZeroHeads([(0, 1)]))
    assert pairs.shape[0] == norms.shape[0] == sinks.shape[0] == N
    assert not_rehearsed([]) == []


@pytest.mark.long
@pytest.mark.skipif(torch.cuda.is_available(), reason="a GPU is visible: benchmarks/gpu_check.sh runs in full there")
def test_the_gpu_check_says_in_one_line_where_no_gpu_is_and_keeps_its_provenance(tmp_path):
    """benchmarks/gpu_check.sh on a machine without CUDA: provenance written, the tier collected and skipped, no
    dress rehearsal started, exit 1 with one line saying why."""
    r = subprocess.run(
        ["bash", str(ROOT / "benchmarks" / "gpu_check.sh"), "--out", str(tmp_path), "--budget", "120"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 1, r.stdout + r.stderr
    assert r.stderr.strip().splitlines()[-1].startswith("[gpu-check] no CUDA device visible")
    assert json.loads((tmp_path / "provenance.json").read_text())["cuda_available"] is False
    tier = (tmp_path / "tier.log").read_text()
    assert " skipped" in tier and "failed" not in tier and "error" not in tier.lower()
    assert not list(tmp_path.glob("dress-*"))


@gpu
def test_a_synthetic_model_trains_on_cuda_under_bf16_autocast(tmp_path, monkeypatch):
    """The related paper's models train on the GPU as the paper size will (bf16 autocast, the data on the device)."""
    from harness.synthetic.train import SyntheticSpec, train

    monkeypatch.setenv("ABSPOS_CACHE", str(tmp_path))
    trained = train(SyntheticSpec("task1", "rope", "authors", "smoke"), device="cuda", log=lambda line: None)
    assert trained.info["device"] == "cuda" and trained.info["losses"][-1] < trained.info["losses"][0]
    assert next(trained.model.parameters()).device.type == "cuda"
