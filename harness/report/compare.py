"""Compare two runs' results.json: the figures and verdicts that moved beyond tolerance, after the two runs' library
versions and a line for any settings or models that differ (``python -m harness.report compare OLD NEW [--models M]
[--claims C]``; exit 0 when the selection agrees within tolerance, 1 when something moved). Made for the check after a
transformers update (docs/running.md): the versions come first, each moved figure is shown with its relative size, and
one line says how many numbers differ at all and by how much at most, within tolerance or not.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import replace
from pathlib import Path

from harness.outcome.results import RunResult, load_run
from harness.report.record_text import fmt
from harness.report.render import to_markdown


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


def figures_by_name(figures) -> dict:
    """A record's figures by name; a name recorded more than once is numbered from its second ("name#2")."""
    out, seen = {}, Counter()
    for f in figures or []:
        seen[f["name"]] += 1
        out[f["name"] if seen[f["name"]] == 1 else f"{f['name']}#{seen[f['name']]}"] = f.get("value")
    return out


def names(text: str) -> list[str]:
    """``--models`` / ``--claims``: a comma list of names (argparse's type; none is its one-line usage error)."""
    import argparse

    out = [n.strip() for n in text.split(",") if n.strip()]
    if not out:
        raise argparse.ArgumentTypeError(f"{text!r} names nothing")
    return list(dict.fromkeys(out))


class SelectionError(ValueError):
    """``--models`` or ``--claims`` naming what neither run has; the message is one line."""


def select(run: RunResult, models: list[str] | None, claims: list[str] | None) -> RunResult:
    """``run`` with only the records of ``models`` (tests without a model left out) and of ``claims``."""
    keep = tuple(
        r for r in run.records if (models is None or r.model in models) and (claims is None or r.claim in claims)
    )
    return replace(run, records=keep, models=tuple(m for m in run.models if models is None or m in models))


def _check_selection(old: RunResult, new: RunResult, models: list[str] | None, claims: list[str] | None) -> None:
    for option, wanted, key in (("--models", models, "model"), ("--claims", claims, "claim")):
        have = {getattr(r, key) for run in (old, new) for r in run.records} - {None}
        unknown = [w for w in wanted or [] if w not in have]
        if unknown:
            raise SelectionError(
                f"compare {option} {','.join(wanted or [])}: neither run has {', '.join(unknown)} (they have "
                f"{', '.join(sorted(have)) or 'none'})"
            )


def relative(a, b) -> str:
    """The relative size of a move from ``a`` to ``b`` ("+0.32%", "-6.3e-05"), "" where either is not a number."""
    if not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in (a, b)):
        return ""
    if math.isnan(a) or math.isnan(b):
        return "" if math.isnan(a) and math.isnan(b) else "nan"
    if a == 0:
        return "from 0" if b else ""
    rel = (b - a) / abs(a)
    return f"{rel:+.2%}" if abs(rel) >= 1e-3 else f"{rel:+.1e}"


def _shown(x, other) -> str:
    """A value in a moved row: 4 significant digits, or 8 where 4 would read the same as the other side's."""
    if isinstance(x, float) and isinstance(other, (int, float)) and x != other and fmt(x) == fmt(other):
        return f"{x:.8g}"
    return fmt(x)


def versions_line(old: RunResult, new: RunResult) -> str:
    """The two runs' transformers, torch and tokenizers (and any other library whose version differs)."""
    a, b = old.versions, new.versions
    parts = []
    for pkg in dict.fromkeys(["transformers", "torch", "tokenizers", *a, *b]):
        va, vb = a.get(pkg), b.get(pkg)
        if pkg in ("transformers", "torch", "tokenizers"):
            parts.append(
                f"{pkg} {va or '(not recorded)'}" + (f" → {vb or '(not recorded)'}" if va != vb else " (both)")
            )
        elif va != vb:
            parts.append(f"{pkg} {va or '(not recorded)'} → {vb or '(not recorded)'}")
    return "versions: " + ", ".join(parts)


def agreement_line(old: RunResult, new: RunResult, rtol: float, atol: float) -> str:
    """How many numbers both runs recorded, how many differ at all, and the largest relative difference (where)."""
    from harness.outcome.snapshots import leaves

    recs = [{(r.model or "", r.test): r for r in run.records} for run in (old, new)]
    n = differ = 0
    worst: tuple[float, str] = (0.0, "")
    for key in recs[0].keys() & recs[1].keys():
        fa, fb = figures_by_name(recs[0][key].figures), figures_by_name(recs[1][key].figures)
        for name in fa.keys() & fb.keys():
            la, lb = dict(leaves(fa[name])), dict(leaves(fb[name]))
            for idx in la.keys() & lb.keys():
                x, y = la[idx], lb[idx]
                if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (x, y)):
                    continue
                n += 1
                if x == y or (math.isnan(x) and math.isnan(y)):
                    continue
                differ += 1
                size = abs(y - x) / abs(x) if x and not (math.isnan(x) or math.isnan(y)) else math.inf
                if size > worst[0] or not worst[1]:
                    worst = (size, f"{key[0] or '(no model)'} {recs[0][key].function} {name}{idx}")
    most = f", the most {worst[0]:.2g} relative ({worst[1]})" if differ else ""
    return (
        f"figures: {n:,} numbers recorded by both runs, {differ:,} differ{most}; tolerance rtol {rtol:g}, "
        f"atol {atol:g} (and two steps of a discrete figure)"
    )


