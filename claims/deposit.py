"""The declarations of DP1, DP2: the related paper's single-head deposit pattern, on real models.

"Deconstructing Positional Information: From Attention Logits to Training Biases" (Gu et al., ICLR 2026; arXiv
2505.13027) finds on 6-layer models trained on synthetic tasks that zeroing one first-layer head of a RoPE model
drops a position-sensitive task's accuracy by about 60% while zeroing any other head barely matters, and that the
pattern does not appear on a position-agnostic task. On a real model the position-sensitive task is copying (a
random token sequence written twice: the next token is the one a fixed distance back), read by accuracy as the paper
reads its Task 1; a deposit is a large effect of one head (its own effect above a floor, its share of the layer above
what "the others negligible" allows at the layer's head count). The tests are in test_deposit.py.
"""

from __future__ import annotations

from harness.spec.applies import EVERY_MODEL
from harness.spec.claims import ClaimSpec, ClaimTest, FigureSpec, PlotSpec
from harness.spec.paper_values import Threshold

PAPER = "Gu et al. 2026 (related)"
SENTENCE = (
    "removing a single attention head in the first layer of a RoPE model causes accuracy on Task 1 to drop by "
    "approximately 60%, while removing other heads has negligible effect. This pattern only emerges in the "
    "combination of 'RoPE + position-sensitive task' [...] nor does RoPE on Task 2"
)

#: "approximately 60%" (a relative drop of the task's accuracy) as a large effect at any size: half of it. The 60%
#: itself is a paper value where the paper's own models are trained (DS2 at paper size).
LARGE_EFFECT = Threshold(
    0.3,
    SENTENCE,
    "a deposit is a large effect of one head: the largest head's own relative accuracy change, |1 − ablated / "
    "unablated|, above 0.3, half the paper's approximately 60% (a head moving the read-out by a third is still the "
    "single large effect the paper describes, one by a tenth is not); the 60% itself is judged as a paper value only "
    "on the paper's own models, at its size",
)
#: "removing other heads has negligible effect": each other head at most a fifteenth of the one
NEGLIGIBLE = Threshold(
    1 / 15,
    SENTENCE,
    "'negligible' read as each other head moving the read-out at most a fifteenth as much as the one (in the paper's "
    "16-head layer the 15 others together no more than it), so the one carries at least 1 / (1 + (H − 1)/15) of the "
    "layer's summed effects at H heads: 0.5 at 16, 0.536 at 14, 0.652 at 9, 0.833 at 4 (the uniform 1/H beside it)",
)

CLAIMS = (
    ClaimSpec(
        "DP1",
        "related: Gu et al. 2026, single-head deposit",
        "one first-layer head carries a position-sensitive task: zeroing it costs copying accuracy far more than "
        "zeroing any other",
        {
            "test_DP1_one_first_layer_head_carries_the_position_signal": ClaimTest(
                EVERY_MODEL,
                "copying (32 random tokens written twice; a prompt's accuracy the share of the second copy's next "
                "tokens predicted): each head of layer 0 zeroed alone (one query head's output before o_proj; with GQA "
                "its key and value heads stay, shared), its effect |1 − ablated / unablated| accuracy; the largest "
                "effect is above {effect} and its share of the layer's summed effects above 1 / (1 + (H − 1) × "
                "{others}) (95% prompt-bootstrap intervals); the leakage ΔR² map of layers 0–1 reported beside it "
                "(T11's yardstick), not judged",
                "deposit_share",
                "the related paper: one first-layer head, about 60% of the position-sensitive task's accuracy, others "
                "negligible (synthetic 6-layer models)",
            ),
        },
        "`harness.capture.copying.copy_accuracy` with `ZeroHeads` per head, `head_map.accuracy_map`, "
        "`head_map.judged`; beside it `leakage_view.Leakage.head_ablation_map`",
        figures=(
            FigureSpec("copy_accuracy_unablated", words="copying accuracy, unablated (share of predicted tokens)"),
            FigureSpec("copy_head_effects", words="relative change of copying accuracy, each layer-0 head zeroed"),
            FigureSpec("copy_head_effects_ci"),
            FigureSpec("deposit_head"),
            FigureSpec(
                "deposit_effect",
                words="the largest layer-0 head's relative change of copying accuracy (fraction)",
            ),
            FigureSpec(
                "deposit_share", words="the largest head's share of layer 0's effects on copying accuracy (share)"
            ),
            FigureSpec("single_head_share", words="the share one head carries with the others negligible (share)"),
            FigureSpec("uniform_share"),
            FigureSpec("deposit_gap_over_second", words="largest − second largest head effect in layer 0 (fraction)"),
            FigureSpec("second_head"),
            FigureSpec("deposit_head_sink_reading_rank"),
            FigureSpec("mean_delta_unablated"),
            FigureSpec("head_effects", "head_map"),
            FigureSpec("head_effects_ci", "head_map.ci"),
            FigureSpec("leakage_deposit_head", "head_map.marked"),
            FigureSpec(
                "leakage_deposit_share",
                words="the largest head's share of layer 0's ablation effects on leakage (share)",
            ),
            FigureSpec("layer1_deposit_share"),
        ),
        thresholds={"effect": LARGE_EFFECT, "others": NEGLIGIBLE},
        paper=PAPER,
        plots={
            "head_map": PlotSpec(
                "relative change of mean ΔR² when each head of layers 0–1 is zeroed (95% prompt-bootstrap interval "
                "under each value; the head marked carries layer 0's largest leakage effect)",
                shown_with={
                    "T11": "the per-head yardstick for T11's reductions: the same leakage (head-mean ΔR² at the "
                    "run's pairs) when one head alone is zeroed, the map's value being |reduction|"
                },
            )
        },
        glossary={
            "deposit head": "the head of a layer whose zeroing changes the read-out most (Gu et al. 2026); its share "
            "is its change over the layer's summed changes",
            "copying accuracy": "on prompts of random tokens written twice, the share of the second copy's next "
            "tokens the model predicts (top-1): a task read by a fixed relative distance",
        },
    ),
    ClaimSpec(
        "DP2",
        "related: Gu et al. 2026, single-head deposit",
        "the deposit is position-specific: zeroing the deposit head costs a position-agnostic task no more than "
        "zeroing another head (where DP1 finds a deposit)",
        {
            "test_DP2_the_deposit_head_does_not_carry_topic": ClaimTest(
                EVERY_MODEL,
                "where DP1 holds on the model (else not applicable: no deposit head to test), DP1's deposit head and a "
                "random other head of layer 0, each zeroed: the topic probe's per-prompt accuracy with the deposit "
                "head zeroed minus with the random head zeroed is above −{accuracy_margin} (Newcombe's paired 95% "
                "interval)",
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
