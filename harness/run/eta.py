"""How far a claims run has got, and about how long it has left: one line on the terminal as it goes.

    [abspos] 34 claim tests; about 12 minutes at the pace of the committed example run
    [abspos] test 12 of 34, 3m20s elapsed, about 9 minutes left

Each claim test's expected cost comes from the work a real run booked for it (the committed example's
``results.json``: per test and model the layer-tokens its forward passes ran, their seconds, and the seconds spent
outside them), its forward part as layer-tokens over that run's rate: the same test on the same model as booked; on a
model the example did not run, the test as booked on the example's model of the same BOS policy (the claims that run
depend on it) nearest in size, its layer-tokens scaled by depth and their cost by width squared, its other seconds
by layers x heads (``benchmarks/bench_nightly.py``'s assumptions); every test scaled by the run's prompt tokens
(``--n-prompts`` x ``--seq-len``) over the example's; a test the example has no record of (a new claim, a synthetic
set) at the median of the others. The measured rate is this run's: elapsed seconds over the expected cost of the
tests finished, applied to the expected cost of the rest, so the estimate is this machine's, under whatever else runs
on it, and improves as the run goes. An estimate, said as one ("about"), never a figure of the report.

``Eta`` is a pytest plugin object, registered by the claims plugin on the process that owns the records (the xdist
controller, or a plain run): it sees every test's end whichever worker ran it. Lines at most every ``EVERY``
seconds ($ABSPOS_ETA_EVERY); none under CI or with ABSPOS_PROGRESS=0.
"""

from __future__ import annotations

import json
import math
import os
import statistics
import time
from pathlib import Path
from typing import Mapping

import pytest

from harness.files.paths import EXAMPLE_RESULTS
from harness.outcome.nodeid import parse
from harness.run.terminal import terminal_writer
from harness.spec.claims import claim_id_of
from harness.spec.models import REGISTRY

EVERY = 30.0  # seconds between two progress lines at most


def booked(results: dict) -> tuple[dict, dict]:
    """({(test function, model or ""): (layer-tokens, forward seconds, other seconds)}, the run's settings) of a
    run's records; a record whose numbers are not numbers is left out (an estimate never fails a run)."""
    table: dict = {}
    for r in results.get("records", []) if isinstance(results, dict) else []:
        try:
            lt, fwd, total = (float(r.get(k) or 0.0) for k in ("layer_tokens", "forward_seconds", "seconds"))
            key = (parse(str(r["test"])).function, r.get("model") or "")
        except (TypeError, ValueError, KeyError, AttributeError):
            continue
        if all(math.isfinite(x) and x >= 0 for x in (lt, fwd, total)):
            table[key] = (lt, fwd, max(total - fwd, 0.0))
    settings = results.get("settings", {}) if isinstance(results, dict) else {}
    return table, settings if isinstance(settings, dict) else {}


def load_workload(path: Path = EXAMPLE_RESULTS) -> tuple[dict, dict]:
    """``booked`` of the committed example run (nothing where it is missing or damaged)."""
    try:
        return booked(json.loads(Path(path).read_text()))
    except (OSError, ValueError, RecursionError):
        return {}, {}


def shape(model: str) -> tuple[int, int, int] | None:
    """(layers, heads, width) of a registered model, None when the registry records none."""
    spec = REGISTRY.get(model)
    cfg = spec.config if spec is not None else {}
    if not all(cfg.get(k) for k in ("num_hidden_layers", "num_attention_heads", "hidden_size")):
        return None
    return cfg["num_hidden_layers"], cfg["num_attention_heads"], cfg["hidden_size"]


def source_model(function: str, model: str, table: Mapping) -> str | None:
    """The example's model whose booking of ``function`` stands in for ``model``'s: itself where booked; else one of
    the same BOS policy, nearest in size (layers x width^2)."""
    if (function, model) in table or model == "":
        return model if (function, model) in table else None
    spec = REGISTRY.get(model)
    booked_on = [m for f, m in table if f == function and m and m in REGISTRY]
    same = [m for m in booked_on if spec is not None and REGISTRY[m].adds_bos == spec.adds_bos] or booked_on
    if not same or spec is None:
        return None
    return min(same, key=lambda m: abs(math.log((REGISTRY[m].size or 1) / (spec.size or 1))))


