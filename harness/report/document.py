"""The run's report as blocks (harness.report.render): report.md and report.html, and summary.md (the lead table and
the claims × models matrix, for a CI job summary).

The report leads with one row per claim test and model: the criterion in words with its threshold, the paper's
number and the paper model it comes from, the measured value ± its 95% CI, the verdict, and a link to the claim's
decision in METHODS.md. Then the claims × models matrix with its legend, a glossary, the run's provenance, one
section per claim (figures shown, the per-figure table folded), and where the time went.

They are written (with figures/*.png) by harness.report.write; ``python -m harness.report`` (harness.report.cli)
rebuilds them from results.json alone, compares runs, puts two models side by side and merges runs made apart.
"""

from __future__ import annotations

import os
from collections import defaultdict
from pathlib import Path

from harness.outcome.results import RunResult
from harness.outcome.verdict import CHANGED, Verdict
from harness.report import methods_page
from harness.report.matrix import CHANGED_MEANING, totals_line, verdict_strip
from harness.report.matrix import report_matrix as matrix
from harness.report.record_text import (
    claim_key,
    claim_texts,
    fingerprint,
    fold_property_checks,
    headline_cell,
    property_checks_text,
    set_shape,
    set_size,
    synthetic_sets,
    verdict_css,
    verdict_text,
)
from harness.report.render import Link, fmt, to_markdown
from harness.report.timing import time_accounting
from harness.spec import versions
from harness.spec.claims import CLAIMS, claim_test, figure_words, paper_numbers
from harness.spec.models import names

PAPER_NAMES = set(names("paper"))
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


def partial_note(results: RunResult) -> list:
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


# ---- pieces of the document ---------------------------------------------------------------------------


def methods_link(claim: str, base: Path | None) -> Link:
    """The claim's decision (what "held" means for its tests): on the methods page written into the report's folder
    (methods.md, methods.html), or (a job summary, ``base`` None) in METHODS.md on GitHub at the run's commit."""
    if base is not None:  # a run folder: the decisions written beside the report (harness.report.methods_page)
        return methods_page.link(claim)
    if os.environ.get("GITHUB_REPOSITORY"):  # a job summary: the file in the repository at the run's commit
        href = (
            f"{os.environ.get('GITHUB_SERVER_URL', 'https://github.com')}/{os.environ['GITHUB_REPOSITORY']}/blob/"
            f"{os.environ.get('GITHUB_SHA', 'HEAD')}/METHODS.md"
        )
    else:
        href = "METHODS.md"
    return Link(f"METHODS {claim}", f"{href}#decision-{claim.lower()}")


def paper_checks(cid: str, model: str | None, figures) -> str:
    """On a paper model, the plugin also requires every recorded figure the paper reports for that model, measured
    at the paper's design, to lie within its band (``Figures.check_paper``): said in the criterion, with the band
    each figure met or missed, or why it was only reported (``figures``: a record's, on ``model``)."""
    if cid not in CLAIMS or model not in PAPER_NAMES:
        return ""
    judged, reported = [], []
    for f in figures or []:
        try:
            ref = CLAIMS[cid].paper_value(model, f.get("name", ""))
        except KeyError:
            continue
        if ref is None:
            continue
        check = f.get("paper_check") or f"{ref.value:g} ± {ref.tolerance:.2g}"
        if check.startswith("reported, not judged"):
            reported.append((f["name"], check))
        else:
            judged.append(f"{f['name']} {check}")
    text = f"; on this paper model also, within the paper's value: {', '.join(judged)}" if judged else ""
    if reported:
        why = reported[0][1].removeprefix("reported, not judged: ")
        text += f"; the paper's values of {', '.join(n for n, _ in reported)} reported, not judged ({why})"
    return text


PAPER_TITLE = "Where does Absolute Position come from in decoder-only Transformers?"
RELATED_TITLE = (
    "Deconstructing Positional Information: From Attention Logits to Training Biases (Gu et al., ICLR 2026), "
    "on models trained here"
)


