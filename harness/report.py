"""Run reports: results.json (every measured figure with its context), report.md and a self-contained report.html.

``python -m harness.report build reports/<run>/results.json`` rebuilds both reports (and figures/*.png) from the
JSON alone; ``python -m harness.report compare OLD NEW [--rtol R --atol A]`` lists what moved between two runs
(and says first when their settings or models differ). Either takes a results.json or the run folder holding it.
Exit codes: 0 nothing moved (or the report was built), 1 figures or verdicts moved, 2 unreadable input (a missing,
empty or invalid JSON file, or not a claims results.json: one line on stderr says which file and why; nothing is
written) or a usage error.
"""

from __future__ import annotations

import argparse
import base64
import html
import json
import math
import platform
import re
import sys
import tempfile
import warnings
from collections import Counter, defaultdict
from importlib import metadata
from pathlib import Path

from .claim_registry import CLAIMS
from .results import ResultsFileError, load_results, results_file
from .verdict import VERDICTS, verdict_of

VERSIONED = ("torch", "transformers", "numpy", "scikit-learn", "syrupy", "pytest")
#: Report wording and css class of each verdict (harness.verdict.VERDICTS says what each means).
LABEL = {"held": ("held", "held"), "not held": ("not held", "not"),
         "stale": ("held — stale known outcome, re-take it", "stale"),
         "harness error": ("harness error (no verdict)", "error"), "n/a": ("not applicable", "skip"),
         "skipped": ("skipped", "skip"), "unstable": ("unstable across seeds", "stale")}


def versions() -> dict:
    out = {"python": platform.python_version()}
    for pkg in VERSIONED:
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            out[pkg] = None
    return out


def write_run(report_dir: Path, run_id: str, records: list, settings, models: list) -> Path:
    """Write results.json first (nothing measured is lost: an unwritable directory falls back to a temporary
    one, said in a warning), then the report built from it (a failure there leaves results.json intact)."""
    results = {"run": run_id, "settings": settings.as_dict(), "models": models, "versions": versions(),
               "records": sorted(records, key=lambda r: (r["claim"], r["model"] or "", r["test"]))}
    try:
        out = report_dir / run_id
        out.mkdir(parents=True, exist_ok=True)
        (out / "results.json").write_text(json.dumps(results, indent=1, allow_nan=True))
    except OSError as e:
        out = Path(tempfile.mkdtemp(prefix=f"abspos-{run_id}-"))
        (out / "results.json").write_text(json.dumps(results, indent=1, allow_nan=True))
        print(f"abspos: could not write to {report_dir} ({e.strerror}); results are in {out}", file=sys.stderr)
        return out
    try:
        build(out / "results.json")
    except Exception as e:  # noqa: BLE001 - the results are safe; say why the report is missing
        print(f"abspos: the report could not be built ({type(e).__name__}: {e}); results are in "
              f"{out / 'results.json'}; rebuild with python -m harness.report build", file=sys.stderr)
    latest = report_dir / "latest"
    try:
        if latest.is_symlink() or latest.exists():
            latest.unlink()
        latest.symlink_to(run_id)
    except OSError:
        pass  # the run's own folder is what matters; "latest" is a convenience
    return out


# ---- formatting ------------------------------------------------------------------------------------

def _fmt(v, n: int = 6) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return f"{v:.4g}"
    if isinstance(v, list):
        if any(isinstance(x, list) for x in v):
            shape = f"{len(v)}×{max(len(x) if isinstance(x, list) else 1 for x in v)}"
            flat = [y for x in v for y in (x if isinstance(x, list) else [x])
                    if isinstance(y, (int, float)) and math.isfinite(y)]
            return f"[{shape} array{f', {min(flat):.4g}…{max(flat):.4g}' if flat else ''}]"
        return f"[{', '.join(_fmt(x) or 'null' for x in v[:n])}{f', … ({len(v)})' if len(v) > n else ''}]"
    if isinstance(v, dict):
        items = list(v.items())
        return "{" + ", ".join(f"{k}: {_fmt(x)}" for k, x in items[:4]) + (", …" if len(items) > 4 else "") + "}"
    return str(v)


def _claim_key(c: str):
    m = re.match(r"([A-Za-z]+)(\d+)(.*)", c or "")
    return (m.group(1) != "EQ", int(m.group(2)), m.group(3)) if m else (True, 10**9, c or "")


def claim_texts() -> dict:
    """One line per claim, from the claim registry."""
    return {c.id: c.statement for c in CLAIMS.values()}


