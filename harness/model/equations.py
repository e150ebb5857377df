"""The paper's by-construction statements (§3 Eq. 2, 3, 6) as small functions on real rotary modules."""

from __future__ import annotations

import importlib

import numpy as np
import torch

from harness.model.hook_points import hook_name


def rotary_cos_sin(model, positions: torch.Tensor, layer_type: str | None = None):
    """(cos, sin) [1, P, d] from the model's own rotary module, in float64 to keep angle error small."""
    rot = model.base.rotary_emb
    x = torch.zeros(1, 1, dtype=torch.float64, device=model.device)
    kwargs = {"layer_type": layer_type} if layer_type else {}
    if layer_type is None and hasattr(rot, "layer_types"):
        kwargs["layer_type"] = rot.layer_types[0]
    with torch.no_grad():
        cos, sin = rot(x, positions[None].to(model.device), **kwargs)
    return cos.double(), sin.double()


def apply_rotary(model, q: torch.Tensor, k: torch.Tensor, cos, sin):
    """The model's own ``apply_rotary_pos_emb`` from its transformers modeling module."""
    module = importlib.import_module(type(model.hf).__module__)
    return module.apply_rotary_pos_emb(q, k, cos, sin)


def rotated_dot(model, q: np.ndarray, k: np.ndarray, i: int, j: int, hook_cos_sin=None) -> float:
    """q at position i and k at position j, each rotated by the model's RoPE, dotted (Eq. 2)."""
    cos, sin = rotary_cos_sin(model, torch.tensor([i, j]))
    if hook_cos_sin is not None:
        cos, sin = hook_cos_sin((cos, sin), hook_name("hook_rotary"))
    qt = torch.as_tensor(q, dtype=torch.float64, device=cos.device).view(1, 1, 1, -1).expand(1, 1, 2, -1)
    kt = torch.as_tensor(k, dtype=torch.float64, device=cos.device).view(1, 1, 1, -1).expand(1, 1, 2, -1)
    qr, kr = apply_rotary(model, qt, kt, cos, sin)
    return float((qr[0, 0, 0] * kr[0, 0, 1]).sum())


def offset_softmax(f: np.ndarray, n: int, causal: bool = True) -> np.ndarray:
    """[n, n] attention weights when logits depend on the offset alone, s_ij = f(i - j) (Eq. 6).
    ``f`` is indexed by offset + (n - 1), covering offsets -(n-1)..(n-1)."""
    i, j = np.indices((n, n))
    logits = f[i - j + n - 1].astype(np.float64)
    if causal:
        logits = np.where(j <= i, logits, -np.inf)
    logits = logits - logits.max(axis=1, keepdims=True)
    w = np.exp(logits)
    return w / w.sum(axis=1, keepdims=True)


def mask_support_problems(scores: np.ndarray, pattern: np.ndarray, allowed: np.ndarray, tiny: float) -> list[str]:
    """What contradicts "the weights' support is the mask's": ``pattern`` [B, H, n, n] post-softmax weights, ``scores``
    the same pre-softmax logits, ``allowed`` [n, n] the keys the mask lets each query see, ``tiny`` the smallest normal
    number of the weights' dtype. A key outside ``allowed`` with non-zero weight is always a problem (the mask was not
    applied): underflow only ever adds zeros. A key inside with zero weight is a problem only where it could not have
    underflowed: its weight is at least exp(-gap) / (keys allowed) for a logit ``gap`` below the row's largest allowed
    logit, so it is non-zero for every gap <= ln(1 / tiny) - ln(keys allowed). (A model with extreme logits, such as a
    1.5B Qwen's layer 0, sends some allowed weights to exactly 0 in float32; counting non-zero weights alone would
    call its mask broken.) Returns one phrase per kind of problem found, none when the support is the mask's."""
    nonzero = pattern > 0
    out = []
    bad = ~np.isfinite(pattern)
    if bad.any():  # NaN weights (an overflowed logit) are neither zero nor a support: never held
        b, h, i, j = np.argwhere(bad)[0]
        out.append(f"{int(bad.sum())} weights are not finite (first: prompt {b}, head {h}, query {i}, key {j})")
    leaked = nonzero & ~allowed
    if leaked.any():
        b, h, i, j = np.argwhere(leaked)[0]
        out.append(
            f"{int(leaked.sum())} weights outside the mask are non-zero (first: prompt {b}, head {h}, query {i}, key {j})"
        )
    masked = np.where(allowed, scores, -np.inf)
    with np.errstate(invalid="ignore"):  # inf - inf in a row with an overflowed logit: reported above
        gap = masked.max(-1, keepdims=True) - masked
    bound = np.log(1 / tiny) - np.log(allowed.sum(-1))[:, None]  # [n, 1]
    missing = allowed & (gap <= bound) & ~nonzero
    if missing.any():
        b, h, i, j = np.argwhere(missing)[0]
        out.append(
            f"{int(missing.sum())} weights inside the mask are zero where no underflow can explain it (first: prompt {b}, "
            f"head {h}, query {i}, key {j}, logit gap {gap[b, h, i, j]:.1f} <= {bound[i, 0]:.1f})"
        )
    return out
