"""Interventions as composable context managers over named hook points.

Each returns a context manager; the edits of ``harness.model.edits`` (hashable values, composed in a ``Run``)
apply them.
All act at every layer and head unless told otherwise, and leave the weights untouched.
"""

from __future__ import annotations

from typing import Iterable

import torch

from harness.model.hook_points import hook_name
from harness.model.hooks import HookedModel, rotary_modules


def layer_window(model: HookedModel, layer: int) -> int | None:
    """The sliding window decoder layer ``layer`` attends within (None: full causal attention): its attention
    module's ``sliding_window`` where it has one (Gemma-3, Qwen2: None on full-attention layers), else the config's,
    which models such as Mistral hand every layer's attention without keeping it on the module."""
    attn = model.layers[layer].self_attn
    if hasattr(attn, "sliding_window"):
        return attn.sliding_window
    return getattr(model.hf.config, "sliding_window", None)


def bidirectional(model: HookedModel):
    """Remove the causal mask (paper §4 'Bidirectional'). Sliding-window layers keep their window
    as a symmetric band |i - j| < w: only causality is removed, not locality. We never pad, so the
    bidirectional mask is otherwise all zeros."""

    def replace(mask, hook):
        window = layer_window(model, hook.layer)
        n = mask.shape[-1]
        new = torch.zeros_like(mask)
        if window:
            idx = torch.arange(n, device=mask.device)
            far = (idx[:, None] - idx[None, :]).abs() >= window
            new = new.masked_fill(far, torch.finfo(mask.dtype).min)
        return new

    return model.hooks({name: replace for name in model.names("attn.hook_mask")})


def attention_scalings(model: HookedModel) -> list[float]:
    """The factors the model's rotary module(s) multiply cos and sin by, one per RoPE kind (transformers'
    ``attention_scaling``: 1 for default, linear, dynamic and llama3 RoPE; YaRN's and LongRoPE's attention
    temperature otherwise, so cos^2 + sin^2 = scaling^2). Read when asked: dynamic RoPE may reset it."""
    out = []
    for rot in rotary_modules(model.base):
        if hasattr(rot, "attention_scaling"):
            out.append(float(rot.attention_scaling))
        for kind in getattr(rot, "layer_types", None) or ():  # Gemma-3: one per layer type
            if hasattr(rot, f"{kind}_attention_scaling"):
                out.append(float(getattr(rot, f"{kind}_attention_scaling")))
    return sorted(set(out)) or [1.0]


def rope_scaling_of(model: HookedModel, cos: torch.Tensor, sin: torch.Tensor) -> float:
    """The attention scaling these cos/sin carry: the model's only one, or (RoPE kinds of different scalings) the
    one nearest their magnitude sqrt(cos^2 + sin^2)."""
    scalings = attention_scalings(model)
    if len(scalings) == 1:
        return scalings[0]
    r = torch.sqrt(cos.float() ** 2 + sin.float() ** 2).mean().item()
    return min(scalings, key=lambda s: abs(s - r))


def identity_rope(model: HookedModel):
    """RoPE rotation replaced by the identity: cos = 1, sin = 0 (paper §4 'Identity-RoPE'), times the model's own
    attention scaling (YaRN, LongRoPE: cos = scaling), so only the rotation goes and the attention temperature
    stays (cos = 1 exactly where the scaling is 1, as in every bundled and paper model)."""

    def replace(cos_sin, name):
        cos, sin = cos_sin
        scaling = rope_scaling_of(model, cos, sin)
        return (torch.ones_like(cos) if scaling == 1.0 else torch.full_like(cos, scaling)), torch.zeros_like(sin)

    return model.hooks({"hook_rotary": replace})


def _rotate_half(x: torch.Tensor) -> torch.Tensor:
    """Transformers' rotate-half: dimension k pairs with k + d/2 (the layout of Llama/Qwen2/Mistral/Gemma3)."""
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def band_permutation(n_bands: int, seed: int = 0) -> torch.Tensor:
    """The fixed random permutation p of the ``n_bands`` = d/2 frequency bands used by ``scrambled_rope``:
    ``torch.randperm`` from a generator seeded ``seed``; redrawn with seed + 1, + 2, ... while it is the
    identity (a scramble must move bands). A single band cannot be scrambled."""
    if n_bands < 2:
        raise ValueError(f"cannot scramble {n_bands} frequency band(s)")
    s = seed
    while True:
        perm = torch.randperm(n_bands, generator=torch.Generator().manual_seed(s))
        if not torch.equal(perm, torch.arange(n_bands)):
            return perm
        s += 1


