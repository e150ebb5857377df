"""Every file the suite writes (results.json, the reports, baselines, known outcomes, the stability record) goes
through here: written under a temporary name in the target's folder, flushed to disk, then renamed over the target.
A reader, or ``latest``, never sees a half-written file; a write that fails (a full disk, a file-size limit, a
read-only folder) removes its temporary file, leaves the old file as it was, and raises ``WriteError``, whose message
is one line naming the file and why.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import tempfile
from pathlib import Path


class WriteError(OSError):
    """A file that could not be written; ``str()`` is one line naming it and why. An ``OSError`` (same errno and
    filename), so callers that catch ``OSError`` keep working."""

    def __init__(self, path, cause: OSError):
        super().__init__(cause.errno, cause.strerror or str(cause), str(path))

    def __str__(self) -> str:
        return f"{self.filename}: could not write it ({self.strerror})"


def _mode(path: Path) -> int:
    """The mode a plain ``open(path, "w")`` would leave: the file's own if it exists, else 0o666 less the umask."""
    try:
        return path.stat().st_mode & 0o7777
    except OSError:
        mask = os.umask(0)
        os.umask(mask)
        return 0o666 & ~mask


def write_bytes(path, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically (temporary file, fsync, rename); returns the path."""
    path = Path(path)
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as e:
        raise WriteError(path, e) from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, _mode(path))
        os.replace(tmp, path)
    except BaseException as e:  # a full disk, or an interrupt mid-write: no temporary file is left behind
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(e, OSError):
            raise WriteError(path, e) from None
        raise
    return path


def write_text(path, text: str, encoding: str = "utf-8") -> Path:
    """Write ``text`` to ``path`` atomically (see ``write_bytes``)."""
    return write_bytes(path, text.encode(encoding))


def point_link(link, target: str) -> None:
    """Make the symlink ``link`` point at ``target`` atomically: a new link under a temporary name renamed over the
    old one, so ``link`` always resolves to the old target or the new one, never to nothing."""
    link = Path(link)
    tmp = link.with_name(f".{link.name}.{os.getpid()}.{secrets.token_hex(3)}")
    try:
        os.symlink(target, tmp)
        os.replace(tmp, link)
    except OSError as e:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise WriteError(link, e) from None
