"""Device and dtype placement (harness.model.devices), all on the CPU: GPUs and xdist workers are simulated.

- ``--device cuda`` under xdist spreads workers over the GPUs round-robin; explicit devices are kept;
  asking for CUDA without a GPU is a clear error;
- dtype names parse, and an unknown one lists the choices;
- a model too large for one GPU's free memory goes to accelerate's ``device_map="auto"``, and the size
  estimate from a config matches the real parameter count;
- statistics come out float64 whatever the activation dtype, and a bfloat16 forward of a real (tiny)
  model through ``capture`` stays close to the float32 one.
"""

import numpy as np
import pytest
import torch

from harness.capture import forward as cap
from harness.model import devices, weights
from harness.model.attention import ATTN_IMPL, register_attention
from harness.model.devices import (
    DeviceError,
    estimate_param_bytes,
    needs_device_map,
    parse_dtype,
    resolve_device,
    to_stats,
)
from harness.model.hooks import HookedModel
from harness.spec.models import get_spec, names

GiB = 2**30


# ---- resolve_device -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "worker, n_gpus, expected",
    [
        (None, 1, "cuda:0"),
        ("master", 4, "cuda:0"),
        ("gw0", 4, "cuda:0"),
        ("gw3", 4, "cuda:3"),
        ("gw4", 4, "cuda:0"),
        ("gw5", 4, "cuda:1"),
        ("gw7", 2, "cuda:1"),
        ("gw12", 1, "cuda:0"),
    ],
)
def test_cuda_under_xdist_gives_each_worker_a_gpu_round_robin(worker, n_gpus, expected):
    assert resolve_device("cuda", worker, n_gpus) == expected


def test_every_gpu_gets_a_worker_when_workers_equal_gpus():
    assert {resolve_device("cuda", f"gw{k}", 8) for k in range(8)} == {f"cuda:{k}" for k in range(8)}


@pytest.mark.parametrize("requested, expected", [("cuda:1", "cuda:1"), ("cuda:0", "cuda:0"), ("CUDA:1", "cuda:1")])
def test_explicit_gpu_is_kept_on_every_worker(requested, expected):
    for worker in (None, "gw0", "gw1", "gw5"):
        assert resolve_device(requested, worker, 2) == expected


@pytest.mark.parametrize("requested", ["cpu", "mps", "cpu:0"])
@pytest.mark.parametrize("n_gpus", [0, 2])
def test_non_cuda_devices_are_kept(requested, n_gpus):
    assert resolve_device(requested, "gw3", n_gpus) == requested


@pytest.mark.parametrize("requested", ["cuda", "cuda:0", "cuda:1"])
def test_cuda_without_gpus_is_a_clear_error(requested):
    with pytest.raises(DeviceError, match=r"no.*GPU|none is visible") as e:
        resolve_device(requested, "gw0", 0)
    assert "--device cpu" in str(e.value)


def test_gpu_index_beyond_the_visible_ones_is_an_error():
    with pytest.raises(DeviceError, match=r"only 2 GPU"):
        resolve_device("cuda:2", None, 2)


def test_malformed_cuda_device_is_an_error():
    with pytest.raises(DeviceError, match="bad device"):
        resolve_device("cuda:x", None, 2)


def test_current_worker_reads_xdist_env(monkeypatch):
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw2")
    assert devices.current_worker() == "gw2"
    monkeypatch.delenv("PYTEST_XDIST_WORKER")
    assert devices.current_worker() is None


# ---- parse_dtype ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name, expected",
    [
        ("float32", torch.float32),
        ("bfloat16", torch.bfloat16),
        ("float16", torch.float16),
        ("float64", torch.float64),
        ("bf16", torch.bfloat16),
        ("fp16", torch.float16),
        ("torch.bfloat16", torch.bfloat16),
        ("BFloat16", torch.bfloat16),
        (torch.float16, torch.float16),
    ],
)
def test_parse_dtype(name, expected):
    assert parse_dtype(name) is expected


@pytest.mark.parametrize("bad", ["int8", "float8", "", "bfloat", torch.int32])
def test_unknown_dtype_lists_the_choices(bad):
    with pytest.raises(ValueError) as e:
        parse_dtype(bad)
    for choice in ("float32", "bfloat16", "float16", "float64"):
        assert choice in str(e.value)


