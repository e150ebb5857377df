"""The verdicts of a claims run as a notebook reads them: ``Verdicts``, one plain record per claim test and model.

    >>> v = Verdicts.load("reports/latest")     # a finished run (or: v = verify(...))
    >>> v                                        # one line: the totals, and what to call next
    >>> v.not_held()                             # a Verdicts, shown as a table in a notebook
    >>> v.to_pandas()                            # one row per figure (pandas: pip install -e ".[notebook]")
    >>> v.show("<claim id>")                     # the claim's plots, inline
    >>> v.compare("reports/example").to_pandas() # what changed against another run: one row per figure

pandas and IPython are imported by the methods that need them, never by this module: ``import harness`` and the
command line stay light.
"""

from __future__ import annotations

import html
import json
import re
import sys
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence
from urllib.parse import unquote

from harness.outcome.claim_result import ClaimResult, TargetKind
from harness.outcome.results import RunResult, load_run, loaded
from harness.outcome.verdict import CHANGED, Verdict
from harness.report import frame
from harness.report.matrix import TOTALS
from harness.report.record_text import claim_key, decision_at, headline_of
from harness.report.render import md_escape, to_markdown
from harness.spec.claims import claim, claim_test

PANDAS_MISSING = 'pandas is not installed: pip install -e ".[notebook]"'


def headline(test: str, figures: list) -> dict:
    """The test's headline figure(s), {name: value}, as the report picks them (``claims.ClaimTest.headline``)."""
    c = claim_test(test)
    values = {f["name"]: f.get("value") for f in figures}
    return {n: values[n] for n in (c.headline if c else ()) if n in values}


def verdict_record(r: ClaimResult | Mapping[str, Any]) -> dict:
    """One plain record of a results.json record: claim, test (function name), model, verdict (its ``Verdict``
    value: "held", "not held", "n/a", ..., nothing folded in), recorded (a known outcome records this verdict),
    changed (it differs from its record), unrecorded (its model has no recorded outcomes), verdict_words (as a report
    words it: "not held · changed since the record"), reason, headline,
    figures (the record's figure list: name, value, paper, ci, note), margin (the deciding criterion's, None where no
    criterion decided it) and decisions (every criterion the one rule decided: check, verdict, estimate, interval,
    criterion, margin, prompts_to_decide)."""
    r = loaded(r)
    test, figures = r.function, list(r.figures)
    return {
        "claim": r.claim,
        "test": test,
        "model": r.target.label,
        "verdict": r.shown.value,
        "recorded": r.known_outcome,
        "changed": r.changed,
        "unrecorded": r.unrecorded,
        "verdict_words": r.shown.label + r.badge,
        "reason": r.reason,
        "headline": headline(test, figures),
        "figures": figures,
        "margin": r.margin,
        "decisions": list(r.decisions),
    }


def headline_text(rec: dict) -> str:
    """The headline as the report's lead table shows it ("words (unit): value [lo, hi]")."""
    c = claim_test(rec["test"])
    decided = decision_at(rec.get("margin"), rec.get("decisions"))
    return headline_of(
        rec.get("figures"),
        decided,
        c.headline if c else tuple(rec["headline"]),
        c.column if c else None,
        rec.get("claim") or "",
    )


