"""The run's report as blocks (harness.report.render): report.md and report.html, and summary.md (the lead table and
the claims × models matrix, for a CI job summary).

The report leads with one row per claim test and model: the criterion in words with its threshold, the paper's
number and the paper model it comes from, the measured value ± its 95% CI, the verdict, and a link to the claim's
decision in METHODS.md. Then the claims × models matrix with its legend, a glossary, the run's provenance, one
section per claim (figures shown, the per-figure table folded), and where the time went.

Both are assembled from the run's cells (harness.report.cells: every record worded once), never from its records;
a merged run's "Merged from" section is harness.report.merged_report's. They are written (with figures/*.png) by
harness.report.write; ``python -m harness.report`` (harness.report.cli) rebuilds them from results.json alone,
compares runs, puts two models side by side and merges runs made apart.
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from harness.outcome.verdict import CHANGED, Verdict
from harness.report import merged_report
from harness.report.cells import Cells, Folded, RunCells
from harness.report.matrix import CHANGED_MEANING, report_matrix, report_totals, verdict_strip
from harness.report.methods_page import Links
from harness.report.render import Link
from harness.spec import versions
from harness.spec.claims import CLAIMS

#: The engine's own terms; each claim's follow them in the report (its declaration's ``glossary``).
GLOSSARY = [
    (
        "ΔR²",
        "leakage of absolute position into attention (Eq. 4–5): the variance of a head's attention weights at "
        "sampled (query i, key j) pairs explained by i beyond what the offset i − j explains",
    ),
    ("BH-FDR", "Benjamini–Hochberg control of the false discovery rate over heads, at q = 0.05"),
    ("95% CI", "bootstrap over prompts (expanded percentile interval); paired where two conditions share prompts"),
    ("sink magnitude", "the mean attention weight later queries give to a key position (attention sink)"),
    ("sink-reading strength", "a head's attention on position 0"),
    ("layer-tokens", "prompt tokens × decoder layers run: the forward-pass work a capture does"),
    (CHANGED, CHANGED_MEANING.split(" = ", 1)[1].rstrip(".")),
]


def glossary() -> list[tuple[str, str]]:
    """The engine's terms, then each claim's, the run's last two (work and verdict words) at the end."""
    return [*GLOSSARY[:-2], *glossary_terms(), *GLOSSARY[-2:]]


def glossary_terms() -> list[tuple[str, str]]:
    """Every claim's glossary terms, in claim order (a term declared twice: the first)."""
    terms: dict[str, str] = {}
    for c in CLAIMS.values():
        for term, meaning in c.glossary.items():
            terms.setdefault(term, meaning)
    return list(terms.items())


def partial_note(results: RunCells) -> list:
    """A paragraph saying the run was interrupted, by what, and which selected tests never ran ([] if it was not);
    a merged run's ``interrupted`` ({input run: {"by", "not_run"}}) gets one sentence per interrupted input."""
    info = results.interrupted
    if not info:
        return []
    parts = (
        {None: info}
        if not isinstance(info, dict)
        or "by" in info
        or "not_run" in info
        or not all(isinstance(v, dict) for v in info.values())
        else info
    )
    out = []
    for label, one in parts.items():
        one = one if isinstance(one, dict) else {"by": str(one)}
        not_run = [str(t) for t in one.get("not_run") or []]
        shown = ", ".join(f"`{t}`" for t in not_run[:20]) + (
            f" and {len(not_run) - 20} more" if len(not_run) > 20 else ""
        )
        out.append(
            (
                "p",
                f"**Partial run{f' {label}' if label else ''}: interrupted by "
                f"{one.get('by') or 'an interrupt'}.** The results below are the tests that finished; "
                + (
                    f"{len(not_run)} selected test{'s' if len(not_run) != 1 else ''} never ran: {shown}."
                    if not_run
                    else "every selected test had finished."
                ),
            )
        )
    return out


PAPER_TITLE = "Where does Absolute Position come from in decoder-only Transformers?"
RELATED_TITLE = (
    "Deconstructing Positional Information: From Attention Logits to Training Biases (Gu et al., ICLR 2026), "
    "on models trained here"
)


def title(results: RunCells) -> str:
    """The paper the run's claims are of: the related paper's when only its synthetic sets ran."""
    records = results.records
    only_sets = records and not results.models and all(c.on_set for c in records)
    return f"Claims report: {RELATED_TITLE if only_sets else PAPER_TITLE}"


