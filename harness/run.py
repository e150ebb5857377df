"""One run of the claims suite: its context (settled once in ``pytest_configure``) and its records.

``RunContext`` holds what every hook and fixture needs, parsed and validated once: the settings (with
the device resolved for this xdist worker), the selected models, the quiet policy, whether snapshots are
compared and why not. ``RecordCollector`` (a plugin object on the controller) owns the records of the
claim tests, prints the claims × models matrix at the end of the run and writes the report.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import pytest

from . import devices
from .claim_registry import CLAIMS
from .models import REGISTRY, UnknownModelError, get_spec, names
from .session import Settings


def selected_models(option: str) -> tuple[str, ...]:
    """The models the claims run on, from ``--models``. Tiny random-init models are refused: they test the
    harness (tests/ builds them itself) and have no tokenizer and no learned behaviour to make claims about."""
    out: list[str] = []
    for token in filter(None, (t.strip() for t in option.split(","))):
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
    return tuple(dict.fromkeys(out))


@dataclass(frozen=True)
class RunContext:
    settings: Settings  # device resolved for this process (xdist worker gwN -> cuda:N mod gpus)
    requested: Settings  # as given on the command line (what the report states)
    models: tuple[str, ...]
    quiet: bool
    run_slow: bool
    report_dir: Path | None  # None: --no-report
    run_id: str
    snapshots_off: str | None  # why snapshots are not compared in this run, or None

    @classmethod
    def from_config(cls, config) -> "RunContext":
        o = config.getoption
        requested = Settings(n_prompts=o("--n-prompts"), seq_len=o("--seq-len"), n_pairs=o("--n-pairs"),
                             n_perm=o("--n-perm"), n_probe_prompts=o("--n-probe-prompts"), device=o("--device"),
                             dtype=o("--dtype"), corpus=o("--corpus"))
        try:  # `--device cuda` on a machine without a GPU is a usage error before anything is collected
            device = devices.resolve_device(requested.device, devices.current_worker(), devices.gpu_count())
        except devices.DeviceError as e:
            raise pytest.UsageError(str(e)) from None
        changed = [f.name for f in dataclasses.fields(Settings)
                   if getattr(requested, f.name) != getattr(Settings(), f.name)]
        return cls(settings=dataclasses.replace(requested, device=device), requested=requested,
                   models=selected_models(o("--models")),
                   quiet=bool(os.environ.get("CI")),
                   run_slow=o("--run-slow"),
                   report_dir=None if o("--no-report") else Path(o("--report-dir")),
                   run_id=time.strftime("run-%Y%m%d-%H%M%S"),
                   snapshots_off=(f"snapshots are taken at the default settings; this run changes "
                                  f"{', '.join(changed)}" if changed else None))

    def log(self, *args) -> None:
        if not self.quiet:
            print(*args)


MARK = {"passed": "held", "xpassed": "held", "xfailed": "not held", "failed": "FAILED", "skipped": "skipped",
        "error": "ERROR"}


def mark(record: dict) -> str:
    """One word for a record in the matrix; a skip is 'n/a' when the prediction does not apply to the model."""
    if record["outcome"] == "skipped" and record["reason"].startswith("not applicable"):
        return "n/a"
    return MARK.get(record["outcome"], record["outcome"])


class RecordCollector:
    """Collects one record per claim test (on the xdist controller) and, at the end, writes the report and
    prints the claims × models matrix."""

    def __init__(self, run: RunContext):
        self.run, self.records = run, []

    def pytest_runtest_logreport(self, report):
        props = dict(p for p in report.user_properties if p[0] in ("claim", "model"))
        if "claim" not in props:
            return
        if not (report.when == "call" or (report.when == "setup" and report.outcome != "passed")):
            return
        outcome = "xfailed" if hasattr(report, "wasxfail") and report.skipped else report.outcome
        reason = ""
        if outcome == "skipped" and isinstance(report.longrepr, tuple):
            reason = report.longrepr[2].removeprefix("Skipped: ")
        elif outcome == "xfailed":
            reason = report.wasxfail
        elif outcome == "failed":  # the exception's own message, whatever --tb style the run uses
            crash = getattr(report.longrepr, "reprcrash", None)
            reason = crash.message if crash is not None else (str(report.longrepr).strip().splitlines() or [""])[-1]
            reason = reason.replace("harness.verdict.ClaimNotHeld: ", "ClaimNotHeld: ")
        figs = [v for k, v in report.user_properties if k == "figure"]
        forward = next((v for k, v in report.user_properties if k == "forward"), {"seconds": 0.0, "layer_tokens": 0})
        self.records.append({"test": report.nodeid, "claim": props["claim"], "model": props.get("model"),
                             "outcome": outcome, "reason": reason, "figures": figs,
                             "seconds": round(report.duration, 2), "forward_seconds": forward["seconds"],
                             "layer_tokens": forward["layer_tokens"],
                             **({"shape": forward["shape"]} if "shape" in forward else {})})

    def matrix(self) -> list[str]:
        """The claims × models matrix, one line per claim: how many of its tests held / did not / n/a per model."""
        cells: dict = defaultdict(lambda: defaultdict(list))
        for r in self.records:
            cells[r["claim"]][r["model"] or "(per family)"].append(mark(r))
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

    def pytest_terminal_summary(self, terminalreporter):
        if not self.records:
            return
        tr = terminalreporter
        tr.write_sep("=", "abspos claims × models (tests per cell: held / not held / FAILED / skipped / n/a)")
        for line in self.matrix():
            tr.write_line(line)
        if self.run.snapshots_off:
            tr.write_line(f"snapshots not compared: {self.run.snapshots_off}")
        if getattr(self, "report_path", None):
            tr.write_line(f"abspos report: {self.report_path / 'report.md'}")

    def pytest_sessionfinish(self, session, exitstatus):
        if self.run.report_dir is None or not self.records:
            return
        from .report import write_run

        self.report_path = write_run(self.run.report_dir, self.run.run_id, self.records, self.run.requested,
                                     list(self.run.models))
