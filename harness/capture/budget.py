"""What a run holds in host memory, estimated before any work from the model's shape and the design: the bytes a
refusal or a budget is judged on (benchmarks/bench_prompt_growth.py refuses a design past ``--max-gib`` with it;
tests/test_memory_budget.py holds each bundled model's estimate at the default design to a stated budget).

The estimate counts what grows with the design and what does not:

* the interpreter with torch and transformers imported (``BASE_BYTES``, measured: about 0.6 GiB);
* the weights in float32 (the parameters from the config where it gives every dimension, else from its hidden size,
  layers and vocabulary as vocabulary x hidden + 12 x layers x hidden², the dense decoder's count);
* the attention weights at the run's pairs for every head (``[prompts, pairs, layers x heads]``), the one capture
  every leakage claim reads, held once in float32 for the unedited topic pass, and ``WORKING_COPIES`` float64 copies
  of it (the permutation null's rows, ``harness.stats.nulls``; the per-prompt sums work a block at a time);
* every edited pass's summary (``harness.capture.leakage_view``: bootstrap rows per layer and query bin), never its
  capture.
"""

from __future__ import annotations

from harness.spec.models import UnknownModelError, get_spec

GIB = 2**30
BASE_BYTES = int(0.6 * GIB)
WORKING_COPIES = 1  # the permutation null's float64 copy of the pair capture, in its row order
N_PAIRS = 4000


def parameter_count(config: dict) -> int:
    """A decoder's parameters from its config: exact up to biases where it gives the MLP width, else the dense
    decoder's vocabulary x hidden + 12 x layers x hidden²."""
    d, layers, v = config["hidden_size"], config["num_hidden_layers"], config["vocab_size"]
    if "intermediate_size" not in config:
        return v * d + 12 * layers * d * d
    h = config["num_attention_heads"]
    kv, hd = config.get("num_key_value_heads", h), config.get("head_dim") or d // h
    per_layer = 2 * d * h * hd + 2 * d * kv * hd + 3 * d * config["intermediate_size"] + 2 * d
    return v * d * (1 if config.get("tie_word_embeddings") else 2) + layers * per_layer + d


def pair_capture_bytes(layers: int, heads: int, n_prompts: int, n_pairs: int = N_PAIRS, itemsize: int = 8) -> int:
    """The attention weights at the pairs, every head: ``[prompts, pairs, layers x heads]`` (float64: 8 bytes)."""
    return itemsize * n_prompts * n_pairs * layers * heads


def model_config(model: str) -> dict:
    """The registry's config of ``model``, a rehearsal build's included (registered on first use)."""
    try:
        return dict(get_spec(model).config)
    except UnknownModelError:
        from harness.model.rehearsal import register_rehearsals

        register_rehearsals()
        return dict(get_spec(model).config)


def design_bytes(model: str, n_prompts: int, seq_len: int, n_pairs: int = N_PAIRS) -> int:
    """The estimated peak host bytes of a claims run on ``model`` at the design (the module's docstring)."""
    cfg = model_config(model)
    layers, heads = cfg["num_hidden_layers"], cfg["num_attention_heads"]
    pairs = min(n_pairs, seq_len * (seq_len + 1) // 2)
    held = pair_capture_bytes(layers, heads, n_prompts, pairs, itemsize=4)
    return (
        BASE_BYTES
        + 4 * parameter_count(cfg)
        + held
        + WORKING_COPIES * pair_capture_bytes(layers, heads, n_prompts, pairs)
    )
