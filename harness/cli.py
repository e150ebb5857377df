"""The ``abspos-claims`` console command: run the claims (pytest underneath), rebuild or compare run reports, list
the models with the claims that apply to each, and keep the recorded data the suite reads (known outcomes, the
stability record, METHODS.md's claim table).

    abspos-claims run --models smollm2-135m --claims <claim id>,<claim id> -n 2 --dist loadgroup --seq-len 256
    abspos-claims report build reports/latest
    abspos-claims models [MODEL ...] [--seq-len N]
    abspos-claims submit --models paper --executor slurm --partition gpu --gpus 1 --device cuda
    abspos-claims outcomes record reports/latest/results.json     # -> fixtures/known_outcomes.json
    abspos-claims stability record RUN RUN RUN [...] | methods     # -> fixtures/stability.json; METHODS.md's list
    abspos-claims claims table                                     # METHODS.md's claim table
    abspos-claims claims decisions                                 # METHODS.md's claim decisions
    abspos-claims bundle --out DIR [--models bundled] [--torch included|node]   # an offline bundle: DIR/install.sh

``run`` is ``python -m pytest claims ...`` in a subprocess (``pytest claims`` itself works the same); ``report``
is ``python -m harness.report``. Importing this module loads neither torch, transformers nor pytest.
"""

from __future__ import annotations

import argparse
import os
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Callable, Sequence

from harness.bundle import bundle_command
from harness.files import checkout
from harness.files.atomic import JSONFileError
from harness.files.paths import KNOWN_OUTCOMES, ROOT, STABILITY
from harness.listing import (  # noqa: F401  (applies_to, family_level, weights_status: the listing's, named here too)
    ALL_SYNTHETIC,
    applies_to,
    claims_list,
    family_level,
    models_listing,
    weights_status,
)
from harness.outcome import known_outcomes, stability
from harness.report.cli import main as report_main
from harness.run import selection
from harness.run_command import PROG, fail, run_command
from harness.spec.catalogue import CatalogueError
from harness.spec.claim_names import catalogue_problem
from harness.spec.methods_text import methods_decisions, methods_table
from harness.spec.models import REGISTRY
from harness.spec.settings import Settings
from harness.submit import submit_command

# ---- report ------------------------------------------------------------------------------------------

REPORT_HELP = (
    "rebuild a run's report from its results.json, compare two runs, put two models side by side, or "
    "merge runs made apart (python -m harness.report build|compare|side-by-side|merge)"
)


def report_command(argv: Sequence[str]) -> int:
    if list(argv[:1]) in (["-h"], ["--help"]):
        print(f"{PROG} report: {REPORT_HELP}; its arguments:\n")
    return report_main(list(argv))


# ---- models ------------------------------------------------------------------------------------------


def models_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=f"{PROG} models",
        description="List the models (by default the registry's bundled and paper models, and the related paper's "
        "synthetic sets): family, group, BOS policy, sliding window, context, whether their weights are on this "
        "machine (a synthetic set: its shape, training and purpose); then, per claim, how many of its tests apply to "
        "each.",
    )
    p.add_argument(
        "models",
        nargs="*",
        metavar="MODEL",
        help="model names, groups or synthetic sets (as --models) instead of the registry listing",
    )
    p.add_argument(
        "--seq-len",
        type=int,
        default=None,
        metavar="N",
        help="the run's prompt length, for claims whose applicability depends on it (sliding windows); "
        "default: the suite's",
    )
    return p


def models_command(argv: Sequence[str]) -> int:
    args = models_parser().parse_args(argv)
    seq_len = Settings().seq_len if args.seq_len is None else args.seq_len
    if problem := next((p for p in Settings(seq_len=seq_len).problems() if p.startswith("--seq-len")), None):
        return fail(problem)  # a length no run accepts, before any model is looked at
    if problem := catalogue_problem() or selection.cache_problem():  # what every run would stop on, said here too
        return fail(problem)
    try:
        sets, rest = selection.synthetic_targets(",".join(args.models))
        names = selection.selected_models(rest or "bundled,paper") if rest or not sets else ()
    except selection.UsageError as e:
        return fail(str(e))
    if not names and not sets:
        return fail("no models named")
    specs = [REGISTRY[n] for n in names]  # names may be derived specs the registry holds (hf:, path:, gguf:)
    print(models_listing(specs, sets if args.models else ALL_SYNTHETIC, seq_len))
    return 0


