"""A run's "test k of N, elapsed, about M minutes left" (harness/run/eta.py): each claim test's expected cost from the
work a real run booked for it (layer-tokens, forward and other seconds), scaled to the run's model and prompt tokens;
the rate this run measures so far; the line's words and pace; and the notebook's progress line showing it."""

from __future__ import annotations

import json
import os
from types import SimpleNamespace

import pytest
from pytest_runs import ROOT, run_pytest

from harness.api import Progress
from harness.run import eta
from harness.spec.claims import CLAIMS
from harness.spec.models import REGISTRY

T2 = sorted(CLAIMS["T2"].tests)[0]
T7 = sorted(CLAIMS["T7"].tests)[0]
T13 = next(iter(CLAIMS["T13"].tests))


def node(test: str, param: str = "") -> str:
    return f"claims/test_x.py::{test}" + (f"[{param}]" if param else "")


def booking(test: str, model: str | None, layer_tokens: float, forward: float, seconds: float) -> dict:
    return {
        "test": node(test, model or ""),
        "model": model,
        "layer_tokens": layer_tokens,
        "forward_seconds": forward,
        "seconds": seconds,
    }


RUN = {
    "settings": {"n_prompts": 16, "seq_len": 128},
    "records": [
        booking(T2, "smollm2-135m", 1e6, 30.0, 40.0),
        booking(T7, "smollm2-135m", 2e6, 60.0, 100.0),
        booking(T7, "gemma3-270m", 2e6, 20.0, 30.0),
        booking(T13, None, 0, 0.0, 0.5),
        {"test": node(T2, "qwen2.5-coder-0.5b"), "model": "qwen2.5-coder-0.5b", "seconds": "a lot"},  # not a number
    ],
}


def test_a_booked_test_costs_what_it_cost_scaled_by_the_runs_prompt_tokens():
    table, settings = eta.booked(RUN)
    assert table[(T2, "smollm2-135m")] == (1e6, 30.0, 10.0) and (T2, "qwen2.5-coder-0.5b") not in table
    assert eta.expected_seconds(node(T2, "smollm2-135m"), table) == 40.0
    assert eta.expected_seconds(node(T2, "smollm2-135m"), table, scale=4.0) == 160.0  # 4x the prompt tokens
    assert eta.expected_seconds(node(T13, "llama"), table) == 0.5  # a family's test: its booking without a model
    assert eta.expected_seconds(node(T7, "synthetic-smoke-authors"), table) is None  # no booking stands in


def test_another_model_takes_the_booking_of_the_nearest_of_its_bos_policy_scaled_by_its_shape():
    """Layer-tokens grow with depth and each costs width squared; the other seconds grow with layers x heads."""
    table, _ = eta.booked(RUN)
    paper = next(n for n, s in REGISTRY.items() if s.group == "paper" and s.adds_bos)
    source = eta.source_model(T7, paper, table)
    assert source in ("smollm2-135m", "gemma3-270m") and REGISTRY[source].adds_bos
    (l1, h1, d1), (l0, h0, d0) = eta.shape(paper), eta.shape(source)
    lt, fwd, other = table[(T7, source)]
    want = fwd * (l1 / l0) * (d1 / d0) ** 2 + other * (l1 * h1) / (l0 * h0)
    assert eta.expected_seconds(node(T7, paper), table) == pytest.approx(want)
    assert want > table[(T7, source)][1] + table[(T7, source)][2]  # a paper model is larger than a bundled one


def test_the_time_left_is_this_runs_pace_over_the_expected_cost_of_the_rest():
    table, settings = eta.booked(RUN)
    ids = [node(T2, "smollm2-135m"), node(T7, "smollm2-135m"), node(T7, "gemma3-270m"), node(T7, "synthetic-x")]
    est = eta.Estimate([*ids, "tests/test_other.py::test_not_a_claim"], table, settings, 16, 128)
    assert list(est.cost) == ids  # claim tests only
    assert est.cost[ids[3]] == 40.0  # no booking: the median of the others (40, 100, 30)
    assert est.left(10.0) is None and est.line(10.0) == "[abspos] test 0 of 4, 0m10s elapsed\n"
    assert est.finish(ids[0]) and not est.finish(ids[0]) and not est.finish("tests/test_other.py::test_not_a_claim")
    # 40 expected seconds took 80 here: the rest (100 + 30 + 40) at twice the pace is 340 s
    assert est.left(80.0) == pytest.approx(340.0)
    assert est.line(80.0) == "[abspos] test 1 of 4, 1m20s elapsed, about 6 minutes left\n"
    assert est.opening() == "[abspos] 4 claim tests; about 4 minutes at the pace of the committed example run\n"
    assert eta.minutes(59) == "under a minute" and eta.minutes(61) == "about 1 minute" and eta.clock(3725) == "1h02m"