def run_line(results: RunCells) -> str:
    """The models, the device and the run's design in one line."""
    s, known, models, sets = results.settings, set(results.recorded_settings), list(results.models), results.sets
    design = (
        f"{s.n_prompts} prompts of {s.seq_len} tokens, seed {s.seed}"
        if s is not None and {"n_prompts", "seq_len", "seed"} <= known
        else "settings not recorded"
    )
    if sets:  # a trained set is measured on the held-out samples of its own task, not on the prompts
        held_out = "the synthetic sets on their own tasks' held-out samples"
        design = f"{design}; {held_out}" if models else held_out
    device = s.device if s is not None and "device" in known else "device not recorded"
    where = f"{device}, {s.dtype if s is not None and 'dtype' in known else 'dtype not recorded'}"
    outside = versions.untested(dict(results.versions))  # only with --allow-untested-versions (or older runs)
    flag = f" · **untested versions** (run with --allow-untested-versions): {'; '.join(outside)}" if outside else ""
    return f"Models: {', '.join([*models, *sets]) or 'none named'} · {where} · {design}{flag}"


def lead_rows(fold: Folded, links: dict[str, Link]) -> list:
    """One row per claim test and model of ``fold`` (the applicable ones, or the others); a model's property checks
    one row when they all held."""
    rows = [
        [
            ",".join(dict.fromkeys(c.claim for c in checks)),
            words,
            model,
            "",
            "",
            (Verdict.HELD.label, Verdict.HELD.css),
            links[checks[0].claim],
        ]
        for model, (checks, words) in fold.checks.items()
    ]
    for c in sorted(fold.rows, key=lambda c: (c.order, c.function, c.label)):
        verdict = c.verdict if c.shown != Verdict.NOT_APPLICABLE else c.marked
        row = [c.claim, c.criterion, c.label, c.paper, c.headline, (verdict, c.css), links[c.claim]]
        rows.append(row)
    return rows


LEAD = ["claim", "criterion (held when)", "model", "paper", "measured [95% CI]", "verdict", "method"]


def lead_table(results: RunCells, links: dict[str, Link]) -> list:
    """One row per claim test and model: the criterion, the paper, measured ± CI, the verdict (with this run's
    reason when it did not hold), the METHODS link; the rows of tests not applicable to a model folded below."""
    out = [("table", LEAD, lead_rows(results.applicable, links))]
    na = lead_rows(results.not_applicable, links)
    if na:
        out.append(
            (
                "details",
                f"{len(na)} tests not applicable to a model (the paper's prediction is for other models)",
                [("table", LEAD, na)],
            )
        )
    return out


def provenance_blocks(results: RunCells) -> list:
    p = results.provenance
    code, host = p.get("code") or {}, p.get("machine") or {}
    commit = (code.get("commit") or "unknown")[:12] + (" (with uncommitted changes)" if code.get("dirty") else "")
    gpus = ", ".join(host.get("gpus") or []) or "none"
    lines = [
        f"Settings: {', '.join(f'{k}={v}' for k, v in results.recorded_settings.items())}",
        f"Code: commit {commit}; selection: "
        f"{' '.join(p['selection']) if p.get('selection') else 'default (testpaths)' if 'selection' in p else 'not recorded'}",
        f"Machine: {host.get('cpu') or 'unknown CPU'}; GPUs: {gpus}; CUDA {host.get('cuda') or 'none'}",
        "Versions: " + ", ".join(f"{k} {v}" for k, v in results.versions.items()),
    ]
    models = (p.get("models") or {}).items()
    rows = [[m, w.get("caveat") or "", w.get("source") or "", results.fingerprints[m]] for m, w in models]
    out = [("p", line) for line in lines]
    if rows:
        out.append(("table", ["model", "differs from the paper's models", "weights", "fingerprint"], rows))
    return out


def claim_section(claim: str, records: list[Cells], plots: list, statements) -> list:
    """A claim's heading, its figures (its own plots, then those shown beside it) and every figure measured, folded;
    the verdict strip under its heading is the matrix's (``pages`` puts it there)."""
    rows = [
        [c.label, c.function, *figure, (c.verdict if k == 0 else c.marked, c.css)]
        for c in records
        for k, figure in enumerate(c.figures)
    ]
    figures = [("img", p.title, Path(p.path)) for p in plots if p.claim == claim]
    figures += [
        ("img", f"{p.title} — beside {claim}: {why}", Path(p.path)) for p in plots for c, why in p.also if c == claim
    ]
    return [
        ("h2", f"{claim} — {statements.get(claim, '')}".rstrip(" —"), f"claim-{claim.lower()}"),
        *figures,
        (
            "details",
            f"{claim}: every figure measured ({len(rows)} rows)",
            [("table", ["model", "test", "figure", "paper", "measured", "CI", "verdict"], rows)],
        ),
    ]


