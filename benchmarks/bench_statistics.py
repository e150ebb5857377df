"""The leakage statistics alone, without a model or a forward pass: their seconds and peak host memory per prompt
count, for a model's shape, on a code checkout (this one, or another given by ``--root``, to compare before and
after a change).

    python benchmarks/bench_statistics.py --shape smollm2-135m --counts 16,64,256,512 --seq-len 128 \\
        [--root DIR] [--label after] [--out reports/dress-rehearsal/statistics-smollm2-135m] [--threads 1]

Each count runs in a child process of its own (``--root``'s ``harness`` on its path). It draws a capture of the
unedited topic pass's weights at the pairs as a claims run holds it (float32 [prompts, layers, pairs, heads], the
session's pairs at ``--seq-len``), then times what the claims compute from it: the run's summary (``reduce_capture``
to each prompt's moments, then ΔR² on every pair and on each of ``n_boot`` bootstrap rows, per query bin: what T6,
T7, T9, T11 and DP1 read) and T5's significance (the per-prompt sums, the sign-flip test and the within-offset
permutation null, ``n_perm`` draws). Per count: CPU seconds of each part, the child's peak resident set
(``VmHWM``, what ``/usr/bin/time -v`` prints as its maximum) and its resident set once the capture is drawn, so the statistics'
own peak above the capture is the difference. One JSON line per count is appended to ``statistics.jsonl`` and the
table ``statistics.md`` rewritten from it; the exponent of CPU seconds ~ prompts^k is fitted per part and label.
The values are random (cubed uniforms with a planted dependence on the query position): the statistics' cost
depends on the shapes only.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GIB = 2**30
PARTS = ("summary", "significance")

CHILD = r"""
import json, sys, time
import numpy as np
from harness.capture.budget import model_config
from harness.capture.leakage_view import reduce_capture, significance
from harness.capture.reads import moment_subsets
from harness.spec.settings import Settings
from harness.stats import intervals, leakage as lk
from harness.stats.pairs import stratified_pairs

shape, n, seq_len = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
s = Settings()
cfg = model_config(shape)
layers, heads = cfg["num_hidden_layers"], cfg["num_attention_heads"]
pairs = stratified_pairs(seq_len, s.n_pairs, seed=s.seed)
rng = np.random.default_rng(0)
values = np.empty((n, layers, pairs.n_pairs, heads), dtype=np.float32)
tilt = (0.02 * pairs.i / seq_len).astype(np.float32)[:, None]
for p in range(n):
    values[p] = rng.random((layers, pairs.n_pairs, heads), dtype=np.float32) ** 3 + tilt

def rss(field="VmRSS"):
    for line in open("/proc/self/status"):
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
held = rss()
out = {"layers": layers, "heads": heads, "n_pairs": int(pairs.n_pairs), "capture_gib": values.nbytes / 2**30,
       "held_rss_gib": held / 2**30}
