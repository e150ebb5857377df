"""Peak memory of capturing the sampled (i, j) pairs for one long prompt: pair readers vs full matrices.

    python benchmarks/bench_capture_memory.py [--model smollm2-135m --seq-len 2048 --pairs 4000 --compare-full]

Each mode runs in its own subprocess and reports its peak resident memory (ru_maxrss) against the loaded model's
(every weight paged in first: the safetensors are memory-mapped, and a first forward pass would otherwise book the
weights' page-ins as capture memory): ``pairs`` is the harness path (the attention kernel's logsumexp gives the
weights at the pairs; no n x n pattern exists); ``full`` (with --compare-full) keeps every layer's full [heads, n, n]
attention matrix, then gathers the pairs from them (the naive approach, 18 GiB at 2,048 tokens); with it, the two
must give the same numbers (checked). Exits 1 when the pairs capture's peak is above 1.2 x the loaded model's (or the values differ).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def child(mode: str, model_name: str, seq_len: int, n_pairs: int) -> None:
    import numpy as np
    import torch

    from harness.capture import forward as cap
    from harness.capture.session import Session
    from harness.spec.settings import Settings
    from harness.stats.pairs import stratified_pairs

    session = Session(Settings(n_prompts=4, seq_len=seq_len), log=lambda *a: None)
    model = session.model(model_name)
    ids = session.prompts(model, n_prompts=4).ids[:1]
    pairs = stratified_pairs(seq_len, n_pairs, seed=0)
    torch.set_grad_enabled(False)
    float(sum(p.double().sum() for p in model.hf.parameters()))  # page every weight in: the loaded model
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    names = model.names("attn.hook_pattern")
    if mode == "pairs":
        out = cap.capture(model, ids, {n: cap.PairReader(pairs.i, pairs.j) for n in names}, 1)
        values = np.stack([out[n] for n in names], 1)
    else:
        full = cap.capture(model, ids, {n: (lambda x: x.float().clone()) for n in names}, 1)
        values = np.stack([full[n][:, :, pairs.i, pairs.j].transpose(0, 2, 1) for n in names], 1)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(
        json.dumps(
            {
                "mode": mode,
                "extra_mib": (peak - before) / 1024,
                "peak_mib": peak / 1024,
                "loaded_mib": before / 1024,
                "checksum": float(values.sum()),
            }
        )
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--seq-len", type=int, default=2048)
    ap.add_argument("--pairs", type=int, default=4000)
    ap.add_argument("--compare-full", action="store_true", help="also the naive full-matrix capture (heavy)")
    ap.add_argument("--child", default=None)
    a = ap.parse_args()
    if a.child:
        return child(a.child, a.model, a.seq_len, a.pairs)
    res = {}
    for mode in ("pairs", "full") if a.compare_full else ("pairs",):
        out = subprocess.run(
            [
                sys.executable,
                __file__,
                "--child",
                mode,
                "--model",
                a.model,
                "--seq-len",
                str(a.seq_len),
                "--pairs",
                str(a.pairs),
            ],
            capture_output=True,
            text=True,
            check=True,
        )
        res[mode] = json.loads(out.stdout.strip().splitlines()[-1])
    print(f"{a.model}, one prompt of {a.seq_len} tokens, {a.pairs} requested pairs")
    for mode, r in res.items():
        print(
            f"  {mode:5s}: peak RSS {r['peak_mib']:8.0f} MiB, {r['extra_mib']:8.0f} MiB above the loaded model "
            f"({r['loaded_mib']:.0f} MiB): {r['peak_mib'] / r['loaded_mib']:.2f}x the loaded model"
        )
    ok = res["pairs"]["peak_mib"] <= 1.2 * res["pairs"]["loaded_mib"]
    if "full" in res:
        same = abs(res["pairs"]["checksum"] - res["full"]["checksum"]) <= 1e-6 * abs(res["full"]["checksum"])
        ok &= same
        print(
            f"  full / pairs, whole-process peak: {res['full']['peak_mib'] / res['pairs']['peak_mib']:.1f}x; "
            f"same values: {same}"
        )
    print(("PASS" if ok else "FAIL") + ": the pairs capture's peak within 1.2x the loaded model")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
