"""Length scaling of mean leakage (paper §4 "Length-scaling", §5.8), pure numpy, float64.

The paper: "Mean ΔR² decays with sequence length.  A piecewise model that is flat below
[L0] and decays as [L^b] above is preferred over a single power law by AIC by [Δ]."
Both models are fitted by least squares in log–log space (u = ln L, v = ln y):

* power law:  v = ln a + b·u                                   (k = 2: a, b)
* piecewise:  v = ln c                 for u <= t = ln L0
              v = ln c + b·(u − t)     for u >  t              (k = 3: c, b, L0)
  i.e. y = c for L <= L0 and y = c·(L/L0)^b above: continuous at L0.

AIC = n·ln(RSS/n) + 2k with RSS the residual sum of squares in log space (Gaussian
errors on ln y, σ² profiled out).  Counting σ² as one more parameter adds 2 to both
AICs and leaves their difference unchanged.  ``delta_aic = aic_power − aic_piecewise``;
positive favours the piecewise model.

The piecewise breakpoint is found exactly: for each split of the sorted distinct lengths
into a flat side and a decaying side, the continuous-breakpoint optimum inside the gap is
a 3-parameter linear least-squares problem; breakpoints at observed lengths are a grid.
A breakpoint at the smallest length is the pure power law, so the piecewise model nests
it: rss_piecewise <= rss_power and delta_aic >= −2 always.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike

from harness.spec.decision import Decision, at_least, within
from harness.stats.intervals import percentile_ci

__all__ = [
    "MSE_FLOOR",
    "FitResult",
    "power_law",
    "piecewise_law",
    "gaussian_aic",
    "fit_power_law",
    "fit_piecewise",
    "compare_aic",
]

#: Floor on RSS/n (log space) inside the AIC: an exact fit would otherwise give −inf.
#: 1e-18 is a residual rms of 1e-9 in ln y, far below any measurement noise.
MSE_FLOOR = 1e-18


def power_law(L: ArrayLike, a: float, b: float) -> np.ndarray:
    """y = a·L^b."""
    return a * np.asarray(L, dtype=np.float64) ** b


def piecewise_law(L: ArrayLike, c: float, b: float, L0: float) -> np.ndarray:
    """y = c for L <= L0, c·(L/L0)^b for L > L0."""
    L = np.asarray(L, dtype=np.float64)
    return c * np.where(L > L0, L / L0, 1.0) ** b


def gaussian_aic(rss: float, n: int, k: int) -> float:
    """n·ln(RSS/n) + 2k, with RSS/n floored at ``MSE_FLOOR``."""
    return float(n * np.log(max(rss / n, MSE_FLOOR)) + 2 * k)


@dataclass(frozen=True)
class FitResult:
    """One fitted model.  ``prediction`` is on the y scale at the input lengths; ``rss`` is in log space."""

    model: str  # "power" or "piecewise"
    params: dict[str, float]
    prediction: np.ndarray = field(repr=False)
    rss: float
    aic: float
    k: int
    n: int

    @property
    def aicc(self) -> float:
        """Small-sample corrected AIC (AIC + 2k(k+1)/(n−k−1)); inf when n <= k + 1."""
        d = self.n - self.k - 1
        return float("inf") if d <= 0 else self.aic + 2 * self.k * (self.k + 1) / d

    def predict(self, L: ArrayLike) -> np.ndarray:
        if self.model == "power":
            return power_law(L, **self.params)
        return piecewise_law(L, **self.params)


def _validate(L: ArrayLike, y: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    L = np.asarray(L, dtype=np.float64).ravel()
    y = np.asarray(y, dtype=np.float64).ravel()
    if L.shape != y.shape:
        raise ValueError(f"L and y must have the same length, got {L.shape} and {y.shape}")
    if not (np.all(np.isfinite(L)) and np.all(np.isfinite(y))):
        raise ValueError("L and y must be finite")
    if np.any(L <= 0) or np.any(y <= 0):
        raise ValueError("log-space fits need L > 0 and y > 0")
    if np.unique(L).size < 3:
        raise ValueError("need at least three distinct lengths")
    return L, y


def _lstsq_rss(A: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, float]:
    coef, *_ = np.linalg.lstsq(A, v, rcond=None)
    r = v - A @ coef
    return coef, float(r @ r)


def fit_power_law(L: ArrayLike, y: ArrayLike) -> FitResult:
    """y = a·L^b by OLS of ln y on ln L (k = 2)."""
    L, y = _validate(L, y)
    u, v = np.log(L), np.log(y)
    coef, rss = _lstsq_rss(np.column_stack([np.ones_like(u), u]), v)
    a, b = float(np.exp(coef[0])), float(coef[1])
    n = u.size
    return FitResult("power", {"a": a, "b": b}, power_law(L, a, b), rss, gaussian_aic(rss, n, 2), 2, n)


def _improves(rss: float, best: float) -> bool:
    """A candidate's RSS beats the best so far by more than float round-off (ties keep the earlier one)."""
    return rss < best - 1e-12 * max(best, 1e-300)


