"""The records of a run's claim tests: one per test, from the ``ClaimResult`` its report carries (decided where the
test ended, harness.run.claim_run), collected on the xdist controller by ``RecordCollector``, which prints the claims ×
models matrix at the end of the run and writes the results and the report (harness.report.write).
"""

from __future__ import annotations

import sys
from collections import Counter
from dataclasses import replace

import pytest

from harness.outcome import stability
from harness.outcome.claim_result import ClaimResult
from harness.outcome.nodeid import parse
from harness.outcome.results import loaded, target_of
from harness.outcome.verdict import Verdict
from harness.report.matrix import setup_failure_lines, text_matrix, totals_line
from harness.report.write import write_run
from harness.run import signals, terminal
from harness.run.context import RunContext
from harness.run.setup_failures import setup_failed
from harness.spec.claims import CLAIMS
from harness.spec.models import REGISTRY


def claim_of(nodeid: str) -> dict:
    """{"claim", "model"} of a claim test from its node id alone (the selection an xdist controller sees, and the
    report an xdist worker that crashed sends without the test's result), or {} for any other test."""
    test = parse(nodeid)
    cid = next((c.id for c in CLAIMS.values() if test.function in c.tests), None)
    return {"claim": cid, "model": test.param if test.param in REGISTRY else None} if cid else {}


#: the exit code of a run in which a claim test ended in a harness error (a crash, a snapshot drift, a model that did
#: not load): pytest's 1 is kept for a verdict that differs from its record (docs/running.md, "Exit codes")
HARNESS_ERROR_EXIT = 6


