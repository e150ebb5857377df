"""Each forward pass once (harness/capture/plan.py, Session.capture), attention by need (harness/model/attention.py),
threads (harness/run/threads.py).

- A planned prompt set's first capture runs one pass over the largest planned set holding it as rows and reads
  every planned read; the smaller sets' reads are sliced from it; the values equal separate passes'.
- Attention per layer by need: sdpa where nothing reads the scores or the pattern, the fused kernel's logsumexp
  where only pairs of the pattern are read, eager where the whole pattern or the scores are read, and in bf16; the
  numbers agree with eager within 1e-6 on every tiny architecture (GQA, sliding window, dual RoPE) and under a mask
  edit.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from harness.capture import forward as cap
from harness.capture.corpus import PromptSet
from harness.capture.plan import Plan, probe, topic, topic_rows
from harness.capture.progress import Progress
from harness.capture.reads import At, PatternAtPairs, ResidNorms, Run, SinkProfile
from harness.capture.session import Session
from harness.model import attention
from harness.model.edits import Bidirectional, ZeroHeads
from harness.run import threads
from harness.spec.models import names
from harness.spec.settings import Settings

SEQ, N, PROBE = 32, 8, 16
TOPICS = ("a", "b", "c", "d")


def topic_set(n: int, ids: np.ndarray) -> PromptSet:
    """The first n/4 prompts of each topic of the 16-prompt set (rows 0-3 topic a, 4-7 b, ...), as corpus builds."""
    rows = [t * (PROBE // 4) + k for t in range(4) for k in range(n // 4)]
    return PromptSet(ids[rows], np.repeat(np.arange(4), n // 4), TOPICS, "t")


def session_with(plan: Plan | None = None, name: str = "tiny-llama", n_pairs: int = 1000) -> tuple[Session, object]:
    s = Session(
        Settings(n_prompts=N, seq_len=SEQ, n_pairs=n_pairs, n_probe_prompts=PROBE, n_boot=20),
        log=lambda *a: None,
        progress=Progress(enabled=False),
        plan=plan or Plan(),
    )
    model = s.model(name)
    ids = np.random.default_rng(0).integers(3, 250, size=(PROBE, SEQ))
    for n in (4, N, PROBE):
        s._prompts[(name, "topic", SEQ, n)] = topic_set(n, ids)
    return s, model


def test_planned_reads_of_nested_prompt_sets_share_one_pass_with_the_same_values():
    plan = Plan()
    plan.add(
        "tiny-llama",
        [topic(SinkProfile(), PatternAtPairs()), probe(ResidNorms(), SinkProfile()), topic_rows(4, At(start=1))],
    )
    s, model = session_with(plan)
    before = s.workload.totals()[1]
    small, big, few = s.prompts(model), s.prompts(model, n_prompts=PROBE), s.prompts(model, n_prompts=4)
    sink = s.capture(model, Run(small), SinkProfile())
    assert s.workload.totals()[1] - before == PROBE * SEQ * model.n_layers  # the probe set's pass, once
    got = [
        sink,
        s.capture(model, Run(small), PatternAtPairs()),
        s.capture(model, Run(big), ResidNorms()),
        s.capture(model, Run(big), SinkProfile()),
        s.capture(model, Run(few), At(start=1)),
    ]
    assert s.workload.totals()[1] - before == PROBE * SEQ * model.n_layers  # everything else was sliced
    plain, _ = session_with()  # no plan: one pass per prompt set and read
    plain._models["tiny-llama"] = model
    want = [
        plain.capture(model, Run(small), SinkProfile()),
        plain.capture(model, Run(small), PatternAtPairs()),
        plain.capture(model, Run(big), ResidNorms()),
        plain.capture(model, Run(big), SinkProfile()),
        plain.capture(model, Run(few), At(start=1)),
    ]
    for g, w in zip(got, want):
        assert g.values.shape == w.values.shape and (g.layers, g.embed) == (w.layers, w.embed)
        np.testing.assert_allclose(g.values, w.values, rtol=1e-6, atol=1e-7)


def test_an_unplanned_read_or_an_edited_run_gets_a_pass_of_its_own():
    plan = Plan()
    plan.add("tiny-llama", [topic(SinkProfile())])
    s, model = session_with(plan)
    small = s.prompts(model)
    s.capture(model, Run(small), SinkProfile())
    before = s.workload.totals()[1]
    s.capture(model, Run(small), ResidNorms())  # not planned: its own pass, correct values
    s.capture(model, Run(small, (Bidirectional(),)), SinkProfile())
    assert s.workload.totals()[1] - before == 2 * N * SEQ * model.n_layers


@pytest.mark.parametrize(
    "error",
    [
        RuntimeError("DefaultCPUAllocator: can't allocate memory"),
        MemoryError(),
        RuntimeError("CUBLAS_STATUS_ALLOC_FAILED"),
    ],
)
def test_a_planned_pass_out_of_memory_falls_back_to_the_tests_own_pass_once(error, monkeypatch):
    """The merged pass is larger than one test's own: out of memory, each test captures its own reads (the same
    values), and the failed plan is not tried again for that model."""
    plan = Plan()
    plan.add("tiny-llama", [topic(SinkProfile(), ResidNorms())])
    s, model = session_with(plan)
    real, reads_per_pass = s._pass, []

    def first_fails(model, run, reads):
        reads_per_pass.append(len(reads))
        if len(reads_per_pass) == 1:  # the merged pass (both planned reads)
            raise error
        return real(model, run, reads)

    monkeypatch.setattr(s, "_pass", first_fails)
    small = s.prompts(model)
    got = s.capture(model, Run(small), SinkProfile())
    s.capture(model, Run(small), ResidNorms())
    assert reads_per_pass == [2, 1, 1] and s._planned["tiny-llama"].failed  # not tried again
    plain, _ = session_with()
    plain._models["tiny-llama"] = model
    np.testing.assert_array_equal(got.values, plain.capture(model, Run(small), SinkProfile()).values)


def test_a_planned_pass_that_fails_for_another_reason_is_not_rerouted(monkeypatch):
    """A bug in the merged pass is a harness error of the test, never hidden behind a quieter per-test pass."""
    plan = Plan()
    plan.add("tiny-llama", [topic(SinkProfile())])
    s, model = session_with(plan)

    def bug(*a, **k):
        raise RuntimeError("shape mismatch")

    monkeypatch.setattr(s, "_pass", bug)
    with pytest.raises(RuntimeError, match="shape mismatch"):
        s.capture(model, Run(s.prompts(model)), SinkProfile())


def captured(model, ids, reads, *edits, force_eager=False):
    s, _ = session_with(n_pairs=50)  # 50 pairs x d 16 <= 32 x 32: the pair path serves them (attention.pairs_attention)
    s._models[model.spec.name] = model
    run = Run(PromptSet(ids, np.zeros(len(ids), int), ("x",), "t"), edits)
    eager = {f"blocks.{l}.attn.hook_scores": lambda v, h: None for l in range(model.n_layers)}  # a scores read
    with model.hooks(eager if force_eager else {}):  # forces the eager path in every layer
        out = s.capture(model, run, *reads)
    return [c.values for c in (out if isinstance(out, tuple) else (out,))]


@pytest.mark.parametrize("name", names("tiny"))
@pytest.mark.parametrize("edits", [(), (Bidirectional(),), (ZeroHeads([(0, 1)]),)], ids=["causal", "bi", "zero"])
def test_attention_by_need_matches_eager_within_1e_6(name, edits, monkeypatch):
    """Pair weights from the fused kernel's logsumexp (the pair path, which must serve them) and residual norms
    from sdpa (a pass reading nothing inside attention) equal eager attention's within 1e-6."""
    _, model = session_with(name=name)
    served = []
    real = attention.pairs_attention
    monkeypatch.setattr(attention, "pairs_attention", lambda *a: served.append(real(*a)) or served[-1])
    ids = np.random.default_rng(1).integers(3, 250, size=(3, SEQ))
    (pairs,) = captured(model, ids, (PatternAtPairs(),), *edits)
    assert served and all(out is not None for out in served)
    (norms,) = captured(model, ids, (ResidNorms(),), *edits)
    (pairs_e,) = captured(model, ids, (PatternAtPairs(),), *edits, force_eager=True)
    (norms_e,) = captured(model, ids, (ResidNorms(),), *edits, force_eager=True)
    np.testing.assert_allclose(pairs, pairs_e, atol=1e-6, rtol=0)
    np.testing.assert_allclose(norms, norms_e, rtol=1e-6, atol=1e-6)


