"""What each claim test's verdict checks, in words, for the report's lead table: the criterion with its thresholds
(read from the claim registry, never restated), the headline figure shown as measured ± 95% CI, and the paper's
number where the registry has none per paper model for that figure (a band, a table, or "lost in extraction").

``tests/test_claim_registry.py`` checks that every claim test has one and that each headline figure is declared.
"""

from __future__ import annotations

from dataclasses import dataclass
from string import Formatter

from harness.spec.claims import CLAIMS, claim
from harness.spec.models import REGISTRY


@dataclass(frozen=True)
class Criterion:
    text: str  # what "held" means; {fields} are the claim's thresholds (claim_registry.ClaimSpec.thresholds)
    figure: str | tuple | None  # the headline figure(s) the verdict is decided on (None: a property test)
    paper: str = ""  # the paper's number in words, where the registry keeps none per paper model for the figure
    column: int | None = None  # a figure of rows ([layer, position, sink, accuracy], ...): the column to show

    @property
    def headline(self) -> tuple[str, ...]:
        return () if self.figure is None else (self.figure,) if isinstance(self.figure, str) else tuple(self.figure)

    def words(self, claim_id: str) -> str:
        """The criterion with the claim's thresholds filled in."""
        values = {k: t.value for k, t in claim(claim_id).thresholds.items()}
        return Formatter().vformat(self.text, (), values)


