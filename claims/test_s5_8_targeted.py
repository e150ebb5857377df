"""§5.8 Targeted interventions (T11) and Appendix B, the rank-1 MLP ablation (T12).

T11: the residual-stream component is distributed. Projecting out the rank-1 direction that best predicts
position (at every layer), or zeroing the top-decile sink-reading heads, lowers mean ΔR² less than zeroing
as many randomly chosen heads (averaged over random draws).
T12: ablating the dominant direction of each layer's MLP output at content positions removes a large part
of the MLP output norm (paper 0.17–0.80 per layer) but leaves the topic decodable.
"""

import numpy as np
import pytest

from harness import claim, holds
from harness.capture.measure import WEIGHT, Leakage
from harness.capture.plan import probe, topic, topic_rows
from harness.capture.reads import MLP_AT_TARGET, PROBE_STATES, At, Run, SinkProfile
from harness.model.edits import Directions, ProjectOutOfResidual, Rank1MLPAblation, ZeroHeads
from harness.stats.directions import dominant_direction, fraction_norm_removed, rank1_direction
from harness.stats.heads import decile_split
from harness.stats.intervals import t_interval
from harness.stats.probes import chance_level, topic_probe_accuracy
from harness.stats.sinks import sink_reading_strength

DIRECTION_PROMPTS = 4  # prompts the rank-1 directions are fitted on
AFTER_0 = At(start=1)  # the residual stream at every position after 0
DRAWS = claim("T11").threshold("draws")
T12 = claim("T12")
LAST_LAYERS, MIN_NORM_REMOVED, ACCURACY_SE = (T12.threshold(k) for k in ("layers", "min_norm_removed", "accuracy_se"))


def position_directions(session, model) -> Directions:
    """Per layer, the unit direction of the residual stream that best predicts the position (positions >= 1)."""
    few = session.prompts(model, n_prompts=DIRECTION_PROMPTS)
    states = session.capture(model, Run(few), AFTER_0).values  # [N, layers, n-1, D]
    pos = np.tile(np.arange(1, few.seq_len), len(few))
    return Directions({l: rank1_direction(states[:, l].reshape(-1, model.d_model), pos) for l in range(model.n_layers)})


def random_control(leak, model, k: int, draws: int, seed: int) -> list[float]:
    """Mean ΔR² with k uniformly drawn heads zeroed, one value per draw."""
    rng = np.random.default_rng(seed)
    n = model.n_layers * model.n_heads
    return [
        leak.mean_delta(
            ZeroHeads([divmod(int(h), model.n_heads) for h in rng.choice(n, k, replace=False)], name=f"random{k}-{d}")
        )
        for d in range(draws)
    ]


def targeted_vs_random(model, session, figures, draws):
    """Reductions of mean ΔR² (1 - ablated / baseline) by the rank-1 position direction, the top-decile sink heads
    and as many random heads (per draw, with the t-interval of their mean); computed once per model."""
    base, rank1, sink, k, values = session.memo(
        model, ("T11 targeted vs random", draws), lambda: _targeted_vs_random(model, session, draws)
    )
    reductions = 1 - np.array(values) / base
    random_ci = t_interval(reductions)
    figures.add("ablation:baseline", base)
    figures.add("ablation:rank-1 position probe", rank1)
    figures.add(f"ablation:top-decile sink heads ({k})", sink)
    figures.add(
        f"ablation:random heads ({k}, {draws} draws)",
        float(np.mean(values)),
        ci=[min(values), max(values)],
        note="range over draws",
    )
    figures.add("reduction_rank1", 1 - rank1 / base)
    figures.add("reduction_sink_heads", 1 - sink / base)
    figures.add(
        "reduction_random_heads", float(reductions.mean()), ci=random_ci, note=f"95% t-interval over {draws} draws"
    )
    figures.add("reduction_random_heads_by_draw", reductions)
    return base, {"rank1": 1 - rank1 / base, "sink": 1 - sink / base}, random_ci


def _targeted_vs_random(model, session, draws):
    leak = Leakage(session, model)
    base = leak.mean_delta()
    rank1 = leak.mean_delta(ProjectOutOfResidual(position_directions(session, model), name="rank1-position"))
    strength = sink_reading_strength(session.capture(model, leak.run(), SinkProfile()).values)
    top, _ = decile_split(strength)
    heads = [divmod(int(h), model.n_heads) for h in top]
    sink = leak.mean_delta(ZeroHeads(heads, name=f"top-sink{len(heads)}"))
    return base, rank1, sink, len(heads), random_control(leak, model, len(heads), draws, session.settings.seed)


