"""From captures to the paper's leakage figures: the glue between a Session's cached forward passes and
the pure statistics of ``harness.stats`` (leakage, pairs, nulls, intervals). Every function returns numbers for all heads at once.

``Leakage(session, model)`` is one model's view: its topic prompts, the shared stratified pairs and the
bootstrap weights over prompts; each target's per-prompt sufficient statistics (``PromptStats``) are
computed once per (run, read, query bin) and every fit (point, bootstrap, per layer, per bin) reuses them.
Heads are flattened layer-major (head index = layer * n_heads + h) everywhere.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from harness.capture import forward as cap
from harness.capture.reads import PairMomentsAtPairs, PatternAtPairs, Read, Run, moment_subsets
from harness.model.edits import Edit, ZeroHeads
from harness.stats import intervals, nulls
from harness.stats import leakage as lk
from harness.stats.head_map import head_effects
from harness.stats.pairs import PairSet

WEIGHT = PatternAtPairs()  # post-softmax weights (the paper's target)
MOMENTS = PairMomentsAtPairs()  # the same weights reduced as the pass runs (an edited pass's summary reads these)
BLOCK = 4_000_000  # float64 values of a stored capture reduced at a time (32 MB)


def by_layer(per_head: np.ndarray, n_layers: int) -> np.ndarray:
    """[..., n_heads_total] -> [..., n_layers, heads_per_layer]."""
    return per_head.reshape(*per_head.shape[:-1], n_layers, -1)


def head_mean(stats: lk.PromptStats, weights: np.ndarray | None = None) -> np.ndarray:
    """Head-mean ΔR²: a float for the plain fit, or [B] for bootstrap weights [B, P]."""
    if weights is None:
        return float(lk.fit_from_stats(stats, np.ones((1, stats.a.shape[0]))).delta[0].mean())
    return lk.fit_from_stats(stats, weights).delta.mean(axis=-1)


def mean_delta(pairs: PairSet, Y: np.ndarray) -> float:
    """Head-mean ΔR² of a target [prompts, pairs, heads]."""
    return head_mean(lk.prompt_stats(pairs, Y))


def prompt_ci(session, samples) -> np.ndarray:
    """95% bootstrap CI over the session's prompts (the expanded percentile interval, ``intervals.percentile_ci``)
    of bootstrap rows [n_boot, ...] drawn with ``intervals.bootstrap_weights`` over ``n_prompts`` prompts."""
    return intervals.percentile_ci(samples, n=session.settings.n_prompts)


def significance(stats: lk.PromptStats, pairs: PairSet, Y: np.ndarray, n_perm: int, seed: int, q: float = 0.05) -> dict:
    """ΔR² per head with its prompt-level sign-flip p-value and the Benjamini–Hochberg decision (§4, Table 5),
    and, reported beside them, the paper's within-offset permutation p-values (rows pooled across prompts)."""
    fit = lk.fit_from_stats(stats, np.ones((1, stats.a.shape[0])))
    delta = fit.delta[0]
    residue = 1e-9 * stats.a.shape[0] * np.abs(pairs.i_tilde).sum() * stats.scale  # |Σ a_p| below: no effect
    p = nulls.signflip_pvalues(stats.a, n_perm, seed, atol=residue)
    p_pooled = nulls.permutation_pvalues(delta, nulls.permutation_null(pairs, Y, n_perm, seed, sst=fit.sst[0]))
    return {
        "delta": delta,
        "p": p,
        "significant": nulls.benjamini_hochberg(p, q),
        "p_within_offset": p_pooled,
        "significant_within_offset": nulls.benjamini_hochberg(p_pooled, q),
    }


def depth_slope(values: np.ndarray) -> np.ndarray:
    """Least-squares slope of a per-layer profile against relative depth l/(L-1): [..., L] -> [...].
    Non-finite layers (a layer ratio with a zero denominator) are left out of the fit."""
    x = np.linspace(0.0, 1.0, values.shape[-1])
    ok = np.isfinite(values)
    x_mean = np.where(ok, x, 0.0).sum(-1, keepdims=True) / ok.sum(-1, keepdims=True)
    xd = np.where(ok, x - x_mean, 0.0)  # centred depth over the layers that count
    return (xd * np.where(ok, values, 0.0)).sum(-1) / (xd * xd).sum(-1)


