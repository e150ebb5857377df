"""The harness's import graph: layered subpackages, each importing only from the layers below it, and no cycles.

    files (0) < spec (1) < stats (2) < model (3) < capture (4) < synthetic (5) < outcome (6) < report (7) < run (8)
    < harness/__init__.py and the top-level modules beside it (api.py, cli.py, live.py, measure.py, ...) (9)

Read statically with ``ast`` (imports inside functions count too: a deferred import is still a dependency), so a
violation fails here in milliseconds instead of as a circular-import error somewhere else. ``__main__.py`` files
are entry shims (``python -m harness.report``) and may import anything. The light layers must stay light: spec is
pure Python (standard library only), and neither spec nor stats imports torch or transformers, so the settings,
the claim catalogue and the command line load in a fraction of a second. Sizes too: no module over 400 lines
(none excepted), no function in harness/stats over 60."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from itertools import pairwise
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HARNESS = ROOT / "harness"
LAYERS = ("files", "spec", "stats", "model", "capture", "synthetic", "outcome", "report", "run")
LAYER = {name: i for i, name in enumerate(LAYERS)}
TOP = len(LAYERS)  # harness/__init__.py and the top-level modules beside it
HEAVY = ("torch", "transformers")


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(HARNESS.rglob("*.py"))}


def layer(module: str) -> int:
    """harness.<subpackage>[.<module>] -> that subpackage's layer; harness and its top-level modules -> TOP."""
    parts = module.split(".")
    return LAYER[parts[1]] if len(parts) > 1 and parts[1] in LAYER else TOP


def is_package(module: str) -> bool:
    return MODULES[module].name == "__init__.py"


def imports(module: str) -> list[tuple[str, int]]:
    """Every module name ``module`` imports (absolute, relative ones resolved), with its line; ``from a import b``
    yields ``a.b`` when that is a module and ``a`` otherwise."""
    out = []
    for node in ast.walk(ast.parse(MODULES[module].read_text(), str(MODULES[module]))):
        if isinstance(node, ast.Import):
            out += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = module.split(".") if is_package(module) else module.split(".")[:-1]
                package = package[: len(package) - (node.level - 1)]
                base = ".".join([*package, *([base] if base else [])])
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                out.append((sub if sub in MODULES else base, node.lineno))
    return out


def harness_edges() -> dict[str, dict[str, int]]:
    """module -> {harness module it imports: line of the first such import}."""
    edges: dict[str, dict[str, int]] = {}
    for m in MODULES:
        targets: dict[str, int] = {}
        for name, line in imports(m):
            # `import harness.a.b` names a module; an unknown dotted name resolves to its longest known prefix
            while name and name not in MODULES:
                name = name.rpartition(".")[0]
            if name.startswith("harness") and name != m:
                targets.setdefault(name, line)
        edges[m] = targets
    return edges


EDGES = harness_edges()


def test_the_graph_is_read():
    assert len(MODULES) > 40, sorted(MODULES)
    assert EDGES["harness.cli"], "harness/cli.py imports nothing from harness: the parser is broken"
    assert "harness.spec.claims" in EDGES["harness.spec.settings"]


def test_every_subpackage_has_a_layer():
    """A new subpackage must be placed in the order (LAYERS above) before it can be imported from."""
    packages = {p.parent.name for p in HARNESS.glob("*/__init__.py")}
    assert packages == set(LAYERS), (
        f"subpackages without a layer: {sorted(packages - set(LAYERS))}; "
        f"layers without a subpackage: {sorted(set(LAYERS) - packages)}"
    )


def test_the_guides_layer_table_lists_every_module():
    """docs/development.md's layer table has a row per layer, in the order above, and names each module of
    harness/ (``__init__`` and ``__main__`` aside) in its layer's row: the table is where a newcomer looks first."""
    rows: dict[str, str] = {}
    for line in (ROOT / "docs" / "development.md").read_text().splitlines():
        if m := re.match(r"\| `(\w+)/` \| (.*) \|$", line):
            rows[m.group(1)] = m.group(2)
        elif line.startswith("| top-level modules |"):
            rows["top"] = line
    assert list(rows) == [*LAYERS, "top"], f"the layer table's rows: {list(rows)}"
    missing = [
        path.relative_to(ROOT).as_posix()
        for module, path in MODULES.items()
        if path.name not in ("__init__.py", "__main__.py")
        and f"`{path.name}`" not in rows[module.split(".")[1] if len(module.split(".")) > 2 else "top"]
    ]
    assert not missing, f"modules docs/development.md's layer table does not name in their layer's row: {missing}"


