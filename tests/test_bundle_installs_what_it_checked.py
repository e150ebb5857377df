"""The offline bundle installs exactly what it checksummed, into a folder holding nothing of the user's, and neither
``abspos-claims bundle`` nor its ``install.sh`` leaves a half-built folder or a child running when told to stop.

Each bundle probe of the fourth reliability review (`../shared/reviews/reliability-4.md`, probed on f45f170) that
failed there, and the test that holds it now (each fails on f45f170):

- B2 a failed build deletes the user's empty --out folder ............. test_a_failed_build_keeps_the_users_folder
                                            (and, of the folders it made itself, removes every one it made)
- B3 SIGTERM or SIGHUP to `bundle`: no message, half a bundle, pip still writing
                                                                        test_a_stop_ends_bundle_and_its_pip_child
- B4 Ctrl-C during `bundle`: a 31-line traceback ........................ (the same test, with SIGINT)
- B5 a wheel SHA256SUMS does not list is installed (a .pth runs at every Python start)
                                                                        test_a_file_the_checksums_do_not_list_is_refused
                                            (also a stale build backend in wheels/, which --find-links would pick)
- B9 install.sh into a folder of the user's overwrites its files ...... test_a_destination_holding_anything_is_refused
- B11 `bundle --out` inside the checkout packs the bundle into itself .. test_an_out_inside_the_checkout_is_refused
                                                                        test_the_checkout_packs_neither_the_bundle_nor_secrets
- B12 SIGTERM to install.sh: pip keeps installing; the re-run says ".venv exists"
                                                                        test_a_stop_ends_install_and_its_pip_child
                                                                        test_a_stop_while_the_venv_is_built_ends_ensurepip
                                                                        test_a_killed_install_is_named_on_the_rerun
- B13 a bad ABSPOS_CACHE found after the 50-second venv build ......... test_a_bad_cache_is_one_line_before_any_work

The generated install.sh passes shellcheck where it is installed (test_the_installer_passes_shellcheck).

Probes that held and still hold: B1 (test_a_bad_out_or_model_is_one_line), B6 and B10, now one line without
sha256sum's own (test_a_changed_or_partial_bundle_is_one_line), B8, now "already installed" with exit 0 and nothing
touched (test_a_finished_install_is_said_and_left_alone). The review's notes: pip's error is the real one
(test_pips_error_is_the_real_one); untracked secrets are not packed
(test_the_checkout_packs_neither_the_bundle_nor_secrets). Beyond the probes: a failed step is undone (test_a_failed_step_is_undone_in_one_line), a killed build is
named on the re-run (test_a_killed_build_is_named_on_the_rerun), the default DEST inside the bundle is no file of it
(test_the_default_destination_is_not_taken_for_a_file_of_the_bundle).

install.sh runs for real (bash, sha256sum, find, tar); its interpreter is ``$PYTHON``, here a stand-in whose "venv"
python logs or hangs in place of pip, so a whole install takes a second. One test builds a real venv.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tarfile
import time
import uuid
from pathlib import Path

import pytest

from harness import bundle, bundle_installer, cli

ROOT = Path(__file__).resolve().parents[1]
SIGNALS = {"SIGINT": signal.SIGINT, "SIGTERM": signal.SIGTERM, "SIGHUP": signal.SIGHUP}
pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="signals, /proc and GNU tools: Linux")


# ---- processes -------------------------------------------------------------------------------------------


def alive(pid: int) -> bool:
    """The process exists and has not ended (a zombie, ended but not yet reaped, has)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state not in ("Z", "X")


def running_with(text: str) -> list[int]:
    """Live processes whose command line mentions ``text``."""
    out = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit() and int(proc.name) != os.getpid():
            try:
                if text in proc.joinpath("cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"):
                    out.append(int(proc.name))
            except OSError:
                continue
    return [pid for pid in out if alive(pid)]


def wait_for(condition, timeout: float = 60.0, what: str = "") -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def end(pids) -> None:
    """End processes this test started, by id (whatever the code under test left running)."""
    for pid in pids:
        if alive(pid):
            os.kill(pid, signal.SIGKILL)