def _test_name(r: dict) -> str:
    name = r["test"].split("::")[-1]
    model = r.get("model")
    return name[: -len(model) - 2] if model and name.endswith(f"[{model}]") else name


def _verdict(r: dict, with_reason: bool) -> str:
    v = LABEL[verdict_of(r)][0] + (" (recorded known outcome)" if r.get("known_outcome") else "")
    reason = " ".join(str(r.get("reason") or "").split())
    if verdict_of(r) == "unstable":
        reason = f"{r['unstable']}; this run: {r['verdict']}" + (f": {reason}" if reason else "")
    return f"{v}: {reason[:300]}" if with_reason and reason and verdict_of(r) != "held" else v


# ---- the document: blocks rendered as markdown or html ---------------------------------------------

def document(results: dict, plots: list) -> list:
    """Blocks: ("h1"|"h2"|"p", text), ("table", header, rows), ("img", title, path). Cells: str or (str, css)."""
    texts, models = claim_texts(), list(results.get("models") or [])
    by_claim = defaultdict(list)
    for r in results["records"]:
        by_claim[r["claim"]].append(r)
        if (r.get("model") or "—") not in models:
            models.append(r.get("model") or "—")
    blocks = [("h1", f"Claims report — {results.get('run') or 'unnamed run'}"),
              ("p", "Settings: " + ", ".join(f"{k}={v}" for k, v in (results.get("settings") or {}).items())),
              ("p", "Versions: " + ", ".join(f"{k} {v}" for k, v in (results.get("versions") or {}).items())),
              ("p", "Verdicts: " + "; ".join(f"{LABEL[v][0]} = {what}" for v, what in VERDICTS.items())),
              ("h2", "Summary per model")]
    counts = {m: Counter(verdict_of(r) for r in results["records"] if (r.get("model") or "—") == m) for m in models}
    order = [v for v in LABEL if any(c[v] for c in counts.values())]
    blocks.append(("table", ["model", *(LABEL[v][0] for v in order)],
                   [[m, *((str(c[v]), LABEL[v][1] if c[v] else "") for v in order)] for m, c in counts.items()]))
    if any("layer_tokens" in r for r in results["records"]):
        blocks += [("h2", "Where the time went"),
                   ("p", "Test time (model loading excluded), its forward-pass share (captures run, not found "
                         "in the session cache; layer-tokens = prompt tokens × decoder layers run) and the rest "
                         "(statistics, probes, fits)."),
                   ("table", ["model", "tests s", "forward s", "layer-tokens", "layer-tokens/s", "other s"],
                    time_accounting(results["records"]))]
    matrix = []
    for claim in sorted(by_claim, key=_claim_key):
        row = [claim, texts.get(claim, "")]
        for m in models:
            c = Counter(verdict_of(r) for r in by_claim[claim] if (r.get("model") or "—") == m)
            cell = ", ".join(f"{n} {v}" for v, n in c.items())
            worst = next((LABEL[v][1] for v in ("harness error", "stale", "unstable", "not held", "held") if c[v]), "")
            row.append((cell, worst))
        matrix.append(row)
    blocks += [("table", ["claim", "paper says", *models], matrix)]
    for claim in sorted(by_claim, key=_claim_key):
        blocks += [("h2", f"{claim} — {texts.get(claim, '')}".rstrip(" —"))]
        rows = []
        for r in by_claim[claim]:
            css = LABEL[verdict_of(r)][1]
            for k, f in enumerate(r.get("figures") or [{}]):
                name = f.get("name", "") + (f" ({f['note']})" if f.get("note") else "")
                rows.append([r.get("model") or "—", _test_name(r), name, _fmt(f.get("paper")), _fmt(f.get("value")),
                             _fmt(f.get("ci")), (_verdict(r, k == 0), css)])
        blocks.append(("table", ["model", "test", "figure", "paper", "measured", "CI", "verdict"], rows))
        blocks += [("img", p.title, Path(p.path)) for p in plots if p.claim == claim]
    return blocks


def time_per_model(records: list) -> dict:
    """{model or None: [test seconds, forward seconds, layer-tokens, shape or None]} summed over its records."""
    acc: dict = defaultdict(lambda: [0.0, 0.0, 0, None])
    for r in records:
        a = acc[r.get("model")]
        a[0] += r.get("seconds") or 0.0
        a[1] += r.get("forward_seconds") or 0.0
        a[2] += r.get("layer_tokens") or 0
        a[3] = r.get("shape") or a[3]
    return dict(acc)


