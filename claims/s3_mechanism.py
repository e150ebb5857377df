"""The declarations of EQ2, EQ3, EQ7: §3 Background: what holds by construction in any RoPE decoder (Eq. 2, 3, 6, 7).

Read by harness/spec/catalogue.py; the tests are in test_s3_mechanism.py.
"""

from __future__ import annotations

from harness.spec.applies import EVERY_MODEL
from harness.spec.claims import ClaimSpec, ClaimTest

CLAIMS = (
    ClaimSpec(
        "EQ2",
        "§3 Eq. 1–2",
        "RoPE-rotated q·k depends on positions only through i−j",
        {
            "test_EQ2_rotated_dot_depends_only_on_offset": ClaimTest(
                EVERY_MODEL,
                "RoPE-rotated q·k at two positions with the same offset agree within 1e-3·|q||k| (hypothesis draws)",
                None,
                "exact (Eq. 2)",
            )
        },
        "`equations.rotated_dot` (hypothesis)",
    ),
    ClaimSpec(
        "EQ3",
        "§3 Eq. 3, 6",
        "causal softmax denominator sums i+1 terms, so weights depend on i; bidirectional removes this",
        {
            "test_EQ3_causal_denominator_makes_weights_depend_on_query_position": ClaimTest(
                EVERY_MODEL,
                "causal row i has i+1 nonzero weights (bidirectional: n), and the weight at each offset 0–9 strictly "
                "decreases with i",
                None,
                "Eq. 3, 6",
            ),
            "test_EQ3_model_attention_applies_causal_mask_and_bidirectional_removes_it": ClaimTest(
                EVERY_MODEL,
                "the model's own attention is causal at every layer, and the bidirectional edit removes the mask",
                None,
                "Eq. 3",
            ),
        },
        "`equations.offset_softmax` (hypothesis) and the model's own mask",
    ),
    ClaimSpec(
        "EQ7",
        "§3 Eq. 7",
        "under causal attention position 0 sees only itself: its state is a function of the token at 0",
        {
            "test_EQ7_position0_is_a_function_of_token0_alone": ClaimTest(
                EVERY_MODEL,
                "the position-0 state at every layer is the same (within 1e-5, relative) whatever follows token 0",
                None,
                "exact (Eq. 7)",
            )
        },
        "`hooks` (hypothesis), and T9a",
    ),
)
