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
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from typing import Any

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