def test_no_module_imports_from_a_higher_layer():
    def where(m: str) -> str:
        return f"{m} ({LAYERS[layer(m)] if layer(m) < TOP else 'top level'})"

    upward = [
        f"{MODULES[m].relative_to(ROOT)}:{line}: {where(m)} imports {where(t)}"
        for m, ts in EDGES.items()
        if not m.endswith(".__main__")
        for t, line in ts.items()
        if layer(t) > layer(m)
    ]
    assert not upward, "imports from a higher layer:\n" + "\n".join(sorted(upward))


def strongly_connected(edges: dict[str, dict[str, int]]) -> list[list[str]]:
    """Tarjan's strongly connected components with more than one module (iterative: no recursion limit)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in edges:
        if root in index:
            continue
        work = [(root, iter(edges[root]))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, children = work[-1]
            w = next(children, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(edges.get(w, ()))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                component = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    component.append(w)
                    if w == v:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def a_cycle(component: list[str], edges: dict[str, dict[str, int]]) -> list[str]:
    """One closed path through a strongly connected component, from its first module back to it."""
    inside, start = set(component), component[0]
    paths, seen = [[start]], {start}
    while paths:  # breadth first: the shortest cycle through `start`
        path = paths.pop(0)
        for w in edges[path[-1]]:
            if w == start:
                return [*path, start]
            if w in inside and w not in seen:
                seen.add(w)
                paths.append([*path, w])
    return component


def test_no_import_cycles():
    cycles = []
    for component in strongly_connected(EDGES):
        path = a_cycle(component, EDGES)
        steps = [f"{a} (line {EDGES[a][b]})" for a, b in pairwise(path)]
        cycles.append(f"{', '.join(component)}: " + " -> ".join([*steps, path[-1]]))
    assert not cycles, "import cycles between modules:\n" + "\n".join(cycles)


def test_the_cycle_finder_finds_cycles():
    edges = {"a": {"b": 1}, "b": {"c": 2}, "c": {"a": 3, "d": 4}, "d": {}, "e": {"e": 5}}
    assert strongly_connected(edges) == [["a", "b", "c"]]
    assert a_cycle(["a", "b", "c"], edges) == ["a", "b", "c", "a"]


def third_party(subpackage: str) -> dict[str, list[str]]:
    """Top-level names of what the modules of harness/<subpackage> import, outside harness: name -> modules."""
    out: dict[str, list[str]] = {}
    for m in MODULES:
        if m.startswith(f"harness.{subpackage}.") or m == f"harness.{subpackage}":
            for name, line in imports(m):
                top = name.partition(".")[0]
                if top and top != "harness" and top != "__future__":
                    out.setdefault(top, []).append(f"{MODULES[m].relative_to(ROOT)}:{line}")
    return out


@pytest.mark.parametrize("subpackage", ["spec", "stats"])
def test_light_layers_import_neither_torch_nor_transformers(subpackage):
    found = {name: where for name, where in third_party(subpackage).items() if name in HEAVY}
    assert not found, f"harness/{subpackage} imports {found}"


def test_spec_is_pure_python():
    """The claim catalogue, models and settings import the standard library only."""
    found = {name: where for name, where in third_party("spec").items() if name not in sys.stdlib_module_names}
    assert not found, f"harness/spec imports packages outside the standard library: {found}"


@pytest.mark.parametrize(
    "modules",
    [
        ["harness.spec.settings"],
        ["harness.cli"],
        sorted(m for m in MODULES if m.startswith("harness.stats.")),
    ],
    ids=["spec.settings", "cli", "stats"],
)
def test_light_imports_load_neither_torch_nor_transformers(modules):
    """At run time too (what the static test cannot see: a dependency that imports torch itself), in a fresh
    interpreter."""
    code = (
        f"import sys\nimport {', '.join(modules)}\n"
        f"print(' '.join(sorted({{m.partition('.')[0] for m in sys.modules}} & {set(HEAVY)!r})))"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "", f"importing {', '.join(modules)} loads {done.stdout.strip()}"


MAX_LINES = 400  # a module past it is split by job (pure moves); the data tables are exempt
LONG_MODULES_ALLOWED: set[str] = set()
MAX_STATS_FUNCTION_LINES = 60  # the statistics stay small enough to check against their formulas by eye


def test_no_module_is_over_the_line_limit():
    sizes = {p.relative_to(ROOT).as_posix(): len(p.read_text().splitlines()) for p in MODULES.values()}
    long = {path: n for path, n in sizes.items() if n > MAX_LINES and path not in LONG_MODULES_ALLOWED}
    assert not long, f"modules over {MAX_LINES} lines (split each by job): " + ", ".join(
        f"{path} ({n})" for path, n in sorted(long.items())
    )


def test_no_stats_function_is_over_the_line_limit():
    """Functions (methods and nested ones too) from their ``def`` line to their last, decorators not counted."""
    long = []
    for m, path in MODULES.items():
        if layer(m) != LAYER["stats"]:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                n = (node.end_lineno or node.lineno) - node.lineno + 1
                if n > MAX_STATS_FUNCTION_LINES:
                    long.append(f"{path.relative_to(ROOT).as_posix()}:{node.lineno} {node.name} ({n} lines)")
    assert not long, f"functions in harness/stats over {MAX_STATS_FUNCTION_LINES} lines: " + ", ".join(long)


def _hand_built_pytest_commands(path: Path) -> list[str]:
    """Lines of one test module where a list or tuple holds ``"-m", "pytest"`` (a pytest command line built by hand)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.List | ast.Tuple):
            words = [e.value if isinstance(e, ast.Constant) else None for e in node.elts]
            if any(a == "-m" and b == "pytest" for a, b in pairwise(words)):
                found.append(f"{path.relative_to(ROOT).as_posix()}:{node.lineno}")
    return found


