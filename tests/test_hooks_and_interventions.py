"""Harness mechanics on tiny random-init models of each architecture (never empirical claims).

- the harness's attention function leaves the model's outputs unchanged;
- the causal mask is really applied, and a missing mask function is an error, not a silent unmasked run;
- each intervention changes what it should and nothing else, and undoes itself on exit.
"""

import numpy as np
import pytest
import torch

from harness.capture import forward as cap
from harness.model import interventions as iv
from harness.model.attention import ATTN_IMPL, MissingMaskError, register_attention
from harness.model.edits import (
    Bidirectional,
    Directions,
    Edit,
    IdentityRope,
    ReplaceEmbedding,
    ScrambledRope,
    ScrambledRopeAllEntries,
    ZeroHeads,
)
from harness.model.equations import apply_rotary
from harness.model.hooks import HookedModel
from harness.model.weights import random_init_model
from harness.spec.models import get_spec, names

TINY = names("tiny")


@pytest.fixture(scope="module", params=TINY)
def tiny(request):
    register_attention()
    spec = get_spec(request.param)
    hf = random_init_model(spec, seed=0)
    hf.set_attn_implementation(ATTN_IMPL)
    return HookedModel(hf, spec)


def ids(n=12, batch=3, seed=0):
    return np.random.default_rng(seed).integers(3, 250, size=(batch, n))


def logits(model, x):
    with torch.no_grad():
        return model.hf(input_ids=torch.as_tensor(x)).logits


@pytest.mark.parametrize("reference", ["eager", "sdpa"])
def test_harness_attention_equals_transformers_own(tiny, reference):
    x = ids()
    ours = logits(tiny, x)
    tiny.hf.set_attn_implementation(reference)
    try:
        theirs = logits(tiny, x)
    finally:
        tiny.hf.set_attn_implementation(ATTN_IMPL)
    assert torch.allclose(ours, theirs, atol=1e-5), (ours - theirs).abs().max()


def test_causal_mask_is_applied(tiny):
    pat = cap.capture(tiny, ids(), {n: (lambda w: w) for n in tiny.names("attn.hook_pattern")})
    for w in pat.values():
        upper = np.triu(np.ones(w.shape[-2:], bool), 1)
        assert np.all(w[..., upper] == 0), "weight on a future key: causal mask not applied"
        np.testing.assert_allclose(w.sum(-1), 1, atol=1e-6)


def test_missing_mask_function_is_an_error(tiny, monkeypatch):
    from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS

    monkeypatch.delitem(ALL_MASK_ATTENTION_FUNCTIONS._global_mapping, ATTN_IMPL)
    with pytest.raises(MissingMaskError):
        logits(tiny, ids())


def test_hooks_are_removed_on_exit_even_after_an_error(tiny):
    x = ids()
    before = logits(tiny, x)
    with pytest.raises(RuntimeError):
        with iv.bidirectional(tiny), iv.identity_rope(tiny), iv.zero_heads(tiny, [(0, 1)]):
            raise RuntimeError("boom")
    assert torch.equal(before, logits(tiny, x))
    assert all(not any(a.self_attn.__dict__.get("_abspos_hooks", {}).values()) for a in tiny.layers)


INTERVENTIONS = {
    "bidirectional": lambda m: iv.bidirectional(m),
    "identity_rope": lambda m: iv.identity_rope(m),
    "scrambled_rope": lambda m: iv.scrambled_rope(m, seed=1),
    "scrambled_rope_all_entries": lambda m: iv.scrambled_rope_all_entries(m, seed=1),
    "zero_heads": lambda m: iv.zero_heads(m, [(0, 1)]),
    "replace_embedding": lambda m: iv.replace_embedding_at(m, 0, torch.ones(m.d_model)),
    "replace_state": lambda m: iv.replace_state_with_mid_mean(m, [0]),
    "project_out": lambda m: iv.project_out_of_residual(m, {0: torch.ones(m.d_model)}),
    "rank1_mlp": lambda m: iv.rank1_mlp_ablation(m, {0: torch.ones(m.d_model)}),
}