def diff(old: RunResult, new: RunResult, rtol: float | None = None, atol: float | None = None) -> list[list[str]]:
    """Rows (model, test, figure, index, old, new, change, relative size) for everything that differs beyond
    tolerance."""
    from harness.outcome.snapshots import ATOL, RTOL, close, figure_atol, leaves

    rtol, atol = RTOL if rtol is None else rtol, ATOL if atol is None else atol
    if not (rtol >= 0 and atol >= 0):
        raise ValueError(f"tolerances must be at least 0 (rtol {rtol}, atol {atol})")
    recs = [{(r.model or "", r.test): r for r in run.records} for run in (old, new)]
    rows = []
    for key in dict.fromkeys([*recs[0], *recs[1]]):
        a, b = recs[0].get(key), recs[1].get(key)
        if a is None or b is None:
            rows.append(
                [
                    *key,
                    "",
                    "",
                    "" if a is None else a.shown,
                    "" if b is None else b.shown,
                    "test only in " + ("new" if a is None else "old"),
                    "",
                ]
            )
            continue
        if a.shown != b.shown:
            rows.append([*key, "", "", a.shown, b.shown, "verdict changed", ""])
        fa, fb = figures_by_name(a.figures), figures_by_name(b.figures)
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
                        "",
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
                            _shown(la.get(idx), lb.get(idx)) if idx in la else "—",
                            _shown(lb.get(idx), la.get(idx)) if idx in lb else "—",
                            "moved"
                            if idx in la and idx in lb
                            else "element only in " + ("new" if idx not in la else "old"),
                            relative(la.get(idx), lb.get(idx)) if idx in la and idx in lb else "",
                        ]
                    )
    return rows


def settings_differences(old: RunResult, new: RunResult) -> list[str]:
    """One line for settings that differ between two runs (each with both values; a setting a run did not record is
    unset), none where they agree: figures of runs taken differently are not comparable."""
    a, b = dict(old.recorded_settings), dict(new.recorded_settings)
    unset = "(unset)"
    keys = [k for k in dict.fromkeys([*a, *b]) if k not in a or k not in b or a[k] != b[k]]
    if not keys:
        return []
    return [
        "settings differ: "
        + ", ".join(f"{k} {a.get(k, unset)} -> {b.get(k, unset)}" for k in keys)
        + " (figures are not comparable across settings; changes are expected)"
    ]


def run_differences(old: RunResult, new: RunResult) -> list[str]:
    """One line for settings that differ between two runs (``settings_differences``) and one for differing model
    lists: figures of runs taken differently are not comparable."""
    lines = settings_differences(old, new)
    ma, mb = list(old.models), list(new.models)
    if ma != mb:
        lines.append(
            f"models differ: {', '.join(ma) or '(none)'} -> {', '.join(mb) or '(none)'} "
            "(tests of a model in one run only are listed as such)"
        )
    return lines


def compare(
    old_path,
    new_path,
    rtol: float | None = None,
    atol: float | None = None,
    models: list[str] | None = None,
    claims: list[str] | None = None,
) -> tuple[str, int]:
    """Markdown table of what moved between two results.json files (``compare_runs``) and the exit code (1 if
    anything moved). ResultsFileError if either file is unreadable; SelectionError when a name selected is in neither
    run."""
    return compare_runs(load_run(old_path), load_run(new_path), rtol, atol, models, claims)


def selected(
    old: RunResult, new: RunResult, models: list[str] | None = None, claims: list[str] | None = None
) -> tuple[RunResult, RunResult]:
    """Both runs restricted to the records of ``models`` (a model's tests only: those without a model are left out)
    and of ``claims``; SelectionError when a name selected is in neither run."""
    _check_selection(old, new, models, claims)
    if models is None and claims is None:
        return old, new
    return select(old, models, claims), select(new, models, claims)


def compare_runs(
    old: RunResult,
    new: RunResult,
    rtol: float | None = None,
    atol: float | None = None,
    models: list[str] | None = None,
    claims: list[str] | None = None,
) -> tuple[str, int]:
    """Markdown table of what moved between two loaded runs, after their versions, a line for any settings or
    (selected) models that differ and how far the figures agree; and the exit code (1 if anything moved). ``models``
    and ``claims`` restrict both runs to those records (``selected``)."""
    from harness.outcome.snapshots import ATOL, RTOL

    old_s, new_s = selected(old, new, models, claims)
    picked = models is not None or claims is not None
    rows = diff(old_s, new_s, rtol, atol)
    scope = (
        " ("
        + "; ".join(f"{what} {', '.join(names)}" for what, names in (("models", models), ("claims", claims)) if names)
        + ")"
        if picked
        else ""
    )
    head = f"Compare {old.name} → {new.name}{scope}: {len(rows)} change(s)"
    lines = [versions_line(old, new), *run_differences(old_s, new_s)]
    lines.append(agreement_line(old_s, new_s, RTOL if rtol is None else rtol, ATOL if atol is None else atol))
    notes = "".join(line + "\n" for line in lines)
    if not rows:
        return head + " (all figures within tolerance, outcomes unchanged)\n" + notes, 0
    blocks = [("table", ["model", "test", "figure", "index", "old", "new", "change", "relative"], rows)]
    return head + "\n" + notes + "\n" + to_markdown(blocks, Path(".")), 1
