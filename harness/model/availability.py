"""Whether a model can be measured on this machine, before anything is loaded: ``ensure_available``, for every
kind of model (the registry's, the paper's, references, and the rehearsals built on first use)."""

from __future__ import annotations

from harness.model import rehearsal, weights
from harness.spec.models import ModelSpec


def ensure_available(spec: ModelSpec) -> None:
    """WeightsUnavailable (one line saying how to provide them) when ``spec``'s weights are not here and cannot be
    made here; WrongWeights (one line) when its folder holds another model than the one named. A registered
    rehearsal is available when its paper model's tokenizer files are and (not built yet) its build fits this
    machine's disk and memory (``rehearsal.rehearsal_available``); any other model: ``weights.ensure_available``."""
    if spec.rehearses:
        rehearsal.rehearsal_available(spec)
    else:
        weights.ensure_available(spec)
