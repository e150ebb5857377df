"""A run's records turned once into what its report shows (``run_cells``): a frozen ``Cells`` per record (its
verdict in words and its css classes, its criterion, the paper's number, its headline, its figures' rows, its
target's label, its test in words) and a ``RunCells`` for the run (those, the property checks folded, the run's
settings, provenance and what it merges). The report's sections (harness.report.document, matrix, merged_report)
are built from these alone: the wording of a record is harness.report.record_text's, asked here and nowhere after.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from harness.outcome.claim_result import ClaimResult, TargetKind
from harness.outcome.results import RunResult
from harness.outcome.verdict import Verdict
from harness.report import record_text as text
from harness.report.timing import time_accounting
from harness.spec.claims import CLAIMS, claim_test, paper_numbers


@dataclass(frozen=True)
class Cells:
    """One record as its report shows it: plain strings (and the verdict it counts under)."""

    claim: str
    order: tuple  # the claim's place in claim order
    function: str  # the test function's name
    label: str  # its target's label: the model, the synthetic set, "llama family", "(no model)"
    own: bool  # on a model or a synthetic set (the matrix's columns), not on a family or none
    target: str  # its target's name (a model or set counted once in the totals)
    shown: Verdict
    changed: bool  # differs from its record
    css: str  # a verdict cell's css classes
    marked: str  # the verdict's label with its badge
    verdict: str  # ... with this run's reason where it did not hold
    criterion: str  # the criterion in words (with the paper checks on a paper model), else the test's name
    paper: str  # the paper's number with the paper model it comes from
    headline: str  # the headline figure measured, with its 95% CI
    words: str  # the test's name as a short phrase
    property_check: bool  # a check of the paper's equations (folded into one row where all held)
    on_set: str | None  # the size of the synthetic set it ran on, None for anything else
    figures: tuple[tuple[str, str, str, str], ...]  # (figure in words, paper, measured, CI) per recorded figure
    setup_failed: str | None  # its model's setup failure, as recorded
    timed: bool  # its forward work is recorded


class Folded(NamedTuple):
    """Records one per row, and each model's property checks read as one row ({label: (checks, their words)})."""

    rows: tuple[Cells, ...]
    checks: dict[str, tuple[tuple[Cells, ...], str]]


@dataclass(frozen=True)
class RunCells:
    """A run as its report shows it: every record's ``Cells``, and the run's own sections' data."""

    name: str | None
    models: tuple[str, ...]
    records: tuple[Cells, ...]
    claims: tuple[str, ...]  # the claims of its records, in claim order
    applicable: Folded  # the lead table's rows (tests applicable to their model)
    not_applicable: Folded  # ... and those of tests not applicable to theirs
    everything: Folded  # the matrix's
    sets: tuple[str, ...]  # the synthetic sets run, each with its shape
    statements: Mapping[str, str]  # {claim: its statement}
    settings: Any  # ``Settings``, None when the file has none
    recorded_settings: Mapping[str, Any]  # the settings the file records, {name: value}
    versions: Mapping[str, Any]
    provenance: Mapping[str, Any]
    fingerprints: Mapping[str, str]  # {model: its weights in a few words} (the provenance's models)
    interrupted: Any = None
    merged: Mapping[str, Any] | None = None
    merged_fingerprints: Mapping[str, str] = field(default_factory=dict)  # a merged run's, per model
    time_rows: tuple[tuple[str, ...], ...] = ()  # where the time went, per model


def cells_of(r: ClaimResult) -> Cells:
    """A record's ``Cells``."""
    c = claim_test(r.function) if r.claim in CLAIMS else None
    return Cells(
        claim=r.claim,
        order=text.claim_key(r.claim),
        function=r.function,
        label=r.target.label,
        own=r.target.kind in (TargetKind.MODEL, TargetKind.SYNTHETIC),
        target=r.target.name,
        shown=r.shown,
        changed=r.changed,
        css=text.verdict_css(r),
        marked=text.marked(r),
        verdict=text.verdict_text(r, True),
        criterion=(c.words(r.claim) + text.paper_checks(r.claim, r.model, r.figures)) if c else r.function,
        paper=paper_numbers(r.claim, r.function, r.model) if c else "",
        headline=text.headline_cell(r, c.headline, c.column) if c else "",
        words=text.test_words(r.function, r.claim),
        property_check=text.is_property_check(r),
        on_set=text.set_size(r.target.label),
        figures=text.figure_rows(r),
        setup_failed=r.recorded.get("setup_failed"),
        timed="layer_tokens" in r.recorded,
    )


def run_cells(run: RunResult) -> RunCells:
    """The run's ``RunCells``: each record's wording asked once."""
    worded: list[Cells] = []
    for r in run.records:
        worded.append(cells_of(r))
    records = tuple(worded)
    folds = {
        which: text.fold_property_checks(
            [c for c in records if keep(c)], check=lambda c: c.property_check, label=lambda c: c.label
        )
        for which, keep in (
            ("applicable", lambda c: c.shown != Verdict.NOT_APPLICABLE),
            ("not_applicable", lambda c: c.shown == Verdict.NOT_APPLICABLE),
            ("everything", lambda c: True),
        )
    }
    folded = {
        which: Folded(
            tuple(rows), {m: (tuple(checks), text.property_checks_text(checks)) for m, checks in checks_of.items()}
        )
        for which, (rows, checks_of) in folds.items()
    }
    per_model = run.provenance.get("per_model") or {}
    return RunCells(
        name=run.name,
        models=run.models,
        records=records,
        claims=tuple(sorted(dict.fromkeys(c.claim for c in records), key=text.claim_key)),
        **folded,
        sets=tuple(map(text.set_shape, text.synthetic_sets(run.records))),
        statements=text.claim_texts(),
        settings=run.settings,
        recorded_settings=run.recorded_settings,
        versions=run.versions,
        provenance=run.provenance,
        fingerprints={m: text.fingerprint(w) for m, w in (run.provenance.get("models") or {}).items()},
        interrupted=run.interrupted,
        merged=run.merged,
        merged_fingerprints={m: text.fingerprint(x.get("weights") or {}) for m, x in per_model.items()},
        time_rows=tuple(map(tuple, time_accounting(list(run.records)))),
    )