def test_without_any_booking_the_estimate_counts_tests():
    est = eta.Estimate([node(T2, "m1"), node(T7, "m1")], {}, {}, 16, 128)
    assert est.opening() == "[abspos] 2 claim tests\n"
    est.finish(node(T2, "m1"))
    assert est.line(30.0) == "[abspos] test 1 of 2, 0m30s elapsed, under a minute left\n"


def test_a_missing_or_damaged_workload_gives_no_booking(tmp_path):
    assert eta.load_workload(tmp_path / "none.json") == ({}, {})
    (tmp_path / "bad.json").write_text("{not json")
    assert eta.load_workload(tmp_path / "bad.json") == ({}, {})
    (tmp_path / "odd.json").write_text(json.dumps({"records": "nope", "settings": []}))
    assert eta.load_workload(tmp_path / "odd.json") == ({}, {})


def test_the_committed_example_books_every_test_it_ran():
    table, settings = eta.load_workload()
    assert settings["n_prompts"] and settings["seq_len"] and len(table) > 50
    assert all(lt >= 0 and fwd >= 0 and other >= 0 for lt, fwd, other in table.values())


def plugin(quiet: bool = False, every: float = 30.0) -> tuple[eta.Eta, list[str]]:
    settings = SimpleNamespace(n_prompts=16, seq_len=128)
    e = eta.Eta(SimpleNamespace(pluginmanager=None), SimpleNamespace(quiet=quiet, settings=settings))
    lines: list[str] = []
    e.write, e.every = lines.append, every
    return e, lines


def report(nodeid: str, when: str = "teardown"):
    return SimpleNamespace(nodeid=nodeid, when=when)


def test_the_plugin_writes_a_line_at_the_first_test_and_then_at_most_every_so_often(monkeypatch):
    monkeypatch.delenv("ABSPOS_PROGRESS", raising=False)  # (CI's workflow sets it to 0)
    clock = iter([100.0, 101.0, 102.0, 140.0, 141.0])
    monkeypatch.setattr(eta.time, "monotonic", lambda: next(clock))
    e, lines = plugin()
    ids = [node(T2, "smollm2-135m"), node(T7, "smollm2-135m"), node(T7, "gemma3-270m"), node(T2, "gemma3-270m")]
    e.pytest_xdist_node_collection_finished(None, ids)  # the controller under xdist: its workers' ids
    e.plan(ids[:1])  # planned once
    assert len(lines) == 1 and lines[0].startswith("[abspos] 4 claim tests")
    e.pytest_runtest_logreport(report(ids[0], "call"))  # only a test's end counts
    e.pytest_runtest_logreport(report(ids[0]))  # t=101: the first, always
    e.pytest_runtest_logreport(report(ids[1]))  # t=102: within 30 s of the last line
    e.pytest_runtest_logreport(report(ids[2]))  # t=140: 39 s on
    e.pytest_runtest_logreport(report(ids[3]))  # the last: the run's own summary follows
    assert [ln.split(",")[0] for ln in lines[1:]] == ["[abspos] test 1 of 4", "[abspos] test 3 of 4"]


def test_quiet_runs_write_no_line(monkeypatch):
    monkeypatch.delenv("ABSPOS_PROGRESS", raising=False)
    e, lines = plugin(quiet=True)
    e.plan([node(T2, "smollm2-135m"), node(T7, "smollm2-135m")])
    e.pytest_runtest_logreport(report(node(T2, "smollm2-135m")))
    monkeypatch.setenv("ABSPOS_PROGRESS", "0")
    e2, lines2 = plugin()
    e2.plan([node(T2, "smollm2-135m"), node(T7, "smollm2-135m")])
    assert lines == [] and lines2 == []


def test_the_notebooks_progress_line_shows_the_estimate(capsys):
    p = Progress()
    p("collected 43 items / 39 deselected / 4 selected\n")
    p("[abspos] test 2 of 4, 0m22s elapsed, under a minute left\n")
    assert p.text() == "abspos: test 2 of 4, 0m22s elapsed, under a minute left"
    p("claims/test_x.py ..  [100%]\n")
    assert p.text() == "abspos: 100% of 4 tests finished; writing the results and the report"


@pytest.mark.long
def test_a_claims_run_says_how_far_it_has_got():
    """Two claim tests on SmolLM2 (the model-free §3 check and Eq. 2 on its rotary module): the opening line with the
    estimate, then "test 1 of 2" with the time left; nothing of it under CI."""
    args = ("--models", "smollm2-135m", "-k", "EQ3_causal or EQ2", "--no-report", "-q")
    env = {**os.environ, "ABSPOS_ETA_EVERY": "0"}
    env.pop("CI", None)
    env.pop("ABSPOS_PROGRESS", None)
    proc = run_pytest(*args, env=env)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-2000:]
    assert "[abspos] 2 claim tests; " in out and "at the pace of the committed example run" in out, out[-2000:]
    assert "[abspos] test 1 of 2, " in out and " left" in out, out[-2000:]
    assert ROOT.joinpath("reports", "example", "results.json").is_file()
