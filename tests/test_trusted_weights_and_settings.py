"""Trusted weights and settings: a weight check's record holds only for the same bytes, only trained weights are
measured however they were initialised, and the two environment variables are one line before any work.

Each probe of the fourth reliability review (`../shared/reviews/reliability-4.md`, probed on f45f170) in this file's
scope, and the test that holds it now (the FAILs there each fail on f45f170):

P2, only the model named is measured
- B20 untrained weights swapped in behind a cached "ok" (same size, mtime restored): measured, EQ7 and T9a held
      test_a_weight_check_record_holds_only_for_the_same_bytes[swapped, touch -r]; ours: [edited in place, mtime
      restored] (the change time alone tells), [another file cp -p'd over it]
      test_untrained_weights_at_a_paper_models_place_are_refused_whatever_their_initialisation[*] (issue 60: no
      initialisation passes; three that the weights' statistics let through, the real tokenizer)
      test_an_untrained_user_model_is_refused_before_any_work (path:, at selection, through pytest and `models`)
      test_trained_weights_pass_and_their_figure_is_kept (SmolLM2: the check refuses only what it should)
      test_the_bound_and_a_loss_that_is_not_finite (the declared margin; an overflowing dtype never reads as trained)
      test_a_rehearsal_build_is_never_judged (its mark, not its loss, says what it is)
- B21 (held) an inf behind the cached "ok" ........ test_a_weight_check_record_holds_only_for_the_same_bytes[edited …]
P3, a bad input is one line before any work
- B22 (held) a truncated record: scanned again ... test_a_damaged_record_is_scanned_again[truncated]
- B23 a record with its key and `"tensors": {name: 1}`: a traceback
                                                   test_a_damaged_record_is_scanned_again[tensors of ints]; ours: [a
                                                   std of text], [marks a list], [nested 100,000 deep], [a kept loss
                                                   of text]
- B25 (held) weight-checks a file: still checked . test_an_unwritable_record_folder_still_checks
- B26 (held) a pickle as pytorch_model.bin: nothing runs   test_a_pickled_weights_file_never_runs
- B60 ABSPOS_GPU_MEMORY_GIB=inf / 1e400: INTERNALERROR     test_a_bad_gpu_memory_cap_is_one_line[*],
                                                           test_a_bad_gpu_memory_cap_stops_pytest_and_the_cli
- B61 ABSPOS_GPU_MEMORY_GIB=1e-10: a 0-byte cap, and the load's log omits it
                                                           (the same two), test_the_loads_log_always_states_the_cap
- B62 (held) nan, -1, "2 GiB" ....................... test_a_bad_gpu_memory_cap_is_one_line[*]
- B63 ABSPOS_CLAIMS_DIR missing, a file, `tests`: tracebacks and an INTERNALERROR
                                                   test_an_unusable_claims_folder_is_one_line_before_any_work[*]
- B64 ABSPOS_CLAIMS_DIR an empty folder: an empty list, then an INTERNALERROR   (the same: [empty]); ours: [other
                                                   Python], a folder of modules without CLAIMS, none of them run
- A9's note: `models` under an unusable ABSPOS_CACHE lists models as present   test_models_says_an_unusable_cache
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from pytest_runs import run_pytest
from safetensors.torch import save_file

from harness import cli
from harness.files.paths import ROOT
from harness.model import availability, checkpoint_checks, devices, references, rehearsal, weights
from harness.model.tokenizers import save_paper_tokenizer
from harness.spec.models import LLAMA_1B, REGISTRY, WrongWeights, get_spec

SMOL = "smollm2-135m"
TOKENIZER = ("tokenizer.json", "tokenizer_config.json")
pytestmark = pytest.mark.usefixtures("restore_registry")  # tests/conftest.py


def one_line(text) -> str:
    text = str(text).strip()
    assert text and "\n" not in text, text[-3000:]
    return text


def usage_line(proc: subprocess.CompletedProcess) -> str:
    """The one line of a usage error (exit 4) that ended a command before any work."""
    out = proc.stdout + proc.stderr
    assert proc.returncode == 4 and "Traceback" not in out and "INTERNALERROR" not in out, out[-3000:]
    lines = [ln for ln in out.splitlines() if ln.startswith(("ERROR: ", "abspos-claims: "))]
    assert len(lines) == 1, out[-3000:]
    return lines[0]


def cli_run(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """``abspos-claims ARGS`` in a process of its own (the claims registry is read once per process)."""
    return subprocess.run(
        [sys.executable, "-m", "harness.cli", *args],
        cwd=ROOT,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    """A private $ABSPOS_CACHE: the records a test writes and damages are its own."""
    monkeypatch.setenv("ABSPOS_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.fixture(scope="module")
def smol() -> Path:
    """The bundled SmolLM2's converted folder (config, tokenizer, safetensors)."""
    return weights.converted_folder(get_spec(SMOL), log=lambda *a: None)


