"""The paper's five models as published: each one's Hugging Face ``config.json``, field for field (pure data).

``PAPER_CONFIGS[name]`` is the public ``config.json`` of the paper model the registry calls ``name``
(``harness.spec.models.PAPER``), every field of the file but two that describe the stored checkpoint rather than the
architecture: ``torch_dtype`` (``CHECKPOINT_DTYPE`` here) and ``transformers_version`` (the version that wrote the
file; not kept). The registry's ``_shape(...)`` stand-ins give only the dimensions; these are the whole configs:
Llama 3's ``rope_scaling`` (``llama3``: factor 32 for Llama 3.2, 8 for Llama 3.1), tied embeddings, GQA, ``head_dim``
where the file states it, ``rms_norm_eps``, the special-token ids, the context, Qwen's sliding-window fields (present
but switched off) and Mistral v0.3's ``sliding_window: null``.

What ``config.json`` does not say but the architecture fixes is kept beside it: ``QKV_BIAS`` (Qwen2 has biases on its
q/k/v projections, hard-wired in transformers' ``Qwen2Attention``; Llama states ``attention_bias: false``; Mistral
has none) and ``TOKENIZER_BOS`` (whether the model's tokenizer prepends a BOS token, from its
``tokenizer_config.json``/``tokenizer.json``: Qwen's ``config.json`` names ``bos_token_id`` 151643,
``<|endoftext|>``, but its tokenizer prepends nothing).

Where each value comes from: ``SOURCES`` (the config.json URL, and the independent public sources that agree).
Values were taken from the published files as of this writing; none could be fetched from this machine (no hub), so
each was checked against at least one independent copy or reimplementation named in ``SOURCES``.
"""

from __future__ import annotations

from typing import Any

from harness.spec.models import LLAMA_1B, LLAMA_3B, LLAMA_8B, MISTRAL, QWEN


def _llama3_rope(factor: float) -> dict[str, Any]:
    """Llama 3's frequency-dependent RoPE scaling (``rope_type`` llama3), as its config.json writes it."""
    return {
        "factor": factor,
        "high_freq_factor": 4.0,
        "low_freq_factor": 1.0,
        "original_max_position_embeddings": 8192,
        "rope_type": "llama3",
    }