def time_accounting(records: list) -> list[list[str]]:
    """Per model: total test seconds, forward-pass seconds, layer-tokens, throughput, other seconds."""
    return [[m or "—", f"{t:.0f}", f"{f:.0f}", f"{lt:,}", f"{lt / f:,.0f}" if f else "—", f"{t - f:.0f}"]
            for m, (t, f, lt, _) in time_per_model(records).items() if t >= 0.5 or lt]


def _text(cell) -> str:
    return cell[0] if isinstance(cell, tuple) else str(cell)


def to_markdown(blocks: list, base: Path) -> str:
    esc = lambda c: _text(c).replace("|", "\\|").replace("\n", " ")  # noqa: E731
    out = []
    for b in blocks:
        if b[0] == "table":
            out += ["| " + " | ".join(esc(c) for c in b[1]) + " |", "|" + "---|" * len(b[1])]
            out += ["| " + " | ".join(esc(c) for c in row) + " |" for row in b[2]] + [""]
        elif b[0] == "img":
            out += [f"![{b[1]}]({b[2].relative_to(base).as_posix()})", ""]
        else:
            out += [{"h1": "# ", "h2": "## ", "p": ""}[b[0]] + b[1], ""]
    return "\n".join(out)


CSS = """body{font:14px/1.4 system-ui,sans-serif;margin:2em;color:#222;max-width:1400px}
table{border-collapse:collapse;margin:.5em 0 1.5em;font-size:12px}th,td{border:1px solid #ccc;padding:3px 6px;
text-align:left;vertical-align:top}th{background:#f0f0f0}td.held{background:#e6f4e6}td.not{background:#fbe3e3}
td.skip{color:#777}td.stale{background:#fff3cd}td.error{background:#e0e0e0;font-weight:bold}figure{margin:1em 0}img{max-width:100%}figcaption{font-size:12px;color:#555}
h2{border-bottom:1px solid #ddd;padding-bottom:.2em;margin-top:2em}"""


def to_html(blocks: list) -> str:
    e = html.escape
    cell = lambda tag, c: (f'<{tag} class="{c[1]}">{e(c[0])}</{tag}>' if isinstance(c, tuple) and c[1]  # noqa: E731
                           else f"<{tag}>{e(_text(c))}</{tag}>")
    body = []
    for b in blocks:
        if b[0] == "table":
            body.append("<table><tr>" + "".join(cell("th", c) for c in b[1]) + "</tr>"
                        + "".join("<tr>" + "".join(cell("td", c) for c in row) + "</tr>" for row in b[2]) + "</table>")
        elif b[0] == "img":
            data = base64.b64encode(b[2].read_bytes()).decode("ascii")
            body.append(f'<figure><img alt="{e(b[1])}" src="data:image/png;base64,{data}">'
                        f"<figcaption>{e(b[1])}</figcaption></figure>")
        else:
            body.append(f"<{b[0]}>{e(b[1])}</{b[0]}>")
    title = e(blocks[0][1]) if blocks else "Claims report"
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{title}</title>'
            f"<style>{CSS}</style></head><body>\n" + "\n".join(body) + "\n</body></html>\n")


def build(results_path: Path) -> Path:
    """Write report.md, report.html and figures/*.png next to results.json (given as the file or its run folder,
    checked by load_results before anything is written); returns report.md's path."""
    results_path = results_file(results_path)
    results, base = load_results(results_path), results_path.parent
    try:
        from .plots import make_all
        plots = make_all(results, base / "figures")
    except ImportError as e:  # no matplotlib: the tables alone
        warnings.warn(f"report figures skipped: {e}")
        plots = []
    blocks = document(results, plots)
    (base / "report.html").write_text(to_html(blocks))
    out = base / "report.md"
    out.write_text(to_markdown(blocks, base))
    return out


# ---- compare two runs ------------------------------------------------------------------------------

def _figures(r: dict) -> dict:
    out, seen = {}, Counter()
    for f in r.get("figures") or []:
        seen[f["name"]] += 1
        out[f["name"] if seen[f["name"]] == 1 else f"{f['name']}#{seen[f['name']]}"] = f.get("value")
    return out


