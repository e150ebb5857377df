"""Forward passes that keep only what a measurement needs.

``capture(model, ids, readers)`` runs the prompts in mini-batches through the base decoder
(no LM head: no measurement reads logits over the vocabulary) and, at each named hook point,
applies a *reader* that reduces the activation to the few numbers wanted (pairs of a pattern,
a few positions of the residual stream). Full n x n patterns exist one layer at a time only.
Its status lines go to the ``Progress`` it is handed (``harness.capture.progress``), its work is booked in the
``Workload`` it is handed (``harness.capture.workload``).
"""

from __future__ import annotations

import os
import time
from typing import Callable, Hashable

import numpy as np
import torch

from harness.capture.progress import Progress
from harness.capture.workload import Workload
from harness.model.devices import to_stats
from harness.model.hook_points import hook_name
from harness.model.hooks import HookedModel

Reader = Callable[[torch.Tensor], torch.Tensor]


class _Stop(Exception):
    """Raised after the last layer a capture needs: the rest of the forward pass is skipped."""


def _stop(value, name):
    raise _Stop(name)


def capture(
    model: HookedModel,
    ids: np.ndarray,
    readers: dict,
    batch_size: int = 8,
    label: str = "capture",
    stop_after: int | None = None,
    progress: Progress | None = None,
    condition: Hashable = None,
    workload: Workload | None = None,
) -> dict[str, np.ndarray]:
    """Run ``ids`` [N, L]; return {key: reader outputs concatenated over prompts (float64 numpy; a pair reader's
    weights float32, exactly as read: ``PairReader.store``)}.

    ``readers`` maps a key to a reader, read at the hook point of the same name, or to a
    ``(hook name, reader)`` pair when several readers share one hook point, or ``(hook name, reader, rows)`` to
    keep only the prompts ``rows`` (sorted indices into ``ids``: a smaller prompt set read in a larger pass). ``stop_after`` = l ends
    each forward pass after decoder layer l (for measurements of the first layers only). ``condition`` names
    what the pass runs under (the edits applied) for the workload's floor (``Workload``; default: the label).
    ``progress``: where its status lines go (default: stderr, off under CI); ``workload``: where the pass is booked
    (default: nowhere)."""
    out: dict[str, list[torch.Tensor]] = {key: [] for key in readers}
    hooks: dict[str, list] = {}
    batch = {"start": 0, "stop": 0}  # the prompts of the batch in flight (readers keep only their rows)
    for key, entry in readers.items():
        point, reader, rows = (entry + (None,) * (3 - len(entry))) if isinstance(entry, tuple) else (key, entry, None)
        hooks.setdefault(point, []).append(_collector(out[key], reader, rows, batch))
    if stop_after is not None:
        hooks.setdefault(hook_name("hook_resid_post", stop_after), []).append(_stop)
    progress = progress if progress is not None else Progress(enabled=not os.environ.get("CI"))
    status = progress.start(f"{model.spec.name} {label}", len(ids))
    t0, cpu0, layers_run = (
        time.perf_counter(),
        time.process_time(),
        model.n_layers if stop_after is None else stop_after + 1,
    )
    with torch.no_grad(), model.hooks(hooks):
        for start in range(0, len(ids), batch_size):
            batch.update(start=start, stop=start + batch_size)
            try:
                model.base(
                    input_ids=torch.as_tensor(ids[start : start + batch_size], device=model.device), use_cache=False
                )
            except _Stop:
                pass
            status.update(min(start + batch_size, len(ids)))
    if workload is not None:
        workload.add(
            model.spec.name,
            time.perf_counter() - t0,
            int(np.asarray(ids).size) * layers_run,
            ids,
            label if condition is None else condition,
            layers_run,
            time.process_time() - cpu0,
        )
    kept = {}
    for key in list(out):  # each key's chunks released as it is joined: never the pass's values twice over
        chunks = out.pop(key)
        if chunks:
            kept[key] = np.concatenate(chunks)
        del chunks
    return kept


def _collector(sink: list, reader: Reader, rows: np.ndarray | None, batch: dict):
    """The hook that keeps ``reader``'s output for the prompts ``rows`` of the pass (None: every prompt). A pair
    reader also takes the weights at its pairs straight from the attention kernel (``at_pairs``: no n × n)."""

    def local():
        if rows is None:
            return slice(None)
        mine = rows[(rows >= batch["start"]) & (rows < batch["stop"])] - batch["start"]
        return torch.as_tensor(mine) if mine.size else None

    store = getattr(reader, "store", to_stats)  # how its output is kept (float64; the pairs' weights in float32)

    def fn(value, _):
        keep = local()
        if keep is not None:
            sink.append(store(reader(value[keep])))

    if isinstance(reader, PairReader):

        def at_pairs(weights, _):
            keep = local()
            if keep is not None:
                sink.append(store(reader.from_pairs(weights[keep])))

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

    @staticmethod
    def store(x: torch.Tensor) -> np.ndarray:
        """Kept in float32 on the CPU: the values read are float32 (``.float()`` above), so this is exact, at half
        the bytes of float64; every statistic upcasts them to float64 (harness.stats.leakage)."""
        return x.detach().cpu().float().numpy()


class PairMoments(PairReader):
    """[B, H, n, n] -> [B, H, 4 x subsets]: per prompt and head, the leakage fit's moments of the attention quantity
    at the sampled pairs, in float64, for each subset of the pairs (``subsets``: (pair indices or None for all, ĩ of
    the subset), ``harness.stats.leakage.PromptMoments``): the mean m, the sum of squares about it, the sum of ĩ times
    the value less m, and the largest |value|. A pass reduced this way keeps [B, H, 4 x subsets] numbers per layer, not
    [B, pairs, H]: a summary of an edited pass (``harness.capture.leakage_view``) needs nothing more."""

    def __init__(self, i: np.ndarray, j: np.ndarray, subsets: list[tuple[np.ndarray | None, np.ndarray]]):
        super().__init__(i, j)
        self.subsets = [(None if idx is None else torch.as_tensor(idx), torch.as_tensor(it)) for idx, it in subsets]

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return pair_moments(x[:, :, self.i.to(x.device), self.j.to(x.device)], self.subsets)

    def from_pairs(self, w: torch.Tensor) -> torch.Tensor:  # type: ignore[override]
        return pair_moments(w, self.subsets)

    store = staticmethod(to_stats)  # the moments are float64


def pair_moments(w: torch.Tensor, subsets) -> torch.Tensor:
    """[..., pairs] -> [..., 4 x subsets] float64 (``PairMoments``); also what a stored capture is reduced with, so
    a pass reduced as it runs and one reduced afterwards give the same numbers."""
    w = w.to(torch.float64)
    out = []
    for idx, i_tilde in subsets:
        y = w if idx is None else w.index_select(-1, idx.to(w.device))
        m = y.mean(-1)
        d = y - m[..., None]
        out += [m, (d * d).sum(-1), d @ i_tilde.to(device=w.device, dtype=torch.float64), y.abs().amax(-1)]
    return torch.stack(out, -1)


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
