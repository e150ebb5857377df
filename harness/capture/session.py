"""A measurement session: settings, loaded models, prompt sets and cached forward passes.

Models load once; each (model, run, read) capture runs once per session, and reads asked for together
share one forward pass. Claims pass the model handle (``HookedModel``) around, never its name.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, field, replace
from typing import Hashable

import numpy as np

from harness.capture import corpus
from harness.capture import forward as cap
from harness.capture.plan import Plan
from harness.capture.progress import Progress
from harness.capture.reads import Capture, Read, Run
from harness.capture.workload import Workload
from harness.model import devices
from harness.model.hook_points import hook_name
from harness.model.hooks import HookedModel
from harness.model.rehearsal import ensure_built
from harness.model.weights import load_pretrained, random_init_model
from harness.spec.models import WeightsUnavailable, get_spec
from harness.spec.settings import Settings
from harness.stats.pairs import PairSet, stratified_pairs


class ModelLoadFailed(RuntimeError):
    """A model whose load already failed once in this session (the message carries the first error)."""


#: The attribute a model's load error carries: the model's name (every test of that model fails its setup on it;
#: harness.run.setup_failures says so in one line and keeps its snapshots).
SETUP_OF = "abspos_setup_of"


def setup_of(error: BaseException | None) -> str | None:
    """The model whose load raised ``error`` (``Session.model``), or None for any other error."""
    return getattr(error, SETUP_OF, None) if error is not None else None


def _marked(error: Exception, name: str) -> Exception:
    try:
        setattr(error, SETUP_OF, name)
    except (AttributeError, TypeError):  # an exception type that takes no attributes: left unmarked
        pass
    return error


@dataclass
class PlannedPasses:
    """One model's planned passes in a session: the prompt keys of the root sets whose pass ran, and whether one
    failed (then each test captures its own reads for the rest of the session). Kept when the model is released: a
    model loaded again (a family size ladder) captures only what is asked, not the plan again."""

    done: set[str] = field(default_factory=set)
    failed: bool = False


@dataclass
class Session:
    settings: Settings = field(default_factory=Settings)
    log: object = print  # progress (quiet under CI)
    notice: object = print  # one-off lines a user must see even under CI: a model converted, a cache repaired
    progress: Progress = field(default_factory=Progress)  # where the captures' status lines go (capture.progress)
    workload: Workload = field(default_factory=Workload)  # where each forward pass is booked (capture.workload)
    plan: Plan = field(
        default_factory=Plan
    )  # what the selected tests read of each unedited pass (harness.capture.plan)

    def __post_init__(self):
        self._models: dict[str, HookedModel] = {}
        self._failed: dict[str, Exception] = {}  # the first error of a model that did not load
        self._cache: dict[tuple, Capture] = {}
        self._prompts: dict[tuple, corpus.PromptSet] = {}
        self._derived: dict[tuple, object] = {}  # memo: (model, what) -> result
        self._planned: dict[str, PlannedPasses] = {}  # model -> its planned passes (kept on release)

    # ---- models ---------------------------------------------------------------------------------
    def model(self, name: str) -> HookedModel:
        """The loaded model. A load that failed is not retried in this session: later calls raise the first
        error again (WeightsUnavailable as it was, anything else as ModelLoadFailed naming the first error)."""
        if name in self._failed:
            first = self._failed[name]
            if isinstance(first, WeightsUnavailable):
                raise first
            raise _marked(
                ModelLoadFailed(
                    f"{name} failed to load earlier in this run, not retried: "
                    f"{type(first).__name__}: {(str(first).strip().splitlines() or [''])[0]}"
                ),
                name,
            )
        if name not in self._models:
            devices.return_freed_memory()  # the last model, released, is no longer referenced by now: load in its place
            spec = get_spec(name)
            s = self.settings
            t0, cpu0 = time.perf_counter(), time.process_time()
            try:
                if spec.group == "tiny":
                    hf, tok = random_init_model(spec, s.seed, devices.parse_dtype(s.dtype), s.device), None
                else:
                    if spec.rehearses:  # built once per cache, then loaded as its paper model would be
                        ensure_built(spec, log=self.notice)
                    hf, tok = load_pretrained(spec, devices.parse_dtype(s.dtype), s.device, log=self.notice)
            except Exception as e:
                self._failed[name] = _marked(e, name)
                raise
            self._models[name] = HookedModel(hf, spec, tok)
            self.workload.load_seconds += time.perf_counter() - t0
            self.workload.load_cpu_seconds += time.process_time() - cpu0
        return self._models[name]

    def adopt(self, model: HookedModel) -> HookedModel:
        """A model loaded elsewhere (held in memory by its user: harness.measure), as this session's model of its
        spec's name."""
        self._models[model.spec.name] = model
        return model

    def release(self, model: HookedModel | str) -> None:
        """Drop a model, its prompt sets, cached captures and derived results (keeps memory flat). Which planned
        passes ran is kept: a model loaded again (a family size ladder) captures only what is asked, not the plan
        again."""
        name = model if isinstance(model, str) else model.spec.name
        self._models.pop(name, None)
        for cache in (self._cache, self._derived, self._prompts):
            for key in [k for k in cache if k[0] == name]:
                del cache[key]

    # ---- prompts --------------------------------------------------------------------------------
    def prompts(
        self, model: HookedModel, kind: str = "topic", seq_len: int | None = None, n_prompts: int | None = None
    ) -> corpus.PromptSet:
        s = self.settings
        key = (model.spec.name, kind, seq_len or s.seq_len, n_prompts or s.n_prompts)
        if key not in self._prompts:
            args = (model.tokenizer, model.spec, key[3], key[2])
            if kind == "topic":
                try:
                    ps = corpus.topic_prompts(*args, seed=s.seed, source=s.corpus)
                except corpus.CorpusTooSmall as e:
                    ps = e  # every later test asking for this set gets the same one line at once
            elif kind == "random":
                ps = corpus.random_token_prompts(*args, seed=s.seed)
            elif kind == "fixed0":  # no-BOS models: the first prompt's token 0 in every prompt (BOS models: as is)
                text = self.prompts(model, "topic", key[2], key[3])
                ps = text if model.spec.adds_bos else corpus.fixed_token_at_zero(text, int(text.ids[0, 0]))
            else:
                raise ValueError(f"unknown prompt kind {kind!r}")
            self._prompts[key] = ps
        if isinstance(self._prompts[key], Exception):
            raise self._prompts[key]
        return self._prompts[key]

    def pairs(self, seq_len: int | None = None) -> PairSet:
        """The (query, key) pairs every prompt and condition shares, stratified by query bin."""
        s = self.settings
        return stratified_pairs(seq_len or s.seq_len, s.n_pairs, seed=s.seed)

    def memo(self, model: HookedModel, what: Hashable, compute):
        """A derived result computed once per model and session (e.g. a probe grid several claim tests read);
        ``what`` must name everything the result depends on besides the model and the session's settings."""
        key = (model.spec.name, what)
        if key not in self._derived:
            self._derived[key] = compute()
        return self._derived[key]

    # ---- captures -------------------------------------------------------------------------------
    def capture(self, model: HookedModel, run: Run, *reads: Read) -> Capture | tuple[Capture, ...]:
        """The captures of ``reads`` in ``run`` (one Capture, or a tuple for several reads). Reads not yet
        cached share one forward pass; ``run.layers`` = k runs (and reads) only the first k decoder layers. An
        unedited run over a planned prompt set (harness.capture.plan) runs the set's planned pass, which reads what every
        selected test wants of it and of the planned sets whose prompts are its rows."""
        name = model.spec.name
        keys = {r: (name, run, r) for r in reads}
        missing = [r for r in dict.fromkeys(reads) if keys[r] not in self._cache]
        if missing and not run.edits and run.layers is None:
            try:
                self._planned_pass(model, run, missing)
            except (RuntimeError, MemoryError) as e:
                if not devices.out_of_memory(e):  # expected: the merged pass is larger than this test's own
                    raise
                self.notice(
                    f"[abspos] {name}: the planned pass over {run.label} failed ({type(e).__name__}); "
                    f"each test captures its own reads"
                )
                self._planned.setdefault(name, PlannedPasses()).failed = True
            missing = [r for r in missing if keys[r] not in self._cache]
        if missing:
            self._cache.update({keys[r]: c for r, c in self._pass(model, run, {r: None for r in missing}).items()})
        out = tuple(self._cache[keys[r]] for r in reads)
        return out[0] if len(out) == 1 else out

    def _pass(self, model: HookedModel, run: Run, reads: dict) -> dict[Read, Capture]:
        """One forward pass over ``run``: each read kept for its prompt rows (sorted indices; None: all). A prompt
        set that repeats a prompt (the token-0 identity design's recurring prompts) runs each distinct prompt
        once."""
        ids = run.prompts.ids
        if all(rows is None for rows in reads.values()):
            first: dict[bytes, int] = {}
            for k, row in enumerate(ids):
                first.setdefault(row.tobytes(), k)
            if len(first) < len(ids):
                keep = sorted(first.values())
                slot = {k: n for n, k in enumerate(keep)}
                pick = np.array([slot[first[row.tobytes()]] for row in ids])
                distinct = replace(run.prompts, ids=ids[keep], labels=run.prompts.labels[keep])
                once = self._pass(model, Run(distinct, run.edits, run.layers), reads)
                return {r: Capture(c.values[pick], r, c.layers, c.embed) for r, c in once.items()}
        seq_len = run.prompts.seq_len
        layers = tuple(range(model.n_layers if run.layers is None else min(run.layers, model.n_layers)))
        readers, layout = {}, {}
        for r, rows in reads.items():
            reader = r.reader(seq_len, self.pairs(seq_len) if r.pairs else None)
            hooks = ([hook_name("hook_embed")] if r.embed else []) + [hook_name(r.point, l) for l in layers]
            layout[r] = [f"{r!r}|{h}" for h in hooks]
            readers.update({f"{r!r}|{h}": (h, reader, rows) for h in hooks})
        with contextlib.ExitStack() as stack:
            for edit in run.edits:
                stack.enter_context(edit.apply(model))
            raw = cap.capture(
                model,
                run.prompts.ids,
                readers,
                self.settings.batch_size,
                run.label,
                stop_after=None if run.layers is None else run.layers - 1,
                progress=self.progress,
                condition=run.edits,
                workload=self.workload,
            )
        return {r: Capture(stack_layers(raw, layout[r]), r, layers, r.embed) for r in reads}

    def forget(self, model: HookedModel, run: Run, *reads: Read) -> None:
        """Drop the cached captures of ``reads`` in ``run`` (a capture reduced to what its tests need: its memory is
        returned; asked for again, it runs its pass again)."""
        for r in reads:
            self._cache.pop((model.spec.name, run, r), None)

    def cached(self, model: HookedModel, run: Run, read: Read) -> bool:
        """Whether the capture of ``read`` in ``run`` is held (a later ``capture`` of it runs no pass)."""
        return (model.spec.name, run, read) in self._cache

    def planned(self, model: HookedModel, run: Run, read: Read) -> bool:
        """Whether the selected tests declared ``read`` of ``run`` (an unedited pass over a planned prompt set,
        harness.capture.plan): its capture is made for them and held."""
        if run.edits or run.layers is not None or self._planned.get(model.spec.name, PlannedPasses()).failed:
            return False
        wanted = self._planned_sets(model).get(run.prompt_key)
        return wanted is not None and read in wanted[1]

    def held_bytes(self, model: HookedModel | str | None = None) -> int:
        """The bytes of the captures and memoised arrays this session holds (for ``model``, or every model): what
        grows with the design, besides the weights (tests/test_memory_budget.py, benchmarks/bench_prompt_growth.py)."""
        name = model if isinstance(model, str) or model is None else model.spec.name
        mine = [v for cache in (self._cache, self._derived) for k, v in cache.items() if name is None or k[0] == name]
        return sum(array_bytes(v) for v in mine)

    # ---- the capture plan -----------------------------------------------------------------------
    def _planned_sets(self, model: HookedModel) -> dict[str, tuple[corpus.PromptSet, set]]:
        """{prompt key: (prompt set, reads wanted of its unedited pass)} of the selected tests on the model."""

        def resolve():
            sets: dict[str, tuple[corpus.PromptSet, set]] = {}
            for want in self.plan.of(model.spec.name):
                n = getattr(self.settings, want.n) if isinstance(want.n, str) else want.n
                try:
                    ps = self.prompts(model, want.kind, n_prompts=n)
                except corpus.CorpusTooSmall:
                    continue  # the test asking for it says so itself
                sets.setdefault(Run(ps).prompt_key, (ps, set()))[1].update(want.reads)
            return sets

        return self.memo(model, "planned prompt sets", resolve)

    def _planned_pass(self, model: HookedModel, run: Run, missing: list[Read]) -> None:
        """Run the planned pass ``run`` belongs to, once: over the largest planned set holding ``run``'s prompts as
        rows, reading every planned read of every planned set inside it (and ``missing``), each for its rows."""
        sets = self._planned_sets(model)
        planned = self._planned.setdefault(model.spec.name, PlannedPasses())
        if run.prompt_key not in sets or planned.failed:
            return
        root = next(
            ps
            for ps, _ in sorted(sets.values(), key=lambda v: -len(v[0]))
            if ps.seq_len == run.prompts.seq_len and row_indices(ps, run.prompts) is not None
        )
        done = Run(root).prompt_key
        if done in planned.done:
            return
        rows_in = {
            key: rows
            for key, (ps, _) in sets.items()  # prompt key -> its rows in the root set
            if ps.seq_len == root.seq_len and (rows := row_indices(root, ps)) is not None
        }
        want: dict[Read, set] = {}
        for key, rows in rows_in.items():
            for r in sets[key][1]:
                want.setdefault(r, set()).update(rows.tolist())
        for r in missing:
            want.setdefault(r, set()).update(rows_in[run.prompt_key].tolist())
        rows_of = {r: np.array(sorted(v)) for r, v in want.items()}
        values = self._pass(model, Run(root), {r: None if len(v) == len(root) else v for r, v in rows_of.items()})
        planned.done.add(done)  # after success: a pass that failed (memory) leaves each test its own pass
        for key, rows in rows_in.items():
            ps, reads = sets[key]
            for r in reads | (set(missing) if key == run.prompt_key else set()):
                c, at = values[r], np.searchsorted(rows_of[r], rows)
                every = len(at) == len(c.values) and bool(np.all(at == np.arange(len(at))))
                self._cache[(model.spec.name, Run(ps), r)] = (  # the root's own rows: the capture itself, no copy
                    c if every else Capture(c.values[at], r, c.layers, c.embed)
                )


