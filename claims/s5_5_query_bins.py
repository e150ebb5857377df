"""The declarations of T7: §5.5 Refined per-query binning (Figure 1, Table 7, Appendix C).

Read by harness/spec/catalogue.py; the tests are in test_s5_5_query_bins.py.
"""

from __future__ import annotations

from harness.spec.applies import EVERY_MODEL
from harness.spec.claims import ClaimSpec, ClaimTest, FigureSpec, PlotSpec, PromptDraw
from harness.spec.models import LLAMA_3B, MISTRAL, QWEN
from harness.spec.paper_values import SMALL_SHARE_RTOL, Threshold, magnitude, share

#: the seven doubling query bins from [0, 8) end at 512 tokens (the threshold "seq_len" says why)
QUERY_BINS_LEN = 512

CLAIMS = (
    ClaimSpec(
        "T7",
        "§5.5 Fig. 1, Table 7, App. C",
        "leakage concentrates in the first query bin, where bidirectional ≪ causal; curves meet later",
        {
            "test_T7_leakage_concentrates_in_first_query_bin": ClaimTest(
                EVERY_MODEL,
                "the first query bin is the largest (the paired 95% CI of its lead over the largest later bin above 0) "
                "and holds ≥ {first_bin_share} of the summed causal profile",
                "first_bin_share_of_causal_profile",
                "Table 7: 0.66–0.68",
                paper_values=(),  # its first bin's paper value is T7b's (each figure judged once)
            ),
            "test_T7_bidirectional_far_below_causal_in_first_bin": ClaimTest(
                EVERY_MODEL,
                "first bin: paired 95% CI of causal − bidirectional above 0, and causal-mask share ≥ {causal_mask_share}",
                "first_bin_causal_mask_share",
            ),
            "test_T7_curves_meet_at_later_bins": ClaimTest(
                EVERY_MODEL,
                "equivalence: from the third bin ([16, 32)) on, the paired 95% CI of each bin's gap over the first bin's "
                "gap lies inside ±{meet_gap}; shown: the bins not shown to meet",
                ("later_bins_apart", "last_bin_gap_over_first_bin_gap"),
                "Table 7: later gaps ≤ 0.108 of the first bin's (Qwen: 0.022 of 0.204)",
            ),
        },
        "`leakage_view.Leakage.bin_profile`, `pairs.query_bins`, `leakage.causal_mask_share`",
        figures=(
            FigureSpec("bin_edges", "bin_profile.x"),
            FigureSpec("delta_r2_by_bin_causal", "bin_profile", paper_from="first_bin_causal"),
            FigureSpec("delta_r2_by_bin_bidirectional", "bin_profile", paper_from="first_bin_bidirectional"),
            FigureSpec(
                "first_bin_causal",
                paper={LLAMA_3B: magnitude(0.296), QWEN: magnitude(0.254), MISTRAL: magnitude(0.313)},
            ),
            FigureSpec(
                "first_bin_bidirectional",
                paper={LLAMA_3B: magnitude(0.114), QWEN: magnitude(0.050), MISTRAL: magnitude(0.161)},
            ),
            FigureSpec(
                "first_bin_causal_mask_share",
                paper={LLAMA_3B: share(0.61), QWEN: share(0.80), MISTRAL: share(0.49)},
                words="causal mask's share of the first bin's leakage (share)",
            ),
            FigureSpec("first_bin_over_second"),
            FigureSpec(
                "first_bin_share_of_causal_profile", words="first query bin's share of the causal leakage (share)"
            ),
            FigureSpec("first_bin_gap_ci"),
            FigureSpec("gap_by_bin", "bin_profile.gap"),
            FigureSpec("last_bin_gap_over_first_bin_gap", words="last-bin gap ÷ first-bin gap (ratio)"),
            FigureSpec("later_bins_apart", words="later bins where the curves are apart (bins)"),
            FigureSpec("gap_over_first_bin_gap_by_bin"),
        ),
        plots={
            "bin_profile": PlotSpec(
                "per-query-bin ΔR², causal vs bidirectional, paper's first bin marked",
                draw="s5_5_query_bins_plots.bin_profile",
            )
        },
        thresholds={
            "seq_len": Threshold(
                QUERY_BINS_LEN,
                "We aggregate contributions into seven bins of the query position",
                "seven doubling bins from [0, 8) end at 512: T7 runs on 512-token prompts (the run's "
                "--seq-len if longer)",
            ),
            "first_bin_share": Threshold(
                0.56,
                "At the first bin, where leakage is overwhelmingly concentrated",
                "Table 7: the first bin holds 0.66-0.68 of the summed causal profile in every "
                "model; the smallest, 0.66, less the share tolerance 0.10 (and it is the largest bin)",
            ),
            "causal_mask_share": Threshold(
                0.39,
                "the bidirectional value is substantially smaller than the baseline in every "
                "architecture [...] The causal-mask share at this bin is 80% / 61% / 49%",
                "the smallest paper share, 0.49, less the share tolerance 0.10; and the paired "
                "95% CI of causal - bidirectional excludes 0 above",
            ),
            "meet_from_bin": Threshold(
                3,
                "The gap closes by [bin] in all three architectures and the two curves become "
                "indistinguishable beyond [bin]",
                "the bins are lost; Table 7's gaps are at most 0.022 from the third bin on (Llama and "
                "Mistral from the second): every bin from the third on",
            ),
            "meet_gap": Threshold(
                round(0.022 / 0.204 * (1 + SMALL_SHARE_RTOL), 3),
                "the two curves are statistically indistinguishable within their bootstrap "
                "confidence intervals over that range.",
                "equivalence: a bin meets when the paired 95% prompt-bootstrap CI of its gap over the first "
                "bin's gap lies inside ±0.144: Table 7's largest gap from the third bin on is Qwen's 0.022 of "
                "0.204 (0.108; Qwen's curves never cross), plus the small-share tolerance (a third of it, as "
                "0.10 on a share below 0.3 would accept 2x). A CI that merely includes 0 is not read as "
                "equality (its power falls with fewer prompts)",
            ),
        },
        draws=(
            PromptDraw(
                "query bins at 512 tokens or --seq-len", lambda seq_len, spec: max(seq_len, QUERY_BINS_LEN), pairs=True
            ),
        ),
        glossary={
            "causal-mask share": "1 − ΔR²(bidirectional) / ΔR²(causal): the part of leakage the causal mask carries"
        },
    ),
)
