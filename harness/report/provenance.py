"""Where a run's numbers come from: code (git commit, uncommitted changes), machine (CPU, GPU, CUDA), library
versions, what was selected (the pytest command line), and each model's weights (a fingerprint of the files
loaded, and how the model differs from the paper's). Written into results.json as ``provenance``; everything is
best effort: a fact that cannot be read here is recorded as null, never guessed.
"""

from __future__ import annotations

import json
import platform
import subprocess
from importlib import metadata

from harness.files.paths import ROOT
from harness.spec.models import REGISTRY

PACKAGES = (
    "torch",
    "transformers",
    "accelerate",
    "tokenizers",
    "safetensors",
    "huggingface_hub",
    "gguf",
    "numpy",
    "scikit-learn",
    "syrupy",
    "pytest",
)


def versions() -> dict:
    out = {"python": platform.python_version()}
    for pkg in PACKAGES:
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            out[pkg] = None
    return out


def _git(*args: str) -> str | None:
    try:
        r = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return r.stdout.strip() if r.returncode == 0 else None


def code() -> dict:
    status = _git("status", "--porcelain")  # untracked files count too (a new claim test); run outputs are ignored
    return {"commit": _git("rev-parse", "HEAD"), "dirty": None if status is None else bool(status)}


def _cpu() -> str | None:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def machine() -> dict:
    import torch

    gpus = (
        [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())] if torch.cuda.is_available() else []
    )
    return {
        "cpu": _cpu(),
        "platform": platform.platform(),
        "gpus": gpus,
        "cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version() if gpus else None,
    }


def weights_of(name: str) -> dict:
    """How a model's weights are identified: the conversion's source and the sha256 of its weights file (bundled
    models and GGUF references, from the conversion's manifest), or the folder and the sha256 of its config (paper
    models and folders given by reference); the registry's caveat (quantised, instruction-tuned ...); and for a
    model given by reference, the spec derived from its config and tokenizer."""
    from harness.model import cache
    from harness.model.weights import conversion_path, local_folder, paper_folder

    spec = REGISTRY[name]
    out = {
        "source": spec.source,
        "caveat": spec.caveat or ("the paper's own checkpoint" if spec.group == "paper" else ""),
    }
    if spec.group == "local":
        out["derived"] = {
            "family": spec.family,
            "architecture": spec.architecture,
            "adds_bos": spec.adds_bos,
            "bos_token_id": spec.bos_token_id,
            "rope": spec.rope,
            "rope_theta": spec.rope_theta,
            "sliding_window": spec.sliding_window,
            "context": spec.context,
            **spec.config,
        }
    try:
        if spec.gguf:  # bundled, or a GGUF given by reference
            folder = conversion_path(spec)
            marker = json.loads((folder / cache.MARKER).read_text())
            out.update(
                folder=str(folder),
                gguf=marker.get("gguf"),
                weights_sha256=marker["files"]["model.safetensors"]["sha256"],
            )
        elif spec.group in ("paper", "local", "rehearsal", "dress"):
            folder = local_folder(spec) if spec.group == "local" else paper_folder(spec)
            out.update(
                folder=str(folder), config_sha256=cache.sha256(folder / "config.json"), weights=_weight_files(folder)
            )
    except Exception:
        pass
    return out


def _weight_files(folder) -> dict:
    """{weights file: its sha256 where the Hugging Face cache names the blob by it (a snapshot's files are links
    to blobs/<sha256>), else its size}; plus the snapshot revision when the folder is one."""
    out = {}
    for p in sorted(folder.glob("*.safetensors")) + sorted(folder.glob("pytorch_model*.bin")):
        blob = p.resolve().name
        out[p.name] = f"sha256:{blob}" if p.is_symlink() and len(blob) == 64 else f"{p.stat().st_size} bytes"
    if folder.parent.name == "snapshots":
        out["revision"] = folder.name
    return out


def collect(models: list[str], selection: list[str] | None = None) -> dict:
    return {
        "code": code(),
        "machine": machine(),
        "selection": selection,
        "models": {m: weights_of(m) for m in models if m in REGISTRY},
    }
