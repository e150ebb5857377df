"""The declarations of T13: §5.9 Scale: composition shifts, magnitude is preserved (T13, Table 11).

Read by harness/spec/catalogue.py; the tests are in test_s5_9_scale.py.
"""

from __future__ import annotations

from harness.spec.applies import LADDER
from harness.spec.claims import AcrossRuns, ClaimSpec, ClaimTest, FigureSpec
from harness.spec.decision import Judgement
from harness.spec.paper_values import Threshold


def judge_ladder(sizes, base, bi, base_rows=None, bi_rows=None, n: int = 0) -> Judgement:
    """T13 on one family's ladder, smallest size first: each size's head-mean ΔR², causal (``base``) and bidirectional
    (``bi``), with their paired prompt-bootstrap rows over ``n`` prompts where measured. Its figures and its three
    criteria (``stats.scaling.composition_checks``: constant, rises, saturates), each by the one decision rule. T13's
    test calls it on the sizes it measured; a merge of runs that measured the sizes apart calls it (``AcrossRuns``) on
    each size's T6 figures: one judgement, so the two cannot drift."""
    import numpy as np  # deferred: the catalogue loads without the statistics

    from harness.stats.scaling import composition_checks, composition_intervals

    share, stats = composition_intervals(base, bi, base_rows, bi_rows, n)
    _, checks = composition_checks(base, bi, CLAIMS[0].threshold("constant"), base_rows, bi_rows, n)
    figures = (
        ("models", list(sizes), None),
        ("mean_delta_causal_by_size", np.asarray(base, dtype=float), None),
        ("residual_stream_share_by_size", share, None),
        *((f"leakage_{k}" if k == "spread" else f"share_{k}", v, ci) for k, (v, ci) in stats.items()),
    )
    return Judgement(figures, tuple(checks))


CLAIMS = (
    ClaimSpec(
        "T13",
        "§5.9 Table 11",
        "total leakage ~constant across Llama sizes; residual-stream share rises 1B→3B, then saturates",
        {
            "test_T13_leakage_constant_and_residual_share_rises_with_scale": ClaimTest(
                LADDER,
                "paired 95% prompt-bootstrap CIs: the largest deviation of a size's mean ΔR² from the family mean within "
                "{constant:.0%} (equivalence); the rise of the residual-stream share from the smallest size above 0; "
                "then its saturation margin above 0",
                ("leakage_spread", "share_rise", "mean_delta_causal_by_size"),
                "§5.9: 0.0121–0.0143 (within 9% of the mean); share 18% → 35% (a rise of +0.17), then 36%",
            )
        },
        "as T6; skipped for a family with fewer than two sizes present (every bundled family has one)",
        figures=(
            FigureSpec("models"),
            FigureSpec("mean_delta_causal_by_size", words="causal leakage per size (ΔR²)"),
            FigureSpec("residual_stream_share_by_size"),
            FigureSpec("leakage_spread", words="spread of the causal leakage across sizes (ΔR²)"),
            FigureSpec("share_rise", words="rise of the residual share across sizes (share)"),
            FigureSpec("share_saturation"),
        ),
        thresholds={
            "constant": Threshold(
                0.25,
                "In the Llama family the total leakage magnitude is approximately constant across model sizes",
                "equivalence at the magnitude tolerance rtol 0.25: the 95% CI upper end of max over sizes of "
                "|mean ΔR² / family mean - 1| at most 0.25 (paper: 0.0121-0.0143, within 9%)",
            )
        },
        across_runs=AcrossRuns(
            test="test_T13_leakage_constant_and_residual_share_rises_with_scale",
            source="test_T6_bidirectional_attention_reduces_leakage",  # the same Leakage, causal and bidirectional
            figures=("mean_delta_causal", "mean_delta_bidirectional"),
            judge=judge_ladder,
            rows=("bootstrap_rows:causal", "bootstrap_rows:bidirectional"),  # T6 keeps them on paper models
            prompts="bootstrap_prompts",
        ),
    ),
)
