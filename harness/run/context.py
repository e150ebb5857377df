"""One run of the claims suite: its context, settled once in ``pytest_configure``.

``RunContext`` holds what every hook and fixture needs, parsed and validated once: the settings (with
the device resolved for this xdist worker), the selected models (harness.run.selection), the quiet policy, and where
its figures are compared: the committed snapshots (default settings, CPU, float32) or a baseline keyed by its
settings. A bad option or input file is a ``UsageError``, one line, before anything is measured. The records of the
run's claim tests are harness.run.records's.
"""

from __future__ import annotations

import dataclasses
import os
import re
import secrets
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from harness.files.paths import BASELINES, KNOWN_OUTCOMES, STABILITY
from harness.model import devices
from harness.model.availability import measured_on
from harness.outcome import known_outcomes, stability
from harness.outcome.snapshots import Baselines
from harness.run.selection import (
    UsageError,
    cache_problem,
    corpus_problems,
    model_problems,
    named_models,
    selected_models,
    synthetic_targets,
)
from harness.spec import versions
from harness.spec.claim_names import catalogue_problem
from harness.spec.models import REGISTRY
from harness.spec.settings import Settings


def check_writable(folder: Path, option: str) -> None:
    """A usage error unless files can be created in ``folder`` (made if missing): checked before any work, so a
    run never measures for hours and then finds nowhere to put its results."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        tempfile.TemporaryFile(dir=folder).close()
    except OSError as e:
        raise UsageError(
            f"{option} {folder}: not writable ({e.strerror or e}); choose a writable folder, or --no-report"
        ) from None


def check_versions(allowed: bool) -> None:
    """A usage error when transformers or torch is older than the oldest release the suite measures with
    (harness.spec.versions); with ``allowed`` (--allow-untested-versions) one line on stderr instead, and the run goes
    on (its report flags it from the versions it records)."""
    outside = versions.untested()
    if outside and not allowed:
        raise UsageError(versions.refusal(outside))
    if outside:
        print(f"abspos: --allow-untested-versions: {'; '.join(outside)}; the report flags this run", file=sys.stderr)


RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")  # what --run-id accepts: a plain folder name


def new_run_id(given: str | None = None) -> str:
    """The run's name and folder: ``--run-id`` when given (a plain name; ``verify()`` gives one so it finds its own
    run among others), else its start time and a random suffix ("run-20260101-120000-3fa9c1"), so runs started in
    the same second never share a folder (harness.report.write.run_folder also never reuses one)."""
    if given is not None:
        if not RUN_ID.fullmatch(given) or given == "latest":
            raise UsageError(
                f"--run-id {given!r}: not a plain folder name (letters, digits, '.', '_', '-'; "
                f"at most 100; not 'latest')"
            )
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
        except UsageError as e:
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
    synthetic: tuple[str, ...] = ()  # the related paper's trained synthetic model sets (synthetic-<size>-<arch>)

    @classmethod
    def from_config(cls, config) -> "RunContext":
        """The run's context from pytest's options; a bad option or input file is a UsageError (one line), which the
        plugin raises as pytest's usage error, before anything is collected."""
        o = config.getoption
        if not hasattr(config, "workerinput"):  # a release below the supported range: one line, before anything else
            check_versions(o("--allow-untested-versions"))
        why = catalogue_problem()  # $ABSPOS_CLAIMS_DIR: before any claim module is collected
        if why:
            raise UsageError(why)
        requested = Settings(
            n_prompts=o("--n-prompts"),
            seq_len=o("--seq-len"),
            n_pairs=o("--n-pairs"),
            n_perm=o("--n-perm"),
            n_probe_prompts=o("--n-probe-prompts"),
            device=o("--device"),
            dtype=o("--dtype"),
            corpus=o("--corpus"),
            seed=o("--seed"),
        )
        for problem in requested.problems():  # bad settings are usage errors before anything is collected
            raise UsageError(problem)
        try:  # `--device cuda` on a machine without a GPU is a usage error before anything is collected
            device = devices.resolve_device(requested.device, devices.current_worker(), devices.gpu_count())
            devices.memory_cap()  # $ABSPOS_GPU_MEMORY_GIB, read at each load: checked here, before any work
        except devices.DeviceError as e:
            raise UsageError(str(e)) from None
        why = cache_problem()  # before a reference is converted or a rehearsal built into it
        if why:
            raise UsageError(why)
        with measured_on(device, requested.dtype):  # where a model is loaded at selection to check it is trained
            synthetic, rest = synthetic_targets(o("--models") or "")
            models = (selected_models(rest) if rest else ()) if synthetic else selected_models(o("--models"))
            report_dir = None if o("--no-report") else Path(o("--report-dir"))
            if not hasattr(config, "workerinput"):  # once, on the controller: xdist workers get the same options
                specs = [REGISTRY[m] for m in models]
                for problem in requested.context_problems(specs) + corpus_problems(requested, specs):
                    raise UsageError(problem)
                named = set() if o("--skip-absent") else named_models(o("--models") or "")
                for problem in model_problems(specs, named):  # a folder not the model named, or a named one absent
                    raise UsageError(problem)
                if report_dir is not None:
                    check_writable(report_dir, "--report-dir")
        key = requested.numbers_key()
        at_defaults = key == Settings().numbers_key() and (device.split(":")[0], requested.dtype) == ("cpu", "float32")
        baselines = Baselines(Path(o("--baseline-dir")), key, requested.device, requested.dtype)
        if not hasattr(config, "workerinput"):  # damaged inputs are one line each, before any measurement
            records = not at_defaults or any(REGISTRY[m].group == "local" for m in models)  # (paper models: when
            # their weights are here, which is found later; a default --baseline-dir is then checked as it is used)
            for problem in file_problems(config, models, baselines, records):
                raise UsageError(problem)
        return cls(
            settings=dataclasses.replace(requested, device=device),
            requested=requested,
            models=models,
            quiet=bool(os.environ.get("CI")),
            run_slow=o("--run-slow"),
            report_dir=report_dir,
            run_id=new_run_id(o("--run-id")),
            known_outcomes=Path(o("--known-outcomes")),
            stability_record=Path(o("--stability-record")),
            at_defaults=at_defaults,
            baselines=baselines,
            synthetic=synthetic,
        )

    def log(self, *args) -> None:
        if not self.quiet:
            print(*args)
