"""The paper's five models at their exact published configs (harness/spec/paper_configs.py), and rehearsal builds of
them (harness/model/rehearsal.py): fewer layers and a narrower width, everything else as published.

(a) a rehearsal config is the published one but for ``DEPTH_AND_WIDTH``, keeping head_dim, the GQA ratio, RoPE type
and scaling, vocabulary and special-token ids; (b) the registry's spec of each paper model agrees with its published
config; (c) a rehearsal build in a temporary ``$ABSPOS_MODELS_DIR`` is found and loaded clean by the project's own
loading path for paper models (``weights.paper_folder`` / ``load_pretrained`` / ``check_loading``), with the published
RoPE scaling, tying and sliding window, and the registry's own spec refuses it by shape; (d) a "full" build, which has
the published config exactly, is refused (by its REHEARSAL.json marker) wherever a model is loaded to be measured."""

from __future__ import annotations

import json
import math
import shutil

import pytest
import torch

from harness.model import weights
from harness.model.rehearsal import (
    DEPTH_AND_WIDTH,
    MARKER,
    MLP_WIDTH_CAP,
    REHEARSAL_LAYERS,
    build_rehearsal,
    paper_layout,
    rehearsal_config,
    rehearsal_spec,
)
from harness.spec.models import LLAMA_1B, MISTRAL, UnknownModelError, WrongWeights, get_spec, names
from harness.spec.paper_configs import (
    PAPER_CONFIGS,
    QKV_BIAS,
    SOURCES,
    TOKENIZER_BOS,
    gqa_ratio,
    head_dim,
)

PAPER = names("paper")
ABSENT = object()


def effective_sliding_window(config: dict) -> int | None:
    """The attention window a config gives in effect: Qwen2's ``sliding_window`` counts only with
    ``use_sliding_window`` (as transformers reads it); None is full attention."""
    if config.get("use_sliding_window") is False:
        return None
    return config.get("sliding_window")


def rope(config: dict) -> dict:
    """A published config's RoPE as one dict: its rope_scaling (none: default) with rope_theta."""
    return {**(config.get("rope_scaling") or {"rope_type": "default"}), "rope_theta": config["rope_theta"]}


def loaded_rope(config) -> dict:
    """A loaded transformers config's RoPE, as ``rope``: ``rope_parameters`` from transformers 5, else 4.x's
    ``rope_scaling`` and ``rope_theta``."""
    params = getattr(config, "rope_parameters", None)
    if params is None:
        params = {**(config.rope_scaling or {"rope_type": "default"}), "rope_theta": config.rope_theta}
    return dict(params)


def test_the_paper_configs_are_the_registrys_paper_models_each_with_its_sources():
    assert list(PAPER_CONFIGS) == PAPER == list(SOURCES) == list(QKV_BIAS) == list(TOKENIZER_BOS)
    for name in PAPER:
        assert SOURCES[name]["config"] == f"https://huggingface.co/{get_spec(name).hub_id}/blob/main/config.json"
        assert SOURCES[name]["agrees"], f"{name}: no independent source cited"


@pytest.mark.parametrize("name", PAPER)
def test_a_rehearsal_config_is_the_published_one_but_for_depth_and_width(name):
    public, small = PAPER_CONFIGS[name], rehearsal_config(name)
    differ = {k for k in public.keys() | small.keys() if public.get(k, ABSENT) != small.get(k, ABSENT)}
    assert differ - {"head_dim"} <= set(DEPTH_AND_WIDTH), differ
    assert head_dim(small) == small["head_dim"] == head_dim(public)  # stated explicitly, at the published width
    assert gqa_ratio(small) == gqa_ratio(public)
    assert rope(small) == rope(public) and small.get("rope_scaling") == public.get("rope_scaling")
    for key in ("vocab_size", "bos_token_id", "eos_token_id", "tie_word_embeddings", "max_position_embeddings"):
        assert small[key] == public[key], key
    assert effective_sliding_window(small) == effective_sliding_window(public)
    # smaller in depth and width, consistently
    assert small["num_hidden_layers"] == REHEARSAL_LAYERS < public["num_hidden_layers"]
    assert small["hidden_size"] == small["num_attention_heads"] * head_dim(small) < public["hidden_size"]
    assert small["num_key_value_heads"] < public["num_key_value_heads"] or small["num_key_value_heads"] == 1
    scaled = public["intermediate_size"] * small["hidden_size"] / public["hidden_size"]  # the published ratio, capped
    assert small["intermediate_size"] == min(scaled, MLP_WIDTH_CAP * small["hidden_size"])
    if "max_window_layers" in public:  # as many of the layers below the window as published (all of them, for Qwen)
        assert small["max_window_layers"] * public["num_hidden_layers"] == (
            public["max_window_layers"] * small["num_hidden_layers"]
        )


