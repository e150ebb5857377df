"""The statistics' growth with prompts, per claim: one process per claim per prompt count, its forward work,
statistics seconds (CPU and wall) and peak host memory, a table row appended as each finishes, the growth exponent
fitted per claim and each paper model's statistics time and memory projected at the nightly's design.

    python benchmarks/bench_prompt_growth.py --models smollm2-135m --claims T1,T5,T6 --counts 16,32,64 \\
        [--seq-len 128] [--out reports/dress-rehearsal/growth-smollm2] [--max-gib 6] [--threads 2] \\
        [--project 512x512] [--timeout 3600] [--fit-only] [-- PYTEST ARGS]

Each (model, count, claim) runs ``pytest claims --models M -k "test_<claim>_" --n-prompts N --seq-len L`` in a child
process of its own (``--together``: one process per count for the whole selection, as the nightly runs it, each pass
booked to the first claim that ran it and each claim's peak its tests' own) with this module as a plugin
(``GrowthPlugin``), which writes one JSON line per test: its wall and
CPU seconds (``time.process_time``: every thread of the process), the forward passes' wall and CPU seconds and
layer-tokens (``harness.capture.workload``), the model loads' seconds, and its peak resident set (reset before the test
through ``/proc/self/clear_refs``, read from ``VmHWM``) and, on a GPU, torch's peak allocation. The parent reads the
child's whole-process peak and CPU from ``wait4`` (what ``/usr/bin/time -v`` prints), and stops a child whose resident
set passes ``--max-gib`` (its row says so). Statistics seconds are a test's seconds less its forward passes and loads.

Nothing is lost when the run is interrupted: each finished row is appended to ``growth.jsonl`` (and ``growth.md``
rewritten from it) at once, and a run again with the same ``--out`` skips the rows it already holds (``--again``
re-measures them). Before any work, and before each count, a design whose projected peak exceeds ``--max-gib`` is
refused in one line: projected from the rows already measured for that model and claim (a straight line in prompts),
or, without two of them, from the capture's byte estimate (``harness.capture.budget``).

The fit (``growth.md``): per claim, the exponent k of statistics CPU seconds ~ prompts^k (least squares on logs, over
the counts measured), the peak and what the session holds (captures, memoised arrays: ``Session.held_bytes``) as lines
in prompts; the projection to ``--project`` (512 prompts x 512 tokens, the nightly's design): statistics CPU seconds
at 512 prompts from the fit, scaled to each paper model by its heads x layers over the measured model's (the per-head
fits dominate: an assumption, exact for the leakage engine), and the host memory as what the session holds at 512
prompts scaled the same way plus the rest of the last peak as measured (``project``). Projections are made only from
rows at the projection's seq-len (another seq-len is named, not projected).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TESTS_ENV = "ABSPOS_GROWTH_TESTS"  # where the child's plugin appends one JSON line per test
GIB = 2**30


# ---- the child's plugin ------------------------------------------------------------------------------------------
def _status_kib(field: str) -> int | None:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return None


class GrowthPlugin:
    """Per test: wall and CPU seconds, forward and load seconds (wall, CPU), layer-tokens, peak RSS (KiB, reset
    before the test) and torch's peak GPU allocation, appended as one JSON line to ``path`` when the test ends."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.outcomes: dict[str, str] = {}
        self.held: dict[str, int] = {}

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_teardown(self, item, nextitem):
        """What the session holds after the test (captures and memoised arrays: ``Session.held_bytes``)."""
        session = (getattr(item, "funcargs", None) or {}).get("session")
        if hasattr(session, "held_bytes"):
            self.held[item.nodeid] = session.held_bytes()

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report):
        if report.when == "call" or report.outcome != "passed":
            self.outcomes.setdefault(report.nodeid, report.outcome)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item, nextitem):
        import torch

        from harness.run.plugin import claims_session

        work = claims_session(item.config).workload
        gpus = range(torch.cuda.device_count()) if torch.cuda.is_available() else range(0)
        if torch.cuda.is_initialized():  # before the first model, CUDA has no allocator yet: nothing to reset
            for d in gpus:
                torch.cuda.reset_peak_memory_stats(d)
        try:
            Path("/proc/self/clear_refs").write_text("5")
            reset = True
        except OSError:
            reset = False
        fwd0, fcpu0 = sum(work.seconds.values()), sum(work.cpu_seconds.values())
        lt0, load0, lcpu0 = sum(work.layer_tokens.values()), work.load_seconds, work.load_cpu_seconds
        t0, c0 = time.perf_counter(), time.process_time()
        yield
        marker = item.get_closest_marker("claim")
        line = {
            "test": item.nodeid,
            "claim": marker.args[0] if marker else None,
            "outcome": self.outcomes.get(item.nodeid),
            "seconds": time.perf_counter() - t0,
            "cpu_seconds": time.process_time() - c0,
            "forward_seconds": sum(work.seconds.values()) - fwd0,
            "forward_cpu_seconds": sum(work.cpu_seconds.values()) - fcpu0,
            "layer_tokens": sum(work.layer_tokens.values()) - lt0,
            "load_seconds": work.load_seconds - load0,
            "load_cpu_seconds": work.load_cpu_seconds - lcpu0,
            "peak_kib": _status_kib("VmHWM"),
            "reset": reset,
            "held_bytes": self.held.get(item.nodeid),
        }
        if gpus and torch.cuda.is_initialized():
            line["peak_gpu_kib"] = max(torch.cuda.max_memory_allocated(d) for d in gpus) // 1024
        with open(self.path, "a") as f:
            f.write(json.dumps(line) + "\n")
        self.written(line)

    def written(self, line: dict) -> None:
        """Called after each test's line is appended (the dress rehearsal rewrites its table here)."""


