"""The ``abspos`` attention function: transformers' attention with named hook points inside it, by need.

Attention-internal points (``attn.hook_q``, ``hook_k``, ``hook_mask``, ``hook_scores``, ``hook_pattern``; see
``harness.model.hook_points``) are served by the attention function ``abspos`` registered in transformers'
``AttentionInterface`` *together with* its mask function in ``AttentionMaskInterface`` (without the latter
transformers silently hands a custom attention no mask at all; the function refuses to run without one). Per layer
and per call it takes the cheapest path its hooks allow: transformers' sdpa, the fused kernel's row logsumexp for
pair reads, or eager attention (``abspos_attention``). ``HookedModel`` makes it a model's attention implementation.
"""

from __future__ import annotations

import torch

from harness.model.hook_points import hook_name

ATTN_IMPL = "abspos"


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
        out = fn(query, hook_name("attn.hook_q", layer))
        query = query if out is None else out
    for fn in hooks.get("k", ()):
        out = fn(key, hook_name("attn.hook_k", layer))
        key = key if out is None else out
    mask = _hooked_mask(hooks, attention_mask, layer)  # a mask edit (bidirectional) needs no eager pass
    pattern = hooks.get("pattern", ())
    if softcap is None and mask is not None and not hooks.get("scores") and query.dtype in EXACT:
        if not pattern:
            return sdpa_attention(module, query, key, value, mask, dropout=dropout, scaling=scaling, **kwargs)
        if (
            all(
                hasattr(fn, "at_pairs") and len(fn.pairs[0]) * query.shape[-1] <= query.shape[2] * key.shape[2]
                for fn in pattern
            )
            and lse_kernel(query) is not None
        ):
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
        out = fn(scores, hook_name("attn.hook_scores", layer))
        scores = scores if out is None else out
    if mask is not None:
        scores = scores + mask[:, :, :, : key.shape[-2]]
    weights = torch.softmax(scores, dim=-1, dtype=torch.float32).to(query.dtype)
    for fn in hooks.get("pattern", ()):
        out = fn(weights, hook_name("attn.hook_pattern", layer))
        weights = weights if out is None else out
    output = torch.matmul(weights, value).transpose(1, 2).contiguous()
    return output, weights


EXACT = (torch.float32, torch.float64)  # by need only where the paths agree to float round-off: in bf16/fp16 the
# paths differ by up to 1% per weight, so a figure would depend on which reads share its pass; eager there


def _hooked_mask(hooks, mask, layer):
    for fn in hooks.get("mask", ()):
        out = fn(mask, hook_name("attn.hook_mask", layer))
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
    out, lse = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(
        q, k, v, 0.0, False, attn_mask=mask, scale=scale
    )[:2]
    return out, lse


def _cuda_lse(q, k, v, mask, scale):
    out, lse = torch.ops.aten._scaled_dot_product_efficient_attention(
        q, k, v, mask.expand(-1, q.shape[1], -1, -1), True, scale=scale
    )[:2]
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
    point = hook_name("attn.hook_pattern", layer)
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


def use_abspos(hf_model) -> None:
    """Make ``abspos`` the model's attention implementation (registered first; nothing to do when it already is).
    The one place it is set: ``HookedModel`` calls it for every model it wraps, loaded or built at random."""
    if hf_model.config._attn_implementation != ATTN_IMPL:
        register_attention()
        hf_model.set_attn_implementation(ATTN_IMPL)
