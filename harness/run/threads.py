"""CPU threads per process: the cores free when a run starts, shared by its pytest-xdist workers.

- ``busy_cores``: the cores of this process's affinity busy with other work right now (from /proc/stat).
- ``thread_count``: threads per process = free cores / workers, at least one.
- ``requested_threads``: what ``--threads`` or ``$ABSPOS_THREADS`` asks for (0: the free cores decide).
- ``set_threads``: torch's intra-op threads and every BLAS/OpenMP pool to that count.
- ``configure``: a pytest process's threads, from its options, its environment and its xdist worker count.
"""

from __future__ import annotations

import os
import time

import pytest
import torch

from harness.model.devices import DeviceError

_LIMITS: list = []  # the threadpoolctl limit in force (kept alive: dropping it would not restore anything)


def busy_cores(interval: float = 0.25) -> float:
    """Cores busy with other work right now (from /proc/stat over ``interval`` seconds; 0 where unreadable)."""
    mine = {f"cpu{c}" for c in os.sched_getaffinity(0)} if hasattr(os, "sched_getaffinity") else None

    def sample():  # per CPU of this process's affinity: (idle + iowait, all) jiffies
        with open("/proc/stat") as f:
            rows = [line.split() for line in f if line.startswith("cpu") and line[3].isdigit()]
        rows = [[int(v) for v in r[1:]] for r in rows if mine is None or r[0] in mine]
        return sum(r[3] + r[4] for r in rows), sum(sum(r) for r in rows), len(rows)

    try:
        idle0, total0, cores = sample()
        time.sleep(interval)
        idle1, total1, _ = sample()
    except (OSError, ValueError, IndexError):
        return 0.0
    return cores * (1 - (idle1 - idle0) / max(total1 - total0, 1))


def thread_count(cores: int, busy: float, workers: int) -> int:
    """Threads per process: the cores not busy with other work, shared by the pytest-xdist workers, at least one.
    Two threads on a core another process keeps busy spin-wait: 1.6-13x slower than one (measured; METHODS.md,
    "Threads")."""
    return max(1, int(max(1.0, cores - round(busy)) // max(workers, 1)))


def requested_threads(option: int | None, env: str | None) -> int:
    """The threads asked for by ``--threads`` (``option``), else ``$ABSPOS_THREADS`` (``env``); 0: not asked (the free
    cores decide). A negative count or a variable that is not a whole number is a DeviceError (one line)."""
    if option:
        if option < 0:
            raise DeviceError(
                f"--threads {option}: must be a positive number of CPU threads per process (0 or "
                f"unset: the free cores divided by the xdist workers)"
            )
        return option
    text = (env or "").strip()
    if not text:
        return 0
    try:
        n = int(text)
    except ValueError:
        n = -1
    if n < 0:
        raise DeviceError(
            f"ABSPOS_THREADS={env!r}: must be a whole number of CPU threads per process (0 or unset: "
            f"the free cores divided by the xdist workers)"
        )
    return n


def set_threads(n: int) -> None:
    """torch's intra-op threads and every BLAS/OpenMP pool (numpy's OpenBLAS, scikit-learn's) to ``n``."""
    from threadpoolctl import threadpool_limits

    torch.set_num_threads(n)
    _LIMITS[:] = [threadpool_limits(limits=n)]


def configure(config) -> None:
    """Threads per process = free cores / workers: ``--threads`` (or $ABSPOS_THREADS) if given, else the cores
    not busy with other work when the run starts (measured once, by the controller, which hands the figure to its
    xdist workers through the environment) divided by the number of xdist workers."""
    try:
        n = requested_threads(config.getoption("--threads"), os.environ.get("ABSPOS_THREADS"))
    except DeviceError as e:
        raise pytest.UsageError(str(e)) from None
    if not n:
        if "ABSPOS_FREE_CORES" not in os.environ:  # the controller (or a plain run); workers inherit it
            cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
            os.environ["ABSPOS_FREE_CORES"] = str(thread_count(cores, busy_cores(), 1))
        workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", 0) or 0) or 1
        n = thread_count(int(os.environ["ABSPOS_FREE_CORES"]), 0, workers)
    set_threads(n)