def fit_piecewise(L: ArrayLike, y: ArrayLike) -> FitResult:
    """Flat at c up to L0, then c·(L/L0)^b (continuous), by exact least squares in log space (k = 3).

    Candidates: (i) t = ln L0 at every distinct observed length (a hinge regression, linear
    in ln c and b; t at the largest length is the all-flat model, b = 0); (ii) for every
    gap (u_k, u_{k+1}) between consecutive distinct ln-lengths, the unconstrained fit
    v = α + 1[u >= u_{k+1}]·(b·u + γ), whose breakpoint t = −γ/b is accepted if it falls
    inside the gap (then it is the continuous hinge with that partition).  The candidate
    with the smallest RSS wins; ties go to the earlier (smaller) breakpoint.
    """
    L, y = _validate(L, y)
    u, v = np.log(L), np.log(y)
    n = u.size
    knots = np.unique(u)
    best = None  # (rss, ln c, b, t)
    for t in knots:
        x = np.maximum(u - t, 0.0)
        coef, rss = _lstsq_rss(np.column_stack([np.ones_like(u), x]), v)
        cand = (rss, coef[0], coef[1] if np.any(x) else 0.0, t)
        if best is None or _improves(cand[0], best[0]):
            best = cand
    assert best is not None  # _validate guarantees >= 3 distinct lengths, so the loop above ran
    for lo, hi in zip(knots[:-2], knots[1:-1]):
        # Gap (lo, hi): needs >= 2 distinct lengths on the decaying side to identify b.
        right = (u >= hi).astype(np.float64)
        A = np.column_stack([np.ones_like(u), right * u, right])
        coef, rss = _lstsq_rss(A, v)
        if coef[1] == 0.0:
            continue
        t = -coef[2] / coef[1]
        if lo < t < hi and _improves(rss, best[0]):
            best = (rss, coef[0], coef[1], t)
    rss, lnc, b, t = best
    c, b, L0 = float(np.exp(lnc)), float(b), float(np.exp(t))
    return FitResult(
        "piecewise", {"c": c, "b": b, "L0": L0}, piecewise_law(L, c, b, L0), float(rss), gaussian_aic(rss, n, 3), 3, n
    )


def compare_aic(L: ArrayLike, y: ArrayLike) -> dict:
    """Both fits and ``delta_aic = aic_power − aic_piecewise`` (> 0 favours the piecewise model).

    Returns {"power": FitResult, "piecewise": FitResult, "delta_aic": float,
    "delta_aicc": float, "preferred": "piecewise" | "power"}; ``preferred`` is
    "piecewise" only when delta_aic > 0.
    """
    pw = fit_power_law(L, y)
    pc = fit_piecewise(L, y)
    delta = pw.aic - pc.aic
    return {
        "power": pw,
        "piecewise": pc,
        "delta_aic": float(delta),
        "delta_aicc": float(pw.aicc - pc.aicc),
        "preferred": "piecewise" if delta > 0 else "power",
    }


def interior_breakpoint(L: ArrayLike, L0: float) -> bool:
    """Whether a piecewise fit's breakpoint lies strictly inside the length grid. At the smallest length the
    piecewise law is the power law itself (ΔAIC ≡ −2 by the parameter count), at the largest it is a
    constant: either way there is no breakpoint to report. ``exp(log(16))`` may be 15.9999…: relative slack."""
    L = np.asarray(L, dtype=np.float64)
    return bool(L.min() * (1 + 1e-9) < L0 < L.max() * (1 - 1e-9))


