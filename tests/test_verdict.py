"""The verdict of a claim test: decided in one function (``harness.outcome.verdict.decide``) from how the test ended,
carried as one typed ``ClaimResult``, and never compared as a word anywhere else in the harness."""

from __future__ import annotations

import ast
import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from harness.outcome.claim_result import PROPERTY, ClaimResult, Target, TargetKind
from harness.outcome.results import claim_result, target_of
from harness.outcome.verdict import (
    ClaimNotHeld,
    KnownOutcomeMismatch,
    NotApplicable,
    SnapshotDrift,
    Verdict,
    decide,
)
from harness.run.records import RecordCollector
from harness.spec.claims import CLAIMS

pytest_plugins = ["pytester"]
ROOT = Path(__file__).resolve().parents[1]
KNOWN = {"check": "test_T5: frac > 0.5", "measured": "frac = 0.31"}
NOT_HELD = ClaimNotHeld("frac = 0.31 on smollm2-135m", "test_T5: frac > 0.5")


@pytest.mark.parametrize("phase", ["setup", "call"])
def test_not_applicable_is_its_own_type_and_a_plain_skip_is_skipped(phase):
    assert decide(phase, NotApplicable("not applicable to gemma3-270m: no BOS")) == (
        Verdict.NOT_APPLICABLE,
        False,
        "not applicable to gemma3-270m: no BOS",
        None,
    )
    # worded like an n/a reason, but a skip: the type decides, never the words
    skip = pytest.skip.Exception("not applicable (the words alone decide nothing)")
    assert decide(phase, skip)[:3] == (Verdict.SKIPPED, False, "not applicable (the words alone decide nothing)")


def test_an_error_while_setting_up_is_a_harness_error_even_with_a_known_outcome():
    verdict, known, reason, check = decide("setup", RuntimeError("load failed"), known=KNOWN)
    assert (verdict, known, reason, check) == (Verdict.HARNESS_ERROR, False, "RuntimeError: load failed", None)


def test_a_body_that_ends_is_held_or_stale_or_rehearsed():
    assert decide("call", None) == (Verdict.HELD, False, "", None)
    verdict, known, reason, _ = decide("call", None, known=KNOWN)
    assert verdict == Verdict.STALE and not known
    assert KNOWN["check"] in reason and KNOWN["measured"] in reason and "re-take" in reason
    verdict, _, reason, check = decide("call", None, rehearses="llama-3.2-1b")
    assert (verdict, check) == (Verdict.REHEARSED, None) and reason.endswith("would read: held")
    verdict, _, reason, check = decide("call", None, rehearses="llama-3.2-1b", not_held=NOT_HELD)
    assert verdict == Verdict.REHEARSED and check == NOT_HELD.check and str(NOT_HELD) in reason


def test_claim_not_held_is_not_held_and_says_whether_it_was_the_recorded_outcome():
    assert decide("call", NOT_HELD, not_held=NOT_HELD) == (Verdict.NOT_HELD, False, str(NOT_HELD), NOT_HELD.check)
    assert decide("call", NOT_HELD, known=KNOWN, not_held=NOT_HELD)[:2] == (Verdict.NOT_HELD, True)
    mismatch = KnownOutcomeMismatch(f"not held at another assertion than recorded: {NOT_HELD}")
    assert decide("call", mismatch, known=KNOWN, not_held=NOT_HELD) == (
        Verdict.NOT_HELD,
        False,  # a new finding: never accepted as the recorded one
        str(NOT_HELD),
        NOT_HELD.check,
    )


def test_anything_else_is_a_harness_error_named_by_its_type():
    drift = SnapshotDrift("T5: measured figures drifted")
    assert decide("call", drift) == (Verdict.HARNESS_ERROR, False, "SnapshotDrift: T5: measured figures drifted", None)
    # a drift after the claim did not hold: still no verdict, the failing assertion kept
    assert decide("call", drift, known=KNOWN, not_held=NOT_HELD)[::3] == (Verdict.HARNESS_ERROR, NOT_HELD.check)
    assert decide("call", json.JSONDecodeError("bad", "x", 0))[2].startswith("json.decoder.JSONDecodeError: bad")


