"""One typed result from the test to every reader (issue 58): results.json is loaded once, by
``harness.outcome.results`` (``load_run``, ``loaded``), into ``ClaimResult``s whose verdict as shown, target and test
function are attributes. A reader that decodes a record's verdict from a dict (``Verdict.of``) or parses a node id
(``harness.outcome.nodeid``) again is a step back. What is left of both is listed here and may only shrink: a new
one fails, and so does a list that names more than the code has (lower it when a reader moves to the loader)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HARNESS = ROOT / "harness"

#: Where ``Verdict.of(`` is still written under harness/, and how often: 31 in 8 files before issue 58's loader, none
#: now (``Verdict.of`` is gone: ``results.claim_result`` decodes a record's verdict once, at load).
VERDICT_OF_LEFT: dict[str, int] = {}
#: The readers (harness/report/ and harness/notebook.py) that still import the node-id parser (4 before, none now).
NODEID_IMPORTS_LEFT: set[str] = set()
#: Where a reader still reads a run's settings or records out of the results.json dict, or loads one untyped
#: (``load_results``) in place of ``load_run``'s ``RunResult``: 9 settings reads in 5 report modules before, none now.
UNTYPED_RUN_READS_LEFT: dict[str, int] = {}
READERS = [*sorted((HARNESS / "report").rglob("*.py")), HARNESS / "notebook.py"]


def verdict_of_counts(sources: dict[str, str]) -> dict[str, int]:
    """{file: how many times its text calls ``Verdict.of(``}, the files that do."""
    counts = {name: len(re.findall(r"\bVerdict\.of\(", text)) for name, text in sources.items()}
    return {name: n for name, n in counts.items() if n}


def untyped_run_reads(sources: dict[str, str]) -> dict[str, int]:
    """{file: how many times its text reads a run's "settings" or "records" from a dict (``x["settings"]``,
    ``x.get("records")``; not a write, ``x["records"] = ...``) or calls ``load_results(``}, the files that do."""
    pattern = r"""\[["'](?:settings|records)["']\](?!\s*=[^=])|\.get\(["'](?:settings|records)["']|\bload_results\("""
    counts = {name: len(re.findall(pattern, text)) for name, text in sources.items()}
    return {name: n for name, n in counts.items() if n}


def imports_nodeid(text: str) -> bool:
    """Whether a module's source imports ``harness.outcome.nodeid`` (or a name from it), anywhere in it."""
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.ImportFrom) and node.module == "harness.outcome.nodeid":
            return True
        if isinstance(node, ast.ImportFrom) and node.module == "harness.outcome":
            if any(alias.name == "nodeid" for alias in node.names):
                return True
        if isinstance(node, ast.Import) and any(alias.name == "harness.outcome.nodeid" for alias in node.names):
            return True
    return False


def over(found: dict[str, int], allowed: dict[str, int]) -> list[str]:
    """The files where ``found`` exceeds ``allowed`` (a file not listed allows none), and those listed above it."""
    grown = [f"{f}: {n} (allowed {allowed.get(f, 0)})" for f, n in found.items() if n > allowed.get(f, 0)]
    stale = [f"{f}: {found.get(f, 0)} now, listed {n}: lower it" for f, n in allowed.items() if found.get(f, 0) < n]
    return grown + stale


def test_verdicts_are_decoded_from_dicts_only_where_still_listed():
    sources = {str(p.relative_to(ROOT)): p.read_text() for p in sorted(HARNESS.rglob("*.py"))}
    problems = over(verdict_of_counts(sources), VERDICT_OF_LEFT)
    assert not problems, "Verdict.of( on a dict outside the loader (read ClaimResult.shown):\n" + "\n".join(problems)


def test_no_new_reader_parses_node_ids():
    found = {str(p.relative_to(ROOT)) for p in READERS if imports_nodeid(p.read_text())}
    assert found <= NODEID_IMPORTS_LEFT, f"a reader imports outcome.nodeid: {sorted(found - NODEID_IMPORTS_LEFT)}"
    assert found == NODEID_IMPORTS_LEFT, f"no longer importing it, drop: {sorted(NODEID_IMPORTS_LEFT - found)}"


def test_readers_take_the_run_typed():
    sources = {str(p.relative_to(ROOT)): p.read_text() for p in READERS}
    problems = over(untyped_run_reads(sources), UNTYPED_RUN_READS_LEFT)
    assert not problems, "a reader reads a run as a dict (take load_run's RunResult):\n" + "\n".join(problems)


def test_the_counters_find_what_is_planted():
    planted = {"a.py": "v = Verdict.of(r)\nw = Verdict.of({**r})\n", "b.py": "Verdict.of_kind(x)\n", "c.py": ""}
    assert verdict_of_counts(planted) == {"a.py": 2}
    assert over({"a.py": 2}, {"a.py": 1}) == ["a.py: 2 (allowed 1)"]
    assert over({"a.py": 2, "new.py": 1}, {"a.py": 2}) == ["new.py: 1 (allowed 0)"]
    assert over({}, {"a.py": 2}) == ["a.py: 0 now, listed 2: lower it"]
    assert imports_nodeid("def f():\n    from harness.outcome.nodeid import parse\n")
    assert imports_nodeid("from harness.outcome import nodeid, verdict\n")
    assert imports_nodeid("import harness.outcome.nodeid\n")
    assert not imports_nodeid("from harness.outcome.results import loaded  # not harness.outcome.nodeid\n")
    planted = {
        "a.py": 's = r.get("settings") or {}\nx = r["records"]\ny = load_results(p)\n',
        "b.py": 'r.settings\nout["records"] = rs\n',
    }
    assert untyped_run_reads(planted) == {"a.py": 3}
