"""The ``authors`` architecture against the facts of the authors' code (Qihuai27/Deposit-Pattern-Research, read in
../shared/paper/DEPOSIT.md and METHODS.md), each written out here independently of harness/synthetic/model.py: the
RoPE model's added table (sines then cosines), dropout on the attention weights, no final LayerNorm, and their MLA
model (its latent attention, its RoPE table read at even and odd columns, its padding mask, its masked mean); the MLA
head ablation; the MLA recipe kept at paper size."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
import torch
from torch import nn

from harness.synthetic import tasks
from harness.synthetic.model import PositionModel, Shape
from harness.synthetic.train import PILOT_AUTHORS_LR, SIZES, SyntheticSpec

SHAPE = Shape(32, 4, 64, 2, 24, 50)


def built(encoding: str, arch: str, shape: Shape = SHAPE) -> PositionModel:
    torch.manual_seed(0)
    return PositionModel(shape, encoding, arch)


def words(n_words: int, length: int, batch: int = 3, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    ids = torch.full((batch, length), tasks.PAD)
    ids[:, :n_words] = torch.randint(5, 50, (batch, n_words), generator=g)
    return ids


def test_the_rope_models_table_is_sines_then_cosines_and_the_absolute_models_interleaved():
    d, n = SHAPE.d_model, SHAPE.seq_len
    freq = [10000 ** (-2 * i / d) for i in range(d // 2)]
    for p in (0, 1, 7, n - 1):
        rope = built("rope", "authors").position[p]
        absolute = built("absolute", "authors").position[p]
        for i, f in enumerate(freq):
            assert rope[i].item() == pytest.approx(math.sin(p * f), abs=1e-5)
            assert rope[d // 2 + i].item() == pytest.approx(math.cos(p * f), abs=1e-5)
            assert absolute[2 * i].item() == pytest.approx(math.sin(p * f), abs=1e-5)
            assert absolute[2 * i + 1].item() == pytest.approx(math.cos(p * f), abs=1e-5)
    # the causal decoder keeps the standard interleaved table for both
    assert torch.equal(built("rope", "decoder").position, built("absolute", "authors").position)


@pytest.mark.parametrize("arch", ["authors", "decoder"])
def test_only_the_authors_architecture_drops_attention_weights(arch):
    """With every other dropout off, two training-mode passes differ only where the attention weights are dropped."""
    m = built("rope", arch).train()
    for block in m.blocks:
        block.drop.p = 0.0
    ids = words(20, SHAPE.seq_len)
    with torch.no_grad():
        torch.manual_seed(1)
        first = m(ids)
        torch.manual_seed(2)
        second = m(ids)
    assert torch.equal(first, second) == (arch == "decoder")


def test_the_authors_architecture_pools_the_raw_residual():
    m = built("rope", "authors").eval()
    ids = words(20, SHAPE.seq_len)
    last = {}
    m.blocks[-1].register_forward_hook(lambda _m, _a, out: last.setdefault("h", out))
    with torch.no_grad():
        out = m(ids)
        torch.testing.assert_close(out, m.head(last["h"].mean(dim=1)), rtol=1e-6, atol=1e-6)


def their_position_map(x: torch.Tensor) -> torch.Tensor:
    """The authors' MLA position map, element by element: their table at position p is sin(p θ_0..) then cos(p θ_0..);
    its even columns are taken as "sin", its odd ones as "cos", and the two halves of the result concatenated."""
    n, dh = x.shape[-2], x.shape[-1]
    theta = [10000 ** (-2 * i / dh) for i in range(dh // 2)]
    out = torch.empty_like(x)
    for p in range(n):
        table = [math.sin(p * t) for t in theta] + [math.cos(p * t) for t in theta]
        for i in range(dh // 2):
            s, c = table[2 * i], table[2 * i + 1]
            even, odd = x[..., p, 2 * i], x[..., p, 2 * i + 1]
            out[..., p, i] = even * c - odd * s
            out[..., p, dh // 2 + i] = even * s + odd * c
    return out


def test_mla_in_the_authors_architecture_is_their_latent_attention():
    """Queries, keys and values from the layer's input through two latents; one RoPE key and one RoPE query shared by
    the heads, through their position map; scores over sqrt(2 · head_dim); pads masked as keys; no biases."""
    m = built("mla", "authors").eval()
    attn = m.blocks[0].attn
    b, n, h = 2, 12, SHAPE.heads
    dh = SHAPE.d_model // h
    x = torch.randn(b, n, SHAPE.d_model, dtype=torch.float64)
    pads = torch.zeros(b, n, dtype=torch.bool)
    pads[0, 9:] = True
    with torch.no_grad():
        fused = attn.double()(x, x, [], pads)
        w = {k: v.double() for k, v in attn.state_dict().items()}

        def heads(t):
            return t.view(b, n, h, dh).transpose(1, 2)

        latent, latent_q = x @ w["down_kv.weight"].T, x @ w["down_q.weight"].T
        k_rope = their_position_map(x @ w["key_rope.weight"].T)[:, None].expand(b, h, n, dh)
        q_rope = their_position_map(latent_q @ w["query_rope.weight"].T)[:, None].expand(b, h, n, dh)
        k = torch.cat([heads(latent @ w["up_k.weight"].T), k_rope], dim=-1)
        q = torch.cat([heads(latent_q @ w["up_q.weight"].T), q_rope], dim=-1)
        v = heads(latent @ w["up_v.weight"].T)
        scores = (q @ k.transpose(-1, -2) / math.sqrt(2 * dh)).masked_fill(pads[:, None, None, :], float("-inf"))
        eager = (scores.softmax(-1) @ v).transpose(1, 2).reshape(b, n, -1) @ w["o.weight"].T
    torch.testing.assert_close(fused, eager, rtol=1e-6, atol=1e-7)  # the table is computed in float32, as theirs
    assert not any(name.endswith("bias") for name, _ in attn.named_parameters())


def test_the_authors_mla_model_reads_only_its_words():
    """Their padding mask and masked mean: the output does not depend on how many pads follow the words; their MLP is
    GELU's, and a final LayerNorm comes before the mean."""
    m = built("mla", "authors").eval()
    with torch.no_grad():
        short, long = m(words(10, 14)), m(words(10, SHAPE.seq_len))
    torch.testing.assert_close(short, long, rtol=1e-5, atol=1e-5)
    assert isinstance(m.blocks[0].mlp[1], nn.GELU) and isinstance(m.ln, nn.LayerNorm)
    assert not isinstance(built("rope", "authors").ln, nn.LayerNorm)  # their other models pool the raw residual


