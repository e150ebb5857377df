"""The pytest plugin refuses bad model selections before anything runs, with a one-line reason."""
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def collect(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pytest", "claims", "--collect-only", "-q", "--no-report",
                           "-p", "no:cacheprovider", *args], cwd=ROOT, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("models, says", [
    ("tiny-llama", "tiny random-init models test the harness mechanics"),
    ("smollm2-135m,tiny-gemma3", "--models tiny-gemma3"),
    ("tiny", "unknown model 'tiny'"),
    ("llama-9b", "unknown model 'llama-9b'. Supported models"),
])
def test_bad_model_selection_is_a_usage_error(models, says):
    r = collect("--models", models)
    assert r.returncode == pytest.ExitCode.USAGE_ERROR, r.stdout + r.stderr
    assert says in r.stderr


def test_bundled_selection_collects_every_claim_per_model():
    r = collect("--models", "smollm2-135m")
    assert r.returncode == 0, r.stdout + r.stderr
    ids = [line for line in r.stdout.splitlines() if "::" in line and "[" in line and "test_T13" not in line]  # T13: per family
    assert len(ids) > 20 and all("[smollm2-135m" in line for line in ids)
