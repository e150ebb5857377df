"""Run reports: results.json (every measured figure with its context) and a readable report.md.

``python -m harness.report build reports/<run>/results.json`` rebuilds the report from the JSON alone.
"""

from __future__ import annotations

import json
import platform
import sys
from collections import defaultdict
from importlib import metadata
from pathlib import Path

VERSIONED = ("torch", "transformers", "numpy", "scikit-learn", "syrupy", "pytest")


def versions() -> dict:
    out = {"python": platform.python_version()}
    for pkg in VERSIONED:
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            out[pkg] = None
    return out


def write_run(report_dir: Path, run_id: str, records: list, settings, models: list) -> Path:
    out = report_dir / run_id
    out.mkdir(parents=True, exist_ok=True)
    results = {"run": run_id, "settings": settings.as_dict(), "models": models, "versions": versions(),
               "records": sorted(records, key=lambda r: (r["claim"], r["model"] or "", r["test"]))}
    (out / "results.json").write_text(json.dumps(results, indent=1, allow_nan=True))
    build(out / "results.json")
    latest = report_dir / "latest"
    if latest.is_symlink() or latest.exists():
        latest.unlink()
    latest.symlink_to(run_id)
    return out


def _fmt(v) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return f"{v:.4g}"
    if isinstance(v, list):
        inner = ", ".join(_fmt(x) for x in v[:8])
        return f"[{inner}{', …' if len(v) > 8 else ''}]"
    return str(v)


VERDICT = {"passed": "held", "xfailed": "did not hold (strict xfail)", "failed": "FAILED",
           "skipped": "skipped", "xpassed": "unexpectedly held"}


def markdown(results: dict) -> str:
    lines = [f"# Claims report — {results['run']}", "",
             "Settings: " + ", ".join(f"{k}={v}" for k, v in results["settings"].items()),
             "Versions: " + ", ".join(f"{k} {v}" for k, v in results["versions"].items()), ""]
    by_claim = defaultdict(list)
    for r in results["records"]:
        by_claim[r["claim"]].append(r)
    lines += ["## Summary", "", "| claim | " + " | ".join(results["models"]) + " |",
              "|---|" + "---|" * len(results["models"])]
    for claim, recs in by_claim.items():
        cells = []
        for m in results["models"]:
            outs = [VERDICT.get(r["outcome"], r["outcome"]) for r in recs if r["model"] == m]
            cells.append("; ".join(sorted(set(outs))) if outs else "")
        lines.append(f"| {claim} | " + " | ".join(cells) + " |")
    for claim, recs in by_claim.items():
        lines += ["", f"## {claim}", "", "| test | model | verdict | figure | measured | paper | CI |",
                  "|---|---|---|---|---|---|---|"]
        for r in recs:
            test = r["test"].split("::")[-1].split("[")[0]
            verdict = VERDICT.get(r["outcome"], r["outcome"])
            if not r["figures"]:
                lines.append(f"| {test} | {r['model'] or ''} | {verdict} | | | | |")
            for f in r["figures"]:
                lines.append(f"| {test} | {r['model'] or ''} | {verdict} | {f['name']} | {_fmt(f['value'])} "
                             f"| {_fmt(f['paper'])} | {_fmt(f['ci'])} |")
            if r["reason"]:
                lines.append(f"| | | ↳ {r['reason'][:300]} | | | | |")
    return "\n".join(lines) + "\n"


def build(results_path: Path) -> Path:
    results = json.loads(Path(results_path).read_text())
    out = Path(results_path).parent / "report.md"
    out.write_text(markdown(results))
    return out


def main(argv: list[str]) -> int:
    if len(argv) == 2 and argv[0] == "build":
        print(build(Path(argv[1])))
        return 0
    print("usage: python -m harness.report build reports/<run>/results.json", file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
