"""How a claim test's record reads in a report's cells, shared by every report (the run's, a merged run's, two
models side by side, the notebook API's tables) and the terminal: a value in a cell (``fmt``), the verdict's wording,
claim order, the test's and model's names, the headline figures with their CI, the paper checks a criterion names,
a record's figures as rows, and a weights fingerprint. The run's report asks these once per record
(harness.report.cells).
"""

from __future__ import annotations

import math

from harness.outcome.claim_result import ClaimResult, TargetKind
from harness.outcome.verdict import CHANGED, Verdict
from harness.spec.claims import CLAIMS, claim_order, claim_test, figure_words
from harness.spec.models import names
from harness.synthetic.sizes import SIZES, describe

PAPER_NAMES = set(names("paper"))


def fmt(v, n: int = 6) -> str:
    """A figure's value in a table cell: 4 significant digits, lists shortened, nested arrays as their shape."""
    if v is None:
        return ""
    if isinstance(v, float):
        return f"{v:.4g}"
    if isinstance(v, list):
        if not v:
            return "none"
        if any(isinstance(x, list) for x in v):
            shape = f"{len(v)}×{max(len(x) if isinstance(x, list) else 1 for x in v)}"
            flat = [
                y
                for x in v
                for y in (x if isinstance(x, list) else [x])
                if isinstance(y, (int, float)) and math.isfinite(y)
            ]
            return f"[{shape} array{f', {min(flat):.4g}…{max(flat):.4g}' if flat else ''}]"
        return f"[{', '.join(fmt(x) or 'null' for x in v[:n])}{f', … ({len(v)})' if len(v) > n else ''}]"
    if isinstance(v, dict):
        items = list(v.items())
        return "{" + ", ".join(f"{k}: {fmt(x)}" for k, x in items[:4]) + (", …" if len(items) > 4 else "") + "}"
    return str(v)


def claim_key(c: str | None) -> tuple:
    """Claims in the registry's natural id order; a record of none last."""
    return (c is None, claim_order(c or ""))


def claim_texts() -> dict:
    """One line per claim, from the claim registry."""
    return {c.id: c.statement for c in CLAIMS.values()}


def synthetic_sets(records) -> list[str]:
    """The synthetic sets (synthetic-<size>-<arch>) the records ran on, in their order: models trained here, which a
    run's ``models`` (the models it loaded) does not list."""
    targets = (r.target for r in records)
    return list(dict.fromkeys(t.name for t in targets if t.kind == TargetKind.SYNTHETIC))


#: The size at which the related paper trained its models: a synthetic set's verdict at any other size says so.
PAPER_SIZE = "paper"


def set_size(label: str) -> str | None:
    """The size of a synthetic set (``synthetic-<size>-<arch>``), None for anything else."""
    if not label.startswith("synthetic-"):
        return None
    size = label.removeprefix("synthetic-").partition("-")[0]
    return size if size in SIZES else None


def set_shape(label: str) -> str:
    """A synthetic set named with what it is: "synthetic-pilot-authors (pilot size: d_model 64, 4 heads, ...)"."""
    size = set_size(label)
    return label if size is None else f"{label} ({size} size: {describe(size)})"


def size_note(r: ClaimResult) -> str:
    """ "at pilot size, 4 heads: " before a verdict on a synthetic set at a size other than the paper's (a rehearsal
    on the smoke set gives none); "" otherwise."""
    size = set_size(r.target.label)
    if size is None or size == PAPER_SIZE or r.shown == Verdict.REHEARSED:
        return ""
    return f"at {size} size, {SIZES[size].shape.heads} heads: "


#: An n/a whose reason opens with these words is a prediction another check already makes true (a claim whose every
#: tested cell is fixed by an equation): its cell reads the reason up to its colon ("implied by" and the check), not
#: "not applicable", which would say the paper's prediction is for other models.
IMPLIED = "implied by "


def verdict_label(r: ClaimResult) -> str:
    """The verdict's label in a cell: its ``Verdict.label`` (after ``size_note``'s words on a synthetic set at another
    size than the paper's), or for an n/a implied by another check, the words that say by which (the reason up to its
    colon)."""
    verdict, reason = r.shown, r.reason
    if verdict == Verdict.NOT_APPLICABLE and reason.startswith(IMPLIED) and ":" in reason:
        return reason.split(":", 1)[0]
    return size_note(r) + verdict.label