def aligned(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A plain-text table, columns padded to their widest cell."""
    widths = [max(len(str(c)) for c in col) for col in zip(header, *rows)]
    return "\n".join("  ".join(str(c).ljust(w) for c, w in zip(row, widths)).rstrip() for row in [header, *rows])


def run_results(path: str | Path) -> Path:
    """The results.json a path names: the file itself, the one in a run folder, or the latest run's of a report
    folder (``<folder>/latest``); anything else raises ``FileNotFoundError`` with one line saying what to give."""
    p = Path(path)
    for candidate in (p, p / "results.json", p / "latest" / "results.json"):
        if candidate.is_file():
            return candidate.resolve()  # through `latest`: the run folder it points at, where its figures are
    what = "no such file or folder" if not p.exists() else "no results.json in it, nor a latest run"
    raise FileNotFoundError(f"{p}: {what}; give a run folder, its results.json, or a report folder holding `latest`")


scalar_pair = frame.scalar_pair
DECISION_COLUMNS = ("claim", "test", "model", "check", "verdict", "estimate", "interval_low", "interval_high")


def decision_rows(records: Iterable[dict]) -> list[tuple]:
    """One row per decision: ``DECISION_COLUMNS`` then criterion, margin, prompts_to_decide and whether it is the
    deciding one."""
    rows = []
    for v in records:
        decided_by = decision_at(v.get("margin"), v.get("decisions"))
        for d in v.get("decisions") or ():
            low, high = scalar_pair(d.get("interval"))
            rows.append(
                (v["claim"], v["test"], v["model"], d.get("check"), d.get("verdict"), d.get("estimate"), low, high)
                + (d.get("criterion"), d.get("margin"), d.get("prompts_to_decide"), d is decided_by)
            )
    return rows


IMAGE = re.compile(r"!\[((?:\\.|[^\]\\])*)\]\(([^)\s]+)\)")


def figure_titles(report: Path | None) -> dict[str, str]:
    """{figure file name: its title} from the report's image links (the titles the report shows them under), as text:
    unescaped, so whatever shows it escapes it again for its own renderer (``Verdicts.show``: ``md_escape``)."""
    try:
        text = report.read_text() if report is not None else ""
    except OSError:
        return {}
    return {Path(unquote(href)).name: html.unescape(re.sub(r"\\(.)", r"\1", alt)) for alt, href in IMAGE.findall(text)}


def figure_files(folder: Path, claim_id: str) -> list[Path]:
    """A claim's plots in a run folder: figures/<claim>_*.png (the report names each plot after its claim id, then
    the plot kind and, for a per-model plot, the model), in the report's order where it links them."""
    files = sorted((folder / "figures").glob(f"{claim_id}_*.png"))
    titles = list(figure_titles(folder / "report.md"))
    return sorted(files, key=lambda p: titles.index(p.name) if p.name in titles else len(titles))


def models_of(records: Iterable[dict], kinds: dict[str, TargetKind], order: Sequence[str]) -> list[str]:
    """The models the records ran on (``kinds``: each record's target kind by its label; a model or a synthetic set,
    not a family or no model), in the run's order."""
    seen = dict.fromkeys(m for m in (v["model"] for v in records) if kinds.get(m) in MODELS)
    rank = {m: i for i, m in enumerate(order)}
    return sorted(seen, key=lambda m: rank.get(m, len(rank)))


def counted(records: Iterable[dict]) -> str:
    """ "a held · b not held · ... · c changed since the record" in the report's totals wording, the verdicts
    present only (and the changes where there are any)."""
    counts: dict[Verdict, int] = {}
    moved = 0
    for r in records:
        counts[Verdict(r["verdict"])] = counts.get(Verdict(r["verdict"]), 0) + 1
        moved += bool(r.get("changed"))
    shown = [f"{counts[v]} {words}" for v, words in TOTALS.items() if counts.get(v)]
    return " · ".join(shown + ([f"{moved} {CHANGED}"] if moved else []))


TABLE = ("claim", "test", "model", "verdict", "headline")
MODELS = (TargetKind.MODEL, TargetKind.SYNTHETIC)  # the targets a repr counts as models
MODELS_NAMED = 4  # a repr names at most this many models, then "+N more"


