"""§3 Background: what holds by construction in any RoPE decoder (Eq. 2, 3, 6, 7).

These are checked on each model's own rotary module and attention path, so a transformers
change that broke RoPE or the causal mask would show here first.
"""

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness import holds
from harness.capture import forward as cap
from harness.model import equations
from harness.model.equations import offset_softmax, rotated_dot
from harness.model.interventions import bidirectional, layer_window

EQ3_MODEL = "test_EQ3_model_attention_applies_causal_mask_and_bidirectional_removes_it"
PROPERTY = settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.mark.claim("EQ2")
@PROPERTY
@given(seed=st.integers(0, 2**31 - 1), i=st.integers(0, 2047), back=st.integers(0, 2047), shift=st.integers(1, 2048))
def test_EQ2_rotated_dot_depends_only_on_offset(model, seed, i, back, shift):
    """Eq. 2: <R_i q, R_j k> = <q, R_{j-i} k>, so shifting both positions leaves the logit unchanged."""
    j = max(i - back, 0)
    rng = np.random.default_rng(seed)
    q, k = rng.standard_normal((2, model.head_dim))
    a, b = rotated_dot(model, q, k, i, j), rotated_dot(model, q, k, i + shift, j + shift)
    # angles are computed in float32 by transformers: error ~ position * 1e-7 rad per band
    holds(
        abs(a - b) <= 1e-3 * np.linalg.norm(q) * np.linalg.norm(k),
        f"q.k at ({i},{j}) = {a:.6g} but at ({i + shift},{j + shift}) = {b:.6g}",
    )


@pytest.mark.claim("EQ3")
@settings(max_examples=50, deadline=None)
@given(f=st.lists(st.floats(-8, 8), min_size=2 * 24 - 1, max_size=2 * 24 - 1))
def test_EQ3_causal_denominator_makes_weights_depend_on_query_position(f):
    """Eq. 3/6: with logits f(i - j) only, the causal weight at a fixed offset d falls strictly with i
    (the denominator sums i + 1 terms); without the mask every row sums n terms."""
    n = 24
    f = np.asarray(f)
    causal = offset_softmax(f, n, causal=True)
    full = offset_softmax(f, n, causal=False)
    holds(all((causal[i] > 0).sum() == i + 1 for i in range(n)), "causal row i must have i + 1 terms")
    holds(all((full[i] > 0).sum() == n for i in range(n)), "bidirectional rows must have n terms")
    for d in range(0, 10):
        at_offset = np.array([causal[i, i - d] for i in range(d, n)])
        holds(np.all(np.diff(at_offset) < 0), f"weight at offset {d} is not strictly decreasing in i: {at_offset}")


@pytest.mark.claim("EQ3")
def test_EQ3_model_attention_applies_causal_mask_and_bidirectional_removes_it(model, session):
    """Through the registered attention function: under the causal mask every head's row i puts weight on keys 0..i
    only (in the sliding band where the layer has one: the mask is really applied), and on every key of the row (of
    the band) when it is removed. Read from the weights and the pre-softmax logits of the same pass, so that a weight
    sent to exactly 0 by float underflow (a logit far below its row's largest) is not taken for a masked key
    (``equations.mask_support_problems``)."""
    ids = session.prompts(model).ids[:2, :32]
    layers = range(model.n_layers)
    points = [p for layer in layers for p in (f"blocks.{layer}.attn.hook_scores", f"blocks.{layer}.attn.hook_pattern")]
    raw = lambda x: x.float()
    tiny = float(torch.finfo(model.hf.dtype).tiny)  # the weights' dtype: where a weight underflows to 0
    causal = cap.capture(
        model, ids, {p: raw for p in points}, label="mask check", progress=session.progress, workload=session.workload
    )
    with bidirectional(model):
        bi = cap.capture(
            model,
            ids,
            {p: raw for p in points},
            label="mask check (bidirectional)",
            progress=session.progress,
            workload=session.workload,
        )
    n = ids.shape[1]
    i, j = np.indices((n, n))
    for layer in layers:
        window = layer_window(model, layer) or n
        band = np.abs(i - j) < window
        for kind, got, allowed in (("causal", causal, band & (j <= i)), ("bidirectional", bi, band)):
            scores, pattern = (got[f"blocks.{layer}.attn.hook_{p}"] for p in ("scores", "pattern"))
            problems = equations.mask_support_problems(scores, pattern, allowed, tiny)
            holds(not problems, f"layer {layer}, {kind}: {'; '.join(problems)}", check=f"{EQ3_MODEL}: {kind} support")


@pytest.mark.claim("EQ7")
@PROPERTY
@given(tail_seed=st.integers(0, 2**31 - 1), length=st.integers(2, 24))
def test_EQ7_position0_is_a_function_of_token0_alone(model, session, tail_seed, length):
    """Eq. 7: under causal attention position 0 attends only to itself, so its state at every layer
    depends on the token at 0 alone: two prompts sharing only that token agree there at every layer. (Lengths are
    drawn up to 24 and kept within the run's prompts: --seq-len 16 takes 16 where a longer length is drawn.)"""
    length = min(length, session.settings.seq_len)
    base = session.prompts(model).ids[0, :length]
    rng = np.random.default_rng(tail_seed)
    other = base.copy()
    other[1:] = rng.choice(base.max() + 1, size=length - 1)
    names = ["hook_embed"] + model.names("hook_resid_post")
    read = {n: cap.positions([0]) for n in names}
    a = cap.capture(model, base[None], read, label="eq7", progress=session.progress, workload=session.workload)
    b = cap.capture(model, other[None], read, label="eq7", progress=session.progress, workload=session.workload)
    for name in names:
        scale = np.abs(a[name]).max() + 1e-12
        # separate forward passes of different length: allow float rounding of the kernels, 1e-5 relative
        holds(np.abs(a[name] - b[name]).max() <= 1e-5 * scale, f"{name}: position-0 state differs across tails")
