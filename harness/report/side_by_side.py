"""Two models side by side, claim by claim: a base checkpoint and its fine-tune (two models in one run, or in two
runs), or one model under two transformers versions (two runs).

``python -m harness.report side-by-side RUN[#MODEL] RUN[#MODEL] [--out DIR]`` writes side_by_side.md and
side_by_side.html (DIR defaults to the folder of the first run's results.json). RUN is a results.json or its run
folder; MODEL picks one model of that run and may be omitted when the run has exactly one. Each side holds that
model's records and the run's model-free ones (a property without a model, a family-level test per family), matched by test: a model's record
by its node id without the ``[model]`` parameter, a model-free one by its whole node id.

The document: each side's provenance (and a warning when the runs' settings differ), one row per claim test in
claim-registry order (criterion, each side's verdict and headline figure, what changed), a summary line counting
agreements and changes, and the figures that differ beyond the snapshot tolerance.
"""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path
from typing import NamedTuple

from harness.outcome.claim_result import ClaimResult, TargetKind
from harness.outcome.results import ResultsFileError, RunResult, load_run, results_file
from harness.outcome.verdict import Verdict
from harness.report.compare import figures_by_name, settings_differences
from harness.report.record_text import claim_key, fingerprint, measured
from harness.report.render import to_html, to_markdown
from harness.spec.claims import CLAIMS, claim_test
from harness.spec.models import REGISTRY
from harness.spec.settings import Settings

NOT_RUN = "not run"


class SideBySideError(ResultsFileError):
    """Two sides that cannot be compared (a model not in its run, no model named in a run of several, the same
    side twice): one line, like an unreadable results.json."""


class Side(NamedTuple):
    """One side of the comparison: its label ("run#model"), its run (loaded once), the model picked, and the
    results.json it came from."""

    label: str
    results: RunResult
    model: str
    path: Path | None = None


# ---- the two sides ----------------------------------------------------------------------------------------


def parse_spec(spec: str) -> tuple[Path, str | None]:
    """RUN[#MODEL] as (the run's results.json, the model or None); a path that exists is a RUN even with a '#'."""
    if "#" in spec and not Path(spec).exists():
        run, _, model = spec.rpartition("#")
        return results_file(run), model or None
    return results_file(spec), None


def run_models(results: RunResult) -> list[str]:
    """The models a run's records name, in the run's declared order first."""
    recorded = {r.model for r in results.records if r.model}
    ordered = [*results.models, *sorted(recorded)]
    return [m for m in dict.fromkeys(ordered) if m in recorded]


def side(spec: str) -> Side:
    """One RUN[#MODEL] read and checked: ResultsFileError for an unreadable run, SideBySideError for a model not
    in it or, in a run of several models, none named."""
    path, model = parse_spec(spec)
    results = load_run(path)
    models = run_models(results)
    listed = ", ".join(models) or "none"
    if model is None and len(models) != 1:
        raise SideBySideError(
            f"{path}: the run has {'no model records' if not models else 'several models'} "
            f"({listed}); name one as RUN#MODEL"
        )
    if model is not None and model not in models:
        raise SideBySideError(f"{path}: no model {model!r} in this run (its models: {listed})")
    model = model or models[0]
    return Side(f"{results.name or path.parent.name}#{model}", results, model, path)


def sides(specs: list[str]) -> tuple[Side, Side]:
    """The two sides named on the command line (RUN#A RUN#B, or RUN1 RUN2); the same side twice is an error."""
    if len(specs) != 2:
        raise SideBySideError(f"side-by-side takes two sides (RUN[#MODEL] each), got {len(specs)}")
    a, b = side(specs[0]), side(specs[1])
    if (a.path.resolve(), a.model) == (b.path.resolve(), b.model):
        raise SideBySideError(f"{specs[0]} and {specs[1]} are the same side ({a.label}): name two models or two runs")
    return a, b


# ---- pairing tests --------------------------------------------------------------------------------------


def match_key(r: ClaimResult) -> str:
    """What a record is matched by across sides: the test function; for a model-free record (a property without a
    model, a family-level test per family, a synthetic set), the function with its target: "test_x[llama]"."""
    return r.function if r.model else r.name


def side_records(s: Side) -> dict:
    """{test key: record} of one side: its model's records and the run's model-free ones that concern it (a
    family-level record only for the side model's family: the llama family's is not a Qwen model's)."""
    family = model_family(s)
    return {
        match_key(r): r
        for r in s.results.records
        if r.model == s.model
        or (r.model is None and (family is None or r.target.kind != TargetKind.FAMILY or r.target.name == family))
    }


