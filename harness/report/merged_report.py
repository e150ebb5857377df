"""The report of a merged run (harness.report.merge): the run's report (harness.report.document) with a "Merged
from" section before any verdict (its warnings, each model's run and provenance, the models that failed, how a claim
over a family's sizes was judged), and summary.md headed by the runs it merges.
"""

from __future__ import annotations

from pathlib import Path

from harness.outcome.results import RunResult
from harness.outcome.verdict import Verdict
from harness.report import document as run_document
from harness.report.record_text import fingerprint
from harness.report.render import to_markdown


def merged_blocks(results: RunResult) -> list:
    """The "Merged from" section: warnings first, each model's run and provenance, the failed models, the claims judged across runs."""
    info = results.merged or {}
    per = results.provenance.get("per_model") or {}
    out = [
        ("h2", f"Merged from {len(info.get('runs') or [])} runs", "merged"),
        (
            "p",
            "This report merges runs made apart (one model per machine or job) as if one run had measured "
            "every model (python -m harness.report merge); each model's figures come from its own run, whose "
            "provenance is below.",
        ),
    ]
    out += [("p", f"Warning: {w}") for w in info.get("warnings") or []]
    rows = []
    for m in results.models:
        if m in per:
            x = per[m]
            host, code, vers = x.get("machine") or {}, x.get("code") or {}, x.get("versions") or {}
            commit = (code.get("commit") or "unknown")[:12] + (" (uncommitted changes)" if code.get("dirty") else "")
            rows.append(
                [
                    m,
                    ("measured", Verdict.HELD.css),
                    " + ".join([x.get("run") or "", *(x.get("also_from") or [])]),  # a model's tests from two runs
                    host.get("cpu") or "unknown",
                    ", ".join(host.get("gpus") or []) or "none",
                    ", ".join(f"{k} {vers[k]}" for k in ("torch", "transformers") if vers.get(k)) or "unknown",
                    commit,
                    fingerprint(x.get("weights") or {}),
                ]
            )
    for f in info.get("failed") or []:
        rows.append([f["model"], (f"{f['status']}: {f['reason']}", "error"), f.get("job") or "", "", "", "", "", ""])
    out.append(("table", ["model", "status", "run or job", "CPU", "GPUs", "versions", "commit", "weights"], rows))
    out += [("p", n) for n in info.get("notes") or []]
    return out


def document(results: RunResult, plots: list, base: Path | None) -> list:
    """report.document with the "Merged from" section after the table of contents (so its warnings and failed
    models come before any verdict)."""
    blocks = run_document.document(results, plots, base)
    toc = next(i for i, b in enumerate(blocks) if b[0] == "toc")
    runs = len((results.merged or {}).get("runs") or [])
    blocks[toc] = ("toc", [(f"Merged from {runs} runs", "merged"), *blocks[toc][1]])
    return blocks[: toc + 1] + merged_blocks(results) + blocks[toc + 1 :]


def summary_markdown(results: RunResult) -> str:
    """summary.md of a merged run: the runs it merges and its warnings, then the run's (report.document)."""
    info = results.merged or {}
    head = [
        (
            "p",
            f"Merged from {len(info.get('runs') or [])} runs: "
            + "; ".join(
                r["run"]
                if r["run"].endswith(")")
                else f"{r['run']} ({', '.join([*(r.get('models') or []), *(r.get('sets') or [])]) or 'no model'})"
                for r in info.get("runs") or []
            ),
        )
    ]
    head += [("p", f"**Warning:** {w}") for w in info.get("warnings") or []]
    return to_markdown(head, Path(".")) + "\n" + run_document.summary_markdown(results)
