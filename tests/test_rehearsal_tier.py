"""The rehearsal tier. Every claim test runs on each paper model's ``rehearsal`` build (its exact config at
fewer layers and a narrower width, random weights, its real tokenizer; ``harness.model.rehearsal``), loaded through
the paper models' own path, and must reach the end of its verdict without a harness error. Random weights never give
a verdict: each such test ends "rehearsed", its reason saying what it would read. A paper model's path that
regresses (a crash, a missing capture, a paper value that cannot be looked up) fails here, in CI's weekly run
(`--run-slow`: the test takes 11 to 17 minutes), without the paper's weights.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from pytest_runs import run_pytest

from harness.outcome.nodeid import parse
from harness.outcome.verdict import Verdict
from harness.spec.models import FAMILIES, PAPER

ROOT = Path(__file__).resolve().parent.parent
REHEARSALS = {f"{s.name}-rehearsal": s.name for s in PAPER}


def not_rehearsed(records: list[dict]) -> list[tuple[str, str, str]]:
    """(test, verdict, reason) of every record but a rehearsal's "rehearsed", an inapplicable prediction, a slow
    variant, or a claim test that runs on no model (EQ3's softmax: a verdict on arithmetic)."""

    def wrong(r) -> bool:
        v, family = r["verdict"], parse(r["test"]).param in FAMILIES
        if v in (Verdict.REHEARSED, Verdict.NOT_APPLICABLE) or (
            v == Verdict.SKIPPED and r["reason"].startswith("slow variant")
        ):
            return False
        return not (r["model"] is None and not family and v == "held")

    return [(r["test"], r["verdict"], r["reason"][:300]) for r in records if wrong(r)]


@pytest.mark.long
@pytest.mark.slow  # 11-17 minutes on 2 cores: the weekly run and --run-slow; the rehearsal mechanics stay in the default run
def test_every_claim_reaches_its_verdict_on_every_paper_architecture_without_a_harness_error(tmp_path):
    proc = run_pytest(
        *("--models", "rehearsal", "-p", "no:randomly", "-q", "--report-dir", str(tmp_path)),
        *("--baseline-dir", str(tmp_path / "b")),
        timeout=1800,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},  # never a hub: the builds are made here, from the configs
    )
    out = proc.stdout[-4000:] + proc.stderr[-2000:]
    found = list(tmp_path.glob("run-*/results.json"))
    assert found, out
    records = json.loads(found[0].read_text())["records"]
    assert not not_rehearsed(records), out
    assert proc.returncode == 0, out
    rehearsed = [r for r in records if r["verdict"] == "rehearsed"]
    assert all(r["reason"].startswith("rehearsal of ") for r in rehearsed)
    assert {r["model"] for r in rehearsed} == set(REHEARSALS) | {None}  # None: T13 on the Llama rehearsals' ladder
    assert {r["claim"] for r in rehearsed} == {r["claim"] for r in records}  # every claim, T13 on the Llama ladder
    for model in REHEARSALS:  # every applicable test of every claim on each paper architecture
        ran = {parse(r["test"]).function for r in rehearsed if r["model"] == model}
        assert ran == {parse(r["test"]).function for r in records if r["model"] == model and r["verdict"] != "n/a"}
    # the rehearsed model's paper values were applied: looked up, and each checked or said why not (at 128 tokens)
    checked = {REHEARSALS[r["model"]] for r in rehearsed if r["model"] for f in r["figures"] if f.get("paper_check")}
    assert checked == set(REHEARSALS.values())
    assert not list((tmp_path / "b").rglob("*.json"))  # random weights: no baseline recorded
