"""The declarations of T9a, T9b: §5.7 The residual-stream component traces to the position-0 trajectory (Appendix A).

Read by harness/spec/catalogue.py; the tests are in test_s5_7_position0.py.
"""

from __future__ import annotations

from harness.spec.applies import EVERY_MODEL
from harness.spec.claims import ClaimSpec, ClaimTest, FigureSpec
from harness.spec.paper_values import Threshold

CLAIMS = (
    ClaimSpec(
        "T9a",
        "§5.7, App. A",
        "position-0 activation has zero cross-prompt std at every layer; position 1 does not",
        {
            "test_T9a_position0_state_is_identical_across_prompts": ClaimTest(
                EVERY_MODEL,
                "the position-0 state's cross-prompt std is exactly {exact} at every layer; position 1's is above 0",
                "max_std_position0",
                "App. A: bit-identical",
            )
        },
        "`sinks.cross_prompt_std`",
        figures=(
            FigureSpec(
                "max_std_position0", "layer_profile.zero", words="spread of the position-0 state across prompts (std)"
            ),
            FigureSpec("min_std_position1"),
            FigureSpec(
                "std_position1_by_layer",
                "layer_profile",
                options={
                    "title": "cross-prompt std of the position-1 residual state by layer",
                    "ylabel": "cross-prompt std at position 1\n(max over dimensions, residual units)",
                    "embedding_first": True,  # index 0 is the embedding output, then one entry per decoder layer
                },
            ),
        ),
        thresholds={
            "exact": Threshold(
                0.0,
                "the activation at every layer is bit-identical across prompts when the token at position is fixed.",
                "the cross-prompt std is exactly 0",
            )
        },
    ),
    ClaimSpec(
        "T9b",
        "App. A",
        "position-0 norm is more than 10× the typical mid-sequence norm",
        {
            "test_T9b_position0_norm_exceeds_mid_sequence_tenfold": ClaimTest(
                EVERY_MODEL,
                "the position-0 norm is > {norm_factor}× the mid-sequence norm at a majority of layers",
                ("layers_over_10x", "peak_ratio"),
                "App. A: more than an order of magnitude",
            )
        },
        "`sinks.norm_ratio_position0`",
        figures=(
            FigureSpec(
                "norm_ratio_by_layer",
                "layer_profile",
                options={
                    "title": "position-0 residual norm over the typical mid-sequence norm by layer",
                    "ylabel": "‖h at position 0‖ / median mid-sequence ‖h‖\n(ratio)",
                    "threshold": ("norm_factor", "{v:g}× (claim: more than an order of magnitude)"),
                },
            ),
            FigureSpec("layers_over_10x", words="layers where position 0's norm is over 10× mid-sequence (layers)"),
            FigureSpec("peak_ratio", words="position-0 norm ÷ mid-sequence norm at its peak (ratio)"),
        ),
        thresholds={
            "norm_factor": Threshold(
                10,
                "the norm at position is more than an order of magnitude larger than the "
                "typical mid-sequence norm at downstream positions",
                "more than 10x, at the majority of decoder layers",
            )
        },
    ),
)
