"""``abspos-claims submit``: the claims on several models as one job per model through submitit (SLURM on a cluster,
or local processes), then one merged report (harness.report.merge).

    abspos-claims submit --models paper --executor slurm --partition gpu --gpus 1 --time 240 --mem 64 \\
        --device cuda --require-weights
    abspos-claims submit --models smollm2-135m,gemma3-270m --executor local -k "T5 or T9a"
    abspos-claims submit --collect reports/submit-<time>      # after --no-wait: wait for the jobs, then merge

Each job runs ``python -m pytest claims --models <model> --report-dir <folder>/<model>`` with the options given
(anything not listed here goes to pytest, as with ``abspos-claims run``) and writes ``<folder>/<model>/job.json``:
its status, exit code, and the results.json it wrote, or why it wrote none. A pytest exit of 1 with results (claims
that did not hold) is a measured run; a job that wrote no results (a usage error, a crash, a job killed for time or
memory) is shown as failed in the merged report with its reason. Models are not resolved here: a reference's
weights may exist only on the compute nodes, and each job checks its own.

Exit codes: 0 every job measured and the report is merged, 1 merged with a failed job, 2 the merge was refused
(one line), 4 a usage error.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import time
from pathlib import Path
from typing import Sequence

from harness.api import pytest_argv, run_pytest
from harness.outcome.results import ResultsFileError
from harness.report.merge import JOB_FILE, MergeError, _expand, merge_command, safe_name

PROG = "abspos-claims submit"
SUBMIT_FILE = "submit.json"


# ---- the job ------------------------------------------------------------------------------------------------


def run_model(model: str, report_dir: str, options: Sequence[str], cwd: str) -> dict:
    """One model's claims run (what a job executes): pytest in a subprocess in the submitter's folder (its relative
    paths are the caller's); writes and returns the job status."""
    folder = Path(report_dir)
    folder.mkdir(parents=True, exist_ok=True)
    os.chdir(cwd)
    argv = pytest_argv(model, None, [*options, "--report-dir", str(folder)])
    started = time.time()
    code, last = run_pytest(argv)
    written = sorted(
        (p.resolve() for p in folder.glob("*/results.json") if p.stat().st_mtime >= started - 1),
        key=lambda p: p.stat().st_mtime,
    )  # this job's run (``latest`` moves only once its report is built)
    results = written[-1] if written else None
    status = {
        "model": model,
        "job": _job_id(),
        "host": socket.gethostname(),
        "exit": code,
        "command": argv,
        "seconds": round(time.time() - started, 1),
    }
    if results is not None:
        status.update(
            status="succeeded",
            results=str(results),
            reason="" if code in (0, 1) else f"pytest exited {code} after writing results: {last}",
        )
    else:
        status.update(status="failed", results=None, reason=f"pytest exited {code} without results: {last}")
    (folder / JOB_FILE).write_text(json.dumps(status, indent=1))
    return status


def _job_id() -> str | None:
    try:
        import submitit

        return str(submitit.JobEnvironment().job_id)
    except Exception:
        return os.environ.get("SLURM_JOB_ID")


def _failure_reason(e: BaseException) -> str:
    """The last meaningful line of a job's failure (submitit's exceptions carry the job's whole traceback)."""
    lines = [ln.strip() for ln in str(e).splitlines() if ln.strip() and not set(ln.strip()) <= set("-=")]
    return (lines[-1] if lines else type(e).__name__)[:300]


def _record_failure(folder: Path, model: str, job_id, reason: str) -> dict:
    """job.json for a job that ended before writing its own (killed for time or memory, a node failure)."""
    status = {"model": model, "job": job_id, "status": "failed", "results": None, "reason": reason}
    if not (folder / JOB_FILE).exists():
        folder.mkdir(parents=True, exist_ok=True)
        (folder / JOB_FILE).write_text(json.dumps(status, indent=1))
        return status
    return json.loads((folder / JOB_FILE).read_text())


# ---- the command --------------------------------------------------------------------------------------------


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
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


def submit_command(argv: Sequence[str]) -> int:
    args, rest = parser().parse_known_args(list(argv))
    if "--" in rest:
        rest.remove("--")
    if args.collect is not None:
        return collect(args.collect, args.out, args.allow_mixed)
    models = _expand([args.models] if args.models else [])
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
    try:
        ex = executor_for(args, folder)  # nothing is written before the executor is accepted
    except ImportError:
        return fail("submitit is not installed: pip install submitit (a dependency of abspos-claims)")
    except Exception as e:
        return fail(f"--executor {args.executor}: {_failure_reason(e)}")
    folder.mkdir(parents=True, exist_ok=True)
    cwd, jobs = os.getcwd(), []
    for m in models:
        report_dir = folder / safe_name(m)
        try:
            job = ex.submit(run_model, m, str(report_dir), list(rest), cwd)
        except Exception as e:
            _record_failure(report_dir, m, None, f"not submitted: {_failure_reason(e)}")
            jobs.append((m, None, report_dir))
            continue
        jobs.append((m, job, report_dir))
        print(f"{PROG}: {m}: job {job.job_id} ({args.executor}), report in {report_dir}")
    (folder / SUBMIT_FILE).write_text(
        json.dumps(
            {
                "executor": args.executor,
                "models": models,
                "options": list(rest),
                "allow_mixed": args.allow_mixed,
                "jobs": [{"model": m, "job": j.job_id if j else None, "report_dir": str(d)} for m, j, d in jobs],
            },
            indent=1,
        )
    )
    if args.no_wait:
        print(f"{PROG}: {len(jobs)} jobs submitted; when they end: abspos-claims submit --collect {folder}")
        return 0
    for m, job, report_dir in jobs:
        if job is None:
            continue
        try:
            job.result()
        except Exception as e:
            _record_failure(report_dir, m, job.job_id, f"job {job.job_id} ended without results: {_failure_reason(e)}")
    return _merge(folder, models, [d for _, _, d in jobs], args.out, args.allow_mixed)


def collect(folder: Path, out: Path | None, allow_mixed: bool) -> int:
    """Wait for the jobs of a --no-wait submission (SLURM jobs are found again by id), then merge."""
    try:
        sub = json.loads((folder / SUBMIT_FILE).read_text())
    except (OSError, ValueError) as e:
        return fail(f"--collect {folder}: no readable {SUBMIT_FILE} ({e}); give the folder submit printed")
    for j in sub["jobs"]:
        report_dir = Path(j["report_dir"])
        if (report_dir / JOB_FILE).exists() or j["job"] is None:
            continue
        if sub["executor"] == "slurm":
            import submitit

            job = submitit.SlurmJob(folder=folder / "logs", job_id=j["job"])
            try:
                job.result()
            except Exception as e:
                _record_failure(
                    report_dir, j["model"], j["job"], f"job {j['job']} ended without results: {_failure_reason(e)}"
                )
        else:  # a local job's process belongs to the submitting process: what it left is all there is
            _record_failure(
                report_dir, j["model"], j["job"], f"local job {j['job']} wrote no status (still running, or killed)"
            )
    return _merge(
        folder,
        sub["models"],
        [Path(j["report_dir"]) for j in sub["jobs"]],
        out,
        allow_mixed or sub.get("allow_mixed", False),
    )


def _merge(folder: Path, models: list[str], dirs: list[Path], out: Path | None, allow_mixed: bool) -> int:
    for d in dirs:
        try:
            status = json.loads((d / JOB_FILE).read_text())
        except (OSError, ValueError):
            status = {"model": d.name, "status": "failed", "reason": "no job status"}
        print(
            f"{PROG}: {status['model']}: {status.get('status')}"
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