def pytest_configure(config) -> None:
    """Registers ``GrowthPlugin`` when this module is loaded as a plugin by a run that names a tests file."""
    if os.environ.get(TESTS_ENV):
        config.pluginmanager.register(GrowthPlugin(os.environ[TESTS_ENV]), "abspos-growth")


# ---- one measurement: a child process per claim per count ---------------------------------------------------------
def _tree_rss_bytes(pid: int) -> int:
    """The memory of ``pid`` and its descendants: their proportional set sizes (``Pss``, Linux /proc; a forked child's
    pages shared with its parent counted once), else their resident sets."""
    total, todo, seen = 0, [pid], set()
    while todo:
        p = todo.pop()
        if p in seen:
            continue
        seen.add(p)
        try:
            total += _proc_kib(p) * 1024
            for task in Path(f"/proc/{p}/task").iterdir():
                todo.extend(int(k) for k in (task / "children").read_text().split())
        except (OSError, ValueError):
            continue
    return total


def _proc_kib(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1])
    except OSError:
        pass
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def _wait(proc: subprocess.Popen, a, t0: float) -> tuple[int, object, str, int]:
    """Wait for the child, watching its tree's memory (``_tree_rss_bytes``); (exit code, its rusage, status, the
    largest seen)."""
    status, seen = "ok", 0
    while True:
        pid, code, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            proc.returncode = os.waitstatus_to_exitcode(code)
            return proc.returncode, usage, status, seen
        rss = _tree_rss_bytes(proc.pid)
        seen = max(seen, rss)
        if status == "ok" and a.max_gib and rss > a.max_gib * GIB:
            status = f"stopped: resident set {rss / GIB:.1f} GiB over --max-gib {a.max_gib:g}"
            os.killpg(proc.pid, signal.SIGKILL)
        elif status == "ok" and a.timeout and time.perf_counter() - t0 > a.timeout:
            status = f"stopped: past --timeout {a.timeout:.0f} s"
            os.killpg(proc.pid, signal.SIGINT)  # pytest stops and writes what finished
        time.sleep(0.2)


