"""One run of the claims suite: its context (settled once in ``pytest_configure``) and its records.

``RunContext`` holds what every hook and fixture needs, parsed and validated once: the settings (with
the device resolved for this xdist worker), the selected models, the quiet policy, and where its figures are
compared: the committed snapshots (default settings, CPU, float32) or a baseline keyed by its settings.
``RecordCollector`` (a plugin object on the controller) owns the records of the claim tests, prints the
claims × models matrix at the end of the run and writes the report.
"""

from __future__ import annotations

import dataclasses
import os
import re
import secrets
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

import pytest

from harness.capture import corpus
from harness.files.paths import BASELINES, KNOWN_OUTCOMES, STABILITY
from harness.model import devices, references
from harness.model.cache import CacheError
from harness.outcome import known_outcomes, stability
from harness.outcome.known_outcomes import test_function
from harness.outcome.snapshots import Baselines
from harness.outcome.verdict import VERDICTS, verdict_of
from harness.report.document import write_run
from harness.run import signals
from harness.spec.claims import CLAIMS, length_past_window
from harness.spec.models import REGISTRY, UnknownModelError, WrongWeights, get_spec, names
from harness.spec.settings import Settings, pow2_len


def selected_models(option: str, log=print) -> tuple[str, ...]:
    """The models the claims run on, from ``--models``: registry names, groups, and references (``hf:``, ``path:``,
    ``gguf:``; harness.model.references), whose derived specs are registered. Tiny random-init models are refused: they
    test the harness (tests/ builds them itself) and have no tokenizer and no learned behaviour to make claims
    about. Every problem is a one-line usage error."""
    out: list[str] = []
    for token in filter(None, (t.strip() for t in option.split(","))):
        if token == "all":
            out += names("bundled") + names("paper")
        elif token in ("bundled", "paper"):
            out += names(token)
        else:
            try:
                out.append(references.register(token, log) or get_spec(token).name)
            except (references.ReferenceError, WrongWeights, CacheError) as e:
                raise pytest.UsageError(f"--models: {e}") from None
            except UnknownModelError:
                raise pytest.UsageError(f"--models: unknown model {token!r}; choose from bundled: "
                                        f"{', '.join(names('bundled'))}; paper: {', '.join(names('paper'))} "
                                        f"(or the groups bundled, paper, all; or any RoPE model by reference: "
                                        f"hf:<org>/<name>[@<revision>], path:<folder>, gguf:<file>)") from None
    if not out:
        raise pytest.UsageError(f"--models {option!r}: no model named; choose from bundled: "
                                f"{', '.join(names('bundled'))}; paper: {', '.join(names('paper'))} (or the groups "
                                f"bundled, paper, all; or a reference hf:<org>/<name>, path:<folder>, gguf:<file>)")
    tiny = [n for n in out if REGISTRY[n].group == "tiny"]
    if tiny:
        raise pytest.UsageError(f"--models {','.join(tiny)}: tiny random-init models test the harness mechanics "
                                f"(tests/ builds them itself), never the paper's claims; choose bundled or paper "
                                f"models ({', '.join(names('bundled') + names('paper'))})")
    return tuple(dict.fromkeys(out))


def prompt_sets(settings: Settings, spec) -> list[tuple[int, int, str]]:
    """(prompts, tokens each, which options or claim ask for it) of every topic prompt set a run of the claims
    draws on ``spec`` (the run's, the probes', T7's 512-token bins, T8 past a sliding window)."""
    s, t7 = settings, CLAIMS["T7"].threshold("seq_len")
    out = [(s.n_prompts, s.seq_len, "--n-prompts and --seq-len"),
           (s.n_probe_prompts, s.seq_len, "--n-probe-prompts and --seq-len"),
           (s.n_prompts, max(s.seq_len, t7), f"T7's query bins at {t7} tokens or --seq-len, with --n-prompts")]
    if spec.sliding_window:
        out.append((s.n_prompts, length_past_window(spec.sliding_window, s.seq_len),
                    "T8 past the sliding window, with --n-prompts"))
    return out