def pids_in(path: Path) -> list[int]:
    return [int(p) for p in path.read_text().split()] if path.exists() else []


def finish(proc: subprocess.Popen, timeout: float = 30.0) -> tuple[int, list[str]]:
    """Its exit code and its stderr's lines; on a timeout its session is killed (it was started in one)."""
    try:
        _, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        _, err = proc.communicate()
        pytest.fail(f"still running {timeout:.0f} s after the signal: {err[-2000:]}")
    return proc.returncode, err.strip().splitlines()


def said(lines: list[str], progress: str) -> list[str]:
    """The lines that are not progress (``[bundle] …``, ``[install] …``)."""
    return [line for line in lines if not line.startswith(progress)]


# ---- install.sh on a small bundle, with a stand-in interpreter ---------------------------------------------

FAKE_PYTHON = r"""#!/usr/bin/env bash
# A stand-in interpreter: answers -c with the real one, makes a "venv" whose python is this script, and in place of
# pip logs its arguments and environment (FAKE_PIP=ok), fails (fail), or starts a child and hangs (hang: both ids
# written to FAKE_PIDS).
if [ "${1:-}" = -m ] && [ "${2:-}" = venv ]; then
  for last in "$@"; do :; done
  mkdir -p "$last/bin" && cp "$0" "$last/bin/python" && exit 0
fi
if [ "${1:-}" = -m ] && [ "${2:-}" = pip ]; then
  echo "$*" >>"$FAKE_LOG"
  env | grep '^PIP_' >>"$FAKE_LOG.env" || true
  if [ "${FAKE_PIP:-ok}" = fail ]; then echo "ERROR: pip failed" >&2; exit 1; fi
  if [ "${FAKE_PIP:-ok}" = hang ]; then
    sleep 300 &
    echo "$$ $!" >"$FAKE_PIDS"
    wait
  fi
  exit 0
fi
exec "$REAL_PYTHON" "$@"
"""


def synthetic_bundle(at: Path, requirements: str = "x==1.0\n", torch: str = "included") -> Path:
    """A bundle's layout with small stand-ins, checksummed and with the real install.sh."""
    at.mkdir(parents=True)
    (at / "wheels").mkdir()
    (at / "wheels" / "x-1.0-py3-none-any.whl").write_bytes(b"a stand-in wheel")
    (at / "data").mkdir()
    (at / "data" / "corpus-1.0-py3-none-any.whl").write_bytes(b"a stand-in corpus")
    (at / "tokenizer-sources").mkdir()
    (at / "tokenizer-sources" / "tok.model").write_bytes(b"a stand-in tokenizer file")
    (at / "requirements.txt").write_text(requirements)
    project = at.parent / f"{at.name}-project"
    for name, text in {
        "pyproject.toml": "[project]\nname = 'x'\n",
        "scripts/setup.sh": "echo setup\n",
        "README.md": "the bundle's README\n",
        "claims/s3_mechanism.py": "# the bundle's claims\n",
    }.items():
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        (project / name).write_text(text)
    with tarfile.open(at / "project.tar.gz", "w:gz") as tar:
        for f in sorted(p for p in project.rglob("*") if p.is_file()):
            tar.add(f, arcname=f.relative_to(project).as_posix())
    bundle_installer.write_installer(at, bundle.this_python(), torch)
    bundle.write_checksums(at)
    return at


@pytest.fixture
def node(tmp_path):
    """(the bundle, the environment of a node with no index and the stand-in interpreter, its files)."""
    fake = tmp_path / "fake-python"
    fake.write_text(FAKE_PYTHON)
    fake.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    env |= {
        "PYTHON": str(fake),
        "REAL_PYTHON": sys.executable,
        "FAKE_LOG": str(tmp_path / "pip.log"),
        "FAKE_PIDS": str(tmp_path / "pip.pids"),
        "ABSPOS_CACHE": str(tmp_path / "node-cache"),
        "PIP_FIND_LINKS": str(tmp_path / "elsewhere"),  # the node's own settings: they must play no part
        "PIP_INDEX_URL": "http://127.0.0.1:9/simple",
    }
    return synthetic_bundle(tmp_path / "bundle"), env, tmp_path


