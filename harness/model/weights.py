"""Finding and loading weights: bundled GGUF -> cached safetensors, paper checkpoints offline, tiny random init.

The converted cache lives under ``$ABSPOS_CACHE`` (default ``~/.cache/abspos-claims``).
Paper checkpoints are looked up under ``$ABSPOS_MODELS_DIR`` (``<name>``, ``<org>/<repo>``, ``<org>--<repo>``
or ``<repo>``) and then in the Hugging Face cache with ``local_files_only=True``: no network call is ever made.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import json
import os
import shutil
import time
from pathlib import Path
from unittest import mock

import torch

from harness.model import cache, devices, gguf_bos
from harness.model.cache import cache_root
from harness.model.checkpoint_checks import check_finite, check_trained_model, check_weights
from harness.model.gguf_files import bundled_gguf, check_sha256, package_dir
from harness.model.rehearsal_mark import check_not_rehearsal, rehearsals_root
from harness.model.tokenizer_checks import check_tokenizer
from harness.spec.models import BUNDLED, ModelSpec, UnsupportedModelError, WeightsUnavailable, WrongWeights


def _fingerprint(path: Path, spec: ModelSpec | None = None) -> str:
    """Identifies a conversion's source: the GGUF, the transformers version that converts it (a folder
    written by 5.x stores ``rope_parameters``, which 4.x silently ignores for its default ``rope_theta``;
    GGUF tokenizer conversion also differs between versions) and the harness's own step on its tokenizer
    (``gguf_bos.RECIPE``), so a change of either converts afresh."""
    import transformers

    st = path.stat()
    key = f"{path.name}:{st.st_size}:{transformers.__version__}:{gguf_bos.RECIPE}"
    if spec is not None and spec.gguf.get("kind") == "path":  # a user's file: checkpoints of one run often share a
        key += f":{path.resolve()}:{st.st_mtime_ns}"  # name and size, and a file may be replaced in place
    return hashlib.sha256(key.encode()).hexdigest()[:16]


def conversion_path(spec: ModelSpec, gguf: Path | None = None) -> Path:
    """Where a bundled model's conversion lives: one folder per source and transformers version, so venvs sharing
    a cache never convert over each other."""
    gguf = gguf or bundled_gguf(spec)
    bundled = next(
        (b for b in BUNDLED if spec.gguf.get("kind") == "path" and _bundled_file(b) == gguf.resolve()), None
    )  # a bundled model's GGUF given by reference shares its conversion
    if bundled is not None:
        return cache_root() / "converted" / f"{bundled.name}-{_fingerprint(gguf, bundled)}"
    return cache_root() / "converted" / f"{spec.name}-{_fingerprint(gguf, spec)}"


def _bundled_file(spec: ModelSpec) -> Path | None:
    """Where a bundled model's GGUF lies once installed (assembled ones in the cache), without assembling it."""
    g = spec.gguf
    found = importlib.util.find_spec(g["package"]) if g["kind"] == "file" else None
    if g["kind"] == "file":
        return (Path(list(found.submodule_search_locations)[0]) / g["file"]).resolve() if found else None
    return (cache_root() / "gguf" / g["file"]).resolve()


