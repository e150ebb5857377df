"""Models by reference (harness/model/references.py): hf:<org>/<name>[@rev], path:<folder>, gguf:<file>.

The spec of a referenced model is derived from its config and tokenizer. Checked here: the derived specs of the
three bundled models equal their registry entries field by field; a bundled model's converted weights, saved under
another name and layout, give the registry entry's figures through each of path:, hf: (a local Hugging Face cache
layout) and gguf:; and every refusal (malformed reference, absent model, non-RoPE, encoder-decoder, partial rotary,
attention outside transformers' interface, a folder holding another model) is one line before any work, while a
folder without weights skips its tests with one line.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
from pathlib import Path

import pytest
from pytest_runs import run_pytest

from harness.model import references, weights
from harness.model.references import Reference, ReferenceError, parse
from harness.spec.models import REGISTRY, ModelSpec, get_spec, names

ROOT = Path(__file__).resolve().parents[1]
REV = "0123456789abcdef0123456789abcdef01234567"
FILES = ("config.json", "tokenizer.json", "tokenizer_config.json")
# the figures of one model under four names agree at any settings: the smallest run the settings allow (a baseline
# under tmp, no committed snapshot) keeps the four-way run to a minute or two on 2 cores
SMALL = ("--n-prompts", "12", "--seq-len", "16", "--n-pairs", "1000", "--n-probe-prompts", "20")


pytestmark = pytest.mark.usefixtures("restore_registry")  # each test's references leave the registry as found


@pytest.fixture(scope="module")
def smol_conversion() -> Path:
    return weights.converted_folder(get_spec("smollm2-135m"), log=lambda *a: None)


def link_model(src: Path, dest: Path, with_weights: bool = True) -> Path:
    """``dest`` holding ``src``'s model files as symlinks (another name and layout, same bytes)."""
    dest.mkdir(parents=True)
    for f in src.iterdir():
        if f.name != "abspos-converted.json" and (with_weights or not f.name.endswith(".safetensors")):
            (dest / f.name).symlink_to(f)
    return dest


def hf_cache_layout(hub: Path, repo: str, src: Path) -> Path:
    """A Hugging Face cache entry for ``repo`` at revision REV (refs/main -> REV), its files linking ``src``'s."""
    entry = hub / f"models--{repo.replace('/', '--')}"
    link_model(src, entry / "snapshots" / REV)
    (entry / "refs").mkdir()
    (entry / "refs" / "main").write_text(REV)
    return entry


# ---- parsing -------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "token, ref",
    [
        ("hf:HuggingFaceTB/SmolLM2-135M", Reference("hf", "HuggingFaceTB/SmolLM2-135M")),
        ("hf:org/name@v1.0", Reference("hf", "org/name", "v1.0")),
        ("path:/models/my-finetune", Reference("path", "/models/my-finetune")),
        ("gguf:/m/x.Q4_K_M.gguf", Reference("gguf", "/m/x.Q4_K_M.gguf")),
        ("smollm2-135m", None),
        ("bundled", None),
    ],
)
def test_a_reference_is_parsed_by_its_prefix(token, ref):
    assert parse(token) == ref


def test_reference_names_are_file_name_safe_and_never_a_registry_name():
    for token in ("hf:org/name@abc", "path:/m/smollm2-135m", "gguf:/m/smollm2-135m.gguf"):
        name = parse(token).name
        assert "/" not in name and ":" not in name and name not in names()
    assert parse("hf:org/name@refs/pr/1").name == "hf-org--name~refs-pr-1"  # '@' would split an xdist group name


@pytest.mark.parametrize(
    "token, words",
    [
        ("foo:bar", "unknown reference kind 'foo'"),
        ("hf:no-slash", "hf:<org>/<name>[@<revision>]"),
        ("path:", "nothing after 'path:'"),
    ],
)
def test_a_malformed_reference_is_one_line(token, words):
    with pytest.raises(ReferenceError, match=r"^[^\n]*$") as e:
        parse(token)
    assert words in str(e.value)


# ---- derived specs -------------------------------------------------------------------------------------------------
@pytest.mark.long
@pytest.mark.parametrize("name", names("bundled"))
def test_the_derived_spec_of_a_bundled_model_is_its_registry_entry(name):
    """From config and tokenizer alone: family, BOS policy (what the tokenizer does), RoPE theta (and the dual
    local/global variant), sliding window, context, architecture and shape all equal the registry's."""
    spec = get_spec(name)
    folder = weights.converted_folder(spec, log=lambda *a: None)
    derived = references.derive_spec(parse(f"path:{folder}"), folder)
    fields = ("family", "adds_bos", "bos_token_id", "rope_theta", "sliding_window", "context", "architecture", "config")
    assert {f: getattr(derived, f) for f in fields} == {f: getattr(spec, f) for f in fields}
    assert (derived.rope == "dual") == (spec.rope == "dual")
    assert derived.group == "local" and derived.markers == (spec.family, "local")


