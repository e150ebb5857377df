"""A notebook API: run the claims and get their verdicts back as records.

    >>> from harness import verify
    >>> v = verify("smollm2-135m", claims=["<claim id>", ...])   # ids as METHODS.md lists them
    >>> v                       # one line: the totals, and what to call next
    >>> v.not_held()            # a Verdicts, shown as a table in a notebook
    >>> v.show("<claim id>")    # the claim's plots, inline

``verify`` runs the claims in a pytest subprocess, exactly as ``abspos-claims run`` does (``pytest_argv`` builds
the command line of both), shows one progress line (or pytest's output, ``echo=True``), and reads the run's
``results.json``; ``Verdicts`` (harness/notebook.py) reads a finished run too. Importing this module loads neither
torch nor transformers (the models run in the subprocess), nor pandas.
"""

from __future__ import annotations

import os
import re
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from harness import live
from harness.files import checkout
from harness.files.paths import REPORTS, ROOT
from harness.notebook import Verdicts
from harness.notebook import aligned as aligned  # the plain-text tables of the command line too
from harness.notebook import headline as headline
from harness.notebook import verdict_record as verdict_record
from harness.outcome.results import ResultsFileError, load_run
from harness.report.matrix import totals_line
from harness.run import signals
from harness.spec.claim_names import expand, target_of
from harness.spec.claims import claim

CLAIMS_DIR = ROOT / "claims"
USAGE_ERROR = 4  # pytest's exit code for a usage error


class RunInterrupted(KeyboardInterrupt):
    """A run stopped by SIGINT (a notebook's interrupt), SIGTERM or SIGHUP sent to this process: its pytest was told
    too, wrote what had finished (marked as interrupted) and ended. ``by`` names the signal; ``verdicts`` holds the
    finished tests' verdicts (``Verdicts``; empty when none had finished) and ``verdicts.report`` the partial report
    (None when none was built); ``folder`` is the run folder they are kept in."""

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
    """A comma list ("a,b") or a list of strings, as a list of non-empty names."""
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
    """The ``-k`` expression selecting every test of the claims (their test function names; a selection's name, such
    as ``core``, stands for its claims); an unknown id raises ``harness.spec.claims.UnknownClaim`` (one line listing
    the registered ids)."""
    return " or ".join(dict.fromkeys(t for cid in expand(claim_ids) for t in claim(cid).tests))


DEFAULT_MODELS = "bundled,paper"  # the suite's --models default (harness/run/options.py)


