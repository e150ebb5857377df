"""A model whose setup failed: each of its tests ends on the one line that says why, and its snapshots are kept.

When a model cannot be loaded (its weights refused, its tokenizer without the BOS its model expects, a conversion that
failed), every claim test of that model fails its setup on the same error: ``Session.model`` marks it with the model's
name (harness.capture.session.setup_of) and pytest raises it again for each test. Left alone, pytest prints the same
traceback of some 45 lines for each of them, and syrupy, finding the model's committed snapshots unused, closes the run
advising "Re-run pytest with --snapshot-update to delete unused snapshots": advice that, followed, deletes them, though
they are unused only because the model never ran. Here (``SetupFailures``, registered in every process):

- each such test's report reads one line, ``<model>: setup failed: <Type>: <message>``; an error that is not one of the
  harness's own one-line refusals keeps its traceback at the first test it ended;
- syrupy is told the test did not run (skipped), so the model's snapshots are neither counted unused (no advice to
  delete them) nor deleted by ``--snapshot-update``;
- the report carries the line as a user property (``PROPERTY``), kept in the test's record as ``setup_failed``: the
  terminal's closing lines and the report's matrix say it once per model (harness.report.matrix.setup_failure_lines).
"""

from __future__ import annotations

import pytest

from harness.capture.session import setup_of

PROPERTY = "abspos_setup_failed"  # the user property a test whose model's setup failed carries: the one line


def one_line(error: BaseException) -> str:
    """``Type: first line of the message``."""
    first = (str(error).strip().splitlines() or [""])[0]
    return f"{type(error).__name__}: {first}" if first else type(error).__name__


def setup_failed(report) -> str | None:
    """The one line a test's report carries when its model's setup failed, else None."""
    return next((v for k, v in getattr(report, "user_properties", ()) if k == PROPERTY), None)


class SetupFailures:
    def __init__(self, config):
        self.config = config
        self.first: dict[str, str] = {}  # model -> the node id of the first test its failed setup ended

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item, call):
        report = yield
        error = call.excinfo.value if call.when == "setup" and call.excinfo is not None else None
        model = setup_of(error)
        if model is None or not report.failed:
            return report
        line = f"{model}: setup failed: {one_line(error)}"
        report.user_properties = [*report.user_properties, (PROPERTY, line)]
        own = type(error).__module__.startswith("harness.")  # the harness's refusals say everything in one line
        first = self.first.setdefault(model, item.nodeid)
        if own or first != item.nodeid:
            report.longrepr = line + ("" if own else f" (its traceback: at {first})")
        return report

    @pytest.hookimpl(trylast=True)  # after syrupy's own hook has recorded the test as failed
    def pytest_runtest_logreport(self, report):
        syrupy = getattr(self.config, "_syrupy", None)
        if report.when == "setup" and setup_failed(report) and hasattr(syrupy, "ran_item"):
            syrupy.ran_item(report.nodeid, "skipped")  # not run: its snapshots are kept, never called unused