def test_a_result_travels_as_one_json_property_and_becomes_its_record():
    result = ClaimResult(
        "claims/test_s5_3_leakage.py::test_T5_x[smollm2-135m]",
        "T5",
        "smollm2-135m",
        Verdict.NOT_HELD,
        known_outcome=True,
        check=NOT_HELD.check,
        reason=str(NOT_HELD),
        figures=({"name": "frac", "value": 0.31, "paper": None, "ci": [0.2, 0.4], "note": ""},),
        work={
            "seconds": 1.5,
            "layer_tokens": 30,
            "floor_layer_tokens": 20,
            "load_seconds": 2.0,
            "shape": {"layers": 1},
        },
        baseline={"status": "matched", "path": "b.json"},
        target=Target(TargetKind.MODEL, "smollm2-135m"),
        function="test_T5_x",
    )
    name, value = result.as_property()
    assert name == PROPERTY
    carried = json.loads(json.dumps(value))  # as xdist sends it to the controller
    report = type("Report", (), {"user_properties": [("other", 1), (name, carried)]})()
    assert ClaimResult.from_report(report) == result
    record = result.record("xfailed", 5.0, unstable="flips at seed 2")
    assert list(record) == [
        "test",
        "claim",
        "model",
        "target",
        "function",
        "outcome",
        "verdict",
        "known_outcome",
        "check",
        "reason",
        "figures",
        "seconds",
        "forward_seconds",
        "layer_tokens",
        "floor_layer_tokens",
        "baseline",
        "unstable",
        "shape",
    ]
    assert record["verdict"] == "not held" and type(record["verdict"]) is str
    assert record["target"] == {"kind": "model", "name": "smollm2-135m"} and record["function"] == "test_T5_x"
    assert record["seconds"] == 3.0 and record["forward_seconds"] == 1.5  # loading is not the test's time
    assert ClaimResult.from_report(type("Report", (), {"user_properties": []})()) is None
    # read back from results.json: the same result, with what the run recorded after the test
    loaded = claim_result(json.loads(json.dumps(record)))
    assert (loaded.verdict, loaded.shown, loaded.target, loaded.function) == (
        Verdict.NOT_HELD,
        Verdict.UNSTABLE,  # the stability record's overlay, applied once at load
        result.target,
        "test_T5_x",
    )
    assert (loaded.outcome, loaded.figures, loaded.recorded["seconds"]) == ("xfailed", result.figures, 3.0)
    assert loaded.to_dict() == record


def test_a_target_is_what_the_plugin_parametrized_or_what_an_older_record_s_node_id_names():
    assert Target.of_params({"model_name": "smollm2-135m"}) == Target(TargetKind.MODEL, "smollm2-135m")
    assert Target.of_params({"family": "llama"}).label == "llama family"
    assert Target.of_params({"synthetic": "synthetic-pilot-authors"}).kind == TargetKind.SYNTHETIC
    assert Target.of_params({}) == Target() and Target().label == "(no model)"
    older = "claims/test_s5_9_scale.py::test_T13_x[llama]"  # a record written before records named their target
    assert target_of(older, None) == Target(TargetKind.FAMILY, "llama")
    assert target_of("claims/a.py::test_B[synthetic-smoke-authors]", None).label == "synthetic-smoke-authors"
    assert target_of("claims/a.py::test_A2_softmax", None) == Target()
    assert target_of("claims/a.py::test_x[gemma3-270m]", "gemma3-270m").kind == TargetKind.MODEL
    for nodeid, model in ((older, None), ("claims/a.py::test_A2_softmax", None), ("claims/a.py::test_x[m-1]", "m-1")):
        loaded = claim_result({"test": nodeid, "claim": "T13", "model": model, "verdict": "held", "figures": []})
        assert loaded.name == nodeid.split("::")[-1]  # the node id's last part, from the typed target


@pytest.mark.parametrize(
    "record, shown",
    [  # files written before verdicts existed are read by pytest's outcome, in the loader and only there
        ({"outcome": "passed"}, Verdict.HELD),
        ({"outcome": "xfailed"}, Verdict.NOT_HELD),
        ({"outcome": "failed", "reason": "ClaimNotHeld: x"}, Verdict.NOT_HELD),
        ({"outcome": "failed", "reason": "KeyError"}, Verdict.HARNESS_ERROR),
        ({"outcome": "skipped", "reason": "not applicable: x"}, Verdict.NOT_APPLICABLE),
        ({"outcome": "skipped", "reason": "weights absent"}, Verdict.SKIPPED),
        ({"outcome": "passed", "verdict": "held", "unstable": "flips"}, Verdict.UNSTABLE),
        ({"outcome": "skipped", "verdict": "n/a", "unstable": "flips"}, Verdict.NOT_APPLICABLE),
    ],
)
def test_an_older_record_is_converted_at_load(record, shown):
    r = {"test": "claims/a.py::test_T1_x[smollm2-135m]", "claim": "T1", "model": "smollm2-135m", "figures": []}
    assert claim_result({**r, **record}).shown is shown


def test_a_record_with_an_unknown_verdict_is_refused_and_every_verdict_is_described():
    r = {"test": "claims/a.py::test_T1_x[smollm2-135m]", "claim": "T1", "model": "smollm2-135m", "figures": []}
    with pytest.raises(ValueError):
        claim_result({**r, "verdict": "within"})
    assert all(v.meaning and v.label and v.css for v in Verdict)