PAPER_CONFIGS: dict[str, dict[str, Any]] = {
    LLAMA_1B: {
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
    LLAMA_3B: {
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
    LLAMA_8B: {  # the file states no head_dim: 4096 / 32 = 128
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
    QWEN: {  # no head_dim in the file: 2048 / 16 = 128; q/k/v biases: QKV_BIAS
        "architectures": ["Qwen2ForCausalLM"],
        "attention_dropout": 0.0,
        "bos_token_id": 151643,  # <|endoftext|>, which the tokenizer never prepends (TOKENIZER_BOS)
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
    MISTRAL: {  # no head_dim in the file: 4096 / 32 = 128
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
}

#: ``torch_dtype`` of each published checkpoint (its config.json's; not an architecture field).
CHECKPOINT_DTYPE = {name: "bfloat16" for name in PAPER_CONFIGS}

#: Biases on the q/k/v projections: Qwen2's are fixed by the architecture (transformers' ``Qwen2Attention``,
#: ``bias=True``; LitGPT's Qwen2.5 configs ``attn_bias=True``), not stated in config.json; o_proj and the MLP have none.
QKV_BIAS = {LLAMA_1B: False, LLAMA_3B: False, LLAMA_8B: False, QWEN: True, MISTRAL: False}

#: (does the model's tokenizer prepend a BOS token, and which id): Llama 3's tokenizer.json post-processor prepends
#: <|begin_of_text|> (128000); Mistral's tokenizer_config.json has add_bos_token true (<s>, 1); Qwen2.5's has
#: bos_token null (nothing prepended).
TOKENIZER_BOS: dict[str, tuple[bool, int | None]] = {
    LLAMA_1B: (True, 128000),
    LLAMA_3B: (True, 128000),
    LLAMA_8B: (True, 128000),
    QWEN: (False, None),
    MISTRAL: (True, 1),
}

#: What identifies each paper model's published checkpoint beyond the shape its config.json gives, checked once per
#: folder before it is measured (harness.model.checkpoint_checks). The published weight files' sha256 could not be
#: read from this machine (no hub) nor found in a public copy, so none is recorded (``weights_sha256``, {file:
#: sha256}, is empty; hashes added there decide, hashed once per folder); the weights are identified instead by what a
#: trained checkpoint has and random or damaged weights lack: finite values, no matrix of zeros, norm scales that vary (a fresh initialisation sets every
#: one to 1), matrices whose spreads differ (a fresh initialisation draws every one with std ``initializer_range``),
#: and no rehearsal mark. The tokenizer is identified by its size (``len(tokenizer)``: Qwen2.5's 151,665 of its
#: 151,936 embedding rows) and the ids of one probe sentence, as the published tokenizer gives them (the ids here
#: are those of the project's builds from the published tokenizer files, harness.model.tokenizers, which
#: tests/test_paper_tokenizers.py checks against independent readers of those files).
TOKENIZER_PROBE = "The capital of France is Paris, and its river is the Seine."
_LLAMA3_PROBE = [128000, 791, 6864, 315, 9822, 374, 12366, 11, 323, 1202, 15140, 374, 279, 1369, 483, 13]
PUBLISHED: dict[str, dict[str, Any]] = {
    **{
        name: {"weights_sha256": {}, "tokenizer_size": 128256, "tokenizer_probe": (TOKENIZER_PROBE, _LLAMA3_PROBE)}
        for name in (LLAMA_1B, LLAMA_3B, LLAMA_8B)
    },
    QWEN: {
        "weights_sha256": {},
        "tokenizer_size": 151665,
        "tokenizer_probe": (
            TOKENIZER_PROBE,
            [785, 6722, 315, 9625, 374, 12095, 11, 323, 1181, 14796, 374, 279, 1345, 482, 13],
        ),
    },
    MISTRAL: {
        "weights_sha256": {},
        "tokenizer_size": 32768,
        "tokenizer_probe": (
            TOKENIZER_PROBE,
            [1, 1183, 6333, 1070, 5611, 1117, 6233, 29493, 1072, 1639, 8550, 1117, 1040, 26285, 29491],
        ),
    },
}

_HF = "https://huggingface.co/{}/blob/main/config.json"
_LITGPT = "Lightning-AI/litgpt litgpt/config.py (commit 26857050), entry {}"
_LLAMA_MODELS = "PyPI llama-models 0.3.0, llama_models/sku_list.py arch_args of {} (dim, layers, heads, kv heads, ffn)"
_LLAMA_FACTOR = "github.com/meta-llama/llama-models/issues/166 and /241: rope factor 32 is right for Llama 3.2 1B/3B"
_LLM_PROF = "github.com/citsjtu2020/LLM-Prof sglang/Model_Config.md (a copy of the file)"

#: Where each value comes from: the published config.json, then independent public sources that agree with it.
SOURCES: dict[str, dict[str, Any]] = {
    LLAMA_1B: {
        "config": _HF.format("meta-llama/Llama-3.2-1B"),
        "agrees": [
            _LLAMA_MODELS.format("Llama3.2-1B: 2048, 16, 32, 8, ffn_dim_multiplier 1.5 -> 8192"),
            _LITGPT.format("Llama-3.2-1B (rope_adjustments factor 32, low 1, high 4, original 8192)"),
            _LLAMA_FACTOR,
            "github.com/kevinstephano/thunder_model_blocks hf_llama/llama_config.py (Llama-3.2-1B-Instruct's file)",
        ],
    },
    LLAMA_3B: {
        "config": _HF.format("meta-llama/Llama-3.2-3B"),
        "agrees": [
            _LLAMA_MODELS.format("Llama3.2-3B: 3072, 28, 24, 8, ffn_dim_multiplier 1.0 -> 8192"),
            _LITGPT.format("Llama-3.2-3B (rope_adjustments factor 32)"),
            _LLAMA_FACTOR,
            _LLM_PROF,
        ],
    },
    LLAMA_8B: {
        "config": _HF.format("meta-llama/Llama-3.1-8B"),
        "agrees": [
            _LLAMA_MODELS.format("Llama3.1-8B: 4096, 32, 32, 8, ffn_dim_multiplier 1.3 -> 14336"),
            "llama-models 0.3.0 llama3/model.py apply_scaling: factor 8, low 1, high 4, old context 8192",
            _LITGPT.format("Llama-3.1-8B (rope_adjustments factor 8)"),
            _LLM_PROF,
        ],
    },
    QWEN: {
        "config": _HF.format("Qwen/Qwen2.5-3B"),
        "agrees": [
            _LITGPT.format("Qwen2.5-3B (block 32768, 36 layers, 16 heads, 2 groups, attn_bias, eps 1e-6, base 1e6)"),
            _LLM_PROF,
            "transformers models/qwen2/modeling_qwen2.py: q/k/v_proj bias=True, o_proj bias=False",
        ],
    },
    MISTRAL: {
        "config": _HF.format("mistralai/Mistral-7B-v0.3"),
        "agrees": [
            _LITGPT.format("Mistral-7B-v0.3 (vocab 32768, block 32768, 8 groups, eps 1e-5, base 1e6, no window)"),
            "Mistral-7B-Instruct-v0.3's config.json (same architecture) as copied in public notes: "
            "sliding_window null, vocab 32768, rope_theta 1e6",
        ],
    },
}


def head_dim(config: dict[str, Any]) -> int:
    """A config's attention head width: its ``head_dim``, or hidden_size / num_attention_heads where it states none."""
    return config.get("head_dim") or config["hidden_size"] // config["num_attention_heads"]


def gqa_ratio(config: dict[str, Any]) -> int:
    """Query heads per key/value head."""
    return config["num_attention_heads"] // config["num_key_value_heads"]
