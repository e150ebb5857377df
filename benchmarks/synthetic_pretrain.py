"""Train every model of the related paper's synthetic sets ahead of a claims run, into the cache the run reads.

    nice -n 15 python benchmarks/synthetic_pretrain.py --models synthetic-pilot --threads 1 >> pretrain.log 2>&1

trains, one after another, each model the claim tests of ``--models`` (``synthetic-<size>[-<arch>]``, both
architectures unless one is named) ask for (``harness.synthetic.sets``), skipping those already cached; an
interrupted model resumes from its last epoch's checkpoint when the command is run again. One line per epoch, one per
model done (its held-out accuracy and training seconds), and the list of what is cached at the end. A claims run on
the same sets (``pytest claims --models synthetic-pilot``) then reads every model from the cache.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from harness.run.selection import synthetic_targets  # noqa: E402
from harness.synthetic import sets  # noqa: E402
from harness.synthetic.train import folder, train  # noqa: E402


def specs_of(option: str) -> list:
    targets, rest = synthetic_targets(option)
    if rest or not targets:
        raise SystemExit(f"--models {option}: name synthetic sets only (synthetic-<size>[-<arch>])")
    out = []
    for target in targets:
        size, arch = target.removeprefix("synthetic-").split("-")
        out += [s for s in sets.models(size, arch) if s not in out]
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    ap.add_argument("--models", required=True, help="synthetic-<size>[-<arch>], comma-separated")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--threads", type=int, help="torch's CPU threads (default: torch's own)")
    ap.add_argument("--list", action="store_true", help="list the models and whether each is cached; train nothing")
    args = ap.parse_args(argv)
    specs = specs_of(args.models)
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.list:
        for spec in specs:
            print(f"{spec.name}: {'cached' if (folder(spec, args.device) / 'final.pt').is_file() else 'to train'}")
        return 0
    for k, spec in enumerate(specs, 1):
        t0 = time.perf_counter()
        done = train(spec, device=args.device, log=lambda line: print(line, flush=True))
        print(
            f"[pretrain] {k}/{len(specs)} {spec.name}: held-out accuracy {done.info['test_accuracy']:.4f}, "
            f"{done.info['seconds']:.0f} s of training ({time.perf_counter() - t0:.0f} s here)",
            flush=True,
        )
    print(f"[pretrain] all {len(specs)} models of {args.models} are cached", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
