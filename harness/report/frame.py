"""A run's figures as tidy rows, one per (claim test, model, figure), for a data frame (``Verdicts.to_pandas``), a
CSV or a JSON file: every column one kind of thing, so a frame filters and aggregates without parsing words.

- ``verdict``: the ``Verdict`` value the report counts ("held", "not held", "inconclusive", "n/a", "unstable", ...),
  nothing folded in; ``recorded`` (a known outcome records this verdict), ``changed`` (it differs from its record:
  ``ClaimResult.changed``) and ``unrecorded`` (its model has no recorded outcomes) beside it.
- ``value``: a number (NaN where the figure is not one); ``values``: a figure that is not one number (a vector, a
  table, a flag), as recorded.
- ``paper`` and ``paper_model``: the registry's number for the figure, on the run's model where the paper reports
  one, else on the first paper model it names (the run's own recorded paper value where the registry has none);
  ``paper_words``: the report's paper cell for the test.
- ``deciding``: whether this figure is the one the deciding criterion judged; ``criterion`` and ``margin`` are that
  criterion's, on that row only.

A comparison of two runs (``comparison_rows``, ``python -m harness.report compare OLD NEW --csv F --json F``,
``harness.notebook.compare``) is tidy the same way: one row per (claim test, target, figure) of either run, changed or
not (``COMPARISON_COLUMNS``): each run's verdict and value beside each other, ``changed`` where the verdict differs or
the figure moved beyond the compare's tolerance, and ``change`` saying how.
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from harness.outcome.claim_result import ClaimResult
from harness.outcome.results import RunResult
from harness.report.compare import figures_by_name
from harness.report.record_text import decision_at, figure_judged
from harness.spec.claims import CLAIMS, claim_test, paper_numbers

COLUMNS = (
    "claim",
    "test",
    "model",
    "verdict",
    "recorded",
    "changed",
    "unrecorded",
    "figure",
    "value",
    "values",
    "ci_low",
    "ci_high",
    "paper",
    "paper_model",
    "paper_words",
    "deciding",
    "criterion",
    "margin",
    "reason",
)


def number(x: Any) -> float:
    """A figure's value as a float: NaN for anything that is not one number (a vector, a table, a word, none)."""
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return math.nan
    return float(x)


def scalar_pair(x: Any) -> tuple[Any, Any]:
    """(low, high) of a scalar interval [lo, hi]; (None, None) for none, or for an array figure's intervals."""
    if isinstance(x, (list, tuple)) and len(x) == 2 and all(isinstance(e, (int, float)) for e in x):
        return x[0], x[1]
    return None, None


def registry_paper(claim_id: str, figure: str, model: str | None) -> tuple[float | None, str | None]:
    """(the paper's number, the paper model it is for) that the registry declares for a figure: the run's model's
    where the paper reports one, else the first paper model's; (None, None) where it declares none."""
    spec = CLAIMS.get(claim_id)
    if spec is None or not figure:
        return None, None
    try:
        values = spec.figure(figure).paper
    except KeyError:  # a figure the declaration does not name (UndeclaredFigure): no paper value
        return None, None
    if not values:
        return None, None
    on = model if model in values else next(iter(values))
    return values[on].value, on


def paper_text(v: Mapping[str, Any]) -> str:
    """The report's paper cell for the test ("paper, Llama-3.2-3B: 0.35" or the paper's words)."""
    try:
        return paper_numbers(v["claim"], v["test"], v["model"]) if claim_test(v["test"]) else ""
    except KeyError:
        return ""


def deciding_figure(v: Mapping[str, Any]) -> str | None:
    """The name of the figure the deciding criterion judged (matched by value, the test's headline figures first),
    None where no criterion decided the verdict or it judged a statistic kept as no figure."""
    d = decision_at(v.get("margin"), v.get("decisions"))
    if d is None or not isinstance(d.get("estimate"), (int, float)):
        return None
    c = claim_test(v["test"])
    return figure_judged(v.get("figures"), d["estimate"], c.headline if c else ())