# ---- the suite's recorded data -------------------------------------------------------------------------


def outcomes_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=f"{PROG} outcomes",
        description="Known outcomes: the claims measured not to hold on a model, expected again as strict xfails at "
        "the same assertion (harness.outcome.known_outcomes).",
    )
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser(
        "record", help="record a run's claims that did not hold (and drop those that now hold), at its settings"
    )
    r.add_argument("results", type=Path, metavar="RESULTS_JSON", help="the run's results.json or its run folder")
    r.add_argument(
        "--known-outcomes",
        type=Path,
        default=KNOWN_OUTCOMES,
        metavar="FILE",
        help="the known-outcomes file to update (default fixtures/known_outcomes.json)",
    )
    return p


def outcomes_command(argv: Sequence[str]) -> int:
    args = outcomes_parser().parse_args(argv)
    try:
        changes = known_outcomes.record(args.results, args.known_outcomes)
    except (JSONFileError, OSError) as e:  # a damaged results.json or known-outcomes file: one line
        return fail(str(e), 2)
    print("\n".join(changes) or "nothing to record")
    return 0


def stability_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=f"{PROG} stability",
        description="Borderline verdicts: every claim test's verdict under several seeds (bash scripts/stability.sh "
        "runs them; harness.outcome.stability).",
    )
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser(
        "record",
        help=f"combine {stability.MIN_SEEDS} or more runs of distinct seeds into the stability record, and "
        "print METHODS.md's list of unstable verdicts",
    )
    r.add_argument("runs", nargs="+", type=Path, metavar="RUN", help="results.json or run folder, one per seed")
    r.add_argument(
        "--merge",
        action="store_true",
        help="runs of a few claims (with a full run among them, or not): re-take only the tests every run has, "
        "keeping the record's other entries",
    )
    r.add_argument(
        "--replace",
        action="store_true",
        help="replace the record (or, with --merge, its entries) even with fewer seeds or fewer tests than it holds",
    )
    m = sub.add_parser("methods", help="print METHODS.md's list of unstable verdicts from the stability record")
    for q in (r, m):
        q.add_argument(
            "--stability-record",
            type=Path,
            default=STABILITY,
            metavar="FILE",
            help="the stability record (default fixtures/stability.json)",
        )
    return p


def stability_command(argv: Sequence[str]) -> int:
    p = stability_parser()
    args = p.parse_args(argv)
    if args.cmd == "record" and len(args.runs) < stability.MIN_SEEDS:
        p.error(f"record takes {stability.MIN_SEEDS} or more runs of distinct seeds, got {len(args.runs)}")
    left_out: list[str] = []
    try:
        data = (
            stability.record(args.runs, args.stability_record, args.merge, args.replace, left_out)
            if args.cmd == "record"
            else stability.load(args.stability_record)
        )
        text = stability.methods_list(data)
    except stability.NothingNew as e:
        print(f"stability: {args.stability_record}: {e}; it is unchanged")
        return 0
    except (OSError, ValueError, KeyError) as e:
        return fail(f"stability: {e}", 2)
    if left_out:
        print(
            f"stability: left out {len(left_out)} test × model entr{'y' if len(left_out) == 1 else 'ies'} with "
            f"verdicts under fewer than {stability.MIN_SEEDS} seeds: {'; '.join(left_out[:3])}"
            + ("; …" if len(left_out) > 3 else ""),
            file=sys.stderr,
        )
    print(text, end="")
    return 0


def claims_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=f"{PROG} claims", description="The claims' declarations (claims/<section>.py).")
    sub = p.add_subparsers(dest="cmd", required=True)
    sub.add_parser(
        "list", help="each claim: its id, what its tests run on (models, a family, synthetic sets), section, statement"
    )
    sub.add_parser("table", help="print METHODS.md's claim table (paste it between the claim-table markers)")
    sub.add_parser("decisions", help="print METHODS.md's claim decisions (paste them over the claim-decisions block)")
    return p


