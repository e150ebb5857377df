"""``abspos-claims run``: the claims run by pytest in a subprocess, with the suite's own options listed (their
defaults from the one declaration pytest reads, harness/run/options.py) and a misspelt option named before any work.
Importing this module loads neither torch, transformers nor pytest."""

from __future__ import annotations

import argparse
import contextlib
import difflib
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Sequence

from harness.api import RunFailed, as_names, pytest_argv
from harness.files import checkout
from harness.files.paths import ROOT
from harness.run import signals
from harness.run.options import pytest_options, suite_options
from harness.spec.claims import CLAIMS, UnknownClaim

PROG = "abspos-claims"
USAGE_ERROR = 4  # pytest's exit code for a usage error


def fail(message: str, code: int = USAGE_ERROR) -> int:
    """One line on stderr, and the exit code."""
    print(f"{PROG}: {message}", file=sys.stderr)
    return code


class RunParser(argparse.ArgumentParser):
    """A bad value of one of the suite's options is a usage error as pytest's are: one line, exit 4."""

    def error(self, message: str):
        self.exit(USAGE_ERROR, f"{self.prog}: {message}\n")


def run_parser() -> argparse.ArgumentParser:
    p = RunParser(
        prog=f"{PROG} run",
        allow_abbrev=False,
        description="Run the claims: `python -m pytest claims` in a subprocess, returning pytest's exit code. "
        "Options not listed here go to pytest unchanged (-n 2 --dist loadgroup, -m, -k, -x, ...).",
        epilog=f"pytest's own options: `{PROG} run -- --help`. Claim ids: {', '.join(CLAIMS)}.",
    )
    p.add_argument(
        "--models",
        metavar="M",
        help="comma list of model names, groups (bundled, paper, all) or references "
        "(hf:<org>/<name>[@<rev>], path:<folder>, gguf:<file>); "
        "default: the suite's (bundled,paper)",
    )
    p.add_argument(
        "--claims",
        metavar="IDS",
        help="comma list of claim ids (as METHODS.md lists them) or selections (core: the headline claims): run "
        "only their tests",
    )
    suite = p.add_argument_group("the suite's options (passed on to pytest)")
    for names, kw in suite_options():
        if names[0] == "--models":
            continue
        kind = {k: v for k, v in kw.items() if k in ("type", "choices", "action")}
        if "action" not in kw:
            kind["metavar"] = names[0].lstrip("-").split("-")[-1].upper()
        suite.add_argument(
            *names,
            **kind,
            default=argparse.SUPPRESS,  # only what is given is passed on: pytest applies the defaults
            help=kw.get("help", "").replace("%", "%%") + default_text(kw),
        )
    return p


def default_text(option: dict) -> str:
    """ " (default: …)" for an option whose help does not say it already (a path relative to the repository)."""
    value = option.get("default")
    if value is None or value is False or "default" in option.get("help", ""):
        return ""
    shown = Path(value).relative_to(ROOT) if isinstance(value, str) and value.startswith(str(ROOT)) else value
    return f" (default: {shown})"


def passed_on(args: argparse.Namespace) -> list[str]:
    """The suite's options given on the command line, as pytest reads them."""
    out = []
    for names, kw in suite_options():
        dest = names[0].lstrip("-").replace("-", "_")
        if names[0] != "--models" and hasattr(args, dest):
            out += [names[0]] if kw.get("action") == "store_true" else [names[0], str(getattr(args, dest))]
    return out


def unknown_option(rest: Sequence[str]) -> str | None:
    """The first option pytest would not know, with the closest known one, or None. An option's value is never read
    as an option (``-k --x``); with ``-p`` a plugin may add options of its own, so nothing is refused."""
    if "-p" in rest or any(a.startswith("-p") and len(a) > 2 for a in rest):
        return None
    known, valued = pytest_options() if any(a.startswith("--") for a in rest) else (set(), set())
    args = iter(rest)
    for arg in args:
        name = arg.split("=")[0]
        if name in valued and "=" not in arg:
            next(args, None)  # its value
        elif known and arg.startswith("--") and name not in known:
            close = difflib.get_close_matches(name, ["--models", "--claims", *sorted(known)], 1, 0.75)
            hint = f", did you mean {close[0]}?" if close else ""
            return f"unknown option {name}{hint} (`{PROG} run --help` lists the suite's, `-- --help` pytest's)"
    return None


def call(argv: Sequence[str]) -> int:
    """Run a command in the caller's folder (its relative paths are the caller's), its output on this terminal, this
    checkout's harness first on its PYTHONPATH (harness.files.checkout); its exit code says how it ended. SIGINT,
    SIGTERM and SIGHUP sent to this command are passed on to it (it writes what finished and says it was
    interrupted: exit 2), and this command waits for it: it is never left running alone (on Linux it also gets
    SIGTERM should this command die: harness.run.signals)."""
    proc = subprocess.Popen(list(argv), env=signals.child_env(checkout.pythonpath(ROOT, os.environ)))  # this harness
    with signals.forwarding(proc):
        while True:
            try:
                return signals.exit_code(proc.wait())
            except KeyboardInterrupt:  # not the main thread: no forwarding handler, so pass it on ourselves
                with contextlib.suppress(OSError):
                    proc.send_signal(signal.SIGINT)


def run_command(argv: Sequence[str]) -> int:
    args, rest = run_parser().parse_known_args(argv)
    if "--" in rest:  # `run -- --help`: what follows is pytest's alone
        rest = rest[: rest.index("--")] + rest[rest.index("--") + 1 :]
    elif problem := unknown_option(rest):
        return fail(problem)
    if args.claims is not None and not as_names(args.claims):
        return fail(f"--claims {args.claims!r}: no claim id given; choose from {', '.join(CLAIMS)}")
    try:
        command = pytest_argv(args.models, args.claims, [*passed_on(args), *rest])
    except UnknownClaim as e:
        return fail(f"--claims: {e}")
    except RunFailed as e:  # --models naming no model, or --claims none of them can run
        return fail(str(e) if str(e).startswith("--") else f"--{e}")
    return call(command)
