"""One vocabulary for verdicts: the ``Verdict`` enum (harness/outcome/verdict.py) holds every word a verdict is stored,
shown or counted by (its value, ``label``, ``counted``), and the one rule's three readings it is built on are
harness/spec/decision.py's. Anywhere else under harness/, a string literal equal to one of those words (compared, a
dict key or value, an index, a match case, a member of a tuple or list, an argument) is a second copy of the
vocabulary, which drifts: the code names the member instead (``Verdict.HELD``, ``Verdict.HELD.label``).

Read statically with ``ast``; docstrings and prose inside longer strings are not words of the vocabulary.
"""

from __future__ import annotations

import ast
from pathlib import Path

from harness.outcome.verdict import Verdict

ROOT = Path(__file__).resolve().parents[1]
HARNESS = ROOT / "harness"

#: Where the words are defined: the enum, and the one rule's readings below it (the spec layer cannot import it).
VOCABULARY_MODULES = {"harness/outcome/verdict.py", "harness/spec/decision.py"}
#: Modules allowed to write verdict words while they are moved to the enum (the list only shrinks; empty now).
NOT_YET: set[str] = set()
#: results.json's and stability.json's field that says why a verdict is unstable: a field's name wherever it is not
#: compared (a dict key, an index, ``r.get("unstable")``, a tuple of field names).
FIELD = "unstable"
#: pytest's own outcome of a test (``report.outcome``, a record's "outcome", syrupy's ``ran_item``), which shares
#: this word: allowed as a record's "outcome" and as an argument.
PYTEST_OUTCOME = "skipped"


def vocabulary() -> set[str]:
    return {w for v in Verdict for w in (v.value, v.label, v.counted)}


def docstrings(tree: ast.AST) -> set[int]:
    """ids of the string constants that stand alone as statements (docstrings, string comments)."""
    return {
        id(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
    }


def allowed(word: str, parent: ast.AST, node: ast.Constant) -> bool:
    """The field's name and pytest's outcome, where they are written as such."""
    key_of = {id(v): k for k, v in zip(parent.keys, parent.values)} if isinstance(parent, ast.Dict) else {}
    if word == FIELD:  # an index, an argument, a member of a tuple of field names, a dict key: never compared
        is_key = isinstance(parent, ast.Dict) and any(k is node for k in parent.keys)
        return isinstance(parent, ast.Subscript | ast.Call | ast.Tuple | ast.List) or is_key
    if word == PYTEST_OUTCOME:  # an argument, or a record's "outcome"
        key = key_of.get(id(node))
        return isinstance(parent, ast.Call) or (isinstance(key, ast.Constant) and key.value == "outcome")
    return False


def verdict_words(source: str, words: set[str]) -> list[tuple[int, str, str]]:
    """(line, word, what holds it) of every string literal in ``source`` equal to a verdict word, but docstrings and
    the allowed field and pytest outcome; a compared tuple's members count as compared."""
    tree = ast.parse(source)
    standalone = docstrings(tree)
    found = []
    for parent in ast.walk(tree):
        for child in ast.iter_child_nodes(parent):
            candidates = [child]
            if isinstance(parent, ast.Compare) and isinstance(child, ast.Tuple | ast.List | ast.Set):
                candidates += child.elts  # `v in ("held", ...)`
            for node in candidates:
                if not (isinstance(node, ast.Constant) and isinstance(node.value, str)) or id(node) in standalone:
                    continue
                if node.value in words and not allowed(node.value, parent, node):
                    found.append((node.lineno, node.value, type(parent).__name__))
    return sorted(set(found))


def test_no_verdict_word_is_written_outside_the_verdict_module():
    words = vocabulary()
    found = [
        f"{path.relative_to(ROOT).as_posix()}:{line}: {word!r} ({held_by})"
        for path in sorted(HARNESS.rglob("*.py"))
        if path.relative_to(ROOT).as_posix() not in VOCABULARY_MODULES | NOT_YET
        for line, word, held_by in verdict_words(path.read_text(), words)
    ]
    assert not found, "verdict words written as strings (name the Verdict member, its label or counted):\n" + "\n".join(
        found
    )


def test_the_modules_allowed_the_words_still_write_them():
    """An entry of ``NOT_YET`` that no longer writes a verdict word is dropped from it (the list only shrinks)."""
    words = vocabulary()
    stale = [p for p in sorted(NOT_YET) if (ROOT / p).exists() and not verdict_words((ROOT / p).read_text(), words)]
    assert not stale, f"no verdict word written any more: drop from NOT_YET: {stale}"


PLANTED = '''
"""held"""
def f(r, v, counts, row):
    """not held"""
    if r["verdict"] == "held":
        pass
    if v in ("inconclusive", "other"):
        pass
    colours = {"not held": "red"}
    counts["harness error"] += 1
    match v:
        case "unstable":
            pass
    row = ["x", "n/a"]
    text = str(v).startswith("not applicable")
    if r.get("unstable") == "unstable":
        pass
    ok = {"unstable": "why", "outcome": "skipped"}, r.get("unstable"), ran(r, "skipped"), f"{v} held"
    bad = {"verdict": "skipped"}
'''


def test_the_finder_finds_verdict_words_where_they_are_written():
    found = {(line, word) for line, word, _ in verdict_words(PLANTED, vocabulary())}
    assert found == {
        (5, "held"),
        (7, "inconclusive"),
        (9, "not held"),
        (10, "harness error"),
        (12, "unstable"),
        (14, "n/a"),
        (15, "not applicable"),
        (16, "unstable"),
        (19, "skipped"),
    }, sorted(found)
