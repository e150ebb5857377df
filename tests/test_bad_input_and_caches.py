"""Bad input and damaged caches: one line saying what is wrong, nothing lost, and a cache that repairs itself.

Where each case is tested (the case ids are the first reliability review's):
- U1-U13 (usage): tests/test_plugin.py ``test_bad_model_selection_is_a_usage_error`` and
  ``test_a_setting_out_of_range_is_a_one_line_usage_error_before_any_work``; U3 also in tests/test_devices.py;
  the reason kept in results.json whatever ``--tb`` (R8): tests/test_outcomes.py (a default-``--tb`` run); results
  kept when the report folder fails at the end anyway: here.
- W1-W7 (paper weights), C1-C5 (cache faults), K1 (concurrent conversion), a failed load not retried: here.
- D1-D2 (determinism): ``test_two_runs_give_identical_figures`` here; S1-S3 (snapshots, strict xfail):
  tests/test_plugin.py and tests/test_outcomes.py; R1-R8 (report tool): tests/test_report.py;
  I1-I5 (interventions undo themselves, alone, together, raising mid-forward or interrupted, and a failing hook
  install): tests/test_hooks_and_interventions.py (conditions are typed edits now: an unknown one cannot be named).
"""

import json
import multiprocessing
import os
import shutil
import time
from pathlib import Path

import numpy as np
import pytest

from harness.capture import corpus
from harness.capture.session import ModelLoadFailed, Session
from harness.model import cache, weights
from harness.spec.models import WeightsUnavailable, WrongWeights, get_spec, names
from harness.spec.settings import Settings

# ---- the conversion cache (C1-C5, K1) ------------------------------------------------------------------

FP = "source-v1"


def fake_convert(calls: list | None = None, seconds: float = 0.0):
    """A conversion writing what save_pretrained writes (a config, weights, a tokenizer), 0600 like safetensors."""

    def convert(into: Path):
        if calls is not None:
            calls.append(into)
        time.sleep(seconds)
        (into / "config.json").write_text(json.dumps({"model_type": "llama", "rope_theta": 100000.0}))
        (into / "tokenizer.json").write_text('{"model": {}}')
        weights_file = into / "model.safetensors"
        weights_file.write_bytes(np.arange(4096, dtype=np.float32).tobytes())
        weights_file.chmod(0o600)

    return convert


@pytest.fixture
def converted(tmp_path, monkeypatch):
    """A converted folder whose weights file is 'large' (checked by size and mtime, hashed when they change)."""
    monkeypatch.setattr(cache, "HASHED", 1024)
    folder = tmp_path / "converted" / "m"
    cache.ensure(folder, FP, fake_convert(), log=lambda *a: None)
    return folder


