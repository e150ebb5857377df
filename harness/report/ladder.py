"""A claim over a family's sizes, judged across runs made apart. Such a claim needs several sizes of a family; in
one-model runs it is not applicable in each. The merge (harness.report.merge) judges it over the merged models' ladder
with ``ladder_verdict`` (the same three criteria as its test, at the same threshold, each by the one decision rule) from the figures another claim test
records per model, as its declaration's ``AcrossRuns`` says: the head-mean ΔR² of the same ``Leakage``, causal and
bidirectional. Where a size lacks them, the claim is "skipped" with a reason saying what is missing; never a verdict
it could not compute.
"""

from __future__ import annotations

import numpy as np

from harness.outcome.nodeid import parse
from harness.outcome.verdict import (
    NOT_RUN,
    ClaimNotHeld,
    Inconclusive,
    Judged,
    Verdict,
    conclude,
    deciding_margin,
    verdict_of,
)
from harness.spec.applies import LADDER, Target, family_sizes
from harness.spec.claims import CLAIMS, AcrossRuns, ClaimSpec, claim_id_of
from harness.spec.decision import NOT_HELD
from harness.spec.models import REGISTRY
from harness.stats.scaling import composition_checks, composition_intervals


def across_runs() -> tuple[ClaimSpec, AcrossRuns] | None:
    """The claim judged across runs and its rule (the first declaring one), or None."""
    return next(((c, c.across_runs) for c in CLAIMS.values() if c.across_runs is not None), None)


# What a merged record of the claim has in place of the input run's measurement (it measured nothing itself).
def unmeasured_fields() -> dict:
    """A fresh copy each time (its figures list is the record's own)."""
    return {
        "known_outcome": False,
        "check": None,
        "figures": [],
        "seconds": 0.0,
        "forward_seconds": 0.0,
        "layer_tokens": 0,
        "floor_layer_tokens": 0,
    }


def judged_across_runs(test: str) -> bool:
    """Whether a node id is the family-level test judged across runs (one per family)."""
    rule = across_runs()
    return rule is not None and parse(test).function == rule[1].test


def ladder_verdict(sizes: list[str], base, bi, base_rows=None, bi_rows=None, n: int = 0) -> dict:
    """The family-level test's verdict from each size's head-mean ΔR², causal (``base``) and bidirectional (``bi``),
    smallest size first: the three criteria of its test (``stats.scaling.composition_checks``), in its order, with its
    messages and check names, read as a claim test reads them (``harness.outcome.verdict``): a not-held criterion
    decides, else the first inconclusive one, else held. Returns {"verdict", "check", "reason", "figures", "margin",
    "decisions"}."""
    # deferred: harness.outcome.figures loads syrupy and pytest, which a merge (the nightly's) runs without
    from harness.outcome.figures import json_plain

    spec, rule = across_runs() or (None, None)
    assert spec is not None and rule is not None, "no claim declares how it is judged across runs"
    share, checks = composition_checks(base, bi, spec.threshold(rule.threshold), base_rows, bi_rows, n)
    _, stats = composition_intervals(base, bi, base_rows, bi_rows, n)  # CIs None where the runs kept no rows
    figures = [
        {"name": name, "value": json_plain(v), "paper": None, "ci": json_plain(ci), "note": ""}
        for name, v, ci in (
            ("models", list(sizes), None),
            ("mean_delta_causal_by_size", np.asarray(base, dtype=float), None),
            ("residual_stream_share_by_size", share, None),
            *((f"leakage_{k}" if k == "spread" else f"share_{k}", v, ci) for k, (v, ci) in stats.items()),
        )
    ]
    judged: list[Judged] = []
    for condition, decision, message in checks:  # as the test body: a not-held criterion ends it
        judged.append(Judged(f"{rule.test}: {condition}", message, decision))
        if decision.reading == NOT_HELD:
            break
    decisions = [json_plain(j.as_dict()) for j in judged]
    last = judged[-1]
    not_held: ClaimNotHeld | None = None
    if last.decision.reading == NOT_HELD:
        not_held = ClaimNotHeld(f"{last.message}: {last.decision.describe()}", last.check, last)
    else:
        try:
            conclude(judged)
        except Inconclusive as e:
            not_held = e
    out = {"figures": figures, "margin": deciding_margin(judged, not_held), "decisions": decisions}
    if not_held is None:
        return {"verdict": Verdict.HELD.value, "check": None, "reason": "", **out}
    return {"verdict": verdict_of(not_held).value, "check": not_held.check, "reason": str(not_held), **out}


def _not_judged(first: dict, reason: str) -> tuple[dict, str]:
    return {
        **first,
        **unmeasured_fields(),
        "outcome": "skipped",
        "verdict": Verdict.SKIPPED.value,
        "reason": reason,
        "merged": "not judged",
    }, reason


