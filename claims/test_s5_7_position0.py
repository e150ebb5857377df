"""§5.7 The residual-stream component traces to the position-0 trajectory (Appendix A).

With the same token at position 0 in every prompt (the auto BOS, or for models without one a fixed
first token), the position-0 state is identical across prompts at every layer, while position 1 varies;
and it is an anomalously large vector.
"""

import numpy as np
import pytest

from harness import claim, holds
from harness.capture.plan import fixed0
from harness.capture.reads import At, ResidNorms, Run
from harness.stats.sinks import cross_prompt_std, norm_ratio_position0

NORM_FACTOR = claim("T9b").threshold("norm_factor")


POSITIONS_01 = At(positions=(0, 1), embed=True)


@pytest.mark.claim("T9a")
@pytest.mark.reads(fixed0(POSITIONS_01))
def test_T9a_position0_state_is_identical_across_prompts(model, session, figures):
    states = session.capture(model, Run(session.prompts(model, "fixed0")), POSITIONS_01)
    std0 = cross_prompt_std(states.values[:, :, 0])  # [L+1] embedding then each layer
    std1 = cross_prompt_std(states.values[:, :, 1])
    figures.add("max_std_position0", float(std0.max()), paper=0.0)
    figures.add("min_std_position1", float(std1.min()))
    figures.add("std_position1_by_layer", std1)
    holds(
        np.all(std0 == 0.0),
        f"position-0 std across prompts is not exactly 0 at layers {np.nonzero(std0)[0].tolist()} "
        f"(max {std0.max():.3g})",
    )
    holds(np.all(std1[1:] > 0), "position-1 std is 0 at some layer: prompts do not vary there")


@pytest.mark.claim("T9b")
@pytest.mark.reads(fixed0(ResidNorms()))
def test_T9b_position0_norm_exceeds_mid_sequence_tenfold(model, session, figures):
    norms = session.capture(model, Run(session.prompts(model, "fixed0")), ResidNorms())
    ratio = norm_ratio_position0(norms.decoder)  # decoder layers (the embedding is not a 'downstream' state)
    over = int((ratio > NORM_FACTOR).sum())
    figures.add("norm_ratio_by_layer", ratio)
    figures.add("layers_over_10x", over)
    figures.add("peak_ratio", float(ratio.max()))
    holds(
        over > len(ratio) / 2,
        f"position-0 norm exceeds {NORM_FACTOR}x the mid-sequence norm at only "
        f"{over}/{len(ratio)} layers (peak ratio {ratio.max():.1f})",
    )
