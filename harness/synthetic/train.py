"""Training the related paper's synthetic models: the authors' recipe, seeded, checkpointed every epoch and cached by a
hash of (task, encoding, architecture, size, recipe, seed), resumable, with a progress line. Checkpoints and final
models hold tensors and plain values only, read without unpickling, and record which model they are: a damaged file or
another model's is removed with one line naming it and the model trained again, never resumed from it.

The sizes and recipes (``SIZES``, ``recipe_of``) are in ``harness.synthetic.sizes``.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import time
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path
from typing import Callable

import numpy as np
import torch
from torch import nn

from harness.model.cache import cache_root
from harness.synthetic import tasks
from harness.synthetic.model import PositionModel
from harness.synthetic.sizes import PILOT_AUTHORS_LR, SIZES, Recipe, at_depth, recipe_of  # noqa: F401

# bump an architecture's when a change of this code changes what its cached models hold (authors 2: their added RoPE
# table concatenated, dropout on the attention weights, no final LayerNorm, as their code has them)
FORMAT = {"authors": 2, "decoder": 1}


@dataclass(frozen=True)
class SyntheticSpec:
    """One model of the related paper's experiments: what it is trained on and how."""

    task: str
    encoding: str
    arch: str = "authors"
    size: str = "smoke"
    seed: int = 0

    @property
    def recipe(self) -> Recipe:
        return recipe_of(self.size, self.encoding, self.arch)

    @property
    def name(self) -> str:
        return f"{self.task}-{self.encoding}-{self.arch}-{self.size}-s{self.seed}"

    def key(self, device: str = "cpu") -> str:
        """The cache key: everything that decides the trained weights: the spec, the size's shape and recipe, the
        task generators' constants, this code's format, and the device kind (bf16 autocast on a GPU)."""
        size = SIZES[self.size]
        generator = [tasks.TRIGGER_SEED, tasks.PAPER_LEN, tasks.VOCAB_SIZE, tasks.SPECIALS]
        kind = torch.device(device).type
        blob = json.dumps(
            [asdict(self), asdict(size.shape), asdict(self.recipe), generator, FORMAT[self.arch], kind], sort_keys=True
        )
        return hashlib.sha256(blob.encode()).hexdigest()[:12]


class TrainingStopped(Exception):
    """Training stopped at its deadline after an epoch's checkpoint: ``train`` called again resumes from it."""

    def __init__(self, spec: SyntheticSpec, epochs_done: int, checkpoint: Path):
        super().__init__(
            f"{spec.name}: stopped after epoch {epochs_done}/{spec.recipe.epochs}; resumes from {checkpoint}"
        )
        self.epochs_done, self.checkpoint = epochs_done, checkpoint


@dataclass
class Trained:
    spec: SyntheticSpec
    model: PositionModel
    info: dict  # epochs, seconds, samples per second, final loss, held-out accuracy


@lru_cache(maxsize=8)
def data(spec: SyntheticSpec) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The spec's samples, split 70/30 (train, test) by its seed."""
    size = SIZES[spec.size]
    n = size.recipe.samples // (2 if spec.task == "task2" else 1)
    ids, labels = tasks.generate(spec.task, n, size.shape.seq_len, seed=spec.seed)
    order = np.random.default_rng(spec.seed).permutation(len(ids))
    cut = int(0.7 * len(ids))
    return {"train": (ids[order[:cut]], labels[order[:cut]]), "test": (ids[order[cut:]], labels[order[cut:]])}


def folder(spec: SyntheticSpec, device: str = "cpu") -> Path:
    return cache_root() / "synthetic" / f"{spec.name}-{spec.key(device)}"


def identity(spec: SyntheticSpec, device: str = "cpu") -> str:
    """What a checkpoint or final model is, written into it: the model's name and cache key and what the key hashes
    (task, encoding, architecture, size, seed, shape, recipe, format), so that a file of another model is never read
    as this one's."""
    what = {"name": spec.name, "key": spec.key(device), "spec": asdict(spec), "format": FORMAT[spec.arch]}
    what |= {"shape": asdict(SIZES[spec.size].shape), "recipe": asdict(spec.recipe)}
    return json.dumps(what, sort_keys=True)


