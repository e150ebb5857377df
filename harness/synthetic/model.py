"""The related paper's model family, in two architectures, written on torch directly.

``authors`` follows their code (../shared/paper/DEPOSIT.md, "Models"): no causal and no padding mask; keys and values
from the input embeddings in every layer (only queries from the residual stream); pre-LN; the output the mean over
every position (pads included) through one linear layer. ``decoder`` is a standard causal decoder: keys, values and
queries from the residual stream, a causal mask, the answer read at the last position.

Encodings (``ENCODINGS``): ``rope`` as the authors built it (a sinusoidal absolute embedding added to the input, then
q and k rotated per head, interleaved pairs, base 10,000: itself a hybrid), ``absolute`` (the sinusoidal embedding
alone), ``alibi`` (the authors' ``-|i - j| * exp(-h / H)`` per head: symmetric and steep), ``relative`` (a learned
per-head bias per offset, no buckets), ``nope`` (nothing), ``rope-k1`` … ``rope-k3`` (RoPE on the first k heads
only, no additive embedding: the partial-RoPE runs), and ``mla`` (their multi-head latent attention, ``LatentAttention``:
a compressed latent, a decoupled RoPE key and query shared by the heads, a learned absolute embedding).

In ``authors`` each piece follows the line of their code it names (``dis_gen/trans.py``, ``partialrope.py``,
``mla.py`` of Qihuai27/Deposit-Pattern-Research): the RoPE model's added table has its sines and cosines concatenated
(``RoPE.forward``: ``torch.cat([sin, cos])``), the absolute model's interleaved (``AbsolutePositionalEncoding``);
dropout on the attention weights, on the attention output and on the MLP output (``AttentionDecoderLayer.forward``);
no final LayerNorm (``TransformerDecoder.forward`` pools the raw residual). Their MLA model is an architecture of its
own, followed as written: queries, keys and values from the current layer, a padding mask on the keys, GELU, dropout
inside the MLP only, a final LayerNorm, the mean over the words (pads left out), and their RoPE table read as
``rope[..., ::2]`` / ``rope[..., 1::2]`` of the concatenated sines and cosines (``RotaryEmbedding``), which is not a
rotation. ``decoder`` is the standard form of each: a final LayerNorm, no dropout on the attention weights, interleaved
tables, and in MLA a true rotation of the shared RoPE key and query.

A head is ablated as the authors do (its value rows zeroed, so its output is exactly 0 before the output projection):
``zeroed`` holds the (layer, head) pairs whose outputs are zeroed, the suite's head-zeroing edit on this family. In
MLA a head is a head too (its share of the up-projected values); the authors' MLA ablation zeroed latent columns
instead, which is not a head (METHODS.md).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from harness.spec.synthetic_sets import SYNTHETIC_ARCHITECTURES
from harness.synthetic.sizes import Shape
from harness.synthetic.tasks import PAD

ENCODINGS = ("rope", "absolute", "alibi", "relative", "nope", "rope-k1", "rope-k2", "rope-k3", "mla")


def rope_heads(encoding: str, heads: int) -> int:
    """How many heads (the first ones) rotate q and k."""
    if encoding == "rope":
        return heads
    if encoding.startswith("rope-k"):
        return min(heads, int(encoding.removeprefix("rope-k")))
    return 0


def sinusoidal(seq_len: int, d: int, concatenated: bool = False) -> torch.Tensor:
    """The sinusoidal table [seq, d]: sines and cosines of the same frequencies, interleaved (sin, cos, sin, …) or,
    with ``concatenated``, all sines then all cosines (the authors' RoPE model's added table)."""
    pos = torch.arange(seq_len, dtype=torch.float32)[:, None]
    div = torch.exp(torch.arange(0, d, 2, dtype=torch.float32) * (-math.log(10000.0) / d))
    if concatenated:
        return torch.cat([torch.sin(pos * div), torch.cos(pos * div)], dim=-1)
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


def authors_mla_rope(x: torch.Tensor, seq_len: int) -> torch.Tensor:
    """The authors' MLA position map of ``x`` [..., seq, head_dim], as their ``RotaryEmbedding`` computes it: the table
    ``cat([sin(p·θ), cos(p·θ)])`` read at its even columns as "sin" and its odd ones as "cos", the output the two
    halves concatenated. The "sin" and "cos" are not those of one angle, so this is a per-position linear map, not a
    rotation: the scores it gives depend on both positions, not only on their offset."""
    dh = x.shape[-1]
    theta = 10000.0 ** (-torch.arange(0, dh, 2, dtype=torch.float32, device=x.device) / dh)
    angle = torch.arange(seq_len, dtype=torch.float32, device=x.device)[:, None] * theta
    table = torch.cat([angle.sin(), angle.cos()], dim=-1).to(x.dtype)  # [seq, dh]
    sin, cos = table[..., 0::2], table[..., 1::2]
    even, odd = x[..., 0::2], x[..., 1::2]
    return torch.cat([even * cos - odd * sin, even * sin + odd * cos], dim=-1)


def zero_heads(heads: torch.Tensor, zeroed: list[int]) -> torch.Tensor:
    """The heads' outputs [batch, heads, seq, head_dim] with the ``zeroed`` ones exactly 0 (their value rows zeroed)."""
    if not zeroed:
        return heads
    keep = torch.ones(heads.shape[1], device=heads.device, dtype=heads.dtype)
    keep[zeroed] = 0
    return heads * keep[None, :, None, None]


