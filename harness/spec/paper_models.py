"""The paper's five models, one declaration each: adding a paper model is one ``PaperModel`` here.

A declaration holds everything the suite knows of a published model: its registry ``spec`` (family, BOS policy, RoPE
variant, the shape a loaded config is checked against, its Hugging Face repo, whose name is its name in the report and
the plots), its public ``config.json`` field for field, what that file does not say but the architecture fixes
(``qkv_bias``: Qwen2's q/k/v biases are hard-wired in transformers' ``Qwen2Attention``; Llama states
``attention_bias: false``; Mistral has none), which published tokenizer it uses and whether that tokenizer prepends a
BOS (from its ``tokenizer_config.json``/``tokenizer.json``: Qwen's ``config.json`` names ``bos_token_id`` 151643,
``<|endoftext|>``, but its tokenizer prepends nothing), what identifies its published checkpoint, where each value
comes from, and the colour and marker of its paper-value marks in the plots. harness/spec/models.py registers the specs;
harness/spec/paper_configs.py, harness/model/tokenizers.py and harness/report/plot_style.py read the rest.

``config`` is every field of the published file but two that describe the stored checkpoint rather than the
architecture: ``torch_dtype`` (bfloat16 for all five) and ``transformers_version`` (not kept). It holds Llama 3's
``rope_scaling`` (``llama3``: factor 32 for Llama 3.2, 8 for Llama 3.1), tied embeddings, GQA, ``head_dim`` where the
file states it, ``rms_norm_eps``, the special-token ids, the context, Qwen's sliding-window fields (present but
switched off) and Mistral v0.3's ``sliding_window: null``. Values were taken from the published files as of this
writing; none could be fetched from this machine (no hub), so each was checked against at least one independent copy
or reimplementation named in its ``sources``.

``published`` identifies the checkpoint beyond the shape its config gives, checked once per folder before it is
measured (harness.model.checkpoint_checks). The published weight files' sha256 could not be read from this machine (no
hub) nor found in a public copy, so none is recorded (``weights_sha256``, {file: sha256}, is empty; hashes added there
decide, hashed once per folder); the weights are identified instead by what a trained checkpoint has and random or
damaged weights lack: finite values, no matrix of zeros, norm scales that vary (a fresh initialisation sets every one
to 1), matrices whose spreads differ (a fresh initialisation draws every one with std ``initializer_range``), and no
rehearsal mark. The tokenizer is identified by its size (``len(tokenizer)``: Qwen2.5's 151,665 of its 151,936
embedding rows) and the ids of one probe sentence, as the published tokenizer gives them (the ids here are those of
the project's builds from the published tokenizer files, harness.model.tokenizers, which
tests/test_paper_tokenizers.py checks against independent readers of those files).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from harness.spec.model_spec import ModelSpec

#: The paper's models by registry name (the claims' declarations key their paper values by these).
LLAMA_1B, LLAMA_3B, LLAMA_8B, QWEN, MISTRAL = (
    "llama-3.2-1b",
    "llama-3.2-3b",
    "llama-3.1-8b",
    "qwen-2.5-3b",
    "mistral-7b-v0.3",
)


@dataclass(frozen=True)
class PaperModel:
    """One of the paper's published models (the module's docstring says what each field holds)."""

    spec: ModelSpec
    config: Mapping[str, Any]  # the published config.json, field for field
    qkv_bias: bool  # biases on the q/k/v projections (o_proj and the MLP have none)
    tokenizer: str  # the published tokenizer it uses (harness.model.tokenizers builds it; the Llamas share one)
    tokenizer_bos: tuple[bool, int | None]  # (does its tokenizer prepend a BOS token, and which id)
    published: Mapping[str, Any]  # weights_sha256, tokenizer_size, tokenizer_probe
    sources: Mapping[str, Any]  # the config.json URL, and the independent public sources that agree with it
    style: tuple[str, str]  # colour and marker of its paper-value marks in the plots


def _shape(
    hidden: int,
    intermediate: int,
    layers: int,
    heads: int,
    kv_heads: int,
    head_dim: int,
    vocab: int,
    theta: float,
    tied: bool,
) -> dict[str, Any]:
    """The dimensions a loaded config is checked against (weights.check_identity)."""
    return dict(
        hidden_size=hidden,
        intermediate_size=intermediate,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        head_dim=head_dim,
        vocab_size=vocab,
        rope_theta=theta,
        tie_word_embeddings=tied,
    )


def _llama3_rope(factor: float) -> dict[str, Any]:
    """Llama 3's frequency-dependent RoPE scaling (``rope_type`` llama3), as its config.json writes it."""
    return {
        "factor": factor,
        "high_freq_factor": 4.0,
        "low_freq_factor": 1.0,
        "original_max_position_embeddings": 8192,
        "rope_type": "llama3",
    }


