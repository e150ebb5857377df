"""``abspos-claims submit``: the claims on several models as one job per model through submitit (SLURM on a cluster,
or local processes), then one merged report (harness.report.merge).

    abspos-claims submit --models paper --executor slurm --partition gpu --gpus 1 --time 240 --mem 64 \\
        --device cuda --require-weights
    abspos-claims submit --models smollm2-135m,gemma3-270m --executor local -k "leakage or position0"
    abspos-claims submit --collect reports/submit-<time>      # after --no-wait: wait for the jobs, then merge

Each job runs ``python -m pytest claims --models <model> --report-dir <folder>/<model>`` with the options given
(anything not listed here goes to pytest, as with ``abspos-claims run``) and writes ``<folder>/<model>/job.json``:
its status, exit code, and the results.json it wrote, or why it wrote none. A pytest exit of 1 with results (claims
that did not hold) is a measured run; a job that wrote no results (a usage error, a crash, a job killed for time or
memory) is shown as failed in the merged report with its reason. Models are not resolved here: a reference's
weights may exist only on the compute nodes, and each job checks its own.

Each submission has an id, which its jobs write into job.json: a folder used again never shows an earlier
submission's job as this one's (a job that wrote no status of this submission is failed). Before anything is
submitted, the options are checked once here (``pytest --collect-only`` on one bundled model), so a bad option is one
line, not one failed job per model. Waiting for a job reads its state (the job's own job.json, and the scheduler's
state of the job), never the result file submitit pickles: nothing from the folder is ever unpickled or run.

Exit codes: 0 every job measured and the report is merged, 1 merged with a failed job, 2 the merge was refused
(one line), 4 a usage error (a bad option included).
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Sequence

from harness.api import pytest_argv
from harness.files.atomic import JSONFileError, read_json, write_text
from harness.outcome.results import ResultsFileError
from harness.report.merge import MergeError, expand_models, merge_command, safe_name
from harness.submit_jobs import ended_reason, failure_reason, job_status, record_failure, run_model, wait_for

PROG = "abspos-claims submit"
SUBMIT_FILE = "submit.json"


# ---- the command --------------------------------------------------------------------------------------------


class Parser(argparse.ArgumentParser):
    """argparse with its usage errors as this command's usage error: exit 4 (2 is "the merge was refused")."""

    def error(self, message: str):
        self.print_usage(sys.stderr)
        self.exit(4, f"{self.prog}: error: {message}\n")


def parser() -> argparse.ArgumentParser:
    p = Parser(
        prog=PROG,
        allow_abbrev=False,
        description="Run the claims as one job per model through submitit (SLURM, or local processes), wait for "
        "the jobs and merge their results into one report. Any option not listed here goes to each "
        "job's pytest unchanged (--device cuda, --require-weights, --seq-len, -k, ...).",
    )
    p.add_argument(
        "--models",
        metavar="M",
        help="comma list of model names, groups (bundled, paper, all) or references (hf:, path:, gguf:); one job each",
    )
    p.add_argument(
        "--executor",
        choices=("slurm", "local"),
        default="slurm",
        help="slurm: sbatch through submitit; local: the same jobs as local processes (default slurm)",
    )
    p.add_argument("--partition", help="SLURM partition")
    p.add_argument("--gpus", type=int, default=0, metavar="N", help="GPUs per job (default 0)")
    p.add_argument("--cpus", type=int, default=None, metavar="N", help="CPUs per job")
    p.add_argument("--time", type=int, default=480, metavar="MIN", help="time limit per job in minutes (default 480)")
    p.add_argument("--mem", type=int, default=None, metavar="GB", help="memory per job in GB")
    p.add_argument(
        "--folder", type=Path, default=None, help="where the jobs' reports and logs go (default reports/submit-<time>)"
    )
    p.add_argument("--out", type=Path, default=None, help="the merged report's folder (default <folder>/merged)")
    p.add_argument("--no-wait", action="store_true", help="return once submitted; merge later with --collect")
    p.add_argument(
        "--collect",
        type=Path,
        default=None,
        metavar="FOLDER",
        help="a folder of an earlier --no-wait submission: wait for its jobs, then merge",
    )
    p.add_argument("--allow-mixed", action="store_true", help="as for report merge")
    return p


