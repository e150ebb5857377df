"""Run reports: results.json (every measured figure with its context), report.md, a self-contained report.html
and summary.md (the lead table and the claims × models matrix, for a CI job summary).

The report leads with one row per claim test and model: the criterion in words with its threshold, the paper's
number and the paper model it comes from, the measured value ± its 95% CI, the verdict, and a link to the claim's
decision in METHODS.md. Then the claims × models matrix with its legend, a glossary, the run's provenance, one
section per claim (figures shown, the per-figure table folded), and where the time went.

``python -m harness.report build reports/<run>/results.json`` rebuilds the reports (and figures/*.png) from the
JSON alone; ``python -m harness.report compare OLD NEW [--rtol R --atol A]`` lists what moved between two runs
(and says first when their settings or models differ); ``python -m harness.report side-by-side RUN[#MODEL]
RUN[#MODEL]`` compares two models claim by claim (harness.report.side_by_side). ``python -m harness.report merge RUN... --out DIR``
merges runs made apart, one model each, into one run and report (harness.report.merge). Each takes a results.json or its run folder.
Exit codes: 0 nothing moved (or the report was built), 1 figures or verdicts moved, 2 unreadable input (a missing,
empty or invalid JSON file, or not a claims results.json: one line on stderr says which file and why; nothing is
written) or a usage error.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import json
import os
import re
import secrets
import sys
import tempfile
import warnings
from collections import Counter, defaultdict
from pathlib import Path

from harness.files.atomic import point_link, write_text
from harness.files.paths import METHODS
from harness.outcome.results import ResultsFileError, load_results, results_file
from harness.outcome.verdict import VERDICTS, verdict_of
from harness.report import provenance
from harness.report.compare import compare, diff, run_differences, tolerance  # noqa: F401 - the report's CLI and API
from harness.report.render import Link, fmt, to_html, to_markdown
from harness.spec.claims import CLAIMS
from harness.spec.criteria import CRITERIA, paper_numbers
from harness.spec.models import FAMILIES, names

#: Report wording and css class of each verdict (harness.outcome.verdict.VERDICTS says what each means).
LABEL = {"held": ("held", "held"), "not held": ("not held", "not"),
         "stale": ("held — stale known outcome, re-take it", "stale"),
         "harness error": ("harness error (no verdict)", "error"), "n/a": ("not applicable", "skip"),
         "skipped": ("skipped", "skip"), "unstable": ("unstable across seeds", "stale")}

PAPER_NAMES = set(names("paper"))

GLOSSARY = [
    ("ΔR²", "leakage of absolute position into attention (Eq. 4–5): the variance of a head's attention weights at "
            "sampled (query i, key j) pairs explained by i beyond what the offset i − j explains"),
    ("BH-FDR", "Benjamini–Hochberg control of the false discovery rate over heads, at q = 0.05"),
    ("sign-flip test", "the prompt-level permutation test of T5: the signs of each prompt's contribution to ΔR² are "
                       "flipped, so the prompt is the unit of replication"),
    ("95% CI", "bootstrap over prompts (expanded percentile interval); paired where two conditions share prompts"),
    ("sink magnitude", "the mean attention weight later queries give to a key position (attention sink)"),
    ("sink-reading strength", "a head's attention on position 0"),
    ("PC1", "the first principal component of a head's outputs; its explained-variance fraction (T4)"),
    ("r_l", "the layer-wise ratio ΔR²(bidirectional) / ΔR²(causal) at layer l (T8)"),
    ("causal-mask share", "1 − ΔR²(bidirectional) / ΔR²(causal): the part of leakage the causal mask carries"),
    ("L*", "the most leaky layer (largest mean ΔR²), where T9c replaces the position-0 state"),
    ("AIC, ΔAIC", "Akaike information criterion; ΔAIC = AIC(power law) − AIC(piecewise), > 2 favours the piecewise"),
    ("layer-tokens", "prompt tokens × decoder layers run: the forward-pass work a capture does"),
    ("known outcome", "a verdict recorded as not holding (fixtures/known_outcomes.json), expected again as a "
                      "strict xfail at the same assertion"),
]


def write_run(report_dir: Path, run_id: str, records: list, settings, models: list,
              selection: list[str] | None = None, interrupted: dict | None = None) -> Path | None:
    """Write the run into a folder of its own, ``report_dir/run_id`` (made here, never shared: a name taken by
    another run gets a suffix), results.json first (nothing measured is lost: an unwritable or full directory falls
    back to a temporary one, said in one line), then the reports built from it; every file is written atomically
    (harness.files.atomic), and ``latest`` is moved to the run, atomically, only once both are complete. ``interrupted``
    ({"by", "not_run"}) marks a run that ended before every selected test ran. Returns the run's folder (None: the
    results could be written nowhere, said in one line)."""
    results = {"run": run_id, "settings": settings.as_dict(), "models": models, "versions": provenance.versions(),
               "provenance": _provenance(models, selection),
               **({"interrupted": interrupted} if interrupted else {}),
               "records": sorted(records, key=lambda r: (r["claim"], r["model"] or "", r["test"]))}
    out = None
    try:
        out = run_folder(report_dir, run_id)
        results["run"] = out.name
        write_text(out / "results.json", json.dumps(results, indent=1, allow_nan=True))
    except OSError as e:
        if out is not None:
            with contextlib.suppress(OSError):
                out.rmdir()  # the empty folder a failed write leaves
        try:
            out = Path(tempfile.mkdtemp(prefix=f"abspos-{run_id}-"))
            write_text(out / "results.json", json.dumps(results, indent=1, allow_nan=True))
        except OSError as again:  # nowhere to write: one line, never a traceback over the run's summary
            print(f"abspos: could not write the results to {report_dir} ({e.strerror}) nor to a temporary folder "
                  f"({again.strerror}); they are lost", file=sys.stderr)
            return None
        print(f"abspos: could not write to {report_dir} ({e.strerror}); results are in {out}", file=sys.stderr)
        return out
    try:
        build(out / "results.json")
    except Exception as e:  # noqa: BLE001 - the results are safe; say why the report is missing
        print(f"abspos: the report could not be built ({e if isinstance(e, OSError) else f'{type(e).__name__}: {e}'}); "
              f"results are in {out / 'results.json'}; rebuild with python -m harness.report build", file=sys.stderr)
        return out  # `latest` stays on the last run whose report is complete
    try:
        point_link(report_dir / "latest", out.name)
    except OSError:
        pass  # the run's own folder is what matters; "latest" is a convenience
    return out


def run_folder(report_dir: Path, run_id: str) -> Path:
    """A new, empty folder ``report_dir/run_id`` for this run alone: created exclusively, so runs started in the same
    second (processes, ``verify()`` calls) never share one; a name already taken gets a random suffix."""
    report_dir.mkdir(parents=True, exist_ok=True)
    name = run_id
    for _ in range(100):
        try:
            (report_dir / name).mkdir()
            return report_dir / name
        except FileExistsError:
            name = f"{run_id}-{secrets.token_hex(3)}"
    raise FileExistsError(errno.EEXIST, "no free run folder name", str(report_dir / run_id))


def partial_note(results: dict) -> list:
    """A paragraph saying the run was interrupted, by what, and which selected tests never ran ([] if it was not);
    a merged run's ``interrupted`` ({input run: {"by", "not_run"}}) gets one sentence per interrupted input."""
    info = results.get("interrupted")
    if not info:
        return []
    parts = {None: info} if not isinstance(info, dict) or "by" in info or "not_run" in info or not all(
        isinstance(v, dict) for v in info.values()) else info
    out = []
    for label, one in parts.items():
        one = one if isinstance(one, dict) else {"by": str(one)}
        not_run = [str(t) for t in one.get("not_run") or []]
        shown = ", ".join(f"`{t}`" for t in not_run[:20]) + (f" and {len(not_run) - 20} more" if len(not_run) > 20
                                                             else "")
        out.append(("p", f"**Partial run{f' {label}' if label else ''}: interrupted by "
                         f"{one.get('by') or 'an interrupt'}.** The results below are the tests that finished; "
                         + (f"{len(not_run)} selected test{'s' if len(not_run) != 1 else ''} never ran: {shown}."
                            if not_run else "every selected test had finished.")))
    return out


