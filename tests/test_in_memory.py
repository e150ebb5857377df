"""A model held in memory (harness/live.py, harness/measure.py): ``verify(model, tokenizer, claims=...)`` and the core
measurements as functions returning DataFrames, with the checks every model given by reference passes (its spec
derived from config and tokenizer; untrained weights refused in one line, before anything is saved or run); and the
notebook docs/in-memory.ipynb, run cell by cell (nbclient is not in the venv: its code cells in one namespace, each
cell's last expression evaluated as a notebook shows it)."""

from __future__ import annotations

import ast
import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from pytest_runs import ROOT

from harness import RunFailed, api, live, measure
from harness.model import weights
from harness.outcome.verdict import DECIDED
from harness.spec.claims import UnknownClaim
from harness.spec.models import WrongWeights, get_spec, names

NOTEBOOK = ROOT / "docs" / "in-memory.ipynb"
T6_SNAPSHOT = (
    ROOT / "claims" / "__snapshots__" / "test_s5_4_ablations" / "test_T6_bidirectional_attention_reduces_leakage"
    "[smollm2-135m].json"
)


@pytest.fixture(scope="module")
def smol() -> Path:
    """The bundled SmolLM2's converted folder (config, tokenizer, safetensors)."""
    return weights.converted_folder(get_spec("smollm2-135m"), log=lambda *a: None)


@pytest.fixture(scope="module")
def tokenizer(smol):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(smol)


@pytest.fixture
def untrained(tokenizer):
    """A two-layer Llama at initialisation, with SmolLM2's tokenizer and vocabulary: measurable, never trained."""
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=256,
        bos_token_id=tokenizer.bos_token_id,
    )
    return LlamaForCausalLM(config).train()


# ---- what is given: a model, or names -------------------------------------------------------------------------


def test_names_are_names_and_anything_else_is_a_model():
    assert not any(live.is_model(x) for x in (None, "smollm2-135m", ["a", "b"], ("a",)))
    assert live.is_model(SimpleNamespace()) and live.is_model([SimpleNamespace()])


class TransformerLensLike:
    cfg = SimpleNamespace()
    tokenizer = staticmethod(lambda text: {"input_ids": [1]})


TransformerLensLike.__name__ = "HookedTransformer"


def test_what_is_not_a_hugging_face_model_is_one_line(untrained, tokenizer):
    with pytest.raises(live.LiveModelError, match="give the Hugging Face model it was loaded from"):
        live.unwrap(TransformerLensLike())
    with pytest.raises(live.LiveModelError, match="is not a Hugging Face model"):
        live.unwrap(SimpleNamespace(), tokenizer)
    with pytest.raises(live.LiveModelError, match="give its tokenizer too"):
        live.unwrap(untrained)
    wrapped = SimpleNamespace(_model=untrained, tokenizer=tokenizer)  # an nnsight LanguageModel keeps both
    assert live.unwrap(wrapped) == (untrained, tokenizer)


def test_an_in_memory_models_spec_is_derived_as_a_references(untrained, tokenizer):
    spec = live.live_spec(untrained, tokenizer)
    smollm2 = get_spec("smollm2-135m")  # its tokenizer's: the BOS policy is what the tokenizer does
    assert spec.group == "local" and spec.family == "llama" and spec.folder is None
    assert (spec.adds_bos, spec.bos_token_id) == (smollm2.adds_bos, smollm2.bos_token_id)
    assert spec.config["num_hidden_layers"] == 2 and spec.name.startswith("memory-") and "in memory" in spec.source


# ---- the weights' check: before anything is measured, saved or run ---------------------------------------------


def test_verify_refuses_untrained_weights_in_one_line_before_saving_anything(untrained, tokenizer, monkeypatch):
    monkeypatch.setattr(live, "save", lambda *a: pytest.fail("saved an untrained model"))
    monkeypatch.setattr(api, "run_pytest", lambda *a, **k: pytest.fail("ran an untrained model"))
    with pytest.raises(RunFailed, match="untrained weights: next-token loss") as e:
        api.verify(untrained, tokenizer, claims=["T9a"], quiet=True)
    assert e.value.returncode == 4 and "\n" not in str(e.value)
    assert untrained.training  # handed back in its mode
    with pytest.raises(UnknownClaim):  # an unknown claim: before the weights are even looked at
        api.verify(untrained, tokenizer, claims=["T99"])
    with pytest.raises(RunFailed, match="synthetic sets"):  # a claim of the synthetic sets: one line too
        api.verify(untrained, tokenizer, claims=["DS1"])


def test_verify_runs_a_model_in_memory_as_a_path_reference_labelled_as_one(untrained, tokenizer, tmp_path, monkeypatch):
    """Past the weights' check (stood in for: this model is untrained), the model and its tokenizer are saved under
    ``workdir`` and run as ``path:<...>/memory-<stem>``: its label, ``path-memory-<stem>``, is no bundled model's, and
    its baselines are kept beside the copy, so no snapshot or known outcome of another model applies to it; the copy
    is gone when the run ends."""
    seen = {}

    def stand_in(argv, echo=True):
        models = argv[argv.index("--models") + 1]
        folder = Path(models.removeprefix("path:"))
        seen.update(
            argv=argv,
            folder=folder,
            files={p.name for p in folder.iterdir()},
            baselines=Path(argv[argv.index("--baseline-dir") + 1]),
        )
        return 4, "stand-in run"

    monkeypatch.setattr(live, "check_trained", lambda *a: {})
    monkeypatch.setattr(api, "run_pytest", stand_in)
    untrained.config._name_or_path = "HuggingFaceTB/SmolLM2-135M"  # named as the bundled model's checkpoint
    with pytest.raises(RunFailed, match="stand-in run"):
        api.verify(untrained, tokenizer, claims=["T9a"], workdir=tmp_path, quiet=True)
    folder = seen["folder"]
    assert seen["argv"][seen["argv"].index("--models") + 1].startswith("path:")
    assert folder.name == "memory-SmolLM2-135M" and folder.parent.parent == tmp_path
    assert "config.json" in seen["files"] and "model.safetensors" in seen["files"]
    assert "tokenizer.json" in seen["files"] or "tokenizer_config.json" in seen["files"]
    assert seen["baselines"].parent == folder.parent  # its own baselines, none of another model's
    from harness.model.reference_parse import parse

    label = parse(f"path:{folder}").name
    assert label == "path-memory-SmolLM2-135M" and label not in names()  # no registry model's name
    recorded = json.loads((ROOT / "fixtures" / "known_outcomes.json").read_text())
    assert not any(label in str(by_model) for by_model in recorded.values())  # no known outcome names it
    assert not folder.parent.exists()  # the copy saved for the run is deleted


