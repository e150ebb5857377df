"""The declarations of T3, T4: §5.2 Sink-reading heads carry sink-token identity (T3, T4).

Read by harness/spec/catalogue.py; the tests are in test_s5_2_sink_heads.py.
"""

from __future__ import annotations

from harness.spec.applies import ADDS_BOS, NO_BOS
from harness.spec.claims import ClaimSpec, ClaimTest, FigureSpec, PlotSpec
from harness.spec.paper_values import Threshold

CLAIMS = (
    ClaimSpec(
        "T3",
        "§5.2",
        "sink-reading heads' outputs are consistent across prompts when position 0 is a fixed BOS",
        {
            "test_T3_top_sink_readers_are_consistent_across_prompts_with_bos": ClaimTest(
                ADDS_BOS,
                "95% CI of top- minus bottom-decile cosine consistency above 0",
                "cosine_gap_top_minus_bottom",
                "Table 3 'markedly higher' (values lost in extraction)",
            ),
            "test_T3_without_bos_top_sink_readers_vary_with_the_token_at_zero": ClaimTest(
                NO_BOS,
                "paired 95% CI of top-decile consistency, natural token 0 minus one fixed token, below 0",
                "cosine_top_decile_varying_minus_fixed",
                "Qwen: 'input-varying output'",
            ),
        },
        "`heads.cosine_consistency`, `heads.decile_split`, `sinks.sink_reading_strength`",
        figures=(
            FigureSpec("cosine_top_decile"),
            FigureSpec("cosine_bottom_decile"),
            FigureSpec("cosine_gap_top_minus_bottom", words="reader consistency, top − bottom sink heads (cosine)"),
            FigureSpec("heads_per_decile"),
            FigureSpec("sink_by_layer_head", "sink_heatmap"),
            FigureSpec("cosine_top_decile_varying_token0"),
            FigureSpec("cosine_top_decile_fixed_token0"),
            FigureSpec(
                "cosine_top_decile_varying_minus_fixed", words="reader consistency, varying − fixed token at 0 (cosine)"
            ),
        ),
        plots={
            "sink_heatmap": PlotSpec(
                "sink-reading strength per head (attention weight on position 0)",
                draw="s5_2_sink_heads_plots.sink_heatmap",
            )
        },
        thresholds={
            "ci": Threshold(
                0.95,
                "the top-decile heads by sink-reading strength write output with markedly higher "
                "cosine consistency across prompts than the bottom decile (Table 3) [...] In Qwen, "
                "the top-decile heads write input-varying output",
                "Table 3's values are lost: a direction claim, so the 95% bootstrap CI over prompts "
                "(a resampled prompt's copies never paired with each other) of top minus bottom must "
                "exclude 0 above; without BOS, the paired CI of top-decile consistency with the natural "
                "token at 0 minus with one fixed token must exclude 0 below",
            )
        },
    ),
    ClaimSpec(
        "T4",
        "§5.2 Table 4",
        "sink-reading head output encodes the identity of the token at position 0 (no-BOS model)",
        {
            "test_T4_sink_reader_output_carries_token0_identity": ClaimTest(
                NO_BOS,
                "an uncommon token at 0 per 8 probe prompts (8 at the default), each on 8 prompts with different "
                "suffixes: some of the top 20 sink-reading heads' PC1 projection has a held-out R² on the token-0 "
                "identity that beats its permutation null (BH q {q} over the 20), and the best such head's R², "
                "corrected for the held-out shrinkage, is above {r2_min} on its interval over prompts (at 1 - 0.05/k "
                "for k significant heads); no PC1-retention gate (§4's, on identical suffixes; PC1 fractions reported)",
                ("best_heldout_r2_corrected", "best_heldout_r2"),
                "Table 4: in-sample R² 0.605, 0.338, 0.347 (PC1 ≥ 0.979); null near zero",
            )
        },
        "`corpus.token0_identity_prompts`, `sinks.pc1_heldout_identity`, `sinks.identity_significance`, "
        "`sinks.pc1_heldout_rows`, `sinks.carrier_decision`",
        figures=(
            # its p column is a permutation p-value, in steps of 1 / (n_perm + 1) = 1 / 1001 at the defaults
            FigureSpec("top_heads", resolution=1 / 1001),
            FigureSpec("carrier_heads"),
            FigureSpec("identity_carriers"),
            FigureSpec("best_heldout_r2", words="token-0 identity from the readers' output (held-out R²)"),
            FigureSpec(
                "best_heldout_r2_corrected",
                words="token-0 identity in the best significant reader, shrinkage undone (held-out R²)",
            ),
        ),
        thresholds={
            "r2_min": Threshold(
                0.238,
                "L5/H10 and L5/H11 explain 0.605 and 0.338 of the variance of the head's output projection from the "
                "sink-token identity alone, with random-permutation null values near zero (Table 4: 0.605, 0.338, "
                "0.347)",
                "Table 4's smallest R² (0.338) less the share tolerance 0.10; R² held out across prompts (a head "
                "whose output does not carry the identity scores about 0, its null too: 'near zero'), where the "
                "in-sample R² of §4's identical-suffix design is 1 by construction; compared after undoing the "
                "held-out estimator's shrinkage (sinks.corrected_r2, 1.161 on 8 x 8 prompts), so the tolerance is not "
                "spent on it",
            ),
            "q": Threshold(
                0.05,
                "sink-reading head output carries the identity of the token at 0 ... vs permutation null ~0",
                "BH-FDR at q = 0.05 over the top 20 sink-reading heads, as in §5.3",
            ),
        },
        glossary={"PC1": "the first principal component of a head's outputs; its explained-variance fraction (T4)"},
    ),
)
