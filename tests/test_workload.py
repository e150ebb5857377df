"""Forward-pass booking (what a run spent where) and the nightly runtime estimate built on it."""

import numpy as np
import pytest
import torch

from benchmarks import bench_nightly
from harness.capture import forward as cap
from harness.capture.progress import Progress
from harness.capture.workload import Workload
from harness.model.attention import register_attention
from harness.model.hooks import HookedModel
from harness.model.weights import random_init_model
from harness.report.timing import time_accounting
from harness.spec.models import get_spec


@pytest.fixture(scope="module")
def tiny():
    register_attention()
    spec = get_spec("tiny-llama")
    return HookedModel(random_init_model(spec, seed=0), spec)


def test_capture_books_tokens_times_layers_run(tiny):
    ids = np.random.default_rng(0).integers(3, 250, size=(3, 16))
    read = {"blocks.0.hook_resid_post": cap.norms}
    work = Workload()
    s0, lt0, _ = work.totals()
    cap.capture(tiny, ids, read, batch_size=2, workload=work)
    s1, lt1, _ = work.totals()
    assert lt1 - lt0 == 3 * 16 * tiny.n_layers and s1 > s0
    cap.capture(tiny, ids, read, batch_size=2, stop_after=0, workload=work)  # only layer 0 runs
    assert work.totals()[1] - lt1 == 3 * 16 * 1
    assert work.layer_tokens["tiny-llama"] == 3 * 16 * (tiny.n_layers + 1)
    cap.capture(tiny, ids, read, batch_size=2)  # no workload handed: booked nowhere
    assert work.totals()[1] == 3 * 16 * (tiny.n_layers + 1)


def test_the_floor_counts_each_prompt_once_per_condition_and_depth():
    """The floor: a prompt under one condition and depth once, whether run again alone or inside a larger set."""
    w = Workload()
    ids = np.arange(64).reshape(8, 8)
    w.add("m", 1.0, 8 * 8 * 2, ids, "causal", 2)
    w.add("m", 1.0, 4 * 8 * 2, ids[:4], "causal", 2)  # rows of the first pass: nothing new
    w.add("m", 1.0, 8 * 8 * 2, ids, "bidirectional", 2)  # another condition
    w.add("m", 1.0, 8 * 8 * 1, ids, "causal", 1)  # another depth
    w.add("m", 1.0, 2 * 8 * 2, np.vstack([ids[:1], ids[:1] + 100]), "causal", 2)  # one new prompt
    assert w.totals()[1:] == (128 + 64 + 128 + 64 + 32, 128 + 128 + 64 + 16)


RECORDS = [
    {
        "model": "gemma3-270m",
        "seconds": 10.0,
        "forward_seconds": 4.0,
        "layer_tokens": 1000,
        "shape": {"layers": 18, "heads": 4},
    },
    {
        "model": "gemma3-270m",
        "seconds": 2.0,
        "forward_seconds": 0.0,
        "layer_tokens": 0,
        "shape": {"layers": 18, "heads": 4},
    },
    {"model": "smollm2-135m", "seconds": 3.0, "forward_seconds": 0.0, "layer_tokens": 0},
    {"model": None, "seconds": 0.01, "forward_seconds": 0.0, "layer_tokens": 0},  # a skip: no row
]


def test_time_accounting_per_model():
    rows = {r[0]: r[1:] for r in time_accounting(RECORDS)}
    assert rows["gemma3-270m"] == ["12", "4", "1,000", "1,000", "1.000", "250", "8"]  # no floor booked: the run
    assert rows["smollm2-135m"] == ["3", "0", "0", "0", "—", "—", "3"]  # no forward pass: no throughput
    assert "—" not in rows


def test_nightly_workload_reads_the_booking():
    assert bench_nightly.workload({"run": "r", "records": RECORDS[:2]}) == {"gemma3-270m": (1000, 8.0, 18, 4)}
    with pytest.raises(SystemExit, match="predates forward-pass booking"):
        bench_nightly.workload({"run": "old", "records": [{"model": "x", "seconds": 1.0}]})


def test_nightly_throughput_is_measured_on_a_stand_in():
    rate = bench_nightly.throughput("tiny-llama", "cpu", "float32", seq_len=32, batches=1, n_pairs=64)
    assert np.isfinite(rate) and rate > 0


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_random_init_model_is_built_in_its_dtype_and_restores_the_default(dtype):
    model = random_init_model(get_spec("tiny-qwen2"), seed=0, dtype=dtype)
    assert {p.dtype for p in model.parameters()} == {dtype}
    assert torch.get_default_dtype() == torch.float32


@pytest.mark.parametrize("tty", [True, False])
def test_progress_shows_long_captures_only_in_place_on_a_terminal_and_as_one_line_in_a_log(monkeypatch, tty):
    from harness.capture import progress

    lines, clock = [], iter([0.0, 0.5, 1.0, 0.0, 3.0, 6.0])  # a short capture (1 s), then a long one (6 s)
    monkeypatch.setattr(progress.time, "time", lambda: next(clock))
    shown = Progress(write=lines.append, tty=tty)
    short = shown.start("m short", 16)
    short.update(8), short.update(16)
    long = shown.start("m long", 16)
    long.update(8), long.update(16)
    done = "[abspos] m long: 16 prompts in 6.0s"
    if tty:
        assert lines == ["\r[abspos] m long: 8/16 prompts, 3s, ~3s left\x1b[K", f"\r{done}\x1b[K\n"]
    else:
        assert lines == [f"{done}\n"]