def test_plugin_dtype_choices_all_parse():
    from harness.spec.settings import Settings

    assert parse_dtype(Settings().dtype) is torch.float32
    for name in devices.DTYPES:
        assert parse_dtype(name).is_floating_point


# ---- sizes and device_map --------------------------------------------------------------------------


@pytest.mark.parametrize("name", names("tiny"))
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_param_bytes_estimate_is_exact_for_the_registry_architectures(name, dtype):
    model = weights.random_init_model(get_spec(name))
    itemsize = torch.empty((), dtype=parse_dtype(dtype)).element_size()
    real = sum(p.numel() for p in model.parameters()) * itemsize
    assert estimate_param_bytes(model.config, dtype) == real
    assert estimate_param_bytes(model.config.to_dict(), parse_dtype(dtype)) == real


def test_param_bytes_estimate_of_the_paper_models_is_plausible():
    # Llama-3.1-8B's published config: 8.03e9 parameters, ~16 GB in bf16.
    llama8b = dict(
        hidden_size=4096,
        num_hidden_layers=32,
        num_attention_heads=32,
        num_key_value_heads=8,
        intermediate_size=14336,
        vocab_size=128256,
        tie_word_embeddings=False,
        model_type="llama",
    )
    n = estimate_param_bytes(llama8b, "bfloat16") / 2
    assert 8.0e9 < n < 8.1e9
    # a multimodal config's text part is used
    assert estimate_param_bytes({"text_config": llama8b}, "float32") == 2 * estimate_param_bytes(llama8b, "bfloat16")


@pytest.mark.parametrize(
    "param_gib, free_gib, n_gpus, expected",
    [
        (16, 80, 1, False),  # 8B bf16 on an 80 GB GPU
        (16, 80, 8, False),  # fits: no spreading even with many GPUs
        (30, 24, 2, True),  # 7B fp32 on 24 GB cards
        (20, 20, 2, True),  # no room for activations
        (30, 24, 1, True),  # one GPU: accelerate offloads the rest to the CPU rather than running out of memory
        (30, 0, 0, False),  # CPU run: never a device_map
    ],
)
def test_needs_device_map(param_gib, free_gib, n_gpus, expected):
    assert needs_device_map(param_gib * GiB, free_gib * GiB, n_gpus) is expected


def test_free_bytes_of_a_cpu_device_is_zero():
    assert devices.free_bytes("cpu") == 0


def test_load_pretrained_refuses_cuda_without_gpus(monkeypatch):
    monkeypatch.setattr(devices, "gpu_count", lambda: 0)
    with pytest.raises(DeviceError, match="--device cpu"):
        weights.load_pretrained(get_spec("smollm2-135m"), "float32", "cuda")


def test_dtype_kwarg_matches_the_installed_transformers():
    import inspect

    from transformers import PreTrainedModel

    kw = weights.dtype_kwarg()
    assert kw in ("dtype", "torch_dtype")
    if kw == "dtype":  # transformers >= 4.56 documents `dtype`
        assert "dtype" in (inspect.getdoc(PreTrainedModel.from_pretrained) or "")


# ---- float64 statistics -----------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32, torch.float64])
def test_to_stats_is_float64_numpy(dtype):
    x = torch.linspace(-3, 3, 24, dtype=torch.float32).reshape(2, 3, 4).to(dtype)
    out = to_stats(x)
    assert isinstance(out, np.ndarray) and out.dtype == np.float64 and out.shape == (2, 3, 4)
    np.testing.assert_array_equal(out, x.to(torch.float64).numpy())  # half -> float64 is exact


def test_to_stats_of_bf16_keeps_values_float32_would_round():
    x = torch.tensor([1e-8, 3.0e38, -2.5], dtype=torch.bfloat16)
    assert np.all(np.isfinite(to_stats(x)))
    assert to_stats(torch.tensor([7], dtype=torch.int64)).dtype == np.float64
    assert to_stats([1, 2]).dtype == np.float64
    assert to_stats(torch.ones(2, requires_grad=True)).dtype == np.float64