def marked(r: ClaimResult) -> str:
    """The verdict's label in a report cell with its ``badge``, the change in bold: "not held · **changed since the
    record**"; a verdict that repeats its record carries no mark."""
    return verdict_label(r) + (f" · **{CHANGED}**" if r.changed else r.badge)


def verdict_css(r: ClaimResult) -> str:
    """A verdict cell's css classes: the verdict's, and "changed" where it differs from its record."""
    return r.shown.css + " changed" * r.changed


def verdict_text(r: ClaimResult, with_reason: bool) -> str:
    verdict = r.shown
    v = marked(r)
    reason = " ".join(r.reason.split())
    if verdict == Verdict.UNSTABLE:
        reason = f"{r.unstable}; this run: {r.verdict.value}" + (f": {reason}" if reason else "")
    return f"{v}: {reason[:300]}" if with_reason and reason and verdict != Verdict.HELD else v


def _one(figures, name: str, column: int | None) -> str:
    f = next((f for f in figures if f.get("name") == name), None)
    if f is None:
        return ""
    value, ci = f.get("value"), f.get("ci")
    if column is not None and isinstance(value, list):
        return ", ".join(fmt(row[column]) for row in value if isinstance(row, list) and len(row) > column)
    scalar_ci = isinstance(ci, list) and len(ci) == 2 and all(isinstance(x, (int, float)) for x in ci)
    return fmt(value) + (f" [{fmt(float(ci[0]))}, {fmt(float(ci[1]))}]" if scalar_ci else "")


def measured(r: ClaimResult, figures: tuple[str, ...], column: int | None = None) -> str:
    """A test's headline figures as "value [lo, hi]" (95% CI), named when there are several ("" when absent);
    for a figure of rows, one column of them ("0.25, 0.31, 0.27")."""
    shown = [(n, _one(r.figures, n, column if i == 0 else None)) for i, n in enumerate(figures)]
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


def deciding(r: ClaimResult) -> dict | None:
    """The decision that gave a record its verdict (the one whose margin is the record's), or None when no rule
    decided it (a mechanism check, not applicable, a harness error)."""
    return decision_at(r.margin, r.decisions)


def decision_at(margin: float | None, decisions) -> dict | None:
    """The decision whose margin is ``margin`` (the deciding one), None when no rule decided (``margin`` None)."""
    return next((d for d in decisions or () if margin is not None and d.get("margin") == margin), None)


def deciding_text(r: ClaimResult) -> str:
    """The deciding figure against its threshold in a few words: "0.187 [0.156, 0.252] < 0.46 (reduced)"."""
    d = deciding(r)
    if d is None:
        return ""
    check = (d.get("check") or "").partition(": ")[2]
    return f"{fmt(d.get('estimate'))}{interval_text(d)} vs {d.get('criterion')}" + (f" ({check})" if check else "")


def interval_text(d: dict) -> str:
    """A decision's interval as a cell shows it after its estimate: " [lo, hi]", or " (point estimate)"."""
    interval = d.get("interval")
    return f" [{fmt(interval[0])}, {fmt(interval[1])}]" if interval else " (point estimate)"


def figure_judged(figures, estimate: float, first: tuple[str, ...] = ()) -> str | None:
    """The name of the scalar figure (of a record's ``figures``) a decision's estimate is (the figures named in
    ``first`` tried first), None when none is: a decision carries its estimate, not the figure's name."""
    figures = sorted(figures or (), key=lambda f: f.get("name") not in first)
    return next((f["name"] for f in figures if _same(f.get("value"), estimate)), None)


def headline_cell(r: ClaimResult, headline: tuple[str, ...], column: int | None = None) -> str:
    """A test's one headline in words: the figure its deciding criterion judged (matched by value), else its first
    headline figure, as "words (unit): value [lo, hi]"; a criterion on a statistic kept as no figure shows the
    decision's own estimate under the check's name."""
    return headline_of(r.figures, deciding(r), headline, column, r.claim)


