"""Writing to pytest's terminal from inside a run, past its output capture; and the end-of-run summary's lines,
each within a 100-column terminal."""

from __future__ import annotations

import re
import textwrap

from harness.outcome.results import loaded
from harness.outcome.verdict import Verdict
from harness.report.record_text import (
    claim_key,
    claim_test_of,
    deciding,
    fold_property_checks,
    headline_cell,
    interval_text,
    property_checks_text,
)
from harness.report.render import fmt


def terminal_writer(config):
    """Progress lines to pytest's terminal past its output capture, on a line of their own (after the test dots of
    the line in progress), so a long capture shows as it runs (xdist workers' output is not shown)."""
    state = {"status_line": False}  # is the terminal's current line one of ours (rewritten in place)?

    def write(text: str) -> None:
        capman = config.pluginmanager.getplugin("capturemanager")
        reporter = config.pluginmanager.getplugin("terminalreporter")  # registered after this plugin's configure
        if capman is None or reporter is None:
            return
        with capman.global_and_fixture_disabled():
            if reporter._tw.width_of_current_line and not state["status_line"]:
                reporter.write("\n")  # leave the line of test dots as it is
            reporter.write(text, flush=True)
        state["status_line"] = not text.endswith("\n")

    return write


# ---- the end-of-run summary, within a terminal's width ------------------------------------------------------------

WIDTH = 100  # the terminal every line of the summary fits (a longer line wraps, indented)

#: A verdict's words in a per-test line, where its report label is longer than a column should be.
SHORT = {
    **{v: v.value for v in (Verdict.UNSTABLE, Verdict.HARNESS_ERROR, Verdict.REHEARSED)},
    Verdict.STALE: Verdict.HELD.label,  # and marked changed: its record says otherwise
}


#: How pytest's last line counts a claim test whose recorded verdict pytest would call "xfailed".
COUNTED = {v: v.counted for v in (Verdict.UNSTABLE, Verdict.INCONCLUSIVE, Verdict.NOT_HELD)}


_KEEP = "\x00"  # a space no line breaks at (``together``), written as a space


def together(words: str) -> str:
    """``words`` kept on one line by ``wrapped``."""
    return words.replace(" ", _KEEP)


def wrapped(text: str, width: int = WIDTH, indent: str = "  ") -> list[str]:
    """``text`` in lines of at most ``width`` columns, the later ones indented; never broken inside ``together``'s
    words."""
    lines = textwrap.wrap(text, width, subsequent_indent=indent, break_on_hyphens=False) or [""]
    return [line.replace(_KEEP, " ") for line in lines]


def total_lines(total: str, width: int = WIDTH) -> list[str]:
    """The run's total ("abspos total: N claim tests on M models: a held · b not held · ...") within ``width``,
    broken only between its counts."""
    found = re.match(r"(.*? models?: )(.*)$", total)
    head, counts = found.groups() if found else ("", total)
    return wrapped(head + f"{together(' ·')} ".join(together(c) for c in counts.split(" · ")), width)


def figure_line(r) -> str:
    """A test's figure in words against what it is judged by: "words (unit): value [lo, hi] vs threshold" where a
    rule decided it; "words (unit): value, held when <the criterion>" for an exact check; its reason when it
    recorded no figure."""
    r = loaded(r)
    c = claim_test_of(r)
    d = deciding(r)
    shown = headline_cell(r, c.headline, c.column) if c else ""
    if d is not None:
        judged = shown if shown.rpartition(": ")[2].startswith(fmt(d.get("estimate"))) else ""
        name = judged.rpartition(": ")[0] or (d.get("check") or "").partition(": ")[2] or "estimate"
        value = together(f"{fmt(d.get('estimate'))}{interval_text(d)}")  # a line breaks around it, never inside
        threshold = together(f"vs {d.get('criterion')}")
        return f"{name}: {value} {threshold}"
    if shown and c is not None:  # an exact check (a count, an equality): its threshold is in its criterion
        return f"{shown}, held when {c.words(r.claim)}"
    reason = " ".join(r.reason.split())
    return f"{shown} — {reason}" if shown and reason else shown or reason


def test_lines(records, models=(), width: int = WIDTH, clip: int = 3) -> list[str]:
    """One entry per finished test that reached a verdict, grouped under its model (or synthetic set, family, "(no
    model)"): claim, verdict, ``figure_line`` and seconds, wrapped to ``width`` under the figure's column (at most
    ``clip`` lines, the rest cut with "…"); the property checks of a model that all held in one line; the tests not
    applicable to their model counted in one line at the end."""
    results = [loaded(r) for r in records]
    applicable = [r for r in results if r.shown != Verdict.NOT_APPLICABLE]
    shown, folded = fold_property_checks(applicable)
    entries: dict[str, list[tuple[str, str, str, str]]] = {m: [] for m in models}
    entries.update({r.target.label: [] for r in applicable if r.target.label not in entries})
    for m, checks in folded.items():
        entries[m].append((checks[0].claim, Verdict.HELD.label, "", property_checks_text(checks)))
    for r in sorted(shown, key=lambda r: (claim_key(r.claim), r.test)):
        seconds = r.recorded.get("seconds")
        text = figure_line(r) + (f" {together(f'· {seconds:.0f} s')}" if seconds is not None else "")
        # the badge stays with its verdict ("not held (no record for this model)", "... · changed since the record")
        entries[r.target.label].append((r.claim, SHORT.get(r.shown, r.shown.label), r.badge, text))
    claim_w = max((len(e[0]) for es in entries.values() for e in es), default=0)
    verdict_w = max((len(e[1]) for es in entries.values() for e in es), default=0)
    indent = " " * (2 + claim_w + 2 + verdict_w + 2)
    lines: list[str] = []
    for model, es in entries.items():
        lines += [model] if es else []
        for claim_id, verdict, badge, text in es:
            said = f"{verdict}{badge}" if badge else f"{verdict:<{verdict_w}}"
            body = wrapped(f"  {claim_id:<{claim_w}}  {said}  {text}", width, indent)
            lines += body[: clip - 1] + [_clipped(body[clip - 1 :], width)] if len(body) > clip else body
    n_a = len(results) - len(applicable)
    return lines + ([f"and {n_a} tests not applicable to their model"] if n_a else [])


def _clipped(rest: list[str], width: int) -> str:
    line = rest[0] if len(rest) == 1 else rest[0] + " …"
    return line if len(line) <= width else line[: width - 1] + "…"
