"""Whether a model can be measured on this machine, before anything is loaded: ``ensure_available``, for every
kind of model (the registry's, the paper's, references, and the rehearsals built on first use); and ``check_trained``,
the one check that needs the model loaded (its next-token loss: ``harness.model.next_token_loss``), made once per
weights at selection, on the run's device, so that untrained weights are one line before any work."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path

from harness.model import devices, rehearsal, weights
from harness.model.checkpoint_checks import loss_is_kept
from harness.spec.models import ModelSpec, WrongWeights

#: where ``check_trained`` loads a model: the run's device and dtype, while a run selects its models
#: (``measured_on``); outside a run (``abspos-claims models``) the CPU, in the checkpoint's bfloat16 when it is stored
#: so (a paper model's 8B is then 16 GB, not 32), else float32
_ON: ContextVar[tuple[str, str] | None] = ContextVar("abspos_measured_on", default=None)


@contextmanager
def measured_on(device: str, dtype: str) -> Iterator[None]:
    """``check_trained`` loads models on ``device`` in ``dtype`` in this block (a run's selection)."""
    token = _ON.set((device, dtype))
    try:
        yield
    finally:
        _ON.reset(token)


def ensure_available(spec: ModelSpec) -> None:
    """WeightsUnavailable (one line saying how to provide them) when ``spec``'s weights are not here and cannot be
    made here; WrongWeights (one line) when its folder holds another model than the one named, or (a paper model)
    untrained weights (``check_trained``). A registered rehearsal is available when its paper model's tokenizer files
    are and (not built yet) its build fits this machine's disk and memory (``rehearsal.rehearsal_available``); any
    other model: ``weights.ensure_available``."""
    if spec.rehearses:
        rehearsal.rehearsal_available(spec)
        return
    weights.ensure_available(spec)
    if spec.group == "paper":
        check_trained(spec)


def _folder(spec: ModelSpec) -> Path | None:
    """Where ``spec``'s weights are read from, once they are there (None: a GGUF not converted yet)."""
    if spec.gguf:
        folder = weights.conversion_path(spec)
        return folder if (folder / "config.json").is_file() else None
    return Path(spec.folder) if spec.folder else weights.paper_folder(spec)


def _dtype(folder: Path | None) -> str:
    try:
        config = json.loads((Path(folder or "") / "config.json").read_text())
    except (OSError, ValueError):
        return "float32"
    stored = config.get("torch_dtype") or config.get("dtype") if isinstance(config, dict) else None
    return "bfloat16" if stored == "bfloat16" else "float32"


def check_trained(spec: ModelSpec, log=print) -> None:
    """WrongWeights (one line naming the figure) when ``spec``'s weights are above the next-token loss bound
    (``harness.model.next_token_loss``): a figure kept for the same weights was judged by ``check_weights`` already;
    otherwise the model is loaded once (``weights.load_pretrained``, which measures, keeps and judges the figure) and
    freed. A rehearsal's random weights are not judged; the bundled models are judged where they are loaded, and a
    GGUF given by reference where a run selects it (a listing never converts one)."""
    if spec.rehearsal or spec.group in ("tiny", "bundled", "extra"):
        return
    folder, run = _folder(spec), _ON.get()
    if folder is None and run is None:  # a GGUF not converted yet: converted by a run, never by a listing
        return
    if folder is not None and loss_is_kept(spec, folder):
        return
    import torch

    device, dtype = run or ("cpu", _dtype(folder))
    log(f"[abspos] {spec.name}: measuring its next-token loss once ({dtype} on {device}), to tell trained weights ...")
    try:
        model, _ = weights.load_pretrained(spec, dtype, device, log)
    except (torch.OutOfMemoryError, MemoryError, RuntimeError) as e:
        if not devices.out_of_memory(e):
            raise
        raise WrongWeights(
            f"{spec.name}: cannot be loaded in {dtype} on {device} to check that its weights are trained (out of "
            f"memory); no run could load it there either"
        ) from None
    del model
    devices.return_freed_memory()
