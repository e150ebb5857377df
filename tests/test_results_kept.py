"""Results are never lost, and a partial run says it is partial.

Case -> test (each failed on d85fd79, before it was fixed, except where said):

- same-second runs into one --report-dir overwrite each other ........ test_three_runs_started_in_one_second_keep_three_complete_result_sets
- verify() calls sharing a report_dir likewise ......................... test_verify_calls_sharing_a_report_dir_each_return_their_own_run
- SIGTERM loses every finished result (report folder empty) ............ test_a_signal_keeps_what_finished_and_marks_the_run_interrupted[SIGTERM-*]
- SIGINT keeps results but never says the run was interrupted nor which
  selected tests never ran; `latest` moves to the partial run ........... test_a_signal_keeps_what_finished_and_marks_the_run_interrupted[SIGINT-*]
  (with and without -n 2; the -n 2 cases also check no xdist worker outlives its controller; SIGHUP, and a
  stop delivered twice: test_sighup_and_a_repeated_stop_end_a_run_like_ctrl_c)
- `abspos-claims run` orphans its pytest on SIGTERM (exit 143, the child
  writes 75 s later); SIGINT to its PID alone is swallowed .............. test_the_run_command_passes_a_signal_on_and_waits_for_its_pytest[*]
- verify() interrupted SIGKILLs its pytest: finished results lost ....... test_an_interrupted_verify_keeps_what_finished
- a signal at an instruction without a line: pytest's report of the
  interrupt fails (TypeError), exit 1 (CI on 59704c6, a race) .......... test_an_interrupt_whose_traceback_has_an_entry_
                                                                          without_a_line_is_rendered, test_a_claims_run_
                                                                          interrupted_at_a_lineless_instruction_still_
                                                                          ends_as_interrupted
- full disk: a truncated report.html is left, `latest` points at it, the
  final line names a report.md never written ........................... test_a_full_disk_at_the_end_of_a_run_is_one_line_and_no_truncated_file[*]
- ABSPOS_CACHE on a full disk: an ~80-line SafetensorError per test ..... tests/test_settings_before_work.py::
                                                                          test_a_full_disk_during_conversion_is_one_line
- Baselines.check writes its file in place, not atomically (and so do the
  known outcomes, the stability record and the reports) ................. test_a_write_that_fails_midway_leaves_the_old_file_whole[*]
- a damaged or wrong-shaped baseline ([], {"tests": []}, truncated) ...... test_a_damaged_input_is_one_line_at_configure_time[baseline *]
- --baseline-dir /proc/nope, or a file, not checked up front ............ test_a_damaged_input_is_one_line_at_configure_time[--baseline-dir *]
- a stability record entry without "verdicts"; a garbage record ......... test_a_damaged_input_is_one_line_at_configure_time[stability *]
- --known-outcomes nosuch.json silently empty ........................... test_a_damaged_input_is_one_line_at_configure_time[known outcomes missing]

The signal tests kill a real claims run (smollm2-135m: T9a, T10 and T12 at small settings) as soon as its first test has
finished: what finished must be in results.json and the report, with {"interrupted": {"by", "not_run"}}; pytest
exits 2 (its "interrupted" code).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import resource
import signal
import subprocess
import sys
import threading
import time
import types
from pathlib import Path

import pytest
from pytest_runs import pytest_argv, run_pytest, start_pytest

from harness.files.paths import ROOT

PY = sys.executable
MODEL = "smollm2-135m"
T9A = f"claims/test_s5_7_position0.py::test_T9a_position0_state_is_identical_across_prompts[{MODEL}]"
T10 = f"claims/test_s5_8_length_scaling.py::test_T10_leakage_decays_with_length_piecewise[{MODEL}]"
T12 = f"claims/test_s5_8_targeted.py::test_T12_rank1_mlp_ablation_removes_norm_not_topic[{MODEL}]"
OUTCOME = re.compile(r"(^|\s)(PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)(\s|$)")
LINUX = pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="reads process trees from /proc (Linux)")


def run_options(tmp_path: Path, *extra: str) -> list[str]:
    """A real claims run: T9a (a few seconds), then T10 (sixteen lengths up to 512 tokens) and T12 (far longer), at
    small settings (their baselines under tmp). Under -n 2 the three share two workers, so whichever finishes first,
    another has not."""
    return [
        "--models",
        MODEL,
        "-k",
        "T9a or T10 or T12",
        "-v",
        "--report-dir",
        str(tmp_path / "reports"),
        "--baseline-dir",
        str(tmp_path / "baselines"),
        "--n-prompts",
        "12",
        "--seq-len",
        "32",
        "--n-probe-prompts",
        "20",
        *extra,
    ]


def children(pid: int) -> list[int]:
    try:
        return [
            int(c)
            for t in os.listdir(f"/proc/{pid}/task")
            for c in Path(f"/proc/{pid}/task/{t}/children").read_text().split()
        ]
    except OSError:
        return []


def descendants(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        kids = children(todo.pop())
        out += kids
        todo += kids
    return out


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def described(pid: int) -> str:
    """A process's state, parent and command line, as /proc shows them (for a failure's message)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
        return f"state {stat[0]}, parent {stat[1]}: {cmd[:300]}"
    except OSError:
        return "gone"


