"""Rehearsal models: the paper's five architectures at their exact published configs, with random weights, written
as the folder ``$ABSPOS_MODELS_DIR/<org>/<repo>`` would hold, so the whole path a paper model takes (finding its
folder, checking its identity, loading it clean, its tokenizer) can be rehearsed end to end without the weights.

Two sizes. ``"full"``: the published config.json exactly (``harness.spec.paper_configs``); a float32 build is 4 bytes a
parameter (Llama-3.1-8B: ~32 GB), so it is built only when asked for by name. ``"rehearsal"``: the same config with
fewer layers and a narrower width, and nothing else changed: ``REHEARSAL_LAYERS`` layers; 2 key/value heads (1 where
the model has no more than 2, so every rehearsal is narrower than its model) and the model's own GQA ratio of query
heads to them; the model's ``head_dim`` (stated explicitly), so hidden_size = heads x head_dim; intermediate_size
scaled by the same factor as hidden_size; Qwen's ``max_window_layers`` scaled with the layers (36 of 36 -> 2 of 2).
The RoPE type, theta and scaling, the vocabulary, the special-token ids, the context, tied embeddings, the norms and
the sliding window are the published ones. ``DEPTH_AND_WIDTH`` names the fields that may differ.

A rehearsal folder is not the paper's model: each carries ``REHEARSAL.json`` (name, size, seed) saying so, and the
loader refuses a folder carrying it (``rehearsal_mark.check_not_rehearsal``, one line) as a paper model (``weights.paper_folder``,
hence ``load_pretrained``), and as an ``hf:`` or ``path:`` reference; a "rehearsal" size is refused by shape too
(``check_identity``). Only ``rehearsal_spec`` (that spec with the rehearsal's shape, marked ``rehearsal``) loads one,
through the same loading path. So a "full" build, which has the published config exactly, is never measured as the
paper's model even when placed where its real weights would be.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness.model.rehearsal_mark import MARKER
from harness.spec.models import ModelSpec, UnknownModelError, get_spec
from harness.spec.paper_configs import PAPER_CONFIGS, gqa_ratio, head_dim

SIZES = ("rehearsal", "full")
REHEARSAL_LAYERS = 2
#: the fields a rehearsal config may give otherwise than the published one (``head_dim`` is added where the published
#: file leaves it implicit, at the published value)
DEPTH_AND_WIDTH = (
    "num_hidden_layers",
    "max_window_layers",
    "num_attention_heads",
    "num_key_value_heads",
    "hidden_size",
    "intermediate_size",
)

SaveTokenizer = Callable[[str, Path], Any]


def public_config(name: str) -> dict[str, Any]:
    """A copy of the published config.json of paper model ``name``; UnknownModelError (one line) for another name."""
    try:
        return copy.deepcopy(PAPER_CONFIGS[name])
    except KeyError:
        raise UnknownModelError(f"{name!r} is not a paper model; paper models: {', '.join(PAPER_CONFIGS)}") from None


def rehearsal_kv_heads(config: dict[str, Any]) -> int:
    """Key/value heads of a rehearsal: 2, or 1 where the model has no more than 2 (Qwen2.5-3B)."""
    return 2 if config["num_key_value_heads"] > 2 else 1


def _scaled(value: int, num: int, den: int, what: str) -> int:
    if value * num % den:
        raise ValueError(f"{what} {value} does not scale by {num}/{den} to a whole number")
    return value * num // den


def rehearsal_config(name: str, size: str = "rehearsal") -> dict[str, Any]:
    """The config of paper model ``name`` at ``size``: "full" is the published config.json; "rehearsal" the same with
    ``REHEARSAL_LAYERS`` layers and a narrower width (see the module's docstring)."""
    config = public_config(name)
    if size == "full":
        return config
    if size != "rehearsal":
        raise ValueError(f"size {size!r}: expected one of {', '.join(SIZES)}")
    width, layers = head_dim(config), config["num_hidden_layers"]
    kv = rehearsal_kv_heads(config)
    heads = kv * gqa_ratio(config)
    hidden = heads * width
    shape = {
        "num_hidden_layers": REHEARSAL_LAYERS,
        "num_attention_heads": heads,
        "num_key_value_heads": kv,
        "head_dim": width,
        "hidden_size": hidden,
        "intermediate_size": _scaled(config["intermediate_size"], hidden, config["hidden_size"], "intermediate_size"),
    }
    if "max_window_layers" in config:
        shape["max_window_layers"] = config["max_window_layers"] * REHEARSAL_LAYERS // layers
    return {**config, **shape}


def rehearsal_spec(name: str, size: str = "rehearsal") -> ModelSpec:
    """The registry spec of paper model ``name`` with the shape of its ``size`` config: same name, hub id and folder
    layout, so ``weights.paper_folder`` finds the rehearsal where the real weights would be, and its identity check
    (layers, heads, width, vocabulary, context) holds for the rehearsal's shape."""
    spec, config = get_spec(name), rehearsal_config(name, size)
    shape = {k: config.get(k, v) for k, v in spec.config.items()}
    if "head_dim" in spec.config:
        shape["head_dim"] = head_dim(config)
    return dataclasses.replace(
        spec, config=shape, caveat=f"{size} build of {spec.hub_id}: random weights", rehearsal=True
    )


def paper_layout(name: str, root: Path | str) -> Path:
    """Where ``$ABSPOS_MODELS_DIR`` = ``root`` holds paper model ``name``: ``root/<org>/<repo>``."""
    return Path(root) / get_spec(name).hub_id


def default_save_tokenizer() -> SaveTokenizer:
    """The project's writer of a paper model's tokenizer files (``harness.model.tokenizers.save_paper_tokenizer``)."""
    try:
        from harness.model.tokenizers import save_paper_tokenizer
    except ImportError as e:
        raise RuntimeError(
            f"no tokenizer writer: harness.model.tokenizers.save_paper_tokenizer cannot be imported ({e}); "
            "pass save_tokenizer=<callable(name, folder)>"
        ) from None
    return save_paper_tokenizer


def _write_weights(config: dict[str, Any], folder: Path, seed: int) -> None:
    """A seeded float32 random init of ``config`` saved as safetensors, under the published config.json (kept as
    published, not as this transformers would rewrite it) with ``torch_dtype`` float32, the dtype stored."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    from harness.model.cache import no_progress_bars
    from harness.model.weights import dtype_kwarg

    fields = copy.deepcopy(
        {k: v for k, v in config.items() if k not in ("architectures", "model_type")}
    )  # transformers
    # 5 folds rope_theta into the rope_scaling dict it is given (as rope_parameters): the published one stays as it is
    hf_config = AutoConfig.for_model(config["model_type"], architectures=config["architectures"], **fields)
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(hf_config, **{dtype_kwarg(): torch.float32})
    with no_progress_bars():
        model.save_pretrained(folder)
    (folder / "config.json").write_text(json.dumps({**config, "torch_dtype": "float32"}, indent=2) + "\n")


def build_rehearsal(
    name: str,
    size: str,
    folder: Path | str,
    seed: int = 0,
    save_tokenizer: SaveTokenizer | None = None,
) -> Path:
    """Write paper model ``name`` at ``size`` into ``folder`` (see ``paper_layout``): config.json, model.safetensors
    of a seeded float32 random init (transformers' ``AutoModelForCausalLM.from_config``), the tokenizer files
    (``save_tokenizer(name, folder)``, by default the project's ``save_paper_tokenizer``) and ``REHEARSAL.json``.
    Built in a temporary folder beside ``folder`` and renamed into place; an existing ``folder`` is never replaced
    (it may hold real weights): FileExistsError, one line."""
    folder = Path(folder)
    config = rehearsal_config(name, size)
    if folder.exists():
        raise FileExistsError(f"{folder} exists; a rehearsal build never replaces a folder (remove it first)")
    writer = save_tokenizer or default_save_tokenizer()
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=folder.parent, prefix=f".{folder.name}.partial-"))
    try:
        _write_weights(config, tmp, seed)
        writer(name, tmp)
        note = {"model": name, "hub_id": get_spec(name).hub_id, "size": size, "seed": seed, "weights": "random"}
        (tmp / MARKER).write_text(json.dumps(note, indent=2) + "\n")
        os.chmod(tmp, 0o755)  # mkdtemp's 0o700 would keep the folder from other users sharing $ABSPOS_MODELS_DIR
        tmp.rename(folder)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return folder