def _truncate(f: Path):
    f.write_bytes(f.read_bytes()[: f.stat().st_size // 2])


def _edit_in_place(f: Path):  # same size, new content
    data = bytearray(f.read_bytes())
    data[100] ^= 0xFF
    f.write_bytes(bytes(data))


def _edit_config(f: Path):  # valid JSON, another rope_theta (review C3d: silently other numbers)
    f.write_text(f.read_text().replace("100000.0", "10000.00"))


def _garbage(f: Path):
    f.write_text("this is {not json")


FAULTS = {  # review case: (file, damage, the phrase the one-line notice gives)
    "C1 truncated weights": ("model.safetensors", _truncate, "has model.safetensors at 8192 bytes instead of 16384"),
    "C1b weights edited in place": ("model.safetensors", _edit_in_place, "has model.safetensors modified"),
    "C2 config deleted": ("config.json", Path.unlink, "has lost config.json"),
    "C3 config garbage": ("config.json", _garbage, "has config.json at 17 bytes"),
    "C3b marker garbage": (cache.MARKER, _garbage, f"has an unreadable {cache.MARKER} (JSONDecodeError)"),
    "C3c weights deleted": ("model.safetensors", Path.unlink, "has lost model.safetensors"),
    "C3d config edited": ("config.json", _edit_config, "has config.json modified since conversion"),
    "C5 stray temporary file": (
        ".tmpX8y8py",
        lambda f: f.write_bytes(b"\0" * 64),
        "holds files the conversion did not write (.tmpX8y8py)",
    ),
    "marker deleted": (cache.MARKER, Path.unlink, f"has no {cache.MARKER}"),
}


@pytest.mark.parametrize("case", FAULTS)
def test_a_damaged_conversion_is_detected_and_converted_again_with_one_line(converted, case):
    name, damage, says = FAULTS[case]
    before = {p.name: p.read_bytes() for p in converted.iterdir() if p.name != cache.MARKER}
    damage(converted / name)
    assert says in cache.problem(converted, FP)
    calls, notes = [], []
    assert cache.ensure(converted, FP, fake_convert(calls), log=notes.append) == converted
    assert len(calls) == 1 and len(notes) == 1 and "\n" not in notes[0]
    assert notes[0].startswith(f"[abspos] m: the cached conversion {converted} ") and says in notes[0]
    assert notes[0].endswith("; converting again")
    assert cache.problem(converted, FP) is None
    assert {p.name: p.read_bytes() for p in converted.iterdir() if p.name != cache.MARKER} == before
    assert not list(converted.parent.glob(".m.partial-*")) and not list(converted.parent.glob(".m.old-*"))


def test_an_intact_conversion_is_used_without_converting(converted):
    calls = []
    assert cache.ensure(converted, FP, fake_convert(calls)) == converted and calls == []
    os.utime(converted / "model.safetensors")  # touched, same content: re-hashed, still intact
    assert cache.problem(converted, FP) is None


def test_another_source_or_transformers_version_converts_afresh(converted):
    assert (
        cache.problem(converted, "source-v2")
        == "was converted from another source file or by another transformers version"
    )


def test_files_are_readable_by_every_user_of_a_shared_cache(converted):
    """Review C4c: safetensors writes 0600; another user then got a misleading FileNotFoundError."""
    assert converted.stat().st_mode & 0o777 == 0o755
    assert {p.name: p.stat().st_mode & 0o777 for p in converted.iterdir()} == {
        p.name: 0o644 for p in converted.iterdir()
    }


def test_leftovers_of_a_killed_swap_are_removed(converted):
    """Review: a conversion killed between its two renames leaves .<name>.old-<pid> (a whole model) behind."""
    old = converted.parent / ".m.old-99999"
    old.mkdir()
    (old / "model.safetensors").write_bytes(b"\0" * 64)
    (converted / "config.json").unlink()
    cache.ensure(converted, FP, fake_convert(), log=lambda *a: None)
    assert not old.exists() and cache.problem(converted, FP) is None


@pytest.mark.parametrize("dangling", [False, True])
def test_a_symlink_in_place_of_the_folder_is_replaced(tmp_path, dangling):
    target = tmp_path / "elsewhere"
    target.mkdir()
    folder = tmp_path / "converted" / "m"
    folder.parent.mkdir()
    folder.symlink_to(tmp_path / "gone" if dangling else target)
    cache.ensure(folder, FP, fake_convert(), log=lambda *a: None)
    assert not folder.is_symlink() and cache.problem(folder, FP) is None
    assert sorted(p.name for p in folder.parent.iterdir()) == [".m.lock", "m"]


def test_a_folder_changing_while_it_is_checked_is_checked_again(converted, monkeypatch):
    def vanished(folder, fingerprint):
        raise FileNotFoundError(2, "No such file or directory")

    monkeypatch.setattr(cache, "_problem", vanished)
    assert cache.problem(converted, FP) == "could not be read (No such file or directory)"


def test_a_damaged_cache_in_a_folder_this_user_cannot_write_is_one_line(converted, monkeypatch):
    """Review: the lock file is shared (0666), so without a writable folder the conversion failed in mkdir."""
    (converted / "config.json").unlink()
    monkeypatch.setattr(os, "access", lambda path, mode: not mode & os.W_OK)
    calls = []
    with pytest.raises(cache.CacheError) as e:
        cache.ensure(converted, FP, fake_convert(calls), what="m")
    assert calls == [] and "\n" not in str(e.value) and "has lost config.json, and" in str(e.value)
    assert str(e.value).endswith("is not writable here (Permission denied): set ABSPOS_CACHE to a folder of your own")


def test_an_unreadable_file_is_named(converted, monkeypatch):
    monkeypatch.setattr(os, "access", lambda path, mode: Path(path).name != "model.safetensors")
    assert cache.problem(converted, FP) == "has model.safetensors unreadable by this user"


def test_a_damaged_cache_this_user_cannot_write_is_one_line_before_converting(monkeypatch):
    """Review C4b: a conversion that could not be written was done in memory, then failed, once per test."""
    calls = []
    folder = Path("/proc/abspos-nowhere/converted/m")
    with pytest.raises(cache.CacheError) as e:
        cache.ensure(folder, FP, fake_convert(calls), what="smollm2-135m")
    assert calls == [] and "\n" not in str(e.value)
    assert str(e.value).startswith(f"smollm2-135m: the cached conversion {folder} does not exist, and ")
    assert str(e.value).endswith("set ABSPOS_CACHE to a folder of your own")


def test_an_intact_read_only_cache_loads_without_its_lock(converted, monkeypatch):
    """Review C4a: a read-only cache holding a valid conversion is used as it is (no lock, nothing written)."""

    def no_lock(path):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(cache, "_locked", no_lock)
    assert cache.ensure(converted, FP, fake_convert([])) == converted


def test_an_interrupted_conversion_leaves_nothing_and_is_redone(tmp_path):
    """Review C5: a conversion that fails (or is killed) leaves no partial folder behind."""
    folder = tmp_path / "converted" / "m"

    def dies(into: Path):
        fake_convert()(into)
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        cache.ensure(folder, FP, dies)
    assert not folder.exists() and not list(folder.parent.glob(".m.partial-*"))
    killed = folder.parent / ".m.partial-99999"  # a conversion killed with -9 cannot clean up: the next one does
    killed.mkdir()
    (killed / "model.safetensors").write_bytes(b"\0" * 128)
    cache.ensure(folder, FP, fake_convert())
    assert cache.problem(folder, FP) is None and not killed.exists()


def _convert_in_process(folder: str, log: str):
    def convert(into: Path):
        with open(log, "a") as f:
            f.write(f"{os.getpid()}\n")
        fake_convert(seconds=1.0)(into)

    cache.ensure(Path(folder), FP, convert)


@pytest.mark.long
def test_concurrent_conversions_convert_once(tmp_path):
    """Review K1: two processes starting together; the second waits on the lock, then finds the conversion."""
    folder, log = tmp_path / "converted" / "m", tmp_path / "conversions.log"
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_convert_in_process, args=(str(folder), str(log))) for _ in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0, 0]
    assert len(log.read_text().split()) == 1 and cache.problem(folder, FP) is None