def rows(verdicts: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One dict per (test, figure), ``COLUMNS`` in order; a test without figures one row (figure ""). ``verdicts``:
    the notebook's plain records (``harness.notebook.verdict_record``)."""
    out = []
    for v in verdicts:
        decided, judged, words = (
            decision_at(v.get("margin"), v.get("decisions")) or {},
            deciding_figure(v),
            paper_text(v),
        )
        for f in v.get("figures") or [{"name": ""}]:
            name, value = f.get("name", ""), f.get("value")
            paper, paper_model = registry_paper(v["claim"], name, v["model"])
            if paper is None and isinstance(f.get("paper"), (int, float)):  # the run's own, where the registry has none
                paper, paper_model = f["paper"], v["model"]
            low, high = scalar_pair(f.get("ci"))
            is_deciding = bool(name) and name == judged
            out.append(
                {
                    **{k: v[k] for k in COLUMNS[:7]},
                    "figure": name,
                    "value": number(value),
                    "values": value if value is not None and math.isnan(number(value)) else None,
                    "ci_low": low,
                    "ci_high": high,
                    "paper": paper,
                    "paper_model": paper_model,
                    "paper_words": words,
                    "deciding": is_deciding,
                    "criterion": decided.get("criterion") if is_deciding else None,
                    "margin": v.get("margin") if is_deciding else None,
                    "reason": v.get("reason") or "",
                }
            )
    return out


def jsonable(x: Any) -> Any:
    """A cell as JSON holds it: NaN as null, a vector as its list."""
    return None if isinstance(x, float) and math.isnan(x) else x


def to_json_text(table: list[dict[str, Any]]) -> str:
    """The rows as a JSON array of objects (NaN as null)."""
    return json.dumps([{k: jsonable(v) for k, v in row.items()} for row in table], indent=1)


#: A comparison's columns (``comparison_rows``): one row per (claim test, target, figure) of either run.
COMPARISON_COLUMNS = (
    "claim",
    "test",
    "model",
    "figure",
    "verdict_before",
    "verdict_after",
    "verdict_changed",
    "value_before",
    "value_after",
    "values_before",
    "values_after",
    "relative",
    "changed",
    "change",
)


def _moved(a: Any, b: Any, name: str, rtol: float, atol: float) -> bool:
    """Whether a figure's value moved from ``a`` to ``b`` beyond the compare's tolerance (any element of a vector;
    an element in one run only moves)."""
    from harness.outcome.snapshots import close, figure_atol, leaves  # syrupy (and pytest): loaded when compared

    la, lb = dict(leaves(a)), dict(leaves(b))
    tol = figure_atol(name, atol)
    return la.keys() != lb.keys() or any(not close(la[i], lb[i], rtol, tol) for i in la)


def _relative(a: float, b: float) -> float:
    """(b - a) / |a| for two numbers, NaN where either is not one or a is 0."""
    return (b - a) / abs(a) if math.isfinite(a) and math.isfinite(b) and a else math.nan


def comparison_rows(
    old: RunResult, new: RunResult, rtol: float | None = None, atol: float | None = None
) -> list[dict[str, Any]]:
    """One dict per (claim test, target, figure) recorded by either run (a test without figures one row, figure ""),
    ``COMPARISON_COLUMNS`` in order, in the order ``compare.diff`` lists them: ``verdict_before``/``verdict_after``
    the verdict as shown ("" where the run has no such test), ``value_*`` a scalar figure (NaN otherwise), ``values_*``
    any other figure as recorded, ``relative`` (after - before) / |before|, ``changed`` where the verdict differs or
    the figure moved beyond tolerance (the compare's: ``harness.outcome.snapshots``), ``change`` how ("" unchanged)."""
    from harness.outcome.snapshots import ATOL, RTOL

    rtol, atol = RTOL if rtol is None else rtol, ATOL if atol is None else atol
    recs = [{(r.model or "", r.test): r for r in run.records} for run in (old, new)]
    out = []
    for key in dict.fromkeys([*recs[0], *recs[1]]):
        a, b = recs[0].get(key), recs[1].get(key)
        either: ClaimResult = a or b  # type: ignore[assignment]  # a key is in one run at least
        va, vb = (r.shown.value if r is not None else "" for r in (a, b))
        fa, fb = (figures_by_name(r.figures) if r is not None else {} for r in (a, b))
        test_change = "test only in new" if a is None else "test only in old" if b is None else ""
        verdict_change = "verdict changed" if not test_change and va != vb else ""
        for name in dict.fromkeys([*fa, *fb]) or [""]:
            x, y = fa.get(name), fb.get(name)
            if test_change or not name:
                figure_change = ""
            elif name not in fa or name not in fb:
                figure_change = "figure only in " + ("new" if name not in fa else "old")
            else:
                figure_change = "moved" if _moved(x, y, name, rtol, atol) else ""
            change = "; ".join(c for c in (test_change, verdict_change, figure_change) if c)
            out.append(
                {
                    "claim": either.claim,
                    "test": either.function,
                    "model": either.target.label,
                    "figure": name,
                    "verdict_before": va,
                    "verdict_after": vb,
                    "verdict_changed": va != vb,
                    "value_before": number(x),
                    "value_after": number(y),
                    "values_before": x if x is not None and math.isnan(number(x)) else None,
                    "values_after": y if y is not None and math.isnan(number(y)) else None,
                    "relative": _relative(number(x), number(y)),
                    "changed": bool(change),
                    "change": change,
                }
            )
    return out


def write_csv(table: list[dict[str, Any]], path: str | Path, columns: Iterable[str]) -> Path:
    """The rows as CSV with the header ``columns`` (NaN and None as empty cells, a vector or table as JSON text); no
    pandas needed. Returns the path."""
    with open(path, "w", newline="") as f:
        out = csv.writer(f)
        out.writerow(list(columns))
        for row in table:
            cells = (jsonable(row[c]) for c in columns)
            out.writerow(["" if v is None else json.dumps(v) if isinstance(v, (list, dict)) else v for v in cells])
    return Path(path)