def corpus_problems(settings: Settings, specs) -> list[str]:
    """One line per prompt set the corpus certainly cannot fill for a model whose token budget the registry
    records (``ModelSpec.corpus_tokens``), with what does fit, and for any other model (paper models, references)
    each set more tokens than the corpus has bytes of text (``text_bound``); one that may not (it depends on the
    documents drawn, or the tokenizer) fails in the run with ``corpus.CorpusTooSmall``."""
    out = []
    for spec in specs:
        budget = spec.corpus_tokens.get(settings.corpus)
        if not budget:  # a model without a recorded budget (paper models, references): the corpus's bytes bound it
            for n, length, what in prompt_sets(settings, spec):
                if n // 4 * (length - 1) > (most := text_bound(settings.corpus)):
                    out.append(f"{what}: {n} prompts of {length} tokens need {n // 4 * length} tokens per topic; the "
                               f"{settings.corpus!r} corpus's smallest topic makes at most {most} in any tokenizer "
                               f"(a token covers a byte of text or more; no token count is recorded for "
                               f"{spec.name}): at most {4 * (most // (length - 1))} prompts of {length} tokens fit"
                               + ("" if settings.corpus == "bbc" else " (or use --corpus bbc)"))
            continue
        for n, length, what in prompt_sets(settings, spec) if budget else []:
            if corpus.fits(budget, n, length) is False:
                total, longest = budget
                longest_fit, most = pow2_len(total // (n // 4) - longest), 4 * (total // (length + longest))
                fit = [f"{n} prompts of at most {longest_fit} tokens"] if longest_fit else []
                fit += [f"{most} prompts of {length} tokens"] if most else []
                out.append(f"{what}: {n} prompts of {length} tokens need {n // 4 * length} tokens per topic; the "
                           f"{settings.corpus!r} corpus's smallest topic has {total} in {spec.name}'s tokenizer"
                           + (f"; it fills {' or '.join(fit)}" if fit else "")
                           + ("" if settings.corpus == "bbc" else " (or use --corpus bbc)"))
    return out[:1]


def text_bound(source: str) -> int:
    """An upper bound, whatever the tokenizer, of the tokens the corpus's smallest topic makes as ``topic_prompts``
    joins its documents: a token covers at least one byte of text (byte-level BPE, byte fallback), plus one per
    document for a tokenizer's dummy prefix and three for the separator."""
    return min(sum(len(d.encode()) + 4 for d in docs) for docs in corpus.topic_texts(source).values())


def check_writable(folder: Path, option: str) -> None:
    """A usage error unless files can be created in ``folder`` (made if missing): checked before any work, so a
    run never measures for hours and then finds nowhere to put its results."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        tempfile.TemporaryFile(dir=folder).close()
    except OSError as e:
        raise pytest.UsageError(f"{option} {folder}: not writable ({e.strerror or e}); choose a writable folder, "
                                f"or --no-report") from None


RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")  # what --run-id accepts: a plain folder name


def new_run_id(given: str | None = None) -> str:
    """The run's name and folder: ``--run-id`` when given (a plain name; ``verify()`` gives one so it finds its own
    run among others), else its start time and a random suffix ("run-20260101-120000-3fa9c1"), so runs started in
    the same second never share a folder (harness.report.document.run_folder also never reuses one)."""
    if given is not None:
        if not RUN_ID.fullmatch(given) or given == "latest":
            raise pytest.UsageError(f"--run-id {given!r}: not a plain folder name (letters, digits, '.', '_', '-'; "
                                    f"at most 100; not 'latest')")
        return given
    return time.strftime("run-%Y%m%d-%H%M%S") + f"-{secrets.token_hex(3)}"


def file_problems(config, models: tuple[str, ...], baselines: Baselines, records_baselines: bool) -> list[str]:
    """One line per input file of the run that is missing (--known-outcomes named on the command line), a folder,
    unreadable or damaged: the known outcomes, the stability record and the baselines this run reads, and (when the run may
    record baselines) whether --baseline-dir is writable. Checked at configure time, before anything is measured."""
    o, out = config.getoption, []
    try:
        known_outcomes.validate(Path(o("--known-outcomes")), required=o("--known-outcomes") != str(KNOWN_OUTCOMES))
    except ValueError as e:
        out.append(f"--known-outcomes: {e}")
    try:
        stability.load(Path(o("--stability-record")))  # a missing record is none (runs name one to have none)
    except stability.StabilityError as e:
        out.append(f"--stability-record: {e}")
    if records_baselines or o("--baseline-dir") != str(BASELINES):
        try:
            check_writable(baselines.root, "--baseline-dir")
        except pytest.UsageError as e:
            out.append(str(e).replace(", or --no-report", ""))
    if not out:
        out += baselines.problems(models)
    return out


@dataclass(frozen=True)
class RunContext:
    settings: Settings  # device resolved for this process (xdist worker gwN -> cuda:N mod gpus)
    requested: Settings  # as given on the command line (what the report states)
    models: tuple[str, ...]
    quiet: bool
    run_slow: bool
    report_dir: Path | None  # None: --no-report
    run_id: str
    at_defaults: bool  # default settings on the CPU in float32: the committed snapshots apply
    baselines: Baselines  # recorded figures for every other settings key, device kind and dtype (and paper models)
    known_outcomes: Path = KNOWN_OUTCOMES
    stability_record: Path = STABILITY

    @classmethod
    def from_config(cls, config) -> "RunContext":
        o = config.getoption
        requested = Settings(n_prompts=o("--n-prompts"), seq_len=o("--seq-len"), n_pairs=o("--n-pairs"),
                             n_perm=o("--n-perm"), n_probe_prompts=o("--n-probe-prompts"), device=o("--device"),
                             dtype=o("--dtype"), corpus=o("--corpus"), seed=o("--seed"))
        for problem in requested.problems():  # bad settings are usage errors before anything is collected
            raise pytest.UsageError(problem)
        try:  # `--device cuda` on a machine without a GPU is a usage error before anything is collected
            device = devices.resolve_device(requested.device, devices.current_worker(), devices.gpu_count())
        except devices.DeviceError as e:
            raise pytest.UsageError(str(e)) from None
        models = selected_models(o("--models"))
        report_dir = None if o("--no-report") else Path(o("--report-dir"))
        if not hasattr(config, "workerinput"):  # once, on the controller: xdist workers get the same options
            specs = [REGISTRY[m] for m in models]
            for problem in requested.context_problems(specs) + corpus_problems(requested, specs):
                raise pytest.UsageError(problem)
            if report_dir is not None:
                check_writable(report_dir, "--report-dir")
        key = requested.numbers_key()
        at_defaults = key == Settings().numbers_key() and (device.split(":")[0], requested.dtype) == ("cpu", "float32")
        baselines = Baselines(Path(o("--baseline-dir")), key, requested.device, requested.dtype)
        if not hasattr(config, "workerinput"):  # damaged inputs are one line each, before any measurement
            records = not at_defaults or any(REGISTRY[m].group == "local" for m in models)  # (paper models: when
            # their weights are here, which is found later; a default --baseline-dir is then checked as it is used)
            for problem in file_problems(config, models, baselines, records):
                raise pytest.UsageError(problem)
        return cls(settings=dataclasses.replace(requested, device=device), requested=requested,
                   models=models,
                   quiet=bool(os.environ.get("CI")),
                   run_slow=o("--run-slow"),
                   report_dir=report_dir,
                   run_id=new_run_id(o("--run-id")),
                   known_outcomes=Path(o("--known-outcomes")), stability_record=Path(o("--stability-record")),
                   at_defaults=at_defaults, baselines=baselines)

    def log(self, *args) -> None:
        if not self.quiet:
            print(*args)


def _crash_message(report) -> str:
    """The exception's own message, whatever --tb style the run uses."""
    crash = getattr(report.longrepr, "reprcrash", None)
    return crash.message if crash is not None else (str(report.longrepr).strip().splitlines() or [""])[-1]


