"""Where models run and in what precision: small pure functions, testable without a GPU.

- ``resolve_device``: the torch device of one pytest(-xdist) worker; ``--device cuda`` under
  ``-n N`` gives worker ``gwK`` the GPU ``cuda:(K % n_gpus)``, so N workers share the GPUs round-robin.
- ``parse_dtype``: a ``--dtype`` name to a ``torch.dtype`` (an unknown name lists the choices).
- ``estimate_param_bytes`` / ``needs_device_map``: does a model fit on one GPU, or does accelerate's
  ``device_map="auto"`` have to spread it?
- ``to_stats``: any activation (bf16/fp16 on a GPU included) to a float64 numpy array on the CPU;
  statistics are always float64 whatever the weights' dtype.
- ``out_of_memory``: whether an error says an allocation failed (on any device).

CPU threads per process are the run's business: ``harness.run.threads``.
"""

from __future__ import annotations

import ctypes
import gc
import math
import os
import re

import numpy as np
import torch

from harness.spec.settings import DTYPE_NAMES

DTYPES: dict[str, torch.dtype] = {name: getattr(torch, name) for name in DTYPE_NAMES}
_ALIASES = {
    "fp32": "float32",
    "bf16": "bfloat16",
    "fp16": "float16",
    "half": "float16",
    "fp64": "float64",
    "double": "float64",
    "float": "float32",
}

# Room on top of the weights for activations (full n x n attention patterns one layer at a time),
# the CUDA context and allocator slack; a model needs weights * HEADROOM bytes free to sit on one GPU.
HEADROOM = 1.25

_WORKER = re.compile(r"^gw(\d+)$")


class DeviceError(ValueError):
    """A device request that cannot be met on this machine; the message says what to use instead."""


def resolve_device(requested: str, worker_id: str | None, n_gpus: int) -> str:
    """The concrete torch device for ``requested`` ("cpu", "cuda", "cuda:1", "mps", ...) on this worker.

    ``worker_id`` is pytest-xdist's ``gwN`` (``None`` or ``"master"`` outside xdist); ``n_gpus`` the
    number of visible CUDA devices. Bare ``"cuda"`` becomes ``cuda:(N % n_gpus)`` (``cuda:0`` without
    xdist); an explicit index is kept (and checked); anything that is not CUDA is returned as given."""
    req = (requested or "cpu").strip()
    if not req.lower().startswith("cuda"):
        try:
            kind = torch.device(req).type
        except (RuntimeError, ValueError):
            raise DeviceError(f"--device {req}: not a torch device; expected cpu, cuda, cuda:<index> or mps") from None
        if kind == "meta":  # tensors without data: every measurement would fail (NotImplementedError) per test
            raise DeviceError(
                f"--device {req}: the meta device holds shapes, not values, so nothing can be measured "
                f"on it; expected cpu, cuda, cuda:<index> or mps"
            )
        return req
    if n_gpus <= 0:
        raise DeviceError(
            f"--device {req} asked for a CUDA GPU but none is visible (torch.cuda.device_count() == 0"
            f"{'' if torch.version.cuda else '; this torch is a CPU-only build'}); "
            "run with --device cpu, or install a CUDA build of torch"
        )
    m = re.fullmatch(r"cuda(?::(\d+))?", req.lower())
    if m is None:
        raise DeviceError(f"bad device {req!r}: expected cpu, cuda or cuda:<index>")
    if m[1] is not None:
        index = int(m[1])
        if index >= n_gpus:
            raise DeviceError(f"--device {req}: only {n_gpus} GPU(s) visible (cuda:0..cuda:{n_gpus - 1})")
        return f"cuda:{index}"
    w = _WORKER.match(worker_id or "")
    return f"cuda:{int(w[1]) % n_gpus if w else 0}"


def current_worker() -> str | None:
    """pytest-xdist's worker id of this process (``gw0``, ``gw1`` ...), ``None`` outside xdist."""
    return os.environ.get("PYTEST_XDIST_WORKER")