def no_hooks_left(model) -> bool:
    torch_hooks = any(m._forward_hooks or m._forward_pre_hooks for m in model.hf.modules())
    return not torch_hooks and all(
        not any(a.self_attn.__dict__.get("_abspos_hooks", {}).values()) for a in model.layers
    )


@pytest.mark.parametrize("error", [RuntimeError, KeyboardInterrupt])
@pytest.mark.parametrize("which", list(INTERVENTIONS))
def test_intervention_undoes_itself_after_an_error_following_a_forward_pass(tiny, which, error):
    """Review I1, I3, I5: an exception (an interrupt included) in the body leaves the model as it was."""
    x = ids()
    before = logits(tiny, x)
    with pytest.raises(error):
        with INTERVENTIONS[which](tiny):
            logits(tiny, x)
            raise error("boom")
    assert torch.equal(before, logits(tiny, x)) and no_hooks_left(tiny)


def test_a_bad_hook_name_removes_the_hooks_already_installed(tiny):
    """Review I4: installing fails on the second name; the first one's hook is removed, the message names it."""

    def keep(x, hook):
        return x

    with pytest.raises(KeyError, match=f"'blocks.99.hook_resid_post': model has {tiny.n_layers} layers"):
        with tiny.hooks({"blocks.0.hook_resid_post": keep, "blocks.99.hook_resid_post": keep}):
            pass
    assert no_hooks_left(tiny)


@pytest.mark.parametrize("which", list(INTERVENTIONS))
def test_intervention_changes_output_and_undoes_itself(tiny, which):
    x = ids()
    before = logits(tiny, x)
    with INTERVENTIONS[which](tiny):
        during = logits(tiny, x)
    after = logits(tiny, x)
    assert not torch.allclose(before, during, atol=1e-6), f"{which} changed nothing"
    assert torch.equal(before, after), f"{which} did not undo itself"


def test_bidirectional_lets_early_queries_see_later_keys(tiny):
    with iv.bidirectional(tiny):
        pat = cap.capture(tiny, ids(), {"p": ("blocks.0.attn.hook_pattern", lambda w: w)})["p"]
    window = iv.layer_window(tiny, 0) or pat.shape[-1]  # Mistral keeps its window on the config, not the module
    assert (window < pat.shape[-1]) == (tiny.spec.sliding_window is not None)
    assert np.all(pat[..., 0, 1:window] > 0)
    assert np.all(pat[..., 0, window:] == 0)  # only causality is removed: a sliding window stays a band


def test_zero_heads_zeroes_only_the_chosen_head(tiny):
    z = {n: (lambda t: t) for n in ["blocks.0.attn.hook_z"]}
    base = cap.capture(tiny, ids(), z)["blocks.0.attn.hook_z"]
    with iv.zero_heads(tiny, [(0, 1)]):
        # the z hook of zero_heads runs first and returns the edited tensor, which our reader then sees
        edited = cap.capture(tiny, ids(), z)["blocks.0.attn.hook_z"]
    assert np.all(edited[:, :, 1] == 0)
    np.testing.assert_array_equal(np.delete(edited, 1, axis=2), np.delete(base, 1, axis=2))


def test_identity_rope_makes_scores_shift_invariant_and_scrambled_breaks_it(tiny):
    """With identity-RoPE a repeated token gives the same logit at every offset; with standard RoPE it does not."""
    x = np.full((1, 10), 7)
    read = {"s": ("blocks.0.attn.hook_scores", lambda s: s)}
    normal = cap.capture(tiny, x, read)["s"][0, 0]
    with iv.identity_rope(tiny):
        ident = cap.capture(tiny, x, read)["s"][0, 0]
    assert np.allclose(ident, ident[0, 0], rtol=1e-5)
    assert not np.allclose(normal[9, :], normal[9, 0], rtol=1e-5)


