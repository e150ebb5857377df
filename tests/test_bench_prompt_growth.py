"""The statistics' growth with prompts (benchmarks/bench_prompt_growth.py) and the nightly estimate that reads it
(benchmarks/bench_nightly.py): the fits, a row from a child's per-test lines, the projection to a paper model, the
refusal before any work, the table kept when the run is stopped."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from types import SimpleNamespace

import pytest

from benchmarks import bench_nightly
from benchmarks import bench_prompt_growth as growth

ROOT = growth.ROOT


def _row(claim, n, stats_cpu, peak, tokens=1000, model="smollm2-135m", seq=512, status="ok", held=0.1):
    return {
        "model": model,
        "claim": claim,
        "n_prompts": n,
        "seq_len": seq,
        "status": status,
        "tests": 1,
        "outcomes": {"passed": 1},
        "layer_tokens": tokens,
        "forward_seconds": 1.0,
        "forward_cpu_seconds": 1.0,
        "statistics_seconds": 2 * stats_cpu,
        "statistics_cpu_seconds": stats_cpu,
        "process_wall_seconds": 9.0,
        "process_cpu_seconds": 5.0,
        "peak_rss_gib": peak,
        "test_peak_rss_gib": peak,
        "peak_gpu_gib": None,
        "held_gib": held,
        "when": "",
        "load": 1.0,
    }


def test_the_fits_recover_a_planted_exponent_and_line():
    k, c = growth.fit_power([16, 32, 64], [2 * 16**1.5, 2 * 32**1.5, 2 * 64**1.5])
    assert k == pytest.approx(1.5) and c == pytest.approx(2.0)
    b, a = growth.fit_line([16, 32, 64], [1.0 + 0.01 * n for n in (16, 32, 64)])
    assert (b, a) == (pytest.approx(0.01), pytest.approx(1.0))
    assert growth.fit_power([16], [3.0]) is None and growth.fit_line([16, 16], [1.0, 2.0]) is None


def test_a_row_sums_its_claims_tests_and_says_why_it_has_none():
    usage = SimpleNamespace(ru_utime=4.0, ru_stime=1.0, ru_maxrss=2 * 2**20)
    line = {"claim": "T5", "seconds": 10.0, "cpu_seconds": 6.0, "forward_seconds": 3.0, "forward_cpu_seconds": 2.0}
    line |= {"layer_tokens": 100, "load_seconds": 2.0, "load_cpu_seconds": 1.0, "peak_kib": 2**20, "held_bytes": 2**29}
    other = {**line, "claim": "T6"}
    row = growth.row_of("m", "T5", 16, 128, [line, line, other], 0, "ok", 30.0, usage, 0)
    assert (row["tests"], row["layer_tokens"], row["statistics_seconds"], row["statistics_cpu_seconds"]) == (
        2,
        200,
        10.0,
        6.0,
    )
    assert row["process_cpu_seconds"] == 5.0 and row["peak_rss_gib"] == 2.0 and row["held_gib"] == 0.5
    none = growth.row_of("m", "T7", 16, 128, [line], 0, "ok", 1.0, usage, 0, tail="no tests ran")
    assert none["status"].startswith("no test of the claim ran")
    crashed = growth.row_of("m", "T5", 16, 128, [line], 3, "ok", 1.0, usage, 0, tail="INTERNALERROR x")
    assert crashed["status"] == "pytest exited 3: INTERNALERROR x"


def test_the_projection_scales_by_prompts_as_fitted_and_by_heads_and_layers():
    rows = [_row("T5", n, 0.01 * n**1.2, 1.0 + 0.002 * n, held=0.1 + 0.001 * n) for n in (16, 32, 64)]
    fit = growth.fits(rows)[("smollm2-135m", "T5", 512)]
    assert fit["cpu"][0] == pytest.approx(1.2)
    pr = growth.project(fit, "smollm2-135m", "llama-3.2-1b", 512)
    scale = 16 * 32 / (30 * 9)  # the 1B's layers x heads over SmolLM2's
    assert pr["scale"] == pytest.approx(scale)
    assert pr["statistics_cpu_seconds"] == pytest.approx(0.01 * 512**1.2 * scale)
    held_at_512 = 0.1 + 0.001 * 512  # the rows' held line; the rest of the last peak (64 prompts) as it was
    assert pr["host_gib"] == pytest.approx((1.0 + 0.002 * 64 - (0.1 + 0.001 * 64)) + held_at_512 * scale)
    md = growth.table(rows, (512, 512))
    assert "| smollm2-135m | T5 | 512 | 16,32,64 | 1.20 |" in md
    assert "not projected (512 tokens)" not in md and "not projected" in growth.table(rows, (512, 256))


def test_a_design_projected_past_the_limit_is_refused_in_one_line_before_any_work(tmp_path, capsys):
    rows = [_row("T5", n, 1.0, 1.0 + 0.01 * n, seq=128) for n in (16, 32)]
    line = growth.refusal(rows, "smollm2-135m", "T5", 512, 128, 4.0)
    assert "projected peak 6.1 GiB (the line through its peaks at [16, 32] prompts) exceeds --max-gib 4" in line
    assert growth.refusal(rows, "smollm2-135m", "T5", 64, 128, 4.0) is None
    # no rows yet: the capture's byte estimate (SmolLM2 at 512 x 512: the pair capture in float32, the null's float64 copy)
    code = growth.main(
        ["--models", "smollm2-135m", "--claims", "T5", "--counts", "512", "--seq-len", "512", "--max-gib", "6"]
        + ["--out", str(tmp_path)]
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "exceeds --max-gib 6; not run" in err[0]
    assert not (tmp_path / "growth.jsonl").exists()
    with pytest.raises(SystemExit):
        growth.main(["--models", "no-such-model", "--out", str(tmp_path)])
    with pytest.raises(SystemExit):
        growth.main(["--counts", "10", "--out", str(tmp_path)])  # not a multiple of 4: the run's own refusal


def test_rows_measured_again_replace_the_earlier(tmp_path):
    path = tmp_path / "growth.jsonl"
    path.write_text(json.dumps(_row("T5", 16, 1.0, 1.0)) + "\n" + json.dumps(_row("T5", 16, 2.0, 1.5)) + "\n")
    (only,) = growth.read_rows(path)
    assert only["statistics_cpu_seconds"] == 2.0


def test_the_nightly_estimate_reads_the_growth_rows_and_scales_by_prompts():
    narrow = [_row("T5", n, 0.5 * n, 1.0, tokens=100 * n, model="llama-3.2-1b-rehearsal") for n in (16, 32)]
    narrow += [_row("T10", n, 1.0, 1.0, tokens=5000, model="llama-3.2-1b-rehearsal") for n in (16, 32)]
    other = [_row("T5", n, 99.0, 1.0, model="smollm2-135m") for n in (16, 32)]
    claims = bench_nightly.projected_claims("llama-3.2-1b", narrow + other, 512)
    t5, t10 = claims["T5"], claims["T10"]
    # the passes from the paper model's own rehearsal (its architecture), a line in prompts, x layers
    assert t5["source"].startswith("passes llama-3.2-1b-rehearsal") and "statistics smollm2-135m" in t5["source"]
    assert t5["layer_tokens"] == pytest.approx(100 * 512 * 16 / 4)
    # the statistics from the model nearest the 1B's 512 heads (SmolLM2's 270; k = 0 here), x heads x layers
    assert t5["statistics_seconds"] == pytest.approx(99.0 * (16 * 32) / (30 * 9), rel=1e-9)
    assert t10["layer_tokens"] == pytest.approx(5000)  # fixed in prompts; its passes stop after layer 4 in both
    # T10's statistics read the first four layers: x heads only (32 / 4), k = 0
    assert t10["statistics_seconds"] == pytest.approx(1.0 * (4 * 32) / (4 * 4), rel=1e-9)
    results = {
        "settings": {"n_prompts": 16, "seq_len": 128},
        "records": [
            {"model": "qwen2.5-coder-0.5b", "claim": "T7", "seconds": 12.0, "forward_seconds": 2.0, "layer_tokens": 64},
            {"model": "gemma3-270m", "claim": "T7", "seconds": 99.0, "forward_seconds": 0.0, "layer_tokens": 0},
        ],
    }
    fallback = bench_nightly.fallback_claims("qwen-2.5-3b", results, 512, set(claims))
    (t7,) = fallback.values()
    assert t7["note"] == "linear in prompts, not measured"
    assert t7["layer_tokens"] == pytest.approx(64 * 32 * 36 / 24)
    assert t7["statistics_seconds"] == pytest.approx(10.0 * 32 * (36 * 16) / (24 * 14))


@pytest.mark.long
def test_a_stopped_measurement_keeps_the_rows_that_finished_and_leaves_no_child(tmp_path):
    """EQ2 (no forward pass) then T5 on SmolLM2: SIGTERM while T5's child runs ends that child with the run, exit
    130, and growth.jsonl / growth.md keep EQ2's row."""
    cmd = [sys.executable, str(ROOT / "benchmarks" / "bench_prompt_growth.py"), "--models", "smollm2-135m"]
    cmd += ["--claims", "EQ2,T5", "--counts", "12", "--seq-len", "32", "--threads", "1", "--out", str(tmp_path)]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.time() + 600
    jsonl = tmp_path / "growth.jsonl"
    while time.time() < deadline and not jsonl.is_file():
        assert proc.poll() is None, proc.stdout.read()
        time.sleep(0.5)
    time.sleep(2)  # T5's child has started
    kids = subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True, text=True).stdout.split()
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 130, out
    (row,) = growth.read_rows(jsonl)
    assert row["claim"] == "EQ2" and row["status"] == "ok"
    assert "| smollm2-135m | EQ2 | 12 x 32 |" in (tmp_path / "growth.md").read_text()
    for kid in kids:
        with pytest.raises(ProcessLookupError):
            os.kill(int(kid), 0)