class Verdicts(list):
    """The verdicts of a claims run: one plain dict per claim test and model (``verdict_record``), in claim order.
    ``results`` is the whole results.json; ``report`` the path of its report.md (None when there is none); ``folder``
    the run folder, where ``show`` finds the plots (None for verdicts read from no folder); ``kinds`` each model
    label's target kind (``TargetKind``)."""

    def __init__(
        self,
        records: Iterable[dict] = (),
        results: dict | None = None,
        report: Path | None = None,
        folder: Path | None = None,
        kinds: dict[str, TargetKind] | None = None,
    ):
        super().__init__(records)
        self.results, self.report = results if results is not None else {}, report
        self.folder = folder if folder is not None else report.parent if report is not None else None
        self.kinds = kinds if kinds is not None else {}
        self.run: RunResult | None = None  # the run loaded (``from_results``): what ``compare`` compares

    @classmethod
    def from_results(
        cls, results: RunResult | dict, report: Path | None = None, folder: Path | None = None
    ) -> Verdicts:
        """The verdicts of a loaded run (``load_run``; a results.json dict is loaded here)."""
        run = results if isinstance(results, RunResult) else RunResult.of(results)
        records = sorted(map(verdict_record, run.records), key=lambda v: (claim_key(v["claim"]), v["test"], v["model"]))
        out = cls(records, dict(run.file), report, folder, {r.target.label: r.target.kind for r in run.records})
        out.run = run
        return out

    @classmethod
    def load(cls, path: str | Path) -> Verdicts:
        """A finished run's verdicts: ``path`` a run folder, its results.json, or a report folder holding ``latest``
        (``FileNotFoundError`` for anything else; ``ResultsFileError`` for a results.json that is not a claims run)."""
        results_file = run_results(path)
        report = results_file.parent / "report.md"
        return cls.from_results(load_run(results_file), report if report.is_file() else None, results_file.parent)

    def _like(self, records: Iterable[dict]) -> Verdicts:
        out = Verdicts(records, self.results, self.report, self.folder, self.kinds)
        out.run = self.run
        return out

    def compare(self, before: str | Path | Verdicts, **kw) -> Comparison:
        """What changed from ``before`` (another run: its folder, results.json, a folder holding ``latest``, or its
        ``Verdicts``) to this run: ``compare(before, self, **kw)``."""
        return compare(before, self, **kw)

    def held(self) -> Verdicts:
        return self._like(v for v in self if v["verdict"] == Verdict.HELD)

    def not_held(self) -> Verdicts:
        return self._like(v for v in self if v["verdict"] == Verdict.NOT_HELD)

    def by_model(self) -> dict[str, Verdicts]:
        out: dict[str, Verdicts] = {}
        for v in self:
            out.setdefault(v["model"], self._like([])).append(v)
        return out

    def rows(self) -> list[list[str]]:
        return [[v["claim"], v["test"], v["model"], v["verdict_words"], headline_text(v)] for v in self]

    def table(self) -> str:
        return aligned(TABLE, self.rows())

    def _repr_markdown_(self) -> str:
        return to_markdown([("table", list(TABLE), self.rows())], Path("."))

    def __repr__(self) -> str:
        if not self:
            return "Verdicts: no tests"
        models = models_of(self, self.kinds, self.results.get("models") or ())
        more = len(models) - MODELS_NAMED
        named = ", ".join(models[:MODELS_NAMED]) + (f", +{more} more" if more > 0 else "")
        on = f" on {len(models)} model{'s' * (len(models) != 1)} ({named})" if models else ""
        tests = f"{len(self)} test{'s' * (len(self) != 1)}"
        return f"Verdicts: {tests}{on} — {counted(self)}; {self._calls()}"

    def _calls(self) -> str:
        """What to call next, ``show`` with a claim that has plots in this run (a not-held one first)."""
        claims = dict.fromkeys(v["claim"] for v in sorted(self, key=lambda v: v["verdict"] != Verdict.NOT_HELD))
        plotted = (c for c in claims if self.folder is not None and figure_files(self.folder, c))
        example = next(plotted, None)
        return ".table(), .to_pandas()" + (f', .show("{example}")' if example else "")

    def to_pandas(self, decisions: bool = False) -> Any:
        """A tidy pandas DataFrame (``harness.report.frame``): one row per (claim test, model, figure), a test without
        figures one row (figure "") — claim, test, model, verdict (the one vocabulary: ``df[df.verdict == "not
        held"]`` is every not held), recorded, changed, unrecorded (bools), figure, value (a number, NaN for a
        vector), values (a vector or table figure), ci_low, ci_high (a scalar figure's interval), paper, paper_model
        (the registry's number for the figure and the paper model it is for), paper_words (the report's paper cell),
        deciding (the figure the deciding criterion judged), criterion and margin (that criterion's, on its row
        only), reason. ``decisions=True``: one row per decision of the rule instead — claim, test, model, check,
        verdict, estimate, interval_low, interval_high, criterion, margin, prompts_to_decide, deciding."""
        try:
            import pandas as pd
        except ImportError:
            raise ImportError(PANDAS_MISSING) from None
        if decisions:
            columns = [*DECISION_COLUMNS, "criterion", "margin", "prompts_to_decide", "deciding"]
            return pd.DataFrame(decision_rows(self), columns=columns)
        return pd.DataFrame(frame.rows(self), columns=list(frame.COLUMNS))

    def to_csv(self, path: str | Path, decisions: bool = False) -> Path:
        """``to_pandas(decisions)`` written as CSV (a vector figure's ``values`` as JSON text); returns the path."""
        df = self.to_pandas(decisions)
        if "values" in df:
            df["values"] = [None if x is None else json.dumps(x) for x in df["values"]]
        df.to_csv(path, index=False)
        return Path(path)

    def to_json(self, path: str | Path | None = None) -> str:
        """The rows of ``to_pandas()`` as a JSON array of objects (NaN as null), written to ``path`` when given; no
        pandas needed. Returns the text."""
        text = frame.to_json_text(frame.rows(self))
        if path is not None:
            Path(path).write_text(text)
        return text

    def show(self, claim_id: str) -> list[Path]:
        """The plots of a claim in this run, shown inline (each under its title) when run in IPython; returns their
        paths. An unknown id raises ``UnknownClaim`` (with its did-you-mean); a claim without plots here prints one
        line and returns []."""
        cid = claim(claim_id).id
        paths = figure_files(self.folder, cid) if self.folder is not None else []
        if not paths:
            where = f"in {self.folder}" if self.folder is not None else "(no run folder: load a run with Verdicts.load)"
            print(f"{cid}: no plots {where}; its figures are in .to_pandas() and the records")
            return []
        ipython = sys.modules.get("IPython")  # imported by the shell itself when there is one
        if ipython is not None and ipython.get_ipython() is not None:
            try:
                from IPython.display import Image, Markdown, display
            except ImportError:  # an IPython without its display module: the paths alone
                return paths
            titles = figure_titles(paths[0].parent.parent / "report.md")
            for p in paths:  # a title is text (a model's name may hold anything): escaped, as the report shows it
                title = md_escape(titles.get(p.name, p.stem.replace("_", " ")))
                display(Markdown(f"**{title}**"), Image(filename=str(p)))
        return paths


