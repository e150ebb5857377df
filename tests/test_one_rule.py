"""No criterion outside the one rule: a two-valued ``holds(...)`` never decides on a figure that has an interval.

Every statistical criterion decides held / not held / inconclusive on its interval through ``harness.spec.decision``
(``judge(at_least(...))`` and the like). ``holds`` is for what has no interval over prompts: exact identities (EQ2,
EQ3, EQ7, T9a), counts of point estimates and of heads surviving a multiple test (T9b, T4's gate), where a fit puts a
breakpoint (T10). This file reads the source of ``claims/`` and ``harness/`` (their syntax trees, not their text) and
fails on any ``holds(...)`` whose condition reads an interval:

- a name the condition reads, followed back through the enclosing function's assignments (aliases, subscripts,
  arithmetic, loop targets, and the arguments of any call), that is also read by the value or the ``ci=`` of a figure
  recorded with an interval in that function (``figures.add(name, value, ci=...)``); or
- a call, anywhere in that chain, to a function that computes an interval or a decision: the harness's interval and
  decision functions, any function named for an interval (``*_ci``, ``*interval*``, ``*boot*``), and any function
  of ``harness/`` or ``claims/`` that calls one of them (followed through the call graph by name).

The engine (``harness/``) calls ``holds`` nowhere. A ``holds`` this flags is either moved to the rule or listed in
``TWO_VALUED`` with its reason, and the reason is stated in METHODS.md's list of what does not go through the rule: a
listing is a visible, reviewed act, never a silent bypass. The scanner is itself tested on planted code: the forms a
bypass has taken (T13's checks, T1a's bound, T7a's argmax) and the obvious dodges (an alias of the interval, a bound
computed inline).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from functools import cache

import pytest

from harness.files.paths import ROOT

#: The harness's functions that compute an interval or decide by the rule, by name: the seeds of the producer set.
INTERVAL_FUNCTIONS = {
    "percentile_ci",
    "mean_ci",
    "expanded_tail",
    "bootstrap_means",
    "bootstrap_weights",
    "bootstrap_delta_r2",
    "accuracy_interval",
    "accuracy_upper_bound",
    "paired_change_interval",
    "prompt_ci",
    "at_least",
    "at_most",
    "within",
    "decide",
}
NAMED_FOR_AN_INTERVAL = re.compile(r"(_ci$|^ci_|interval|boot)")
#: Calls whose result is their arguments' data, read through (numpy, builtins, a method of a data name).
TRANSPARENT = {"int", "float", "bool", "len", "abs", "min", "max", "sum", "all", "any", "round", "list", "tuple"}
TRANSPARENT |= {"sorted", "zip", "enumerate", "range", "str", "set", "dict", "reversed", "map", "filter"}

#: The ``holds`` calls that read a figure with an interval and are nonetheless two-valued, each with the reason
#: METHODS.md states (its "decision-rule" paragraph names each test): (file, function, condition source) -> reason.
TWO_VALUED = {
    ("claims/test_s5_3_leakage.py", "test_T5_top30_heads_significant_after_fdr", "n_sig == n_top"): (
        "T5a: a count of the top 30 heads surviving Benjamini-Hochberg on prompt-level sign-flip p-values (a multiple "
        "test, not an interval); the top 30 are chosen by their ΔR² point estimates, whose peak and median carry "
        "intervals for the paper values"
    ),
}


@dataclass
class Flag:
    file: str
    function: str
    condition: str
    why: str


def _refs(node: ast.AST) -> set[str]:
    """The data names an expression reads: a bare name, or ``name['key']`` for a constant subscript (so a dict's
    entries count apart), never a called function's own name."""
    out: set[str] = set()

    def visit(n: ast.AST) -> None:
        if isinstance(n, ast.Subscript) and isinstance(n.value, ast.Name) and isinstance(n.slice, ast.Constant):
            out.add(f"{n.value.id}[{n.slice.value!r}]")
            out.add(n.value.id)
            return
        if isinstance(n, ast.Name):
            out.add(n.id)
            return
        if isinstance(n, ast.Call):
            func = n.func
            if isinstance(func, ast.Attribute):
                visit(func.value)  # x.max(): x's data (np.max: np, dropped below as a module)
            for a in [*n.args, *(k.value for k in n.keywords)]:
                visit(a)
            return
        if isinstance(n, ast.Lambda):
            return
        for child in ast.iter_child_nodes(n):
            visit(child)

    visit(node)
    return out