def test_half_precision_attention_is_eager_whatever_else_is_read(monkeypatch):
    """In bf16 the paths differ by up to 1% per weight, so a figure would depend on its pass's other reads."""
    _, model = session_with()
    calls = []
    monkeypatch.setattr(attention, "sdpa_attention", lambda *a, **k: calls.append(1))
    with torch.no_grad():
        model.hf.to(torch.bfloat16)
        try:
            model.base(input_ids=torch.as_tensor(np.random.default_rng(2).integers(3, 250, size=(1, SEQ))))
        finally:
            model.hf.to(torch.float32)
    assert not calls


def test_each_layer_takes_the_cheapest_path_its_hooks_allow(monkeypatch):
    _, model = session_with()
    calls = []
    for path in ("sdpa_attention", "pairs_attention"):
        real = getattr(attention, path)
        monkeypatch.setattr(attention, path, lambda *a, _r=real, _p=path, **k: (calls.append(_p), _r(*a, **k))[1])
    ids = torch.as_tensor(np.random.default_rng(2).integers(3, 250, size=(1, SEQ)))
    pair = cap.PairReader(np.array([5, 9]), np.array([0, 3]))
    with torch.no_grad():
        with model.hooks({"blocks.0.attn.hook_pattern": cap._collector([], pair, None, {"start": 0, "stop": 1})}):
            model.base(input_ids=ids)
        assert calls == ["pairs_attention", "sdpa_attention"]  # layer 0 reads pairs; layer 1 nothing
        calls.clear()
        with model.hooks({"blocks.1.attn.hook_pattern": lambda v, h: None}):  # a whole pattern: eager there
            model.base(input_ids=ids)
        assert calls == ["sdpa_attention"]


