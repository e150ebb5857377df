"""Where a run's time went, per model: its tests' seconds, the forward passes' share, and the layer-tokens run
against their floor (each distinct capture once): the report's last section and the benchmarks' tables."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from harness.outcome.claim_result import ClaimResult


@dataclass
class ModelTime:
    """One model's time and forward-pass work, summed over its records."""

    seconds: float = 0.0  # the tests' time with their fixtures (model loading excluded)
    forward_seconds: float = 0.0  # their forward passes' share of it
    layer_tokens: int = 0  # prompt tokens × decoder layers run
    shape: dict | None = None  # {"layers", "heads"} of the model, the work scales with it
    floor_layer_tokens: int = 0  # each distinct capture counted once


def time_per_model(records: list) -> dict[str | None, ModelTime]:
    """{model or None: its ModelTime} summed over its records (loaded, or as results.json holds them; a record without a
    floor, from before floors were booked, counts its layer-tokens)."""
    acc: dict = defaultdict(ModelTime)
    for r in records:  # a loaded record's times are what the run recorded after the test
        a, t = (acc[r.model], r.recorded) if isinstance(r, ClaimResult) else (acc[r.get("model")], r)
        a.seconds += t.get("seconds") or 0.0
        a.forward_seconds += t.get("forward_seconds") or 0.0
        a.layer_tokens += t.get("layer_tokens") or 0
        a.shape = t.get("shape") or a.shape
        a.floor_layer_tokens += t.get("floor_layer_tokens", t.get("layer_tokens")) or 0
    return dict(acc)


def time_accounting(records: list) -> list[list[str]]:
    """Per model: test seconds, forward seconds, layer-tokens run, their floor, run / floor, throughput, other."""
    rows = []
    for m, a in time_per_model(records).items():
        t, f, lt, fl = a.seconds, a.forward_seconds, a.layer_tokens, a.floor_layer_tokens
        if t >= 0.5 or lt:
            rows.append(
                [
                    m or "—",
                    f"{t:.0f}",
                    f"{f:.0f}",
                    f"{lt:,}",
                    f"{fl:,}",
                    f"{lt / fl:.3f}" if fl else "—",
                    f"{lt / f:,.0f}" if f else "—",
                    f"{t - f:.0f}",
                ]
            )
    return rows