def model_family(s: Side) -> str | None:
    """The side model's family: from the run's provenance (a model given by reference) or the registry."""
    derived = (s.results.provenance.get("models") or {}).get(s.model, {}).get("derived") or {}
    spec = REGISTRY.get(s.model)
    return derived.get("family") or (spec.family if spec is not None else None)


def claim_order(claim: str, func: str, key: str) -> tuple:
    """Sort key: claim-registry order of claims and of each claim's tests (``func``: the test function); unregistered
    claims last."""
    if claim in CLAIMS:
        tests = list(CLAIMS[claim].tests)
        return 0, list(CLAIMS).index(claim), tests.index(func) if func in tests else len(tests), key
    return 1, claim_key(claim), 0, key


def paired_records(a: Side, b: Side) -> list[tuple[str, str, ClaimResult | None, ClaimResult | None]]:
    """(claim, test key, A's record or None, B's record or None) per test run on either side, in claim order."""
    ra, rb = side_records(a), side_records(b)
    either = {k: ra.get(k) or rb[k] for k in dict.fromkeys([*ra, *rb])}
    claims = {k: r.claim for k, r in either.items()}
    keys = sorted(claims, key=lambda k: claim_order(claims[k], either[k].function, k))
    return [(claims[k], k, ra.get(k), rb.get(k)) for k in keys]


# ---- one row ----------------------------------------------------------------------------------------


def verdict_name(r: ClaimResult | None) -> str:
    """A record's verdict as shown (``ClaimResult.shown``), "not run" when the side has no such test."""
    return NOT_RUN if r is None else r.shown


def verdict_cell(r: ClaimResult | None) -> tuple[str, str]:
    """The verdict as a table cell with the report's css class for it."""
    v = verdict_name(r)
    return v, "skip" if r is None else Verdict(v).css


def criterion_of(claim: str, func: str):
    """The test's criterion (its claim's declaration; ``func``: the test function), None for a test without one."""
    return claim_test(func) if claim in CLAIMS else None


def relative_change(a, b) -> str:
    """(b - a) / |a| as a signed percentage ("+12.3%"); "" unless both are finite numbers and a is not 0."""
    numeric = all(isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) for x in (a, b))
    return f"{(b - a) / abs(a):+.1%}" if numeric and a else ""


def headline_change(ra: ClaimResult | None, rb: ClaimResult | None, headline: tuple[str, ...]) -> str:
    """The relative change of each scalar headline figure from A to B (named when the criterion has several)."""
    if ra is None or rb is None:
        return ""
    fa, fb = figures_by_name(ra.figures), figures_by_name(rb.figures)
    changes = [(n, relative_change(fa.get(n), fb.get(n))) for n in headline]
    changes = [(n, c) for n, c in changes if c]
    return changes[0][1] if len(headline) == 1 and changes else ", ".join(f"{n} {c}" for n, c in changes)


def verdict_change(ra: ClaimResult | None, rb: ClaimResult | None) -> str:
    """ "same", or "A's verdict → B's verdict" ("held → not held", "not run → held")."""
    va, vb = verdict_name(ra), verdict_name(rb)
    return "same" if va == vb else f"{va} → {vb}"


def pair_row(claim: str, key: str, ra: ClaimResult | None, rb: ClaimResult | None) -> list:
    """One test's PAIR row: the headline figures as the lead table shows them (report.measured)."""
    c = criterion_of(claim, (ra or rb).function)  # a pair has a record on one side at least
    headline = c.headline if c else ()
    shown = lambda r: measured(r, headline, c.column) if r is not None and c else ""
    change = "; ".join(x for x in (verdict_change(ra, rb), headline_change(ra, rb, headline)) if x)
    return [claim, key, c.words(claim) if c else "", verdict_cell(ra), verdict_cell(rb), shown(ra), shown(rb), change]


PAIR = [
    "claim",
    "test",
    "criterion (held when)",
    "verdict A",
    "verdict B",
    "A measured [95% CI]",
    "B measured [95% CI]",
    "change",
]


def pair_rows(a: Side, b: Side) -> list[list]:
    """One row per claim test (PAIR columns), in claim order; a test run on one side only is "not run" on the
    other."""
    return [pair_row(*p) for p in paired_records(a, b)]


# ---- the document -------------------------------------------------------------------------------------


def provenance_line(letter: str, s: Side) -> str:
    """Where one side's numbers come from: its label, model, weights source and caveat, library versions, code
    commit and weights fingerprint."""
    p, v = s.results.provenance, s.results.versions
    w, code = (p.get("models") or {}).get(s.model) or {}, p.get("code") or {}
    commit = (code.get("commit") or "unknown")[:12] + (" (with uncommitted changes)" if code.get("dirty") else "")
    parts = [
        f"{letter} = {s.label}: model {s.model}",
        w.get("source") and f"weights {w['source']}",
        w.get("caveat") and f"differs from the paper's models: {w['caveat']}",
        f"transformers {v.get('transformers') or 'unknown'}, torch {v.get('torch') or 'unknown'}",
        f"code {commit}",
        f"fingerprint {fingerprint(w)}" if p else "provenance not recorded",
    ]
    return "; ".join(x for x in parts if x)