def test_the_measurements_refuse_untrained_weights_unless_asked(untrained, tokenizer):
    with pytest.raises(WrongWeights, match="untrained weights"):
        measure.leakage(untrained, tokenizer, n_boot=50)
    attention = untrained.config._attn_implementation
    df = measure.leakage(untrained, tokenizer, n_boot=50, seq_len=32, n_prompts=12, check_trained=False)
    assert list(df.columns) == ["layer", "head", "delta_r2", "ci_low", "ci_high"] and len(df) == 2 * 4
    assert (df.ci_low <= df.delta_r2).all() and (df.delta_r2 <= df.ci_high).all()
    assert df.attrs["prompts"] == 12 and df.attrs["tokens"] == 32 and len(df.attrs["mean"]) == 3
    assert untrained.config._attn_implementation == attention and untrained.training  # handed back as it was


def test_given_prompts_are_cut_to_the_length_or_refused_naming_the_short_one(untrained, tokenizer):
    text = "The history of the city begins with a small settlement on the river. " * 6
    df = measure.sink_profile(untrained, tokenizer, [text, text + " More.", text], seq_len=16, check_trained=False)
    assert df.attrs["prompts"] == 3 and df.attrs["tokens"] == 16 and set(df.position) == set(range(15))
    with pytest.raises(ValueError, match="prompt 1 has .* tokens, fewer than seq_len=64"):
        measure.leakage(untrained, tokenizer, [text, "Too short.", text], seq_len=64, check_trained=False)
    ids = np.asarray(tokenizer([text] * 3)["input_ids"])[:, :40]  # token ids: the longest allowed length, 32
    assert measure.sink_profile(untrained, tokenizer, ids, check_trained=False).attrs["tokens"] == 32
    with pytest.raises(ValueError, match="seq_len=100: must be 8 times a power of two"):
        measure.leakage(untrained, tokenizer, seq_len=100, check_trained=False)
    with pytest.raises(ValueError, match="condition='reversed'"):
        measure.leakage(untrained, tokenizer, condition="reversed")


# ---- the notebook ------------------------------------------------------------------------------------------------


def code_cells(path: Path) -> list[str]:
    nb = json.loads(path.read_text())
    assert nb["nbformat"] == 4
    return ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"]


def run_cell(source: str, namespace: dict):
    """A notebook cell: its statements, then its last expression's value (what the notebook would show)."""
    tree = ast.parse(source)
    last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
    exec(compile(tree, "<cell>", "exec"), namespace)
    return eval(compile(ast.Expression(last.value), "<cell>", "eval"), namespace) if last else None


def test_the_notebook_is_valid_and_shows_each_measurement_and_verify():
    cells = code_cells(NOTEBOOK)
    text = "\n".join(cells)
    for needed in ("from harness.measure import leakage, sink_profile", 'condition="bidirectional"', "verify(model"):
        assert needed in text
    for cell in cells:
        ast.parse(cell)


@pytest.mark.long
def test_the_notebook_runs_and_its_measurements_are_the_claims_own(tmp_path, monkeypatch):
    """Cell by cell: SmolLM2 loaded in memory, its per-head leakage under the causal mask and without it (whose means
    are T6's committed SmolLM2 figures, to their tolerance), its sink profile, and verify() on two claims."""
    from harness import api as api_module

    monkeypatch.setitem(api_module.verify.__kwdefaults__, "report_dir", tmp_path)  # the run folder: here
    namespace: dict = {}
    shown = [run_cell(cell, namespace) for cell in code_cells(NOTEBOOK)]
    model, causal, bi = namespace["model"], namespace["causal"], namespace["bidirectional"]
    layers, heads = model.config.num_hidden_layers, model.config.num_attention_heads
    assert len(causal) == layers * heads and len(shown[1]) == 5
    snapshot = json.loads(T6_SNAPSHOT.read_text())
    tol = snapshot["_tolerance"]
    assert causal.attrs["mean"][0] == pytest.approx(snapshot["mean_delta_causal"], rel=tol["rtol"], abs=tol["atol"])
    assert bi.attrs["mean"][0] == pytest.approx(snapshot["mean_delta_bidirectional"], rel=tol["rtol"], abs=tol["atol"])
    assert len(namespace["sinks"]) == layers * 127 and len(shown[3]) == 5
    v, name = shown[4], "path-memory-" + live.stem(model)
    assert len(v) == 2 and {r["model"] for r in v} == {name} and {r["verdict"] for r in v} <= set(DECIDED)
    folder = Path(v.results["provenance"]["models"][name]["folder"])
    assert folder.name == "memory-" + live.stem(model) and folder.parent.name.startswith("abspos-in-memory-")
    assert not folder.parent.exists()  # the copy saved for the run is gone; the run's report is kept
    assert Path(v.report).is_relative_to(tmp_path)
