"""How a claim test's record reads in a report's cells, shared by every report (the run's, a merged run's, two
models side by side, the notebook API's tables): the verdict's wording, claim order, the test's and model's
names, the headline figures with their CI, and a weights fingerprint.
"""

from __future__ import annotations

import re

from harness.outcome.nodeid import parse
from harness.outcome.verdict import Verdict
from harness.report.render import fmt
from harness.spec.claims import CLAIMS
from harness.spec.models import FAMILIES


def claim_key(c: str):
    m = re.match(r"([A-Za-z]+)(\d+)(.*)", c or "")
    return (m.group(1) != "EQ", int(m.group(2)), m.group(3)) if m else (True, 10**9, c or "")


def claim_texts() -> dict:
    """One line per claim, from the claim registry."""
    return {c.id: c.statement for c in CLAIMS.values()}


def test_name(r: dict) -> str:
    """The record's test function (its node id without the file and the [model] parameter)."""
    return parse(r["test"]).function


def model_label(r: dict) -> str:
    """The record's model, else the family a per-family test ran on (T13), else "(no model)"."""
    if r.get("model"):
        return r["model"]
    param = parse(r["test"]).param
    return f"{param} family" if param in FAMILIES else "(no model)"


def verdict_text(r: dict, with_reason: bool) -> str:
    verdict = Verdict.of(r)
    v = verdict.label + (" (as recorded)" if r.get("known_outcome") else "")
    reason = " ".join(str(r.get("reason") or "").split())
    if verdict == Verdict.UNSTABLE:
        reason = f"{r['unstable']}; this run: {r['verdict']}" + (f": {reason}" if reason else "")
    return f"{v}: {reason[:300]}" if with_reason and reason and verdict != Verdict.HELD else v


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


def fingerprint(w: dict) -> str:
    """A model's weights in a few words (its provenance entry): the weights' sha256, else the revision and files."""
    if w.get("weights_sha256"):
        return f"weights sha256 {w['weights_sha256'][:16]}"
    files = {k: v for k, v in (w.get("weights") or {}).items() if k != "revision"}
    parts = [f"revision {w['weights']['revision'][:12]}"] if "revision" in (w.get("weights") or {}) else []
    parts += [f"{k} {v[:23]}" for k, v in list(files.items())[:2]] + (
        [f"+{len(files) - 2} files"] if len(files) > 2 else []
    )
    parts += [f"config sha256 {w['config_sha256'][:16]}"] if w.get("config_sha256") else []
    return "; ".join(parts) or "not found here"
