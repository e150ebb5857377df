"""The nightly's time on a paper model's full build, per claim, from two dress rehearsals (bench_dress_rehearsal.py) at
the nightly's settings: the narrow build through the whole selection (each claim's workload: layer-tokens and
statistics seconds) and the full build through what the machine had time for (its forward rate, peaks and times).

    python benchmarks/dress_estimate.py NARROW/dress.json FULL/dress.json [--device-rate LAYER_TOKENS_PER_S] [--out F]

Per claim, measured on the full build where it ran there; else estimated:
    layer-tokens (narrow) x layers (full) / layers (narrow)       the same prompts pass through every layer (T10's
                                                                  passes stop after layer 4 in both builds: x 1)
      / the full build's forward rate (layer-tokens per second, measured in its own run)
    + statistics seconds (narrow) x heads x layers (full) / heads x layers (narrow)   (assumption: the per-head
                                                                  statistics dominate and are linear in heads)
The GPU column (with --device-rate) puts every claim's full-build layer-tokens at that rate and keeps its statistics
seconds (they run on the CPU). Every estimated cell says so; the measured ones are the full run's own figures.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
T10_LAYERS = 4  # = harness.stats.length_design.FIRST: T10's passes stop after this many layers


def _shape(summary: dict) -> tuple[int, int]:
    return summary["shape"]["layers"], summary["shape"]["heads"]


def estimate(narrow: dict, full: dict, device_rate: float | None = None) -> list[dict]:
    """One row per claim of the narrow run: {claim, source, cpu_seconds, layer_tokens, statistics_seconds, peak_kib,
    gpu_seconds}; ``source`` "measured" (the full run has the claim) or "estimated"."""
    (nl, nh), (fl, fh) = _shape(narrow), _shape(full)
    measured = {r["claim"]: r for r in full["claims"]}
    fwd = sum(r["forward_seconds"] for r in full["claims"])
    rate = sum(r["layer_tokens"] for r in full["claims"]) / fwd if fwd else None
    rows = []
    for r in narrow["claims"]:
        m = measured.get(r["claim"])
        if m is not None:
            row = {**m, "source": "measured", "cpu_seconds": m["seconds"]}
        else:
            depth = (min(fl, T10_LAYERS) / min(nl, T10_LAYERS)) if r["claim"] == "T10" else fl / nl
            tokens = r["layer_tokens"] * depth
            stats = r["statistics_seconds"] * (fh * fl) / (nh * nl)
            cpu = tokens / rate + stats if rate else None
            row = {"claim": r["claim"], "tests": r["tests"], "layer_tokens": round(tokens), "peak_kib": None}
            row |= {"statistics_seconds": stats, "source": "estimated", "cpu_seconds": cpu}
        row["gpu_seconds"] = row["layer_tokens"] / device_rate + row["statistics_seconds"] if device_rate else None
        rows.append(row)
    return rows


def table(rows: list[dict], narrow: dict, full: dict) -> str:
    gpu = any(r["gpu_seconds"] is not None for r in rows)
    head = "| claim | tests | full build, CPU | layer-tokens | statistics s | peak RSS |" + (
        " GPU estimate |" if gpu else ""
    )
    lines = [head, "|" + "---|" * (7 if gpu else 6)]
    for r in rows:
        est = r["source"] == "estimated"
        cpu = "—" if r["cpu_seconds"] is None else f"{r['cpu_seconds'] / 60:.1f} min" + (" (est.)" if est else "")
        peak = "—" if r["peak_kib"] is None else f"{r['peak_kib'] / 2**20:.1f} GiB"
        cells = [r["claim"], str(r["tests"]), cpu, f"{r['layer_tokens']:,}" + (" (est.)" if est else "")]
        cells += [f"{r['statistics_seconds']:.0f}" + (" (est.)" if est else ""), peak]
        if gpu:
            cells.append(f"{r['gpu_seconds'] / 60:.1f} min (est.)")
        lines.append("| " + " | ".join(cells) + " |")
    cpu_total = sum(r["cpu_seconds"] or 0 for r in rows)
    measured = sum(r["cpu_seconds"] or 0 for r in rows if r["source"] == "measured")
    peak = max((r["peak_kib"] or 0 for r in rows), default=0)
    total = [
        "all",
        str(sum(r["tests"] for r in rows)),
        f"{cpu_total / 3600:.1f} h ({measured / 60:.0f} min measured)",
        f"{sum(r['layer_tokens'] for r in rows):,}",
        f"{sum(r['statistics_seconds'] for r in rows):.0f}",
        f"{peak / 2**20:.1f} GiB (measured claims)" if peak else "—",
    ]
    if gpu:
        total.append(f"{sum(r['gpu_seconds'] for r in rows) / 60:.0f} min (est.)")
    lines.append("| " + " | ".join(total) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("narrow", help="dress.json of the narrow build's run through the whole selection")
    ap.add_argument("full", help="dress.json of the full build's run (any part of the selection)")
    ap.add_argument("--device-rate", type=float, default=None, help="layer-tokens/s of the nightly's GPU")
    ap.add_argument("--out", default=None, help="also write the table here (markdown)")
    a = ap.parse_args(argv)
    narrow, full = (json.loads(Path(p).read_text()) for p in (a.narrow, a.full))
    if narrow["settings"] != full["settings"] or narrow["rehearses"] != full["rehearses"]:
        ap.error("the two runs must rehearse one paper model at the same settings (seq-len, prompts, seed, ...)")
    rows = estimate(narrow, full, a.device_rate)
    s = full["settings"]
    text = (
        f"{full['rehearses']} at {s['n_prompts']} prompts x {s['seq_len']} tokens on {full['machine']}: measured "
        f"claims from {full['model']} ({full['run']}), estimated ones from the workload of {narrow['model']} "
        f"({narrow['run']}) scaled to the full build (benchmarks/dress_estimate.py states how).\n\n"
        + table(rows, narrow, full)
        + "\n"
    )
    if a.out:
        Path(a.out).write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    raise SystemExit(main())
