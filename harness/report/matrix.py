"""The claims × models matrix: how many of each claim's tests ended in each verdict on each model. One count for
the report's table (harness.report.document) and the run's terminal summary (harness.run.records); a test
without a model is counted under its family ("llama family") or "(no model)" (a property tested without one). Also the
report's totals line and the verdict strip under each claim's heading.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import NamedTuple

from harness.outcome.verdict import CHANGED, Verdict, changed
from harness.report.record_text import claim_key, model_label


class Matrix(NamedTuple):
    claims: list[str]  # claim order (claim_key: the registry's)
    models: list[str]  # the models given, then any other a record is counted under, in the records' order
    cells: dict  # {(claim, model): Counter of verdicts, in the order first seen}; absent: no test there

    def counts(self, claim: str, model: str) -> Counter:
        return self.cells.get((claim, model), Counter())


def verdict_matrix(records: list, models=()) -> Matrix:
    cells: dict = {}
    for r in records:
        cells.setdefault((r["claim"], model_label(r)), Counter())[Verdict.of(r)] += 1
    claims = sorted(dict.fromkeys(r["claim"] for r in records), key=claim_key)
    return Matrix(claims, list(dict.fromkeys([*models, *(model_label(r) for r in records)])), cells)


#: How the totals line words each verdict's count, in its order: the first five always, the rest where present.
TOTALS = {
    Verdict.HELD: "held",
    Verdict.NOT_HELD: "not held",
    Verdict.INCONCLUSIVE: "inconclusive",
    Verdict.NOT_APPLICABLE: "not applicable",
    Verdict.HARNESS_ERROR: "harness errors",
    Verdict.UNSTABLE: "unstable across seeds",
    Verdict.STALE: "held, recorded otherwise",
    Verdict.SKIPPED: "skipped",
    Verdict.REHEARSED: "rehearsed (random weights, no verdict)",
}


def totals_line(records: list) -> str:
    """Every test's verdict counted: "N claim tests on M models: a held · b not held · ...", and "· c changed since
    the record" where any verdict differs from its record (``verdict.changed``)."""
    counts = Counter(Verdict.of(r) for r in records)
    moved = sum(map(changed, records))
    models = {r.get("model") or model_label(r) for r in records}  # a synthetic set (synthetic-<size>-<arch>) counts
    models = {m for m in models if m != "(no model)" and not m.endswith(" family")}
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
    for r in records:
        if r.get("setup_failed"):
            by_model[model_label(r)].append(r["setup_failed"].split(": setup failed: ", 1)[-1])
    return [
        f"{model}: setup failed, so its {len(why)} claim test{'s' * (len(why) != 1)} ended as harness errors (its "
        f"committed snapshots are kept, not compared): {why[0]}"
        for model, why in by_model.items()
    ]


def verdict_strip(records: list) -> str:
    """Under a claim's heading: its tests' verdicts per model, e.g. "smollm2-135m: 1 held, 1 inconclusive"."""
    by_model: dict[str, Counter] = defaultdict(Counter)
    for r in records:
        by_model[model_label(r)][Verdict.of(r)] += 1
    cells = [f"{m}: {', '.join(f'{n} {v.label}' for v, n in c.items())}" for m, c in by_model.items()]
    return "**Verdicts** — " + " · ".join(cells)