def linked_copy(src: Path, dest: Path, skip=()) -> Path:
    dest.mkdir(parents=True)
    for f in src.iterdir():
        if f.name not in (*skip, "abspos-converted.json"):
            (dest / f.name).symlink_to(f)
    return dest


# ---- the record of a weight check: valid only for the same bytes ----------------------------------------------------

#: a weights file of 4.1 MB: its matrices past the first and before the last MiB, where the record's key reads no bytes
SHAPES = {"model.norm.weight": (512,), "model.layers.0.input_layernorm.weight": (512,)}
SHAPES |= {f"model.layers.0.self_attn.{p}_proj.weight": (512, 512) for p in "qkvo"}
FLOAT = 4  # bytes of a float32


def trained_looking(seed: int = 0) -> dict[str, torch.Tensor]:
    """What the weights' statistics read as trained: norm scales that vary, matrices of differing spread."""
    g = torch.Generator().manual_seed(seed)
    return {
        k: 1 + 0.3 * torch.randn(s, generator=g) if len(s) == 1 else (0.01 + 0.02 * i) * torch.randn(s, generator=g)
        for i, (k, s) in enumerate(SHAPES.items())
    }


def initialised(seed: int = 1) -> dict[str, torch.Tensor]:
    """transformers' initialisation: norm scales 1, every matrix N(0, 0.02)."""
    g = torch.Generator().manual_seed(seed)
    return {k: torch.ones(s) if len(s) == 1 else 0.02 * torch.randn(s, generator=g) for k, s in SHAPES.items()}


def weights_folder(folder: Path, tensors: dict[str, torch.Tensor]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps({"initializer_range": 0.02}))
    save_file(tensors, str(folder / "model.safetensors"), metadata={"format": "pt"})
    return folder


def swap_touch_r(folder: Path, other: Path) -> None:
    """The review's B20: untrained weights of the same names, shapes and dtype put in its place, the mtime set back."""
    target = folder / "model.safetensors"
    st = target.stat()
    weights_folder(other, initialised())
    os.replace(other / "model.safetensors", target)
    os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))