def _verdict_words_compared(path: Path) -> list[str]:
    """Comparisons (==, !=, in, not in) of a verdict's word as a string literal in one module."""
    words = {v.value for v in Verdict}
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.Compare):
            continue
        for side in [node.left, *node.comparators]:
            items = side.elts if isinstance(side, (ast.Tuple, ast.List, ast.Set)) else [side]
            found += [
                f"{path.relative_to(ROOT)}:{node.lineno}: {item.value!r}"
                for item in items
                if isinstance(item, ast.Constant) and item.value in words
            ]
    return found


def test_no_verdict_word_is_compared_as_a_string_outside_the_verdict_module():
    verdict_module = ROOT / "harness" / "outcome" / "verdict.py"
    found = [
        f for p in sorted((ROOT / "harness").rglob("*.py")) if p != verdict_module for f in _verdict_words_compared(p)
    ]
    assert not found, "compare with harness.outcome.verdict.Verdict's members: " + "; ".join(found)


STAND_INS = """
import pytest
from harness import NotApplicable


@pytest.mark.claim("T9b")
def test_T9b_position0_norm_exceeds_mid_sequence_tenfold(model_name):
    raise NotApplicable("not applicable: what this run measured rules the prediction out")


@pytest.mark.claim("T8")
def test_T8_sliding_window_ratio_rises_with_depth_past_the_window(model_name):
    raise AssertionError("never runs: the prediction is for sliding-window models")
"""


def test_not_applicable_at_collection_and_in_a_body_reads_n_a_and_shows_as_a_plain_skip(pytester):
    """Through the plugin's hooks (in process): the collection's applicability and a body's ``NotApplicable`` both end
    the test as a skip at the test's own line, with the reason alone, and its record reads n/a."""
    pytester.makepyfile(test_stand_ins=STAND_INS)
    (pytester.path / "none.json").write_text("{}")
    result = pytester.runpytest_inprocess(
        *("-p", "harness.run.plugin", "-p", "no:randomly", "-p", "no:cacheprovider", "-rs", "-n", "0"),
        *("--models", "smollm2-135m", "--report-dir", str(pytester.path / "reports")),
        *("--known-outcomes", str(pytester.path / "none.json")),
    )
    result.assert_outcomes(skipped=2)
    skips = [line for line in result.outlines if line.startswith("SKIPPED")]
    assert len(skips) == 2 and all("test_stand_ins.py:" in s and "Exception" not in s for s in skips), skips
    (found,) = (pytester.path / "reports").glob("run-*/results.json")
    records = {r["test"].split("::")[1].split("_")[1]: r for r in json.loads(found.read_text())["records"]}
    assert {k: (r["verdict"], r["outcome"]) for k, r in records.items()} == {
        "T9b": ("n/a", "skipped"),
        "T8": ("n/a", "skipped"),
    }
    assert records["T9b"]["reason"] == "not applicable: what this run measured rules the prediction out"
    assert records["T8"]["reason"].startswith("not applicable to smollm2-135m: the prediction is for")


def test_a_claims_run_ends_with_its_total_and_without_pytest_s_skip_list(pytester):
    """The terminal's last claims lines: the matrix, then one total in the suite's words; pytest's own list of
    skips and xfails (the project's default -ra) is left out, and kept where -r is given on the command line."""
    pytester.makepyfile(test_stand_ins=STAND_INS)
    pytester.makeini("[pytest]\naddopts = -ra\n")
    (pytester.path / "none.json").write_text("{}")
    args = ("-p", "harness.run.plugin", "-p", "no:randomly", "-p", "no:cacheprovider", "-n", "0")
    args += ("--models", "smollm2-135m", "--report-dir", str(pytester.path / "reports"))
    args += ("--known-outcomes", str(pytester.path / "none.json"))
    total = (
        "abspos total: 2 claim tests on 1 model: 0 held · 0 not held · 0 inconclusive · 2 not applicable · 0 "
        "harness errors"
    )
    result = pytester.runpytest_inprocess(*args)
    assert not [line for line in result.outlines if line.startswith("SKIPPED")]
    ours = [line for line in result.outlines if line.startswith(("abspos", "  ", "and 2 tests not applicable"))]
    assert " ".join(x.strip() for x in ours[-2:]) == total and all(len(x) <= 100 for x in ours[-2:])  # wrapped
    assert ours[-3].startswith("abspos report: ") and ours[-3].endswith("report.html (and report.md)")
    assert "and 2 tests not applicable to their model" in result.outlines  # no per-test line for them
    said = "\n".join(result.outlines[result.outlines.index(next(x for x in result.outlines if "abspos" in x)) :])
    assert not [w for w in ("xfail", "claimnotheld", "known outcome") if w in said.lower()], said
    result = pytester.runpytest_inprocess(*args, "-rs")
    assert (
        total.split(" · 0 harness")[0] in result.outlines[-2]
        and len([line for line in result.outlines if line.startswith("SKIPPED")]) == 2
    )