def gone(pids, within: float = 15.0) -> bool:
    end = time.monotonic() + within
    while any(alive(p) for p in pids) and time.monotonic() < end:
        time.sleep(0.2)
    return not any(alive(p) for p in pids)


def kill_all(pids) -> None:
    for p in pids:
        with contextlib.suppress(OSError):
            os.kill(p, signal.SIGKILL)


def stop_after_first_result(argv: list[str], sig: int, target=None, timeout: float = 240) -> dict:
    """Start ``argv``; when its output first shows a test's outcome, send ``sig`` to ``target(pid)`` (default: the
    process itself). Returns its exit code, its output, the processes under it when the signal went, and those of
    them still running 15 s after it ended (then killed, so no test leaves a process behind)."""
    proc = subprocess.Popen(
        argv,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        # as from a terminal: a suite started in the background (`cmd &` from a script) hands its children SIGINT
        # ignored, and the run would rightly carry on through a Ctrl-C it never receives
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    tree: list[int] = []
    watchdog = threading.Timer(timeout, lambda: kill_all([proc.pid, *descendants(proc.pid)]))
    watchdog.start()
    out, sent, code, first = [], False, None, None
    try:
        for line in proc.stdout:
            out.append(line)
            if not sent and OUTCOME.search(line):
                tree = descendants(proc.pid)
                os.kill(target(proc.pid) if target else proc.pid, sig)
                sent = True
                text = "".join(out)  # the finished test: the one its outcome line names, or the last one started
                first = max((T9A, T10, T12), key=lambda t: (t in line, text.rfind(t)))
        code = proc.wait(timeout=60)
    finally:
        watchdog.cancel()
        kill_all([proc.pid] if proc.poll() is None else [])
        survivors = [p for p in tree if not gone([p])]
        kill_all(survivors)
    return {"code": code, "out": "".join(out), "tree": tree, "sent": sent, "survivors": survivors, "first": first}


def only_run(reports: Path) -> Path:
    runs = [p for p in reports.iterdir() if p.is_dir() and not p.is_symlink()]
    assert len(runs) == 1, runs
    return runs[0]


# ---- signals ---------------------------------------------------------------------------------------------


@pytest.mark.long
@LINUX
@pytest.mark.parametrize(
    "workers",
    [[], pytest.param(["-n", "2", "--dist", "loadgroup"], marks=pytest.mark.slow)],  # xdist: 3 minutes, weekly
    ids=["one process", "-n 2"],
)
@pytest.mark.parametrize(
    "sig", [pytest.param(signal.SIGTERM, marks=pytest.mark.slow), signal.SIGINT], ids=["SIGTERM", "SIGINT"]
)
def test_a_signal_keeps_what_finished_and_marks_the_run_interrupted(tmp_path, sig, workers):
    r = stop_after_first_result(pytest_argv(*run_options(tmp_path, *workers)), sig)
    assert r["sent"], r["out"][-3000:]
    assert r["code"] == 2, r["out"][-3000:]  # pytest's "interrupted"
    run = only_run(tmp_path / "reports")
    results = json.loads((run / "results.json").read_text())
    finished, info = [x["test"] for x in results["records"]], results["interrupted"]
    assert info["by"] == sig.name and finished and info["not_run"], info
    assert sorted(finished + info["not_run"]) == sorted([T9A, T10, T12]) and r["first"] in finished
    if not workers:  # one process: in order, T9a alone finished
        assert finished == [T9A] and results["records"][0]["verdict"] == "held" and info["not_run"] == [T10, T12]
    assert (tmp_path / "reports" / "latest").resolve() == run.resolve()  # an honestly partial run
    md = (run / "report.md").read_text()
    assert f"Partial run: interrupted by {sig.name}" in md and all(t in md for t in info["not_run"])
    assert f"Partial run: interrupted by {sig.name}" in (run / "report.html").read_text()
    assert f"abspos: interrupted by {sig.name}: {len(info['not_run'])} of 3 selected claim tests never ran" in r["out"]
    assert f"abspos report: {run / 'report.html'} (and report.md)" in r["out"]
    if workers:
        assert len(r["tree"]) >= 2 and r["survivors"] == [], "an xdist worker outlived its controller"


@pytest.mark.long
@LINUX
@pytest.mark.parametrize(
    "sig", [pytest.param(signal.SIGTERM, marks=pytest.mark.slow), signal.SIGINT], ids=["SIGTERM", "SIGINT"]
)
def test_the_run_command_passes_a_signal_on_and_waits_for_its_pytest(tmp_path, sig):
    """The signal goes to the command's PID alone (``kill PID``, a CI runner, ``timeout``)."""
    r = stop_after_first_result(
        [PY, "-m", "harness.cli", "run", *run_options(tmp_path, "-p", "no:cacheprovider")], sig, timeout=150
    )
    assert r["sent"] and len(r["tree"]) == 1  # the command, and its pytest under it
    assert r["code"] == 2, r["out"][-3000:]  # its pytest's own code: interrupted, after writing what finished
    assert r["survivors"] == [], "the command's pytest outlived it"
    results = json.loads((only_run(tmp_path / "reports") / "results.json").read_text())
    assert [x["test"] for x in results["records"]] == [T9A]
    assert results["interrupted"] == {"by": sig.name, "not_run": [T10, T12]}


@pytest.mark.slow  # a notebook run stopped: weekly; a stopped claims run stays checked
@pytest.mark.long
@LINUX
def test_an_interrupted_verify_keeps_what_finished(tmp_path, monkeypatch):
    """A notebook's interrupt (SIGINT to this process alone) once the first test has finished: its pytest writes
    what finished, and verify raises a KeyboardInterrupt carrying those verdicts."""
    from harness import verify
    from harness.api import RunInterrupted

    class Watch:
        sent, tree = False, []

        def write(self, text):
            if not self.sent and OUTCOME.search(text):
                self.sent = True
                self.tree = sorted(set(descendants(os.getpid())) - before)  # verify's pytest (and any child of it)
                os.kill(os.getpid(), signal.SIGINT)

        def flush(self):
            pass

    before = set(descendants(os.getpid()))
    watch = Watch()
    monkeypatch.setattr(sys, "stdout", watch)
    with pytest.raises(KeyboardInterrupt) as e:
        verify(
            MODEL,
            n_prompts=12,
            seq_len=32,
            report_dir=tmp_path / "reports",
            echo=True,  # pytest's own lines: the watch interrupts at the first finished test
            extra_args=[
                "-k",
                "T9a or T10 or T12",
                "-v",
                "-p",
                "no:cacheprovider",
                "--baseline-dir",
                str(tmp_path / "baselines"),
            ],
        )
    monkeypatch.undo()
    # the processes under this one when the signal went (not any started later, by whatever else runs here)
    survivors = [p for p in watch.tree if not gone([p])]
    seen = {p: described(p) for p in survivors}
    kill_all(survivors)
    assert watch.tree and survivors == [], f"verify's pytest outlived it: {seen}"
    results = json.loads((only_run(tmp_path / "reports") / "results.json").read_text())
    assert [x["test"] for x in results["records"]] == [T9A]
    assert results["interrupted"] == {"by": "SIGINT", "not_run": [T10, T12]}
    assert isinstance(e.value, RunInterrupted) and e.value.by == "SIGINT"
    assert [(v["test"], v["verdict"]) for v in e.value.verdicts] == [
        ("test_T9a_position0_state_is_identical_across_prompts", "held")
    ]


def test_sighup_and_a_repeated_stop_end_a_run_like_ctrl_c():
    """SIGHUP too becomes the one KeyboardInterrupt pytest ends a session on, naming the signal; the same stop
    delivered again at once (a terminal's process group and a forwarding parent) is not a second interrupt; a
    signal ignored when the run started (nohup) stays ignored."""
    from harness.run.signals import Interrupts

    hup = signal.getsignal(signal.SIGHUP)  # (this session's own, when the suite's plugin runs it)
    if hup is signal.SIG_IGN:  # the suite itself started under nohup: SIGHUP is caught here only if not ignored
        signal.signal(signal.SIGHUP, signal.SIG_DFL)
    before = signal.getsignal(signal.SIGHUP)
    previous = signal.signal(signal.SIGTERM, signal.SIG_IGN)  # as under nohup, for SIGTERM here
    stops = Interrupts().install()
    try:
        with pytest.raises(KeyboardInterrupt, match="interrupted by SIGHUP"):
            os.kill(os.getpid(), signal.SIGHUP)
            time.sleep(1)
        os.kill(os.getpid(), signal.SIGINT)  # within the repeat window: the same stop
        os.kill(os.getpid(), signal.SIGTERM)  # ignored before the run began: still ignored
        time.sleep(0.2)
        assert stops.by == "SIGHUP" and signal.getsignal(signal.SIGTERM) is signal.SIG_IGN
    finally:
        stops.restore()
        signal.signal(signal.SIGTERM, previous)
    assert signal.getsignal(signal.SIGHUP) == before  # restored exactly
    signal.signal(signal.SIGHUP, hup)


def lineless_entry(after=None):
    """A traceback entry at an instruction without a line (a ``with`` block's exit), as a signal can leave one."""

    def frame_with_a_with_block():
        with contextlib.nullcontext():
            pass
        return sys._getframe()

    frame = frame_with_a_with_block()
    lasti = next(start for start, _end, line in frame.f_code.co_lines() if line is None)
    return types.TracebackType(after, frame, lasti, -1)


@pytest.mark.skipif(lineless_entry().tb_lineno is not None, reason="this Python gives every instruction a line")
def test_an_interrupt_whose_traceback_has_an_entry_without_a_line_is_rendered():
    """CI, 59704c6: a SIGTERM arrived at an instruction without a line, and pytest's report of the interrupt failed
    on it (TypeError in TracebackEntry.lineno: exit 1, an internal traceback) instead of ending as interrupted (2).
    ``mend_tracebacks`` gives such entries a line, in the exception and in those it chains."""
    from _pytest._code import ExceptionInfo

    from harness.run.signals import mend_tracebacks

    def interrupt(cause=None):
        try:
            raise KeyboardInterrupt("interrupted by SIGTERM") from cause
        except KeyboardInterrupt as e:
            e.__traceback__.tb_next = lineless_entry()
            return e

    exc = interrupt(cause=interrupt())
    with pytest.raises(TypeError):  # the failure seen in CI, before mending
        ExceptionInfo.from_exception(exc).getrepr(funcargs=True)
    head = exc.__traceback__
    mend_tracebacks(exc)

    def lines(e):
        tb, out = e.__traceback__, []
        while tb is not None:
            out.append(tb.tb_lineno)
            tb = tb.tb_next
        return out

    assert exc.__traceback__ is head and len(lines(exc)) == 2 and all(isinstance(n, int) for n in lines(exc))
    assert len(lines(exc.__cause__)) == 2 and all(isinstance(n, int) for n in lines(exc.__cause__))
    assert "interrupted by SIGTERM" in str(ExceptionInfo.from_exception(exc).getrepr(funcargs=True))


LINELESS_INTERRUPT = """import os, signal, sys, time, types
import pytest

sys.path.insert(0, os.environ["ABSPOS_TESTS_DIR"])
from test_results_kept import lineless_entry


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session):
    try:  # a real SIGTERM, caught by the run's own handler, whose traceback is then given a lineless entry
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(30)
    except KeyboardInterrupt as e:
        raise e.with_traceback(lineless_entry(e.__traceback__))
"""


@LINUX
def test_a_claims_run_interrupted_at_a_lineless_instruction_still_ends_as_interrupted(tmp_path):
    """The same, end to end: a claims run stopped by SIGTERM before its first test, the interrupt carrying an entry
    without a line, exits 2 and says that none of its tests ran (it exited 1, a TypeError, in CI)."""
    (tmp_path / "linelessinterrupt.py").write_text(LINELESS_INTERRUPT)
    env = {
        **os.environ,
        "ABSPOS_TESTS_DIR": str(Path(__file__).parent),
        "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    r = run_pytest(*run_options(tmp_path, "-p", "linelessinterrupt"), env=env)
    out = r.stdout + r.stderr
    assert r.returncode == 2 and "TypeError" not in out, out[-3000:]
    said = "abspos: interrupted by SIGTERM: 3 of 3 selected claim tests never ran; no claim test had finished"
    assert said in out and "KeyboardInterrupt: interrupted by SIGTERM" in out, out[-3000:]
    assert not (tmp_path / "reports").exists() or not any((tmp_path / "reports").iterdir())  # nothing to keep


# ---- runs at the same time ----------------------------------------------------------------------------------

FROZEN_CLOCK = """import time
_strftime = time.strftime
time.strftime = lambda fmt, t=None: _strftime(fmt, (2026, 1, 1, 12, 0, 0, 3, 1, -1))  # every run: the same second
"""


def frozen_clock(tmp_path: Path) -> dict:
    """An environment whose pytest runs (``-p frozenclock``) all read 2026-01-01 12:00:00: same-second runs, always."""
    (tmp_path / "frozenclock.py").write_text(FROZEN_CLOCK)
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}


@pytest.mark.slow  # three concurrent claims runs: weekly
@pytest.mark.long
def test_three_runs_started_in_one_second_keep_three_complete_result_sets(tmp_path):
    env, reports = frozen_clock(tmp_path), tmp_path / "reports"
    procs = [
        start_pytest(
            *("--models", MODEL, "-k", "causal_denominator", "-p", "frozenclock", "-q"),
            *("--seed", str(seed), "--report-dir", str(reports)),
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        for seed in range(3)
    ]
    outs = [p.communicate(timeout=300)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0], outs
    runs = sorted(p for p in reports.iterdir() if p.is_dir() and not p.is_symlink())
    assert len(runs) == 3, runs
    seeds = set()
    for run in runs:
        results = json.loads((run / "results.json").read_text())
        assert results["run"] == run.name and len(results["records"]) == 1 and "interrupted" not in results
        assert f" · run {run.name}\n" in "\n".join((run / "report.md").read_text().splitlines()[:6]) + "\n"
        seeds.add(results["settings"]["seed"])
    assert seeds == {0, 1, 2}
    assert (reports / "latest").resolve() in [r.resolve() for r in runs]
    assert sorted(re.search(r"abspos report: (\S+)", o).group(1) for o in outs) == sorted(
        str(r / "report.html") for r in runs
    )


@pytest.mark.slow  # two notebook runs: weekly
@pytest.mark.long
def test_verify_calls_sharing_a_report_dir_each_return_their_own_run(tmp_path, monkeypatch):
    from harness import verify

    for k, v in frozen_clock(tmp_path).items():
        if os.environ.get(k) != v:
            monkeypatch.setenv(k, v)
    got, errors = {}, []

    def one(seed):
        try:
            got[seed] = verify(
                MODEL,
                "EQ3",
                seed=seed,
                report_dir=tmp_path / "reports",
                quiet=True,
                extra_args=["-k", "causal_denominator", "-p", "frozenclock", "-p", "no:cacheprovider"],
            )
        except Exception as e:
            errors.append(e)

    threads = [threading.Thread(target=one, args=(s,)) for s in (1, 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    assert not errors, errors
    assert {s: v.results["settings"]["seed"] for s, v in got.items()} == {1: 1, 2: 2}
    assert got[1].report != got[2].report and got[1].report.exists() and got[2].report.exists()


# ---- full disk, and writes that fail midway -------------------------------------------------------------------


@contextlib.contextmanager
def file_size_limit(n: int):
    """Writes past ``n`` bytes fail (EFBIG; Python ignores SIGXFSZ) in this process and its children."""
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (n, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))


@contextlib.contextmanager
def small_disk(folder: Path, size: str = "12k"):
    """A real full disk: a tiny tmpfs mounted at ``folder`` (skipped where this user cannot mount)."""
    folder.mkdir(parents=True, exist_ok=True)
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)], capture_output=True)
    if r.returncode != 0:
        pytest.skip("cannot mount a small tmpfs here (needs root): the file-size-limit case covers the same path")
    try:
        yield
    finally:
        subprocess.run(["umount", "-l", str(folder)], capture_output=True)