LEAD_WORDS = (
    "One row per claim test and model: what the test requires (thresholds from the claims' declarations, "
    "derived from the paper's numbers, each dated in METHODS.md's threshold log, which says which were "
    "written after a claim's first result), the paper's number with the paper model it comes from, this "
    "run's headline figure with its 95% CI (over prompts; over held-out samples on a synthetic set), and the "
    "verdict (on a synthetic set at a size other than the paper's, said with its size)."
)
TIME_WORDS = (
    "Test time with its fixtures (model loading excluded), its forward-pass share (every "
    "pass run, in the test or its fixtures; layer-tokens = prompt tokens × decoder layers run), "
    "the floor (each distinct capture once: a prompt under one condition and depth counted "
    "once, whether alone or inside a larger prompt set) and the rest (statistics, probes, "
    "fits)."
)
TIME_HEADER = ["model", "tests s", "forward s", "layer-tokens", "floor", "run / floor", "layer-tokens/s", "other s"]


class Pages(NamedTuple):
    report: list  # report.md's and report.html's blocks
    summary: list  # summary.md's: the lead table and the matrix, for a CI job summary ($GITHUB_STEP_SUMMARY)


def pages(results: RunCells, plots: list, links: Links) -> Pages:
    """The report's blocks and summary.md's (harness.report.render), from the run's cells, its figures and the
    claims' ``links`` to their decisions (harness.report.methods_page): this module's pieces first, then the
    matrix's (harness.report.matrix), then a merged run's (harness.report.merged_report), each asked once and shared
    by both pages."""
    by_claim: dict[str, list[Cells]] = {c: [] for c in results.claims}
    for c in results.records:
        by_claim[c.claim].append(c)
    heading, line, partial = title(results), run_line(results), partial_note(results)
    lead, summary_lead = lead_table(results, links.report), lead_rows(results.applicable, links.summary)
    provenance = provenance_blocks(results)
    sections = {claim: claim_section(claim, cs, plots, results.statements) for claim, cs in by_claim.items()}
    totals, matrix = report_totals(results.records), report_matrix(results)
    strips = {claim: verdict_strip(cs) for claim, cs in by_claim.items()}
    merged = merged_report.merged_blocks(results) if results.merged is not None else []
    merged_head = merged_report.summary_head(results) if results.merged is not None else []
    timed = any(c.timed for c in results.records)
    toc = [
        *([(merged[0][1], merged[0][2])] if merged else []),
        ("Claims × models", "matrix"),
        ("Claims at a glance", "lead"),
        ("Glossary", "glossary"),
        ("Run provenance", "provenance"),
        *((s[0][1], s[0][2]) for s in sections.values()),
        *[("Where the time went", "time")] * timed,
    ]
    report = [
        ("h1", heading),
        ("p", totals),
        ("p", f"{line} · run {results.name or 'unnamed'}"),
        *partial,
        ("h2", "Claims × models", "matrix"),
        *matrix,
        *(("img", p.title, Path(p.path)) for p in plots if p.claim is None),  # every decision (summary_plot.py)
        ("toc", toc),
        *merged,  # its warnings and failed models before any verdict
        ("h2", "Claims at a glance", "lead"),
        ("p", LEAD_WORDS),
        *lead,
        ("h2", "Glossary", "glossary"),
        ("table", ["term", "meaning"], [list(g) for g in glossary()]),
        ("h2", "Run provenance", "provenance"),
        *provenance,
    ]
    for claim, section in sections.items():
        report += [section[0], ("p", strips[claim]), *section[1:]]
    if timed:
        report += [("h2", "Where the time went", "time"), ("p", TIME_WORDS), ("table", TIME_HEADER, results.time_rows)]
    summary = [
        *merged_head,
        ("h2", f"abspos claims — {results.name or 'unnamed run'}"),
        ("p", totals),
        ("p", line),
        *partial,
        *matrix,
        ("p", "**Claims at a glance** (one row per test and model; the full report is the job's artifact)"),
        ("table", LEAD, summary_lead),
    ]
    return Pages(report, summary)
