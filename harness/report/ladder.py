"""A claim over a family's sizes, judged across runs made apart. Such a claim needs several sizes of a family; in
one-model runs it is not applicable in each. The merge (harness.report.merge) judges it over the merged models' ladder
by calling the judgement its declaration names (``AcrossRuns.judge``, the function its own test calls) on the figures
another claim test records per model, as the declaration says which (``AcrossRuns.figures``, ``rows``, ``prompts``).
Where a size lacks them, the claim is "skipped" with a reason saying what is missing; never a verdict it could not
compute. Each merged record is a ``ClaimResult``, as a claim test's is.
"""

from __future__ import annotations

from dataclasses import replace

from harness.outcome.claim_result import ClaimResult
from harness.outcome.verdict import NOT_RUN, Verdict, deciding_margin, read_checks
from harness.spec.applies import LADDER, Target, family_sizes
from harness.spec.claims import CLAIMS, AcrossRuns, ClaimSpec, claim_id_of
from harness.spec.models import REGISTRY
from harness.spec.settings import Settings

#: What a merged record of the claim has in place of the input run's work (it measured nothing itself).
UNMEASURED = {"seconds": 0.0, "forward_seconds": 0.0, "layer_tokens": 0, "floor_layer_tokens": 0}


def across_runs(r: ClaimResult) -> tuple[ClaimSpec, AcrossRuns] | None:
    """The claim whose declaration judges this record's test across runs, and its rule; None for any other test."""
    spec = CLAIMS.get(r.claim)
    if spec is None or spec.across_runs is None or spec.across_runs.test != r.function:
        return None
    return spec, spec.across_runs


def ladder_verdict(rule: AcrossRuns, sizes: list[str], base, bi, base_rows=None, bi_rows=None, n: int = 0) -> dict:
    """The family-level test's verdict from each size's head-mean ΔR², causal (``base``) and bidirectional (``bi``),
    smallest size first, by the declaration's own judgement (``rule.judge``, which the claim test calls), read as a
    claim test is read (``harness.outcome.verdict.read_checks``). Returns the ``ClaimResult`` fields it decides:
    verdict, check, reason, figures, margin, decisions."""
    # deferred: harness.outcome.figures loads syrupy and pytest, which a merge (the nightly's) runs without
    from harness.outcome.figures import json_plain

    judgement = rule.judge(sizes, base, bi, base_rows, bi_rows, n)
    verdict, not_held, judged = read_checks(judgement.checks, rule.test)
    return {
        "verdict": verdict,
        "check": not_held.check if not_held is not None else None,
        "reason": str(not_held) if not_held is not None else "",
        "figures": tuple(
            {"name": name, "value": json_plain(v), "paper": None, "ci": json_plain(ci), "note": ""}
            for name, v, ci in judgement.figures
        ),
        "margin": deciding_margin(judged, not_held),
        "decisions": tuple(json_plain(j.as_dict()) for j in judged),
    }


def merged_record(first: ClaimResult, verdict: Verdict, reason: str, how: str, **decided) -> ClaimResult:
    """The merged run's record of the family-level test, made from an input run's (``first``): what the merge decided
    (``verdict``, ``reason``, and any of check, figures, margin, decisions), how (``how``), and no work of its own."""
    fields = {"check": None, "figures": (), "margin": None, "decisions": (), **decided}
    recorded = {**first.recorded, **UNMEASURED, "merged": how}
    return replace(
        first, verdict=verdict, reason=reason, known_outcome=False, outcome=None, recorded=recorded, **fields
    )


def source_figures(rule: AcrossRuns, sizes: list[str], by_model: dict) -> tuple[dict, list[str], list[str], dict]:
    """({size: [causal, bidirectional]} from each size's record of the rule's source test, the sizes without them,
    where each came from ("model (run)"), and {size: (causal rows, bidirectional rows, prompts)} where the source kept
    its bootstrap rows (paper models: the same seed and prompt count give every run the same resamples, so rows pair
    across runs). ``by_model``: {(model, test node id): record} of the merged runs."""
    values, missing, sources, rows = {}, [], [], {}
    for m in sizes:
        rec = next((r for (model, _), r in by_model.items() if model == m and r.function == rule.source), None)
        figs = {f.get("name"): f.get("value") for f in (rec.figures if rec is not None else ())}
        if rec is None or not all(isinstance(figs.get(n), (int, float)) for n in rule.figures):
            missing.append(m)
            continue
        values[m] = [float(figs[n]) for n in rule.figures]
        sources.append(f"{m} ({rec.recorded.get('run')})")
        kept = [figs.get(n) for n in rule.rows]
        if kept and all(isinstance(k, list) and k for k in kept) and isinstance(figs.get(rule.prompts), int):
            rows[m] = (*kept, figs[rule.prompts])
    return values, missing, sources, rows