def converted_folder(spec: ModelSpec, log=print) -> Path:
    """The bundled GGUF converted to a plain safetensors folder (dequantized fp32), once: the folder is verified
    against the manifest written at conversion on every load and converted again when damaged (harness.model.cache)."""
    gguf = bundled_gguf(spec)
    folder = conversion_path(spec, gguf)
    fingerprint = folder.name.rsplit("-", 1)[1]
    legacy = cache_root() / "converted" / spec.name
    if (
        spec.group == "bundled" and (legacy / cache.MARKER).is_file()
    ):  # the layout before manifests; never verified, so never used
        shutil.rmtree(legacy, ignore_errors=True)
        (legacy.parent / f".{spec.name}.lock").unlink(missing_ok=True)

    def convert(into: Path) -> None:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        t0 = time.time()
        check_sha256(spec, gguf)  # the joined file is what the registry recorded, whatever made it
        log(f"[abspos] converting {spec.name} from {gguf.name} (one-time, cached in {folder}) ...")
        with mock.patch.dict(os.environ, {"TQDM_DISABLE": "1"}):  # transformers' GGUF bar: these log lines say it
            tok = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name, trust_remote_code=False)
            if bos := gguf_bos.give_declared_bos(tok, gguf):  # 5.18-5.22 leave out the BOS a Gemma GGUF declares
                log(f"[abspos] {spec.name}: {bos}")
                note["tokenizer"] = bos
            with _no_load_report():
                model, info = AutoModelForCausalLM.from_pretrained(
                    gguf.parent,
                    gguf_file=gguf.name,
                    trust_remote_code=False,
                    output_loading_info=True,
                    **{dtype_kwarg(): torch.float32},
                )
        check_loading(spec, gguf, info)  # a tensor the file lacks would be saved as random init, then load clean
        model.hf_quantizer = None
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
        model.save_pretrained(into)
        tok.save_pretrained(into)
        log(f"[abspos] converted {spec.name} in {time.time() - t0:.0f}s")

    note = {"gguf": str(gguf)}  # convert() adds what it changed (the marker is written after it)
    return cache.ensure(folder, fingerprint, convert, log, what=spec.name, note=note)


def ensure_available(spec: ModelSpec) -> None:
    """WeightsUnavailable (one line saying how to provide them) when a model's weights are not on this machine;
    WrongWeights when its folder holds another model. Cheap: nothing is loaded or converted (a paper model's folder is
    checked once, then cached), so a claim over several models can check them all first. (A registered rehearsal:
    ``harness.model.availability``.)"""
    if spec.group == "paper":
        checked_paper_folder(spec)
    elif spec.group == "local":
        local_folder(spec)
    elif spec.group in ("bundled", "extra"):
        for package in spec.gguf.get("packages") or [spec.gguf["package"]]:
            package_dir(package, spec)


