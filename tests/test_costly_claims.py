"""The claim tests marked ``costly`` (T11, and the related paper's deposit map, DP1 and DP2) leave CI's per-push claims run (scripts/test.sh deselects them); their
machinery still runs on every push here, on a rehearsal model (Llama-3.2-1B's architecture at 4 layers, random
weights), and must end without a harness error."""

from __future__ import annotations

import json
import subprocess

import pytest
from pytest_runs import ROOT, run_pytest


@pytest.mark.long
def test_the_per_push_claims_run_deselects_the_costly_tests_and_only_those():
    """scripts/test.sh passes -m "not costly" to its per-push claims run, and only T11's and the deposit map's tests
    carry the marker (one edited pass per ablated head or draw)."""
    script = (ROOT / "scripts" / "test.sh").read_text()
    assert 'claims_select=(-m "not costly")' in script and '"${claims_select[@]}"' in script
    proc = run_pytest("--co", "-q", "-m", "costly", "--models", "smollm2-135m", "--no-report")
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    chosen = [ln for ln in proc.stdout.splitlines() if "::" in ln]
    costly = ("::test_T11_", "::test_DP1_", "::test_DP2_")
    assert len(chosen) == 4 and all(any(c in ln for c in costly) for ln in chosen), proc.stdout[-2000:]


@pytest.mark.long
def test_the_costly_claim_tests_run_to_their_end_on_a_rehearsal_model(tmp_path):
    """T11 and the deposit map on a rehearsal build at small settings (a minute or two): every test runs to its end
    ("rehearsed": random weights give no verdict), never a harness error."""
    proc: subprocess.CompletedProcess = run_pytest(
        "--models", "llama-3.2-1b-rehearsal", "-m", "costly", "--report-dir", str(tmp_path / "reports"),
        "--baseline-dir", str(tmp_path / "baselines"), "--n-prompts", "12", "--seq-len", "32",
        "--n-probe-prompts", "20", "-p", "no:cacheprovider",
    )  # fmt: skip
    out = proc.stdout + proc.stderr
    assert proc.returncode in (0, 1) and "Traceback" not in out, out[-3000:]
    (results,) = [p for p in (tmp_path / "reports").glob("*/results.json") if not p.parent.is_symlink()]  # not latest
    records = json.loads(results.read_text())["records"]
    assert sorted(r["claim"] for r in records) == ["DP1", "DP2", "T11", "T11"]
    assert all(r["verdict"] == "rehearsed" for r in records), [(r["test"], r["verdict"], r["reason"]) for r in records]