def _load(path: Path, spec: SyntheticSpec, device: str, log: Callable[[str], None]) -> dict | None:
    """The checkpoint or final model at ``path`` when it is this spec's: read without unpickling anything (tensors and
    plain values only). A damaged file, one holding anything else, or another model's is removed with one line
    naming it, and the model is trained again from its start; None then, and where there is no file."""
    if not path.is_file():
        return None
    try:
        saved = torch.load(path, map_location=device, weights_only=True)
    except Exception as e:  # cut, overwritten, or holding objects a plain load refuses: never executed
        why = str(e).strip().splitlines()[0][:160] if str(e).strip() else type(e).__name__
        _discard(path, spec, f"unreadable ({why})", log)
        return None
    if not isinstance(saved, dict) or saved.get("identity") != identity(spec, device):
        try:
            other = json.loads(saved["identity"])["name"] if isinstance(saved, dict) else None
        except (KeyError, TypeError, ValueError):
            other = None
        what = f"holds {other}" if other else "records no identity of the model it holds"
        _discard(path, spec, f"{what}, not {spec.name} of key {spec.key(device)}", log)
        return None
    return saved


def _into(model: nn.Module, saved: dict, path: Path, spec: SyntheticSpec, log: Callable[[str], None]) -> bool:
    """``saved``'s weights loaded into ``model``; False (the file removed, with its line, the model untouched) where
    they are not exactly the model's tensors: the same names and shapes."""
    state, own = saved.get("model"), model.state_dict()
    if not isinstance(state, dict) or state.keys() != own.keys():
        state = None
    if state is None or not all(
        isinstance(state[k], torch.Tensor) and state[k].shape == v.shape for k, v in own.items()
    ):
        _discard(path, spec, "weights that are not the model's tensors", log)
        return False
    model.load_state_dict(state)
    return True


def _discard(path: Path, spec: SyntheticSpec, why: str, log: Callable[[str], None]) -> None:
    path.unlink(missing_ok=True)
    log(f"[synthetic] {path}: {why}; removed, {spec.name} is trained again from its start")


def _save(obj, path: Path) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    torch.save(obj, tmp)
    os.replace(tmp, path)


def schedule(step: int, total: int, warmup: float) -> float:
    """The learning-rate factor: linear warm-up over ``warmup`` of the steps, then cosine to 0."""
    w = max(1, int(warmup * total))
    if step < w:
        return (step + 1) / w
    return 0.5 * (1 + math.cos(math.pi * min(1.0, (step - w) / max(1, total - w))))


def correct(model: PositionModel, ids: np.ndarray, labels: np.ndarray, task: str, batch: int = 512) -> np.ndarray:
    """Per sample, whether the model's class is the label (bool [n]); Task 2's ignored label left out."""
    model.eval()
    out = []
    device = next(model.parameters()).device
    with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16, enabled=device.type == "cuda"):
        for i in range(0, len(ids), batch):
            logits = model(torch.as_tensor(ids[i : i + batch], device=device))
            out.append(logits.argmax(-1).cpu().numpy() == labels[i : i + batch])
    hits = np.concatenate(out) if out else np.zeros(0, bool)
    ignored = tasks.ignored_label(task)
    return hits if ignored is None else hits[labels != ignored]


