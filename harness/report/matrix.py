"""The claims × models matrix: each claim's tests' verdicts on each model. The report's table (one row per claim
test, ``report_matrix``) and the run's terminal summary (one row per claim, a mark per test, within a terminal's
width: ``text_matrix``); a test without a model is counted under its family ("llama family") or "(no model)" (a
property tested without one), said apart from the models' columns. Also the report's totals line and the verdict strip
under each claim's heading.
"""

from __future__ import annotations

import textwrap
from collections import Counter, defaultdict
from typing import NamedTuple

from harness.outcome.claim_result import TargetKind
from harness.outcome.results import loaded
from harness.outcome.verdict import CHANGED, Verdict
from harness.report.cells import Cells, RunCells
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
    own = (TargetKind.MODEL, TargetKind.SYNTHETIC)
    return totals_words(
        [r.shown for r in results],
        sum(r.changed for r in results),
        {r.target.name for r in results if r.target.kind in own},
    )


def report_totals(records: tuple[Cells, ...]) -> str:
    """``totals_line`` of a report's cells."""
    return totals_words(
        [c.shown for c in records], sum(c.changed for c in records), {c.target for c in records if c.own}
    )


def totals_words(shown: list[Verdict], moved: int, models: set[str]) -> str:
    """The totals line of the verdicts ``shown`` (one a test), ``moved`` of them changed, on ``models``."""
    counts = Counter(shown)
    words = [f"{counts[v]} {w}" for k, (v, w) in enumerate(TOTALS.items()) if k < 5 or counts[v]]
    words += [f"{moved} {CHANGED}"] if moved else []
    tests, on = (
        f"{len(shown)} claim test{'s' * (len(shown) != 1)}",
        f"{len(models)} model{'s' * (len(models) != 1)}",
    )
    return f"**{tests} on {on}: {' · '.join(words)}**"


def setup_failure_lines(records: list) -> list[str]:
    """One line per model whose setup failed (harness.run.setup_failures): the tests it ended, and why (its first
    test's line: a later one may only say that the load failed earlier)."""
    return failure_lines((r.target.label, r.recorded.get("setup_failed")) for r in map(loaded, records))


def failure_lines(failed) -> list[str]:
    """``setup_failure_lines`` of (target label, its record's setup failure or None) pairs."""
    by_model: dict[str, list[str]] = defaultdict(list)
    for label, failure in failed:
        if failure:
            by_model[label].append(failure.split(": setup failed: ", 1)[-1])
    return [
        f"{model}: setup failed, so its {len(why)} claim test{'s' * (len(why) != 1)} ended as harness errors (its "
        f"committed snapshots are kept, not compared): {why[0]}"
        for model, why in by_model.items()
    ]


def verdict_strip(records: list[Cells]) -> str:
    """Under a claim's heading: its tests' verdicts per model, e.g. "smollm2-135m: 1 held, 1 inconclusive"."""
    by_model: dict[str, Counter] = defaultdict(Counter)
    for c in records:
        by_model[c.label][c.shown] += 1
    cells = [f"{m}: {', '.join(f'{n} {v.label}' for v, n in c.items())}" for m, c in by_model.items()]
    return "**Verdicts** — " + " · ".join(cells)


# ---- the report's matrix: one row per claim test, a column per model ----------------------------------------

#: What the report's mark on a changed verdict means (its matrix's legend, its glossary).
CHANGED_MEANING = (
    f"{CHANGED} = this run's verdict differs from its record (fixtures/known_outcomes.json): not held or "
    "inconclusive where no earlier run recorded it at that criterion, or held where one recorded it otherwise; a "
    "verdict that repeats its record carries no mark, and a model without recorded outcomes has nothing to change from."
)

#: The matrix's one column for the tests of no model or of a family (a property of the equations, a size ladder):
#: one column each would stand empty on every other row.
ELSEWHERE = "no model / a family"


def elsewhere_cell(at: dict[str, Cells]) -> tuple[str, str]:
    """The ``ELSEWHERE`` cell of a row's tests without a model or over a family ({target label: its cells}): each
    verdict with where ("gemma, llama, mistral, qwen families: not applicable"), coloured by the first."""
    by: dict[str, list[str]] = {}
    for label, c in at.items():
        by.setdefault(c.marked, []).append(label)
    return "; ".join(f"{targets_text(where)}: {v}" for v, where in by.items()), next(iter(at.values())).css