def executor_for(args, folder: Path):
    import submitit

    ex = submitit.AutoExecutor(folder=folder / "logs", cluster=args.executor)
    params = {
        "name": "abspos-claims",
        "timeout_min": args.time,
        "gpus_per_node": args.gpus,
        "tasks_per_node": 1,
        "nodes": 1,
    }
    params.update({k: v for k, v in (("cpus_per_task", args.cpus), ("mem_gb", args.mem)) if v is not None})
    if args.executor == "slurm" and args.partition:
        params["slurm_partition"] = args.partition
    ex.update_parameters(**params)
    return ex


def fail(message: str, code: int = 4) -> int:
    print(f"{PROG}: {message}", file=sys.stderr)
    return code


def folder_problem(folder: Path) -> str | None:
    """Why the jobs' folder cannot be made or written (None if it can), without writing anything."""
    where = folder
    while not where.exists() and where != where.parent:
        where = where.parent
    if not where.is_dir():
        return f"--folder {folder}: {where} is a file, not a folder"
    if not os.access(where, os.W_OK | os.X_OK):
        return f"--folder {folder}: {where} is not writable here"
    return None


def check_options(options: Sequence[str]) -> str | None:
    """The one line pytest gives for the jobs' options (None when they are accepted): pytest's configure-time checks
    and collection, run once here on one bundled model (its weights are not needed), so a bad option never starts one
    job per model. ``--require-weights`` and ``--device`` are left to the jobs: the weights and GPUs may exist only
    on the compute nodes."""
    probe, skip = [], False
    for o in options:  # what depends on the compute nodes: their weights, their GPUs
        if skip:
            skip = False
        elif o == "--device":
            skip = True
        elif o != "--require-weights" and not o.startswith("--device="):
            probe.append(o)
    argv = pytest_argv("smollm2-135m", None, [*probe, "--collect-only", "-q", "--no-report", "-p", "no:cacheprovider"])
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, errors="replace", timeout=600)
    except subprocess.TimeoutExpired:
        return None  # slow to collect is no reason to refuse: the jobs will say
    if proc.returncode in (0, 5):  # collected (5: nothing selected for this model, which another may have)
        return None
    lines = [ln.strip() for ln in (proc.stderr + proc.stdout).splitlines() if ln.strip()]
    error = next((ln for ln in lines if ln.startswith("ERROR: ") or ": error: " in ln), lines[-1] if lines else "")
    return f"the options {' '.join(options)!r} are refused by pytest: {error.removeprefix('ERROR: ')}"


def submit_command(argv: Sequence[str]) -> int:
    args, rest = parser().parse_known_args(list(argv))
    if "--" in rest:
        rest.remove("--")
    if args.collect is not None:
        return collect(args.collect, args.out, args.allow_mixed)
    models = expand_models([args.models] if args.models else [])
    if not models:
        return fail(
            "--models: name the models, one job each (names, bundled, paper, all, or hf:/path:/gguf: references)"
        )
    if args.executor == "local" and args.partition:
        return fail("--partition is a SLURM option; the local executor runs the jobs here")
    bad = [o for o in ("--models", "--report-dir") if any(a == o or a.startswith(o + "=") for a in rest)]
    if bad:
        return fail(f"{bad[0]}: set by submit for each job (one model, its own report folder)")
    folder = (args.folder or Path("reports") / time.strftime("submit-%Y%m%d-%H%M%S")).absolute()
    why = folder_problem(folder) or check_options(rest)  # nothing is written or submitted before both pass
    if why:
        return fail(why)
    try:
        ex = executor_for(args, folder)
    except ImportError:
        return fail("submitit is not installed: pip install submitit (a dependency of abspos-claims)")
    except Exception as e:
        return fail(f"--executor {args.executor}: {failure_reason(e)}")
    try:
        (folder / "logs").mkdir(parents=True, exist_ok=True)
    except OSError as e:
        return fail(f"--folder {folder}: cannot write there ({e.strerror or e})")
    submission = time.strftime("%Y%m%d-%H%M%S-") + secrets.token_hex(4)
    cwd, jobs = os.getcwd(), []
    for m in models:
        report_dir = folder / safe_name(m)
        try:
            job = ex.submit(run_model, m, str(report_dir), list(rest), cwd, submission)
        except Exception as e:
            record_failure(report_dir, m, None, f"not submitted: {failure_reason(e)}", submission)
            jobs.append((m, None, report_dir))
            continue
        jobs.append((m, job, report_dir))
        print(f"{PROG}: {m}: job {job.job_id} ({args.executor}), report in {report_dir}")
    write_text(
        folder / SUBMIT_FILE,
        json.dumps(
            {
                "executor": args.executor,
                "submission": submission,
                "models": models,
                "options": list(rest),
                "allow_mixed": args.allow_mixed,
                "jobs": [{"model": m, "job": j.job_id if j else None, "report_dir": str(d)} for m, j, d in jobs],
            },
            indent=1,
        ),
    )
    if args.no_wait:
        print(f"{PROG}: {len(jobs)} jobs submitted; when they end: abspos-claims submit --collect {folder}")
        return 0
    for m, job, report_dir in jobs:
        if job is not None and wait_for(job, report_dir, submission) is None:
            record_failure(report_dir, m, job.job_id, ended_reason(job, folder / "logs"), submission)
    return _merge(folder, models, [d for _, _, d in jobs], args.out, args.allow_mixed, submission)


