"""Any RoPE model by reference: ``hf:<org>/<name>[@<revision>]``, ``path:<dir>``, ``gguf:<file>``.

A reference resolves to a local folder (offline only: ``$ABSPOS_MODELS_DIR`` or the Hugging Face cache, never a
network call; a GGUF file is converted once into the conversion cache) and its ``ModelSpec`` is derived from that
folder's config and tokenizer, never from the model's name: the family marker from ``model_type``, the BOS policy
from what the tokenizer does to a text, the RoPE variant and theta, sliding-window layers and width, layers, heads and
KV heads. Claim applicability then follows from the spec exactly as for the registry's models. A model the harness
cannot measure (no decoder, no RoPE, an attention that does not go through transformers' attention interface) is
refused with one line saying what is missing, before anything is collected.
"""

from __future__ import annotations

from harness.model.reference_files import folder_of
from harness.model.reference_parse import KINDS, Reference, ReferenceError, parse
from harness.model.reference_spec import derive_spec
from harness.spec.models import REGISTRY, ModelSpec, WeightsUnavailable, WrongWeights, register_model


def paper_alias(ref: Reference) -> ModelSpec | None:
    """The registry's paper model this hf: reference names (its hub id), if any."""
    if ref.kind != "hf":
        return None
    return next((s for s in REGISTRY.values() if s.group == "paper" and s.hub_id == ref.target), None)


def register(token: str, log=print) -> str | None:
    """Resolve a ``kind:`` reference, register its derived spec and return its name (None for a registry name).

    ``hf:`` of a paper model's hub id without a revision is that paper model (its paper values apply); with a
    revision its folder must still be that model (``WrongWeights`` otherwise, one line)."""
    ref = parse(token)
    if ref is None:
        return None
    alias = paper_alias(ref)
    if alias is not None and not ref.revision:
        from harness.model.availability import ensure_available

        try:
            ensure_available(alias)  # a folder holding another model, or untrained weights: refused now, not at load
        except WeightsUnavailable:
            pass  # absent: its tests skip with the one-line reason, like the paper model's
        return alias.name
    folder = folder_of(ref, log)
    if ref.kind != "gguf":  # a rehearsal build (random weights) is never measured as a model
        from harness.model.rehearsal_mark import check_not_rehearsal

        check_not_rehearsal(str(ref), folder)
    if alias is not None:
        from harness.model.weights import check_identity

        check_identity(alias, folder)
    spec = derive_spec(ref, folder)
    if spec.gguf or spec.folder:  # weights that are not finite, zeros or untrained: one line now, never a verdict
        from harness.model.availability import check_trained
        from harness.model.checkpoint_checks import check_weights, weight_files

        if spec.gguf or weight_files(folder):  # none: its tests skip at load, naming what is missing
            if spec.folder:
                check_weights(spec, folder, log)
            check_trained(spec, log)  # its next-token loss, once per weights (a GGUF converted for it)
    known = REGISTRY.get(spec.name)
    if known is not None and known.source != spec.source:
        raise ReferenceError(
            f"{ref}: gives the model name {spec.name!r}, which {known.source} already has; rename one of them"
        )
    register_model(spec)
    return spec.name


__all__ = [
    "KINDS",
    "Reference",
    "ReferenceError",
    "WeightsUnavailable",
    "WrongWeights",
    "derive_spec",
    "parse",
    "register",
]