def _provenance(models: list, selection) -> dict:
    try:
        return provenance.collect(models, selection)
    except Exception as e:  # noqa: BLE001 - never lose a run's results to a provenance probe
        return {"error": f"{type(e).__name__}: {e}"}


# ---- pieces of the document ---------------------------------------------------------------------------

def claim_key(c: str):
    m = re.match(r"([A-Za-z]+)(\d+)(.*)", c or "")
    return (m.group(1) != "EQ", int(m.group(2)), m.group(3)) if m else (True, 10**9, c or "")


def claim_texts() -> dict:
    """One line per claim, from the claim registry."""
    return {c.id: c.statement for c in CLAIMS.values()}


def test_name(r: dict) -> str:
    name = r["test"].split("::")[-1]
    model = r.get("model")
    return name[: -len(model) - 2] if model and name.endswith(f"[{model}]") else name.split("[")[0]


def verdict_text(r: dict, with_reason: bool) -> str:
    v = LABEL[verdict_of(r)][0] + (" (recorded known outcome)" if r.get("known_outcome") else "")
    reason = " ".join(str(r.get("reason") or "").split())
    if verdict_of(r) == "unstable":
        reason = f"{r['unstable']}; this run: {r['verdict']}" + (f": {reason}" if reason else "")
    return f"{v}: {reason[:300]}" if with_reason and reason and verdict_of(r) != "held" else v