@pytest.mark.slow  # three claims runs of a real model: weekly; each reference form stays checked by its own load tests
@pytest.mark.long
def test_the_same_figures_through_path_hf_and_gguf_as_the_registry_entry(tmp_path, smol_conversion):
    """SmolLM2's converted weights under another name and layout: as a folder (path:), as a Hugging Face cache
    entry (hf:, offline) and as its GGUF file under another name (gguf:), run in one pytest run beside the registry
    entry; every figure of every test equals the registry entry's, and every verdict too."""
    folder = link_model(smol_conversion, tmp_path / "my-org" / "smol-finetune")
    hf_cache_layout(tmp_path / "hub", "my-org/smol-instruct", smol_conversion)
    gguf = tmp_path / "renamed.gguf"
    gguf.symlink_to(weights.bundled_gguf(get_spec("smollm2-135m")))
    models = f"smollm2-135m,path:{folder},hf:my-org/smol-instruct,gguf:{gguf}"
    env = {**os.environ, "HF_HUB_CACHE": str(tmp_path / "hub"), "HF_HUB_OFFLINE": "1"}
    proc = run_pytest(
        *("--models", models, "-k", "T9a or T5_top30 or T2", *SMALL, "--report-dir", str(tmp_path / "reports")),
        *("--baseline-dir", str(tmp_path / "baselines"), "-p", "no:randomly", "-q"),
        env=env,
        timeout=900,
    )
    results = json.loads((tmp_path / "reports" / "latest" / "results.json").read_text())
    by_model: dict = {}
    for r in results["records"]:
        by_model.setdefault(r["model"], {})[r["test"].split("[")[0]] = (r["verdict"], r["figures"])
    assert set(by_model) == {"smollm2-135m", "path-smol-finetune", "hf-my-org--smol-instruct", "gguf-renamed"}, (
        proc.stdout[-2000:] + proc.stderr[-2000:]
    )
    registry = by_model.pop("smollm2-135m")
    assert len(registry) == 5 and any(figs for _, figs in registry.values())
    for name, tests in by_model.items():
        assert tests == registry, name
    derived = results["provenance"]["models"]["path-smol-finetune"]["derived"]
    assert derived["adds_bos"] is False and derived["family"] == "llama"


# ---- refusals ------------------------------------------------------------------------------------------------------
def save_config(folder: Path, model_type: str, **kwargs) -> Path:
    from transformers import AutoConfig

    AutoConfig.for_model(model_type, **kwargs).save_pretrained(folder)
    return folder


@pytest.mark.parametrize(
    "model_type, kwargs, words",
    [
        ("gpt2", {}, "gpt2 has no rotary position embedding"),
        ("t5", {}, "t5 is an encoder-decoder"),
        ("bert", {}, "bert has no rotary position embedding"),
        ("phi3", {"partial_rotary_factor": 0.5}, "rotates only part of each head"),
        ("stablelm", {}, "stablelm rotates only part of each head"),
        (
            "llama",
            {"attention": False},
            "LlamaForCausalLM's attention does not go through transformers' attention interface",
        ),
        ("gpt_oss", {}, "its attention hands the attention function s_aux"),
        ("smollm3", {}, "leaves some layers without rotary position embedding"),
        ("gemma3", {}, "is a multimodal model"),
    ],
)
def test_a_model_the_harness_cannot_measure_is_refused_in_one_line(tmp_path, monkeypatch, model_type, kwargs, words):
    if kwargs.pop("attention", True) is False:  # as a model whose attention transformers does not route
        monkeypatch.setattr("transformers.LlamaForCausalLM._supports_attention_backend", False)
    folder = save_config(tmp_path / model_type, model_type, **kwargs)
    with pytest.raises(ReferenceError) as e:
        references.register(f"path:{folder}")
    assert words in str(e.value) and "\n" not in str(e.value) and str(e.value).endswith("refusing it")


@pytest.mark.parametrize(
    "make, words",
    [
        (lambda p: p, "no such folder"),
        (lambda p: (p.mkdir(), p)[1], "no config.json in the folder"),
        (lambda p: (p.mkdir(), (p / "config.json").write_text("{not json"), p)[2], "has no readable model config"),
    ],
)
def test_a_folder_that_is_not_a_model_is_refused_in_one_line(tmp_path, make, words):
    folder = make(tmp_path / "m")
    with pytest.raises(ReferenceError, match=r"^[^\n]*$") as e:
        references.register(f"path:{folder}")
    assert words in str(e.value)