@pytest.mark.parametrize("name", PAPER)
def test_the_full_size_is_the_published_config_and_a_copy_of_it(name):
    full = rehearsal_config(name, "full")
    assert full == PAPER_CONFIGS[name] and full is not PAPER_CONFIGS[name]
    full["rope_theta"] = 0.0
    assert rehearsal_config(name, "full") == PAPER_CONFIGS[name]


def test_a_name_or_size_that_is_not_one_is_refused_in_one_line():
    with pytest.raises(UnknownModelError, match="not a paper model") as e:
        rehearsal_config("tiny-llama")
    assert "\n" not in str(e.value)
    with pytest.raises(ValueError, match="size 'half': expected one of rehearsal, full"):
        rehearsal_config(LLAMA_1B, "half")


@pytest.mark.parametrize("name", PAPER)
def test_the_registry_spec_agrees_with_the_published_config(name):
    spec, public = get_spec(name), PAPER_CONFIGS[name]
    assert [spec.architecture] == public["architectures"]
    assert spec.rope_theta == public["rope_theta"]
    assert spec.context == public["max_position_embeddings"]
    assert spec.sliding_window == effective_sliding_window(public)
    assert (spec.adds_bos, spec.bos_token_id) == TOKENIZER_BOS[name]
    if spec.adds_bos:  # the BOS prepended is config.json's (Qwen's names <|endoftext|>, which it never prepends)
        assert spec.bos_token_id == public["bos_token_id"]
    published_shape = {k: head_dim(public) if k == "head_dim" else public[k] for k in spec.config}
    assert spec.config == published_shape


def test_llama_3_scaling_differs_between_3_1_and_3_2_and_only_llama_has_any():
    factors = {n: (c.get("rope_scaling") or {}).get("factor") for n, c in PAPER_CONFIGS.items()}
    assert factors == {
        "llama-3.2-1b": 32.0,
        "llama-3.2-3b": 32.0,
        "llama-3.1-8b": 8.0,
        "qwen-2.5-3b": None,
        MISTRAL: None,
    }
    tied = {n for n, c in PAPER_CONFIGS.items() if c["tie_word_embeddings"]}
    assert tied == {"llama-3.2-1b", "llama-3.2-3b", "qwen-2.5-3b"}


def llama3_inv_freq(config: dict) -> torch.Tensor:
    """Llama 3's scaled inverse frequencies, written from Meta's reference ``apply_scaling`` (llama-models
    llama3/model.py) with the config's factors instead of its hard-coded 8: an independent check of transformers'."""
    s, dim = config["rope_scaling"], head_dim(config)
    freqs = 1.0 / (config["rope_theta"] ** (torch.arange(0, dim, 2).double() / dim))
    old = s["original_max_position_embeddings"]
    low_wavelen, high_wavelen = old / s["low_freq_factor"], old / s["high_freq_factor"]
    wavelen = 2 * math.pi / freqs
    scaled = torch.where(wavelen > low_wavelen, freqs / s["factor"], freqs)
    smooth = (old / wavelen - s["low_freq_factor"]) / (s["high_freq_factor"] - s["low_freq_factor"])
    mid = (wavelen >= high_wavelen) & (wavelen <= low_wavelen)
    return torch.where(mid, (1 - smooth) * scaled / s["factor"] + smooth * scaled, scaled)


def stand_in_tokenizer(name, folder):
    """A word-level tokenizer over the model's vocabulary with its BOS and EOS at their ids: for when the project's
    ``save_paper_tokenizer`` is not there (its own tests test it)."""
    from tokenizers import Tokenizer, models
    from transformers import PreTrainedTokenizerFast

    config = PAPER_CONFIGS[name]
    special = {config["bos_token_id"]: "<bos>", config["eos_token_id"]: "<eos>"}
    vocab = {special.get(i, f"t{i}"): i for i in range(config["vocab_size"])}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="t0"))
    bos, eos = special[config["bos_token_id"]], special[config["eos_token_id"]]
    PreTrainedTokenizerFast(tokenizer_object=tok, bos_token=bos, eos_token=eos).save_pretrained(folder)


def tokenizer_writer():
    try:
        from harness.model.tokenizers import save_paper_tokenizer
    except ImportError:
        return stand_in_tokenizer
    return save_paper_tokenizer


@pytest.fixture
def models_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("ABSPOS_MODELS_DIR", str(tmp_path / "models"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))  # never a real checkpoint from this machine's cache
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return tmp_path / "models"


