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
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

import pytest

from . import corpus, devices, references, stability
from .cache import CacheError
from .claim_registry import CLAIMS, length_past_window
from .known_outcomes import test_function
from .models import REGISTRY, UnknownModelError, WrongWeights, get_spec, names
from .paths import KNOWN_OUTCOMES, STABILITY
from .report import write_run
from .session import Settings, pow2_len
from .snapshots import Baselines
from .verdict import VERDICTS, verdict_of


def selected_models(option: str, log=print) -> tuple[str, ...]:
    """The models the claims run on, from ``--models``: registry names, groups, and references (``hf:``, ``path:``,
    ``gguf:``; harness.references), whose derived specs are registered. Tiny random-init models are refused: they
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
    records (``ModelSpec.corpus_tokens``), with what does fit; one that may not (it depends on the documents drawn)
    fails in the run with ``corpus.CorpusTooSmall``."""
    out = []
    for spec in specs:
        budget = spec.corpus_tokens.get(settings.corpus)
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


def check_writable(folder: Path, option: str) -> None:
    """A usage error unless files can be created in ``folder`` (made if missing): checked before any work, so a
    run never measures for hours and then finds nowhere to put its results."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        tempfile.TemporaryFile(dir=folder).close()
    except OSError as e:
        raise pytest.UsageError(f"{option} {folder}: not writable ({e.strerror or e}); choose a writable folder, "
                                f"or --no-report") from None


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
        return cls(settings=dataclasses.replace(requested, device=device), requested=requested,
                   models=models,
                   quiet=bool(os.environ.get("CI")),
                   run_slow=o("--run-slow"),
                   report_dir=report_dir,
                   run_id=time.strftime("run-%Y%m%d-%H%M%S"),
                   known_outcomes=Path(o("--known-outcomes")), stability_record=Path(o("--stability-record")),
                   at_defaults=key == Settings().numbers_key() and (device.split(":")[0], requested.dtype) == (
                       "cpu", "float32"),
                   baselines=Baselines(Path(o("--baseline-dir")), key, requested.device, requested.dtype))

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
    return "harness error", False, message.replace("harness.verdict.", ""), check


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
        if not self.records:
            return
        tr = terminalreporter
        tr.write_sep("=", "abspos claims × models (tests per cell by verdict)")
        for line in self.matrix():
            tr.write_line(line)
        seen = {r["verdict"] for r in self.records}
        tr.write_line("verdicts: " + "; ".join(f"{v}: {what}" for v, what in VERDICTS.items() if v in seen))
        for line in self.baseline_lines():
            tr.write_line(line)
        if getattr(self, "report_path", None):
            tr.write_line(f"abspos report: {self.report_path / 'report.md'}")

    def pytest_sessionfinish(self, session, exitstatus):
        if self.run.report_dir is None or not self.records:
            return
        self.report_path = write_run(self.run.report_dir, self.run.run_id, self.records, self.run.requested,
                                     list(self.run.models), self.selection)
