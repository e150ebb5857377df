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
from dataclasses import dataclass
from pathlib import Path

from harness.files.paths import METHODS
from harness.outcome.verdict import SEVERITY, Verdict
from harness.report.cells import (
    claim_key,
    claim_texts,
    fingerprint,
    measured,
    model_label,
    test_name,
    verdict_text,
)
from harness.report.matrix import totals_line, verdict_matrix, verdict_strip
from harness.report.render import Link, fmt, to_markdown
from harness.spec.claims import CLAIMS, claim_test, paper_numbers
from harness.spec.models import names

PAPER_NAMES = set(names("paper"))

GLOSSARY = [
    (
        "ΔR²",
        "leakage of absolute position into attention (Eq. 4–5): the variance of a head's attention weights at "
        "sampled (query i, key j) pairs explained by i beyond what the offset i − j explains",
    ),
    ("BH-FDR", "Benjamini–Hochberg control of the false discovery rate over heads, at q = 0.05"),
    (
        "sign-flip test",
        "the prompt-level permutation test of T5: the signs of each prompt's contribution to ΔR² are "
        "flipped, so the prompt is the unit of replication",
    ),
    ("95% CI", "bootstrap over prompts (expanded percentile interval); paired where two conditions share prompts"),
    ("sink magnitude", "the mean attention weight later queries give to a key position (attention sink)"),
    ("sink-reading strength", "a head's attention on position 0"),
    ("PC1", "the first principal component of a head's outputs; its explained-variance fraction (T4)"),
    ("r_l", "the layer-wise ratio ΔR²(bidirectional) / ΔR²(causal) at layer l (T8)"),
    ("causal-mask share", "1 − ΔR²(bidirectional) / ΔR²(causal): the part of leakage the causal mask carries"),
    ("L*", "the most leaky layer (largest mean ΔR²), where T9c replaces the position-0 state"),
    ("AIC, ΔAIC", "Akaike information criterion; ΔAIC = AIC(power law) − AIC(piecewise), > 2 favours the piecewise"),
    ("layer-tokens", "prompt tokens × decoder layers run: the forward-pass work a capture does"),
    (
        "as recorded",
        "a verdict that did not hold (or was inconclusive) in an earlier run, recorded in fixtures/known_outcomes.json "
        "with the criterion that decided it, and repeated here at the same criterion",
    ),
]


def partial_note(results: dict) -> list:
    """A paragraph saying the run was interrupted, by what, and which selected tests never ran ([] if it was not);
    a merged run's ``interrupted`` ({input run: {"by", "not_run"}}) gets one sentence per interrupted input."""
    info = results.get("interrupted")
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
    """The claim's row in METHODS.md's "what holds means" table: relative to the report's folder, or (a job
    summary, ``base`` None) the file on GitHub at the run's commit."""
    if base is not None:
        href = Path(os.path.relpath(METHODS, base)).as_posix()
    elif os.environ.get("GITHUB_REPOSITORY"):  # a job summary: the file in the repository at the run's commit
        href = (
            f"{os.environ.get('GITHUB_SERVER_URL', 'https://github.com')}/{os.environ['GITHUB_REPOSITORY']}/blob/"
            f"{os.environ.get('GITHUB_SHA', 'HEAD')}/METHODS.md"
        )
    else:
        href = "METHODS.md"
    return Link(f"METHODS {claim}", f"{href}#decision-{claim.lower()}")


def paper_checks(r: dict) -> str:
    """On a paper model, the plugin also requires every recorded figure the paper reports for that model, measured
    at the paper's design, to lie within its band (``Figures.check_paper``): said in the criterion, with the band
    each figure met or missed, or why it was only reported."""
    cid, model = r["claim"], r.get("model")
    if cid not in CLAIMS or model not in PAPER_NAMES:
        return ""
    judged, reported = [], []
    for f in r.get("figures") or []:
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


