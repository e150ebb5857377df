"""The conversion cache: a converted model folder is verified on every load and repaired when it does not match.

A conversion is written into a private partial folder next to its destination; its manifest (size, mtime and
sha256 of every file) and the source's fingerprint go into a marker file; every file is made readable by all
users (a shared cache); then the folder is swapped into place by a rename, so a reader never sees half a
conversion. Conversions of one folder are serialized by a lock file: a second process waits, then finds the
first one's conversion instead of converting again. On load, ``problem`` compares the folder with its manifest
(files below ``HASHED`` bytes are hashed every time; larger ones when their size or mtime changed), and
``ensure`` converts again, saying why in one line, whenever it does not match.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import Callable

MARKER = "abspos-converted.json"
FORMAT = 2  # the marker's layout; bump to invalidate every cached conversion
HASHED = 1 << 26  # files below 64 MiB (config, tokenizer) are hashed on every load


class CacheError(RuntimeError):
    """A cached conversion that cannot be used and cannot be repaired by this user; the message says what to do."""


def cache_root() -> Path:
    """``$ABSPOS_CACHE``, or ``~/.cache/abspos-claims`` where it is unset or empty."""
    return Path(os.environ.get("ABSPOS_CACHE", "").strip() or Path.home() / ".cache" / "abspos-claims")


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(1 << 24):
            h.update(block)
    return h.hexdigest()


def manifest(folder: Path) -> dict:
    """{file name: {"size", "mtime_ns", "sha256"}} of every file in a converted folder but the marker."""
    out = {}
    for p in sorted(folder.iterdir()):
        if p.name != MARKER:
            st = p.stat()
            out[p.name] = {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "sha256": sha256(p)}
    return out


def _file_problem(path: Path, want: dict) -> str | None:
    if not path.is_file():
        return f"has lost {path.name}"
    if not os.access(path, os.R_OK):
        return f"has {path.name} unreadable by this user"
    st = path.stat()
    if st.st_size != want["size"]:
        return f"has {path.name} at {st.st_size} bytes instead of {want['size']} (truncated or replaced)"
    if st.st_size >= HASHED and st.st_mtime_ns == want["mtime_ns"]:
        return None  # a large file unchanged since conversion (same size and mtime): not re-read on every load
    if sha256(path) != want["sha256"]:
        return f"has {path.name} modified since conversion"
    return None


def problem(folder: Path, fingerprint: str) -> str | None:
    """Why ``folder`` is not the intact conversion of the source with ``fingerprint`` (None when it is), as a
    phrase completing "the cached conversion <folder> ..."."""
    try:
        return _problem(folder, fingerprint)
    except OSError as e:  # e.g. replaced by another process while being read: checked again under the lock
        return f"could not be read ({e.strerror or e})"


def _problem(folder: Path, fingerprint: str) -> str | None:
    if not folder.is_dir():
        return "does not exist"
    try:
        marker = json.loads((folder / MARKER).read_text())
    except FileNotFoundError:
        return f"has no {MARKER} (an interrupted or older conversion)"
    except (OSError, ValueError) as e:
        return f"has an unreadable {MARKER} ({type(e).__name__})"
    if not isinstance(marker, dict) or marker.get("format") != FORMAT or not isinstance(marker.get("files"), dict):
        return f"has a {MARKER} of another format (an older conversion)"
    if marker.get("fingerprint") != fingerprint:
        return "was converted from another source file or by another transformers version"
    files = marker["files"]
    stray = sorted(p.name for p in folder.iterdir() if p.name != MARKER and p.name not in files)
    if stray:
        return f"holds files the conversion did not write ({', '.join(stray)})"
    for name, want in files.items():
        why = _file_problem(folder / name, want)
        if why:
            return why
    return None


@contextlib.contextmanager
def _locked(path: Path):
    with open(path, "a") as handle:
        with contextlib.suppress(OSError):
            os.chmod(path, 0o666)  # other users of a shared cache take the same lock
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _share(folder: Path) -> None:
    """Readable by every user: safetensors writes its files 0600 through a temporary file."""
    folder.chmod(0o755)
    for p in folder.iterdir():
        p.chmod(0o644)


def ensure(
    folder: Path, fingerprint: str, convert: Callable[[Path], None], log=print, what: str = "", note: dict | None = None
) -> Path:
    """``folder``, converted by ``convert(into)`` unless it already holds the intact conversion of the source with
    ``fingerprint``. A damaged folder is converted again (one line says why); ``note`` goes into the marker."""
    why = problem(folder, fingerprint)
    if why is None:
        return folder
    what = what or folder.name
    with contextlib.ExitStack() as stack:
        try:
            folder.parent.mkdir(parents=True, exist_ok=True)
            if not os.access(folder.parent, os.W_OK | os.X_OK):
                raise PermissionError(13, "Permission denied")
            stack.enter_context(_locked(folder.parent / f".{folder.name}.lock"))
        except OSError as e:
            raise CacheError(
                f"{what}: the cached conversion {folder} {why}, and {folder.parent} is not writable "
                f"here ({e.strerror or e}): set ABSPOS_CACHE to a folder of your own"
            ) from None
        why = problem(folder, fingerprint)  # another process may have converted it while this one waited
        if why is None:
            return folder
        for stale in [*folder.parent.glob(f".{folder.name}.partial-*"), *folder.parent.glob(f".{folder.name}.old-*")]:
            _remove(stale)  # left by a conversion killed mid-way (this process holds the lock)
        if folder.exists() or folder.is_symlink():
            log(f"[abspos] {what}: the cached conversion {folder} {why}; converting again")
        partial = folder.parent / f".{folder.name}.partial-{os.getpid()}"
        old = folder.parent / f".{folder.name}.old-{os.getpid()}"
        try:
            partial.mkdir()
            with no_progress_bars():
                convert(partial)
            _share(partial)
            marker = {"format": FORMAT, "fingerprint": fingerprint, "files": manifest(partial), **(note or {})}
            (partial / MARKER).write_text(json.dumps(marker, indent=1))
            (partial / MARKER).chmod(0o644)
            if folder.exists() or folder.is_symlink():
                folder.rename(old)  # a link is moved aside like a folder (and then removed as a link)
            partial.rename(folder)
        except BaseException as e:
            _remove(partial)
            if _no_space(e):
                raise CacheError(
                    f"{what}: no space left on the disk of {folder.parent} to convert it into (a few "
                    f"times the model's size in float32): free space there, or set ABSPOS_CACHE to a "
                    f"folder on another disk"
                ) from None
            raise
        _remove(old)
        return folder


@contextlib.contextmanager
def no_progress_bars():
    """tqdm's bars off while a conversion runs (transformers' GGUF de-quantisation bar, save bars): the two lines the
    conversion logs say what runs, and a bar would fill a non-TTY log (CI, nohup) with carriage returns.
    ``TQDM_DISABLE`` cannot do it: tqdm reads its environment once, when imported."""
    try:
        from tqdm import std
    except ImportError:  # no tqdm: no bars
        yield
        return
    own, init = std.tqdm.__dict__["__init__"], std.tqdm.__init__  # as defined (a partialmethod), and as called

    def quiet(self, *args, **kwargs):
        kwargs["disable"] = True
        init(self, *args, **kwargs)

    std.tqdm.__init__ = quiet  # subclasses (tqdm.auto, tqdm.asyncio) reach it through super().__init__
    try:
        yield
    finally:
        std.tqdm.__init__ = own


def _no_space(e: BaseException) -> bool:
    """A write that failed for want of disk space (an OSError, or safetensors' error naming the OS's)."""
    return (isinstance(e, OSError) and e.errno == errno.ENOSPC) or any(
        s in str(e) for s in ("No space left on device", "StorageFull", "code: 28")
    )


def _remove(path: Path) -> None:
    if path.is_symlink() or path.is_file():
        path.unlink(missing_ok=True)
    elif path.exists():
        shutil.rmtree(path, ignore_errors=True)
