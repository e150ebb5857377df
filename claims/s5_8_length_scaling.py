"""The declarations of T10: §5.8 Length scaling (T10).

Read by harness/spec/catalogue.py; the tests are in test_s5_8_length_scaling.py.
"""

from __future__ import annotations

from harness.spec.applies import deep_enough
from harness.spec.claims import ClaimSpec, ClaimTest, FigureSpec, PlotSpec
from harness.spec.paper_values import Threshold

FIRST_FOUR_LAYERS = deep_enough(4, "the design reads heads 0-3 of layers 0-3")  # = stats.length_design.FIRST

CLAIMS = (
    ClaimSpec(
        "T10",
        "§5.8",
        "mean ΔR² decays with length; piecewise (flat, then power) beats one power law by AIC",
        {
            "test_T10_leakage_decays_with_length_piecewise": ClaimTest(
                FIRST_FOUR_LAYERS,
                "mean ΔR² (post-softmax weights, heads 0–3 of layers 0–3, stratified pairs) decays with length, the "
                "piecewise breakpoint is interior, and ΔAIC (power − piecewise) > {aic_margin}",
                "delta_aic_power_minus_piecewise",
                "§5.8: piecewise preferred (margin lost in extraction)",
            )
        },
        "`scaling.compare_aic`, `length_design.length_stratified_pairs`",
        figures=(
            FigureSpec("lengths", "length_scaling.x"),
            FigureSpec("delta_r2_by_length", "length_scaling"),
            FigureSpec("power_law_prediction", "length_scaling.fit"),
            FigureSpec("piecewise_prediction", "length_scaling.fit"),
            FigureSpec("power_law_exponent"),
            FigureSpec("piecewise_breakpoint"),
            FigureSpec("interior_breakpoint", "length_scaling.interior"),
            FigureSpec(
                "delta_aic_power_minus_piecewise",
                "length_scaling.aic",
                words="power law's AIC − piecewise law's (AIC points)",
            ),
            FigureSpec("delta_r2_by_length_all_heads"),  # variant, not judged: every head of layers 0–3
            FigureSpec("delta_r2_by_length_logits"),  # variant, not judged: pre-softmax logits, same pairs and heads
        ),
        plots={
            "length_scaling": PlotSpec(
                "mean ΔR² vs sequence length (log-log) with power-law and piecewise fits",
                draw="s5_8_length_scaling_plots.length_scaling",
            )
        },
        thresholds={
            "aic_margin": Threshold(
                2.0,
                "A piecewise model that is flat below and decays as above is preferred over "
                "a single power law by AIC by .",
                "ΔAIC > 2, the usual evidence threshold (the margin was lost in extraction)",
            )
        },
        glossary={
            "AIC, ΔAIC": "Akaike information criterion; ΔAIC = AIC(power law) − AIC(piecewise), > 2 favours the piecewise"
        },
    ),
)
