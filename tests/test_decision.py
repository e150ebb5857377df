"""The one decision rule (harness/spec/decision.py): held, not held or inconclusive from an interval and a threshold,
its margin and its estimate of the prompts that would decide, and the paper values judged through it."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.outcome.verdict import (
    ClaimNotHeld,
    Inconclusive,
    Verdict,
    conclude,
    decide,
    deciding_margin,
    judge,
    judging,
)
from harness.spec.claims import claim
from harness.spec.decision import HELD, INCONCLUSIVE, NOT_HELD, at_least, at_most, within
from harness.spec.paper_values import PaperValue, magnitude, share, sink

finite = st.floats(-1e3, 1e3, allow_nan=False)
positive = st.floats(1e-4, 1e3, allow_nan=False)


@st.composite
def intervals(draw):
    a, b, c = sorted(draw(st.lists(finite, min_size=3, max_size=3)))
    return b, (a, c)  # an estimate inside its interval


@given(intervals(), finite)
def test_a_one_sided_criterion_is_held_only_when_the_whole_interval_clears_it(est_ci, threshold):
    est, (lo, hi) = est_ci
    up, down = at_least(est, (lo, hi), threshold), at_most(est, (lo, hi), threshold)
    assert (up.reading == HELD) == (lo > threshold) and (up.reading == NOT_HELD) == (hi < threshold)
    assert (down.reading == HELD) == (hi < threshold) and (down.reading == NOT_HELD) == (lo > threshold)
    for d in (up, down):
        assert (d.margin >= 0) == (d.reading != INCONCLUSIVE) or d.margin == 0


@given(intervals(), finite, positive)
def test_an_equivalence_is_held_inside_its_margin_and_not_held_wholly_outside(est_ci, low, width):
    est, (lo, hi) = est_ci
    high = low + width
    d = within(est, (lo, hi), low, high)
    assert (d.reading == HELD) == (low <= lo and hi <= high)
    assert (d.reading == NOT_HELD) == (hi < low or lo > high)
    assert d.reading == INCONCLUSIVE or d.margin >= 0


@given(intervals(), positive, st.floats(0.01, 2.0))
def test_an_interval_excluding_the_papers_value_by_more_than_the_tolerance_is_never_held(est_ci, value, rtol):
    """Any interval that reaches beyond the paper's value ± its tolerance is never held; one wholly beyond is not held."""
    est, (lo, hi) = est_ci
    ref = PaperValue(value, rtol=rtol)
    low, high = ref.margin
    d = ref.decide(est, (lo, hi), n=16)
    if lo < low or hi > high:
        assert d.reading != HELD
    if lo > high or hi < low:
        assert d.reading == NOT_HELD


def test_the_small_share_tolerance_is_relative_and_meets_the_absolute_one_at_0_3():
    assert share(0.09).tolerance == pytest.approx(0.03) and share(0.09).margin[1] < 0.09 * 1.5
    assert share(0.29).tolerance < 0.10 and share(0.3).tolerance == pytest.approx(0.10)
    assert share(0.61).tolerance == pytest.approx(0.10)
    # 2x the Qwen bi/causal share, even measured exactly, is not held; the share itself inside a tight CI is held
    assert share(0.09).decide(0.18, (0.17, 0.19)).reading == NOT_HELD
    assert share(0.09).decide(0.09, (0.08, 0.10)).reading == HELD
    assert magnitude(0.0143).decide(0.0143, (0.0137, 0.0149)).reading == HELD  # the paper's own CI
    assert sink(0.92).decide(0.9).interval is None  # a sink without an interval: judged on its point estimate


def test_every_small_paper_share_in_the_catalogue_has_a_relative_tolerance():
    for cid in ("T6", "T7", "T8"):
        for f in claim(cid).figures:
            for ref in f.paper.values():
                if ref.atol and not ref.rtol:  # a share
                    assert ref.value >= 0.3 or ref.tolerance <= ref.value / 3 + 1e-12, (cid, f.name, ref)


@pytest.mark.parametrize("n", [16, 32, 64])
def test_the_prompts_an_inconclusive_decision_names_would_decide_it(n):
    """Shrink the interval about its estimate by sqrt(n / n'): at the named n' it is decided, at half of it not."""
    est, lo, hi, threshold = 0.10, 0.06, 0.16, 0.08
    d = at_least(est, (lo, hi), threshold, n=n)
    assert d.reading == INCONCLUSIVE and d.prompts_to_decide is not None
    k = math.sqrt(n / d.prompts_to_decide)
    assert at_least(est, (est - (est - lo) * k, est + (hi - est) * k), threshold).reading == HELD
    k = math.sqrt(n / (d.prompts_to_decide / 2))
    assert at_least(est, (est - (est - lo) * k, est + (hi - est) * k), threshold).reading == INCONCLUSIVE
    assert "prompts would decide it" in d.describe()