@pytest.fixture(scope="module")
def real_conversion():
    """The SmolLM2 conversion of the default cache (made there if missing, as any claims run does)."""
    try:
        return weights.converted_folder(get_spec("smollm2-135m"), log=lambda *a: None)
    except WeightsUnavailable as e:
        pytest.skip(str(e))


@pytest.mark.slow  # a real conversion twice, 2 minutes: weekly
@pytest.mark.long
def test_a_truncated_real_conversion_is_repaired_and_loads_the_same_model(real_conversion, tmp_path, monkeypatch):
    """Review C1 end to end: the bundled SmolLM2 conversion, truncated, is converted again with one line and gives
    the same weights (the intact file's hash, recorded at conversion)."""
    copy = tmp_path / "converted" / real_conversion.name
    shutil.copytree(real_conversion, copy)
    _truncate(copy / "model.safetensors")
    monkeypatch.setenv("ABSPOS_CACHE", str(tmp_path))
    notes = []
    assert weights.converted_folder(get_spec("smollm2-135m"), log=notes.append) == copy
    assert [n for n in notes if "converting again" in n] == [
        f"[abspos] smollm2-135m: the cached conversion {copy} has model.safetensors at 269045204 bytes instead of "
        f"538090408 (truncated or replaced); converting again"
    ]
    assert (
        cache.sha256(copy / "model.safetensors")
        == json.loads((real_conversion / cache.MARKER).read_text())["files"]["model.safetensors"]["sha256"]
    )


