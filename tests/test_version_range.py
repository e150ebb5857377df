"""Regression checks when transformers updates (issue 61): the supported range is one statement that pyproject.toml, the
version matrix, README and docs repeat; a release below it is refused in one line before any work (exit 4) unless
--allow-untested-versions, which the report then flags; a GGUF's declared BOS reaches its converted tokenizer under
every release in the range; a model whose setup failed ends its tests on one line and keeps its snapshots; and
`compare` selects models and claims, names both runs' versions and sizes each move.

The versions are faked (importlib.metadata patched in-process, or a sitecustomize shim in a subprocess), never
installed. The subprocess runs are marked long; each ends at configure time or at the first setup, in seconds.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from pytest_runs import ROOT, run_pytest

from harness.outcome.results import load_results, load_run, typed
from harness.report import cli as report_cli
from harness.report import document, methods_page
from harness.report.cells import run_cells
from harness.report.compare import agreement_line, relative, versions_line
from harness.report.matrix import setup_failure_lines
from harness.report.render import to_markdown
from harness.run import context
from harness.run.records import HARNESS_ERROR_EXIT
from harness.run.selection import UsageError
from harness.spec import versions

EXAMPLE = ROOT / "reports" / "example" / "results.json"
FLOOR = {f.package: f.oldest for f in versions.FLOORS}


def fake_versions(monkeypatch, **fake: str) -> None:
    """importlib.metadata.version answering ``fake`` for those packages (every caller reads it at call time)."""
    real = versions.metadata.version
    monkeypatch.setattr(versions.metadata, "version", lambda name: fake.get(name, None) or real(name))


def shim(tmp_path: Path, **fake: str) -> dict:
    """An environment whose Python reports ``fake`` versions (a sitecustomize.py first on PYTHONPATH)."""
    folder = tmp_path / "shim"
    folder.mkdir(exist_ok=True)
    (folder / "sitecustomize.py").write_text(
        "import importlib.metadata as m\n"
        f"_fake, _real = {fake!r}, m.version\n"
        "m.version = lambda name: _fake.get(name) or _real(name)\n"
    )
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(folder), str(ROOT)]), "CI": "1"}


# ---- the range: one statement, repeated everywhere --------------------------------------------------------------


def test_release_numbers_compare_as_versions():
    assert versions.release("2.13.0+cpu") == (2, 13) and versions.release("5.24.0rc1") == (5, 24)
    assert versions.release("5.9.0") < versions.release("5.18.0") < versions.release("5.18.1")
    assert versions.release("2.6") == versions.release("2.6.0")
    with pytest.raises(ValueError):
        versions.release("nightly")


def test_pyproject_states_the_floors():
    text = (ROOT / "pyproject.toml").read_text()
    for package in FLOOR:
        stated = re.findall(rf'"{package}([<>=!~][^"]*)"', text)
        assert stated == [f">={FLOOR[package]}"], f"pyproject.toml's {package} requirement is not the floor"


def test_the_version_matrix_runs_the_floor_and_the_newest_release():
    text = (ROOT / ".github" / "workflows" / "version-matrix.yml").read_text()
    legs = re.search(r"transformers: \[(.*)\]", text)[1]
    assert [x.strip().strip('"') for x in legs.split(",")] == [FLOOR["transformers"], "latest"]
    assert f'ABSPOS_TORCH: "{versions.NEWEST_MEASURED["torch"]}"' in text
    assert "--models bundled" in text and versions.RECORD in text


def test_the_docs_say_the_same_range():
    tf, torch = FLOOR["transformers"], FLOOR["torch"]
    gpus = (ROOT / "docs" / "gpus.md").read_text()
    assert f"transformers **≥ {tf}**" in gpus and f"torch **≥ {torch}**" in gpus and versions.RECORD in gpus
    assert f"transformers ≥ {tf}" in (ROOT / "README.md").read_text()
    running = (ROOT / "docs" / "running.md").read_text()
    assert "## After a transformers update" in running and "--allow-untested-versions" in running
    assert "5.17 and older" in " ".join(f.why for f in versions.FLOORS)  # what goes wrong below, said in the refusal


def test_the_committed_record_measured_the_floor_and_the_newest_release():
    record = ROOT / versions.RECORD
    measured = json.loads((record / "versions.json").read_text())
    runs = {leg["leg"]: leg for leg in measured["legs"]}
    assert runs["floor"]["versions"]["transformers"] == FLOOR["transformers"]
    assert runs["newest"]["versions"]["transformers"] == versions.NEWEST_MEASURED["transformers"]
    assert runs["floor"]["models"] == ["smollm2-135m", "gemma3-270m", "qwen2.5-coder-0.5b"]  # every bundled model
    assert runs["floor"]["numbers_vs_newest"]["differ"] == 0  # the floor's figures are the newest release's
    for leg in runs.values():  # against the committed example
        assert leg["verdict_changes"] == 0 and leg["harness_errors"] == 0 and leg["compare_exit"] == 0, leg["leg"]
    for name in ("compare-floor.txt", "compare-newest.txt", "side-by-side-floor.md", "conversions.txt", "README.md"):
        assert (record / name).is_file(), name


# ---- below the floor: refused in one line, or run and flagged ---------------------------------------------------


@pytest.mark.parametrize(
    "fake, says",
    [
        ({"transformers": "5.17.0"}, "transformers 5.17.0 is older than the oldest release this suite measures with"),
        ({"torch": "2.5.1+cpu"}, "torch 2.5.1+cpu is older than the oldest release this suite measures with, 2.6.0"),
    ],
)
def test_a_release_below_the_floor_is_one_line(monkeypatch, fake, says):
    fake_versions(monkeypatch, **fake)
    with pytest.raises(UsageError) as e:
        context.check_versions(allowed=False)
    text = str(e.value)
    assert says in text and "--allow-untested-versions" in text and "\n" not in text


def test_the_floor_itself_and_newer_releases_run(monkeypatch, capsys):
    for tf in (FLOOR["transformers"], versions.NEWEST_MEASURED["transformers"], "5.31.0", "6.0.0.dev0"):
        fake_versions(monkeypatch, transformers=tf, torch="2.6.0")
        context.check_versions(allowed=False)  # no refusal: there is no ceiling
    assert capsys.readouterr().err == ""


def test_allowed_it_runs_with_one_line_and_the_report_flags_it(monkeypatch, capsys):
    fake_versions(monkeypatch, transformers="5.17.0")
    context.check_versions(allowed=True)
    err = capsys.readouterr().err
    assert err.startswith("abspos: --allow-untested-versions: transformers 5.17.0 is older") and err.count("\n") == 1
    example = load_results(EXAMPLE)
    results = typed({**example, "versions": {"transformers": "5.17.0", "torch": "2.13.0+cpu"}})
    line = document.run_line(run_cells(results))
    assert "**untested versions** (run with --allow-untested-versions): transformers 5.17.0 is older" in line
    cells = run_cells(results)
    summary = document.pages(cells, [], methods_page.links(cells.claims)).summary
    assert "untested versions" in to_markdown(summary, ROOT)
    assert "untested" not in document.run_line(run_cells(load_run(EXAMPLE)))  # a run inside the range is not flagged
    merged = typed({**example, "versions": {"transformers": "5.17.0 / 5.24.0"}})  # a merge of runs under both
    assert "transformers 5.17.0 is older" in document.run_line(run_cells(merged))


def test_the_option_is_the_plugins_and_the_commands():
    from harness import run_command

    args, rest = run_command.run_parser().parse_known_args(["--allow-untested-versions", "-k", "T9a"])
    assert run_command.passed_on(args) == ["--allow-untested-versions"] and rest == ["-k", "T9a"]
    assert "--allow-untested-versions" in {n for names, _ in run_command.suite_options() for n in names}


@pytest.mark.long
def test_pytest_and_the_command_refuse_an_old_transformers_before_any_work(tmp_path):
    env = shim(tmp_path, transformers="5.17.0")
    r = run_pytest("--models", "smollm2-135m", "-k", "T9a", "--report-dir", str(tmp_path / "r"), env=env)
    assert r.returncode == 4, r.stdout + r.stderr
    said = [line for line in (r.stdout + r.stderr).splitlines() if line.strip()]
    assert len(said) == 1 and "transformers 5.17.0 is older than the oldest release" in said[0], said
    assert not (tmp_path / "r").exists()  # nothing measured, nothing written
    code = "import sys; from harness.cli import main; sys.exit(main(sys.argv[1:]))"
    r = subprocess.run(
        [sys.executable, "-c", code, "run", "--models", "smollm2-135m", "--claims", "T9a", "--no-report"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 4 and "transformers 5.17.0 is older" in r.stdout + r.stderr
    r = run_pytest(
        "--models", "smollm2-135m", "-k", "T9a", "--allow-untested-versions", "--collect-only", "-q", env=env
    )
    assert r.returncode == 0 and "abspos: --allow-untested-versions: transformers 5.17.0" in r.stderr


# ---- a GGUF's declared BOS under every release in the range ------------------------------------------------------


def tiny_tokenizer(bos: bool):
    """A fast tokenizer of four words and <bos>, prepending it or not (a stand-in for a converted GGUF tokenizer)."""
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    vocab = {"<pad>": 0, "<eos>": 1, "<bos>": 2, "<unk>": 3, "the": 4, "cat": 5, "sat": 6, "x": 7}
    backend = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    backend.post_processor = (
        processors.TemplateProcessing(single="<bos>:0 $A:0", special_tokens=[("<bos>", 2)])
        if bos
        else processors.TemplateProcessing(single="$A:0", pair="$A:0 $B:1", special_tokens=[])
    )
    return PreTrainedTokenizerFast(tokenizer_object=backend, bos_token="<bos>", eos_token="<eos>", unk_token="<unk>")


def tiny_gguf(path: Path, add_bos: bool | None) -> Path:
    from gguf import GGUFWriter

    writer = GGUFWriter(str(path), "llama")
    if add_bos is not None:
        writer.add_bool("tokenizer.ggml.add_bos_token", add_bos)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def test_a_tokenizer_without_the_bos_its_gguf_declares_gets_it(tmp_path):
    from harness.model import gguf_bos

    declares = tiny_gguf(tmp_path / "declares.gguf", True)
    tok = tiny_tokenizer(bos=False)
    assert tok("the cat sat")["input_ids"] == [4, 5, 6]
    said = gguf_bos.give_declared_bos(tok, declares)
    assert tok("the cat sat")["input_ids"] == [2, 4, 5, 6] and "tokenizer.ggml.add_bos_token" in said
    assert tok("the cat", "sat")["input_ids"] == [2, 4, 5, 2, 6]  # pairs as transformers' own template
    tok.save_pretrained(tmp_path / "saved")  # the conversion's folder prepends it when loaded again
    from transformers import AutoTokenizer

    assert AutoTokenizer.from_pretrained(tmp_path / "saved")("x")["input_ids"] == [2, 7]


@pytest.mark.parametrize("declared", [False, None])
def test_a_gguf_that_declares_no_bos_is_left_as_converted(tmp_path, declared):
    from harness.model import gguf_bos

    tok = tiny_tokenizer(bos=False)
    assert gguf_bos.give_declared_bos(tok, tiny_gguf(tmp_path / "no.gguf", declared)) is None
    assert tok("the cat")["input_ids"] == [4, 5]


def test_a_tokenizer_that_prepends_bos_is_never_touched(tmp_path):
    from harness.model import gguf_bos

    tok = tiny_tokenizer(bos=True)
    before = tok.backend_tokenizer.to_str()
    assert gguf_bos.give_declared_bos(tok, tmp_path / "never-read.gguf") is None  # the GGUF is not even read
    assert tok.backend_tokenizer.to_str() == before


def test_the_step_is_in_every_conversions_fingerprint(monkeypatch, tmp_path):
    from harness.model import gguf_bos, weights
    from harness.spec.models import REGISTRY

    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    spec = REGISTRY["gemma3-270m"]
    before = weights._fingerprint(gguf, spec)
    monkeypatch.setattr(gguf_bos, "RECIPE", "declared-bos-2")
    assert weights._fingerprint(gguf, spec) != before  # a conversion made before the step is converted again


@pytest.mark.long
def test_the_template_is_transformers_own_for_the_bundled_gemma(tmp_path):
    """The bundled Gemma-3 GGUF's tokenizer as this transformers converts it (5.23+: with BOS), its post-processor
    removed as 5.18-5.22 leave it: the harness's step gives back the very tokenizer.json."""
    from tokenizers import processors
    from transformers import AutoTokenizer

    from harness.model import gguf_bos
    from harness.model.gguf_files import bundled_gguf
    from harness.spec.models import REGISTRY

    gguf = bundled_gguf(REGISTRY["gemma3-270m"])
    tok = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    if not gguf_bos.prepends_bos(tok):
        pytest.skip("this transformers converts the Gemma-3 tokenizer without BOS: nothing to compare with")
    want = json.loads(tok.backend_tokenizer.to_str())
    tok.backend_tokenizer.post_processor = processors.TemplateProcessing(single="$A:0", pair="$A:0 $B:1")
    assert not gguf_bos.prepends_bos(tok)
    assert gguf_bos.give_declared_bos(tok, gguf)
    assert json.loads(tok.backend_tokenizer.to_str()) == want