def _calls(node: ast.AST) -> set[str]:
    """The names of the functions an expression calls (the last attribute: ``leak.mean_delta_boot`` ->
    ``mean_delta_boot``), builtins left out."""
    out = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Call):
            f = n.func
            name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
            if name and name not in TRANSPARENT:
                out.add(name)
    return out


def _targets(t: ast.AST) -> list[str]:
    if isinstance(t, ast.Name):
        return [t.id]
    if isinstance(t, (ast.Tuple, ast.List)):
        return [n for e in t.elts for n in _targets(e)]
    if isinstance(t, ast.Starred):
        return _targets(t.value)
    return []


@dataclass
class Scope:
    """A function's bindings: name -> the expressions bound to it (assignments, loop targets, comprehensions)."""

    bindings: dict[str, list[ast.AST]] = field(default_factory=dict)

    def bind(self, target: ast.AST, value: ast.AST) -> None:
        for name in _targets(target):
            self.bindings.setdefault(name, []).append(value)

    def closure(self, expr: ast.AST) -> tuple[set[str], set[str]]:
        """(names, called functions) the expression reads, followed back through the bindings to their fixpoint."""
        names, calls, todo = set(), set(_calls(expr)), list(_refs(expr))
        while todo:
            n = todo.pop()
            if n in names:
                continue
            names.add(n)
            for value in self.bindings.get(n.split("[")[0], ()):
                calls |= _calls(value)
                todo.extend(_refs(value))
        return names, calls


def _scope(fn: ast.FunctionDef) -> Scope:
    scope = Scope()
    for n in ast.walk(fn):
        if isinstance(n, ast.Assign):
            for t in n.targets:
                scope.bind(t, n.value)
        elif isinstance(n, (ast.AnnAssign, ast.AugAssign)) and n.value is not None:
            scope.bind(n.target, n.value)
        elif isinstance(n, (ast.For, ast.comprehension)):
            scope.bind(n.target, n.iter)
        elif isinstance(n, ast.NamedExpr):
            scope.bind(n.target, n.value)
        elif isinstance(n, ast.withitem) and n.optional_vars is not None:
            scope.bind(n.optional_vars, n.context_expr)
    return scope


def _interval_figures(fn: ast.FunctionDef) -> list[ast.Call]:
    """The ``figures.add(...)`` calls of a function that record an interval (a ``ci=`` other than None)."""
    out = []
    for n in ast.walk(fn):
        if (
            isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute)
            and n.func.attr == "add"
            and any(
                k.arg == "ci" and not (isinstance(k.value, ast.Constant) and k.value.value is None) for k in n.keywords
            )
        ):
            out.append(n)
    return out


def _functions(tree: ast.AST) -> list[ast.FunctionDef]:
    return [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]


def producers(trees: dict[str, ast.AST]) -> set[str]:
    """The functions that compute an interval or a decision: the seeds, any named for an interval, and (by name,
    to a fixpoint) any function of the given sources that calls one."""
    defined = {fn.name: fn for tree in trees.values() for fn in _functions(tree)}
    found = set(INTERVAL_FUNCTIONS) | {n for n in defined if NAMED_FOR_AN_INTERVAL.search(n)}
    changed = True
    while changed:
        changed = False
        for name, fn in defined.items():
            if name not in found and _calls(fn) & found:
                found.add(name)
                changed = True
    return found