def test_the_layout_before_manifests_is_removed_not_used(real_conversion, tmp_path, monkeypatch):
    """A folder converted by the harness before manifests (converted/<name>, never verified) is deleted; the
    conversion lives in converted/<name>-<fingerprint of the GGUF and transformers version>."""
    legacy = tmp_path / "converted" / "smollm2-135m"
    legacy.mkdir(parents=True)
    (legacy / cache.MARKER).write_text('{"fingerprint": "x"}')
    shutil.copytree(real_conversion, tmp_path / "converted" / real_conversion.name)
    monkeypatch.setenv("ABSPOS_CACHE", str(tmp_path))
    assert weights.converted_folder(get_spec("smollm2-135m"), log=print).name == real_conversion.name
    assert not legacy.exists()


# ---- paper weights (W1-W7) ----------------------------------------------------------------------------

LLAMA_1B = {
    "architectures": ["LlamaForCausalLM"],
    "hidden_size": 2048,
    "num_hidden_layers": 16,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "vocab_size": 128256,
    "max_position_embeddings": 131072,
}


@pytest.fixture
def models_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("ABSPOS_MODELS_DIR", str(tmp_path))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return tmp_path


def _folder(root: Path, layout: str, config, weights_file: str | None = "model.safetensors") -> Path:
    folder = root / layout
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(config if isinstance(config, str) else json.dumps(config))
    if weights_file:
        (folder / weights_file).write_bytes(b"\0" * 8)
    return folder


@pytest.mark.parametrize(
    "layout", ["llama-3.2-1b", "meta-llama/Llama-3.2-1B", "meta-llama--Llama-3.2-1B", "Llama-3.2-1B"]
)
def test_paper_weights_are_found_in_every_documented_layout(models_dir, layout):
    """Review W3: README's $ABSPOS_MODELS_DIR/<hub name> (meta-llama/Llama-3.2-1B) was never searched."""
    folder = _folder(models_dir, layout, LLAMA_1B)
    assert weights.paper_folder(get_spec("llama-3.2-1b")) == folder


@pytest.mark.parametrize(
    "case, make, says",
    [
        (
            "W1 nothing there",
            lambda d: None,
            "llama-3.2-1b weights not found: put them in "
            "$ABSPOS_MODELS_DIR/meta-llama/Llama-3.2-1B or the Hugging Face cache",
        ),
        ("W2 empty folder", lambda d: (d / "meta-llama" / "Llama-3.2-1B").mkdir(parents=True), "weights not found"),
        (
            "W4 a config but no weights",
            lambda d: _folder(d, "Llama-3.2-1B", LLAMA_1B, None),
            "Llama-3.2-1B has a config.json but no weights",
        ),
    ],
)
def test_absent_paper_weights_skip_with_one_line(models_dir, case, make, says):
    make(models_dir)
    with pytest.raises(WeightsUnavailable) as e:
        weights.paper_folder(get_spec("llama-3.2-1b"))
    assert "\n" not in str(e.value) and says in str(e.value)


@pytest.mark.parametrize(
    "case, config, says",
    [
        ("W3b garbage config.json", "this is {not json", "config.json is unreadable (JSONDecodeError"),
        (
            "W5 a GPT-2 in the slot",
            {"architectures": ["GPT2LMHeadModel"], "n_layer": 2},
            "holds another model than meta-llama/Llama-3.2-1B (architecture GPT2LMHeadModel); refusing to load it",
        ),
        (
            "W7 SmolLM2 in the slot",
            {
                **LLAMA_1B,
                "hidden_size": 576,
                "num_hidden_layers": 30,
                "num_attention_heads": 9,
                "num_key_value_heads": 3,
                "vocab_size": 49152,
                "max_position_embeddings": 8192,
            },
            "(hidden_size 576 (not 2048), num_hidden_layers 30 (not 16), num_attention_heads 9 (not 32), "
            "num_key_value_heads 3 (not 8), vocab_size 49152 (not 128256), max_position_embeddings 8192 (not 131072))",
        ),
    ],
)
def test_a_folder_holding_another_model_is_refused_with_one_line(models_dir, case, config, says):
    _folder(models_dir, "Llama-3.2-1B", config)
    with pytest.raises(WrongWeights) as e:
        weights.paper_folder(get_spec("llama-3.2-1b"))
    assert "\n" not in str(e.value) and says in str(e.value) and str(e.value).startswith("llama-3.2-1b: ")


# ---- a failed load is not retried (review note on C4b, U4) ---------------------------------------------


def test_a_failed_model_load_fails_once_and_later_tests_get_the_first_error(monkeypatch):
    calls = []

    def broken(spec, *args, **kwargs):
        calls.append(spec.name)
        raise OSError("It looks like the config file at '/x' is not a valid JSON file.\n(and 200 more lines)")

    monkeypatch.setattr("harness.capture.session.load_pretrained", broken)
    s = Session(Settings(), log=lambda *a: None)
    with pytest.raises(OSError):
        s.model("smollm2-135m")
    for _ in range(3):
        with pytest.raises(ModelLoadFailed) as e:
            s.model("smollm2-135m")
        assert str(e.value) == (
            "smollm2-135m failed to load earlier in this run, not retried: OSError: It looks "
            "like the config file at '/x' is not a valid JSON file."
        )
    assert calls == ["smollm2-135m"]


def test_absent_weights_are_looked_up_once(monkeypatch):
    calls = []

    def absent(spec, *args, **kwargs):
        calls.append(spec.name)
        raise WeightsUnavailable(f"{spec.name} weights not found")

    monkeypatch.setattr("harness.capture.session.load_pretrained", absent)
    s = Session(Settings(), log=lambda *a: None)
    for _ in range(3):
        with pytest.raises(WeightsUnavailable, match="llama-3.2-1b weights not found"):
            s.model("llama-3.2-1b")
    assert calls == ["llama-3.2-1b"]


# ---- determinism (D1, D2) -----------------------------------------------------------------------------


def test_two_runs_give_identical_figures():
    """Review D1/D2: the same capture in two sessions is bit-identical (tiny model: the harness's determinism)."""
    from harness.capture.corpus import PromptSet
    from harness.capture.progress import Progress
    from harness.capture.reads import PatternAtPairs, Run

    ids = np.random.default_rng(0).integers(3, 256, size=(12, 32))
    prompts = PromptSet(ids, np.repeat(np.arange(4), 3), ("a", "b", "c", "d"), "t")
    captured = []
    for _ in range(2):
        s = Session(
            Settings(n_prompts=12, seq_len=32, n_pairs=1000), log=lambda *a: None, progress=Progress(enabled=False)
        )
        captured.append(s.capture(s.model("tiny-llama"), Run(prompts), PatternAtPairs()).values)
    assert np.array_equal(captured[0], captured[1])


# ---- results are never lost at the end of a run (U13) ---------------------------------------------------

RECORD = {
    "test": "claims/t.py::test_T1_x[m]",
    "claim": "T1",
    "model": "m",
    "outcome": "passed",
    "verdict": "held",
    "figures": [{"name": "ratio", "value": 2.0}],
    "seconds": 1.0,
}


def test_a_report_folder_that_became_unwritable_keeps_the_results_elsewhere(tmp_path, capsys):
    """The folder is checked at configure time (tests/test_plugin.py); should it fail by the end anyway, the
    results go to a temporary folder and one line says where."""
    from harness.report.write import write_run

    out = write_run(Path("/proc/abspos-forbidden"), "run-x", [RECORD], Settings(), ["m"])
    assert json.loads((out / "results.json").read_text())["records"] == [RECORD]
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        f"abspos: could not write to /proc/abspos-forbidden (No such file or directory); results are in {out}"
    ]
    shutil.rmtree(out)


def test_a_report_that_fails_to_build_keeps_the_results(tmp_path, capsys, monkeypatch):
    from harness.report import write as report

    monkeypatch.setattr(report, "build", lambda path: 1 / 0)
    out = report.write_run(tmp_path, "run-y", [RECORD], Settings(), ["m"])
    assert json.loads((out / "results.json").read_text())["records"] == [RECORD]
    assert "the report could not be built (ZeroDivisionError" in capsys.readouterr().err


# ---- prompt sets the corpus can fill (U9) --------------------------------------------------------------


@pytest.mark.parametrize(
    "n_prompts, seq_len, expected",
    [
        (16, 200, True),  # 4 per topic x (200 + longest 50) = 1000 <= 1000: whatever documents are drawn
        (16, 201, None),  # 4 x 251 > 1000 >= 4 x 201: depends on the documents drawn
        (16, 250, None),  # exactly full if no document is cut
        (16, 251, False),  # 4 x 251 = 1004 > 1000 tokens: never
        (20, 200, None),
    ],
)
def test_a_corpus_fills_a_prompt_set_by_its_token_budget(n_prompts, seq_len, expected):
    assert corpus.fits((1000, 50), n_prompts, seq_len) is expected


@pytest.mark.long
@pytest.mark.parametrize("name", names("bundled") + names("extra"))
@pytest.mark.parametrize("source", ["wiki", "bbc"])
def test_the_registry_token_budgets_are_the_tokenizers_own(name, source):
    """ModelSpec.corpus_tokens (what configure-time checks use) recounted with the model's tokenizer, where its
    conversion is cached."""
    from transformers import AutoTokenizer

    root = weights.cache_root() / "converted"
    folders = (
        [f for f in root.glob(f"{name}-*") if cache.problem(f, f.name.rsplit("-", 1)[1]) is None]
        if root.is_dir()
        else []
    )
    if not folders:
        pytest.skip(f"{name} is not converted in {root} yet")
    tok = AutoTokenizer.from_pretrained(folders[0])
    assert tuple(get_spec(name).corpus_tokens[source]) == corpus.token_budget(tok, source)


def test_a_prompt_set_the_corpus_cannot_fill_fails_once_with_one_line(monkeypatch):
    calls = []

    def too_small(*args, **kwargs):
        calls.append(args)
        raise corpus.CorpusTooSmall("topic 'People' of the 'wiki' corpus ran out of text for 64 prompts of 8192 tokens")

    monkeypatch.setattr(corpus, "topic_prompts", too_small)
    s = Session(Settings(), log=lambda *a: None)
    m = s.model("tiny-llama")
    for _ in range(3):
        with pytest.raises(corpus.CorpusTooSmall, match="ran out of text for 64 prompts of 8192 tokens"):
            s.prompts(m, n_prompts=64, seq_len=8192)
    assert len(calls) == 1


def test_the_corpus_message_names_the_options():
    spec = get_spec("smollm2-135m")

    class Tok:
        def __call__(self, text, add_special_tokens=False):
            return {"input_ids": list(range(len(text.split())))}

    with pytest.raises(corpus.CorpusTooSmall) as e:
        corpus.topic_prompts(Tok(), spec, 16, 1 << 20)
    assert "\n" not in str(e.value) and str(e.value).endswith(
        "use fewer or shorter prompts (--n-prompts, --n-probe-prompts, --seq-len) or --corpus bbc"
    )