def settings_warnings(a: Side, b: Side) -> list[str]:
    """A warning line when the two runs' settings differ (harness.report.compare.run_differences)."""
    return [f"Warning: {line}" for line in settings_differences(a.results, b.results)]


def figure_tolerance(a: Side, b: Side) -> tuple[float, float]:
    """(rtol, atol): the looser of the two sides' declared tolerances for their device and dtype."""
    from harness.outcome.snapshots import tolerance  # syrupy (and pytest): loaded by this command alone

    settings = [s.results.settings or Settings() for s in (a, b)]
    return max(tolerance(s.device, s.dtype) for s in settings)


def differing_figures(pairs: list, rtol: float, atol: float) -> list[list[str]]:
    """(claim, test, "figure: A -> B (change)") per figure beyond tolerance (harness.outcome.snapshots.moved_figures), for
    the paired tests (paired_records) run on both sides."""
    from harness.outcome.snapshots import moved_figures  # syrupy (and pytest): loaded by this command alone

    return [
        [claim, key, phrase]
        for claim, key, ra, rb in pairs
        if ra is not None and rb is not None
        for phrase in moved_figures(figures_by_name(rb.figures), figures_by_name(ra.figures), rtol, atol)
    ]


def summary_line(pairs: list) -> str:
    """Counts of verdict agreements and changes (each kind of change) over the paired tests (paired_records), and
    of tests run on one side only."""
    both = [(ra.shown, rb.shown) for _, _, ra, rb in pairs if ra is not None and rb is not None]
    changed = Counter(f"{va} → {vb}" for va, vb in both if va != vb)
    kinds = f" ({', '.join(f'{n} {what}' for what, n in changed.most_common())})" if changed else ""
    return (
        f"{len(pairs)} tests: {len(both) - sum(changed.values())} same verdict, {sum(changed.values())} "
        f"changed{kinds}, {len(pairs) - len(both)} run on one side only."
    )


def document(a: Side, b: Side) -> list:
    """The side-by-side report as blocks (harness.report.render)."""
    pairs, (rtol, atol) = paired_records(a, b), figure_tolerance(a, b)
    rows, moved = pair_rows(a, b), differing_figures(pairs, rtol, atol)
    blocks = [
        ("h1", f"Side by side — {a.label} vs {b.label}"),
        *(("p", line) for line in (provenance_line("A", a), provenance_line("B", b), *settings_warnings(a, b))),
        ("h2", "Claims side by side", "claims"),
        (
            "p",
            "One row per claim test: what the test requires, each side's verdict and headline figure (95% CI "
            "over prompts), and what changed from A to B (the verdict, and the relative change of each "
            'headline figure). A test run on one side only is "not run" on the other.',
        ),
        ("table", PAIR, rows),
        ("p", summary_line(pairs)),
        ("h2", "Figures that differ", "figures"),
    ]
    if not moved:
        return [
            *blocks,
            ("p", f"Every figure of the tests run on both sides agrees within rtol {rtol:g}, atol {atol:g}."),
        ]
    return [
        *blocks,
        (
            "p",
            f"Per test, each figure whose values differ beyond rtol {rtol:g}, atol {atol:g} "
            f'(harness.outcome.snapshots), as A -> B; "new figure": measured on B only, "no longer '
            f'measured": on A only.',
        ),
        ("table", ["claim", "test", "figure: A -> B"], moved),
    ]


def build_side_by_side(a: Side, b: Side, out_dir: Path) -> Path:
    """Write side_by_side.md and side_by_side.html in out_dir; returns side_by_side.md's path (SideBySideError,
    one line, when out_dir cannot be written)."""
    out_dir = Path(out_dir)
    blocks = document(a, b)
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / "side_by_side.html").write_text(to_html(blocks))
        out = out_dir / "side_by_side.md"
        out.write_text(to_markdown(blocks, out_dir))
    except OSError as e:
        raise SideBySideError(f"{out_dir}: cannot write the side-by-side report there ({e.strerror})") from None
    return out


def side_by_side(spec_a: str, spec_b: str, out_dir: Path | None = None) -> Path:
    """The side-by-side command: both sides checked before anything is written; out_dir defaults to the folder of
    A's results.json."""
    a, b = sides([spec_a, spec_b])
    return build_side_by_side(a, b, out_dir if out_dir is not None else a.path.parent)
