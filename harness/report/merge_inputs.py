"""The inputs of a merge (harness.report.merge): each RUN argument read as a run's results.json or as the
job.json of a job that ended without results (``harness.submit``), and the runs labelled uniquely. A missing or
unreadable input is a ResultsFileError (one line); the same run twice, or nothing at all, a MergeError. What differs
between the runs (settings, commits, versions) is refused or warned of here too (``run_warnings``)."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from harness.files.atomic import read_json
from harness.outcome.results import ResultsFileError, RunResult, load_run, results_file

JOB_FILE = "job.json"


class MergeError(ResultsFileError):
    """Runs that cannot be merged: the message is one line naming the runs and why."""


def _job_status(path: Path) -> dict:
    job = read_json(path, "job status", ResultsFileError)
    if not isinstance(job, dict) or not isinstance(job.get("model"), str):
        raise ResultsFileError(f'{path}: not a job status (no "model")')
    return job


def read_input(arg) -> tuple[str, Path, RunResult | dict]:
    """("run", results.json, the run loaded) or ("job", job.json, status) for one merge input; a missing or unreadable
    input raises ResultsFileError (one line)."""
    p = Path(arg)
    if p.is_dir():
        if (p / "results.json").exists():
            p = p / "results.json"
        elif (p / JOB_FILE).exists():  # a job's --report-dir folder: what the job said it wrote
            p = p / JOB_FILE
        elif (p / "latest" / "results.json").exists():  # a --report-dir folder: its latest run
            p = (p / "latest" / "results.json").resolve()
    if p.name == JOB_FILE:
        job = _job_status(p)
        found = job.get("results")
        if found and not Path(found).exists():  # the job's folder moved (copied off the node): its run beside it
            found = next(
                (
                    str(q)
                    for q in (p.parent / "latest" / "results.json", p.parent / Path(found).parent.name / "results.json")
                    if q.exists()
                ),
                found,
            )
        if job.get("status") == "succeeded" and found and Path(found).exists():
            run = load_run(found)
            if job["model"] in run.models:
                return "run", Path(found), run
            job = {  # the job's own model is never replaced by whatever its results path now holds
                **job,
                "status": "failed",
                "reason": f"its results {found} hold {', '.join(run.models) or 'no model'}, not {job['model']}",
            }
        return "job", p, job
    if p.is_dir():
        raise ResultsFileError(f"{p}: no results.json (nor a job.json) in this folder: not a claims run")
    return "run", results_file(p), load_run(p)


def read_inputs(inputs) -> tuple[list[dict], list[dict]]:
    """The runs ({"label", "path", "results": the ``RunResult``}, each labelled uniquely) and the job statuses ({"path", ...}) among the
    inputs; the same run twice, or nothing at all, is a MergeError."""
    runs, jobs = [], []
    for arg in inputs:
        kind, path, data = read_input(arg)
        if kind == "job":
            jobs.append({"path": path, **data})
            continue
        label = str(data.name or path.parent.name)
        if any(r["label"] == label for r in runs):  # runs started in the same second on two machines
            label = f"{label} ({', '.join(data.models) or path.parent})"
        if any(r["path"] == path for r in runs):
            raise MergeError(f"{path}: given twice")
        runs.append({"label": label, "path": path, "results": data})
    if not runs and not jobs:
        raise MergeError("nothing to merge: give the runs' results.json files or run folders")
    return runs, jobs


def refuse_output_in_inputs(inputs, out: Path) -> None:
    """MergeError (one line) when ``out`` is, or lies inside, an input's folder (the folder given, or the one holding
    the results.json or job.json it names): the merge would write over that input's results and reports."""
    target = out.resolve()
    for arg in inputs:
        given = Path(arg)
        folders = [given if given.is_dir() else given.parent]
        try:
            folders.append(read_input(arg)[1].resolve().parent)
        except (ResultsFileError, OSError):
            pass  # an unreadable input is refused by the merge itself, in its own line
        for folder in folders:
            folder = folder.resolve()
            if target == folder or folder in target.parents:
                raise MergeError(
                    f"--out {out}: {'is' if target == folder else 'lies inside'} the input {arg}'s folder "
                    f"{folder}; the merge would write over it: choose another --out"
                )


#: The file a merge writes beside its results.json ({"results_sha256"}): a folder holding it, with that results.json
#: unchanged, is a merge's own earlier output, which a merge may write over
MERGE_MARK = ".abspos-merge.json"
#: What a run's folder holds (a run, a report, a job's status): a merge never writes over them
RUN_FILES = ("results.json", "report.md", "report.html", "summary.md", JOB_FILE, "submit.json", "figures")


