"""Where a reference's files are (harness.model.references): the local folder holding its config.json, offline
only (``$ABSPOS_MODELS_DIR`` or the Hugging Face cache, never a network call; a GGUF file's own folder)."""

from __future__ import annotations

import os
from pathlib import Path

from harness.model.reference_parse import Reference, ReferenceError


def hf_folder(ref: Reference) -> Path:
    """The local folder of ``hf:<org>/<name>[@rev]``: ``$ABSPOS_MODELS_DIR/<org>/<name>`` (or ``<org>--<name>``)
    when no revision is asked for, then the Hugging Face cache (``local_files_only``: no network call)."""
    from harness.model.weights import has_weights

    root = os.environ.get("ABSPOS_MODELS_DIR")
    folders = (
        [Path(root) / sub for sub in (ref.target, ref.target.replace("/", "--"))] if root and not ref.revision else []
    )
    looked = [str(f) for f in folders]
    try:
        from huggingface_hub import snapshot_download

        folders.append(Path(snapshot_download(ref.target, revision=ref.revision, local_files_only=True)))
    except Exception:
        looked.append("the Hugging Face cache" + (f" at revision {ref.revision}" if ref.revision else ""))
    found = [f for f in folders if (f / "config.json").is_file()]
    if found:  # one with weights first: a config-only folder skips its tests, so only when nothing better exists
        return next((f for f in found if has_weights(f)), found[0])
    how = f"`hf download {ref.target}" + (
        f" --revision {ref.revision}`" if ref.revision else f"` or put it in $ABSPOS_MODELS_DIR/{ref.target}"
    )
    raise ReferenceError(f"{ref}: not on this machine (looked in {', '.join(looked)}); download it with {how}")


def folder_of(ref: Reference, log=print) -> Path:
    """The folder holding the reference's config.json (a GGUF file is converted into the cache first)."""
    if ref.kind == "hf":
        return hf_folder(ref)
    path = Path(ref.target)
    if ref.kind == "gguf":
        if not path.is_file():
            raise ReferenceError(f"{ref}: no such file")
        return path.parent  # its config and tokenizer are read from the file; its weights converted when loaded
    if path.is_file():
        raise ReferenceError(
            f"{ref}: is a file, not a folder (path: takes a model folder holding config.json, the "
            f"tokenizer and *.safetensors; a GGUF file is gguf:<file>)"
        )
    if not path.is_dir():
        raise ReferenceError(f"{ref}: no such folder" + (" (a link to nothing)" if path.is_symlink() else ""))
    if not (path / "config.json").is_file():
        raise ReferenceError(
            f"{ref}: no config.json in the folder (a Hugging Face model folder holds config.json, "
            f"the tokenizer and *.safetensors)"
        )
    return path