def child_command(model: str, claims: list[str], n_prompts: int, seq_len: int, report_dir: Path, a, passthrough):
    """The child's pytest command line: the claims' tests on one model at one design."""
    cmd = [sys.executable, "-m", "pytest", str(ROOT / "claims"), "--models", model]
    cmd += ["-k", " or ".join(f"test_{c}_" for c in claims)]
    cmd += ["--n-prompts", str(n_prompts), "--seq-len", str(seq_len), "--report-dir", str(report_dir)]
    cmd += ["-p", "benchmarks.bench_prompt_growth", "-p", "no:cacheprovider", "-q"]
    return cmd + (["--threads", str(a.threads)] if a.threads else []) + list(passthrough)


class Stopped(Exception):
    """This script was told to stop while a child ran: the rows of the tests that finished (``rows``)."""

    def __init__(self, why: str, rows: list[dict]):
        super().__init__(why)
        self.rows = rows


def measure(model: str, claims: list[str], n_prompts: int, seq_len: int, a, passthrough: list[str]) -> list[dict]:
    """Run the claims on one model at one count in a child process (one session); a row per claim (``row_of``).
    Stopped meanwhile (Ctrl-C, SIGTERM), it ends the child and raises ``Stopped`` with the finished tests' rows."""
    with tempfile.TemporaryDirectory(prefix="abspos-growth-") as tmp:
        tests_file, log = Path(tmp) / "tests.jsonl", Path(tmp) / "log"
        cmd = child_command(model, claims, n_prompts, seq_len, Path(tmp) / "run", a, passthrough)
        env = {**os.environ, TESTS_ENV: str(tests_file), "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1"}
        t0 = time.perf_counter()
        stopped = None
        with open(log, "w") as out:
            proc = subprocess.Popen(
                cmd, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )
            try:
                code, usage, status, seen = _wait(proc, a, t0)
            except BaseException as e:  # this script stopped: the child and what it started stop with it
                os.killpg(proc.pid, signal.SIGKILL)
                _, code, usage = os.wait4(proc.pid, 0)
                status, seen, stopped = f"interrupted ({e or type(e).__name__})", 0, e
        wall = time.perf_counter() - t0
        tests = [json.loads(x) for x in tests_file.read_text().splitlines()] if tests_file.is_file() else []
        lines = log.read_text().strip().splitlines()
    tail = next((x for x in reversed(lines) if x.strip() and not x.startswith("[")), "")
    together = len(claims) > 1
    rows = [
        row_of(model, c, n_prompts, seq_len, tests, code, status, wall, usage, seen, tail, together)
        for c in claims
        if not stopped or any(t.get("claim") == c for t in tests)
    ]
    if stopped:
        raise Stopped(str(stopped), rows)
    return rows


