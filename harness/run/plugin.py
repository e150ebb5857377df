"""pytest plugin: each hook one call into the run's ``ClaimsSession`` (harness/run/claims_session.py, in
``config.stash``) or a claim test's ``ClaimRun`` (harness/run/claim_run.py, on its item), as syrupy's hooks call into
its ``SnapshotSession``.

Loaded from the root conftest.py. A test taking ``model_name`` runs once per selected model, with the model's family
and group as markers (``-m llama``, ``-m "paper and qwen"``) and an ``xdist_group`` (``-n N --dist loadgroup`` keeps
a model on one worker). Claim applicability (claims/<section>.py) becomes collection-time skips; known outcomes become
strict xfails; after each claim test body the plugin compares its figures with the snapshot and the paper's values.
"""

from __future__ import annotations

import pytest

from harness.capture.session import Session
from harness.outcome.figures import Figures
from harness.run.claims_session import SESSION, ClaimsSession
from harness.run.context import RunContext
from harness.run.options import pytest_addoption  # noqa: F401  (the hook, on this plugin)


def claims_session(config) -> ClaimsSession:
    """The run's session, made in ``pytest_configure``."""
    return config.stash[SESSION]


def pytest_configure(config):
    config.stash[SESSION] = ClaimsSession(config)


@pytest.hookimpl(trylast=True)
def pytest_sessionstart(session):
    claims_session(session.config).start(session)


def pytest_generate_tests(metafunc):
    claims_session(metafunc.config).parametrize(metafunc)


def pytest_collection_modifyitems(config, items):
    claims_session(config).collect(items)


def pytest_collection_finish(session):
    claims_session(session.config).collection_finished(session)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node, ids):
    claims_session(node.config).worker_collected(ids)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item):
    return (yield from claims_session(item.config).setup(item))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    return (yield from claims_session(item.config).call(item))


@pytest.hookimpl(wrapper=True, tryfirst=True)  # outermost: the report as pytest's own hooks (xfail) leave it
def pytest_runtest_makereport(item, call):
    return claims_session(item.config).report(item, call, (yield))


@pytest.fixture(scope="session")
def run_context(request) -> RunContext:
    return claims_session(request.config).run


@pytest.fixture(scope="session")
def selected_models(run_context) -> tuple[str, ...]:
    return run_context.models


@pytest.fixture(scope="session")
def session(run_context, request) -> Session:
    return claims_session(request.config).capture_session()


@pytest.fixture(scope="session")
def model(request, session, model_name):
    """The loaded model, once per model, freed after its tests (``ClaimsSession.model``)."""
    yield from claims_session(request.config).model(session, model_name)


@pytest.fixture
def figures(request, snapshot, run_context) -> Figures:
    """Record the numbers a claim test measured (they go into the run report); the plugin checks them against
    the committed snapshot (bundled models at the default settings) or the recorded baseline (anything else)."""
    return claims_session(request.config).figures(request.node, snapshot)
