"""The plugin in syrupy's shape: each pytest hook in harness/run/plugin.py is one call into the run's ``ClaimsSession``
(harness/run/claims_session.py) or a claim test's ``ClaimRun`` (harness/run/claim_run.py), and a run keeps its state
in those two objects, under one stash key each; a test its claim does not list is a usage error naming the file where
that claim is declared."""

from __future__ import annotations

import ast

import pytest
from pytest_runs import ROOT, run_crafted_file

RUN = ROOT / "harness" / "run"
PLUGIN = RUN / "plugin.py"
MAX_PLUGIN_LINES = 200


def one_statement_hooks(source: str) -> dict[str, int]:
    """{hook name: statements in its body (a docstring aside)} of every ``pytest_*`` function in ``source``."""
    out = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef) and node.name.startswith("pytest_"):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                body = body[1:]
            out[node.name] = len(body)
    return out


def test_every_hook_is_one_call_and_the_plugin_is_short():
    source = PLUGIN.read_text()
    hooks = one_statement_hooks(source)
    assert len(hooks) >= 9, sorted(hooks)  # configure ... makereport: the parser found them
    long = {name: n for name, n in hooks.items() if n != 1}
    assert not long, f"hooks of more than one statement in harness/run/plugin.py: {long}"
    assert len(source.splitlines()) < MAX_PLUGIN_LINES


def test_a_run_keeps_its_state_in_two_objects():
    keys = {p.name: p.read_text().count("StashKey[") for p in sorted(RUN.glob("*.py")) if "StashKey[" in p.read_text()}
    assert keys == {"claim_run.py": 1, "claims_session.py": 1}, keys


def test_the_hook_finder_counts_statements():
    hooks = one_statement_hooks('def pytest_a(x):\n    """doc"""\n    f(x)\n\ndef pytest_b(x):\n    y = 1\n    f(y)\n')
    assert hooks == {"pytest_a": 1, "pytest_b": 2}


UNLISTED = """
import pytest


@pytest.mark.claim("T6")
def test_T6_a_test_its_claim_does_not_list():
    pass
"""


@pytest.mark.long
def test_a_test_its_claim_does_not_list_is_a_usage_error_naming_the_declaration(tmp_path):
    (tmp_path / "test_unlisted.py").write_text(UNLISTED)
    r = run_crafted_file(
        tmp_path / "test_unlisted.py",
        *("--collect-only", "-q", "--no-report", "--models", "smollm2-135m"),
    )
    assert r.returncode == 4, r.stdout[-2000:] + r.stderr[-2000:]
    says = next((line for line in r.stderr.splitlines() if "not listed under claim T6" in line), "")
    assert "claims/s5_4_ablations.py" in says and "harness/spec/claims.py" not in says, r.stderr[-2000:]
