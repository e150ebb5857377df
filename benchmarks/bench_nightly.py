"""Estimate the nightly run's time per paper model on this machine's device, from measured throughput and the
statistics' measured growth with prompts.

    python benchmarks/bench_nightly.py --device cuda --dtype bfloat16 [--models llama-3.2-1b,llama-3.2-3b,llama-3.1-8b]
        [--n-prompts 512] [--growth reports/dress-rehearsal/growth-*] [--workload reports/example/results.json]
        [--batches 3] [--per-claim]

No paper weights are needed. The estimate, per paper model and claim, at the nightly's ``--n-prompts`` (512) and the
growth rows' length (512 tokens where they were measured there):

1. Workload and statistics, measured per claim at several prompt counts (``benchmarks/bench_prompt_growth.py``, its
   ``growth.jsonl`` in the ``--growth`` folders, committed under ``reports/dress-rehearsal/``): the layer-tokens as
   a line in prompts (a fixed-count probe's passes do not grow) and the statistics' CPU seconds as c x prompts^k,
   both fitted per claim and taken at ``--n-prompts``. The source is the paper model's own rehearsal build where it
   was measured (``<paper>-rehearsal``) for the passes, and the model whose heads x layers are nearest the paper
   model's for the statistics (else the growth model measured at the longest length); rows of one process
   per count for the whole selection (``--together``: each pass booked once, as the nightly runs) before rows of a
   process per claim (which count a shared pass in each claim: an upper bound). Layer-tokens scale with the paper
   model's layers over the source's (T10's passes stop after layer 4 in both; DP1's map, one pass per head of two
   layers, also with heads per layer); statistics with its heads x layers over the source's (T10's: the first four
   layers; an assumption: the per-head fits dominate, and they are linear in heads, which overstates what does not
   grow with heads, such as the permutation null's draws). A claim with one count only is scaled linearly in
   prompts, and said so.
   T5's statistics, where ``benchmarks/bench_statistics.py`` measured them on a capture of the paper model's own
   shape (``reports/dress-rehearsal/statistics*/``, at two counts or more), come from those rows instead (no scaling
   by heads: T5's null and sums are most of the statistics and grow with prompts x pairs x heads as measured).
2. A claim the growth rows lack falls back on ``--workload`` (a claims run's results.json): its layer-tokens and
   seconds outside forward passes, scaled by layers / heads x layers as above and linearly by prompts from the run's
   count (said so in its row).
3. Throughput: a random-init stand-in with the paper model's shape (the registry's ``config``, checked against the
   published parameter counts in tests), in ``--dtype`` on ``--device``, captures the attention pattern at the
   sampled pairs in every layer, the claims' common capture, for batches of 8 x seq-len random tokens: layer-tokens
   per second over ``--batches`` timed batches after one warm-up.

Estimate = layer-tokens / throughput + statistics seconds (their CPU seconds on one thread: they run on the host
whatever the device). Model loading (disk-bound) is not included.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
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
GROWTH = ROOT / "reports" / "dress-rehearsal"
T10_LAYERS = 4  # = harness.stats.length_design.FIRST: T10's passes stop after this many layers


def workload(results: dict) -> dict:
    """{bundled model: (layer-tokens, other seconds, layers, heads per layer)} booked by a claims run."""
    if any("layer_tokens" not in r for r in results["records"]):
        raise SystemExit(f"{results['run']} predates forward-pass booking: make a new run (scripts/run-claims.sh)")
    return {
        m: (a.layer_tokens, a.seconds - a.forward_seconds, a.shape["layers"], a.shape["heads"])
        for m, a in time_per_model(results["records"]).items()
        if m and a.shape
    }


def claim_workload(results: dict) -> dict:
    """{(bundled model, claim): (layer-tokens, other seconds)} booked by a claims run."""
    out: dict = {}
    for r in results["records"]:
        if r.get("model") and r.get("claim") and "layer_tokens" in r:
            lt, other = out.get((r["model"], r["claim"]), (0, 0.0))
            out[(r["model"], r["claim"])] = (
                lt + (r["layer_tokens"] or 0),
                other + (r.get("seconds") or 0.0) - (r.get("forward_seconds") or 0.0),
            )
    return out


def growth_rows(folders: list[str]) -> list[dict]:
    """The measured rows (status ok) of every ``growth.jsonl`` in ``folders``."""
    from benchmarks.bench_prompt_growth import read_rows

    rows = []
    for f in folders:
        rows += [r for r in read_rows(Path(f) / "growth.jsonl") if r["status"] == "ok"]
    return rows


#: Claims whose passes are one per head of its first layers (the per-head deposit map): their layer-tokens grow with
#: heads per layer too. DP2 reads DP1's map in one run; measured alone it makes the map itself.
PER_HEAD = {"together": ("DP1",), "alone": ("DP1", "DP2")}
MAPPED_LAYERS = 2  # = claims/test_deposit.py's MAPPED_LAYERS: the map zeroes each head of layers 0 and 1 in turn


def _depth(claim: str, layers: int, source_layers: int, heads: float = 1.0, mode: str = "alone") -> float:
    """How a claim's layer-tokens scale from the source's shape to the paper model's (``heads``: heads per layer
    over the source's)."""
    if claim == "T10":
        return min(layers, T10_LAYERS) / min(source_layers, T10_LAYERS)
    return layers / source_layers * (heads if claim in PER_HEAD[mode] else 1.0)


