"""The report tools' command line: ``python -m harness.report`` (also ``abspos-claims report``).

``python -m harness.report build reports/<run>/results.json`` rebuilds the reports (and figures/*.png) from the
JSON alone (harness.report.write); ``python -m harness.report compare OLD NEW [--rtol R --atol A] [--models M] [--claims IDS]``
lists what moved between two runs, or between the tests of the models and claims selected (first the two runs'
versions, and when their settings or models differ; harness.report.compare);
``python -m harness.report side-by-side RUN[#MODEL] RUN[#MODEL]`` compares two models claim by claim
(harness.report.side_by_side); ``python -m harness.report merge RUN... --out DIR`` merges runs made apart, one model
each, into one run and report (harness.report.merge). Each takes a results.json or its run folder.
Exit codes: 0 nothing moved (or the report was built), 1 figures or verdicts moved, 2 unreadable input (a missing,
empty or invalid JSON file, or not a claims results.json: one line on stderr says which file and why; nothing is
written), a --models or --claims that neither run has, or a usage error.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from harness.outcome.results import ResultsFileError, load_run
from harness.outcome.stability import StabilityError
from harness.report import frame
from harness.report.compare import SelectionError, compare_runs, names, selected, tolerance
from harness.report.merge import merge_command
from harness.report.side_by_side import side_by_side
from harness.report.write import build

PROG = "harness.report"


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m harness.report")
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("build", help="rebuild report.md/report.html from results.json").add_argument("results", type=Path)
    c = sub.add_parser("compare", help="list figures that moved beyond tolerance between two runs")
    c.add_argument("old", type=Path)
    c.add_argument("new", type=Path)
    c.add_argument(
        "--rtol", type=tolerance, default=None, help="relative tolerance (default: harness.outcome.snapshots.RTOL)"
    )
    c.add_argument(
        "--atol", type=tolerance, default=None, help="absolute tolerance (default: harness.outcome.snapshots.ATOL)"
    )
    c.add_argument(
        "--models",
        type=names,
        default=None,
        metavar="M",
        help="comma list of models: compare only their tests, in both runs (a one-model run against the example)",
    )
    c.add_argument(
        "--claims", type=names, default=None, metavar="IDS", help="comma list of claim ids: only their tests"
    )
    c.add_argument(
        "--csv",
        type=Path,
        default=None,
        metavar="FILE",
        help="also write the comparison as tidy CSV rows (docs/running.md)",
    )
    c.add_argument("--json", type=Path, default=None, metavar="FILE", help="also write those rows as a JSON array")
    s = sub.add_parser("side-by-side", help="two models claim by claim: side_by_side.md/.html (RUN[#MODEL] each)")
    s.add_argument("a")
    s.add_argument("b")
    s.add_argument("--out", type=Path, default=None, help="output folder (default: the folder of A's results.json)")
    m = sub.add_parser(
        "merge", help="one run and one report from runs made apart, one model each (harness.report.merge)"
    )
    m.add_argument("runs", nargs="+", metavar="RUN", help="results.json, run folder, --report-dir or job.json")
    m.add_argument("--out", type=Path, required=True, help="folder for the merged results.json and report")
    m.add_argument(
        "--allow-mixed",
        action="store_true",
        help="merge runs of different settings or commits, with a warning in the report",
    )
    m.add_argument(
        "--expect",
        action="append",
        metavar="MODELS",
        help="models that should be there (names, bundled, paper): one without a run is shown as failed",
    )
    m.add_argument("--run-id", default=None, help="the merged run's name (default merged-<time>)")
    m.add_argument(
        "--stability-record",
        type=Path,
        default=None,
        metavar="FILE",
        help="read each verdict's seed stability from this record as it stands now (fixtures/stability.json), not as "
        "it stood when each run was made",
    )
    m.add_argument(
        "--known-outcomes",
        type=Path,
        default=None,
        metavar="FILE",
        help="read each verdict's standing against the recorded known outcomes (changed since the record or not) from this file as "
        "it stands now (fixtures/known_outcomes.json), not as it stood when each run was made",
    )
    return ap


def run(args: argparse.Namespace) -> tuple[str, int]:
    """(what to print, exit code) of one parsed command; unreadable inputs and unwritable outputs raise."""
    if args.cmd == "build":  # a merged run's report keeps its "Merged from" section
        return str(build(args.results)), 0
    if args.cmd == "merge":  # 0 merged, 1 merged with a model failed or missing, 2 refused
        return merge_command(
            args.runs, args.out, args.allow_mixed, args.expect, args.run_id, args.stability_record, args.known_outcomes
        )
    if args.cmd == "side-by-side":
        return str(side_by_side(args.a, args.b, args.out)), 0
    return compare_command(args)


def compare_command(args) -> tuple[str, int]:
    """``compare``: both runs loaded once; the table and its exit code, and with ``--csv``/``--json`` the comparison's
    tidy rows (``frame.comparison_rows``) written, each file said in one line."""
    old, new = load_run(args.old), load_run(args.new)
    text, code = compare_runs(old, new, args.rtol, args.atol, args.models, args.claims)
    if args.csv is None and args.json is None:
        return text, code
    table = frame.comparison_rows(*selected(old, new, args.models, args.claims), args.rtol, args.atol)
    written = [frame.write_csv(table, args.csv, frame.COMPARISON_COLUMNS)] if args.csv is not None else []
    if args.json is not None:
        args.json.write_text(frame.to_json_text(table))
        written.append(args.json)
    changed = sum(row["changed"] for row in table)
    lines = [f"comparison rows: {len(table)} ({changed} changed) in {', '.join(map(str, written))}"]
    return text.rstrip("\n") + "\n" + "\n".join(lines), code


def main(argv: list[str]) -> int:
    """The command line; returns the exit code (0 nothing moved, 1 something moved, 2 unreadable input or an
    unwritable output; argparse exits 2 itself on a usage error)."""
    args = parser().parse_args(argv)
    try:
        text, code = run(args)
    except (ResultsFileError, StabilityError, SelectionError) as e:  # an unreadable run, the stability record
        # named, or a --models / --claims neither run has
        print(f"{PROG}: {e}", file=sys.stderr)
        return 2
    except OSError as e:  # a report or merge into a folder this user cannot write (read-only, full): one line
        where = e.filename or (args.out if args.cmd == "merge" else getattr(args, "results", None))
        print(
            f"{PROG}: {where}: cannot write {'there' if args.cmd == 'merge' else 'the report there'} "
            f"({e.strerror or e})",
            file=sys.stderr,
        )
        return 2
    print(text)
    return code
