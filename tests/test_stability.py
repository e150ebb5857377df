"""Verdicts under several seeds: a verdict that flips is unstable, shown with its range (harness/outcome/stability.py)."""

import json

import pytest

from harness.outcome import stability
from harness.report import write as report
from harness.spec.settings import Settings


def run(seed: int, verdict: str, value: float, **settings) -> dict:
    return {
        "settings": Settings(seed=seed, **settings).as_dict(),
        "records": [
            {
                "test": "claims/t.py::test_T6_x[m1]",
                "claim": "T6",
                "model": "m1",
                "outcome": "passed",
                "verdict": verdict,
                "reason": "",
                "figures": [{"name": "ratio", "value": value}, {"name": "edges", "value": [1, 2]}],
                "margin": value - 0.45,
                "decisions": [
                    {
                        "check": "test_T6_x: below",
                        "verdict": verdict,
                        "estimate": value,
                        "interval": [value - 0.1, value + 0.1],
                        "criterion": "> 0.45",
                        "margin": value - 0.45,
                    }
                ],
            },
            {
                "test": "claims/t.py::test_T7_y[m1]",
                "claim": "T7",
                "model": "m1",
                "outcome": "passed",
                "verdict": "held",
                "reason": "",
                "figures": [{"name": "share", "value": 0.7 + seed / 100}],
            },
        ],
    }


FIVE = [(0, "held", 0.40), (1, "not held", 0.50), (2, "stale", 0.45), (3, "held", 0.40), (4, "held", 0.40)]


def test_a_verdict_that_flips_between_seeds_is_unstable_with_its_range_and_each_seeds_margin():
    data = stability.combine([run(*r) for r in FIVE])
    flip, steady = data["tests"]["test_T6_x"]["m1"], data["tests"]["test_T7_y"]["m1"]
    assert flip["unstable"] and flip["verdicts"] == {"0": "held", "1": "not held", "2": "held", "3": "held", "4": "held"}
    assert flip["ranges"] == {"ratio": [0.40, 0.50]}
    assert not steady["unstable"] and steady["ranges"] == {} and steady["deciding"] == {}  # no rule decided it
    assert flip["deciding"]["1"] == {
        "check": "test_T6_x: below",
        "verdict": "not held",
        "estimate": 0.5,
        "interval": [0.4, 0.6],
        "criterion": "> 0.45",
        "margin": pytest.approx(0.05),
    }
    words = "held at seeds 0, 2, 3, 4; not held at seed 1 (range across seeds: ratio 0.4–0.5)"
    assert stability.describe(flip).startswith(words + "; deciding criterion by seed: 0: 0.4 [0.3, 0.5] margin -0.05")
    assert "1: 0.5 [0.4, 0.6] margin +0.05" in stability.describe(flip)
    assert stability.methods_list(data).splitlines()[-1].startswith(f"- `test_T6_x` on m1: {words}")
    key = Settings().verdict_key()
    assert stability.unstable(data, "test_T6_x", "m1", key) is flip
    assert stability.unstable(data, "test_T7_y", "m1", key) is None
    assert stability.unstable(data, "test_T6_x", "m1", {**key, "seq_len": 512}) is None  # other settings


@pytest.mark.parametrize(
    "runs, says",
    [
        ([run(s, "held", 1) for s in range(3)], "need at least 5 runs with distinct seeds"),
        ([run(s, "held", 1) for s in (0, 1, 2, 3, 3)], "need at least 5 runs with distinct seeds"),
        (
            [run(s, "held", 1) for s in range(4)] + [run(4, "held", 1, seq_len=256)],
            "the runs differ in more than the seed",
        ),
    ],
)
def test_stability_needs_five_seeds_at_otherwise_equal_settings(runs, says):
    with pytest.raises(ValueError, match=says):
        stability.combine(runs)


def test_an_unstable_record_is_reported_as_unstable(tmp_path):
    rec = {**run(0, "held", 0.4)["records"][0], "unstable": "held at seeds 0, 2; not held at seed 1"}
    results = {"run": "r", "settings": {}, "models": ["m1"], "records": [rec]}
    (tmp_path / "results.json").write_text(json.dumps(results))
    md = report.build(tmp_path / "results.json").read_text()
    assert "unstable across seeds: held at seeds 0, 2; not held at seed 1; this run: held" in md
    assert "| unstable across seeds |" in md  # the claims × models matrix cell


def test_methods_lists_the_unstable_verdicts_of_the_stability_record():
    from harness.files.paths import METHODS

    text = METHODS.read_text()
    block = text.split("<!-- stability:begin -->", 1)[1].split("<!-- stability:end -->", 1)[0]
    assert block.strip() == stability.methods_list(stability.load()).strip(), (
        "METHODS.md's unstable list differs from fixtures/stability.json: paste `abspos-claims stability methods`"
    )


def test_a_few_tests_re_taken_under_more_seeds_are_merged_into_the_record(tmp_path):
    """Runs of one claim under seeds 1-4 beside a full run at seed 0: only the tests every run has are re-taken, the
    record's other entries kept; runs of other settings are refused before anything is written."""
    path = tmp_path / "stability.json"
    old = stability.combine([run(s, "held", 0.4) for s in range(5)])
    old["tests"]["test_T9_z"] = {"m1": {"verdicts": {"0": "held"}, "unstable": False, "ranges": {}}}
    path.write_text(json.dumps(old))
    full = tmp_path / "full.json"
    full.write_text(json.dumps(run(0, "held", 0.40)))
    only_t6 = []
    for seed, verdict in ((1, "not held"), (2, "held"), (3, "held"), (4, "held")):
        r = run(seed, verdict, 0.4 + seed / 100)
        r["records"] = r["records"][:1]  # T6 alone
        (p := tmp_path / f"s{seed}.json").write_text(json.dumps(r))
        only_t6.append(p)
    data = stability.record([full, *only_t6], path, merged=True)
    assert data["tests"]["test_T6_x"]["m1"]["verdicts"] == {
        "0": "held",
        "1": "not held",
        "2": "held",
        "3": "held",
        "4": "held",
    }
    assert data["tests"]["test_T6_x"]["m1"]["unstable"] and data["seeds"] == [0, 1, 2, 3, 4]
    assert data["tests"]["test_T7_y"] == old["tests"]["test_T7_y"] and "test_T9_z" in data["tests"]  # kept
    assert json.loads(path.read_text()) == data
    other = tmp_path / "other.json"
    other.write_text(json.dumps(run(5, "held", 0.4, seq_len=256)))
    with pytest.raises(ValueError, match="differ in more than the seed"):
        stability.record([full, *only_t6[:2], other], path, merged=True)
    assert json.loads(path.read_text()) == data  # nothing written