def paired_rows(sizes: list[str], rows: dict) -> tuple:
    """(causal rows [sizes, B], bidirectional rows, prompts) when every size kept rows of one length from one prompt
    count (the pairing holds), else (None, None, 0): the claim is then reported, not judged."""
    if set(rows) != set(sizes) or len({(len(rows[m][0]), len(rows[m][1]), rows[m][2]) for m in sizes}) != 1:
        return None, None, 0
    return [rows[m][0] for m in sizes], [rows[m][1] for m in sizes], rows[sizes[0]][2]


def across_runs_record(
    kept: list[tuple[str, ClaimResult]],
    by_model: dict,
    models: list[str],
    settings: Settings | None,
    families: dict | None = None,
) -> tuple[ClaimResult, str | None]:
    """The merged run's record of the family-level test on one family (``kept``: (run label, record) of each input
    run's), and a note on how it was judged (None when it is what every input run said)."""
    first = kept[0][1]
    found = across_runs(first)
    assert found is not None, f"{first.function}: its claim declares no judgement across runs"
    spec, rule = found
    source, family = claim_id_of(rule.source), first.target.name
    known = tuple(m for m in models if m in REGISTRY)
    unknown = [m for m in models if m not in REGISTRY and (families or {}).get(m) in (family, None)]
    why = LADDER.why_not(Target(None, family, known, (settings or Settings()).seq_len))
    if why is not None and not unknown:
        if all(r.verdict == Verdict.NOT_APPLICABLE and r.reason == why for _, r in kept):
            return first, None
        return merged_record(first, Verdict.NOT_APPLICABLE, why, "applicability over the merged models"), None
    if unknown:
        reason = (
            f"not judged across runs: the {family} family's ladder cannot be formed at merge time, which has no "
            f"registry spec for models given by reference ({', '.join(unknown)}); {spec.id} needs the family's sizes "
            "in one run"
        )
        return merged_record(first, Verdict.SKIPPED, reason, "not judged"), reason
    sizes = family_sizes(family, known)
    judged = [r for _, r in kept if r.verdict not in NOT_RUN and (r.figures or ({},))[0].get("value") == sizes]
    if judged:  # one input run measured the whole ladder itself
        return judged[0], None
    values, missing, sources, rows = source_figures(rule, sizes, by_model)
    if missing:
        reason = (
            f"not judged across runs: the {family} ladder ({', '.join(sizes)}) was measured in separate runs, and "
            f"{spec.id} needs each size's head-mean ΔR² causal and bidirectional, which {rule.source} records; absent "
            f"for {', '.join(missing)}: run {source} on {'it' if len(missing) == 1 else 'them'} too, or the ladder in "
            "one run"
        )
        return merged_record(first, Verdict.SKIPPED, reason, "not judged"), reason
    base_rows, bi_rows, n = paired_rows(sizes, rows)
    v = ladder_verdict(rule, sizes, [values[m][0] for m in sizes], [values[m][1] for m in sizes], base_rows, bi_rows, n)
    if base_rows is None:  # point estimates only: reported, never a verdict (the one decision rule needs an interval)
        reason = (
            f"reported, not judged: the {family} ladder ({', '.join(sizes)}) was measured in separate runs that kept "
            f"no paired bootstrap rows ({source} keeps them on paper models at one seed and prompt count), so "
            f"{spec.id} has no interval; its figures are from {', '.join(sources)}"
        )
        return merged_record(first, Verdict.SKIPPED, reason, "not judged", figures=v["figures"]), reason
    note = (
        f"judged at merge over {', '.join(sizes)} from {source}'s {rule.figures[0]} and {rule.figures[1]} "
        f"(the figures {spec.id} measures: the same Leakage, causal and bidirectional) of {', '.join(sources)}, on "
        "their paired prompt-bootstrap rows"
    )
    return merged_record(first, **v, how=note), note
