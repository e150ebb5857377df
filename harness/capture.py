"""Forward passes that keep only what a measurement needs.

``capture(model, ids, readers)`` runs the prompts in mini-batches through the base decoder
(no LM head: no measurement reads logits over the vocabulary) and, at each named hook point,
applies a *reader* that reduces the activation to the few numbers wanted (pairs of a pattern,
a few positions of the residual stream). Full n x n patterns exist one layer at a time only.
"""

from __future__ import annotations

import os
import sys
import time
from collections import Counter
from typing import Callable

import numpy as np
import torch

from .devices import to_stats
from .hooks import HookedModel

Reader = Callable[[torch.Tensor], torch.Tensor]


class Progress:
    """Status of a capture on the terminal: on a terminal, one line updated per batch (model, what, prompts done,
    time left) and left as a summary when done; elsewhere (a log file) the summary line alone; nothing for a capture
    done within ``QUIET_BELOW`` seconds. Off when the caller says so (the run context is quiet under CI) or with
    ABSPOS_PROGRESS=0.

    ``Progress.write`` is where lines go (stderr by default; the pytest plugin points it at pytest's terminal past
    its output capture, so a normal ``pytest claims`` run shows progress as it goes) and ``Progress.tty`` whether
    that is a terminal (lines rewritten in place)."""

    write: Callable[[str], None] | None = None
    tty: bool | None = None
    QUIET_BELOW = 2.0  # seconds: captures shorter than this show nothing ($ABSPOS_PROGRESS_AFTER overrides)

    def __init__(self, label: str, total: int, enabled: bool = True):
        self.label, self.total, self.t0, self.shown = label, total, time.time(), False
        self.quiet_below = float(os.environ.get("ABSPOS_PROGRESS_AFTER", self.QUIET_BELOW))
        self.enabled = enabled and os.environ.get("ABSPOS_PROGRESS", "1") != "0"

    def update(self, done: int) -> None:
        if not self.enabled:
            return
        write = Progress.write or _stderr
        tty = sys.stderr.isatty() if Progress.tty is None else Progress.tty
        el = time.time() - self.t0
        if el < self.quiet_below and not self.shown:
            return  # a short capture says nothing (dozens of them would bury the test dots)
        self.shown = True
        if done >= self.total:
            write(f"\r[abspos] {self.label}: {self.total} prompts in {el:.1f}s\x1b[K\n" if tty else
                  f"[abspos] {self.label}: {self.total} prompts in {el:.1f}s\n")
        elif tty:
            left = el / done * (self.total - done) if done else 0.0
            write(f"\r[abspos] {self.label}: {done}/{self.total} prompts, {el:.0f}s, ~{left:.0f}s left\x1b[K")


def _stderr(text: str) -> None:
    sys.stderr.write(text)
    sys.stderr.flush()


class Workload:
    """Forward-pass work done in this process, per model: wall seconds and layer-tokens (prompt tokens x
    decoder layers run). The pytest plugin books each test's share into the run report; the nightly
    runtime estimate (benchmarks/bench_nightly.py) divides a run's layer-tokens by a device's throughput."""

    def __init__(self):
        self.seconds: Counter = Counter()
        self.layer_tokens: Counter = Counter()

    def add(self, model: str, seconds: float, layer_tokens: int) -> None:
        self.seconds[model] += seconds
        self.layer_tokens[model] += layer_tokens

    def totals(self) -> tuple[float, int]:
        return sum(self.seconds.values()), sum(self.layer_tokens.values())


WORKLOAD = Workload()


class _Stop(Exception):
    """Raised after the last layer a capture needs: the rest of the forward pass is skipped."""


def _stop(value, name):
    raise _Stop(name)


def capture(model: HookedModel, ids: np.ndarray, readers: dict, batch_size: int = 8,
            label: str = "capture", stop_after: int | None = None, progress: bool | None = None) -> dict[str, np.ndarray]:
    """Run ``ids`` [N, L]; return {key: reader outputs concatenated over prompts (float64 numpy)}.

    ``readers`` maps a key to a reader, read at the hook point of the same name, or to a
    ``(hook name, reader)`` pair when several readers share one hook point. ``stop_after`` = l ends
    each forward pass after decoder layer l (for measurements of the first layers only)."""
    out: dict[str, list[torch.Tensor]] = {key: [] for key in readers}
    hooks: dict[str, list] = {}
    for key, entry in readers.items():
        point, reader = entry if isinstance(entry, tuple) else (key, entry)
        hooks.setdefault(point, []).append(_collector(out[key], reader))
    if stop_after is not None:
        hooks.setdefault(f"blocks.{stop_after}.hook_resid_post", []).append(_stop)
    progress = Progress(f"{model.spec.name} {label}", len(ids),
                        enabled=not os.environ.get("CI") if progress is None else progress)
    t0, layers_run = time.perf_counter(), model.n_layers if stop_after is None else stop_after + 1
    with torch.no_grad(), model.hooks(hooks):
        for start in range(0, len(ids), batch_size):
            batch = torch.as_tensor(ids[start:start + batch_size], device=model.device)
            try:
                model.base(input_ids=batch, use_cache=False)
            except _Stop:
                pass
            progress.update(min(start + batch_size, len(ids)))
    WORKLOAD.add(model.spec.name, time.perf_counter() - t0, int(np.asarray(ids).size) * layers_run)
    return {key: np.concatenate(chunks) for key, chunks in out.items()}


def _collector(sink: list, reader: Reader):
    def fn(value, _):
        sink.append(to_stats(reader(value)))

    return fn


# ---- readers: small pure reductions of one activation -------------------------------------------------

def pattern_at_pairs(i: np.ndarray, j: np.ndarray) -> Reader:
    """[B, H, n, n] -> [B, P, H]: the attention quantity at the sampled (query i, key j) pairs."""
    ti, tj = torch.as_tensor(i), torch.as_tensor(j)

    def read(x):
        return x[:, :, ti.to(x.device), tj.to(x.device)].transpose(1, 2).float()

    return read


def sink_profile(x: torch.Tensor) -> torch.Tensor:
    """[B, H, n, n] -> [B, H, n]: sink magnitude of every key k, the mean weight later queries
    (i > k) give to k; the last key has no later query and gets NaN."""
    n = x.shape[-1]
    later = torch.tril(torch.ones(n, n, device=x.device, dtype=torch.float32), diagonal=-1)
    counts = later.sum(0)
    total = (x.float() * later).sum(dim=-2)
    return total / counts.where(counts > 0, torch.full_like(counts, float("nan")))


def positions(pos) -> Reader:
    """[B, n, ...] -> [B, len(pos), ...]: keep chosen positions of a residual-stream-like tensor."""
    idx = torch.as_tensor(pos)

    def read(x):
        return x[:, idx.to(x.device)].float()

    return read


def norms(x: torch.Tensor) -> torch.Tensor:
    """[B, n, D] -> [B, n]: L2 norm at every position."""
    return x.float().norm(dim=-1)
