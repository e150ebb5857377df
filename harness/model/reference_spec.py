"""A reference's ``ModelSpec``, derived from its folder's config and tokenizer, never from the model's name
(harness.model.references): the family marker from ``model_type``, the BOS policy from what the tokenizer does to a
text, the RoPE variant and theta, sliding-window layers and width, layers, heads and KV heads; and the refusal, in
one line, of a model the harness cannot measure (no decoder, no RoPE, an attention that does not go through
transformers' attention interface, custom code, a config whose layer count is not its weights')."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from harness.model import gguf_bos
from harness.model.reference_parse import Reference, ReferenceError
from harness.spec.models import ModelSpec

# model_type -> the family marker the paper's predictions are stated for (§5.6's Mistral rule, §5.9's size ladders)
FAMILY_OF = {
    "llama": "llama",
    "qwen2": "qwen",
    "qwen3": "qwen",
    "mistral": "mistral",
    "gemma": "gemma",
    "gemma2": "gemma",
    "gemma3": "gemma",
    "gemma3_text": "gemma",
}


def gguf_file(ref: Reference) -> dict:
    """``from_pretrained`` keywords reading a GGUF file's own config and tokenizer (no weights); {} otherwise."""
    return {"gguf_file": Path(ref.target).name} if ref.kind == "gguf" else {}


def read_config(ref: Reference, folder: Path):
    from transformers import AutoConfig

    what = (
        "is not a GGUF file transformers can read"
        if ref.kind == "gguf"
        else f"has no readable model config ({folder / 'config.json'})"
    )
    try:
        if ref.kind != "gguf":
            refuse_custom_code(ref, json.loads((folder / "config.json").read_text()))
        with _quiet():
            return AutoConfig.from_pretrained(folder, trust_remote_code=False, **gguf_file(ref))
    except ReferenceError:
        raise
    except Exception as e:
        raise ReferenceError(f"{ref}: {what} ({type(e).__name__}: {(str(e).splitlines() or [''])[0]})") from None


def refuse_custom_code(ref: Reference, config) -> None:
    """ReferenceError (one line) for a config only a model folder's own Python could build: a ``model_type``
    transformers does not know, or none. Read from config.json before transformers sees it, so nothing is ever asked
    or run (every load passes ``trust_remote_code=False`` too); a known type with an ``auto_map`` is measured with
    transformers' own class (``custom_code_note``)."""
    from transformers import CONFIG_MAPPING

    if not isinstance(config, dict):
        raise ReferenceError(f"{ref}: config.json is not a JSON object")
    model_type, auto = config.get("model_type"), config.get("auto_map") or {}
    if model_type not in CONFIG_MAPPING:
        named = f" (its auto_map names {', '.join(f'{k} -> {v}' for k, v in list(auto.items())[:2])})" if auto else ""
        raise ReferenceError(
            f"{ref}: model_type {model_type!r} is not one transformers implements, so only the "
            f"folder's own code could build it{named}; the harness never runs a model folder's code: "
            f"refusing it"
        )


def custom_code_note(folder: Path) -> str:
    """The caveat of a known model type whose config also names custom code (``auto_map``), which is not run."""
    try:
        auto = json.loads((folder / "config.json").read_text()).get("auto_map")
    except (OSError, ValueError, AttributeError):
        return ""
    return (
        "; its config names custom code (auto_map), which is never run: measured with transformers' own class"
        if auto
        else ""
    )


def _quiet():
    from unittest import mock

    return mock.patch.dict(os.environ, {"TQDM_DISABLE": "1"})  # transformers' GGUF reading bar


