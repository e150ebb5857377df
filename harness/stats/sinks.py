"""Sink and position-0 measurements (paper §3 Eq. 7, §4, §5.1, §5.7, App. A). Pure functions on captures."""

from __future__ import annotations

import warnings

import numpy as np


def sink_magnitude_by_layer(profile: np.ndarray) -> np.ndarray:
    """[N, L, H, n] sink profiles -> [L, n]: per layer, the prompt- and head-mean weight later queries give each key
    (NaN for a key no later query reads, e.g. the last position: without numpy's all-NaN warning for it)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Mean of empty slice", RuntimeWarning)
        return np.nanmean(profile, axis=(0, 2))


def peak_sink(profile: np.ndarray, position: int) -> tuple[float, int]:
    """(magnitude, layer) of the strongest layer for key ``position``: one figure per prompt variant (Table 2)."""
    by_layer = sink_magnitude_by_layer(profile)[:, position]
    layer = int(np.nanargmax(by_layer))
    return float(by_layer[layer]), layer


def sink_reading_strength(profile: np.ndarray) -> np.ndarray:
    """[N, L, H, n] -> [L, H]: each head's mean weight on position 0 (over queries i >= 1 and prompts)."""
    return np.nanmean(profile[..., 0], axis=0)


def cross_prompt_std(states: np.ndarray) -> np.ndarray:
    """[N, L, D] states at one position -> [L]: the largest per-dimension std across prompts, per layer."""
    return states.std(axis=0).max(axis=-1)


def norm_ratio_position0(resid_norms: np.ndarray, mid: tuple[float, float] = (0.25, 0.75)) -> np.ndarray:
    """[N, L, n] residual norms -> [L]: mean norm at position 0 over the median norm at mid-sequence
    positions [mid0*n, mid1*n) ('typical mid-sequence norm', App. A)."""
    n = resid_norms.shape[-1]
    lo, hi = int(mid[0] * n), int(mid[1] * n)
    return resid_norms[:, :, 0].mean(axis=0) / np.median(resid_norms[:, :, lo:hi], axis=(0, 2))
