"""Probe-style measurements (paper §4, §5.1–5.2, §5.8, App. B): pure numpy / scikit-learn, float64.

Each public function is one measurement on arrays that some capture produced; nothing
here runs a model.  The paper's text lost most of its symbols; every reading we had to
make is stated in the function's docstring (and in METHODS.md).

* ``topic_probe_accuracy`` / ``topic_probe_grid`` – the topic-decodability probe of a
  position (T1): PCA then multinomial logistic regression, 5-fold stratified CV, the
  PCA fitted inside every training fold.
* ``chance_level`` / ``binomial_sf`` / ``above_chance`` – chance level and an exact
  one-sided binomial test of "decodable above chance".
* ``cosine_consistency`` / ``decile_split`` – cross-prompt cosine consistency of each
  head's output, and the top / bottom decile by sink-reading strength (T3, T11).
* ``pc1_identity_r2`` / ``pc1_identity_null`` / ``pc1_identity_pvalue`` – the Qwen
  sink-token-identity probe (T4).
* ``rank1_direction`` / ``project_out`` – the rank-1 position-probe direction and its
  projection (T11 subspace ablation).
* ``dominant_direction`` / ``fraction_norm_removed`` – the rank-1 MLP ablation
  direction and the fraction of the MLP output norm it removes (T12, App. B).
"""
from __future__ import annotations

import math
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold
from threadpoolctl import threadpool_limits

from .leakage import permutation_pvalues

__all__ = [
    "DEFAULT_N_COMPONENTS",
    "effective_n_components",
    "topic_probe_accuracy",
    "topic_probe_grid",
    "chance_level",
    "binomial_sf",
    "above_chance",
    "cosine_consistency",
    "decile_split",
    "pc1_identity_r2",
    "pc1_identity_null",
    "pc1_identity_pvalue",
    "rank1_direction",
    "project_out",
    "dominant_direction",
    "fraction_norm_removed",
]

#: PCA components of the topic probe.  The paper's number was lost in extraction
#: ("after PCA reduction to [k] components"); 50 is our choice (see METHODS.md).
#: It is always capped by ``effective_n_components``.
DEFAULT_N_COMPONENTS = 50

#: Singular values of centred data <= RANK_RTOL * max(n, d) * max(s_max, max|X|) are
#: numerical noise (a numpy matrix_rank-style rule, with max|X| as a floor so that rows
#: identical up to rounding in the mean count as constant): such components are dropped.
RANK_RTOL = 10 * np.finfo(np.float64).eps


def _noise_tol(X: np.ndarray, s: np.ndarray) -> float:
    ref = max(float(s[0]) if s.size else 0.0, float(np.abs(X).max()) if X.size else 0.0)
    return RANK_RTOL * max(X.shape) * ref


# --------------------------------------------------------------------------
# Topic probe (T1)
# --------------------------------------------------------------------------
def effective_n_components(requested: int, n_train: int, d: int) -> int:
    """The component guard: min(requested, n_train - 1, d), at least 1.

    After centring, a training fold of n_train rows has rank <= n_train - 1, so more
    components than that are pure numerical noise; d bounds the rank from the other side.
    """
    if requested < 1:
        raise ValueError(f"n_components must be >= 1, got {requested}")
    return max(1, min(int(requested), int(n_train) - 1, int(d)))