def leftovers(folder: Path) -> list[str]:
    return [p.name for p in folder.rglob("*") if p.name.endswith(".tmp") or p.name.startswith(".")]


@pytest.mark.long
@pytest.mark.parametrize("how", ["file size limit", pytest.param("full tmpfs", marks=pytest.mark.slow)])
def test_a_full_disk_at_the_end_of_a_run_is_one_line_and_no_truncated_file(tmp_path, how):
    """results.json (2 KB) fits, report.html (7 KB) does not: the results are kept, no truncated report is
    left, `latest` stays on the last complete run, and no line names a report that was never written."""
    reports = tmp_path / "reports"
    with small_disk(reports) if how == "full tmpfs" else contextlib.nullcontext():
        (reports / "run-old").mkdir(parents=True)
        (reports / "run-old" / "report.md").write_text("# an earlier run\n")
        (reports / "latest").symlink_to("run-old")
        hard = resource.getrlimit(resource.RLIMIT_FSIZE)[1]
        limit = (lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (5_000, hard))) if how == "file size limit" else None
        r = run_pytest(
            *("--models", MODEL, "-k", "causal_denominator", "-q", "--report-dir", str(reports)), preexec_fn=limit
        )
        out = r.stdout + r.stderr
        assert r.returncode == 0, out[-3000:]
        new = [p for p in reports.iterdir() if p.name.startswith("run-") and p.name != "run-old"]
        assert len(new) == 1, out[-3000:]
        results = json.loads((new[0] / "results.json").read_text())
        assert len(results["records"]) == 1
        assert not (new[0] / "report.html").exists() and not (new[0] / "report.md").exists()
        assert leftovers(reports) == [], leftovers(reports)
        assert os.readlink(reports / "latest") == "run-old"
        said = [line for line in out.splitlines() if line.startswith("abspos")]
        assert len([s for s in said if "the report could not be built" in s]) == 1, said
        assert "report.html: could not write it" in out
        assert all(Path(s.split(": ", 1)[1]).exists() for s in said if s.startswith("abspos report:")), said
        assert f"abspos results: {new[0] / 'results.json'} (no report: see the line above)" in said


