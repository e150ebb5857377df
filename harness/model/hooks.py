"""Named hook points on a Hugging Face decoder, through transformers' own interfaces.

Every activation the harness reads or edits has one stable name (TransformerLens style):

==============================  ==================================================  =================
name                            what                                                shape
==============================  ==================================================  =================
``hook_embed``                  token embedding output (Gemma: after its scaling)   [B, n, D]
``hook_rotary``                 the rotary module's (cos, sin)                      2 x [B, n, d_head]
``blocks.{l}.attn.hook_rope``   the (cos, sin) this layer's self_attn received      2 x [B|1, n, d_head]
``blocks.{l}.attn.hook_q``      rotated query handed to attention, before scores    [B, H, n, d_head]
``blocks.{l}.attn.hook_k``      rotated key handed to attention, before GQA repeat  [B, KV, n_k, d_head]
``blocks.{l}.attn.hook_mask``   additive mask handed to attention (0 / -inf)        [B, 1, n, n]
``blocks.{l}.attn.hook_scores`` pre-softmax logits q.k * scale (before the mask)    [B, H, n, n]
``blocks.{l}.attn.hook_pattern``post-softmax attention weights                      [B, H, n, n]
``blocks.{l}.attn.hook_z``      per-head attention output (input of o_proj)         [B, n, H, d_head]
``blocks.{l}.hook_mlp_out``     MLP output                                          [B, n, D]
``blocks.{l}.hook_resid_post``  decoder layer output (residual stream)              [B, n, D]
==============================  ==================================================  =================

A hook is ``fn(value, hook) -> value | None``; returning a value replaces the activation. ``hook`` is a
``HookPoint``: the point's name (a ``str``) that also carries its ``.layer`` (``None`` for the embedding
and the rotary module), so no hook has to parse a name. ``n_k`` = n, or all cached positions with a KV cache.
``hook_rotary`` is the output of the rotary module(s), shared by every layer of one RoPE kind;
``attn.hook_rope`` is what one layer's attention actually received (a forward pre-hook on
``self_attn`` reading its ``position_embeddings`` argument), so on Gemma-3 the sliding and the global
layers each see their own RoPE there. Returning a new (cos, sin) replaces it for that layer only.
Attention-internal points (q, k, mask, scores, pattern) are served by the attention function
``abspos`` registered in transformers' ``AttentionInterface`` *together with* its mask
function in ``AttentionMaskInterface`` (without the latter transformers silently hands a
custom attention no mask at all; the function refuses to run without one).
The others are torch forward (pre-)hooks on the model's own modules.
"""

from __future__ import annotations

import contextlib
import inspect
import re
from collections import defaultdict
from typing import Callable

import torch

from harness.spec.models import UnsupportedModelError, names

ATTN_IMPL = "abspos"


class HookPoint(str):
    """A hook point's name, e.g. ``blocks.3.attn.hook_pattern``, with its decoder ``layer`` (or None)."""

    layer: int | None

    def __new__(cls, name: str, layer: int | None = None):
        point = super().__new__(cls, name)
        point.layer = layer
        return point

HookFn = Callable[[object, str], object]
_ATTN_POINTS = ("q", "k", "mask", "scores", "pattern")


class MissingMaskError(RuntimeError):
    """The attention function received no mask: the causal mask would silently be dropped."""


def abspos_attention(module, query, key, value, attention_mask, scaling, dropout=0.0, softcap=None, **kwargs):
    """Attention with named hook points, by need, per layer and per call. Hooks on q, k and the mask run first (they
    read or edit what every path consumes); then transformers' sdpa where no hook reads the scores or the pattern;
    the fused kernel's row logsumexp where the only pattern hooks read it at (query, key) pairs
    (w_ij = exp(q_i·k_j·s + mask_ij − LSE_i): no n × n pattern); eager attention, numerically transformers' eager
    path, where a hook reads or edits the scores or the whole pattern."""
    hooks = getattr(module, "_abspos_hooks", {})
    layer = getattr(module, "layer_idx", None)
    for fn in hooks.get("q", ()):
        out = fn(query, HookPoint(f"blocks.{layer}.attn.hook_q", layer))
        query = query if out is None else out
    for fn in hooks.get("k", ()):
        out = fn(key, HookPoint(f"blocks.{layer}.attn.hook_k", layer))
        key = key if out is None else out
    mask = _hooked_mask(hooks, attention_mask, layer)  # a mask edit (bidirectional) needs no eager pass
    pattern = hooks.get("pattern", ())
    if softcap is None and mask is not None and not hooks.get("scores") and query.dtype in EXACT:
        if not pattern:
            return sdpa_attention(module, query, key, value, mask, dropout=dropout, scaling=scaling, **kwargs)
        if all(hasattr(fn, "at_pairs") and len(fn.pairs[0]) * query.shape[-1] <= query.shape[2] * key.shape[2]
               for fn in pattern) and lse_kernel(query) is not None:
            out = pairs_attention(query, key, value, mask, scaling, pattern, layer)
            if out is not None:  # None: the kernel refused these inputs (eager below)
                return out
    groups = query.shape[1] // key.shape[1]
    if groups > 1:
        key = key.repeat_interleave(groups, dim=1)
        value = value.repeat_interleave(groups, dim=1)
    scores = torch.matmul(query, key.transpose(2, 3)) * scaling
    if softcap is not None:
        scores = torch.tanh(scores / softcap) * softcap
    if mask is None and query.shape[2] > 1:
        raise MissingMaskError(
            f"layer {layer}: no attention mask reached the '{ATTN_IMPL}' attention function; "
            "its mask function is not registered, and attention would run unmasked"
        )
    for fn in hooks.get("scores", ()):
        out = fn(scores, HookPoint(f"blocks.{layer}.attn.hook_scores", layer))
        scores = scores if out is None else out
    if mask is not None:
        scores = scores + mask[:, :, :, : key.shape[-2]]
    weights = torch.softmax(scores, dim=-1, dtype=torch.float32).to(query.dtype)
    for fn in hooks.get("pattern", ()):
        out = fn(weights, HookPoint(f"blocks.{layer}.attn.hook_pattern", layer))
        weights = weights if out is None else out
    output = torch.matmul(weights, value).transpose(1, 2).contiguous()
    return output, weights