def band_permuted_query(
    q_rot: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, perm: torch.Tensor, scaling: float = 1.0
) -> torch.Tensor:
    """q' = R_P(i) R(i)^T q_rot: undo the model's rotation of a query and rotate it again with the frequency
    bands reassigned by ``perm`` (band b of the query turns by the angle of band p(b) at the same position).

    ``q_rot`` [..., n, d] is the query as rotated by the model (``q*cos + rotate_half(q)*sin``); ``cos``,
    ``sin`` are the model's own, broadcastable to it, in transformers' layout [c_0..c_{d/2-1}, c_0..c_{d/2-1}];
    ``perm`` is a permutation of the d/2 bands, P = cat(p, p + d/2). Each q' is a rotation of q (norm kept
    exactly), but against an unchanged key q'_i . k_j = sum_b q_b^T R(w_b j - w_{p(b)} i) k_b depends on i
    and j separately: Eq. 2's relative-offset property is gone. Computed in float32 at least.
    ``scaling`` is the model's attention scaling that its cos/sin carry (YaRN, LongRoPE; ``rope_scaling_of``): it is
    divided out, so q' keeps q_rot's norm (the model's temperature) and only the rotation changes."""
    d = q_rot.shape[-1]
    dtype = torch.promote_types(q_rot.dtype, torch.float32)
    q_rot, cos, sin = q_rot.to(dtype), cos.to(dtype), sin.to(dtype)
    if scaling != 1.0:  # unit cos/sin: undoing R(i) then applying R_P(i) is orthogonal
        cos, sin = cos / scaling, sin / scaling
    perm = perm.to(cos.device)
    full = torch.cat((perm, perm + d // 2))
    q = q_rot * cos - _rotate_half(q_rot) * sin
    return q * cos[..., full] + _rotate_half(q) * sin[..., full]


def scrambled_rope(model: HookedModel, seed: int = 0):
    """Scrambled-RoPE (paper §4): "a fixed random permutation to the assignment of frequency bands to
    query/key dimensions, preserving rotation magnitudes while destroying the relative-offset property of
    Eq. 2". Permuting the bands identically for queries and keys would keep Eq. 2 exact (the dot product of
    a band only sees its own frequency times i - j), so the permutation ``band_permutation(d/2, seed)`` is
    applied to the QUERIES only; keys keep the model's own assignment. At every layer the query handed to
    attention is replaced by ``band_permuted_query`` (that layer's cos/sin, read at ``attn.hook_rope``, so
    Gemma-3's sliding and global layers each use their own RoPE): every query is still a rotation of the
    unrotated query (norms exact, the model's attention scaling kept), and q'_i . k_j depends on i and j separately.
    Partial rotary (cos/sin narrower than the head) is refused."""
    rope: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}
    perms: dict[int, torch.Tensor] = {}

    def store(cos_sin, hook):
        rope[hook.layer] = cos_sin

    def scramble(q, hook):
        cos, sin = rope[hook.layer]
        d = q.shape[-1]
        if cos.shape[-1] != d:
            raise NotImplementedError(
                f"{hook}: cos/sin cover {cos.shape[-1]} of {d} head dimensions (partial rotary); "
                "scrambled_rope only supports RoPE over the whole head"
            )
        half = d // 2
        if not (torch.equal(cos[..., :half], cos[..., half:]) and torch.equal(sin[..., :half], sin[..., half:])):
            raise NotImplementedError(f"{hook}: cos/sin are not in transformers' rotate-half layout")
        if d not in perms:
            perms[d] = band_permutation(half, seed)
        if cos.shape[-2] != q.shape[-2]:
            raise RuntimeError(f"{hook}: cos/sin for {cos.shape[-2]} positions, query has {q.shape[-2]}")
        return band_permuted_query(
            q, cos.unsqueeze(1), sin.unsqueeze(1), perms[d], rope_scaling_of(model, cos, sin)
        ).to(q.dtype)

    mapping = {name: store for name in model.names("attn.hook_rope")}
    mapping.update({name: scramble for name in model.names("attn.hook_q")})
    return model.hooks(mapping)


def scrambled_rope_all_entries(model: HookedModel, seed: int = 0):
    """SENSITIVITY VARIANT, not the paper's Scrambled-RoPE, and NOT a rotation: one fixed random permutation
    of all d entries of cos/sin (at ``hook_rotary``, so for queries and keys alike). Transformers rotates
    dimension k with k + d/2; after this permutation the two dimensions of a pair get different angles, so
    the map q -> q*cos' + rotate_half(q)*sin' changes norms (it is not orthogonal). It was the harness's
    first reading of §4 and is kept only to report as a labelled sensitivity figure beside
    ``scrambled_rope``."""
    perm_cache: dict[int, torch.Tensor] = {}

    def replace(cos_sin, name):
        cos, sin = cos_sin
        d = cos.shape[-1]
        if d not in perm_cache:
            g = torch.Generator().manual_seed(seed)
            perm_cache[d] = torch.randperm(d, generator=g)
        p = perm_cache[d].to(cos.device)
        return cos[..., p], sin[..., p]

    return model.hooks({"hook_rotary": replace})


def zero_heads(model: HookedModel, heads: Iterable[tuple[int, int]]):
    """Zero the output of chosen (layer, head) pairs before o_proj (paper §4 sink-head ablation)."""
    by_layer: dict[int, list[int]] = {}
    for layer, head in heads:
        by_layer.setdefault(int(layer), []).append(int(head))

    def make(hs):
        def fn(z, name):
            z = z.clone()
            z[:, :, hs, :] = 0
            return z

        return fn

    return model.hooks({hook_name("attn.hook_z", l): make(hs) for l, hs in by_layer.items()})


def replace_embedding_at(model: HookedModel, position: int, vector: torch.Tensor):
    """Replace the input embedding at one position by ``vector`` (paper §4 bi-replace-embedding)."""

    def fn(x, name):
        x = x.clone()
        x[:, position] = vector.to(x.dtype).to(x.device)
        return x

    return model.hooks({"hook_embed": fn})


def replace_state_with_mid_mean(
    model: HookedModel, layers: Iterable[int], position: int = 0, mid: tuple[float, float] = (0.25, 0.75)
):
    """Replace the residual state at ``position`` after each layer in ``layers`` by the mean of the
    same prompt's states over mid-sequence positions [mid[0]*n, mid[1]*n) (paper §4 bi-replace-L*/all)."""

    def fn(h, name):
        n = h.shape[1]
        lo, hi = int(mid[0] * n), max(int(mid[1] * n), int(mid[0] * n) + 1)
        h = h.clone()
        h[:, position] = h[:, lo:hi].mean(dim=1)
        return h

    return model.hooks({hook_name("hook_resid_post", l): fn for l in layers})


def _remove_directions(model: HookedModel, point: str, directions: dict, positions: slice):
    """At ``blocks.{l}.{point}`` for each layer l in ``directions``, remove the component along that
    layer's direction from the activation at ``positions``."""
    units = {l: d / d.norm() for l, d in directions.items()}

    def make(u):
        def fn(h, name):
            h = h.clone()
            v = u.to(h.dtype).to(h.device)
            seg = h[:, positions]
            h[:, positions] = seg - (seg @ v)[..., None] * v
            return h

        return fn

    return model.hooks({hook_name(point, l): make(u) for l, u in units.items()})


def project_out_of_residual(model: HookedModel, directions: dict[int, torch.Tensor], positions: slice = slice(None)):
    """Remove a direction from the residual stream after each given layer (paper §4 rank-1 subspace
    ablation): ``directions`` maps layer -> direction."""
    return _remove_directions(model, "hook_resid_post", directions, positions)


def rank1_mlp_ablation(model: HookedModel, directions: dict[int, torch.Tensor], positions: slice = slice(None)):
    """Replace the MLP output at ``positions`` of each given layer by its projection orthogonal to that
    layer's direction (the dominant singular vector of the MLP outputs; paper §4, App. B)."""
    return _remove_directions(model, "hook_mlp_out", directions, positions)
