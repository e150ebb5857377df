"""Estimate the nightly run's time per paper model on this machine's device, from measured throughput.

    python benchmarks/bench_nightly.py --device cuda --dtype bfloat16 [--models llama-3.2-1b,llama-3.2-3b,llama-3.1-8b]
        [--workload reports/example/results.json] [--batches 3]

No paper weights are needed. The estimate has three measured parts and one stated assumption:

1. Workload: a real claims run's ``results.json`` books, per bundled model, the layer-tokens its captures ran
   (prompt tokens x decoder layers) and the seconds its tests spent outside forward passes ("other":
   float64 statistics, probes and fits, on the CPU whatever the device). A paper model takes its workload
   from the bundled model with the same BOS policy (the claims that run, hence the captures, depend on it):
   Llama and Mistral from gemma3-270m, Qwen from qwen2.5-coder-0.5b. Layer-tokens scale with the paper
   model's layer count (the same prompts pass through every layer).
2. Throughput: a random-init stand-in with the paper model's shape (the registry's ``config``, checked
   against the published parameter counts in tests), in ``--dtype`` on ``--device``, captures the attention
   pattern at the sampled pairs in every layer, the claims' common capture, for batches of 8 x seq-len
   random tokens: layer-tokens per second over ``--batches`` timed batches after one warm-up.
3. Other seconds: measured on the workload run's machine; here scaled by the paper model's head count over
   the bundled model's (assumption: the per-head statistics dominate; they are linear in heads).

Estimate = layer-tokens / throughput + scaled other seconds. Model loading (disk-bound) is not included.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]

from harness.capture import forward as cap  # noqa: E402
from harness.model import devices  # noqa: E402
from harness.model.hooks import HookedModel  # noqa: E402
from harness.model.weights import random_init_model  # noqa: E402
from harness.report.timing import time_per_model  # noqa: E402
from harness.spec.models import get_spec, names  # noqa: E402
from harness.stats.pairs import stratified_pairs  # noqa: E402

WORKLOAD_SOURCE = {True: "gemma3-270m", False: "qwen2.5-coder-0.5b"}  # by adds_bos


def workload(results: dict) -> dict:
    """{bundled model: (layer-tokens, other seconds, layers, heads per layer)} booked by a claims run."""
    if any("layer_tokens" not in r for r in results["records"]):
        raise SystemExit(f"{results['run']} predates forward-pass booking: make a new run (scripts/run-claims.sh)")
    return {
        m: (a.layer_tokens, a.seconds - a.forward_seconds, a.shape["layers"], a.shape["heads"])
        for m, a in time_per_model(results["records"]).items()
        if m and a.shape
    }


def throughput(name: str, device: str, dtype: str, seq_len: int, batches: int, n_pairs: int = 4000) -> float:
    """Layer-tokens per second of the pair-pattern capture through a random-init stand-in of ``name``."""
    spec = get_spec(name)
    model = HookedModel(random_init_model(spec, 0, devices.parse_dtype(dtype), device), spec)
    pairs = stratified_pairs(seq_len, n_pairs, seed=0)
    readers = {n: cap.PairReader(pairs.i, pairs.j) for n in model.names("attn.hook_pattern")}
    ids = np.random.default_rng(0).integers(0, spec.config["vocab_size"], size=(8 * (batches + 1), seq_len))
    cap.capture(model, ids[:8], readers, batch_size=8, label="warm-up")
    t0 = time.perf_counter()
    cap.capture(model, ids[8:], readers, batch_size=8, label="timed")
    return ids[8:].size * model.n_layers / (time.perf_counter() - t0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--dtype", default="float32", choices=list(devices.DTYPES))
    ap.add_argument("--models", default="llama-3.2-1b,llama-3.2-3b,llama-3.1-8b")
    ap.add_argument(
        "--workload",
        default=str(ROOT / "reports" / "example" / "results.json"),
        help="results.json of a claims run on the bundled models (default: the committed example)",
    )
    ap.add_argument("--batches", type=int, default=3)
    a = ap.parse_args()
    chosen = a.models.split(",")
    for name in chosen:
        if name not in names("paper"):
            raise SystemExit(f"{name}: the estimate is for paper models ({', '.join(names('paper'))})")
    if not Path(a.workload).is_file():
        raise SystemExit(f"--workload {a.workload}: no such results.json (make one: scripts/run-claims.sh)")
    results = json.loads(Path(a.workload).read_text())
    booked, seq_len = workload(results), results["settings"]["seq_len"]
    for name in chosen:
        source = WORKLOAD_SOURCE[get_spec(name).adds_bos]
        if source not in booked:
            raise SystemExit(f"{a.workload} has no {source} tests: its workload is {name}'s reference")
    try:
        device = devices.resolve_device(a.device, None, devices.gpu_count())
    except devices.DeviceError as e:
        raise SystemExit(str(e)) from None
    print(f"workload: {a.workload} ({results['run']}, {results['settings']['n_prompts']} prompts x {seq_len} tokens)")
    print(f"device: {device} {a.dtype}; forward = layer-tokens / measured throughput; other = scaled by heads")
    print(
        f"{'model':18s} {'source':20s} {'layer-tokens':>14s} {'k l-tok/s':>10s} {'forward s':>10s} "
        f"{'other s':>8s} {'total min':>9s}"
    )
    total = 0.0
    for name in chosen:
        spec = get_spec(name)
        source = WORKLOAD_SOURCE[spec.adds_bos]
        src_lt, src_other, src_layers, src_heads = booked[source]
        cfg = spec.config
        layer_tokens = src_lt / src_layers * cfg["num_hidden_layers"]
        other = src_other * cfg["num_hidden_layers"] * cfg["num_attention_heads"] / (src_layers * src_heads)
        rate = throughput(name, device, a.dtype, seq_len, a.batches)
        seconds = layer_tokens / rate + other
        total += seconds
        print(
            f"{name:18s} {source:20s} {layer_tokens:14,.0f} {rate / 1e3:10,.1f} {layer_tokens / rate:10.0f} "
            f"{other:8.0f} {seconds / 60:9.1f}",
            flush=True,
        )
    print(f"all listed models in sequence on one device: {total / 60:.1f} min (model loading not included)")


if __name__ == "__main__":
    main()
