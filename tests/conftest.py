"""Fixtures shared by the harness's own tests."""

import pytest

from harness.spec.models import REGISTRY


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
