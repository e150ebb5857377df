"""A model reference as ``--models`` gives it: ``hf:<org>/<name>[@<revision>]``, ``path:<dir>``, ``gguf:<file>``
parsed into a ``Reference`` (its kind, target and revision, and the model's name in a run), or refused with a
``ReferenceError`` (one line naming the reference). The public entry is harness.model.references."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

KINDS = ("hf", "path", "gguf")


class ReferenceError(ValueError):
    """A model reference that cannot be used: malformed, not on this machine, or not a model the harness measures.
    The message is one line naming the reference."""


@dataclass(frozen=True)
class Reference:
    kind: str  # hf, path, gguf
    target: str  # org/name, a folder, a file
    revision: str | None = None  # hf only

    def __str__(self) -> str:
        return f"{self.kind}:{self.target}" + (f"@{self.revision}" if self.revision else "")

    @property
    def name(self) -> str:
        """The model's name in this run (test ids, results, baselines): file-name safe, never a registry name."""
        if self.kind == "hf":
            rev = "~" + re.sub(r"[^\w.-]", "-", self.revision) if self.revision else ""
            return "hf-" + self.target.replace("/", "--") + rev  # no '@': xdist's loadgroup splits group names at it
        stem = Path(self.target).name.removesuffix(".gguf") if self.kind == "gguf" else Path(self.target).name
        return f"{self.kind}-{stem}"


def parse(token: str) -> Reference | None:
    """The reference a ``--models`` token names, or None for a registry name or group (no ``kind:`` prefix)."""
    kind, sep, target = token.partition(":")
    if not sep or kind not in KINDS:
        if sep and re.fullmatch(r"[a-z]+", kind):
            raise ReferenceError(
                f"{token}: unknown reference kind {kind!r}; use hf:<org>/<name>[@<revision>], "
                f"path:<folder> or gguf:<file>"
            )
        return None
    if not target:
        raise ReferenceError(f"{token}: nothing after '{kind}:'")
    if kind == "hf":
        repo, _, revision = target.partition("@")
        if not re.fullmatch(r"[\w.-]+/[\w.-]+", repo):
            raise ReferenceError(f"{token}: a Hugging Face reference is hf:<org>/<name>[@<revision>]")
        if any(part.startswith((".", "-")) or ".." in part for part in repo.split("/")):  # never outside the
            raise ReferenceError(
                f"{token}: {repo!r} is not a Hugging Face id (no part starts with '.' or '-' or "
                f"holds '..'); give a folder as path:<folder>"
            )  # models folder or the HF cache
        return Reference("hf", repo, revision or None)
    path = Path(os.path.expanduser(target)).absolute()
    return Reference(kind, str(path))