def _fit_pca(X_train: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """PCA of one training fold: (mean [d], components [k', d], score std [k']).

    Covariance PCA (centred, not standardised) by SVD of the centred training rows.
    Components whose singular value is numerical noise are dropped, so k' <= k and
    k' = 0 for a constant training matrix.  Scores are later divided by their
    training standard deviation (whitening) so that the logistic regression's L2
    penalty does not depend on the residual stream's scale.
    """
    mean = X_train.mean(axis=0)
    Xc = X_train - mean
    _, s, vt = np.linalg.svd(Xc, full_matrices=False)
    keep = min(k, int(np.sum(s > _noise_tol(X_train, s))))
    n = X_train.shape[0]
    scale = s[:keep] / math.sqrt(max(n - 1, 1))
    return mean, vt[:keep], scale


def _fold_predictions(X: np.ndarray, y: np.ndarray, splits, n_components: int, C: float,
                      max_iter: int) -> np.ndarray:
    """Out-of-fold predicted labels for every row (each row predicted once)."""
    pred = np.empty_like(y)
    for train, test in splits:
        k = effective_n_components(n_components, train.size, X.shape[1])
        mean, comps, scale = _fit_pca(X[train], k)
        if comps.shape[0] == 0:
            # Constant training features: no direction to learn from.  Predict the
            # training majority class (ties -> smallest label), as any classifier
            # without usable features would.
            classes, counts = np.unique(y[train], return_counts=True)
            pred[test] = classes[np.argmax(counts)]
            continue
        Z_train = ((X[train] - mean) @ comps.T) / scale
        Z_test = ((X[test] - mean) @ comps.T) / scale
        clf = LogisticRegression(C=C, max_iter=max_iter)
        with warnings.catch_warnings():
            # Whitened scores with k <= n_train - 1 can be linearly separable; lbfgs then
            # stops at max_iter with a warning but its predictions are already settled.
            warnings.simplefilter("ignore", ConvergenceWarning)
            clf.fit(Z_train, y[train])
        pred[test] = clf.predict(Z_test)
    return pred


def _splits(labels: np.ndarray, folds: int, seed: int):
    _, counts = np.unique(labels, return_counts=True)
    if counts.size < 2:
        raise ValueError("the topic probe needs at least two classes")
    if counts.min() < folds:
        raise ValueError(f"every class needs >= {folds} prompts for {folds}-fold stratified CV, "
                         f"smallest class has {counts.min()}")
    skf = StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed)
    return list(skf.split(np.zeros((labels.size, 1)), labels))


def topic_probe_accuracy(X: np.ndarray, labels: np.ndarray, n_components: int = DEFAULT_N_COMPONENTS,
                         folds: int = 5, seed: int = 0, C: float = 1.0, max_iter: int = 200) -> float:
    """Topic decodability of one (layer, position): mean k-fold CV accuracy of PCA -> logistic regression.

    ``X`` is [n_prompts, d] (one residual-stream state per prompt), ``labels`` [n_prompts]
    the topic of each prompt.  Folds are ``StratifiedKFold(folds, shuffle=True,
    random_state=seed)``.  Within every fold, on the training rows only:

    1. PCA: centre, SVD, keep ``effective_n_components(n_components, n_train, d)``
       components (fewer if the fold's numerical rank is lower);
    2. whiten: divide each component score by its training standard deviation;
    3. multinomial logistic regression (L2, ``C``, lbfgs, ``max_iter``).

    The test rows are transformed with the training fold's mean, components and scales.
    The result is the mean of the per-fold accuracies (the paper's "mean five-fold
    cross-validated accuracy").  A fold whose training states are constant (e.g. the
    position-0 state when the token there is a fixed BOS) predicts its training majority
    class, i.e. it scores chance on balanced topics.
    """
    X = np.asarray(X, dtype=np.float64)
    labels = np.asarray(labels)
    if X.ndim != 2 or labels.shape != (X.shape[0],):
        raise ValueError(f"X must be [n_prompts, d] and labels [n_prompts], got {X.shape} and {labels.shape}")
    splits = _splits(labels, folds, seed)
    with threadpool_limits(limits=1, user_api="blas"):
        return _cv_accuracy(X, labels, splits, n_components, C, max_iter, "X")


def _cv_accuracy(X, labels, splits, n_components, C, max_iter, what: str) -> float:
    """Mean per-fold accuracy of the PCA -> logistic probe on ``X`` (named ``what`` in errors)."""
    if not np.all(np.isfinite(X)):
        raise ValueError(f"{what} contains non-finite values")
    pred = _fold_predictions(X, labels, splits, n_components, C, max_iter)
    return float(np.mean([np.mean(pred[test] == labels[test]) for _, test in splits]))


