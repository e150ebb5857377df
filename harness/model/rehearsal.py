"""Rehearsal models: the paper's five architectures at their exact published configs, with random weights, written
as the folder ``$ABSPOS_MODELS_DIR/<org>/<repo>`` would hold, so the whole path a paper model takes (finding its
folder, checking its identity, loading it clean, its tokenizer) can be rehearsed end to end without the weights.

Two sizes. ``"full"``: the published config.json exactly (``harness.spec.paper_configs``); a float32 build is 4 bytes a
parameter (Llama-3.1-8B: ~32 GB), so it is built only when asked for by name. ``"rehearsal"``: the same config with
fewer layers and a narrower width, and nothing else changed: ``REHEARSAL_LAYERS`` layers; 1 key/value head and the
model's own GQA ratio of query heads to it (one of its GQA groups); the model's ``head_dim`` (stated explicitly), so hidden_size = heads x head_dim; intermediate_size
scaled by the same factor as hidden_size, at most ``MLP_WIDTH_CAP`` x hidden_size; Qwen's ``max_window_layers`` scaled with the layers (36 of 36 -> 4 of 4).
The RoPE type, theta and scaling, the vocabulary, the special-token ids, the context, tied embeddings, the norms and
the sliding window are the published ones. ``DEPTH_AND_WIDTH`` names the fields that may differ.

A rehearsal folder is not the paper's model: each carries ``REHEARSAL.json`` (name, size, seed) saying so, and its
weights carry the same note in their safetensors header (``abspos_rehearsal``), so a copy of the weights alone still
says it. The loader refuses a folder carrying either (``rehearsal_mark.check_not_rehearsal``, and
``checkpoint_checks.check_weights``, which also refuses untrained weights however they were made) as a paper model
(``weights.checked_paper_folder``, hence ``load_pretrained``), and as an ``hf:`` or ``path:`` reference; a
"rehearsal" size is refused by shape too (``check_identity``). Only ``rehearsal_spec`` (that spec with the
rehearsal's shape, marked ``rehearsal``) loads one, through the same loading path. So a "full" build, which has the
published config exactly, is never measured as the paper's model even when placed where its real weights would be.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import json
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any
from unittest import mock

from harness.model.checkpoint_checks import REHEARSAL_KEY
from harness.model.rehearsal_mark import MARKER, rehearsals_root
from harness.spec.models import PAPER, ModelSpec, UnknownModelError, WeightsUnavailable, get_spec, register_model
from harness.spec.paper_configs import PAPER_CONFIGS, gqa_ratio, head_dim

SIZES = ("rehearsal", "full")
#: the fewest layers every claim's design reads on a paper model: the length scaling measures the first four layers
#: (§4: "the first four layers and heads of Llama-3.2-1B"), the rank-1 MLP ablation ablates the last three (App. B);
#: with two, both would read past the end
REHEARSAL_LAYERS = 4
#: a rehearsal's MLP is at most this many times its width (the published ratios are 2.7-5.4): at Qwen2.5-3B's 5.4 its
#: MLPs were four fifths of the tier's forward work (8 query heads x 128 = 1,024 wide, the widest rehearsal); no
#: claim reads the MLP's inner width (the MLP ablation reads its output, in the residual stream's width)
MLP_WIDTH_CAP = 2
#: the fields a rehearsal config may give otherwise than the published one (``head_dim`` is added where the published
#: file leaves it implicit, at the published value)
DEPTH_AND_WIDTH = (
    "num_hidden_layers",
    "max_window_layers",
    "num_attention_heads",
    "num_key_value_heads",
    "hidden_size",
    "intermediate_size",
)

SaveTokenizer = Callable[[str, Path], Any]


def public_config(name: str) -> dict[str, Any]:
    """A copy of the published config.json of paper model ``name``; UnknownModelError (one line) for another name."""
    try:
        return copy.deepcopy(PAPER_CONFIGS[name])
    except KeyError:
        raise UnknownModelError(f"{name!r} is not a paper model; paper models: {', '.join(PAPER_CONFIGS)}") from None


def rehearsal_kv_heads(config: dict[str, Any]) -> int:
    """Key/value heads of a rehearsal: 1, so its query heads are one of the model's own GQA groups (the narrowest
    build that keeps the ratio and the head width; at 2 the tier took twice as long, the MLPs' work dominating)."""
    return 1


def _scaled(value: int, num: int, den: int, what: str) -> int:
    if value * num % den:
        raise ValueError(f"{what} {value} does not scale by {num}/{den} to a whole number")
    return value * num // den