@pytest.fixture(scope="module")
def tiny_pair():
    """The same tiny Llama in float32 and bfloat16, both on the harness's attention."""
    register_attention()
    spec = get_spec("tiny-llama")
    out = {}
    for dtype in (torch.float32, torch.bfloat16):
        hf = weights.random_init_model(spec, seed=0).to(dtype)
        hf.set_attn_implementation(ATTN_IMPL)
        out[dtype] = HookedModel(hf, spec)
    return out


def test_bf16_forward_gives_float64_statistics_close_to_fp32(tiny_pair):
    ids = np.random.default_rng(0).integers(3, 250, size=(4, 24))
    m32 = tiny_pair[torch.float32]
    i, j = np.tril_indices(24)
    readers = {
        "pattern": ("blocks.1.attn.hook_pattern", cap.PairReader(i, j)),
        "sinks": ("blocks.0.attn.hook_pattern", cap.sink_profile),
        "norms": ("blocks.1.hook_resid_post", cap.norms),
        "resid": ("blocks.1.hook_resid_post", cap.positions([0, 1, 5])),
        "raw_pattern": ("blocks.0.attn.hook_pattern", lambda w: w),
    }
    ref = cap.capture(m32, ids, readers, batch_size=3)
    got = cap.capture(tiny_pair[torch.bfloat16], ids, readers, batch_size=3)
    assert next(tiny_pair[torch.bfloat16].hf.parameters()).dtype == torch.bfloat16
    for key in readers:
        # the weights at the pairs are kept in float32, exact for a bf16 or float32 pass (every statistic upcasts
        # them a block at a time); every other reading is float64
        assert got[key].dtype == (np.float32 if key == "pattern" else np.float64), key
        assert got[key].shape == ref[key].shape, key
    # bf16 keeps ~3 significant digits: weights, norms and residuals agree to a few percent
    np.testing.assert_allclose(got["pattern"], ref["pattern"], atol=2e-2)
    np.testing.assert_allclose(got["sinks"][..., :-1], ref["sinks"][..., :-1], atol=2e-2)
    np.testing.assert_allclose(got["norms"], ref["norms"], rtol=3e-2)
    scale = np.abs(ref["resid"]).max()
    np.testing.assert_allclose(got["resid"], ref["resid"], atol=3e-2 * scale)
    # the bf16 pattern is still a causal distribution, summed in float64
    np.testing.assert_allclose(got["raw_pattern"].sum(-1), 1, atol=2e-2)
    assert np.all(got["raw_pattern"][..., np.triu(np.ones((24, 24), bool), 1)] == 0)
    assert not np.array_equal(got["norms"], ref["norms"])  # it really ran in bf16


def test_bf16_activations_are_bf16_inside_the_model(tiny_pair):
    seen = {}
    m = tiny_pair[torch.bfloat16]

    def look(x, name):
        seen[name] = x.dtype  # returns None: observe only

    with torch.no_grad(), m.hooks({"blocks.0.hook_resid_post": look}):
        m.base(input_ids=torch.tensor([[3, 4, 5, 6]]), use_cache=False)
    assert seen["blocks.0.hook_resid_post"] is torch.bfloat16


def test_placement_splits_only_a_model_that_does_not_fit_and_a_cap_forces_the_split(monkeypatch):
    gib = 2**30
    assert devices.placement(2 * gib, 40 * gib, 1, None) == {}
    assert devices.placement(50 * gib, 40 * gib, 1, None) == {"device_map": "auto"}
    assert devices.placement(2 * gib, 40 * gib, 0, gib) == {}  # a CPU run loads whole
    capped = devices.placement(2 * gib, 40 * gib, 2, gib)
    assert capped["device_map"] == "auto" and capped["max_memory"][0] == capped["max_memory"][1] == gib
    assert capped["max_memory"]["cpu"] > 100 * gib
    monkeypatch.setenv(devices.MEMORY_CAP_ENV, "0.5")
    assert devices.memory_cap() == gib // 2
    monkeypatch.setenv(devices.MEMORY_CAP_ENV, "")
    assert devices.memory_cap() is None
    for bad in ("0", "-1", "lots"):
        monkeypatch.setenv(devices.MEMORY_CAP_ENV, bad)
        with pytest.raises(devices.DeviceError, match=rf"ABSPOS_GPU_MEMORY_GIB={bad!r}: GiB of each GPU"):
            devices.memory_cap()