TOKENIZER_PROBE = "The capital of France is Paris, and its river is the Seine."
LLAMA3_PROBE = [128000, 791, 6864, 315, 9822, 374, 12366, 11, 323, 1202, 15140, 374, 279, 1369, 483, 13]
_HF = "https://huggingface.co/{}/blob/main/config.json"
_LITGPT = "Lightning-AI/litgpt litgpt/config.py (commit 26857050), entry {}"
_LLAMA_MODELS = "PyPI llama-models 0.3.0, llama_models/sku_list.py arch_args of {} (dim, layers, heads, kv heads, ffn)"
_LLAMA_FACTOR = "github.com/meta-llama/llama-models/issues/166 and /241: rope factor 32 is right for Llama 3.2 1B/3B"
_LLM_PROF = "github.com/citsjtu2020/LLM-Prof sglang/Model_Config.md (a copy of the file)"

PAPER_MODELS: tuple[PaperModel, ...] = (
    PaperModel(
        spec=ModelSpec(
            LLAMA_1B,
            "llama",
            "paper",
            "LlamaForCausalLM",
            "meta-llama/Llama-3.2-1B",
            True,
            128000,
            "standard",
            5e5,
            context=131072,
            hub_id="meta-llama/Llama-3.2-1B",
            config=_shape(2048, 8192, 16, 32, 8, 64, 128256, 5e5, True),
        ),
        config={
            "architectures": ["LlamaForCausalLM"],
            "attention_bias": False,
            "attention_dropout": 0.0,
            "bos_token_id": 128000,
            "eos_token_id": 128001,
            "head_dim": 64,
            "hidden_act": "silu",
            "hidden_size": 2048,
            "initializer_range": 0.02,
            "intermediate_size": 8192,
            "max_position_embeddings": 131072,
            "mlp_bias": False,
            "model_type": "llama",
            "num_attention_heads": 32,
            "num_hidden_layers": 16,
            "num_key_value_heads": 8,
            "pretraining_tp": 1,
            "rms_norm_eps": 1e-05,
            # 32.0, as Meta confirms (meta-llama/llama-models#166, #241), though its reference code hard-codes 8 (that of
            # Llama 3.1). The Llama-3.2 Instruct repos' configs reached 32.0 in a post-release fix (#241 links it); whether
            # this base repo's first revision said otherwise is not known here: compare a local snapshot's config.json
            # with this one (weights.check_identity does not look at rope_scaling).
            "rope_scaling": _llama3_rope(32.0),
            "rope_theta": 500000.0,
            "tie_word_embeddings": True,
            "use_cache": True,
            "vocab_size": 128256,
        },
        qkv_bias=False,
        tokenizer="llama3",
        tokenizer_bos=(True, 128000),
        published={"weights_sha256": {}, "tokenizer_size": 128256, "tokenizer_probe": (TOKENIZER_PROBE, LLAMA3_PROBE)},
        sources={
            "config": _HF.format("meta-llama/Llama-3.2-1B"),
            "agrees": [
                _LLAMA_MODELS.format("Llama3.2-1B: 2048, 16, 32, 8, ffn_dim_multiplier 1.5 -> 8192"),
                _LITGPT.format("Llama-3.2-1B (rope_adjustments factor 32, low 1, high 4, original 8192)"),
                _LLAMA_FACTOR,
                "github.com/kevinstephano/thunder_model_blocks hf_llama/llama_config.py (Llama-3.2-1B-Instruct's file)",
            ],
        },
        style=("#7f2704", "v"),
    ),
    PaperModel(
        spec=ModelSpec(
            LLAMA_3B,
            "llama",
            "paper",
            "LlamaForCausalLM",
            "meta-llama/Llama-3.2-3B",
            True,
            128000,
            "standard",
            5e5,
            context=131072,
            hub_id="meta-llama/Llama-3.2-3B",
            config=_shape(3072, 8192, 28, 24, 8, 128, 128256, 5e5, True),
        ),
        config={
            "architectures": ["LlamaForCausalLM"],
            "attention_bias": False,
            "attention_dropout": 0.0,
            "bos_token_id": 128000,
            "eos_token_id": 128001,
            "head_dim": 128,
            "hidden_act": "silu",
            "hidden_size": 3072,
            "initializer_range": 0.02,
            "intermediate_size": 8192,
            "max_position_embeddings": 131072,
            "mlp_bias": False,
            "model_type": "llama",
            "num_attention_heads": 24,
            "num_hidden_layers": 28,
            "num_key_value_heads": 8,
            "pretraining_tp": 1,
            "rms_norm_eps": 1e-05,
            "rope_scaling": _llama3_rope(32.0),  # see Llama-3.2-1B
            "rope_theta": 500000.0,
            "tie_word_embeddings": True,
            "use_cache": True,
            "vocab_size": 128256,
        },
        qkv_bias=False,
        tokenizer="llama3",
        tokenizer_bos=(True, 128000),
        published={"weights_sha256": {}, "tokenizer_size": 128256, "tokenizer_probe": (TOKENIZER_PROBE, LLAMA3_PROBE)},
        sources={
            "config": _HF.format("meta-llama/Llama-3.2-3B"),
            "agrees": [
                _LLAMA_MODELS.format("Llama3.2-3B: 3072, 28, 24, 8, ffn_dim_multiplier 1.0 -> 8192"),
                _LITGPT.format("Llama-3.2-3B (rope_adjustments factor 32)"),
                _LLAMA_FACTOR,
                _LLM_PROF,
            ],
        },
        style=("#d94801", "^"),
    ),
    PaperModel(
        spec=ModelSpec(
            LLAMA_8B,
            "llama",
            "paper",
            "LlamaForCausalLM",
            "meta-llama/Llama-3.1-8B",
            True,
            128000,
            "standard",
            5e5,
            context=131072,
            hub_id="meta-llama/Llama-3.1-8B",
            config=_shape(4096, 14336, 32, 32, 8, 128, 128256, 5e5, False),
        ),
        config={  # the file states no head_dim: 4096 / 32 = 128  # the file states no head_dim: 4096 / 32 = 128
            "architectures": ["LlamaForCausalLM"],
            "attention_bias": False,
            "attention_dropout": 0.0,
            "bos_token_id": 128000,
            "eos_token_id": 128001,
            "hidden_act": "silu",
            "hidden_size": 4096,
            "initializer_range": 0.02,
            "intermediate_size": 14336,
            "max_position_embeddings": 131072,
            "mlp_bias": False,
            "model_type": "llama",
            "num_attention_heads": 32,
            "num_hidden_layers": 32,
            "num_key_value_heads": 8,
            "pretraining_tp": 1,
            "rms_norm_eps": 1e-05,
            "rope_scaling": _llama3_rope(8.0),
            "rope_theta": 500000.0,
            "tie_word_embeddings": False,
            "use_cache": True,
            "vocab_size": 128256,
        },
        qkv_bias=False,
        tokenizer="llama3",
        tokenizer_bos=(True, 128000),
        published={"weights_sha256": {}, "tokenizer_size": 128256, "tokenizer_probe": (TOKENIZER_PROBE, LLAMA3_PROBE)},
        sources={
            "config": _HF.format("meta-llama/Llama-3.1-8B"),
            "agrees": [
                _LLAMA_MODELS.format("Llama3.1-8B: 4096, 32, 32, 8, ffn_dim_multiplier 1.3 -> 14336"),
                "llama-models 0.3.0 llama3/model.py apply_scaling: factor 8, low 1, high 4, old context 8192",
                _LITGPT.format("Llama-3.1-8B (rope_adjustments factor 8)"),
                _LLM_PROF,
            ],
        },
        style=("#fd8d3c", "<"),
    ),
    PaperModel(
        spec=ModelSpec(
            QWEN,
            "qwen",
            "paper",
            "Qwen2ForCausalLM",
            "Qwen/Qwen2.5-3B",
            False,
            None,
            "large-theta",
            1e6,
            context=32768,
            hub_id="Qwen/Qwen2.5-3B",
            config=_shape(2048, 11008, 36, 16, 2, 128, 151936, 1e6, True),
        ),
        config={  # no head_dim in the file: 2048 / 16 = 128; q/k/v biases: qkv_bias  # no head_dim in the file: 2048 / 16 = 128; q/k/v biases: qkv_bias
            "architectures": ["Qwen2ForCausalLM"],
            "attention_dropout": 0.0,
            "bos_token_id": 151643,  # <|endoftext|>, which the tokenizer never prepends (tokenizer_bos)
            "eos_token_id": 151643,
            "hidden_act": "silu",
            "hidden_size": 2048,
            "initializer_range": 0.02,
            "intermediate_size": 11008,
            "max_position_embeddings": 32768,
            "max_window_layers": 36,  # = num_hidden_layers: no layer would slide even were sliding on
            "model_type": "qwen2",
            "num_attention_heads": 16,
            "num_hidden_layers": 36,
            "num_key_value_heads": 2,
            "rms_norm_eps": 1e-06,
            "rope_theta": 1000000.0,
            "sliding_window": 32768,  # inert: use_sliding_window is false (transformers then sets sliding_window None)
            "tie_word_embeddings": True,
            "use_cache": True,
            "use_mrope": False,
            "use_sliding_window": False,
            "vocab_size": 151936,
        },
        qkv_bias=True,
        tokenizer="qwen2.5",
        tokenizer_bos=(False, None),
        published={
            "weights_sha256": {},
            "tokenizer_size": 151665,
            "tokenizer_probe": (
                TOKENIZER_PROBE,
                [785, 6722, 315, 9625, 374, 12095, 11, 323, 1181, 14796, 374, 279, 1345, 482, 13],
            ),
        },
        sources={
            "config": _HF.format("Qwen/Qwen2.5-3B"),
            "agrees": [
                _LITGPT.format(
                    "Qwen2.5-3B (block 32768, 36 layers, 16 heads, 2 groups, attn_bias, eps 1e-6, base 1e6)"
                ),
                _LLM_PROF,
                "transformers models/qwen2/modeling_qwen2.py: q/k/v_proj bias=True, o_proj bias=False",
            ],
        },
        style=("#54278f", "D"),
    ),
    PaperModel(
        spec=ModelSpec(
            MISTRAL,
            "mistral",
            "paper",
            "MistralForCausalLM",
            "mistralai/Mistral-7B-v0.3",
            True,
            1,
            "standard",
            1e6,
            sliding_window=None,
            context=32768,
            hub_id="mistralai/Mistral-7B-v0.3",
            config=_shape(4096, 14336, 32, 32, 8, 128, 32768, 1e6, False),
        ),
        config={  # no head_dim in the file: 4096 / 32 = 128  # no head_dim in the file: 4096 / 32 = 128
            "architectures": ["MistralForCausalLM"],
            "attention_dropout": 0.0,
            "bos_token_id": 1,
            "eos_token_id": 2,
            "hidden_act": "silu",
            "hidden_size": 4096,
            "initializer_range": 0.02,
            "intermediate_size": 14336,
            "max_position_embeddings": 32768,
            "model_type": "mistral",
            "num_attention_heads": 32,
            "num_hidden_layers": 32,
            "num_key_value_heads": 8,
            "rms_norm_eps": 1e-05,
            "rope_theta": 1000000.0,
            "sliding_window": None,  # v0.2 on: full attention (v0.1 had 4096; transformers' MistralConfig default too)
            "tie_word_embeddings": False,
            "use_cache": True,
            "vocab_size": 32768,
        },
        qkv_bias=False,
        tokenizer="mistral-v3",
        tokenizer_bos=(True, 1),
        published={
            "weights_sha256": {},
            "tokenizer_size": 32768,
            "tokenizer_probe": (
                TOKENIZER_PROBE,
                [1, 1183, 6333, 1070, 5611, 1117, 6233, 29493, 1072, 1639, 8550, 1117, 1040, 26285, 29491],
            ),
        },
        sources={
            "config": _HF.format("mistralai/Mistral-7B-v0.3"),
            "agrees": [
                _LITGPT.format("Mistral-7B-v0.3 (vocab 32768, block 32768, 8 groups, eps 1e-5, base 1e6, no window)"),
                "Mistral-7B-Instruct-v0.3's config.json (same architecture) as copied in public notes: "
                "sliding_window null, vocab 32768, rope_theta 1e6",
            ],
        },
        style=("#006d2c", "s"),
    ),
)
