"""The claims' decisions shipped with a run: methods.html and methods.md in the run folder, so that a report's
"METHODS <claim>" links resolve inside the folder alone (a CI artifact, a folder sent by mail), not only in a
checkout where ``../../METHODS.md`` exists. The decisions are METHODS.md's own, from the same declarations
(``harness.spec.methods_text``): what "held" means for each test and each threshold with the paper's words. harness.report.write renders and writes
the page beside the report."""

from __future__ import annotations

import os
from typing import NamedTuple

from harness.report.render import Link
from harness.spec.claims import CLAIMS
from harness.spec.methods_text import TESTS_HEADER, THRESHOLDS_HEADER, decision_tables

PAGE = "methods"  # methods.html beside report.html, methods.md beside report.md


def anchor(claim_id: str) -> str:
    """The anchor of a claim's decision, in METHODS.md and in the run's methods page alike."""
    return f"decision-{claim_id.lower()}"


class Links(NamedTuple):
    """Each claim's link to its decision (what "held" means for its tests), {claim: Link}: the report's and the
    job summary's."""

    report: dict[str, Link]  # on the run's methods page: methods.md from report.md, methods.html from report.html
    summary: dict[str, Link]  # in METHODS.md on GitHub at the run's commit (a CI job summary), else METHODS.md


def links(claim_ids) -> Links:
    """``Links`` of the claims ``claim_ids``."""
    if os.environ.get("GITHUB_REPOSITORY"):  # a job summary: the file in the repository at the run's commit
        href = (
            f"{os.environ.get('GITHUB_SERVER_URL', 'https://github.com')}/{os.environ['GITHUB_REPOSITORY']}/blob/"
            f"{os.environ.get('GITHUB_SHA', 'HEAD')}/METHODS.md"
        )
    else:
        href = "METHODS.md"
    return Links(
        {c: Link(f"METHODS {c}", f"{PAGE}.md#{anchor(c)}", f"{PAGE}.html#{anchor(c)}") for c in claim_ids},
        {c: Link(f"METHODS {c}", f"{href}#{anchor(c)}") for c in claim_ids},
    )


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