def stack_layers(raw: dict[str, np.ndarray], keys: list[str]) -> np.ndarray:
    """``np.stack([raw[k] for k in keys], axis=1)``, each layer's array dropped from ``raw`` once copied (a pass's
    values are held once plus one layer's, never twice over)."""
    first = raw[keys[0]]
    out = np.empty((first.shape[0], len(keys), *first.shape[1:]), dtype=first.dtype)
    for n, k in enumerate(keys):
        out[:, n] = raw.pop(k)
    return out


def row_indices(big: corpus.PromptSet, small: corpus.PromptSet) -> np.ndarray | None:
    """Where each prompt of ``small`` is among ``big``'s rows (None unless all are)."""
    index = {row.tobytes(): k for k, row in enumerate(big.ids)}
    rows = [index.get(row.tobytes()) for row in small.ids]
    return None if any(k is None for k in rows) else np.array(rows)


def array_bytes(value, depth: int = 0) -> int:
    """The bytes of the numpy arrays inside ``value`` (a capture, an array, a tuple, list, dict or dataclass of them)."""
    if depth > 6:
        return 0
    if isinstance(value, np.ndarray):
        return value.nbytes
    if isinstance(value, Capture):
        return value.values.nbytes
    if isinstance(value, dict):
        return sum(array_bytes(v, depth + 1) for v in value.values())
    if isinstance(value, (tuple, list)):
        return sum(array_bytes(v, depth + 1) for v in value)
    if hasattr(value, "__dataclass_fields__"):
        return sum(array_bytes(getattr(value, f), depth + 1) for f in value.__dataclass_fields__)
    return 0