def scan(trees: dict[str, ast.AST], made=None) -> list[Flag]:
    """Every ``holds(...)`` of the sources that reads an interval (the module's rules), as a Flag."""
    made = producers(trees) if made is None else made
    flags = []
    for path, tree in trees.items():
        modules = {a.asname or a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        for fn in _functions(tree):
            holds_calls = [
                n
                for n in ast.walk(fn)
                if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "holds" and n.args
            ]
            if not holds_calls:
                continue
            scope = _scope(fn)
            params = {a.arg for a in [*fn.args.args, *fn.args.kwonlyargs]}
            carried: set[str] = set()
            for add in _interval_figures(fn):
                exprs = [*add.args[1:2], *(k.value for k in add.keywords if k.arg == "ci")]
                for e in exprs:
                    refs = _refs(e)
                    carried |= refs
                    for r in refs:  # a figure recorded in a loop over (value, ci) pairs: the loop's iterable too
                        for value in scope.bindings.get(r, ()):
                            if any(isinstance(p, ast.For) and p.iter is value for p in ast.walk(fn)):
                                carried |= _refs(value)
            carried -= params | modules
            for call in holds_calls:
                names, calls = scope.closure(call.args[0])
                names -= params | modules
                source = ast.unparse(call.args[0])
                if shared := names & carried:
                    flags.append(Flag(path, fn.name, source, f"reads {sorted(shared)}, recorded with an interval"))
                elif computed := calls & made:
                    flags.append(Flag(path, fn.name, source, f"calls {sorted(computed)}, which compute an interval"))
    return flags


@cache
def sources(*folders: str) -> dict[str, ast.AST]:
    """The parsed sources under the folders (read once per session; not to be changed by a caller)."""
    return {
        str(p.relative_to(ROOT)): ast.parse(p.read_text(), str(p))
        for folder in folders
        for p in sorted((ROOT / folder).rglob("*.py"))
    }


@cache
def suite_producers() -> set[str]:
    return producers(sources("claims", "harness"))


def holds_calls(trees: dict[str, ast.AST]) -> list[tuple[str, str]]:
    """(file, condition) of every ``holds(...)`` call in the sources."""
    return [
        (path, ast.unparse(n.args[0]))
        for path, tree in trees.items()
        for n in ast.walk(tree)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "holds" and n.args
    ]


# ---- the suite's own code ----------------------------------------------------------------------------------------


def test_no_holds_in_claims_or_the_engine_reads_an_interval():
    trees = sources("claims", "harness")
    flags = [f for f in scan(trees, suite_producers()) if (f.file, f.function, f.condition) not in TWO_VALUED]
    assert not flags, "holds(...) on a figure with an interval (decide it by the one rule, judge(at_least(...))):\n" + (
        "\n".join(f"  {f.file}::{f.function}: holds({f.condition}) {f.why}" for f in flags)
    )


def test_the_engine_calls_holds_nowhere():
    assert holds_calls(sources("harness")) == []


def test_each_two_valued_exception_is_still_there_flagged_and_stated_in_methods():
    """A listed exception that no longer exists (or no longer reads an interval) is removed from the list; one that
    does is named in METHODS.md's decision-rule paragraph."""
    trees = sources("claims", "harness")
    flagged = {(f.file, f.function, f.condition) for f in scan(trees, suite_producers())}
    methods = (ROOT / "METHODS.md").read_text()
    rule = methods[methods.index('<a id="decision-rule">') :]
    rule = rule[: rule.index("\n\n")]
    for key in TWO_VALUED:
        assert key in flagged, f"{key} is listed as two-valued but no such holds reads an interval: unlist it"
        assert key[1] in rule, f"METHODS.md's decision-rule paragraph does not state the exception {key[1]}"


# ---- the scanner on planted code -------------------------------------------------------------------------------

PLANTED = {
    "T13 as it was (a check list from a function that computes intervals)": """
def test_x(family, session, figures):
    base_rows = [leak.mean_delta_boot() for leak in leaks]
    share, stats = composition_intervals(base, bi, base_rows, bi_rows, n)
    _, checks = composition_checks(base, bi, CONSTANT, base_rows, bi_rows, n)
    for name, (value, ci) in stats.items():
        figures.add(name, value, ci=ci)
    for condition, ok, message in checks:
        holds(ok, message)
""",
    "T1a as it was (a bound from a Clopper-Pearson helper)": """
def test_x(model, session, figures):
    cells, accs, uppers, held = sink_cells_at_chance(sink, acc, n, DECODABLE)
    figures.add("max_accuracy_upper_bound", max(uppers))
    holds(held, "not at chance")
""",
    "T7a as it was (an argmax of a profile whose first bin carries an interval)": """
def test_x(model, session, figures):
    edges, causal, bi, causal_b, bi_b = profiles(session, model)
    figures.add("first_bin_causal", causal[0], ci=prompt_ci(session, causal_b)[0])
    holds(np.argmax(causal) == 0, "not the first")
""",
    "an alias of the interval's end": """
def test_x(model, session, figures):
    ratio_ci = percentile_ci(rows, n=16)
    figures.add("ratio", ratio, ci=ratio_ci)
    lo = ratio_ci[0]
    floor = lo
    holds(floor > 27.9, "too small")
""",
    "a bound computed inline from the rows": """
def test_x(model, session, figures):
    rows = leak.mean_delta_boot()
    figures.add("mean", value, ci=prompt_ci(session, rows))
    holds(np.quantile(rows, 0.025) > 0.0, "not above")
""",
    "a helper of the file's own that hides the interval": """
def lower_end(session, rows):
    return prompt_ci(session, rows)[0]

def test_x(model, session, figures):
    holds(lower_end(session, rows) > 0.0, "not above")
""",
    "a decision read as a boolean": """
def test_x(model, session, figures):
    holds(at_least(x, ci, 0.0).held, "not above")
""",
}

NOT_FLAGGED = {
    "an exact identity": """
def test_x(model, session, figures):
    std0 = cross_prompt_std(states)
    figures.add("max_std_position0", float(std0.max()), paper=0.0)
    holds(np.all(std0 == 0.0), "not exactly 0")
""",
    "a count of point estimates beside an unrelated interval": """
def test_x(model, session, figures):
    ratio = norm_ratio_position0(norms)
    over = int((ratio > 10).sum())
    figures.add("gap", gap, ci=prompt_ci(session, gap_rows))
    holds(over > len(ratio) / 2, "too few layers")
""",
}


@pytest.mark.parametrize("case", list(PLANTED))
def test_the_scanner_finds_a_holds_on_an_interval(case):
    trees = {"planted.py": ast.parse(PLANTED[case])}
    made = suite_producers() | producers(trees)
    assert [f.function for f in scan(trees, made)] == ["test_x"], case


@pytest.mark.parametrize("case", list(NOT_FLAGGED))
def test_the_scanner_leaves_a_holds_without_an_interval(case):
    trees = {"planted.py": ast.parse(NOT_FLAGGED[case])}
    assert scan(trees, suite_producers() | producers(trees)) == [], case


def test_the_scanner_reads_the_committed_code_it_replaced():
    """At the commit before issue 57's work the scan flags exactly the three bypasses fidelity-4 N1 found (T13, T1a)
    and T7a's argmax (its first bin carries an interval): the scanner would have caught them."""
    import subprocess

    old = "f45f170"
    if subprocess.run(["git", "cat-file", "-e", old], cwd=ROOT, capture_output=True).returncode:
        pytest.skip(f"commit {old} is not in this checkout")
    trees = {}
    for path in ("claims/test_s5_9_scale.py", "claims/test_s5_1_sinks.py", "claims/test_s5_5_query_bins.py"):
        text = subprocess.run(["git", "show", f"{old}:{path}"], cwd=ROOT, capture_output=True, text=True).stdout
        trees[path] = ast.parse(text)
    flags = scan(trees, suite_producers() | producers(trees))
    assert {(f.file, f.function) for f in flags} == {
        ("claims/test_s5_9_scale.py", "test_T13_leakage_constant_and_residual_share_rises_with_scale"),
        ("claims/test_s5_1_sinks.py", "test_T1_highest_sink_positions_are_at_chance"),
        ("claims/test_s5_5_query_bins.py", "test_T7_leakage_concentrates_in_first_query_bin"),
    }, flags