def test_the_tests_start_pytest_through_one_helper():
    """A test that runs pytest (the claims, or a crafted claim file) builds its command with tests/pytest_runs.py, so
    every such run starts the same way (cache off, the plugin where no conftest loads it); asserting the product's own
    command line (``harness.api.pytest_argv``) is not building one."""
    allowed = {"tests/pytest_runs.py", "tests/test_cli_and_api.py"}
    found = [
        f
        for p in sorted((ROOT / "tests").glob("*.py"))
        if p.relative_to(ROOT).as_posix() not in allowed
        for f in _hand_built_pytest_commands(p)
    ]
    assert not found, "run pytest through tests/pytest_runs.py: " + ", ".join(found)


def claim_names() -> tuple[set[str], set[str]]:
    """(every claim id, every claim-test name) of the catalogue beside the tests (claims/*.py)."""
    from harness.spec.claims import CLAIMS

    return set(CLAIMS), {t for c in CLAIMS.values() for t in c.claim_tests}


def claim_mentions(text: str, ids: set[str], tests: set[str]) -> list[str]:
    """The claim ids (as words) and claim-test names a text names."""
    words = re.findall(r"\b\w+\b", text)
    return sorted({w for w in words if w in ids or w in tests})


def test_the_engine_names_no_claim():
    """Everything about a claim lives in its declaration beside its tests; the engine reads claims only through the
    registry, so no claim id or claim-test name appears under harness/, in code, strings, docstrings or comments."""
    ids, tests = claim_names()
    found = [
        f"{path.relative_to(ROOT).as_posix()}:{n}: {', '.join(named)}"
        for path in sorted(HARNESS.rglob("*.py"))
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if (named := claim_mentions(line, ids, tests))
    ]
    assert not found, "claims named under harness/ (move what names them into claims/*.py):\n" + "\n".join(found)


def test_the_claim_finder_finds_ids_and_test_names():
    ids, tests = {"T1", "T9a", "EQ7"}, {"test_T1_sinks_move"}
    assert claim_mentions("T1's sink; (T9a); EQ7 = T10", ids, tests) == ["EQ7", "T1", "T9a"]
    assert claim_mentions('x = "test_T1_sinks_move[smollm2]"', ids, tests) == ["test_T1_sinks_move"]
    assert claim_mentions("T10, T1x, AT1, at1", ids, tests) == []
