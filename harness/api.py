"""A notebook API: run the claims and get their verdicts back as records.

    >>> from harness import verify
    >>> v = verify("smollm2-135m", claims=["T9a", "T7"])
    >>> v.not_held()            # a Verdicts, shown as a table in a notebook
    >>> print(v.table())

``verify`` runs the claims in a pytest subprocess, exactly as ``abspos-claims run`` does (``pytest_argv`` builds
the command line of both), streams pytest's output, and reads the run's ``results.json``. Importing this module
loads neither torch nor transformers: the models run in the subprocess.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Iterable, Sequence

from harness.files.paths import ROOT
from harness.outcome.results import ResultsFileError, load_results
from harness.outcome.verdict import Verdict
from harness.report.cells import claim_key, measured, model_label, test_name
from harness.report.render import to_markdown
from harness.run import signals
from harness.spec.claims import claim, claim_test

CLAIMS_DIR = ROOT / "claims"
USAGE_ERROR = 4  # pytest's exit code for a usage error


class RunInterrupted(KeyboardInterrupt):
    """A run stopped by SIGINT (a notebook's interrupt), SIGTERM or SIGHUP sent to this process: its pytest was told
    too, wrote what had finished (marked as interrupted) and ended. ``by`` names the signal; ``verdicts`` holds the
    finished tests' verdicts (``Verdicts``; empty when none had finished) and ``verdicts.report`` the partial report
    when ``report_dir`` was given; ``folder`` is where the results are kept (a temporary folder is kept too)."""

    def __init__(self, by: str, returncode: int | None = None):
        super().__init__(f"interrupted by {by}")
        self.by, self.returncode, self.verdicts, self.folder = by, returncode, None, None


class RunFailed(RuntimeError):
    """pytest ended without a claims result: a usage error (exit 4) or no results.json; or no model was named. The
    message is pytest's error line (its last line when it printed none); ``returncode`` is its exit code."""

    def __init__(self, message: str, returncode: int | None = None):
        super().__init__(message)
        self.returncode = returncode


# ---- the pytest command line (shared with `abspos-claims run`) -----------------------------------------


def as_names(value: str | Iterable[str] | None) -> list[str]:
    """A comma list ("T7,T9a") or a list of strings, as a list of non-empty names."""
    if value is None:
        return []
    parts = value.split(",") if isinstance(value, str) else [p for v in value for p in str(v).split(",")]
    return [p.strip() for p in parts if p.strip()]


def model_names(models: str | Iterable[str] | None) -> list[str]:
    """The models named (a comma list or a list); naming none ("", ",", [], None) raises ``RunFailed`` (exit code 4)
    before anything runs, never a run of the suite's default models."""
    names = as_names(models)
    if not names:
        raise RunFailed(
            f"models {models!r}: no model named; name models or groups (bundled, paper, all), e.g. "
            f'"smollm2-135m" or "bundled"',
            USAGE_ERROR,
        )
    return names


def keyword_expression(claim_ids: Sequence[str]) -> str:
    """The ``-k`` expression selecting every test of the claims (their test function names); an unknown id raises
    ``harness.spec.claims.UnknownClaim`` (one line listing the registered ids)."""
    return " or ".join(dict.fromkeys(t for cid in claim_ids for t in claim(cid).tests))


def split_keyword(options: Sequence[str]) -> tuple[str | None, list[str]]:
    """(a ``-k`` expression among pytest options, or None; the other options), so ``--claims`` can be narrowed
    by the user's own ``-k`` instead of replacing it or being replaced by it."""
    expressions, rest, args = [], [], iter(options)
    for a in args:
        if a == "-k":
            expressions.append(next(args, ""))
        elif a.startswith("-k") and len(a) > 2:
            expressions.append(a[3:] if a.startswith("-k=") else a[2:])
        else:
            rest.append(a)
    return (
        " and ".join(f"({e})" for e in expressions) if len(expressions) > 1 else expressions[0] if expressions else None
    ), rest


def pytest_argv(
    models: str | Iterable[str] | None = None, claims: str | Iterable[str] | None = None, options: Sequence[str] = ()
) -> list[str]:
    """The command line of a claims run: ``python -m pytest <repo>/claims [--models M] [-k <claims' tests>]
    <options>``; options pass through unchanged (a ``-k`` of theirs narrows the claims' selection). ``models`` None
    keeps the suite's default; an empty one raises ``RunFailed``, an unknown claim ``UnknownClaim``, before anything
    runs."""
    argv = [sys.executable, "-m", "pytest", str(CLAIMS_DIR)]
    if models is not None:
        argv += ["--models", ",".join(model_names(models))]
    ids, options = as_names(claims), list(options)
    if ids:
        selected = keyword_expression(ids)
        user, options = split_keyword(options)
        argv += ["-k", selected if user is None else f"({selected}) and ({user})"]
    return argv + options


def settings_options(**settings) -> list[str]:
    """``--seq-len 256 --seed 3 ...`` for each setting given (None keeps the suite's default)."""
    return [a for k, v in settings.items() if v is not None for a in (f"--{k.replace('_', '-')}", str(v))]


def worker_options(workers: int | None) -> list[str]:
    """pytest-xdist workers, one model per worker (``-n N --dist loadgroup``); None runs in one process."""
    return [] if workers is None else ["-n", str(workers), "--dist", "loadgroup"]


def run_pytest(argv: Sequence[str], echo: bool = True) -> tuple[int, str]:
    """Run pytest in the caller's folder (relative paths in references and options are the caller's; the claims
    folder is given absolute, so pytest still finds the repository's configuration), its stdout and stderr streamed to ``sys.stdout`` when ``echo`` (so a
    notebook shows them); returns (exit code, the line saying what went wrong: the last error line it printed,
    ``ERROR: ...`` or argparse's ``...: error: ...``, else its last non-empty line)."""
    last = error = ""
    proc = subprocess.Popen(
        list(argv),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        errors="replace",
        bufsize=1,
        env=signals.child_env({**os.environ, "PYTHONUNBUFFERED": "1"}),
    )
    try:
        with signals.forwarding(proc) as received:  # SIGINT/SIGTERM/SIGHUP: pytest writes what finished, then ends
            for line in proc.stdout:
                if echo:
                    sys.stdout.write(line)
                    sys.stdout.flush()
                last = line.strip() or last
                if line.startswith("ERROR: ") and not line.startswith("ERROR: usage:") or ": error: " in line:
                    error = line.strip()
            code = proc.wait()
        if received:  # the caller was told to stop: its run has ended and written what finished
            raise RunInterrupted(signal.Signals(received[0]).name, code)
        return code, error or last
    except BaseException:  # an interrupted notebook cell (or any error here) ends the run it started, which
        signals.stop(proc)  # still writes what finished (SIGINT; SIGKILL only if it hangs): never orphaned
        raise
    finally:
        proc.stdout.close()


# ---- the verdicts ------------------------------------------------------------------------------------


def headline(test: str, figures: list) -> dict:
    """The test's headline figure(s), {name: value}, as the report picks them (``claims.ClaimTest.headline``)."""
    c = claim_test(test)
    values = {f["name"]: f.get("value") for f in figures}
    return {n: values[n] for n in (c.headline if c else ()) if n in values}


def verdict_record(r: dict) -> dict:
    """One plain record of a results.json record: claim, test (function name), model, verdict, reason, headline,
    figures (the record's figure list: name, value, paper, ci, note)."""
    test, figures = test_name(r), list(r.get("figures") or [])
    return {
        "claim": r["claim"],
        "test": test,
        "model": model_label(r),
        "verdict": Verdict.of(r).value,
        "reason": r.get("reason") or "",
        "headline": headline(test, figures),
        "figures": figures,
    }


def headline_text(rec: dict) -> str:
    """The headline as the report's lead table shows it ("value [lo, hi]")."""
    c = claim_test(rec["test"])
    return measured(rec, tuple(rec["headline"]), c.column if c else None)


def aligned(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A plain-text table, columns padded to their widest cell."""
    widths = [max(len(str(c)) for c in col) for col in zip(header, *rows)]
    return "\n".join("  ".join(str(c).ljust(w) for c, w in zip(row, widths)).rstrip() for row in [header, *rows])


TABLE = ("claim", "test", "model", "verdict", "headline")


class Verdicts(list):
    """The verdicts of a claims run: one plain dict per claim test and model (``verdict_record``), in claim order.
    ``results`` is the whole results.json; ``report`` the path of its report.md, or None when it was not kept."""

    def __init__(self, records: Iterable[dict] = (), results: dict | None = None, report: Path | None = None):
        super().__init__(records)
        self.results, self.report = results if results is not None else {}, report

    @classmethod
    def from_results(cls, results: dict, report: Path | None = None) -> "Verdicts":
        records = sorted(
            (verdict_record(r) for r in results["records"]),
            key=lambda v: (claim_key(v["claim"]), v["test"], v["model"]),
        )
        return cls(records, results, report)

    def _where(self, keep) -> "Verdicts":
        return Verdicts([v for v in self if keep(v)], self.results, self.report)

    def held(self) -> "Verdicts":
        return self._where(lambda v: v["verdict"] == Verdict.HELD)

    def not_held(self) -> "Verdicts":
        return self._where(lambda v: v["verdict"] == Verdict.NOT_HELD)

    def by_model(self) -> dict[str, "Verdicts"]:
        out: dict[str, Verdicts] = {}
        for v in self:
            out.setdefault(v["model"], Verdicts([], self.results, self.report)).append(v)
        return out

    def rows(self) -> list[list[str]]:
        return [[v["claim"], v["test"], v["model"], v["verdict"], headline_text(v)] for v in self]

    def table(self) -> str:
        return aligned(TABLE, self.rows())

    def _repr_markdown_(self) -> str:
        return to_markdown([("table", list(TABLE), self.rows())], Path("."))


# ---- running -----------------------------------------------------------------------------------------


def _stamp(report_dir: Path):
    """Which results.json ``<report_dir>/latest`` points at, and when it was written (None: none yet)."""
    path = report_dir / "latest" / "results.json"
    try:
        return path.resolve(), path.stat().st_mtime_ns
    except OSError:
        return None


def verify(
    models: str | Sequence[str] = "bundled",
    claims: str | Sequence[str] | None = None,
    *,
    seq_len: int | None = None,
    n_prompts: int | None = None,
    seed: int | None = None,
    device: str | None = None,
    dtype: str | None = None,
    corpus: str | None = None,
    workers: int | None = None,
    report_dir: str | Path | None = None,
    extra_args: Sequence[str] = (),
    quiet: bool = False,
) -> Verdicts:
    """Run the claims (all, or the ids in ``claims``) on ``models`` (names or groups, a comma list or a list) in a
    pytest subprocess and return their verdicts. Settings left None keep the suite's defaults; ``workers`` runs
    pytest-xdist workers (one model per worker); ``extra_args`` go to pytest unchanged. pytest's output is
    streamed unless ``quiet``. The report is written to a temporary folder and removed, unless ``report_dir`` is
    given: then it stays there, in a run folder of its own (``Verdicts.report``; calls sharing a ``report_dir`` never
    share a folder). An unknown claim id raises ``harness.spec.claims.UnknownClaim`` and naming no model ``RunFailed``
    before anything runs; a usage error (exit 4) or a run without results raises ``RunFailed`` with pytest's error
    line (its last line when it printed none). Interrupted (a notebook's interrupt, SIGTERM, SIGHUP), its pytest is
    told too and writes what finished; ``RunInterrupted`` (a ``KeyboardInterrupt``) is then raised, carrying those
    verdicts and the folder they are kept in."""
    keyword_expression(as_names(claims))  # an unknown claim before anything is made or run
    model_names(models)  # no model named (None, "", []): before anything runs, never every model
    folder = Path(report_dir) if report_dir is not None else Path(tempfile.mkdtemp(prefix="abspos-verify-"))
    run_id = time.strftime("run-%Y%m%d-%H%M%S") + f"-{secrets.token_hex(3)}"  # its own folder, whatever else runs
    options = [
        *settings_options(seq_len=seq_len, n_prompts=n_prompts, seed=seed, device=device, dtype=dtype, corpus=corpus),
        *worker_options(workers),
        "--report-dir",
        str(folder),
        "--run-id",
        run_id,
        *extra_args,
    ]
    keep = report_dir is not None
    try:
        argv = pytest_argv(models, claims, options)
        before = _stamp(folder)
        try:
            code, last = run_pytest(argv, echo=not quiet)
        except RunInterrupted as stopped:
            keep, stopped.folder = True, folder / run_id  # the finished results are kept, whatever the folder
            stopped.verdicts = _partial(folder / run_id, report_dir is not None)
            raise
        mine = folder / run_id / "results.json"
        after = (mine.resolve(), 0) if mine.exists() else _stamp(folder)  # (a stand-in run_pytest writes `latest`)
        if code == 4 or after is None or after == before:
            raise RunFailed(last or f"pytest exited with code {code} and wrote no results", code)
        try:
            results = load_results(after[0])
        except ResultsFileError as e:
            raise RunFailed(str(e), code) from None
    finally:
        if not keep:
            shutil.rmtree(folder, ignore_errors=True)
    report = after[0].parent / "report.md" if report_dir is not None else None
    return Verdicts.from_results(results, report if report and report.exists() else None)


def _partial(run_folder: Path, with_report: bool) -> Verdicts:
    """The verdicts of an interrupted run's finished tests (empty when it wrote nothing)."""
    try:
        results = load_results(run_folder / "results.json")
    except ResultsFileError:
        return Verdicts()
    report = run_folder / "report.md"
    return Verdicts.from_results(results, report if with_report and report.exists() else None)