def topic_probe_grid(states: np.ndarray, labels: np.ndarray, n_components: int = DEFAULT_N_COMPONENTS,
                     folds: int = 5, seed: int = 0, C: float = 1.0, max_iter: int = 200) -> np.ndarray:
    """``topic_probe_accuracy`` for every (layer, position): states [n_prompts, layers, positions, d] -> [layers, positions].

    The same stratified folds (one ``seed``) are used in every cell, so cells are
    compared on identical train / test partitions.  Both probe functions run with BLAS
    limited to one thread: the matrices are small (n_prompts rows) and multithreaded
    LAPACK on them is several times slower, not faster, on a shared machine.
    """
    states = np.asarray(states)
    labels = np.asarray(labels)
    if states.ndim != 4 or labels.shape != (states.shape[0],):
        raise ValueError(f"states must be [n_prompts, layers, positions, d] and labels [n_prompts], "
                         f"got {states.shape} and {labels.shape}")
    splits = _splits(labels, folds, seed)
    _, n_layers, n_pos, _ = states.shape
    out = np.empty((n_layers, n_pos), dtype=np.float64)
    with threadpool_limits(limits=1, user_api="blas"):
        for layer in range(n_layers):
            for pos in range(n_pos):
                out[layer, pos] = _cv_accuracy(np.asarray(states[:, layer, pos, :], dtype=np.float64), labels,
                                               splits, n_components, C, max_iter, f"states[:, {layer}, {pos}]")
    return out


# --------------------------------------------------------------------------
# Chance level and the binomial test
# --------------------------------------------------------------------------
def chance_level(labels: np.ndarray) -> float:
    """Majority-class share: the accuracy of always predicting the most frequent label (0.25 on four balanced topics)."""
    labels = np.asarray(labels)
    if labels.size == 0:
        raise ValueError("no labels")
    _, counts = np.unique(labels, return_counts=True)
    return float(counts.max() / labels.size)


