"""The declarations of DP1, DP2: the related paper's single-head deposit pattern, on real models.

"Deconstructing Positional Information: From Attention Logits to Training Biases" (Gu et al., ICLR 2026; arXiv
2505.13027) finds on 6-layer models trained on synthetic tasks that zeroing one first-layer head of a RoPE model
drops a position-sensitive task's accuracy by about 60% while zeroing any other head barely matters, and that the
pattern does not appear on a position-agnostic task. Its numbers belong to those synthetic models: they are not
applied to real ones. The tests are in test_deposit.py.
"""

from __future__ import annotations

from harness.spec.applies import EVERY_MODEL
from harness.spec.claims import ClaimSpec, ClaimTest, FigureSpec, PlotSpec, Threshold

PAPER = "Gu et al. 2026 (related)"
SENTENCE = (
    "removing a single attention head in the first layer of a RoPE model causes accuracy on Task 1 to drop by "
    "approximately 60%, while removing other heads has negligible effect. This pattern only emerges in the "
    "combination of 'RoPE + position-sensitive task' [...] nor does RoPE on Task 2"
)

CLAIMS = (
    ClaimSpec(
        "DP1",
        "related: Gu et al. 2026, single-head deposit",
        "one first-layer head carries the position signal: zeroing it changes leakage far more than any other",
        {
            "test_DP1_one_first_layer_head_carries_the_position_signal": ClaimTest(
                EVERY_MODEL,
                "zeroing each head of layer 0 in turn (one query head's output before o_proj; with GQA its key and "
                "value heads stay, shared): the largest relative change of mean ΔR², |1 − ablated / unablated|, is "
                "at least {share} of the layer's summed changes and above the second largest (paired 95% "
                "prompt-bootstrap intervals); layer 1 mapped, not judged; the paper's 60% belongs to its synthetic "
                "models and is not applied",
                "deposit_share",
                "the related paper: one first-layer head, about 60% of the task accuracy, others negligible "
                "(synthetic 6-layer models)",
            ),
        },
        "`ZeroHeads` per head, `leakage_view.Leakage.mean_delta` / `mean_delta_boot`, `head_map.deposit`",
        figures=(
            FigureSpec("mean_delta_unablated"),
            FigureSpec("head_effects", "head_map"),
            FigureSpec("head_effects_ci", "head_map.ci"),
            FigureSpec("deposit_head", "head_map.marked"),
            FigureSpec(
                "deposit_share", words="the largest head's share of layer 0's ablation effects on leakage (share)"
            ),
            FigureSpec("deposit_gap_over_second", words="largest − second largest head effect in layer 0 (fraction)"),
            FigureSpec("second_head"),
            FigureSpec("deposit_head_sink_reading_rank"),
            FigureSpec("layer1_deposit_share"),
        ),
        thresholds={
            "share": Threshold(
                0.5,
                SENTENCE,
                "'negligible' read as: the layer's other heads together move the read-out no more than the one "
                "(with 15 other heads in the paper's 16-head layer, each at most a fifteenth of it), so the one "
                "carries at least half of the layer's summed effect; judged on layer 0, the paper's first layer",
            ),
        },
        paper=PAPER,
        plots={
            "head_map": PlotSpec(
                "relative change of mean ΔR² when each head of layers 0–1 is zeroed (95% prompt-bootstrap interval "
                "under each value)",
                shown_with={
                    "T11": "the per-head yardstick for T11's reductions: the same leakage (head-mean ΔR² at the "
                    "run's pairs) when one head alone is zeroed, the map's value being |reduction|"
                },
            )
        },
        glossary={
            "deposit head": "the head of a layer whose zeroing changes the read-out most (Gu et al. 2026); its share "
            "is its change over the layer's summed changes"
        },
    ),
    ClaimSpec(
        "DP2",
        "related: Gu et al. 2026, single-head deposit",
        "the deposit is position-specific: zeroing the deposit head costs a position-agnostic task no more than "
        "zeroing another head",
        {
            "test_DP2_the_deposit_head_does_not_carry_topic": ClaimTest(
                EVERY_MODEL,
                "DP1's largest-effect head of layer 0 and a random other head of layer 0, each zeroed: the topic "
                "probe's per-prompt accuracy with the deposit head zeroed minus with the random head zeroed is above "
                "−{accuracy_margin} (Newcombe's paired 95% interval)",
                "deposit_minus_random_topic_accuracy",
                "the related paper: no deposit on its position-agnostic Task 2 (synthetic models)",
            ),
        },
        "`ZeroHeads`, `ablation_effects.probe_correct`, `ablation_effects.paired_change_interval`",
        figures=(
            FigureSpec("topic_accuracy_unablated"),
            FigureSpec("topic_accuracy_deposit_head_zeroed"),
            FigureSpec("topic_accuracy_random_head_zeroed"),
            FigureSpec("random_control_head"),
            FigureSpec(
                "deposit_minus_random_topic_accuracy",
                words="topic accuracy, deposit head zeroed − a random head zeroed (share of prompts)",
            ),
        ),
        thresholds={
            "accuracy_margin": Threshold(
                0.10,
                SENTENCE,
                "'not on Task 2' as an equivalence: the deposit head's zeroing costs the topic probe at most 0.10 "
                "more accuracy than a random head's (the suite's absolute tolerance for a proportion, as T12's)",
            ),
        },
        paper=PAPER,
    ),
)