def test_the_terminal_gives_one_entry_per_test_with_its_figure_in_words_against_the_threshold():
    """Each finished test that reached a verdict, under its model: claim, verdict, the deciding figure in words with
    its interval against the criterion, seconds; the not-applicable ones counted in one line."""
    data = json.loads((ROOT / "reports" / "example" / "results.json").read_text())
    records = data["records"]
    lines = RecordCollector.test_lines(SimpleNamespace(records=records, run=SimpleNamespace(models=data["models"])))
    n_a = sum(claim_result(r).shown == Verdict.NOT_APPLICABLE for r in records)
    folded = {r.get("model") for r in records if r["claim"].startswith("EQ")}  # every property check held here
    assert len([r for r in records if r["claim"].startswith("EQ")]) > len(folded)
    entries = [x for x in lines[:-1] if x.startswith("  ") and not x.startswith("   ")]  # a test's first line
    assert sum("3 checks of the paper's equations (EQ2, EQ3, EQ7), all held" in x for x in entries) == len(folded) - 1
    n_shown = len(records) - n_a - sum(r["claim"].startswith("EQ") for r in records) + len(folded)
    assert len(entries) == n_shown and lines[-1] == f"and {n_a} tests not applicable to their model"
    headers = [x for x in lines[:-1] if not x.startswith(" ")]
    assert headers == [*data["models"], "(no model)"]  # a block per model, in the run's order
    t6 = next(r for r in records if r["test"].endswith("test_T6_bidirectional_attention_reduces_leakage[smollm2-135m]"))
    d = t6["decisions"][0]
    block = "\n".join(lines[lines.index("smollm2-135m") : lines.index("gemma3-270m")])
    entry = " ".join(block.split("\n  T6 ")[1].split("\n  T")[0].split())  # its lines, wrapped, joined again
    assert entry.startswith(claim_result(t6).shown.label + " leakage bidirectional ÷ causal (ratio): ")
    assert f"[{d['interval'][0]:.4g}, {d['interval'][1]:.4g}] vs {d['criterion']}" in entry
    assert entry.replace("\u00a0", " ").endswith(f"· {t6['seconds']:.0f} s")
    t9a = " ".join(block.split("\n  T9a ")[1].split("\n  T")[0].split())  # an exact check: its criterion in words
    assert t9a.startswith("held spread of the position-0 state across prompts (std): 0, held when the position-0")
    first_claims = [x.split()[0] for x in entries[: entries.index(next(e for e in entries if "DP1" in e)) + 1]]
    assert first_claims == sorted(first_claims, key=list(CLAIMS).index)


NOT_HELD_STAND_IN = """
import pytest
from harness.outcome.verdict import ClaimNotHeld


@pytest.mark.claim("T5")
def test_T5_leakage_is_content_independent(model_name):
    raise ClaimNotHeld("ratio 1.35 [1.29, 1.40] against inside [0.8, 1.25]: not held", "test_T5: same magnitude")
"""


def test_a_new_not_held_verdict_reads_in_words_and_the_total_is_the_last_line(pytester):
    """A claim that did not hold, recorded nowhere, fails the run with its verdict and figure in words — no
    traceback, no exception name — and the total comes after pytest's own last line."""
    pytester.makepyfile(test_stand_ins=NOT_HELD_STAND_IN)
    (pytester.path / "none.json").write_text("{}")
    result = pytester.runpytest_inprocess(
        *("-p", "harness.run.plugin", "-p", "no:randomly", "-p", "no:cacheprovider", "-n", "0"),
        *("--models", "smollm2-135m", "--report-dir", str(pytester.path / "reports")),
        *("--known-outcomes", str(pytester.path / "none.json")),
        *("--stability-record", str(pytester.path / "none.json")),
    )
    result.assert_outcomes(failed=1)
    out = "\n".join(result.outlines)
    assert "not held · changed since the record: " in out and "ratio 1.35 [1.29, 1.40]" in out
    assert "ClaimNotHeld" not in out and "Traceback" not in out and "raise " not in out, out
    last = [x for x in result.outlines if x.strip()]
    total = next(k for k in range(len(last) - 1, -1, -1) if last[k].startswith("abspos total: "))
    assert all(x.startswith("  ") for x in last[total + 1 :])  # the total is the last thing, wrapped within 100
    assert " ".join(last[total:]).startswith("abspos total: 1 claim test on 1 model: 0 held · 1")