def title(results: RunResult) -> str:
    """The paper the run's claims are of: the related paper's when only its synthetic sets ran."""
    records = results.records
    only_sets = records and not results.models and all(set_size(r.target.label) for r in records)
    return f"Claims report: {RELATED_TITLE if only_sets else PAPER_TITLE}"


def run_line(results: RunResult) -> str:
    """The models, the device and the run's design in one line."""
    s, known, models = results.settings, set(results.recorded_settings), list(results.models)
    sets = synthetic_sets(results.records)
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
    return f"Models: {', '.join([*models, *map(set_shape, sets)]) or 'none named'} · {where} · {design}{flag}"


def lead_rows(results: RunResult, base: Path | None, applicable: bool) -> list:
    """One row per claim test and model (applicable ones, or the others); a model's property checks folded into
    one row when they all held."""
    records = [r for r in results.records if (r.shown == Verdict.NOT_APPLICABLE) != applicable]
    records, folded = fold_property_checks(records)
    rows = [
        [
            ",".join(dict.fromkeys(r.claim for r in checks)),
            property_checks_text(checks),
            model,
            "",
            "",
            (Verdict.HELD.label, Verdict.HELD.css),
            methods_link(checks[0].claim, base),
        ]
        for model, checks in folded.items()
    ]
    for r in sorted(records, key=lambda r: (claim_key(r.claim), r.function, r.target.label)):
        test, cid = r.function, r.claim
        c = claim_test(test) if cid in CLAIMS else None
        rows.append(
            [
                cid,
                (c.words(cid) + paper_checks(cid, r.model, r.figures)) if c else test,
                r.target.label,
                paper_numbers(cid, test, r.model) if c else "",
                headline_cell(r, c.headline, c.column) if c else "",
                (verdict_text(r, r.shown != Verdict.NOT_APPLICABLE), verdict_css(r)),
                methods_link(cid, base),
            ]
        )
    return rows


LEAD = ["claim", "criterion (held when)", "model", "paper", "measured [95% CI]", "verdict", "method"]


def lead_table(results: RunResult, base: Path | None) -> list:
    """One row per claim test and model: the criterion, the paper, measured ± CI, the verdict (with this run's
    reason when it did not hold), the METHODS link; the rows of tests not applicable to a model folded below."""
    out = [("table", LEAD, lead_rows(results, base, True))]
    na = lead_rows(results, base, False)
    if na:
        out.append(
            (
                "details",
                f"{len(na)} tests not applicable to a model (the paper's prediction is for other models)",
                [("table", LEAD, na)],
            )
        )
    return out


def provenance_blocks(results: RunResult) -> list:
    p = results.provenance
    code, host = p.get("code") or {}, p.get("machine") or {}
    commit = (code.get("commit") or "unknown")[:12] + (" (with uncommitted changes)" if code.get("dirty") else "")
    gpus = ", ".join(host.get("gpus") or []) or "none"
    settings = results.settings_dict()
    lines = [
        f"Settings: {', '.join(f'{k}={v}' for k, v in settings.items())}",
        f"Code: commit {commit}; selection: "
        f"{' '.join(p['selection']) if p.get('selection') else 'default (testpaths)' if 'selection' in p else 'not recorded'}",
        f"Machine: {host.get('cpu') or 'unknown CPU'}; GPUs: {gpus}; CUDA {host.get('cuda') or 'none'}",
        "Versions: " + ", ".join(f"{k} {v}" for k, v in results.versions.items()),
    ]
    rows = [
        [m, w.get("caveat") or "", w.get("source") or "", fingerprint(w)] for m, w in (p.get("models") or {}).items()
    ]
    out = [("p", line) for line in lines]
    if rows:
        out.append(("table", ["model", "differs from the paper's models", "weights", "fingerprint"], rows))
    return out


