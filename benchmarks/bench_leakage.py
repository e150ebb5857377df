"""Benchmark: leakage ΔR² engine (harness/leakage.py) vs the plain per-head reference.

    python benchmarks/bench_leakage.py [--heads 270 --pairs 4000 --prompts 8 --perms 1000 --boot 1000]

The reference is the one in tests/test_leakage.py: per head, explicit designs
[one-hot(d)] and [one-hot(d), i − ī, j − j̄] solved with numpy.linalg.lstsq; the
permutation null refits the full model per permutation per head (the baseline
fit is unchanged by a within-offset permutation); the bootstrap refits both
models per resample per head.  The reference is timed on a few heads ×
permutations / resamples and extrapolated linearly (each fit has the same size,
so its cost is linear in the number of fits); the printout says so.  Exits 1 if
the engine is not at least --min-ratio (default 100) times faster overall.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from harness.leakage import (  # noqa: E402
    PairSet,
    bootstrap_delta_r2,
    bootstrap_weights,
    delta_r2,
    permutation_null,
    row_groups,
    within_group_permutations,
)
from tests.test_leakage import _designs, _r2, _rows  # noqa: E402  (the reference lives in the test file)


def uniform_causal_pairs(seq_len: int, n_pairs: int, seed: int) -> PairSet:
    """n_pairs causal pairs drawn uniformly without replacement from all (i, j <= i < seq_len)."""
    rng = np.random.default_rng(seed)
    ii, jj = np.tril_indices(seq_len)
    pick = np.sort(rng.choice(ii.size, size=n_pairs, replace=False))
    return PairSet(ii[pick], jj[pick])


def synthetic_attention(pairs: PairSet, n_prompts: int, n_heads: int, seq_len: int, seed: int) -> np.ndarray:
    """Causal-softmax weights at the pairs, [P, n_pairs, H]: offset-only logits g_h(d)
    (RoPE-like sum of cosines) with per-prompt noise in the numerator and the exact
    causal denominator Z_h(i) = Σ_{d<=i} exp g_h(d)."""
    rng = np.random.default_rng(seed)
    d = np.arange(seq_len)
    freqs = rng.uniform(0.01, 1.5, size=(n_heads, 6))
    amps = rng.normal(0, 0.8, size=(n_heads, 6))
    g = np.einsum("hf,hfd->hd", amps, np.cos(freqs[:, :, None] * d[None, None])) - 0.01 * d[None]
    Z = np.cumsum(np.exp(g), axis=1)  # [H, L]: denominator of query i
    num = np.exp(g[:, pairs.offsets].T[None] + rng.normal(0, 0.3, size=(n_prompts, pairs.n_pairs, n_heads)))
    return num / Z[:, pairs.i].T[None]


def timed(fn, *a, **k):
    """(result, seconds) of one call."""
    t = time.perf_counter()
    out = fn(*a, **k)
    return out, time.perf_counter() - t


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--heads", type=int, default=270)
    ap.add_argument("--pairs", type=int, default=4000)
    ap.add_argument("--prompts", type=int, default=8)
    ap.add_argument("--seq-len", type=int, default=512)
    ap.add_argument("--perms", type=int, default=1000)
    ap.add_argument("--boot", type=int, default=1000)
    ap.add_argument("--ref-heads", type=int, default=2, help="heads the reference is timed on")
    ap.add_argument("--ref-perms", type=int, default=2, help="permutations per head the reference is timed on")
    ap.add_argument("--ref-boot", type=int, default=1, help="bootstrap resamples per head the reference is timed on")
    ap.add_argument("--min-ratio", type=float, default=100.0)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)

    H, P = args.heads, args.prompts
    pairs = uniform_causal_pairs(args.seq_len, args.pairs, args.seed)
    Y = synthetic_attention(pairs, P, H, args.seq_len, args.seed)
    n_rows = P * pairs.n_pairs
    print(f"design: {pairs.n_pairs} causal pairs drawn uniformly at L={args.seq_len} "
          f"({pairs.n_groups} distinct offsets), {P} prompts stacked -> {n_rows} rows, {H} heads, "
          f"{args.perms} permutations, {args.boot} bootstrap resamples; float64")

    # ---- engine (all heads) ----
    fit, t_e_point = timed(delta_r2, pairs, Y)
    null, t_e_perm = timed(permutation_null, pairs, Y, args.perms, args.seed)
    boot, t_e_boot = timed(bootstrap_delta_r2, pairs, Y, args.boot, args.seed)
    assert null.shape == (args.perms, H) and boot.shape == (args.boot, H)

    # ---- reference on a subset, extrapolated ----
    rh = min(args.ref_heads, H)
    i, j, d, y = _rows(pairs, Y)
    Xb, Xf = _designs(i, j, d)
    ref_delta, t_r_point = timed(lambda: np.array([_r2(Xf, y[:, h]) - _r2(Xb, y[:, h]) for h in range(rh)]))
    perms = within_group_permutations(row_groups(pairs, P), args.ref_perms, np.random.default_rng(1))
    r2b = [_r2(Xb, y[:, h]) for h in range(rh)]  # unchanged by within-group permutations (not timed)
    ref_null, t_r_perm = timed(lambda: np.array([[_r2(Xf, y[p, h]) - r2b[h] for h in range(rh)] for p in perms]))
    w = bootstrap_weights(P, args.ref_boot, seed=2)
    rows_b = [np.repeat(np.arange(n_rows).reshape(P, -1), wb.astype(int), axis=0).ravel() for wb in w]
    resampled = [(Xb[r], Xf[r], y[r]) for r in rows_b]  # resampled designs built outside the timer
    ref_boot, t_r_boot = timed(lambda: np.array(
        [[_r2(xf, yr[:, h]) - _r2(xb, yr[:, h]) for h in range(rh)] for xb, xf, yr in resampled]))

    # correctness on the subset
    err_point = np.abs(fit.delta[:rh] - ref_delta).max()
    err_perm = np.abs(permutation_null(pairs, Y[:, :, :rh], perms=perms) - ref_null).max()
    err_boot = np.abs(bootstrap_delta_r2(pairs, Y[:, :, :rh], weights=w) - ref_boot).max()

    scale_point = H / rh
    scale_perm = H * args.perms / (rh * args.ref_perms)
    scale_boot = H * args.boot / (rh * args.ref_boot)
    rows = [
        ("point estimate (R²_base, R²_full, ΔR²)", t_e_point, t_r_point, scale_point,
         f"{rh} heads x 2 fits", err_point),
        ("permutation null", t_e_perm, t_r_perm, scale_perm,
         f"{rh} heads x {args.ref_perms} perms x 1 full fit", err_perm),
        ("bootstrap over prompts", t_e_boot, t_r_boot, scale_boot,
         f"{rh} heads x {args.ref_boot} resamples x 2 fits", err_boot),
    ]
    print()
    print(f"{'stage':40s} {'engine s':>10s} {'reference s (extrap.)':>22s} {'ratio':>10s}  "
          f"{'max|engine-ref|':>15s}  reference timed on")
    tot_e = tot_r = 0.0
    for name, te, tr, sc, what, err in rows:
        tr_full = tr * sc
        tot_e += te
        tot_r += tr_full
        print(f"{name:40s} {te:10.3f} {tr_full:22.1f} {tr_full / te:10.0f}x  {err:15.2e}  {what} "
              f"({tr:.2f} s, x{sc:.0f})")
    ratio = tot_r / tot_e
    print(f"{'TOTAL':40s} {tot_e:10.3f} {tot_r:22.1f} {ratio:10.0f}x")
    print("\nreference times are measured on the subset shown and extrapolated linearly "
          "(every reference fit has the same design size).")
    ok = ratio >= args.min_ratio and max(err_point, err_perm, err_boot) < 1e-8
    print(f"speed ratio {ratio:.0f}x (required >= {args.min_ratio:.0f}x); "
          f"max engine-reference difference {max(err_point, err_perm, err_boot):.1e} (required < 1e-8): "
          f"{'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
