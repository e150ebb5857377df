"""One run record and one report from runs made apart: one model per machine, job or node (``abspos-claims submit``,
the nightly matrix), merged as if one run had measured every model. Pure data: no model is loaded, nothing is
measured again.

    python -m harness.report merge RUN... --out DIR [--allow-mixed] [--expect MODELS] [--run-id ID]
    abspos-claims report merge RUN... --out DIR

RUN is a results.json, its run folder, a ``--report-dir`` folder (its ``latest`` run), or a folder (or file) holding
a ``job.json`` written by a job that ended without results (``harness.submit``; the nightly's model jobs): that model
is shown as failed, with the job's reason. ``--expect`` names the models that should be there (names or the groups
bundled, paper): one without a run is shown as failed ("no run of it among the inputs"), never silently absent.

What is refused (one line, exit 2): an input that is missing or not a claims results.json; runs whose settings
differ or whose code commits differ (``--allow-mixed`` merges them anyway, with a warning at the top of the report);
a model measured in two runs (the line names both) unless they measured disjoint tests of it on the same weights.
Differing library versions, machines, uncommitted changes and an interrupted input run are warnings in the report.
DIR gets results.json and the report over all models, with a "Merged from" section (each model's run, machine, GPUs,
versions, commit and weights fingerprint) and the warnings.

A claim over a family's sizes (its declaration's ``AcrossRuns``) is judged over the merged models' ladder, which no one-model input run could form
(harness.report.ladder).
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections import defaultdict
from dataclasses import replace
from pathlib import Path

from harness.files.atomic import write_text
from harness.model import references
from harness.outcome import known_outcomes, stability
from harness.outcome.claim_result import ClaimResult
from harness.report.ladder import across_runs, across_runs_record
from harness.report.merge_inputs import (
    MERGE_MARK,
    MergeError,
    brief,
    code_of,
    read_inputs,
    refuse_output_in_inputs,
    refuse_output_over_a_run,
    run_warnings,
)
from harness.report.record_text import synthetic_sets
from harness.report.write import build
from harness.spec.models import LADDER_GROUPS, REGISTRY, names
from harness.spec.settings import Settings

#: Top-level keys of a results.json the merge rebuilds; any other key (``interrupted``, ...) is carried through.
KNOWN_KEYS = ("run", "settings", "models", "versions", "provenance", "records", "merged")


# ---- checks -----------------------------------------------------------------------------------------------


def expand_models(models) -> list[str]:
    """Model names of --expect (or --models) tokens: the groups bundled, paper, extra and all, and the ladders
    (qwen-ladder), expanded."""
    out = []
    for m in models or []:
        for token in (t.strip() for t in str(m).split(",")):
            if token in ("bundled", "paper", "extra"):
                out += names(token)
            elif token in LADDER_GROUPS:
                out += list(LADDER_GROUPS[token])
            elif token == "all":
                out += names("bundled") + names("paper")
            elif token:
                out.append(token)
    return list(dict.fromkeys(out))


def _model_name(token: str) -> str:
    """A --models token's name in a run (hf:org/name -> hf-org--name, path:/x/ft -> path-ft, as
    harness.model.references names it); registry names and anything unparsable unchanged."""
    try:
        ref = references.parse(token)
    except references.ReferenceError:
        return token
    return ref.name if ref is not None else token


def _order(models: list[str]) -> list[str]:
    """Registry models in the registry's order (as a run selecting them lists them), then the others as given."""
    rank = {m: i for i, m in enumerate(REGISTRY)}
    return sorted(models, key=lambda m: (0, rank[m], 0) if m in rank else (1, 0, models.index(m)))


def _joined(values) -> str | None:
    vals = [v for v in dict.fromkeys(str(v) for v in values if v not in (None, ""))]
    return " / ".join(vals) if vals else None


# ---- the merge --------------------------------------------------------------------------------------------


