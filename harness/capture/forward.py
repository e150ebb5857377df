"""Forward passes that keep only what a measurement needs.

``capture(model, ids, readers)`` runs the prompts in mini-batches through the base decoder
(no LM head: no measurement reads logits over the vocabulary) and, at each named hook point,
applies a *reader* that reduces the activation to the few numbers wanted (pairs of a pattern,
a few positions of the residual stream). Full n x n patterns exist one layer at a time only.
"""

from __future__ import annotations

import hashlib
import os
import sys
import time
from collections import Counter
from typing import Callable, Hashable

import numpy as np
import torch

from harness.model.devices import to_stats
from harness.model.hooks import HookedModel

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
    """Forward-pass work done in this process, per model: wall seconds, layer-tokens run (prompt tokens x decoder
    layers run) and the floor: the layer-tokens of each distinct capture once, where a capture is its prompts'
    rows under one condition (the edits) and depth, so a prompt run again under the same condition and
    depth, alone or inside a larger set, adds nothing to the floor. The pytest plugin books each test's share
    (setup and call) into the run report; benchmarks/bench_suite.py compares run with floor; the nightly runtime
    estimate (benchmarks/bench_nightly.py) divides a run's layer-tokens by a device's throughput."""

    def __init__(self):
        self.seconds: Counter = Counter()
        self.layer_tokens: Counter = Counter()
        self.floor: Counter = Counter()
        self.load_seconds = 0.0  # loading models (Session.model): inside a test's setup, never its own time
        self._seen: dict[tuple, set] = {}

    def add(self, model: str, seconds: float, layer_tokens: int, ids: np.ndarray | None = None,
            condition: Hashable = None, layers: int = 0) -> None:
        self.seconds[model] += seconds
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


WORKLOAD = Workload()


class _Stop(Exception):
    """Raised after the last layer a capture needs: the rest of the forward pass is skipped."""


def _stop(value, name):
    raise _Stop(name)


def capture(model: HookedModel, ids: np.ndarray, readers: dict, batch_size: int = 8, label: str = "capture",
            stop_after: int | None = None, progress: bool | None = None,
            condition: Hashable = None) -> dict[str, np.ndarray]:
    """Run ``ids`` [N, L]; return {key: reader outputs concatenated over prompts (float64 numpy)}.

    ``readers`` maps a key to a reader, read at the hook point of the same name, or to a
    ``(hook name, reader)`` pair when several readers share one hook point, or ``(hook name, reader, rows)`` to
    keep only the prompts ``rows`` (sorted indices into ``ids``: a smaller prompt set read in a larger pass). ``stop_after`` = l ends
    each forward pass after decoder layer l (for measurements of the first layers only). ``condition`` names
    what the pass runs under (the edits applied) for the workload's floor (``Workload``; default: the label)."""
    out: dict[str, list[torch.Tensor]] = {key: [] for key in readers}
    hooks: dict[str, list] = {}
    batch = {"start": 0, "stop": 0}  # the prompts of the batch in flight (readers keep only their rows)
    for key, entry in readers.items():
        point, reader, rows = (entry + (None,) * (3 - len(entry))) if isinstance(entry, tuple) else (key, entry, None)
        hooks.setdefault(point, []).append(_collector(out[key], reader, rows, batch))
    if stop_after is not None:
        hooks.setdefault(f"blocks.{stop_after}.hook_resid_post", []).append(_stop)
    progress = Progress(f"{model.spec.name} {label}", len(ids),
                        enabled=not os.environ.get("CI") if progress is None else progress)
    t0, layers_run = time.perf_counter(), model.n_layers if stop_after is None else stop_after + 1
    with torch.no_grad(), model.hooks(hooks):
        for start in range(0, len(ids), batch_size):
            batch.update(start=start, stop=start + batch_size)
            try:
                model.base(input_ids=torch.as_tensor(ids[start:start + batch_size], device=model.device),
                           use_cache=False)
            except _Stop:
                pass
            progress.update(min(start + batch_size, len(ids)))
    WORKLOAD.add(model.spec.name, time.perf_counter() - t0, int(np.asarray(ids).size) * layers_run, ids,
                 label if condition is None else condition, layers_run)
    return {key: np.concatenate(chunks) for key, chunks in out.items() if chunks}


def _collector(sink: list, reader: Reader, rows: np.ndarray | None, batch: dict):
    """The hook that keeps ``reader``'s output for the prompts ``rows`` of the pass (None: every prompt). A pair
    reader also takes the weights at its pairs straight from the attention kernel (``at_pairs``: no n × n)."""
    def local():
        if rows is None:
            return slice(None)
        mine = rows[(rows >= batch["start"]) & (rows < batch["stop"])] - batch["start"]
        return torch.as_tensor(mine) if mine.size else None

    def fn(value, _):
        keep = local()
        if keep is not None:
            sink.append(to_stats(reader(value[keep])))

    if isinstance(reader, PairReader):
        def at_pairs(weights, _):
            keep = local()
            if keep is not None:
                sink.append(to_stats(reader.from_pairs(weights[keep])))

        fn.pairs, fn.at_pairs = (reader.i, reader.j), at_pairs
    return fn


# ---- readers: small pure reductions of one activation -------------------------------------------------

class PairReader:
    """[B, H, n, n] -> [B, P, H]: the attention quantity at the sampled (query i, key j) pairs; ``from_pairs`` takes
    [B, H, P] already gathered at the pairs (the attention kernel's pair path)."""

    def __init__(self, i: np.ndarray, j: np.ndarray):
        self.i, self.j = torch.as_tensor(i), torch.as_tensor(j)

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return x[:, :, self.i.to(x.device), self.j.to(x.device)].transpose(1, 2).float()

    @staticmethod
    def from_pairs(w: torch.Tensor) -> torch.Tensor:
        return w.transpose(1, 2).float()


def pattern_at_pairs(i: np.ndarray, j: np.ndarray) -> PairReader:
    return PairReader(i, j)


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
