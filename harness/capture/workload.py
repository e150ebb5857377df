"""Forward-pass work done, per model, against its floor (each distinct capture once).

A ``Workload`` is created by its owner (the pytest plugin, per process; a ``Session`` its own by default) and handed to
each capture, which books its pass there.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from typing import Hashable

import numpy as np


class Workload:
    """Forward-pass work done in this process, per model: wall seconds, layer-tokens run (prompt tokens x decoder
    layers run) and the floor: the layer-tokens of each distinct capture once, where a capture is its prompts'
    rows under one condition (the edits) and depth, so a prompt run again under the same condition and
    depth, alone or inside a larger set, adds nothing to the floor. The pytest plugin books each test's share
    (setup and call) into the run report; benchmarks/bench_suite.py compares run with floor; the nightly runtime
    estimate (benchmarks/bench_nightly.py) divides a run's layer-tokens by a device's throughput."""

    def __init__(self):
        self.seconds: Counter = Counter()
        self.cpu_seconds: Counter = Counter()  # the process's CPU time (every thread) inside forward passes
        self.layer_tokens: Counter = Counter()
        self.floor: Counter = Counter()
        self.load_seconds = 0.0  # loading models (Session.model): inside a test's setup, never its own time
        self.load_cpu_seconds = 0.0  # the CPU time of those loads
        self._seen: dict[tuple, set] = {}

    def add(
        self,
        model: str,
        seconds: float,
        layer_tokens: int,
        ids: np.ndarray | None = None,
        condition: Hashable = None,
        layers: int = 0,
        cpu_seconds: float = 0.0,
    ) -> None:
        self.seconds[model] += seconds
        self.cpu_seconds[model] += cpu_seconds
        self.layer_tokens[model] += layer_tokens
        if ids is None:
            self.floor[model] += layer_tokens
            return
        ids = np.asarray(ids)
        seen = self._seen.setdefault((model, condition, ids.shape[1], layers), set())
        rows = {hashlib.sha1(r.tobytes()).digest() for r in ids}
        self.floor[model] += len(rows - seen) * ids.shape[1] * layers
        seen |= rows

    def totals(self) -> tuple[float, int, int]:
        """(seconds, layer-tokens run, floor layer-tokens) over every model."""
        return sum(self.seconds.values()), sum(self.layer_tokens.values()), sum(self.floor.values())

    def booked_since(self, start: tuple[float, int, int] | None, loading: float | None, model=None) -> dict:
        """The forward work since ``start`` (``totals()`` then; None: now) and model-loading seconds since ``loading``:
        what a claim test is booked, with the shape of ``model`` (a ``LoadedModel``) the work scales with."""
        seconds, layer_tokens, floor = start or self.totals()
        s2, lt2, f2 = self.totals()
        booked: dict = {
            "seconds": round(s2 - seconds, 3),
            "layer_tokens": lt2 - layer_tokens,
            "floor_layer_tokens": f2 - floor,
            "load_seconds": 0.0 if loading is None else round(self.load_seconds - loading, 3),
        }
        if model is not None:  # the shape the work scales with (benchmarks/bench_nightly.py)
            booked["shape"] = {"layers": model.n_layers, "heads": model.n_heads}
        return booked