def rehearsal_config(name: str, size: str = "rehearsal") -> dict[str, Any]:
    """The config of paper model ``name`` at ``size``: "full" is the published config.json; "rehearsal" the same with
    ``REHEARSAL_LAYERS`` layers and a narrower width (see the module's docstring)."""
    config = public_config(name)
    if size == "full":
        return config
    if size != "rehearsal":
        raise ValueError(f"size {size!r}: expected one of {', '.join(SIZES)}")
    width, layers = head_dim(config), config["num_hidden_layers"]
    kv = rehearsal_kv_heads(config)
    heads = kv * gqa_ratio(config)
    hidden = heads * width
    shape = {
        "num_hidden_layers": REHEARSAL_LAYERS,
        "num_attention_heads": heads,
        "num_key_value_heads": kv,
        "head_dim": width,
        "hidden_size": hidden,
        "intermediate_size": min(
            _scaled(config["intermediate_size"], hidden, config["hidden_size"], "intermediate_size"),
            MLP_WIDTH_CAP * hidden,
        ),
    }
    if "max_window_layers" in config:
        shape["max_window_layers"] = config["max_window_layers"] * REHEARSAL_LAYERS // layers
    return {**config, **shape}


def rehearsal_spec(name: str, size: str = "rehearsal") -> ModelSpec:
    """The registry spec of paper model ``name`` with the shape of its ``size`` config: same name, hub id and folder
    layout, so ``weights.paper_folder`` finds the rehearsal where the real weights would be, and its identity check
    (layers, heads, width, vocabulary, context) holds for the rehearsal's shape."""
    spec, config = get_spec(name), rehearsal_config(name, size)
    shape = {k: config.get(k, v) for k, v in spec.config.items()}
    if "head_dim" in spec.config:
        shape["head_dim"] = head_dim(config)
    return dataclasses.replace(
        spec,
        config=shape,
        caveat=f"{size} build of {spec.hub_id}: random weights",
        rehearsal=True,
        rehearsal_size=size,
    )


def paper_layout(name: str, root: Path | str) -> Path:
    """Where ``$ABSPOS_MODELS_DIR`` = ``root`` holds paper model ``name``: ``root/<org>/<repo>``."""
    return Path(root) / get_spec(name).hub_id


def default_save_tokenizer() -> SaveTokenizer:
    """The project's writer of a paper model's tokenizer files (``harness.model.tokenizers.save_paper_tokenizer``)."""
    try:
        from harness.model.tokenizers import save_paper_tokenizer
    except ImportError as e:
        raise RuntimeError(
            f"no tokenizer writer: harness.model.tokenizers.save_paper_tokenizer cannot be imported ({e}); "
            "pass save_tokenizer=<callable(name, folder)>"
        ) from None
    return save_paper_tokenizer


def _write_weights(config: dict[str, Any], folder: Path, seed: int, note: dict[str, Any]) -> None:
    """A seeded float32 random init of ``config`` saved as safetensors, under the published config.json (kept as
    published, not as this transformers would rewrite it) with ``torch_dtype`` float32, the dtype stored."""
    import torch
    from transformers import AutoModelForCausalLM, modeling_utils

    from harness.model.cache import no_progress_bars
    from harness.model.weights import dtype_kwarg

    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(_hf_config(config), **{dtype_kwarg(): torch.float32})
    save = modeling_utils.safe_save_file

    def marked(tensors, filename, metadata=None):  # the mark goes into each file as it is written
        return save(tensors, filename, metadata={**(metadata or {}), REHEARSAL_KEY: json.dumps(note)})

    with no_progress_bars(), mock.patch.object(modeling_utils, "safe_save_file", marked):
        model.save_pretrained(folder)
    del model
    for weights in folder.glob("*.safetensors"):  # recognisable from its weights, wherever they are copied
        if not _marked(weights):  # a transformers that writes its files otherwise: the header is rewritten
            mark_weights(weights, note)
        os.chmod(weights, 0o644)  # readable by the other users of a shared $ABSPOS_MODELS_DIR, like the folder
    (folder / "config.json").write_text(json.dumps({**config, "torch_dtype": "float32"}, indent=2) + "\n")


def _hf_config(config: dict[str, Any]):
    from transformers import AutoConfig

    fields = copy.deepcopy(
        {k: v for k, v in config.items() if k not in ("architectures", "model_type")}
    )  # transformers
    # 5 folds rope_theta into the rope_scaling dict it is given (as rope_parameters): the published one stays as it is
    return AutoConfig.for_model(config["model_type"], architectures=config["architectures"], **fields)


def weights_bytes(name: str, size: str) -> int:
    """The float32 bytes of a build's weights (its parameters counted on the meta device: nothing is allocated)."""
    import torch
    from transformers import AutoModelForCausalLM

    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(_hf_config(rehearsal_config(name, size)))
    return 4 * sum(p.numel() for p in model.parameters())


