"""The ``rehearsal`` group's mechanics, without building a model. A rehearsal (a paper architecture with
random weights) is registered as its paper model's spec under its own name; its claim tests end "rehearsed" whether
the claim would hold or not (never a verdict), while a harness error still fails; the report never labels one held or
not held; and the paper model's own loading path still refuses a rehearsal folder.

The plugin's hooks run in-process on stand-in claim tests (pytester): a test named as a registry test, taking
``model_name`` and ``figures`` but no model, so nothing is loaded.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
import sys

import pytest
import torch
from safetensors.torch import save_file

from harness.model import rehearsal, weights
from harness.model.checkpoint_checks import REHEARSAL_KEY
from harness.model.rehearsal_mark import MARKER, rehearsals_root
from harness.outcome.results import loaded
from harness.outcome.verdict import Verdict
from harness.report.record_text import verdict_text
from harness.run.selection import UsageError, selected_models
from harness.spec.applies import Target
from harness.spec.claims import CLAIMS
from harness.spec.models import LLAMA_1B, MISTRAL, PAPER, QWEN, REGISTRY, WrongWeights, get_spec, names

pytest_plugins = ["pytester"]
pytestmark = pytest.mark.usefixtures("restore_registry")

REHEARSALS = [f"{s.name}-rehearsal" for s in PAPER]


def test_the_rehearsal_group_is_one_model_per_paper_model_with_its_spec():
    # registered only when a run names them: read in a fresh interpreter (an earlier test in this one may have)
    code = "from harness.spec.models import REGISTRY; print(sorted({s.group for s in REGISTRY.values()}))"
    groups = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert "'rehearsal'" not in groups.stdout and "'bundled'" in groups.stdout, groups.stdout + groups.stderr
    assert selected_models("rehearsal", log=lambda *a: None) == tuple(REHEARSALS)
    assert names("rehearsal") == REHEARSALS and not set(REHEARSALS) & set(names("paper"))
    assert "rehearsal" not in {REGISTRY[m].group for m in selected_models("all", log=lambda *a: None)}
    for paper in PAPER:
        spec = get_spec(f"{paper.name}-rehearsal")
        assert spec.rehearses == paper.name and spec.rehearsal and spec.group == "rehearsal"
        # what every claim's applicability reads is the paper model's own
        same = ("family", "architecture", "adds_bos", "bos_token_id", "rope", "rope_theta", "sliding_window", "context")
        assert {k: getattr(spec, k) for k in same} == {k: getattr(paper, k) for k in same}
        assert spec.hub_id == paper.hub_id and spec.markers == (paper.family, "rehearsal")
    assert selected_models(f"{QWEN}-rehearsal", log=lambda *a: None) == (f"{QWEN}-rehearsal",)
    with pytest.raises(UsageError, match="unknown model 'qwen-rehearsal'; the rehearsals: llama-3.2-1b-rehearsal"):
        selected_models("qwen-rehearsal", log=lambda *a: None)


def test_a_rehearsal_is_found_only_under_the_rehearsal_root_and_built_once(tmp_path, monkeypatch):
    """Its folder is ``<cache>/rehearsal-models/<org>/<repo>`` (never $ABSPOS_MODELS_DIR or the Hugging Face cache);
    ``ensure_built`` builds it once (a stand-in writer here), rebuilds a stale build of another config, uses one a
    concurrent build put there first; the paper model's spec refuses that folder."""
    monkeypatch.setenv("ABSPOS_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("ABSPOS_MODELS_DIR", str(tmp_path / "models"))
    rehearsal.register_rehearsals()
    spec = get_spec(f"{MISTRAL}-rehearsal")
    folder = rehearsals_root() / "mistralai" / "Mistral-7B-v0.3"
    builds = []

    def stand_in(name, size, where, seed=0):
        builds.append((name, size, seed))
        where.mkdir(parents=True)
        (where / "config.json").write_text(json.dumps({**rehearsal.rehearsal_config(name), "torch_dtype": "float32"}))
        note = json.dumps({"model": name, "size": size, "seed": seed})
        save_file({"w": torch.zeros(1)}, str(where / "model.safetensors"), metadata={REHEARSAL_KEY: note})
        (where / MARKER).write_text(note)
        return where

    monkeypatch.setattr(rehearsal, "build_rehearsal", stand_in)
    assert rehearsal.ensure_built(spec, log=lambda *a: None) == folder
    assert rehearsal.ensure_built(spec, log=lambda *a: None) == folder and builds == [(MISTRAL, "rehearsal", 0)]
    assert weights.paper_folder(spec) == folder
    (tmp_path / "models" / "mistralai").mkdir(parents=True)
    (tmp_path / "models" / "mistralai" / "Mistral-7B-v0.3").symlink_to(folder)  # where the real one would be
    with pytest.raises(WrongWeights, match="holds another model"):
        weights.paper_folder(get_spec(MISTRAL))  # the rehearsal's shape is not the paper model's
    with pytest.raises(WrongWeights, match=r"rehearsal build of mistral-7b-v0.3 \(random weights"):  # at any shape
        weights.paper_folder(dataclasses.replace(get_spec(MISTRAL), config=spec.config))

    stale = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**stale, "num_hidden_layers": 2}))  # an older rehearsal config
    assert rehearsal.ensure_built(spec, log=lambda *a: None) == folder and len(builds) == 2
    assert [p.name for p in folder.parent.iterdir()] == [folder.name]  # the stale build is gone

    def lost_race(name, size, where, seed=0):  # another process renamed its build into place first
        stand_in(name, size, where, seed)
        raise FileExistsError(f"{where} exists")

    monkeypatch.setattr(rehearsal, "build_rehearsal", lost_race)
    (folder / "config.json").write_text("{}")
    assert rehearsal.ensure_built(spec, log=lambda *a: None) == folder and len(builds) == 3