EXACT = (torch.float32, torch.float64)  # by need only where the paths agree to float round-off: in bf16/fp16 the
# paths differ by up to 1% per weight, so a figure would depend on which reads share its pass; eager there, as before


def _hooked_mask(hooks, mask, layer):
    for fn in hooks.get("mask", ()):
        out = fn(mask, HookPoint(f"blocks.{layer}.attn.hook_mask", layer))
        mask = mask if out is None else out
    return mask


def sdpa_attention(*args, **kwargs):
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    return sdpa_attention_forward(*args, **kwargs)


def lse_kernel(query: torch.Tensor):
    """A fused attention kernel that also returns each query row's logsumexp, for this device (None: none)."""
    if query.device.type == "cpu":
        return _cpu_lse
    if query.device.type == "cuda":
        return _cuda_lse
    return None


def _cpu_lse(q, k, v, mask, scale):
    out, lse = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(q, k, v, 0.0, False, attn_mask=mask,
                                                                           scale=scale)[:2]
    return out, lse


def _cuda_lse(q, k, v, mask, scale):
    out, lse = torch.ops.aten._scaled_dot_product_efficient_attention(q, k, v, mask.expand(-1, q.shape[1], -1, -1),
                                                                      True, scale=scale)[:2]
    return out, lse[..., : q.shape[2]]


def pairs_attention(query, key, value, attention_mask, scaling, pattern, layer):
    """Attention output from the fused kernel, and each pattern hook served the post-softmax weights at its
    (query, key) pairs from the kernel's row logsumexp, [B, H, P]: the same weights as eager's (within float
    round-off), never the n × n pattern. None when the kernel refuses the inputs."""
    groups = query.shape[1] // key.shape[1]
    if groups > 1:
        key = key.repeat_interleave(groups, dim=1)
        value = value.repeat_interleave(groups, dim=1)
    mask = attention_mask[:, :, :, : key.shape[-2]].to(query.dtype)
    try:
        out, lse = lse_kernel(query)(query, key, value, mask, scaling)
    except RuntimeError:  # e.g. a GPU kernel's alignment or dtype requirement: eager attention serves the layer
        return None
    point = HookPoint(f"blocks.{layer}.attn.hook_pattern", layer)
    for fn in pattern:
        i, j = (t.to(query.device) for t in fn.pairs)
        dots = torch.einsum("bhpd,bhpd->bhp", query.index_select(2, i).float(), key.index_select(2, j).float())
        logits = dots * scaling + mask[:, :, i, j].float()
        fn.at_pairs(torch.exp(logits - lse.index_select(2, i).float()).to(query.dtype), point)
    return out.transpose(1, 2).contiguous(), None


def register_attention() -> None:
    """Register ``abspos`` with transformers' attention and mask registries (idempotent)."""
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, eager_mask

    AttentionInterface.register(ATTN_IMPL, abspos_attention)
    AttentionMaskInterface.register(ATTN_IMPL, eager_mask)


_NAME = re.compile(r"^(?:hook_(?P<top>embed|rotary)|blocks\.(?P<layer>\d+)\.(?P<point>attn\.hook_(?:q|k|rope|mask|scores|pattern|z)|hook_mlp_out|hook_resid_post))$")


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
        if hf_model.config._attn_implementation != ATTN_IMPL:
            register_attention()
            hf_model.set_attn_implementation(ATTN_IMPL)

    @property
    def device(self) -> torch.device:
        return self.base.embed_tokens.weight.device

    def names(self, point: str) -> list[str]:
        """All layer names of one point, e.g. ``names('attn.hook_pattern')``."""
        return [f"blocks.{l}.{point}" for l in range(self.n_layers)]

    @contextlib.contextmanager
    def hooks(self, mapping: dict[str, HookFn | list[HookFn]]):
        """Install hooks for the duration of the block; they are removed on exit, even on error."""
        handles, attn_added = [], []
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
        m = _NAME.match(name)
        name = HookPoint(name, None if m is None or m["layer"] is None else int(m["layer"]))
        if not m:
            raise KeyError(f"unknown hook point {name!r}; see harness.model.hooks for the names")
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
        return args[:index] + (new,) + args[index + 1:], kwargs

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
