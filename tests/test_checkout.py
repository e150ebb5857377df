"""The checkout you stand in (harness/files/checkout.py): ``abspos-claims`` typed inside a checkout runs that
checkout's claims with that checkout's harness, whichever checkout the command is installed from; outside any, it
runs the installed one and says so in its first line.

The end-to-end test makes two lightweight clones of this repository (``git clone --shared`` of HEAD) and one
"install" pointing at this checkout: a console script of its own, importing ``harness`` from ``PYTHONPATH`` (as an
editable install's finder would), so the test does not depend on where the shared .venv's editable install points."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from pytest_runs import ROOT

from harness.files import checkout

# ---- which checkout: decided from the folders alone ------------------------------------------------------------


def make_checkout(folder: Path, name: str = "abspos-claims") -> Path:
    (folder / "claims").mkdir(parents=True)
    (folder / "harness").mkdir()
    (folder / "harness" / "__init__.py").write_text("")
    (folder / "pyproject.toml").write_text(f'[project]\nname = "{name}"\n')
    return folder


def test_a_checkout_is_this_projects_pyproject_with_claims_and_harness(tmp_path):
    assert checkout.is_checkout(ROOT)
    assert checkout.is_checkout(make_checkout(tmp_path / "a"))
    assert not checkout.is_checkout(make_checkout(tmp_path / "other", name="another-project"))
    broken = make_checkout(tmp_path / "b")
    (broken / "pyproject.toml").write_text("[project\nname =")
    assert not checkout.is_checkout(broken)
    assert checkout.enclosing(tmp_path / "a" / "claims") == (tmp_path / "a").resolve()  # from a subfolder too
    assert checkout.enclosing(tmp_path) is None


def test_the_checkout_stood_in_is_run_and_another_one_is_re_executed_into(tmp_path):
    installed, other = make_checkout(tmp_path / "main"), make_checkout(tmp_path / "branch")
    (other / "reports").mkdir()
    same = checkout.decide(installed, installed / "claims", {})
    assert (same.root, same.reexec, same.note, same.problem) == (installed.resolve(), False, None, None)
    into = checkout.decide(installed, other / "reports", {})
    assert (into.root, into.reexec, into.problem) == (other.resolve(), True, None)
    env = checkout.pythonpath(into.root, {"PYTHONPATH": f"{installed}{os.pathsep}{other}", "HOME": "/h"})
    assert env["PYTHONPATH"].split(os.pathsep) == [str(other.resolve()), str(installed)]  # its own first, once
    assert checkout.reexec_argv("/py", ["run", "--co"]) == ["/py", "-m", "harness.cli", "run", "--co"]


def test_outside_any_checkout_the_installed_one_runs_and_says_so(tmp_path):
    installed = make_checkout(tmp_path / "main")
    elsewhere = tmp_path / "notes"
    elsewhere.mkdir()
    d = checkout.decide(installed, elsewhere, {})
    assert d.root == installed.resolve() and not d.reexec and d.problem is None
    assert d.note.startswith(f"running the checkout at {installed.resolve()}") and str(elsewhere) in d.note


def test_what_cannot_be_run_is_one_line(tmp_path):
    bare = tmp_path / "site-packages"  # a harness installed without its claims, typed outside any checkout
    (bare / "harness").mkdir(parents=True)
    d = checkout.decide(bare, tmp_path, {})
    assert d.problem and "run it inside a checkout" in d.problem and "\n" not in d.problem
    installed, other = make_checkout(tmp_path / "a"), make_checkout(tmp_path / "b")
    again = checkout.decide(installed, other, {checkout.GUARD: str(other.resolve())})  # re-executed, still not it
    assert again.problem and f"cannot run the checkout at {other.resolve()}" in again.problem and not again.reexec


# ---- two clones, one install --------------------------------------------------------------------------------

WHERE = "ABSPOS_TEST_WHERE"
#: appended to each clone's conftest.py: which harness and reports folder its pytest uses
PROBE = f"""
import os as _os
if _os.environ.get("{WHERE}"):
    import harness as _h
    from harness.files import paths as _p
    with open(_os.environ["{WHERE}"], "a") as _f:
        _f.write(f"{{_h.__file__}} {{_p.REPORTS}}\\n")
"""


def clone(target: Path) -> Path:
    """A lightweight clone of this repository's HEAD (objects shared), its conftest reporting which harness runs."""
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True, check=True)
    subprocess.run(["git", "clone", "-q", "--shared", "--no-checkout", str(ROOT), str(target)], check=True)
    subprocess.run(["git", "-C", str(target), "checkout", "-q", head.stdout.strip()], check=True)
    with open(target / "conftest.py", "a") as f:
        f.write(PROBE)
    return target


@pytest.mark.long
@pytest.mark.skipif(shutil.which("git") is None or not (ROOT / ".git").exists(), reason="needs git and a git checkout")
def test_two_clones_sharing_one_install_each_run_their_own_claims_with_their_own_harness(tmp_path):
    """A command installed from this checkout, typed in clone A, then in clone B, then outside both: each clone's
    collection runs its own claims (pytest's rootdir) with its own harness and reports folder; outside, this
    checkout's, said in the first line. Collection only (--co): no model is loaded."""
    a, b = clone(tmp_path / "A"), clone(tmp_path / "B")
    script = tmp_path / "bin" / "abspos-claims"  # an install of this checkout: harness from PYTHONPATH, as a
    script.parent.mkdir()  # console script's sys.path[0] is its own folder, never the folder it is typed in
    script.write_text("import sys\nfrom harness.cli import main\nsys.exit(main())\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT), WHERE: str(tmp_path / "where.txt")}
    env.pop(checkout.GUARD, None)
    argv = [sys.executable, str(script), "run", "--models", "smollm2-135m", "--claims", "T9a", "--co", "-q"]
    argv += ["--no-report", "-p", "no:cacheprovider"]
    for cwd, root in ((a, a), (b / "claims", b), (tmp_path, ROOT)):
        (tmp_path / "where.txt").unlink(missing_ok=True)
        proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
        out = proc.stdout + proc.stderr
        assert proc.returncode == 0, out[-2000:]
        assert "test_T9a_position0_state_is_identical_across_prompts[smollm2-135m]" in proc.stdout
        said = proc.stderr.splitlines()[:1]
        if root is ROOT:  # (this checkout's conftest has no probe: its collection is the claims above)
            assert said and said[0].startswith(f"abspos-claims: running the checkout at {ROOT.resolve()}"), out
            continue
        assert not any("running the checkout at" in ln for ln in out.splitlines()), out
        harness_file, reports = (tmp_path / "where.txt").read_text().split()
        assert Path(harness_file) == root.resolve() / "harness" / "__init__.py", out[-2000:]
        assert Path(reports) == root.resolve() / "reports"