def row_of(model, claim, n_prompts, seq_len, tests, code, status, wall, usage, seen, tail="", together=False) -> dict:
    """One row of the table from a child's per-test lines and its process figures (``wait4``'s rusage). In a process
    of several claims (``together``), the peak is the claim's tests' own (each reset before it), the process's beside
    it, and each pass is booked to the first claim that ran it, as in one run."""
    mine = [t for t in tests if t.get("claim") == claim]

    def total(k):
        return sum(t.get(k) or 0.0 for t in mine)

    if status == "ok" and code not in (0, 1):
        status = f"pytest exited {code}" + (f": {tail[:160]}" if tail else "")
    if status == "ok" and not mine:
        status = "no test of the claim ran" + (f": {tail[:160]}" if tail else "")
    peaks = [t["peak_kib"] for t in mine if t.get("peak_kib")]
    gpu = [t["peak_gpu_kib"] for t in mine if t.get("peak_gpu_kib")]
    held = [t["held_bytes"] for t in mine if t.get("held_bytes") is not None]
    outcomes: dict[str, int] = defaultdict(int)
    for t in mine:
        outcomes[t.get("outcome") or "?"] += 1
    process_peak = round(usage.ru_maxrss / 2**20, 3)  # the process's, as /usr/bin/time -v prints it
    test_peak = round(max(peaks) / 2**20, 3) if peaks else None  # its tests' (each reset before it)
    return {
        "model": model,
        "claim": claim,
        "n_prompts": n_prompts,
        "seq_len": seq_len,
        "status": status,
        "mode": "together" if together else "alone",
        "tests": len(mine),
        "outcomes": dict(outcomes),
        "layer_tokens": int(total("layer_tokens")),
        "forward_seconds": round(total("forward_seconds"), 2),
        "forward_cpu_seconds": round(total("forward_cpu_seconds"), 2),
        "statistics_seconds": round(total("seconds") - total("forward_seconds") - total("load_seconds"), 2),
        "statistics_cpu_seconds": round(
            total("cpu_seconds") - total("forward_cpu_seconds") - total("load_cpu_seconds"), 2
        ),
        "process_wall_seconds": round(wall, 1),
        "process_cpu_seconds": round(usage.ru_utime + usage.ru_stime, 1),
        "peak_rss_gib": (test_peak or 0.0) if together else process_peak,
        "process_peak_rss_gib": process_peak,
        "test_peak_rss_gib": test_peak,
        "peak_gpu_gib": round(max(gpu) / 2**20, 3) if gpu else None,
        "held_gib": round(max(held) / GIB, 3) if held else None,  # what the session holds after its tests
        "watched_gib": round(seen / GIB, 3),  # the largest memory of the process tree the watch saw (Pss)
        "when": time.strftime("%Y-%m-%d %H:%M"),
        "load": round(os.getloadavg()[0], 1),
    }


# ---- the fit and the projection ----------------------------------------------------------------------------------
def fit_power(ns: list[float], ys: list[float]) -> tuple[float, float] | None:
    """(k, c) of y = c n^k by least squares on logs; None with fewer than two positive points."""
    pts = [(math.log(n), math.log(y)) for n, y in zip(ns, ys) if y and y > 0]
    if len(pts) < 2 or len({x for x, _ in pts}) < 2:
        return None
    mx, my = sum(x for x, _ in pts) / len(pts), sum(y for _, y in pts) / len(pts)
    k = sum((x - mx) * (y - my) for x, y in pts) / sum((x - mx) ** 2 for x, _ in pts)
    return k, math.exp(my - k * mx)


def fit_line(ns: list[float], ys: list[float]) -> tuple[float, float] | None:
    """(slope, intercept) of y = a + b n by least squares; None with fewer than two counts."""
    pts = [(n, y) for n, y in zip(ns, ys) if y is not None]
    if len({n for n, _ in pts}) < 2:
        return None
    mx, my = sum(n for n, _ in pts) / len(pts), sum(y for _, y in pts) / len(pts)
    b = sum((n - mx) * (y - my) for n, y in pts) / sum((n - mx) ** 2 for n, _ in pts)
    return b, my - b * mx


def shape_of(name: str) -> tuple[int, int]:
    """(layers, heads per layer) of a registry model, a rehearsal build's included."""
    from harness.capture.budget import model_config

    cfg = model_config(name)
    return cfg["num_hidden_layers"], cfg["num_attention_heads"]


def fits(rows: list[dict]) -> dict[tuple[str, str, int], dict]:
    """Per (model, claim, seq-len) over the counts measured (status ok): the exponent of statistics CPU and wall
    seconds in prompts, the peak's line in prompts (GiB), the counts."""
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for r in rows:
        if r["status"] == "ok":
            groups[(r["model"], r["claim"], r["seq_len"])].append(r)
    out = {}
    for key, rs in groups.items():
        rs = sorted(rs, key=lambda r: r["n_prompts"])
        ns = [r["n_prompts"] for r in rs]
        out[key] = {
            "counts": ns,
            "cpu": fit_power(ns, [r["statistics_cpu_seconds"] for r in rs]),
            "wall": fit_power(ns, [r["statistics_seconds"] for r in rs]),
            "peak": fit_line(ns, [r["peak_rss_gib"] for r in rs]),
            "held": fit_line(ns, [r.get("held_gib") for r in rs]),
            "rows": rs,
        }
    return out


