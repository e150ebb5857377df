"""§5.7 (Table 9) Position-0 interventions under bidirectional attention.

With the causal mask removed, what is left of the first-bin leakage is the residual-stream component.
Replacing the BOS embedding by a random vocabulary token's embedding removes part of it (paper: to 60%
of the bidirectional value); replacing the position-0 state at the most-leaky layer L* by the prompt's
mid-sequence mean removes some (78%); doing that at every layer raises it (128%), because it makes a
normally constant position vary across prompts.
"""

import numpy as np
import pytest

from harness import corpus, holds
from harness.edits import Bidirectional, ReplaceEmbedding, ReplaceStateWithMidMean
from harness.leakage import query_bins
from harness.measure import Leakage


def first_bin(session, model, *edits):
    """First-bin head-mean ΔR² under bidirectional attention (plus the edits), with its bootstrap CI."""
    leak = Leakage(session, model)
    edges = query_bins(leak.prompts.seq_len)[:2]
    boot = leak.bin_profile(Bidirectional(), *edits, edges=edges, boot=True)[:, 0]
    return float(leak.bin_profile(Bidirectional(), *edits, edges=edges)[0]), np.quantile(boot, [0.025, 0.975])


def most_leaky_layer(session, model) -> int:
    """L*: the layer with the largest head-mean causal ΔR² (whole range)."""
    return int(np.argmax(Leakage(session, model).layer_means()))


def random_token(model, seed) -> int:
    return int(np.random.default_rng(seed).choice(corpus.ordinary_vocab(model.tokenizer)))


def table9_rows(session, model):
    """({condition: (first-bin ΔR², CI)}, L*, replacement token), computed once per model (three tests read it)."""
    def compute():
        token = random_token(model, session.settings.seed)
        l_star = most_leaky_layer(session, model)
        out = {"bidirectional": first_bin(session, model),
               "bi+replace-embedding": first_bin(session, model, ReplaceEmbedding(0, token)),
               "bi+replace-Lstar": first_bin(session, model, ReplaceStateWithMidMean((l_star,))),
               "bi+replace-all": first_bin(session, model, ReplaceStateWithMidMean(tuple(range(model.n_layers))))}
        return out, l_star, token

    return session.memo(model, "T9c Table 9", compute)


@pytest.fixture
def table9(model, session, figures):
    out, l_star, token = table9_rows(session, model)
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