@pytest.mark.long
def test_together_one_process_gives_a_row_per_claim(tmp_path):
    """``--together``: the selection in one process per count, as the nightly runs it: a row per claim, each with
    its tests' own peak and the passes booked to it."""
    code = growth.main(
        ["--models", "smollm2-135m", "--claims", "EQ2,EQ3", "--counts", "12", "--seq-len", "32", "--threads", "1"]
        + ["--together", "--out", str(tmp_path)]
    )
    assert code == 0
    rows = {r["claim"]: r for r in growth.read_rows(tmp_path / "growth.jsonl")}
    assert set(rows) == {"EQ2", "EQ3"} and {r["mode"] for r in rows.values()} == {"together"}
    assert rows["EQ2"]["layer_tokens"] == 0 and rows["EQ3"]["layer_tokens"] > 0
    assert rows["EQ3"]["process_peak_rss_gib"] >= rows["EQ3"]["peak_rss_gib"] > 0.1


def test_t5s_statistics_come_from_the_paper_shapes_own_rows_where_measured(tmp_path, monkeypatch):
    """bench_nightly takes T5's statistics from bench_statistics' rows on the paper model's own shape (the latest
    code's, at the projection's length), c x prompts^k with no scaling by heads; none where the shape has one count."""
    folder = tmp_path / "statistics-x"
    folder.mkdir()
    rows = [
        {
            "status": "ok",
            "shape": "llama-3.2-1b",
            "seq_len": 512,
            "label": lab,
            "n_prompts": n,
            "summary_cpu_s": 0.1 * n * f,
            "significance_cpu_s": 0.9 * n * f,
        }
        for lab, f in (("after", 1.0), ("before", 5.0))
        for n in (16, 64)
    ]
    (folder / "statistics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    monkeypatch.setattr(bench_nightly, "GROWTH", tmp_path)
    got = bench_nightly.shape_statistics("llama-3.2-1b", 512, 512)
    assert got["statistics_seconds"] == pytest.approx(512.0) and got["note"] == "k=1.00"
    assert bench_nightly.shape_statistics("llama-3.2-1b", 512, 128) is None
    assert bench_nightly.shape_statistics("llama-3.1-8b", 512, 512) is None