class RecordCollector:
    """Collects one record per claim test (on the xdist controller) and, at the end, writes the report and
    prints the claims × models matrix."""

    def __init__(self, run: RunContext, selection: list[str] | None = None):
        self.run, self.records, self.stability = run, [], stability.load(run.stability_record)
        self.setup_seconds: dict[str, float] = {}
        self.selection = selection  # the pytest command line's arguments (the report's provenance)
        self.selected: list[str] | None = None  # node ids of the selected claim tests (after -k / -m)
        self.session = None
        self.stop_reason: str | None = None  # why the session ended early, when no signal says it
        self.interrupted: dict | None = None  # {"by", "not_run"} of a run that ended before every test ran
        self.interrupts = signals.Interrupts(on_first=self._stopping)
        self.stopped_by: str | None = None  # the stop signal noted by the end of pytest_sessionfinish
        self.crashes: dict[str, str] = {}  # node id -> how its xdist worker died, until a re-run reports

    # ---- an interrupted run (SIGINT, SIGTERM, SIGHUP; -x; pytest.exit) ----------------------------------
    def _stopping(self, name: str) -> None:
        if self.session is not None:  # should the KeyboardInterrupt be swallowed, the session still stops
            self.session.shouldstop = f"interrupted by {name}"

    def pytest_sessionstart(self, session):
        self.session = session
        self.interrupts.install()

    def pytest_collection_finish(self, session):
        self.selected = [i.nodeid for i in session.items if claim_of(i.nodeid)]

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node, ids):
        if self.selected is None:  # every worker collects the same selection
            self.selected = [i for i in ids if claim_of(i)]

    @pytest.hookimpl(tryfirst=True)  # before the terminal renders the interrupt
    def pytest_keyboard_interrupt(self, excinfo):
        # an entry without a line would make that rendering fail; the first entry, pytest's call that caught the
        # interrupt, always has one, so the chain is mended behind the traceback ``excinfo`` holds
        signals.mend_tracebacks(excinfo.value)
        self.stop_reason = str(excinfo.value).strip() or excinfo.typename

    def interruption(self, session, exitstatus) -> dict | None:
        """{"by": the signal ("SIGTERM") or the reason the session stopped, "not_run": the selected claim tests that
        never reported} for a run that ended early, else None."""
        if exitstatus == pytest.ExitCode.USAGE_ERROR:  # refused (--require-weights): said in its own line
            return None
        reported = {r["test"] for r in self.records}
        not_run = [t for t in self.selected or [] if t not in reported]
        by = (
            self.interrupts.by
            or self.stop_reason
            or session.shouldfail
            or session.shouldstop
            or ("KeyboardInterrupt" if exitstatus == pytest.ExitCode.INTERRUPTED else None)
        )
        if self.interrupts.by is None and exitstatus != pytest.ExitCode.INTERRUPTED and not not_run:
            return None
        if not by and not not_run:
            return None
        return {"by": str(by or "the session ended early"), "not_run": not_run}

    @pytest.hookimpl(tryfirst=True)  # recorded before the terminal shows it: an interrupt never drops a shown result
    def pytest_runtest_logreport(self, report):
        if report.when == "setup" and report.outcome == "passed":
            self.setup_seconds[report.nodeid] = report.duration  # booked with the call: fixtures run captures
            return
        if report.when == "???":  # xdist: the worker running it died (killed, out of memory); it may be re-run
            self.crashed(report)
            return
        result = ClaimResult.from_report(report)
        if result is None:
            return
        unstable = stability.unstable_text(
            self.stability, report.nodeid, result.model, result.verdict, self.run.requested.verdict_key()
        )
        crash = self.crashes.pop(report.nodeid, None)
        if crash is not None:  # a re-run after its worker crashed: this run's verdict, the crash said beside it
            self.records = [r for r in self.records if r["test"] != report.nodeid]
            reason = (
                f"{result.reason} ({crash}; this is its re-run)" if result.reason else f"{crash}; this is its re-run"
            )
            result = replace(result, reason=reason)
        record = result.record(
            "xfailed" if hasattr(report, "wasxfail") and report.skipped else report.outcome,
            report.duration + self.setup_seconds.pop(report.nodeid, 0.0),
            unstable=unstable,
            crashed=crash,
        )
        if setup_failed(report):  # its model never loaded: said once per model at the end (setup_failure_lines)
            record["setup_failed"] = setup_failed(report)
        self.records.append(record)

    @pytest.hookimpl(tryfirst=True)  # before pytest's own (skipping's "xfailed")
    def pytest_report_teststatus(self, report, config):
        """A claim test whose not held or inconclusive verdict is recorded counts in pytest's last line under its
        verdict ("18 not held"), never as "xfailed"; every other test as pytest counts it."""
        if not (hasattr(report, "wasxfail") and report.skipped):
            return None
        record = next((r for r in reversed(self.records) if r["test"] == report.nodeid), None)
        if record is None:
            return None
        shown = loaded(record).shown
        return terminal.COUNTED.get(shown, shown.label), "x", terminal.COUNTED.get(shown, shown.label).upper()

    def crashed(self, report) -> None:
        """A claim test whose xdist worker died while running it: a harness error record naming the crash, replaced
        (keeping the crash in its reason) if xdist runs the test again on another worker."""
        test = claim_of(report.nodeid)
        if not test:
            return
        crash = str(report.longrepr).strip().splitlines()[0] if report.longrepr else "its worker crashed"
        self.crashes[report.nodeid] = crash
        self.records = [r for r in self.records if r["test"] != report.nodeid]
        result = ClaimResult(
            report.nodeid,
            test["claim"],
            test["model"],
            Verdict.HARNESS_ERROR,
            reason=f"{crash} (a process killed: out of memory, a time limit or a signal)",
            target=target_of(report.nodeid, test["model"]),
            function=parse(report.nodeid).function,
        )
        self.records.append(result.record("failed", 0.0, crashed=crash))

    def matrix(self) -> list[str]:
        """The claims × models matrix within the terminal's width (harness.report.matrix.text_matrix): a legend, then
        one mark per test in each claim's row, per model that has a test."""
        return text_matrix(self.records, self.run.models, terminal.WIDTH)

    def baseline_lines(self) -> list[str]:
        """One line on the baselines this run compared with or recorded (runs without committed snapshots)."""
        counts, files = Counter(), set()
        for r in self.records:
            if r.get("baseline"):
                counts[r["baseline"]["status"]] += 1
                files.add(r["baseline"]["path"])
        if not counts:
            return []
        req = self.run.requested
        what = f"{req.describe(req.numbers_key())}; {req.device.split(':')[0]}, {req.dtype}"
        first = (
            " (no baseline yet for those tests: this run's figures are now their baseline)"
            if counts["recorded"]
            else ""
        )
        where = next(iter(files)) if len(files) == 1 else f"{len(files)} files under {self.run.baselines.root}"
        return [f"baseline ({what}): " + ", ".join(f"{n} tests {k}" for k, n in counts.items()) + first + f": {where}"]

    def pytest_terminal_summary(self, terminalreporter):
        tr = terminalreporter
        if not self.records:
            self.report_lines(tr)
            return
        if not any(a.startswith("-r") for a in tr.config.invocation_params.args):  # the default -ra, not asked for
            tr.reportchars = "".join(c for c in tr.reportchars if c in "fE")  # the matrix says each verdict
        tr.write_sep("=", "abspos verdicts (figure in words: value [95% CI] vs threshold)")
        for line in self.test_lines():
            tr.write_line(line)
        tr.write_sep("=", "abspos claims × models (one mark per test)")
        for line in self.matrix():
            tr.write_line(line)
        for line in [*self.baseline_lines(), *setup_failure_lines(self.records)]:
            for part in terminal.wrapped(line):
                tr.write_line(part)
        self.report_lines(tr)

    def test_lines(self) -> list[str]:
        """One entry per finished test that reached a verdict, under its model: claim, verdict, the figure in words
        with its interval against the threshold, seconds (harness.run.terminal.test_lines)."""
        return terminal.test_lines(self.records, self.run.models)

    def report_lines(self, tr) -> None:
        """Where the results went, and (a partial run) that it was interrupted and what never ran."""
        if self.interrupts.by and not self.interrupted and self.records:  # every test had finished
            tr.write_line(f"abspos: interrupted by {self.interrupts.by} after the last claim test finished")
        if self.interrupted and (self.records or self.interrupts.by):
            n, total = len(self.interrupted["not_run"]), len(self.selected or [])
            tr.write_line(
                f"abspos: interrupted by {self.interrupted['by']}: {n} of {total} selected claim tests never "
                f"ran"
                + (' (results.json lists them under "interrupted")' if n and self.records else "")
                + (
                    "; the results of those that finished are kept"
                    if self.records
                    else "; no claim test had finished: nothing written"
                )
            )
        path = getattr(self, "report_path", None)
        if path is not None and (path / "report.md").exists():
            html = (path / "report.html").exists()
            first, also = ("report.html", " (and report.md)") if html else ("report.md", "")
            tr.write_line(f"abspos report: {path / first}{also}")
        elif path is not None:
            tr.write_line(f"abspos results: {path / 'results.json'} (no report: see the line above)")

    @pytest.hookimpl(tryfirst=True)  # before xdist tears its workers down: the results are written first
    def pytest_sessionfinish(self, session, exitstatus):
        """Write what finished. From here to the run's last line (results.json, the report and its figures, the
        terminal summary; ``pytest_unconfigure`` ends it) a stop signal is deferred: noted, never raised in the middle
        of anything. One that came before the report is built, or while it is, leaves the report unwritten at the next
        checkpoint (``write_run``), said in one line; either way the run ends as an interrupted one (exit 2)."""
        self.interrupts.deferring = True  # for the rest of the run: unconfigure restores the handlers
        try:
            self.interrupted = self.interruption(session, exitstatus)
            if self.run.report_dir is not None and self.records:
                self.report_path = write_run(
                    self.run.report_dir,
                    self.run.run_id,
                    self.records,
                    self.run.requested,
                    list(self.run.models),
                    self.selection,
                    self.interrupted,
                    stops=self.interrupts,
                )
        finally:
            self.stopped_by = self.interrupts.by
            if self.interrupts.by and session.exitstatus != pytest.ExitCode.USAGE_ERROR:
                session.exitstatus = pytest.ExitCode.INTERRUPTED  # whenever the stop came, the run was stopped

    def pytest_unconfigure(self, config):
        """After pytest's own last line: the run's total, the last thing a claims run prints."""
        tr = config.pluginmanager.getplugin("terminalreporter")
        if self.records and tr is not None:
            for part in terminal.total_lines("abspos total: " + totals_line(self.records).strip("*")):
                tr.write_line(part)
            for line in setup_failure_lines(self.records):  # the run's last lines say why a model has no verdicts
                for part in terminal.wrapped(f"abspos: {line}"):
                    tr.write_line(part)
        self.interrupts.restore()
        failed = self.session is not None and self.session.exitstatus == pytest.ExitCode.TESTS_FAILED
        if failed and any(r.get("verdict") == Verdict.HARNESS_ERROR for r in self.records):
            self.session.exitstatus = HARNESS_ERROR_EXIT  # a broken run, never read as a verdict that changed (1)
        late = self.interrupts.by if self.session is not None and not self.stopped_by else None
        if late and self.session.exitstatus != pytest.ExitCode.USAGE_ERROR:  # while the summary was printed
            self.session.exitstatus = pytest.ExitCode.INTERRUPTED
            print(f"abspos: interrupted by {late} after the results were written", file=sys.stderr)