def install(bundle_dir: Path, dest: Path, env: dict, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", str(bundle_dir / "install.sh"), str(dest)], capture_output=True, text=True, env=env, timeout=timeout
    )


def start_install(bundle_dir: Path, dest: Path, env: dict) -> subprocess.Popen:
    return subprocess.Popen(
        ["bash", str(bundle_dir / "install.sh"), str(dest)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,  # so that a test can end whatever it left, by its id
    )


def tree(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.parametrize(
    "added",
    [
        "data/zz_evil-1.0-py3-none-any.whl",  # B5: a wheel added by hand, installed with data/*.whl
        "wheels/setuptools-99.0-py3-none-any.whl",  # an older bundle's leftover: --find-links would pick it
        "extra/notes.txt",  # anything else, in a folder of its own
    ],
)
def test_a_file_the_checksums_do_not_list_is_refused(node, added):
    bundle_dir, env, tmp = node
    (bundle_dir / added).parent.mkdir(exist_ok=True)
    (bundle_dir / added).write_bytes(b"import os; os.system('touch PWNED')")
    r = install(bundle_dir, tmp / "dest", env)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert f"the bundle holds {added}, which its SHA256SUMS does not list" in r.stderr
    assert not (tmp / "dest").exists() and not (tmp / "pip.log").exists()  # nothing written, nothing run


def test_a_listed_file_replaced_by_a_link_is_refused(node):
    bundle_dir, env, tmp = node
    (tmp / "same.txt").write_text((bundle_dir / "requirements.txt").read_text())
    (bundle_dir / "requirements.txt").unlink()
    (bundle_dir / "requirements.txt").symlink_to(tmp / "same.txt")  # the same bytes, so sha256sum alone passes it
    r = install(bundle_dir, tmp / "dest", env)
    assert r.returncode == 2 and "requirements.txt in the bundle is a link" in r.stderr, r.stderr
    assert not (tmp / "dest").exists()


@pytest.mark.parametrize("damage", ["changed", "removed", "no SHA256SUMS"])
def test_a_changed_or_partial_bundle_is_one_line(node, damage):
    bundle_dir, env, tmp = node
    wheel = bundle_dir / "wheels" / "x-1.0-py3-none-any.whl"
    if damage == "changed":  # B6
        wheel.write_bytes(b"changed in transit")
    elif damage == "removed":  # B10: a partial copy
        wheel.unlink()
    else:  # B10
        (bundle_dir / "SHA256SUMS").unlink()
    r = install(bundle_dir, tmp / "dest", env)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr  # not sha256sum's line too
    expected = {
        "changed": "differs from its SHA256SUMS (wheels/x-1.0-py3-none-any.whl: FAILED)",
        "removed": "lacks wheels/x-1.0-py3-none-any.whl, which its SHA256SUMS lists",
        "no SHA256SUMS": "no SHA256SUMS beside install.sh",
    }[damage]
    assert expected in r.stderr, r.stderr
    assert not (tmp / "dest").exists()


@pytest.mark.parametrize("kind", ["the user's files", "a hidden file alone", "a file"])
def test_a_destination_holding_anything_is_refused(node, kind):
    bundle_dir, env, tmp = node
    dest = tmp / "node4"
    if kind == "a file":
        dest.write_text("a file of the user's\n")
    else:
        dest.mkdir()
        files = {"README.md": "my notes\n", "notes.txt": "mine\n", "claims/s3_mechanism.py": "# edited\n"}
        for name, text in files.items() if kind == "the user's files" else {".notes": "mine\n"}.items():
            (dest / name).parent.mkdir(exist_ok=True)
            (dest / name).write_text(text)
    before = tree(dest) if dest.is_dir() else dest.read_bytes()
    r = install(bundle_dir, dest, env)
    assert r.returncode == 4 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert ("holds files" if dest.is_dir() else "exists and is not a folder") in r.stderr, r.stderr
    assert (tree(dest) if dest.is_dir() else dest.read_bytes()) == before  # nothing overwritten, nothing added
    assert not (tmp / "pip.log").exists()


def test_a_finished_install_is_said_and_left_alone(node):
    bundle_dir, env, tmp = node
    dest = tmp / "node1"
    dest.mkdir()  # an empty folder of the user's is a destination
    r = install(bundle_dir, dest, env)
    assert r.returncode == 0, r.stderr
    assert (dest / "README.md").read_text() == "the bundle's README\n" and (dest / ".venv/.abspos-installed").is_file()
    assert not (dest / bundle_installer.UNFINISHED).exists()
    assert (tmp / "node-cache" / "tokenizer-sources" / "tok.model").is_file()
    # pip saw the bundle alone: no PIP_* of the node's but the configuration file switched off
    assert (tmp / "pip.log.env").read_text().split() == ["PIP_CONFIG_FILE=/dev/null"] * 3
    assert all("--no-index --find-links" in line for line in (tmp / "pip.log").read_text().splitlines())
    (dest / "README.md").write_text("edited on the node\n")
    (tmp / "pip.log").unlink()
    r = install(bundle_dir, dest, env)  # B8: run twice
    assert r.returncode == 0 and "already installed from this bundle" in r.stderr, r.stderr
    assert (dest / "README.md").read_text() == "edited on the node\n" and not (tmp / "pip.log").exists()
    other = synthetic_bundle(tmp / "other", requirements="x==2.0\n")
    r = install(other, dest, env)
    assert r.returncode == 4 and "holds an install of another bundle" in r.stderr, r.stderr
    assert (dest / "README.md").read_text() == "edited on the node\n"


def test_the_default_destination_is_not_taken_for_a_file_of_the_bundle(node):
    bundle_dir, env, tmp = node
    r = subprocess.run(["bash", str(bundle_dir / "install.sh")], capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode == 0 and (bundle_dir / "abspos-claims" / ".venv" / ".abspos-installed").is_file(), r.stderr
    r = subprocess.run(["bash", str(bundle_dir / "install.sh")], capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode == 0 and "already installed from this bundle" in r.stderr, r.stderr
    assert install(bundle_dir, tmp / "another", env).returncode == 0  # the default's install is no file of the bundle


@pytest.mark.parametrize("cache", ["a file", "below a file"])
def test_a_bad_cache_is_one_line_before_any_work(node, cache):
    bundle_dir, env, tmp = node
    (tmp / "hostname").write_text("a file\n")
    env["ABSPOS_CACHE"] = str(tmp / "hostname") + ("/sub" if cache == "below a file" else "")
    started = time.monotonic()
    r = install(bundle_dir, tmp / "node7", env)
    assert r.returncode == 4 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert f"ABSPOS_CACHE={env['ABSPOS_CACHE']}: {tmp / 'hostname'} is a file, not a folder" in r.stderr, r.stderr
    assert not (tmp / "node7").exists() and not (tmp / "pip.log").exists()  # before the venv, before anything
    assert time.monotonic() - started < 10
    env["ABSPOS_CACHE"] = str(tmp / "good-cache")
    assert install(bundle_dir, tmp / "node7", env).returncode == 0  # the re-run with a good cache installs


@pytest.mark.parametrize("name", ["SIGTERM", "SIGHUP", "SIGINT"])
def test_a_stop_ends_install_and_its_pip_child(node, name):
    bundle_dir, env, tmp = node
    dest = tmp / "node8"
    proc = start_install(bundle_dir, dest, {**env, "FAKE_PIP": "hang"})
    try:
        wait_for(lambda: len(pids_in(tmp / "pip.pids")) == 2, what="pip to start")
        pip, its_child = pids_in(tmp / "pip.pids")
        os.kill(proc.pid, SIGNALS[name])
        rc, lines = finish(proc)
    finally:
        end([*pids_in(tmp / "pip.pids")])
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert rc == 128 + SIGNALS[name], lines
    assert len(said(lines, "[install]")) == 1 and "Traceback" not in "\n".join(lines), lines
    assert f"interrupted by {name} while installing the dependencies (pip)" in lines[-1], lines
    assert not alive(pip) and not alive(its_child)  # pip and what it started, not only install.sh
    assert not dest.exists()  # what it wrote is removed: no half venv
    time.sleep(0.5)
    assert not dest.exists()  # and nothing is still writing there
    r = install(bundle_dir, dest, env)  # the re-run completes
    assert r.returncode == 0 and (dest / ".venv" / ".abspos-installed").is_file(), r.stderr


def test_a_stop_of_an_install_into_the_users_empty_folder_keeps_the_folder(node):
    bundle_dir, env, tmp = node
    dest = tmp / "mine"
    dest.mkdir(mode=0o750)
    proc = start_install(bundle_dir, dest, {**env, "FAKE_PIP": "hang"})
    try:
        wait_for(lambda: len(pids_in(tmp / "pip.pids")) == 2, what="pip to start")
        os.kill(proc.pid, signal.SIGTERM)
        rc, lines = finish(proc)
    finally:
        end(pids_in(tmp / "pip.pids"))
    assert rc == 143, lines
    assert dest.is_dir() and not any(dest.iterdir()) and dest.stat().st_mode & 0o777 == 0o750


def test_a_failed_step_is_undone_in_one_line(node):
    bundle_dir, env, tmp = node
    r = install(bundle_dir, tmp / "node5", {**env, "FAKE_PIP": "fail"})
    assert r.returncode == 1 and r.stderr.strip().splitlines()[-1] == (
        f"install.sh: stopped: installing the dependencies (pip) failed (exit 1); removed what this run wrote "
        f"({tmp / 'node5'})"
    ), r.stderr
    assert not (tmp / "node5").exists()
    assert install(bundle_dir, tmp / "node5", env).returncode == 0  # nothing left in the way of the re-run


def test_a_killed_install_is_named_on_the_rerun(node):
    bundle_dir, env, tmp = node
    dest = tmp / "node9"
    proc = start_install(bundle_dir, dest, {**env, "FAKE_PIP": "hang"})
    try:
        wait_for(lambda: len(pids_in(tmp / "pip.pids")) == 2, what="pip to start")
        os.kill(proc.pid, signal.SIGKILL)  # nothing can be cleaned up: the marker says what happened
        proc.wait(timeout=30)
    finally:
        end(pids_in(tmp / "pip.pids"))  # pip, in a session of its own, outlives a SIGKILL of install.sh
        proc.stderr.close()
    r = install(bundle_dir, dest, env)
    assert r.returncode == 4 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "holds an install that never finished" in r.stderr and f"rm -rf {dest}" in r.stderr, r.stderr
    assert (dest / bundle_installer.UNFINISHED).exists()  # left as it was for the user to remove


def test_a_stop_while_the_venv_is_built_ends_ensurepip(node):
    """A second construction: a real ``python -m venv``, stopped while its ensurepip (a child) installs pip."""
    bundle_dir, env, tmp = node
    dest = tmp / "real"
    env = {**env, "PYTHON": sys.executable}
    proc = start_install(bundle_dir, dest, env)
    try:
        wait_for(lambda: any("ensurepip" in cmd for cmd in commands_with(str(dest))), what="ensurepip to start")
        os.kill(proc.pid, signal.SIGTERM)
        rc, lines = finish(proc)
    finally:
        end(running_with(str(dest)))
    assert rc == 143 and f"interrupted by SIGTERM while building {dest}/.venv" in lines[-1], lines
    assert running_with(str(dest)) == [] and not dest.exists()


def commands_with(text: str) -> list[str]:
    out = []
    for pid in running_with(text):
        try:
            out.append(Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"))
        except OSError:
            continue
    return out


# ---- abspos-claims bundle, with a stand-in pip -----------------------------------------------------------

FAKE_PIP = r"""
import os, signal, subprocess, sys, time
args = sys.argv[1:]
into = args[args.index("-d") + 1]
mode = os.environ["FAKE_PIP"]
if mode == "fail":
    print("ERROR: No matching distribution found for x==1.0", file=sys.stderr)
    print("WARNING: Location 'file:///opt/index/x/' is ignored: it is neither a file nor a directory.", file=sys.stderr)
    sys.exit(1)
if mode == "killed":
    print("WARNING: Location 'file:///opt/index/x/' is ignored: it is neither a file nor a directory.", file=sys.stderr)
    sys.stderr.flush()
    os.kill(os.getpid(), signal.SIGKILL)
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
with open(os.environ["FAKE_PIDS"] + ".part", "w") as f:
    f.write(f"{os.getpid()} {child.pid}")
os.replace(os.environ["FAKE_PIDS"] + ".part", os.environ["FAKE_PIDS"])
n = 0
while True:  # pip writing wheels: a survivor would bring the folder back
    os.makedirs(into, exist_ok=True)
    open(os.path.join(into, f"w{n}-1.0-py3-none-any.whl"), "wb").close()
    n += 1
    time.sleep(0.05)
"""

DRIVER = """import sys
import harness.bundle
harness.bundle.PIP = (sys.executable, sys.argv[1])
from harness import cli
sys.exit(cli.main(["bundle", *sys.argv[2:]]))
"""


@pytest.fixture
def builder(tmp_path):
    """Start ``abspos-claims bundle ARGS`` with pip replaced by a stand-in (FAKE_PIP: fail, killed, hang)."""
    fake = tmp_path / "fake_pip.py"
    fake.write_text(FAKE_PIP)
    empty = tmp_path / "no-index"
    empty.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    # were pip not replaced (f45f170), it would find nothing and fail at once, offline
    env |= {"PYTHONPATH": str(ROOT), "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(empty), "PIP_CONFIG_FILE": os.devnull}
    env |= {"FAKE_PIDS": str(tmp_path / "pip.pids")}

    def start(*args, mode: str, cwd: Path = tmp_path) -> subprocess.Popen:
        return subprocess.Popen(
            [sys.executable, "-c", DRIVER, str(fake), *map(str, args)],
            cwd=cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**env, "FAKE_PIP": mode},
            start_new_session=True,
        )

    return start


def test_a_failed_build_keeps_the_users_folder(builder, tmp_path):
    mine = tmp_path / "emptyout"
    mine.mkdir(mode=0o750)
    rc, lines = finish(builder("--out", mine, "--models", "none", mode="fail"))
    assert rc == 1 and said(lines, "[bundle]") == [
        "abspos-claims: bundle: pip download failed: ERROR: No matching distribution found for x==1.0"
    ], lines
    assert mine.is_dir() and not any(mine.iterdir()) and mine.stat().st_mode & 0o777 == 0o750
    made = tmp_path / "new" / "deeper"  # folders the build made itself: all removed
    rc, lines = finish(builder("--out", made, "--models", "none", mode="fail"))
    assert rc == 1 and not (tmp_path / "new").exists(), lines


def test_pips_error_is_the_real_one(builder, tmp_path):
    rc, lines = finish(builder("--out", tmp_path / "b", "--models", "none", mode="killed"))
    assert rc == 1 and said(lines, "[bundle]") == [
        "abspos-claims: bundle: pip download failed: pip was killed by SIGKILL"
    ], lines


@pytest.mark.parametrize("name, mine", [("SIGTERM", False), ("SIGHUP", False), ("SIGINT", False), ("SIGTERM", True)])
def test_a_stop_ends_bundle_and_its_pip_child(builder, tmp_path, name, mine):
    out = tmp_path / "bundleP"
    if mine:
        out.mkdir()
    proc = builder("--out", out, "--models", "none", mode="hang")
    try:
        wait_for(lambda: (tmp_path / "pip.pids").exists(), what="pip download to start")
        pip, its_child = pids_in(tmp_path / "pip.pids")
        wait_for(lambda: any(out.rglob("*.whl")), what="the first wheel")
        os.kill(proc.pid, SIGNALS[name])
        rc, lines = finish(proc)
    finally:
        end(pids_in(tmp_path / "pip.pids"))
    assert rc == 128 + SIGNALS[name], lines
    assert "Traceback" not in "\n".join(lines) and said(lines, "[bundle]") == [
        f"abspos-claims: bundle: interrupted by {name}: stopped, and removed what it wrote in {out}"
        + ("; the folder is yours: kept, empty" if mine else "")
    ], lines
    assert not alive(pip) and not alive(its_child)
    time.sleep(0.3)  # nothing still writing brings a wheel back
    assert (out.is_dir() and not any(out.iterdir())) if mine else not out.exists()


def test_a_killed_build_is_named_on_the_rerun(builder, tmp_path):
    out = tmp_path / "bundleK"
    proc = builder("--out", out, "--models", "none", mode="hang")
    try:
        wait_for(lambda: (tmp_path / "pip.pids").exists(), what="pip download to start")
        pip, its_child = pids_in(tmp_path / "pip.pids")
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        wait_for(lambda: not alive(pip), timeout=15, what="pip to end with its parent")
    finally:
        end(pids_in(tmp_path / "pip.pids"))
        proc.communicate()
    rc, lines = finish(builder("--out", out, "--models", "none", mode="fail"))
    assert rc == 4 and lines == [
        f"abspos-claims: --out {out}: holds a bundle whose build never finished (it was killed); remove it "
        f"(rm -rf {out}) and run again"
    ], lines


def test_an_out_inside_the_checkout_is_refused(builder):
    name = f"offline-bundle-{uuid.uuid4().hex[:8]}"
    try:
        rc, lines = finish(builder("--out", name, "--models", "none", mode="fail", cwd=ROOT))
        assert rc == 4 and len(lines) == 1, lines
        assert f"--out {name}: inside this checkout ({ROOT}), so the bundle would pack itself" in lines[0]
        assert not (ROOT / name).exists()
    finally:
        shutil.rmtree(ROOT / name, ignore_errors=True)


def test_the_checkout_packs_neither_the_bundle_nor_secrets(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(repo)]
    subprocess.run([*git, "init", "-q"], check=True)
    for name in ("a.py", ".env.example", "b.py", ".env", "private/id_rsa", "ob/wheels/x-1.0-py3-none-any.whl"):
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text("HF_TOKEN=hf_secret\n" if "env" in name else "x\n")
    subprocess.run([*git, "add", "a.py", ".env.example"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "x"], check=True)
    assert bundle.project_files(repo, out=repo / "ob") == [".env.example", "a.py", "b.py"]
    assert bundle.untracked_secrets(repo) == [".env", "private/id_rsa"]


@pytest.mark.parametrize(
    "args, message",
    [
        (["--out", "{file}"], "exists and is not an empty folder"),
        (["--out", "{file}/x"], "afile is a file, not a folder"),
        (["--out", "{tmp}/x", "--models", "smollm2-135m,../../etc"], "--models ../../etc: not a model"),
    ],
)
def test_a_bad_out_or_model_is_one_line(tmp_path, capsys, args, message):
    (tmp_path / "afile").write_text("kept\n")
    args = [a.format(file=tmp_path / "afile", tmp=tmp_path) for a in args]
    assert cli.main(["bundle", *args]) == 4
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err
    assert (tmp_path / "afile").read_text() == "kept\n" and not (tmp_path / "x").exists()


@pytest.mark.skipif(shutil.which("shellcheck") is None, reason="shellcheck is not installed here")
@pytest.mark.parametrize("torch", bundle.TORCH_MODES)
def test_the_installer_passes_shellcheck(tmp_path, torch):
    path = bundle_installer.write_installer(tmp_path, bundle.this_python(), torch)
    r = subprocess.run(["shellcheck", str(path)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout
