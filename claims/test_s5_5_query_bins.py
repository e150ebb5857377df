"""§5.5 Refined per-query binning (Figure 1, Table 7, Appendix C).

Head-mean ΔR² fitted separately in doubling bins of the query position: the leakage concentrates in the
first bin, where removing the causal mask lowers it well below the causal value (the causal-mask share,
Eq. 5); at later bins the causal and bidirectional curves meet (indistinguishable within bootstrap CIs).
"""

import numpy as np
import pytest

from harness import holds
from harness.edits import Bidirectional
from harness.leakage import causal_mask_share, query_bins
from harness.measure import Leakage


def profiles(session, model):
    """(edges, causal, bidirectional, and their bootstrap rows), computed once per model (three tests read it)."""
    return session.memo(model, "T7 bin profiles", lambda: _profiles(session, model))


def _profiles(session, model):
    leak = Leakage(session, model)
    edges = query_bins(leak.prompts.seq_len)
    return edges, leak.bin_profile(edges=edges), leak.bin_profile(Bidirectional(), edges=edges), \
        leak.bin_profile(edges=edges, boot=True), leak.bin_profile(Bidirectional(), edges=edges, boot=True)


def ci(samples):
    return np.quantile(samples, [0.025, 0.975], axis=0).T


@pytest.mark.claim("T7")
def test_T7_leakage_concentrates_in_first_query_bin(model, session, figures):
    edges, causal, bi, causal_b, bi_b = profiles(session, model)
    figures.add("bin_edges", edges)
    figures.add("delta_r2_by_bin_causal", causal)
    figures.add("delta_r2_by_bin_bidirectional", bi)
    figures.add("first_bin_causal", causal[0], ci=ci(causal_b)[0])
    figures.add("first_bin_over_second", causal[0] / causal[1])
    holds(np.argmax(causal) == 0, f"the largest causal bin is [{edges[np.argmax(causal)]}, "
                                  f"{edges[np.argmax(causal) + 1]}), not the first ({np.round(causal, 4).tolist()})")


@pytest.mark.claim("T7")
def test_T7_bidirectional_far_below_causal_in_first_bin(model, session, figures):
    edges, causal, bi, causal_b, bi_b = profiles(session, model)
    gap_ci = ci(causal_b - bi_b)[0]
    share = causal_mask_share(causal[0], bi[0])
    figures.add("first_bin_causal", causal[0], ci=ci(causal_b)[0])
    figures.add("first_bin_bidirectional", bi[0], ci=ci(bi_b)[0])
    figures.add("first_bin_causal_mask_share", share, ci=ci(1 - bi_b[:, :1] / causal_b[:, :1])[0])
    figures.add("first_bin_gap_ci", gap_ci)
    holds(gap_ci[0] > 0, f"first bin: bidirectional {bi[0]:.4g} is not significantly below causal {causal[0]:.4g} "
                         f"(95% CI of the gap {np.round(gap_ci, 4).tolist()})")


@pytest.mark.claim("T7")
def test_T7_curves_meet_at_later_bins(model, session, figures):
    edges, causal, bi, causal_b, bi_b = profiles(session, model)
    gaps = ci(causal_b - bi_b)
    figures.add("last_bin_gap", causal[-1] - bi[-1], ci=gaps[-1])
    figures.add("last_bin_gap_over_first_bin_gap", (causal[-1] - bi[-1]) / (causal[0] - bi[0]))
    holds(gaps[-1][0] <= 0 <= gaps[-1][1],
          f"at the last bin [{edges[-2]}, {edges[-1]}) causal {causal[-1]:.4g} and bidirectional {bi[-1]:.4g} "
          f"still differ (95% CI of the gap {np.round(gaps[-1], 5).tolist()})")
