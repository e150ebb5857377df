"""A model is measured only if it is the model its config describes.

Each case, and the test that holds it:

- config says 31 layers, weights hold 30 (a random layer 30; T9a recorded "held") ..... test_a_real_folder_with_a_layer_more_is_refused_by_the_claims,
                                                                                          test_a_config_and_weights_that_disagree_are_refused_in_one_line[layers 31]
- config says 29 layers (a truncated model) ............................................ test_a_config_and_weights_that_disagree_are_refused_in_one_line[layers 29]
- vocab_size or intermediate_size edited: a ~120-line traceback ........................ test_a_config_and_weights_that_disagree_are_refused_in_one_line[vocab, intermediate]
  (and what must still load: the bundled model, tied embeddings, tiny random-init folders) test_real_and_tiny_models_still_load_clean
- YaRN's attention scaling dropped by identity-RoPE, on every RoPE type ................. test_identity_rope_keeps_the_models_attention_scaling[*]
- YaRN's scaling squared into band_permuted_query's norms, on every RoPE type ........... test_the_scrambled_query_keeps_every_norm[*]
- a RoPE variant whose ablations are not verified: T6's RoPE test is n/a with the reason  test_rope_ablations_are_na_on_an_unverified_rope_variant
- custom code (auto_map, unknown model_type) prompts and runs, from register and `models`  test_a_config_that_needs_custom_code_is_refused_without_asking_or_running_it
- no call passes trust_remote_code=False ................................................ test_every_config_tokenizer_and_model_load_refuses_remote_code
- path:<a file> says "no such folder" ................................................... test_path_to_a_file_says_it_is_a_file
- a dangling weights link is "present" in `models`, a 147-line OSError at load ......... test_a_dangling_weights_link_is_one_line_in_models_and_at_load
- hf:../x resolves outside $ABSPOS_MODELS_DIR .......................................... test_an_hf_reference_never_leaves_the_models_folder
"""

from __future__ import annotations

import builtins
import dataclasses
import json
import math
import os
from pathlib import Path

import pytest
import torch
from pytest_runs import run_pytest

from harness import cli
from harness.model import interventions as iv
from harness.model import references, weights
from harness.model.attention import ATTN_IMPL, register_attention
from harness.model.hooks import HookedModel
from harness.model.references import ReferenceError
from harness.spec.applies import Target
from harness.spec.claims import CLAIMS
from harness.spec.models import REGISTRY, WeightsUnavailable, WrongWeights, get_spec

ROOT = Path(weights.__file__).resolve().parents[1]  # the tree whose harness is tested
TOKENIZER = ("tokenizer.json", "tokenizer_config.json")


pytestmark = pytest.mark.usefixtures("restore_registry")  # tests/conftest.py


@pytest.fixture(scope="module")
def smol() -> Path:
    """The bundled SmolLM2's converted folder (config, tokenizer, safetensors)."""
    return weights.converted_folder(get_spec("smollm2-135m"), log=lambda *a: None)


def edited_copy(src: Path, dest: Path, **config) -> Path:
    """``dest`` linking ``src``'s model files, with its config.json edited by ``config``."""
    dest.mkdir(parents=True)
    for f in src.iterdir():
        if f.name not in ("config.json", "abspos-converted.json"):
            (dest / f.name).symlink_to(f)
    (dest / "config.json").write_text(json.dumps({**json.loads((src / "config.json").read_text()), **config}))
    return dest


def one_line(e: BaseException) -> str:
    text = str(e)
    assert "\n" not in text.strip(), text[:3000]
    return text


