"""§5.2 Sink-reading heads carry sink-token identity (T3, T4).

A head's sink-reading strength is its mean weight on position 0. When position 0 is a fixed BOS, the
strongest sink readers write nearly the same output on every prompt (cross-prompt cosine consistency of
the head output, top decile above bottom decile); where position 0 varies (no BOS, Qwen) the top decile
varies with it, and its output carries the identity of the token at 0 (PC1 projection R² on one-hot
token identity, against a permutation null).
"""

import numpy as np
import pytest

from harness import claim, corpus, holds
from harness.heads import cosine_consistency, decile_split, pc1_identity_null, pc1_identity_pvalue, pc1_identity_r2
from harness.leakage import benjamini_hochberg
from harness.reads import At, Run, SinkProfile
from harness.sinks import sink_reading_strength

TOP_HEADS = 20  # "the top twenty Qwen sink-reading heads"
PC1_RETAIN, Q = claim("T4").threshold("pc1_retain"), claim("T4").threshold("q")
N_SINK_TOKENS = 8  # distinct tokens at position 0, each recurring, so identity can be regressed on


Z_LAST = At(point="attn.hook_z", positions=(-1,))  # each head's output at the last query (it reads every key)


def head_consistency(session, model, prompts):
    z, profile = session.capture(model, Run(prompts), Z_LAST, SinkProfile())
    strength = sink_reading_strength(profile.values)  # [layers, heads]
    cons = cosine_consistency(z.values[:, :, 0])  # head output at the last query, [layers, heads]
    top, bottom = decile_split(strength)
    return cons.ravel()[top], cons.ravel()[bottom], strength


@pytest.mark.claim("T3")
def test_T3_top_sink_readers_are_consistent_across_prompts_with_bos(model, session, figures):
    top, bottom, strength = head_consistency(session, model, session.prompts(model))
    figures.add("cosine_top_decile", float(top.mean()))
    figures.add("cosine_bottom_decile", float(bottom.mean()))
    figures.add("heads_per_decile", len(top))
    figures.add("sink_by_layer_head", strength)
    holds(top.mean() > bottom.mean(), f"top-decile sink readers' cosine consistency {top.mean():.3f} is not above "
                                      f"the bottom decile's {bottom.mean():.3f}")


@pytest.mark.claim("T3")
def test_T3_without_bos_top_sink_readers_vary_with_the_token_at_zero(model, session, figures):
    text = session.prompts(model)
    natural, _, strength = head_consistency(session, model, text)
    fixed, _, _ = head_consistency(session, model, corpus.fixed_token_at_zero(text, int(text.ids[0, 0])))
    figures.add("cosine_top_decile_varying_token0", float(natural.mean()))
    figures.add("cosine_top_decile_fixed_token0", float(fixed.mean()))
    figures.add("sink_by_layer_head", strength)
    holds(natural.mean() < fixed.mean(), f"top-decile consistency with the natural token at 0 ({natural.mean():.3f}) "
                                         f"is not below that with a fixed token at 0 ({fixed.mean():.3f})")


@pytest.mark.claim("T4")
def test_T4_sink_reader_output_carries_token0_identity(model, session, figures):
    s = session.settings
    text = session.prompts(model, n_prompts=4 * N_SINK_TOKENS)
    prompts = corpus.cycled_tokens_at_zero(text, model.tokenizer, N_SINK_TOKENS, s.seed)
    z_last, profile = session.capture(model, Run(prompts), Z_LAST, SinkProfile())
    strength = sink_reading_strength(profile.values).ravel()
    z = z_last.values[:, :, 0].reshape(len(prompts), strength.size, -1)  # [prompts, heads, d_head]
    token0 = prompts.ids[:, 0]
    rows = []
    for h in np.argsort(strength)[::-1][:TOP_HEADS]:
        r2, pc1 = pc1_identity_r2(z[:, h], token0)
        null = pc1_identity_null(z[:, h], token0, s.n_perm, s.seed)
        rows.append((int(h), r2, pc1, float(null.mean()), pc1_identity_pvalue(r2, null)))
    kept = [r for r in rows if r[2] > PC1_RETAIN]
    significant = benjamini_hochberg(np.array([r[4] for r in kept]), Q) if kept else np.array([], bool)
    heads = strength.size // model.n_layers
    figures.add("retained_heads", [[h // heads, h % heads, r2, pc1, nm] for h, r2, pc1, nm, _ in kept],
                note="[layer, head, R², PC1 fraction, null mean]")
    figures.add("retained_significant", int(significant.sum()))
    holds(kept, f"none of the top {TOP_HEADS} sink-reading heads has a PC1 fraction above {PC1_RETAIN}")
    holds(significant.all(), f"{int((~significant).sum())}/{len(kept)} retained heads' PC1 projection is not "
                             f"explained by the token at 0 beyond the permutation null")
