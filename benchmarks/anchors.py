"""The strong anchor for benchmarks/bench_leakage.py: leakage ΔR² as a competent researcher would write it
with explicit designs and one factorisation per design shared by all heads (the performance
review's "S2": the strongest hand-written baseline). Not used by the harness.

Designs over the pooled rows (prompt-major, as in harness/stats/pairs.py): baseline = one-hot(d), which spans the
intercept; full = one-hot(d) + standardised centred i. The centred j is left out of the full design because
j = i − d lies in the span of the other columns, so the full model's column space is unchanged.

* point estimate: one reduced QR per design (numpy.linalg.qr); Qᵀy for every head with one GEMM per design;
  fitted sum of squares ||Qᵀy||², SSE = SST − ||Qᵀy||².
* permutation null: Q_fᵀ @ y[perm] for all heads, a chunk of permutations per batched GEMM, reusing the
  point estimate's Q_f and baseline SSE (a within-offset permutation leaves SST and the baseline fit unchanged).
* bootstrap over prompts: per-prompt Gram matrices X_pᵀX_p and X_pᵀY_p (full design; the baseline's are its
  leading block), summed with a resample's prompt counts, then one Cholesky per resample and design, shared by
  all heads; fitted sum of squares ||L⁻¹ Xᵀy||².

Deliberately not used: the nesting of the two designs (the last column of the full design's Q, or the last
row of its Cholesky factor, carries the whole ΔR²). Exploiting it is Frisch–Waugh–Lovell, the engine's own
algorithm, not an anchor for it.
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import cho_factor, solve_triangular

from harness.stats.pairs import PairSet


def designs(pairs: PairSet, n_prompts: int) -> tuple[np.ndarray, np.ndarray]:
    """Baseline one-hot(d) [n_rows, G] and full [n_rows, G + 1] (one-hot(d), standardised centred i)."""
    d = np.tile(pairs.offsets, n_prompts)
    i = np.tile(pairs.i, n_prompts).astype(np.float64)
    onehot = (d[:, None] == pairs.group_values[None, :]).astype(np.float64)
    ic = i - i.mean()
    sd = ic.std()
    return onehot, np.column_stack([onehot, ic / (sd if sd > 0 else 1.0)])


class StrongAnchor:
    """ΔR² for all heads of Y [P, n_pairs, H] by shared factorisations (see the module docstring)."""

    def __init__(self, pairs: PairSet, Y: np.ndarray):
        Y = np.asarray(Y, dtype=np.float64)
        self.P, self.N, self.H = Y.shape
        self.Y = Y
        self.yc = (Y - Y.mean(axis=(0, 1), keepdims=True)).reshape(self.P * self.N, self.H)
        self.Xb, self.Xf = designs(pairs, self.P)
        self.k_base = self.Xb.shape[1]

    # ---- point estimate ----
    def point(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(R²_base, R²_full, ΔR²) per head; keeps Q_f, SST and SSE_base for the null."""
        self.sst = np.einsum("rh,rh->h", self.yc, self.yc)
        fitted = []
        for X in (self.Xb, self.Xf):
            Q = np.linalg.qr(X, mode="reduced")[0]
            Z = Q.T @ self.yc
            fitted.append(np.einsum("kh,kh->h", Z, Z))
        self.Qf = Q
        self.sse_base = self.sst - fitted[0]
        r2b, r2f = fitted[0] / self.sst, fitted[1] / self.sst
        return r2b, r2f, r2f - r2b

    # ---- permutation null ----
    def null(self, perms: np.ndarray, chunk_elems: int = 16_000_000) -> np.ndarray:
        """ΔR² of the permuted data y[perm] per head [n_perm, H]; needs ``point()`` first."""
        n_rows = self.yc.shape[0]
        step = max(1, chunk_elems // (n_rows * self.H))
        QfT = np.ascontiguousarray(self.Qf.T)
        out = np.empty((perms.shape[0], self.H))
        for s in range(0, perms.shape[0], step):
            Z = np.matmul(QfT, self.yc[perms[s : s + step]])  # [c, k, H]: one batched GEMM per chunk
            sse_full = self.sst - np.einsum("ckh,ckh->ch", Z, Z)
            out[s : s + Z.shape[0]] = (self.sse_base - sse_full) / self.sst
        return out

    # ---- bootstrap over prompts ----
    def boot_prepare(self) -> None:
        """Per-prompt Gram matrices X_pᵀX_p [P, k, k], X_pᵀY_p [P, k, H] and Σy, Σy² per prompt."""
        Xp = self.Xf.reshape(self.P, self.N, -1)
        Yp = self.yc.reshape(self.P, self.N, self.H)
        self.G = np.matmul(Xp.transpose(0, 2, 1), Xp)
        self.B = np.matmul(Xp.transpose(0, 2, 1), Yp)
        self.s1 = Yp.sum(axis=1)
        self.s2 = np.einsum("pnh,pnh->ph", Yp, Yp)

    def boot(self, weights: np.ndarray) -> np.ndarray:
        """ΔR² per resample and head [B, H] for prompt counts weights [B, P]; needs ``boot_prepare()`` first."""
        kb = self.k_base
        out = np.empty((weights.shape[0], self.H))
        for r, w in enumerate(weights):
            G = np.tensordot(w, self.G, axes=1)
            Bw = np.tensordot(w, self.B, axes=1)
            S1, S2 = w @ self.s1, w @ self.s2
            sst = S2 - S1 * S1 / (w.sum() * self.N)
            fitted = []
            for Gd, Bd in ((G[:kb, :kb], Bw[:kb]), (G, Bw)):
                L = cho_factor(Gd, lower=True, check_finite=False)[0]
                Z = solve_triangular(L, Bd, lower=True, check_finite=False)
                fitted.append(np.einsum("kh,kh->h", Z, Z))
            out[r] = (fitted[1] - fitted[0]) / sst
        return out
