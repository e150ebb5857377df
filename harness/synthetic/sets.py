"""The models a set of the related paper's experiments trains (``synthetic-<size>-<arch>``), in one list.

The paper's Task 1 table and Task 2 table by encoding, RoPE's training seeds on Task 1, partial RoPE on one and two
heads, and the hybrid's pair (RoPE and absolute on Task 1) at the set's depth of three layers. The claim tests ask for
models from this list alone (``listed``), so a set can be trained ahead of its run (benchmarks/synthetic_pretrain.py)
and read from the cache by the run.
"""

from __future__ import annotations

from harness.synthetic.train import SyntheticSpec, at_depth

TASK1_TABLE = ("rope", "nope", "mla", "absolute", "alibi")  # the paper's Task 1 table
TASK2_TABLE = ("rope", "nope", "mla", "absolute", "alibi")  # its Task 2 table
PARTIAL_ROPE = ("rope-k1", "rope-k2")
TRAINING_SEEDS = 3  # RoPE on Task 1: the pattern in every seed
PAIR = ("rope", "absolute")  # the hybrid (the authors' RoPE adds a table) and its absolute-only control
PAIR_DEPTH = 3  # a layer after the second


def models(size: str, arch: str) -> tuple[SyntheticSpec, ...]:
    """Every model a set of ``size`` and ``arch`` trains, in the order a pretraining cut short answers most: the
    deposit's RoPE seeds (which the absences are read beside), Task 2's table (half the samples), the rest of Task 1's,
    partial RoPE, the hybrid's pair."""
    out = [SyntheticSpec("task1", "rope", arch, size, seed) for seed in range(TRAINING_SEEDS)]
    out += [SyntheticSpec("task2", e, arch, size) for e in TASK2_TABLE]
    out += [SyntheticSpec("task1", e, arch, size) for e in TASK1_TABLE[1:] + PARTIAL_ROPE]
    deeper = at_depth(size, PAIR_DEPTH)
    if deeper is not None and deeper != size:
        out += [SyntheticSpec("task1", e, arch, deeper) for e in PAIR]
    return tuple(out)


def listed(spec: SyntheticSpec, size: str) -> SyntheticSpec:
    """``spec`` where a set of ``size`` (in the spec's architecture) trains it; else a ValueError naming it."""
    if spec not in models(size, spec.arch):
        raise ValueError(
            f"{spec.name} is not among the models of synthetic-{size}-{spec.arch} (harness.synthetic.sets)"
        )
    return spec
