"""Named hook points on a Hugging Face decoder: every activation the harness reads or edits has one stable name
(TransformerLens style):

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

``hook_name(point, layer)`` builds a name (``hook_name("attn.hook_pattern", 3)`` is ``blocks.3.attn.hook_pattern``,
as TransformerLens' ``get_act_name``); ``NAME`` parses one. A hook is ``fn(value, hook) -> value | None``; returning
a value replaces the activation. ``hook`` is a ``HookPoint``: the point's name (a ``str``) that also carries its
``.layer`` (``None`` for the embedding and the rotary module), so no hook has to parse a name. ``n_k`` = n, or all
cached positions with a KV cache. ``hook_rotary`` is the output of the rotary module(s), shared by every layer of one
RoPE kind; ``attn.hook_rope`` is what one layer's attention actually received, so on Gemma-3 the sliding and the
global layers each see their own RoPE there. Returning a new (cos, sin) replaces it for that layer only. Where each
point is served: ``harness.model.hooks`` (forward (pre-)hooks on the model's own modules) and
``harness.model.attention`` (q, k, mask, scores and pattern, inside the attention function).
"""

from __future__ import annotations

import re
from typing import Callable

TOP = ("hook_embed", "hook_rotary")  # the points outside the decoder layers
NAME = re.compile(
    r"^(?:hook_(?P<top>embed|rotary)|blocks\.(?P<layer>\d+)\.(?P<point>attn\.hook_(?:q|k|rope|mask|scores|pattern|z)|hook_mlp_out|hook_resid_post))$"
)


class HookPoint(str):
    """A hook point's name, e.g. ``blocks.3.attn.hook_pattern``, with its decoder ``layer`` (or None)."""

    layer: int | None

    def __new__(cls, name: str, layer: int | None = None):
        point = super().__new__(cls, name)
        point.layer = layer
        return point


HookFn = Callable[[object, str], object]


def hook_name(point: str, layer: int | None = None) -> HookPoint:
    """The name of ``point`` (``attn.hook_pattern``, ``hook_resid_post`` ...) in decoder layer ``layer``:
    ``blocks.{layer}.{point}``; ``hook_embed`` and ``hook_rotary`` are named as they are (no layer)."""
    if point in TOP:
        return HookPoint(point)
    return HookPoint(f"blocks.{layer}.{point}", layer)
