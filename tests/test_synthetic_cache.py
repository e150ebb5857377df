"""The synthetic training cache runs nothing it reads and resumes only its own model's checkpoint.

The fourth reliability review (`../shared/reviews/reliability-4.md`, probed on f45f170) found the synthetic cache's
files unpickled and trusted; each failing probe and the test that holds it now (each fails on f45f170):

P4, nothing from a folder runs
- B30 a planted final.pt whose pickle runs code: run during a normal DS1 run, rc 0
                                              test_a_final_model_that_would_run_code_is_never_unpickled_and_is_retrained
                                              test_no_code_under_harness_benchmarks_or_scripts_unpickles
P3, a bad input is one line
- B31 a checkpoint cut short: a torch error on every attempt, never retrained, the file not named
                                              test_a_damaged_checkpoint_is_retrained_with_one_line_naming_it
- B32 a final.pt cut short: a 35-line traceback on every run ......... test_a_damaged_final_model_is_retrained_with_one_line_naming_it
P2, only the model named is measured
- B33 RoPE's checkpoint copied into NoPE's folder: resumed as NoPE ... test_another_models_checkpoint_is_never_resumed
                                                                      test_another_models_final_model_is_never_loaded

Held there and kept: B34 (a killed training resumed bit-identical: test_a_resumed_training_is_bit_identical_to_an_
uninterrupted_one, and tests/test_synthetic.py's resume test), B35 (SIGTERM keeps the checkpoint: the checkpoint is
written atomically after each epoch, as before), B36 (concurrent runs: every file is written to a temporary name and
replaced, as before).
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
import torch

from harness.synthetic.train import SyntheticSpec, folder, identity, train

ROOT = Path(__file__).resolve().parents[1]
QUIET = lambda line: None  # noqa: E731


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("ABSPOS_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def stopped_after(spec: SyntheticSpec, epochs: int) -> Path:
    """``spec`` trained for ``epochs`` epochs then interrupted: its checkpoint."""

    def stop(line):
        if f"epoch {epochs}/" in line:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        train(spec, log=stop)
    return folder(spec) / "checkpoint.pt"


def same_weights(a, b) -> bool:
    return all(torch.equal(x, y) for x, y in zip(a.model.state_dict().values(), b.model.state_dict().values()))


class Planted:
    """Unpickling this creates the file it names: the probe's marker that code ran."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (Path.touch, (self.marker,))


def test_a_final_model_that_would_run_code_is_never_unpickled_and_is_retrained(cache, tmp_path):
    spec = SyntheticSpec("task1", "nope", "authors", "smoke", seed=3)
    first = train(spec, log=QUIET)
    final = folder(spec) / "final.pt"
    saved = torch.load(final, weights_only=True)
    marker = tmp_path / "PWNED"
    torch.save(saved | {"info": Planted(marker)}, final)  # the right identity, a pickle that runs code
    lines = []
    again = train(spec, log=lines.append)
    assert not marker.exists()
    assert [line for line in lines if str(final) in line] == [lines[0]] and "unreadable" in lines[0]
    assert "trained again" in lines[0] and same_weights(again, first)  # retrained: the same seeded model


