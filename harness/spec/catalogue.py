"""The claims catalogue: the declarations beside the tests, read from a folder.

Each section of the paper has a test file, ``claims/test_<section>.py``, and beside it a declaration module,
``claims/<section>.py``, whose ``CLAIMS`` tuple holds that section's ``ClaimSpec`` entries (harness/spec/claims.py
says what one holds). This module imports every declaration module of the folder, in file order, and hands the
entries to the registry (harness/spec/claims.py, which checks them); the engine reads claims only through the registry, never by name.

A declaration module may also set ``SELECTIONS``, named sets of claims (``--claims core``), and a module may set
that alone. What a claim test runs on (one model at a time, a family's sizes, the related paper's synthetic sets, or
nothing) is read from the test functions' parameters (``tests_targets``), so that a new test is placed without a
word more in its declaration. The folder is ``claims/`` of this checkout, or ``$ABSPOS_CLAIMS_DIR``. Declarations
are Python, not TOML, because a claim's applicability is a predicate over the model, its thresholds are derived
from the paper's numbers in the open (``(0.27 - 0.05) / (0.0063 * 1.25)``), and a paper value carries its tolerance
rule (``magnitude``, ``share``, ``sink``): as data each would need a second language of names.
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
#: A declaration's one-off code beside it (``<section>_plots.py``: its own plot kinds, named by ``PlotSpec.draw``):
#: imported only by what draws it, never read as a declaration.
CODE_SUFFIX = "_plots.py"


class CatalogueError(ValueError):
    """A catalogue folder missing, or a declaration module without its ``CLAIMS`` tuple: one line naming which."""


def folder() -> Path:
    return Path(os.environ.get("ABSPOS_CLAIMS_DIR") or DEFAULT_DIR)


def declaration_files(directory: Path | None = None) -> list[Path]:
    """The declaration modules of a folder: every ``*.py`` but the tests, conftest, __init__ and the declarations'
    one-off code (``CODE_SUFFIX``), in name order.
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
    files = sorted(p for p in d.glob("*.py") if not p.name.startswith(skip) and not p.name.endswith(CODE_SUFFIX))
    declares = {p: _sets_claims(p) for p in files}
    if not any("CLAIMS" in names for names in declares.values()):
        raise CatalogueError(
            f"{where}: no claims in it (no <section>.py setting CLAIMS beside its test_<section>.py); {hint}"
        )
    for p, names in declares.items():
        if not names:
            raise CatalogueError(f"{p}: a declaration module sets CLAIMS to a tuple of ClaimSpec")
    return files


def _sets_claims(path: Path) -> set[str]:
    """Which of ``CLAIMS`` and ``SELECTIONS`` a module's text assigns at its top level (read with ``ast``, nothing
    run)."""
    try:
        tree = ast.parse(path.read_text(errors="replace"), str(path))
    except SyntaxError as e:
        raise CatalogueError(f"{path}: not Python ({e.msg}, line {e.lineno})") from None
    except (OSError, ValueError, RecursionError) as e:
        raise CatalogueError(f"{path}: unreadable ({type(e).__name__})") from None
    found: set[str] = set()
    for node in tree.body:
        targets = (
            node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        )
        found |= {t.id for t in targets if isinstance(t, ast.Name) and t.id in ("CLAIMS", "SELECTIONS")}
    return found


def claims_module(path: Path):
    """The module of a file of the claims folder, imported once as ``<PACKAGE>.<stem>`` (imported again where that
    name holds another folder's file): declarations and a declaration's own code (``*_plots.py``) alike."""
    name = f"{PACKAGE}.{path.stem}"
    module = sys.modules.get(name)
    if module is None or Path(getattr(module, "__file__", "")) != path:
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return module


def load(directory: Path | None = None) -> list[tuple[str, tuple[Any, ...]]]:
    """(the file, as the registry names it, and its ``CLAIMS`` tuple) of every declaration module of the folder."""
    out = []
    for path in declaration_files(directory):
        module = claims_module(path)
        entries = getattr(module, "CLAIMS", ())
        if not isinstance(entries, tuple) or not isinstance(getattr(module, "SELECTIONS", ()), tuple):
            raise CatalogueError(
                f"{path}: a declaration module sets CLAIMS to a tuple of ClaimSpec (and SELECTIONS, if it names "
                f"selections, to a tuple of Selection)"
            )
        out.append((f"claims/{path.name}" if path.parent == DEFAULT_DIR else str(path), entries))
    return out


def selections(directory: Path | None = None) -> list[tuple[str, tuple[Any, ...]]]:
    """(the file, its ``SELECTIONS`` tuple) of every declaration module of the folder that sets one (``load`` has
    imported them: the registry loads the claims first)."""
    out = []
    for path in declaration_files(directory):
        module = sys.modules.get(f"{PACKAGE}.{path.stem}")
        if module is not None and getattr(module, "SELECTIONS", None):
            out.append((f"claims/{path.name}" if path.parent == DEFAULT_DIR else str(path), module.SELECTIONS))
    return out


#: What a claim test runs on, read from its parameters (and those of the fixtures its file defines): a model at a
#: time (``model``), one family's sizes (``family``), one of the related paper's synthetic sets (``synthetic``), or
#: nothing (a property of the equations, run once: ``none``).
TARGET_PARAMETERS = (("synthetic", "synthetic"), ("family", "family"), ("model", "model"), ("model_name", "model"))


def tests_targets(directory: Path | None = None) -> dict[str, str]:
    """Test function name -> what it runs on (``TARGET_PARAMETERS``), for every ``test_*`` function of the folder's
    test files: read from their text with ``ast`` (nothing run)."""
    d = folder() if directory is None else directory
    out: dict[str, str] = {}
    for path in sorted(d.glob("test_*.py")):
        try:
            tree = ast.parse(path.read_text(errors="replace"), str(path))
        except (OSError, ValueError, SyntaxError, RecursionError):
            continue  # the declaration's own checks, and pytest's collection, say what is wrong with it
        functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
        for name, node in functions.items():
            if name.startswith("test_"):
                wanted = _parameters(node, functions, set())
                out[name] = next((kind for p, kind in TARGET_PARAMETERS if p in wanted), "none")
    return out


def _parameters(node, functions: dict, seen: set[str]) -> set[str]:
    """A function's parameters, and those of the fixtures of its own file it takes, and theirs."""
    names = {a.arg for a in (*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs)}
    for n in names - seen:
        if n in functions and n not in ("model", "model_name"):
            seen.add(n)
            names |= _parameters(functions[n], functions, seen)
    return names