T10_LAYERS = 4  # = harness.stats.length_design.FIRST: T10 reads the first four layers only


def stats_scale(claim: str, paper: tuple[int, int], source: tuple[int, int]) -> float:
    """How a claim's statistics scale from the source's (layers, heads per layer) to the paper model's: heads x
    layers (T10's: the first four layers)."""
    (lp, hp), (ls, hs) = paper, source
    if claim == "T10":
        lp, ls = min(lp, T10_LAYERS), min(ls, T10_LAYERS)
    return lp * hp / (ls * hs)


def project(fit: dict, model: str, paper: str, n_prompts: int) -> dict | None:
    """A paper model's statistics CPU seconds and host memory at ``n_prompts``, from one claim's fit on ``model``:
    the statistics' curve at n_prompts x the paper model's heads x layers over the measured model's; the memory as
    what the session holds (captures and memoised arrays: a line in prompts) at n_prompts x the same ratio, plus the
    rest of the peak at the largest count measured (the interpreter, the measured model's weights, transients) as it
    was. A transient that grows with the captures (the permutation null's copy of the pair capture, T5's) is in that
    rest unscaled: the projection is low by it. None where the fit lacks two counts."""
    if not fit["cpu"]:
        return None
    k, c = fit["cpu"]
    last = fit["rows"][-1]
    scale = stats_scale(last["claim"], shape_of(paper), shape_of(model))
    held = fit["held"]
    held_at = (held[1] + held[0] * n_prompts) if held else (last.get("held_gib") or 0.0)
    rest = last["peak_rss_gib"] - (last.get("held_gib") or 0.0)
    return {
        "statistics_cpu_seconds": c * n_prompts**k * scale,
        "host_gib": max(0.0, rest) + max(0.0, held_at) * scale,
        "scale": scale,
    }


def refusal(rows: list[dict], model: str, claim: str, n_prompts: int, seq_len: int, max_gib: float | None):
    """The one line refusing a design whose projected peak exceeds ``max_gib``, or None. Projected from the rows
    already measured for (model, claim, seq-len) (a line in prompts) or, without two, from the capture's byte
    estimate (``harness.capture.budget.design_bytes``)."""
    if not max_gib:
        return None
    fit = fits(rows).get((model, claim, seq_len))
    if fit and fit["peak"]:
        b, a0 = fit["peak"]
        projected, how = a0 + b * n_prompts, f"the line through its peaks at {fit['counts']} prompts"
    else:
        from harness.capture.budget import design_bytes

        projected, how = design_bytes(model, n_prompts, seq_len) / GIB, "the capture's byte estimate"
    if projected <= max_gib:
        return None
    return (
        f"{model} {claim} at {n_prompts} prompts x {seq_len} tokens: projected peak {projected:.1f} GiB ({how}) "
        f"exceeds --max-gib {max_gib:g}; not run"
    )


