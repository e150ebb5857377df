"""The claims catalogue: the declarations beside the tests, read from a folder.

Each section of the paper has a test file, ``claims/test_<section>.py``, and beside it a declaration module,
``claims/<section>.py``, whose ``CLAIMS`` tuple holds that section's ``ClaimSpec`` entries (harness/spec/claims.py
says what one holds). This module imports every declaration module of the folder, in file order, and hands the
entries to the registry (harness/spec/claims.py, which checks them); the engine reads claims only through the registry, never by name.

The folder is ``claims/`` of this checkout, or ``$ABSPOS_CLAIMS_DIR``. Declarations are Python, not TOML, because a
claim's applicability is a predicate over the model, its thresholds are derived from the paper's numbers in the open
(``(0.27 - 0.05) / (0.0063 * 1.25)``), and a paper value carries its tolerance rule (``magnitude``, ``share``,
``sink``): as data each would need a second language of names.
"""

from __future__ import annotations

import ast
import importlib.util
import os
import sys
from pathlib import Path
from typing import Any

#: The folder of the declarations, unless $ABSPOS_CLAIMS_DIR names another.
DEFAULT_DIR = Path(__file__).resolve().parents[2] / "claims"
PACKAGE = "abspos_claims_catalogue"  # the declaration modules' import names: abspos_claims_catalogue.<section>


class CatalogueError(ValueError):
    """A catalogue folder missing, or a declaration module without its ``CLAIMS`` tuple: one line naming which."""


def folder() -> Path:
    return Path(os.environ.get("ABSPOS_CLAIMS_DIR") or DEFAULT_DIR)


def declaration_files(directory: Path | None = None) -> list[Path]:
    """The declaration modules of a folder: every ``*.py`` but the tests, conftest and __init__, in name order.
    CatalogueError (one line) for a folder that is missing, a file, or holds no declaration, and for a module that
    sets no ``CLAIMS``: read from the files' text, before any of them is imported (a folder of other Python, such as
    ``tests``, is never run)."""
    d = folder() if directory is None else directory
    named = os.environ.get("ABSPOS_CLAIMS_DIR") if directory is None else None
    where = f"ABSPOS_CLAIMS_DIR={named}" if named else str(d)
    hint = f"point ABSPOS_CLAIMS_DIR at a folder of claim declarations, or unset it for {DEFAULT_DIR}"
    if not d.exists():
        raise CatalogueError(f"{where}: no such folder; {hint}")
    if not d.is_dir():
        raise CatalogueError(f"{where}: a file, not a folder of claim declarations; {hint}")
    skip = ("test_", "conftest", "__init__")
    files = sorted(p for p in d.glob("*.py") if not p.name.startswith(skip))
    declares = {p: _sets_claims(p) for p in files}
    if not any(declares.values()):
        raise CatalogueError(
            f"{where}: no claims in it (no <section>.py setting CLAIMS beside its test_<section>.py); {hint}"
        )
    for p, sets in declares.items():
        if not sets:
            raise CatalogueError(f"{p}: a declaration module sets CLAIMS to a tuple of ClaimSpec")
    return files


def _sets_claims(path: Path) -> bool:
    """Whether a module's text assigns ``CLAIMS`` at its top level (read with ``ast``, nothing run)."""
    try:
        tree = ast.parse(path.read_text(errors="replace"), str(path))
    except SyntaxError as e:
        raise CatalogueError(f"{path}: not Python ({e.msg}, line {e.lineno})") from None
    except (OSError, ValueError, RecursionError) as e:
        raise CatalogueError(f"{path}: unreadable ({type(e).__name__})") from None
    for node in tree.body:
        targets = (
            node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        )
        if any(isinstance(t, ast.Name) and t.id == "CLAIMS" for t in targets):
            return True
    return False


def load(directory: Path | None = None) -> list[tuple[str, tuple[Any, ...]]]:
    """(the file, as the registry names it, and its ``CLAIMS`` tuple) of every declaration module of the folder."""
    out = []
    for path in declaration_files(directory):
        name = f"{PACKAGE}.{path.stem}"
        module = sys.modules.get(name)
        if module is None or Path(getattr(module, "__file__", "")) != path:
            spec = importlib.util.spec_from_file_location(name, path)
            assert spec is not None and spec.loader is not None
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module
            spec.loader.exec_module(module)
        entries = getattr(module, "CLAIMS", None)
        if not isinstance(entries, tuple):
            raise CatalogueError(f"{path}: a declaration module sets CLAIMS to a tuple of ClaimSpec")
        out.append((f"claims/{path.name}" if path.parent == DEFAULT_DIR else str(path), entries))
    return out