def _memory_available() -> int | None:
    """MemAvailable of /proc/meminfo in bytes (Linux), else None (not checked)."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def rehearsal_available(spec: ModelSpec) -> None:
    """WeightsUnavailable (one line naming the rehearsal) when a registered rehearsal can be neither loaded nor built
    here: its paper model's tokenizer files or packages are missing or altered, or (not built yet) the disk or memory
    its build needs is not free."""
    from harness.model.tokenizers import check_packages

    try:
        check_packages(spec.rehearses)
    except WeightsUnavailable as e:
        raise WeightsUnavailable(f"{spec.name} (built with {e})") from None
    why = build_problem(spec)
    if why:
        raise WeightsUnavailable(why)


def build_problem(spec: ModelSpec) -> str | None:
    """Why a registered rehearsal that is not built yet cannot be built here (None if it can, or is built): its
    float32 weights need that much free disk under ``rehearsals_root()`` and free memory while they are written
    (and again when loaded); checked before anything is allocated, one line."""
    name, size = spec.rehearses, spec.rehearsal_size
    folder = paper_layout(name, build_root(spec))
    if name is None or _complete(folder, name, size):
        return None
    need = weights_bytes(name, size)
    where = folder
    while not where.exists() and where != where.parent:
        where = where.parent
    free = shutil.disk_usage(where).free
    gb = lambda n: f"{n / 1e9:.1f} GB"
    if free < need * 1.05:
        return (
            f"{spec.name}: its build writes {gb(need)} of float32 weights under {build_root(spec)}, where {gb(free)} "
            f"is free: free space there or set ABSPOS_CACHE to a larger disk"
        )
    memory = _memory_available()
    if memory is not None and memory < need * 1.2:
        return (
            f"{spec.name}: its build holds {gb(need)} of float32 weights in memory (then loads them again to measure), "
            f"and {gb(memory)} is available here: run it on a machine with more memory"
        )
    return None


def mark_weights(path: Path, note: dict[str, Any]) -> None:
    """Add ``abspos_rehearsal`` (``note`` as JSON) to a safetensors file's header metadata: the header is rewritten
    and the tensor data copied after it unchanged (its offsets are relative to the data), into a file renamed over
    the original, so a copy of the weights alone still says they are random (harness.model.checkpoint_checks)."""
    with open(path, "rb") as src:
        n = int.from_bytes(src.read(8), "little")
        header = json.loads(src.read(n))
        header["__metadata__"] = {**(header.get("__metadata__") or {}), REHEARSAL_KEY: json.dumps(note)}
        text = json.dumps(header, separators=(",", ":")).encode()
        text += b" " * (-len(text) % 8)  # the data stays 8-byte aligned, as safetensors writes it
        tmp = path.with_name(f".{path.name}.marking")
        with open(tmp, "wb") as dst:
            dst.write(len(text).to_bytes(8, "little"))
            dst.write(text)
            shutil.copyfileobj(src, dst, 1 << 24)
    os.chmod(tmp, 0o644)  # readable by the other users of a shared $ABSPOS_MODELS_DIR, like the folder
    os.replace(tmp, path)


def build_rehearsal(
    name: str,
    size: str,
    folder: Path | str,
    seed: int = 0,
    save_tokenizer: SaveTokenizer | None = None,
) -> Path:
    """Write paper model ``name`` at ``size`` into ``folder`` (see ``paper_layout``): config.json, model.safetensors
    of a seeded float32 random init (transformers' ``AutoModelForCausalLM.from_config``), the tokenizer files
    (``save_tokenizer(name, folder)``, by default the project's ``save_paper_tokenizer``) and ``REHEARSAL.json``.
    Built in a temporary folder beside ``folder`` and renamed into place; an existing ``folder`` is never replaced
    (it may hold real weights): FileExistsError, one line."""
    folder = Path(folder)
    config = rehearsal_config(name, size)
    if folder.exists():
        raise FileExistsError(f"{folder} exists; a rehearsal build never replaces a folder (remove it first)")
    writer = save_tokenizer or default_save_tokenizer()
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=folder.parent, prefix=f".{folder.name}.partial-"))
    try:
        note = {"model": name, "hub_id": get_spec(name).hub_id, "size": size, "seed": seed, "weights": "random"}
        _write_weights(config, tmp, seed, note)
        writer(name, tmp)
        (tmp / MARKER).write_text(json.dumps(note, indent=2) + "\n")
        os.chmod(tmp, 0o755)  # mkdtemp's 0o700 would keep the folder from other users sharing $ABSPOS_MODELS_DIR
        tmp.rename(folder)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return folder


# ---- the ``rehearsal`` group: the claims on every paper architecture, without its weights -----------------------

GROUP, SUFFIX, SEED = "rehearsal", "-rehearsal", 0
#: the full-size builds (``<name>-full-rehearsal``): the published config exactly, named one at a time (an 8B float32
#: build is ~32 GB), never by ``--models rehearsal``; the nightly dress rehearsal (benchmarks/bench_dress_rehearsal.py)
FULL_GROUP, FULL_SUFFIX = "dress", "-full-rehearsal"


def register_rehearsals() -> list[str]:
    """Register the ``rehearsal`` group (``--models rehearsal``; idempotent): per paper model, ``<name>-rehearsal``,
    its ``rehearsal_spec`` (so BOS policy, family, RoPE and window, hence every claim's applicability, are the paper
    model's) marked ``rehearses=<name>``, found under ``rehearsals_root()`` as a paper model under
    ``$ABSPOS_MODELS_DIR`` (``weights.paper_folder``) and built there on first use (``ensure_built``). Also registers
    each full-size build, ``<name>-full-rehearsal`` (group ``dress``, under ``rehearsals_root()/full``), which
    a run selects only by name. Returns the ``rehearsal`` group's names."""
    out = []
    for paper in PAPER:
        for size, suffix, group in (("rehearsal", SUFFIX, GROUP), ("full", FULL_SUFFIX, FULL_GROUP)):
            spec = rehearsal_spec(paper.name, size)
            what = "rehearsal" if size == "rehearsal" else "full-size rehearsal"
            source = f"{what} build of {paper.hub_id} (random weights, seed {SEED})"
            named = dataclasses.replace(
                spec, name=paper.name + suffix, group=group, source=source, rehearses=paper.name
            )
            register_model(named)
            if size == "rehearsal":
                out.append(named.name)
    return out


def build_root(spec: ModelSpec) -> Path:
    """Where a registered rehearsal's build lives, laid out as ``$ABSPOS_MODELS_DIR``: ``rehearsals_root()``, and its
    ``full`` subfolder for the full-size builds (a full and a narrow build of one model never share a folder)."""
    root = rehearsals_root()
    return root / "full" if spec.rehearsal_size == "full" else root


def is_built(spec: ModelSpec) -> bool:
    """Whether a registered rehearsal's build is in place (``ensure_built`` would load it, not build it)."""
    return _complete(paper_layout(spec.rehearses, build_root(spec)), spec.rehearses, spec.rehearsal_size)


def _complete(folder: Path, name: str, size: str = "rehearsal") -> bool:
    """``folder`` holds the build ``ensure_built`` would write: its config and marker, and a weights file."""
    try:
        config = json.loads((folder / "config.json").read_text())
        note = json.loads((folder / MARKER).read_text())
    except (OSError, ValueError):
        return False
    want = {**rehearsal_config(name, size), "torch_dtype": "float32"}
    weights = sorted(folder.glob("*.safetensors"))
    return (
        config == want
        and (note.get("size"), note.get("seed")) == (size, SEED)
        and bool(weights)
        and all(_marked(w) for w in weights)  # a build from before weights were marked is built again
    )


def _marked(path: Path) -> bool:
    try:
        from safetensors import safe_open

        with safe_open(str(path), framework="pt") as f:
            return REHEARSAL_KEY in (f.metadata() or {})
    except Exception:
        return False


def ensure_built(spec: ModelSpec, log=print) -> Path:
    """The folder of a registered rehearsal (``spec.rehearses``), built once per cache: seeded, so every build is the
    same model. A build of another config (an older ``rehearsal_config``) left there is moved aside and removed
    first; a build that loses the race to another process's uses that one (``build_rehearsal`` renames a complete
    folder into place, never replaces one)."""
    name = spec.rehearses
    if name is None:
        raise ValueError(f"{spec.name} is not a registered rehearsal (register_rehearsals)")
    size = spec.rehearsal_size
    folder = paper_layout(name, build_root(spec))
    if _complete(folder, name, size):
        return folder
    if (folder / MARKER).is_file():  # our own stale build (another config): never a folder without the marker
        stale = Path(tempfile.mkdtemp(dir=folder.parent, prefix=f".{folder.name}.stale-"))
        with contextlib.suppress(OSError):
            folder.rename(stale / folder.name)
        shutil.rmtree(stale, ignore_errors=True)
    why = build_problem(spec)  # its disk and memory, before anything is allocated
    if why:
        raise WeightsUnavailable(why)
    log(f"[abspos] building {spec.name} (random weights, seed {SEED}) in {folder}")
    try:
        build_rehearsal(name, size, folder, seed=SEED)
    except WeightsUnavailable as e:  # its paper model's tokenizer files: said as this rehearsal's
        raise WeightsUnavailable(f"{spec.name} (built with {e})") from None
    except OSError:  # FileExistsError, or the rename's ENOTEMPTY: another process built it first
        if not _complete(folder, name, size):
            raise
    return folder