# ---- a model whose setup failed ----------------------------------------------------------------------------------

REFUSAL = "the tokenizer in /cache/x does not prepend the BOS token 2 its model expects; refusing to measure it"
FAIL_PLUGIN = f"""
import harness.capture.session as session
from harness.spec.models import WrongWeights


def refuse(spec, *args, **kwargs):
    raise WrongWeights(f"{{spec.name}}: {REFUSAL}")


session.load_pretrained = refuse
"""


def test_setup_failure_lines_say_each_model_once():
    line = f"gemma3-270m: setup failed: WrongWeights: gemma3-270m: {REFUSAL}"
    records = [
        {"test": f"t{k}[gemma3-270m]", "claim": "T1", "model": "gemma3-270m", "setup_failed": line}
        | {"outcome": "failed", "verdict": "harness error"}
        for k in range(3)
    ] + [{"test": "t[smollm2-135m]", "claim": "T1", "model": "smollm2-135m", "outcome": "passed", "verdict": "held"}]
    assert setup_failure_lines(records) == [
        "gemma3-270m: setup failed, so its 3 claim tests ended as harness errors (its committed snapshots are kept, "
        f"not compared): WrongWeights: gemma3-270m: {REFUSAL}"
    ]


def test_a_models_load_error_is_marked_with_the_model(monkeypatch):
    from harness.capture import session as capture_session
    from harness.spec.models import WrongWeights

    def refuse(spec, *args, **kwargs):
        raise WrongWeights(f"{spec.name}: {REFUSAL}")

    monkeypatch.setattr(capture_session, "load_pretrained", refuse)
    s = capture_session.Session()
    with pytest.raises(WrongWeights) as first:
        s.model("smollm2-135m")
    with pytest.raises(capture_session.ModelLoadFailed) as again:  # not retried: the first error, named
        s.model("smollm2-135m")
    assert capture_session.setup_of(first.value) == capture_session.setup_of(again.value) == "smollm2-135m"
    assert capture_session.setup_of(ValueError("any other error")) is None and capture_session.setup_of(None) is None


