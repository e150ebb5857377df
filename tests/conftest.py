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
