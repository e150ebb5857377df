"""What a claims run collects, and where: xdist's distribution (one model's tests on one worker), the items of a
target kind the run did not select, and which tests rehearse rather than decide (random weights, or the related
paper's synthetic models at smoke size). Called as a run collects (harness.run.claims_session, harness.run.claim_run).
"""

from __future__ import annotations

from harness.spec.applies import family_sizes
from harness.spec.models import REGISTRY


def keep_models_on_one_worker(config) -> None:
    """``-n N`` without ``--dist``: xdist's default ``load`` would send one model's tests to every worker, each
    making the model's captures again; ``loadgroup`` keeps each model on one worker (its ``xdist_group``). A
    ``--dist`` given is left as it is."""
    if getattr(config.option, "dist", "no") == "load" and not any(
        a.startswith(("--dist", "-d")) for a in config.invocation_params.args
    ):
        config.option.dist = "loadgroup"


SYNTHETIC_SMOKE = "the related paper's synthetic models at smoke size (seconds of training)"


def unselected(item, run) -> bool:
    """A claim test parametrized over a target kind the run selected none of (pytest's empty parameter set), or, in
    a run of synthetic sets alone, a claim test on real models or none."""
    skip = item.get_closest_marker("skip")
    if skip is not None and str(skip.kwargs.get("reason", "")).startswith("got empty parameter set"):
        return True
    params = item.callspec.params if hasattr(item, "callspec") else {}
    return bool(item.get_closest_marker("claim") and run.synthetic and not run.models and "synthetic" not in params)


def rehearsal_of(model: str | None, family: str | None, selected) -> str | None:
    """The paper model(s) a claim test rehearses: its model's (``ModelSpec.rehearses``), or for a per-family test
    those of the rehearsals on its ladder; None for any other test."""
    names = [model] if model else family_sizes(family, selected) if family else []
    return ", ".join(r for r in (REGISTRY[m].rehearses for m in names) if r) or None