RECORD = {
    "test": f"claims/t.py::test_T9a_x[{MODEL}]",
    "claim": "T9a",
    "model": MODEL,
    "outcome": "failed",
    "verdict": "not held",
    "check": "test_T9a_x: c",
    "reason": "r",
    "figures": [{"name": "v", "value": 1.0}],
    "seconds": 1.0,
}


def results_file(folder: Path, seed: int, reason: str = "r") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"results-{seed}.json"
    path.write_text(
        json.dumps(
            {
                "run": f"run-{seed}",
                "settings": {"seed": seed},
                "models": [MODEL],
                "versions": {},
                "records": [{**RECORD, "reason": reason}],
            }
        )
    )
    return path


def baseline_case(tmp_path: Path):
    from harness.outcome.snapshots import Baselines

    b = Baselines(tmp_path / "baselines", {"seq_len": 64}, "cpu", "float32")
    b.check(MODEL, "test_x", {"v": 1.0})
    return b.path(MODEL), lambda: b.check(MODEL, "test_y", {"v": [0.5] * 50_000})


def known_outcomes_case(tmp_path: Path):
    from harness.outcome import known_outcomes

    path, results = tmp_path / "known.json", results_file(tmp_path / "in", 0, "x" * 100_000)
    path.write_text("{}\n")
    return path, lambda: known_outcomes.record(results, path)


