"""What the report of a merged run (harness.report.merge) adds to a run's (harness.report.document): a "Merged
from" section before any verdict (its warnings, each model's run and provenance, the models that failed, how a claim
over a family's sizes was judged), and summary.md's head naming the runs it merges.
"""

from __future__ import annotations

from harness.outcome.verdict import Verdict
from harness.report.cells import RunCells


def merged_blocks(results: RunCells) -> list:
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
                    results.merged_fingerprints[m],
                ]
            )
    for f in info.get("failed") or []:
        rows.append([f["model"], (f"{f['status']}: {f['reason']}", "error"), f.get("job") or "", "", "", "", "", ""])
    out.append(("table", ["model", "status", "run or job", "CPU", "GPUs", "versions", "commit", "weights"], rows))
    out += [("p", n) for n in info.get("notes") or []]
    return out


def summary_head(results: RunCells) -> list:
    """summary.md's head on a merged run: the runs it merges and its warnings (the run's summary follows)."""
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
    return head