def _source(rows: list[dict], prefer) -> tuple[str, int, list[dict]]:
    """(model, seq-len, its rows by prompts) of the source ``prefer`` ranks first among the rows at the longest
    seq-len, rows of one process per count (passes booked once, as the nightly runs) before rows of a process per
    claim."""
    pool = [r for r in rows if r.get("mode") == "together"] or rows
    seq = max(r["seq_len"] for r in pool)
    model = min(sorted({r["model"] for r in pool if r["seq_len"] == seq}), key=prefer)
    return (
        model,
        seq,
        sorted((r for r in pool if r["model"] == model and r["seq_len"] == seq), key=lambda r: r["n_prompts"]),
    )


def projected_claims(paper: str, rows: list[dict], n_prompts: int) -> dict[str, dict]:
    """{claim: {layer_tokens, statistics_seconds, source, note}} of ``paper`` at ``n_prompts`` from the growth
    rows (the module's docstring, item 1): layer-tokens from the paper model's own rehearsal build where it was
    measured (its architecture), statistics from the model whose heads x layers are nearest the paper model's (the
    scaling by heads is an assumption: the nearer, the less it carries)."""
    from benchmarks.bench_prompt_growth import fit_line, fit_power, shape_of, stats_scale

    layers, heads = shape_of(paper)
    by_claim: dict[str, list[dict]] = {}
    for r in rows:
        by_claim.setdefault(r["claim"], []).append(r)
    out = {}
    for claim, rs in by_claim.items():
        own = f"{paper}-rehearsal"
        model, seq, mine = _source(rs, lambda m: (m != own, m))
        smodel, sseq, smine = _source(rs, lambda m: (abs(math.log(_size(m) / (layers * heads))), m))
        mode = mine[-1].get("mode", "alone")
        src_layers, src_heads = shape_of(model)
        ns, sns = [r["n_prompts"] for r in mine], [r["n_prompts"] for r in smine]
        cpu = fit_power(sns, [r["statistics_cpu_seconds"] for r in smine])
        line = fit_line(ns, [r["layer_tokens"] for r in mine])
        last = smine[-1]
        if cpu:
            stats, note = cpu[1] * n_prompts ** cpu[0], f"k={cpu[0]:.2f}"
        else:
            stats, note = last["statistics_cpu_seconds"] * n_prompts / last["n_prompts"], "one count: linear"
        per_head = 0.0
        if claim in PER_HEAD[mode]:  # the map's passes (one per head) apart from the shared passes booked to it
            per_head = (
                MAPPED_LAYERS * src_heads * n_prompts * seq * src_layers * (layers * heads) / (src_layers * src_heads)
            )
            mine = [
                {**r, "layer_tokens": r["layer_tokens"] - MAPPED_LAYERS * src_heads * r["n_prompts"] * seq * src_layers}
                for r in mine
            ]
            line = fit_line(ns, [r["layer_tokens"] for r in mine])
        tokens = line[1] + line[0] * n_prompts if line else mine[-1]["layer_tokens"] * n_prompts / mine[-1]["n_prompts"]
        if mode == "alone":
            note += "; alone: passes shared in one run counted here too"
        out[claim] = {
            "layer_tokens": max(0.0, tokens) * _depth(claim, layers, src_layers) + per_head,
            "statistics_seconds": max(0.0, stats) * stats_scale(claim, (layers, heads), shape_of(smodel)),
            "source": f"passes {model} {','.join(map(str, ns))}x{seq}, statistics {smodel} "
            f"{','.join(map(str, sns))}x{sseq}",
            "note": note,
        }
    return out


def shape_statistics(paper: str, n_prompts: int, seq_len: int) -> dict | None:
    """T5's statistics (its significance and a run's summary) of ``paper`` at ``n_prompts`` from the statistics
    alone measured on a capture of the paper model's own shape (``benchmarks/bench_statistics.py``'s rows in
    ``reports/dress-rehearsal/statistics*/``, the latest code's, label "after", at ``seq_len``): CPU seconds as
    c x prompts^k, with no scaling by heads; None where that shape was not measured at two counts."""
    from benchmarks.bench_prompt_growth import fit_power

    rows = [
        json.loads(line)
        for f in sorted(GROWTH.glob("statistics*/statistics.jsonl"))
        for line in f.read_text().splitlines()
        if line.strip()
    ]
    mine = [
        r
        for r in rows
        if r.get("status") == "ok" and r["shape"] == paper and r["seq_len"] == seq_len and r["label"] == "after"
    ]
    ns = [r["n_prompts"] for r in mine]
    fit = fit_power(ns, [r["summary_cpu_s"] + r["significance_cpu_s"] for r in mine])
    if fit is None:
        return None
    return {
        "statistics_seconds": fit[1] * n_prompts ** fit[0],
        "source": f"statistics {paper}'s shape {','.join(map(str, sorted(ns)))}x{seq_len} (bench_statistics)",
        "note": f"k={fit[0]:.2f}",
    }