WEIGHT_FILES = ("*.safetensors", "pytorch_model*.bin")
IDENTITY = ("hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "vocab_size")


def has_weights(folder: Path) -> bool:
    """A config.json and at least one weights file that can be read (a dangling link is no weights file)."""
    return (folder / "config.json").is_file() and any(p.is_file() for g in WEIGHT_FILES for p in folder.glob(g))


def check_weight_links(name: str, folder: Path) -> None:
    """WeightsUnavailable (one line) when a weights file of ``folder`` is a link to nothing: its tests are skipped
    naming the link, never loaded into an OSError."""
    dangling = sorted(p for g in WEIGHT_FILES for p in folder.glob(g) if p.is_symlink() and not p.exists())
    if dangling and (folder / "config.json").is_file():
        raise WeightsUnavailable(
            f"{name}: weights file {dangling[0]} is a link to {os.readlink(dangling[0])}, which "
            f"does not exist"
            + (f" ({len(dangling) - 1} more such)" if len(dangling) > 1 else "")
            + "; restore the target or the file"
        )


def check_loading(spec: ModelSpec, source: Path, info: dict) -> None:
    """WrongWeights (one line) unless every weight the config describes was loaded from ``source``, in its shape,
    and nothing in the checkpoint went unused (transformers' loading info). Tied weights and non-persistent buffers
    are not counted as missing by transformers; a missing weight is one it initialised at random."""
    missing, unexpected = sorted(info.get("missing_keys") or ()), sorted(info.get("unexpected_keys") or ())
    mismatched = sorted(info.get("mismatched_keys") or (), key=lambda m: m[0])
    errors = [e for e in info.get("error_msgs") or () if e]
    wrong = []
    if missing:
        wrong.append(
            f"{len(missing)} weight(s) its config describes are missing from the checkpoint and would be "
            f"random (first: {missing[0]})"
        )
    if unexpected:
        wrong.append(
            f"{len(unexpected)} weight(s) in the checkpoint are not in the model its config describes "
            f"(first: {unexpected[0]})"
        )
    if mismatched:
        key, ckpt, model = mismatched[0]
        wrong.append(
            f"{len(mismatched)} weight(s) have another shape than its config gives (first: {key} "
            f"{list(ckpt)} in the checkpoint, {list(model)} by the config)"
        )
    if errors:
        wrong.append(f"loading reported: {(errors[0].strip().splitlines() or [''])[0]}")
    if wrong:
        raise WrongWeights(
            f"{spec.name}: {source} does not hold the model its config.json describes "
            f"({'; '.join(wrong)}); refusing to measure it"
        )


def _no_load_report():
    """Transformers' LOAD REPORT table (a warning of many lines) silenced: ``check_loading`` says it in one."""
    import logging

    from transformers import modeling_utils

    class Drop(logging.Filter):
        def filter(self, record):
            return "LOAD REPORT" not in str(record.msg)

    class Silenced:
        def __enter__(self):
            self.filter = Drop()
            modeling_utils.logger.addFilter(self.filter)

        def __exit__(self, *exc):
            modeling_utils.logger.removeFilter(self.filter)

    return Silenced()


def check_identity(spec: ModelSpec, folder: Path) -> None:
    """WrongWeights (one line) unless ``folder``'s config.json is the model ``spec`` names: its architecture and
    the shape of its public config (layers, heads, KV heads, width, vocabulary) and its context length."""
    try:
        config = json.loads((folder / "config.json").read_text())
    except (OSError, ValueError) as e:
        raise WrongWeights(f"{spec.name}: {folder / 'config.json'} is unreadable ({type(e).__name__}: {e})") from None
    config = config.get("text_config", config) if isinstance(config, dict) else {}
    found = [a for a in (config.get("architectures") or []) if a != spec.architecture]
    wrong = [f"architecture {found[0]}"] if found else []
    want = {**{k: spec.config[k] for k in IDENTITY if k in spec.config}, "max_position_embeddings": spec.context}
    wrong += [f"{k} {config[k]} (not {v})" for k, v in want.items() if v is not None and config.get(k, v) != v]
    if wrong:
        raise WrongWeights(
            f"{spec.name}: {folder} holds another model than {spec.hub_id or spec.source} "
            f"({', '.join(wrong)}); refusing to load it"
        )


def paper_folder(spec: ModelSpec) -> Path:
    """Local folder of a paper checkpoint, offline only: ``$ABSPOS_MODELS_DIR/<name>``, ``/<org>/<repo>``,
    ``/<org>--<repo>`` or ``/<repo>``, then the Hugging Face cache. WeightsUnavailable (one line saying how to
    provide them) when no folder holds a config and weights; WrongWeights when the folder holds another model, or
    a rehearsal build (``REHEARSAL.json``: random weights) for any spec but a rehearsal's own. A registered rehearsal
    (``spec.rehearses``, the ``rehearsal`` group) is looked for the same way under ``rehearsals_root()`` instead of
    ``$ABSPOS_MODELS_DIR``, and never in the Hugging Face cache (which may hold the real model)."""
    if spec.rehearses:  # the full-size builds in their own subfolder (rehearsal.build_root)
        root: str | None = str(rehearsals_root() / ("full" if spec.rehearsal_size == "full" else ""))
    else:
        root = os.environ.get("ABSPOS_MODELS_DIR")
    names = (spec.name, spec.hub_id, spec.hub_id.replace("/", "--"), spec.hub_id.split("/")[-1])
    candidates = [Path(root) / n for n in names] if root else []
    try:
        from huggingface_hub import snapshot_download

        if not spec.rehearses:
            candidates.append(Path(snapshot_download(spec.hub_id, local_files_only=True)))
    except Exception:
        pass
    for folder in candidates:
        if has_weights(folder):
            check_identity(spec, folder)
            if not spec.rehearsal:
                check_not_rehearsal(spec.name, folder)
            check_weight_links(spec.name, folder)
            return folder
    for folder in candidates:
        check_weight_links(spec.name, folder)
    partial = next((f for f in candidates if (f / "config.json").is_file()), None)
    raise WeightsUnavailable(
        f"{spec.name} weights not found: put them in $ABSPOS_MODELS_DIR/{spec.hub_id} "
        f"or the Hugging Face cache (`hf download {spec.hub_id}`)"
        + (f"; {partial} has a config.json but no weights" if partial else "")
    )


def checked_paper_folder(spec: ModelSpec) -> Path:
    """``paper_folder``, and what it holds checked to be the published checkpoint (or, for a rehearsal, its build):
    weights finite and, but for a rehearsal, trained (once per folder, cached: harness.model.checkpoint_checks), and
    the tokenizer its spec names. WrongWeights (one line naming what differs) otherwise."""
    folder = paper_folder(spec)
    check_weights(spec, folder)
    check_folder_tokenizer(spec, folder)
    return folder


def local_folder(spec: ModelSpec) -> Path:
    """The folder of a model given by reference (``harness.model.references``); WeightsUnavailable (one line) when it
    has a config but no weights."""
    if spec.gguf:
        bundled_gguf(spec)  # the file is still there (its conversion is verified when loaded)
        return conversion_path(spec)
    folder = Path(spec.folder)
    check_not_rehearsal(spec.name, folder)
    check_weight_links(spec.name, folder)
    if not has_weights(folder):
        raise WeightsUnavailable(
            f"{spec.name}: {folder} has a config.json but no weights "
            f"({' or '.join(WEIGHT_FILES)}); its tests are skipped"
        )
    return folder


def identity(spec: ModelSpec) -> str:
    """A short digest of a local model's weights as found now: its GGUF's conversion fingerprint, or its folder's
    config bytes with each weights file's name, size and mtime."""
    if spec.gguf:
        return conversion_path(spec).name.rsplit("-", 1)[1][:10]
    folder, h = Path(spec.folder), hashlib.sha1()
    h.update((folder / "config.json").read_bytes())
    for f in sorted(p for g in WEIGHT_FILES for p in folder.glob(g)):
        st = f.stat()
        h.update(f"{f.name}:{st.st_size}:{st.st_mtime_ns}".encode())
    return h.hexdigest()[:10]


def random_init_model(spec: ModelSpec, seed: int = 0, dtype: torch.dtype | None = None, device: str = "cpu"):
    """A random-init model built from ``spec.config``: a tiny model, initialised on the CPU under ``seed`` and then
    moved to ``device``, so that its name is the same network on every device (CUDA's generator draws other weights);
    or a paper model's stand-in of the same shape (throughput only, never for claims), built on its device directly so
    that an 8B stand-in never exists on the CPU."""
    import transformers

    if not spec.config:
        raise UnsupportedModelError(f"{spec.name} has no config to build a random-init model from")
    config_cls = getattr(transformers, spec.architecture.replace("ForCausalLM", "Config"))
    if spec.architecture == "Gemma3ForCausalLM":
        config_cls = transformers.Gemma3TextConfig
    config = config_cls(**spec.config)
    torch.manual_seed(seed)
    previous = torch.get_default_dtype()
    where = "cpu" if spec.group == "tiny" else device
    try:  # built directly in its dtype: never a float32 copy first
        torch.set_default_dtype(dtype or previous)
        with torch.device(where):
            model = getattr(transformers, spec.architecture)(config)
    finally:
        torch.set_default_dtype(previous)
    return model.to(device).eval()


def load_pretrained(spec: ModelSpec, dtype: torch.dtype | str, device: str, log=print):
    """(model, tokenizer) for a bundled or paper spec (``HookedModel`` gives it the harness's attention).

    ``device`` "cuda" resolves to this xdist worker's GPU (``harness.model.devices.resolve_device``); a model
    larger than that GPU's free memory is spread by accelerate (``device_map="auto"``)."""
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    dtype = devices.parse_dtype(dtype)
    n_gpus = devices.gpu_count()
    device = devices.resolve_device(device, devices.current_worker(), n_gpus)
    if spec.gguf:  # bundled, or a GGUF given by reference: the verified conversion
        folder = converted_folder(spec, log)
        check_identity(spec, folder)
        check_weights(spec, folder, log)
    elif spec.group == "local":
        folder = local_folder(spec)
        check_identity(spec, folder)  # the folder still holds the model its spec was derived from
        check_weights(spec, folder, log)
    else:  # the tokenizer is checked once loaded, against the embedding (below): not also from the folder here
        folder = paper_folder(spec)
        check_weights(spec, folder, log)
    kwargs: dict[str, object] = {dtype_kwarg(): dtype}  # attention: set where the model is wrapped (HookedModel)
    if device.startswith("cuda"):
        size = devices.estimate_param_bytes(AutoConfig.from_pretrained(folder, trust_remote_code=False), dtype)
        free, cap = devices.free_bytes(device), devices.memory_cap()
        placed = devices.placement(size, free, n_gpus, cap)  # accelerate spreads a model too large for one GPU
        kwargs |= placed
        if placed or cap is not None:  # a cap set is always said, whether it splits the model or not
            log(f"[abspos] {spec.name}: {devices.placement_note(size, free, cap, placed, n_gpus, device)}")
    try:  # nothing from the folder is executed; a checkpoint that is not the model its config describes is refused
        with _no_load_report():
            model, info = AutoModelForCausalLM.from_pretrained(
                folder, trust_remote_code=False, output_loading_info=True, ignore_mismatched_sizes=True, **kwargs
            )
    except torch.OutOfMemoryError:
        raise
    except (OSError, RuntimeError, ValueError) as e:  # transformers' many-line errors, as one line
        lines = [line.strip() for line in str(e).splitlines() if line.strip()] or [""]
        first = lines[1] if len(lines) > 1 and lines[0].endswith(":") else lines[0]  # "Error(s) in ...:" then what
        raise WrongWeights(
            f"{spec.name}: transformers cannot load {folder} ({type(e).__name__}: {first}); refusing it"
        ) from None
    check_loading(spec, folder, info)
    tok = AutoTokenizer.from_pretrained(folder, trust_remote_code=False)
    check_tokenizer(spec, tok, model.get_input_embeddings().weight.shape[0], folder)
    if "device_map" not in kwargs:
        model = model.to(device)
    check_finite(spec, model, folder)  # on its device: a pass over the weights in memory
    check_trained_model(spec, folder, model.eval(), tok, log)  # once per weights: its next-token loss on text
    return model, tok


def check_folder_tokenizer(spec: ModelSpec, folder: Path) -> None:
    """``check_tokenizer`` on the tokenizer in ``folder``, before anything is loaded (a paper model's folder is
    checked when it is found: at selection, by ``abspos-claims models`` and at load)."""
    from transformers import AutoTokenizer

    try:
        config = json.loads((folder / "config.json").read_text())
        config = config.get("text_config", config)
        tok = AutoTokenizer.from_pretrained(folder, trust_remote_code=False)
    except Exception as e:  # no tokenizer, or one transformers cannot read
        raise WrongWeights(
            f"{spec.name}: no usable tokenizer in {folder} ({type(e).__name__}); refusing to measure it"
        ) from None
    check_tokenizer(spec, tok, config.get("vocab_size"), folder)


def dtype_kwarg() -> str:
    """``from_pretrained``'s dtype keyword: ``dtype`` from transformers 4.56, ``torch_dtype`` before
    (older versions silently ignore ``dtype`` and load float32)."""
    import transformers

    major, minor = (int(x) for x in transformers.__version__.split(".")[:2])
    return "dtype" if (major, minor) >= (4, 56) else "torch_dtype"
