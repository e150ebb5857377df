"""EQ3's check on a model's attention (claims/test_s3_mechanism.py): the weights' support is the mask's, read so that a
weight sent to exactly 0 by float underflow is never taken for a masked key (``equations.mask_support_problems``).
Found on Qwen2.5-Coder-1.5B, whose layer-0 logits span more than float32's range: counting non-zero weights there
called its causal mask broken."""

from __future__ import annotations

import numpy as np
import torch

from harness.model.equations import mask_support_problems

N = 8
CAUSAL = np.tril(np.ones((N, N), dtype=bool))
TINY32 = float(torch.finfo(torch.float32).tiny)


def softmax_fp32(scores: np.ndarray, allowed: np.ndarray) -> np.ndarray:
    """The weights as an attention kernel computes them in float32 (masked keys at -inf)."""
    t = torch.tensor(np.where(allowed, scores, -np.inf), dtype=torch.float32)
    return torch.softmax(t, dim=-1).numpy().astype(np.float64)


def test_underflowed_weights_inside_the_mask_are_not_a_broken_mask():
    rng = np.random.default_rng(0)
    scores = rng.normal(size=(2, 3, N, N))
    scores[:, 0, :, 0] += 200.0  # an extreme sink: every other key of head 0 underflows to exactly 0
    pattern = softmax_fp32(scores, CAUSAL)
    assert (pattern[:, 0, 3, 1:4] == 0).all()  # the old count of non-zero weights would read 1, not 4
    assert mask_support_problems(scores, pattern, CAUSAL, TINY32) == []
    bi = np.ones((N, N), dtype=bool)
    assert mask_support_problems(scores, softmax_fp32(scores, bi), bi, TINY32) == []


def test_a_mask_not_applied_or_a_key_dropped_is_found():
    rng = np.random.default_rng(1)
    scores = rng.normal(size=(1, 2, N, N))
    unmasked = softmax_fp32(scores, np.ones((N, N), dtype=bool))  # the causal mask never applied
    (leak,) = mask_support_problems(scores, unmasked, CAUSAL, TINY32)
    assert leak.startswith("56 weights outside the mask are non-zero (first: prompt 0, head 0, query 0, key 1)")
    dropped = softmax_fp32(scores, CAUSAL)
    dropped[0, 1, 5, 2] = 0.0  # a key with an ordinary logit given no weight: not underflow
    (missing,) = mask_support_problems(scores, dropped, CAUSAL, TINY32)
    assert missing.startswith(
        "1 weights inside the mask are zero where no underflow can explain it (first: prompt 0, head 1"
    )


def test_on_a_model_the_check_reads_its_mask_and_finds_it_removed():
    """The claim test's reading on tiny random-init models of each architecture: the causal pass's support is the
    (sliding) causal mask's; a pass under ``bidirectional`` read against the causal mask is found leaking."""
    from harness.capture import forward as cap
    from harness.model.attention import ATTN_IMPL, register_attention
    from harness.model.hooks import HookedModel
    from harness.model.interventions import bidirectional, layer_window
    from harness.model.weights import random_init_model
    from harness.spec.models import get_spec, names

    register_attention()
    for name in names("tiny"):
        spec = get_spec(name)
        hf = random_init_model(spec, seed=0)
        hf.set_attn_implementation(ATTN_IMPL)
        model = HookedModel(hf, spec)
        ids = np.random.default_rng(0).integers(3, 250, size=(2, 12))
        points = {f"blocks.0.attn.hook_{p}": (lambda x: x.float()) for p in ("scores", "pattern")}
        n, window = 12, layer_window(model, 0) or 12
        assert (window < n) == (spec.sliding_window is not None), name  # Mistral keeps its window on the config
        i, j = np.indices((n, n))
        allowed = (np.abs(i - j) < window) & (j <= i)
        got = cap.capture(model, ids, points, label="t")
        scores, pattern = got["blocks.0.attn.hook_scores"], got["blocks.0.attn.hook_pattern"]
        assert mask_support_problems(scores, pattern, allowed, TINY32) == [], name
        with bidirectional(model):
            got = cap.capture(model, ids, points, label="t")
        scores, pattern = got["blocks.0.attn.hook_scores"], got["blocks.0.attn.hook_pattern"]
        problems = mask_support_problems(scores, pattern, allowed, TINY32)
        assert len(problems) == 1 and "outside the mask are non-zero" in problems[0], name


def test_weights_that_are_not_numbers_never_pass():
    """An overflowed logit (+inf, as in float16) makes its row's weights NaN: neither zero nor non-zero, never held."""
    rng = np.random.default_rng(2)
    scores = rng.normal(size=(1, 1, N, N))
    scores[0, 0, 5, 2] = np.inf
    pattern = softmax_fp32(scores, CAUSAL)
    problems = mask_support_problems(scores, pattern, CAUSAL, TINY32)
    assert problems and problems[0].startswith("8 weights are not finite (first: prompt 0, head 0, query 5, key 0)")
