"""Edits: what a run changes in the model, as frozen, hashable values (the nnsight lesson: reads and edits
in one vocabulary). An edit's value is its identity: two runs with equal edits share one cached capture,
so an edit carries everything it depends on (a token id, the layers, the directions' bytes).

Each edit's ``apply(model)`` returns the context manager of ``harness.model.interventions`` that does the work.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import numpy as np
import torch

from harness.model import interventions as iv
from harness.model.hooks import HookedModel


class Edit:
    def apply(self, model: HookedModel):
        raise NotImplementedError

    @property
    def label(self) -> str:
        return type(self).__name__


@dataclass(frozen=True)
class Bidirectional(Edit):
    """The causal mask removed (sliding-window layers keep their symmetric band)."""

    def apply(self, model):
        return iv.bidirectional(model)

    label = "bidirectional"


@dataclass(frozen=True)
class IdentityRope(Edit):
    """RoPE's rotation replaced by the identity."""

    def apply(self, model):
        return iv.identity_rope(model)

    label = "identity_rope"


@dataclass(frozen=True)
class ScrambledRope(Edit):
    """Scrambled-RoPE (paper §4): a fixed random permutation of the frequency bands, applied to the queries
    only, so each query is still a rotation but q.k no longer depends on i - j alone
    (see interventions.scrambled_rope)."""

    seed: int = 0

    def apply(self, model):
        return iv.scrambled_rope(model, self.seed)

    @property
    def label(self):
        return "scrambled_rope"


@dataclass(frozen=True)
class ScrambledRopeAllEntries(Edit):
    """Sensitivity variant only: one fixed random permutation of all d cos/sin entries, for queries and keys;
    NOT a rotation (norms change). See interventions.scrambled_rope_all_entries."""

    seed: int = 0

    def apply(self, model):
        return iv.scrambled_rope_all_entries(model, self.seed)

    @property
    def label(self):
        return "scrambled_rope_all_entries"


@dataclass(frozen=True)
class ZeroHeads(Edit):
    """Zero the outputs of these (layer, head) pairs before o_proj."""

    heads: tuple[tuple[int, int], ...]
    name: str = field(default="", compare=False)  # a label for progress lines, not part of the identity

    def __post_init__(self):
        object.__setattr__(self, "heads", tuple((int(l), int(h)) for l, h in self.heads))

    def apply(self, model):
        return iv.zero_heads(model, self.heads)

    @property
    def label(self):
        return self.name or f"zero{len(self.heads)}heads"


@dataclass(frozen=True)
class ReplaceEmbedding(Edit):
    """The input embedding at ``position`` replaced by the embedding of ``token``."""

    position: int
    token: int

    def apply(self, model):
        vec = model.base.embed_tokens(torch.tensor([self.token], device=model.device))[0].detach()
        return iv.replace_embedding_at(model, self.position, vec)

    @property
    def label(self):
        return f"emb{self.token}@{self.position}"


@dataclass(frozen=True)
class ReplaceStateWithMidMean(Edit):
    """The residual state at position 0 after each of ``layers`` replaced by the prompt's mid-sequence mean."""

    layers: tuple[int, ...]

    def __post_init__(self):
        object.__setattr__(self, "layers", tuple(int(l) for l in self.layers))

    def apply(self, model):
        return iv.replace_state_with_mid_mean(model, self.layers)

    @property
    def label(self):
        return f"mid@{','.join(map(str, self.layers))}"


@dataclass(frozen=True, eq=False)
class Directions:
    """Per-layer direction vectors (float64 numpy), compared and hashed by their bytes."""

    vectors: dict = field(repr=False)
    digest: str = field(init=False)

    def __post_init__(self):
        h = hashlib.sha1()
        for layer in sorted(self.vectors):
            h.update(str(layer).encode())
            h.update(np.ascontiguousarray(self.vectors[layer], dtype=np.float64).tobytes())
        object.__setattr__(self, "digest", h.hexdigest()[:16])

    def __eq__(self, other):
        return isinstance(other, Directions) and other.digest == self.digest

    def __hash__(self):
        return hash(self.digest)

    def tensors(self) -> dict[int, torch.Tensor]:
        return {l: torch.tensor(v, dtype=torch.float32) for l, v in self.vectors.items()}


@dataclass(frozen=True)
class ProjectOutOfResidual(Edit):
    """Each layer's direction removed from the residual stream after that layer (all positions)."""

    directions: Directions
    name: str = field(default="", compare=False)

    def apply(self, model):
        return iv.project_out_of_residual(model, self.directions.tensors())

    @property
    def label(self):
        return self.name or "project-out"


@dataclass(frozen=True)
class Rank1MLPAblation(Edit):
    """Each layer's direction removed from its MLP output at positions >= ``start``."""

    directions: Directions
    start: int = 1

    def apply(self, model):
        return iv.rank1_mlp_ablation(model, self.directions.tensors(), slice(self.start, None))

    @property
    def label(self):
        return f"rank1-mlp@{','.join(map(str, sorted(self.directions.vectors)))}"
