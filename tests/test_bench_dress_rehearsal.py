"""The nightly dress rehearsal benchmark (benchmarks/bench_dress_rehearsal.py): per-claim sums from a run's
records and each test's peak memory, the GPU estimate (layer-tokens at the device's rate plus the statistics seconds),
and (long) the whole script on the narrow Llama-3.2-1B rehearsal for a part of the selection."""

from __future__ import annotations

import json

import pytest

from benchmarks import bench_dress_rehearsal as dress


def _rec(test, claim, seconds, forward, tokens):
    return {"test": test, "claim": claim, "seconds": seconds, "forward_seconds": forward, "layer_tokens": tokens}


def test_per_claim_sums_its_tests_and_keeps_their_largest_peak():
    records = [
        _rec("a[m]", "T2", 10.0, 6.0, 1000),
        _rec("b[m]", "T2", 5.0, 1.0, 500),
        _rec("c[m]", "T7", 20.0, 15.0, 4000),
        _rec("d", None, 0.1, 0.0, 0),  # a test of no claim is left out
    ]
    rows = dress.per_claim(records, {"a[m]": 100, "b[m]": 300})
    assert [r["claim"] for r in rows] == ["T2", "T7"]
    t2, t7 = rows
    assert (t2["tests"], t2["seconds"], t2["forward_seconds"], t2["layer_tokens"]) == (2, 15.0, 7.0, 1500)
    assert t2["statistics_seconds"] == 8.0 and t2["peak_kib"] == 300
    assert t7["peak_kib"] is None  # no peak read: shown as "—", never as 0
    assert dress.gpu_estimate(t7, None) is None
    assert dress.gpu_estimate(t7, 1000.0) == pytest.approx(4000 / 1000 + 5.0)
    md = dress.table(rows, 1000.0).splitlines()
    assert md[0].endswith("| GPU estimate s |") and md[-1].startswith("| all | 3 | 35 | 22 | 13 | 5,500 |")
    assert "| T7 | 1 | 20 | 15 | 5 | 4,000 | — | 9 |" in md
    assert "GPU" not in dress.table(rows, None)
    on_gpu = dress.per_claim(records, {"a[m]": 100}, {"a[m]": 2 * 2**20, "b[m]": 3 * 2**20})  # measured on a GPU
    assert [r["peak_gpu_kib"] for r in on_gpu] == [3 * 2**20, None]
    md = dress.table(on_gpu, None).splitlines()
    assert md[0].endswith("| peak RSS | peak GPU |") and "GPU estimate" not in md[0]
    assert md[2].endswith("| 3.0 GiB |") and md[3].endswith("| — |") and md[-1].endswith("| 3.0 GiB |")


@pytest.mark.slow  # a benchmark end to end: weekly
@pytest.mark.long
def test_the_dress_rehearsal_runs_a_selection_and_writes_its_table(tmp_path):
    code = dress.main(
        ["--size", "rehearsal", "--seq-len", "128", "--n-prompts", "12", "-k", "T9a or T9b", "--out", str(tmp_path)]
    )
    assert code == 0
    summary = json.loads((tmp_path / "dress.json").read_text())
    assert summary["model"] == "llama-3.2-1b-rehearsal" and summary["outcomes"] == {"rehearsed": 2}
    assert [r["claim"] for r in summary["claims"]] == ["T9a", "T9b"]
    assert all(r["peak_kib"] and r["peak_kib"] > 100_000 for r in summary["claims"])  # a loaded model's resident set
    assert "| all | 2 |" in (tmp_path / "dress.md").read_text()


def _summary(model, layers, heads, claims):
    settings = {"n_prompts": 32, "seq_len": 512, "seed": 0}
    out = {"model": model, "rehearses": "llama-3.2-1b", "settings": settings, "machine": "m", "run": model}
    return out | {"shape": {"layers": layers, "heads": heads}, "claims": claims}


def _row(claim, seconds, forward, tokens, peak=None, tests=1):
    out = {"claim": claim, "tests": tests, "seconds": seconds, "forward_seconds": forward, "layer_tokens": tokens}
    return out | {"statistics_seconds": seconds - forward, "peak_kib": peak}


def test_the_full_build_estimate_scales_the_narrow_workload_and_keeps_what_was_measured():
    from benchmarks import dress_estimate

    narrow = _summary("n", 4, 4, [_row("T2", 3, 1, 4000), _row("T6", 12, 2, 8000), _row("T10", 5, 1, 2000)])
    full = _summary("f", 16, 32, [_row("T2", 100, 80, 16000, peak=6 * 2**20)])  # rate: 200 layer-tokens/s
    rows = {r["claim"]: r for r in dress_estimate.estimate(narrow, full, device_rate=1000.0)}
    t2, t6 = rows["T2"], rows["T6"]  # workload from the narrow run: x 16/4 layer-tokens, x (32 x 16)/(4 x 4) statistics
    assert t2["layer_tokens"] == 16000 and t2["measured"]["seconds"] == 100  # measured beside it
    assert t6["layer_tokens"] == 32000 and t6["statistics_seconds"] == pytest.approx(320) and t6["measured"] is None
    assert t6["cpu_seconds"] == pytest.approx(32000 / 200 + 320)  # at the full build's measured 200 layer-tokens/s
    assert t6["gpu_seconds"] == pytest.approx(32000 / 1000 + 320)
    assert rows["T10"]["layer_tokens"] == 2000  # T10's passes stop after layer 4 in both builds
    md = dress_estimate.table(list(rows.values()))
    assert "| T6 | 1 | 32,000 | 320 | 8.0 min | 5.9 min | — |" in md
    assert "| T2 | 1 | 16,000 | 64 | 2.4 min | 1.3 min | 1.7 min, 16,000, 6.0 GiB |" in md
    assert md.splitlines()[-1].startswith("| all | 3 | 50,000 |") and md.endswith(
        "peak 6.0 GiB over the measured claims only |"
    )
    every = dress_estimate.estimate(narrow, _summary("f", 16, 32, [_row(c, 360, 50, 1000, peak=2**20) for c in rows]))
    assert dress_estimate.table(every).endswith("| 0.3 h in parts, peak 1.0 GiB (every claim measured) |")
    with pytest.raises(SystemExit):  # two runs at different settings cannot be combined
        other = {**full, "settings": {**full["settings"], "seq_len": 128}}
        dress_estimate.main([_dump(narrow), _dump(other)])