# ---- config and weights disagree ------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "edit, words",
    [
        ({"num_hidden_layers": 31}, "missing from the checkpoint and would be random (first: model.layers.30."),
        ({"num_hidden_layers": 29}, "not in the model its config describes (first: model.layers.29."),
        (
            {"vocab_size": 49000},
            "another shape than its config gives (first: model.embed_tokens.weight [49152, 576] in "
            "the checkpoint, [49000, 576] by the config)",
        ),
        (
            {"intermediate_size": 1600},
            "another shape than its config gives (first: model.layers.0.mlp.down_proj.weight",
        ),
    ],
    ids=["layers 31", "layers 29", "vocab", "intermediate"],
)
def test_a_config_and_weights_that_disagree_are_refused_in_one_line(tmp_path, smol, capfd, edit, words):
    """At load, from transformers' loading info, whatever the spec says (a paper or registry spec matching the edited
    config, a folder edited after its spec was derived); a layer count is refused at reference time already."""
    folder = edited_copy(smol, tmp_path / "smol-edited", **edit)
    if "num_hidden_layers" in edit:
        with pytest.raises(ReferenceError) as e:
            references.register(f"path:{folder}", log=lambda *a: None)
        assert f"gives {edit['num_hidden_layers']} layers but its weights hold 30" in one_line(e.value)
    spec = REGISTRY[references.register(f"path:{edited_copy(smol, tmp_path / 'smol')}", log=lambda *a: None)]
    spec = dataclasses.replace(spec, folder=str(folder), config={**spec.config, **edit})
    capfd.readouterr()
    with pytest.raises(WrongWeights) as e:
        weights.load_pretrained(spec, "float32", "cpu", log=lambda *a: None)
    text = one_line(e.value)
    assert words in text and str(folder) in text and text.endswith("refusing to measure it"), text
    assert "LOAD REPORT" not in "".join(capfd.readouterr())  # transformers' many-line table is not printed either