def targets_text(labels: list[str]) -> str:
    """ "(no model)", "llama family", "gemma, llama families"."""
    families = [x.removesuffix(" family") for x in labels if x.endswith(" family")]
    named = [x for x in labels if not x.endswith(" family")]
    named += [f"{', '.join(families)} famil{'ies' if len(families) > 1 else 'y'}"] if families else []
    return ", ".join(named)


def report_matrix(results: RunCells) -> list:
    """The claims × models matrix: one row per claim test, one verdict per cell (a column per model of the run or
    synthetic set, and one for the tests without a model or over a family); a model's checks of the paper's equations
    one row when every one held everywhere. With its legend (the verdicts it shows)."""
    records = results.records
    shown, folded = results.everything
    own = {c.label for c in records if c.own}
    columns = [m for m in dict.fromkeys([*results.models, *(c.label for c in records)]) if m in own]
    others = any(c.label not in own for c in records)
    rows = []
    if folded and not any(c.property_check for c in shown):  # a check that did not hold: every check its own row
        ids = ",".join(dict.fromkeys(c.claim for checks, _ in folded.values() for c in checks))
        cells = [(f"{len(folded[m][0])} held", Verdict.HELD.css) if m in folded else ("—", "") for m in columns]
        there = [m for m in folded if m not in own]
        extra = (
            [(f"{targets_text(there)}: {sum(len(folded[m][0]) for m in there)} held", Verdict.HELD.css)]
            if there
            else []
        )
        rows.append(
            [
                ids,
                "checks of the paper's equations (Eq. 1–7), each on the model itself",
                *cells,
                *(extra or [("—", "")]) * others,
            ]
        )
    else:
        shown = records
    by_test: dict = {}
    for c in shown:
        by_test.setdefault((c.order, c.claim, c.function), {})[c.label] = c
    for (_, claim, _), at in sorted(by_test.items(), key=lambda kv: (kv[0][0], kv[0][2])):
        cells = [(at[m].marked, at[m].css) if m in at else ("—", "") for m in columns]
        rest = {m: c for m, c in at.items() if m not in own}
        words = next(iter(at.values())).words
        rows.append([claim, words, *cells, *[elsewhere_cell(rest) if rest else ("—", "")] * others])
    seen = {c.shown for c in records}
    legend = (
        "One row per claim test, its verdict on each model: "
        + "; ".join(f"{v.label} = {v.meaning}" for v in Verdict if v in seen)
        + "; — = no such test on that model."
        + f' "{ELSEWHERE}": a test over a model family\'s sizes, or of a property tested without a model.' * others
        + (f" {CHANGED_MEANING}" if any(c.changed for c in records) else "")
    )
    failed = [("p", f"**Setup failed** — {line}") for line in failure_lines((c.label, c.setup_failed) for c in records)]
    return [("table", ["claim", "test", *columns, *[ELSEWHERE] * others], rows), ("p", legend), *failed]


# ---- the terminal's matrix: one mark per test, within a terminal's width ----------------------------------------

#: One character per test in the terminal's matrix, in the order a cell lists them; ``CHANGED_MARK`` follows the mark
#: of a verdict that differs from its record.
MARKS = {
    Verdict.HELD: "H",
    Verdict.NOT_HELD: "N",
    Verdict.INCONCLUSIVE: "I",
    Verdict.UNSTABLE: "U",
    Verdict.STALE: "S",
    Verdict.HARNESS_ERROR: "E",
    Verdict.REHEARSED: "R",
    Verdict.SKIPPED: "s",
    Verdict.NOT_APPLICABLE: "-",
}
CHANGED_MARK = "*"
NO_TEST = "."  # a cell where the run has no test of the claim (left out, or not run there)
#: The legend's words for a mark, where a shorter phrase than the verdict's label reads better in one line.
MARK_WORDS = {
    Verdict.REHEARSED: Verdict.REHEARSED.counted,
    Verdict.STALE: f"{Verdict.STALE.label} (abspos-claims outcomes record)",
}
GAP = "  "


def marks(results) -> str:
    """A cell: its tests' marks, in ``MARKS`` order, each changed one followed by ``CHANGED_MARK``."""
    order = list(MARKS)
    return "".join(
        MARKS[r.shown] + CHANGED_MARK * r.changed for r in sorted(results, key=lambda r: order.index(r.shown))
    )


