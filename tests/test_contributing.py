"""docs/development.md's "Contributing" works as written: the claim its example declares beside its tests registers,
declares every figure its test records, and its test runs to a verdict through the one decision rule on an interval
(in this process on a tiny random-init model; through the suite's plugin on a bundled model, in a claims folder of its
own); a model registers the same way."""

from __future__ import annotations

import dataclasses
import json
import os
import re

import numpy as np
import pytest
from pytest_runs import run_pytest

from harness.files import paths
from harness.outcome.verdict import DECIDED, ClaimNotHeld, Verdict, conclude, decide, judging
from harness.spec import claims, models
from harness.spec.methods_text import methods_table

GUIDE = paths.ROOT / "docs" / "development.md"


def contributing() -> str:
    """docs/development.md's "Contributing" section."""
    text = GUIDE.read_text()
    assert "\n## Contributing\n" in text, "docs/development.md has no Contributing section"
    return text.split("\n## Contributing\n", 1)[1].split("\n## ", 1)[0]


def example(first_line: str) -> tuple[str, str]:
    """(the path its first line names, the code) of the Contributing python block whose first line starts with
    ``# <first_line>``, its list-item indentation removed."""
    for indent, code in re.findall(r"^( *)```python\n(.*?)^ *```", contributing(), re.S | re.M):
        code = "".join(line[len(indent) :] for line in code.splitlines(keepends=True))
        if code.startswith(f"# {first_line}"):
            return code.splitlines()[0][2:].split(":")[0].strip(), code
    raise AssertionError(f"docs/development.md's Contributing section has no python example starting '# {first_line}'")


#: The names a declaration module sees: the schema, the named predicates and the models (what its imports give it).
DECLARATION_NAMES = ("harness.spec.claims", "harness.spec.paper_values", "harness.spec.applies", "harness.spec.models")
DECLARATION_HEADER = "".join(f"from {m} import *  # noqa: F403\n" for m in DECLARATION_NAMES)


def readme_entry() -> claims.ClaimSpec:
    """The guide's declaration, read as it would be inside a claims/<section>.py module (with that module's names)."""
    path, code = example("claims/s")
    assert path.startswith("claims/s") and not path.startswith("claims/test_"), path
    names: dict = {}
    exec(DECLARATION_HEADER, names)
    entry = eval(code, names)  # the entry ends with "),", as one in the section's CLAIMS tuple
    entry = entry[0] if isinstance(entry, tuple) and len(entry) == 1 else entry
    assert isinstance(entry, claims.ClaimSpec), type(entry)
    return entry


def readme_test() -> tuple[str, str, str, list[str]]:
    """(claims file, test function name, its claim marker's id, the figures it records) of the guide's test."""
    path, code = example("claims/test_")
    marker = re.findall(r'@pytest\.mark\.claim\("([^"]+)"\)', code)
    tests = re.findall(r"^def (test_\w+)\(", code, re.M)
    assert len(marker) == 1 and len(tests) == 1, (marker, tests)
    return path, tests[0], marker[0], re.findall(r'figures\.add\("([^"]+)"', code)


@pytest.fixture
def restore_claims():
    """The claim registry lent for the test (a test here registers the guide's claim in this process), as it was
    after."""
    before = dict(claims.CLAIMS)
    with claims.CLAIMS.scratch():
        yield
    assert dict(claims.CLAIMS) == before


def test_the_readme_claim_registers_and_declares_every_figure_its_test_records(restore_claims):
    spec = readme_entry()
    path, test, marker, recorded = readme_test()
    assert spec.id not in claims.CLAIMS, f"the guide's example claim {spec.id} is a real claim now: renumber it"
    assert claims.register_claim(spec) is claims.claim(spec.id) is spec
    assert marker == spec.id and test.startswith(f"test_{spec.id}_") and path.startswith("claims/test_")
    assert list(spec.tests) == [test], "the guide's test is the one its entry lists"
    assert recorded, "the guide's test records no figure"
    for name in recorded:
        spec.figure(name)  # raises UndeclaredFigure for a figure the entry does not declare
    words = claims.claim_test(test).words(spec.id)
    assert words and "{" not in words
    for name in claims.claim_test(test).headline:
        assert name in recorded, f"the headline figure {name} is one the test records"
    row = next(r for r in methods_table().splitlines() if r.startswith(f"| {spec.id} |"))
    assert f"`{test}`" in row  # what step 3 pastes into METHODS.md
    with pytest.raises(claims.ClaimRegistrationError, match=f"claim {spec.id} registered twice"):
        claims.register_claim(spec)


