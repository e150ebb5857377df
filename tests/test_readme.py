"""README.md is a researcher's first screen: what the suite checks and what comes out (rows of the committed example),
a first try, the two commands, a model of one's own, a paper model on a GPU, the notebook, the 18 claims and links to
docs/; everything else lives in docs/, and every link lands."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from pytest_runs import ROOT

from harness.spec.claims import CLAIMS

README = ROOT / "README.md"
EXAMPLE = ROOT / "reports" / "example" / "report.md"
MARKER = "<!-- excerpt of reports/example/report.md's lead table"


def cells(line: str) -> list[str]:
    return [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]


def test_the_readme_is_one_screen_with_what_a_researcher_needs():
    text = README.read_text()
    assert len(text.splitlines()) <= 90, "README.md is more than a screen and a half: move the rest into docs/"
    for needed in (
        "*Where does Absolute Position come from in decoder-only Transformers?*",  # what it checks
        "reports/example/report.md",  # what comes out
        "bash scripts/setup.sh",  # a first try
        "abspos-claims run --models smollm2-135m --claims T9a,T9b",
        "bash scripts/run-claims.sh",  # the two commands
        "bash scripts/test.sh",
        "--models hf:",  # one's own model
        "--device cuda --seq-len 512 --n-prompts 512",  # a paper model on a GPU, with a CUDA torch in .venv
        "download.pytorch.org/whl/cu",
        "from harness import verify",  # the notebook
        "docs/running.md",  # the rest
        "docs/models.md",
        "docs/gpus.md",
        "docs/reports.md",
        "docs/development.md",
        "METHODS.md",
    ):
        assert needed in text, f"README.md lacks {needed!r}"


def test_the_readme_lists_the_claims_as_the_registry_has_them():
    rows = [cells(line) for line in README.read_text().splitlines() if re.match(r"\| (EQ|T)\d", line)]
    claims = [r for r in rows if len(r) == 3]
    assert claims == [[c.id, c.section, c.statement] for c in CLAIMS.values()]


def test_the_readme_excerpt_is_rows_of_the_committed_example():
    text = README.read_text()
    assert MARKER in text
    block = text.split(MARKER, 1)[1].split("\n\n", 1)[0]
    excerpt = [cells(line) for line in block.splitlines() if line.startswith("| ") and not line.startswith("| claim")]
    assert len(excerpt) >= 3
    lead = EXAMPLE.read_text().split("## Claims at a glance", 1)[1].split("\n## ", 1)[0]
    rows = [cells(line) for line in lead.splitlines() if line.startswith("| ")]
    shown = {(r[0], r[2], r[4], r[5].split(":")[0]) for r in rows if len(r) == 7}
    shown_paper = {(r[0], r[2], r[3]) for r in rows if len(r) == 7}
    for claim, model, paper, measured, verdict in excerpt:
        assert (claim, model, measured, verdict) in shown, f"not in the example's lead table: {claim} {model}"
        assert (claim, model, paper) in shown_paper, f"the paper's number differs from the example's: {claim} {model}"


@pytest.mark.parametrize("page", ["README.md", *(f"docs/{p.name}" for p in sorted((ROOT / "docs").glob("*.md")))])
def test_every_relative_link_lands(page):
    path = ROOT / page
    for target in re.findall(r"\]\(([^)\s]+)\)", path.read_text()):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue
        assert (path.parent / Path(target.split("#")[0])).exists(), f"{page}: {target} does not exist"


@pytest.mark.long
def test_the_first_try_selects_its_two_claim_tests():
    """The first try's command as written, collect-only (the full run takes a minute): T9a and T9b on SmolLM2."""
    command = re.search(r"abspos-claims (run --models smollm2-135m --claims T9a,T9b)", README.read_text())[1]
    argv = [sys.executable, "-m", "harness.cli", *command.split(), "--co", "-q", "--no-report"]
    proc = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=300)
    chosen = [ln for ln in proc.stdout.splitlines() if "::" in ln]
    assert proc.returncode == 0 and len(chosen) == 2, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert all("[smollm2-135m]" in ln and ("test_T9a" in ln or "test_T9b" in ln) for ln in chosen)
