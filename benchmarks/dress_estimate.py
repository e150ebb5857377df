"""The nightly's time on a paper model's full build, per claim, from two dress rehearsals (bench_dress_rehearsal.py) at
the nightly's settings: the narrow build through the whole selection (each claim's workload: layer-tokens and
statistics seconds) and the full build through what the machine had time for (its forward rate, peaks and times).

    python benchmarks/dress_estimate.py NARROW/dress.json FULL/dress.json [FULL2/dress.json ...]
        [--device-rate LAYER_TOKENS_PER_S] [--out F]

(several full-build runs, each of a part of the selection, count as one: the whole selection on a full 8B build need
not fit one session).

Per claim, estimated (every claim booked as in one whole run: a pass shared by several claims is booked to the first):
    layer-tokens (narrow) x layers (full) / layers (narrow)       the same prompts pass through every layer (T10's
                                                                  passes stop after layer 4 in both builds: x 1)
      / the full build's forward rate (layer-tokens per second, measured in its own run)
    + statistics seconds (narrow) x heads x layers (full) / heads x layers (narrow)   (assumption: the per-head
                                                                  statistics dominate and are linear in heads)
and, beside it, what the full build measured where it ran the claim (alone, a claim pays for the passes it would
share in the whole run). The peak memory is measured only: the full build's largest over the claims it ran.
The GPU column (with --device-rate) puts every claim's full-build layer-tokens at that rate and keeps its statistics
seconds (they run on the CPU).
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
    """One row per claim of the narrow run: {claim, tests, layer_tokens, statistics_seconds, cpu_seconds,
    gpu_seconds, measured}: the full build's workload from the narrow run's (every claim booked as in one whole run),
    its CPU seconds at the full run's measured forward rate, and ``measured`` the full run's own row for the claim
    where it ran there (alone, it may pay for passes the whole run books to an earlier claim)."""
    (nl, nh), (fl, fh) = _shape(narrow), _shape(full)
    measured = {r["claim"]: r for r in full["claims"]}
    rate = forward_rate(full)
    rows = []
    for r in narrow["claims"]:
        depth = (min(fl, T10_LAYERS) / min(nl, T10_LAYERS)) if r["claim"] == "T10" else fl / nl
        tokens = round(r["layer_tokens"] * depth)
        stats = r["statistics_seconds"] * (fh * fl) / (nh * nl)
        rows.append(
            {
                "claim": r["claim"],
                "tests": r["tests"],
                "layer_tokens": tokens,
                "statistics_seconds": stats,
                "cpu_seconds": tokens / rate + stats if rate else None,
                "gpu_seconds": tokens / device_rate + stats if device_rate else None,
                "measured": measured.get(r["claim"]),
            }
        )
    return rows


def forward_rate(full: dict) -> float | None:
    """The full build's measured forward rate (layer-tokens per second over its run's passes)."""
    fwd = sum(r["forward_seconds"] for r in full["claims"])
    return sum(r["layer_tokens"] for r in full["claims"]) / fwd if fwd else None


def table(rows: list[dict]) -> str:
    """Estimated columns (est.), and the full build's own measurement where it ran the claim."""
    gpu = any(r["gpu_seconds"] is not None for r in rows)
    head = "| claim | tests | layer-tokens (est.) | statistics s (est.) | CPU (est.) |"
    head += " GPU (est.) |" if gpu else ""
    head += " measured alone on the full build: time, layer-tokens, peak RSS |"
    lines = [head, "|" + "---|" * (7 if gpu else 6)]

    def minutes(s):
        return "—" if s is None else f"{s / 60:.1f} min"

    for r in rows:
        m = r["measured"]
        cells = [r["claim"], str(r["tests"]), f"{r['layer_tokens']:,}", f"{r['statistics_seconds']:.0f}"]
        cells.append(minutes(r["cpu_seconds"]))
        if gpu:
            cells.append(minutes(r["gpu_seconds"]))
        peak = "" if m is None or m["peak_kib"] is None else f", {m['peak_kib'] / 2**20:.1f} GiB"
        cells.append("—" if m is None else f"{minutes(m['seconds'])}, {m['layer_tokens']:,}{peak}")
        lines.append("| " + " | ".join(cells) + " |")
    cpu = sum(r["cpu_seconds"] or 0 for r in rows)
    peaks = [r["measured"]["peak_kib"] for r in rows if r["measured"] and r["measured"]["peak_kib"]]
    total = ["all", str(sum(r["tests"] for r in rows)), f"{sum(r['layer_tokens'] for r in rows):,}"]
    total += [f"{sum(r['statistics_seconds'] for r in rows):.0f}", f"{cpu / 3600:.1f} h"]
    if gpu:
        total.append(f"{sum(r['gpu_seconds'] for r in rows) / 60:.0f} min")
    if not all(r["measured"] for r in rows):
        total.append(f"peak {max(peaks) / 2**20:.1f} GiB over the measured claims only" if peaks else "—")
    else:  # every claim ran on the full build: the peak is the selection's; the parts' times overlap (shared passes)
        spent = sum(r["measured"]["seconds"] for r in rows)
        peak = f", peak {max(peaks) / 2**20:.1f} GiB" if peaks else ""
        total.append(f"{spent / 3600:.1f} h in parts{peak} (every claim measured)")
    lines.append("| " + " | ".join(total) + " |")
    return "\n".join(lines)


def pieces(runs: list[dict]) -> dict:
    """Full-build runs of parts of the selection (one per session, say) as one: every claim each measured (the first
    run's where two measured one claim), the same model and settings required."""
    first = runs[0]
    for r in runs[1:]:
        if (r["settings"], r["model"]) != (first["settings"], first["model"]):
            raise ValueError(f"{r['run']}: another model or other settings than {first['run']}")
    claims: dict = {}
    for r in runs:
        for row in r["claims"]:
            claims.setdefault(row["claim"], row)
    return {**first, "claims": list(claims.values()), "run": ", ".join(r["run"] for r in runs)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("narrow", help="dress.json of the narrow build's run through the whole selection")
    ap.add_argument("full", nargs="+", help="dress.json of each full-build run (each any part of the selection)")
    ap.add_argument("--device-rate", type=float, default=None, help="layer-tokens/s of the nightly's GPU")
    ap.add_argument("--out", default=None, help="also write the table here (markdown)")
    a = ap.parse_args(argv)
    narrow = json.loads(Path(a.narrow).read_text())
    try:
        full = pieces([json.loads(Path(p).read_text()) for p in a.full])
    except ValueError as e:
        ap.error(str(e))
    if narrow["settings"] != full["settings"] or narrow["rehearses"] != full["rehearses"]:
        ap.error("the runs must rehearse one paper model at the same settings (seq-len, prompts, seed, ...)")
    rows = estimate(narrow, full, a.device_rate)
    s = full["settings"]
    text = (
        f"{full['rehearses']} at {s['n_prompts']} prompts x {s['seq_len']} tokens on {full['machine']}: measured "
        f"claims from {full['model']} ({full['run']}), estimated ones from the workload of {narrow['model']} "
        f"({narrow['run']}) scaled to the full build at its measured forward rate, "
        f"{(forward_rate(full) or 0):,.0f} layer-tokens/s (benchmarks/dress_estimate.py states how).\n\n"
        + table(rows)
        + "\n"
    )
    if a.out:
        Path(a.out).write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    raise SystemExit(main())