C = Criterion
CRITERIA = {
    "test_EQ2_rotated_dot_depends_only_on_offset": C(
        "RoPE-rotated q·k at two positions with the same offset agree within 1e-3·|q||k| (hypothesis draws)", None,
        "exact (Eq. 2)"),
    "test_EQ3_causal_denominator_makes_weights_depend_on_query_position": C(
        "causal row i has i+1 nonzero weights (bidirectional: n), and the weight at each offset 0–9 strictly "
        "decreases with i", None, "Eq. 3, 6"),
    "test_EQ3_model_attention_applies_causal_mask_and_bidirectional_removes_it": C(
        "the model's own attention is causal at every layer, and the bidirectional edit removes the mask", None,
        "Eq. 3"),
    "test_EQ7_position0_is_a_function_of_token0_alone": C(
        "the position-0 state at every layer is the same (within 1e-5, relative) whatever follows token 0", None,
        "exact (Eq. 7)"),
    "test_T1_highest_sink_positions_are_at_chance": C(
        "none of the 3 highest-sink (layer, position) cells has a topic probe above chance (one-sided binomial, "
        "α 0.05); shown: their accuracies, and chance", ("top_sink_cells", "chance"),
        "Table 1: the highest sinks at or below chance", column=3),
    "test_T1_decodable_positions_have_sinks_orders_of_magnitude_smaller": C(
        "the 3 highest-content cells are above chance, and the smallest of the 3 highest sinks is ≥ "
        "{orders_smaller}× their largest sink", "sink_ratio_top_sink_over_top_content",
        "Table 1: 150–290× ('three orders of magnitude')"),
    "test_T2_moving_bos_moves_the_sink": C(
        "with BOS moved to position 8, the peak sink there is ≥ {saturated} and, at that layer, the strongest "
        "among positions ≥ 1",
        "sink_at_8_bos_moved"),
    "test_T2_uncommon_token_at_zero_suppresses_the_sink": C(
        "an uncommon token at 0 leaves at most {suppressed}× the default sink there", "random_over_default_sink_at_0",
        "'suppresses sink formation' (Table 2)"),
    "test_T2_without_bos_position0_is_a_saturated_default_sink": C(
        "without BOS, the peak sink at position 0 is ≥ {saturated}", "sink_at_0_no_bos"),
    "test_T3_top_sink_readers_are_consistent_across_prompts_with_bos": C(
        "95% CI of top- minus bottom-decile cosine consistency above 0", "cosine_gap_top_minus_bottom",
        "Table 3 'markedly higher' (values lost in extraction)"),
    "test_T3_without_bos_top_sink_readers_vary_with_the_token_at_zero": C(
        "paired 95% CI of top-decile consistency, natural token 0 minus one fixed token, below 0",
        "cosine_top_decile_varying_minus_fixed", "Qwen: 'input-varying output'"),
    "test_T4_sink_reader_output_carries_token0_identity": C(
        "some top sink-reading heads keep PC1 > {pc1_retain}, and every kept head beats its permutation null "
        "(BH q {q})", "retained_significant", "Table 4: PC1 ≥ 0.979; identity R² 0.605, 0.338, 0.347"),
    "test_T5_top30_heads_significant_after_fdr": C(
        "all {top} heads with the largest ΔR² survive BH-FDR at q {q} (prompt-level sign-flip test)",
        "top30_significant", "§5.3: all 30"),
    "test_T5_leakage_is_content_independent": C(
        "95% CI of ΔR² on random tokens / natural text inside [{similar[0]}, {similar[1]}]",
        "ratio_random_over_natural", "'the same magnitude' (numbers lost in extraction)"),
    "test_T6_bidirectional_attention_reduces_leakage": C(
        "bidirectional / causal mean ΔR² ≤ {bi_at_most}, and its paired 95% CI below 1",
        "bidirectional_over_causal"),
    "test_T6_rope_ablations_raise_leakage_alike": C(
        "identity- and scrambled-RoPE each raise mean ΔR² ≥ {rise_at_least}× causal, within {nearly_equal}× of "
        "each other", ("identity_over_causal", "scrambled_over_causal"), "Table 6: 2.12–3.24×"),
    "test_T7_leakage_concentrates_in_first_query_bin": C(
        "the first query bin is the largest and holds ≥ {first_bin_share} of the summed causal profile",
        "first_bin_share_of_causal_profile", "Table 7: 0.66–0.68"),
    "test_T7_bidirectional_far_below_causal_in_first_bin": C(
        "first bin: paired 95% CI of causal − bidirectional above 0, and causal-mask share ≥ {causal_mask_share}",
        "first_bin_causal_mask_share"),
    "test_T7_curves_meet_at_later_bins": C(
        "from the third bin ([16, 32)) on, each bin's paired gap CI includes 0 or its gap is ≤ {meet_gap} of the "
        "first bin's; shown: the bins still apart", ("later_bins_apart", "last_bin_gap_over_first_bin_gap"),
        "Table 7: later gaps ≤ 0.108 of the first bin's (Qwen: 0.022 of 0.204)"),
    "test_T8_layer_ratio_is_flat_with_depth": C(
        "95% CI of the change of the layer ratio r_l over the depth inside ±{flat}", "depth_slope",
        "Table 8: flat (Llama mean 0.62, Qwen 0.21)"),
    "test_T8_sliding_window_ratio_rises_with_depth": C(
        "95% CI of the change of the layer ratio r_l over the depth above 0", "depth_slope",
        "Mistral: r_l rises with depth (values lost in extraction)"),
    "test_T8_sliding_window_ratio_rises_with_depth_past_the_window": C(
        "past the sliding window: 95% CI of the change of r_l over the depth above 0", "depth_slope",
        "Mistral: r_l rises with depth (values lost in extraction)"),
    "test_T9a_position0_state_is_identical_across_prompts": C(
        "the position-0 state's cross-prompt std is exactly {exact} at every layer; position 1's is above 0",
        "max_std_position0", "App. A: bit-identical"),
    "test_T9b_position0_norm_exceeds_mid_sequence_tenfold": C(
        "the position-0 norm is > {norm_factor}× the mid-sequence norm at a majority of layers",
        ("layers_over_10x", "peak_ratio"),
        "App. A: more than an order of magnitude"),
    "test_T9c_replacing_bos_embedding_removes_residual_leakage": C(
        "replacing the BOS embedding: paired CI of first-bin ΔR² minus bidirectional below 0, and "
        "≤ {percent[bi+replace-embedding][1]}% of bidirectional", "percent_of_bidirectional:bi+replace-embedding",
        "Table 9: 60% (Llama-3.2-3B)"),
    "test_T9c_replacing_position0_at_most_leaky_layer_reduces_it": C(
        "replacing position 0 at L*: paired CI below 0, and ≤ {percent[bi+replace-Lstar][1]}% of bidirectional",
        "percent_of_bidirectional:bi+replace-Lstar", "Table 9: 78% (Llama-3.2-3B)"),
    "test_T9c_replacing_position0_at_every_layer_raises_it": C(
        "replacing position 0 at every layer: paired CI above 0, and ≥ {percent[bi+replace-all][1]}% of "
        "bidirectional", "percent_of_bidirectional:bi+replace-all", "Table 9: 128% (Llama-3.2-3B)"),
    "test_T10_leakage_decays_with_length_piecewise": C(
        "mean ΔR² decays with length, the piecewise breakpoint is interior, and ΔAIC (power − piecewise) > "
        "{aic_margin}", "delta_aic_power_minus_piecewise", "§5.8: piecewise preferred (margin lost in extraction)"),
    "test_T11_position_probe_ablation_reduces_less_than_random_heads": C(
        "the random-head control reduces ΔR² (95% t-interval over ≥ {draws} draws above 0), and the rank-1 probe "
        "ablation's |reduction| lies below that interval", ("reduction_rank1", "reduction_random_heads"),
        "§5.8: the random control lowers ΔR² by 17% (a reduction of +0.17)"),
    "test_T11_sink_head_ablation_reduces_less_than_random_heads": C(
        "the random-head control reduces ΔR² (95% t-interval over ≥ {draws} draws above 0), and the top-decile "
        "sink-head ablation's |reduction| lies below that interval", ("reduction_sink_heads", "reduction_random_heads"),
        "§5.8: the random control lowers ΔR² by 17% (a reduction of +0.17)"),
    "test_T12_rank1_mlp_ablation_removes_norm_not_topic": C(
        "the rank-1 MLP ablation removes ≥ {min_norm_removed} of the MLP output norm at each of the last {layers} "
        "layers, and topic accuracy falls by no more than {accuracy_se} SE", "fraction_norm_removed_by_layer",
        "App. B: 0.17–0.80 per layer"),
    "test_T13_leakage_constant_and_residual_share_rises_with_scale": C(
        "every size's mean ΔR² within {constant:.0%} of the family mean; the residual-stream share rises from the "
        "smallest size, then saturates", "mean_delta_causal_by_size", "§5.9: 0.0121–0.0143 (within 9%)"),
}


def criterion(test: str) -> Criterion:
    return CRITERIA[test]


def display_name(model: str) -> str:
    """A paper model as the paper names it (llama-3.2-3b -> Llama-3.2-3B)."""
    spec = REGISTRY.get(model)
    return spec.hub_id.split("/")[-1] if spec is not None and spec.hub_id else model


def paper_numbers(claim_id: str, test: str, model: str | None) -> str:
    """The paper's number for a test's headline figure, labelled with the paper model it comes from ("paper,
    Llama-3.2-3B: 0.35"): the run's own model first when it is a paper model, else every paper model the registry
    has a value for; the criterion's words where it has none."""
    c = CRITERIA[test]
    values = CLAIMS[claim_id].figure(c.headline[0]).paper if c.headline else {}
    if model in values:
        values = {model: values[model]}
    if values:
        return "; ".join(f"paper, {display_name(m)}: {v.value:g}" for m, v in values.items())
    return f"paper: {c.paper}" if c.paper else ""
