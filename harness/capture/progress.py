"""Status lines of the captures on the terminal.

``Progress`` is where a run's lines go and whether they are shown; its owner creates one (the pytest plugin, per run;
a ``Session`` its own by default) and hands it to each capture, which starts a ``ProgressLine`` for its prompts.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Callable


class Progress:
    """Where the status lines of captures go: ``write`` (stderr when None; the pytest plugin writes to pytest's
    terminal past its output capture, so a normal ``pytest claims`` run shows progress as it goes), ``tty`` whether
    that is a terminal (lines rewritten in place; None: whether stderr is one), ``enabled`` (off when the caller says
    so: the run context is quiet under CI; ABSPOS_PROGRESS=0 turns every line off)."""

    QUIET_BELOW = 2.0  # seconds: captures shorter than this show nothing ($ABSPOS_PROGRESS_AFTER overrides)

    def __init__(self, write: Callable[[str], None] | None = None, tty: bool | None = None, enabled: bool = True):
        self.write, self.tty, self.enabled = write, tty, enabled

    def start(self, label: str, total: int) -> ProgressLine:
        """The status of one capture of ``total`` prompts, starting now."""
        return ProgressLine(self, label, total)


class ProgressLine:
    """Status of one capture: on a terminal, one line updated per batch (model, what, prompts done, time left) and
    left as a summary when done; elsewhere (a log file) the summary line alone; nothing for a capture done within
    ``Progress.QUIET_BELOW`` seconds."""

    def __init__(self, progress: Progress, label: str, total: int):
        self.progress = progress
        self.label, self.total, self.t0, self.shown = label, total, time.time(), False
        self.quiet_below = float(os.environ.get("ABSPOS_PROGRESS_AFTER", Progress.QUIET_BELOW))
        self.enabled = progress.enabled and os.environ.get("ABSPOS_PROGRESS", "1") != "0"

    def update(self, done: int) -> None:
        if not self.enabled:
            return
        write = self.progress.write or _stderr
        tty = sys.stderr.isatty() if self.progress.tty is None else self.progress.tty
        el = time.time() - self.t0
        if el < self.quiet_below and not self.shown:
            return  # a short capture says nothing (dozens of them would bury the test dots)
        self.shown = True
        if done >= self.total:
            write(
                f"\r[abspos] {self.label}: {self.total} prompts in {el:.1f}s\x1b[K\n"
                if tty
                else f"[abspos] {self.label}: {self.total} prompts in {el:.1f}s\n"
            )
        elif tty:
            left = el / done * (self.total - done) if done else 0.0
            write(f"\r[abspos] {self.label}: {done}/{self.total} prompts, {el:.0f}s, ~{left:.0f}s left\x1b[K")


def _stderr(text: str) -> None:
    sys.stderr.write(text)
    sys.stderr.flush()