def test_scrambled_rope_breaks_relative_offset_property(tiny):
    """Standard RoPE: logits of a repeated token depend on i - j only (constant along diagonals); scrambled: not."""
    x = np.full((1, 12), 7)
    read = {"s": ("blocks.0.attn.hook_scores", lambda s: s)}
    diag_spread = lambda s: max(np.ptp(np.diagonal(s, -d)) for d in range(1, 8))
    normal = cap.capture(tiny, x, read)["s"][0, 0]
    with iv.scrambled_rope(tiny, seed=1):
        scr = cap.capture(tiny, x, read)["s"][0, 0]
    assert diag_spread(normal) < 1e-4 * np.abs(normal).max()
    assert diag_spread(scr) > 1e-3 * np.abs(scr).max()


def _recorder(store, tag):
    def fn(value, hook):
        store[tag, hook.layer] = (
            tuple(v.detach().double().clone() for v in value)
            if isinstance(value, tuple)
            else value.detach().double().clone()
        )

    return fn


def test_scrambled_rope_rotates_each_query_by_the_band_permutation(tiny):
    """Scrambled-RoPE replaces each rotated query by a rotation of it (norm per batch, head, position kept)
    that is exactly ``band_permuted_query`` with the layer's own cos/sin; queries move at positions > 0.
    One forward pass: hooks at one point run in installation order, so a reader installed before the
    intervention sees the model's query and one installed after sees the scrambled one."""
    seen = {}
    before = {n: _recorder(seen, "before") for n in tiny.names("attn.hook_q")}
    before.update({n: _recorder(seen, "rope") for n in tiny.names("attn.hook_rope")})
    with tiny.hooks(before), iv.scrambled_rope(tiny, seed=0):
        with tiny.hooks({n: _recorder(seen, "after") for n in tiny.names("attn.hook_q")}):
            logits(tiny, ids())
    perm = iv.band_permutation(tiny.head_dim // 2, seed=0)
    for layer in range(tiny.n_layers):
        q0, q1 = seen["before", layer], seen["after", layer]
        ratio = q1.norm(dim=-1) / q0.norm(dim=-1)
        assert torch.allclose(ratio, torch.ones_like(ratio), rtol=0, atol=1e-6), (ratio.min(), ratio.max())
        assert not torch.allclose(q1[:, :, 1:], q0[:, :, 1:], atol=1e-3), "scrambled_rope left the queries alone"
        assert torch.allclose(q1[:, :, 0], q0[:, :, 0], atol=1e-6)  # position 0: every angle is 0
        cos, sin = seen["rope", layer]
        expected = iv.band_permuted_query(q0, cos.unsqueeze(1), sin.unsqueeze(1), perm)
        assert torch.allclose(q1, expected, atol=1e-5)


def test_band_permuted_query_breaks_eq2_while_standard_rope_keeps_it(tiny):
    """Eq. 2: q_i . k_j of the model's own RoPE is unchanged when i and j shift together; with the queries'
    bands permuted (keys standard) it changes. Uses each layer's cos/sin as read at ``attn.hook_rope`` and
    the model's own ``apply_rotary_pos_emb`` for the standard rotation."""
    seen, n = {}, 24
    with tiny.hooks({name: _recorder(seen, "rope") for name in tiny.names("attn.hook_rope")}):
        logits(tiny, ids(n=n, batch=1))
    perm = iv.band_permutation(tiny.head_dim // 2, seed=0)
    assert sorted(perm.tolist()) == list(range(tiny.head_dim // 2)) and perm.tolist() != sorted(perm.tolist())
    g = torch.Generator().manual_seed(0)
    q, k = (torch.randn(tiny.head_dim, dtype=torch.float64, generator=g) for _ in range(2))
    scale = float(q.norm() * k.norm())
    for layer in range(tiny.n_layers):
        cos, sin = seen["rope", layer]
        qr, kr = apply_rotary(tiny, q.expand(1, 1, n, -1), k.expand(1, 1, n, -1), cos, sin)
        assert torch.allclose(
            iv.band_permuted_query(qr, cos[:, None], sin[:, None], torch.arange(len(perm))), qr, atol=1e-12
        ), "un-rotation does not invert the model's apply_rotary_pos_emb"
        qs = iv.band_permuted_query(qr, cos[:, None], sin[:, None], perm)
        standard, scrambled = qr[0, 0] @ kr[0, 0].T, qs[0, 0] @ kr[0, 0].T
        eq2_error = lambda s: max(
            abs(float(s[i + t, j + t] - s[i, j])) / scale for i in range(8) for j in range(8) for t in range(1, n - 8)
        )
        assert eq2_error(standard) < 1e-5
        assert eq2_error(scrambled) > 1e-2


def test_scrambled_rope_all_entries_is_not_a_rotation(tiny):
    """The sensitivity variant gives the two dimensions of a rotate-half pair different angles: the map
    changes query norms, which is why it is not the paper's Scrambled-RoPE. (Layer 0's query input is
    the same in both passes, so its norms compare directly.)"""
    read = {"q": ("blocks.0.attn.hook_q", lambda q: q)}
    base = cap.capture(tiny, ids(), read)["q"]
    with iv.scrambled_rope_all_entries(tiny, seed=0):
        scr = cap.capture(tiny, ids(), read)["q"]
    ratio = np.linalg.norm(scr, axis=-1) / np.linalg.norm(base, axis=-1)
    assert np.abs(ratio - 1).max() > 1e-2


def test_q_k_rope_points_read_without_changing_anything(tiny):
    """Reading ``attn.hook_q/hook_k/hook_rope`` leaves the logits bit-identical, has the documented shapes,
    and the hooks are gone afterwards."""
    x, seen = ids(), {}
    before = logits(tiny, x)
    points = ("attn.hook_q", "attn.hook_k", "attn.hook_rope")
    with tiny.hooks({name: _recorder(seen, name.split(".")[-1]) for p in points for name in tiny.names(p)}):
        during = logits(tiny, x)
    assert torch.equal(before, during)
    B, n, d, cfg = *x.shape, tiny.head_dim, tiny.hf.config
    for layer in range(tiny.n_layers):
        assert seen["hook_q", layer].shape == (B, tiny.n_heads, n, d)
        assert seen["hook_k", layer].shape == (B, cfg.num_key_value_heads, n, d)
        cos, sin = seen["hook_rope", layer]
        assert cos.shape[-2:] == sin.shape[-2:] == (n, d)
    kinds = getattr(cfg, "layer_types", None) or []
    if len(set(kinds)) > 1:  # Gemma-3: sliding and global layers receive their own RoPE
        a, b = (kinds.index(t) for t in dict.fromkeys(kinds))
        assert not torch.allclose(seen["hook_rope", a][0], seen["hook_rope", b][0])
    assert torch.equal(before, logits(tiny, x))
    for block in tiny.layers:
        assert not block.self_attn._forward_pre_hooks
        assert not any(block.self_attn.__dict__.get("_abspos_hooks", {}).values())


def test_hook_rope_replacement_reaches_attention(tiny):
    """Returning (1, 0) at every layer's ``attn.hook_rope`` is the same as Identity-RoPE at ``hook_rotary``."""
    x = ids()
    with iv.identity_rope(tiny):
        ident = logits(tiny, x)
    one = lambda cs, hook: (torch.ones_like(cs[0]), torch.zeros_like(cs[1]))
    with tiny.hooks({name: one for name in tiny.names("attn.hook_rope")}):
        replaced = logits(tiny, x)
    assert torch.equal(ident, replaced)


def test_replace_state_touches_only_position0(tiny):
    read = {"h": ("blocks.0.hook_resid_post", lambda h: h)}
    base = cap.capture(tiny, ids(), read)["h"]
    with iv.replace_state_with_mid_mean(tiny, [0]):
        new = cap.capture(tiny, ids(), read)["h"]
    np.testing.assert_allclose(new[:, 0], base[:, 3:9].mean(1), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(new[:, 1:], base[:, 1:])


def test_edits_are_values_that_apply_their_intervention(tiny):
    x = ids()
    with Bidirectional().apply(tiny), IdentityRope().apply(tiny):
        both = logits(tiny, x)
    with iv.bidirectional(tiny), iv.identity_rope(tiny):
        nested = logits(tiny, x)
    assert torch.equal(both, nested)
    assert Bidirectional() == Bidirectional() and ZeroHeads([(0, 1)], name="a") == ZeroHeads(((0, 1),), name="b")
    assert Directions({0: np.ones(3)}) == Directions({0: np.ones(3)}) != Directions({0: np.arange(3.0)})
    assert len({ReplaceEmbedding(0, 5), ReplaceEmbedding(0, 5), ReplaceEmbedding(0, 6)}) == 2
    for edit, fn in (
        (ScrambledRope(3), iv.scrambled_rope),
        (ScrambledRopeAllEntries(3), iv.scrambled_rope_all_entries),
    ):
        with edit.apply(tiny):
            via_edit = logits(tiny, x)
        with fn(tiny, seed=3):
            assert torch.equal(via_edit, logits(tiny, x))
    assert ScrambledRope().label == "scrambled_rope" and ScrambledRopeAllEntries().label == "scrambled_rope_all_entries"
    assert ScrambledRope(1) != ScrambledRope(2) and ScrambledRope() != ScrambledRopeAllEntries()


def test_unknown_hook_point_is_an_error(tiny):
    with pytest.raises(KeyError, match="unknown hook point"):
        with tiny.hooks({"blocks.0.hook_nonsense": lambda v, n: None}):
            pass


def test_hooks_receive_their_point_with_its_layer(tiny):
    seen = []
    record = lambda value, hook: seen.append((str(hook), hook.layer))
    with tiny.hooks({"blocks.1.attn.hook_pattern": record, "blocks.0.hook_resid_post": record, "hook_embed": record}):
        logits(tiny, ids())
    assert set(seen) == {("blocks.1.attn.hook_pattern", 1), ("blocks.0.hook_resid_post", 0), ("hook_embed", None)}


class Explodes(Edit):
    """An edit whose hook raises in the middle of the forward pass (review I3)."""

    label = "explodes"

    def apply(self, model):
        def boom(h, name):
            raise RuntimeError("boom mid-forward")

        return model.hooks({"blocks.0.hook_resid_post": boom})


@pytest.mark.parametrize(
    "edits",
    [(Bidirectional(), IdentityRope(), ScrambledRope(seed=1)), (Bidirectional(), ZeroHeads(((0, 1),)), Explodes())],
    ids=["together", "raising"],
)
def test_a_session_capture_with_several_edits_leaves_the_model_as_it_was(edits):
    """Review I1, I2: a capture under several edits at once (one of them raising mid-forward) restores the model."""
    from harness.capture.corpus import PromptSet
    from harness.capture.progress import Progress
    from harness.capture.reads import ResidNorms, Run
    from harness.capture.session import Session
    from harness.spec.settings import Settings

    s = Session(Settings(n_prompts=12, seq_len=16), log=lambda *a: None, progress=Progress(enabled=False))
    m = s.model("tiny-llama")
    x = ids(n=16, batch=12)
    before = logits(m, x)
    prompts = PromptSet(x, np.repeat(np.arange(4), 3), ("a", "b", "c", "d"), "t")
    if any(isinstance(e, Explodes) for e in edits):
        with pytest.raises(RuntimeError, match="boom mid-forward"):
            s.capture(m, Run(prompts, edits=edits), ResidNorms())
    else:
        s.capture(m, Run(prompts, edits=edits), ResidNorms())
    assert torch.equal(before, logits(m, x)) and no_hooks_left(m)
