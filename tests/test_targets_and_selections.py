"""Every claim findable: what each claim's tests run on (a model at a time, a family's sizes, the related paper's
synthetic sets) read from the registry, shown by ``claims list`` within 100 columns and by ``models`` (which lists
the synthetic sets too); a claim named with targets it cannot run on is one line naming the ``--models`` it needs,
exit 4, before pytest starts. And the named selections declared beside the claims (``--claims core``)."""

from __future__ import annotations

import ast

import pytest
from pytest_runs import ROOT

from harness import RunFailed, api, cli
from harness.spec import catalogue
from harness.spec.claim_names import expand, target_of
from harness.spec.claims import CLAIMS, ClaimRegistrationError, Selection, UnknownClaim, claim
from harness.spec.synthetic_sets import SYNTHETIC_SIZES

# ---- what a test runs on: read from the tests' parameters --------------------------------------------------


def parameters_of_each_test() -> dict[str, set[str]]:
    """Test function -> its own parameters, read independently of the catalogue (every claims test file)."""
    out = {}
    for path in sorted((ROOT / "claims").glob("test_*.py")):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
                out[node.name] = {a.arg for a in node.args.args}
    return out


def test_every_claim_test_runs_on_what_its_parameters_say():
    """A test taking ``synthetic`` runs on the synthetic sets, ``family`` on a family's sizes, a model (directly or
    through a fixture of its file) on each model; one taking none runs once, without a model. Every registered
    test is placed, and each claim on one kind of target besides "none" (a claim never mixes models and sets)."""
    params = parameters_of_each_test()
    for c in CLAIMS.values():
        for test in c.tests:
            p, kind = params[test], target_of(test)
            if "synthetic" in p:
                assert kind == "synthetic", test
            elif "family" in p:
                assert kind == "family", test
            elif "model" in p or "model_name" in p:
                assert kind == "model", test
            else:
                assert kind in ("model", "none"), test  # a fixture of its file that takes the model, or nothing
        kinds = {target_of(t) for t in c.tests} - {"none"}
        assert len(kinds) <= 1, (c.id, kinds)
    assert {target_of(t) for c in CLAIMS.values() for t in c.tests} == {"model", "none", "family", "synthetic"}


def test_targets_follow_fixtures_of_the_tests_own_file(tmp_path):
    (tmp_path / "test_x.py").write_text(
        "import pytest\n"
        "@pytest.fixture\ndef table(model, session): ...\n"
        "@pytest.fixture\ndef outer(table): ...\n"
        "def test_a(outer): ...\ndef test_b(synthetic, run_context): ...\n"
        "def test_c(family, session): ...\ndef test_d(f): ...\ndef helper(model): ...\n"
    )
    (tmp_path / "test_broken.py").write_text("def test_(:\n")  # unreadable: left to pytest's own collection
    assert catalogue.tests_targets(tmp_path) == {
        "test_a": "model",
        "test_b": "synthetic",
        "test_c": "family",
        "test_d": "none",
    }


# ---- claims list and models ----------------------------------------------------------------------------------


def test_claims_list_shows_each_claims_targets_within_100_columns(capsys):
    assert cli.main(["claims", "list"]) == 0
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines()) <= 100
    rows = {ln.split()[0]: ln for ln in out.split("\n\n")[0].splitlines()[1:] if not ln.startswith(" ")}
    assert list(rows) == list(CLAIMS)
    for cid, line in rows.items():
        kinds = {target_of(t) for t in CLAIMS[cid].tests}
        if kinds == {"synthetic"}:
            assert "synthetic sets" in line and "each model" not in line, line
        elif "family" in kinds:
            assert "a family's sizes" in line, line
        else:
            assert "each model" in line and "synthetic" not in line, line
    notes = out.split("\n\n")[1]
    assert all(f"synthetic-{size}" in notes for size in SYNTHETIC_SIZES)  # how to name them
    assert "--claims core: " + ", ".join(CLAIMS.selections["core"].claims) in " ".join(notes.split())


def test_models_lists_the_synthetic_sets_and_describes_one(capsys):
    assert cli.main(["models", "synthetic-smoke"]) == 0
    out = capsys.readouterr().out
    assert "unknown model" not in out
    rows: list[str] = []  # the sets' table wraps its cells within 100 columns: a row with its continuation lines
    for ln in out.splitlines():
        if rows and ln.startswith(" ") and rows[-1].startswith("synthetic-"):
            rows[-1] += " " + ln.strip()
        else:
            rows.append(ln)
    described = [" ".join(r.split()) for r in rows if r.startswith("synthetic-smoke-")]
    assert [ln.split()[0] for ln in described] == ["synthetic-smoke-authors", "synthetic-smoke-decoder"]
    assert all("never a verdict" in ln and "d_model" in ln for ln in described)
    matrix = {ln.split()[0]: ln.split()[1:] for ln in out.split("claim  ", 1)[1].splitlines()[1:]}
    for cid, cells in matrix.items():
        synthetic = {target_of(t) for t in CLAIMS[cid].tests} == {"synthetic"}
        assert cells == ([f"{len(CLAIMS[cid].tests)}/{len(CLAIMS[cid].tests)}"] if synthetic else ["-"]), cid


