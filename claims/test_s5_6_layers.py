"""§5.6 Layer-wise depth profiles distinguish the three architectures (Table 8).

The residual-stream ratio r_l = ΔR²(bidirectional) / ΔR²(causal) of layer l (head means): flat in
standard and NTK-scaled RoPE (Llama mid ~0.62, Qwen low ~0.21), growing with depth under sliding-window
attention (Mistral ~0.66 mean). The profile's shape is its depth slope (change over the whole depth) with a
bootstrap CI: "flat" is an equivalence (the CI inside ±0.10, the ratio tolerance, and where the mean r_l is below 0.3
inside ±⅓ of it, the small-share tolerance: the change over min(mean r_l, 0.3) inside ±⅓), "grows" a direction (the
CI above 0). The "grows" prediction is for Mistral and for any model whose sliding window binds at the tested
length: Gemma-3's 512-token window is tested on 1,024-token prompts.
"""

import numpy as np
import pytest

from harness import at_least, claim, judge, within
from harness.capture.leakage_view import WEIGHT, Leakage, depth_slope, prompt_ci
from harness.capture.plan import topic
from harness.model.edits import Bidirectional
from harness.spec.applies import length_past_window

T8 = claim("T8")
FLAT, FLAT_RELATIVE = T8.threshold("flat"), T8.threshold("flat_relative")
SMALL = FLAT / FLAT_RELATIVE  # 0.3: below this mean r_l the band is relative (the small-share rule)


def ratio_profile(session, model, seq_len=None):
    """(r_l, depth slope, its bootstrap CI, the CI of the mean r_l, the slope over min(mean r_l, 0.3), its paired
    CI), computed once per model and length."""
    return session.memo(model, ("T8 layer ratio", seq_len), lambda: _ratio_profile(session, model, seq_len))


def _ratio_profile(session, model, seq_len):
    leak = Leakage(session, model, seq_len=seq_len)
    point = leak.layer_means(Bidirectional()) / leak.layer_means()
    boot = leak.layer_means(Bidirectional(), boot=True) / leak.layer_means(boot=True)
    mean_rows = np.nanmean(np.where(np.isfinite(boot), boot, np.nan), axis=-1)
    relative, relative_rows = (
        depth_slope(point) / min(float(np.nanmean(point)), SMALL),
        depth_slope(boot) / np.minimum(mean_rows, SMALL),  # paired: the same prompt resample above and below
    )
    return (
        point,
        depth_slope(point),
        prompt_ci(session, depth_slope(boot)),
        prompt_ci(session, mean_rows),
        relative,
        prompt_ci(session, relative_rows),
    )


def record(figures, ratio, slope, slope_ci, mean_ci, seq_len, *_):
    figures.add("layer_ratio", ratio)
    figures.add("mean_layer_ratio", float(np.nanmean(ratio)), ci=mean_ci, seq_len=seq_len)
    figures.add("depth_slope", slope, ci=slope_ci, note="change of r_l over the whole depth")
    figures.add("seq_len", seq_len)


@pytest.mark.claim("T8")
@pytest.mark.reads(topic(WEIGHT))
def test_T8_layer_ratio_is_flat_with_depth(model, session, figures):
    ratio, slope, slope_ci, mean_ci, relative, relative_ci = ratio_profile(session, model)
    mean = float(np.nanmean(ratio))
    record(figures, ratio, slope, slope_ci, mean_ci, session.settings.seq_len)
    figures.add("flat_bound", FLAT_RELATIVE * min(mean, SMALL), note="±0.10, or ±⅓ of the mean r_l below 0.3")
    figures.add(
        "depth_slope_relative",
        relative,
        ci=relative_ci,
        note=f"the change of r_l over the depth / min(mean r_l, {SMALL:g}): judged inside ±{FLAT_RELATIVE:.3g}",
    )
    judge(
        within(relative, relative_ci, -FLAT_RELATIVE, FLAT_RELATIVE, session.settings.n_prompts),
        f"the layer-wise ratio is not shown flat: it changes by {slope:.3f} over the depth (mean ratio {mean:.3f}), "
        f"against within ±{FLAT:g}, or ±⅓ of the mean below {SMALL:g} (the change over min(mean r_l, {SMALL:g}))",
        check="test_T8_layer_ratio_is_flat_with_depth: flat",
    )


def check_rises(model, session, figures, seq_len=None):
    ratio, slope, slope_ci, mean_ci, *_ = ratio_profile(session, model, seq_len)
    record(figures, ratio, slope, slope_ci, mean_ci, seq_len or session.settings.seq_len)
    judge(
        at_least(slope, slope_ci, 0.0, session.settings.n_prompts),
        f"the layer-wise ratio is not shown to rise with depth (it changes by {slope:.3f} over the depth)",
        check="check_rises: rises",
    )


@pytest.mark.claim("T8")
@pytest.mark.reads(topic(WEIGHT))
def test_T8_sliding_window_ratio_rises_with_depth(model, session, figures):
    check_rises(model, session, figures)


@pytest.mark.claim("T8")
def test_T8_sliding_window_ratio_rises_with_depth_past_the_window(model, session, figures):
    check_rises(model, session, figures, length_past_window(model.spec.sliding_window, session.settings.seq_len))