def _dump(obj) -> str:
    import tempfile

    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(obj, f)
    return f.name


def test_full_build_runs_of_parts_of_the_selection_count_as_one():
    from benchmarks import dress_estimate

    a = _summary("f", 16, 32, [_row("T2", 100, 80, 16000)])
    b = _summary("f", 16, 32, [_row("T6", 50, 40, 8000), _row("T2", 999, 1, 1)])
    one = dress_estimate.pieces([a, b])
    assert [(r["claim"], r["seconds"]) for r in one["claims"]] == [("T2", 100), ("T6", 50)]  # the first run's T2
    with pytest.raises(ValueError, match="other settings"):
        dress_estimate.pieces([a, {**b, "settings": {**b["settings"], "seq_len": 128}}])


def _line(test, claim, seconds, forward, tokens, peak, gpu=None, load=0.0):
    out = {"test": test, "claim": claim, "seconds": seconds, "forward_seconds": forward, "layer_tokens": tokens}
    out |= {"load_seconds": load, "peak_kib": peak, "reset": True}
    return out | ({"peak_gpu_kib": gpu} if gpu is not None else {})


def test_the_table_is_rewritten_from_the_tests_finished_as_each_ends(tmp_path):
    """The child's plugin leaves a per-claim table after every test (a stop of any kind keeps it): seconds less the
    model's load, forward and statistics seconds, layer-tokens, peak host and GPU memory."""
    peaks = tmp_path / "peaks.jsonl"
    plugin = dress.PeakMemory(str(peaks))
    lines = [
        _line("a[m]", "T5", 12.0, 2.0, 100, 2**20, gpu=3 * 2**20, load=5.0),
        _line("b[m]", "T5", 4.0, 1.0, 50, 2 * 2**20, gpu=2**20),
        _line("c[m]", "T6", 3.0, 2.5, 80, 2**20, gpu=2**20),
    ]
    for k, line in enumerate(lines, 1):
        with open(peaks, "a") as f:
            f.write(json.dumps(line) + "\n")
        plugin.written(line)
        md = (tmp_path / "dress.md").read_text()
        assert md.startswith(f"Partial table: {k} tests finished so far")
    rows = {r.split(" | ")[0].strip("| "): r for r in md.splitlines() if r.startswith("| T") or r.startswith("| all")}
    assert rows["T5"].startswith("| T5 | 2 | 11 | 3 | 8 | 150 | 2.0 GiB | 3.0 GiB |")  # 12 - 5 s of loading
    assert rows["all"].startswith("| all | 3 | 14 | 6 | 8 | 230 | 2.0 GiB | 3.0 GiB |")  # 8.5 s, to even


@pytest.mark.slow  # claims on the narrow rehearsal build, stopped by a signal: weekly
@pytest.mark.long
def test_the_gpu_checks_dry_run_keeps_its_table_through_a_sigterm(tmp_path):
    """``gpu_check.sh --dry-run`` (the nightly's check on a CPU: the narrow build at 12 prompts x 64 tokens) told to
    stop by SIGTERM once two tests have ended: it stops the run the way its time limit does, the run's own table
    replaces the partial one with the tests that finished, it exits 143, and nothing it started is left running."""
    import os
    import signal
    import subprocess
    import time

    from benchmarks.bench_dress_rehearsal import ROOT

    cmd = ["bash", str(ROOT / "benchmarks" / "gpu_check.sh"), "--dry-run", "--out", str(tmp_path), "--budget", "600"]
    proc = subprocess.Popen(
        [*cmd, "--", "-k", "EQ2 or T5 or T6 or T11"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    peaks, md = tmp_path / "dress-1b" / "peaks.jsonl", tmp_path / "dress-1b" / "dress.md"
    deadline = time.time() + 480
    while time.time() < deadline and (not peaks.is_file() or len(peaks.read_text().splitlines()) < 2):
        assert proc.poll() is None, proc.stdout.read()
        time.sleep(1)
    assert md.read_text().startswith("Partial table:")  # written as the tests ended, before any stop
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=240)
    assert proc.returncode == 143, out
    assert "SIGTERM: stopping" in out
    table = md.read_text()
    assert table.startswith("Dress rehearsal of llama-3.2-1b") and "interrupted" in table.splitlines()[0]
    assert "| EQ2 | 1 |" in table
    with pytest.raises(ProcessLookupError):
        os.killpg(proc.pid, 0)