def guide_test_function(name: str):
    """The guide's test function ``name``, defined as its claims file defines it (its imports and module constants
    run: the guide's claim must be registered first)."""
    path, code = example("claims/test_")
    namespace: dict = {"__name__": "guide_claims_test"}
    exec(compile(code, path, "exec"), namespace)
    return namespace[name]


def test_the_guide_claim_runs_to_a_verdict_through_the_one_rule(restore_claims):
    """The guide's test body, run as the plugin runs it (its judged criteria collected, ``conclude``, ``decide``) on a
    tiny random-init Llama over 8 planted prompts of 32 tokens, in seconds: it ends in a verdict (held, not held or
    inconclusive; random weights decide nothing about the paper, only that the path runs), every criterion it judges
    is the one rule's decision on a prompt-level interval (never a point estimate, never a bare ``holds``), and it
    records exactly the figures its declaration lists."""
    from harness.capture.corpus import PromptSet
    from harness.capture.progress import Progress
    from harness.capture.session import Session
    from harness.outcome.figures import Figures
    from harness.spec.settings import Settings

    spec = claims.register_claim(readme_entry())
    _, test, _, _ = readme_test()
    body = guide_test_function(test)
    n, seq = 8, 32
    quiet = dict(log=lambda *a: None, notice=lambda *a: None, progress=Progress(enabled=False))
    session = Session(Settings(n_prompts=n, seq_len=seq, n_pairs=150, n_boot=50), **quiet)
    model = session.model("tiny-llama")  # random init: no tokenizer, so its topic prompts are planted
    ids = np.random.default_rng(0).integers(3, 250, size=(n, seq))
    session._prompts[(model.spec.name, "topic", seq, n)] = PromptSet(ids, np.arange(n) % 4, ("a", "b", "c", "d"), "t")
    figures = Figures(f"claims/test_guide.py::{test}[tiny-llama]", spec, model="tiny-llama", seq_len=seq, n_prompts=n)
    error = None
    with judging() as judged:
        try:
            body(model, session, figures)
            conclude(judged)
        except ClaimNotHeld as e:  # not held, or Inconclusive
            error = e
    verdict, _, reason, _ = decide("call", error)
    assert verdict in DECIDED, (verdict, reason)
    assert judged, "the guide's test judges no criterion through the one rule (harness.judge)"
    for j in judged:
        d = j.decision
        assert d.interval is not None, f"{j.check} is decided on a point estimate: {d.describe()}"
        assert d.interval[0] <= d.estimate <= d.interval[1] and d.criterion.startswith(("<", "≤", ">", "≥", "inside"))
    if verdict != Verdict.HELD:
        assert reason and "CI" in reason, reason  # the verdict says its interval and margin
    assert [f["name"] for f in figures.reported] == [f.name for f in spec.figures]
    ratio = figures.recorded[spec.claim_tests[test].headline[0]]
    assert ratio["ci"] is not None and np.isfinite(ratio["value"])


def test_the_registry_refuses_an_entry_that_contradicts_itself(restore_claims):
    spec = readme_entry()
    test = next(iter(spec.claim_tests))
    taken = dataclasses.replace(
        spec, claim_tests={"test_T6_bidirectional_attention_reduces_leakage": spec.claim_tests[test]}
    )
    with pytest.raises(claims.ClaimRegistrationError, match="already a test of claim T6"):
        claims.register_claim(taken)
    unset = dataclasses.replace(spec, thresholds={})
    with pytest.raises(claims.ClaimRegistrationError, match=f"the criterion of {test} names a threshold"):
        claims.register_claim(unset)
    undeclared = dataclasses.replace(spec, figures=())
    with pytest.raises(claims.UndeclaredFigure):
        claims.register_claim(undeclared)
    assert spec.id not in claims.CLAIMS