@dataclass(frozen=True, eq=False)
class Summary:
    """What the claims read of one run's leakage, kept in place of its capture: ΔR² per head on every pair (``heads``
    [H]) and on each bootstrap row (``heads_boot`` [n_boot, H]), and per query bin (lo, hi) its heads' ΔR² [H] and
    their head mean per bootstrap row [n_boot]."""

    heads: np.ndarray
    heads_boot: np.ndarray
    bins: dict[tuple[int, int], tuple[np.ndarray, np.ndarray]]


class Leakage:
    """Leakage figures of one model on one prompt set (topic prompts by default) at the session's pairs.

    Each run is reduced once to its ``Summary`` (memoised per model and session): a run whose weights at the pairs are
    held or planned (the unedited topic pass, which the permutation null and other reads need) from those weights, a
    block of prompts at a time; any other (every edited pass) through the moments read (``MOMENTS``: the pass keeps
    each prompt's moments, never the weights at the pairs).
    The bootstrap rows of every run come from the same prompt resamples (``self.weights``), so ratios and
    differences between conditions row by row are paired."""

    def __init__(self, session, model, kind: str = "topic", seq_len: int | None = None):
        s = session.settings
        self.session, self.model = session, model
        self.prompts = session.prompts(model, kind, seq_len=seq_len)
        self.pairs = session.pairs(self.prompts.seq_len)
        self.weights = intervals.bootstrap_weights(len(self.prompts), s.n_boot, s.seed)

    def run(self, *edits: Edit) -> Run:
        return Run(self.prompts, edits)

    def target(self, *edits: Edit, read: Read = WEIGHT) -> np.ndarray:
        """The regression target [prompts, pairs, heads] under the edits."""
        return self.session.capture(self.model, self.run(*edits), read).heads_flat()

    def stats(self, *edits: Edit, read: Read = WEIGHT, bin: tuple[int, int] | None = None) -> lk.PromptStats:
        """Per-prompt sufficient statistics of the target, on all pairs or on the queries in [lo, hi) (from the
        run's capture: an edited run's is captured for it)."""
        Y = self.target(*edits, read=read)
        if bin is None:
            return lk.prompt_stats(self.pairs, Y)
        mask = (self.pairs.i >= bin[0]) & (self.pairs.i < bin[1])
        return lk.prompt_stats(self.pairs.subset(mask), Y[:, mask, :])

    def summary(self, *edits: Edit) -> Summary:
        """The run's ``Summary``, computed once per model and session."""
        run = self.run(*edits)
        return self.session.memo(self.model, ("leakage summary", run), lambda: self._summarise(run))

    def _summarise(self, run: Run) -> Summary:
        subsets = moment_subsets(self.pairs, self.prompts.seq_len)
        session, model = self.session, self.model
        held = session.cached(model, run, WEIGHT) or session.planned(model, run, WEIGHT)
        if not held:  # an edited pass, or one no test reads the weights of: reduced as it runs, then released
            values = session.capture(model, run, MOMENTS).values  # [N, L, H, 4 x subsets]
            session.forget(model, run, MOMENTS)
        else:
            values = reduce_capture(session.capture(model, run, WEIGHT).values, subsets, model.device)
        n, layers, heads = values.shape[:3]
        ones = np.ones((1, n))
        out: dict = {}
        for k, (key, _, i_tilde) in enumerate(subsets):
            m, q, a, x = (values[..., 4 * k + f].reshape(n, layers * heads) for f in range(4))
            mom = lk.PromptMoments(m, q, a, x, n_pairs=len(i_tilde), i_tilde_sq=float(i_tilde @ i_tilde))
            out[key] = (lk.delta_from_moments(mom, ones)[0], lk.delta_from_moments(mom, self.weights))
        heads, heads_boot = out.pop(None)
        return Summary(heads, heads_boot, {key: (h, b.mean(axis=-1)) for key, (h, b) in out.items()})

    def mean_delta(self, *edits: Edit) -> float:
        return float(self.summary(*edits).heads.mean())

    def mean_delta_with_ci(self, *edits: Edit) -> tuple[float, tuple[float, float]]:
        """Head-mean ΔR² and its bootstrap CI over prompts."""
        return self.mean_delta(*edits), intervals.mean_ci(self.mean_delta_boot(*edits), n=len(self.prompts))

    def mean_delta_boot(self, *edits: Edit) -> np.ndarray:
        """Head-mean ΔR² per bootstrap row [n_boot]: the same prompt resamples for every edit, so ratios and
        differences between conditions row by row are paired."""
        return self.summary(*edits).heads_boot.mean(axis=-1)

    def head_ablation_map(self, layers) -> tuple[float, np.ndarray, np.ndarray]:
        """Each head of ``layers`` zeroed alone (one query head's output before o_proj): (the unablated head-mean
        ΔR², each head's effect |1 - ablated / unablated| [layers, heads], and its bootstrap rows [layers, n_boot,
        heads], on this view's prompt resamples, so effects compare row by row). One edited pass per head."""
        base, base_rows = self.mean_delta(), self.mean_delta_boot()
        n_heads = self.model.n_heads
        edits = [[ZeroHeads([(layer, h)], name=f"zero-L{layer}H{h}") for h in range(n_heads)] for layer in layers]
        effects = np.array([head_effects(base, [self.mean_delta(e) for e in row]) for row in edits])
        rows = [head_effects(base_rows, np.stack([self.mean_delta_boot(e) for e in row], axis=1)) for row in edits]
        return base, effects, np.stack(rows)

    def _fit(self, stats: lk.PromptStats, boot: bool) -> np.ndarray:
        """ΔR² per head: [1, heads] for the plain fit, [n_boot, heads] with the bootstrap weights."""
        return lk.fit_from_stats(stats, self.weights if boot else np.ones((1, len(self.prompts)))).delta

    def bin_profile(self, *edits: Edit, edges: np.ndarray, boot: bool = False) -> np.ndarray:
        """Head-mean ΔR² per query bin: [n_bins] or, with ``boot``, [n_boot, n_bins]. The bins of
        ``query_bins(seq_len)`` come from the run's summary; any other bin from its capture."""
        bins = self.summary(*edits).bins
        prof = []
        for lo, hi in zip(edges[:-1], edges[1:]):
            key = (int(lo), int(hi))
            if key in bins:
                prof.append(bins[key][1] if boot else np.array([bins[key][0].mean()]))
            else:
                prof.append(self._fit(self.stats(*edits, bin=key), boot).mean(axis=-1))
        out = np.stack(prof, axis=-1)
        return out if boot else out[0]

    def head_deltas_boot(self, *edits: Edit) -> np.ndarray:
        """ΔR² per head in every bootstrap row [n_boot, heads] (the prompt resamples of ``mean_delta_boot``)."""
        return self.summary(*edits).heads_boot

    def layer_means(self, *edits: Edit, boot: bool = False) -> np.ndarray:
        """Per-layer head-mean ΔR²: [n_layers] or, with ``boot``, [n_boot, n_layers]."""
        summary = self.summary(*edits)
        return by_layer(summary.heads_boot if boot else summary.heads, self.model.n_layers).mean(axis=-1)

    def significance(self, q: float = 0.05) -> dict:
        """``significance`` of the unedited run, read from its capture's weights as a view [prompts, pairs, layers,
        heads] (no copy of them but the permutation null's one, in its row order)."""
        s = self.session.settings
        Y = self.session.capture(self.model, self.run(), WEIGHT).values.transpose(0, 2, 1, 3)
        return significance(lk.prompt_stats(self.pairs, Y), self.pairs, Y, s.n_perm, s.seed, q)


def reduce_capture(values: np.ndarray, subsets, device=None) -> np.ndarray:
    """A held capture of the weights at the pairs [N, L, P, H] reduced to the moments ``MOMENTS`` keeps
    [N, L, H, 4 x subsets], a block of prompts at a time with the pass's own reduction (``forward.pair_moments``), in
    float64 on ``device`` (the model's: a GPU's where the passes run on one)."""
    n, layers, p, h = values.shape
    step = max(1, BLOCK // max(1, layers * p * h))
    sets = [(None if idx is None else torch.as_tensor(idx), torch.as_tensor(it)) for _, idx, it in subsets]
    out = []
    for s in range(0, n, step):
        block = torch.from_numpy(np.ascontiguousarray(values[s : s + step].transpose(0, 1, 3, 2)))
        out.append(cap.pair_moments(block.to(device or "cpu"), sets).cpu().numpy())
    return np.concatenate(out)
