"""§5.1 Sinks are token-anchored anchors, not content aggregators (Table 2).

Sink magnitude of key k: the mean post-softmax weight later queries give to k, averaged over heads and
prompts, at the strongest layer (one figure per variant, as Table 2 reports one).
Which prediction applies depends on the model's BOS policy: models that auto-prepend BOS are tested on
moving it and on replacing it; models without one on the paper's no-BOS prediction (saturated default sink at 0).
"""

import numpy as np
import pytest

from harness import NotApplicable, claim, holds
from harness.capture import corpus
from harness.capture.plan import topic
from harness.capture.reads import PROBE_STATES, Run, SinkProfile, probe_positions
from harness.stats import probes
from harness.stats.sinks import peak_sink, sink_cells_at_chance, sink_magnitude_by_layer, top_cells

MOVED_TO = 8  # paper: BOS moved to position 8
T2 = claim("T2")  # thresholds, with the paper sentence each comes from: harness/spec/claims.py
SATURATED, SUPPRESSED = T2.threshold("saturated"), T2.threshold("suppressed")


def sink_profile(session, model, prompts):
    return session.capture(model, Run(prompts), SinkProfile()).values


@pytest.mark.claim("T2")
@pytest.mark.reads(topic(SinkProfile()))
def test_T2_moving_bos_moves_the_sink(model, session, figures):
    text = session.prompts(model)
    default = sink_profile(session, model, text)
    moved = sink_profile(session, model, corpus.bos_at(text, model.spec, MOVED_TO))
    s8, layer = peak_sink(moved, MOVED_TO)
    s8_default, _ = peak_sink(default, MOVED_TO)
    by_layer = sink_magnitude_by_layer(moved)[layer]
    strongest_other = max(v for k, v in enumerate(by_layer[1:-1], start=1) if k != MOVED_TO)
    figures.add("sink_at_8_bos_moved", s8)
    figures.add("sink_at_8_default", s8_default)
    figures.add("peak_layer", layer)
    figures.add("strongest_other_position_ge1", strongest_other)
    figures.add("sink_at_8_over_default_sink_at_0", s8 / peak_sink(default, 0)[0], note="secondary, not judged")
    holds(
        s8 >= SATURATED,
        f"sink at 8 with BOS moved there is {s8:.3f} (layer {layer}), not near saturation (>= {SATURATED})",
    )
    holds(
        s8 > strongest_other,
        f"position 8 ({s8:.3f}) is not the strongest sink among positions >= 1 (another reaches {strongest_other:.3f})",
    )


@pytest.mark.claim("T2")
@pytest.mark.reads(topic(SinkProfile()))
def test_T2_uncommon_token_at_zero_suppresses_the_sink(model, session, figures):
    text = session.prompts(model)
    s0, _ = peak_sink(sink_profile(session, model, text), 0)
    s0_random, layer = peak_sink(sink_profile(session, model, corpus.random_token_at_zero(text, model.tokenizer)), 0)
    figures.add("sink_at_0_default", s0)
    figures.add("sink_at_0_random_token", s0_random)
    figures.add("random_over_default_sink_at_0", s0_random / s0)
    holds(
        s0_random <= SUPPRESSED * s0,
        f"with an uncommon token at 0 the sink there is {s0_random:.3f} vs {s0:.3f} "
        f"with BOS ({s0_random / s0:.2f}x), not suppressed (<= {SUPPRESSED}x)",
    )


@pytest.mark.claim("T2")
@pytest.mark.reads(topic(SinkProfile()))
def test_T2_without_bos_position0_is_a_saturated_default_sink(model, session, figures):
    text = session.prompts(model)
    s0, layer = peak_sink(sink_profile(session, model, text), 0)
    figures.add("sink_at_0_no_bos", s0)
    figures.add("peak_layer", layer)
    holds(s0 >= SATURATED, f"peak sink at position 0 without BOS is {s0:.3f} (layer {layer}), not >= {SATURATED}")


# ---- T1: the highest-sink positions carry no decodable topic (Table 1) ------------------------------
TOP_SINKS = 3  # Table 1 lists three highest-sink layers per model
T1 = claim("T1")
DECODABLE, POWER = T1.threshold("decodable"), 0.9  # the equivalence bound, and the design's power at exact chance
CONTENT_SINK, SATURATED_T1, BOS_SINK = T1.threshold("content_sink"), T1.threshold("saturated"), T1.threshold("bos_sink")


def t1_prompts(session, model):
    """T1's prompts: topic text starting inside a document at a topic-neutral word, the same words at 0 in every
    topic (``corpus.offset_topic_prompts``), as many as the probe
    set or, where more are needed, the fewest for which a probe at exactly chance passes the equivalence bound with
    probability ``POWER`` (92 at the defaults; METHODS.md, T1)."""
    s = session.settings
    n = probes.equivalence_prompts(0.25, DECODABLE, POWER, start=s.n_probe_prompts)
    return session.memo(
        model,
        ("T1 prompts", n),
        lambda: corpus.offset_topic_prompts(model.tokenizer, model.spec, n, s.seq_len, seed=s.seed, source=s.corpus),
    )


def topic_grid(session, model):
    """(prompts, positions, sink [layers, positions], probe accuracy [layers, positions], decodable mask, chance),
    computed once per model and session (both T1 tests read it)."""
    return session.memo(model, "T1 topic grid", lambda: _topic_grid(session, model))