@pytest.fixture
def t11(model, session, figures):
    return targeted_vs_random(model, session, figures, max(DRAWS, session.settings.n_random_draws))


def check_smaller_than_random(t11, which: str, what: str):
    base, targeted, (lo, hi) = t11
    r = targeted[which]
    holds(
        lo > 0,
        f"the random-head control does not reduce ΔR² (mean reduction 95% CI [{lo:.3f}, {hi:.3f}]): "
        f"no yardstick for 'smaller than a random ablation'",
    )
    holds(
        abs(r) < lo,
        f"{what} changes ΔR² by {-r:+.1%}, an effect not smaller than the random-head control's "
        f"(reduction 95% CI [{lo:.1%}, {hi:.1%}])",
    )


@pytest.mark.claim("T11")
@pytest.mark.reads(topic(WEIGHT, SinkProfile()), topic_rows(DIRECTION_PROMPTS, AFTER_0))
def test_T11_position_probe_ablation_reduces_less_than_random_heads(t11):
    check_smaller_than_random(t11, "rank1", "projecting out the position direction")


@pytest.mark.claim("T11")
@pytest.mark.reads(topic(WEIGHT, SinkProfile()), topic_rows(DIRECTION_PROMPTS, AFTER_0))
def test_T11_sink_head_ablation_reduces_less_than_random_heads(t11):
    check_smaller_than_random(t11, "sink", "zeroing the top-decile sink-reading heads")


@pytest.mark.claim("T12")
@pytest.mark.reads(probe(MLP_AT_TARGET, PROBE_STATES))
def test_T12_rank1_mlp_ablation_removes_norm_not_topic(model, session, figures):
    """App. B: at each of the last three layers, the dominant direction of the per-prompt MLP outputs at the target
    (the last position) is projected out of that layer's MLP output there; the fraction of the output norm removed
    and the topic probe's accuracy at the target after the last layer are measured, one layer at a time."""
    text = session.prompts(model, n_prompts=session.settings.n_probe_prompts)
    layers = list(range(model.n_layers - LAST_LAYERS, model.n_layers))
    target = text.seq_len - 1
    mlp, resid = session.capture(model, Run(text), MLP_AT_TARGET, PROBE_STATES)
    dirs = {l: dominant_direction(mlp.values[:, l, 0]) for l in layers}  # one row per prompt
    removed = np.array([fraction_norm_removed(mlp.values[:, l, 0], dirs[l]) for l in layers])
    seed = session.settings.seed

    def accuracy(states):
        return topic_probe_accuracy(states[:, -1, -1], text.labels, seed=seed)  # the last layer, at the target

    acc0 = accuracy(resid.values)  # the topic grid's pass (T1): its last position is the target
    after = np.array(
        [
            accuracy(
                session.capture(
                    model,
                    Run(text, (Rank1MLPAblation(Directions({l: dirs[l]}), start=target),)),
                    At(positions=(target,)),
                ).values
            )
            for l in layers
        ]
    )
    se = np.sqrt(acc0 * (1 - acc0) / len(text))
    chance = chance_level(text.labels)
    figures.add("fraction_norm_removed_by_layer", removed, note="paper 0.17-0.80 per layer")
    figures.add("ablated_layers", layers)
    figures.add("chance", chance)
    figures.add("topic_accuracy_before", acc0)
    figures.add("topic_accuracy_after_by_ablated_layer", after)
    assert np.all(np.isfinite(removed)), f"non-finite fraction of the MLP norm removed {removed}: a harness error"
    low = [(l, round(float(r), 3)) for l, r in zip(layers, removed) if r < MIN_NORM_REMOVED]
    holds(
        not low,
        f"the rank-1 ablation removes less than {MIN_NORM_REMOVED} of the MLP output norm at the target "
        f"at layer(s) {low} (layer, fraction)",
    )
    holds(
        after.min() >= acc0 - ACCURACY_SE * se,
        f"topic-probe accuracy falls from {acc0:.3f} to {after.min():.3f} after the ablation at layer "
        f"{layers[int(after.argmin())]} (beyond {ACCURACY_SE} SE = {ACCURACY_SE * se:.3f})",
    )
