"""The nightly's "Job status for the merge" step (.github/workflows/nightly-gpu.yml): what one model's job uploads.

Whatever happened to the run, its measurements go up: the run folder pytest wrote under ``$REPORT_DIR`` (``latest``,
or, when the report was never built, e.g. a stop signal while it was written, the newest ``run-*`` folder holding a
results.json) is copied into ``upload/``, with ``job.json`` saying how the job ended. A job with results is a measured
run (claims that did not hold included); one without is a failed model in the merged report, with the reason.

Standard library only: it runs on the runner's own Python, whatever became of the job's venv.

    REPORT_DIR=reports/nightly-job MODEL=llama-3.2-1b CLAIMS_OUTCOME=failure JOB_STATUS=failure \\
        python3 scripts/nightly_job_status.py [UPLOAD]
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path


def run_folder(report: Path) -> Path | None:
    """The run to upload: ``latest`` when it holds results (its report was built), else the newest run folder with a
    results.json (``latest`` moves only once a report is complete), else None."""
    latest = report / "latest"
    if (latest / "results.json").is_file():
        return latest.resolve()
    runs = [p.parent for p in report.glob("*/results.json") if p.is_file() and p.parent.name != "latest"]
    return max(runs, key=lambda p: (p / "results.json").stat().st_mtime) if runs else None


def last_line(log: Path) -> str:
    if not log.is_file():
        return ""
    return ([ln.strip() for ln in log.read_text(errors="replace").splitlines() if ln.strip()] or [""])[-1]


def main(upload: Path) -> dict:
    report = Path(os.environ["REPORT_DIR"])
    model = os.environ["MODEL"]
    outcome, job = os.environ.get("CLAIMS_OUTCOME") or "skipped", os.environ.get("JOB_STATUS")
    upload.mkdir(parents=True, exist_ok=True)
    run = run_folder(report)
    if run is not None:
        shutil.copytree(run, upload, dirs_exist_ok=True, symlinks=False)
    if (upload / "results.json").is_file():
        built = (upload / "report.md").is_file()
        status = "succeeded"
        reason = "" if built else f"the run's report was not built ({last_line(report / 'pytest.log')})"
    elif outcome == "skipped":
        status = "cancelled" if job == "cancelled" else "failed"
        reason = (
            f"the job {'was cancelled' if job == 'cancelled' else 'failed'} before the claims ran "
            f"(setup or GPU step; see the job's log)"
        )
    else:
        status, reason = "failed", f"pytest {outcome} without results: {last_line(report / 'pytest.log')}"
    job_status = {
        "model": model,
        "status": status,
        "reason": reason,
        "results": None,
        "job": f"{os.environ.get('GITHUB_JOB')} ({model})",
    }
    (upload / "job.json").write_text(json.dumps(job_status, indent=1))
    print(status, reason)
    return job_status


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "upload"))
