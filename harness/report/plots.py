"""The report's figures: a small registry of plot kinds, and every figure a run's records support, written.

A claim's declaration says how its figures are drawn. Each ``FigureSpec`` names its plot kind and its role in it
(``plot="kind"`` for the plotted series, ``"kind.role"`` for the rest); the claim's ``plots=`` gives a kind its
caption and options (``PlotSpec``) and, for a kind that serves that claim alone, its drawing: ``draw=
"<module>.<function>"`` names a function in a module beside the declaration (``claims/<section>_plots.py``), as
lm-evaluation-harness's ``!function`` names a task's own code. The generic kinds, which any claim may use, are
``GENERIC`` (harness/report/plot_kinds.py). A kind is a function of a ``PlotInput`` returning its ``Drawing``s
(harness/report/plot_style.py); this module writes them, one PNG each, named ``<claim>_<name>[_<model>].png``, the
run-wide summary figure (harness/report/summary_plot.py) first.
"""

from __future__ import annotations

import re
import warnings
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from harness.outcome.claim_result import ClaimResult, TargetKind
from harness.outcome.results import RunResult, loaded
from harness.report import plot_kinds
from harness.report.plot_style import Drawing, Plot, PlotInput, save
from harness.report.summary_plot import write_summary
from harness.spec import catalogue
from harness.spec.claims import CLAIMS, ClaimSpec, PlotSpec, UndeclaredFigure

Kind = Callable[[PlotInput], Iterable[Drawing]]

#: The kinds any claim may name, by name.
GENERIC: dict[str, Kind] = {
    "layer_profile": plot_kinds.layer_profile,
    "head_map": plot_kinds.head_map,
    "ablation_bars": plot_kinds.ablation_bars,
}
#: A generic kind's caption after the claim's id where neither its drawing nor the declaration gives one.
CAPTIONS = {
    "ablation_bars": "ablations",
    "head_map": "relative change of the read-out when each head is zeroed alone",
}

#: The run-wide summary figure (harness/report/summary_plot.py): its file and the report's caption for it.
SUMMARY_PNG = "summary_margins.png"
SUMMARY_TITLE = (
    "Every decision of the run: its estimate and 95% CI against its threshold, coloured by verdict "
    "(one-sided criteria as the distance past the threshold, equivalences as the position in their band)"
)


class UnknownKind(LookupError):
    """A declaration names a plot kind that is neither generic nor drawn by a function of its own."""


def plot_spec(claim: str, kind: str) -> PlotSpec | None:
    """What a claim's declaration says of one plot kind (its caption, options and drawing), or None."""
    spec = CLAIMS.get(claim)
    return spec.plots.get(kind) if spec is not None else None


def claim_function(spec: ClaimSpec, ref: str) -> Callable[..., Any]:
    """The function ``<module>.<function>`` of the module beside a claim's declaration (``claims/<module>.py``),
    imported once; UnknownKind naming the declaration when there is no such module or function."""
    module, _, name = ref.rpartition(".")
    source = Path(spec.source)
    folder = (source if source.is_absolute() else catalogue.DEFAULT_DIR.parent / source).parent
    path = folder / f"{module}.py"
    if not (module and name and path.is_file()):
        raise UnknownKind(f"{spec.source}: {spec.id}'s draw={ref!r} names no function of a {path.name} beside it")
    loaded_module = catalogue.claims_module(path)
    fn = getattr(loaded_module, name, None)
    if not callable(fn):
        raise UnknownKind(f"{spec.source}: {spec.id}'s draw={ref!r}: {path.name} has no function {name}")
    return fn


def kind_function(claim: str, kind: str) -> Kind:
    """How one claim draws one kind: its declaration's own ``draw=``, else the generic kind of that name."""
    spec = CLAIMS.get(claim)
    own = plot_spec(claim, kind)
    if spec is not None and own is not None and own.draw:
        return claim_function(spec, own.draw)
    if kind in GENERIC:
        return GENERIC[kind]
    raise UnknownKind(
        f"{claim}: plot kind {kind!r} is not generic ({', '.join(GENERIC)}) and its declaration draws none"
    )