def use_hub(monkeypatch, hub: Path) -> None:
    """Point huggingface_hub at ``hub`` (it reads HF_HUB_CACHE once, at import)."""
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_CACHE", str(hub))


def test_a_model_not_on_this_machine_is_refused_with_how_to_get_it(tmp_path, monkeypatch):
    use_hub(monkeypatch, tmp_path / "hub")
    monkeypatch.setenv("ABSPOS_MODELS_DIR", str(tmp_path / "models"))
    with pytest.raises(ReferenceError, match=r"^[^\n]*$") as e:
        references.register("hf:someone/absent-7b")
    assert "not on this machine" in str(e.value) and "hf download someone/absent-7b" in str(e.value)
    with pytest.raises(ReferenceError, match="--revision v2"):
        references.register("hf:someone/absent-7b@v2")


def test_a_garbage_gguf_is_refused_in_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv("ABSPOS_CACHE", str(tmp_path / "cache"))
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"not a gguf file at all")
    with pytest.raises(ReferenceError, match=r"^[^\n]*$") as e:
        references.register(f"gguf:{bad}", log=lambda *a: None)
    assert "is not a GGUF file transformers can read" in str(e.value)
    assert not (tmp_path / "cache" / "converted").exists()  # refused from its header: nothing converted


def gguf_spec_of(path: Path) -> ModelSpec:
    """The spec under which a GGUF file's conversion is found (weights.conversion_path): its name and file."""
    ref = Reference("gguf", str(Path(path).absolute()))
    return ModelSpec(
        ref.name,
        "",
        "local",
        "",
        str(ref),
        False,
        None,
        "",
        0.0,
        gguf={"kind": "path", "file": str(Path(path).resolve())},
    )


@pytest.mark.long
def test_a_gguf_given_by_reference_is_converted_only_when_loaded_and_keyed_by_its_file(tmp_path, monkeypatch):
    """The spec comes from the GGUF's own config and tokenizer (listing a model never dequantises it); two files of
    one name and size (checkpoints of one run) never share a conversion, nor does a file replaced in place."""
    monkeypatch.setenv("ABSPOS_CACHE", str(tmp_path / "cache"))
    source = weights.bundled_gguf(get_spec("smollm2-135m"))
    a, b = tmp_path / "a" / "model.gguf", tmp_path / "b" / "model.gguf"
    for f in (a, b):
        f.parent.mkdir()
        f.symlink_to(source)
    spec = REGISTRY[references.register(f"gguf:{a}")]
    assert spec.adds_bos is False and spec.family == "llama" and not (tmp_path / "cache").exists()
    copy = tmp_path / "c" / "model.gguf"
    copy.parent.mkdir()
    copy.write_bytes(b"x" * 64)
    other = tmp_path / "d" / "model.gguf"
    other.parent.mkdir()
    other.write_bytes(b"y" * 64)
    paths = {weights.conversion_path(gguf_spec_of(p)) for p in (copy, other)}
    assert len(paths) == 2
    before = weights.conversion_path(gguf_spec_of(copy))
    os.utime(copy, ns=(1, 1))
    assert weights.conversion_path(gguf_spec_of(copy)) != before
    assert weights.conversion_path(spec).name.startswith("smollm2-135m-")  # the bundled file shares its conversion


def test_bos_policy_is_what_the_tokenizer_prepends(tmp_path, smol_conversion):
    """A template prepending a token that is not ``bos_token`` is still a prepended BOS; two prepended tokens
    are refused (the claims' prompts carry one token or none before the text)."""
    from tokenizers import Tokenizer
    from tokenizers.processors import TemplateProcessing

    def with_template(name: str, single: str, special: list) -> Path:
        folder = link_model(smol_conversion, tmp_path / name)
        (folder / "tokenizer.json").unlink()
        tok = Tokenizer.from_file(str(smol_conversion / "tokenizer.json"))
        tok.post_processor = TemplateProcessing(single=single, special_tokens=special)
        tok.save(str(folder / "tokenizer.json"))
        return folder

    one = with_template("one", "<|im_start|> $A", [("<|im_start|>", 1)])
    spec = references.derive_spec(parse(f"path:{one}"), one)
    assert (spec.adds_bos, spec.bos_token_id) == (True, 1)
    two = with_template("two", "<|im_start|> <|endoftext|> $A", [("<|im_start|>", 1), ("<|endoftext|>", 0)])
    with pytest.raises(ReferenceError, match="support one prepended token"):
        references.derive_spec(parse(f"path:{two}"), two)


