"""The declarations of T11, T12: §5.8 Targeted interventions (T11) and Appendix B, the rank-1 MLP ablation (T12).

Read by harness/spec/catalogue.py; the tests are in test_s5_8_targeted.py.
"""

from __future__ import annotations

from harness.spec.applies import EVERY_MODEL, deep_enough
from harness.spec.claims import ClaimSpec, ClaimTest, FigureSpec, PlotSpec
from harness.spec.paper_values import SMALL_SHARE_RTOL, Threshold

LAST_THREE_LAYERS = deep_enough(3, "the design ablates the last three layers")  # = T12's threshold "layers"

CLAIMS = (
    ClaimSpec(
        "T11",
        "§5.8",
        "targeted ablations reduce leakage less than a random-head control of equal size",
        {
            "test_T11_position_probe_ablation_reduces_less_than_random_heads": ClaimTest(
                EVERY_MODEL,
                "the random-head control reduces ΔR² (95% prompt-bootstrap CI of its mean reduction over ≥ {draws} draws "
                "above 0), and the CI of (mean random reduction − |rank-1 probe reduction|) lies above 0",
                ("random_minus_rank1", "reduction_rank1", "reduction_random_heads"),
                "§5.8: random control −17%, rank-1 projection −3%: a margin of +0.14",
            ),
            "test_T11_sink_head_ablation_reduces_less_than_random_heads": ClaimTest(
                EVERY_MODEL,
                "the random-head control reduces ΔR² (95% prompt-bootstrap CI of its mean reduction over ≥ {draws} draws "
                "above 0), and the CI of (mean random reduction − |top-decile sink-head reduction|) lies above 0",
                ("random_minus_sink_heads", "reduction_sink_heads", "reduction_random_heads"),
                "§5.8: random control −17%, top-decile sink heads −8%: a margin of +0.09",
            ),
        },
        "`directions.rank1_direction`, `edits.ProjectOutOfResidual`, `edits.ZeroHeads`",
        figures=(
            FigureSpec("ablation:baseline", "ablation_bars"),
            FigureSpec("ablation:rank-1 position probe", "ablation_bars"),
            FigureSpec("ablation:top-decile sink heads ({k})", "ablation_bars"),
            FigureSpec("ablation:random heads ({k}, {draws} draws)", "ablation_bars"),
            FigureSpec(
                "reduction_rank1",
                words="leakage reduction by the rank-1 ablation, 1 − ablated/unablated ΔR² (fraction)",
            ),
            FigureSpec(
                "reduction_sink_heads",
                words="leakage reduction by the sink-head ablation, 1 − ablated/unablated ΔR² (fraction)",
            ),
            FigureSpec(
                "reduction_random_heads",
                words="leakage reduction by random-head ablations, 1 − ablated/unablated ΔR² (fraction)",
            ),
            FigureSpec("reduction_random_heads_by_draw"),
            FigureSpec("random_minus_rank1", words="random-head reduction − |rank-1 reduction| (fraction of ΔR²)"),
            FigureSpec(
                "random_minus_sink_heads", words="random-head reduction − |sink-head reduction| (fraction of ΔR²)"
            ),
        ),
        thresholds={
            "draws": Threshold(
                10,
                "A random-head control of equal size drops it by 17%.",
                "the control is itself measured: at least 10 random draws",
            ),
            "ci": Threshold(
                0.95,
                "Both targeted interventions are mechanically substantive and produce smaller "
                "effects than a random ablation of the same size.",
                "direction, paired: the random control must reduce ΔR² (95% prompt-bootstrap CI of its mean "
                "reduction above 0), and for each targeted ablation the 95% prompt-bootstrap CI of (mean random "
                "reduction − |targeted reduction|) must lie above 0; every condition on the same prompt "
                "resamples, the random draws resampled inside each prompt resample",
            ),
        },
        plots={
            # drawn as the reductions of mean ΔR² (1 − ablated / unablated) by label, the margins the criterion
            # judges, the random control's mean and its draws, and the paper's values of each (§5.8, Table 10: the
            # reductions vs base; the margins, random minus targeted)
            "ablation_bars": PlotSpec(
                "reduction of mean ΔR² by targeted vs random-head ablations, against the criterion",
                {
                    "reductions": {
                        "reduction_rank1": "rank-1 probe\nprojected out",
                        "reduction_sink_heads": "top-decile\nsink heads",
                        "reduction_random_heads": "random heads\n(mean of draws)",
                    },
                    "margins": {
                        "random_minus_rank1": "rank-1 probe",
                        "random_minus_sink_heads": "top-decile sink heads",
                    },
                    "random": "reduction_random_heads",
                    "draws": "reduction_random_heads_by_draw",
                    "paper": {
                        "reduction_rank1": 0.03,
                        "reduction_sink_heads": 0.08,
                        "reduction_random_heads": 0.17,
                        "random_minus_rank1": 0.17 - 0.03,
                        "random_minus_sink_heads": 0.17 - 0.08,
                    },
                    "paper_source": "§5.8, Table 10",
                },
                draw="s5_8_targeted_plots.reductions",
            ),
        },
    ),
    ClaimSpec(
        "T12",
        "App. B",
        "rank-1 MLP ablation removes MLP output norm without lowering topic-probe accuracy",
        {
            "test_T12_rank1_mlp_ablation_removes_norm_not_topic": ClaimTest(
                LAST_THREE_LAYERS,
                "at each of the last {layers} layers, the rank-1 MLP ablation removes > {min_norm_removed:.4g} of the MLP "
                "output norm (1 − ‖Y⊥‖/‖Y‖, a prompt-bootstrap interval), and the paired per-prompt topic-accuracy "
                "change lies above −{accuracy_drop} (Newcombe's paired interval); each interval at 1 − 0.05/3 for "
                "the three layers",
                "fraction_norm_removed_by_layer",
                "App. B: 0.17–0.80 per layer",
            )
        },
        "`directions.dominant_direction`, `directions.fraction_norm_removed`, `edits.Rank1MLPAblation`",
        figures=(
            FigureSpec(
                "fraction_norm_removed_by_layer",
                "norm_removed",
                words="share of the MLP output norm at the last position removed, per layer (share)",
            ),
            FigureSpec("ablated_layers", "norm_removed.x"),
            FigureSpec("chance", "norm_removed.chance"),
            FigureSpec("topic_accuracy_before", "norm_removed.before"),
            FigureSpec("topic_accuracy_after_by_ablated_layer", "norm_removed.after"),
            FigureSpec("fraction_norm_removed_by_layer_mean"),
            FigureSpec("fraction_norm_removed_by_layer_energy"),
            FigureSpec("topic_accuracy_change_by_ablated_layer", "norm_removed.change"),
            FigureSpec("topic_accuracy_loss_mcnemar_p_by_ablated_layer"),
        ),
        thresholds={
            "layers": Threshold(
                3,
                "Appendix B Rank-1 MLP ablation: per-layer values (the last three layers of each model)",
                "the model's last three layers, each ablated on its own",
            ),
            "min_norm_removed": Threshold(
                0.17 * (1 - SMALL_SHARE_RTOL),
                "The rank- MLP ablation at removes up to of the MLP output norm at the "
                "target but does not reduce topic-probe accuracy (App. B 'Frac MLP norm removed': 0.17-0.80)",
                "a share, so the suite-wide rule for shares: App. B's smallest per-layer value, 0.17, less its "
                "small-share tolerance (a third of it below 0.3: 0.113), passed by each of the three layers' "
                "prompt-bootstrap intervals, on the norm reading 1 - ||Y_perp||_F / ||Y||_F (the "
                "text says 'norm'; the energy share is always larger, the per-prompt mean reading either side; both "
                "reported beside it)",
            ),
            "accuracy_drop": Threshold(
                0.10,
                "does not reduce topic-probe accuracy in any of the nine layers tested",
                "an equivalence, not a failure to reject: the paired per-prompt accuracy change (out-of-fold "
                "correctness after - before, the same folds) has its interval (Newcombe's hybrid score interval for "
                "paired proportions; the exact McNemar p is reported beside it) above -0.10, the suite's "
                "absolute tolerance for a proportion; each layer's interval at 1 - 0.05/3 (Bonferroni over the "
                "three layers, so a drop on any one of them is not found by chance three times as often)",
            ),
        },
        plots={
            "norm_removed": PlotSpec(
                "rank-1 MLP ablation: the MLP output norm removed and the topic-accuracy change, each against its "
                "criterion",
                {
                    "floor": "min_norm_removed",
                    "accuracy_drop": "accuracy_drop",
                    "intervals": "1 − 0.05/3 intervals over prompts",
                },
                draw="s5_8_targeted_plots.norm_removed",
            )
        },
    ),
)