def edit_in_place(folder: Path, other: Path) -> None:
    """An inf written into the middle of the file (its inode, size and both ends unchanged), the mtime set back."""
    target = folder / "model.safetensors"
    st = target.stat()
    with open(target, "r+b") as f:
        f.seek(st.st_size // 2)
        f.write(torch.tensor([math.inf]).numpy().tobytes())
    os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert st.st_size // 2 > 1 << 20 and st.st_size - st.st_size // 2 > 1 << 20


def copy_over(folder: Path, other: Path) -> None:
    """Another folder's untrained file with the same mtime, copied over it with ``cp -p``."""
    target = folder / "model.safetensors"
    st = target.stat()
    weights_folder(other, initialised())
    os.utime(other / "model.safetensors", ns=(st.st_atime_ns, st.st_mtime_ns))
    subprocess.run(["cp", "-p", str(other / "model.safetensors"), str(target)], check=True)


@pytest.mark.parametrize(
    "change, refusal",
    [
        (swap_touch_r, "untrained weights: every norm weight is constant"),
        (edit_in_place, "weights that are not finite (1 NaN or inf values in 1 tensor(s)"),
        (copy_over, "untrained weights: every norm weight is constant"),
    ],
    ids=["swapped, touch -r", "edited in place, mtime restored", "cp -p over it"],
)
def test_a_weight_check_record_holds_only_for_the_same_bytes(tmp_path, cache, change, refusal):
    """B20. A folder that passed, then its weights changed with the name, size and mtime kept: the record is not the
    new bytes', so they are read again and refused (with the old key, the cached "ok" was measured)."""
    folder = weights_folder(tmp_path / "m", trained_looking())
    spec = get_spec(SMOL)  # any model held to trained weights (no published hashes)
    checkpoint_checks.check_weights(spec, folder, log=lambda *a: None)  # passes, and is recorded
    assert list((cache / "weight-checks").glob("*.json"))
    before = (folder / "model.safetensors").stat()
    change(folder, tmp_path / "other")
    after = (folder / "model.safetensors").stat()
    assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    with pytest.raises(WrongWeights) as e:
        checkpoint_checks.check_weights(spec, folder, log=lambda *a: None)
    assert refusal in one_line(e.value) and str(folder) in str(e.value)


def record_of(cache: Path) -> Path:
    (record,) = (cache / "weight-checks").glob("*.json")
    return record


def nested(record: dict) -> str:
    return json.dumps({"key": record["key"]})[:-1] + ', "tensors": ' + "[" * 100_000 + "]" * 100_000 + "}"


DAMAGE = {  # a record with its key intact and another layout
    "truncated": lambda r, text: text[: len(text) // 3],
    "tensors of ints": lambda r, text: json.dumps({**r, "tensors": {k: 1 for k in r["tensors"]}}),
    "a std of text": lambda r, text: json.dumps(
        {**r, "tensors": {k: {**v, "std": "x"} for k, v in r["tensors"].items()}}
    ),
    "marks a list": lambda r, text: json.dumps({**r, "marks": [["model.safetensors", {}]]}),
    "nested 100,000 deep": lambda r, text: nested(r),
    "a kept loss of text": lambda r, text: json.dumps({**r, "next_token_loss": {"x": {"loss": "low", "vocab": 9}}}),
}


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_a_damaged_record_is_scanned_again(tmp_path, cache, damage):
    """B22, B23. A record of another layout is never indexed into a traceback: the folder is read again, judged as
    fresh, and the record written anew."""
    folder = weights_folder(tmp_path / "m", trained_looking())
    spec = get_spec(SMOL)
    checkpoint_checks.check_weights(spec, folder, log=lambda *a: None)
    record = record_of(cache)
    text = record.read_text()
    record.write_text(DAMAGE[damage](json.loads(text), text))
    checkpoint_checks.check_weights(spec, folder, log=lambda *a: None)  # trained-looking: passes again
    fresh = json.loads(record_of(cache).read_text())
    assert all(isinstance(v, dict) and isinstance(v["std"], float) for v in fresh["tensors"].values())
    assert isinstance(fresh["marks"], dict) and "next_token_loss" not in fresh
    save_file(initialised(), str(folder / "model.safetensors"), metadata={"format": "pt"})
    with pytest.raises(WrongWeights, match="every norm weight is constant"):  # and judged from what it holds
        checkpoint_checks.check_weights(spec, folder, log=lambda *a: None)


def test_an_unwritable_record_folder_still_checks(tmp_path, cache):
    """B25 (held). $ABSPOS_CACHE/weight-checks a file: nothing is recorded, and the check is still made."""
    cache.mkdir()
    (cache / "weight-checks").write_text("not a folder")
    folder = weights_folder(tmp_path / "m", initialised())
    with pytest.raises(WrongWeights, match="every norm weight is constant"):
        checkpoint_checks.check_weights(get_spec(SMOL), folder, log=lambda *a: None)


class Planted:
    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (Path.touch, (self.marker,))


def test_a_pickled_weights_file_never_runs(tmp_path, cache):
    """B26 (held). A pytorch_model.bin that runs code when unpickled: refused as unreadable, and nothing ran."""
    folder, marker = tmp_path / "m", tmp_path / "PWNED"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    torch.save({"w": Planted(marker)}, folder / "pytorch_model.bin")  # torch's own format, a pickle inside
    with pytest.raises(WrongWeights) as e:
        checkpoint_checks.check_weights(get_spec(SMOL), folder, log=lambda *a: None)
    assert "cannot be read (UnpicklingError" in one_line(e.value) and not marker.exists()


# ---- what only trained weights do -----------------------------------------------------------------------------------

#: a narrow Llama-3.2-1B: the paper model's own config, tokenizer and vocabulary, two layers of one 64-wide head, so
#: that the next-token loss of a random network takes a second (the shape is its spec's, as a rehearsal's is)
NARROW = {"num_hidden_layers": 2, "num_attention_heads": 1, "num_key_value_heads": 1, "head_dim": 64,
          "hidden_size": 64, "intermediate_size": 128}  # fmt: skip


def matrices_and_norms(model, matrix, norm, seed: int) -> None:
    """Every matrix (the embedding too) and every norm scale of ``model`` drawn again, seeded."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() >= 2:
                matrix(p, g)
            else:
                p.copy_(norm(p.shape, g))


INITIALISATIONS = {  # name: (each matrix, each norm scale); none of them transformers' own (norms 1)
    "N(0, 0.02), norms perturbed": (
        lambda p, g: p.normal_(0, 0.02, generator=g),
        lambda s, g: 1 + 0.1 * torch.randn(s, generator=g),
    ),
    "Xavier uniform, norms N(1, 0.1)": (
        lambda p, g: torch.nn.init.xavier_uniform_(p, generator=g),
        lambda s, g: 1 + 0.1 * torch.randn(s, generator=g),
    ),
    "Kaiming uniform (nn.Linear's), norms U(0.5, 1.5)": (
        lambda p, g: torch.nn.init.kaiming_uniform_(p, a=math.sqrt(5), generator=g),
        lambda s, g: 0.5 + torch.rand(s, generator=g),
    ),
    "scaled copies of N(0, 0.02), x2^U(-2, 2) each": (
        lambda p, g: p.normal_(0, 0.02 * 2 ** (4 * float(torch.rand((), generator=g)) - 2), generator=g),
        lambda s, g: 1 + 0.05 * torch.randn(s, generator=g),
    ),
}


@pytest.fixture(scope="module")
def llama_tokenizer(tmp_path_factory) -> Path:
    """Llama 3's published tokenizer files (the project's build of them, cached)."""
    folder = tmp_path_factory.mktemp("llama-tokenizer")
    save_paper_tokenizer(LLAMA_1B, folder, log=lambda *a: None)
    return folder


def narrow_paper_spec(monkeypatch):
    spec = get_spec(LLAMA_1B)
    narrow = dataclasses.replace(spec, config={**spec.config, **{k: v for k, v in NARROW.items() if k in spec.config}})
    monkeypatch.setitem(REGISTRY, LLAMA_1B, narrow)
    return narrow


def write_narrow_llama(folder: Path, tokenizer: Path, init: str | None, seed: int = 0) -> Path:
    """A folder at Llama-3.2-1B's place: its config at ``NARROW``'s shape, weights drawn by ``init`` (None: as
    transformers initialises), its real tokenizer, no rehearsal mark."""
    from transformers import AutoModelForCausalLM

    config = {**rehearsal.rehearsal_config(LLAMA_1B), **NARROW, "torch_dtype": "float32"}
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(rehearsal._hf_config(config), dtype=torch.float32)
    if init is not None:
        matrices_and_norms(model, *INITIALISATIONS[init], seed=seed)
    model.save_pretrained(folder)
    (folder / "config.json").write_text(json.dumps(config))
    for f in tokenizer.iterdir():
        shutil.copy(f, folder / f.name)
    return folder


@pytest.mark.parametrize("init", list(INITIALISATIONS))
def test_untrained_weights_at_a_paper_models_place_are_refused_whatever_their_initialisation(
    tmp_path, cache, monkeypatch, llama_tokenizer, init
):
    """Issue 60. Untrained weights at Llama-3.2-1B's place, with its real tokenizer and its config (narrowed, as its
    spec): refused where the model is found (selection, `models`), before anything is measured, in one line naming
    the next-token loss; three of the four initialisations pass every statistic of the weights."""
    spec = narrow_paper_spec(monkeypatch)
    monkeypatch.setenv("ABSPOS_MODELS_DIR", str(tmp_path / "models"))
    folder = write_narrow_llama(rehearsal.paper_layout(LLAMA_1B, tmp_path / "models"), llama_tokenizer, init)
    config = json.loads((folder / "config.json").read_text())
    statistics = checkpoint_checks.weights_problem(checkpoint_checks.scan(folder, lambda *a: None), config, True)
    assert (statistics is None) == (init != "N(0, 0.02), norms perturbed"), statistics
    with pytest.raises(WrongWeights) as e:
        availability.ensure_available(spec)
    text = one_line(e.value)
    if statistics is None:  # what only the loss tells: within a nat of chance, and kept
        loss = json.loads(record_of(cache).read_text())["next_token_loss"]
        (figure,) = loss.values()
        assert abs(figure["loss"] - math.log(128256)) < 1.5 and figure["vocab"] == 128256, figure
        assert f"untrained weights: next-token loss {figure['loss']:.2f} nats on BBC News" in text, text
        assert "above the bound 8.76 (chance ln V = 11.76" in text and str(folder) in text, text
        with pytest.raises(WrongWeights, match="next-token loss"):  # from the record: nothing loaded again
            checkpoint_checks.check_weights(spec, folder, log=lambda *a: pytest.fail(f"scanned again: {a}"))
    else:
        assert "untrained weights: every one of its" in text, text
    assert cli.weights_status(spec).startswith("absent: ") and "untrained weights" in cli.weights_status(spec)


def test_trained_weights_pass_and_their_figure_is_kept(tmp_path, smol):
    """The other side: SmolLM2's weights as a path: model pass, far below the bound, and their figure is kept with
    the scan (a folder of links to the same files shares it: measured once per weights)."""
    from harness.model import next_token_loss

    said: list[str] = []
    name = references.register(f"path:{linked_copy(smol, tmp_path / 'smol')}", log=said.append)
    assert REGISTRY[name].group == "local"
    found = checkpoint_checks.scan(tmp_path / "smol", lambda *a: None)
    figure = checkpoint_checks.kept_loss(tmp_path / "smol", found)
    assert figure is not None and figure["vocab"] == 49152 and figure["predictions"] == 4 * 127
    assert figure["loss"] < next_token_loss.bound(49152) - 2, figure  # SmolLM2: 3.39 nats, bound 7.80
    said.clear()
    references.register(f"path:{linked_copy(smol, tmp_path / 'smol-again')}", log=said.append)
    assert not any("next-token loss" in s for s in said), said


def test_the_bound_and_a_loss_that_is_not_finite():
    """The bound is ln V less the declared margin (METHODS.md's threshold log), inclusive; a loss that is not finite
    (a dtype that overflows) is refused as such, never read as trained, and never kept."""
    from harness.model import next_token_loss

    figure = {"loss": math.log(49152) - 3, "vocab": 49152, "predictions": 508, "dtype": "float32", "device": "cpu",
              "inputs": "0" * 64, "format": next_token_loss.FORMAT}  # fmt: skip
    assert next_token_loss.MARGIN == 3.0 and next_token_loss.valid(figure) and next_token_loss.problem(figure) is None
    above = next_token_loss.problem({**figure, "loss": math.log(49152) - 2.99})
    assert above is not None and "above the bound 7.80 (chance ln V = 10.80, V = 49,152" in above
    for loss in (math.nan, math.inf):
        text = next_token_loss.problem({**figure, "loss": loss, "dtype": "float16"})
        assert text is not None and "is not finite" in one_line(text) and "float16" in text
        assert not next_token_loss.valid({**figure, "loss": loss})


def tiny_untrained(folder: Path, smol: Path) -> Path:
    """tiny-llama's shape with SmolLM2's tokenizer and vocabulary, Xavier-uniform matrices and norms that vary."""
    spec = get_spec("tiny-llama")
    spec = dataclasses.replace(spec, config={**spec.config, "vocab_size": 49152})
    model = weights.random_init_model(spec)
    matrices_and_norms(model, *INITIALISATIONS["Xavier uniform, norms N(1, 0.1)"], seed=3)
    model.save_pretrained(folder)
    for f in TOKENIZER:
        (folder / f).symlink_to(smol / f)
    return folder


@pytest.mark.long
def test_an_untrained_user_model_is_refused_before_any_work(tmp_path, cache, smol):
    """B20's surface, a path: model: untrained weights the statistics pass are refused at selection in one line
    naming the loss, by `models` and by a claims run (exit 4, nothing collected, no baseline written)."""
    folder = tiny_untrained(tmp_path / "mine", smol)
    env = {"ABSPOS_CACHE": str(cache)}  # the figure measured here is read there
    with pytest.raises(WrongWeights) as e:
        references.register(f"path:{folder}", log=lambda *a: None)
    assert "untrained weights: next-token loss" in one_line(e.value) and "chance ln V = 10.80" in str(e.value)
    assert "next-token loss" in usage_line(cli_run("models", f"path:{folder}", env=env))
    proc = run_pytest(
        *("--models", f"path:{folder}", "-k", "EQ7 or T9a", "--baseline-dir", str(tmp_path / "baselines")),
        *("--report-dir", str(tmp_path / "reports")),
        env={**os.environ, **env},
        timeout=600,
    )
    line = usage_line(proc)
    assert f"--models: path:{folder}" in line or "next-token loss" in line, line
    assert "collected" not in proc.stdout and not (tmp_path / "baselines").exists()


def test_a_rehearsal_build_is_never_judged(tmp_path, cache, monkeypatch, llama_tokenizer):
    """A rehearsal's random weights keep their mark and load as a rehearsal, where the paper model's would be: no
    loss is measured or judged (what they are is said by their mark: tests/test_guards.py)."""
    monkeypatch.setenv("ABSPOS_MODELS_DIR", str(tmp_path / "models"))
    folder = rehearsal.paper_layout(LLAMA_1B, tmp_path / "models")
    rehearsal.build_rehearsal(
        LLAMA_1B,
        "rehearsal",
        folder,
        save_tokenizer=lambda name, into: shutil.copytree(llama_tokenizer, into, dirs_exist_ok=True),
    )
    said: list[str] = []
    model, _ = weights.load_pretrained(rehearsal.rehearsal_spec(LLAMA_1B), "float32", "cpu", log=said.append)
    assert model.config.num_hidden_layers == rehearsal.REHEARSAL_LAYERS
    assert not any("next-token loss" in s for s in said), said
    availability.check_trained(rehearsal.rehearsal_spec(LLAMA_1B), log=said.append)
    assert not any("next-token loss" in s for s in said), said


# ---- ABSPOS_GPU_MEMORY_GIB --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value", ["inf", "1e400", "-inf", "1e-10", "0.05", "0", "nan", "-1", "2 GiB", "lots"]
)  # B60: inf, 1e400; B61: 1e-10; B62 (held): nan, -1, 2 GiB
def test_a_bad_gpu_memory_cap_is_one_line(monkeypatch, value):
    monkeypatch.setenv(devices.MEMORY_CAP_ENV, value)
    with pytest.raises(devices.DeviceError) as e:
        devices.memory_cap()
    assert f"ABSPOS_GPU_MEMORY_GIB={value!r}: GiB of each GPU a model may use, a finite number of at least 0.1" in (
        one_line(e.value)
    )
    for good, gib in (("0.1", 0.1), ("0.2", 0.2), (" 80 ", 80.0)):
        monkeypatch.setenv(devices.MEMORY_CAP_ENV, good)
        assert devices.memory_cap() == int(gib * 2**30)


@pytest.mark.long
@pytest.mark.parametrize("value", ["inf", "1e-10"])
def test_a_bad_gpu_memory_cap_stops_pytest_and_the_cli(tmp_path, value):
    """B60, B61. Before any work, one line, exit 4: a claims run (INTERNALERROR for inf; a 0-byte cap taken for
    1e-10), and the same through `abspos-claims run`."""
    env = {devices.MEMORY_CAP_ENV: value}
    proc = run_pytest(
        "--models", SMOL, "-k", "EQ7", "--co", "--no-report", env={**os.environ, **env}, timeout=300
    )  # fmt: skip
    assert f"ABSPOS_GPU_MEMORY_GIB={value!r}" in usage_line(proc)
    proc = cli_run("run", "--models", SMOL, "-k", "EQ7", "--co", "--no-report", env=env)
    assert proc.returncode == 4 and "Traceback" not in proc.stdout + proc.stderr, proc.stderr[-3000:]
    assert f"ABSPOS_GPU_MEMORY_GIB={value!r}" in proc.stdout + proc.stderr


def test_the_loads_log_always_states_the_cap():
    """B61's second half: a load on a GPU under a cap says the cap, whether it splits the model or not."""
    gib = 2**30
    split = devices.placement(2 * gib, 40 * gib, 1, gib // 5)
    whole = devices.placement(2 * gib, 40 * gib, 1, 8 * gib)
    assert split and not whole
    for placed, how in ((split, "with device_map='auto' over 1 GPU(s) and the CPU"), (whole, "whole (it fits)")):
        cap = gib // 5 if placed else 8 * gib
        note = devices.placement_note(2 * gib, 40 * gib, cap, placed, 1, "cuda:0")
        assert f"{cap / gib:.2f} GiB allowed ($ABSPOS_GPU_MEMORY_GIB)" in note and note.endswith(how), note


# ---- ABSPOS_CLAIMS_DIR and ABSPOS_CACHE ------------------------------------------------------------------------------


def other_python(tmp_path: Path) -> tuple[Path, Path]:
    """A folder of Python modules that declare no claims; importing any of them writes ``marker``."""
    folder, marker = tmp_path / "helpers", tmp_path / "IMPORTED"
    folder.mkdir()
    (folder / "helpers.py").write_text(f"from pathlib import Path\nPath({str(marker)!r}).touch()\n")
    (folder / "test_helpers.py").write_text("def test_x():\n    pass\n")
    return folder, marker


CLAIMS_DIRS = {  # kind: (the folder, made under tmp_path, and what the one line says)
    "missing": (lambda t: t / "absent", "no such folder"),
    "a file": (lambda t: (t / "claims.txt", (t / "claims.txt").write_text("x"))[0], "a file, not a folder"),
    "tests": (lambda t: ROOT / "tests", "no claims in it"),
    "empty": (lambda t: (t / "empty", (t / "empty").mkdir())[0], "no claims in it"),
    "other Python": (lambda t: other_python(t)[0], "no claims in it"),
}


@pytest.mark.long
@pytest.mark.parametrize("kind", list(CLAIMS_DIRS))
def test_an_unusable_claims_folder_is_one_line_before_any_work(tmp_path, kind):
    """B63, B64. `claims list`, `models` and a claims run's collection each stop with one line and exit 4 naming the
    variable: no traceback, no INTERNALERROR, no silent empty list, and no module of the folder imported."""
    make, words = CLAIMS_DIRS[kind]
    folder = make(tmp_path)
    env = {"ABSPOS_CLAIMS_DIR": str(folder)}
    for args in (("claims", "list"), ("models", SMOL)):
        line = usage_line(cli_run(*args, env=env))
        assert f"ABSPOS_CLAIMS_DIR={folder}: {words}" in line, line
    proc = run_pytest("--models", SMOL, "-k", "EQ7", "--co", "--no-report", env={**os.environ, **env}, timeout=300)
    assert f"ABSPOS_CLAIMS_DIR={folder}: {words}" in usage_line(proc)
    assert not (tmp_path / "IMPORTED").exists()


def test_models_says_an_unusable_cache(tmp_path, monkeypatch, capsys):
    """A9's note. `models` under an ABSPOS_CACHE no run can use says so in one line (exit 4), as every run would."""
    (tmp_path / "file").write_text("x")
    monkeypatch.setenv("ABSPOS_CACHE", str(tmp_path / "file" / "sub"))
    assert cli.main(["models", SMOL]) == 4
    out = capsys.readouterr()
    assert "is a file, not a folder; point ABSPOS_CACHE at a folder" in one_line(out.err) and "present" not in out.out