# ---- the table ---------------------------------------------------------------------------------------------------
def table(rows: list[dict], project_to: tuple[int, int]) -> str:
    """growth.md: the rows as measured, then the fit and the projection per claim."""
    out = [
        "| model | claim | prompts x tokens | tests | layer-tokens | forward s (CPU s) | statistics s (CPU s) | "
        "peak RSS | status | load |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        out.append(
            f"| {r['model']} | {r['claim']} | {r['n_prompts']} x {r['seq_len']}"
            f"{' (together)' if r.get('mode') == 'together' else ''} | {r['tests']} | "
            f"{r['layer_tokens']:,} | {r['forward_seconds']:.1f} ({r['forward_cpu_seconds']:.1f}) | "
            f"{r['statistics_seconds']:.1f} ({r['statistics_cpu_seconds']:.1f}) | {r['peak_rss_gib']:.2f} GiB | "
            f"{r['status']} | {r['load']} |"
        )
    n, seq = project_to
    from harness.spec.models import names

    papers = names("paper")
    out += [
        "",
        f"Fitted per claim (statistics CPU seconds ~ prompts^k; the peak and what the session holds as lines in prompts) "
        f"and projected to {n} prompts: statistics x the paper model's heads x layers over the measured model's, host "
        f"memory as what the session holds scaled so plus the rest of the last peak (``project``; rows at {seq} tokens "
        f"only):",
        "",
        "| model | claim | tokens | counts | k (CPU) | k (wall) | peak at the least count | peak GiB/100 prompts | "
        + " | ".join(f"{p}: statistics CPU s, host GiB" for p in papers)
        + " |",
        "|---|---|---|---|---|---|---|---|" + "---|" * len(papers),
    ]
    for (model, claim, s), f in sorted(fits(rows).items()):
        k_cpu = f"{f['cpu'][0]:.2f}" if f["cpu"] else "—"
        k_wall = f"{f['wall'][0]:.2f}" if f["wall"] else "—"
        slope = f"{100 * f['peak'][0]:.2f}" if f["peak"] else "—"
        cells = []
        for p in papers:
            pr = project(f, model, p, n) if s == seq else None
            cells.append(
                f"{pr['statistics_cpu_seconds']:,.0f} s, {pr['host_gib']:.1f} GiB"
                if pr
                else ("—" if s == seq else f"not projected ({s} tokens)")
            )
        out.append(
            f"| {model} | {claim} | {s} | {','.join(map(str, f['counts']))} | {k_cpu} | {k_wall} | "
            f"{f['rows'][0]['peak_rss_gib']:.2f} GiB | {slope} | " + " | ".join(cells) + " |"
        )
    return "\n".join(out) + "\n"


def read_rows(path: Path) -> list[dict]:
    """The rows of ``growth.jsonl``, the last of each (model, claim, count, seq-len) where one was measured again."""
    rows = [json.loads(x) for x in path.read_text().splitlines() if x.strip()] if path.is_file() else []
    last = {(r["model"], r["claim"], r["n_prompts"], r["seq_len"]): r for r in rows}
    return list(last.values())


