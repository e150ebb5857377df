"""Every file the suite writes (results.json, the reports, baselines, known outcomes, the stability record) goes
through here: written under a temporary name in the target's folder, flushed to disk, then renamed over the target.
A reader, or ``latest``, never sees a half-written file; a write that fails (a full disk, a file-size limit, a
read-only folder) removes its temporary file, leaves the old file as it was, and raises ``WriteError``, whose message
is one line naming the file and why.

Every JSON file the suite reads back (results.json, job and submission statuses, baselines, known outcomes, the
stability record) is read by ``read_json``: a missing, unreadable, non-UTF-8, empty or invalid file, and anything but a
regular file of at most ``MAX_JSON_BYTES`` (a FIFO, ``/dev/zero``, a device), and JSON nested deeper than
``MAX_JSON_DEPTH`` (no file the suite writes comes near it; a reader walking it would exceed Python's recursion limit)
raises a ``JSONFileError`` (a ``ValueError``), whose message is one line naming the file and what is wrong with it; each
kind of file words it through its own subclass. Nothing read is ever executed: JSON only.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import stat
import tempfile
from pathlib import Path
from typing import ClassVar, Self


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


class JSONFileError(ValueError):
    """A JSON file that cannot be read, or (raised by its reader) is not what it should be; ``str()`` is one line:
    the file, then what is wrong with it. Each kind of file subclasses it (``ResultsFileError``, ``StabilityError``,
    ``BaselineError``, ``KnownOutcomesError``) to word ``read_json``'s problems its own way (``PHRASES``) and to
    say what to do about a damaged file (``ADVICE``); constructed directly, it takes the whole message."""

    #: How ``read_json`` words each problem after "<file>: " (``{what}``: the kind of file it was read as,
    #: ``{detail}``: the system's or the JSON parser's own words): "missing" (no such file), "folder",
    #: "unreadable" (any other OSError), "undecodable" (not UTF-8), "empty" (whitespace only), "invalid" (not JSON),
    #: "special" (not a regular file), "large" (over ``MAX_JSON_BYTES``), "deep" (nested over ``MAX_JSON_DEPTH``).
    PHRASES: ClassVar[dict[str, str]] = {
        "missing": "no such file",
        "folder": "a folder, not a {what} file",
        "unreadable": "cannot read it ({detail})",
        "undecodable": "not UTF-8 text",
        "empty": "empty file",
        "invalid": "not valid JSON (truncated? {detail})",
        "special": "not a regular file ({detail}); give the file itself",
        "large": "{detail}, more than any {what} file the suite writes; refusing to read it",
        "deep": "JSON nested {detail}, deeper than any {what} file the suite writes; refusing to read it",
    }
    #: What to do about the file, added ("; ADVICE") to the problems in ``ADVISED``; none by default.
    ADVICE: ClassVar[str] = ""
    ADVISED: ClassVar[frozenset[str]] = frozenset({"empty", "invalid"})

    @classmethod
    def of(cls, path, problem: str, what: str, detail: str = "") -> Self:
        """The error for one of ``PHRASES``'s problems with the file at ``path``, worded by this class."""
        text = cls.PHRASES[problem].format(what=what, detail=detail)
        return cls(f"{path}: {text}" + (f"; {cls.ADVICE}" if cls.ADVICE and problem in cls.ADVISED else ""))


def read_json(path, what: str, error: type[JSONFileError] = JSONFileError) -> object:
    """The parsed JSON of the UTF-8 file at ``path``; a file that cannot be read or parsed raises ``error`` (a
    ``JSONFileError`` subclass) with one line naming it and why. ``what`` names the kind of file ("baseline"). The
    shape of what it parses to is the caller's to check."""
    path = Path(path)
    try:
        text = _read_regular(path, what, error)
    except FileNotFoundError as e:
        raise error.of(path, "missing", what, e.strerror or str(e)) from None
    except IsADirectoryError as e:
        raise error.of(path, "folder", what, e.strerror or str(e)) from None
    except UnicodeDecodeError as e:
        raise error.of(path, "undecodable", what, str(e)) from None
    except OSError as e:
        raise error.of(path, "unreadable", what, e.strerror or str(e)) from None
    if nesting(text, MAX_JSON_DEPTH) > MAX_JSON_DEPTH:
        raise error.of(path, "deep", what, f"over {MAX_JSON_DEPTH} levels deep")
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise error.of(
            path, "invalid" if text.strip() else "empty", what, f"{e.msg}: line {e.lineno} column {e.colno}"
        ) from None
    except RecursionError:  # (``nesting`` bounds the depth first; a parser that still recurses too far is refused)
        raise error.of(path, "deep", what, f"over {MAX_JSON_DEPTH} levels deep") from None


#: The deepest nesting ``read_json`` parses: the suite's files are at most 8 levels deep (a record's figure holding a
#: 3-D array); a reader that recurses (``json.dumps``, the report's cells) stays far below Python's recursion limit.
MAX_JSON_DEPTH = 64

_STRINGS = re.compile(
    r'"[^"\\]*(?:\\.[^"\\]*)*"'
)  # a JSON string, escapes included: its brackets are text, not nesting
_NOT_BRACKETS = re.compile(r"[^\[\]{}]+")


def nesting(text: str, limit: int) -> int:
    """How deeply the JSON ``text`` nests arrays and objects (brackets inside strings are text); stops counting past
    ``limit`` (returns ``limit + 1`` then). Read on the text, before parsing: no parser or reader recurses that deep."""
    brackets = _NOT_BRACKETS.sub("", _STRINGS.sub("", text))
    depth = deepest = 0
    for c in brackets:
        if c in "[{":
            depth += 1
            if depth > limit:
                return depth
            deepest = max(deepest, depth)
        else:
            depth -= 1
    return deepest


#: The largest JSON file ``read_json`` reads: a results.json of the whole suite on every model is a few MB
MAX_JSON_BYTES = 256 * 2**20


def _read_regular(path: Path, what: str, error: type[JSONFileError]) -> str:
    """The text of ``path`` if it is a regular file (after links) of at most ``MAX_JSON_BYTES``: opened without
    blocking (a FIFO with no writer would wait forever) and checked on the open descriptor, so what is read is what
    was checked."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError(21, "Is a directory", str(path))
        if not stat.S_ISREG(st.st_mode):
            kind = (
                "a FIFO"
                if stat.S_ISFIFO(st.st_mode)
                else "a device"
                if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode)
                else "a socket"
                if stat.S_ISSOCK(st.st_mode)
                else "not a file"
            )
            raise error.of(path, "special", what, kind)
        data = f.read(MAX_JSON_BYTES + 1)
    if len(data) > MAX_JSON_BYTES:
        raise error.of(path, "large", what, f"over {MAX_JSON_BYTES // 2**20} MiB")
    return data.decode("utf-8")
