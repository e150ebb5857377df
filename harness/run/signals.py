"""How a claims run ends when it is told to stop: SIGINT, SIGTERM and SIGHUP all end it the way Ctrl-C does.

In the pytest process that owns the records (the xdist controller, or a plain run), ``Interrupts`` turns the first of
those signals into a ``KeyboardInterrupt``: pytest then ends the session as for Ctrl-C, ``pytest_sessionfinish``
still runs, and what finished is written, marked as interrupted by that signal (harness.run.records). A second delivery of
the same stop within ``REPEAT_WINDOW`` seconds is the same request (a terminal's Ctrl-C reaches the whole process
group, and a parent that forwards it sends it again) and is ignored; a later one interrupts again (whatever is being
written then is abandoned, never left half-written: harness.files.atomic). The run's end (results.json, the report,
the summary) is one ``deferred()`` block: a stop there is noted and acted on at the block's checkpoints (``check``),
never raised in the middle of a write. A signal this process ignored when it started (``nohup``, a background job's
SIGINT) stays ignored.

``abspos-claims run`` and ``verify()`` start pytest as a child: ``forwarding`` passes those signals on to it, and the
caller waits for it to write what finished; ``stop`` ends a child the caller no longer waits for (SIGINT, then
SIGKILL only if it does not end within ``STOP_WAIT`` seconds). On Linux a child pytest started by them, and every
xdist worker, is also told by the kernel when its parent dies (``guard_orphans``): none is ever left running alone.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
import types

STOP_SIGNALS = tuple(s for s in (getattr(signal, n, None) for n in ("SIGINT", "SIGTERM", "SIGHUP")) if s is not None)
REPEAT_WINDOW = 2.0  # seconds: a second delivery of a stop within this is the same request
STOP_WAIT = 120.0  # seconds a stopped child gets to write what finished before it is killed
PARENT_ENV = "ABSPOS_PARENT_PID"  # set by cli/api for their child pytest: it ends when that parent dies


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


class Interrupts:
    """SIGINT, SIGTERM and SIGHUP as a KeyboardInterrupt, remembering which came first (``by``, e.g. "SIGTERM")."""

    def __init__(self, on_first=None):
        self.by: str | None = None
        self.at = 0.0
        self.on_first = on_first  # called with the signal's name before the KeyboardInterrupt is raised
        self.previous: dict = {}
        self.deferring = False  # inside ``deferred()``: a stop is noted, not raised
        self.deferred_by: str | None = None  # the first stop that came while deferring (the run's end had begun)

    @contextlib.contextmanager
    def deferred(self):
        """While the block runs, a stop signal is noted (``deferred_by``, and ``by`` if it is the first) but raises
        nothing: what the block writes (a run's results.json) is always written whole; the caller then sees
        ``deferred_by`` and stops."""
        before, self.deferring = self.deferring, True
        try:
            yield self
        finally:
            self.deferring = before

    def check(self) -> None:
        """A checkpoint of a deferred block (``harness.report.write.build``): raises the KeyboardInterrupt of a stop
        that came while deferring, here, at a line of the caller's choosing, never in the middle of a write."""
        if self.deferred_by is not None:
            raise KeyboardInterrupt(f"interrupted by {self.deferred_by}")

    def install(self) -> "Interrupts":
        if not _main_thread():  # signal handlers belong to the main thread (pytest run inside a thread: left alone)
            return self
        for sig in STOP_SIGNALS:
            try:
                if signal.getsignal(sig) is signal.SIG_IGN:  # nohup, or a background job's SIGINT
                    continue
                self.previous[sig] = signal.signal(sig, self._handle)
            except (ValueError, OSError):
                pass
        return self

    def restore(self) -> None:
        for sig, handler in self.previous.items():
            with contextlib.suppress(ValueError, OSError, TypeError):
                signal.signal(sig, handler if handler is not None else signal.SIG_DFL)
        self.previous = {}

    def _handle(self, signum, frame):
        name = signal.Signals(signum).name
        now = time.monotonic()
        if self.by is None:
            self.by, self.at = name, now
            if self.on_first is not None:
                self.on_first(name)
            if self.deferring:
                self.deferred_by = name
                return
            raise KeyboardInterrupt(f"interrupted by {name}")
        if now - self.at < REPEAT_WINDOW:
            return  # the same stop, delivered twice
        self.at = now
        if self.deferring:
            self.deferred_by = self.deferred_by or name
            return
        raise KeyboardInterrupt(f"interrupted again by {name}")


def mend_tracebacks(exc: BaseException | None) -> None:
    """Give every traceback entry of ``exc``, and of each exception it chains, a line number.

    A signal can arrive while CPython (3.11+) runs an instruction that has no line of its own (a ``with`` block's
    exit, an ``except`` clean-up); the KeyboardInterrupt raised by ``Interrupts`` then carries a traceback entry
    whose ``tb_lineno`` is None, and pytest's report of the interrupt fails on it with a TypeError: the run ended
    with exit code 1 and an internal traceback instead of "interrupted" (pytest-dev/pytest-xdist#1196). Such an
    entry is replaced by one at its frame's last line (or its code's first line); every other entry is kept."""
    stack, seen = [exc], set()
    while stack:
        exc = stack.pop()
        if exc is None or id(exc) in seen:
            continue
        seen.add(id(exc))
        exc.__traceback__ = _mended(exc.__traceback__)
        stack += [exc.__cause__, exc.__context__]


def _mended(tb: types.TracebackType | None) -> types.TracebackType | None:
    entries = []
    while tb is not None:
        entries.append(tb)
        tb = tb.tb_next
    after = None
    for entry in reversed(entries):
        if entry.tb_lineno is None:
            frame = entry.tb_frame
            entry = types.TracebackType(after, frame, entry.tb_lasti, frame.f_lineno or frame.f_code.co_firstlineno)
        elif entry.tb_next is not after:
            entry.tb_next = after
        after = entry
    return after


def die_with_parent(sig: int = signal.SIGTERM) -> bool:
    """Ask the kernel (Linux) to send ``sig`` to this process when its parent dies; False where that is unavailable."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True).prctl(1, int(sig), 0, 0, 0) == 0  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return False


def guard_orphans(worker: bool) -> None:
    """An xdist worker ends when its controller dies; a pytest started by ``abspos-claims run`` or ``verify()``
    (``PARENT_ENV``) gets SIGTERM when that parent dies, and so still writes what finished."""
    if worker:
        die_with_parent(signal.SIGTERM)
    elif os.environ.get(PARENT_ENV) == str(os.getppid()):
        die_with_parent(signal.SIGTERM)


def child_env(env: dict | None = None) -> dict:
    """The environment of a child pytest that should end with this process."""
    return {**(os.environ if env is None else env), PARENT_ENV: str(os.getpid())}


@contextlib.contextmanager
def forwarding(proc: subprocess.Popen):
    """While the block runs (in the main thread), SIGINT, SIGTERM and SIGHUP sent to this process are passed on to
    ``proc`` instead of acting here; yields the list of signals received, so the caller, once ``proc`` has ended,
    can say how it ended. Signals this process ignores stay ignored."""
    received: list[int] = []

    def forward(signum, frame):
        received.append(signum)
        with contextlib.suppress(OSError):
            proc.send_signal(signum)

    previous = {}
    if _main_thread():
        for sig in STOP_SIGNALS:
            try:
                if signal.getsignal(sig) is not signal.SIG_IGN:
                    previous[sig] = signal.signal(sig, forward)
            except (ValueError, OSError):
                pass
    try:
        yield received
    finally:
        for sig, handler in previous.items():
            with contextlib.suppress(ValueError, OSError, TypeError):
                signal.signal(sig, handler if handler is not None else signal.SIG_DFL)


def stop(proc: subprocess.Popen, wait: float = STOP_WAIT) -> int | None:
    """End a child the caller stops waiting for: SIGINT (it writes what finished, like Ctrl-C), then SIGKILL if it
    has not ended within ``wait`` seconds; returns its exit code."""
    if proc.poll() is None:
        with contextlib.suppress(OSError):
            proc.send_signal(signal.SIGINT)
        try:
            return proc.wait(timeout=wait)
        except BaseException:
            proc.kill()
            return proc.wait()
    return proc.returncode


def exit_code(returncode: int) -> int:
    """A child's return code as a shell reports it: a death by signal N is 128 + N."""
    return 128 - returncode if returncode < 0 else returncode
