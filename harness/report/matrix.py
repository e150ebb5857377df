"""The claims × models matrix: how many of each claim's tests ended in each verdict on each model. One count for
the report's table (harness.report.document) and the run's terminal summary (harness.run.records); a test
without a model is counted under its family ("llama family", T13) or "(no model)" (EQ3's softmax).
"""

from __future__ import annotations

from collections import Counter
from typing import NamedTuple

from harness.outcome.verdict import Verdict
from harness.report.cells import claim_key, model_label


class Matrix(NamedTuple):
    claims: list[str]  # claim order (claim_key: the registry's)
    models: list[str]  # the models given, then any other a record is counted under, in the records' order
    cells: dict  # {(claim, model): Counter of verdicts, in the order first seen}; absent: no test there

    def counts(self, claim: str, model: str) -> Counter:
        return self.cells.get((claim, model), Counter())


def verdict_matrix(records: list, models=()) -> Matrix:
    cells: dict = {}
    for r in records:
        cells.setdefault((r["claim"], model_label(r)), Counter())[Verdict.of(r)] += 1
    claims = sorted(dict.fromkeys(r["claim"] for r in records), key=claim_key)
    return Matrix(claims, list(dict.fromkeys([*models, *(model_label(r) for r in records)])), cells)
