"""METHODS.md's threshold log: one table that renders whole, and a dated row for every criterion of the catalogue.

Criteria are declared before results: every threshold of every claim (``ClaimSpec.thresholds``) has a row of the log
naming it, dated, so a reader can tell which were written before the first result and which after. A row names a
threshold when its "change" cell names the claim (``T5``, ``T5b``, ``DS2`` ...) and either the threshold's key in
backticks (`` `similar` ``) or its value as written (``0.8``, ``1.25``): the log's existing prose rows count as they
are.
"""

from __future__ import annotations

import re

from harness.files.paths import ROOT
from harness.spec.claims import CLAIMS

HEADER = "| date | change | review item | bundled values known then | verdicts it flipped |"
DATE = re.compile(r"^20\d\d-\d\d(-\d\d)?\b")


def log_section() -> str:
    text = (ROOT / "METHODS.md").read_text()
    start = text.index('<a id="threshold-log">')
    return text[start : text.index("\n## ", start)]


def split_row(line: str) -> list[str]:
    """A markdown table row's cells (``\\|`` inside a cell is not a separator)."""
    return [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]


def log_rows() -> list[list[str]]:
    lines = log_section().split("\n")
    head = lines.index(HEADER)
    rows = []
    for line in lines[head + 2 :]:
        if not line.startswith("|"):
            break
        rows.append(split_row(line))
    return rows


def test_the_log_is_one_table_that_renders_whole():
    """No blank line (or anything else) cuts rows off the table: after its last row no line of the section is a
    table row; every row has the header's five cells and a date."""
    lines = log_section().split("\n")
    head = lines.index(HEADER)
    assert lines[head + 1] == "|---|---|---|---|---|"
    rows = log_rows()
    after = lines[head + 2 + len(rows) :]
    stray = [line[:60] for line in after if line.startswith("|")]
    assert not stray, f"table rows cut off the threshold log's table by a blank line: {stray}"
    for cells in rows:
        assert len(cells) == 5, f"a threshold-log row without the header's five cells: {cells[:2]}"
        assert DATE.match(cells[0]), f"a threshold-log row without a date: {cells[0]!r}"


def renderings(value) -> set[str]:
    """The ways a threshold's value may be written in a row."""
    if isinstance(value, bool) or value is None:
        return set()
    if isinstance(value, (int, float)):
        v = float(value)
        return {f"{v:g}", f"{v:.3g}", f"{v:.2f}", f"{v:.4g}"}
    if isinstance(value, (tuple, list)):
        out: set[str] = set()
        for v in value:
            out |= renderings(v)
        return out
    return set()


def names_claim(cell: str, claim_id: str) -> bool:
    return re.search(rf"(?<![A-Za-z0-9]){re.escape(claim_id)}(?![0-9])", cell) is not None


def names_threshold(cell: str, key: str, value) -> bool:
    if f"`{key}`" in cell:
        return True
    return any(re.search(rf"(?<![0-9.]){re.escape(r)}(?![0-9])", cell) for r in renderings(value))


def test_every_criterion_of_the_catalogue_has_a_dated_row():
    changes = [cells[1] for cells in log_rows()]
    missing = [
        f"{c.id} `{key}` = {t.value!r}"
        for c in CLAIMS.values()
        for key, t in c.thresholds.items()
        if not any(names_claim(cell, c.id) and names_threshold(cell, key, t.value) for cell in changes)
    ]
    assert not missing, (
        f"{len(missing)} criteria of the claims catalogue have no dated row in METHODS.md's threshold log (add a row "
        f"naming the claim and the threshold's `key` or value, dated, before the run that first uses it): "
        + "; ".join(missing)
    )


def test_the_row_matcher_reads_the_logs_prose():
    assert names_claim("T5b not held → inconclusive", "T5") and not names_claim("T50", "T5")
    assert not names_claim("DS12", "DS1") and names_claim("DS1 held", "DS1")
    assert names_threshold("T7c's equivalence margin ±0.21 → ±0.144", "meet_gap", 0.144)
    assert names_threshold("T5 `similar` [0.8, 1.25]", "similar", (0.8, 1.25))
    assert not names_threshold("a floor of 0.1133", "x", 0.113)
