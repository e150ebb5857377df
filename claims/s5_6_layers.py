"""The declarations of T8: §5.6 Layer-wise depth profiles distinguish the three architectures (Table 8).

Read by harness/spec/catalogue.py; the tests are in test_s5_6_layers.py.
"""

from __future__ import annotations

from harness.spec.applies import FLAT, RISING, WINDOW_PAST, length_past_window
from harness.spec.claims import ClaimSpec, ClaimTest, FigureSpec, PlotSpec, PromptDraw
from harness.spec.models import LLAMA_3B, MISTRAL, QWEN, ModelSpec
from harness.spec.paper_values import SMALL_SHARE_RTOL, Threshold, share


def past_window(seq_len: int, spec: ModelSpec | None) -> int | None:
    """The window variant's prompts: the shortest stratified length past a model's sliding window (none without)."""
    return length_past_window(spec.sliding_window, seq_len) if spec is not None and spec.sliding_window else None


CLAIMS = (
    ClaimSpec(
        "T8",
        "§5.6 Table 8",
        "layer-wise ratio ΔR²(bi)/ΔR²(causal): Qwen low/flat, Llama mid/flat, Mistral grows with depth",
        {
            "test_T8_layer_ratio_is_flat_with_depth": ClaimTest(
                FLAT,
                "95% CI of the change of the layer ratio r_l over the depth inside ±{flat}, and inside ±{flat_relative:.3g} "
                "of the mean r_l where that is below 0.3 (judged as the change over min(mean r_l, 0.3) inside "
                "±{flat_relative:.3g}, on its paired interval)",
                ("depth_slope", "depth_slope_relative"),
                "Table 8: flat (Llama mean 0.62, Qwen 0.21)",
            ),
            "test_T8_sliding_window_ratio_rises_with_depth": ClaimTest(
                RISING,
                "95% CI of the change of the layer ratio r_l over the depth above 0",
                "depth_slope",
                "Mistral: r_l rises with depth (values lost in extraction)",
            ),
            "test_T8_sliding_window_ratio_rises_with_depth_past_the_window": ClaimTest(
                WINDOW_PAST,
                "past the sliding window: 95% CI of the change of r_l over the depth above 0",
                "depth_slope",
                "Mistral: r_l rises with depth (values lost in extraction)",
            ),
        },
        "`leakage_view.Leakage.layer_means`, `leakage_view.depth_slope`",
        figures=(
            FigureSpec("layer_ratio", "layer_ratio", paper_from="mean_layer_ratio"),
            FigureSpec("mean_layer_ratio", paper={LLAMA_3B: share(0.62), QWEN: share(0.21), MISTRAL: share(0.66)}),
            FigureSpec("depth_slope", words="change of the layer ratio r_l over depth (slope)"),
            FigureSpec("flat_bound"),
            FigureSpec("depth_slope_relative", words="change of r_l over depth ÷ min(mean r_l, 0.3) (ratio)"),
            FigureSpec("seq_len"),
        ),
        plots={
            "layer_ratio": PlotSpec(
                "layer-wise ratio ΔR²(bidirectional)/ΔR²(causal) by relative depth",
                draw="s5_6_layers_plots.layer_ratio",
            )
        },
        thresholds={
            "flat": Threshold(
                0.10,
                "In Llama-3.2-3B [...] (mean 0.62), with no strong depth trend [...] In Qwen, r_l stays "
                "between and across all layers (mean 0.21) (Table 8: flat across 36 / 28 layers)",
                "the bounds are lost: 'flat' as an equivalence at the ratio tolerance, the 95% bootstrap CI "
                "of the change of r_l over the whole depth (the slope per unit relative depth) inside "
                "+-0.10. The paper predicts flat for Llama and Qwen; a model whose sliding window does not "
                "bind at the run's length (Gemma-3 at 128 tokens) is judged flat too: our extension",
            ),
            "flat_relative": Threshold(
                SMALL_SHARE_RTOL,
                "Qwen: low/flat (mean 0.21, Table 8); Llama: mid/flat (mean 0.62)",
                "where the mean r_l is below 0.3 an absolute ±0.10 accepts a change larger than the ratio itself (the "
                "1.5B: mean 0.075, a fall of 0.098 = 131% of it read inconclusive): the band is relative there, ±⅓ "
                "of the mean r_l, the suite's small-share tolerance (the two meet at 0.3, as for every share); judged "
                "as the change over min(mean r_l, 0.3) inside ±⅓ on its paired bootstrap interval (declared "
                "2026-11-29, fidelity-4)",
            ),
            "rises": Threshold(
                0.95,
                "Mistral’s sliding-window attention does not suppress the residual-stream component; "
                "rises from about at layer to about at layer .",
                "a direction claim: the 95% bootstrap CI of the depth slope excludes 0 above",
            ),
        },
        draws=(PromptDraw("prompts past the sliding window", past_window),),
        glossary={"r_l": "the layer-wise ratio ΔR²(bidirectional) / ΔR²(causal) at layer l (T8)"},
    ),
)
