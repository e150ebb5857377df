"""The related paper's model family, in two architectures, written on torch directly.

``authors`` follows their code (../shared/paper/DEPOSIT.md, "Models"): no causal and no padding mask; keys and values
from the input embeddings in every layer (only queries from the residual stream); pre-LN; the output the mean over
every position (pads included) through one linear layer. ``decoder`` is a standard causal decoder: keys, values and
queries from the residual stream, a causal mask, the answer read at the last position.

Encodings (``ENCODINGS``): ``rope`` as the authors built it (a sinusoidal absolute embedding added to the input, then
q and k rotated per head, interleaved pairs, base 10,000: itself a hybrid), ``absolute`` (the sinusoidal embedding
alone), ``alibi`` (the authors' ``-|i - j| * exp(-h / H)`` per head: symmetric and steep), ``relative`` (a learned
per-head bias per offset, no buckets), ``nope`` (nothing), and ``rope-k1`` … ``rope-k3`` (RoPE on the
first k heads only, no additive embedding: the partial-RoPE runs). The MLA hybrid is not built (METHODS.md).

Where ours differ from their code, besides what the suite adds (METHODS.md, the synthetic claims' design note): a
final LayerNorm before pooling (theirs pools the raw residual), no dropout on the attention weights (theirs drops them
too), and the additive embedding's sin and cos interleaved (theirs concatenated: a permutation of its dimensions).

A head is ablated as the authors do (its value rows zeroed, so its output is exactly 0 before the output projection):
``zeroed`` holds the (layer, head) pairs whose outputs are zeroed, the suite's head-zeroing edit on this family.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

ENCODINGS = ("rope", "absolute", "alibi", "relative", "nope", "rope-k1", "rope-k2", "rope-k3")
ARCHITECTURES = ("authors", "decoder")


@dataclass(frozen=True)
class Shape:
    d_model: int
    heads: int
    mlp: int
    layers: int
    seq_len: int
    n_classes: int
    dropout: float = 0.1


def rope_heads(encoding: str, heads: int) -> int:
    """How many heads (the first ones) rotate q and k."""
    if encoding == "rope":
        return heads
    if encoding.startswith("rope-k"):
        return min(heads, int(encoding.removeprefix("rope-k")))
    return 0


def sinusoidal(seq_len: int, d: int) -> torch.Tensor:
    pos = torch.arange(seq_len, dtype=torch.float32)[:, None]
    div = torch.exp(torch.arange(0, d, 2, dtype=torch.float32) * (-math.log(10000.0) / d))
    out = torch.zeros(seq_len, d)
    out[:, 0::2], out[:, 1::2] = torch.sin(pos * div), torch.cos(pos * div)
    return out


def rotate(x: torch.Tensor, seq_len: int) -> torch.Tensor:
    """RoPE on interleaved pairs (base 10,000) of ``x`` [batch, heads, seq, head_dim]."""
    dh = x.shape[-1]
    theta = 10000.0 ** (-torch.arange(0, dh, 2, dtype=torch.float32, device=x.device) / dh)
    angle = torch.arange(seq_len, dtype=torch.float32, device=x.device)[:, None] * theta  # [seq, dh/2]
    cos, sin = angle.cos().to(x.dtype), angle.sin().to(x.dtype)
    even, odd = x[..., 0::2], x[..., 1::2]
    out = torch.empty_like(x)
    out[..., 0::2], out[..., 1::2] = even * cos - odd * sin, even * sin + odd * cos
    return out


class Attention(nn.Module):
    def __init__(self, shape: Shape, encoding: str, arch: str):
        super().__init__()
        d, h = shape.d_model, shape.heads
        self.heads, self.dh, self.arch, self.seq_len = h, d // h, arch, shape.seq_len
        self.q, self.k, self.v, self.o = (nn.Linear(d, d) for _ in range(4))
        self.n_rope = rope_heads(encoding, h)
        self.bias: torch.Tensor | None = None
        offsets = torch.arange(shape.seq_len)[:, None] - torch.arange(shape.seq_len)[None, :]  # i - j
        if encoding == "alibi":
            slopes = torch.exp(-torch.arange(h, dtype=torch.float32) / h)  # the authors' exp(-h/H): 1.0 down to ~0.39
            self.register_buffer("alibi", -offsets.abs().float()[None] * slopes[:, None, None], persistent=False)
        if encoding == "relative":
            self.relative = nn.Parameter(torch.randn(h, 2 * shape.seq_len - 1) * 0.02)  # the authors' N(0, 0.02)
            self.register_buffer("offset_index", offsets + shape.seq_len - 1, persistent=False)
        if arch == "decoder":
            mask = torch.full((shape.seq_len, shape.seq_len), float("-inf")).triu(1)
            self.register_buffer("causal", mask, persistent=False)

    def split(self, x: torch.Tensor) -> torch.Tensor:
        b, n, _ = x.shape
        return x.view(b, n, self.heads, self.dh).transpose(1, 2)

    def forward(self, x: torch.Tensor, source: torch.Tensor, zeroed: list[int]) -> torch.Tensor:
        n = x.shape[1]
        q, k, v = self.split(self.q(x)), self.split(self.k(source)), self.split(self.v(source))
        if self.n_rope:
            r = self.n_rope
            q = torch.cat([rotate(q[:, :r], n), q[:, r:]], dim=1)
            k = torch.cat([rotate(k[:, :r], n), k[:, r:]], dim=1)
        bias = None  # added to the scores q.k / sqrt(head_dim) before the softmax
        if hasattr(self, "alibi"):
            bias = self.alibi[:, :n, :n]
        if hasattr(self, "relative"):
            bias = self.relative[:, self.offset_index[:n, :n]]
        if self.arch == "decoder":
            bias = self.causal[:n, :n] if bias is None else bias + self.causal[:n, :n]
        # softmax(q.k / sqrt(head_dim) + bias) v through torch's fused kernel (flash attention on a GPU where no bias
        # is added): the same function as the eager product, without the [batch, heads, seq, seq] scores in memory;
        # under bf16 autocast the bias is rounded to bf16 with q (the kernel takes one dtype), where the eager sum
        # had promoted it to float32: an error of at most 2^-9 of the bias, largest on far offsets whose weights are
        # already below e^-|bias|
        heads = F.scaled_dot_product_attention(q, k, v, attn_mask=None if bias is None else bias.to(q.dtype))
        if zeroed:  # the head's output exactly 0 before the output projection (its value rows zeroed)
            keep = torch.ones(self.heads, device=x.device, dtype=heads.dtype)
            keep[zeroed] = 0
            heads = heads * keep[None, :, None, None]
        return self.o(heads.transpose(1, 2).reshape(x.shape))


class Block(nn.Module):
    def __init__(self, shape: Shape, encoding: str, arch: str):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(shape.d_model), nn.LayerNorm(shape.d_model)
        self.attn = Attention(shape, encoding, arch)
        self.mlp = nn.Sequential(nn.Linear(shape.d_model, shape.mlp), nn.ReLU(), nn.Linear(shape.mlp, shape.d_model))
        self.drop = nn.Dropout(shape.dropout)

    def forward(self, h: torch.Tensor, embedded: torch.Tensor, arch: str, zeroed: list[int]) -> torch.Tensor:
        a = self.ln1(h)
        source = embedded if arch == "authors" else a  # the authors' keys and values: the input embeddings
        h = h + self.drop(self.attn(a, source, zeroed))
        return h + self.drop(self.mlp(self.ln2(h)))


class PositionModel(nn.Module):
    """One model of the family: ``forward(ids)`` -> logits [batch, n_classes]; ``zeroed`` the ablated heads."""

    def __init__(self, shape: Shape, encoding: str, arch: str):
        super().__init__()
        if encoding not in ENCODINGS or arch not in ARCHITECTURES:
            raise ValueError(f"encoding {encoding!r} / architecture {arch!r}: known {ENCODINGS} / {ARCHITECTURES}")
        self.shape, self.encoding, self.arch = shape, encoding, arch
        self.embed = nn.Embedding(shape.n_classes, shape.d_model)
        additive = encoding in ("rope", "absolute")  # the authors' RoPE model adds the sinusoidal embedding too
        self.register_buffer("position", sinusoidal(shape.seq_len, shape.d_model) * float(additive), persistent=False)
        self.blocks = nn.ModuleList(Block(shape, encoding, arch) for _ in range(shape.layers))
        self.ln = nn.LayerNorm(shape.d_model)
        self.head = nn.Linear(shape.d_model, shape.n_classes)
        self.zeroed: set[tuple[int, int]] = set()

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        n = ids.shape[1]
        embedded = self.embed(ids) + self.position[:n]
        h = embedded
        for layer, block in enumerate(self.blocks):
            h = block(h, embedded, self.arch, [head for lay, head in self.zeroed if lay == layer])
        h = self.ln(h)
        pooled = h.mean(dim=1) if self.arch == "authors" else h[:, -1]  # mean over every position / the last one
        return self.head(pooled)
