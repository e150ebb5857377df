"""The declarations of T6: §5.4 Mechanism ablations expose two architectural components (Table 6).

Read by harness/spec/catalogue.py; the tests are in test_s5_4_ablations.py.
"""

from __future__ import annotations

from harness.spec.applies import EVERY_MODEL, ROPE_ABLATABLE
from harness.spec.claims import ClaimSpec, ClaimTest, FigureSpec, PlotSpec
from harness.spec.models import LLAMA_1B, LLAMA_3B, LLAMA_8B, MISTRAL, QWEN
from harness.spec.paper_values import Threshold, magnitude, share

CLAIMS = (
    ClaimSpec(
        "T6",
        "§5.4 Table 6",
        "bidirectional cuts mean ΔR² to 0.09–0.36× baseline; identity/scrambled RoPE raise it 2.1–3.2×",
        {
            "test_T6_bidirectional_attention_reduces_leakage": ClaimTest(
                EVERY_MODEL,
                "bidirectional / causal mean ΔR² below {bi_at_most} (its paired 95% prompt-bootstrap CI)",
                "bidirectional_over_causal",
                paper_values=("mean_delta_causal", "mean_delta_bidirectional", "bidirectional_over_causal"),
            ),
            "test_T6_rope_ablations_raise_leakage_alike": ClaimTest(
                ROPE_ABLATABLE,
                "identity- and scrambled-RoPE each raise mean ΔR² above {rise_at_least}× causal, and lie within "
                "{nearly_equal:.3g}× of each other (paired 95% prompt-bootstrap CIs)",
                ("identity_over_causal", "scrambled_over_causal"),
                "Table 6: 2.12–3.24×",
                paper_values=("mean_delta_identity_rope", "mean_delta_scrambled_rope"),  # the causal mean: T6a's
            ),
        },
        "`edits.Bidirectional/IdentityRope/ScrambledRope`, `leakage_view.Leakage.mean_delta_boot`",
        figures=(
            FigureSpec(
                "mean_delta_causal",
                "ablation_bars",
                paper={
                    LLAMA_1B: magnitude(0.0121),
                    LLAMA_3B: magnitude(0.0143),
                    LLAMA_8B: magnitude(0.0135),
                    QWEN: magnitude(0.0153),
                    MISTRAL: magnitude(0.0182),
                },
            ),
            FigureSpec(
                "mean_delta_bidirectional",
                "ablation_bars",
                paper={
                    LLAMA_1B: magnitude(0.0022),
                    LLAMA_3B: magnitude(0.0051),
                    LLAMA_8B: magnitude(0.0048),
                    QWEN: magnitude(0.0014),
                    MISTRAL: magnitude(0.0022),
                },
            ),
            FigureSpec(
                "mean_delta_identity_rope",
                "ablation_bars",
                paper={LLAMA_3B: magnitude(0.0413), QWEN: magnitude(0.0496), MISTRAL: magnitude(0.0391)},
            ),
            FigureSpec(
                "mean_delta_scrambled_rope",
                "ablation_bars",
                paper={LLAMA_3B: magnitude(0.0388), QWEN: magnitude(0.0370), MISTRAL: magnitude(0.0386)},
            ),
            FigureSpec(
                "bidirectional_over_causal",
                paper={
                    LLAMA_1B: share(0.18),
                    LLAMA_3B: share(0.35),
                    LLAMA_8B: share(0.36),
                    QWEN: share(0.09),
                    MISTRAL: share(0.12),
                },
                words="leakage bidirectional ÷ causal (ratio)",
            ),
            FigureSpec("identity_over_causal", words="leakage with identity RoPE ÷ causal (ratio)"),
            FigureSpec("scrambled_over_causal", words="leakage with scrambled RoPE ÷ causal (ratio)"),
            FigureSpec("identity_over_scrambled"),
            FigureSpec("scrambled_all_entries_over_causal_sensitivity"),
            FigureSpec("bootstrap_rows:{condition}"),  # paper models: T13 judged at a merge of runs (report/ladder.py)
            FigureSpec("bootstrap_prompts"),
        ),
        thresholds={
            "bi_at_most": Threshold(
                0.46,
                "Bidirectional ablation reduces to between and of baseline (Table 6: 0.09-0.36)",
                "the band's top, 0.36, plus the ratio tolerance 0.10, passed by the paired bootstrap CI of the ratio",
            ),
            "rise_at_least": Threshold(
                2.02,
                "Identity-RoPE and scrambled-RoPE increase by a factor of to (Table 6: 2.12-3.24)",
                "the smallest paper factor, 2.12 (Mistral scrambled), less the ratio tolerance "
                "0.10; passed by each factor's paired bootstrap CI",
            ),
            "nearly_equal": Threshold(
                0.0496 / 0.0370 + 0.10,
                "identity-RoPE and scrambled-RoPE produce nearly identical ratios in every model (Table 6)",
                "the paper's own widest pair (Qwen 0.0496/0.0370, 1.34x) plus the ratio tolerance 0.10: 1.44x",
            ),
        },
        plots={
            # drawn as the ratios the criteria judge: figure -> (label, threshold, held side: below / above it or
            # within a factor of it, the figures whose paper values give the paper's ratio where it records none)
            "ablation_bars": PlotSpec(
                "each ablation's mean ΔR² over causal, against its criterion",
                {
                    "ratios": {
                        "bidirectional_over_causal": ("bidirectional\n/ causal", "bi_at_most", "below", None),
                        "identity_over_causal": (
                            "identity-RoPE\n/ causal",
                            "rise_at_least",
                            "above",
                            ("mean_delta_identity_rope", "mean_delta_causal"),
                        ),
                        "scrambled_over_causal": (
                            "scrambled-RoPE\n/ causal",
                            "rise_at_least",
                            "above",
                            ("mean_delta_scrambled_rope", "mean_delta_causal"),
                        ),
                        "identity_over_scrambled": (
                            "identity-RoPE\n/ scrambled-RoPE",
                            "nearly_equal",
                            "within",
                            ("mean_delta_identity_rope", "mean_delta_scrambled_rope"),
                        ),
                    }
                },
                draw="s5_4_ablations_plots.ablation_ratios",
            ),
        },
    ),
)