def headline_of(figures, d: dict | None, headline: tuple[str, ...], column: int | None = None, claim: str = "") -> str:
    """``headline_cell`` of a test's ``figures`` and its deciding decision ``d`` (None: no rule decided it), its
    figure worded as ``claim`` declares it."""
    name = None
    if d is not None and isinstance(d.get("estimate"), (int, float)):
        name = figure_judged(figures, d["estimate"], first=headline)
        if name is None:
            return f"{(d.get('check') or '').partition(': ')[2]}: {fmt(d['estimate'])}{interval_text(d)}"
    name = name or (headline[0] if headline else None)
    value = _one(figures, name, column if headline and name == headline[0] else None) if name else ""
    return f"{figure_words(name, claim)}: {value}" if value else ""


def _same(value, estimate: float) -> bool:
    return (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and math.isclose(value, estimate, rel_tol=1e-9, abs_tol=1e-15)
    )


def claim_test_of(r: ClaimResult):
    """The registry's entry for a record's test (``claims.ClaimTest``), None for a test of no registered claim."""
    return claim_test(r.function) if r.claim in CLAIMS else None


def is_property_check(r: ClaimResult) -> bool:
    """A test of a property the paper derives (its equations), decided by construction with no figure: its claim
    test declares no headline figure."""
    c = claim_test_of(r)
    return c is not None and not c.headline


def fold_property_checks(
    records: list, check=is_property_check, label=lambda r: r.target.label
) -> tuple[list, dict[str, list]]:
    """(the records shown one per row, {model: its property checks} for each model whose property checks all
    held: those read as one row; a model with one that did not hold keeps every one of them in its own row).
    ``check`` and ``label``: a record's (``is_property_check``, its target's label), or a ``Cells``' own."""
    by_model: dict[str, list] = {}
    for r in records:
        if check(r):
            by_model.setdefault(label(r), []).append(r)
    folded = {m: rs for m, rs in by_model.items() if all(r.shown == Verdict.HELD for r in rs)}
    return [r for r in records if not (check(r) and label(r) in folded)], folded


def property_checks_text(checks: list) -> str:
    """A folded row's words: "3 checks of the paper's equations (A2, A3, A7), all held"."""
    ids = ", ".join(dict.fromkeys(r.claim for r in checks))
    return f"{len(checks)} check{'s' * (len(checks) != 1)} of the paper's equations ({ids}), all held"


# words a test's function name spells in lower case, as a reader writes them
_SPELLED = {
    "rope": "RoPE",
    "bos": "BOS",
    "mlp": "MLP",
    "fdr": "FDR",
    "rank1": "rank-1",
    "position0": "position 0",
    "top30": "top-30",
    "token0": "token 0",
}


def test_words(test: str, claim_id: str) -> str:
    """A claim test's name as a short phrase: "test_B6_rope_ablations_raise_leakage_alike" -> "RoPE ablations raise
    leakage alike"."""
    rest = test.removeprefix("test_").removeprefix(f"{claim_id}_")
    return " ".join(_SPELLED.get(w, w) for w in rest.split("_"))


def headline_text(r: ClaimResult) -> str:
    """A record's one headline in words where no criterion decided it (a count, an exact check), else the first
    words of its reason: what the terminal's line for it shows."""
    c = claim_test_of(r)
    shown = headline_cell(r, c.headline, c.column) if c else ""
    reason = " ".join(r.reason.split())
    return shown or (reason[:90] + "…" if len(reason) > 90 else reason)


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


def figure_rows(r: ClaimResult) -> tuple[tuple[str, str, str, str], ...]:
    """Each recorded figure as a row of a claim's table: (its words with its name and note, paper, measured, CI);
    a record of none, one empty row."""
    rows = []
    for f in r.figures or ({},):
        words = figure_words(f.get("name", ""), r.claim)
        name = words + (f" — `{f['name']}`" if words != f.get("name", "") else "")
        name += f" ({f['note']})" if f.get("note") else ""
        rows.append((name, fmt(f.get("paper")), fmt(f.get("value")), fmt(f.get("ci"))))
    return tuple(rows)