t = time.process_time()
moments = reduce_capture(values, moment_subsets(pairs, seq_len))
w = intervals.bootstrap_weights(n, s.n_boot, s.seed)
for k in range(moments.shape[-1] // 4):
    m, q, a, x = (moments[..., 4 * k + f].reshape(n, layers * heads) for f in range(4))
    mom = lk.PromptMoments(m, q, a, x, n_pairs=pairs.n_pairs, i_tilde_sq=float(pairs.i_tilde_sq))
    lk.delta_from_moments(mom, np.ones((1, n)))
    lk.delta_from_moments(mom, w)
out["summary_cpu_s"] = time.process_time() - t
t = time.process_time()
view = values.transpose(0, 2, 1, 3)
sig = significance(lk.prompt_stats(pairs, view), pairs, view, s.n_perm, s.seed)
out["significance_cpu_s"] = time.process_time() - t
out["peak_rss_gib"] = rss("VmHWM") / 2**30
out["checksum"] = [float(sig["delta"].sum()), float(sig["p_within_offset"].sum()), float(sig["p"].sum())]
print(json.dumps(out))
"""


def run_child(root: Path, shape: str, n: int, seq_len: int, threads: int) -> dict:
    env = {**os.environ, "PYTHONPATH": str(root), "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)}
    env["OPENBLAS_NUM_THREADS"] = str(threads)
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, shape, str(n), str(seq_len)],
        cwd=root,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    stdout, stderr = proc.communicate()
    row: dict = {"shape": shape, "n_prompts": n, "seq_len": seq_len, "wall_s": round(time.perf_counter() - t0, 1)}
    if proc.returncode != 0:
        return {**row, "status": f"exit {proc.returncode}: {stderr.strip().splitlines()[-1:]}"}
    return {**row, "status": "ok", **json.loads(stdout.strip().splitlines()[-1])}


def fit_power(xs: list[float], ys: list[float]) -> float | None:
    """k of y ~ c x^k, least squares on logs (None under two points)."""
    pts = [(math.log(x), math.log(y)) for x, y in zip(xs, ys) if y > 0]
    if len(pts) < 2:
        return None
    mx, my = sum(p[0] for p in pts) / len(pts), sum(p[1] for p in pts) / len(pts)
    den = sum((p[0] - mx) ** 2 for p in pts)
    return sum((p[0] - mx) * (p[1] - my) for p in pts) / den if den else None


def table(rows: list[dict]) -> str:
    head = (
        "| label | shape | prompts x tokens | capture | CPU s: summary | CPU s: significance (T5) | peak RSS | RSS "
        "with the capture | statistics' own peak | checksum |\n|---|---|---|---|---|---|---|---|---|---|\n"
    )
    body = ""
    for r in rows:
        if r["status"] != "ok":
            body += f"| {r['label']} | {r['shape']} | {r['n_prompts']} x {r['seq_len']} | {r['status']} |||||||\n"
            continue
        own = r["peak_rss_gib"] - r["held_rss_gib"]
        body += (
            f"| {r['label']} | {r['shape']} | {r['n_prompts']} x {r['seq_len']} | {r['capture_gib']:.2f} GiB | "
            f"{r['summary_cpu_s']:.1f} | {r['significance_cpu_s']:.1f} | {r['peak_rss_gib']:.2f} GiB | "
            f"{r['held_rss_gib']:.2f} GiB | {own:.2f} GiB | {', '.join(f'{c:.6g}' for c in r['checksum'])} |\n"
        )
    fits = "\n| label | shape | tokens | counts | k: summary | k: significance | k: statistics' own peak |\n"
    fits += "|---|---|---|---|---|---|---|\n"
    groups: dict = {}
    for r in rows:
        if r["status"] == "ok":
            groups.setdefault((r["label"], r["shape"], r["seq_len"]), []).append(r)
    for (label, shape, seq), rs in sorted(groups.items()):
        xs = [r["n_prompts"] for r in rs]
        ks = [fit_power(xs, [r[f"{p}_cpu_s"] for r in rs]) for p in PARTS]
        kp = fit_power(xs, [max(1e-3, r["peak_rss_gib"] - r["held_rss_gib"]) for r in rs])
        cells = " | ".join("—" if k is None else f"{k:.2f}" for k in (*ks, kp))
        fits += f"| {label} | {shape} | {seq} | {','.join(map(str, xs))} | {cells} |\n"
    return head + body + fits


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shape", default="smollm2-135m", help="a registry name whose config gives layers and heads")
    ap.add_argument("--counts", default="16,64,256")
    ap.add_argument("--seq-len", type=int, default=128)
    ap.add_argument("--root", default=str(ROOT), help="the checkout whose harness is measured")
    ap.add_argument("--label", default="after")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out", default="reports/dress-rehearsal/statistics")
    a = ap.parse_args(argv)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    jsonl = out / "statistics.jsonl"
    for n in (int(c) for c in a.counts.split(",")):
        print(f"[statistics] {a.label} {a.shape} {n} x {a.seq_len} ...", flush=True)
        row = run_child(Path(a.root), a.shape, n, a.seq_len, a.threads)
        row.update(label=a.label, threads=a.threads, when=time.strftime("%Y-%m-%d %H:%M"), load=os.getloadavg()[0])
        with jsonl.open("a") as f:
            f.write(json.dumps(row) + "\n")
        print(f"[statistics] {json.dumps(row)}", flush=True)
        rows = [json.loads(line) for line in jsonl.read_text().splitlines() if line.strip()]
        (out / "statistics.md").write_text(table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
