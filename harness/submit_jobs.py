"""The job side of ``abspos-claims submit`` (harness.submit): what one job runs (``run_model``: one model's claims,
then its ``job.json``), and how the submitter reads a job's state without unpickling anything (``job_status``,
``wait_for``, ``ended_reason``) and records a job that ended without a status (``record_failure``). Every job.json
carries its submission's id, so a folder used again never shows an earlier submission's job as this one's."""

from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path
from typing import Any, Sequence

from harness.api import pytest_argv, run_pytest
from harness.files.atomic import JSONFileError, read_json, write_text
from harness.report.merge_inputs import JOB_FILE


def run_model(model: str, report_dir: str, options: Sequence[str], cwd: str, submission: str | None = None) -> dict:
    """One model's claims run (what a job executes): pytest in a subprocess in the submitter's folder (its relative
    paths are the caller's); writes and returns the job status, marked with its ``submission``."""
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
        "submission": submission,
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
    write_text(folder / JOB_FILE, json.dumps(status, indent=1))
    return status


def _job_id() -> str | None:
    try:
        import submitit

        return str(submitit.JobEnvironment().job_id)
    except Exception:
        return os.environ.get("SLURM_JOB_ID")


def failure_reason(e: BaseException) -> str:
    """The last meaningful line of a job's failure (submitit's exceptions carry the job's whole traceback)."""
    lines = [ln.strip() for ln in str(e).splitlines() if ln.strip() and not set(ln.strip()) <= set("-=")]
    return (lines[-1] if lines else type(e).__name__)[:300]


def job_status(folder: Path, submission: str | None) -> dict[str, Any] | None:
    """The job.json in ``folder`` if it is this ``submission``'s (None otherwise: absent, damaged, or left there by
    an earlier submission to the same folder)."""
    try:
        status = read_json(folder / JOB_FILE, "job status")
    except JSONFileError:
        return None
    if not isinstance(status, dict) or status.get("submission") != submission:
        return None
    return status


def record_failure(folder: Path, model: str, job_id, reason: str, submission: str | None) -> dict:
    """job.json for a job of ``submission`` that ended before writing its own (killed for time or memory, a node
    failure); a status the job itself wrote for this submission is kept, one from an earlier submission replaced."""
    own = job_status(folder, submission)
    if own is not None:
        return own
    status = {
        "model": model,
        "submission": submission,
        "job": job_id,
        "status": "failed",
        "results": None,
        "reason": reason,
    }
    folder.mkdir(parents=True, exist_ok=True)
    write_text(folder / JOB_FILE, json.dumps(status, indent=1))
    return status


def wait_for(job, folder: Path, submission: str | None, poll: float = 2.0) -> dict | None:
    """Wait until the job has written its status for this submission or the executor says it has ended; returns
    that status, or None when the job ended without one. Reads the job's state (submitit's ``done``: its process,
    or the scheduler's accounting), never its result pickle."""
    while True:
        status = job_status(folder, submission)
        if status is not None:
            return status
        if job.done():
            return job_status(folder, submission)  # written just before it ended
        time.sleep(poll)


def ended_reason(job, logs: Path) -> str:
    """Why a job ended without a status: the scheduler's state and the last line of its error log (text)."""
    state = ""
    try:
        state = str(job.state)
    except Exception:
        pass
    tail = ""
    for err in sorted(logs.glob(f"{job.job_id}_*_log.err")):
        try:
            with open(err, "rb") as f:
                f.seek(max(0, os.fstat(f.fileno()).st_size - 8192))
                lines = [ln.strip() for ln in f.read().decode(errors="replace").splitlines() if ln.strip()]
            tail = next((ln for ln in reversed(lines) if not set(ln) <= set("-=")), tail)
        except OSError:
            pass
    return f"job {job.job_id} ended without results ({state or 'state unknown'})" + (f": {tail[:300]}" if tail else "")
