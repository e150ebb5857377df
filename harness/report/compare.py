"""Compare two runs' results.json: the figures and verdicts that moved beyond tolerance, after a line for any
settings or models that differ (``python -m harness.report compare OLD NEW``; exit 1 when something moved)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from harness.outcome.results import load_results
from harness.outcome.verdict import Verdict
from harness.report.render import fmt, to_markdown


def tolerance(text: str) -> float:
    """``--rtol`` / ``--atol``: a finite number at least 0 (argparse's type: anything else is its one-line usage
    error; a negative tolerance would list every identical figure as moved)."""
    import argparse
    import math

    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not (math.isfinite(value) and value >= 0):
        raise argparse.ArgumentTypeError(f"{text}: a tolerance is a finite number at least 0")
    return value


def figures_by_name(r: dict) -> dict:
    """A record's figures by name; a name recorded more than once is numbered from its second ("name#2")."""
    out, seen = {}, Counter()
    for f in r.get("figures") or []:
        seen[f["name"]] += 1
        out[f["name"] if seen[f["name"]] == 1 else f"{f['name']}#{seen[f['name']]}"] = f.get("value")
    return out


def diff(old: dict, new: dict, rtol: float | None = None, atol: float | None = None) -> list[list[str]]:
    """Rows (model, test, figure, index, old, new, change) for everything that differs beyond tolerance."""
    from harness.outcome.snapshots import ATOL, RTOL, close, figure_atol, leaves

    rtol, atol = RTOL if rtol is None else rtol, ATOL if atol is None else atol
    if not (rtol >= 0 and atol >= 0):
        raise ValueError(f"tolerances must be at least 0 (rtol {rtol}, atol {atol})")
    recs = [{(r.get("model") or "", r["test"]): r for r in run["records"]} for run in (old, new)]
    rows = []
    for key in dict.fromkeys([*recs[0], *recs[1]]):
        a, b = recs[0].get(key), recs[1].get(key)
        if a is None or b is None:
            rows.append(
                [
                    *key,
                    "",
                    "",
                    "" if a is None else Verdict.of(a),
                    "" if b is None else Verdict.of(b),
                    "test only in " + ("new" if a is None else "old"),
                ]
            )
            continue
        if Verdict.of(a) != Verdict.of(b):
            rows.append([*key, "", "", Verdict.of(a), Verdict.of(b), "verdict changed"])
        fa, fb = figures_by_name(a), figures_by_name(b)
        for name in dict.fromkeys([*fa, *fb]):
            if name not in fa or name not in fb:
                rows.append(
                    [
                        *key,
                        name,
                        "",
                        fmt(fa.get(name)),
                        fmt(fb.get(name)),
                        "figure only in " + ("new" if name not in fa else "old"),
                    ]
                )
                continue
            la, lb = dict(leaves(fa[name])), dict(leaves(fb[name]))
            tol = figure_atol(name, atol)  # a discrete figure (a p-value) may move by its declared steps
            for idx in dict.fromkeys([*la, *lb]):
                if idx not in la or idx not in lb or not close(la[idx], lb[idx], rtol, tol):
                    rows.append(
                        [
                            *key,
                            name,
                            idx,
                            fmt(la.get(idx)) if idx in la else "—",
                            fmt(lb.get(idx)) if idx in lb else "—",
                            "moved"
                            if idx in la and idx in lb
                            else "element only in " + ("new" if idx not in la else "old"),
                        ]
                    )
    return rows


def run_differences(old: dict, new: dict) -> list[str]:
    """One line for settings that differ between two runs (each key with both values; missing = {}) and one
    for differing model lists: figures of runs taken differently are not comparable."""
    lines, a, b = [], old.get("settings") or {}, new.get("settings") or {}
    unset = "(unset)"
    keys = [k for k in dict.fromkeys([*a, *b]) if k not in a or k not in b or a[k] != b[k]]
    if keys:
        lines.append(
            "settings differ: "
            + ", ".join(f"{k} {a.get(k, unset)} -> {b.get(k, unset)}" for k in keys)
            + " (figures are not comparable across settings; changes are expected)"
        )
    ma, mb = list(old.get("models") or []), list(new.get("models") or [])
    if ma != mb:
        lines.append(
            f"models differ: {', '.join(ma) or '(none)'} -> {', '.join(mb) or '(none)'} "
            "(tests of a model in one run only are listed as such)"
        )
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