def loaded_run(run: str | Path | Verdicts) -> RunResult:
    """A run as ``compare`` takes it: a ``Verdicts``' own (or its folder's), else the run a path names."""
    if isinstance(run, Verdicts):
        if run.run is not None:
            return run.run
        if run.folder is None:
            raise FileNotFoundError("these verdicts were read from no run folder: compare runs by their folders")
        run = run.folder
    return load_run(run_results(run))


class Comparison(list):
    """Two runs compared, as tidy rows (``harness.report.frame.comparison_rows``): one plain dict per (claim test,
    target, figure) of either run, changed or not — claim, test, model, figure, verdict_before, verdict_after,
    verdict_changed, value_before, value_after (numbers, NaN for a figure that is not one), values_before,
    values_after (such a figure as recorded), relative, changed (the verdict differs or the figure moved beyond the
    compare's tolerance), change (how, in words; "" unchanged)."""

    def changed(self) -> Comparison:
        return Comparison(row for row in self if row["changed"])

    def to_pandas(self) -> Any:
        try:
            import pandas as pd
        except ImportError:
            raise ImportError(PANDAS_MISSING) from None
        return pd.DataFrame(list(self), columns=list(frame.COMPARISON_COLUMNS))

    def to_csv(self, path: str | Path) -> Path:
        """The rows as CSV (no pandas needed; a vector figure as JSON text); returns the path."""
        return frame.write_csv(list(self), path, frame.COMPARISON_COLUMNS)

    def to_json(self, path: str | Path | None = None) -> str:
        """The rows as a JSON array of objects (NaN as null), written to ``path`` when given; returns the text."""
        text = frame.to_json_text(list(self))
        if path is not None:
            Path(path).write_text(text)
        return text

    def __repr__(self) -> str:
        changed = sum(row["changed"] for row in self)
        return f"Comparison: {len(self)} rows, {changed} changed; .changed(), .to_pandas(), .to_csv(path)"


def compare(
    before: str | Path | Verdicts,
    after: str | Path | Verdicts,
    rtol: float | None = None,
    atol: float | None = None,
    models: list[str] | None = None,
    claims: list[str] | None = None,
) -> Comparison:
    """Two runs compared (``python -m harness.report compare BEFORE AFTER --csv``'s rows): each a run folder, its
    results.json, a folder holding ``latest``, or a ``Verdicts``; ``models``/``claims`` restrict both, as the command's
    options do (SelectionError for a name in neither)."""
    from harness.report.compare import selected

    runs = [loaded_run(r) for r in (before, after)]
    return Comparison(frame.comparison_rows(*selected(runs[0], runs[1], models, claims), rtol, atol))