def measurability_problems(config) -> list[str]:
    """What the harness needs and this model's config lacks: a causal decoder, RoPE, and attention through
    transformers' attention interface with a ``model.layers[*].self_attn`` stack (checked on a weightless copy)."""
    import torch
    from transformers import AutoModelForCausalLM

    from harness.model.hooks import structure_problems

    if getattr(config, "is_encoder_decoder", False):
        return [f"{config.model_type} is an encoder-decoder, not a decoder-only model"]
    if getattr(config, "text_config", None) is not None and getattr(config, "vision_config", None) is not None:
        return [
            f"{config.model_type} is a multimodal model (its language model sits inside it); the harness measures "
            f"a text-only decoder (give the text model's own folder)"
        ]
    if type(config) not in AutoModelForCausalLM._model_mapping:
        return [f"{config.model_type} is not a causal (decoder-only) language model in transformers"]
    if not (getattr(config, "rope_parameters", None) or getattr(config, "rope_theta", None)):
        return [f"{config.model_type} has no rotary position embedding (the paper's claims are about RoPE models)"]
    params = getattr(config, "rope_parameters", None) or {}
    factors = [p.get("partial_rotary_factor") for p in ([params] + [v for v in params.values() if isinstance(v, dict)])]
    factors.append(getattr(config, "partial_rotary_factor", None))
    if any(f is not None and f < 1.0 for f in factors) or getattr(config, "qk_rope_head_dim", None):
        return [
            f"{config.model_type} rotates only part of each head (partial rotary); the harness's RoPE "
            f"interventions and per-head measurements assume every query and key dimension is rotated"
        ]
    if 0 in (getattr(config, "no_rope_layers", None) or []) or config.model_type in NOPE_LAYERS:
        return [
            f"{config.model_type} leaves some layers without rotary position embedding (NoPE layers); the "
            f"claims' RoPE ablations and per-layer analyses assume every layer rotates"
        ]
    cls = AutoModelForCausalLM._model_mapping[type(config)]
    if not getattr(cls, "_supports_attention_backend", False):
        return [
            f"{cls.__name__}'s attention does not go through transformers' attention interface (where the "
            f"harness reads queries, keys, scores and patterns)"
        ]
    try:
        with torch.device("meta"):  # the module tree without weights: instant even for an 8B model
            model = cls(config)
        problems = structure_problems(model)
        extra = sorted(attention_keywords(type(model.model.layers[0].self_attn)) - HANDLED) if not problems else []
        return problems or (
            [
                f"its attention hands the attention function {', '.join(extra)}, which the harness's "
                f"attention does not implement (e.g. learned sink logits)"
            ]
            if extra
            else []
        )
    except Exception as e:
        return [
            f"transformers cannot build {cls.__name__} from this config ({type(e).__name__}: "
            f"{(str(e).splitlines() or [''])[0]})"
        ]


NOPE_LAYERS = {"cohere2"}  # model types whose global layers skip RoPE without a no_rope_layers list
HANDLED = {"dropout", "scaling", "sliding_window", "softcap"}  # what attention.abspos_attention implements (the window
# arrives in the mask)


def attention_keywords(attention_cls) -> set[str]:
    """The keywords an attention module's forward passes to the attention function (read from its source)."""
    import ast
    import inspect
    import textwrap

    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(attention_cls.forward)))
    except (OSError, TypeError, SyntaxError):
        return {"<source unavailable>"}
    return {
        k.arg
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "attention_interface"
        for k in node.keywords
        if k.arg
    }


def layer_count_problem(config, folder: Path) -> str | None:
    """A config whose layer count is not its weights' (read from the safetensors headers: no tensor is loaded), in
    words; None when they agree or cannot be told cheaply. Loading checks every weight (weights.check_loading); this
    says the commonest lie before anything is collected. Extra layers transformers itself ignores (a checkpoint's
    multi-token-prediction layers) are not counted."""
    from transformers import AutoModelForCausalLM

    text = getattr(config, "text_config", None) or config
    want = getattr(text, "num_hidden_layers", None)
    keys: set[str] = set()
    try:
        from safetensors import safe_open

        for f in sorted(folder.glob("*.safetensors")):
            if f.is_file():
                with safe_open(str(f), framework="pt") as st:
                    keys.update(st.keys())
    except Exception:
        return None
    cls = (
        AutoModelForCausalLM._model_mapping[type(config)]
        if type(config) in AutoModelForCausalLM._model_mapping
        else None
    )
    ignored = getattr(cls, "_keys_to_ignore_on_load_unexpected", None) or ()
    ignore = re.compile("|".join(f"({p})" for p in ignored)) if ignored else None
    found = {
        int(m.group(1))
        for k in keys
        if (m := re.search(r"(?:^|\.)layers\.(\d+)\.", k)) and not (ignore and ignore.search(k))
    }
    if not found or want is None or max(found) + 1 == want:
        return None
    return (
        f"its config.json gives {want} layers but its weights hold {max(found) + 1} (layers.0 to "
        f"layers.{max(found)}): {'a layer would be random' if want > max(found) + 1 else 'the model would be cut'}"
    )


def rope_of(config) -> tuple[str, float]:
    """(variant, theta): 'dual' for per-layer-type RoPE (Gemma-3's local/global), the rope_type when not the
    default (llama3, yarn, ...), else 'standard'; theta of the full-attention RoPE."""
    params = getattr(config, "rope_parameters", None) or {}
    if isinstance(params, dict) and params and all(isinstance(v, dict) for v in params.values()):
        thetas = {k: v.get("rope_theta") for k, v in params.items()}
        variant = "dual" if len(set(thetas.values())) > 1 else "standard"
        return variant, float(thetas.get("full_attention") or max(t for t in thetas.values() if t))
    rope_type = params.get("rope_type") or (getattr(config, "rope_scaling", None) or {}).get("rope_type", "default")
    theta = params.get("rope_theta") or getattr(config, "rope_theta", None)
    return ("standard" if rope_type == "default" else rope_type), float(theta)


