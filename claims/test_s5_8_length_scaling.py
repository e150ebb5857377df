"""§5.8 Length scaling (T10).

Mean ΔR² of the first four layers' attention logits (all heads), as the paper captures them, decays with
sequence length, and a piecewise law (flat up to a breakpoint, then a power decay) fits better by AIC than
a single power law. The paper uses sixteen lengths; the default run uses eight, the ``slow`` run sixteen.
"""

import numpy as np
import pytest

from harness import claim, holds
from harness.measure import mean_delta
from harness.reads import Run, ScoresAtPairs
from harness.scaling import compare_aic

FIRST_LAYERS = 4
AIC_MARGIN = claim("T10").threshold("aic_margin")
DEFAULT_LENGTHS = (16, 24, 32, 48, 64, 96, 128, 192)
FULL_LENGTHS = tuple(int(round(16 * 2 ** (k / 3))) for k in range(16))  # 16 ... 512, geometric


def length_profile(session, model, lengths):
    out = []
    for n in lengths:
        run = Run(session.prompts(model, seq_len=n), layers=FIRST_LAYERS)  # the pass stops after layer 4
        Y = session.capture(model, run, ScoresAtPairs(pairs="uniform")).heads_flat()
        out.append(mean_delta(session.pairs(n, "uniform"), Y))
    return np.array(lengths), np.array(out)


def check_length_scaling(model, session, figures, lengths):
    L, y = length_profile(session, model, lengths)
    fits = compare_aic(L, y)
    figures.add("lengths", L)
    figures.add("delta_r2_by_length", y)
    figures.add("power_law_prediction", fits["power"].prediction)
    figures.add("piecewise_prediction", fits["piecewise"].prediction)
    figures.add("power_law_exponent", fits["power"].params["b"])
    figures.add("piecewise_breakpoint", fits["piecewise"].params["L0"])
    figures.add("delta_aic_power_minus_piecewise", fits["delta_aic"])
    rho = np.corrcoef(np.argsort(np.argsort(L)), np.argsort(np.argsort(y)))[0, 1]
    holds(rho < 0 and y[-1] < y[0], f"mean ΔR² does not decay with length: {np.round(y, 5).tolist()} "
                                    f"(rank correlation {rho:.2f})")
    holds(fits["delta_aic"] > AIC_MARGIN, f"the piecewise law does not beat a single power law by AIC "
                                         f"(ΔAIC {fits['delta_aic']:.2f}, need > {AIC_MARGIN})")


@pytest.mark.claim("T10")
def test_T10_leakage_decays_with_length_piecewise(model, session, figures):
    check_length_scaling(model, session, figures, DEFAULT_LENGTHS)


@pytest.mark.slow
@pytest.mark.claim("T10")
def test_T10_leakage_decays_with_length_piecewise_sixteen_lengths(model, session, figures):
    check_length_scaling(model, session, figures, FULL_LENGTHS)