STAND_IN = """
import pytest
import torch
from safetensors.torch import save_file
from harness.outcome.verdict import ClaimNotHeld, holds


@pytest.mark.claim("T9b")
def test_T9b_position0_norm_exceeds_mid_sequence_tenfold(model_name, figures):
    figures.add("peak_ratio", {value})
    {body}
"""


def run_stand_in(pytester, body: str, models: str, value: float = 2.0) -> tuple[object, list]:
    pytester.makepyfile(test_stand_in=STAND_IN.format(body=body, value=value))
    shutil.rmtree(pytester.path / "reports", ignore_errors=True)  # this run's results only
    result = pytester.runpytest_inprocess(
        "-p", "harness.run.plugin", "-p", "no:randomly", "-p", "no:cacheprovider", "--models", models,
        "--report-dir", str(pytester.path / "reports"), "--known-outcomes", str(pytester.path / "none.json"),
    )  # fmt: skip
    found = list((pytester.path / "reports").glob("run-*/results.json"))
    return result, json.loads(found[0].read_text())["records"] if found else []


def test_held_and_not_held_on_a_rehearsal_both_pass_as_rehearsed_with_what_they_would_read(pytester):
    (pytester.path / "none.json").write_text("{}")
    model = f"{LLAMA_1B}-rehearsal"
    result, records = run_stand_in(pytester, 'holds(False, "the norm ratio is 2.0, not 10", check="ratio")', model)
    result.assert_outcomes(passed=1)
    (r,) = records
    assert (r["verdict"], r["model"], r["check"], r["outcome"]) == ("rehearsed", model, "ratio", "passed")
    assert r["reason"] == f"rehearsal of {LLAMA_1B} (random weights), would read: not held at ratio: the norm ratio " \
        "is 2.0, not 10"  # fmt: skip
    assert "baseline" not in r  # neither a snapshot nor a baseline for random weights
    assert not list(pytester.path.rglob("baselines"))

    result, (r,) = run_stand_in(pytester, "pass", model)
    result.assert_outcomes(passed=1)
    assert (r["verdict"], r["check"]) == ("rehearsed", None)
    assert r["reason"] == f"rehearsal of {LLAMA_1B} (random weights), would read: held"


def test_a_harness_error_on_a_rehearsal_still_fails(pytester):
    (pytester.path / "none.json").write_text("{}")
    result, (r,) = run_stand_in(pytester, 'raise KeyError("blocks.3.hook_resid_post")', f"{QWEN}-rehearsal")
    result.assert_outcomes(failed=1)
    assert r["verdict"] == "harness error" and "blocks.3.hook_resid_post" in r["reason"]


def test_the_paper_values_of_the_rehearsed_model_are_applied(pytester, monkeypatch):
    """A figure the paper reports for the rehearsed model is recorded with that value, and checked (here at the
    paper's length, so judged): outside the margin it would read not held, and still passes as rehearsed."""
    from harness.spec import paper_values

    (pytester.path / "none.json").write_text("{}")
    target = Target(get_spec(LLAMA_1B), None, (LLAMA_1B,), 128)  # the rehearsal's applicability is this
    cid, test, figure = next(
        (c.id, t, f)
        for c in CLAIMS.values()
        for f in c.figures
        if f.paper.get(LLAMA_1B) is not None and "{" not in f.name
        for t, applies in c.tests.items()
        if applies.why_not(target) is None
    )
    monkeypatch.setattr(paper_values, "PAPER_SEQ_LEN", 128)  # judged at this run's length
    monkeypatch.setattr(paper_values, "PAPER_MIN_PROMPTS", 1)  # and at this run's prompt count
    paper = figure.paper[LLAMA_1B].value
    body = f'''
import pytest
import torch
from safetensors.torch import save_file

@pytest.mark.claim("{cid}")
def {test}(model_name, figures):
    figures.add("{figure.name}", {paper!r} * 1000 + 1000)
'''
    pytester.makepyfile(test_stand_in=body)
    result = pytester.runpytest_inprocess(
        "-p", "harness.run.plugin", "-p", "no:randomly", "-p", "no:cacheprovider", "-k", test, "--models",
        f"{LLAMA_1B}-rehearsal", "--report-dir", str(pytester.path / "reports"), "--known-outcomes",
        str(pytester.path / "none.json"),
    )  # fmt: skip
    result.assert_outcomes(passed=1)
    (r,) = json.loads(next((pytester.path / "reports").glob("run-*/results.json")).read_text())["records"]
    (f,) = r["figures"]
    assert (
        f["paper"] == paper
        and "(point estimate)" in f["paper_check"]
        and f["paper_check"].endswith("not held, margin " + f["paper_check"].rsplit("margin ", 1)[1])
    ), f
    assert r["verdict"] == "rehearsed" and f"paper value of {figure.name}" in r["reason"], r


def test_the_report_never_labels_a_rehearsal_held_or_not_held():
    label = Verdict.REHEARSED.label
    assert "held" not in label.replace("rehearsed", "") and Verdict.REHEARSED.css not in ("held", "not")
    r = {"test": "claims/a.py::test_T5_x[llama-3.2-1b-rehearsal]", "claim": "T5", "model": "llama-3.2-1b-rehearsal"}
    r |= {"verdict": "rehearsed", "outcome": "passed", "reason": "rehearsal of llama-3.2-1b ..., would read: held"}
    assert verdict_text(loaded(r), True).startswith(label + ": rehearsal of")
    # never "unstable" (read from held / not held)
    assert verdict_text(loaded({**r, "unstable": "flips"}), False) == label
