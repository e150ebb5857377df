"""The nightly dress rehearsal: a paper model's full-size build (its published config exactly, random weights, its real
tokenizer: ``<paper>-full-rehearsal``, harness.model.rehearsal) through the nightly's selection on this machine, with
time and peak memory per claim, and the nightly's GPU time estimated from them.

    python benchmarks/bench_dress_rehearsal.py [--paper llama-3.2-1b] [--seq-len 512] [--n-prompts 512]
        [-k EXPR] [--out reports/dress-rehearsal] [--device-rate LAYER_TOKENS_PER_S]

It runs ``pytest claims --models <paper>-full-rehearsal -m <family>`` (the nightly's ``-m "paper and <family>"`` on
that model: every claim test of the model, T13's family ladder n/a with one size) at the nightly's settings, in a
child process, with ``PeakMemory`` (below) as a plugin: before each test it resets the process's peak resident set
(Linux ``/proc/self/clear_refs`` "5") and after it reads the peak (``VmHWM``), so each test's peak includes its setup
(the model's load, the passes it shares). Per claim: tests, seconds, forward seconds and layer-tokens (the run's
results.json, where every pass is booked to the test that ran it), statistics seconds (the rest) and the peak; the
same per-claim table is rewritten from the tests finished as each ends (a stop of any kind keeps it). The costliest
ablations run last (``--last``), so a time limit leaves the most claims measured. The first run builds the model
(Llama-3.2-1B: 1.24 B parameters, 5 GB in float32) under ``$ABSPOS_CACHE``.

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
import signal
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script: the checkout's benchmarks package
    sys.path.insert(0, str(ROOT))

from benchmarks.bench_prompt_growth import GrowthPlugin  # noqa: E402

PEAKS_ENV = "ABSPOS_DRESS_PEAKS"  # where the child's plugin appends one JSON line per test
LAST_ENV = "ABSPOS_DRESS_LAST"  # test ids holding any of these (comma-separated) run after the rest
#: The costliest edited passes (one per head of two layers; ablations and random draws, the probes' passes): last, so
#: that a time limit leaves the most claims measured.
LAST = "test_deposit.py,test_s5_8_targeted.py"


class PeakMemory(GrowthPlugin):
    """pytest plugin (``-p benchmarks.bench_dress_rehearsal``): each test's line (``bench_prompt_growth.GrowthPlugin``:
    seconds, forward seconds, layer-tokens, its peak resident set in KiB and, on a GPU, torch's peak allocation)
    appended to the file named by $ABSPOS_DRESS_PEAKS as the test ends, and the per-claim table of the tests finished
    so far rewritten beside it (``dress.md``), so a run stopped any way, a SIGKILL included, leaves its table.
    ``reset`` is False where the kernel did not let the peak be reset (the figure is then the process's peak so
    far)."""

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, config, items):
        last = [p for p in os.environ.get(LAST_ENV, "").split(",") if p]
        late = [i for i in items if any(p in i.nodeid for p in last)]
        items[:] = [i for i in items if i not in late] + late

    def written(self, line: dict) -> None:
        lines = [json.loads(x) for x in Path(self.path).read_text().splitlines() if x.strip()]
        rows = per_claim(lines_as_records(lines), {x["test"]: x["peak_kib"] for x in lines}, _gpu_peaks(lines))
        md = Path(self.path).with_name("dress.md")
        md.write_text(
            f"Partial table: {len(lines)} tests finished so far (rewritten as each test ends; the run's own table "
            f"replaces it when the run ends).\n\n" + table(rows, None) + "\n"
        )


def lines_as_records(lines: list[dict]) -> list[dict]:
    """Per-test lines as the records ``per_claim`` reads (a test's seconds less its model loads)."""
    return [
        {
            "test": x["test"],
            "claim": x.get("claim"),
            "seconds": x["seconds"] - (x.get("load_seconds") or 0.0),
            "forward_seconds": x.get("forward_seconds") or 0.0,
            "layer_tokens": x.get("layer_tokens") or 0,
        }
        for x in lines
    ]


def _gpu_peaks(lines: list[dict]) -> dict[str, int] | None:
    peaks = {x["test"]: x["peak_gpu_kib"] for x in lines if x.get("peak_gpu_kib") is not None}
    return peaks or None


def pytest_configure(config) -> None:
    """Registers ``PeakMemory`` when this module is loaded as a plugin by a run that names a peaks file."""
    if os.environ.get(PEAKS_ENV):
        config.pluginmanager.register(PeakMemory(os.environ[PEAKS_ENV]), "abspos-dress-peaks")


def per_claim(records: list[dict], peaks: dict[str, int], gpu_peaks: dict[str, int] | None = None) -> list[dict]:
    """One row per claim, in the run's order: tests, seconds, forward seconds, statistics seconds, layer-tokens, the
    largest peak of its tests (KiB; None where none was read) and, on a GPU, the largest GPU peak. Records with no
    claim (none here) are left out."""
    gpu_peaks = gpu_peaks or {}
    acc: dict[str, dict] = defaultdict(
        lambda: (
            {"tests": 0, "seconds": 0.0, "forward_seconds": 0.0, "layer_tokens": 0, "peak_kib": None}
            | ({"peak_gpu_kib": None} if gpu_peaks else {})
        )
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
        if gpu_peaks.get(r["test"]) is not None:
            a["peak_gpu_kib"] = max(a["peak_gpu_kib"] or 0, gpu_peaks[r["test"]])
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
    on_gpu = any("peak_gpu_kib" in r for r in rows)
    if on_gpu:
        head, rule = head + " peak GPU |", rule + "---|"
    if device_rate:
        head, rule = head + " GPU estimate s |", rule + "---|"
    lines = [head, rule]
    total = {"claim": "all", "tests": 0, "seconds": 0.0, "forward_seconds": 0.0, "statistics_seconds": 0.0}
    total |= {"layer_tokens": 0, "peak_kib": None} | ({"peak_gpu_kib": None} if on_gpu else {})
    for r in rows:
        for k in ("tests", "seconds", "forward_seconds", "statistics_seconds", "layer_tokens"):
            total[k] += r[k]
        for k in ("peak_kib", "peak_gpu_kib"):
            if r.get(k) is not None:
                total[k] = max(total[k] or 0, r[k])
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
        if on_gpu:
            cells.append(f"{r['peak_gpu_kib'] / gib:.1f} GiB" if r.get("peak_gpu_kib") is not None else "—")
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


def _driver() -> str | None:
    """The NVIDIA driver version (nvidia-smi), or None where there is none."""
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"], capture_output=True, text=True
        )
    except OSError:
        return None
    return out.stdout.strip().splitlines()[0] if out.returncode == 0 and out.stdout.strip() else None


def main(argv: list[str] | None = None) -> int:
    from harness.model.rehearsal import FULL_SUFFIX, SUFFIX
    from harness.spec.models import get_spec, names

    # no abbreviations: pytest's --device must pass through, never be read as --device-rate
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    ap.add_argument("--paper", default="llama-3.2-1b", help=f"the paper model rehearsed ({', '.join(names('paper'))})")
    ap.add_argument("--seq-len", type=int, default=512, help="the nightly's 512")
    ap.add_argument("--n-prompts", type=int, default=512, help="the nightly's 512 (the CPU table in docs/gpus.md: 32)")
    ap.add_argument("--size", choices=("full", "rehearsal"), default="full", help="rehearsal: the narrow 4-layer build")
    ap.add_argument("-k", dest="keyword", default=None, help="pytest -k: a part of the selection (the table says so)")
    ap.add_argument("--out", default=str(ROOT / "reports" / "dress-rehearsal"))
    ap.add_argument(
        "--time-limit",
        type=float,
        default=None,
        metavar="SECONDS",
        help="interrupt the run after this long; the tests that finished are tabled (benchmarks/gpu_check.sh)",
    )
    ap.add_argument("--device-rate", type=float, default=None, help="layer-tokens/s of the GPU the nightly runs on")
    ap.add_argument(
        "--last",
        default=LAST,
        help="tests whose ids hold any of these (comma-separated) run after the rest (default: the costliest ablations; "
        "'' keeps pytest's order)",
    )
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
    proc = subprocess.Popen(cmd, cwd=ROOT, env={**os.environ, PEAKS_ENV: str(peaks_file), LAST_ENV: a.last})

    # SIGTERM, not SIGINT: a background job's SIGINT may be ignored from its start (bash), and the claims run treats
    # both alike (harness.run.signals: what finished is written)
    def stop(signum, _frame):  # told to stop (a budget's timeout): the child stops as at the time limit, then tables
        print(f"dress rehearsal: {signal.Signals(signum).name}; interrupting", file=sys.stderr, flush=True)
        proc.send_signal(signal.SIGTERM)

    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, stop)
    try:
        code = proc.wait(timeout=a.time_limit)
    except subprocess.TimeoutExpired:  # pytest stops at the interrupt and writes the tests that finished
        print(f"dress rehearsal: time limit {a.time_limit:.0f} s reached; interrupting", file=sys.stderr, flush=True)
        proc.send_signal(signal.SIGTERM)
        code = proc.wait()
    wall = time.perf_counter() - t0
    results_path = out / "run" / "latest" / "results.json"
    # 2: interrupted (a time limit's SIGTERM): the tests that finished are kept in results.json and tabled as such
    if code not in (0, 1, 2) or not results_path.is_file():
        print(f"dress rehearsal: pytest exited {code} without results ({results_path})", file=sys.stderr)
        return 2
    results = json.loads(results_path.read_text())
    peaks, gpu_peaks = {}, {}
    for line in peaks_file.read_text().splitlines() if peaks_file.is_file() else []:
        p = json.loads(line)
        peaks[p["test"]] = p["peak_kib"]
        if "peak_gpu_kib" in p:
            gpu_peaks[p["test"]] = p["peak_gpu_kib"]
    on_gpu = str(results["settings"].get("device", "cpu")).startswith("cuda")
    rows = per_claim(results["records"], peaks, gpu_peaks if on_gpu else None)
    # measured on the GPU, the seconds are the GPU's: no estimate beside them
    rate, rate_note = (None, "measured on the GPU") if on_gpu else _device_rate(a.paper, a.seq_len, a.device_rate)
    outcomes = defaultdict(int)
    for r in results["records"]:
        outcomes[r.get("verdict") or r.get("outcome")] += 1
    import platform

    import torch

    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    summary = {
        "model": model,
        "gpu": gpu,
        "provenance": {
            "torch": torch.__version__,
            "cuda": torch.version.cuda,
            "transformers": __import__("transformers").__version__,
            "driver": _driver(),
        },
        "rehearses": a.paper,
        "settings": results["settings"],
        "selection": f"-m {family}"
        + (f" -k {a.keyword!r}" if a.keyword else "")
        + "".join(f" {x}" for x in passthrough),
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, torch {torch.__version__}",  # the child's threads:
        # its --threads where passed (in "selection"), else the cores free when it started (harness.run.options)
        "wall_seconds": wall,
        "pytest_exit": code,
        "interrupted": code == 2,
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
        f"{summary['machine']}{f', {gpu}' if gpu else ''}; wall {wall / 60:.1f} min"
        f"{' (interrupted, at its time limit or by a stop: the tests that finished)' if code == 2 else ''}; "
        f"outcomes {dict(outcomes)}. "
        f"Peak RSS (and on a GPU, torch's peak allocation): each test's, setup included. GPU column: {rate_note}.\n\n"
        + table(rows, rate)
        + "\n"
    )
    (out / "dress.md").write_text(md)
    print(md)
    return 0 if code == 0 else 1


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    raise SystemExit(main())