def failing_copy(tmp_path: Path) -> tuple[Path, dict]:
    """The claims, their snapshots and the suite's configuration copied to ``tmp_path`` (a --snapshot-update run there
    can delete nothing committed), with a plugin refusing every model's weights."""
    root = tmp_path / "suite"
    shutil.copytree(ROOT / "claims", root / "claims", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("conftest.py", "pyproject.toml"):
        shutil.copy(ROOT / name, root / name)
    (tmp_path / "plugins").mkdir()
    (tmp_path / "plugins" / "refuse_weights.py").write_text(FAIL_PLUGIN)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path / "plugins"), str(ROOT)]), "CI": "1"}
    return root, env


@pytest.mark.long
def test_a_failed_setup_reads_as_one_line_and_keeps_the_snapshots(tmp_path):
    """Every model's weights refused (as 5.18-5.22 had Gemma-3's tokenizer refused): nothing loads, so each run takes
    seconds. Without harness.run.setup_failures the first run printed 27 tracebacks and "24 snapshots unused ...
    Re-run pytest with --snapshot-update to delete unused snapshots", and the second deleted all 64 snapshots."""
    root, env = failing_copy(tmp_path)
    snapshots = sorted((root / "claims" / "__snapshots__").rglob("*.json"))
    assert len(snapshots) > 60
    r = run_pytest(
        "--models", "gemma3-270m", "-p", "refuse_weights", "--report-dir", str(tmp_path / "r"), cwd=root, env=env
    )
    out = r.stdout + r.stderr
    assert r.returncode == HARNESS_ERROR_EXIT, out  # every test a harness error: the run's own exit code
    assert "Traceback" not in out and "raise WrongWeights" not in out  # one line per test, not ~45
    assert "unused" not in out and "--snapshot-update" not in out  # no advice to delete the model's snapshots
    errors = [line for line in out.splitlines() if line.startswith("gemma3-270m: setup failed: WrongWeights: ")]
    assert len(errors) == 27 and all(REFUSAL in line for line in errors)  # pytest's ERRORS section: a line each
    lines = out.strip().splitlines()
    total = max(k for k, line in enumerate(lines) if line.startswith("abspos total: 37 claim tests on 1 model"))
    last = max(k for k, line in enumerate(lines) if line.startswith("abspos: gemma3-270m: setup failed"))
    assert total < last and all(len(line) <= 100 for line in lines[total:])  # the last lines, within 100 columns
    assert " ".join(line.strip() for line in lines[last:]) == (
        "abspos: gemma3-270m: setup failed, so its 27 claim tests ended as harness errors (its committed snapshots are "
        f"kept, not compared): WrongWeights: gemma3-270m: {REFUSAL}"
    )
    run = next((tmp_path / "r").glob("run-*"))
    records = [r for r in load_results(run)["records"] if r["verdict"] == "harness error"]
    assert len(records) == 27 and all(REFUSAL in r["setup_failed"] for r in records)
    assert "**Setup failed** — gemma3-270m: setup failed, so its 27 claim tests" in (run / "report.md").read_text()
    # followed, that advice deletes them: a --snapshot-update run whose every setup failed deletes none
    r = run_pytest("--models", "bundled", "-p", "refuse_weights", "--snapshot-update", "--no-report", cwd=root, env=env)
    assert r.returncode == HARNESS_ERROR_EXIT and "deleted" not in r.stdout + r.stderr
    assert sorted((root / "claims" / "__snapshots__").rglob("*.json")) == snapshots