def run_line(results: dict) -> str:
    """The models, the device and the run's design in one line."""
    s, models = results.get("settings") or {}, results.get("models") or []
    design = (
        f"{s['n_prompts']} prompts of {s['seq_len']} tokens, seed {s['seed']}"
        if all(k in s for k in ("n_prompts", "seq_len", "seed"))
        else "settings not recorded"
    )
    where = f"{s.get('device', 'device not recorded')}, {s.get('dtype', 'dtype not recorded')}"
    return f"Models: {', '.join(models) or 'none named'} · {where} · {design}"


def lead_rows(results: dict, base: Path | None, applicable: bool) -> list:
    rows = []
    for r in sorted(results["records"], key=lambda r: (claim_key(r["claim"]), test_name(r), model_label(r))):
        if (Verdict.of(r) == Verdict.NOT_APPLICABLE) == applicable:
            continue
        test, cid = test_name(r), r["claim"]
        c = claim_test(test) if cid in CLAIMS else None
        rows.append(
            [
                cid,
                (c.words(cid) + paper_checks(r)) if c else test,
                model_label(r),
                paper_numbers(cid, test, r.get("model")) if c else "",
                measured(r, c.headline, c.column) if c else "",
                (verdict_text(r, Verdict.of(r) != Verdict.NOT_APPLICABLE), Verdict.of(r).css),
                methods_link(cid, base),
            ]
        )
    return rows


LEAD = ["claim", "criterion (held when)", "model", "paper", "measured [95% CI]", "verdict", "method"]


def lead_table(results: dict, base: Path | None) -> list:
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


def matrix(results: dict) -> list:
    """The claims × models matrix (tests per cell by verdict), with its legend (the verdicts it shows): a column per
    model of the run, and per family or "(no model)" for tests without one."""
    texts, mx = claim_texts(), verdict_matrix(results["records"], results.get("models") or [])
    rows = []
    for claim in mx.claims:
        row = [claim, texts.get(claim, "")]
        for m in mx.models:
            c = mx.counts(claim, m)
            worst = next((v.css for v in SEVERITY if c[v]), "")
            row.append((", ".join(f"{n} {v.label}" for v, n in c.items()) or "not run", worst))
        rows.append(row)
    seen = {v for counts in mx.cells.values() for v in counts}
    legend = (
        "Each cell counts the claim's tests on that model by verdict: "
        + "; ".join(f"{v.label} = {v.meaning}" for v in Verdict if v in seen)
        + '. "<family> family": a test over a model '
        'family (T13); "(no model)": a property tested without a model (EQ3\'s softmax).'
    )
    return [("table", ["claim", "the paper says", *mx.models], rows), ("p", legend)]


