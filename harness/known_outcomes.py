"""Claims measured not to hold on a model: strict xfails, kept as data in fixtures/known_outcomes.json.

Each entry is written after a run, carries the measured figure and the reason, and is strict: if the
claim starts to hold, the xfail fails and the entry must be removed.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

PATH = Path(__file__).resolve().parent.parent / "fixtures" / "known_outcomes.json"


@lru_cache(maxsize=1)
def table() -> dict:
    return json.loads(PATH.read_text()) if PATH.exists() else {}


def reason(test_name: str, model: str | None) -> str | None:
    entry = table().get(test_name, {})
    return entry.get(model) if model else None