def _composition(base: np.ndarray, bi: np.ndarray) -> dict[str, np.ndarray]:
    """The size-ladder statistics for each column of base, bi [sizes, ...]: the residual-stream share per size, the
    spread max_s |base_s / mean − 1|, the rise share[1] − share[0] and (three sizes or more) the saturation margin
    (share[1] − share[0]) − |share[2] − share[1]|, > 0 where the shift from the second size on is the smaller."""
    share = bi / base
    out = {"share": share, "spread": np.abs(base / base.mean(axis=0) - 1).max(axis=0), "rise": share[1] - share[0]}
    if len(share) > 2:
        out["saturation"] = out["rise"] - np.abs(share[2] - share[1])
    return out


def composition_intervals(
    base: ArrayLike, bi: ArrayLike, base_rows: ArrayLike | None = None, bi_rows: ArrayLike | None = None, n: int = 0
) -> tuple[np.ndarray, dict[str, tuple[float, tuple[float, float] | None]]]:
    """The model-scale figures on a size ladder, smallest first: the share per size, and {spread, rise[, saturation]:
    (point, 95% CI)}. ``base_rows``/``bi_rows`` [sizes, B]: each size's head-mean ΔR² on B prompt resamples, the same
    resamples for every size and condition (the family's sizes read the same prompts), so the CIs are paired;
    ``n`` the prompts resampled (the expanded percentile interval, ``intervals.percentile_ci``). Without rows
    (a merge of runs that kept only each size's point estimates) every CI is None."""
    point = _composition(np.asarray(base, dtype=float), np.asarray(bi, dtype=float))
    rows = None
    if base_rows is not None and bi_rows is not None:
        rows = _composition(np.asarray(base_rows, dtype=float), np.asarray(bi_rows, dtype=float))
    stats: dict[str, tuple[float, tuple[float, float] | None]] = {}
    for k, v in point.items():
        if k != "share":
            lo, hi = (None, None) if rows is None else (float(x) for x in percentile_ci(rows[k], n=n))
            stats[k] = (float(v), None if lo is None or hi is None else (lo, hi))
    return point["share"], stats


def composition_checks(
    base: ArrayLike,
    bi: ArrayLike,
    constant: float,
    base_rows: ArrayLike | None = None,
    bi_rows: ArrayLike | None = None,
    n: int = 0,
) -> tuple[np.ndarray, list[tuple[str, Decision, str]]]:
    """Leakage across model scale (§5.9 Table 11) on a size ladder, smallest first: each size's head-mean ΔR², causal
    (``base``) and bidirectional (``bi``), with their bootstrap rows where measured (``composition_intervals``).
    Returns the residual-stream share bi / base per size and the claim's criteria in order, each (condition, the one
    rule's ``Decision`` on its paired 95% CI, the message for a reader): "approximately constant" as an equivalence,
    the spread inside [0, ``constant``]; "rises" as the rise above 0; (three sizes or more) "saturates" as the
    saturation margin above 0. A straddling interval is inconclusive, never not held; without rows (a merge of runs
    that kept only point estimates) each decision is on its point estimate and says so. One function for the claim
    test and for a merge of runs that measured the sizes apart (harness.report.ladder)."""
    share, st = composition_intervals(base, bi, base_rows, bi_rows, n)
    count = n or None
    base_s = np.round(np.asarray(base, dtype=float), 4).tolist()
    shares = np.round(share, 3).tolist()
    checks = [
        (
            "constant",
            within(st["spread"][0], st["spread"][1], 0.0, constant, count),
            f"total leakage is not shown constant across sizes ({base_s}): the largest deviation of a size's mean "
            f"ΔR² from the family mean, against within {constant:.0%}",
        ),
        (
            "rises",
            at_least(st["rise"][0], st["rise"][1], 0.0, count),
            f"the residual-stream share is not shown to rise from the smallest size ({shares}): share[1] - share[0]",
        ),
    ]
    if "saturation" in st:
        checks.append(
            (
                "saturates",
                at_least(st["saturation"][0], st["saturation"][1], 0.0, count),
                f"the residual-stream share is not shown to saturate ({shares}): "
                f"(share[1] - share[0]) - |share[2] - share[1]|",
            )
        )
    return share, checks