def provenance_blocks(results: dict) -> list:
    p = results.get("provenance") or {}
    code, host = p.get("code") or {}, p.get("machine") or {}
    commit = (code.get("commit") or "unknown")[:12] + (" (with uncommitted changes)" if code.get("dirty") else "")
    gpus = ", ".join(host.get("gpus") or []) or "none"
    lines = [
        f"Settings: {', '.join(f'{k}={v}' for k, v in (results.get('settings') or {}).items())}",
        f"Code: commit {commit}; selection: "
        f"{' '.join(p['selection']) if p.get('selection') else 'default (testpaths)' if 'selection' in p else 'not recorded'}",
        f"Machine: {host.get('cpu') or 'unknown CPU'}; GPUs: {gpus}; CUDA {host.get('cuda') or 'none'}",
        "Versions: " + ", ".join(f"{k} {v}" for k, v in (results.get("versions") or {}).items()),
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
        css = Verdict.of(r).css
        for k, f in enumerate(r.get("figures") or [{}]):
            name = f.get("name", "") + (f" ({f['note']})" if f.get("note") else "")
            rows.append(
                [
                    r.get("model") or "—",
                    test_name(r),
                    name,
                    fmt(f.get("paper")),
                    fmt(f.get("value")),
                    fmt(f.get("ci")),
                    (verdict_text(r, k == 0), css),
                ]
            )
    figures = [("img", p.title, Path(p.path)) for p in plots if p.claim == claim]
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


def document(results: dict, plots: list, base: Path | None = None) -> list:
    """The report as blocks (harness.report.render)."""
    texts, by_claim = claim_texts(), defaultdict(list)
    for r in results["records"]:
        by_claim[r["claim"]].append(r)
    claims = sorted(by_claim, key=claim_key)
    sections = [
        ("Claims × models", "matrix"),
        ("Claims at a glance", "lead"),
        ("Glossary", "glossary"),
        ("Run provenance", "provenance"),
        *((f"{c} — {texts.get(c, '')}".rstrip(" —"), f"claim-{c.lower()}") for c in claims),
    ]
    timed = any("layer_tokens" in r for r in results["records"])
    sections += [("Where the time went", "time")] if timed else []
    blocks = [
        ("h1", f"Claims report: {PAPER_TITLE}"),
        ("p", totals_line(results["records"])),
        ("p", f"{run_line(results)} · run {results.get('run') or 'unnamed'}"),
        *partial_note(results),
        ("h2", "Claims × models", "matrix"),
        *matrix(results),
        ("toc", sections),
        ("h2", "Claims at a glance", "lead"),
        (
            "p",
            "One row per claim test and model: what the test requires (thresholds from the claim registry, "
            "fixed from the paper's numbers before any run), the paper's number with the paper model it "
            "comes from, this run's headline figure with its 95% CI over prompts, and the verdict.",
        ),
        *lead_table(results, base),
        ("h2", "Glossary", "glossary"),
        ("table", ["term", "meaning"], [list(g) for g in GLOSSARY]),
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
                time_accounting(results["records"]),
            ),
        ]
    return blocks


def summary_markdown(results: dict) -> str:
    """summary.md: the lead table and the matrix, for a CI job summary ($GITHUB_STEP_SUMMARY)."""
    blocks = [
        ("h2", f"abspos claims — {results.get('run') or 'unnamed run'}"),
        ("p", totals_line(results["records"])),
        ("p", run_line(results)),
        *partial_note(results),
        *matrix(results),
        ("p", "**Claims at a glance** (one row per test and model; the full report is the job's artifact)"),
        ("table", LEAD, lead_rows(results, None, True)),
    ]
    return to_markdown(blocks, Path("."))


@dataclass
class ModelTime:
    """One model's time and forward-pass work, summed over its records."""

    seconds: float = 0.0  # the tests' time with their fixtures (model loading excluded)
    forward_seconds: float = 0.0  # their forward passes' share of it
    layer_tokens: int = 0  # prompt tokens × decoder layers run
    shape: dict | None = None  # {"layers", "heads"} of the model, the work scales with it
    floor_layer_tokens: int = 0  # each distinct capture counted once


def time_per_model(records: list) -> dict[str | None, ModelTime]:
    """{model or None: its ModelTime} summed over its records (a record without a floor, from before floors were
    booked, counts its layer-tokens)."""
    acc: dict = defaultdict(ModelTime)
    for r in records:
        a = acc[r.get("model")]
        a.seconds += r.get("seconds") or 0.0
        a.forward_seconds += r.get("forward_seconds") or 0.0
        a.layer_tokens += r.get("layer_tokens") or 0
        a.shape = r.get("shape") or a.shape
        a.floor_layer_tokens += r.get("floor_layer_tokens", r.get("layer_tokens")) or 0
    return dict(acc)


def time_accounting(records: list) -> list[list[str]]:
    """Per model: test seconds, forward seconds, layer-tokens run, their floor, run / floor, throughput, other."""
    rows = []
    for m, a in time_per_model(records).items():
        t, f, lt, fl = a.seconds, a.forward_seconds, a.layer_tokens, a.floor_layer_tokens
        if t >= 0.5 or lt:
            rows.append(
                [
                    m or "—",
                    f"{t:.0f}",
                    f"{f:.0f}",
                    f"{lt:,}",
                    f"{fl:,}",
                    f"{lt / fl:.3f}" if fl else "—",
                    f"{lt / f:,.0f}" if f else "—",
                    f"{t - f:.0f}",
                ]
            )
    return rows