def _size(model: str) -> int:
    from benchmarks.bench_prompt_growth import shape_of

    layers, heads = shape_of(model)
    return layers * heads


def fallback_claims(paper: str, results: dict, n_prompts: int, have: set[str]) -> dict[str, dict]:
    """The claims the growth rows lack, from the workload run (item 2), linear in prompts."""
    from benchmarks.bench_prompt_growth import shape_of, stats_scale

    layers, heads = shape_of(paper)
    source = WORKLOAD_SOURCE[get_spec(paper).adds_bos]
    src_layers, src_heads = shape_of(source)
    scale = n_prompts / results["settings"]["n_prompts"]
    return {
        claim: {
            "layer_tokens": lt * scale * _depth(claim, layers, src_layers, heads / src_heads, "together"),
            "statistics_seconds": max(0.0, other)
            * scale
            * stats_scale(claim, (layers, heads), (src_layers, src_heads)),
            "source": f"{source} (workload run)",
            "note": "linear in prompts, not measured",
        }
        for (model, claim), (lt, other) in claim_workload(results).items()
        if model == source and claim not in have
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


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--dtype", default="float32", choices=list(devices.DTYPES))
    ap.add_argument("--models", default="llama-3.2-1b,llama-3.2-3b,llama-3.1-8b")
    ap.add_argument("--n-prompts", type=int, default=512, help="the nightly's 512")
    ap.add_argument(
        "--growth",
        nargs="*",
        default=None,
        help="folders holding growth.jsonl (default: every reports/dress-rehearsal/growth*/)",
    )
    ap.add_argument(
        "--workload",
        default=str(ROOT / "reports" / "example" / "results.json"),
        help="results.json of a claims run on the bundled models, for claims the growth rows lack",
    )
    ap.add_argument("--batches", type=int, default=3)
    ap.add_argument("--per-claim", action="store_true", help="a row per claim under each model")
    a = ap.parse_args(argv)
    chosen = a.models.split(",")
    for name in chosen:
        if name not in names("paper"):
            raise SystemExit(f"{name}: the estimate is for paper models ({', '.join(names('paper'))})")
    folders = a.growth if a.growth is not None else [str(p.parent) for p in sorted(GROWTH.glob("growth*/growth.jsonl"))]
    rows = growth_rows(folders)
    results = json.loads(Path(a.workload).read_text()) if Path(a.workload).is_file() else None
    if not rows and results is None:
        raise SystemExit(
            f"no growth rows in {folders or [str(GROWTH / 'growth*')]} and no --workload {a.workload}: measure them "
            f"(benchmarks/bench_prompt_growth.py, docs/gpus.md)"
        )
    seqs = sorted({r["seq_len"] for r in rows})
    seq_len = max(seqs) if seqs else results["settings"]["seq_len"]
    try:
        device = devices.resolve_device(a.device, None, devices.gpu_count())
    except devices.DeviceError as e:
        raise SystemExit(str(e)) from None
    print(
        f"growth: {', '.join(folders) or 'none'} ({len(rows)} rows at {seqs} tokens); workload for the rest: "
        f"{a.workload if results else 'none'}"
    )
    print(
        f"device: {device} {a.dtype}; {a.n_prompts} prompts x {seq_len} tokens; forward = layer-tokens / measured "
        f"throughput; statistics = their CPU seconds as they grow with prompts (fitted per claim)"
    )
    print(
        f"{'model':18s} {'layer-tokens':>14s} {'k l-tok/s':>10s} {'forward s':>10s} {'stats s':>8s} {'total min':>9s}"
    )
    total = 0.0
    for name in chosen:
        claims = projected_claims(name, rows, a.n_prompts)
        if results is not None:
            claims |= fallback_claims(name, results, a.n_prompts, set(claims))
        if "T5" in claims and (own := shape_statistics(name, a.n_prompts, seq_len)) is not None:
            claims["T5"] = {**claims["T5"], **own, "source": f"{claims['T5']['source']}; {own['source']}"}
        layer_tokens = sum(c["layer_tokens"] for c in claims.values())
        stats = sum(c["statistics_seconds"] for c in claims.values())
        rate = throughput(name, device, a.dtype, seq_len, a.batches)
        seconds = layer_tokens / rate + stats
        total += seconds
        print(
            f"{name:18s} {layer_tokens:14,.0f} {rate / 1e3:10,.1f} {layer_tokens / rate:10.0f} "
            f"{stats:8.0f} {seconds / 60:9.1f}",
            flush=True,
        )
        if a.per_claim:
            for claim, c in sorted(claims.items()):
                print(
                    f"  {claim:6s} {c['layer_tokens']:14,.0f} {c['layer_tokens'] / rate:10.0f} s "
                    f"{c['statistics_seconds']:8.0f} s  from {c['source']} ({c['note']})"
                )
    print(f"all listed models in sequence on one device: {total / 60:.1f} min (model loading not included)")


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main()