def binomial_sf(k: int, n: int, p: float) -> float:
    """Exact upper tail P(X >= k) for X ~ Binomial(n, p), summed in log space (no scipy)."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"p must be in [0, 1], got {p}")
    k, n = int(k), int(n)
    if k <= 0:
        return 1.0
    if k > n:
        return 0.0
    if p == 0.0:
        return 0.0
    if p == 1.0:
        return 1.0
    lp, lq = math.log(p), math.log1p(-p)
    lg_n = math.lgamma(n + 1)
    terms = np.array([lg_n - math.lgamma(j + 1) - math.lgamma(n - j + 1) + j * lp + (n - j) * lq
                      for j in range(k, n + 1)])
    m = terms.max()
    return float(min(1.0, math.exp(m) * np.exp(terms - m).sum()))


def above_chance(acc: float, n: int, chance: float, alpha: float = 0.05) -> bool:
    """One-sided exact binomial test: is accuracy ``acc`` on ``n`` predictions above ``chance`` at level ``alpha``?

    The number of correct predictions is k = round(acc * n); the test rejects "at chance"
    when P(X >= k | Binomial(n, chance)) < alpha.  Under CV every prompt is predicted
    once, so n is the number of prompts.  (CV predictions are not independent draws;
    the binomial test is the usual approximation.)  "At chance" = ``not above_chance``:
    an accuracy below chance, as CV on label-independent data often gives, is at chance.
    """
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    k = int(round(float(acc) * n))
    return binomial_sf(k, n, float(chance)) < alpha


# --------------------------------------------------------------------------
# Cosine consistency and deciles (T3, T11)
# --------------------------------------------------------------------------
def cosine_consistency(outputs: np.ndarray) -> np.ndarray:
    """Mean pairwise cosine similarity across prompts, per head: [n_prompts, *heads, d] -> [*heads].

    For each head, the mean of cos(o_p, o_q) over the n(n-1)/2 unordered pairs of
    distinct prompts p < q.  Vectorised with the Gram identity: with unit vectors u_p,
    Σ_{p<q} u_p·u_q = (||Σ_p u_p||² − Σ_p ||u_p||²) / 2.

    Zero-norm vectors have no direction: their cosine with anything is defined as 0
    (u_p = 0) and they still count in the n(n−1)/2 pairs, so a head that writes zero
    on some prompts is less consistent; a head that is zero on every prompt scores 0.
    Needs n_prompts >= 2; results are clipped to [−1, 1].
    """
    o = np.asarray(outputs, dtype=np.float64)
    if o.ndim < 2:
        raise ValueError(f"outputs must be [n_prompts, *heads, d], got shape {o.shape}")
    n = o.shape[0]
    if n < 2:
        raise ValueError("cosine consistency needs at least two prompts")
    if not np.all(np.isfinite(o)):
        raise ValueError("outputs contain non-finite values")
    norms = np.linalg.norm(o, axis=-1, keepdims=True)
    u = np.divide(o, norms, out=np.zeros_like(o), where=norms > 0)
    total = u.sum(axis=0)
    sq_sum = np.einsum("...d,...d->...", total, total)
    self_sum = (norms[..., 0] > 0).sum(axis=0)
    mean = (sq_sum - self_sum) / (n * (n - 1))
    return np.clip(mean, -1.0, 1.0)


def decile_split(strength: np.ndarray, frac: float = 0.1) -> tuple[np.ndarray, np.ndarray]:
    """Flat indices of the top and bottom ``frac`` of heads by ``strength`` (any shape, e.g. [L, H]).

    Each group has k = ceil(frac · n_heads) heads (at least 1): ceil because the paper's
    "top-decile sink-reading heads" of Llama-3.2-1B's 512 heads are 52.  ``top`` is
    ordered strongest first, ``bottom`` weakest first.  Both come from one stable
    descending order, so the groups are disjoint even under ties: among tied heads the
    lower flat index ranks stronger.  Needs 2k <= n_heads.  Use ``np.unravel_index(idx, strength.shape)`` for (layer, head).
    """
    s = np.asarray(strength, dtype=np.float64).ravel()
    if not 0.0 < frac <= 0.5:
        raise ValueError(f"frac must be in (0, 0.5], got {frac}")
    if np.isnan(s).any():
        raise ValueError("strength contains NaN")
    n = s.size
    k = max(1, math.ceil(frac * n - 1e-9))
    if 2 * k > n:
        raise ValueError(f"{n} heads cannot give disjoint top and bottom groups of {k}")
    order = np.argsort(-s, kind="stable")  # strongest first, ties -> lower flat index first
    return order[:k], order[::-1][:k]


# --------------------------------------------------------------------------
# Sink-token identity probe (T4)
# --------------------------------------------------------------------------
def _pc1_scores(outputs: np.ndarray) -> tuple[np.ndarray, float]:
    o = np.asarray(outputs, dtype=np.float64)
    if o.ndim != 2:
        raise ValueError(f"outputs must be [n_prompts, d], got shape {o.shape}")
    if not np.all(np.isfinite(o)):
        raise ValueError("outputs contain non-finite values")
    oc = o - o.mean(axis=0)
    u, s, _ = np.linalg.svd(oc, full_matrices=False)
    total = float(np.sum(s ** 2))
    if total <= 0.0 or s[0] <= _noise_tol(o, s):
        return np.zeros(o.shape[0]), 0.0
    return u[:, 0] * s[0], float(s[0] ** 2 / total)


def _onehot(token_ids: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    token_ids = np.asarray(token_ids)
    if token_ids.shape != (n,):
        raise ValueError(f"token_ids must be [n_prompts] = [{n}], got {token_ids.shape}")
    _, inv = np.unique(token_ids, return_inverse=True)
    G = np.zeros((n, inv.max() + 1), dtype=np.float64)
    G[np.arange(n), inv] = 1.0
    return G, G.sum(axis=0)


def _between_share(Z: np.ndarray, G: np.ndarray, sizes: np.ndarray, sst: float) -> np.ndarray:
    """R² of each row of Z [m, n] on one-hot groups G [n, g]: between-group SS / total SS."""
    sums = Z @ G  # [m, g]
    ssb = (sums ** 2 / sizes).sum(axis=-1) - Z.sum(axis=-1) ** 2 / Z.shape[-1]
    return np.clip(ssb / sst, 0.0, 1.0)


def pc1_identity_r2(outputs: np.ndarray, token_ids: np.ndarray) -> tuple[float, float]:
    """(R², PC1 variance fraction) of a head's output projected on its first principal component.

    ``outputs`` [n_prompts, d] is one head's output at the probed position for prompts
    that differ only in the token at position 0 (``token_ids`` [n_prompts]).  The
    outputs are centred, the first principal component taken by SVD, and each prompt's
    PC1 score z_p regressed by OLS with intercept on a one-hot encoding of its
    position-0 token.  With a full set of group indicators that R² is the between-group
    share of variance, Σ_g n_g (z̄_g − z̄)² / Σ_p (z_p − z̄)².

    The PC1 variance fraction is s_1² / Σ s_i² of the centred outputs (the paper keeps
    heads above a threshold).  Outputs that are constant across prompts give (0, 0).
    Caution: with G distinct tokens among n prompts the R² of any variable has
    permutation mean (G − 1)/(n − 1); if every prompt has its own token, R² ≡ 1.
    Judge R² against ``pc1_identity_null``.
    """
    z, frac, G, sizes, sst = _pc1_setup(outputs, token_ids)
    if sst <= 0.0:
        return 0.0, frac
    return float(_between_share(z[None, :], G, sizes, sst)[0]), frac


def _pc1_setup(outputs, token_ids):
    """(PC1 scores z, PC1 variance fraction, one-hot groups, group sizes, total SS of z)."""
    z, frac = _pc1_scores(outputs)
    G, sizes = _onehot(token_ids, z.size)
    return z, frac, G, sizes, float(np.sum((z - z.mean()) ** 2))


def pc1_identity_null(outputs: np.ndarray, token_ids: np.ndarray, n_perm: int = 1000, seed: int = 0,
                      chunk: int = 4096) -> np.ndarray:
    """Permutation null of ``pc1_identity_r2``: [n_perm] R² values with the token ids shuffled across prompts.

    PC1 does not depend on the labels, so the scores z are computed once; permuting
    labels is the same as permuting z against fixed groups.  All permutations at once:
    the group sums are z[perms] @ one-hot ([n_perm, n] @ [n, G]), the between-group SS
    follows from them (group sizes are permutation-invariant).  Permutations come from
    ``np.random.default_rng(seed)``.
    """
    z, _, G, sizes, sst = _pc1_setup(outputs, token_ids)
    n = z.size
    if sst <= 0.0:
        return np.zeros(n_perm)
    rng = np.random.default_rng(seed)
    out = np.empty(n_perm, dtype=np.float64)
    for start in range(0, n_perm, chunk):
        m = min(chunk, n_perm - start)
        perms = rng.permuted(np.tile(np.arange(n), (m, 1)), axis=1)
        out[start:start + m] = _between_share(z[perms], G, sizes, sst)
    return out


def pc1_identity_pvalue(observed: float, null: np.ndarray) -> float:
    """Permutation p-value (1 + #{null >= observed}) / (1 + n_perm), ties within 1e-9 relative counted (conservative)."""
    return float(permutation_pvalues(np.asarray(observed, dtype=np.float64), np.asarray(null, dtype=np.float64)))


# --------------------------------------------------------------------------
# Rank-1 directions (T11, T12)
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
    tr = float(np.sum(Xc ** 2))
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
        tot = float(np.sum(Y ** 2))
        return 0.0 if tot == 0 else float(1.0 - np.sum(Yp ** 2) / tot)
    if reduce == "mean":
        n0 = np.linalg.norm(Y, axis=-1)
        ok = n0 > 0
        if not ok.any():
            return 0.0
        return float(np.mean(1.0 - np.linalg.norm(Yp[ok], axis=-1) / n0[ok]))
    raise ValueError(f"reduce must be 'frobenius', 'mean' or 'energy', got {reduce!r}")
