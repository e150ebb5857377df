"""Fixtures shared by the harness's own tests."""

import os

import pytest
import scipy.stats  # noqa: F401  (before any pytester run, which restores sys.modules: numpy's extensions load once)

from harness.spec.models import REGISTRY

XDIST_ENV = ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_XDIST_TESTRUNUID")


@pytest.fixture(scope="session", autouse=True)
def standalone_subprocesses():
    """A pytest that a test or a module's fixture starts is a run of its own, also when this suite runs on xdist
    workers: without the worker's variables in its environment (syrupy would take it for a worker and print no
    snapshot report). Its threads are this worker's share of the free cores, as the worker's own: two workers each
    starting a pytest on all the cores would run twice as many threads as cores."""
    with pytest.MonkeyPatch.context() as mp:
        workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", 0) or 0)
        if workers > 1 and "ABSPOS_FREE_CORES" in os.environ:
            from harness.run.threads import thread_count  # the plugin's own share (torch: only under xdist)

            mp.setenv("ABSPOS_FREE_CORES", str(thread_count(int(os.environ["ABSPOS_FREE_CORES"]), 0, workers)))
        for name in XDIST_ENV:
            mp.delenv(name, raising=False)
        yield


@pytest.fixture
def restore_registry():
    """The model registry as the test found it (references and ``register_model`` add entries to it)."""
    before = dict(REGISTRY)
    yield
    REGISTRY.clear()
    REGISTRY.update(before)


def pytest_collection_modifyitems(config, items):
    """A harness test marked ``slow`` (minutes of work that a faster test already covers in part: the whole rehearsal
    tier, end-to-end runs over every bundled model) runs with ``--run-slow`` only, as the claims' slow variants do;
    the default run, CI's, stays under its time budget and the weekly full run (ci.yml) includes them."""
    if config.getoption("--run-slow"):
        return
    skip = pytest.mark.skip(reason="slow harness test: run with --run-slow")
    for item in items:
        if item.get_closest_marker("slow") and item.get_closest_marker("claim") is None:
            item.add_marker(skip)