class Heads(nn.Module):
    """What both attention modules share: the split into heads and back through the output projection ``o`` (made
    by each), and in ``decoder`` the causal mask (a buffer: no weights drawn, so neither module's seeded
    initialisation moves)."""

    def __init__(self, shape: Shape, arch: str):
        super().__init__()
        self.heads, self.dh, self.arch = shape.heads, shape.d_model // shape.heads, arch
        if arch == "decoder":
            mask = torch.full((shape.seq_len, shape.seq_len), float("-inf")).triu(1)
            self.register_buffer("causal", mask, persistent=False)

    def split(self, x: torch.Tensor) -> torch.Tensor:
        b, n, _ = x.shape
        return x.view(b, n, self.heads, self.dh).transpose(1, 2)

    def merge(self, heads: torch.Tensor, zeroed: list[int], like: torch.Tensor) -> torch.Tensor:
        """The heads' outputs [batch, heads, seq, head_dim], the ``zeroed`` ones exactly 0, through ``o``."""
        return self.o(zero_heads(heads, zeroed).transpose(1, 2).reshape(like.shape))


class Attention(Heads):
    def __init__(self, shape: Shape, encoding: str, arch: str):
        super().__init__(shape, arch)
        d, h = shape.d_model, shape.heads
        self.q, self.k, self.v, self.o = (nn.Linear(d, d) for _ in range(4))
        self.n_rope = rope_heads(encoding, h)
        self.weight_dropout = shape.dropout if arch == "authors" else 0.0  # theirs drops attention weights too
        offsets = torch.arange(shape.seq_len)[:, None] - torch.arange(shape.seq_len)[None, :]  # i - j
        if encoding == "alibi":
            slopes = torch.exp(-torch.arange(h, dtype=torch.float32) / h)  # the authors' exp(-h/H): 1.0 down to ~0.39
            self.register_buffer("alibi", -offsets.abs().float()[None] * slopes[:, None, None], persistent=False)
        if encoding == "relative":
            self.relative = nn.Parameter(torch.randn(h, 2 * shape.seq_len - 1) * 0.02)  # the authors' N(0, 0.02)
            self.register_buffer("offset_index", offsets + shape.seq_len - 1, persistent=False)

    def forward(self, x: torch.Tensor, source: torch.Tensor, zeroed: list[int], pads=None) -> torch.Tensor:
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
        mask = None if bias is None else bias.to(q.dtype)
        p = self.weight_dropout if self.training else 0.0
        return self.merge(F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p), zeroed, x)


class LatentAttention(Heads):
    """Multi-head latent attention as the authors built it (``mla.py``, ``MLAAttention``): keys and values
    up-projected per head from one compressed latent of the input (width d_model / 2: their 128 at 256), queries from
    another; a decoupled RoPE key (from the input) and query (from its latent), each one head wide and shared by every
    head, concatenated to the heads' own; scores over sqrt(2 · head_dim); no biases. ``authors``: their position map
    (``authors_mla_rope``) and a padding mask on the keys; ``decoder``: a true rotation and the causal mask."""

    def __init__(self, shape: Shape, arch: str):
        super().__init__(shape, arch)
        d, c = shape.d_model, shape.d_model // 2
        self.down_kv, self.down_q = nn.Linear(d, c, bias=False), nn.Linear(d, c, bias=False)
        self.up_k, self.up_v, self.up_q = (nn.Linear(c, d, bias=False) for _ in range(3))
        self.key_rope, self.query_rope = nn.Linear(d, self.dh, bias=False), nn.Linear(c, self.dh, bias=False)
        self.o = nn.Linear(d, d, bias=False)

    def forward(self, x: torch.Tensor, source: torch.Tensor, zeroed: list[int], pads=None) -> torch.Tensor:
        b, n, _ = x.shape
        position = authors_mla_rope if self.arch == "authors" else rotate
        latent, latent_q = self.down_kv(x), self.down_q(x)
        shared_k = position(self.key_rope(x), n)[:, None].expand(b, self.heads, n, self.dh)
        shared_q = position(self.query_rope(latent_q), n)[:, None].expand(b, self.heads, n, self.dh)
        k = torch.cat([self.split(self.up_k(latent)), shared_k], dim=-1)
        q = torch.cat([self.split(self.up_q(latent_q)), shared_q], dim=-1)
        v = self.split(self.up_v(latent))
        if self.arch == "decoder":
            mask = self.causal[:n, :n].to(q.dtype)
        else:  # their padding mask: no query attends to a pad
            mask = None if pads is None else ~pads[:, None, None, :]
        return self.merge(F.scaled_dot_product_attention(q, k, v, attn_mask=mask), zeroed, x)  # scale 1/sqrt(2·dh)


