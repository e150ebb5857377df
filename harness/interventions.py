"""Interventions as composable context managers over named hook points.

Each returns a context manager; the edits of ``harness.edits`` (hashable values, composed in a ``Run``)
apply them.
All act at every layer and head unless told otherwise, and leave the weights untouched.
"""

from __future__ import annotations

from typing import Iterable

import torch

from .hooks import HookedModel


def bidirectional(model: HookedModel):
    """Remove the causal mask (paper §4 'Bidirectional'). Sliding-window layers keep their window
    as a symmetric band |i - j| < w: only causality is removed, not locality. We never pad, so the
    bidirectional mask is otherwise all zeros."""

    def replace(mask, hook):
        window = getattr(model.layers[hook.layer].self_attn, "sliding_window", None)
        n = mask.shape[-1]
        new = torch.zeros_like(mask)
        if window:
            idx = torch.arange(n, device=mask.device)
            far = (idx[:, None] - idx[None, :]).abs() >= window
            new = new.masked_fill(far, torch.finfo(mask.dtype).min)
        return new

    return model.hooks({name: replace for name in model.names("attn.hook_mask")})


def identity_rope(model: HookedModel):
    """RoPE rotation replaced by the identity: cos = 1, sin = 0 (paper §4 'Identity-RoPE')."""

    def replace(cos_sin, name):
        cos, sin = cos_sin
        return torch.ones_like(cos), torch.zeros_like(sin)

    return model.hooks({"hook_rotary": replace})


def scrambled_rope(model: HookedModel, seed: int = 0):
    """A fixed random permutation of the frequency bands over the query/key dimensions (paper §4).

    Transformers lays cos/sin out as [f_0..f_{d/2-1}, f_0..f_{d/2-1}] and rotates dimension k with
    k + d/2. We permute all d entries with one fixed permutation, so the two dimensions of a pair
    receive different frequencies: magnitudes (the set of angles) are kept, the pairing that makes
    q.k depend on i - j alone is destroyed. Permuting only the d/2 bands would keep Eq. 2 exact."""
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

    return model.hooks({f"blocks.{l}.attn.hook_z": make(hs) for l, hs in by_layer.items()})


def replace_embedding_at(model: HookedModel, position: int, vector: torch.Tensor):
    """Replace the input embedding at one position by ``vector`` (paper §4 bi-replace-embedding)."""

    def fn(x, name):
        x = x.clone()
        x[:, position] = vector.to(x.dtype).to(x.device)
        return x

    return model.hooks({"hook_embed": fn})


def replace_state_with_mid_mean(model: HookedModel, layers: Iterable[int], position: int = 0,
                                mid: tuple[float, float] = (0.25, 0.75)):
    """Replace the residual state at ``position`` after each layer in ``layers`` by the mean of the
    same prompt's states over mid-sequence positions [mid[0]*n, mid[1]*n) (paper §4 bi-replace-L*/all)."""

    def fn(h, name):
        n = h.shape[1]
        lo, hi = int(mid[0] * n), max(int(mid[1] * n), int(mid[0] * n) + 1)
        h = h.clone()
        h[:, position] = h[:, lo:hi].mean(dim=1)
        return h

    return model.hooks({f"blocks.{l}.hook_resid_post": fn for l in layers})


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

    return model.hooks({f"blocks.{l}.{point}": make(u) for l, u in units.items()})


def project_out_of_residual(model: HookedModel, directions: dict[int, torch.Tensor], positions: slice = slice(None)):
    """Remove a direction from the residual stream after each given layer (paper §4 rank-1 subspace
    ablation): ``directions`` maps layer -> direction."""
    return _remove_directions(model, "hook_resid_post", directions, positions)


def rank1_mlp_ablation(model: HookedModel, directions: dict[int, torch.Tensor], positions: slice = slice(None)):
    """Replace the MLP output at ``positions`` of each given layer by its projection orthogonal to that
    layer's direction (the dominant singular vector of the MLP outputs; paper §4, App. B)."""
    return _remove_directions(model, "hook_mlp_out", directions, positions)
