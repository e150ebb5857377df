"""A verdict is a result; a change is a regression (docs/running.md, "Exit codes"): a not held on a model with no
recorded outcomes (a ``path:`` copy of SmolLM2 here) ends the run 0, worded "not held (no record for this model)",
with no FAILURES block; the same not held on the bundled SmolLM2, whose record says it holds, fails (exit 1) naming
the change; a harness error ends the run with its own code (6) whatever else happened. Crafted claim tests: no model
is loaded (the reference's config and tokenizer are read to derive its spec)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from pytest_runs import run_crafted_file

from harness.model.reference_parse import parse
from harness.outcome import known_outcomes
from harness.outcome.results import loaded
from harness.outcome.verdict import ClaimNotHeld, Inconclusive, Verdict, decide
from harness.run.records import HARNESS_ERROR_EXIT
from harness.spec.models import REGISTRY, get_spec, register_model

CRAFTED = """
import pytest
from harness import holds


@pytest.mark.claim("T9a")
def test_T9a_position0_state_is_identical_across_prompts(model_name):
    pass  # held


@pytest.mark.claim("T6")
def test_T6_rope_ablations_raise_leakage_alike(model_name):
    holds(False, "crafted: ratio 9.9 measured in this run")


@pytest.mark.claim("T5")
def test_T5_top30_heads_significant_after_fdr(model_name):
    raise RuntimeError("crafted crash")
"""

T6 = "test_T6_rope_ablations_raise_leakage_alike"


# ---- the rule, unit by unit ---------------------------------------------------------------------------------------


def test_a_not_held_on_a_model_without_a_record_is_its_verdict_and_worded_so():
    e = ClaimNotHeld("crafted: ratio 9.9", "t: ratio <= 1")
    verdict, known, reason, check = decide("call", None, not_held=e, unrecorded=True)
    assert (verdict, known, reason, check) == (Verdict.NOT_HELD, False, "crafted: ratio 9.9", "t: ratio <= 1")
    assert decide("call", None, not_held=Inconclusive("straddles", "t: x"), unrecorded=True)[0] == Verdict.INCONCLUSIVE
    assert decide("call", None, unrecorded=True)[0] == Verdict.HELD
    assert decide("call", RuntimeError("boom"), unrecorded=True)[0] == Verdict.HARNESS_ERROR  # still an error

    def words(**record) -> str:  # as the report and the terminal word a loaded record's verdict
        r = loaded({"test": "claims/a.py::test_T6_x[smollm2-135m]", "claim": "T6", "figures": [], **record})
        return r.shown.label + r.badge

    assert words(verdict="not held", unrecorded=True) == "not held (no record for this model)"
    assert words(verdict="inconclusive", unrecorded=True) == "inconclusive (no record for this model)"
    assert words(verdict="held", unrecorded=True) == "held"
    assert words(verdict="not held", known_outcome=True) == "not held"  # as recorded: no mark
    assert words(verdict="not held") == "not held · changed since the record"


def test_which_models_have_no_record(tmp_path):
    empty = tmp_path / "none.json"
    assert not known_outcomes.without_record("smollm2-135m", empty)  # bundled: its committed run is its record
    paper = next(n for n, s in REGISTRY.items() if s.group == "paper")
    assert not known_outcomes.without_record(paper, empty)  # judged against the paper itself
    assert not known_outcomes.without_record(None, empty)  # a family-level or synthetic test
    ref = parse(f"path:{tmp_path / 'my-ft'}")
    local = register_model(replace(get_spec("smollm2-135m"), name=ref.name, group="local"))
    try:
        assert known_outcomes.without_record(local.name, empty)
        recorded = tmp_path / "known.json"
        recorded.write_text(json.dumps({T6: {local.name: [{"settings": {}, "check": "c", "measured": "m"}]}}))
        assert not known_outcomes.without_record(local.name, recorded)  # recorded once: a change fails again
    finally:
        REGISTRY.pop(local.name, None)


# ---- the three runs ---------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def smollm2_copy() -> Path:
    from harness.model import weights

    return weights.converted_folder(get_spec("smollm2-135m"), log=lambda *a: None)


def crafted_run(tmp_path: Path, model: str, *args: str):
    tmp_path.mkdir()
    (tmp_path / "test_crafted.py").write_text(CRAFTED)
    (tmp_path / "known.json").write_text("{}")
    r = run_crafted_file(
        tmp_path / "test_crafted.py",
        *("--models", model, "--known-outcomes", str(tmp_path / "known.json"), "--baseline-dir", str(tmp_path / "b")),
        *("--stability-record", str(tmp_path / "no-stability.json"), "--report-dir", str(tmp_path / "reports")),
        *("-q", "-p", "no:cacheprovider", *args),
    )
    results = json.loads((tmp_path / "reports" / "latest" / "results.json").read_text())
    return r, {rec["test"].split("::")[1].split("[")[0]: rec for rec in results["records"]}


@pytest.mark.long
def test_a_not_held_without_a_record_ends_0_and_a_change_or_an_error_fails(tmp_path, smollm2_copy):
    mine, out = crafted_run(tmp_path / "path", f"path:{smollm2_copy}", "-k", "not T5")
    text = mine.stdout + mine.stderr
    assert mine.returncode == 0, text[-3000:]
    assert "not held (no record for this model)" in mine.stdout and "changed since the record" not in text
    assert "FAILURES" not in text and "Traceback" not in text
    assert (out[T6]["verdict"], out[T6].get("unrecorded")) == ("not held", True)
    assert out["test_T9a_position0_state_is_identical_across_prompts"]["verdict"] == "held"

    bundled, out = crafted_run(tmp_path / "bundled", "smollm2-135m", "-k", "not T5")
    assert bundled.returncode == 1, bundled.stdout[-3000:]
    assert f"{T6}[smollm2-135m]" in bundled.stdout and "not held · changed since the record" in bundled.stdout
    assert out[T6]["verdict"] == "not held" and not out[T6].get("unrecorded")

    broken, out = crafted_run(tmp_path / "broken", f"path:{smollm2_copy}")
    assert broken.returncode == HARNESS_ERROR_EXIT, broken.stdout[-3000:]
    assert out["test_T5_top30_heads_significant_after_fdr"]["verdict"] == "harness error"
    assert out[T6]["verdict"] == "not held"  # the verdicts beside the error are kept
