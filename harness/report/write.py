"""A run's folder: results.json (every measured figure with its context), then the reports built from it:
report.md, a self-contained report.html, summary.md, methods.* and figures/*.png, one way: results.json loaded
(harness.outcome.results), its figures drawn (harness.report.plots), its records worded once (harness.report.cells),
the pages assembled from those words (harness.report.document), rendered (harness.report.render) and written, each
file atomically (harness.files.atomic).
"""

from __future__ import annotations

import contextlib
import errno
import json
import secrets
import sys
import tempfile
import warnings
from contextvars import ContextVar
from pathlib import Path
from typing import Callable

from harness.files.atomic import point_link, write_text
from harness.outcome.results import load_run, results_file
from harness.report import document, methods_page, provenance
from harness.report.cells import run_cells
from harness.report.render import to_html, to_markdown


def write_run(
    report_dir: Path,
    run_id: str,
    records: list,
    settings,
    models: list,
    selection: list[str] | None = None,
    interrupted: dict | None = None,
    stops=None,
) -> Path | None:
    """Write the run into a folder of its own, ``report_dir/run_id`` (made here, never shared: a name taken by
    another run gets a suffix), results.json first (nothing measured is lost: an unwritable or full directory falls
    back to a temporary one, said in one line), then the reports built from it; every file is written atomically
    (harness.files.atomic), and ``latest`` is moved to the run, atomically, only once both are complete. ``interrupted``
    ({"by", "not_run"}) marks a run that ended before every selected test ran. ``stops`` (``harness.run.signals.
    Interrupts``, or None) is how a stop signal reaches this: all of it runs inside its ``deferred()`` block, so a stop
    never raises in the middle of it; one that came once the run's end had begun (``deferred_by``) is acted on at the
    next checkpoint (``Interrupts.check``: before the report, before each figure, before its files are written) and
    leaves the report unbuilt, said in one line naming the kept results (a stop that ended the tests early does not:
    that run is reported as interrupted). Returns the run's folder (None: the results could be written nowhere, said in
    one line)."""
    with stops.deferred() if stops is not None else contextlib.nullcontext():
        stop = stops.check if stops is not None else None
        return _write_run(report_dir, run_id, records, settings, models, selection, interrupted, stop)


def _write_run(report_dir, run_id, records, settings, models, selection, interrupted, stop) -> Path | None:
    results = {
        "run": run_id,
        "settings": settings.as_dict(),
        "models": models,
        "versions": provenance.versions(),
        "provenance": _provenance(models, selection),
        **({"interrupted": interrupted} if interrupted else {}),
        "records": sorted(records, key=lambda r: (r["claim"], r["model"] or "", r["test"])),
    }
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
            print(
                f"abspos: could not write the results to {report_dir} ({e.strerror}) nor to a temporary folder "
                f"({again.strerror}); they are lost",
                file=sys.stderr,
            )
            return None
        print(f"abspos: could not write to {report_dir} ({e.strerror}); results are in {out}", file=sys.stderr)
        return out
    rebuild = f"build it with python -m harness.report build {out}"
    token = _STOP.set(stop)  # build's checkpoints (a build of this run's report, under whatever name it is called)
    try:
        build(out / "results.json")
    except KeyboardInterrupt as e:  # a stop signal (or Ctrl-C): the results are whole, the report is not written
        print(
            f"abspos: {str(e).strip() or 'interrupted'} before the report was written: no report; the results are "
            f"kept in {out / 'results.json'} ({rebuild})",
            file=sys.stderr,
        )
        return out
    except Exception as e:
        print(
            f"abspos: the report could not be built ({e if isinstance(e, OSError) else f'{type(e).__name__}: {e}'}); "
            f"results are in {out / 'results.json'}; rebuild with python -m harness.report build",
            file=sys.stderr,
        )
        return out  # `latest` stays on the last run whose report is complete
    finally:
        _STOP.reset(token)
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


def _provenance(models: list, selection) -> dict:
    try:
        return provenance.collect(models, selection)
    except Exception as e:
        return {"error": f"{type(e).__name__}: {e}"}


#: The checkpoint of the run whose report ``write_run`` is building (its ``Interrupts.check``), read by ``build``
_STOP: ContextVar[Callable[[], None] | None] = ContextVar("abspos_report_stop", default=None)


def build(results_path: Path, stop: Callable[[], None] | None = None) -> Path:
    """Write report.md, report.html, summary.md and figures/*.png next to results.json (given as the file or its run
    folder, checked by load_results before anything is written), with the "Merged from" section when the run was
    merged (harness.report.merge); returns report.md's path. ``stop`` (by default the checkpoint of the run
    ``write_run`` is ending: its ``Interrupts.check``) is called before each figure and once more before the three
    files are written, all or none: a stop it raises leaves no report."""
    stop = stop or _STOP.get() or (lambda: None)
    results_path = results_file(results_path)
    run = load_run(results_path)  # loaded once, typed: every reader below reads it
    base = results_path.parent
    stop()
    try:
        from harness.report.plots import make_all  # matplotlib: loaded only to draw

        plots = make_all(run, base / "figures", stop)
    except ImportError as e:  # no matplotlib: the tables alone
        warnings.warn(f"report figures skipped: {e}", stacklevel=2)
        plots = []
    cells = run_cells(run)  # every record's wording, once: the sections below read these alone
    page, links = methods_page.blocks(cells.claims), methods_page.links(cells.claims)  # the decisions its links open
    report, summary = document.pages(cells, plots, links)
    html = to_html(report)
    markdown = to_markdown(report, base)
    summary_md = to_markdown(summary, Path("."))
    methods_html, methods_md = to_html(page), to_markdown(page, base)
    stop()
    # each atomically: a full disk leaves no truncated report
    write_text(base / f"{methods_page.PAGE}.html", methods_html)
    write_text(base / f"{methods_page.PAGE}.md", methods_md)
    write_text(base / "report.html", html)
    write_text(base / "summary.md", summary_md)
    return write_text(base / "report.md", markdown)
