"""The claims' decisions shipped with a run: methods.html and methods.md in the run folder, so that a report's
"METHODS <claim>" links resolve inside the folder alone (a CI artifact, a folder sent by mail), not only in a
checkout where ``../../METHODS.md`` exists. The decisions are METHODS.md's own, from the same declarations
(``harness.spec.methods_text``): what "held" means for each test and each threshold with the paper's words."""

from __future__ import annotations

from pathlib import Path

from harness.files.atomic import write_text
from harness.report.render import Link, to_html, to_markdown
from harness.spec.claims import CLAIMS
from harness.spec.methods_text import TESTS_HEADER, THRESHOLDS_HEADER, decision_tables

PAGE = "methods"  # methods.html beside report.html, methods.md beside report.md


def anchor(claim_id: str) -> str:
    """The anchor of a claim's decision, in METHODS.md and in the run's methods page alike."""
    return f"decision-{claim_id.lower()}"


def link(claim_id: str) -> Link:
    """A report's link to a claim's decision on the run's methods page: methods.md from report.md, methods.html
    from report.html."""
    return Link(f"METHODS {claim_id}", f"{PAGE}.md#{anchor(claim_id)}", f"{PAGE}.html#{anchor(claim_id)}")


def blocks(claim_ids) -> list:
    """The page: a title, what it is, then each claim's decision (in the registry's order)."""
    out: list = [
        ("h1", "What each claim's verdict means: the claims' decisions"),
        (
            "p",
            "The decisions of METHODS.md (in the suite's repository) for the claims of this run, from the same "
            "declarations the run was judged by: each test, where its prediction applies and when it holds; each "
            "threshold, with the paper's words and how we read them. A verdict is decided on a 95% interval over "
            "prompts: held when it lies wholly on the criterion's side, not held when wholly on the other, "
            "inconclusive when it straddles the threshold. METHODS.md's threshold log dates each threshold.",
        ),
    ]
    for cid in [c for c in CLAIMS if c in set(claim_ids)]:
        c = CLAIMS[cid]
        tests, thresholds = decision_tables(c)
        out += [
            ("h2", f"{c.id} ({c.section}): {c.statement}", anchor(c.id)),
            ("table", list(TESTS_HEADER), tests),
        ]
        out += [("table", list(THRESHOLDS_HEADER), thresholds)] if thresholds else []
        out += [("p", f"Declared in {c.source}.")] if c.source else []
    return out


def write(base: Path, claim_ids) -> None:
    """methods.html and methods.md in the run folder ``base``, for the claims ``claim_ids`` (those of its records)."""
    page = blocks(claim_ids)
    write_text(base / f"{PAGE}.html", to_html(page))
    write_text(base / f"{PAGE}.md", to_markdown(page, base))
