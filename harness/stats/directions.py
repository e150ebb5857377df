"""Rank-1 directions (paper §4, §5.8, App. B): the direction of the residual stream that best predicts
position (the §5.8 subspace ablation) and the dominant direction of an MLP's output with the share of its norm
that direction carries (the App. B rank-1 MLP ablation). Pure numpy, float64.
"""

from __future__ import annotations

import numpy as np

__all__ = ["rank1_direction", "project_out", "dominant_direction", "fraction_norm_removed"]


# --------------------------------------------------------------------------
# Rank-1 directions (the position-probe and MLP ablations)
# --------------------------------------------------------------------------
def rank1_direction(states: np.ndarray, positions: np.ndarray, alpha: float = 1e-3) -> np.ndarray:
    """Unit vector of the linear readout of position: ridge of centred position on centred states.

    ``states`` [n_tokens, d], ``positions`` [n_tokens] (the token's absolute position).
    With X the column-centred states and p the centred positions,
    w = (XᵀX + λI)⁻¹ Xᵀp = Xᵀ(XXᵀ + λI)⁻¹ p (the second form when n_tokens < d), and
    λ = alpha · trace(XᵀX) / d, i.e. alpha relative to the mean eigenvalue of XᵀX, so the
    direction does not change when the states are rescaled.  The small ridge makes the
    solution unique when X is rank-deficient (n_tokens <= d, or collinear dimensions) and
    approximates the minimum-norm least-squares direction.  Returned as w / ||w||; its
    sign is such that the projection increases with position.
    """
    X = np.asarray(states, dtype=np.float64)
    p = np.asarray(positions, dtype=np.float64)
    if X.ndim != 2 or p.shape != (X.shape[0],):
        raise ValueError(f"states must be [n_tokens, d] and positions [n_tokens], got {X.shape} and {p.shape}")
    if alpha <= 0:
        raise ValueError("alpha must be > 0")
    Xc = X - X.mean(axis=0)
    pc = p - p.mean()
    n, d = Xc.shape
    tr = float(np.sum(Xc**2))
    if tr <= 0.0 or not np.any(pc):
        raise ValueError("states or positions are constant: no position direction")
    lam = alpha * tr / d
    if n < d:
        w = Xc.T @ np.linalg.solve(Xc @ Xc.T + lam * np.eye(n), pc)
    else:
        w = np.linalg.solve(Xc.T @ Xc + lam * np.eye(d), Xc.T @ pc)
    norm = np.linalg.norm(w)
    if norm == 0.0:
        raise ValueError("no linear position signal in the states")
    return w / norm


def project_out(X: np.ndarray, direction: np.ndarray) -> np.ndarray:
    """X − (X·u) uᵀ for a direction u (normalised here): the component of each row orthogonal to u."""
    X = np.asarray(X, dtype=np.float64)
    u = np.asarray(direction, dtype=np.float64)
    u = u / np.linalg.norm(u)
    return X - (X @ u)[..., None] * u


def dominant_direction(Y: np.ndarray) -> np.ndarray:
    """The rank-1 MLP ablation direction: the dominant singular vector (in d-space) of the *uncentred* per-prompt outputs.

    ``Y`` [n_prompts, d].  The paper's "dominant left-singular vector of the per-prompt
    MLP outputs" stacks outputs as columns ([d, n]); that is the top right-singular
    vector of Y [n, d].  No centring: it is an SVD, not a PCA.  Sign: Σ_p Y_p·u >= 0.
    """
    Y = np.asarray(Y, dtype=np.float64)
    if Y.ndim != 2:
        raise ValueError(f"Y must be [n_prompts, d], got {Y.shape}")
    _, s, vt = np.linalg.svd(Y, full_matrices=False)
    if s[0] == 0.0:
        raise ValueError("Y is zero: no dominant direction")
    u = vt[0]
    return -u if (Y @ u).sum() < 0 else u


def fraction_norm_removed(y: np.ndarray, direction: np.ndarray, reduce: str = "frobenius") -> float:
    """Fraction of the MLP output norm removed by projecting out a direction (App. B "Frac MLP norm removed").

    ``y`` [n_tokens, d] or [d]; y⊥ = ``project_out(y, direction)``.

    * ``"frobenius"`` (default): 1 − ||Y⊥||_F / ||Y||_F, the norm of the whole set of
      per-prompt outputs before vs after (= 1 − sqrt(1 − σ₁²/Σσ²) for the dominant direction);
    * ``"mean"``: mean over tokens of 1 − ||y⊥_t|| / ||y_t|| (zero-norm tokens skipped);
    * ``"energy"``: 1 − ||Y⊥||_F² / ||Y||_F², the squared-norm (variance-like) share.

    All lie in [0, 1]; an all-zero y gives 0.
    """
    Y = np.atleast_2d(np.asarray(y, dtype=np.float64))
    Yp = project_out(Y, direction)
    if reduce == "frobenius":
        tot = np.linalg.norm(Y)
        return 0.0 if tot == 0 else float(1.0 - np.linalg.norm(Yp) / tot)
    if reduce == "energy":
        energy = float(np.sum(Y**2))
        return 0.0 if energy == 0 else float(1.0 - np.sum(Yp**2) / energy)
    if reduce == "mean":
        n0 = np.linalg.norm(Y, axis=-1)
        ok = n0 > 0
        if not ok.any():
            return 0.0
        return float(np.mean(1.0 - np.linalg.norm(Yp[ok], axis=-1) / n0[ok]))
    raise ValueError(f"reduce must be 'frobenius', 'mean' or 'energy', got {reduce!r}")
