"""Where the repository keeps things: one place for every path the harness reads or writes."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
FIXTURES = ROOT / "fixtures"
KNOWN_OUTCOMES = FIXTURES / "known_outcomes.json"
BASELINES = FIXTURES / "baselines"
STABILITY = FIXTURES / "stability.json"
REPORTS = ROOT / "reports"
EXAMPLE_RESULTS = REPORTS / "example" / "results.json"  # the committed example run: a workload for estimates
METHODS = ROOT / "METHODS.md"