def methods_link(claim: str, base: Path | None) -> Link:
    """The claim's row in METHODS.md's "what holds means" table: relative to the report's folder, or (a job
    summary, ``base`` None) the file on GitHub at the run's commit."""
    if base is not None:
        href = Path(os.path.relpath(METHODS, base)).as_posix()
    elif os.environ.get("GITHUB_REPOSITORY"):  # a job summary: the file in the repository at the run's commit
        href = (f"{os.environ.get('GITHUB_SERVER_URL', 'https://github.com')}/{os.environ['GITHUB_REPOSITORY']}/blob/"
                f"{os.environ.get('GITHUB_SHA', 'HEAD')}/METHODS.md")
    else:
        href = "METHODS.md"
    return Link(f"METHODS {claim}", f"{href}#decision-{claim.lower()}")


def _one(r: dict, name: str, column: int | None) -> str:
    f = next((f for f in r.get("figures") or [] if f.get("name") == name), None)
    if f is None:
        return ""
    value, ci = f.get("value"), f.get("ci")
    if column is not None and isinstance(value, list):
        return ", ".join(fmt(row[column]) for row in value if isinstance(row, list) and len(row) > column)
    scalar_ci = isinstance(ci, list) and len(ci) == 2 and all(isinstance(x, (int, float)) for x in ci)
    return fmt(value) + (f" [{fmt(float(ci[0]))}, {fmt(float(ci[1]))}]" if scalar_ci else "")


def measured(r: dict, figures: tuple[str, ...], column: int | None = None) -> str:
    """A test's headline figures as "value [lo, hi]" (95% CI), named when there are several ("" when absent);
    for a figure of rows, one column of them ("0.25, 0.31, 0.27")."""
    shown = [(n, _one(r, n, column if i == 0 else None)) for i, n in enumerate(figures)]
    shown = [(n, v) for n, v in shown if v]
    return shown[0][1] if len(shown) == 1 else "; ".join(f"{n} {v}" for n, v in shown)


def paper_checks(r: dict) -> str:
    """On a paper model, the plugin also requires every recorded figure the paper reports for that model to lie
    within its tolerance (``Figures.check_paper``): said in the criterion."""
    cid, model = r["claim"], r.get("model")
    if cid not in CLAIMS or model not in PAPER_NAMES:
        return ""
    checks = []
    for f in r.get("figures") or []:
        try:
            ref = CLAIMS[cid].paper_value(model, f.get("name", ""))
        except KeyError:
            continue
        if ref is not None:
            checks.append(f"{f['name']} {ref.value:g} ± {ref.tolerance:.2g}")
    return f"; on this paper model also, within the paper's value: {', '.join(checks)}" if checks else ""


def model_label(r: dict) -> str:
    """The record's model, else the family a per-family test ran on (T13), else "(no model)"."""
    if r.get("model"):
        return r["model"]
    param = r["test"].rpartition("[")[2].rstrip("]") if r["test"].endswith("]") else ""
    return f"{param} family" if param in FAMILIES else "(no model)"


