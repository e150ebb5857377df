"""§5.6 Layer-wise depth profiles distinguish the three architectures (Table 8).

The residual-stream ratio r_l = ΔR²(bidirectional) / ΔR²(causal) of layer l (head means): flat in
standard and NTK-scaled RoPE (Llama mid ~0.62, Qwen low ~0.21), rising with depth under sliding-window
attention (Mistral ~0.66 mean). We assert the profile's shape from its depth slope with a bootstrap CI:
never significantly falling; significantly rising for sliding-window architectures.
"""

import numpy as np
import pytest

from harness import holds
from harness.edits import Bidirectional
from harness.measure import Leakage, depth_slope


def ratio_profile(session, model):
    """(r_l, depth slope, its bootstrap CI), computed once per model (both T8 tests read it)."""
    return session.memo(model, "T8 layer ratio", lambda: _ratio_profile(session, model))


def _ratio_profile(session, model):
    leak = Leakage(session, model)
    point = leak.layer_means(Bidirectional()) / leak.layer_means()
    boot = leak.layer_means(Bidirectional(), boot=True) / leak.layer_means(boot=True)
    return point, depth_slope(point), np.quantile(depth_slope(boot), [0.025, 0.975])


@pytest.mark.claim("T8")
def test_T8_layer_ratio_is_flat_or_rising_with_depth(model, session, figures):
    ratio, slope, slope_ci = ratio_profile(session, model)
    figures.add("layer_ratio", ratio)
    figures.add("mean_layer_ratio", float(np.nanmean(ratio)))
    figures.add("depth_slope", slope, ci=slope_ci)
    holds(slope_ci[1] >= 0, f"the layer-wise ratio falls with depth: slope {slope:.3f} per unit depth, "
                            f"95% CI {np.round(slope_ci, 3).tolist()}")


@pytest.mark.claim("T8")
def test_T8_sliding_window_ratio_rises_with_depth(model, session, figures):
    ratio, slope, slope_ci = ratio_profile(session, model)
    figures.add("depth_slope", slope, ci=slope_ci)
    holds(slope_ci[0] > 0, f"the layer-wise ratio does not rise with depth: slope {slope:.3f}, "
                           f"95% CI {np.round(slope_ci, 3).tolist()}")
