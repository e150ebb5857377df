"""The declarations of T5: §5.3 Leakage is distributed and structural (Table 5).

Read by harness/spec/catalogue.py; the tests are in test_s5_3_leakage.py.
"""

from __future__ import annotations

from harness.spec.applies import EVERY_MODEL
from harness.spec.claims import ClaimSpec, ClaimTest, FigureSpec
from harness.spec.models import LLAMA_1B, MISTRAL, QWEN
from harness.spec.paper_values import Threshold, magnitude

CLAIMS = (
    ClaimSpec(
        "T5",
        "§5.3 Table 5",
        "leakage ΔR² is significant in every architecture (top-30 heads survive BH-FDR), content-independent",
        {
            "test_T5_top30_heads_significant_after_fdr": ClaimTest(
                EVERY_MODEL,
                "all {top} heads with the largest ΔR² survive BH-FDR at q {q} (prompt-level sign-flip test)",
                "top30_significant",
                "§5.3: all 30",
            ),
            "test_T5_leakage_is_content_independent": ClaimTest(
                EVERY_MODEL,
                "95% CI of ΔR² on random tokens / natural text inside [{similar[0]}, {similar[1]}]",
                "ratio_random_over_natural",
                "'the same magnitude' (numbers lost in extraction)",
            ),
        },
        "`leakage_view.Leakage.significance` (`nulls.signflip_pvalues`, `benjamini_hochberg`; `permutation_null` reported)",
        figures=(
            FigureSpec(
                "peak_delta", paper={LLAMA_1B: magnitude(0.049), QWEN: magnitude(0.108), MISTRAL: magnitude(0.241)}
            ),
            FigureSpec(
                "median_top30_delta",
                paper={LLAMA_1B: magnitude(0.029), QWEN: magnitude(0.041), MISTRAL: magnitude(0.047)},
            ),
            FigureSpec("top30_significant", words="top-30 heads significant after FDR (heads)"),
            FigureSpec("heads_significant"),
            FigureSpec("top30_largest_p"),
            FigureSpec("top30_significant_within_offset_permutation"),
            FigureSpec("heads_significant_within_offset_permutation"),
            FigureSpec("heads"),
            FigureSpec("mean_delta_natural_text"),
            FigureSpec("mean_delta_random_tokens"),
            FigureSpec("ratio_random_over_natural", words="leakage on random ÷ natural tokens (ratio)"),
        ),
        thresholds={
            "top": Threshold(
                30, "all of the top thirty heads per model survive FDR correction at .", "the top 30 heads"
            ),
            "q": Threshold(
                0.05,
                "all of the top thirty heads per model survive FDR correction at .",
                "q = 0.05 (CLAIMS.md); the p-values from a test whose unit is the prompt (exact sign "
                "flips of the per-prompt contributions to ΔR²), because rows of one prompt and query "
                "are not exchangeable (the pooled within-offset permutation rejects 27–57% of true "
                "nulls at α 0.05 on clustered data, tests/test_calibration.py); the paper's null is reported",
            ),
            "similar": Threshold(
                (0.8, 1.25),
                "The leakage is content-independent: the mean on Llama is on natural text and – on random tokens.",
                "the paper's numbers are lost: 'the same leakage magnitude' at the suite's tolerance "
                "for magnitudes (rtol 0.25), so the 95% bootstrap CI of random / natural must lie "
                "inside [1/1.25, 1.25]",
            ),
        },
        glossary={
            "sign-flip test": "the prompt-level permutation test of T5: the signs of each prompt's contribution to ΔR² are flipped, so the prompt is the unit of replication"
        },
    ),
)
