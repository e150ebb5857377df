"""The nightly dress rehearsal: a paper model's full-size build (its published config exactly, random weights, its real
tokenizer: ``<paper>-full-rehearsal``, harness.model.rehearsal) through the nightly's selection on this machine, with
time and peak memory per claim, and the nightly's GPU time estimated from them.

    python benchmarks/bench_dress_rehearsal.py [--paper llama-3.2-1b] [--seq-len 512] [--n-prompts 32]
        [-k EXPR] [--out reports/dress-rehearsal] [--device-rate LAYER_TOKENS_PER_S]

It runs ``pytest claims --models <paper>-full-rehearsal -m <family>`` (the nightly's ``-m "paper and <family>"`` on
that model: every claim test of the model, T13's family ladder n/a with one size) at the nightly's settings, in a
child process, with ``PeakMemory`` (below) as a plugin: before each test it resets the process's peak resident set
(Linux ``/proc/self/clear_refs`` "5") and after it reads the peak (``VmHWM``), so each test's peak includes its setup
(the model's load, the passes it shares). Per claim: tests, seconds, forward seconds and layer-tokens (the run's
results.json, where every pass is booked to the test that ran it), statistics seconds (the rest) and the peak. The
first run builds the model (Llama-3.2-1B: 1.24 B parameters, 5 GB in float32) under ``$ABSPOS_CACHE``.

Measured: everything in the table, on this machine, at the settings it prints. Estimated: the GPU column only,
= layer-tokens / the device's layer-token rate + the statistics seconds (they stay on the CPU). The rate is measured
here with ``bench_nightly.throughput`` when a GPU is visible, or given (``--device-rate``, from ``bench_nightly.py
--device cuda`` on the GPU); without either the column is left out.

Writes ``dress.json`` and ``dress.md`` (the table README's nightly section shows) into ``--out``; the run's report
under ``--out/run``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PEAKS_ENV = "ABSPOS_DRESS_PEAKS"  # where the child's plugin appends one JSON line per test


def _status_kib(field: str) -> int | None:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return None


class PeakMemory:
    """pytest plugin (``-p benchmarks.bench_dress_rehearsal``): each test's peak resident set in KiB, appended to the
    file named by $ABSPOS_DRESS_PEAKS as {"test", "peak_kib", "reset"}; ``reset`` False where the kernel did not let
    the peak be reset (the figure is then the process's peak so far)."""

    def __init__(self, path: str) -> None:
        self.path = path

    def _reset(self) -> bool:
        try:
            Path("/proc/self/clear_refs").write_text("5")
            return True
        except OSError:
            return False

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item, nextitem):
        reset = self._reset()
        yield
        peak = _status_kib("VmHWM")
        if peak is None:
            import resource

            peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        with open(self.path, "a") as f:
            f.write(json.dumps({"test": item.nodeid, "peak_kib": peak, "reset": reset}) + "\n")


def pytest_configure(config) -> None:
    """Registers ``PeakMemory`` when this module is loaded as a plugin by a run that names a peaks file."""
    if os.environ.get(PEAKS_ENV):
        config.pluginmanager.register(PeakMemory(os.environ[PEAKS_ENV]), "abspos-dress-peaks")


def per_claim(records: list[dict], peaks: dict[str, int]) -> list[dict]:
    """One row per claim, in the run's order: tests, seconds, forward seconds, statistics seconds, layer-tokens, and
    the largest peak of its tests (KiB; None where none was read). Records with no claim (none here) are left out."""
    acc: dict[str, dict] = defaultdict(
        lambda: {"tests": 0, "seconds": 0.0, "forward_seconds": 0.0, "layer_tokens": 0, "peak_kib": None}
    )
    for r in records:
        if not r.get("claim"):
            continue
        a = acc[r["claim"]]
        a["tests"] += 1
        a["seconds"] += r.get("seconds") or 0.0
        a["forward_seconds"] += r.get("forward_seconds") or 0.0
        a["layer_tokens"] += r.get("layer_tokens") or 0
        peak = peaks.get(r["test"])
        if peak is not None:
            a["peak_kib"] = max(a["peak_kib"] or 0, peak)
    return [{"claim": c, **a, "statistics_seconds": a["seconds"] - a["forward_seconds"]} for c, a in acc.items()]


def gpu_estimate(row: dict, device_rate: float | None) -> float | None:
    """A claim's estimated seconds on the device: its layer-tokens at the device's rate, plus its statistics
    seconds as measured (they run on the CPU whatever the device)."""
    if not device_rate:
        return None
    return row["layer_tokens"] / device_rate + row["statistics_seconds"]


