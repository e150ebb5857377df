"""The copying read-out: a position-sensitive task in text on which a real model is accurate, read by accuracy.

Each prompt is ``half`` uniformly random ordinary tokens written twice (after the model's BOS where it prepends one).
In the second copy the next token is the one ``half`` positions back, which no content predicts: a model that
continues it reads a fixed relative offset, the kind of position the related paper's Task 1 (the distance between two
trigger words) asks for. A prompt's accuracy is the share of the second copy's positions (all but its last) whose
top-1 next token is the copied one; the logits are taken at those positions only (the final norm and the LM head on
the last decoder layer's output there), so no [prompts, length, vocabulary] tensor is ever held.
"""

from __future__ import annotations

import contextlib
from dataclasses import replace

import numpy as np
import torch

from harness.capture import forward as cap
from harness.capture.corpus import PromptSet, random_token_prompts
from harness.model.edits import Edit
from harness.model.hook_points import hook_name


def copy_prompts(tokenizer, spec, n_prompts: int, half: int, seed: int = 0) -> PromptSet:
    """``n_prompts`` prompts of ``half`` random ordinary tokens twice (BOS first where the model prepends one)."""
    once = random_token_prompts(tokenizer, spec, n_prompts, half + (1 if spec.adds_bos else 0), seed=seed)
    text = once.ids[:, 1:] if spec.adds_bos else once.ids
    ids = np.concatenate([once.ids, text], axis=1)
    return replace(once, ids=ids, name=f"copy{half}")


def scored_positions(prompts: PromptSet, half: int) -> np.ndarray:
    """The positions whose next token is copied: the second copy's, but its last (whose next token is past the end)."""
    return np.arange(prompts.seq_len - half, prompts.seq_len - 1)


def copy_accuracy(model, prompts: PromptSet, half: int, edits: tuple[Edit, ...] = (), batch_size: int = 8, **kw):
    """Each prompt's share of scored positions whose top-1 next token is the copied one [prompts], under ``edits``
    (e.g. ``ZeroHeads``); ``kw`` goes to ``forward.capture`` (progress, workload)."""
    positions = scored_positions(prompts, half)
    at = torch.as_tensor(positions)
    norm, head = model.base.norm, model.hf.get_output_embeddings()

    def predicted(resid: torch.Tensor) -> torch.Tensor:  # [B, n, D] -> [B, scored]: the top-1 next token ids
        h = norm(resid[:, at.to(resid.device)])
        return head(h).argmax(-1)

    last = hook_name("hook_resid_post", model.n_layers - 1)
    label = f"copy accuracy [{'+'.join(e.label for e in edits) or 'unedited'}]"
    with contextlib.ExitStack() as stack:
        for edit in edits:
            stack.enter_context(edit.apply(model))
        got = cap.capture(model, prompts.ids, {"next": (last, predicted)}, batch_size, label, condition=edits, **kw)
    return (got["next"] == prompts.ids[:, positions + 1]).mean(axis=1)
