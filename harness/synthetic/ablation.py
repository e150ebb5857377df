"""Per-head ablation maps of a trained synthetic model, with intervals over evaluation samples.

Each head of a layer is zeroed alone (its output exactly 0 before the output projection, the authors' ablation) and
the model's accuracy on the held-out samples measured again; a head's effect is the relative accuracy change,
``|1 - ablated / unablated|`` (the related paper's "drops accuracy by about 60%"), read through the same deposit
statistic as the real models' map (``harness.stats.head_map``): the largest effect's share of the layer's summed
effects and its gap over the second, with bootstrap rows over the evaluation samples shared by every head (paired).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from harness.stats import intervals
from harness.stats.head_map import Deposit, deposit, head_effects
from harness.synthetic.train import Trained, correct, data


class HeadMap(NamedTuple):
    accuracy: float  # unablated, on the held-out samples
    accuracy_rows: np.ndarray  # [B]
    ablated: np.ndarray  # accuracy with each head zeroed [heads]
    effects: np.ndarray  # |1 - ablated / unablated| [heads]
    rows: np.ndarray  # their bootstrap rows [B, heads]
    samples: int  # evaluation samples (the unit of the intervals)


def head_map(trained: Trained, layer: int = 0, n_boot: int = 1000, seed: int = 0) -> HeadMap:
    """Layer ``layer``'s heads zeroed one at a time on the spec's held-out split."""
    model, spec = trained.model, trained.spec
    ids, labels = data(spec)["test"]
    base = correct(model, ids, labels, spec.task).astype(np.float64)
    per_head = []
    for head in range(model.shape.heads):
        model.zeroed = {(layer, head)}
        try:
            per_head.append(correct(model, ids, labels, spec.task).astype(np.float64))
        finally:
            model.zeroed = set()
    hits = np.stack(per_head, axis=1)  # [samples, heads]
    w = intervals.bootstrap_weights(len(base), n_boot, seed)  # resamples of the evaluation samples
    base_rows, ablated_rows = w @ base / len(base), w @ hits / len(base)
    if base.mean() == 0 or np.any(base_rows == 0):
        raise ValueError(f"{spec.name}: accuracy 0 on the held-out samples: no relative effect is defined")
    return HeadMap(
        float(base.mean()),
        base_rows,
        hits.mean(axis=0),
        head_effects(base.mean(), hits.mean(axis=0)),
        head_effects(base_rows, ablated_rows),
        len(base),
    )


def deposit_of(m: HeadMap) -> Deposit:
    return deposit(m.effects, m.rows)