@pytest.mark.long
def test_a_real_folder_with_a_layer_more_is_refused_by_the_claims(tmp_path, smol):
    """Through pytest: T9a on a SmolLM2 folder whose config says 31 layers is refused before collection with one line
    (exit 4), never a verdict or a baseline."""
    folder = edited_copy(smol, tmp_path / "smol-31", num_hidden_layers=31)
    proc = run_pytest(
        *(
            "--models",
            f"path:{folder}",
            "-k",
            "T9a",
            "--no-report",
            "-q",
            "--baseline-dir",
            str(tmp_path / "baselines"),
        ),
        timeout=600,
        env={**os.environ, "HF_HUB_CACHE": str(tmp_path / "hub"), "HF_HUB_OFFLINE": "1"},
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 4 and proc.stderr.strip().count("\n") == 0, out[-3000:]
    assert "config.json gives 31 layers but its weights hold 30" in proc.stderr and "collected" not in proc.stdout
    assert not list((tmp_path / "baselines").rglob("*.json")), out[-3000:]


@pytest.fixture
def untrained_accepted(monkeypatch):
    """The next-token loss bound lifted (harness.model.next_token_loss): a tiny random model tests loading, and
    random weights are untrained by what they do, however they look (tests/test_trusted_weights_and_settings.py)."""
    from harness.model import next_token_loss

    monkeypatch.setattr(next_token_loss, "MARGIN", -math.inf)


def tiny_folder(tmp_path: Path, name: str, smol: Path) -> Path:
    """A tiny model saved as a folder, with SmolLM2's tokenizer beside it (and an embedding row for each of its
    tokens): random weights made to look trained (norm scales that vary, matrices of differing spread), since a
    fresh initialisation is refused as untrained (harness.model.checkpoint_checks); registered only with the loss
    bound lifted (``untrained_accepted``)."""
    folder = tmp_path / name
    spec = get_spec(name)
    spec = dataclasses.replace(spec, config={**spec.config, "vocab_size": 49152})
    model = weights.random_init_model(spec)
    g = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for _, p in model.named_parameters():
            if p.dim() == 1:  # norm scales start equal (1, or 0 for Gemma's 1 + w)
                p.add_(0.1 * torch.rand(p.shape, generator=g))
            else:
                p.mul_(0.5 + torch.rand((), generator=g))
    model.save_pretrained(folder)
    for f in TOKENIZER:
        (folder / f).symlink_to(smol / f)
    return folder


def test_real_and_tiny_models_still_load_clean(tmp_path, smol, untrained_accepted):
    """Tied embeddings (lm_head absent from the file) and non-persistent buffers are not missing weights."""
    model, _ = weights.load_pretrained(get_spec("smollm2-135m"), "float32", "cpu", log=lambda *a: None)
    assert model.config.tie_word_embeddings and model.config.num_hidden_layers == 30
    for name in ("tiny-llama", "tiny-gemma3"):  # untied, tied
        spec = REGISTRY[references.register(f"path:{tiny_folder(tmp_path, name, smol)}")]
        model, _ = weights.load_pretrained(spec, "float32", "cpu", log=lambda *a: None)
        assert model.config.num_hidden_layers == get_spec(name).config["num_hidden_layers"]


# ---- RoPE variants ------------------------------------------------------------------------------------------------
TINY = get_spec("tiny-llama")
HEAD_DIM = TINY.config["head_dim"]
ORIGINAL = 32  # original context of the scaled variants; the tiny model's is 512
# every RoPE type transformers ships beside default (ROPE_INIT_FUNCTIONS), with its attention scaling
ROPE_TYPES = {
    "default": ({}, 1.0),
    "linear": ({"factor": 2.0}, 1.0),
    "dynamic": ({"factor": 2.0}, 1.0),
    "yarn": ({"factor": 4.0, "original_max_position_embeddings": ORIGINAL}, 0.1 * math.log(4.0) + 1),
    "longrope": (
        {
            "short_factor": [1.0] * (HEAD_DIM // 2),
            "long_factor": [2.0] * (HEAD_DIM // 2),
            "original_max_position_embeddings": ORIGINAL,
        },
        math.sqrt(1 + math.log(512 / ORIGINAL) / math.log(ORIGINAL)),
    ),
    "llama3": (
        {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": ORIGINAL},
        1.0,
    ),
}


def rope_model(rope_type: str) -> tuple[HookedModel, float]:
    import transformers

    params, scaling = ROPE_TYPES[rope_type]
    config = {k: v for k, v in TINY.config.items() if k != "rope_theta"}
    config["rope_parameters"] = {"rope_type": rope_type, "rope_theta": 1e4, **params}
    torch.manual_seed(0)
    hf = transformers.LlamaForCausalLM(transformers.LlamaConfig(**config)).eval()
    register_attention()
    hf.set_attn_implementation(ATTN_IMPL)
    spec = dataclasses.replace(TINY, rope="standard" if rope_type == "default" else rope_type)
    return HookedModel(hf, spec), scaling


def run(model: HookedModel, n: int, mapping: dict, *contexts) -> None:
    """A forward pass of ``n`` tokens under ``contexts`` (outermost first), then ``mapping``'s hooks."""
    import contextlib

    x = torch.randint(3, 250, (2, n), generator=torch.Generator().manual_seed(0))
    with contextlib.ExitStack() as stack, torch.no_grad():
        for c in contexts:
            stack.enter_context(c)
        stack.enter_context(model.hooks(mapping))
        model.hf(input_ids=x)


LENGTHS = (24, 80)  # within and past the scaled variants' original context (longrope switches factors there)


@pytest.mark.parametrize("rope_type", list(ROPE_TYPES))
def test_identity_rope_keeps_the_models_attention_scaling(rope_type):
    """cos = the model's attention scaling, sin = 0: only the rotation goes, not the attention temperature."""
    model, scaling = rope_model(rope_type)
    assert model.hf.model.rotary_emb.attention_scaling == pytest.approx(scaling, rel=1e-6)  # transformers' own figure
    for n in LENGTHS:
        own, ident = {}, {}
        run(model, n, {"blocks.0.attn.hook_rope": lambda cs, h: own.setdefault("cs", cs)})
        run(model, n, {"blocks.0.attn.hook_rope": lambda cs, h: ident.setdefault("cs", cs)}, iv.identity_rope(model))
        cos, sin = own["cs"]
        assert torch.allclose(cos**2 + sin**2, torch.full_like(cos, scaling**2), rtol=1e-5)  # the model's own
        icos, isin = ident["cs"]
        assert torch.all(isin == 0) and torch.allclose(icos, torch.full_like(icos, scaling), rtol=1e-6), (
            f"{rope_type} at {n} tokens: identity cos {icos.flatten()[0].item()}, the model's scaling {scaling}"
        )


@pytest.mark.parametrize("rope_type", list(ROPE_TYPES))
def test_the_scrambled_query_keeps_every_norm(rope_type):
    """Scrambled-RoPE hands attention a rotation of the model's own query: every (token, head) norm kept, and the
    query really changed; band_permuted_query itself keeps each band's norm."""
    model, scaling = rope_model(rope_type)
    for n in LENGTHS:
        before, after, rope = {}, {}, {}
        run(
            model,
            n,
            {
                "blocks.0.attn.hook_q": lambda q, h: before.setdefault("q", q.clone()),
                "blocks.0.attn.hook_rope": lambda cs, h: rope.setdefault("cs", cs),
            },
        )
        run(model, n, {"blocks.0.attn.hook_q": lambda q, h: after.setdefault("q", q.clone())}, iv.scrambled_rope(model))
        q, q2 = before["q"], after["q"]
        assert not torch.allclose(q, q2)
        assert torch.allclose(q2.norm(dim=-1), q.norm(dim=-1), rtol=1e-5), (
            f"{rope_type} at {n} tokens: norms x{(q2.norm(dim=-1) / q.norm(dim=-1)).mean().item():.4f}"
        )
        cos, sin = rope["cs"]
        half = HEAD_DIM // 2
        extra = (scaling,) if scaling != 1.0 else ()  # the scaling the model's cos/sin carry, divided out
        out = iv.band_permuted_query(q, cos.unsqueeze(1), sin.unsqueeze(1), iv.band_permutation(half), *extra)
        band = lambda t: (t[..., :half] ** 2 + t[..., half:] ** 2).sqrt()
        assert torch.allclose(band(out), band(q), rtol=1e-4, atol=1e-6)


def test_rope_ablations_are_na_on_an_unverified_rope_variant():
    test = CLAIMS["T6"].tests["test_T6_rope_ablations_raise_leakage_alike"]
    for rope in ("standard", "large-theta", "dual", "linear", "dynamic", "yarn", "longrope", "llama3"):
        assert test.why_not(Target(dataclasses.replace(TINY, rope=rope))) is None
    why = test.why_not(Target(dataclasses.replace(TINY, name="x", rope="proportional")))
    assert why is not None and "verified faithful" in why and "\n" not in why
    assert (
        CLAIMS["T6"]
        .tests["test_T6_bidirectional_attention_reduces_leakage"]
        .why_not(Target(dataclasses.replace(TINY, rope="proportional")))
        is None
    )  # the bidirectional ablation does not touch RoPE


# ---- custom code ----------------------------------------------------------------------------------------------------
def custom_code_folder(tmp_path: Path, smol: Path) -> tuple[Path, Path]:
    """A folder whose config needs its own Python (unknown model_type, auto_map); running it writes ``marker``."""
    folder, marker = tmp_path / "custom", tmp_path / "EXECUTED"
    folder.mkdir()
    code = f"from pathlib import Path\nPath({str(marker)!r}).write_text('ran')\n"
    (folder / "configuration_evil.py").write_text(
        code + "from transformers import LlamaConfig\n\n\n"
        "class EvilConfig(LlamaConfig):\n    model_type = 'evil_llama'\n"
    )
    (folder / "modeling_evil.py").write_text(code)
    (folder / "config.json").write_text(
        json.dumps(
            {
                "model_type": "evil_llama",
                "architectures": ["EvilForCausalLM"],
                "auto_map": {
                    "AutoConfig": "configuration_evil.EvilConfig",
                    "AutoModelForCausalLM": "modeling_evil.EvilForCausalLM",
                },
            }
        )
    )
    for f in TOKENIZER:
        (folder / f).symlink_to(smol / f)
    return folder, marker


def test_a_config_that_needs_custom_code_is_refused_without_asking_or_running_it(tmp_path, smol, monkeypatch, capsys):
    folder, marker = custom_code_folder(tmp_path, smol)
    asked = []
    monkeypatch.setattr(builtins, "input", lambda *a: (asked.append(a), "y")[1])  # a user who would answer y
    with pytest.raises(ReferenceError) as e:
        references.register(f"path:{folder}")
    assert not asked and not marker.exists(), f"asked {asked}; the folder's code ran: {marker.exists()}"
    text = one_line(e.value)
    assert "never runs a model folder's code" in text and "evil_llama" in text, text
    assert cli.main(["models", f"path:{folder}"]) == 4
    err = capsys.readouterr().err
    assert err.strip().count("\n") == 0 and "never runs a model folder's code" in err, err
    assert not asked and not marker.exists()


def test_every_config_tokenizer_and_model_load_refuses_remote_code(tmp_path, smol, monkeypatch, untrained_accepted):
    """Resolving a reference and loading it: every from_pretrained says trust_remote_code=False."""
    import transformers

    calls = []
    for cls in (transformers.AutoConfig, transformers.AutoTokenizer, transformers.AutoModelForCausalLM):
        original = cls.from_pretrained

        def spy(*args, _original=original, _name=cls.__name__, **kwargs):
            calls.append((_name, kwargs.get("trust_remote_code", "not passed")))
            return _original(*args, **kwargs)

        monkeypatch.setattr(cls, "from_pretrained", spy)
    folder = tiny_folder(tmp_path, "tiny-llama", smol)
    config = json.loads((folder / "config.json").read_text())  # a known type whose config also names custom code:
    (folder / "config.json").write_text(json.dumps({**config, "auto_map": {"AutoModelForCausalLM": "x.Y"}}))
    spec = REGISTRY[references.register(f"path:{folder}")]
    assert "auto_map" in spec.caveat  # measured with transformers' own class, and said so
    weights.load_pretrained(spec, "float32", "cpu", log=lambda *a: None)
    assert {name for name, _ in calls} == {"AutoConfig", "AutoTokenizer", "AutoModelForCausalLM"}, calls
    assert all(trust is False for _, trust in calls), calls


# ---- references ------------------------------------------------------------------------------------------------------
def test_path_to_a_file_says_it_is_a_file(tmp_path, smol):
    with pytest.raises(ReferenceError) as e:
        references.register(f"path:{smol / 'model.safetensors'}")
    assert "is a file, not a folder" in one_line(e.value)


def test_a_dangling_weights_link_is_one_line_in_models_and_at_load(tmp_path, smol):
    folder = edited_copy(smol, tmp_path / "dangling")
    (folder / "model.safetensors").unlink()
    (folder / "model.safetensors").symlink_to(tmp_path / "gone.safetensors")
    spec = REGISTRY[references.register(f"path:{folder}")]
    status = cli.weights_status(spec)
    assert status.startswith("absent:") and "is a link to" in status and "does not exist" in one_line(status), status
    with pytest.raises(WeightsUnavailable) as e:  # at load: its tests skip with that line
        weights.load_pretrained(spec, "float32", "cpu", log=lambda *a: None)
    assert "does not exist" in one_line(e.value)


@pytest.mark.parametrize("target", ["../outside", "org/..", "./x", "..org/x"])
def test_an_hf_reference_never_leaves_the_models_folder(tmp_path, smol, monkeypatch, target):
    monkeypatch.setenv("ABSPOS_MODELS_DIR", str(tmp_path / "models" / "inner"))
    (tmp_path / "models" / "inner" / "org").mkdir(parents=True)
    edited_copy(smol, tmp_path / "models" / "outside")  # a real model a resolved "../outside" would find
    with pytest.raises(ReferenceError) as e:
        references.register(f"hf:{target}")
    assert "is not a Hugging Face id" in one_line(e.value)