def test_a_scale_ladder_needs_distinct_sizes_of_one_group(tmp_path, smol_conversion):
    """T13: a base and its fine-tune (one size) are not a ladder, and a bundled model never joins your checkpoints."""
    from harness.spec.applies import family_sizes

    a = references.register(f"path:{link_model(smol_conversion, tmp_path / 'base')}")
    b = references.register(f"path:{link_model(smol_conversion, tmp_path / 'finetune')}")
    assert family_sizes("llama", ("smollm2-135m", a, b)) == ["smollm2-135m"]  # no group has two sizes
    big = dict(REGISTRY[b].config, hidden_size=1024)
    REGISTRY[b] = dataclasses.replace(REGISTRY[b], config=big)
    assert family_sizes("llama", ("smollm2-135m", a, b)) == [a, b]


def test_a_local_models_baseline_is_keyed_by_its_weights(tmp_path, smol_conversion):
    from harness.outcome.snapshots import Baselines

    folder = link_model(smol_conversion, tmp_path / "ckpt")
    name = references.register(f"path:{folder}")
    baselines = Baselines(tmp_path / "baselines", {"seq_len": 128}, "cpu", "float32")
    first = baselines.path(name)
    (folder / "config.json").unlink()
    (folder / "config.json").write_text((smol_conversion / "config.json").read_text() + "\n")  # re-trained, say
    assert baselines.path(name) != first and first.parent.name.startswith(name)


def test_the_nested_models_dir_layout_is_found(tmp_path, monkeypatch, smol_conversion):
    monkeypatch.setenv("ABSPOS_MODELS_DIR", str(tmp_path))
    use_hub(monkeypatch, tmp_path / "empty-hub")
    link_model(smol_conversion, tmp_path / "my-org" / "smol")
    name = references.register("hf:my-org/smol")
    assert name == "hf-my-org--smol" and REGISTRY[name].folder == str(tmp_path / "my-org" / "smol")


def test_a_paper_models_hub_id_is_that_paper_model_and_its_folder_must_hold_it(tmp_path, monkeypatch, smol_conversion):
    """hf:<a paper model's hub id> is the paper model (its paper values apply); a folder or cache entry holding
    another model under that id is refused before any work, not loaded."""
    monkeypatch.setenv("ABSPOS_MODELS_DIR", str(tmp_path / "models"))
    use_hub(monkeypatch, tmp_path / "hub")
    assert references.register("hf:meta-llama/Llama-3.2-1B") == "llama-3.2-1b"  # absent: its tests skip later
    link_model(smol_conversion, tmp_path / "models" / "meta-llama" / "Llama-3.2-1B")
    with pytest.raises(weights.WrongWeights, match="holds another model than meta-llama/Llama-3.2-1B"):
        references.register("hf:meta-llama/Llama-3.2-1B")
    hf_cache_layout(tmp_path / "hub", "meta-llama/Llama-3.2-1B", smol_conversion)
    with pytest.raises(weights.WrongWeights, match=r"architecture LlamaForCausalLM|hidden_size 576"):
        references.register(f"hf:meta-llama/Llama-3.2-1B@{REV}")


def run_claims(tmp_path, models: str, *extra: str) -> subprocess.CompletedProcess:
    return run_pytest(
        *("--models", models, "--no-report", "-q", "--baseline-dir", str(tmp_path / "baselines"), *extra),
        timeout=600,
        env={**os.environ, "HF_HUB_CACHE": str(tmp_path / "hub"), "HF_HUB_OFFLINE": "1"},
    )


@pytest.mark.long
def test_refusals_are_usage_errors_before_collection(tmp_path, smol_conversion):
    """Through pytest: a non-RoPE model and a paper id holding another model are exit 4 with one stderr line."""
    gpt2 = save_config(tmp_path / "gpt2", "gpt2")
    proc = run_claims(tmp_path, f"path:{gpt2}")
    assert proc.returncode == 4 and proc.stderr.strip().count("\n") == 0, proc.stderr
    assert "has no rotary position embedding" in proc.stderr and "collected" not in proc.stdout
    hf_cache_layout(tmp_path / "hub", "meta-llama/Llama-3.2-3B", smol_conversion)
    proc = run_claims(tmp_path, f"hf:meta-llama/Llama-3.2-3B@{REV}")
    assert proc.returncode == 4 and "holds another model than meta-llama/Llama-3.2-3B" in proc.stderr, proc.stderr


@pytest.mark.long
def test_a_folder_without_weights_skips_its_tests_with_one_line(tmp_path, smol_conversion):
    folder = link_model(smol_conversion, tmp_path / "no-weights", with_weights=False)
    proc = run_claims(tmp_path, f"path:{folder}", "-k", "T9a", "-rs")
    assert proc.returncode == 0, proc.stdout[-2000:]
    assert "1 skipped" in proc.stdout and "has a config.json but no weights" in proc.stdout