class Block(nn.Module):
    def __init__(self, shape: Shape, encoding: str, arch: str):
        super().__init__()
        d = shape.d_model
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.drop = nn.Dropout(shape.dropout)
        # the authors' keys and values: the input embeddings, except in their MLA model (standard self-attention)
        self.from_input = arch == "authors" and encoding != "mla"
        self.attn: Attention | LatentAttention
        if encoding == "mla":
            self.attn = LatentAttention(shape, arch)
        else:
            self.attn = Attention(shape, encoding, arch)
        self.attn_drop: nn.Module = self.drop
        self.mlp = nn.Sequential(nn.Linear(d, shape.mlp), nn.ReLU(), nn.Linear(shape.mlp, d))
        if encoding == "mla" and arch == "authors":  # their MLA layer: GELU, dropout inside the MLP, none on attention
            self.attn_drop = nn.Identity()
            self.mlp = nn.Sequential(
                nn.Linear(d, shape.mlp), nn.GELU(), nn.Dropout(shape.dropout), nn.Linear(shape.mlp, d)
            )

    def forward(self, h: torch.Tensor, embedded: torch.Tensor, zeroed: list[int], pads=None) -> torch.Tensor:
        a = self.ln1(h)
        h = h + self.attn_drop(self.attn(a, embedded if self.from_input else a, zeroed, pads))
        return h + self.drop(self.mlp(self.ln2(h)))


class PositionModel(nn.Module):
    """One model of the family: ``forward(ids)`` -> logits [batch, n_classes]; ``zeroed`` the ablated heads."""

    def __init__(self, shape: Shape, encoding: str, arch: str):
        super().__init__()
        if encoding not in ENCODINGS or arch not in SYNTHETIC_ARCHITECTURES:
            raise ValueError(
                f"encoding {encoding!r} / architecture {arch!r}: known {ENCODINGS} / {SYNTHETIC_ARCHITECTURES}"
            )
        self.shape, self.encoding, self.arch = shape, encoding, arch
        d = shape.d_model
        self.embed = nn.Embedding(shape.n_classes, d)
        additive = encoding in ("rope", "absolute")  # the authors' RoPE model adds the sinusoidal embedding too
        table = sinusoidal(shape.seq_len, d, concatenated=arch == "authors" and encoding == "rope")
        self.register_buffer("position", table * float(additive), persistent=False)
        if encoding == "mla":  # their MLA's learned absolute embedding, initialised at 0
            self.learned = nn.Parameter(torch.zeros(shape.seq_len, d))
        self.blocks = nn.ModuleList(Block(shape, encoding, arch) for _ in range(shape.layers))
        # the authors pool the raw residual, except in their MLA model (a final LayerNorm)
        self.ln = nn.LayerNorm(d) if arch == "decoder" or encoding == "mla" else nn.Identity()
        self.head = nn.Linear(d, shape.n_classes)
        self.zeroed: set[tuple[int, int]] = set()
        self.masks_pads = arch == "authors" and encoding == "mla"  # their MLA's padding mask and masked mean

    def embedding(self, ids: torch.Tensor) -> torch.Tensor:
        """The input to the first block (and the authors' keys and values): the words' embeddings plus the position
        table, and in MLA the learned absolute embedding."""
        n = ids.shape[1]
        out = self.embed(ids) + self.position[:n]
        return out + self.learned[:n] if hasattr(self, "learned") else out

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        embedded = self.embedding(ids)
        pads = ids == PAD if self.masks_pads else None
        h = embedded
        for layer, block in enumerate(self.blocks):
            h = block(h, embedded, [head for lay, head in self.zeroed if lay == layer], pads)
        h = self.ln(h)
        if self.arch == "decoder":
            return self.head(h[:, -1])  # the last position
        if pads is None:
            return self.head(h.mean(dim=1))  # the mean over every position, pads included
        words = (~pads).unsqueeze(-1).to(h.dtype)
        return self.head((h * words).sum(dim=1) / words.sum(dim=1).clamp_min(1))
