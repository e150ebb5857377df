"""Claims measured not to hold (or not decidable) on a model: strict xfails, kept as data in
fixtures/known_outcomes.json.

An entry is keyed by test function, model and the settings a verdict depends on (``Settings.verdict_key``:
lengths, prompts, pairs, corpus; not the seed), and names the assertion that failed (``ClaimNotHeld.check``) and,
when the data could not decide it, ``"verdict": "inconclusive"``. It is accepted only when the same assertion ends the
same way again: a different failing assertion or verdict is a new finding (``KnownOutcomeMismatch``), a claim that now holds is a stale record (strict XPASS), and either fails the run.
Entries are written from a run's results.json (``record``), never by hand:

    abspos-claims outcomes record reports/latest/results.json
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any, cast

from harness.files.atomic import JSONFileError, read_json, write_text
from harness.files.paths import KNOWN_OUTCOMES
from harness.outcome.nodeid import test_function
from harness.outcome.verdict import ClaimNotHeld, Verdict, known_verdict, verdict_of

PATH = KNOWN_OUTCOMES


class KnownOutcomesError(JSONFileError):
    """A known-outcomes file that cannot be used (a ``ValueError``); the message is one line naming the file and
    what is wrong."""

    #: As known outcomes have always worded them: a file the system or the decoder refuses is "not readable".
    PHRASES = {
        **JSONFileError.PHRASES,
        "unreadable": "not readable as known outcomes ({detail})",
        "undecodable": "not readable as known outcomes ({detail})",
        "empty": JSONFileError.PHRASES["invalid"],
    }
    ADVICE = "re-record it: abspos-claims outcomes record RESULTS_JSON"


def _read(path: Path) -> dict[str, Any]:
    """The known outcomes at ``path`` as parsed, unchecked ({} where there is none); a file that cannot be read or
    parsed raises ``KnownOutcomesError``."""
    return cast(dict[str, Any], read_json(path, "known-outcomes", KnownOutcomesError)) if path.exists() else {}


@lru_cache(maxsize=4)
def table(path: Path = PATH) -> dict[str, Any]:
    return _read(Path(path))


def validate(path: Path = PATH, required: bool = False) -> None:
    """Raise ``KnownOutcomesError`` (a ValueError: one line naming the file) unless every entry is {test: {model:
    [{"settings", "check", "measured"}]}}; a missing file is no known outcomes, unless ``required`` (a path given on
    the command line)."""
    path = Path(path)
    if required and not path.exists():
        raise KnownOutcomesError(
            f"{path}: no such file (--known-outcomes names the recorded outcomes file; leave it out for {PATH})"
        )
    data = table(path)  # a folder, an unreadable file or invalid JSON: KnownOutcomesError
    if not isinstance(data, dict):
        raise KnownOutcomesError(f"{path}: not a known-outcomes file (not a JSON object of tests)")
    for test, per in data.items():
        ok = isinstance(per, dict) and all(
            isinstance(es, list)
            and all(isinstance(e, dict) and {"settings", "check", "measured"} <= e.keys() for e in es)
            for es in per.values()
        )
        if not ok:
            raise KnownOutcomesError(
                f"{path}: the entry for {test} is not in the current format (a list of "
                f"{{settings, check, measured}} per model); re-record it from a run: "
                f"abspos-claims outcomes record RESULTS_JSON"
            )


#: the model groups that have a record without a known-outcome entry: the bundled models (their committed example run
#: and snapshots: a not held there is a change) and the paper's models (judged against the paper itself); a model of
#: any other group (a reference, path: hf: gguf:, or an opt-in model) has a record only once an entry names it
RECORDED_GROUPS = ("bundled", "paper")


def without_record(model: str | None, path: Path = PATH) -> bool:
    """Whether ``model`` has no recorded outcomes: its verdicts are the run's result, never a
    change from a record (a not held or inconclusive ends the test without failing the run, "no record for this
    model"). A family-level or synthetic test (no model) always has its record."""
    from harness.spec.models import REGISTRY  # a reference's spec is registered when its run is configured

    spec = REGISTRY.get(model) if model else None
    if spec is None or spec.group in RECORDED_GROUPS or spec.group == "tiny":  # tiny: rehearsals, never a verdict
        return False
    return not any(isinstance(by_model, dict) and model in by_model for by_model in table(path).values())


def lookup(test_name: str, model: str | None, key: dict, path: Path = PATH) -> dict | None:
    """The recorded outcome {"settings", "check", "measured"} of a test on a model at these settings, if any."""
    if not model:
        return None
    entries = table(path).get(test_name, {}).get(model, [])
    return next((e for e in entries if isinstance(e, dict) and e.get("settings") == key), None)


def mismatch(known: dict | None, e: ClaimNotHeld) -> str | None:
    """Why ``e`` (a claim's own failing criterion) is not the recorded ``known`` outcome repeating: another assertion
    or another verdict (not held against inconclusive) is a new finding; None where it repeats (or none is recorded)."""
    if known is None:
        return None
    want, got = known_verdict(known).value, verdict_of(e).value
    if known["check"] != e.check:
        return f"{got} at another assertion than recorded: {e.check} (recorded: {known['check']}): {e}"
    if want != got:
        return f"{got} at the recorded assertion {e.check}, recorded as {want}: {e}"
    return None


def ladder_key(sizes) -> str:
    """The key a family-level test is recorded under: its size ladder, smallest first ("ladder:a+b"), so a recorded
    outcome applies to that ladder only, never to another ladder of the family."""
    return "ladder:" + "+".join(sizes)


def _record_key(r: dict) -> str | None:
    """A record's model, or (a family-level test, no model) its ladder from its "models" figure; None for a record of
    neither (the §3 causal-softmax property, a family-level test that did not run)."""
    if r.get("model"):
        return r["model"]
    first = (r.get("figures") or [{}])[0]
    sizes = first.get("value") if first.get("name") == "models" else None
    return ladder_key(sizes) if isinstance(sizes, list) and sizes else None


def local(model: str) -> bool:
    """A model given by reference (its name is ``hf-…``, ``path-…`` or ``gguf-…``; harness.model.references)."""
    if model.startswith("ladder:"):
        return any(local(m) for m in model.removeprefix("ladder:").split("+"))
    return model.split("-", 1)[0] in ("hf", "path", "gguf")


def reread(records: list[dict], key: dict, path: Path = PATH) -> list[str]:
    """Each record's standing against the known outcomes at ``path`` as they are now (a merge of runs made before an
    entry was recorded or removed; harness.report.merge), as ``stability.restabilise`` re-reads seed stability: a
    stale record whose known outcome is gone reads held; a held one whose test is now recorded as not holding reads
    stale; a not-held or inconclusive one is "as recorded" only where the entry names its check and verdict. Returns
    one line per record that changed."""
    changes = []
    for r in records:
        model = _record_key(r)
        if not model or r.get("verdict") not in (Verdict.HELD, Verdict.STALE, Verdict.NOT_HELD, Verdict.INCONCLUSIVE):
            continue
        func = test_function(r["test"])
        known = lookup(func, model, key, path)
        was = (r["verdict"], bool(r.get("known_outcome")))
        if r["verdict"] == Verdict.STALE and known is None:
            r.update(verdict=Verdict.HELD.value, outcome="passed", reason="", known_outcome=False, check=None)
        elif r["verdict"] == Verdict.HELD and known is not None:
            was_words = Verdict.INCONCLUSIVE.label if known_verdict(known) == Verdict.INCONCLUSIVE else "not holding"
            r.update(
                verdict=Verdict.STALE.value,
                outcome="failed",
                reason=f"held in this run, but recorded as {was_words} (recorded {known_verdict(known).value} at "
                f"{known['check']}: {known['measured']}): re-take the record",
            )
        elif r["verdict"] in (Verdict.NOT_HELD, Verdict.INCONCLUSIVE):
            r["known_outcome"] = (
                known is not None and known["check"] == r.get("check") and known_verdict(known).value == r["verdict"]
            )
        if (r["verdict"], bool(r.get("known_outcome"))) != was:
            changes.append(
                f"{func}[{model}]: {was[0]} -> {r['verdict']}{' (as recorded)' * bool(r.get('known_outcome'))}"
            )
    return changes


def record(results_json: Path, path: Path = PATH) -> list[str]:
    """Record every claim test that did not hold or could not be decided in a run (verdict "not held" or
    "inconclusive": a ClaimNotHeld or Inconclusive raised by a claim's own criterion), keyed by test function, model
    (a family-level test: its ladder, ``ladder_key``) and the run's verdict settings, replacing the entry at those
    settings. Harness errors (a crash, a snapshot drift) are never recorded; a stale record (the claim now holds) is
    removed. Returns one line per change."""
    from harness.outcome.results import load_results
    from harness.spec.settings import Settings

    results = load_results(results_json)
    key = Settings.from_dict(results.get("settings") or {}).verdict_key()
    data = _read(path)
    changes = []
    for r in results["records"]:
        model = _record_key(r)
        kept_verdicts = (Verdict.NOT_HELD, Verdict.INCONCLUSIVE, Verdict.HELD, Verdict.STALE)
        if not model or r.get("verdict") not in kept_verdicts or local(model):
            continue  # a model given by reference (hf:, path:, gguf:) is a checkpoint of the day, never recorded
        func = test_function(r["test"])
        kept = [e for e in data.get(func, {}).get(model, []) if isinstance(e, dict) and e.get("settings") != key]
        if r["verdict"] in (Verdict.HELD, Verdict.STALE):
            if len(kept) != len(data.get(func, {}).get(model, [])):
                changes.append(f"{func}[{model}]: removed (held)")
                data[func][model] = kept
            continue
        entry = {"settings": key, "check": r.get("check") or "", "measured": r.get("reason") or ""}
        if r["verdict"] == Verdict.INCONCLUSIVE:
            entry["verdict"] = Verdict.INCONCLUSIVE.value
        data.setdefault(func, {})[model] = kept + [entry]
        label = "inconclusive at " if "verdict" in entry else ""
        changes.append(f"{func}[{model}]: {label}{entry['check']}: {entry['measured']}")
    data = {f: {m: e for m, e in per.items() if e} for f, per in data.items()}
    data = {f: per for f, per in data.items() if per}
    write_text(path, json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
    table.cache_clear()
    return changes