def classify(report) -> tuple[str, bool, str, str | None]:
    """(verdict, whether a recorded known outcome expected it, the reason in this run, the failing assertion)
    of a claim test's report."""
    not_held = next((v for k, v in report.user_properties if k == "not_held"), None)
    check = not_held["check"] if not_held else None
    if report.skipped:
        if hasattr(report, "wasxfail"):  # the recorded assertion failed again (checked in the plugin's call hook)
            if not_held and report.when == "call":
                return "not held", True, not_held["message"], check  # this run's figure, never the recorded text
            return "harness error", True, f"a ClaimNotHeld outside the claim's body (recorded: {report.wasxfail})", None
        reason = report.longrepr[2].removeprefix("Skipped: ") if isinstance(report.longrepr, tuple) else ""
        return ("n/a" if reason.startswith("not applicable") else "skipped"), False, reason, None
    if report.passed:
        return "held", False, "", None
    if report.when == "call" and str(report.longrepr).startswith("[XPASS(strict)]"):
        recorded = str(report.longrepr).removeprefix("[XPASS(strict)] ")
        return "stale", False, f"held in this run, but recorded as not holding ({recorded}): re-take the known " \
                               f"outcome", None
    message = _crash_message(report)
    kind = message.split(":", 1)[0].rsplit(".", 1)[-1]
    if report.when == "call" and not_held and kind in ("ClaimNotHeld", "KnownOutcomeMismatch"):
        return "not held", False, not_held["message"], check
    return "harness error", False, message.replace("harness.outcome.verdict.", ""), check