@pytest.mark.parametrize(
    "cores, busy, workers, want",
    [
        (2, 0.0, 1, 2),
        (2, 1.0, 1, 1),
        (2, 1.7, 1, 1),
        (16, 0.2, 4, 4),
        (16, 3.0, 4, 3),
        (2, 0.0, 4, 1),
        (8, 9.0, 1, 1),
    ],
)
def test_threads_are_free_cores_over_workers(cores, busy, workers, want):
    assert threads.thread_count(cores, busy, workers) == want


def test_set_threads_sets_torch_and_blas():
    from threadpoolctl import threadpool_info

    before = torch.get_num_threads()
    try:
        threads.set_threads(1)
        assert torch.get_num_threads() == 1
        assert all(p["num_threads"] == 1 for p in threadpool_info())
    finally:
        threads.set_threads(before)


def test_a_repeated_prompt_runs_once_and_each_condition_counts_in_the_floor():
    """T4's prompts recur (8 token-0 identities over 32 prompts): each distinct prompt runs once, the copies get
    its values; edits of different kinds with equal fields (IdentityRope(), Bidirectional()) are distinct
    conditions of the floor."""
    from harness.model.edits import IdentityRope

    s, model = session_with()
    base = np.random.default_rng(3).integers(3, 250, size=(3, SEQ))
    ids = base[[0, 1, 0, 2, 1, 0]]
    run = Run(PromptSet(ids, np.zeros(6, int), ("x",), "t"))
    before = s.workload.totals()
    values = s.capture(model, run, At(positions=(5,))).values
    assert s.workload.totals()[1] - before[1] == 3 * SEQ * model.n_layers
    np.testing.assert_array_equal(values[[0, 2, 5]], values[[2, 5, 0]])
    s.capture(model, Run(run.prompts, (IdentityRope(),)), At(positions=(5,)))
    s.capture(model, Run(run.prompts, (Bidirectional(),)), At(positions=(5,)))
    after = s.workload.totals()
    assert after[2] - before[2] == 3 * 3 * SEQ * model.n_layers  # three conditions, three distinct prompts each
