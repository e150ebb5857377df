"""How much of a hybrid model's additive position signal survives each layer (the related paper: "in a hybrid
Absolute+RoPE model, additive positional directions are completely displaced after Layer 2").

The additive directions are the sinusoidal table the model adds to its input (``PositionModel.position``, [seq, d]).
A layer's position-dependent mean residual, ``m_l[t]`` (the residual at position t averaged over evaluation samples,
centred over positions), is read against that table with a fixed linear probe whose weights are the table itself:
the alignment ``A_l = <m_l, P> / (|m_l| |P|)`` (Frobenius cosine, P centred over positions too). ``|m_l|²`` is
estimated without the sampling noise a mean of N samples adds to it (tr Cov / N, which would pull A_l towards 0).
At the input (layer 0) ``m_0`` is P plus what the tokens' means do by position (Task 1 pads its tail, so they are not
flat: A_0 is below 1 and measured, not assumed); a layer whose position signal no longer lies along the added
directions reads near 0, whatever other position code it carries. Beside it, the amount of the table still present,
``R_l = <m_l, P> / <P, P>``: a residual stream keeps its input unless a layer writes against it, so A_l can fall
while R_l stays near its input value (the table kept, outweighed by what the layers add) or both fall (the table
written over). Layer l is the output of block l (1-based; 0 the input), so "after Layer 2" is l ≥ 3. The unit of the
intervals is the evaluation sample (resampled with the same bootstrap weights at every layer and in every model read
on the same samples, so two models' alignments are paired).
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


def alignment(means: np.ndarray, table: np.ndarray, retained: bool = False, noise: float = 0.0) -> np.ndarray:
    """The Frobenius cosine of each position-mean residual [..., seq, d] with the added table [seq, d], both centred
    over positions: [...]; ``noise`` is taken off ``|m|²`` first (its sampling part). With ``retained``, the table's
    coefficient in it instead (<m, P> / <P, P>). A mean that is not finite is an error, never a small alignment."""
    if not np.all(np.isfinite(means)):
        raise ValueError("a position-mean residual is not finite (an overflowing sample?): no alignment is defined")
    m = means - means.mean(axis=-2, keepdims=True)
    p = table - table.mean(axis=0, keepdims=True)
    dot = np.einsum("...td,td->...", m, p)
    if retained:
        return dot / max(float((p * p).sum()), 1e-30)
    signal = np.maximum(np.einsum("...td,...td->...", m, m) - noise, 0.0)
    norm = np.sqrt(signal) * np.linalg.norm(p)
    # |cos| ≤ 1 whenever the noise estimate leaves less signal than the table's own projection needs
    return np.clip(np.divide(dot, norm, out=np.zeros_like(dot), where=norm > 0), -1.0, 1.0)


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
                layers[0].append(model.embedding(x).float().cpu().numpy())
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
    layers = [layer_alignment(h, table, w) for h in residual_streams(trained, ids)]
    a, a_rows, r, r_rows = (np.stack(x, axis=-1) for x in zip(*layers))
    return Alignment(a, a_rows, r, r_rows, len(ids))


def layer_alignment(h: np.ndarray, table: np.ndarray, w: np.ndarray) -> tuple[float, np.ndarray, float, np.ndarray]:
    """One layer's (A, its rows, R, its rows) from its residuals [samples, seq, d] and bootstrap weights [B, samples]
    whose rows sum to 1."""
    centred = (h - h.mean(axis=1, keepdims=True)).reshape(len(h), -1)  # each sample centred over positions
    mean = centred.mean(axis=0)
    noise = float(((centred - mean) ** 2).sum() / (len(h) * max(len(h) - 1, 1)))  # E|m|² − |mu|² = tr Cov / N
    mean, resampled = mean.reshape(h.shape[1:]), (w @ centred).reshape(len(w), *h.shape[1:])
    # a resampled mean adds its own tr Cov / N around the sample mean: twice the noise off each row
    return (
        float(alignment(mean, table, noise=noise)),
        alignment(resampled, table, noise=2 * noise),
        float(alignment(mean, table, retained=True)),
        alignment(resampled, table, retained=True),
    )
