"""What a claim test measured: ``Figures``, the numbers it records, checked by the plugin after the test body
(the snapshot or baseline, then the paper's value within its tolerance), so a test body holds only measurements
and ``holds``.
"""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np

from harness.outcome.snapshots import ATOL, RTOL, moved_figures
from harness.outcome.verdict import SnapshotDrift, judge
from harness.spec.claims import ClaimSpec
from harness.spec.decision import NOT_HELD
from harness.spec.paper_values import paper_design_gap, paper_level
from harness.stats.intervals import percentile_ci


def json_plain(value):
    """``value`` as plain JSON data: arrays and tuples as lists, numpy numbers as Python's, non-finite floats NaN."""
    if isinstance(value, np.ndarray):
        return json_plain(value.tolist())
    if isinstance(value, (list, tuple)):
        return [json_plain(v) for v in value]
    if isinstance(value, (np.floating, float)):
        v = float(value)
        return v if math.isfinite(v) else float("nan")
    if isinstance(value, (np.integer,)):
        return int(value)
    return value


class Figures:
    """Numbers measured by one claim test: reported in the run report and snapshotted for bundled models.
    Only figures the claim's registry entry declares can be recorded."""

    def __init__(
        self,
        node,
        claim: ClaimSpec,
        snapshot=None,
        model: str | None = None,
        baseline=None,
        update: bool = False,
        seq_len: int | None = None,
        n_prompts: int | None = None,
    ):
        self.node, self.claim, self.snapshot, self.model = node, claim, snapshot, model
        self.n_prompts = n_prompts  # the run's prompts: what an inconclusive paper value's estimate scales from
        self.seq_len = seq_len  # the run's prompt length: what a figure is measured at unless ``add`` says otherwise
        self.values: dict[str, Any] = {}
        self.rows: dict[str, np.ndarray] = {}  # name -> a paper-valued figure's bootstrap rows (its corrected interval)
        self.recorded: dict[str, dict] = {}  # name -> the figure as reported (check_paper adds its paper check)
        self.reported: list[dict] = []  # every figure recorded, in order: what the test's result carries
        self.baseline, self.update, self.snapshot_checked = baseline, update, False
        self.baseline_status: dict[str, str] | None = None  # {"status", "path"} once compared with a baseline

    def add(
        self,
        name: str,
        value,
        paper=None,
        ci=None,
        note: str = "",
        seq_len: int | None = None,
        n: int | None = None,
        unit: str = "prompt",
        rows=None,
    ) -> object:
        """Record a figure. ``paper`` defaults to the paper's number for this model, if it reports one; ``seq_len``
        is the prompt length it was measured at, where that is not the run's (the query bins, the
        sliding-window variant of the per-layer ratio); ``n`` and ``unit`` what its interval resamples, where that is
        not the run's prompts (a synthetic model's evaluation samples): what an inconclusive paper value's estimate
        counts. ``rows``: the bootstrap rows its ``ci`` was read from, kept (not reported) so that a paper value
        judged beside others gets its interval at the corrected level (``check_paper``)."""
        ref = self.claim.paper_value(self.model, name)  # raises UndeclaredFigure for a name not in the registry
        if ref is not None and rows is not None:
            self.rows[name] = np.asarray(rows, dtype=np.float64)
        value = json_plain(value)
        if paper is None and ref is not None:
            paper = ref.value
        self.values[name] = value
        figure = {"name": name, "value": value, "paper": json_plain(paper), "ci": json_plain(ci), "note": note}
        if ref is not None:
            figure["seq_len"] = seq_len or self.seq_len
        if n is not None:
            figure["n"], figure["unit"] = n, unit
        self.recorded[name] = figure
        self.reported.append(figure)
        return value

    def check_snapshot(self) -> None:
        """Compare every figure with the committed snapshot (bundled models at the default settings) or with
        the baseline recorded by the first run at these settings (recorded now if there is none)."""
        self.snapshot_checked = True
        if not self.values:
            return
        if self.snapshot is not None:
            if not (self.values == self.snapshot):
                raise SnapshotDrift(
                    f"{self.claim.id}: measured figures drifted from the snapshot beyond tolerance: "
                    f"{'; '.join(self._snapshot_moves())[:800]} (run with --snapshot-update to "
                    f"accept a deliberate change)"
                )
            return
        if self.baseline is None:
            return
        status, path, moved = self.baseline.check(self.model, self.node.originalname, self.values, self.update)
        self.baseline_status = {"status": status, "path": str(path)}
        if moved:
            raise SnapshotDrift(
                f"{self.claim.id}: measured figures drifted from the baseline {path} beyond "
                f"tolerance: {'; '.join(moved)[:800]} (--baseline-update re-records it)"
            )

    def _snapshot_moves(self) -> list[str]:
        """The figures that moved against the committed snapshot just compared (syrupy keeps what it recalled)."""
        recalled = self.snapshot.executions[self.snapshot.num_executions - 1].recalled_data
        if recalled is None:
            return ["no snapshot committed for this test"]
        stored = json.loads(recalled)
        tol = stored.pop("_tolerance", {})
        return moved_figures(self.values, stored, tol.get("rtol", RTOL), tol.get("atol", ATOL)) or [
            "the snapshot differs in form (not a figure value)"
        ]

    def check_paper(self) -> None:
        """On the paper's models, every figure the paper reports, measured at the paper's design (``PAPER_SEQ_LEN``
        tokens, at least ``PAPER_MIN_PROMPTS`` prompts), is judged by the one rule as an equivalence
        (``PaperValue.decide``): held when this run's interval lies inside the paper's value widened by the registry's
        tolerance, not held when it lies wholly outside, inconclusive when it overlaps an edge; a figure without an
        interval on its point estimate. Measured at another design it is reported, not judged. A figure several tests
        record is judged in the one its declaration names (``ClaimTest.paper_values``) and reported in the others.
        The k paper values a test judges are each read at ``paper_level(k)`` (Bonferroni), from the figure's bootstrap
        rows where the test kept them (``add(rows=...)``). Each reported figure says which (its "paper_check"); every
        figure is decided before any is judged, so a figure that is not held decides the test over an inconclusive
        one."""
        owned = self._owned()
        to_judge = []
        for name, value in self.values.items():
            ref = self.claim.paper_value(self.model, name)
            if ref is None or not isinstance(value, (int, float)):
                continue
            figure = self.recorded[name]
            # a related paper's numbers are declared for the model set that is its design (claims/synthetic.py),
            # so they are at its design wherever they are declared; the main paper's need its 512-token prompts
            n = figure.get("n", self.n_prompts)
            gap = None if self.claim.paper else paper_design_gap(figure.get("seq_len"), n)
            if gap is None and owned is not None and name not in owned:
                gap = f"reported here; its paper value is judged in {self._judged_in(name)}"
            if gap is not None:
                figure["paper_check"] = gap
                continue
            to_judge.append((name, value, ref, figure, n))
        level = paper_level(len(to_judge))
        decided = []
        for name, value, ref, figure, n in to_judge:
            ci, at = figure.get("ci"), 0.95
            if name in self.rows and level > 0.95:
                ci, at = self._interval(self.rows[name], level, n), level
            decision = ref.decide(value, ci, n, figure.get("unit", "prompt"), level=at)
            figure["paper_check"] = decision.describe()
            decided.append((name, ref, decision))
        decided.sort(key=lambda d: d[2].reading != NOT_HELD)  # stable: a not-held figure is judged first
        for name, ref, decision in decided:
            judge(
                decision,
                f"{name} on {self.model}; the paper reports {ref.value:g} (tolerance ± {ref.tolerance:.3g})",
                check=f"paper value of {name}",
            )

    def _owned(self) -> tuple[str, ...] | None:
        """The figures whose paper values this test judges (None: every one it records)."""
        test = self.claim.claim_tests.get(getattr(self.node, "originalname", ""))
        return None if test is None else test.paper_values

    def _judged_in(self, name: str) -> str:
        tests = self.claim.claim_tests.items()
        return next((t for t, c in tests if c.paper_values is not None and name in c.paper_values), "another test")

    @staticmethod
    def _interval(rows: np.ndarray, level: float, n: int | None) -> list[float]:
        return [float(x) for x in percentile_ci(rows[np.isfinite(rows)], level, n=n)]