def claim_of(nodeid: str) -> dict:
    """{"claim", "model"} of a claim test from its node id alone (an xdist worker that crashed sends a report
    without the test's properties), or {} for any other test."""
    func, model = test_function(nodeid), nodeid.partition("[")[2].rstrip("]")
    cid = next((c.id for c in CLAIMS.values() if func in c.tests), None)
    return {"claim": cid, "model": model if model in REGISTRY else None} if cid else {}


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

    def pytest_keyboard_interrupt(self, excinfo):
        self.stop_reason = str(excinfo.value).strip() or excinfo.typename

    def interruption(self, session, exitstatus) -> dict | None:
        """{"by": the signal ("SIGTERM") or the reason the session stopped, "not_run": the selected claim tests that
        never reported} for a run that ended early, else None."""
        if exitstatus == pytest.ExitCode.USAGE_ERROR:  # refused (--require-weights): said in its own line
            return None
        reported = {r["test"] for r in self.records}
        not_run = [t for t in self.selected or [] if t not in reported]
        by = self.interrupts.by or self.stop_reason or session.shouldfail or session.shouldstop or (
            "KeyboardInterrupt" if exitstatus == pytest.ExitCode.INTERRUPTED else None)
        if self.interrupts.by is None and exitstatus != pytest.ExitCode.INTERRUPTED and not not_run:
            return None
        if not by and not not_run:
            return None
        return {"by": str(by or "the session ended early"), "not_run": not_run}

    @pytest.hookimpl(tryfirst=True)  # recorded before the terminal shows it: an interrupt never drops a shown result
    def pytest_runtest_logreport(self, report):
        props = dict(p for p in report.user_properties if p[0] in ("claim", "model")) or claim_of(report.nodeid)
        if "claim" not in props:
            return
        if report.when == "setup" and report.outcome == "passed":
            self.setup_seconds[report.nodeid] = report.duration  # booked with the call: fixtures run captures
            return
        if report.when != "call" and report.when != "setup":
            return
        outcome = "xfailed" if hasattr(report, "wasxfail") and report.skipped else report.outcome
        verdict, known, reason, check = classify(report)
        entry = props.get("model") and stability.unstable(
            self.stability, test_function(report.nodeid), props["model"], self.run.requested.verdict_key())
        figs = [v for k, v in report.user_properties if k == "figure"]
        baseline = next((v for k, v in report.user_properties if k == "baseline"), None)
        forward = next((v for k, v in report.user_properties if k == "forward"), {"seconds": 0.0, "layer_tokens": 0})
        self.records.append({"test": report.nodeid, "claim": props["claim"], "model": props.get("model"),
                             "outcome": outcome, "verdict": verdict, "known_outcome": known,
                             "check": check, "reason": reason, "figures": figs,
                             "seconds": round(max(0.0, report.duration + self.setup_seconds.pop(report.nodeid, 0.0)
                                                  - forward.get("load_seconds", 0.0)), 2),
                             "forward_seconds": forward["seconds"], "layer_tokens": forward["layer_tokens"],
                             "floor_layer_tokens": forward.get("floor_layer_tokens", forward["layer_tokens"]),
                             **({"baseline": baseline} if baseline else {}),
                             **({"unstable": stability.describe(entry)} if entry else {}),
                             **({"shape": forward["shape"]} if "shape" in forward else {})})

    def matrix(self) -> list[str]:
        """The claims × models matrix, one line per claim: how many of its tests held / did not / n/a per model."""
        cells: dict = defaultdict(lambda: defaultdict(list))
        for r in self.records:
            cells[r["claim"]][r["model"] or "(per family)"].append(verdict_of(r))
        models = list(dict.fromkeys([*self.run.models, *(m for c in cells.values() for m in c)]))
        models = [m for m in models if any(m in c for c in cells.values())]
        rows = {}
        for cid in [c for c in CLAIMS if c in cells] + sorted(set(cells) - set(CLAIMS)):
            rows[cid] = []
            for m in models:
                marks = cells[cid].get(m, [])
                counts = {k: marks.count(k) for k in dict.fromkeys(marks)}
                rows[cid].append(", ".join(f"{n} {k}" for k, n in counts.items()) or "-")
        width = max([len(m) for m in models] + [len(c) for row in rows.values() for c in row])
        return ["claim  " + "  ".join(m.ljust(width) for m in models).rstrip()] + \
            [f"{cid:<6} " + "  ".join(c.ljust(width) for c in row).rstrip() for cid, row in rows.items()]

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
        first = " (no baseline yet for those tests: this run's figures are now their baseline)" \
            if counts["recorded"] else ""
        where = next(iter(files)) if len(files) == 1 else f"{len(files)} files under {self.run.baselines.root}"
        return [f"baseline ({what}): " + ", ".join(f"{n} tests {k}" for k, n in counts.items()) + first
                + f": {where}"]

    def pytest_terminal_summary(self, terminalreporter):
        tr = terminalreporter
        if not self.records:
            self.report_lines(tr)
            return
        tr.write_sep("=", "abspos claims × models (tests per cell by verdict)")
        for line in self.matrix():
            tr.write_line(line)
        seen = {r["verdict"] for r in self.records}
        tr.write_line("verdicts: " + "; ".join(f"{v}: {what}" for v, what in VERDICTS.items() if v in seen))
        for line in self.baseline_lines():
            tr.write_line(line)
        self.report_lines(tr)

    def report_lines(self, tr) -> None:
        """Where the results went, and (a partial run) that it was interrupted and what never ran."""
        if self.interrupted and (self.records or self.interrupts.by):
            n, total = len(self.interrupted["not_run"]), len(self.selected or [])
            tr.write_line(f"abspos: interrupted by {self.interrupted['by']}: {n} of {total} selected claim tests never "
                          f"ran" + (" (results.json lists them under \"interrupted\")" if n else "")
                          + ("; the results of those that finished are kept" if self.records else
                             "; no claim test had finished: nothing written"))
        path = getattr(self, "report_path", None)
        if path is not None and (path / "report.md").exists():
            tr.write_line(f"abspos report: {path / 'report.md'}")
        elif path is not None:
            tr.write_line(f"abspos results: {path / 'results.json'} (no report: see the line above)")

    @pytest.hookimpl(tryfirst=True)  # before xdist tears its workers down: the results are written first
    def pytest_sessionfinish(self, session, exitstatus):
        try:
            self.interrupted = self.interruption(session, exitstatus)
            if self.run.report_dir is None or not self.records:
                return
            self.report_path = write_run(self.run.report_dir, self.run.run_id, self.records, self.run.requested,
                                         list(self.run.models), self.selection, self.interrupted)
        finally:
            self.interrupts.restore()

    def pytest_unconfigure(self, config):
        self.interrupts.restore()