def lead_rows(results: dict, base: Path | None, applicable: bool) -> list:
    rows = []
    for r in sorted(results["records"], key=lambda r: (claim_key(r["claim"]), test_name(r), model_label(r))):
        if (verdict_of(r) == "n/a") == applicable:
            continue
        test, cid = test_name(r), r["claim"]
        c = CRITERIA.get(test) if cid in CLAIMS else None
        rows.append([cid, (c.words(cid) + paper_checks(r)) if c else test, model_label(r),
                     paper_numbers(cid, test, r.get("model")) if c else "",
                     measured(r, c.headline, c.column) if c else "",
                     (verdict_text(r, verdict_of(r) != "n/a"), LABEL[verdict_of(r)][1]), methods_link(cid, base)])
    return rows


LEAD = ["claim", "criterion (held when)", "model", "paper", "measured [95% CI]", "verdict", "method"]


def lead_table(results: dict, base: Path | None) -> list:
    """One row per claim test and model: the criterion, the paper, measured ± CI, the verdict (with this run's
    reason when it did not hold), the METHODS link; the rows of tests not applicable to a model folded below."""
    out = [("table", LEAD, lead_rows(results, base, True))]
    na = lead_rows(results, base, False)
    if na:
        out.append(("details", f"{len(na)} tests not applicable to a model (the paper's prediction is for other "
                               f"models)", [("table", LEAD, na)]))
    return out


def matrix(results: dict, models: list) -> list:
    """The claims × models matrix (tests per cell by verdict), with its legend."""
    by_claim, texts = defaultdict(list), claim_texts()
    for r in results["records"]:
        by_claim[r["claim"]].append(r)
    rows = []
    for claim in sorted(by_claim, key=claim_key):
        row = [claim, texts.get(claim, "")]
        for m in models:
            c = Counter(verdict_of(r) for r in by_claim[claim] if model_label(r) == m)
            worst = next((LABEL[v][1] for v in ("harness error", "stale", "unstable", "not held", "held") if c[v]), "")
            row.append((", ".join(f"{n} {LABEL[v][0]}" for v, n in c.items()) or "not run", worst))
        rows.append(row)
    legend = "Each cell counts the claim's tests on that model by verdict: " + "; ".join(
        f"{LABEL[v][0]} = {what}" for v, what in VERDICTS.items()) + ". \"<family> family\": a test over a model " \
        "family (T13); \"(no model)\": a property tested without a model (EQ3's softmax)."
    return [("table", ["claim", "the paper says", *models], rows), ("p", legend)]


def provenance_blocks(results: dict) -> list:
    p = results.get("provenance") or {}
    code, host = p.get("code") or {}, p.get("machine") or {}
    commit = (code.get("commit") or "unknown")[:12] + (" (with uncommitted changes)" if code.get("dirty") else "")
    gpus = ", ".join(host.get("gpus") or []) or "none"
    lines = [f"Settings: {', '.join(f'{k}={v}' for k, v in (results.get('settings') or {}).items())}",
             f"Code: commit {commit}; selection: "
             f"{' '.join(p['selection']) if p.get('selection') else 'default (testpaths)' if 'selection' in p else 'not recorded'}",
             f"Machine: {host.get('cpu') or 'unknown CPU'}; GPUs: {gpus}; CUDA {host.get('cuda') or 'none'}",
             "Versions: " + ", ".join(f"{k} {v}" for k, v in (results.get("versions") or {}).items())]
    rows = [[m, w.get("caveat") or "", w.get("source") or "",
             _fingerprint(w)] for m, w in (p.get("models") or {}).items()]
    out = [("p", line) for line in lines]
    if rows:
        out.append(("table", ["model", "differs from the paper's models", "weights", "fingerprint"],
                    rows))
    return out


def _fingerprint(w: dict) -> str:
    if w.get("weights_sha256"):
        return f"weights sha256 {w['weights_sha256'][:16]}"
    files = {k: v for k, v in (w.get("weights") or {}).items() if k != "revision"}
    parts = [f"revision {w['weights']['revision'][:12]}"] if "revision" in (w.get("weights") or {}) else []
    parts += [f"{k} {v[:23]}" for k, v in list(files.items())[:2]] + ([f"+{len(files) - 2} files"] if len(files) > 2
                                                                      else [])
    parts += [f"config sha256 {w['config_sha256'][:16]}"] if w.get("config_sha256") else []
    return "; ".join(parts) or "not found here"