# ---- compare, for the check after an update ----------------------------------------------------------------------


def one_model(results: dict, model: str, **changes) -> dict:
    """The example's records of one model as a run of its own, under other versions."""
    return {
        **results,
        "run": f"only-{model}",
        "models": [model],
        "records": [r for r in results["records"] if r.get("model") == model],
        **changes,
    }


def test_compare_one_model_against_the_three_model_example(tmp_path, capsys):
    example = load_results(EXAMPLE)
    run = one_model(example, "smollm2-135m", versions={**example["versions"], "transformers": "5.18.0"})
    (tmp_path / "smol").mkdir()
    (tmp_path / "smol" / "results.json").write_text(json.dumps(run))
    assert report_cli.main(["compare", str(EXAMPLE), str(tmp_path / "smol")]) == 1  # everything else: only in old
    capsys.readouterr()
    assert report_cli.main(["compare", "--models", "smollm2-135m", str(EXAMPLE), str(tmp_path / "smol")]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "(models smollm2-135m): 0 change(s)" in lines[0]
    assert lines[1] == "versions: transformers 5.24.0 → 5.18.0, torch 2.13.0+cpu (both), tokenizers 0.23.3 (both)"
    assert re.match(r"figures: [\d,]+ numbers recorded by both runs, 0 differ;", lines[2])  # (the count: the example's)
    assert not any("models differ" in line for line in lines)


def test_compare_sizes_each_move(tmp_path, capsys):
    example = load_results(EXAMPLE)
    old = one_model(example, "smollm2-135m")
    new = json.loads(json.dumps(old))
    moved = next(f for r in new["records"] for f in r["figures"] if isinstance(f["value"], float) and f["value"])
    moved["value"] *= 1.0123  # beyond rtol 1e-3
    tiny = next(f for r in new["records"] for f in r["figures"] if isinstance(f["value"], float) and f is not moved)
    tiny["value"] = tiny["value"] * (1 + 2e-5) if tiny["value"] else 1e-9  # within tolerance
    for name, run in (("old", old), ("new", new)):
        (tmp_path / f"{name}.json").write_text(json.dumps(run))
    assert report_cli.main(["compare", str(tmp_path / "old.json"), str(tmp_path / "new.json")]) == 1
    out = capsys.readouterr().out
    assert "| model | test | figure | index | old | new | change | relative |" in out
    row = next(line for line in out.splitlines() if f"| {moved['name']} |" in line)
    assert row.endswith("| moved | +1.23% |"), row
    assert re.search(r"figures: [\d,]+ numbers recorded by both runs, 2 differ, the most 0.012 relative", out)


def test_compare_claims_and_unknown_names(tmp_path, capsys):
    assert report_cli.main(["compare", "--claims", "T4,T9a", str(EXAMPLE), str(EXAMPLE)]) == 0
    assert "(claims T4, T9a): 0 change(s)" in capsys.readouterr().out
    assert report_cli.main(["compare", "--models", "smollm2-135m,llama-3.2-1b", str(EXAMPLE), str(EXAMPLE)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("harness.report: compare --models smollm2-135m,llama-3.2-1b: neither run has llama-3.2-1b")
    assert err.count("\n") == 1


def test_relative_sizes_and_the_versions_line():
    assert relative(0.748, 0.7481) == "+1.3e-04" and relative(2.0, 1.0) == "-50.00%" and relative(0, 1e-9) == "from 0"
    assert relative("held", "held") == "" and relative(math.nan, math.nan) == ""
    a = typed(
        {
            "records": [],
            "versions": {"transformers": "5.24.0", "torch": "2.13.0", "tokenizers": "0.23.3", "numpy": "2.4.6"},
        }
    )
    b = typed(
        {
            "records": [],
            "versions": {"transformers": "5.18.0", "torch": "2.13.0", "tokenizers": "0.23.3", "numpy": "2.4.5"},
        }
    )
    assert versions_line(a, b) == (
        "versions: transformers 5.24.0 → 5.18.0, torch 2.13.0 (both), tokenizers 0.23.3 (both), numpy 2.4.6 → 2.4.5"
    )
    empty = typed({"records": []})
    assert versions_line(empty, empty).startswith("versions: transformers (not recorded) (both)")
    assert agreement_line(empty, empty, 1e-3, 1e-6).startswith("figures: 0 numbers recorded by both runs, 0 differ;")