def test_on_a_language_model_a_synthetic_claim_is_not_run_there(capsys):
    assert cli.main(["models", "smollm2-135m", "synthetic-pilot-decoder"]) == 0
    out = capsys.readouterr().out
    matrix = {ln.split()[0]: ln.split()[1:] for ln in out.split("claim  ", 1)[1].splitlines()[1:]}
    for cid, cells in matrix.items():
        if {target_of(t) for t in CLAIMS[cid].tests} == {"synthetic"}:
            assert cells[0] == "-" and cells[1].endswith("/1"), (cid, cells)  # never "every model" again


# ---- a claim named with targets it cannot run on -------------------------------------------------------------


def synthetic_claim() -> str:
    return next(c for c in CLAIMS if {target_of(t) for t in CLAIMS[c].tests} == {"synthetic"})


def test_a_synthetic_claim_on_a_language_model_is_one_line_naming_the_models_it_needs(capsys):
    ds = synthetic_claim()
    assert cli.main(["run", "--models", "smollm2-135m", "--claims", ds]) == 4  # not pytest's 5 (nothing selected)
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"--claims {ds}" in err
    assert "--models smollm2-135m,synthetic-smoke" in err and "synthetic-pilot" in err
    with pytest.raises(RunFailed, match="synthetic-smoke") as e:
        api.verify("smollm2-135m", claims=[ds], quiet=True)
    assert e.value.returncode == 4
    assert cli.main(["run", "--claims", ds]) == 4  # the suite's default models (bundled, paper) too
    capsys.readouterr()


def test_a_language_model_claim_on_synthetic_sets_alone_is_one_line(capsys):
    assert cli.main(["run", "--models", "synthetic-smoke", "--claims", "T7"]) == 4
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--claims T7" in err and "--models smollm2-135m,synthetic-smoke" in err


def test_claims_each_on_their_own_targets_are_no_problem():
    ds = synthetic_claim()
    assert api.target_problem("smollm2-135m,synthetic-smoke", ["T7", ds]) is None
    assert api.target_problem("synthetic-pilot-decoder", [ds]) is None
    assert api.target_problem(None, ["T13", "EQ3"]) is None  # a family's sizes, no model: run with models
    assert "synthetic" in api.target_problem("smollm2-135m", ["T7", ds])  # the one that cannot run says so


# ---- named selections ------------------------------------------------------------------------------------------


def test_core_is_declared_beside_the_claims_and_names_registered_claims():
    core = CLAIMS.selections["core"]
    assert core.claims and all(c in CLAIMS for c in core.claims) and core.why
    assert (ROOT / "claims" / "selections.py").is_file()
    assert all(target_of(t) != "synthetic" for c in core.claims for t in CLAIMS[c].tests)  # on language models


def test_claims_core_selects_its_claims_tests():
    core = CLAIMS.selections["core"].claims
    argv = api.pytest_argv("smollm2-135m", "core,T2")
    wanted = [t for cid in [*core, "T2"] for t in CLAIMS[cid].tests]
    assert argv[argv.index("-k") + 1].split(" or ") == wanted
    assert expand(["T5", "core"]) == list(dict.fromkeys(["T5", *core]))


def test_a_misspelt_selection_gets_a_did_you_mean():
    with pytest.raises(UnknownClaim, match="did you mean 'core'") as e:
        claim("cor")
    assert "or a selection: core" in str(e.value)


def test_a_selection_naming_an_unknown_claim_or_a_taken_name_is_refused():
    with CLAIMS.scratch():
        with pytest.raises(ClaimRegistrationError, match="names T99, which the registry does not hold"):
            CLAIMS.add_selection(Selection("mine", ("T2", "T99"), "a test"))
        with pytest.raises(ClaimRegistrationError, match="the name is taken"):
            CLAIMS.add_selection(Selection("core", ("T2",), "again"))
        with pytest.raises(ClaimRegistrationError, match="the name is taken"):
            CLAIMS.add_selection(Selection("t2", ("T2",), "a claim's id"))
        CLAIMS.add_selection(Selection("sinks", ("T1", "T2"), "the sink claims"))
        assert expand(["sinks"]) == ["T1", "T2"]
    assert "sinks" not in CLAIMS.selections  # the scratch registry is restored


def test_a_module_setting_only_selections_is_a_declaration_module(tmp_path):
    (tmp_path / "only.py").write_text("SELECTIONS = ()\n")
    with pytest.raises(catalogue.CatalogueError, match="no claims in it"):
        catalogue.declaration_files(tmp_path)  # selections alone are no catalogue
    (tmp_path / "section.py").write_text("CLAIMS = ()\n")
    assert [p.name for p in catalogue.declaration_files(tmp_path)] == ["only.py", "section.py"]


def test_every_synthetic_set_a_run_names_is_a_size_the_training_knows():
    """One list of sets (harness/spec/synthetic_sets.py) for the selection, the listings and the training: every size
    a run can name has a shape and a recipe (``harness.synthetic.sizes.SIZES``, which may add depth variants of its
    own), and the model family builds every architecture it can name."""
    from harness.spec.synthetic_sets import SYNTHETIC_ARCHITECTURE_WORDS, SYNTHETIC_ARCHITECTURES, SYNTHETIC_PURPOSE
    from harness.synthetic.sizes import SIZES

    assert set(SYNTHETIC_SIZES) <= set(SIZES) and list(SYNTHETIC_PURPOSE) == list(SYNTHETIC_SIZES)
    assert list(SYNTHETIC_ARCHITECTURE_WORDS) == list(SYNTHETIC_ARCHITECTURES)
