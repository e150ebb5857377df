"""The suite's command-line options (the ``abspos`` group of pytest's options), registered by the plugin
(harness/run/plugin.py, which imports ``pytest_addoption`` from here so that pytest finds the hook on it). Their
defaults are the settings' (harness/spec/settings.py) and the committed files' (harness/files/paths.py); the run
context (harness/run/context.py) reads and checks them."""

from __future__ import annotations

from harness.files.paths import BASELINES, KNOWN_OUTCOMES, REPORTS, STABILITY
from harness.spec.settings import DTYPE_NAMES, Settings


def pytest_addoption(parser):
    g = parser.getgroup("abspos", "absolute-position claims")
    g.addoption(
        "--models",
        default="bundled,paper",
        help="comma list of model names, groups (bundled, paper, all; rehearsal: the paper architectures with random "
        "weights, machinery only, never a verdict) or references: hf:<org>/<name>[@<revision>], "
        "path:<folder>, gguf:<file> (offline; spec derived from config and tokenizer); default: "
        "bundled,paper",
    )
    g.addoption("--device", default="cpu", help="torch device: cpu, cuda, cuda:1 ...")
    g.addoption(
        "--dtype",
        default="float32",
        choices=list(DTYPE_NAMES),
        help="model weight dtype (statistics are always float64)",
    )
    d = Settings()
    g.addoption("--n-prompts", type=int, default=d.n_prompts, help="prompts per capture (a multiple of 4, at least 12)")
    g.addoption(
        "--seq-len", type=int, default=d.seq_len, help="tokens per prompt (8 times a power of two, at least 16)"
    )
    g.addoption(
        "--n-pairs",
        type=int,
        default=d.n_pairs,
        help="stratified (i, j) pairs for ΔR² (at least 1000; at most where every pair is drawn)",
    )
    g.addoption(
        "--n-perm",
        type=int,
        default=d.n_perm,
        help="permutations for permutation nulls, sign flips beyond 2^16 patterns (100 to 1,000,000)",
    )
    g.addoption(
        "--n-probe-prompts",
        type=int,
        default=d.n_probe_prompts,
        help="prompts for the topic probes (a multiple of 4, at least 20)",
    )
    g.addoption("--corpus", default=d.corpus, choices=["wiki", "bbc"], help="topic corpus")
    g.addoption(
        "--seed",
        type=int,
        default=d.seed,
        help="seed of every random draw: prompts, pairs, permutations and sign flips, bootstrap resamples "
        "(0 to 2^32 - 1)",
    )
    g.addoption(
        "--known-outcomes",
        default=str(KNOWN_OUTCOMES),
        help="the 'not held' verdicts recorded from earlier runs: a run that reproduces one passes unmarked, any other "
        "is 'changed since the record' (default: fixtures/known_outcomes.json)",
    )
    g.addoption(
        "--stability-record",
        default=str(STABILITY),
        help="verdicts under several seeds (scripts/stability.sh; default: fixtures/stability.json)",
    )
    g.addoption("--report-dir", default=str(REPORTS), help="where run reports go")
    g.addoption(
        "--run-id",
        default=None,
        help="the run's folder name under --report-dir (default: its start time and a "
        "random suffix; a name already taken gets a suffix)",
    )
    g.addoption(
        "--baseline-dir",
        default=str(BASELINES),
        help="baselines of settings without committed snapshots (first run records, later runs compare)",
    )
    g.addoption(
        "--baseline-update",
        action="store_true",
        help="re-record this run's baselines (--snapshot-update re-takes the committed snapshots)",
    )
    g.addoption("--no-report", action="store_true", help="do not write a run report")
    g.addoption(
        "--require-weights",
        action="store_true",
        help="a usage error (exit 4) when a selected model's weights are absent, instead of skipping its "
        "tests: a nightly that cannot load its models fails instead of passing empty",
    )
    g.addoption(
        "--skip-absent",
        action="store_true",
        help="a paper model named in --models whose weights are absent skips its tests (as a group like 'paper' "
        "always does) instead of ending the run with a usage error",
    )
    g.addoption(
        "--threads",
        type=int,
        default=0,
        help="CPU threads per process (torch and BLAS); default: the cores free when the run starts, divided "
        "by the xdist workers ($ABSPOS_THREADS also sets it)",
    )
    g.addoption(
        "--run-slow", action="store_true", help="also run the slow variants (16-length scaling, many random draws)"
    )
    g.addoption(
        "--allow-untested-versions",
        action="store_true",
        help="run under a transformers or torch release older than the oldest this suite measures with "
        "(harness/spec/versions.py) instead of ending with a usage error (exit 4); the report flags the run",
    )


# ---- the same options for `abspos-claims run --help` and its did-you-mean ----------------------------------------


class _Recorder:
    """Stands in for pytest's parser: records each option ``pytest_addoption`` declares, so the command line shows
    the suite's options with their defaults from this one declaration."""

    def __init__(self):
        self.options: list[tuple[tuple[str, ...], dict]] = []

    def getgroup(self, *args, **kwargs):
        return self

    def addoption(self, *names: str, **kwargs):
        self.options.append((names, kwargs))


def suite_options() -> list[tuple[tuple[str, ...], dict]]:
    """Each of the suite's options as (its names, its ``addoption`` keywords: default, help, type, choices, action)."""
    recorder = _Recorder()
    pytest_addoption(recorder)
    return recorder.options


def pytest_options() -> tuple[set[str], set[str]]:
    """(the option names pytest accepts in a claims run, those of them that take a value): its own, its installed
    plugins' (xdist, syrupy, hypothesis) and the suite's. Both empty when pytest's parser cannot be read (its layout
    is not a public API): the caller then leaves every option to pytest."""
    try:
        from _pytest.config import get_config

        config = get_config()
        config.pluginmanager.load_setuptools_entrypoints("pytest11")
        parser = config._parser
        options = [o for g in [parser._anonymous, *parser._groups] for o in g.options]
        known = {n for o in options for n in o.names()}
        valued = {n for o in options if o.attrs().get("nargs") != 0 for n in o.names()}
    except Exception:  # noqa: BLE001 - a private layout that moved: no did-you-mean, never a failed run
        return set(), set()
    suite = suite_options()
    known |= {n for names, _ in suite for n in names}
    valued |= {n for names, kw in suite if "action" not in kw for n in names}
    return known, valued