def stability_case(tmp_path: Path, monkeypatch):
    from harness.outcome import stability

    path, runs = tmp_path / "stability.json", [str(results_file(tmp_path / "in", s)) for s in range(5)]
    path.write_text("{}\n")
    return path, lambda: stability.record(runs, path)


def report_case(tmp_path: Path):
    from harness.report.write import write_run
    from harness.spec.settings import Settings

    write_run(tmp_path / "reports", "run-old", [RECORD], Settings(), [MODEL])
    return (
        tmp_path / "reports" / "latest" / "report.html",
        lambda: write_run(tmp_path / "reports", "run-new", [RECORD], Settings(), [MODEL]),
    )


@pytest.mark.parametrize(
    "case, limit",
    [(baseline_case, 4096), (known_outcomes_case, 4096), (stability_case, 200), (report_case, 3_000)],
    ids=["baseline", "known outcomes", "stability record", "report"],
)
def test_a_write_that_fails_midway_leaves_the_old_file_whole(tmp_path, monkeypatch, case, limit):
    """Each file is first written whole, then rewritten with more than the file-size limit allows: the write fails,
    the old file is left exactly as it was and no temporary file remains (the report: `latest` stays too)."""
    path, rewrite = case(tmp_path, monkeypatch) if case is stability_case else case(tmp_path)
    before = path.read_bytes()
    with file_size_limit(limit):
        with contextlib.suppress(OSError):
            rewrite()
    assert path.read_bytes() == before
    assert leftovers(tmp_path) == []
    if case is report_case:
        assert os.readlink(tmp_path / "reports" / "latest") == "run-old"
        assert not (tmp_path / "reports" / "run-new" / "report.html").exists()