def diff(old: dict, new: dict, rtol: float | None = None, atol: float | None = None) -> list[list[str]]:
    """Rows (model, test, figure, index, old, new, change) for everything that differs beyond tolerance."""
    from .snapshots import ATOL, RTOL, close, leaves

    rtol, atol = RTOL if rtol is None else rtol, ATOL if atol is None else atol
    recs = [{(r.get("model") or "", r["test"]): r for r in run["records"]} for run in (old, new)]
    rows = []
    for key in dict.fromkeys([*recs[0], *recs[1]]):
        a, b = recs[0].get(key), recs[1].get(key)
        if a is None or b is None:
            rows.append([*key, "", "", "" if a is None else verdict_of(a), "" if b is None else verdict_of(b),
                         "test only in " + ("new" if a is None else "old")])
            continue
        if verdict_of(a) != verdict_of(b):
            rows.append([*key, "", "", verdict_of(a), verdict_of(b), "verdict changed"])
        fa, fb = _figures(a), _figures(b)
        for name in dict.fromkeys([*fa, *fb]):
            if name not in fa or name not in fb:
                rows.append([*key, name, "", _fmt(fa.get(name)), _fmt(fb.get(name)),
                             "figure only in " + ("new" if name not in fa else "old")])
                continue
            la, lb = dict(leaves(fa[name])), dict(leaves(fb[name]))
            for idx in dict.fromkeys([*la, *lb]):
                if idx not in la or idx not in lb or not close(la[idx], lb[idx], rtol, atol):
                    rows.append([*key, name, idx, _fmt(la.get(idx)) if idx in la else "—",
                                 _fmt(lb.get(idx)) if idx in lb else "—", "moved" if idx in la and idx in lb
                                 else "element only in " + ("new" if idx not in la else "old")])
    return rows


def run_differences(old: dict, new: dict) -> list[str]:
    """One line for settings that differ between two runs (each key with both values; missing = {}) and one
    for differing model lists: figures of runs taken differently are not comparable."""
    lines, a, b = [], old.get("settings") or {}, new.get("settings") or {}
    unset = "(unset)"
    keys = [k for k in dict.fromkeys([*a, *b]) if k not in a or k not in b or a[k] != b[k]]
    if keys:
        lines.append("settings differ: " + ", ".join(f"{k} {a.get(k, unset)} -> {b.get(k, unset)}" for k in keys)
                     + " (figures are not comparable across settings; changes are expected)")
    ma, mb = list(old.get("models") or []), list(new.get("models") or [])
    if ma != mb:
        lines.append(f"models differ: {', '.join(ma) or '(none)'} -> {', '.join(mb) or '(none)'} "
                     "(tests of a model in one run only are listed as such)")
    return lines


def compare(old_path, new_path, rtol: float | None = None, atol: float | None = None) -> tuple[str, int]:
    """Markdown table of what moved between two results.json files, after a line for any settings or models
    that differ, and the exit code (1 if anything moved; ResultsFileError if either file is unreadable)."""
    old, new = load_results(old_path), load_results(new_path)
    rows = diff(old, new, rtol, atol)
    head = f"Compare {old.get('run')} → {new.get('run')}: {len(rows)} change(s)"
    notes = "".join(line + "\n" for line in run_differences(old, new))
    if not rows:
        return head + " (all figures within tolerance, outcomes unchanged)\n" + notes, 0
    blocks = [("table", ["model", "test", "figure", "index", "old", "new", "change"], rows)]
    return head + "\n" + notes + "\n" + to_markdown(blocks, Path(".")), 1


def main(argv: list[str]) -> int:
    """The command line; returns the exit code (0 nothing moved, 1 something moved, 2 unreadable input; argparse
    exits 2 itself on a usage error)."""
    ap = argparse.ArgumentParser(prog="python -m harness.report")
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("build", help="rebuild report.md/report.html from results.json").add_argument("results", type=Path)
    c = sub.add_parser("compare", help="list figures that moved beyond tolerance between two runs")
    c.add_argument("old", type=Path)
    c.add_argument("new", type=Path)
    c.add_argument("--rtol", type=float, default=None, help="relative tolerance (default: harness.snapshots.RTOL)")
    c.add_argument("--atol", type=float, default=None, help="absolute tolerance (default: harness.snapshots.ATOL)")
    args = ap.parse_args(argv)
    try:
        if args.cmd == "build":
            print(build(args.results))
            return 0
        text, code = compare(args.old, args.new, args.rtol, args.atol)
    except ResultsFileError as e:
        print(f"harness.report: {e}", file=sys.stderr)
        return 2
    print(text)
    return code


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
