"""The core measurements as functions of a model and prompts, each returning a pandas DataFrame (one row per head, or
per layer and key position), for a model held in memory: a loaded Hugging Face causal LM (or an nnsight
``LanguageModel``) and its tokenizer.

    >>> from harness.measure import leakage, sink_profile
    >>> df = leakage(model, tokenizer)                      # per-head ΔR² with 95% intervals over prompts
    >>> df.nlargest(5, "delta_r2"); df.attrs["mean"]        # the leakiest heads; the head-mean and its interval
    >>> leakage(model, tokenizer, condition="bidirectional").attrs["mean"]   # the causal mask removed (§5.4)
    >>> sink_profile(model, tokenizer).query("position == 0")                  # the sink at position 0, per layer

They are the claims' own measurements (METHODS.md says what each computes): the same captures
(``harness.capture``), statistics (``harness.stats``) and intervals, on the model as it is (its device and dtype),
through the harness's attention function, which the model is handed back without (its attention implementation and
train/eval mode restored). Its spec is derived and its weights checked as a ``path:`` reference's
(``harness.live``): untrained weights are refused in one line (``check_trained=False`` measures them anyway, as a
control). Prompts: None draws the suite's topic prompts (the bundled Wikipedia corpus, ``n_prompts`` balanced over
four topics, ``seq_len`` tokens each, BOS as the tokenizer adds it); a list of texts is tokenized as the tokenizer
does and each cut to ``seq_len`` tokens (a shorter one is refused, naming it); token ids [prompts, tokens] are
used as given, cut to the longest allowed length (8 times a power of two) that fits.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator, Sequence

import numpy as np

from harness import live
from harness.capture.corpus import PromptSet
from harness.capture.leakage_view import WEIGHT
from harness.capture.reads import Run, SinkProfile
from harness.capture.session import Session
from harness.model.edits import Bidirectional, IdentityRope, ScrambledRope
from harness.model.hooks import HookedModel
from harness.notebook import PANDAS_MISSING
from harness.spec.settings import Settings, max_pairs, pow2_len
from harness.stats import intervals
from harness.stats import leakage as lk
from harness.stats.sinks import sink_by_prompt

#: the conditions ``leakage`` measures under: the model as it is, and §5.4's ablations
CONDITIONS = {
    "causal": (),
    "bidirectional": (Bidirectional(),),
    "identity-rope": (IdentityRope(),),
    "scrambled-rope": (ScrambledRope(),),
}


@contextmanager
def measured(model: Any, tokenizer: Any, check_trained: bool, **settings) -> Iterator[tuple[Session, Any]]:
    """A session holding the in-memory model (as a ``HookedModel``), checked first, at ``settings`` (on the model's
    device, in its dtype); the model's attention implementation and train/eval mode are restored when the block
    ends."""
    hf, tok = live.unwrap(model, tokenizer)
    spec = live.live_spec(hf, tok)
    first = next(hf.parameters())
    s = Settings(device=str(first.device), dtype=str(first.dtype).removeprefix("torch."), **settings)
    if check_trained:
        live.check_trained(hf, tok, spec.name)
    attention, training = hf.config._attn_implementation, hf.training
    hf.eval()
    try:
        session = Session(s, log=lambda *a: None, notice=lambda *a: None)
        yield session, session.adopt(HookedModel(hf, spec, tok))
    finally:
        hf.train(training)
        if attention is not None and hf.config._attn_implementation != attention:
            hf.set_attn_implementation(attention)


def prompt_set(session: Session, model, prompts: Any, seq_len: int) -> PromptSet:
    """The prompts measured (module docstring: None, texts, or token ids)."""
    if prompts is None:
        return session.prompts(model, "topic")
    if isinstance(prompts, str):
        prompts = [prompts]
    if isinstance(prompts, Sequence) and prompts and all(isinstance(p, str) for p in prompts):
        rows = [list(model.tokenizer(p)["input_ids"]) for p in prompts]
        short = [(k, len(r)) for k, r in enumerate(rows) if len(r) < seq_len]
        if short:
            k, n = short[0]
            raise ValueError(
                f"prompt {k} has {n} tokens, fewer than seq_len={seq_len} ({len(short)} of {len(rows)} prompts are "
                f"short): give longer texts or a smaller seq_len (8 times a power of two, at least 16)"
            )
        ids = np.array([r[:seq_len] for r in rows], dtype=np.int64)
    else:
        ids = np.asarray(prompts.cpu() if hasattr(prompts, "cpu") else prompts)
        if ids.ndim != 2 or not np.issubdtype(ids.dtype, np.integer) or pow2_len(ids.shape[1]) == 0:
            raise ValueError(
                f"prompts: token ids must be a 2-D integer array [prompts, tokens] of at least 16 tokens, got shape "
                f"{ids.shape} of {ids.dtype}"
            )
        ids = ids[:, : pow2_len(ids.shape[1])].astype(np.int64)
    if len(ids) < 2:
        raise ValueError("prompts: at least two are needed (the intervals are over prompts)")
    return PromptSet(ids=ids, labels=np.zeros(len(ids), dtype=np.int64), topics=("given",), name="given")


def pandas():
    try:
        import pandas
    except ImportError:
        raise ImportError(PANDAS_MISSING) from None
    return pandas


def checked(seq_len: int, n_prompts: int | None, n_pairs: int) -> int:
    """``n_pairs`` at most every pair a prompt of ``seq_len`` tokens has; a length or number of prompts no claim run
    accepts is a ValueError (one line); ``n_prompts`` None: the prompts are given."""
    s = Settings(seq_len=seq_len, n_prompts=12 if n_prompts is None else n_prompts)
    problem = next((p for p in s.problems() if p.startswith(("--seq-len", "--n-prompts"))), None)
    if problem is not None:
        raise ValueError(problem.replace("--seq-len ", "seq_len=").replace("--n-prompts ", "n_prompts="))
    return min(n_pairs, max_pairs(seq_len))


def leakage(
    model: Any,
    tokenizer: Any = None,
    prompts: Any = None,
    *,
    condition: str = "causal",
    seq_len: int = 128,
    n_prompts: int = 16,
    n_pairs: int = 4000,
    n_boot: int = 1000,
    seed: int = 0,
    corpus: str = "wiki",
    check_trained: bool = True,
):
    """Per-head leakage ΔR² (§4: how much the query position adds to the offset in explaining each head's attention
    weight, at stratified (query, key) pairs), one row per head: ``layer``, ``head``, ``delta_r2`` and its 95%
    bootstrap interval over prompts ``ci_low``, ``ci_high``. ``condition``: ``causal`` (the model as it is) or one of
    §5.4's ablations, ``bidirectional``, ``identity-rope``, ``scrambled-rope``. ``attrs``: the model, condition,
    prompts and tokens, and ``mean``, the head-mean ΔR² with its interval (what §5.4 compares across conditions)."""
    pd = pandas()
    if condition not in CONDITIONS:
        raise ValueError(f"condition={condition!r}: one of {', '.join(CONDITIONS)}")
    n_pairs = checked(seq_len, n_prompts if prompts is None else None, n_pairs)
    design = dict(seq_len=seq_len, n_prompts=n_prompts, n_pairs=n_pairs, n_boot=n_boot, seed=seed, corpus=corpus)
    with measured(model, tokenizer, check_trained, **design) as (session, hm):
        ps = prompt_set(session, hm, prompts, seq_len)
        pairs = session.pairs(ps.seq_len)
        stats = lk.prompt_stats(pairs, session.capture(hm, Run(ps, CONDITIONS[condition]), WEIGHT).heads_flat())
        weights = intervals.bootstrap_weights(len(ps), n_boot, seed)
        delta = lk.fit_from_stats(stats, np.ones((1, len(ps)))).delta[0]
        rows = lk.fit_from_stats(stats, weights).delta  # [n_boot, heads]
        ci = intervals.percentile_ci(rows, n=len(ps))
        n_heads, name = hm.n_heads, hm.spec.name
    df = pd.DataFrame(
        {
            "layer": np.arange(len(delta)) // n_heads,
            "head": np.arange(len(delta)) % n_heads,
            "delta_r2": delta,
            "ci_low": ci[:, 0],
            "ci_high": ci[:, 1],
        }
    )
    df.attrs.update(
        model=name,
        condition=condition,
        prompts=len(ps),
        tokens=ps.seq_len,
        pairs=len(pairs.i),
        mean=(float(delta.mean()), *intervals.mean_ci(rows, n=len(ps))),
    )
    return df


def sink_profile(
    model: Any,
    tokenizer: Any = None,
    prompts: Any = None,
    *,
    seq_len: int = 128,
    n_prompts: int = 16,
    n_boot: int = 1000,
    seed: int = 0,
    corpus: str = "wiki",
    check_trained: bool = True,
):
    """The attention sink of every key position in every layer (§5.1): ``weight``, the mean weight later queries give
    the key (over heads, queries and prompts), with its 95% bootstrap interval over prompts; one row per (``layer``,
    ``position``); the last position, which no later query reads, is left out."""
    pd = pandas()
    checked(seq_len, n_prompts if prompts is None else None, 4000)
    design = dict(seq_len=seq_len, n_prompts=n_prompts, n_boot=n_boot, seed=seed, corpus=corpus)
    with measured(model, tokenizer, check_trained, **design) as (session, hm):
        ps = prompt_set(session, hm, prompts, seq_len)
        per_prompt = sink_by_prompt(session.capture(hm, Run(ps), SinkProfile()).values)[..., :-1]  # [N, L, n-1]
        name = hm.spec.name
    weights = intervals.bootstrap_weights(len(ps), n_boot, seed)
    rows = np.einsum("bp,pln->bln", weights / len(ps), per_prompt)
    ci = intervals.percentile_ci(rows, n=len(ps))  # [L, n-1, 2]
    layers, positions = np.meshgrid(np.arange(per_prompt.shape[1]), np.arange(per_prompt.shape[2]), indexing="ij")
    df = pd.DataFrame(
        {
            "layer": layers.ravel(),
            "position": positions.ravel(),
            "weight": per_prompt.mean(axis=0).ravel(),
            "ci_low": ci[..., 0].ravel(),
            "ci_high": ci[..., 1].ravel(),
        }
    )
    df.attrs.update(model=name, prompts=len(ps), tokens=ps.seq_len)
    return df
