"""§5.9 Scale: composition shifts, magnitude is preserved (T13, Table 10).

Within a family with several sizes (the paper's Llama-3.2-1B, 3.2-3B, 3.1-8B): total mean ΔR² stays about
constant, while the residual-stream share ΔR²(bi)/ΔR²(causal) rises from the smallest size and saturates.
Families with one available size cannot test this and skip with that reason.
"""

import numpy as np
import pytest

from harness.claims import holds
from harness.leakage import delta_r2
from harness.measure import leakage_inputs, pair_targets
from harness.models import FAMILIES, REGISTRY, WeightsUnavailable

CONSTANT = 0.25  # "about constant": every size within 25% of the family mean (paper: 0.0121-0.0143, within 9%)
SIZES = {"llama": ("llama-3.2-1b", "llama-3.2-3b", "llama-3.1-8b")}


def family_sizes(config_models, family):
    """The family's models selected for this run, in size order: the paper's ladder, else the bundled one."""
    ladder = SIZES.get(family, ())
    chosen = [m for m in ladder if m in config_models]
    return chosen or [m for m in config_models if REGISTRY[m].family == family]


@pytest.mark.claim("T13")
@pytest.mark.parametrize("family", [  # a family with a paper ladder is also `paper`: the nightly -m "paper and llama"
    pytest.param(f, marks=[getattr(pytest.mark, f)] + ([pytest.mark.paper] if f in SIZES else [])) for f in FAMILIES])
def test_T13_leakage_constant_and_residual_share_rises_with_scale(family, session, request, figures):
    from harness.pytest_plugin import selected_models

    sizes = family_sizes(selected_models(request.config), family)
    if len(sizes) < 2:
        pytest.skip(f"{family}: {len(sizes)} model size selected ({', '.join(sizes) or 'none'}); the scale claim "
                    f"needs two or more sizes of one family (the paper's Llama 1B/3B/8B)")
    base, bi = [], []
    for name in sizes:
        try:
            pairs, text, _ = leakage_inputs(session, name)
        except WeightsUnavailable as e:
            pytest.skip(f"{family} scale ladder incomplete: {e}")
        base.append(float(delta_r2(pairs, pair_targets(session, name, text)).delta.mean()))
        bi.append(float(delta_r2(pairs, pair_targets(session, name, text, ("bidirectional",))).delta.mean()))
        session.release(name)
    base, share = np.array(base), np.array(bi) / np.array(base)
    figures.add("models", sizes)
    figures.add("mean_delta_causal_by_size", base)
    figures.add("residual_stream_share_by_size", share)
    figures.verify()
    spread = np.abs(base / base.mean() - 1).max()
    holds(spread <= CONSTANT, f"total leakage varies {spread:.0%} across sizes ({np.round(base, 4).tolist()})")
    holds(share[1] > share[0], f"residual-stream share does not rise from the smallest size: {np.round(share, 3).tolist()}")
    if len(share) > 2:
        holds(abs(share[2] - share[1]) < share[1] - share[0],
              f"residual-stream share does not saturate: {np.round(share, 3).tolist()}")
