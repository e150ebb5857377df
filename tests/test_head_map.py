"""The per-head ablation map and the deposit statistic (the related paper's single-head deposit, claims/deposit.py):
on a tiny model whose one first-layer head is made to carry the layer's output the deposit is found, and with the
output spread over every head it is not; the statistic itself on planted effects."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from harness.capture.corpus import PromptSet
from harness.capture.leakage_view import Leakage
from harness.capture.session import Session
from harness.spec.decision import HELD, at_least
from harness.spec.settings import Settings
from harness.stats import intervals
from harness.stats.head_map import deposit, head_effects

N, SEQ, SHARE = 8, 32, 0.5


def tiny_session(scales) -> tuple[Session, object]:
    """tiny-llama (2 layers, 4 heads) with each layer-0 head's output columns of o_proj scaled: the heads' shares
    of the layer's output, so of what the next layer's attention reads."""
    session = Session(Settings(n_prompts=N, seq_len=SEQ, n_pairs=300, n_boot=200), log=lambda *a: None)
    model = session.model("tiny-llama")
    o_proj = model.hf.model.layers[0].self_attn.o_proj
    d_head = o_proj.weight.shape[1] // model.n_heads
    with torch.no_grad():
        for h, scale in enumerate(scales):
            o_proj.weight[:, h * d_head : (h + 1) * d_head] *= scale
    ids = np.random.default_rng(0).integers(3, 250, size=(N, SEQ))
    session._prompts[(model.spec.name, "topic", SEQ, N)] = PromptSet(ids, np.arange(N) % 4, ("a", "b", "c", "d"), "t")
    return session, model


def decided(session, model):
    _, effects, rows = Leakage(session, model).head_ablation_map([0])
    d = deposit(effects[0], rows[0])
    ci = intervals.percentile_ci(d.share_rows, n=N)
    return d, at_least(d.share, ci, SHARE, N)


@pytest.mark.long
def test_a_planted_deposit_head_is_found_and_a_spread_one_is_not():
    planted, planted_decision = decided(*tiny_session([40.0, 0.05, 0.05, 0.05]))
    assert planted.head == 0 and planted_decision.reading == HELD, planted_decision
    spread, spread_decision = decided(*tiny_session([6.0, 6.0, 6.0, 6.0]))
    assert spread.share < SHARE and spread_decision.reading != HELD, spread_decision


def test_effects_are_the_size_of_the_relative_change_either_way():
    assert head_effects(0.02, [0.01, 0.03, 0.02]).tolist() == pytest.approx([0.5, 0.5, 0.0])
    rows = head_effects(np.array([0.02, 0.04]), np.array([[0.01, 0.02], [0.02, 0.04]]))
    np.testing.assert_allclose(rows, [[0.5, 0.0], [0.5, 0.0]])
    with pytest.raises(ValueError, match="0"):
        head_effects(0.0, [0.1])


def test_the_deposit_share_and_gap_follow_the_planted_effects():
    rng = np.random.default_rng(0)
    rows = np.abs(rng.normal([0.6, 0.1, 0.1, 0.1], 0.02, size=(500, 4)))
    d = deposit(rows.mean(0), rows)
    assert d.head == 0 and d.share == pytest.approx(0.6 / 0.9, abs=0.02) and d.gap == pytest.approx(0.5, abs=0.02)
    assert d.share_rows.shape == d.gap_rows.shape == (500,)
    even = deposit(np.full(4, 0.1), np.full((10, 4), 0.1))
    assert even.share == pytest.approx(0.25) and even.gap == 0.0
    with pytest.raises(ValueError, match="no head"):
        deposit(np.zeros(4), np.zeros((3, 4)))
