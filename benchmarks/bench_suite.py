"""Benchmark: a claims run's forward work against its floor, statistics time and total (the figures the report's
"Where the time went" also shows).

    python benchmarks/bench_suite.py [pytest options ...]          # runs the bundled claims in this process
                                                                   # (--report-dir D keeps its report)
    python benchmarks/bench_suite.py --results reports/latest      # reads a run's results.json instead

Per model: forward layer-tokens run (every pass, in tests and their fixtures, from the process's own workload
counter), layer-tokens booked to the tests in results.json, the floor (each distinct capture once: a prompt under
one condition and depth counted once, alone or inside a larger prompt set; ``harness.capture.workload.Workload``), run /
floor, forward seconds, statistics seconds (test time minus forward time) and the tests' total. Exits 1 when the run
is above 1.05 x its floor or (in-process runs) when the booked work differs from the work run.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

from harness.outcome.results import load_results, results_file  # noqa: E402
from harness.report.timing import time_per_model  # noqa: E402

MAX_OVER_FLOOR = 1.05


def run_claims(options: list[str]) -> tuple[dict, dict]:
    """The bundled claims (or what ``options`` select) in this process: (results.json, {model: layer-tokens run})."""
    import pytest

    from harness.run.plugin import claims_session

    class Work:  # the run's workload (the plugin's, one per pytest run), read as the run ends
        layer_tokens: dict = {}

        def pytest_sessionfinish(self, session):
            self.layer_tokens = dict(claims_session(session.config).workload.layer_tokens)

    work = Work()
    with tempfile.TemporaryDirectory() as tmp:
        out = options[options.index("--report-dir") + 1] if "--report-dir" in options else tmp  # kept if given
        code = pytest.main(
            [
                str(ROOT / "claims"),
                "--models",
                "bundled",
                "-q",
                "-p",
                "no:randomly",
                *options,
                *([] if out != tmp else ["--report-dir", tmp]),
            ],
            plugins=[work],
        )
        if code not in (0, 1):
            sys.exit(f"bench_suite: pytest exited {code}")
        return load_results(Path(out) / "latest" / "results.json"), work.layer_tokens


def table(results: dict, run: dict | None) -> tuple[list[list[str]], bool]:
    rows, ok = [], True
    totals = [0, 0, 0, 0.0, 0.0, 0.0]
    for model, a in time_per_model(results["records"]).items():
        if not model:
            continue
        t, f, booked, floor = a.seconds, a.forward_seconds, a.layer_tokens, a.floor_layer_tokens
        executed = run.get(model, 0) if run is not None else booked
        ratio = executed / floor if floor else 1.0
        ok &= ratio <= MAX_OVER_FLOOR and (run is None or executed == booked)
        for k, v in enumerate((executed, booked, floor, f, t - f, t)):
            totals[k] += v
        rows.append(
            [
                model,
                f"{executed:,}",
                f"{booked:,}",
                f"{floor:,}",
                f"{ratio:.3f}",
                f"{f:.0f}",
                f"{t - f:.0f}",
                f"{t:.0f}",
            ]
        )
    e, b, fl, f, st, t = totals
    rows.append(
        ["total", f"{e:,}", f"{b:,}", f"{fl:,}", f"{e / fl if fl else 1:.3f}", f"{f:.0f}", f"{st:.0f}", f"{t:.0f}"]
    )
    return rows, ok


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--results", type=Path, help="a run's results.json (or its folder) instead of running")
    args, options = ap.parse_known_args(argv)
    if args.results:
        results, run = load_results(results_file(args.results)), None
    else:
        results, run = run_claims(options)
    rows, ok = table(results, run)
    header = ["model", "layer-tokens run", "booked", "floor", "run/floor", "forward s", "statistics s", "tests s"]
    widths = [max(len(r[k]) for r in [header, *rows]) for k in range(len(header))]
    print(f"\nrun {results.get('run')}: forward work against its floor (each distinct capture once)")
    for r in [header, *rows]:
        print("  ".join(c.rjust(w) if k else c.ljust(w) for k, (c, w) in enumerate(zip(r, widths))))
    print(
        ("PASS" if ok else "FAIL")
        + f": run within {MAX_OVER_FLOOR}x its floor"
        + ("" if run is None else " and booked work equal to the work run")
    )
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
