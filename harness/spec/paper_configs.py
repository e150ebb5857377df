"""The paper's five models as published, as tables by registry name, read from their declarations
(harness/spec/paper_models.py, which says what each holds): ``PAPER_CONFIGS`` (the public ``config.json``),
``CHECKPOINT_DTYPE``, ``QKV_BIAS``, ``TOKENIZER_BOS``, ``PUBLISHED`` and ``SOURCES``; and two helpers on a config.
"""

from __future__ import annotations

from typing import Any

from harness.spec.paper_models import PAPER_MODELS, TOKENIZER_PROBE

PAPER_CONFIGS: dict[str, dict[str, Any]] = {p.spec.name: dict(p.config) for p in PAPER_MODELS}
#: ``torch_dtype`` of each published checkpoint (its config.json's; not an architecture field).
CHECKPOINT_DTYPE = {name: "bfloat16" for name in PAPER_CONFIGS}
QKV_BIAS = {p.spec.name: p.qkv_bias for p in PAPER_MODELS}
TOKENIZER_BOS: dict[str, tuple[bool, int | None]] = {p.spec.name: p.tokenizer_bos for p in PAPER_MODELS}
PUBLISHED: dict[str, dict[str, Any]] = {p.spec.name: dict(p.published) for p in PAPER_MODELS}
SOURCES: dict[str, dict[str, Any]] = {p.spec.name: dict(p.sources) for p in PAPER_MODELS}
__all__ = ["TOKENIZER_PROBE"]  # the probe sentence, named here beside the ids PUBLISHED gives for it


def head_dim(config: dict[str, Any]) -> int:
    """A config's attention head width: its ``head_dim``, or hidden_size / num_attention_heads where it states none."""
    return config.get("head_dim") or config["hidden_size"] // config["num_attention_heads"]


def gqa_ratio(config: dict[str, Any]) -> int:
    """Query heads per key/value head."""
    return config["num_attention_heads"] // config["num_key_value_heads"]
