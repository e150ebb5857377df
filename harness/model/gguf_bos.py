"""The BOS token a GGUF declares, given to its converted tokenizer where transformers' conversion leaves it out.

A GGUF file says whether its tokenizer prepends BOS (``tokenizer.ggml.add_bos_token``, as llama.cpp reads it; the
bundled Gemma-3-270M's says true, SmolLM2's and Qwen2.5-Coder's false). transformers honours it for Gemma-3 only from
5.23.0: 5.18.0 to 5.22.2 convert that tokenizer with the same vocabulary, normalizer, pre-tokenizer and decoder, and a
post-processor that adds nothing, so every text's ids are the same but BOS is missing (and the harness refuses to
measure the model: ``checkpoint_checks.tokenizer_problem``). ``give_declared_bos`` sets the post-processor as
transformers' own ``update_post_processor`` writes it for a tokenizer that adds BOS (``<bos>:0 $A:0``; pairs
``<bos>:0 $A:0 <bos>:1 $B:1``), which makes the converted tokenizer.json byte-identical to 5.23's and 5.24's. A
tokenizer that already prepends it, or a GGUF that declares no BOS, is left as it is.

``RECIPE`` names this step in every GGUF conversion's fingerprint (``harness.model.weights``), so a conversion made
before it (a Gemma tokenizer without BOS, cached by 5.18 to 5.22) is converted again, never reused.
"""

from __future__ import annotations

from pathlib import Path

RECIPE = "declared-bos-1"  # bump when what this module does to a converted tokenizer changes
PROBE = "The cat sat on the mat."


def declares_bos(gguf: Path) -> bool:
    """Whether ``gguf``'s metadata says its tokenizer prepends BOS (``tokenizer.ggml.add_bos_token``; absent: no)."""
    from gguf import GGUFReader

    field = GGUFReader(str(gguf)).fields.get("tokenizer.ggml.add_bos_token")
    if field is None or not field.data:
        return False
    return bool(field.parts[field.data[0]][0])


def prepends_bos(tok) -> bool:
    """Whether ``tok`` puts its BOS token before a text's own tokens."""
    ids = list(tok(PROBE)["input_ids"])
    return tok.bos_token_id is not None and len(ids) > 1 and ids[0] == tok.bos_token_id


def bos_template(bos: str, bos_id: int):
    """transformers' post-processor for a tokenizer that adds BOS and no EOS (``update_post_processor``)."""
    from tokenizers.processors import TemplateProcessing

    return TemplateProcessing(single=f"{bos}:0 $A:0", pair=f"{bos}:0 $A:0 {bos}:1 $B:1", special_tokens=[(bos, bos_id)])


def give_declared_bos(tok, gguf: Path) -> str | None:
    """Set ``tok``'s post-processor to prepend its BOS token when ``gguf`` declares one and ``tok`` (converted from it)
    does not prepend it; returns one line saying so for the conversion's log and marker, or None (nothing changed).
    A tokenizer with no BOS token, or one that is not a fast (tokenizers) tokenizer, is left for the tokenizer check
    to refuse."""
    import transformers

    if prepends_bos(tok) or tok.bos_token is None or not hasattr(tok, "backend_tokenizer"):
        return None
    if not declares_bos(gguf):
        return None
    tok.backend_tokenizer.post_processor = bos_template(tok.bos_token, tok.bos_token_id)
    if not prepends_bos(tok):
        return None
    return (
        f"transformers {transformers.__version__} converted {gguf.name}'s tokenizer without the BOS token the GGUF "
        f"declares (tokenizer.ggml.add_bos_token); the harness set its post-processor to prepend {tok.bos_token} "
        f"(id {tok.bos_token_id}), as transformers 5.23 and later convert it"
    )