def claims_command(argv: Sequence[str]) -> int:
    cmd = claims_parser().parse_args(argv).cmd
    if problem := catalogue_problem():  # $ABSPOS_CLAIMS_DIR missing, a file, or a folder without claims
        return fail(problem)
    print({"list": claims_list, "table": methods_table, "decisions": methods_decisions}[cmd]())
    return 0


# ---- the command -------------------------------------------------------------------------------------

COMMANDS: dict[str, tuple[str, Callable[[Sequence[str]], int]]] = {
    "run": ("run the claims with pytest (--models, --claims, and any pytest option)", run_command),
    "report": (REPORT_HELP, report_command),
    "models": ("list the models, their weights here, and which claims apply to each", models_command),
    "submit": (
        "one job per model (SLURM or local, through submitit), then one merged report",
        submit_command,
    ),  # submitit is imported by the command alone
    "outcomes": (
        "record a run's claims that did not hold as known outcomes (fixtures/known_outcomes.json)",
        outcomes_command,
    ),
    "stability": (
        "record verdicts across seeds (fixtures/stability.json), or print METHODS.md's unstable list",
        stability_command,
    ),
    "claims": ("list the paper's claims (list), or print METHODS.md's claim table (table)", claims_command),
    "bundle": (
        "write everything a run needs offline (wheels, corpora, weights, tokenizer files, this checkout, install.sh)",
        bundle_command,
    ),
}


MAINTAINER = ("outcomes", "stability")  # kept apart in the help: a researcher running the claims needs neither


def top_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=PROG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Verify the claims of 'Where does Absolute Position come from in decoder-only Transformers?' on "
        "real language models.",
        epilog="commands:\n"
        + "\n".join(f"  {n:<9} {h}" for n, (h, _) in COMMANDS.items() if n not in MAINTAINER)
        + "\n\nmaintainer commands (the recorded data the suite reads):\n"
        + "\n".join(f"  {n:<9} {h}" for n, (h, _) in COMMANDS.items() if n in MAINTAINER)
        + f"\n\n`{PROG} COMMAND --help` says more.",
    )
    p.add_argument("command", choices=list(COMMANDS), help="what to do")
    p.add_argument("args", nargs="*", help="the command's arguments")
    return p


NOTED = ("run", "submit")  # the commands that say which checkout they run when it is not the one stood in


def stand_in_checkout(command: str, argv: Sequence[str]) -> int | None:
    """Run the checkout the command is typed in (``harness.files.checkout``): re-execute this command with that
    checkout's harness when it is another than this one's (never returns then); an exit code when none can be run;
    None to go on here (a run outside any checkout first says which it runs, and why)."""
    decision = checkout.decide(ROOT, Path.cwd(), os.environ)
    if decision.problem is not None:
        return fail(decision.problem)
    if decision.reexec:
        env = {**checkout.pythonpath(decision.root, os.environ), checkout.GUARD: str(decision.root)}
        os.execve(sys.executable, checkout.reexec_argv(sys.executable, list(argv)), env)
    if decision.note is not None and command in NOTED:
        print(f"{PROG}: {decision.note}", file=sys.stderr, flush=True)
    return None


def exit_code(e: SystemExit) -> int:
    return e.code if isinstance(e.code, int) else 0 if e.code is None else 1


def main(argv: Sequence[str] | None = None) -> int:
    """The console command; returns its exit code (2: no or an unknown command, 4: a bad claim or model)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = top_parser()
    if argv[:1] in (["-h"], ["--help"]):
        parser.print_help()
        return 0
    if argv[:1] == ["--version"]:
        print(f"{PROG} {version(PROG)}")
        return 0
    if not argv or argv[0] not in COMMANDS:
        parser.print_usage(sys.stderr)
        return fail(
            f"choose a command: {', '.join(COMMANDS)}"
            if not argv
            else f"unknown command {argv[0]!r}; choose from {', '.join(COMMANDS)}",
            code=2,
        )
    if (code := stand_in_checkout(argv[0], argv)) is not None:
        return code
    try:
        return COMMANDS[argv[0]][1](argv[1:])
    except SystemExit as e:  # argparse's --help (0) and usage errors (2)
        return exit_code(e)
    except CatalogueError as e:  # any other command that reads the claims: $ABSPOS_CLAIMS_DIR unusable
        return fail(str(e))


if __name__ == "__main__":
    raise SystemExit(main())
