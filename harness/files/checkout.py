"""Which checkout of abspos-claims a command runs: the one it stands in.

A checkout is a folder with this project's ``pyproject.toml`` (its name ``abspos-claims``), ``claims/`` and
``harness/``. The console command is installed from one checkout (an editable install: the ``harness`` it imports);
typed inside another (two clones sharing one venv, say main and a branch), it must run that other one's claims with
that one's harness and write into its ``reports/``: running another clone's claims, or these claims with another
clone's harness, would be a verdict of code nobody asked for. ``decide`` says what to do; the command re-executes
itself with the checkout it stands in first on ``PYTHONPATH`` (Python imports ``harness`` from there before any
installed copy), and the pytest it starts gets the same (``pythonpath``), so the harness imported is always the
claims' own. Outside any checkout it runs the one it is installed from, and says so in its first line.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

PROJECT = "abspos-claims"
#: set on a re-executed command: the checkout it was re-executed to run (a second hop is refused, never a loop)
GUARD = "ABSPOS_CHECKOUT"


def project_name(pyproject: Path) -> str | None:
    try:
        return tomllib.loads(pyproject.read_text()).get("project", {}).get("name")
    except (OSError, ValueError, AttributeError):
        return None


def is_checkout(folder: Path) -> bool:
    """Whether ``folder`` is a checkout of this project: its pyproject's name, ``claims/`` and ``harness/``."""
    return (
        (folder / "claims").is_dir()
        and (folder / "harness" / "__init__.py").is_file()
        and project_name(folder / "pyproject.toml") == PROJECT
    )


def enclosing(start: Path) -> Path | None:
    """The checkout ``start`` is in (itself or its nearest parent that is one), or None."""
    start = start.resolve()
    return next((d for d in (start, *start.parents) if is_checkout(d)), None)


@dataclass(frozen=True)
class Decision:
    root: Path  # the checkout to run
    reexec: bool = False  # run it by re-executing the command with ``root`` first on PYTHONPATH
    note: str | None = None  # the first line a run prints (why this checkout), where it is not the one stood in
    problem: str | None = None  # why no checkout can be run (one line), else None


def decide(installed: Path, cwd: Path, env: Mapping[str, str]) -> Decision:
    """What a command installed from ``installed`` (the checkout its ``harness`` was imported from), typed in
    ``cwd``, runs."""
    installed, here = installed.resolve(), enclosing(cwd)
    if here is None:
        if not is_checkout(installed):
            return Decision(
                installed,
                problem=f"{cwd} is not inside a checkout of {PROJECT}, and this command's harness ({installed}) "
                f"has no claims beside it: run it inside a checkout",
            )
        return Decision(
            installed,
            note=f"running the checkout at {installed} (where this command is installed from): {cwd} is not "
            f"inside a checkout of {PROJECT}",
        )
    if here == installed:
        return Decision(installed)
    if env.get(GUARD) == str(here):  # re-executed for ``here`` and still importing another harness
        return Decision(
            here,
            problem=f"cannot run the checkout at {here} with this interpreter: it imports harness from {installed} "
            f"even with PYTHONPATH={here}; run {here}/.venv/bin/abspos-claims, or PYTHONPATH={here} python -m "
            f"harness.cli",
        )
    return Decision(here, reexec=True)


def pythonpath(root: Path, env: Mapping[str, str]) -> dict[str, str]:
    """``env`` with ``root`` first on PYTHONPATH: the ``harness`` a child Python imports is ``root``'s."""
    rest = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and Path(p).resolve() != root.resolve()]
    return {**env, "PYTHONPATH": os.pathsep.join([str(root), *rest])}


def reexec_argv(executable: str, argv: list[str]) -> list[str]:
    """The command line that runs the console command again, as ``python -m harness.cli``."""
    return [executable, "-m", "harness.cli", *argv]