def plot_roles(claim: str, names: Iterable[str]) -> dict[str, dict[str, list[str]]]:
    """{plot kind: {role: [figure names]}} for the recorded figure names of one claim (recorded order kept); figures
    undeclared in the registry (a results.json of another version) are not plotted."""
    spec = CLAIMS.get(claim)
    out: dict = defaultdict(lambda: defaultdict(list))
    for name in names:
        try:
            plot = spec.figure(name).plot if spec is not None else None
        except UndeclaredFigure:
            continue
        if plot:
            kind, _, role = plot.partition(".")
            out[kind][role].append(name)
    return out


def figures_by_claim(records: Iterable[ClaimResult | Mapping]) -> dict[str, dict[str, dict[str, dict]]]:
    """{claim: {model ("-" for none): {figure name: figure dict}}}, the first record of a name winning."""
    by_claim: dict = defaultdict(lambda: defaultdict(dict))
    for r in map(loaded, records):
        for f in r.figures:
            if isinstance(f, dict) and "name" in f:
                target = r.target.name if r.target.kind in (TargetKind.MODEL, TargetKind.SYNTHETIC) else "-"
                by_claim[r.claim][target].setdefault(f["name"], f)
    return by_claim


def claim_inputs(claim: str, by_model: dict, records: tuple[ClaimResult, ...]) -> dict[str, PlotInput]:
    """What each of a claim's plot kinds draws from: the kinds its recorded figures fill, then those its declaration
    draws with a function of its own (reading figures its options name)."""
    kinds = plot_roles(claim, dict.fromkeys(n for figs in by_model.values() for n in figs))
    spec = CLAIMS.get(claim)
    own = [k for k, p in (spec.plots.items() if spec is not None else ()) if p.draw and k not in kinds]
    return {
        kind: PlotInput(claim, by_model, dict(kinds.get(kind, {})), records, plot_spec(claim, kind) or PlotSpec())
        for kind in (*kinds, *own)
    }


def _slug(*parts: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", "_".join(parts)) + ".png"


def make_all(run: RunResult, fig_dir: Path, stop=None) -> list[Plot]:
    """Every plot the run's figures support, written into fig_dir (stale PNGs there are removed), the summary of
    every decision first. A figure draws no title of its own: the report captions it with the Plot's title. ``stop``
    (a run's ``Interrupts.check``) is called before each plot: a stop signal ends the drawing there, between figures.
    A kind that fails on malformed figures is skipped with a warning, never costing the rest of the report."""
    records = run.records
    d = Path(fig_dir)
    for stale in d.glob("*.png"):
        stale.unlink()
    stop = stop or (lambda: None)
    stop()
    plots = [Plot(None, None, SUMMARY_TITLE, p)] if (p := _written(write_summary, run, d / SUMMARY_PNG)) else []
    by_records: dict[str, list[ClaimResult]] = defaultdict(list)
    for r in records:
        by_records[r.claim].append(r)
    for claim, by_model in figures_by_claim(records).items():
        for kind, plot in claim_inputs(claim, by_model, tuple(by_records[claim])).items():
            drawings = _drawings(claim, kind, plot)
            while True:
                stop()  # (raises KeyboardInterrupt, which _next lets through)
                drawing = _next(drawings, claim, kind)
                if drawing is None:
                    break
                if drawing.figure is None:
                    continue
                what = drawing.what or plot.spec.caption or CAPTIONS.get(kind, kind)
                name = _slug(claim, drawing.name or kind, *([drawing.model] if drawing.model else []))
                caption = f"{claim} — {what}" + (f" — {drawing.model}" if drawing.model else "")
                path = save(drawing.figure, d / name)
                plots.append(Plot(claim, drawing.model, caption, path, tuple(plot.spec.shown_with.items())))
    return plots


def _written(fn, *args) -> Path | None:
    try:
        return fn(*args)
    except Exception as e:  # a malformed record must never cost the rest of the report
        warnings.warn(f"plot {fn.__name__} skipped: {e!r}", stacklevel=2)
        return None


def _drawings(claim: str, kind: str, plot: PlotInput):
    try:
        return iter(kind_function(claim, kind)(plot))
    except Exception as e:
        warnings.warn(f"plot {kind} for {claim} skipped: {e!r}", stacklevel=3)
        return iter(())


def _next(drawings, claim: str, kind: str) -> Drawing | None:
    """The kind's next drawing, None when it has drawn all (or failed: a warning says so)."""
    try:
        return next(drawings, None)
    except Exception as e:
        warnings.warn(f"plot {kind} for {claim} skipped: {e!r}", stacklevel=3)
        return None