def read_submission(folder: Path) -> dict[str, Any]:
    """submit.json of a submission folder, checked (ValueError: one line saying what is wrong with it)."""
    sub = read_json(folder / SUBMIT_FILE, SUBMIT_FILE)
    jobs = sub.get("jobs") if isinstance(sub, dict) else None
    if not isinstance(sub, dict) or sub.get("executor") not in ("slurm", "local"):
        raise ValueError(f'{folder / SUBMIT_FILE}: not a submission (no "executor" slurm or local)')
    if not isinstance(jobs, list) or not all(
        isinstance(j, dict)
        and isinstance(j.get("model"), str)
        and isinstance(j.get("report_dir"), str)
        and (j.get("job") is None or isinstance(j.get("job"), (str, int)))
        for j in jobs
    ):
        raise ValueError(
            f'{folder / SUBMIT_FILE}: its "jobs" is not a list of {{"model", "job", "report_dir"}} objects (damaged?)'
        )
    if not isinstance(sub.get("models", []), list):
        raise ValueError(f'{folder / SUBMIT_FILE}: its "models" is not a list (damaged?)')
    return sub


def collect(folder: Path, out: Path | None, allow_mixed: bool) -> int:
    """Wait for the jobs of a --no-wait submission (SLURM jobs are found again by id, through the scheduler's
    accounting), then merge. Nothing in the folder is unpickled."""
    try:
        sub = read_submission(folder)
    except JSONFileError as e:
        return fail(f"--collect {folder}: no readable {SUBMIT_FILE} ({e}); give the folder submit printed")
    except ValueError as e:
        return fail(f"--collect {folder}: {e}")
    submission = sub.get("submission")
    for j in sub["jobs"]:
        report_dir = Path(j["report_dir"])
        if j["job"] is None or job_status(report_dir, submission) is not None:
            continue
        if sub["executor"] == "slurm":
            import submitit

            job = submitit.SlurmJob(folder=folder / "logs", job_id=str(j["job"]))
            if wait_for(job, report_dir, submission) is None:
                record_failure(report_dir, j["model"], j["job"], ended_reason(job, folder / "logs"), submission)
        else:  # a local job's process belongs to the submitting process: what it left is all there is
            record_failure(
                report_dir,
                j["model"],
                j["job"],
                f"local job {j['job']} wrote no status (still running, or killed)",
                submission,
            )
    return _merge(
        folder,
        [m for m in sub.get("models") or [j["model"] for j in sub["jobs"]] if isinstance(m, str)],
        [Path(j["report_dir"]) for j in sub["jobs"]],
        out,
        allow_mixed or bool(sub.get("allow_mixed", False)),
        submission,
    )


def _merge(
    folder: Path, models: list[str], dirs: list[Path], out: Path | None, allow_mixed: bool, submission: str | None
) -> int:
    for d in dirs:
        status = job_status(d, submission) or {"model": d.name, "status": "failed", "reason": "no job status"}
        print(
            f"{PROG}: {status.get('model')}: {status.get('status')}"
            + (f": {status['reason']}" if status.get("reason") else "")
        )
    try:
        text, code = merge_command([d for d in dirs], out or folder / "merged", allow_mixed, models)
    except (MergeError, ResultsFileError) as e:
        return fail(f"merge: {e}", 2)
    print(text)
    return code


if __name__ == "__main__":
    raise SystemExit(submit_command(sys.argv[1:]))
