"""The hooked model: a Hugging Face causal LM whose named hook points (``harness.model.hook_points``) are served through
transformers' own interfaces, and the check that a model's module tree has what they need.

The points inside attention (q, k, mask, scores, pattern) are kept on each layer's ``self_attn`` for the ``abspos``
attention function (``harness.model.attention``), which ``HookedModel`` makes the model's attention implementation.
The others are torch forward (pre-)hooks on the model's own modules: ``attn.hook_rope`` is a forward pre-hook on
``self_attn`` reading its ``position_embeddings`` argument, ``attn.hook_z`` one on ``o_proj``.
"""

from __future__ import annotations

import contextlib
import inspect
from collections import defaultdict

import torch

from harness.model.attention import use_abspos
from harness.model.hook_points import NAME, HookFn, HookPoint, hook_name
from harness.spec.models import UnsupportedModelError, names


def structure_problems(model) -> list[str]:
    """What the harness needs of a model's module tree and this one lacks (empty when measurable)."""
    base = getattr(model, "model", None)
    layers = getattr(base, "layers", None)
    problems = []
    if layers is None:
        problems.append("no model.model.layers decoder stack")
    elif not all(hasattr(l, "self_attn") and hasattr(l.self_attn, "o_proj") for l in layers):
        problems.append("decoder layers lack self_attn.o_proj")
    if base is not None and not hasattr(base, "rotary_emb"):
        problems.append("no rotary embedding module (the paper's claims are about RoPE models)")
    return problems


def check_supported(model, spec_name: str) -> None:
    """Refuse models the harness cannot measure, naming what is missing."""
    problems = structure_problems(model)
    if problems:
        raise UnsupportedModelError(
            f"{spec_name}: the harness cannot handle this architecture ({'; '.join(problems)}). "
            f"Supported: decoder-only RoPE models whose attention goes through transformers' attention interface "
            f"(Llama, Qwen2, Mistral, Gemma3 and alike), e.g. {', '.join(names())}"
        )


class HookedModel:
    """A Hugging Face causal LM plus its spec, tokenizer and named hook points."""

    def __init__(self, hf_model, spec, tokenizer=None):
        check_supported(hf_model, spec.name)
        self.hf = hf_model
        self.spec = spec
        self.tokenizer = tokenizer
        self.base = hf_model.model
        self.layers = list(self.base.layers)
        cfg = hf_model.config
        self.n_layers = len(self.layers)
        self.n_heads = cfg.num_attention_heads
        self.head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
        self.d_model = cfg.hidden_size
        use_abspos(hf_model)

    @property
    def device(self) -> torch.device:
        return self.base.embed_tokens.weight.device

    def names(self, point: str) -> list[str]:
        """All layer names of one point, e.g. ``names('attn.hook_pattern')``."""
        return [hook_name(point, l) for l in range(self.n_layers)]

    @contextlib.contextmanager
    def hooks(self, mapping: dict[str, HookFn | list[HookFn]]):
        """Install hooks for the duration of the block; they are removed on exit, even on error."""
        handles: list = []
        attn_added: list = []
        try:
            for name, fns in mapping.items():
                for fn in fns if isinstance(fns, (list, tuple)) else [fns]:
                    self._install(name, fn, handles, attn_added)
            yield self
        finally:
            for h in handles:
                h.remove()
            for module, point, fn in attn_added:
                module._abspos_hooks[point].remove(fn)

    def _install(self, name, fn, handles, attn_added):
        m = NAME.match(name)
        name = HookPoint(name, None if m is None or m["layer"] is None else int(m["layer"]))
        if not m:
            raise KeyError(f"unknown hook point {name!r}; see harness.model.hook_points for the names")
        if m["top"] == "embed":
            handles.append(self.base.embed_tokens.register_forward_hook(_out_hook(fn, name)))
            return
        if m["top"] == "rotary":
            for rot in rotary_modules(self.base):
                handles.append(rot.register_forward_hook(_out_hook(fn, name)))
            return
        layer = int(m["layer"])
        if layer >= self.n_layers:
            raise KeyError(f"{name!r}: model has {self.n_layers} layers")
        block, point = self.layers[layer], m["point"]
        if point == "hook_resid_post":
            handles.append(block.register_forward_hook(_out_hook(fn, name)))
        elif point == "hook_mlp_out":
            handles.append(block.mlp.register_forward_hook(_out_hook(fn, name)))
        elif point == "attn.hook_z":
            handles.append(block.self_attn.o_proj.register_forward_pre_hook(_z_hook(fn, name, self.n_heads)))
        elif point == "attn.hook_rope":
            attn = block.self_attn
            handles.append(attn.register_forward_pre_hook(_rope_hook(fn, name, attn), with_kwargs=True))
        else:
            kind = point.split("hook_")[1]
            attn = block.self_attn
            if not hasattr(attn, "_abspos_hooks"):
                attn._abspos_hooks = defaultdict(list)
            attn._abspos_hooks[kind].append(fn)
            attn_added.append((attn, kind, fn))


def rotary_modules(base) -> list:
    """The decoder's rotary modules: one in transformers >= 5 (Gemma3 passes a ``layer_type``), two in
    Gemma3 of transformers 4.x (``rotary_emb`` global, ``rotary_emb_local`` for sliding layers)."""
    mods = [base.rotary_emb]
    local = getattr(base, "rotary_emb_local", None)
    if local is not None:
        mods.append(local)
    return mods


def _out_hook(fn, name):
    def hook(module, args, output):
        if isinstance(output, tuple):
            if name == "hook_rotary":
                new = fn(output, name)
                return output if new is None else tuple(new)
            new = fn(output[0], name)
            return output if new is None else (new,) + tuple(output[1:])
        new = fn(output, name)
        return output if new is None else new

    return hook


def _rope_hook(fn, name, attn):
    """Forward pre-hook on ``self_attn`` serving its ``position_embeddings`` (cos, sin), whether the
    decoder layer passes it by keyword (Llama/Qwen2/Mistral/Gemma3 in transformers 5) or by position."""
    params = [p for p in inspect.signature(attn.forward).parameters if p != "self"]
    if "position_embeddings" not in params:
        raise UnsupportedModelError(f"{name}: {type(attn).__name__}.forward takes no position_embeddings")
    index = params.index("position_embeddings")

    def hook(module, args, kwargs):
        if "position_embeddings" in kwargs:
            cos_sin = kwargs["position_embeddings"]
        elif len(args) > index:
            cos_sin = args[index]
        else:
            raise RuntimeError(f"{name}: {type(module).__name__} was called without position_embeddings")
        new = fn(cos_sin, name)
        if new is None:
            return None
        new = tuple(new)
        if "position_embeddings" in kwargs:
            return args, {**kwargs, "position_embeddings": new}
        return args[:index] + (new,) + args[index + 1 :], kwargs

    return hook


def _z_hook(fn, name, n_heads):
    def hook(module, args):
        x = args[0]
        z = x.view(*x.shape[:-1], n_heads, x.shape[-1] // n_heads)
        new = fn(z, name)
        if new is None:
            return None
        return (new.reshape(x.shape),) + tuple(args[1:])

    return hook
