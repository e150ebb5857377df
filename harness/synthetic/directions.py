"""How much of a hybrid model's additive position signal survives each layer (the related paper: "in a hybrid
Absolute+RoPE model, additive positional directions are completely displaced after Layer 2").

The additive directions are the sinusoidal table the model adds to its input (``PositionModel.position``, [seq, d]).
A layer's position-dependent mean residual, ``m_l[t]`` (the residual at position t averaged over evaluation samples,
centred over positions), is read against that table with a fixed linear probe whose weights are the table itself:
the alignment ``A_l = <m_l, P> / (|m_l| |P|)`` (Frobenius cosine, P centred over positions too). At the input
(layer 0) ``m_0`` is P plus whatever the tokens' means do by position, so A_0 is near 1; a layer whose position
signal no longer lies along the added directions reads near 0, whatever other position code it carries. Beside it,
the amount of the table still present, ``R_l = <m_l, P> / <P, P>`` (1 at the input where the tokens' means are
flat): a residual stream keeps its input unless a layer writes against it, so A_l can fall while R_l stays near 1
(the table kept, outweighed by what the layers add) or both fall (the table written over). The unit of the
intervals is the evaluation sample (resampled with the same bootstrap weights at every layer).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import torch

from harness.stats import intervals
from harness.synthetic.train import Trained, data


class Alignment(NamedTuple):
    values: np.ndarray  # A_l per layer, 0 = the input embedding, l = the output of block l [layers + 1]
    rows: np.ndarray  # their bootstrap rows [B, layers + 1]
    retained: np.ndarray  # R_l per layer [layers + 1]
    retained_rows: np.ndarray  # [B, layers + 1]
    samples: int


def alignment(means: np.ndarray, table: np.ndarray, retained: bool = False) -> np.ndarray:
    """The Frobenius cosine of each position-mean residual [..., seq, d] with the added table [seq, d], both centred
    over positions: [...]; with ``retained``, the table's coefficient in it instead (<m, P> / <P, P>)."""
    m = means - means.mean(axis=-2, keepdims=True)
    p = table - table.mean(axis=0, keepdims=True)
    dot = np.einsum("...td,td->...", m, p)
    if retained:
        return dot / max(float((p * p).sum()), 1e-30)
    norm = np.sqrt(np.einsum("...td,...td->...", m, m)) * np.linalg.norm(p)
    return np.divide(dot, norm, out=np.zeros_like(dot), where=norm > 0)


def residual_streams(trained: Trained, ids: np.ndarray, batch: int = 256) -> list[np.ndarray]:
    """The residual stream at the input and after each block ([samples, seq, d] per layer), read by forward hooks on
    the model's blocks."""
    model = trained.model.eval()
    device = next(model.parameters()).device
    layers: list[list[np.ndarray]] = [[] for _ in range(len(model.blocks) + 1)]
    hooks = [
        block.register_forward_hook(lambda _m, _i, out, k=k: layers[k + 1].append(out.float().cpu().numpy()))
        for k, block in enumerate(model.blocks)
    ]
    try:
        with torch.no_grad():
            for i in range(0, len(ids), batch):
                x = torch.as_tensor(ids[i : i + batch], device=device)
                layers[0].append((model.embed(x) + model.position[: x.shape[1]]).float().cpu().numpy())
                model(x)
    finally:
        for h in hooks:
            h.remove()
    return [np.concatenate(parts) for parts in layers]


def additive_alignment(trained: Trained, samples: int = 1000, n_boot: int = 500, seed: int = 0) -> Alignment:
    """Each layer's alignment with the added table on up to ``samples`` held-out samples, with bootstrap rows over
    them (the same rows at every layer)."""
    ids = data(trained.spec)["test"][0][:samples]
    table = trained.model.position[: ids.shape[1]].cpu().numpy()
    w = intervals.bootstrap_weights(len(ids), n_boot, seed) / len(ids)  # [B, N]: each row's weights sum to 1
    out: dict[bool, tuple[list, list]] = {False: ([], []), True: ([], [])}
    for h in residual_streams(trained, ids):
        flat = h.reshape(len(h), -1)
        mean, resampled = flat.mean(axis=0).reshape(h.shape[1:]), (w @ flat).reshape(len(w), *h.shape[1:])
        for kind, (values, rows) in out.items():
            values.append(float(alignment(mean, table, retained=kind)))
            rows.append(alignment(resampled, table, retained=kind))
    (a, a_rows), (r, r_rows) = out[False], out[True]
    return Alignment(np.array(a), np.stack(a_rows, axis=1), np.array(r), np.stack(r_rows, axis=1), len(ids))