def merge(
    inputs,
    allow_mixed: bool = False,
    expect=None,
    run_id: str | None = None,
    stability_record: Path | None = None,
    known_outcomes_file: Path | None = None,
) -> dict:
    """The merged results (a results.json dict with a ``merged`` section). Raises MergeError (one line) for runs
    that cannot be merged, ResultsFileError for an unreadable input. With ``stability_record``, each record's seed
    stability is read from it as it stands now, in place of what the record said when its run was made; with
    ``known_outcomes_file``, likewise its standing against the recorded known outcomes (stale, as recorded)."""
    runs, jobs = read_inputs(inputs)
    warnings = run_warnings(runs, allow_mixed)
    owner = model_owners(runs)
    failed = failed_models(jobs, expect, owner, warnings)
    records, notes = merged_records(runs, owner, warnings)
    settings = runs[0]["results"].settings if runs else None
    merged = {
        "run": run_id or time.strftime("merged-%Y%m%d-%H%M%S"),
        "settings": dict(runs[0]["results"].recorded_settings) if runs else {},
        "models": _order(list(owner)) + [f["model"] for f in failed],
        "versions": _merged_versions(runs),
        "provenance": _merged_provenance(runs, owner),
        **carried(runs),
    }
    written: list[dict] = [dict(r.to_dict()) for r in sorted(records, key=lambda x: (x.claim, x.model or "", x.test))]
    merged["records"] = written  # as results.json holds them: re-read below against the fixtures as they stand
    key = settings or Settings()
    if known_outcomes_file is not None:  # before stability: "unstable" is read off the verdict it ends with
        known_outcomes.validate(Path(known_outcomes_file), required=True)
        known_outcomes.reread(written, key.verdict_key(), Path(known_outcomes_file))
    if stability_record is not None:
        warnings += restabilised(written, key, Path(stability_record))
    merged["merged"] = {
        "runs": [
            {
                "run": r["label"],
                "path": str(r["path"]),
                "models": r["models"],
                "sets": synthetic_sets(r["results"].records),  # the synthetic sets it trained and measured
                **{k: v for k, v in r["results"].file.items() if k not in ("records", "models", "provenance", "run")},
                "code": code_of(r["results"]),
                "machine": r["results"].provenance.get("machine"),
                "selection": r["results"].provenance.get("selection"),
            }
            for r in runs
        ],
        "failed": failed,
        "warnings": warnings,
        "notes": notes,
        "allow_mixed": bool(allow_mixed),
        **({"stability_record": str(stability_record)} if stability_record is not None else {}),
        **({"known_outcomes": str(known_outcomes_file)} if known_outcomes_file is not None else {}),
    }
    return merged


def restabilised(records: list[dict], key: Settings, path: Path) -> list[str]:
    """Each merged record's seed stability (``records``: as results.json holds them, of runs made with ``key``) read
    from the stability record at ``path`` as it stands now; a record that says nothing of these runs (empty, of other
    settings) or of some of their tests leaves those with their runs' marks, said in one warning line (returned)."""
    data = stability.load(path, required=True)
    if reason := stability.not_covering(data, key.verdict_key()):
        return [f"the stability record {path} does not cover these runs ({reason}): each verdict keeps its run's mark"]
    uncovered = stability.restabilise(records, data, key.verdict_key())
    if not uncovered:
        return []
    r = uncovered[0]
    return [
        f"the stability record {path} has no entry for {len(uncovered)} of the runs' decided tests (e.g. "
        f"{r['function']} on {r['model']}): they keep their runs' marks"
    ]


def model_owners(runs: list) -> dict[str, dict]:
    """{model: the run that measured it} (each run's ``models`` set). A model measured in two runs is a MergeError
    naming both, unless the runs measured disjoint tests of it on the same weights (a claim run again apart, e.g. a
    costly one on another node): its records then come from both, its provenance from the first. A run that selected a
    model without recording any of its tests (a family ladder only) leaves it to the run with its records."""
    owner: dict[str, dict] = {}
    measured = {id(r): {x.model for x in r["results"].records if x.model} for r in runs}
    for r in runs:
        ms = list(dict.fromkeys([*r["results"].models, *measured[id(r)]]))
        r["models"] = ms
        for m in ms:
            if m not in measured[id(r)] and any(m in measured[id(o)] for o in runs if o is not r):
                continue  # selected here for a model-free test only: the run with its records owns it
            if m in owner:
                a, b = owner[m], r
                names = [{x.name for x in o["results"].records if x.model == m} for o in (a, b)]
                tests = names[0] & names[1]
                w = [(x["results"].provenance.get("models") or {}).get(m) or {} for x in (a, b)]
                sha = [x.get("weights_sha256") for x in w]
                same_weights = sha[0] is not None and sha[0] == sha[1]
                if tests or not same_weights:
                    raise MergeError(
                        f"{m} measured in two runs: {a['label']} ({a['path']}) and {b['label']} ({b['path']})"
                        + (f", {len(tests)} test(s) in both (e.g. {sorted(tests)[0]})" if tests else "")
                        + ("" if same_weights or tests else ", on different weights (or unrecorded ones)")
                        + "; merge one run per model (leave one of them out)"
                    )
                a.setdefault("shares", {}).setdefault(m, []).append(b["label"])
                continue
            owner[m] = r
    return owner