# ---- damaged inputs: one line at configure time, before anything is measured ----------------------------------


def stability_record(entry: dict) -> str:
    from harness.spec.settings import Settings

    return json.dumps(
        {
            "settings": Settings(seq_len=64).verdict_key(),
            "seeds": [0, 1, 2],
            "tests": {"test_T9a_position0_state_is_identical_across_prompts": {MODEL: entry}},
        }
    )


def damaged(tmp_path: Path, case: str) -> tuple[list[str], str, str]:
    """(options, the file the line must name, what it must say) of one damaged input."""
    from harness.outcome.snapshots import Baselines
    from harness.spec.settings import Settings

    baseline = Baselines(tmp_path / "b", Settings(seq_len=64).numbers_key(), "cpu", "float32").path(MODEL)
    if case.startswith("baseline"):
        baseline.parent.mkdir(parents=True)
        baseline.write_text(
            {
                "baseline []": "[]",
                "baseline tests []": '{"tests": []}',
                "baseline truncated": '{"tests": {"test_T9a_x": {"v": 1.',
            }[case]
        )
        return (
            ["--baseline-dir", str(tmp_path / "b")],
            str(baseline),
            {
                "baseline []": "not a JSON object",
                "baseline tests []": 'no "tests" object',
                "baseline truncated": "not valid JSON",
            }[case],
        )
    if case == "--baseline-dir /proc/nope":
        return ["--baseline-dir", "/proc/nope"], "/proc/nope", "not writable"
    if case == "--baseline-dir a file":
        (tmp_path / "f").write_text("x")
        return ["--baseline-dir", str(tmp_path / "f")], str(tmp_path / "f"), "not writable"
    if case.startswith("stability"):
        path = tmp_path / "stability.json"
        path.write_text(stability_record({"unstable": True}) if case == "stability without verdicts" else "garbage{")
        return (
            ["--stability-record", str(path)],
            str(path),
            (
                'the entry for test_T9a_position0_state_is_identical_across_prompts on smollm2-135m has no "verdicts"'
                if case == "stability without verdicts"
                else "not valid JSON"
            ),
        )
    assert case == "known outcomes missing"
    return ["--known-outcomes", str(tmp_path / "nosuch.json")], str(tmp_path / "nosuch.json"), "no such file"


@pytest.mark.parametrize(
    "case",
    [
        "baseline []",
        "baseline tests []",
        "baseline truncated",
        "--baseline-dir /proc/nope",
        "--baseline-dir a file",
        "stability without verdicts",
        "stability garbage",
        "known outcomes missing",
    ],
)
def test_a_damaged_input_is_one_line_at_configure_time(tmp_path, capsys, case):
    """A usage error (exit 4) at configure time, one line naming the file and what is wrong with it; with
    --collect-only, so a run that got past configure measures nothing either way."""
    options, name, what = damaged(tmp_path, case)
    code = pytest.main(
        [
            str(ROOT / "claims"),
            "--models",
            MODEL,
            "-k",
            "T9a",
            "--seq-len",
            "64",
            "--co",
            "-q",
            "-p",
            "no:cacheprovider",
            "--report-dir",
            str(tmp_path / "reports"),
            *options,
        ]
    )
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert code == pytest.ExitCode.USAGE_ERROR, err
    assert len(err) == 1 and err[0].startswith("ERROR: ") and name in err[0] and what in err[0], err
