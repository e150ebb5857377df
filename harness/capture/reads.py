"""Reads: what a run keeps, as frozen, hashable values; and ``Run`` and ``Capture``, the description of a
forward pass and its result with named axes (the TransformerLens ActivationCache lesson).

A read names one hook point per decoder layer (and optionally the embedding) and the reader that shrinks
the activation inside the hook. ``Capture.values`` is ``[prompts, embedding? + layers, ...]``; ``.layers``
names the decoder layers of axis 1 and ``.embed`` says whether the embedding comes first, so no claim has
to remember an off-by-one.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import numpy as np

from harness.capture import forward as cap
from harness.capture.corpus import PromptSet
from harness.model.edits import Edit
from harness.stats.pairs import query_bins


class Read:
    point: str  # hook point per layer, e.g. "attn.hook_pattern"
    embed: bool = False  # also read hook_embed (axis 1 then starts with the embedding)
    pairs: str | None = None  # the pair set it reads at ("stratified": the session's pairs), if any

    def reader(self, seq_len: int, pairs):
        raise NotImplementedError


@dataclass(frozen=True)
class PatternAtPairs(Read):
    """Post-softmax attention weights at the session's (query, key) pairs: [N, L, P, H]."""

    pairs: str = "stratified"
    point = "attn.hook_pattern"

    def reader(self, seq_len, pairs):
        return cap.PairReader(pairs.i, pairs.j)


@dataclass(frozen=True)
class PairMomentsAtPairs(Read):
    """The post-softmax weights at the session's pairs reduced as the pass runs to each prompt's and head's leakage
    moments (``forward.PairMoments``), for every pair and for each query bin of ``query_bins(seq_len)`` (where the
    length has them): [N, L, H, 4 x (1 + bins)]. What a summary of an edited pass reads instead of the weights."""

    pairs: str = "stratified"
    point = "attn.hook_pattern"

    def reader(self, seq_len, pairs):
        return cap.PairMoments(pairs.i, pairs.j, [(idx, it) for _, idx, it in moment_subsets(pairs, seq_len)])


def moment_subsets(pairs, seq_len: int) -> list[tuple[tuple[int, int] | None, np.ndarray | None, np.ndarray]]:
    """The pair subsets a moments read reduces over, in its order: (None: every pair; or a query bin (lo, hi) of
    ``query_bins(seq_len)`` holding pairs), its pair indices (None: all) and its own ĩ."""
    out: list[tuple[tuple[int, int] | None, np.ndarray | None, np.ndarray]] = [(None, None, pairs.i_tilde)]
    for lo, hi in bin_ranges(seq_len):
        idx = np.flatnonzero((pairs.i >= lo) & (pairs.i < hi))
        if idx.size:
            out.append(((lo, hi), idx, pairs.subset(idx).i_tilde))
    return out


def bin_ranges(seq_len: int) -> list[tuple[int, int]]:
    """The query bins [lo, hi) of ``query_bins(seq_len)``, none where the length has no doubling bins."""
    try:
        edges = query_bins(seq_len)
    except ValueError:
        return []
    return [(int(lo), int(hi)) for lo, hi in zip(edges[:-1], edges[1:])]


@dataclass(frozen=True)
class SinkProfile(Read):
    """Sink magnitude of every key per head: [N, L, H, n]."""

    point = "attn.hook_pattern"

    def reader(self, seq_len, pairs):
        return cap.sink_profile


@dataclass(frozen=True)
class ResidNorms(Read):
    """L2 norm of the residual stream at every position, embedding first: [N, 1 + L, n]."""

    point = "hook_resid_post"
    embed = True

    def reader(self, seq_len, pairs):
        return cap.norms


@dataclass(frozen=True)
class At(Read):
    """The activation at chosen positions (negative counts from the end; ``None``: every position from
    ``start``): [N, (1 +) L, len(positions), ...]."""

    point: str = "hook_resid_post"
    positions: tuple[int, ...] | None = None
    start: int = 0
    embed: bool = False

    def reader(self, seq_len, pairs):
        pos = range(self.start, seq_len) if self.positions is None else [p % seq_len for p in self.positions]
        return cap.positions(list(pos))


MLP_AT_TARGET = At(point="hook_mlp_out", positions=(-1,))  # App. B's target: the MLP output at the last position


@dataclass(frozen=True)
class AtProbePositions(At):
    """The residual stream at the topic probe's positions (``probe_positions``): [N, L, positions, D]."""

    def reader(self, seq_len, pairs):
        return cap.positions(list(probe_positions(seq_len)))


PROBE_STATES = AtProbePositions()  # the topic-probe grid and the MLP ablation's probe read these states


def probe_positions(seq_len: int) -> tuple[int, ...]:
    """Positions whose residual states the topic probe reads: 0, 1, 2, 4, ... and the last one."""
    out, k = [0], 1
    while k < seq_len - 1:
        out.append(k)
        k *= 2
    return tuple(out + [seq_len - 1])


@dataclass(frozen=True)
class Run:
    """One forward pass over a prompt set: the prompts, the edits applied (in order), and how many decoder
    layers run (``None``: all). Equal runs are one cached capture; prompts compare by their token ids."""

    prompts: PromptSet = field(compare=False, repr=False)
    edits: tuple[Edit, ...] = ()
    layers: int | None = None
    prompt_key: str = field(init=False, default="")

    def __post_init__(self):
        object.__setattr__(self, "edits", tuple(self.edits))
        ids = self.prompts.ids  # the shape too: 16 x 128 and 32 x 64 of the same tokens are different runs
        object.__setattr__(self, "prompt_key", hashlib.sha1(ids.tobytes() + str(ids.shape).encode()).hexdigest()[:16])

    @property
    def label(self) -> str:
        return f"{self.prompts.name} [{'+'.join(e.label for e in self.edits) or 'causal'}]"


@dataclass(frozen=True, eq=False)
class Capture:
    """What one read kept in one run: ``values`` [prompts, (embedding +) layers, ...] with named axes."""

    values: np.ndarray
    read: Read
    layers: tuple[int, ...]
    embed: bool

    @property
    def decoder(self) -> np.ndarray:
        """The decoder layers only: [prompts, layers, ...]."""
        return self.values[:, 1:] if self.embed else self.values

    def heads_flat(self) -> np.ndarray:
        """A pair read as the leakage target: [prompts, pairs, layers × heads], heads layer-major."""
        n, l, p, h = self.decoder.shape
        return self.decoder.transpose(0, 2, 1, 3).reshape(n, p, l * h)