def claim_section(claim: str, records: list, plots: list, texts: dict) -> list:
    rows = []
    for r in records:
        css = verdict_css(r)
        for k, f in enumerate(r.figures or ({},)):
            words = figure_words(f.get("name", ""), claim)
            name = words + (f" — `{f['name']}`" if words != f.get("name", "") else "")
            name += f" ({f['note']})" if f.get("note") else ""
            rows.append(
                [
                    r.target.label,
                    r.function,
                    name,
                    fmt(f.get("paper")),
                    fmt(f.get("value")),
                    fmt(f.get("ci")),
                    (verdict_text(r, k == 0), css),
                ]
            )
    figures = [("img", p.title, Path(p.path)) for p in plots if p.claim == claim]
    figures += [
        ("img", f"{p.title} — beside {claim}: {why}", Path(p.path)) for p in plots for c, why in p.also if c == claim
    ]
    return [
        ("h2", f"{claim} — {texts.get(claim, '')}".rstrip(" —"), f"claim-{claim.lower()}"),
        ("p", verdict_strip(records)),
        *figures,
        (
            "details",
            f"{claim}: every figure measured ({len(rows)} rows)",
            [("table", ["model", "test", "figure", "paper", "measured", "CI", "verdict"], rows)],
        ),
    ]


def document(results: RunResult, plots: list, base: Path | None = None) -> list:
    """The report as blocks (harness.report.render)."""
    texts, by_claim = claim_texts(), defaultdict(list)
    for r in results.records:
        by_claim[r.claim].append(r)
    claims = sorted(by_claim, key=claim_key)
    sections = [
        ("Claims × models", "matrix"),
        ("Claims at a glance", "lead"),
        ("Glossary", "glossary"),
        ("Run provenance", "provenance"),
        *((f"{c} — {texts.get(c, '')}".rstrip(" —"), f"claim-{c.lower()}") for c in claims),
    ]
    timed = any("layer_tokens" in r.recorded for r in results.records)
    sections += [("Where the time went", "time")] if timed else []
    blocks = [
        ("h1", title(results)),
        ("p", totals_line(list(results.records))),
        ("p", f"{run_line(results)} · run {results.name or 'unnamed'}"),
        *partial_note(results),
        ("h2", "Claims × models", "matrix"),
        *matrix(results),
        *(("img", p.title, Path(p.path)) for p in plots if p.claim is None),  # every decision (summary_plot.py)
        ("toc", sections),
        ("h2", "Claims at a glance", "lead"),
        (
            "p",
            "One row per claim test and model: what the test requires (thresholds from the claims' declarations, "
            "derived from the paper's numbers, each dated in METHODS.md's threshold log, which says which were "
            "written after a claim's first result), the paper's number with the paper model it comes from, this "
            "run's headline figure with its 95% CI (over prompts; over held-out samples on a synthetic set), and the "
            "verdict (on a synthetic set at a size other than the paper's, said with its size).",
        ),
        *lead_table(results, base),
        ("h2", "Glossary", "glossary"),
        ("table", ["term", "meaning"], [list(g) for g in glossary()]),
        ("h2", "Run provenance", "provenance"),
        *provenance_blocks(results),
    ]
    for claim in claims:
        blocks += claim_section(claim, by_claim[claim], plots, texts)
    if timed:
        blocks += [
            ("h2", "Where the time went", "time"),
            (
                "p",
                "Test time with its fixtures (model loading excluded), its forward-pass share (every "
                "pass run, in the test or its fixtures; layer-tokens = prompt tokens × decoder layers run), "
                "the floor (each distinct capture once: a prompt under one condition and depth counted "
                "once, whether alone or inside a larger prompt set) and the rest (statistics, probes, "
                "fits).",
            ),
            (
                "table",
                ["model", "tests s", "forward s", "layer-tokens", "floor", "run / floor", "layer-tokens/s", "other s"],
                time_accounting(list(results.records)),
            ),
        ]
    return blocks


def summary_markdown(results: RunResult) -> str:
    """summary.md: the lead table and the matrix, for a CI job summary ($GITHUB_STEP_SUMMARY)."""
    blocks = [
        ("h2", f"abspos claims — {results.name or 'unnamed run'}"),
        ("p", totals_line(list(results.records))),
        ("p", run_line(results)),
        *partial_note(results),
        *matrix(results),
        ("p", "**Claims at a glance** (one row per test and model; the full report is the job's artifact)"),
        ("table", LEAD, lead_rows(results, None, True)),
    ]
    return to_markdown(blocks, Path("."))
