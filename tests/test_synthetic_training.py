"""The related paper's synthetic experiments' machinery (harness/synthetic): the tasks as the authors define them,
the model family's architectures (the authors' permutation-invariant NoPE, the causal decoder), the head ablation,
training that is seeded, cached and resumable, and the head map's deposit statistic on planted accuracies."""

from __future__ import annotations

import json
import types
from dataclasses import replace

import numpy as np
import pytest
import torch

from harness.synthetic import ablation, tasks
from harness.synthetic.model import ENCODINGS, PositionModel, Shape, rope_heads, rotate
from harness.synthetic.train import PILOT_AUTHORS_LR, SIZES, SyntheticSpec, at_depth, folder, train


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("ABSPOS_CACHE", str(tmp_path))
    return tmp_path


def test_task1_has_one_pair_of_triggers_and_labels_the_words_between_them():
    ids, labels = tasks.task1(300, 64, seed=3)
    w1, w2 = tasks.triggers("task1")
    shape = tasks.TaskShape(64)
    assert ids.shape == (300, 64) and len({r.tobytes() for r in ids}) == 300  # de-duplicated
    assert labels.min() >= 2 and labels.max() <= shape.max_between + 1
    for row, label in zip(ids, labels):
        first = int(np.flatnonzero(row == w1)[0])
        # the label counts the fillers after the first w1 up to the w2 that closes them (a filler may be a trigger)
        assert row[first + label] == w2 or np.any(row[first + 1 : first + label] == w1)
        assert np.all(row[row != tasks.PAD] >= len(tasks.SPECIALS))  # no special token among the words
    again, _ = tasks.task1(300, 64, seed=3)
    assert np.array_equal(ids, again) and not np.array_equal(ids, tasks.task1(300, 64, seed=4)[0])


def test_task2_counts_its_thirty_triggers_and_ignores_label_zero():
    ids, labels = tasks.task2(200, 64, seed=1)
    trig = tasks.triggers("task2")
    assert len(trig) == 30 and ids.shape == (200, 64)
    assert np.array_equal(np.isin(ids, trig).sum(axis=1), labels)
    assert np.all((ids != tasks.PAD).sum(axis=1) == tasks.TaskShape(64).words)
    assert tasks.ignored_label("task2") == 0 and tasks.ignored_label("task1") is None
    assert len(tasks.vocabulary()) == tasks.VOCAB_SIZE and tasks.vocabulary()[:5] == tasks.SPECIALS


def model(encoding: str, arch: str, seed: int = 0) -> PositionModel:
    torch.manual_seed(seed)
    return PositionModel(Shape(32, 4, 64, 2, 16, 50, dropout=0.0), encoding, arch).eval()


def test_nope_in_the_authors_architecture_cannot_see_order_and_the_causal_decoder_can():
    """No mask, keys and values from the embeddings, mean pooling: NoPE's output is exactly invariant to a
    permutation of the positions, so Task 1 is out of its reach; a causal decoder's is not."""
    ids = torch.randint(5, 50, (3, 16))
    perm = torch.randperm(16)
    with torch.no_grad():
        a = model("nope", "authors")
        assert torch.allclose(a(ids), a(ids[:, perm]), atol=1e-5)
        d = model("nope", "decoder")
        assert not torch.allclose(d(ids), d(ids[:, perm]), atol=1e-3)
        for encoding in ("rope", "absolute", "alibi", "rope-k1"):  # every encoding breaks the symmetry
            m = model(encoding, "authors")
            assert not torch.allclose(m(ids), m(ids[:, perm]), atol=1e-4), encoding


@pytest.mark.parametrize("encoding", ["rope", "mla"])
def test_the_causal_decoder_reads_no_later_token(encoding):
    """Changing the last token changes nothing before it: the decoder's state at position t sees positions <= t."""
    m = model(encoding, "decoder")
    ids = torch.randint(5, 50, (2, 16))
    states = {}
    m.blocks[-1].register_forward_hook(lambda mod, args, out: states.setdefault(len(states), out))
    with torch.no_grad():
        m(ids)
        changed = ids.clone()
        changed[:, -1] = (changed[:, -1] + 1 - 5) % 45 + 5
        m(changed)
    assert torch.allclose(states[0][:, :-1], states[1][:, :-1], atol=1e-6)
    assert not torch.allclose(states[0][:, -1], states[1][:, -1], atol=1e-4)


def test_zeroing_a_head_is_the_authors_ablation_its_value_rows_zeroed():
    m = model("rope", "authors")
    ids = torch.randint(5, 50, (2, 16))
    with torch.no_grad():
        m.zeroed = {(0, 2)}
        zeroed = m(ids)
        m.zeroed = set()
        v = m.blocks[0].attn.v
        dh = 32 // 4
        v.weight[2 * dh : 3 * dh] = 0
        v.bias[2 * dh : 3 * dh] = 0
        assert torch.allclose(m(ids), zeroed, atol=1e-6)


def test_partial_rope_rotates_the_first_k_heads_only():
    assert [rope_heads(e, 4) for e in ENCODINGS] == [4, 0, 0, 0, 0, 1, 2, 3, 0]


def test_a_size_too_shallow_for_a_reading_is_deepened_by_its_registered_sibling_alone(monkeypatch):
    # the pilot's three-layer sibling differs from it in depth alone, and trains as the pilot does in each architecture
    assert at_depth("pilot", 3) == "pilot3" and at_depth("pilot", 2) == "pilot"
    assert at_depth("smoke", 3) == "smoke" and at_depth("paper", 3) == "paper" and at_depth("pilot", 4) is None
    assert SIZES["pilot3"].shape.layers == 3 and SIZES["pilot3"].shape.d_model == SIZES["pilot"].shape.d_model
    assert SyntheticSpec("task1", "rope", "authors", "pilot3").recipe.lr == PILOT_AUTHORS_LR
    assert SyntheticSpec("task1", "rope", "decoder", "pilot3").recipe == SIZES["pilot"].recipe
    assert SyntheticSpec("task1", "rope", size="pilot3").key() != SyntheticSpec("task1", "rope", size="pilot").key()
    # a sibling of another width or recipe is not the same model made deeper
    pilot = SIZES["pilot"]
    monkeypatch.setitem(SIZES, "wide4", replace(pilot, shape=replace(pilot.shape, layers=4, d_model=96)))
    monkeypatch.setitem(
        SIZES, "fast4", replace(pilot, shape=replace(pilot.shape, layers=4), recipe=replace(pilot.recipe, lr=1))
    )
    assert at_depth("pilot", 4) is None
    monkeypatch.setitem(SIZES, "pilot5", replace(pilot, shape=replace(pilot.shape, layers=5)))
    assert at_depth("pilot", 4) == "pilot5"


def test_training_is_seeded_cached_and_resumes_where_it_stopped(cache):
    spec = SyntheticSpec("task1", "rope", "authors", "smoke", seed=5)
    lines = []

    def stop_after_two(line):
        lines.append(line)
        if "epoch 2/" in line:
            raise KeyboardInterrupt  # interrupted after the second epoch's checkpoint

    with pytest.raises(KeyboardInterrupt):
        train(spec, log=stop_after_two)
    resumed = train(spec, log=lines.append)
    assert any("resuming after epoch 2/" in line for line in lines)
    assert (folder(spec) / "final.pt").is_file() and not (folder(spec) / "checkpoint.pt").exists()
    assert len(resumed.info["losses"]) == SIZES["smoke"].recipe.epochs
    again = []
    cached = train(spec, log=again.append)
    assert again == [] and cached.info == resumed.info  # from the cache: nothing trained
    (cache / "other").mkdir()
    fresh = train(spec, log=lambda line: None)  # the same key: the cache
    assert fresh.info == resumed.info
    other = SyntheticSpec("task1", "rope", "authors", "smoke", seed=6)
    assert other.key() != spec.key() and other.name != spec.name


def test_the_head_map_finds_a_planted_deposit_head_and_not_a_spread_one(cache, monkeypatch):
    trained = train(SyntheticSpec("task1", "nope", "authors", "smoke"), log=lambda line: None)
    n = 400
    rng = np.random.default_rng(0)
    base = rng.random(n) < 0.9

    def planted(drops):
        def correct(model, ids, labels, task):
            (head,) = [h for _, h in model.zeroed] or [None]
            if head is None:
                return base
            return base & (rng.random(n) >= drops[head])

        return correct

    monkeypatch.setattr(ablation, "data", lambda spec: {"test": (np.zeros((n, 4), int), np.zeros(n, int))})
    monkeypatch.setattr(ablation, "correct", planted([0.7, 0.03, 0.02, 0.03]))
    d = ablation.deposit_of(ablation.head_map(trained))
    assert d.head == 0 and d.share > 0.75 and np.nanquantile(d.share_rows, 0.025) > 0.5
    monkeypatch.setattr(ablation, "correct", planted([0.2, 0.2, 0.2, 0.2]))
    spread = ablation.deposit_of(ablation.head_map(trained))
    assert spread.share < 0.4 and np.nanquantile(spread.share_rows, 0.975) < 0.5


@pytest.mark.parametrize("arch", ["authors", "decoder"])
@pytest.mark.parametrize("encoding", ["rope", "alibi", "relative", "nope", "rope-k1"])
def test_the_fused_attention_is_the_eager_softmax_of_scores_plus_bias(encoding, arch):
    """softmax(q.k / sqrt(d) + bias) v written out by hand, against the module's fused kernel: ALiBi's and the
    relative bias, the causal mask and partial RoPE all enter as the eager product would have them."""
    torch.manual_seed(0)
    shape = Shape(32, 4, 64, 1, 16, tasks.N_CLASSES)
    attn = PositionModel(shape, encoding, arch).blocks[0].attn.eval()
    x, source = torch.randn(3, 16, 32), torch.randn(3, 16, 32)
    with torch.no_grad():
        fused = attn(x, source, [])
        q, k, v = attn.split(attn.q(x)), attn.split(attn.k(source)), attn.split(attn.v(source))
        if attn.n_rope:
            r = attn.n_rope
            q = torch.cat([rotate(q[:, :r], 16), q[:, r:]], dim=1)
            k = torch.cat([rotate(k[:, :r], 16), k[:, r:]], dim=1)
        scores = q @ k.transpose(-1, -2) / (32 // 4) ** 0.5
        if encoding == "alibi":
            scores = scores + attn.alibi
        if encoding == "relative":
            scores = scores + attn.relative[:, attn.offset_index]
        if arch == "decoder":
            scores = scores + attn.causal
        eager = attn.o((scores.softmax(-1) @ v).transpose(1, 2).reshape(x.shape))
    torch.testing.assert_close(fused, eager, rtol=1e-5, atol=1e-6)


def test_the_gpu_script_writes_a_models_training_record_and_head_maps(cache, tmp_path):
    """benchmarks/synthetic_gpu.py at smoke size on the CPU: the record and its table, the weights kept, a model that
    learned nothing mapped without a share; a layer the size lacks refused in one line before any training."""
    from benchmarks import synthetic_gpu

    out = tmp_path / "out"
    with pytest.raises(SystemExit):
        synthetic_gpu.main(
            ["--encoding", "rope", "--size", "smoke", "--device", "cpu", "--out", str(out), "--layers", "5"]
        )
    assert not list(cache.glob("synthetic/*"))
    assert (
        synthetic_gpu.main(
            [
                "--encoding",
                "rope",
                "--size",
                "smoke",
                "--device",
                "cpu",
                "--out",
                str(out),
                "--layers",
                "0",
                "--keep-weights",
            ]
        )
        == 0
    )
    name = "task1-rope-authors-smoke-s0"
    record = json.loads((out / f"{name}.json").read_text())
    assert record["training"]["epochs"] == SIZES["smoke"].recipe.epochs and record["facts"]["device"] == "cpu"
    (layer,) = record["layers"]
    assert layer["layer"] == 0 and len(layer["effects"]) == len(layer["effects_ci"]) == SIZES["smoke"].shape.heads
    assert (layer["deposit"] is None) == ("no_deposit" in layer)
    assert (out / f"{name}.pt").is_file() and f"### {name}" in (out / f"{name}.md").read_text()


def test_a_gpu_lease_too_short_leaves_a_checkpoint_the_next_one_resumes(cache, tmp_path, monkeypatch, capsys):
    """``--time-limit``: training stops after the epoch in which the limit passed, the checkpoint is copied out; put
    under another machine's cache, training resumes from that epoch and finishes."""
    from benchmarks import synthetic_gpu

    out = tmp_path / "out"
    args = ["--encoding", "nope", "--size", "smoke", "--device", "cpu", "--out", str(out), "--layers", "0"]
    assert synthetic_gpu.main([*args, "--time-limit", "0"]) == 0
    spec = SyntheticSpec("task1", "nope", "authors", "smoke")
    kept = out / folder(spec).name / "checkpoint.pt"
    assert kept.is_file() and "stopped after epoch 1/" in capsys.readouterr().out
    assert not (out / f"{spec.name}.json").exists()  # no record of a model not trained
    other = tmp_path / "next-machine"
    (other / "synthetic" / kept.parent.name).mkdir(parents=True)
    kept.rename(other / "synthetic" / kept.parent.name / "checkpoint.pt")
    monkeypatch.setenv("ABSPOS_CACHE", str(other))
    assert synthetic_gpu.main(args) == 0
    assert "resuming after epoch 1/" in capsys.readouterr().out
    record = json.loads((out / f"{spec.name}.json").read_text())
    assert len(record["training"]["losses"]) == SIZES["smoke"].recipe.epochs


def test_the_additive_alignment_reads_a_planted_table_kept_diluted_and_written_over():
    """DS5's statistic on planted position-mean residuals: the added table kept reads alignment and amount near 1;
    outweighed by another position code, a small alignment but the amount still 1; written over by that code, both
    near 0."""
    from harness.synthetic.directions import alignment
    from harness.synthetic.model import sinusoidal

    rng = np.random.default_rng(0)
    table = sinusoidal(32, 16).numpy()
    other = np.linalg.qr(rng.normal(size=(32 * 16, 2)))[0][:, 1].reshape(32, 16)  # another code of position
    other -= other.mean(axis=0)
    other -= (other * (table - table.mean(0))).sum() / ((table - table.mean(0)) ** 2).sum() * (table - table.mean(0))
    other *= np.linalg.norm(table - table.mean(0)) / np.linalg.norm(other)  # as large as the table, orthogonal to it
    token_means = rng.normal(scale=0.01, size=(32, 16))
    for residual, cosine, amount in [
        (token_means + table, 1.0, 1.0),
        (token_means + table + 10 * other, 0.0995, 1.0),  # 1 / sqrt(1 + 100)
        (token_means + other, 0.0, 0.0),
    ]:
        assert alignment(residual, table) == pytest.approx(cosine, abs=0.01)
        assert alignment(residual, table, retained=True) == pytest.approx(amount, abs=0.01)
    batch = np.stack([token_means + table, token_means + other])  # rows, as the bootstrap gives them
    np.testing.assert_allclose(alignment(batch, table), [1.0, 0.0], atol=0.01)


def test_the_residual_streams_are_the_input_and_each_blocks_output(cache):
    """The hooks read the input embedding (tokens plus the added table) and each block's output; the last one is what
    the pooling reads (the authors' architecture has no final LayerNorm)."""
    from harness.synthetic.directions import residual_streams

    spec = SyntheticSpec("task1", "rope", "authors", "smoke")
    torch.manual_seed(0)
    model = PositionModel(SIZES["smoke"].shape, "rope", "authors").eval()
    trained = types.SimpleNamespace(spec=spec, model=model)
    ids = tasks.task1(5, SIZES["smoke"].shape.seq_len, seed=0)[0]
    streams = residual_streams(trained, ids, batch=2)
    assert len(streams) == len(model.blocks) + 1 and all(s.shape == (5, ids.shape[1], 32) for s in streams)
    x = torch.as_tensor(ids)
    with torch.no_grad():
        h = embedded = model.embed(x) + model.position[: ids.shape[1]]
        np.testing.assert_allclose(streams[0], embedded.numpy(), rtol=1e-6)
        for k, block in enumerate(model.blocks):
            h = block(h, embedded, [])
            np.testing.assert_allclose(streams[k + 1], h.numpy(), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(model.head(h.mean(1)).numpy(), model(x).numpy(), rtol=1e-5, atol=1e-6)


def test_the_alignment_is_not_pulled_to_zero_by_sampling_noise_and_refuses_a_non_finite_mean():
    """Residuals that are the added table plus large per-sample noise: the naive cosine of the sample mean falls well
    below 1 (|m|² carries tr Cov / N), the noise-corrected one is near 1 and its interval covers 1; a NaN is an
    error, never a small (passing) alignment."""
    from harness.stats import intervals
    from harness.synthetic.directions import alignment, layer_alignment
    from harness.synthetic.model import sinusoidal

    table = sinusoidal(16, 8).numpy()
    rng = np.random.default_rng(1)
    h = table + rng.normal(scale=8.0, size=(200, 16, 8))
    w = intervals.bootstrap_weights(200, 400, 0) / 200
    a, rows, r, r_rows = layer_alignment(h, table, w)
    assert alignment(h.mean(axis=0), table) < 0.85  # the naive reading, biased towards "displaced"
    assert a == pytest.approx(1.0, abs=0.1) and r == pytest.approx(1.0, abs=0.25)
    lo, hi = intervals.percentile_ci(rows, n=200)
    assert lo < 1.0 <= hi + 1e-9 and rows.shape == r_rows.shape == (400,)
    with pytest.raises(ValueError, match="not finite"):
        alignment(np.full((16, 8), np.nan), table)
