"""§5.2 Sink-reading heads carry sink-token identity (T3, T4).

A head's sink-reading strength is its mean weight on position 0. When position 0 is a fixed BOS, the
strongest sink readers write nearly the same output on every prompt (cross-prompt cosine consistency of
the head output, top decile above bottom decile); where position 0 varies (no BOS, Qwen) the top decile
varies with it, and its output carries the identity of the token at 0 (PC1 projection R² on one-hot
token identity, against a permutation null).
"""

import numpy as np
import pytest

from harness import claim, holds
from harness.capture import corpus
from harness.capture.measure import prompt_ci
from harness.capture.plan import fixed0, topic
from harness.capture.reads import At, Run, SinkProfile
from harness.stats.heads import (
    cosine_consistency,
    cosine_consistency_boot,
    decile_split,
    pc1_identity_null,
    pc1_identity_pvalue,
    pc1_identity_r2,
)
from harness.stats.intervals import bootstrap_weights
from harness.stats.nulls import benjamini_hochberg
from harness.stats.sinks import sink_reading_strength

TOP_HEADS = 20  # "the top twenty Qwen sink-reading heads"
PC1_RETAIN, Q = claim("T4").threshold("pc1_retain"), claim("T4").threshold("q")
N_SINK_TOKENS = 8  # distinct tokens at position 0, each recurring, so identity can be regressed on


Z_LAST = At(point="attn.hook_z", positions=(-1,))  # each head's output at the last query (it reads every key)


def head_outputs(session, model, prompts):
    """(each head's output at the last query [prompts, heads, d_head], sink-reading strength [layers, heads])."""
    z, profile = session.capture(model, Run(prompts), Z_LAST, SinkProfile())
    strength = sink_reading_strength(profile.values)
    return z.values[:, :, 0].reshape(len(prompts), strength.size, -1), strength


def consistency(session, outputs):
    """Cosine consistency per head (flat) and its bootstrap rows over prompts [n_boot, heads]: the same
    resampling weights for every call, so differences between prompt sets of equal size are paired."""
    s = session.settings
    weights = bootstrap_weights(len(outputs), s.n_boot, s.seed)
    return cosine_consistency(outputs), cosine_consistency_boot(outputs, weights)


@pytest.mark.claim("T3")
@pytest.mark.reads(topic(Z_LAST, SinkProfile()))
def test_T3_top_sink_readers_are_consistent_across_prompts_with_bos(model, session, figures):
    z, strength = head_outputs(session, model, session.prompts(model))
    top, bottom = decile_split(strength)
    cons, boot = consistency(session, z)
    gap, gap_ci = (
        cons[top].mean() - cons[bottom].mean(),
        prompt_ci(session, boot[:, top].mean(1) - boot[:, bottom].mean(1)),
    )
    figures.add("cosine_top_decile", float(cons[top].mean()))
    figures.add("cosine_bottom_decile", float(cons[bottom].mean()))
    figures.add("cosine_gap_top_minus_bottom", float(gap), ci=gap_ci)
    figures.add("heads_per_decile", len(top))
    figures.add("sink_by_layer_head", strength)
    holds(
        gap_ci[0] > 0,
        f"top-decile sink readers' cosine consistency {cons[top].mean():.3f} is not significantly "
        f"above the bottom decile's {cons[bottom].mean():.3f} (95% CI of the gap "
        f"{np.round(gap_ci, 3).tolist()})",
    )


@pytest.mark.claim("T3")
@pytest.mark.reads(topic(Z_LAST, SinkProfile()), fixed0(Z_LAST, SinkProfile()))
def test_T3_without_bos_top_sink_readers_vary_with_the_token_at_zero(model, session, figures):
    text = session.prompts(model)
    z, strength = head_outputs(session, model, text)
    z_fixed, _ = head_outputs(session, model, session.prompts(model, "fixed0"))
    top, _ = decile_split(strength)  # the same heads in both conditions: the natural run's top decile
    (natural, natural_b), (fixed, fixed_b) = consistency(session, z), consistency(session, z_fixed)
    diff_ci = prompt_ci(session, natural_b[:, top].mean(1) - fixed_b[:, top].mean(1))
    figures.add("cosine_top_decile_varying_token0", float(natural[top].mean()))
    figures.add("cosine_top_decile_fixed_token0", float(fixed[top].mean()))
    figures.add("cosine_top_decile_varying_minus_fixed", float(natural[top].mean() - fixed[top].mean()), ci=diff_ci)
    figures.add("sink_by_layer_head", strength)
    holds(
        diff_ci[1] < 0,
        f"top-decile consistency with the natural token at 0 ({natural[top].mean():.3f}) is not "
        f"significantly below that with a fixed token at 0 ({fixed[top].mean():.3f}; paired 95% "
        f"CI of the difference {np.round(diff_ci, 4).tolist()})",
    )


@pytest.mark.claim("T4")
def test_T4_sink_reader_output_carries_token0_identity(model, session, figures):
    """§4's design: token 0 drawn from the uncommon range, everything after it identical across prompts. Token 0
    is then the only input that varies, so a head's output is a function of it: R² on its identity is 1 up to
    float round-off wherever the output varies at all. What can fail is PC1 retention (the variation token 0
    causes is one-dimensional) and significance against the permutation null."""
    s = session.settings
    prompts = corpus.token0_identity_prompts(
        session.prompts(model), model.tokenizer, N_SINK_TOKENS, 4 * N_SINK_TOKENS, s.seed
    )
    z, strength = head_outputs(session, model, prompts)
    token0 = prompts.ids[:, 0]
    rows = []
    for h in np.argsort(strength.ravel())[::-1][:TOP_HEADS]:
        r2, pc1 = pc1_identity_r2(z[:, h], token0)
        null = pc1_identity_null(z[:, h], token0, s.n_perm, s.seed)
        rows.append((int(h), r2, pc1, float(null.mean()), pc1_identity_pvalue(r2, null)))
    kept = [r for r in rows if r[2] > PC1_RETAIN]
    significant = benjamini_hochberg(np.array([r[4] for r in kept]), Q) if kept else np.array([], bool)
    heads = model.n_heads
    figures.add(
        "top_heads",
        [[h // heads, h % heads, r2, pc1, nm] for h, r2, pc1, nm, _ in rows],
        note="[layer, head, R², PC1 fraction, null mean], strongest sink reader first",
    )
    figures.add(
        "retained_heads",
        [[h // heads, h % heads, r2, pc1, nm] for h, r2, pc1, nm, _ in kept],
        note="[layer, head, R², PC1 fraction, null mean]",
    )
    figures.add("retained_significant", int(significant.sum()))
    holds(
        kept,
        f"none of the top {TOP_HEADS} sink-reading heads has a PC1 fraction above {PC1_RETAIN} "
        f"(largest {max(r[2] for r in rows):.3f})",
    )
    holds(
        significant.all(),
        f"{int((~significant).sum())}/{len(kept)} retained heads' PC1 projection is not "
        f"explained by the token at 0 beyond the permutation null",
    )
