"""Reading a run's results.json: one checked loader for every tool that reads one (report build and compare,
known-outcome recording, the stability record). A missing, unreadable, empty, invalid or foreign file is a
``ResultsFileError`` whose message is one line naming the file and what is wrong with it.
"""

from __future__ import annotations

import json
from pathlib import Path

from harness.outcome.verdict import VERDICTS


class ResultsFileError(ValueError):
    """A results.json that cannot be read as a claims run; the message is one line naming the file and why."""


def results_file(p) -> Path:
    """The results.json a command-line argument names: the file itself, or results.json in a run folder."""
    p = Path(p)
    return p / "results.json" if p.is_dir() else p


def _record_problem(r) -> str | None:
    """What keeps one record from being reported (None if nothing): the keys document() and diff() rely on."""
    if not isinstance(r, dict):
        return "is not an object"
    for k in ("test", "claim"):
        if not isinstance(r.get(k), str):
            return f'has no "{k}" string'
    if r.get("model") is not None and not isinstance(r["model"], str):
        return '"model" is not a string'
    if r.get("verdict") and (not isinstance(r["verdict"], str) or r["verdict"] not in VERDICTS):
        return f'has an unknown verdict {r["verdict"]!r}'
    if not r.get("verdict") and not isinstance(r.get("outcome"), str):
        return 'has no "outcome" string'
    if not isinstance(r.get("figures"), list) or not all(
            isinstance(f, dict) and isinstance(f.get("name"), str) for f in r["figures"]):
        return 'has no "figures" list of objects with a "name"'
    if not all(isinstance(r.get(k) or 0, (int, float)) for k in ("seconds", "forward_seconds", "layer_tokens")):
        return "has a non-numeric time"
    return None


def schema_problem(results) -> str | None:
    """What makes parsed JSON not a claims results.json (None if it is one)."""
    if not isinstance(results, dict) or not isinstance(results.get("records"), list):
        return 'no "records" list'
    for key, kind in (("settings", dict), ("versions", dict), ("models", list)):
        if not isinstance(results.get(key) or kind(), kind):
            return f'"{key}" is not a{" dict" if kind is dict else " list"}'
    if not all(isinstance(m, str) for m in results.get("models") or []):
        return '"models" is not a list of names'
    info = results.get("interrupted")  # a partial run: {"by": "SIGTERM", "not_run": [node ids]} (harness.run.context)
    if info is not None and not (isinstance(info, dict) and isinstance(info.get("not_run", []), list)):
        return '"interrupted" is not an object with a "not_run" list'
    for i, r in enumerate(results["records"]):
        if problem := _record_problem(r):
            name = f", {r['test']}," if isinstance(r, dict) and isinstance(r.get("test"), str) else ""
            return f"record {i}{name} {problem}"
    return None


def load_results(p) -> dict:
    """A run's results.json (a file, or a run folder holding one), checked to be a claims run; a missing,
    unreadable, empty, invalid or foreign file raises ResultsFileError with one line naming it and why."""
    path = results_file(p)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ResultsFileError(f"{path}: no such file") from None
    except UnicodeDecodeError:
        raise ResultsFileError(f"{path}: not UTF-8 text") from None
    except OSError as e:
        raise ResultsFileError(f"{path}: cannot read it ({e.strerror})") from None
    if not text.strip():
        raise ResultsFileError(f"{path}: empty file")
    try:
        results = json.loads(text)
    except json.JSONDecodeError as e:
        raise ResultsFileError(f"{path}: not valid JSON (truncated? {e.msg}: line {e.lineno} "
                               f"column {e.colno})") from None
    if problem := schema_problem(results):
        raise ResultsFileError(f"{path}: not a claims results.json ({problem})")
    return results