def claim_section(claim: str, records: list, plots: list, texts: dict) -> list:
    rows = []
    for r in records:
        css = LABEL[verdict_of(r)][1]
        for k, f in enumerate(r.get("figures") or [{}]):
            name = f.get("name", "") + (f" ({f['note']})" if f.get("note") else "")
            rows.append([r.get("model") or "—", test_name(r), name, fmt(f.get("paper")), fmt(f.get("value")),
                         fmt(f.get("ci")), (verdict_text(r, k == 0), css)])
    figures = [("img", p.title, Path(p.path)) for p in plots if p.claim == claim]
    return [("h2", f"{claim} — {texts.get(claim, '')}".rstrip(" —"), f"claim-{claim.lower()}"), *figures,
            ("details", f"{claim}: every figure measured ({len(rows)} rows)",
             [("table", ["model", "test", "figure", "paper", "measured", "CI", "verdict"], rows)])]


def document(results: dict, plots: list, base: Path | None = None) -> list:
    """The report as blocks (harness.report.render)."""
    texts, models = claim_texts(), list(results.get("models") or [])
    by_claim = defaultdict(list)
    for r in results["records"]:
        by_claim[r["claim"]].append(r)
        if model_label(r) not in models:
            models.append(model_label(r))
    claims = sorted(by_claim, key=claim_key)
    sections = [("Claims at a glance", "lead"), ("Claims × models", "matrix"), ("Glossary", "glossary"),
                ("Run provenance", "provenance"), *((f"{c} — {texts.get(c, '')}".rstrip(" —"), f"claim-{c.lower()}")
                                                    for c in claims)]
    timed = any("layer_tokens" in r for r in results["records"])
    sections += [("Where the time went", "time")] if timed else []
    blocks = [("h1", f"Claims report — {results.get('run') or 'unnamed run'}"), *partial_note(results),
              ("toc", sections), ("h2", "Claims at a glance", "lead"),
              ("p", "One row per claim test and model: what the test requires (thresholds from the claim registry, "
                    "fixed from the paper's numbers before any run), the paper's number with the paper model it "
                    "comes from, this run's headline figure with its 95% CI over prompts, and the verdict."),
              *lead_table(results, base),
              ("h2", "Claims × models", "matrix"), *matrix(results, models),
              ("h2", "Glossary", "glossary"), ("table", ["term", "meaning"], [list(g) for g in GLOSSARY]),
              ("h2", "Run provenance", "provenance"), *provenance_blocks(results)]
    for claim in claims:
        blocks += claim_section(claim, by_claim[claim], plots, texts)
    if timed:
        blocks += [("h2", "Where the time went", "time"),
                   ("p", "Test time with its fixtures (model loading excluded), its forward-pass share (every "
                         "pass run, in the test or its fixtures; layer-tokens = prompt tokens × decoder layers run), "
                         "the floor (each distinct capture once: a prompt under one condition and depth counted "
                         "once, whether alone or inside a larger prompt set) and the rest (statistics, probes, "
                         "fits)."),
                   ("table", ["model", "tests s", "forward s", "layer-tokens", "floor", "run / floor",
                              "layer-tokens/s", "other s"], time_accounting(results["records"]))]
    return blocks


def summary_markdown(results: dict) -> str:
    """summary.md: the lead table and the matrix, for a CI job summary ($GITHUB_STEP_SUMMARY)."""
    models = list(dict.fromkeys([*(results.get("models") or []), *(model_label(r) for r in results["records"])]))
    blocks = [("h2", f"abspos claims — {results.get('run') or 'unnamed run'}"), *partial_note(results),
              *matrix(results, models),
              ("p", "**Claims at a glance** (one row per test and model; the full report is the job's artifact)"),
              ("table", LEAD, lead_rows(results, None, True))]
    return to_markdown(blocks, Path("."))


def time_per_model(records: list) -> dict:
    """{model or None: [test seconds, forward seconds, layer-tokens, shape or None, floor layer-tokens]} summed over
    its records (a record without a floor, from before floors were booked, counts its layer-tokens)."""
    acc: dict = defaultdict(lambda: [0.0, 0.0, 0, None, 0])
    for r in records:
        a = acc[r.get("model")]
        a[0] += r.get("seconds") or 0.0
        a[1] += r.get("forward_seconds") or 0.0
        a[2] += r.get("layer_tokens") or 0
        a[3] = r.get("shape") or a[3]
        a[4] += r.get("floor_layer_tokens", r.get("layer_tokens")) or 0
    return dict(acc)


