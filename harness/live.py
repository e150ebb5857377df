"""A model held in memory: a loaded Hugging Face causal LM (``AutoModelForCausalLM``, or an nnsight
``LanguageModel`` around one) and its tokenizer, measured as the ``path:`` references are.

Its spec is derived as a reference's is (``harness.model.reference_spec.spec_of``: family, BOS policy from what the
tokenizer does, RoPE, windows and shape from the config; a model the harness cannot measure refused in one line), and
its weights pass the same check before anything is measured: trained weights predict the next token of real text far
below chance (``harness.model.next_token_loss``; random or untrained weights are refused in one line, never given a
verdict). ``verify(model, tokenizer, claims=...)`` runs the claims on it as on any model: it is saved (safetensors and
the tokenizer's files) into a temporary folder and run as ``path:<that folder>``, so the run, its checks and its
report are the references' own, in a pytest subprocess; the folder goes when the run ends. ``harness.measure``
measures it in this process instead. Importing this module loads neither torch nor transformers.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any, Iterator

TRANSFORMER_LENS = (
    "a TransformerLens HookedTransformer keeps its weights in its own layout (folded and fused), not the Hugging Face "
    "model's; give the Hugging Face model it was loaded from (AutoModelForCausalLM.from_pretrained) and its tokenizer"
)


class LiveModelError(ValueError):
    """An in-memory model (or tokenizer) the harness cannot use: one line saying why."""


def is_model(obj: Any) -> bool:
    """Whether ``obj`` is a model object rather than names (a str, or a list of them, or None)."""
    if obj is None or isinstance(obj, str):
        return False
    if isinstance(obj, (list, tuple, set)):
        return not all(isinstance(x, str) for x in obj)
    return True


def unwrap(model: Any, tokenizer: Any = None) -> tuple[Any, Any]:
    """(the Hugging Face causal LM, its tokenizer) of what was given: the model itself, or an nnsight
    ``LanguageModel``'s (its ``_model`` and ``tokenizer``); LiveModelError (one line) for anything else."""
    if type(model).__name__ == "HookedTransformer" and hasattr(model, "cfg"):
        raise LiveModelError(TRANSFORMER_LENS)
    inner = model
    for attr in ("_model", "model"):  # nnsight's LanguageModel keeps the transformers model here
        if not hasattr(inner, "save_pretrained") and hasattr(inner, attr):
            candidate = getattr(inner, attr)
            if hasattr(candidate, "save_pretrained") and hasattr(candidate, "config"):
                tokenizer = tokenizer if tokenizer is not None else getattr(model, "tokenizer", None)
                inner = candidate
    if not (hasattr(inner, "save_pretrained") and hasattr(inner, "config") and hasattr(inner, "parameters")):
        raise LiveModelError(
            f"{type(model).__name__} is not a Hugging Face model: give a loaded AutoModelForCausalLM (or an "
            f"nnsight LanguageModel) and its tokenizer, or a model name or reference (hf:, path:, gguf:)"
        )
    tokenizer = tokenizer if tokenizer is not None else getattr(model, "tokenizer", None)
    if tokenizer is None or not callable(tokenizer):
        raise LiveModelError(
            f"{type(inner).__name__}: give its tokenizer too (verify(model, tokenizer, ...)): the claims' prompts "
            f"are tokenized text, and the BOS policy is read from what the tokenizer does"
        )
    return inner, tokenizer


def stem(model: Any) -> str:
    """A file-name-safe name for the model: its checkpoint's name (``config._name_or_path``), else its class's."""
    named = str(getattr(model.config, "_name_or_path", "") or "").rstrip("/").split("/")[-1]
    return re.sub(r"[^\w.-]", "-", named or type(model).__name__).strip(".-") or "model"


def live_spec(model: Any, tokenizer: Any):
    """The spec of an in-memory model, derived as a ``path:`` reference's (one-line ``LiveModelError`` for a model the
    harness cannot measure)."""
    from harness.model.hooks import structure_problems
    from harness.model.reference_parse import Reference, ReferenceError
    from harness.model.reference_spec import measurability_problems, spec_of

    ref = Reference("path", f"in-memory/{stem(model)}")
    problems = measurability_problems(model.config) or structure_problems(model)
    if problems:
        raise LiveModelError(f"{type(model).__name__}: the harness cannot measure this model: {problems[0]}")
    try:
        spec = spec_of(ref, model.config, tokenizer, folder=None, gguf={}, note="; held in memory")
    except ReferenceError as e:
        raise LiveModelError(str(e)) from None
    return replace(spec, name=f"memory-{stem(model)}", source=f"in memory: {type(model).__name__} ({stem(model)})")


def check_trained(model: Any, tokenizer: Any, name: str) -> dict:
    """The next-token loss figure of the model as it is (its device and dtype); ``WrongWeights`` (one line) when its
    weights are not trained (``harness.model.next_token_loss.problem``), as for every model given by reference."""
    from harness.model import next_token_loss
    from harness.spec.models import WrongWeights

    training = model.training
    model.eval()  # dropout off, as in any run; the model is handed back in its mode
    try:
        figure = next_token_loss.measure(model, tokenizer, None)
    finally:
        model.train(training)
    problem = next_token_loss.problem(figure)
    if problem is not None:
        raise WrongWeights(f"{name} holds {problem}; refusing it")
    return figure


@contextmanager
def saved_for_run(model: Any, tokenizer: Any, workdir: str | Path | None = None) -> Iterator[tuple[str, list[str]]]:
    """What ``verify`` runs a model held in memory as: checked here first (its spec, its weights trained: one-line
    ``LiveModelError`` before anything is written), then saved into a temporary folder under ``workdir``; yields
    (``path:<folder>``, the run's options: its baselines in that folder too, a model in memory having no record to
    compare with); the folder is deleted when the block ends."""
    from harness.spec.models import WrongWeights

    hf, tok = unwrap(model, tokenizer)
    spec = live_spec(hf, tok)
    try:
        check_trained(hf, tok, spec.name)
    except WrongWeights as e:
        raise LiveModelError(str(e)) from None
    with tempfile.TemporaryDirectory(prefix="abspos-in-memory-", dir=workdir) as tmp:
        folder = save(hf, tok, Path(tmp))
        yield f"path:{folder}", ["--baseline-dir", str(Path(tmp) / "baselines")]


def weights_bytes(model: Any) -> int:
    return sum(p.numel() * p.element_size() for p in model.parameters())


def save(model: Any, tokenizer: Any, folder: Path) -> Path:
    """The model and its tokenizer saved into ``folder/memory-<stem>`` (safetensors), as a ``path:`` run reads them; a
    folder without room for the weights is one line before anything is written."""
    need, free = weights_bytes(model), shutil.disk_usage(folder).free
    if need * 1.05 > free:
        raise LiveModelError(
            f"saving {stem(model)} for the run needs {need / 1e9:.1f} GB in {folder}, which has {free / 1e9:.1f} GB "
            f"free: give verify(..., workdir=<a folder with room>)"
        )
    target = folder / f"memory-{stem(model)}"  # the run's label, path-memory-<stem>: never a bundled model's name
    model.save_pretrained(target, safe_serialization=True)
    tokenizer.save_pretrained(target)
    return target