@pytest.mark.parametrize("arch", ["authors", "decoder"])
def test_zeroing_an_mla_head_is_zeroing_its_value_rows(arch):
    m = built("mla", arch).eval()
    ids = words(18, SHAPE.seq_len)
    dh = SHAPE.d_model // SHAPE.heads
    with torch.no_grad():
        m.zeroed = {(0, 1)}
        zeroed = m(ids)
        m.zeroed = set()
        assert not torch.allclose(m(ids), zeroed, atol=1e-6)
        m.blocks[0].attn.up_v.weight[dh : 2 * dh] = 0
        torch.testing.assert_close(m(ids), zeroed, rtol=1e-5, atol=1e-6)


def test_mla_keeps_the_authors_own_schedule_scaled_to_every_size():
    """Their MLA trains 1.5 times the epochs at twice the batch of their other models (150 at 1,024 against 100 at
    512), the same learning rate: at paper size exactly theirs, at the pilot's 45 at 256."""
    paper, pilot = SyntheticSpec("task1", "mla", size="paper"), SyntheticSpec("task1", "mla", "decoder", "pilot")
    assert (paper.recipe.epochs, paper.recipe.batch) == (150, 1024)
    assert SyntheticSpec("task1", "rope", size="paper").recipe == SIZES["paper"].recipe
    assert pilot.recipe == replace(SIZES["pilot"].recipe, epochs=45, batch=256)
    assert SyntheticSpec("task1", "rope", "decoder", "pilot").recipe == SIZES["pilot"].recipe
    # the authors' architecture at pilot size: their pooling of the raw residual diverged at the pilot's 1e-3
    assert SyntheticSpec("task1", "mla", size="pilot").recipe == replace(
        SIZES["pilot"].recipe, lr=PILOT_AUTHORS_LR, epochs=45, batch=256
    )