def train(
    spec: SyntheticSpec, device: str = "cpu", log: Callable[[str], None] = print, deadline: float | None = None
) -> Trained:
    """The trained model: from the cache when it is there, else trained (resuming from the last epoch's checkpoint).
    Past ``deadline`` (``time.monotonic()``) training stops after the epoch then checkpointed (``TrainingStopped``):
    a GPU lease too short for the whole schedule leaves a checkpoint that the next one resumes."""
    size, where = SIZES[spec.size], folder(spec, device)
    final = where / "final.pt"
    saved = _load(final, spec, device, log)
    if saved is not None:
        model = PositionModel(size.shape, spec.encoding, spec.arch).to(device)
        if _into(model, saved, final, spec, log):
            return Trained(spec, model.eval(), saved["info"])
    where.mkdir(parents=True, exist_ok=True)
    split = data(spec)
    ids, labels = (torch.as_tensor(x, device=device) for x in split["train"])  # the whole split on the device once
    on_gpu = torch.device(device).type == "cuda"
    r = spec.recipe
    torch.manual_seed(spec.seed)
    model = PositionModel(size.shape, spec.encoding, spec.arch).to(device)  # the seed's initialisation
    # on a GPU the fused AdamW (one kernel per step, not one per tensor): the same update, launched at once
    opt = torch.optim.AdamW(model.parameters(), lr=r.lr, weight_decay=r.weight_decay, betas=r.betas, fused=on_gpu)
    steps_per_epoch = math.ceil(len(ids) / r.batch)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: schedule(s, steps_per_epoch * r.epochs, r.warmup))
    ignored = tasks.ignored_label(spec.task)
    loss_fn = nn.CrossEntropyLoss(ignore_index=-100 if ignored is None else ignored)
    start_epoch, seconds, losses = 0, 0.0, []
    checkpoint = where / "checkpoint.pt"
    c = _load(checkpoint, spec, device, log)  # resume: weights, optimiser, schedule and the epochs done
    if c is not None and _into(model, c, checkpoint, spec, log):
        opt.load_state_dict(c["opt"])
        sched.load_state_dict(c["sched"])
        start_epoch, seconds, losses = c["epoch"], c["seconds"], c["losses"]
        torch.set_rng_state(c["rng"])  # dropout's masks continue as in an uninterrupted run
        log(f"[synthetic] {spec.name}: resuming after epoch {start_epoch}/{r.epochs}")
    for epoch in range(start_epoch, r.epochs):
        t0, total = time.perf_counter(), torch.zeros((), device=device)
        model.train()
        gen = torch.Generator().manual_seed(spec.seed * 100_003 + epoch)
        order = torch.randperm(len(ids), generator=gen).to(device)
        for i in range(0, len(ids), r.batch):
            rows = order[i : i + r.batch]
            with torch.autocast("cuda", dtype=torch.bfloat16, enabled=on_gpu):  # bf16 on a GPU, the paper size's
                loss = loss_fn(model(ids[rows]), labels[rows])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
            total += loss.detach().float() * len(rows)  # summed on the device: no wait for the GPU each step
        losses.append(total.item() / len(ids))
        took = time.perf_counter() - t0
        seconds += took
        _save(
            {"model": model.state_dict(), "opt": opt.state_dict(), "sched": sched.state_dict(), "epoch": epoch + 1}
            | {"seconds": seconds, "losses": losses, "rng": torch.get_rng_state(), "identity": identity(spec, device)},
            checkpoint,
        )
        log(
            f"[synthetic] {spec.name}: epoch {epoch + 1}/{r.epochs}, loss {losses[-1]:.3f}, "
            f"{len(ids) / max(took, 1e-9):.0f} samples/s"
        )
        if deadline is not None and time.monotonic() > deadline and epoch + 1 < r.epochs:
            raise TrainingStopped(spec, epoch + 1, checkpoint)
    accuracy = float(correct(model, *split["test"], spec.task).mean())
    info = {"epochs": r.epochs, "seconds": round(seconds, 2), "losses": losses, "test_accuracy": accuracy}
    info |= {"samples": len(ids), "device": device, "threads": torch.get_num_threads()}
    _save({"model": model.state_dict(), "info": info, "identity": identity(spec, device)}, final)
    checkpoint.unlink(missing_ok=True)
    return Trained(spec, model.eval(), info)