def source_figures(rule: AcrossRuns, sizes: list[str], by_model_test: dict) -> tuple[dict, list[str], list[str], dict]:
    """({size: [mean ΔR² causal, bidirectional]} from each size's record of the rule's source test, the sizes without
    them, where each came from ("model (run)"), and {size: (causal rows, bidirectional rows, prompts)} where the source
    kept its bootstrap rows (paper models: the same seed and prompt count give every run the same resamples, so rows
    pair across runs)."""
    values, missing, sources, rows = {}, [], [], {}
    for m in sizes:
        rec = next(
            (r for (model, t), r in by_model_test.items() if model == m and parse(t).function == rule.source), None
        )
        figs = {f.get("name"): f.get("value") for f in (rec or {}).get("figures") or []}
        if rec is None or not all(isinstance(figs.get(n), (int, float)) for n in rule.figures):
            missing.append(m)
        else:
            values[m] = [float(figs[n]) for n in rule.figures]
            sources.append(f"{m} ({rec.get('run')})")
            kept = [figs.get(f"bootstrap_rows:{c}") for c in ("causal", "bidirectional")]
            if all(isinstance(k, list) and k for k in kept) and isinstance(figs.get("bootstrap_prompts"), int):
                rows[m] = (*kept, figs["bootstrap_prompts"])
    return values, missing, sources, rows


def paired_rows(sizes: list[str], rows: dict) -> tuple:
    """(causal rows [sizes, B], bidirectional rows, prompts) when every size kept rows of one length from one prompt
    count (the pairing holds), else (None, None, 0): the claim is then reported, not judged."""
    if set(rows) != set(sizes) or len({(len(rows[m][0]), len(rows[m][1]), rows[m][2]) for m in sizes}) != 1:
        return None, None, 0
    return [rows[m][0] for m in sizes], [rows[m][1] for m in sizes], rows[sizes[0]][2]


def across_runs_record(
    test: str,
    kept: list[tuple[str, dict]],
    by_model_test: dict,
    models: list[str],
    settings: dict,
    families: dict | None = None,
) -> tuple[dict, str | None]:
    """The merged run's record of the family-level test on one family (``kept``: (run label, record) of each input
    run's), and a note on how it was judged (None when it is what every input run said)."""
    spec, rule = across_runs() or (None, None)
    assert spec is not None and rule is not None, "no claim declares how it is judged across runs"
    source = claim_id_of(rule.source)
    family, first = parse(test).param, dict(kept[0][1])
    known = tuple(m for m in models if m in REGISTRY)
    unknown = [m for m in models if m not in REGISTRY and (families or {}).get(m) in (family, None)]
    seq_len = int(settings.get("seq_len") or 128)
    why = LADDER.why_not(Target(None, family, known, seq_len))
    if why is not None and not unknown:
        if all(r.get("verdict") == Verdict.NOT_APPLICABLE and r.get("reason") == why for _, r in kept):
            return first, None
        return {
            **first,
            **unmeasured_fields(),
            "outcome": "skipped",
            "verdict": Verdict.NOT_APPLICABLE.value,
            "reason": why,
            "merged": "applicability over the merged models",
        }, None
    if unknown:
        return _not_judged(
            first,
            f"not judged across runs: the {family} family's ladder cannot be formed at merge "
            f"time, which has no registry spec for models given by reference "
            f"({', '.join(unknown)}); {spec.id} needs the family's sizes in one run",
        )
    sizes = family_sizes(family, known)
    judged = [
        (label, r)
        for label, r in kept
        if r.get("verdict") not in NOT_RUN and (r.get("figures") or [{}])[0].get("value") == sizes
    ]
    if judged:  # one input run measured the whole ladder itself
        return dict(judged[0][1]), None
    values, missing, sources, rows = source_figures(rule, sizes, by_model_test)
    if missing:
        return _not_judged(
            first,
            f"not judged across runs: the {family} ladder ({', '.join(sizes)}) was measured in "
            f"separate runs, and {spec.id} needs each size's head-mean ΔR² causal and bidirectional, "
            f"which {rule.source} records; absent for {', '.join(missing)}: run {source} on "
            f"{'it' if len(missing) == 1 else 'them'} too, or the ladder in one run",
        )
    base_rows, bi_rows, n = paired_rows(sizes, rows)
    v = ladder_verdict(sizes, [values[m][0] for m in sizes], [values[m][1] for m in sizes], base_rows, bi_rows, n)
    if base_rows is None:  # point estimates only: reported, never a verdict (the one decision rule needs an interval)
        record, reason = _not_judged(
            first,
            f"reported, not judged: the {family} ladder ({', '.join(sizes)}) was measured in separate runs that kept "
            f"no paired bootstrap rows ({source} keeps them on paper models at one seed and prompt count), so "
            f"{spec.id} has no "
            f"interval; its figures are from {', '.join(sources)}",
        )
        return {**record, "figures": v["figures"]}, reason
    note = (
        f"judged at merge over {', '.join(sizes)} from {source}'s {rule.figures[0]} and {rule.figures[1]} "
        f"(the figures {spec.id} measures: the same Leakage, causal and bidirectional) of {', '.join(sources)}, on their "
        f"paired prompt-bootstrap rows"
    )
    return {
        **first,
        **unmeasured_fields(),
        "outcome": "passed" if v["verdict"] == Verdict.HELD else "failed",
        **v,
        "merged": note,
    }, note
