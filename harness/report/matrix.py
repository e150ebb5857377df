"""The claims × models matrix: how many of each claim's tests ended in each verdict on each model. One count for
the report's table (harness.report.document) and the run's terminal summary (harness.run.records); a test
without a model is counted under its family ("llama family") or "(no model)" (a property tested without one). Also the
report's totals line and the verdict strip under each claim's heading.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import NamedTuple

from harness.outcome.claim_result import TargetKind
from harness.outcome.results import loaded
from harness.outcome.verdict import CHANGED, Verdict
from harness.report.record_text import claim_key


class Matrix(NamedTuple):
    claims: list[str]  # claim order (claim_key: the registry's)
    models: list[str]  # the models given, then any other a record is counted under, in the records' order
    cells: dict  # {(claim, model): Counter of verdicts, in the order first seen}; absent: no test there

    def counts(self, claim: str, model: str) -> Counter:
        return self.cells.get((claim, model), Counter())


def verdict_matrix(records, models=()) -> Matrix:
    """The matrix of ``records`` (``ClaimResult``s, or results.json records: ``results.loaded``)."""
    results = [loaded(r) for r in records]
    cells: dict = {}
    for r in results:
        cells.setdefault((r.claim, r.target.label), Counter())[r.shown] += 1
    claims = sorted(dict.fromkeys(r.claim for r in results), key=claim_key)
    return Matrix(claims, list(dict.fromkeys([*models, *(r.target.label for r in results)])), cells)


#: How the totals line words each verdict's count, in its order: the first five always, the rest where present.
TOTALS = {
    v: v.counted
    for v in (
        *(Verdict.HELD, Verdict.NOT_HELD, Verdict.INCONCLUSIVE, Verdict.NOT_APPLICABLE, Verdict.HARNESS_ERROR),
        *(Verdict.UNSTABLE, Verdict.STALE, Verdict.SKIPPED, Verdict.REHEARSED),
    )
}


def totals_line(records: list) -> str:
    """Every test's verdict counted: "N claim tests on M models: a held · b not held · ...", and "· c changed since
    the record" where any verdict differs from its record (``ClaimResult.changed``)."""
    results = [loaded(r) for r in records]
    counts = Counter(r.shown for r in results)
    moved = sum(r.changed for r in results)
    models = {r.target.name for r in results if r.target.kind in (TargetKind.MODEL, TargetKind.SYNTHETIC)}
    shown = [f"{counts[v]} {words}" for k, (v, words) in enumerate(TOTALS.items()) if k < 5 or counts[v]]
    shown += [f"{moved} {CHANGED}"] if moved else []
    tests, on = (
        f"{len(records)} claim test{'s' * (len(records) != 1)}",
        f"{len(models)} model{'s' * (len(models) != 1)}",
    )
    return f"**{tests} on {on}: {' · '.join(shown)}**"


def setup_failure_lines(records: list) -> list[str]:
    """One line per model whose setup failed (harness.run.setup_failures): the tests it ended, and why (its first
    test's line: a later one may only say that the load failed earlier)."""
    by_model: dict[str, list[str]] = defaultdict(list)
    for r in map(loaded, records):
        if failed := r.recorded.get("setup_failed"):
            by_model[r.target.label].append(failed.split(": setup failed: ", 1)[-1])
    return [
        f"{model}: setup failed, so its {len(why)} claim test{'s' * (len(why) != 1)} ended as harness errors (its "
        f"committed snapshots are kept, not compared): {why[0]}"
        for model, why in by_model.items()
    ]


def verdict_strip(records: list) -> str:
    """Under a claim's heading: its tests' verdicts per model, e.g. "smollm2-135m: 1 held, 1 inconclusive"."""
    by_model: dict[str, Counter] = defaultdict(Counter)
    for r in map(loaded, records):
        by_model[r.target.label][r.shown] += 1
    cells = [f"{m}: {', '.join(f'{n} {v.label}' for v, n in c.items())}" for m, c in by_model.items()]
    return "**Verdicts** — " + " · ".join(cells)