@pytest.mark.long
@pytest.mark.parametrize("name", [LLAMA_1B, MISTRAL])
def test_a_rehearsal_build_loads_clean_through_the_paper_loading_path(models_dir, name):
    public = PAPER_CONFIGS[name]
    folder = build_rehearsal(name, "rehearsal", paper_layout(name, models_dir), save_tokenizer=tokenizer_writer())
    assert folder == models_dir / get_spec(name).hub_id
    assert {"config.json", "model.safetensors", MARKER} <= {p.name for p in folder.iterdir()}
    assert [p.name for p in folder.parent.iterdir()] == [folder.name]  # no temporary folder left beside it
    assert json.loads((folder / "config.json").read_text()) == {**rehearsal_config(name), "torch_dtype": "float32"}

    with pytest.raises(WrongWeights, match="holds another model") as e:  # the registry's spec: not the paper model
        weights.paper_folder(get_spec(name))
    assert str(folder) in str(e.value)
    spec = rehearsal_spec(name)
    assert weights.paper_folder(spec) == folder
    model, tok = weights.load_pretrained(spec, "float32", "cpu", log=lambda *a: None)  # check_loading: no missing,
    # unexpected or mismatched weights
    config = model.config
    assert loaded_rope(config) == rope(public)
    assert config.tie_word_embeddings is public["tie_word_embeddings"]
    tied = model.get_output_embeddings().weight.data_ptr() == model.get_input_embeddings().weight.data_ptr()
    assert tied is public["tie_word_embeddings"]
    assert getattr(config, "sliding_window", None) == effective_sliding_window(public)
    assert (config.max_position_embeddings, config.rms_norm_eps) == (
        public["max_position_embeddings"],
        public["rms_norm_eps"],
    )
    assert (config.bos_token_id, config.eos_token_id, config.vocab_size) == (
        public["bos_token_id"],
        public["eos_token_id"],
        public["vocab_size"],
    )
    assert (config.num_hidden_layers, config.head_dim) == (REHEARSAL_LAYERS, head_dim(public))
    assert tok.bos_token_id == public["bos_token_id"]
    if "rope_scaling" in public:  # transformers' llama3 frequencies are Meta's formula at the published factor
        inv_freq = model.model.rotary_emb.inv_freq.double()
        assert torch.allclose(inv_freq, llama3_inv_freq(public), rtol=1e-5)
        other = {**public, "rope_scaling": {**public["rope_scaling"], "factor": 40.0}}  # and the factor matters
        assert not torch.allclose(inv_freq, llama3_inv_freq(other), rtol=1e-5)


def test_a_build_never_replaces_an_existing_folder(tmp_path):
    folder = tmp_path / "meta-llama" / "Llama-3.2-1B"
    folder.mkdir(parents=True)
    (folder / "config.json").write_text("{}")
    with pytest.raises(FileExistsError, match="never replaces a folder") as e:
        build_rehearsal(LLAMA_1B, "rehearsal", folder, save_tokenizer=stand_in_tokenizer)
    assert "\n" not in str(e.value) and [p.name for p in folder.iterdir()] == ["config.json"]
    assert sorted(p.name for p in folder.parent.iterdir()) == ["Llama-3.2-1B"]


def test_a_full_build_under_the_paper_models_name_is_refused_in_one_line(models_dir, monkeypatch):
    """A "full" build has the published config exactly, so it passes the identity check; its REHEARSAL.json marker is
    what keeps it from being measured as the paper's model (a verdict on random weights): refused by the paper
    loading path and as an hf: or path: reference, loaded only through ``rehearsal_spec``. (The weights are a stand-in
    file: the refusal reads only the folder, and Llama-3.2-1B in float32 would be ~5 GB.)"""
    from harness.model import references, rehearsal

    def stand_in_weights(config, folder, seed, note):
        (folder / "config.json").write_text(json.dumps({**config, "torch_dtype": "float32"}))
        (folder / "model.safetensors").write_bytes(b"")

    monkeypatch.setattr(rehearsal, "_write_weights", stand_in_weights)
    folder = build_rehearsal(LLAMA_1B, "full", paper_layout(LLAMA_1B, models_dir), save_tokenizer=lambda n, f: None)

    def refusal(name, where=folder):
        return (
            f"{name}: {where} holds a full-size rehearsal build of {LLAMA_1B} (random weights: it carries {MARKER}), not "
            "trained weights; refusing to measure it (a rehearsal loads only as such: "
            "harness.model.rehearsal.rehearsal_spec)"
        )

    weights.check_identity(get_spec(LLAMA_1B), folder)  # the published config: its shape alone would pass
    for load in (
        weights.paper_folder,
        weights.ensure_available,
        lambda s: weights.load_pretrained(s, "float32", "cpu"),
    ):
        with pytest.raises(WrongWeights) as e:
            load(get_spec(LLAMA_1B))
        assert str(e.value) == refusal(LLAMA_1B)
    copy = shutil.copytree(folder, models_dir / "acme" / "rehearsed")  # the same build under no paper model's name
    for token, said in (
        ("hf:meta-llama/Llama-3.2-1B", refusal(LLAMA_1B)),
        (f"path:{folder}", refusal(f"path:{folder}")),
        ("hf:acme/rehearsed", refusal("hf:acme/rehearsed", copy)),
    ):
        with pytest.raises(WrongWeights) as e:
            references.register(token, log=lambda *a: None)
        assert str(e.value) == said
    assert weights.paper_folder(rehearsal_spec(LLAMA_1B, "full")) == folder  # as a rehearsal: found
    (folder / MARKER).unlink()
    assert weights.paper_folder(get_spec(LLAMA_1B)) == folder  # what the marker prevents
