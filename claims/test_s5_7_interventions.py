"""§5.7 (Table 9) Position-0 interventions under bidirectional attention.

With the causal mask removed, what is left of the first-bin leakage is the residual-stream component.
Replacing the BOS embedding by a random vocabulary token's embedding removes part of it (paper: to 60%
of the bidirectional value); replacing the position-0 state at the most-leaky layer L* by the prompt's
mid-sequence mean removes some (78%); doing that at every layer raises it (128%), because it makes a
normally constant position vary across prompts.
"""

import numpy as np
import pytest
import torch

from harness import corpus
from harness import holds
from harness.interventions import replace_embedding_at, replace_state_with_mid_mean
from harness.leakage import query_bins
from harness.measure import bin_profile, layer_means, leakage_inputs, pair_targets


def first_bin(session, model, interventions=None, tag=""):
    pairs, text, w = leakage_inputs(session, model.spec.name)
    Y = pair_targets(session, model.spec.name, text, ("bidirectional",), interventions=interventions, tag=tag)
    edges = query_bins(text.seq_len)[:2]
    boot = bin_profile(pairs, Y, edges, w)[:, 0]
    return float(bin_profile(pairs, Y, edges)[0]), np.quantile(boot, [0.025, 0.975])


def most_leaky_layer(session, model) -> int:
    """L*: the layer with the largest head-mean causal ΔR² (whole range)."""
    pairs, text, _ = leakage_inputs(session, model.spec.name)
    return int(np.argmax(layer_means(pairs, pair_targets(session, model.spec.name, text), model.n_layers)))


def random_token_embedding(model, seed):
    vocab = corpus.ordinary_vocab(model.tokenizer)
    token = int(np.random.default_rng(seed).choice(vocab))
    return model.base.embed_tokens(torch.tensor([token], device=model.device))[0].detach(), token


@pytest.fixture
def table9(model, session, figures):
    vec, token = random_token_embedding(model, session.settings.seed)
    l_star = most_leaky_layer(session, model)
    out = {"bidirectional": first_bin(session, model),
           "bi+replace-embedding": first_bin(session, model, lambda m: replace_embedding_at(m, 0, vec), f"emb{token}"),
           "bi+replace-Lstar": first_bin(session, model, lambda m: replace_state_with_mid_mean(m, [l_star]),
                                         f"mid@{l_star}"),
           "bi+replace-all": first_bin(session, model, lambda m: replace_state_with_mid_mean(m, range(m.n_layers)),
                                       "mid@all")}
    base = out["bidirectional"][0]
    for label, (value, ci) in out.items():
        figures.add(f"ablation:{label}", value, ci=ci)
        figures.add(f"percent_of_bidirectional:{label}", 100 * value / base)
    figures.add("most_leaky_layer", l_star)
    figures.add("replacement_token", token)
    return {k: v[0] for k, v in out.items()}


@pytest.mark.claim("T9c")
def test_T9c_replacing_bos_embedding_removes_residual_leakage(table9):
    bi, emb = table9["bidirectional"], table9["bi+replace-embedding"]
    holds(emb < bi, f"replacing the BOS embedding gives first-bin ΔR² {emb:.4g}, not below bidirectional {bi:.4g}")


@pytest.mark.claim("T9c")
def test_T9c_replacing_position0_at_most_leaky_layer_reduces_it(table9):
    bi, rep = table9["bidirectional"], table9["bi+replace-Lstar"]
    holds(rep < bi, f"replacing the position-0 state at L* gives {rep:.4g}, not below bidirectional {bi:.4g}")


@pytest.mark.claim("T9c")
def test_T9c_replacing_position0_at_every_layer_raises_it(table9):
    bi, rep = table9["bidirectional"], table9["bi+replace-all"]
    holds(rep > bi, f"replacing the position-0 state at every layer gives {rep:.4g}, not above bidirectional {bi:.4g}")