def table(rows: list[dict], device_rate: float | None) -> str:
    """The markdown table of ``rows`` with a total line."""
    gib = 2**20
    head = "| claim | tests | seconds | forward s | statistics s | layer-tokens | peak RSS |"
    rule = "|---|---|---|---|---|---|---|"
    if device_rate:
        head, rule = head + " GPU estimate s |", rule + "---|"
    lines = [head, rule]
    total = {"claim": "all", "tests": 0, "seconds": 0.0, "forward_seconds": 0.0, "statistics_seconds": 0.0}
    total |= {"layer_tokens": 0, "peak_kib": None}
    for r in rows:
        for k in ("tests", "seconds", "forward_seconds", "statistics_seconds", "layer_tokens"):
            total[k] += r[k]
        if r["peak_kib"] is not None:
            total["peak_kib"] = max(total["peak_kib"] or 0, r["peak_kib"])
    for r in [*rows, total]:
        peak = f"{r['peak_kib'] / gib:.1f} GiB" if r["peak_kib"] is not None else "—"
        cells = [
            r["claim"],
            str(r["tests"]),
            f"{r['seconds']:.0f}",
            f"{r['forward_seconds']:.0f}",
            f"{r['statistics_seconds']:.0f}",
            f"{r['layer_tokens']:,}",
            peak,
        ]
        if device_rate:
            cells.append(f"{gpu_estimate(r, device_rate):.0f}")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _device_rate(paper: str, seq_len: int, given: float | None) -> tuple[float | None, str]:
    if given:
        return given, f"given: {given:,.0f} layer-tokens/s (--device-rate)"
    import torch

    if not torch.cuda.is_available():
        return None, "no GPU visible and no --device-rate: the GPU column is left out"
    from benchmarks.bench_nightly import throughput

    rate = throughput(paper, "cuda", "bfloat16", seq_len, 3)
    return rate, f"measured here: {rate:,.0f} layer-tokens/s (bench_nightly.throughput, cuda bfloat16)"


def main(argv: list[str] | None = None) -> int:
    from harness.model.rehearsal import FULL_SUFFIX, SUFFIX
    from harness.spec.models import get_spec, names

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--paper", default="llama-3.2-1b", help=f"the paper model rehearsed ({', '.join(names('paper'))})")
    ap.add_argument("--seq-len", type=int, default=512, help="the nightly's 512")
    ap.add_argument("--n-prompts", type=int, default=32, help="the nightly's 32")
    ap.add_argument("--size", choices=("full", "rehearsal"), default="full", help="rehearsal: the narrow 4-layer build")
    ap.add_argument("-k", dest="keyword", default=None, help="pytest -k: a part of the selection (the table says so)")
    ap.add_argument("--out", default=str(ROOT / "reports" / "dress-rehearsal"))
    ap.add_argument("--device-rate", type=float, default=None, help="layer-tokens/s of the GPU the nightly runs on")
    a, passthrough = ap.parse_known_args(argv)  # the rest go to pytest (--threads 1, -x, ...)
    if a.paper not in names("paper"):
        ap.error(f"--paper {a.paper!r}: choose one of {', '.join(names('paper'))}")
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    peaks_file = out / "peaks.jsonl"
    peaks_file.unlink(missing_ok=True)
    model, family = a.paper + (FULL_SUFFIX if a.size == "full" else SUFFIX), get_spec(a.paper).family
    cmd = [sys.executable, "-m", "pytest", str(ROOT / "claims"), "--models", model, "-m", family, "-q"]
    cmd += ["--seq-len", str(a.seq_len), "--n-prompts", str(a.n_prompts), "--report-dir", str(out / "run")]
    cmd += ["-p", "benchmarks.bench_dress_rehearsal", "-p", "no:cacheprovider"]
    cmd += (["-k", a.keyword] if a.keyword else []) + passthrough
    print("dress rehearsal:", " ".join(cmd[2:]), flush=True)
    t0 = time.perf_counter()
    code = subprocess.run(cmd, cwd=ROOT, env={**os.environ, PEAKS_ENV: str(peaks_file)}).returncode
    wall = time.perf_counter() - t0
    results_path = out / "run" / "latest" / "results.json"
    if code not in (0, 1) or not results_path.is_file():
        print(f"dress rehearsal: pytest exited {code} without results ({results_path})", file=sys.stderr)
        return 2
    results = json.loads(results_path.read_text())
    peaks = {}
    for line in peaks_file.read_text().splitlines() if peaks_file.is_file() else []:
        p = json.loads(line)
        peaks[p["test"]] = p["peak_kib"]
    rows = per_claim(results["records"], peaks)
    rate, rate_note = _device_rate(a.paper, a.seq_len, a.device_rate)
    outcomes = defaultdict(int)
    for r in results["records"]:
        outcomes[r.get("verdict") or r.get("outcome")] += 1
    import platform

    import torch

    summary = {
        "model": model,
        "rehearses": a.paper,
        "settings": results["settings"],
        "selection": f"-m {family}"
        + (f" -k {a.keyword!r}" if a.keyword else "")
        + "".join(f" {x}" for x in passthrough),
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, torch {torch.__version__}",  # the child's threads:
        # its --threads where passed (in "selection"), else the cores free when it started (harness.run.options)
        "wall_seconds": wall,
        "pytest_exit": code,
        "outcomes": dict(outcomes),
        "device_rate": rate,
        "device_rate_note": rate_note,
        "shape": next((r["shape"] for r in results["records"] if r.get("shape")), None),  # layers, heads per layer
        "claims": rows,
        "run": results["run"],
    }
    (out / "dress.json").write_text(json.dumps(summary, indent=2) + "\n")
    s = results["settings"]
    md = (
        f"Dress rehearsal of {a.paper} ({model}: "
        f"{'the published config' if a.size == 'full' else 'the narrow 4-layer build'}, random weights, its real "
        f"tokenizer), "
        f"{summary['selection']}, {s['n_prompts']} prompts x {s['seq_len']} tokens, {s['device']} {s['dtype']}; "
        f"{summary['machine']}; wall {wall / 60:.1f} min; outcomes {dict(outcomes)}. Peak RSS: each test's, setup "
        f"included. GPU column: {rate_note}.\n\n" + table(rows, rate) + "\n"
    )
    (out / "dress.md").write_text(md)
    print(md)
    return 0 if code == 0 else 1


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    raise SystemExit(main())
