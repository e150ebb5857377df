"""Topic probes (paper §4, §5.1, App. B): pure numpy / scikit-learn, float64; nothing here runs a model.

* ``topic_probe_accuracy`` / ``topic_probe_grid`` – the topic-decodability probe of a position (§5.1, App. B):
  PCA then multinomial logistic regression, 5-fold stratified CV, the PCA fitted inside every training fold.
* ``chance_level`` / ``binomial_sf`` / ``above_chance`` – chance level and an exact one-sided binomial test
  of "decodable above chance".
* ``accuracy_upper_bound`` / ``equivalence_prompts`` – "at chance" as an equivalence: the one-sided Clopper-Pearson
  upper bound of an accuracy, and the prompt count at which an accuracy at exactly chance passes a bound with a
  given power (the §5.1 check that the highest-sink cells are at chance).
* ``token_identity_accuracy`` – the accuracy a classifier knowing only one token's identity reaches on the same
  folds (the token-at-0 identity baseline of the topic probe).

Sink-reading head statistics are in ``harness.stats.heads``, rank-1 directions in ``harness.stats.directions``. The
paper's text lost most of its symbols; every reading we had to make is stated in the function's docstring
(and in METHODS.md).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold
from threadpoolctl import threadpool_limits

__all__ = [
    "DEFAULT_N_COMPONENTS",
    "effective_n_components",
    "topic_probe_accuracy",
    "topic_probe_grid",
    "chance_level",
    "binomial_sf",
    "above_chance",
    "accuracy_upper_bound",
    "accuracy_interval",
    "equivalence_prompts",
    "token_identity_accuracy",
]

#: PCA components of the topic probe.  The paper's number was lost in extraction
#: ("after PCA reduction to [k] components"); 50 is our choice (see METHODS.md).
#: It is always capped by ``effective_n_components``.
DEFAULT_N_COMPONENTS = 50

#: Singular values of centred data <= RANK_RTOL * max(n, d) * max(s_max, max|X|) are
#: numerical noise (a numpy matrix_rank-style rule, with max|X| as a floor so that rows
#: identical up to rounding in the mean count as constant): such components are dropped.
RANK_RTOL = 10 * np.finfo(np.float64).eps

#: Cross-validation folds: (train rows, test rows) index arrays per fold.
Splits = list[tuple[np.ndarray, np.ndarray]]


def noise_tol(X: np.ndarray, s: np.ndarray) -> float:
    ref = max(float(s[0]) if s.size else 0.0, float(np.abs(X).max()) if X.size else 0.0)
    return RANK_RTOL * max(X.shape) * ref


# --------------------------------------------------------------------------
# Topic probe (§5.1 Table 1)
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
    keep = min(k, int(np.sum(s > noise_tol(X_train, s))))
    n = X_train.shape[0]
    scale = s[:keep] / math.sqrt(max(n - 1, 1))
    return mean, vt[:keep], scale


def fold_predictions(
    X: np.ndarray, y: np.ndarray, splits: Splits, n_components: int, C: float, max_iter: int
) -> np.ndarray:
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


def stratified_splits(labels: np.ndarray, folds: int, seed: int) -> Splits:
    """Seeded stratified K-fold (train, test) index pairs; a class with fewer than ``folds`` prompts is a ValueError."""
    _, counts = np.unique(labels, return_counts=True)
    if counts.size < 2:
        raise ValueError("the topic probe needs at least two classes")
    if counts.min() < folds:
        raise ValueError(
            f"every class needs >= {folds} prompts for {folds}-fold stratified CV, smallest class has {counts.min()}"
        )
    skf = StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed)
    return list(skf.split(np.zeros((labels.size, 1)), labels))


def topic_probe_accuracy(
    X: np.ndarray,
    labels: np.ndarray,
    n_components: int = DEFAULT_N_COMPONENTS,
    folds: int = 5,
    seed: int = 0,
    C: float = 1.0,
    max_iter: int = 200,
) -> float:
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
    splits = stratified_splits(labels, folds, seed)
    with threadpool_limits(limits=1, user_api="blas"):
        return _cv_accuracy(X, labels, splits, n_components, C, max_iter, "X")


def _cv_accuracy(
    X: np.ndarray, labels: np.ndarray, splits: Splits, n_components: int, C: float, max_iter: int, what: str
) -> float:
    """Mean per-fold accuracy of the PCA -> logistic probe on ``X`` (named ``what`` in errors)."""
    if not np.all(np.isfinite(X)):
        raise ValueError(f"{what} contains non-finite values")
    pred = fold_predictions(X, labels, splits, n_components, C, max_iter)
    return float(np.mean([np.mean(pred[test] == labels[test]) for _, test in splits]))


def topic_probe_grid(
    states: np.ndarray,
    labels: np.ndarray,
    n_components: int = DEFAULT_N_COMPONENTS,
    folds: int = 5,
    seed: int = 0,
    C: float = 1.0,
    max_iter: int = 200,
) -> np.ndarray:
    """``topic_probe_accuracy`` for every (layer, position): states [n_prompts, layers, positions, d] -> [layers, positions].

    The same stratified folds (one ``seed``) are used in every cell, so cells are
    compared on identical train / test partitions.  Both probe functions run with BLAS
    limited to one thread: the matrices are small (n_prompts rows) and multithreaded
    LAPACK on them is several times slower, not faster, on a shared machine.
    """
    states = np.asarray(states)
    labels = np.asarray(labels)
    if states.ndim != 4 or labels.shape != (states.shape[0],):
        raise ValueError(
            f"states must be [n_prompts, layers, positions, d] and labels [n_prompts], "
            f"got {states.shape} and {labels.shape}"
        )
    splits = stratified_splits(labels, folds, seed)
    _, n_layers, n_pos, _ = states.shape
    out = np.empty((n_layers, n_pos), dtype=np.float64)
    with threadpool_limits(limits=1, user_api="blas"):
        for layer in range(n_layers):
            for pos in range(n_pos):
                out[layer, pos] = _cv_accuracy(
                    np.asarray(states[:, layer, pos, :], dtype=np.float64),
                    labels,
                    splits,
                    n_components,
                    C,
                    max_iter,
                    f"states[:, {layer}, {pos}]",
                )
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
    terms = np.array(
        [lg_n - math.lgamma(j + 1) - math.lgamma(n - j + 1) + j * lp + (n - j) * lq for j in range(k, n + 1)]
    )
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
# "At chance" as an equivalence (§5.1), and the token-identity baseline
# --------------------------------------------------------------------------
def accuracy_upper_bound(acc: float, n: int, alpha: float = 0.05) -> float:
    """One-sided (1 - alpha) Clopper-Pearson upper bound of a probe accuracy: k = round(acc * n) correct of n
    predictions (under CV every prompt is predicted once, as in ``above_chance``)."""
    from scipy.stats import beta

    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    k = int(round(float(acc) * n))
    return 1.0 if k >= n else float(beta.ppf(1.0 - alpha, k + 1, n - k))


def accuracy_interval(acc: float, n: int, level: float = 0.95) -> tuple[float, float]:
    """Two-sided ``level`` Clopper-Pearson interval of a probe accuracy: k = round(acc * n) correct of n predictions
    (as ``accuracy_upper_bound``)."""
    from scipy.stats import beta

    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    k, alpha = int(round(float(acc) * n)), 1.0 - level
    lo = 0.0 if k == 0 else float(beta.ppf(alpha / 2, k, n - k + 1))
    return lo, accuracy_upper_bound(acc, n, alpha / 2)


def equivalence_prompts(
    chance: float, bound: float, power: float = 0.9, alpha: float = 0.05, step: int = 4, start: int = 4
) -> int:
    """The smallest prompt count n (a multiple of ``step``, at least ``start``) at which a probe whose true accuracy
    is exactly ``chance`` has ``accuracy_upper_bound`` below ``bound`` with probability at least ``power``
    (correct predictions ~ Binomial(n, chance)). Raises if no n up to 100,000 reaches it."""
    from scipy.stats import binom

    if not chance < bound <= 1.0:
        raise ValueError(f"bound {bound} must lie above chance {chance} and at most 1")
    n = max(step, start + (-start) % step)
    while n <= 100_000:
        passing = [k for k in range(n + 1) if accuracy_upper_bound(k / n, n, alpha) < bound]
        if passing and binom.cdf(max(passing), n, chance) >= power:
            return n
        n += step
    raise ValueError(f"no prompt count up to 100,000 gives power {power} for bound {bound} at chance {chance}")


def token_identity_accuracy(tokens: np.ndarray, labels: np.ndarray, folds: int = 5, seed: int = 0) -> float:
    """The token-identity baseline: mean per-fold accuracy of predicting each held-out prompt's label as the
    majority label of the training prompts with the same token (ties -> smallest label), or the training majority
    when its token is not in the training fold. The folds are ``topic_probe_grid``'s (same ``folds`` and ``seed``),
    so the baseline and the probe are scored on identical partitions: what a classifier knowing only the token
    there (e.g. the token at 0, whose state is a function of it alone under causal attention, Eq. 7) can reach."""
    tokens, labels = np.asarray(tokens), np.asarray(labels)
    if tokens.shape != labels.shape or tokens.ndim != 1:
        raise ValueError(f"tokens and labels must be [n_prompts], got {tokens.shape} and {labels.shape}")
    scores = []
    for train, test in stratified_splits(labels, folds, seed):
        classes, counts = np.unique(labels[train], return_counts=True)
        fallback = classes[np.argmax(counts)]
        votes: dict = {}
        for t, y in zip(tokens[train].tolist(), labels[train].tolist()):
            votes.setdefault(t, []).append(y)
        pred = []
        for t in tokens[test].tolist():
            if t in votes:
                c, n = np.unique(votes[t], return_counts=True)
                pred.append(c[np.argmax(n)])
            else:
                pred.append(fallback)
        scores.append(float(np.mean(np.asarray(pred) == labels[test])))
    return float(np.mean(scores))
