"""The related paper's models at its own size, trained on a GPU, with their deposit maps.

    python benchmarks/synthetic_gpu.py --encoding rope --task task1 --size paper --device cuda --out DIR

trains one model (``harness.synthetic.train``: the authors' recipe, bf16 autocast on a GPU, the data on the device)
or reads it from the cache, then zeroes each head of the listed layers alone on the held-out split
(``harness.synthetic.ablation``). It writes ``DIR/<model>.json`` (the training record: epochs, device seconds,
samples per second, losses, held-out accuracy; each layer's per-head accuracy and effect with 95% intervals over
evaluation samples, the deposit share and gap with theirs; the GPU and versions) and ``DIR/<model>.md``, the same as
a table. ``--keep-weights`` copies the trained ``final.pt`` beside them; ``--time-limit S`` stops after the epoch in which S
seconds have passed and keeps its checkpoint in DIR, for the next machine to resume (a lease shorter than the
schedule). ``benchmarks/gpu_check.sh --synthetic``
runs one per encoding, beside the GPU tier. The claims DS1-DS7 at paper size need every encoding on both tasks and three seeds
(``pytest claims --models synthetic-paper --device cuda``); this is the part of them that fits a short GPU lease.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from harness.spec.synthetic_sets import SYNTHETIC_ARCHITECTURES  # noqa: E402
from harness.stats.intervals import percentile_ci  # noqa: E402
from harness.synthetic import model as family  # noqa: E402
from harness.synthetic.ablation import deposit_of, head_map  # noqa: E402
from harness.synthetic.train import SIZES, SyntheticSpec, TrainingStopped, folder, train  # noqa: E402


def interval(rows: np.ndarray, n: int) -> list[float]:
    return [float(x) for x in percentile_ci(rows[np.isfinite(rows)], n=n)]


def layer_map(trained, layer: int) -> dict:
    m = head_map(trained, layer=layer)
    record = {
        "layer": layer,
        "samples": m.units,
        "accuracy": m.accuracy,
        "ablated_accuracy": [float(x) for x in m.ablated],
        "effects": [float(x) for x in m.effects],
        "effects_ci": [interval(m.rows[:, h], m.units) for h in range(len(m.effects))],
    }
    try:
        d = deposit_of(m)
    except ValueError as e:  # no head moves accuracy (a model that learned nothing): the map, without a share
        return record | {"deposit": None, "no_deposit": str(e)}
    return record | {
        "deposit": {"head": d.head, "share": d.share, "share_ci": interval(d.share_rows, m.units)}
        | {"second": d.second, "gap": d.gap, "gap_ci": interval(d.gap_rows, m.units)}
    }


def device_facts(device: str) -> dict:
    import transformers

    facts = {"torch": torch.__version__, "transformers": transformers.__version__, "device": device}
    if torch.device(device).type == "cuda":
        facts |= {"gpu": torch.cuda.get_device_name(device), "cuda": torch.version.cuda}
        facts["peak_memory_gib"] = round(torch.cuda.max_memory_allocated(device) / 2**30, 2)
    return facts


def markdown(record: dict) -> str:
    info = record["training"]
    lines = [
        f"### {record['model']}",
        "",
        f"Trained {info['epochs']} epochs on {info['samples']:,} samples in {info['seconds']:.0f} s on "
        f"{record['facts'].get('gpu', record['facts']['device'])} ({info['samples'] * info['epochs'] / info['seconds']:,.0f} "
        f"samples/s); final training loss {info['losses'][-1]:.3f}; held-out accuracy **{info['test_accuracy']:.4f}**.",
        "",
    ]
    for lm in record["layers"]:
        d = lm["deposit"]
        lines.append(
            f"Layer {lm['layer']}: {lm['no_deposit']}; {lm['samples']:,} held-out samples."
            if d is None
            else f"Layer {lm['layer']}: head {d['head']} carries {d['share']:.3f} [{d['share_ci'][0]:.3f}, "
            f"{d['share_ci'][1]:.3f}] of the layer's summed effects (gap over head {d['second']}: {d['gap']:.3f} "
            f"[{d['gap_ci'][0]:.3f}, {d['gap_ci'][1]:.3f}]); {lm['samples']:,} held-out samples."
        )
        lines += [
            "",
            "| head | accuracy ablated | effect \\|1 − ablated/unablated\\| | 95% interval |",
            "|---|---|---|---|",
        ]
        for h, (acc, eff, ci) in enumerate(zip(lm["ablated_accuracy"], lm["effects"], lm["effects_ci"])):
            lines.append(f"| {h} | {acc:.4f} | {eff:.4f} | [{ci[0]:.4f}, {ci[1]:.4f}] |")
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    ap.add_argument("--encoding", required=True, choices=family.ENCODINGS)
    ap.add_argument("--task", default="task1", choices=("task1", "task2"))
    ap.add_argument("--arch", default="authors", choices=SYNTHETIC_ARCHITECTURES)
    ap.add_argument("--size", default="paper", choices=tuple(SIZES))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--device", default="cuda")
    ap.add_argument(
        "--layers", type=int, nargs="+", default=[0, 1], help="the layers whose heads are zeroed one by one"
    )
    ap.add_argument("--out", required=True)
    ap.add_argument("--keep-weights", action="store_true", help="copy the trained final.pt into --out")
    ap.add_argument(
        "--time-limit",
        type=float,
        help="seconds of training after which to stop at the end of an epoch, its checkpoint copied into --out "
        "(OUT/<cache folder>/checkpoint.pt): placed under $ABSPOS_CACHE/synthetic/ on the next machine, training "
        "resumes there",
    )
    args = ap.parse_args(argv)
    if torch.device(args.device).type == "cuda" and not torch.cuda.is_available():
        ap.error(f"--device {args.device}: no CUDA device visible")
    spec = SyntheticSpec(args.task, args.encoding, args.arch, args.size, args.seed)
    if max(args.layers) >= SIZES[args.size].shape.layers:
        ap.error(f"--layers {max(args.layers)}: the {args.size} size has {SIZES[args.size].shape.layers} layers")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    deadline = None if args.time_limit is None else time.monotonic() + args.time_limit
    try:
        trained = train(spec, device=args.device, log=lambda line: print(line, flush=True), deadline=deadline)
    except TrainingStopped as stopped:
        kept = out / stopped.checkpoint.parent.name
        kept.mkdir(exist_ok=True)
        shutil.copy(stopped.checkpoint, kept / "checkpoint.pt")
        print(
            f"{stopped}; kept as {kept / 'checkpoint.pt'}: put that folder under $ABSPOS_CACHE/synthetic/", flush=True
        )
        return 0
    t1 = time.perf_counter()
    layers = [layer_map(trained, layer) for layer in args.layers]
    record = {
        "model": spec.name,
        "training": trained.info,
        "layers": layers,
        "wall_seconds": {"train_or_load": round(t1 - t0, 1), "head_maps": round(time.perf_counter() - t1, 1)},
        "facts": device_facts(args.device),
    }
    (out / f"{spec.name}.json").write_text(json.dumps(record, indent=1))
    (out / f"{spec.name}.md").write_text(markdown(record))
    if args.keep_weights:
        shutil.copy(folder(spec, args.device) / "final.pt", out / f"{spec.name}.pt")
    print(markdown(record), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