def merge_output(folder: Path) -> bool:
    """Whether ``folder`` is a merge's own earlier output: it holds the mark, and the results.json beside it is the one
    the mark names (its sha256) or, if a merge was stopped between the two, a merged run's (its "merged" section)."""
    try:
        mark = read_json(folder / MERGE_MARK, "merge mark", ResultsFileError)
        if not (folder / "results.json").exists():
            return True
        digest = hashlib.sha256((folder / "results.json").read_bytes()).hexdigest()
        if isinstance(mark, dict) and mark.get("results_sha256") == digest:
            return True
        return load_run(folder / "results.json").merged is not None
    except (ResultsFileError, OSError):
        return False


def refuse_output_over_a_run(out: Path) -> None:
    """MergeError (one line) when ``out`` holds a run, a report or a job's status (``RUN_FILES``, or a ``latest``
    run) that no merge wrote there: the merge would write over that run's results and report."""
    held = [name for name in (*RUN_FILES, "latest") if os.path.lexists(out / name)]
    if held and not (merge_output(out) and "latest" not in held):
        raise MergeError(
            f"--out {out}: holds {', '.join(held)} of a run that is not this merge's earlier output; the merge would "
            "write over it: choose another --out (an empty or new folder)"
        )


# ---- what differs between the runs -----------------------------------------------------------------------


def code_of(run: RunResult) -> dict:
    return run.provenance.get("code") or {}


def brief(value) -> str:
    text = value if isinstance(value, str) else json.dumps(value) if value is not None else ""
    return " ".join(text.split())[:300]


def _differ(runs: list, value, what: str, show) -> str | None:
    """One line naming each run whose ``value`` differs from the first run's, or None."""
    first = value(runs[0])
    odd = [r for r in runs[1:] if value(r) != first]
    if not odd:
        return None
    return f"{what} differ: " + "; ".join(f"{show(value(r))} in {r['label']}" for r in [runs[0], *odd])


def _settings_line(runs: list) -> str | None:
    a = dict(runs[0]["results"].recorded_settings)
    out = []
    for r in runs[1:]:
        b = dict(r["results"].recorded_settings)
        keys = [k for k in dict.fromkeys([*a, *b]) if a.get(k) != b.get(k)]
        if keys:
            out.append(
                ", ".join(
                    f"{k} {a.get(k, '(unset)')} in {runs[0]['label']} vs {b.get(k, '(unset)')} in {r['label']}"
                    for k in keys
                )
            )
    return "settings differ: " + "; ".join(out) if out else None


def run_warnings(runs: list, allow_mixed: bool) -> list[str]:
    """Settings and commits that differ: refused (MergeError) unless ``allow_mixed``, then warnings; versions,
    uncommitted changes and interrupted runs: warnings."""
    warnings: list[str] = []
    mixed = [
        line
        for line in (
            _settings_line(runs) if runs else None,
            _differ(
                runs,
                lambda r: code_of(r["results"]).get("commit"),
                "code commits",
                lambda c: f"commit {c[:12]}" if c else "an unknown commit",
            )
            if runs
            else None,
        )
        if line
    ]
    if mixed and not allow_mixed:
        raise MergeError(
            "; ".join(mixed) + " (figures of runs made differently are not one run; merge runs of the "
            "same settings and commit, or pass --allow-mixed)"
        )
    warnings += [f"mixed runs merged (--allow-mixed): {line}" for line in mixed]
    first_versions = runs[0]["results"].versions if runs else {}
    diff_keys = sorted(
        {k for r in runs for k, x in r["results"].versions.items() if x != first_versions.get(k)}
        | {k for r in runs for k in first_versions if k not in r["results"].versions}
    )
    if diff_keys:
        warnings.append(
            f"library versions differ between the runs ({', '.join(diff_keys)}): each model's "
            f"versions are in the table below"
        )
    dirty = [r["label"] for r in runs if code_of(r["results"]).get("dirty")]
    if dirty:
        warnings.append(f"run(s) {', '.join(dirty)} had uncommitted changes: their code may differ beyond the commit")
    for r in runs:
        if r["results"].interrupted:
            warnings.append(
                f"run {r['label']} was interrupted ({brief(r['results'].interrupted)}): its models may lack tests"
            )
    return warnings
