"""Whether a loaded tokenizer is the one a model's spec describes (``check_tokenizer``): every id it can give has an
embedding row, and it prepends the BOS token the spec names (or none); for the paper's models (and their rehearsals)
also its size and the ids of a probe sentence as the published tokenizer gives them
(``harness.spec.paper_configs.PUBLISHED``). The weights beside it: ``harness.model.checkpoint_checks``."""

from __future__ import annotations

from pathlib import Path

from harness.spec.models import ModelSpec, WrongWeights
from harness.spec.paper_configs import PUBLISHED


def tokenizer_problem(spec: ModelSpec, tok, vocab_size: int | None) -> str | None:
    """Why a loaded tokenizer is not the one ``spec`` describes (None when it is), as a phrase after "its tokenizer"."""
    size = len(tok)
    if vocab_size and size > vocab_size:
        return (
            f"has {size:,} tokens and its embedding {vocab_size:,} rows (ids past {vocab_size - 1:,} would index "
            f"no embedding): another model's tokenizer"
        )
    ids = list(tok("x")["input_ids"])
    adds = bool(ids) and tok.bos_token_id is not None and ids[0] == tok.bos_token_id and len(ids) > 1
    if spec.adds_bos and not adds:
        return f"does not prepend the BOS token {spec.bos_token_id} its model expects"
    if spec.adds_bos and tok.bos_token_id != spec.bos_token_id:
        return f"prepends BOS id {tok.bos_token_id}, not {spec.bos_token_id}"
    if not spec.adds_bos and adds and spec.group != "local":
        return f"prepends a BOS token ({tok.bos_token_id}), which its model's tokenizer does not"
    published = PUBLISHED.get(spec.rehearses or (spec.name if spec.group == "paper" else ""))
    if published:
        if size != published["tokenizer_size"]:
            return f"has {size:,} tokens, not the {published['tokenizer_size']:,} of the published tokenizer"
        text, want = published["tokenizer_probe"]
        got = list(tok(text)["input_ids"])
        if got != want:
            return f"encodes {text!r} as {got[:8]}…, not as the published tokenizer does ({want[:8]}…)"
    return None


def check_tokenizer(spec: ModelSpec, tok, vocab_size: int | None, folder: Path | str) -> None:
    """WrongWeights (one line) when ``tok`` (loaded from ``folder``) is not the tokenizer ``spec`` describes."""
    why = tokenizer_problem(spec, tok, vocab_size)
    if why:
        raise WrongWeights(f"{spec.name}: the tokenizer in {folder} {why}; refusing to measure it")
