"""§5.8 Length scaling (T10).

Mean ΔR² of the first four layers' attention logits (all heads), as the paper captures them, at sixteen
lengths, decays with sequence length, and a piecewise law (flat up to a breakpoint, then a power decay) fits
better by AIC than a single power law. A best breakpoint at the edge of the length grid means the piecewise
law has degenerated to the power law (or to a constant): that is "no interior breakpoint", never a ΔAIC.
"""

import numpy as np
import pytest

from harness import claim, holds
from harness.capture.measure import mean_delta
from harness.capture.reads import Run, ScoresAtPairs
from harness.stats.scaling import compare_aic, interior_breakpoint

FIRST_LAYERS = 4
AIC_MARGIN = claim("T10").threshold("aic_margin")
LENGTHS = tuple(int(round(16 * 2 ** (k / 3))) for k in range(16))  # the paper's sixteen lengths: 16 ... 512, geometric


def length_profile(session, model, lengths):
    out = []
    for n in lengths:
        run = Run(session.prompts(model, seq_len=n), layers=FIRST_LAYERS)  # the pass stops after layer 4
        Y = session.capture(model, run, ScoresAtPairs(pairs="uniform")).heads_flat()
        out.append(mean_delta(session.pairs(n, "uniform"), Y))
    return np.array(lengths), np.array(out)


@pytest.mark.claim("T10")
def test_T10_leakage_decays_with_length_piecewise(model, session, figures):
    L, y = length_profile(session, model, LENGTHS)
    fits = compare_aic(L, y)
    L0 = fits["piecewise"].params["L0"]
    interior = interior_breakpoint(L, L0)
    figures.add("lengths", L)
    figures.add("delta_r2_by_length", y)
    figures.add("power_law_prediction", fits["power"].prediction)
    figures.add("piecewise_prediction", fits["piecewise"].prediction)
    figures.add("power_law_exponent", fits["power"].params["b"])
    figures.add("piecewise_breakpoint", L0 if interior else None)
    figures.add("interior_breakpoint", interior)
    figures.add(
        "delta_aic_power_minus_piecewise",
        fits["delta_aic"] if interior else None,
        note="" if interior else "no interior breakpoint: the piecewise law is the power law here",
    )
    rho = np.corrcoef(np.argsort(np.argsort(L)), np.argsort(np.argsort(y)))[0, 1]
    holds(
        rho < 0 and y[-1] < y[0],
        f"mean ΔR² does not decay with length: {np.round(y, 5).tolist()} (rank correlation {rho:.2f})",
    )
    holds(
        interior,
        f"no interior breakpoint: the best piecewise fit puts L0 at the edge of the length grid "
        f"({L0:.0f}, grid {L.min()}-{L.max()}), where it is the power law itself",
    )
    holds(
        fits["delta_aic"] > AIC_MARGIN,
        f"the piecewise law does not beat a single power law by AIC "
        f"(ΔAIC {fits['delta_aic']:.2f}, need > {AIC_MARGIN})",
    )
