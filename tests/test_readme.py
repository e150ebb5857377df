"""README.md is a researcher's first screen: what the suite checks and what comes out (rows of the committed example),
a first try, the two commands, a model of one's own, a paper model on a GPU, the notebook, the 18 claims and links to
docs/; everything else lives in docs/, and every link lands."""

from __future__ import annotations

import re
import subprocess
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
    text = "\n".join(README.read_text().splitlines()[:60])  # the first screen: the rest lives in docs/
    assert len(README.read_text().splitlines()) <= 70, "README.md is more than a screen: move the rest into docs/"
    assert f"| {list(CLAIMS)[-1]} |" in text, "the claims table ends past the first screen"
    for needed in (
        "*Where does Absolute Position come from in decoder-only Transformers?*",  # what it checks
        "reports/example/report.md",  # what comes out
        "bash scripts/setup.sh",  # a first try
        "abspos-claims run --models smollm2-135m --claims T9a,T9b",
        "bash scripts/run-claims.sh",  # the two commands
        "bash scripts/test.sh",
        "--models hf:",  # one's own model
        "--device cuda --seq-len 512 --n-prompts 512 --n-probe-prompts 256",  # a paper model on a GPU (CUDA torch)
        "download.pytorch.org/whl/cu",
        "from harness import Verdicts, verify",  # the notebook, in three lines
        "v.to_pandas(); v.show(",
        "docs/running.md",  # the rest
        "docs/models.md",
        "docs/gpus.md",
        "docs/reports.md",
        "docs/development.md",
        "METHODS.md",
    ):
        assert needed in text, f"README.md lacks {needed!r}"


def test_the_readme_lists_the_claims_as_the_registry_has_them():
    rows = [cells(line) for line in README.read_text().splitlines() if re.match(r"\| [A-Z]+\d", line)]
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


COMMITTED_REPORTS = [
    f"reports/{p.parent.name}/report.md" for p in sorted((ROOT / "reports").glob("example*/report.md"))
]


# a committed report's links are relative to where it was written: one written elsewhere and copied here is rebuilt
# in place (python -m harness.report build reports/<name>), else its METHODS links point outside the repository
@pytest.mark.parametrize(
    "page", ["README.md", *(f"docs/{p.name}" for p in sorted((ROOT / "docs").glob("*.md"))), *COMMITTED_REPORTS]
)
def test_every_relative_link_lands(page):
    path = ROOT / page
    for target in re.findall(r"\]\(([^)\s]+)\)", path.read_text()):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue
        assert (path.parent / Path(target.split("#")[0])).exists(), f"{page}: {target} does not exist"


def fenced(language: str) -> list[str]:
    """The lines of README's fenced blocks in a language, comments dropped."""
    blocks = re.findall(rf"```{language}\n(.*?)```", README.read_text(), re.S)
    return [ln.split("   #")[0].strip() for block in blocks for ln in block.splitlines() if ln.strip()]


# how each shell command of README's first screen is run here, on a CPU machine without the hub: "run" as written (its
# arguments), "dry" with these arguments added, "fails" ending with this line (it needs what no CI machine has), or
# "ci" where CI itself runs it
README_COMMANDS = {
    "bash scripts/setup.sh": ("run", []),
    ".venv/bin/abspos-claims run --models smollm2-135m --claims T9a,T9b": ("dry", ["--co", "-q", "--no-report"]),
    "bash scripts/run-claims.sh": ("dry", ["--co", "-q", "--no-report"]),
    "bash scripts/test.sh": ("ci", []),
    ".venv/bin/abspos-claims run --models hf:HuggingFaceTB/SmolLM2-360M": (
        "fails",
        "hf:HuggingFaceTB/SmolLM2-360M: not on this machine",
    ),
    "python3 -m venv .venv && .venv/bin/pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cu128"
    " && bash scripts/setup.sh": (
        "fails",
        "the network: a CUDA build of torch",
    ),
    "hf download meta-llama/Llama-3.2-1B": ("fails", "the network: the hub"),
    ".venv/bin/abspos-claims run --models llama-3.2-1b --device cuda --seq-len 512 --n-prompts 512 --n-probe-prompts 256": (
        "fails",
        "--device cuda asked for a CUDA GPU but none is visible",
    ),
}


def test_every_shell_command_on_the_first_screen_is_one_this_file_runs():
    assert list(dict.fromkeys(fenced("bash"))) == list(README_COMMANDS)


@pytest.mark.long
@pytest.mark.parametrize("command", [c for c, (how, _) in README_COMMANDS.items() if how != "ci"])
def test_each_readme_command_runs(command):
    """As written, or in a dry form (collect-only: the full run is long), or to the one line that says what this
    machine lacks (a GPU, a model's weights, the network), never an unknown option or a traceback."""
    how, given = README_COMMANDS[command]
    if how == "fails" and "the network" in given:
        pytest.skip(f"needs {given.removeprefix('the network: ')} from the network, which no CI machine reaches")
    argv = command.split() + (list(given) if how == "dry" else [])
    if how == "fails" and "--no-report" not in argv:
        argv += ["--co", "-q", "--no-report"]
    proc = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=300)
    out = proc.stdout + proc.stderr
    if how == "fails":
        assert proc.returncode == 4 and given in out and "Traceback" not in out, out[-2000:]
        return
    assert proc.returncode == 0, out[-2000:]
    if "--claims T9a,T9b" in command:  # the first try: T9a and T9b on SmolLM2
        chosen = [ln for ln in proc.stdout.splitlines() if "::" in ln]
        assert len(chosen) == 2 and all("[smollm2-135m]" in ln for ln in chosen), out[-2000:]
    if "run-claims.sh" in command:
        assert re.search(r"\b\d+ tests collected", out) and "[gemma3-270m]" in out, out[-2000:]


def test_ci_runs_the_test_command_as_readme_gives_it():
    assert (ROOT / ".ci" / "run").read_text().strip().endswith("bash scripts/test.sh")


def test_the_notebook_lines_run(monkeypatch, capsys):
    """README's notebook block, its verify() answered by the committed example run (the run itself is what
    test_cli_and_api's verify tests start)."""
    import harness

    asked = []
    example = harness.Verdicts.load(ROOT / "reports" / "example")
    monkeypatch.setattr(harness, "verify", lambda *a, **kw: asked.append((a, kw)) or example)
    pytest.importorskip("pandas")
    namespace: dict = {}
    exec("\n".join(fenced("python")), namespace)
    assert asked == [(("smollm2-135m",), {"claims": ["T7", "T9a"]})] and namespace["v"] is example
