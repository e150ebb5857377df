"""T10's design (§4 "Length-scaling", §5.8): post-softmax weights, on stratified
pairs, at heads 0–3 of layers 0–3, at sixteen lengths 16–512.

The paper's stated cause of the decay is "the attenuation of the causal-mask component" (§5.8), which exists only
after the softmax (Eq. 6). These tests check on pure functions and on a synthetic model with that component alone
(offset-only logits, so nothing else can leak) that the new reading sees it decay with length, that the pre-softmax
reading cannot see it at all, and that the claim test's profile reads exactly that design.
"""

import importlib.util
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from harness.capture.reads import Capture
from harness.stats.length_design import FIRST, LENGTHS, first_cells, length_bins, length_stratified_pairs
from harness.stats.pairs import query_bins, stratified_pairs

CLAIM_FILE = Path(__file__).resolve().parents[1] / "claims" / "test_s5_8_length_scaling.py"


def claim_module():
    spec = importlib.util.spec_from_file_location("t10_claim_module", CLAIM_FILE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# ---- the pure design ------------------------------------------------------------------------------------------


def test_sixteen_geometric_lengths_from_16_to_512():
    assert len(LENGTHS) == 16 and LENGTHS[0] == 16 and LENGTHS[-1] == 512
    assert all(b > a for a, b in zip(LENGTHS, LENGTHS[1:]))
    assert np.allclose(np.diff(np.log2(LENGTHS)), 1 / 3, atol=0.05)


@pytest.mark.parametrize("n", [16, 32, 64, 128, 256, 512])
def test_length_bins_and_pairs_are_the_harness_stratified_pairs_where_those_exist(n):
    assert np.array_equal(length_bins(n), query_bins(n))
    for n_pairs, seed in [(4000, 0), (1000, 7), (2003, 3)]:
        ours, theirs = length_stratified_pairs(n, n_pairs, seed), stratified_pairs(n, n_pairs, seed)
        assert np.array_equal(ours.i, theirs.i) and np.array_equal(ours.j, theirs.j)


@pytest.mark.parametrize("n", [n for n in LENGTHS if n not in (16, 32, 64, 128, 256, 512)])
def test_other_lengths_cut_the_last_doubling_bin_at_the_length(n):
    edges = length_bins(n)
    assert edges[0] == 0 and edges[1] == 8 and edges[-1] == n
    assert np.array_equal(edges[1:-1], 8 * 2 ** np.arange(edges.size - 2))  # doubling, then cut at n
    p = length_stratified_pairs(n, 4000, 0)
    assert p.i.max() < n and np.all(p.j <= p.i)
    counts = np.histogram(p.i, bins=edges)[0]
    sizes = np.array([(hi * (hi + 1) - lo * (lo + 1)) // 2 for lo, hi in zip(edges[:-1], edges[1:])])
    share = 4000 // (edges.size - 1)
    assert np.all(counts >= np.minimum(sizes, share)) and np.all(counts <= np.minimum(sizes, share + 1))
    q = length_stratified_pairs(n, 4000, 0)
    assert np.array_equal(p.i, q.i) and np.array_equal(p.j, q.j)  # deterministic per seed


def test_first_four_layers_and_heads_are_heads_0_to_3_of_layers_0_to_3():
    cells = first_cells(9)  # layer-major: layer * n_heads + head
    assert FIRST == 4
    assert cells.tolist() == [layer * 9 + h for layer in range(4) for h in range(4)]
    assert first_cells(4).tolist() == list(range(16))  # a model with four heads: every head of the four layers
    assert first_cells(32).size == 16


# ---- the causal-mask component alone --------------------------------------------------------------------------

N_PROMPTS, N_HEADS = 4, 6


def offset_logits(n: int, rng) -> np.ndarray:
    """[prompts, heads, n, n] logits that depend on the offset d = i − j only (Eq. 2's design property, no
    residual-stream component): a per-head decay with d plus a per-head, per-offset random term."""
    d = np.arange(n)[:, None] - np.arange(n)[None, :]
    slopes = np.linspace(0.05, 0.6, N_HEADS)
    table = rng.normal(0.0, 0.5, size=(N_HEADS, 2 * n))  # f_h(d), fixed across prompts and lengths' queries
    f = -slopes[:, None, None] * np.abs(d) + table[:, np.clip(d, 0, None)]
    return np.broadcast_to(f, (N_PROMPTS, N_HEADS, n, n)).copy()


def causal_softmax(s: np.ndarray) -> np.ndarray:
    n = s.shape[-1]
    s = np.where(np.tril(np.ones((n, n), dtype=bool)), s, -np.inf)
    w = np.exp(s - s.max(axis=-1, keepdims=True))
    return w / w.sum(axis=-1, keepdims=True)


class SyntheticSession:
    """A session over a synthetic model whose logits are ``offset_logits`` at every layer: captures serve the
    claim's reads (weights or logits at the read's pairs) from those, as the real session serves them."""

    def __init__(self):
        self.settings = SimpleNamespace(n_pairs=4000, seed=0)
        self.reads = []

    def prompts(self, model, seq_len):
        return SimpleNamespace(ids=np.zeros((N_PROMPTS, seq_len), dtype=np.int64), name="synthetic")

    def capture(self, model, run, *reads):
        n = run.prompts.ids.shape[1]
        s = offset_logits(n, np.random.default_rng(n))
        out = []
        for r in reads:
            self.reads.append((n, r.point, r.pair_set(n)))
            x = causal_softmax(s) if r.point == "attn.hook_pattern" else s
            p = r.pair_set(n)
            at = x[:, :, p.i, p.j].transpose(0, 2, 1)  # [prompts, pairs, heads]
            values = np.stack([at] * run.layers, axis=1)  # [prompts, layers, pairs, heads]
            out.append(Capture(values, r, tuple(range(run.layers)), False))
        return tuple(out)

    def forget(self, model, run, *reads):
        self.forgotten = getattr(self, "forgotten", 0) + len(reads)  # each length's captures, released once read


@pytest.fixture(scope="module")
def synthetic_profile():
    mod = claim_module()
    session = SyntheticSession()
    return mod, session, mod.length_profile(session, SimpleNamespace(name="synthetic"), LENGTHS)


def test_the_claim_reads_post_softmax_weights_on_stratified_pairs_of_the_first_four_layers(synthetic_profile):
    mod, session, _ = synthetic_profile
    points = {point for _, point, _ in session.reads}
    assert points == {"attn.hook_pattern", "attn.hook_scores"}  # the judged weights and the logits variant
    for n, _, pairs in session.reads:
        ref = length_stratified_pairs(n, 4000, 0)
        assert np.array_equal(pairs.i, ref.i) and np.array_equal(pairs.j, ref.j)
    assert mod.AtLengthPairs().point == "attn.hook_pattern"  # the default (judged) read is the weights
    assert mod.FIRST == 4
    assert session.forgotten == len(session.reads)  # every length's captures released once read (memory)


def test_the_causal_mask_component_alone_decays_with_length_in_the_judged_reading(synthetic_profile):
    _, _, prof = synthetic_profile
    y = prof["weights"]
    assert np.all(y > 1e-3), y  # the causal-mask component leaks in the weights
    rho = np.corrcoef(np.arange(len(y)), np.argsort(np.argsort(y)))[0, 1]
    assert rho < -0.9 and y[-1] < y[0] / 3, y  # and attenuates with length (the claim's decay check, strongly)


def test_the_logits_reading_cannot_see_the_causal_mask_component(synthetic_profile):
    _, _, prof = synthetic_profile
    assert np.all(np.abs(prof["logits"]) < 1e-9), prof["logits"]  # offset-only logits: the baseline explains all


def test_the_judged_mean_is_over_heads_0_to_3_only():
    """Heads 4 and 5 of each layer read the query position itself (ΔR² near 1): the judged mean must not see them,
    the all-heads variant must."""
    mod = claim_module()

    class Session(SyntheticSession):
        def capture(self, model, run, *reads):
            caps = super().capture(model, run, *reads)
            for c in caps:
                c.values[..., 4:] = c.read.pair_set(run.prompts.ids.shape[1]).i[:, None].astype(float)
            return caps

    prof = mod.length_profile(Session(), SimpleNamespace(name="synthetic"), (16, 64))
    base = mod.length_profile(SyntheticSession(), SimpleNamespace(name="synthetic"), (16, 64))
    assert np.allclose(prof["weights"], base["weights"]) and np.allclose(prof["logits"], base["logits"])
    assert np.all(prof["weights, all heads"] > base["weights, all heads"] + 0.05), (prof, base)