def sliding_window_of(config) -> int | None:
    """The sliding window when some layers use one: ``layer_types`` says so where the config has them; else a
    window the config enables (Mistral v0.1, Qwen2 with ``use_sliding_window``)."""
    window = getattr(config, "sliding_window", None)
    types = getattr(config, "layer_types", None)
    if types is not None:
        return window if "sliding_attention" in types else None
    return window if window and getattr(config, "use_sliding_window", True) else None


def bos_policy(tokenizer, ref: Reference) -> tuple[bool, int | None]:
    """(does the tokenizer auto-prepend a token, its id): what it does to a text, compared with the text's own
    tokens, not what its config claims (a template may prepend another token than ``bos_token``). More than one
    prepended token is refused: the claims' prompts put one token, or none, before the text."""
    text = "The cat sat on the mat."
    ids, plain = tokenizer(text)["input_ids"], tokenizer(text, add_special_tokens=False)["input_ids"]
    k = next((k for k in range(len(ids) + 1) if ids[k : k + len(plain)] == plain), None)
    if k is None or k > 1:
        raise ReferenceError(
            f"{ref}: its tokenizer adds {ids[:k] if k else ids} around a text's own tokens; the "
            f"claims' prompts support one prepended token (BOS) or none; refusing it"
        )
    return (True, ids[0]) if k == 1 else (False, None)


def derive_spec(ref: Reference, folder: Path) -> ModelSpec:
    """The spec of the model in ``folder``, from its config and tokenizer."""
    from transformers import AutoTokenizer

    config = read_config(ref, folder)
    problems = measurability_problems(config)
    if problems:
        raise ReferenceError(f"{ref}: the harness cannot measure this model: {problems[0]}; refusing it")
    if ref.kind != "gguf":
        layers = layer_count_problem(config, folder)
        if layers:
            raise ReferenceError(f"{ref}: {layers}; refusing it")
    try:
        with _quiet():
            tokenizer = AutoTokenizer.from_pretrained(folder, trust_remote_code=False, **gguf_file(ref))
    except Exception as e:
        custom = (
            " (its tokenizer is custom code, which the harness never runs)" if "trust_remote_code" in str(e) else ""
        )
        raise ReferenceError(
            f"{ref}: no usable tokenizer in {folder} ({type(e).__name__}){custom}; the claims' "
            f"prompts are tokenized text"
        ) from None
    if ref.kind == "gguf":  # as its conversion will (harness.model.gguf_bos): the BOS token the GGUF declares
        gguf_bos.give_declared_bos(tokenizer, folder / Path(ref.target).name)
    return spec_of(
        ref,
        config,
        tokenizer,
        folder=None if ref.kind == "gguf" else folder,
        gguf={"kind": "path", "file": str(Path(ref.target).resolve())} if ref.kind == "gguf" else {},
        note="" if ref.kind == "gguf" else custom_code_note(folder),
    )


def spec_of(ref: Reference, config, tokenizer, folder: Path | None, gguf: dict, note: str = "") -> ModelSpec:
    """The spec of a model from its config and tokenizer (loaded from a reference's folder, or a model in memory:
    harness.live): BOS policy from what the tokenizer does, RoPE, windows and shape from the config."""
    adds_bos, bos_id = bos_policy(tokenizer, ref)
    rope, theta = rope_of(config)
    text = getattr(config, "text_config", None) or config
    rows = getattr(text, "vocab_size", None)
    if rows and len(tokenizer) > rows:  # ids past the embedding would fail every test with an IndexError
        raise ReferenceError(
            f"{ref}: its tokenizer has {len(tokenizer):,} tokens and its embedding {rows:,} rows (vocab_size): "
            f"another model's tokenizer; refusing it"
        )
    shape = {
        k: getattr(text, k)
        for k in ("hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "vocab_size")
    }
    arch = (config.architectures or [type(config).__name__.replace("Config", "ForCausalLM")])[0]
    return ModelSpec(
        name=ref.name,
        family=FAMILY_OF.get(config.model_type, config.model_type),
        group="local",
        architecture=arch,
        source=str(ref),
        adds_bos=adds_bos,
        bos_token_id=bos_id,
        rope=rope,
        rope_theta=theta,
        sliding_window=sliding_window_of(config),
        context=getattr(config, "max_position_embeddings", None),
        caveat="your model (not one the paper measured): judged at the paper's thresholds, with no paper values"
        + (
            ""
            if config.model_type in FAMILY_OF
            else f"; its architecture ({config.model_type}) is outside the "
            f"four families the harness was validated on (Llama, Qwen2, Mistral, Gemma)"
        )
        + note,
        hub_id=ref.target if ref.kind == "hf" else None,
        config=shape,
        folder=None if folder is None else str(folder),
        gguf=gguf,
    )
