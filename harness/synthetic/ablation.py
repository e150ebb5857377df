"""Per-head ablation maps of a trained synthetic model, with intervals over evaluation samples.

Each head of a layer is zeroed alone (its output exactly 0 before the output projection, the authors' ablation) and
the model's accuracy on the held-out samples measured again; a head's effect is the relative accuracy change,
``|1 - ablated / unablated|`` (the related paper's "drops accuracy by about 60%"), read through the same deposit
statistic as the real models' map (``harness.stats.head_map``): the largest effect's share of the layer's summed
effects and its gap over the second, with bootstrap rows over the evaluation samples shared by every head (paired).
"""

from __future__ import annotations

import numpy as np

from harness.stats.head_map import AccuracyMap, Deposit, accuracy_map, deposit
from harness.synthetic.train import Trained, correct, data


def head_map(trained: Trained, layer: int = 0, n_boot: int = 1000, seed: int = 0) -> AccuracyMap:
    """Layer ``layer``'s heads zeroed one at a time on the spec's held-out split."""
    model, spec = trained.model, trained.spec
    ids, labels = data(spec)["test"]
    base = correct(model, ids, labels, spec.task)
    per_head = []
    for head in range(model.shape.heads):
        model.zeroed = {(layer, head)}
        try:
            per_head.append(correct(model, ids, labels, spec.task))
        finally:
            model.zeroed = set()
    try:
        return accuracy_map(base, np.stack(per_head, axis=1), n_boot, seed)  # resamples of the evaluation samples
    except ValueError as e:
        raise ValueError(f"{spec.name}: {e} on the held-out samples") from None


def deposit_of(m: AccuracyMap) -> Deposit:
    return deposit(m.effects, m.rows)
