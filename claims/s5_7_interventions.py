"""The declarations of T9c: §5.7 (Table 9) Position-0 interventions under bidirectional attention.

Read by harness/spec/catalogue.py; the tests are in test_s5_7_interventions.py.
"""

from __future__ import annotations

from harness.spec.applies import ADDS_BOS
from harness.spec.claims import ClaimSpec, ClaimTest, FigureSpec, PlotSpec
from harness.spec.models import LLAMA_3B
from harness.spec.paper_values import Threshold, magnitude

CLAIMS = (
    ClaimSpec(
        "T9c",
        "§5.7 Table 9",
        "replacing BOS embedding / position-0 state shifts first-bin bidirectional ΔR² as reported",
        {
            "test_T9c_replacing_bos_embedding_removes_residual_leakage": ClaimTest(
                ADDS_BOS,
                "replacing the BOS embedding: paired CI of first-bin ΔR² minus bidirectional below 0, and "
                "≤ {percent[bi+replace-embedding][1]}% of bidirectional",
                "percent_of_bidirectional:bi+replace-embedding",
                "Table 9: 60% (Llama-3.2-3B)",
                paper_values=("first_bin:bidirectional", "first_bin:bi+replace-embedding"),  # each first bin once
            ),
            "test_T9c_replacing_position0_at_most_leaky_layer_reduces_it": ClaimTest(
                ADDS_BOS,
                "replacing position 0 at L*: paired CI below 0, and ≤ {percent[bi+replace-Lstar][1]}% of bidirectional",
                "percent_of_bidirectional:bi+replace-Lstar",
                "Table 9: 78% (Llama-3.2-3B)",
                paper_values=("first_bin:bi+replace-Lstar",),
            ),
            "test_T9c_replacing_position0_at_every_layer_raises_it": ClaimTest(
                ADDS_BOS,
                "replacing position 0 at every layer: paired CI above 0, and ≥ {percent[bi+replace-all][1]}% of "
                "bidirectional",
                "percent_of_bidirectional:bi+replace-all",
                "Table 9: 128% (Llama-3.2-3B)",
                paper_values=("first_bin:bi+replace-all",),
            ),
        },
        "`edits.ReplaceEmbedding`, `edits.ReplaceStateWithMidMean`",
        figures=(
            FigureSpec("first_bin:bidirectional", "ablation_bars", {LLAMA_3B: magnitude(0.115)}),
            FigureSpec("first_bin:bi+replace-embedding", "ablation_bars", {LLAMA_3B: magnitude(0.068)}),
            FigureSpec("first_bin:bi+replace-Lstar", "ablation_bars", {LLAMA_3B: magnitude(0.089)}),
            FigureSpec("first_bin:bi+replace-all", "ablation_bars", {LLAMA_3B: magnitude(0.147)}),
            FigureSpec(
                "percent_of_bidirectional:{condition}", words="leakage after the replacement, % of bidirectional (%)"
            ),
            FigureSpec(
                "difference_from_bidirectional:{condition}",
                words="leakage after the replacement − bidirectional (ΔR²)",
            ),
            FigureSpec("most_leaky_layer"),
            FigureSpec("replacement_token"),
        ),
        thresholds={
            "ci": Threshold(
                0.95,
                "bi-replace-embedding [...] 0.068 (a 40% reduction) [...] bi-replace-Lstar 0.089 "
                "[...] bi-replace-all 0.147 (Table 9)",
                "direction: the paired 95% bootstrap CI (the same prompt resamples for both "
                "conditions) of condition minus bidirectional excludes 0 in the stated direction",
            ),
            "percent": Threshold(
                {"bi+replace-embedding": ("<=", 70), "bi+replace-Lstar": ("<=", 88), "bi+replace-all": (">=", 118)},
                "Replacing the BOS embedding alone reduces the residual-stream component at early "
                "queries by 40% (Table 9: 60%, 78%, 128% of bidirectional)",
                "magnitude: percent of bidirectional on the paper's side of its value widened by the "
                "ratio tolerance 0.10 (60+10, 78+10, 128-10)",
            ),
        },
        plots={"ablation_bars": PlotSpec("first-bin bidirectional ΔR² after replacing the position-0 state")},
        glossary={"L*": "the most leaky layer (largest mean ΔR²), where T9c replaces the position-0 state"},
    ),
)
