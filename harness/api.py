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
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Iterable, Sequence

from .claim_registry import claim
from .criteria import CRITERIA
from .paths import ROOT
from .render import to_markdown
from .report import claim_key, measured, model_label, test_name
from .results import ResultsFileError, load_results
from .verdict import verdict_of

CLAIMS_DIR = ROOT / "claims"


class RunFailed(RuntimeError):
    """pytest ended without a claims result: a usage error (exit 4) or no results.json. The message is the last
    line pytest printed; ``returncode`` is its exit code."""

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


def keyword_expression(claim_ids: Sequence[str]) -> str:
    """The ``-k`` expression selecting every test of the claims (their test function names); an unknown id raises
    ``claim_registry.UnknownClaim`` (one line listing the registered ids)."""
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
    return (" and ".join(f"({e})" for e in expressions) if len(expressions) > 1 else
            expressions[0] if expressions else None), rest


def pytest_argv(models: str | Iterable[str] | None = None, claims: str | Iterable[str] | None = None,
                options: Sequence[str] = ()) -> list[str]:
    """The command line of a claims run: ``python -m pytest <repo>/claims [--models M] [-k <claims' tests>]
    <options>``; options pass through unchanged (a ``-k`` of theirs narrows the claims' selection). Raises
    ``UnknownClaim`` before anything runs."""
    argv = [sys.executable, "-m", "pytest", str(CLAIMS_DIR)]
    if as_names(models):
        argv += ["--models", ",".join(as_names(models))]
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
    notebook shows them); returns (exit code, the last non-empty line it printed)."""
    last = ""
    proc = subprocess.Popen(list(argv), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            errors="replace", bufsize=1, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        for line in proc.stdout:
            if echo:
                sys.stdout.write(line)
                sys.stdout.flush()
            last = line.strip() or last
        return proc.wait(), last
    except BaseException:  # an interrupted notebook cell ends the run it started
        proc.kill()
        proc.wait()
        raise
    finally:
        proc.stdout.close()


# ---- the verdicts ------------------------------------------------------------------------------------

def headline(test: str, figures: list) -> dict:
    """The test's headline figure(s), {name: value}, as the report picks them (``criteria.Criterion.headline``)."""
    c = CRITERIA.get(test)
    values = {f["name"]: f.get("value") for f in figures}
    return {n: values[n] for n in (c.headline if c else ()) if n in values}


def verdict_record(r: dict) -> dict:
    """One plain record of a results.json record: claim, test (function name), model, verdict, reason, headline,
    figures (the record's figure list: name, value, paper, ci, note)."""
    test, figures = test_name(r), list(r.get("figures") or [])
    return {"claim": r["claim"], "test": test, "model": model_label(r), "verdict": verdict_of(r),
            "reason": r.get("reason") or "", "headline": headline(test, figures), "figures": figures}


def headline_text(rec: dict) -> str:
    """The headline as the report's lead table shows it ("value [lo, hi]")."""
    c = CRITERIA.get(rec["test"])
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
        records = sorted((verdict_record(r) for r in results["records"]),
                         key=lambda v: (claim_key(v["claim"]), v["test"], v["model"]))
        return cls(records, results, report)

    def _where(self, keep) -> "Verdicts":
        return Verdicts([v for v in self if keep(v)], self.results, self.report)

    def held(self) -> "Verdicts":
        return self._where(lambda v: v["verdict"] == "held")

    def not_held(self) -> "Verdicts":
        return self._where(lambda v: v["verdict"] == "not held")

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


def verify(models: str | Sequence[str] = "bundled", claims: str | Sequence[str] | None = None, *,
           seq_len: int | None = None, n_prompts: int | None = None, seed: int | None = None,
           device: str | None = None, dtype: str | None = None, corpus: str | None = None,
           workers: int | None = None, report_dir: str | Path | None = None, extra_args: Sequence[str] = (),
           quiet: bool = False) -> Verdicts:
    """Run the claims (all, or the ids in ``claims``) on ``models`` (names or groups, a comma list or a list) in a
    pytest subprocess and return their verdicts. Settings left None keep the suite's defaults; ``workers`` runs
    pytest-xdist workers (one model per worker); ``extra_args`` go to pytest unchanged. pytest's output is
    streamed unless ``quiet``. The report is written to a temporary folder and removed, unless ``report_dir`` is
    given: then it stays there, ``<report_dir>/latest/report.md`` (``Verdicts.report``). An unknown claim id raises
    ``claim_registry.UnknownClaim`` before anything runs; a usage error (exit 4) or a run without results raises
    ``RunFailed`` with pytest's last line."""
    keyword_expression(as_names(claims))  # an unknown claim before anything is made or run
    folder = Path(report_dir) if report_dir is not None else Path(tempfile.mkdtemp(prefix="abspos-verify-"))
    options = [*settings_options(seq_len=seq_len, n_prompts=n_prompts, seed=seed, device=device, dtype=dtype,
                                 corpus=corpus), *worker_options(workers), "--report-dir", str(folder), *extra_args]
    try:
        argv = pytest_argv(models, claims, options)
        before = _stamp(folder)
        code, last = run_pytest(argv, echo=not quiet)
        after = _stamp(folder)
        if code == 4 or after is None or after == before:
            raise RunFailed(last or f"pytest exited with code {code} and wrote no results", code)
        try:
            results = load_results(after[0])
        except ResultsFileError as e:
            raise RunFailed(str(e), code) from None
    finally:
        if report_dir is None:
            shutil.rmtree(folder, ignore_errors=True)
    report = after[0].parent / "report.md" if report_dir is not None else None
    return Verdicts.from_results(results, report if report and report.exists() else None)