def _topic_grid(session, model):
    text = t1_prompts(session, model)
    pos = list(probe_positions(text.seq_len))
    states, profile = session.capture(model, Run(text), PROBE_STATES, SinkProfile())
    sink = sink_magnitude_by_layer(profile.values)[:, pos]
    acc = probes.topic_probe_grid(states.values, text.labels, seed=session.settings.seed)
    chance = probes.chance_level(text.labels)
    decodable = np.vectorize(lambda a: probes.above_chance(a, len(text), chance))(acc)
    return text, np.array(pos), sink, acc, decodable, chance


@pytest.mark.claim("T1")
def test_T1_highest_sink_positions_are_at_chance(model, session, figures):
    """'At or below chance' as an equivalence: each of the 3 highest-sink cells' accuracy has its one-sided 95%
    upper bound below Table 1's least decodable content cell, so failing to reject chance is not read as equality."""
    text, pos, sink, acc, decodable, chance = topic_grid(session, model)
    cells, accs, uppers, held = sink_cells_at_chance(sink, lambda c: acc[c], len(text), DECODABLE, TOP_SINKS)
    figures.add("sink_by_layer_position", sink)
    figures.add("probe_accuracy_by_layer_position", acc)
    figures.add("chance", chance)
    figures.add(
        "top_sink_cells",
        [[l, int(pos[p]), sink[l, p], a, u] for (l, p), a, u in zip(cells, accs, uppers)],
        note="[layer, position, sink, accuracy, one-sided 95% upper bound of the accuracy]",
    )
    figures.add("max_accuracy_upper_bound", max(uppers))
    figures.add(
        "token0_identity_accuracy",
        probes.token_identity_accuracy(text.ids[:, 0], text.labels, seed=session.settings.seed),
        note="a classifier knowing only the token at 0, on the probe's folds: the state there is a function of it",
    )
    figures.add("t1_prompts", len(text))
    if all(int(pos[p]) == 0 for _, p in cells):
        raise NotApplicable(
            "not applicable: every highest-sink cell is at position 0, whose state is a function of the token there "
            "alone (EQ7), here a topic-neutral word: at chance by construction, as with a fixed BOS (METHODS.md, T1)"
        )
    bad = [(l, int(pos[p]), round(a, 3), round(u, 3)) for (l, p), a, u in zip(cells, accs, uppers) if u >= DECODABLE]
    holds(
        held,
        f"highest-sink cells not shown below Table 1's decodable level {DECODABLE} (chance {chance:.2f}, "
        f"{len(text)} prompts): {bad} (layer, position, accuracy, 95% upper bound)",
    )


@pytest.mark.claim("T1")
def test_T1_decodable_positions_have_sinks_orders_of_magnitude_smaller(model, session, figures):
    """Table 1 read within one model: the 3 highest-content (accuracy) cells are decodable and their sinks at
    Table 1's absolute level; the 3 highest sinks at the level the paper gives for the model's BOS policy."""
    text, pos, sink, acc, decodable, chance = topic_grid(session, model)
    top = [sink[c] for c in top_cells(sink, TOP_SINKS)]
    ok = np.isfinite(sink)  # ties in accuracy (e.g. at 1.0) go to the cell with the larger sink: the conservative pick
    order = np.lexsort((-np.where(ok, sink, -np.inf).ravel(), -np.where(ok, acc, -np.inf).ravel()))[:TOP_SINKS]
    content = [tuple(int(i) for i in np.unravel_index(o, acc.shape)) for o in order]
    content_sink = max(sink[c] for c in content)
    dec = decodable & ok
    figures.add(
        "top_content_cells",
        [[l, int(pos[p]), sink[l, p], acc[l, p]] for l, p in content],
        note="[layer, position, sink, accuracy]",
    )
    figures.add("min_top_sink", float(min(top)))
    figures.add("max_top_sink", float(max(top)))
    figures.add("max_sink_at_top_content_cells", float(content_sink))
    figures.add(
        "sink_ratio_top_sink_over_top_content",
        float(min(top) / content_sink),
        note="Table 1's cross-model ratio: not judged",
    )
    figures.add("decodable_cells", int(dec.sum()))
    figures.add(
        "max_sink_at_decodable_cells",
        float(sink[dec].max()) if dec.any() else None,
        note="every cell above chance: reported, not judged",
    )
    bad = [(l, int(pos[p]), round(acc[l, p], 3)) for l, p in content if not decodable[l, p]]
    holds(
        not bad,
        f"the highest-content cells are not decodable above chance {chance:.2f}: {bad} (layer, position, accuracy)",
    )
    holds(
        content_sink <= CONTENT_SINK,
        f"the highest-content cells reach sink {content_sink:.4g}, above Table 1's level (<= {CONTENT_SINK})",
    )
    if model.spec.adds_bos:
        holds(max(top) >= BOS_SINK, f"the highest sink is {max(top):.3f}, below Table 2's BOS-model sink ({BOS_SINK})")
    else:
        holds(
            min(top) >= SATURATED_T1,
            f"the 3 highest sinks reach only {min(top):.3f} (smallest), not saturated (>= {SATURATED_T1}) as "
            f"Table 1's no-BOS highest sinks are",
        )