def gpu_count() -> int:
    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def parse_dtype(name: str | torch.dtype) -> torch.dtype:
    """``"bfloat16"`` (or ``bf16``, or a ``torch.dtype``) -> ``torch.bfloat16``; unknown names list the choices."""
    if isinstance(name, torch.dtype):
        if name in DTYPES.values():
            return name
        raise ValueError(f"unsupported dtype {name}; choose one of: {', '.join(DTYPES)}")
    key = str(name).strip().lower().removeprefix("torch.")
    key = _ALIASES.get(key, key)
    if key not in DTYPES:
        raise ValueError(f"unknown dtype {name!r}; choose one of: {', '.join(DTYPES)}")
    return DTYPES[key]


def _get(config, key, default=None):
    if isinstance(config, dict):
        return config.get(key, default)
    return getattr(config, key, default)


def estimate_param_bytes(config, dtype: str | torch.dtype) -> int:
    """Bytes of a decoder-only Llama/Qwen2/Mistral/Gemma3 model's parameters at ``dtype``, from its config.

    ``config`` is a transformers config or its dict (a multimodal config's ``text_config`` is used).
    Exact for the registry's architectures (embeddings, q/k/v/o, gated MLP, norms, Qwen2's q/k/v
    biases, Gemma3's q/k norms and extra norms, an untied LM head)."""
    text = _get(config, "text_config")
    if text is not None:
        config = text
    hidden = int(_get(config, "hidden_size"))
    n_layers = int(_get(config, "num_hidden_layers"))
    heads = int(_get(config, "num_attention_heads"))
    kv_heads = int(_get(config, "num_key_value_heads") or heads)
    head_dim = int(_get(config, "head_dim") or hidden // heads)
    inter = int(_get(config, "intermediate_size"))
    vocab = int(_get(config, "vocab_size"))
    model_type = str(_get(config, "model_type", "") or "")
    q, kv = heads * head_dim, kv_heads * head_dim

    attn = hidden * q + 2 * hidden * kv + q * hidden
    if _get(config, "attention_bias") or model_type.startswith("qwen2"):
        attn += q + 2 * kv
    mlp = 3 * hidden * inter
    norms = 2 * hidden
    if model_type.startswith("gemma3"):
        norms = 4 * hidden + 2 * head_dim  # pre/post attention and feed-forward norms, q_norm, k_norm
    per_layer = attn + mlp + norms
    n = vocab * hidden + n_layers * per_layer + hidden  # + final norm
    if not _get(config, "tie_word_embeddings", False):
        n += vocab * hidden
    return n * torch.empty((), dtype=parse_dtype(dtype)).element_size()


def needs_device_map(param_bytes: int, free_bytes: int, n_gpus: int, headroom: float = HEADROOM) -> bool:
    """True when a model does not fit in one GPU's free memory (with ``headroom`` for activations) and
    accelerate's ``device_map="auto"`` must spread it over the GPUs (or offload to CPU with one GPU).
    Never on a machine without GPUs: a CPU run loads the model whole."""
    if n_gpus <= 0:
        return False
    return param_bytes * headroom > free_bytes


#: GiB of each GPU a model may use (``$ABSPOS_GPU_MEMORY_GIB``): on a shared GPU, or to force accelerate's split of a
#: model that would fit (the GPU tier's check that a split model gives the figures of an unsplit one).
MEMORY_CAP_ENV = "ABSPOS_GPU_MEMORY_GIB"
#: the smallest cap taken (GiB): below it no layer of a registry model fits beside the CUDA context, which takes
#: 0.3-0.5 GiB of a GPU outside any cap, so a smaller value is a slip (a unit, a typo), not a placement; the GPU
#: tier's split check uses 0.2
MIN_MEMORY_CAP_GIB = 0.1


def memory_cap() -> int | None:
    """Bytes of each GPU a model may use, from ``$ABSPOS_GPU_MEMORY_GIB`` (None: unset, the GPU's free memory);
    DeviceError (one line) for anything but a finite number of GiB of at least ``MIN_MEMORY_CAP_GIB``."""
    raw = os.environ.get(MEMORY_CAP_ENV, "").strip()
    if not raw:
        return None
    try:
        gib = float(raw)
    except ValueError:
        gib = math.nan
    if not (math.isfinite(gib) and gib >= MIN_MEMORY_CAP_GIB):
        raise DeviceError(
            f"${MEMORY_CAP_ENV}={raw!r}: GiB of each GPU a model may use, a finite number of at least "
            f"{MIN_MEMORY_CAP_GIB:g}; unset it for the GPU's free memory"
        )
    return int(gib * 2**30)


def placement_note(size: int, free: int, cap: int | None, placed: dict, n_gpus: int, device: str) -> str:
    """What a load on a GPU says of its placement: the weights, the free memory, the cap where one is set (whether or
    not it splits the model), and how the model is loaded."""
    room = f"{free / 2**30:.1f} GiB free" + (f", {cap / 2**30:.2f} GiB allowed (${MEMORY_CAP_ENV})" if cap else "")
    how = (
        f"with device_map='auto' over {n_gpus} GPU(s)" + (" and the CPU" if cap else "")
        if placed
        else "whole (it fits)"
    )
    return f"{size / 2**30:.1f} GiB of weights, {room} on {device}: loading {how}"


def placement(param_bytes: int, free: int, n_gpus: int, cap: int | None) -> dict:
    """``from_pretrained``'s placement arguments: none where the model fits on its GPU (in the free memory, or
    under ``cap``); else accelerate's ``device_map="auto"``, with ``max_memory`` holding each GPU to ``cap`` and the
    rest of the model in CPU memory where a cap is set."""
    room = free if cap is None else min(free, cap)
    if not needs_device_map(param_bytes, room, n_gpus):
        return {}
    if cap is None:
        return {"device_map": "auto"}
    return {"device_map": "auto", "max_memory": {**{i: cap for i in range(n_gpus)}, "cpu": 1 << 50}}


def free_bytes(device: str) -> int:
    """Free memory of one CUDA device (0 for anything else)."""
    dev = torch.device(device)
    if dev.type != "cuda":
        return 0
    free, _total = torch.cuda.mem_get_info(dev)
    return int(free)


def out_of_memory(e: BaseException) -> bool:
    """Whether ``e`` says an allocation failed: numpy's MemoryError, torch's OutOfMemoryError (CUDA), or the plain
    RuntimeError torch's CPU allocator ("can't allocate memory"), the MPS backend ("out of memory") and cuBLAS
    ("CUBLAS_STATUS_ALLOC_FAILED") raise."""
    if isinstance(e, (MemoryError, torch.OutOfMemoryError)):
        return True
    return isinstance(e, RuntimeError) and any(
        s in str(e)
        for s in ("can't allocate memory", "out of memory", "ALLOC_FAILED")  # cuBLAS: CUBLAS_STATUS_ALLOC_FAILED
    )


def to_stats(x) -> np.ndarray:
    """An activation as a float64 numpy array on the CPU, whatever its dtype and device.

    Moved to the CPU in its own dtype (half the bytes of float64 for a float32 reader output, a quarter
    for bf16), then upcast there: numpy has no bfloat16, and the upcast to float64 is exact."""
    if isinstance(x, torch.Tensor):
        return x.detach().cpu().to(torch.float64).numpy()
    return np.asarray(x, dtype=np.float64)


def return_freed_memory() -> None:
    """Collect what a released model left behind and hand the freed heap back to the system (glibc's
    ``malloc_trim``; a no-op where there is no glibc): without it the next model loads beside the last one's freed but
    still resident pages, and a run of several models peaks at more than its largest model needs."""
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass
