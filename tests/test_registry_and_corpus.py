"""Registry errors, offline lookup of paper weights, and the corpus builders (no model weights needed)."""

import json

import numpy as np
import pytest

from harness.capture import corpus
from harness.model.devices import estimate_param_bytes
from harness.model.hooks import check_supported
from harness.model.weights import paper_folder
from harness.spec.models import (
    REGISTRY,
    UnknownModelError,
    UnsupportedModelError,
    WeightsUnavailable,
    get_spec,
    names,
)


def test_unknown_model_names_the_supported_ones():
    with pytest.raises(UnknownModelError) as e:
        get_spec("gpt-5")
    msg = str(e.value)
    assert "gpt-5" in msg and "smollm2-135m" in msg and "llama-3.2-3b" in msg


def test_every_spec_is_well_formed():
    for spec in REGISTRY.values():
        assert spec.family in ("llama", "qwen", "mistral", "gemma")
        assert spec.group in ("bundled", "extra", "paper", "tiny")
        assert spec.adds_bos == (spec.bos_token_id is not None)
    assert len(names("bundled")) == 3 and len(names("paper")) == 5 and len(names("tiny")) == 4
    assert names("extra") == ["qwen2.5-coder-1.5b"]


def test_missing_paper_weights_give_a_one_line_howto(tmp_path, monkeypatch):
    monkeypatch.setenv("ABSPOS_MODELS_DIR", str(tmp_path))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(WeightsUnavailable) as e:
        paper_folder(get_spec("llama-3.2-1b"))
    assert "\n" not in str(e.value) and "ABSPOS_MODELS_DIR" in str(e.value)


def test_model_without_rope_is_refused():
    from transformers import GPT2Config, GPT2LMHeadModel

    model = GPT2LMHeadModel(GPT2Config(n_layer=1, n_embd=32, n_head=2, vocab_size=64))
    with pytest.raises(UnsupportedModelError, match="cannot handle"):
        check_supported(model, "gpt2")


class ToyTokenizer:
    """Whitespace tokenizer with a tiny vocabulary: enough to test the corpus builders without a model."""

    all_special_ids = [0, 1, 2]
    added_tokens_decoder = {}

    def __init__(self):
        self.vocab = {}

    def __call__(self, text, add_special_tokens=False):
        return {"input_ids": [3 + hash(w) % 997 for w in text.split()] or [4]}

    def __len__(self):
        return 1000

    def decode(self, ids):
        return "" if ids[0] == 5 else f"t{ids[0]}"


@pytest.fixture
def wiki_available():
    try:
        corpus.topic_texts("wiki")
    except WeightsUnavailable as e:
        pytest.skip(str(e))


def test_topic_prompts_are_balanced_fixed_length_and_seeded(wiki_available):
    tok, spec = ToyTokenizer(), get_spec("tiny-llama")
    a = corpus.topic_prompts(tok, spec, 8, 64, seed=3)
    b = corpus.topic_prompts(tok, spec, 8, 64, seed=3)
    assert a.ids.shape == (8, 64) and np.array_equal(a.ids, b.ids)
    assert np.all(a.ids[:, 0] == spec.bos_token_id)
    assert np.bincount(a.labels).tolist() == [2, 2, 2, 2]
    no_bos = corpus.topic_prompts(tok, get_spec("tiny-qwen2"), 8, 64, seed=3)
    assert np.array_equal(no_bos.ids[:, :5], a.ids[:, 1:6])
    with pytest.raises(ValueError, match="multiple of 4"):
        corpus.topic_prompts(tok, spec, 6, 64)


def test_sink_variants(wiki_available):
    tok, spec = ToyTokenizer(), get_spec("tiny-llama")
    text = corpus.topic_prompts(tok, spec, 4, 32, seed=0)
    moved = corpus.bos_at(text, spec, 8)
    assert np.all(moved.ids[:, 8] == spec.bos_token_id) and np.all(moved.ids[:, :8] != spec.bos_token_id)
    assert np.array_equal(moved.ids[:, :8], text.ids[:, 1:9]) and moved.ids.shape == text.ids.shape
    rnd = corpus.random_token_at_zero(text, tok, seed=0)
    assert np.all(rnd.ids[:, 0] >= 500) and np.array_equal(rnd.ids[:, 1:], text.ids[:, 1:])
    with pytest.raises(ValueError, match="does not auto-prepend"):
        corpus.bos_at(text, get_spec("tiny-qwen2"), 8)


def test_random_token_control_avoids_special_and_blank_tokens():
    tok = ToyTokenizer()
    ps = corpus.random_token_prompts(tok, get_spec("tiny-qwen2"), 4, 200, seed=0)
    assert not np.isin(ps.ids, [0, 1, 2, 5]).any()


# published parameter counts (model cards): the paper models' registry shapes must reproduce them
PUBLISHED_PARAMS = {
    "llama-3.2-1b": 1.24e9,
    "llama-3.2-3b": 3.21e9,
    "llama-3.1-8b": 8.03e9,
    "qwen-2.5-3b": 3.09e9,
    "mistral-7b-v0.3": 7.25e9,
}


@pytest.mark.parametrize("name", names("paper"))
def test_paper_shape_reproduces_the_published_parameter_count(name):
    params = estimate_param_bytes(get_spec(name).config, "float32") / 4
    assert params == pytest.approx(PUBLISHED_PARAMS[name], rel=0.01)


@pytest.mark.parametrize("name", names("paper"))
def test_paper_shape_matches_the_checkpoint_config_when_present(name):
    spec = get_spec(name)
    try:
        folder = paper_folder(spec)
    except WeightsUnavailable as e:
        pytest.skip(str(e))
    config = json.loads((folder / "config.json").read_text())
    assert {k: config.get(k) for k in spec.config if k != "rope_theta"} == {
        k: v for k, v in spec.config.items() if k != "rope_theta"
    }