def test_an_estimate_on_the_threshold_names_no_prompt_count():
    d = at_least(0.5, (0.4, 0.6), 0.5, n=16)
    assert d.reading == INCONCLUSIVE and d.prompts_to_decide is None and "no prompt count" in d.describe()


def test_a_point_estimate_says_so_and_is_decided_on_the_point():
    assert at_least(0.5, None, 0.4).reading == HELD and "point estimate" in at_least(0.5, None, 0.4).describe()
    assert at_least(0.4, None, 0.4).reading == NOT_HELD  # "above" is strict
    assert within(0.5, [float("nan"), 1.0], 0.0, 1.0).interval is None


def test_judge_keeps_an_inconclusive_criterion_until_the_test_concludes_and_a_later_not_held_wins():
    with judging() as log:
        judge(at_least(0.10, (0.06, 0.16), 0.08, n=16), "first", check="a")
        with pytest.raises(ClaimNotHeld) as e:
            judge(at_least(0.01, (0.0, 0.02), 0.08), "second", check="b")
    assert not isinstance(e.value, Inconclusive) and e.value.check == "b" and len(log) == 2
    with judging() as log:
        judge(at_least(0.10, (0.06, 0.16), 0.08, n=16), "first", check="a")
        judge(at_least(0.10, (0.09, 0.11), 0.08), "held", check="c")
        with pytest.raises(Inconclusive) as e:
            conclude(log)
    assert e.value.check == "a" and "inconclusive" in str(e.value)
    with pytest.raises(Inconclusive):  # outside a claim test it is raised at once
        judge(at_least(0.10, (0.06, 0.16), 0.08, n=16), "alone", check="a")


def test_decide_reads_an_inconclusive_criterion_as_inconclusive_never_not_held():
    e = Inconclusive("straddles", "a")
    assert decide("call", e)[0] is Verdict.INCONCLUSIVE
    assert decide("call", e, known={"check": "a", "measured": "m", "verdict": "inconclusive"})[:2] == (
        Verdict.INCONCLUSIVE,
        True,
    )
    assert decide("call", None, rehearses="llama-3.2-1b", not_held=e)[2].endswith(
        "would read: inconclusive at a: straddles"
    )


def test_an_interval_that_misses_its_own_estimate_is_widened_to_reach_it_and_a_nan_is_an_error():
    assert within(0.5, [0.1, 0.2], 0.05, 0.25).reading == INCONCLUSIVE  # never held off an interval excluding 0.5
    assert at_least(0.01, [0.1, 0.2], 0.05).reading == INCONCLUSIVE
    with pytest.raises(ValueError):
        within(float("nan"), None, 0.1, 0.2)
    with pytest.raises(ValueError):
        at_least(0.5, (0.4, 0.6), float("nan"))


def test_the_inconclusive_margin_is_the_crossing_on_the_estimates_side():
    d = at_least(0.5, [-5.0, 1.0], 0.0, n=16)  # the low arm crosses by 5: that is what must shrink
    assert d.reading == INCONCLUSIVE and d.margin == pytest.approx(-5.0)
    assert "not given" in within(0.15, [0.0, 0.3], 0.1, 0.2).describe()  # no n: said, not "sits on the threshold"


def test_the_deciding_margin_is_the_failing_criterions_own_even_under_a_shared_check_name():
    with judging() as log:
        judge(at_least(0.10, (0.09, 0.11), 0.08), "held", check="same")
        with pytest.raises(ClaimNotHeld) as e:
            judge(at_least(0.01, (0.0, 0.02), 0.08), "not held", check="same")
    assert deciding_margin(log, e.value) == pytest.approx(0.06)
    assert deciding_margin(log[:1], None) == pytest.approx(0.01) and deciding_margin([], None) is None


def test_an_inconclusive_test_carries_its_criterions_margin():
    with judging() as log:
        judge(at_least(0.10, (0.06, 0.16), 0.08, n=16), "first", check="a")
        with pytest.raises(Inconclusive) as e:
            conclude(log)
    assert deciding_margin(log, e.value) == pytest.approx(-0.02)


def test_a_corrected_interval_says_its_level():
    d = at_least(0.2, (0.15, 0.25), 0.1, 64, level=1 - 0.05 / 3)
    assert d.held and "98.33% prompt-level CI" in d.describe()
    assert "95% prompt-level CI" in at_least(0.2, (0.15, 0.25), 0.1, 64).describe()
    assert within(0.0, (-0.1, 0.1), -0.2, 0.2, 16, level=0.9).level == 0.9