def test_a_frozen_registry_refuses_a_claim(restore_claims):
    claims.CLAIMS.freeze()
    with pytest.raises(claims.ClaimRegistrationError, match="frozen"):
        claims.register_claim(readme_entry())


@pytest.mark.long
def test_the_readme_claim_runs_through_the_plugin_on_a_bundled_model(tmp_path):
    """The guide's steps 1 and 2 in a claims folder of their own (its declaration module and its test file, the
    catalogue pointed at it with $ABSPOS_CLAIMS_DIR): collected by the suite's plugin on smollm2-135m (it refuses a
    claim test whose marker names no declared claim or whose declaration does not list it), then run at the smallest
    setting a run takes (12 prompts of 32 tokens, its own baseline: about 20 s, most of it loading the model) to a
    verdict in results.json, decided on the one rule's interval."""
    declaration, entry = example("claims/s")
    path, test, _, _ = readme_test()
    _, code = example("claims/test_")
    (tmp_path / "pytest.ini").write_text("[pytest]\naddopts = --strict-markers\n")
    (tmp_path / path).parent.mkdir(parents=True)
    (tmp_path / path).write_text(code)
    (tmp_path / declaration).write_text(f"{DECLARATION_HEADER}\nCLAIMS = (\n{entry})\n")
    (tmp_path / "conftest.py").write_text('pytest_plugins = ["harness.run.plugin"]\n')
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(p for p in (str(paths.ROOT), os.environ.get("PYTHONPATH")) if p),
        "ABSPOS_CLAIMS_DIR": str(tmp_path / "claims"),
    }
    common = ("--models", "smollm2-135m", "--baseline-dir", str(tmp_path / "baselines"))
    done = run_pytest(
        *("--collect-only", "-q", "--no-report", "--report-dir", str(tmp_path / "reports"), *common),
        target=path,
        cwd=tmp_path,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert f"{path}::{test}[smollm2-135m]" in done.stdout.splitlines(), done.stdout[-3000:]
    small = ("--n-prompts", "12", "--seq-len", "32", "--n-pairs", "1000")  # the smallest a run accepts
    ran = run_pytest(
        *("-q", "--report-dir", str(tmp_path / "reports"), *small, *common),
        target=path,
        cwd=tmp_path,
        env=env,
        timeout=600,
    )
    out = ran.stdout[-3000:] + ran.stderr[-3000:]
    assert ran.returncode in (0, 1) and "Traceback" not in out, out
    (results,) = [p for p in (tmp_path / "reports").glob("*/results.json") if not p.parent.is_symlink()]
    (record,) = json.loads(results.read_text())["records"]
    assert Verdict(record["verdict"]) in DECIDED, record
    assert record["decisions"] and all(d["interval"] is not None for d in record["decisions"]), record


def test_a_model_registers_once_under_its_name(restore_registry):
    """The guide's "Adding a model": a spec enters the registry through register_model; another model under a name
    already taken is refused in one line."""
    smol = models.get_spec("smollm2-135m")
    mine = dataclasses.replace(smol, name="my-model", source="my own GGUF")
    assert models.register_model(mine) is models.get_spec("my-model")
    assert models.register_model(dataclasses.replace(mine, caveat="again")).caveat == "again"  # the same model again
    with pytest.raises(models.ModelNameTaken) as e:
        models.register_model(dataclasses.replace(smol, source="another GGUF"))
    assert "\n" not in str(e.value) and "smollm2-135m" in str(e.value)
    assert models.get_spec("smollm2-135m") is smol


def test_paper_models_are_named_in_one_place():
    from harness.report.plot_style import PAPER_MODELS, paper_label

    assert set(PAPER_MODELS) == set(models.names("paper")) == set(models.DISPLAY_NAMES)
    assert [paper_label(m) for m in PAPER_MODELS] == [models.display_name(m) for m in PAPER_MODELS]
    assert models.display_name(models.QWEN) == "Qwen2.5-3B" and models.display_name("smollm2-135m") == "smollm2-135m"