def legend(results) -> list[str]:
    """What the marks present stand for: "H held", "N not held", "- not applicable", "* changed since the record"."""
    seen = {r.shown for r in results}
    words = [f"{m} {MARK_WORDS.get(v, v.label)}" for v, m in MARKS.items() if v in seen]
    return words + ([f"{CHANGED_MARK} {CHANGED}"] if any(r.changed for r in results) else [])


def packed(items: list[str], width: int, sep: str = " · ", indent: str = "  ") -> list[str]:
    """``items`` joined by ``sep`` in lines within ``width`` columns, never broken inside an item (one longer than a
    line is wrapped on its own), the later lines indented."""
    lines: list[str] = []
    for item in items:
        if lines and len(lines[-1]) + len(sep) + len(item) <= width:
            lines[-1] += sep + item
        else:
            lines += textwrap.wrap(item, width, initial_indent=indent * bool(lines), subsequent_indent=indent)
    return lines


def _fit(name: str, width: int) -> str:
    return name if len(name) <= width else name[: width - 1] + "…"


def column_blocks(first: list[str], columns: list[list[str]], width: int) -> list[list[str]]:
    """A table as plain-text lines within ``width`` columns: ``first`` (the row labels, its header at [0]) on every
    block, the other columns (each its header at [0]) left to right, as many to a block as fit; a block per run of
    columns, a blank line between blocks."""
    left = max(len(x) for x in first)
    room = width - left - len(GAP)
    columns = [[_fit(c[0], room), *c[1:]] for c in columns]
    blocks: list[list[list[str]]] = [[]]
    used = 0
    for col in columns:
        w = max(len(x) for x in col)
        if blocks[-1] and used + len(GAP) + w > room:
            blocks.append([])
            used = 0
        used += (len(GAP) if blocks[-1] else 0) + w
        blocks[-1].append(col)
    out: list[list[str]] = []
    for block in blocks:
        widths = [max(len(x) for x in col) for col in block]
        out.append(
            [
                (first[i].ljust(left) + GAP + GAP.join(col[i].ljust(w) for col, w in zip(block, widths))).rstrip()
                for i in range(len(first))
            ]
        )
    return out


def text_matrix(records, models=(), width: int = 100) -> list[str]:
    """The claims × models matrix for a terminal of ``width`` columns: a legend line, then one row per claim and
    one column per model or synthetic set that ran a test, each test one mark (``MARKS``); the tests of no model or
    of a family (a property of the equations, a size ladder) follow in a line per claim, not as columns of their own
    that would stand empty on every other row; more models than fit: the columns continue in another block."""
    results = [loaded(r) for r in records]
    mx = verdict_matrix(results, models)
    own = {TargetKind.MODEL, TargetKind.SYNTHETIC}
    kind = {r.target.label: r.target.kind for r in results}
    cells: dict = defaultdict(list)
    for r in results:
        cells[(r.claim, r.target.label)].append(r)
    columns = [m for m in mx.models if kind.get(m) in own and any((c, m) in cells for c in mx.claims)]
    others = [m for m in mx.models if kind.get(m) is not None and kind[m] not in own]
    rows = [c for c in mx.claims if any((c, m) in cells for m in columns)]
    empty = any((c, m) not in cells for c in rows for m in columns)
    lines = packed(legend(results) + [f"{NO_TEST} no test of it on that model in this run"] * empty, width)
    if rows:
        first = ["claim", *rows]
        table = [[m, *(marks(cells.get((c, m), ())) or NO_TEST for c in rows)] for m in columns]
        for k, block in enumerate(column_blocks(first, table, width)):
            lines += [""] * (k > 0) + block
    for c in mx.claims:  # "<claim> without a model: H", "<claim> per family: llama -, qwen -"
        for what, kinds in (("without a model", (TargetKind.NONE,)), ("per family", (TargetKind.FAMILY,))):
            there = [m for m in others if kind[m] in kinds and (c, m) in cells]
            named = [
                f"{m.removesuffix(' family')} " * (kinds[0] == TargetKind.FAMILY) + marks(cells[(c, m)]) for m in there
            ]
            if named:
                lines += packed([f"{c} {what}: {named[0]}", *named[1:]], width, sep=", ")
    return lines