def failed_models(jobs: list, expect, owner: dict, warnings: list[str]) -> list[dict]:
    """The models without results: a job that ended without them, a model ``expect``ed that no input has; each
    also a warning (appended to ``warnings``), as is a failed job whose model another run measured."""
    failed = []
    for j in jobs:
        m = _model_name(j["model"])
        if m in owner:
            warnings.append(
                f"a job for {m} ended without results ({brief(j.get('reason'))}), but run "
                f"{owner[m]['label']} has them: that run is used"
            )
            continue
        failed.append(
            {
                "model": m,
                "status": j.get("status") or "failed",
                "reason": brief(j.get("reason")) or "the job wrote no results",
                "job": j.get("job"),
                "source": str(j["path"]),
            }
        )
    for m in [_model_name(x) for x in expand_models(expect)]:
        if m not in owner and all(f["model"] != m for f in failed):
            failed.append(
                {
                    "model": m,
                    "status": "missing",
                    "reason": "no run of it among the inputs (its job "
                    "failed before writing results, was cancelled, or never ran)",
                    "job": None,
                    "source": None,
                }
            )
    for f in failed:
        warnings.append(f"{f['model']}: {f['status']}: {f['reason']}")
    return failed


def merged_records(runs: list, owner: dict, warnings: list[str]) -> tuple[list[ClaimResult], list[str]]:
    """Each model's records from its run; model-free ones (a property without a model, a family-level test per
    family) once: a claim over a family's sizes judged over the merged ladder (harness.report.ladder, with a note on
    how), any other from the first run (a warning when the runs' verdicts differ). Each record is labelled with its
    run ("run"). Returns (records, notes)."""
    records: list[ClaimResult] = []
    by_model: dict = {}
    free: dict = defaultdict(list)
    for r in runs:
        for x in r["results"].records:
            x = replace(x, recorded={**x.recorded, "run": r["label"]})
            if x.model:
                records.append(x)
                by_model[(x.model, x.test)] = x
            else:
                free[x.test].append((r["label"], x))
    settings = runs[0]["results"].settings if runs else None
    families = {
        m: (((r["results"].provenance.get("models") or {}).get(m) or {}).get("derived") or {}).get("family")
        for m, r in owner.items()
    }  # a reference's, from its derived spec
    notes = []
    for kept in free.values():
        first = kept[0][1]
        if across_runs(first) is not None:
            rec, note = across_runs_record(kept, by_model, list(owner), settings, families)
            records.append(rec)
            if note:
                notes.append(f"{rec.claim} [{first.target.name}]: {note}")
            continue
        verdicts = {label: x.verdict for label, x in kept}
        if len(set(verdicts.values())) > 1:
            trained = synthetic_sets([first])  # a synthetic set is named by its test's parameter
            warnings.append(
                f"{first.name}{'' if trained else ' (no model)'} differs between runs: "
                + "; ".join(f"{v} in {label}" for label, v in verdicts.items())
                + f"; the report shows {kept[0][0]}'s"
            )
        records.append(first)
    return records, notes