def expected_seconds(nodeid: str, table: Mapping, scale: float = 1.0) -> float | None:
    """A test's expected seconds at the example run's pace (None: no booking stands in for it)."""
    name = parse(nodeid)
    model = name.param if name.param in REGISTRY else ""
    source = source_model(name.function, model, table)
    if source is None:
        return None
    lt, fwd, other = table[(name.function, source)]
    if source != model and (to := shape(model)) and (frm := shape(source)):
        (l1, h1, d1), (l0, h0, d0) = to, frm
        fwd = fwd * (l1 / l0) * (d1 / d0) ** 2  # layer-tokens x depth, each at width^2 the cost
        other = other * (l1 * h1) / (l0 * h0)  # the per-head statistics
    return (fwd + other) * scale


def minutes(seconds: float) -> str:
    if seconds < 60:
        return "under a minute"
    n = round(seconds / 60)
    return f"about {n} minute{'s' * (n != 1)}"


def clock(seconds: float) -> str:
    m, s = divmod(int(seconds), 60)
    return f"{m // 60}h{m % 60:02d}m" if m >= 60 else f"{m}m{s:02d}s"


class Estimate:
    """The run's claim tests with their expected cost, and which have finished."""

    def __init__(self, nodeids, table: Mapping, settings: Mapping, n_prompts: int, seq_len: int):
        tokens = (settings.get("n_prompts") or n_prompts) * (settings.get("seq_len") or seq_len)
        scale = n_prompts * seq_len / tokens if tokens else 1.0
        known = {n: expected_seconds(n, table, scale) for n in nodeids if claim_id_of(parse(n).function)}
        costs = [c for c in known.values() if c]
        fill = statistics.median(costs) if costs else 1.0
        self.cost = {n: (fill if c is None else c) for n, c in known.items()}
        self.booked = bool(costs)  # whether any test has a booking (else the estimate counts tests)
        self.done: set[str] = set()

    def finish(self, nodeid: str) -> bool:
        """Mark a test finished; whether it is one of the run's claim tests."""
        if nodeid not in self.cost or nodeid in self.done:
            return False
        self.done.add(nodeid)
        return True

    def left(self, elapsed: float) -> float | None:
        """Seconds left at this run's measured pace (elapsed over the finished tests' expected cost)."""
        done = sum(self.cost[n] for n in self.done)
        rest = sum(c for n, c in self.cost.items() if n not in self.done)
        return elapsed / done * rest if done > 0 else None

    def line(self, elapsed: float) -> str:
        k, n = len(self.done), len(self.cost)
        left = self.left(elapsed)
        tail = f", {minutes(left)} left" if left is not None else ""
        return f"[abspos] test {k} of {n}, {clock(elapsed)} elapsed{tail}\n"

    def opening(self) -> str:
        n = len(self.cost)
        pace = f"; {minutes(sum(self.cost.values()))} at the pace of the committed example run" if self.booked else ""
        return f"[abspos] {n} claim test{'s' * (n != 1)}{pace}\n"


class Eta:
    """The pytest plugin object: plans once the run's tests are known, writes a line as tests end."""

    def __init__(self, config, run):
        self.config, self.run = config, run
        self.enabled = not run.quiet and os.environ.get("ABSPOS_PROGRESS", "1") != "0"
        self.every = float(os.environ.get("ABSPOS_ETA_EVERY", EVERY))
        self.write = terminal_writer(config)
        self.estimate: Estimate | None = None
        self.t0 = self.last = 0.0

    def plan(self, nodeids) -> None:
        if self.estimate is not None or not self.enabled:
            return
        table, settings = load_workload()
        s = self.run.settings
        self.estimate = Estimate(list(nodeids), table, settings, s.n_prompts, s.seq_len)
        self.t0 = self.last = time.monotonic()
        if len(self.estimate.cost) > 1:
            self.write(self.estimate.opening())

    def pytest_collection_finish(self, session) -> None:
        if session.items:
            self.plan(i.nodeid for i in session.items)

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node, ids) -> None:
        self.plan(ids)

    def pytest_runtest_logreport(self, report) -> None:
        est = self.estimate
        if est is None or report.when != "teardown" or not est.finish(report.nodeid):
            return
        now = time.monotonic()
        if len(est.done) < len(est.cost) and (len(est.done) == 1 or now - self.last >= self.every):
            self.last = now
            self.write(est.line(now - self.t0))