def target_problem(models: str | Iterable[str] | None, claim_ids: Sequence[str]) -> str | None:
    """Why a claim named cannot run on any of the targets ``models`` names (one line naming the ``--models`` it
    needs), else None: a claim whose tests run on the related paper's synthetic sets alone, with none named, or one
    whose tests run on language models alone, with only synthetic sets named. What a test runs on is read from the
    registry (``harness.spec.claim_names.target_of``); a model its prediction does not apply to is a verdict (not
    applicable), not this."""
    from harness.spec.synthetic_sets import SYNTHETIC_PURPOSE

    tokens = as_names(DEFAULT_MODELS if models is None else models)
    synthetic = [t for t in tokens if t.startswith("synthetic")]
    real = [t for t in tokens if not t.startswith("synthetic")]
    for cid in expand(claim_ids):
        kinds = {target_of(t) for t in claim(cid).tests}
        if kinds == {"synthetic"} and not synthetic:
            sets = "; ".join(f"synthetic-{size}: {why}" for size, why in SYNTHETIC_PURPOSE.items())
            return (
                f"--claims {cid}: its tests run on the related paper's synthetic sets, trained here, not on "
                f"{', '.join(real)}: name one in --models, e.g. --models {','.join([*real, 'synthetic-smoke'])} "
                f"({sets})"
            )
        if "synthetic" not in kinds and not real:
            return (
                f"--claims {cid}: its tests run on language models, not on the synthetic sets "
                f"{', '.join(synthetic)}: name one in --models, e.g. --models {','.join(['smollm2-135m', *synthetic])} "
                f"(or bundled, paper, hf:<org>/<name>, path:<folder>, gguf:<file>)"
            )
    return None


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
    keeps the suite's default; an empty one raises ``RunFailed``, an unknown claim ``UnknownClaim``, and a claim
    none of the models named can run (``target_problem``) ``RunFailed``, before anything runs."""
    argv = [sys.executable, "-m", "pytest", str(CLAIMS_DIR)]
    if models is not None:
        argv += ["--models", ",".join(model_names(models))]
    ids, options = as_names(claims), list(options)
    if ids:
        selected = keyword_expression(ids)
        if problem := target_problem(models, ids):
            raise RunFailed(problem, USAGE_ERROR)
        user, options = split_keyword(options)
        argv += ["-k", selected if user is None else f"({selected}) and ({user})"]
    return argv + options


def settings_options(**settings) -> list[str]:
    """``--seq-len 256 --seed 3 ...`` for each setting given (None keeps the suite's default)."""
    return [a for k, v in settings.items() if v is not None for a in (f"--{k.replace('_', '-')}", str(v))]


def worker_options(workers: int | None) -> list[str]:
    """pytest-xdist workers, one model per worker (``-n N --dist loadgroup``); None runs in one process."""
    return [] if workers is None else ["-n", str(workers), "--dist", "loadgroup"]


def run_pytest(argv: Sequence[str], echo: bool | Callable[[str], None] = True) -> tuple[int, str]:
    """Run pytest in the caller's folder (relative paths in references and options are the caller's; the claims
    folder is given absolute, so pytest still finds the repository's configuration, and this checkout's harness comes
    first on its PYTHONPATH, so the claims run with their own harness whatever is installed), its stdout and stderr
    streamed to ``sys.stdout`` when ``echo`` is True (so a notebook shows them), or each line given to ``echo`` when
    it is a function (``Progress``); returns (exit code, the line saying what went wrong: the last error line it
    printed, ``ERROR: ...`` or argparse's ``...: error: ...``, else its last non-empty line)."""
    last = error = ""
    proc = subprocess.Popen(
        list(argv),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        errors="replace",
        bufsize=1,
        env=signals.child_env(checkout.pythonpath(ROOT, {**os.environ, "PYTHONUNBUFFERED": "1"})),  # this harness
    )
    try:
        with signals.forwarding(proc) as received:  # SIGINT/SIGTERM/SIGHUP: pytest writes what finished, then ends
            for line in proc.stdout:
                if callable(echo):
                    echo(line)
                elif echo:
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


# ---- running -----------------------------------------------------------------------------------------


class Progress:
    """A run's progress on one line, rewritten in place (``\\r``), instead of pytest's output: how many tests it
    selected and pytest's own ``[ NN%]`` marker (ending each test file's line of results, or each ``-v`` line), or,
    where the run says it, "test k of N, elapsed, about M minutes left" (harness.run.eta). Read from pytest's output
    rather than the run's records, it stays right with xdist workers and whatever options the caller passes."""

    SELECTED = re.compile(r"(\d+) selected|collected (\d+) items?|\[(\d+) items?\]")
    PERCENT = re.compile(r"\[\s*(\d{1,3})%\]")
    ETA = re.compile(r"\[abspos\] (test \d+ of \d+, .*?)\s*$")

    def __init__(self) -> None:
        self.tests: int | None = None
        self.percent: int | None = None
        self.eta: str | None = None
        self.shown = ""

    def __call__(self, line: str) -> None:
        found = sorted(self.SELECTED.finditer(line), key=lambda m: m.lastindex or 0)  # "N selected" over "collected"
        if found:
            self.tests = int(next(g for g in found[0].groups() if g))
        if percent := self.PERCENT.findall(line):
            self.percent = int(percent[-1])
        if eta := self.ETA.search(line):
            self.eta = eta.group(1)
        self.write(self.text())

    def text(self) -> str:
        if self.eta is not None and self.percent != 100:
            return f"abspos: {self.eta}"
        tests = f"{self.tests} test{'s' * (self.tests != 1)}" if self.tests is not None else "tests"
        if self.percent is None:
            return f"abspos: running {tests}" if self.tests is not None else "abspos: collecting the claim tests"
        done = "; writing the results and the report" if self.percent == 100 else ""
        return f"abspos: {self.percent}% of {tests} finished{done}"

    def write(self, text: str) -> None:
        if text != self.shown:
            sys.stdout.write("\r" + text.ljust(len(self.shown)))
            sys.stdout.flush()
            self.shown = text

    def end(self) -> None:
        """Leave the line as it is: what is printed next starts on a line of its own."""
        if self.shown:
            sys.stdout.write("\n")
            sys.stdout.flush()


def _stamp(report_dir: Path):
    """Which results.json ``<report_dir>/latest`` points at, and when it was written (None: none yet)."""
    path = report_dir / "latest" / "results.json"
    try:
        return path.resolve(), path.stat().st_mtime_ns
    except OSError:
        return None


def verify(
    models: Any = "bundled",
    *positional: Any,
    claims: str | Sequence[str] | None = None,
    tokenizer: Any = None,
    workdir: str | Path | None = None,
    seq_len: int | None = None,
    n_prompts: int | None = None,
    seed: int | None = None,
    device: str | None = None,
    dtype: str | None = None,
    corpus: str | None = None,
    workers: int | None = None,
    report_dir: str | Path | None = REPORTS,
    extra_args: Sequence[str] = (),
    echo: bool = False,
    quiet: bool = False,
) -> Verdicts:
    """Run the claims (all, or the ids in ``claims``; a selection such as ``core`` stands for its claims) on
    ``models`` (names or groups, a comma list or a list) in a pytest subprocess and return their verdicts:
    ``verify("smollm2-135m", ["<id>"])``. ``models`` may instead be a model held in memory, a loaded Hugging Face
    causal LM (or an nnsight ``LanguageModel``), with its tokenizer: ``verify(model, tokenizer, claims=["<id>"])``;
    its spec is derived and its weights checked as a ``path:`` reference's before anything runs (``harness.live``),
    and it is saved under ``workdir`` (a temporary folder; the system's by default) for the run and deleted after it.
    Settings left None keep the suite's defaults; ``workers`` runs pytest-xdist workers (one model per worker);
    ``extra_args`` go to pytest unchanged. While it runs one progress line shows, then the totals and where the
    report is; ``echo`` streams pytest's own output instead, ``quiet`` prints nothing. The run is kept in a run
    folder of its own under ``report_dir`` (the suite's reports/, as ``abspos-claims run``; ``Verdicts.report``,
    ``Verdicts.show``; calls sharing a ``report_dir`` never share a folder). An unknown claim id raises ``harness.spec.claims.UnknownClaim`` and naming no model ``RunFailed`` before
    anything runs; a usage error (exit 4) or a run without results raises ``RunFailed`` with pytest's error line (its
    last line when it printed none). Interrupted (a notebook's interrupt, SIGTERM, SIGHUP), its pytest is told too
    and writes what finished; ``RunInterrupted`` (a ``KeyboardInterrupt``) is then raised, carrying those verdicts
    and the folder they are kept in."""
    if len(positional) > 1:
        raise TypeError(f"verify() takes models and one more positional argument, got {1 + len(positional)}")
    if live.is_model(models):  # verify(model, tokenizer, claims=...): saved for the run, as a path: reference
        keyword_expression(as_names(claims))  # an unknown claim before anything is checked or saved
        if claims is not None and (problem := target_problem("in-memory", as_names(claims))):
            raise RunFailed(problem, USAGE_ERROR)
        settings = dict(seq_len=seq_len, n_prompts=n_prompts, seed=seed, device=device, dtype=dtype, corpus=corpus)
        try:
            with live.saved_for_run(models, positional[0] if positional else tokenizer, workdir) as (ref, options):
                return verify(
                    ref,
                    claims=claims,
                    workers=workers,
                    report_dir=report_dir,
                    echo=echo,
                    quiet=quiet,
                    extra_args=[*options, *extra_args],
                    **settings,
                )
        except live.LiveModelError as e:
            raise RunFailed(str(e), USAGE_ERROR) from None
    if positional:  # verify(models, claims)
        if claims is not None:
            raise TypeError("verify() got claims both as its second argument and as claims=")
        claims = positional[0]
    keyword_expression(as_names(claims))  # an unknown claim before anything is made or run
    model_names(models)  # no model named (None, "", []): before anything runs, never every model
    folder = Path(report_dir) if report_dir is not None else REPORTS  # None: the suite's own reports/
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
    argv = pytest_argv(models, claims, options)
    progress = None if quiet or echo else Progress()
    before = _stamp(folder)
    try:
        code, last = run_pytest(argv, echo=progress or (echo and not quiet))
    except RunInterrupted as stopped:
        stopped.folder, stopped.verdicts = folder / run_id, _partial(folder / run_id)
        raise
    finally:
        if progress is not None:
            progress.end()
    mine = folder / run_id / "results.json"
    after = (mine.resolve(), 0) if mine.exists() else _stamp(folder)  # (a stand-in run_pytest writes `latest`)
    if code == 4 or after is None or after == before:
        raise RunFailed(last or f"pytest exited with code {code} and wrote no results", code)
    try:
        run = load_run(after[0])
    except ResultsFileError as e:
        raise RunFailed(str(e), code) from None
    report = after[0].parent / "report.md"
    verdicts = Verdicts.from_results(run, report if report.exists() else None, after[0].parent)
    if progress is not None:  # pytest's own closing lines, which the progress line stood in for
        html = after[0].parent / "report.html"
        built = f"{html} (and report.md)" if html.exists() else verdicts.report
        print(f"abspos total: {totals_line(run.records).strip('*')}")
        print(f"abspos report: {built or f'none built; the results are in {after[0]}'}")
    return verdicts


def _partial(run_folder: Path) -> Verdicts:
    """The verdicts of an interrupted run's finished tests (empty when it wrote nothing)."""
    try:
        return Verdicts.load(run_folder)
    except (FileNotFoundError, ResultsFileError):
        return Verdicts()
