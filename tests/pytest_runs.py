"""The one way the harness's tests start a pytest of their own: ``pytest_argv`` builds its command line, ``run_pytest``
runs it to the end (output captured, text), ``start_pytest`` starts it and hands back the process.

The run's target defaults to the claims (``claims``, from the repository root); a crafted claim file outside
``claims/`` passes ``target`` and ``plugin=True`` (there is no conftest.py beside it to load the harness's plugin) and
usually ``rootdir``. pytest's cache is always off: a test never leaves state behind for the next run.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable


def pytest_argv(
    *args: str,
    target: str | Path | None = "claims",
    plugin: bool = False,
    rootdir: Path | None = None,
    python: str | Path = PY,
) -> list[str]:
    """``python -m pytest <target> -p no:cacheprovider [-p harness.run.plugin] [--rootdir DIR] <args>``; ``python``
    another interpreter (an installed checkout's venv); ``target`` None: none (pytest's testpaths)."""
    argv = [str(python), "-m", "pytest", *([str(target)] if target is not None else []), "-p", "no:cacheprovider"]
    if plugin:
        argv += ["-p", "harness.run.plugin"]
    if rootdir is not None:
        argv += ["--rootdir", str(rootdir)]
    return [*argv, *args]


def run_pytest(
    *args: str,
    target: str | Path | None = "claims",
    plugin: bool = False,
    rootdir: Path | None = None,
    cwd: Path = ROOT,
    env: dict | None = None,
    timeout: float = 300,
    python: str | Path = PY,
    **run_options,
) -> subprocess.CompletedProcess:
    """Run pytest on ``target`` with ``args`` to its end; ``env`` is the whole environment (None: this process's)."""
    return subprocess.run(
        pytest_argv(*args, target=target, plugin=plugin, rootdir=rootdir, python=python),
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        **run_options,
    )


def run_crafted_file(target: Path, *args: str, **run_options) -> subprocess.CompletedProcess:
    """Run a crafted claim file outside ``claims/`` to its end: the harness's plugin loaded, the file's folder its
    rootdir and working directory, this checkout importable."""
    return run_pytest(
        *args,
        target=target,
        plugin=True,
        rootdir=target.parent,
        cwd=target.parent,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        **run_options,
    )


def start_pytest(
    *args: str,
    target: str | Path = "claims",
    cwd: Path = ROOT,
    env: dict | None = None,
    **popen_options,
) -> subprocess.Popen:
    """Start pytest on ``target`` with ``args`` and return at once (text mode; pass stdout/stderr as needed)."""
    return subprocess.Popen(pytest_argv(*args, target=target), cwd=cwd, env=env, text=True, **popen_options)