def test_a_damaged_checkpoint_is_retrained_with_one_line_naming_it(cache):
    spec = SyntheticSpec("task1", "rope", "authors", "smoke", seed=4)
    checkpoint = stopped_after(spec, 2)
    data = checkpoint.read_bytes()
    checkpoint.write_bytes(data[: len(data) // 3])  # cut short: disk damage or a partial copy
    lines = []
    trained = train(spec, log=lines.append)
    named = [line for line in lines if str(checkpoint) in line]
    assert len(named) == 1 and "unreadable" in named[0] and "trained again from its start" in named[0]
    assert not any("resuming" in line for line in lines)
    assert len(trained.info["losses"]) == trained.info["epochs"]
    shutil.rmtree(cache)
    assert same_weights(trained, train(spec, log=QUIET))  # from its start: the uninterrupted model


def test_a_damaged_final_model_is_retrained_with_one_line_naming_it(cache):
    spec = SyntheticSpec("task1", "rope", "decoder", "smoke", seed=4)
    first = train(spec, log=QUIET)
    final = folder(spec) / "final.pt"
    final.write_bytes(final.read_bytes()[:100_000])
    lines = []
    again = train(spec, log=lines.append)
    assert str(final) in lines[0] and "unreadable" in lines[0] and "trained again" in lines[0]
    assert sum(str(final) in line for line in lines) == 1
    assert same_weights(again, first) and final.is_file()
    later = []
    train(spec, log=later.append)
    assert later == []  # the retrained file is the cache's again


def test_another_models_checkpoint_is_never_resumed(cache):
    rope = SyntheticSpec("task1", "rope", "authors", "smoke", seed=9)
    nope = SyntheticSpec("task1", "nope", "authors", "smoke", seed=9)
    fresh = train(nope, log=QUIET)
    shutil.rmtree(cache)
    checkpoint = stopped_after(rope, 3)
    folder(nope).mkdir(parents=True, exist_ok=True)
    shutil.copy(checkpoint, folder(nope) / "checkpoint.pt")
    lines = []
    trained = train(nope, log=lines.append)
    assert not any("resuming" in line for line in lines)
    assert rope.name in lines[0] and nope.name in lines[0] and str(folder(nope) / "checkpoint.pt") in lines[0]
    assert same_weights(trained, fresh)  # NoPE from its start, not three epochs of RoPE


def test_another_models_final_model_is_never_loaded(cache):
    """A final model of another seed (the same tensors' names and shapes) in this seed's folder, and one whose
    identity was stripped: neither is read as this model."""
    mine = SyntheticSpec("task2", "rope", "decoder", "smoke", seed=1)
    other = SyntheticSpec("task2", "rope", "decoder", "smoke", seed=2)
    fresh = train(mine, log=QUIET)
    stray = train(other, log=QUIET)
    final = folder(mine) / "final.pt"
    shutil.copy(folder(other) / "final.pt", final)
    lines = []
    assert same_weights(train(mine, log=lines.append), fresh)
    assert other.name in lines[0] and str(final) in lines[0] and not same_weights(fresh, stray)
    saved = torch.load(final, weights_only=True)
    torch.save({k: v for k, v in saved.items() if k != "identity"}, final)
    lines = []
    assert same_weights(train(mine, log=lines.append), fresh)
    assert "records no identity" in lines[0]
    assert torch.load(final, weights_only=True)["identity"] == identity(mine)


def test_a_resumed_training_is_bit_identical_to_an_uninterrupted_one(cache):
    """B34, kept: a killed training resumed from its checkpoint gives the uninterrupted model exactly."""
    spec = SyntheticSpec("task1", "alibi", "decoder", "smoke", seed=8)
    stopped_after(spec, 3)
    lines = []
    resumed = train(spec, log=lines.append)
    assert any("resuming after epoch 3/" in line for line in lines)
    shutil.rmtree(cache)
    whole = train(spec, log=QUIET)
    assert same_weights(resumed, whole) and resumed.info["losses"] == whole.info["losses"]


UNPICKLING = re.compile(
    r"weights_only\s*=\s*False|\bpickle\s*\.\s*loads?\b|\bdill\b|\bcPickle\b|\bjoblib\s*\.\s*load\b"
)
LOADS = re.compile(r"\btorch\s*\.\s*load\s*\(")


def test_no_code_under_harness_benchmarks_or_scripts_unpickles():
    """B30's class: nothing the suite runs unpickles a file. Every torch.load says weights_only=True in its call, and
    no source names pickle loading, dill or weights_only=False."""
    sources = [p for d in ("harness", "benchmarks", "scripts") for p in sorted((ROOT / d).rglob("*")) if p.is_file()]
    sources = [p for p in sources if p.suffix in (".py", ".sh") and "__pycache__" not in p.parts]
    assert len(sources) > 50
    found = []
    for path in sources:
        text = path.read_text(encoding="utf-8")
        found += [f"{path.relative_to(ROOT)}: {m.group(0)}" for m in UNPICKLING.finditer(text)]
        for m in LOADS.finditer(text):
            call = text[m.end() : text.find(")", m.end()) + 1]
            if not re.search(r"weights_only\s*=\s*True", call):
                found.append(f"{path.relative_to(ROOT)}: torch.load({call} without weights_only=True")
    assert found == []


def test_the_scan_finds_each_way_in():
    """The scan above can fail: each form it refuses is found in a planted line."""
    planted = [
        "torch.load(p, weights_only=False)",
        "pickle.load(f)",
        "pickle.loads(b)",
        "import dill",
        "joblib.load(p)",
    ]
    assert all(UNPICKLING.search(line) for line in planted)
    assert LOADS.search("x = torch.load(path, map_location='cpu')")
    assert not UNPICKLING.search("torch.load(p, weights_only=True)")