def selection(model: str, claims: str) -> list[str]:
    """The claim ids to measure: a comma-separated list, or "all" (every claim with a test on the model)."""
    from harness.spec.claims import CLAIMS

    if claims != "all":
        chosen = [c.strip() for c in claims.split(",") if c.strip()]
        unknown = [c for c in chosen if c not in CLAIMS]
        if unknown:
            raise SystemExit(f"--claims: unknown {', '.join(unknown)} (claims: {', '.join(CLAIMS)})")
        return chosen
    return [c for c in CLAIMS if not c.startswith("DS") and c != "T13"]


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    passthrough = argv[argv.index("--") + 1 :] if "--" in argv else []
    argv = argv[: argv.index("--")] if "--" in argv else argv
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    ap.add_argument("--models", default="smollm2-135m", help="comma-separated registry names")
    ap.add_argument("--claims", default="all", help='comma-separated claim ids, or "all" (every claim but DS, T13)')
    ap.add_argument("--counts", default="16,32,64", help="comma-separated prompt counts, ascending")
    ap.add_argument("--seq-len", type=int, default=128)
    ap.add_argument("--out", default=str(ROOT / "reports" / "dress-rehearsal" / "growth"))
    ap.add_argument("--max-gib", type=float, default=None, help="refuse a design projected above it; stop a child")
    ap.add_argument("--threads", type=int, default=None, help="the child's --threads (default: the cores free)")
    ap.add_argument("--timeout", type=float, default=None, help="seconds per child (then interrupted, row says so)")
    ap.add_argument("--project", default="512x512", help="the design projected to: PROMPTSxTOKENS")
    ap.add_argument("--again", action="store_true", help="measure rows the table already holds again")
    ap.add_argument("--fit-only", action="store_true", help="write the fit from the rows held; run nothing")
    ap.add_argument(
        "--together",
        action="store_true",
        help="one process per count for the whole selection, as the nightly runs it (passes booked once), instead of "
        "one per claim",
    )
    a = ap.parse_args(argv)
    try:
        counts = sorted({int(x) for x in a.counts.split(",")})
        project_to = tuple(int(x) for x in a.project.lower().split("x"))
        assert len(project_to) == 2
    except (ValueError, AssertionError):
        ap.error(f"--counts {a.counts!r} / --project {a.project!r}: integers, PROMPTSxTOKENS")
    from harness.capture.budget import model_config
    from harness.spec.models import UnknownModelError
    from harness.spec.settings import Settings

    models = [m.strip() for m in a.models.split(",") if m.strip()]
    for m in models:
        try:
            model_config(m)
        except UnknownModelError:
            ap.error(f"--models: unknown model {m!r}")
    for n in counts:
        problems = Settings(n_prompts=n, seq_len=a.seq_len).problems()
        if problems:
            ap.error(problems[0])
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    jsonl, md = out / "growth.jsonl", out / "growth.md"
    rows = read_rows(jsonl)
    plan = [(m, n, c) for m in models for n in counts for c in selection(m, a.claims)]
    if not a.fit_only:
        for m, n, c in plan:  # before any work: a design projected past the limit is refused
            line = refusal(rows, m, c, n, a.seq_len, a.max_gib)
            if line:
                print(line, file=sys.stderr)
                return 2
    done = {(r["model"], r["claim"], r["n_prompts"], r["seq_len"]) for r in rows if r["status"] == "ok"}

    def stop(signum, _frame):  # SIGTERM / SIGHUP as Ctrl-C: the child under way ends, the rows kept are tabled
        raise KeyboardInterrupt(signal.Signals(signum).name)

    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, stop)

    def keep(new: list[dict]) -> None:
        nonlocal rows
        keys = {(r["model"], r["claim"], r["n_prompts"], r["seq_len"]) for r in new}
        rows = [r for r in rows if (r["model"], r["claim"], r["n_prompts"], r["seq_len"]) not in keys] + new
        with open(jsonl, "a") as f:
            f.writelines(json.dumps(r) + "\n" for r in new)
        md.write_text(table(rows, project_to))
        for row in new:
            print(
                f"[growth] {row['model']} {row['claim']} {row['n_prompts']} x {row['seq_len']}: {row['status']}; "
                f"statistics {row['statistics_seconds']:.1f} s ({row['statistics_cpu_seconds']:.1f} CPU s), forward "
                f"{row['forward_seconds']:.1f} s, peak {row['peak_rss_gib']:.2f} GiB",
                flush=True,
            )

    try:
        for m in [] if a.fit_only else models:
            for n in counts:
                todo = []
                for c in selection(m, a.claims):
                    if (m, c, n, a.seq_len) in done and not a.again:
                        continue
                    line = refusal(rows, m, c, n, a.seq_len, a.max_gib)  # with the rows measured since
                    if line:
                        print(line, file=sys.stderr)
                        continue
                    todo.append(c)
                for group in [todo] if a.together and todo else [[c] for c in todo]:
                    print(f"[growth] {m} {','.join(group)} {n} x {a.seq_len} ...", flush=True)
                    keep(measure(m, group, n, a.seq_len, a, passthrough))
    except Stopped as e:
        keep(e.rows)
        print(f"[growth] interrupted ({e}): the rows that finished are in {jsonl}", file=sys.stderr)
        return 130
    except KeyboardInterrupt as e:
        print(f"[growth] interrupted ({e or 'SIGINT'}): the rows that finished are in {jsonl}", file=sys.stderr)
        md.write_text(table(rows, project_to))
        return 130
    md.write_text(table(rows, project_to))
    print(md.read_text())
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    raise SystemExit(main())
