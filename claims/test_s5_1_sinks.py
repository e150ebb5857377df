"""§5.1 Sinks are token-anchored anchors, not content aggregators (Table 2).

Sink magnitude of key k: the mean post-softmax weight later queries give to k, averaged over heads and
prompts, at the strongest layer (one figure per variant, as Table 2 reports one).
Which prediction applies depends on the model's BOS policy: models that auto-prepend BOS are tested on
moving it and on replacing it; models without one on the paper's no-BOS prediction (saturated default sink at 0).
"""

import numpy as np
import pytest

from harness import claim, holds
from harness.capture import corpus
from harness.capture.plan import probe, topic
from harness.capture.reads import PROBE_STATES, Run, SinkProfile, probe_positions
from harness.stats.sinks import peak_sink, sink_magnitude_by_layer

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
ORDERS_SMALLER = claim("T1").threshold("orders_smaller")


def topic_grid(session, model):
    """(positions, sink [layers, positions], probe accuracy [layers, positions], decodable mask, chance),
    computed once per model and session (both T1 tests read it)."""
    return session.memo(model, "T1 topic grid", lambda: _topic_grid(session, model))


def _topic_grid(session, model):
    from harness.stats.probes import above_chance, chance_level, topic_probe_grid

    text = session.prompts(model, n_prompts=session.settings.n_probe_prompts)
    pos = list(probe_positions(text.seq_len))
    states, profile = session.capture(model, Run(text), PROBE_STATES, SinkProfile())
    sink = sink_magnitude_by_layer(profile.values)[:, pos]
    acc = topic_probe_grid(states.values, text.labels, seed=session.settings.seed)
    chance = chance_level(text.labels)
    decodable = np.vectorize(lambda a: above_chance(a, len(text), chance))(acc)
    return np.array(pos), sink, acc, decodable, chance


def top_cells(values: np.ndarray, k: int) -> list[tuple[int, int]]:
    """The k (layer, position-index) cells with the largest finite values."""
    order = np.argsort(np.nan_to_num(values, nan=-np.inf).ravel())[::-1][:k]
    return [tuple(int(i) for i in np.unravel_index(o, values.shape)) for o in order]


@pytest.mark.claim("T1")
@pytest.mark.reads(probe(PROBE_STATES, SinkProfile()))
def test_T1_highest_sink_positions_are_at_chance(model, session, figures):
    pos, sink, acc, decodable, chance = topic_grid(session, model)
    cells = top_cells(sink, TOP_SINKS)
    figures.add("sink_by_layer_position", sink)
    figures.add("probe_accuracy_by_layer_position", acc)
    figures.add("chance", chance)
    figures.add(
        "top_sink_cells",
        [[int(l), int(pos[p]), sink[l, p], acc[l, p]] for l, p in cells],
        note="[layer, position, sink, accuracy]",
    )
    bad = [(int(l), int(pos[p]), round(acc[l, p], 3)) for l, p in cells if decodable[l, p]]
    holds(not bad, f"highest-sink cells decodable above chance {chance:.2f}: {bad} (layer, position, accuracy)")


@pytest.mark.claim("T1")
@pytest.mark.reads(probe(PROBE_STATES, SinkProfile()))
def test_T1_decodable_positions_have_sinks_orders_of_magnitude_smaller(model, session, figures):
    """Table 1's reading: the three highest-sink cells against the three highest-content (accuracy) cells."""
    pos, sink, acc, decodable, chance = topic_grid(session, model)
    top_sink = min(sink[c] for c in top_cells(sink, TOP_SINKS))
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
    figures.add("min_top_sink", float(top_sink))
    figures.add("max_sink_at_top_content_cells", float(content_sink))
    figures.add("sink_ratio_top_sink_over_top_content", float(top_sink / content_sink))
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
    ratio = top_sink / content_sink
    holds(
        ratio >= ORDERS_SMALLER,
        f"the highest-content cells reach sink {content_sink:.4g}, only {ratio:.1f}x below "
        f"the highest sinks ({top_sink:.4g}; need >= {ORDERS_SMALLER}x)",
    )