def carried(runs: list) -> dict:
    """The input runs' other top-level keys (``interrupted``, ...): one value when every run agrees, else per run
    ({run: value}); ``interrupted`` always per interrupted run."""
    extra, out = {}, {}
    for r in runs:
        for k, v in r["results"].file.items():
            if k not in KNOWN_KEYS:
                extra.setdefault(k, {})[r["label"]] = v
    for k, per in extra.items():
        vals = list(per.values())
        out[k] = vals[0] if len(vals) == len(runs) and all(v == vals[0] for v in vals) else per
    if any(r["results"].interrupted for r in runs):
        out["interrupted"] = {r["label"]: r["results"].interrupted for r in runs if r["results"].interrupted}
    return out


def _merged_versions(runs: list) -> dict:
    keys = list(dict.fromkeys(k for r in runs for k in r["results"].versions))
    return {k: _joined(r["results"].versions.get(k) for r in runs) for k in keys}


def _merged_provenance(runs: list, owner: dict) -> dict:
    """The report's provenance over the runs (one value where they agree, "a / b" where they differ) and, per
    model, its own run's: machine, GPUs, versions, commit, selection and weights."""
    provs = [r["results"].provenance for r in runs]
    codes, machines = [p.get("code") or {} for p in provs], [p.get("machine") or {} for p in provs]
    commits = list(dict.fromkeys(c.get("commit") for c in codes))
    code = {
        "commit": commits[0] if len(commits) == 1 else None,
        "dirty": any(c.get("dirty") for c in codes) if codes else None,
    }
    if len(commits) > 1:
        code["commits"] = commits
    machine = {k: _joined(m.get(k) for m in machines) for k in ("cpu", "platform", "cuda", "cudnn")}
    machine["gpus"] = list(dict.fromkeys(g for m in machines for g in m.get("gpus") or []))
    selection = [t for r, p in zip(runs, provs) for t in [f"[{r['label']}]", *(p.get("selection") or ["(default)"])]]
    weights, per_model = {}, {}
    for m, r in owner.items():
        p = r["results"].provenance
        if m in (p.get("models") or {}):
            weights[m] = p["models"][m]
        per_model[m] = {
            "run": r["label"],
            **({"also_from": r["shares"][m]} if m in r.get("shares", {}) else {}),
            "path": str(r["path"]),
            "machine": p.get("machine"),
            "code": p.get("code"),
            "versions": r["results"].versions or None,
            "selection": p.get("selection"),
            "weights": (p.get("models") or {}).get(m),
        }
    return {"code": code, "machine": machine, "selection": selection, "models": weights, "per_model": per_model}


def write(merged: dict, out: Path) -> Path:
    """results.json into ``out`` (made if missing), marked as a merge's (``MERGE_MARK``), then its report; returns
    report.md's path."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    text = json.dumps(merged, indent=1, allow_nan=True)
    write_text(out / MERGE_MARK, json.dumps({"results_sha256": hashlib.sha256(text.encode()).hexdigest()}) + "\n")
    write_text(out / "results.json", text)
    return build(out / "results.json")


def merge_command(
    runs,
    out,
    allow_mixed: bool = False,
    expect=None,
    run_id: str | None = None,
    stability_record=None,
    known_outcomes_file=None,
) -> tuple[str, int]:
    """(what to print, exit code): 0 merged, 1 merged with a model failed or missing; MergeError/ResultsFileError
    propagate (the CLI prints their one line, exit 2)."""
    refuse_output_over_a_run(Path(out))
    merged = merge(runs, allow_mixed, expect, run_id, stability_record, known_outcomes_file)
    refuse_output_in_inputs(runs, Path(out))
    report = write(merged, Path(out))
    info = merged["merged"]
    failed = {f["model"] for f in info["failed"]}
    sets = dict.fromkeys(s for r in info["runs"] for s in r["sets"])  # the synthetic sets the runs trained
    measured = [m for m in merged["models"] if m not in failed] + list(sets)
    lines = [
        f"merged {len(info['runs'])} runs ({', '.join(measured)}) into "
        f"{report}" + (f"; without results: {', '.join(sorted(failed))}" if failed else "")
    ]
    lines += [f"warning: {w}" for w in info["warnings"]]
    return "\n".join(lines), 1 if info["failed"] else 0


def safe_name(model: str) -> str:
    """A folder name for a model (references carry ':' and '/')."""
    return re.sub(r"[^A-Za-z0-9._~-]+", "_", model).strip("_") or "model"