def time_accounting(records: list) -> list[list[str]]:
    """Per model: test seconds, forward seconds, layer-tokens run, their floor, run / floor, throughput, other."""
    return [[m or "—", f"{t:.0f}", f"{f:.0f}", f"{lt:,}", f"{fl:,}", f"{lt / fl:.3f}" if fl else "—",
             f"{lt / f:,.0f}" if f else "—", f"{t - f:.0f}"]
            for m, (t, f, lt, _, fl) in time_per_model(records).items() if t >= 0.5 or lt]


def build(results_path: Path) -> Path:
    """Write report.md, report.html and figures/*.png next to results.json (given as the file or its run folder,
    checked by load_results before anything is written); returns report.md's path."""
    results_path = results_file(results_path)
    results, base = load_results(results_path), results_path.parent
    try:
        from harness.report.plots import make_all
        plots = make_all(results, base / "figures")
    except ImportError as e:  # no matplotlib: the tables alone
        warnings.warn(f"report figures skipped: {e}")
        plots = []
    blocks = document(results, plots, base)
    write_text(base / "report.html", to_html(blocks))  # each atomically: a full disk leaves no truncated report
    write_text(base / "summary.md", summary_markdown(results))
    return write_text(base / "report.md", to_markdown(blocks, base))


def main(argv: list[str]) -> int:
    """The command line; returns the exit code (0 nothing moved, 1 something moved, 2 unreadable input or an
    unwritable output; argparse exits 2 itself on a usage error)."""
    ap = argparse.ArgumentParser(prog="python -m harness.report")
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("build", help="rebuild report.md/report.html from results.json").add_argument("results", type=Path)
    c = sub.add_parser("compare", help="list figures that moved beyond tolerance between two runs")
    c.add_argument("old", type=Path)
    c.add_argument("new", type=Path)
    c.add_argument("--rtol", type=tolerance, default=None, help="relative tolerance (default: harness.outcome.snapshots.RTOL)")
    c.add_argument("--atol", type=tolerance, default=None, help="absolute tolerance (default: harness.outcome.snapshots.ATOL)")
    s = sub.add_parser("side-by-side", help="two models claim by claim: side_by_side.md/.html (RUN[#MODEL] each)")
    s.add_argument("a")
    s.add_argument("b")
    s.add_argument("--out", type=Path, default=None, help="output folder (default: the folder of A's results.json)")
    m = sub.add_parser("merge", help="one run and one report from runs made apart, one model each (harness.report.merge)")
    m.add_argument("runs", nargs="+", metavar="RUN", help="results.json, run folder, --report-dir or job.json")
    m.add_argument("--out", type=Path, required=True, help="folder for the merged results.json and report")
    m.add_argument("--allow-mixed", action="store_true", help="merge runs of different settings or commits, with "
                                                              "a warning in the report")
    m.add_argument("--expect", action="append", metavar="MODELS", help="models that should be there (names, "
                                                                       "bundled, paper): one without a run is "
                                                                       "shown as failed")
    m.add_argument("--run-id", default=None, help="the merged run's name (default merged-<time>)")
    args = ap.parse_args(argv)
    try:
        if args.cmd == "build":
            from harness.report.merge import build as build_any  # a merged run's report keeps its "Merged from" section

            print(build_any(args.results))
            return 0
        if args.cmd == "merge":  # 0 merged, 1 merged with a model failed or missing, 2 refused
            from harness.report.merge import merge_command

            try:
                text, code = merge_command(args.runs, args.out, args.allow_mixed, args.expect, args.run_id)
            except OSError as e:
                print(f"harness.report.document: {e.filename or args.out}: cannot write there ({e.strerror or e})",
                      file=sys.stderr)
                return 2
            print(text)
            return code
        if args.cmd == "side-by-side":
            from harness.report.side_by_side import side_by_side  # imports this module: loaded on use

            print(side_by_side(args.a, args.b, args.out))
            return 0
        text, code = compare(args.old, args.new, args.rtol, args.atol)
    except ResultsFileError as e:
        print(f"harness.report.document: {e}", file=sys.stderr)
        return 2
    except OSError as e:  # `build` into a folder this user cannot write (read-only, full): one line
        print(f"harness.report.document: {e.filename or args.results}: cannot write the report there "
              f"({e.strerror or e})", file=sys.stderr)
        return 2
    print(text)
    return code


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
