"""What a model folder must hold to be measured: weights that are finite and trained, and the tokenizer its spec names.

A config.json says which shape a checkpoint has, not whether its weights are the model: random weights written under
a published config (a rehearsal build that lost its marker, ``from_config(...).save_pretrained``), a file with a NaN,
or one of zeros load cleanly and then give verdicts. ``check_weights`` reads every tensor of a folder once and refuses,
in one line naming what differs:

- any value that is not finite (NaN or inf), and any matrix of zeros: a damaged file;
- the marks of a fresh initialisation, which a trained checkpoint never has (only for models that claim to be trained,
  every spec but a rehearsal's): every norm weight constant (transformers initialises RMSNorm scales to one value,
  1, or 0 where the scale is 1 + w), or every weight matrix with the standard deviation the config's
  ``initializer_range`` draws (0.02); a trained model's norms vary and its matrices' spreads differ by layer and role;
- ``abspos_rehearsal`` in a safetensors header: written into every rehearsal build's weights
  (harness.model.rehearsal), so a build is recognised from its weights, not only from ``REHEARSAL.json``.

The scan's per-tensor summary is cached under ``$ABSPOS_CACHE/weight-checks``, keyed by each weights file's name,
size, mtime, device and inode numbers, change time (which no ``touch`` sets back) and a sha256 of its first and last
MiB: an edit, a copy or a swapped file changes the key, and the file is read again (a folder of links to the same
files shares the record: they are the same bytes). A record
of another layout (damaged, hand-edited) is read again too, never trusted: every field a reader uses is checked when
the record is loaded. What the summary is judged against comes from the spec each time.

What no statistic of the weights can show (an initialisation other than transformers' own: any other spread, norms
drawn at random, scaled copies) their behaviour does: trained weights predict text far better than chance.
``check_trained_model`` holds every model but a rehearsal to ``harness.model.next_token_loss``'s bound, once per
weights (the figure is kept in the scan's record, valid for the same key and the same config and tokenizer files);
``check_weights`` refuses a folder whose kept figure is above the bound without loading anything.

The tokenizer beside the weights is checked by ``harness.model.tokenizer_checks``.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from harness.files.atomic import write_text
from harness.model import next_token_loss
from harness.model.cache import cache_root
from harness.spec.models import ModelSpec, WrongWeights
from harness.spec.paper_configs import PUBLISHED

FORMAT = 2  # the record's layout and key: bump to scan every folder again
WEIGHT_GLOBS = ("*.safetensors", "pytorch_model*.bin")
REHEARSAL_KEY = "abspos_rehearsal"  # the safetensors metadata key every rehearsal build's weights carry
#: a matrix's standard deviation within this fraction of ``initializer_range`` reads as drawn by the initialiser
INIT_STD_TOLERANCE = 0.05
#: matrices whose spread says nothing of training: the embedding and the output head (often tied to it)
MATRIX_EXEMPT = ("embed", "lm_head", "wte", "output.weight")
EDGE = 1 << 20  # bytes hashed at each end of a weights file for the record's key


def weight_files(folder: Path) -> list[Path]:
    return sorted(p for g in WEIGHT_GLOBS for p in Path(folder).glob(g) if p.is_file())


# ---- the scan ---------------------------------------------------------------------------------------------------


def _tensors(path: Path) -> Iterator[tuple[str, Any]]:
    """(name, tensor) of one weights file, one tensor at a time; nothing in it is executed (safetensors, or a
    ``.bin`` read with ``weights_only``)."""
    import torch

    if path.suffix == ".safetensors":
        from safetensors import safe_open

        with safe_open(str(path), framework="pt") as f:
            for name in f.keys():
                yield name, f.get_tensor(name)
    else:
        state = torch.load(path, map_location="cpu", weights_only=True, mmap=True)
        yield from state.items()


def _summary(name: str, t) -> dict[str, Any]:
    """{"ndim", "n", "nonfinite", "zero", "constant", "value", "std"} of one tensor: its extremes (a NaN or an inf
    shows in them), and a matrix's standard deviation (the embedding's and the output head's aside: the
    initialisation marks are read from the layers)."""
    import torch

    if t.numel() == 0:
        return {"ndim": t.dim(), "n": 0, "nonfinite": 0, "zero": False, "constant": False, "value": None, "std": 0.0}
    lo, hi = (float(v) for v in torch.aminmax(t if t.is_floating_point() else t.double()))
    finite = math.isfinite(lo) and math.isfinite(hi)
    bad = 0 if finite else int((~torch.isfinite(t)).sum())
    std = 0.0
    if finite and t.dim() == 2 and not any(k in name for k in MATRIX_EXEMPT):
        std = float(t.float().std()) if t.numel() > 1 else 0.0
    return {
        "ndim": t.dim(),
        "n": t.numel(),
        "nonfinite": bad,
        "zero": finite and lo == hi == 0.0,
        "constant": finite and t.numel() > 1 and lo == hi,
        "value": lo if finite and lo == hi else None,
        "std": std,
    }


def _marks(path: Path) -> dict[str, str]:
    """The string metadata of a safetensors file's header (empty for other files)."""
    if path.suffix != ".safetensors":
        return {}
    from safetensors import safe_open

    with safe_open(str(path), framework="pt") as f:
        return dict(f.metadata() or {})


def _edges(path: Path, size: int) -> str:
    """sha256 of a file's first and last ``EDGE`` bytes (a safetensors header and the last tensors' values)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        h.update(f.read(EDGE))
        f.seek(max(0, size - EDGE))
        h.update(f.read(EDGE))
    return h.hexdigest()


def _key(folder: Path) -> dict[str, Any]:
    """What a record is valid for: each weights file's bytes, as far as a stat and its two ends tell (an edit or a
    swap changes the change time, a copy the inode, and ``touch -r`` sets back only the mtime)."""
    files = {}
    for p in weight_files(folder):
        st = p.stat()
        files[p.name] = [st.st_size, st.st_mtime_ns, st.st_dev, st.st_ino, st.st_ctime_ns, _edges(p, st.st_size)]
    return {"format": FORMAT, "files": files}


SUMMARY = {"ndim": int, "n": int, "nonfinite": int, "zero": bool, "constant": bool, "std": float}


def _is(value: Any, kind: type) -> bool:
    """``value`` is a ``kind`` as JSON gives it (an int for a float; never a bool for a number)."""
    if kind is bool:
        return isinstance(value, bool)
    return isinstance(value, (int, float) if kind is float else kind) and not isinstance(value, bool)


def _valid(record: Any, key: dict[str, Any]) -> bool:
    """Whether a loaded record is one this module wrote for ``key``: every field a reader uses, of its type."""
    if not (isinstance(record, dict) and record.get("key") == key):
        return False
    tensors, marks = record.get("tensors"), record.get("marks")
    if not (isinstance(tensors, dict) and isinstance(marks, dict) and set(marks) == set(key["files"])):
        return False
    for summary in tensors.values():
        if not (isinstance(summary, dict) and all(_is(summary.get(k), t) for k, t in SUMMARY.items())):
            return False
        if summary.get("value") is not None and not _is(summary["value"], float):
            return False
    if not all(isinstance(m, dict) and all(isinstance(v, str) for v in m.values()) for m in marks.values()):
        return False
    digests = record.get("sha256", {})
    if not (isinstance(digests, dict) and set(digests) <= set(key["files"])):
        return False
    if not all(isinstance(d, str) and len(d) == 64 for d in digests.values()):
        return False
    figures = record.get("next_token_loss", {})
    return isinstance(figures, dict) and all(next_token_loss.valid(f) and f["inputs"] == k for k, f in figures.items())


def _record_path(key: dict[str, Any]) -> Path:
    """A record's file, named by its key: the same weights files (a folder of links to them included) share one."""
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:24]
    return cache_root() / "weight-checks" / f"{digest}.json"


def scan(folder: Path, log=print, what: str = "") -> dict[str, Any]:
    """{"tensors": {name: summary}, "marks": {file: metadata}} of every weights file in ``folder``: from the cache when
    its record is valid for the same bytes (``_key``, ``_valid``), else read now (said in one line) and cached."""
    folder = Path(folder)
    key = _key(folder)
    record = _record_path(key)
    try:
        cached = json.loads(record.read_text())
        if _valid(cached, key):
            return cached
    except (OSError, ValueError, RecursionError):
        pass
    size = sum(v[0] for v in key["files"].values())
    if size > 1 << 28:
        log(f"[abspos] checking {what or folder.name}'s weights once ({size / 1e9:.1f} GB in {folder}) ...")
    tensors, marks = {}, {}
    for path in weight_files(folder):
        marks[path.name] = _marks(path)
        for name, tensor in _tensors(path):
            tensors[name] = _summary(name, tensor)
    out = {"key": key, "tensors": tensors, "marks": marks}
    _store(out)
    return out


# ---- judging it -------------------------------------------------------------------------------------------------


def weights_problem(found: dict[str, Any], config: dict[str, Any], trained: bool) -> str | None:
    """Why a folder's scanned weights are not measurable (None when they are), as a phrase after "<folder> holds".
    ``trained``: also refuse the marks of a rehearsal build and of a fresh initialisation."""
    tensors = found["tensors"]
    if not tensors:
        return "no tensors"
    bad = {k: v["nonfinite"] for k, v in tensors.items() if v["nonfinite"]}
    if bad:
        first = next(iter(bad))
        return (
            f"weights that are not finite ({sum(bad.values())} NaN or inf values in {len(bad)} tensor(s), first "
            f"{first})"
        )
    zero = [k for k, v in tensors.items() if v["zero"] and v["ndim"] >= 2]
    if zero:
        return f"weight matrices of zeros ({len(zero)} of {sum(v['ndim'] >= 2 for v in tensors.values())}, first {zero[0]})"
    if not trained:
        return None
    marked = next((f for f, m in found["marks"].items() if REHEARSAL_KEY in m), None)
    if marked:
        try:
            note = json.loads(found["marks"][marked][REHEARSAL_KEY])
            what = f"a {'full-size' if note['size'] == 'full' else 'narrow'} rehearsal build of {note['model']}"
        except (ValueError, TypeError, KeyError):
            what = "a rehearsal build"
        return f"{what} (random weights: {marked} is marked {REHEARSAL_KEY})"
    norms = {k: v for k, v in tensors.items() if v["ndim"] == 1 and "norm" in k.lower() and k.endswith("weight")}
    if norms and all(v["constant"] for v in norms.values()):
        values = sorted({v["value"] for v in norms.values()})
        return (
            f"untrained weights: every norm weight is constant ({len(norms)} norms, "
            f"{'value ' + ', '.join(f'{x:g}' for x in values[:3])}), as initialised, never as trained"
        )
    init = float(config.get("initializer_range") or 0.02)
    matrices = [v["std"] for k, v in tensors.items() if v["ndim"] == 2 and not any(x in k for x in MATRIX_EXEMPT)]
    if matrices and all(abs(s - init) <= INIT_STD_TOLERANCE * init for s in matrices):
        return (
            f"untrained weights: every one of its {len(matrices)} weight matrices has standard deviation "
            f"{init:g} ± {INIT_STD_TOLERANCE:.0%} (the config's initializer_range), as initialised, never as trained"
        )
    return None


def check_weights(spec: ModelSpec, folder: Path | str, log=print) -> None:
    """WrongWeights (one line) unless ``folder``'s weights are finite, hold no matrix of zeros and, for any spec but a
    rehearsal's, carry none of the marks of a rehearsal build or a fresh initialisation (see the module)."""
    folder = Path(folder)
    try:
        config = json.loads((folder / "config.json").read_text())
    except (OSError, ValueError):
        config = {}
    config = config.get("text_config", config) if isinstance(config, dict) else {}
    try:
        found = scan(folder, log, spec.name)
    except Exception as e:  # a truncated or foreign file (safetensors' own error type included)
        first = (str(e).strip().splitlines() or [""])[0]
        raise WrongWeights(
            f"{spec.name}: the weights in {folder} cannot be read ({type(e).__name__}: {first})"
        ) from None
    published = PUBLISHED.get(spec.name, {}).get("weights_sha256") if not spec.rehearsal else None
    if published:  # the published files' hashes are recorded: they decide (the properties below are a fallback)
        why = hashes_problem(file_hashes(folder, found, log, spec.name), published)
        if why:
            raise WrongWeights(f"{spec.name}: {folder} holds {why}; refusing to measure it")
        return
    why = weights_problem(found, config, trained=not spec.rehearsal)
    if not why and not spec.rehearsal and (figure := kept_loss(folder, found)) is not None:
        why = next_token_loss.problem(figure)  # measured before: judged without loading anything
    if why:
        raise WrongWeights(f"{spec.name}: {folder} holds {why}; refusing to measure it")


def kept_loss(folder: Path, found: dict[str, Any]) -> dict[str, Any] | None:
    """The next-token loss kept in ``folder``'s scan record, if measured with its config and tokenizer files as they
    are now (None otherwise: measured again)."""
    return found.get("next_token_loss", {}).get(next_token_loss.inputs_digest(folder))


def loss_is_kept(spec: ModelSpec, folder: Path | str) -> bool:
    """Whether the weights in ``folder`` have their next-token loss kept (then ``check_weights`` judged it)."""
    try:
        return kept_loss(Path(folder), scan(Path(folder), lambda *a: None, spec.name)) is not None
    except Exception:  # unreadable weights: check_weights says why
        return False


def check_trained_model(spec: ModelSpec, folder: Path | str, model, tok, log=print) -> None:
    """WrongWeights (one line naming the figure) unless the loaded ``model`` predicts the corpus slice far better than
    chance (``harness.model.next_token_loss``): measured once per weights, on the model's device, and kept in the
    folder's scan record; a rehearsal's random weights, and published hashes that matched, are not judged."""
    if spec.rehearsal or PUBLISHED.get(spec.name, {}).get("weights_sha256"):
        return
    folder = Path(folder)
    found = scan(folder, log, spec.name)
    figure = kept_loss(folder, found)
    if figure is None:
        figure = next_token_loss.measure(model, tok, folder)
        log(f"[abspos] {spec.name}: next-token loss {figure['loss']:.2f} nats on {next_token_loss.SLICE}, once")
        if next_token_loss.valid(figure):  # a loss that is not finite is not kept: another dtype may give one
            kept = dict(list(found.get("next_token_loss", {}).items())[-7:])  # a few configs of the same weights
            _store({**found, "next_token_loss": {**kept, figure["inputs"]: figure}})
    why = next_token_loss.problem(figure)
    if why:
        raise WrongWeights(f"{spec.name}: {folder} holds {why}; refusing to measure it")


def _store(record: dict[str, Any]) -> None:
    try:
        path = _record_path(record["key"])
        path.parent.mkdir(parents=True, exist_ok=True)
        write_text(path, json.dumps(record))
    except OSError:
        pass  # an unwritable cache: checked again next time, never skipped


def file_hashes(folder: Path, found: dict[str, Any], log=print, what: str = "") -> dict[str, str]:
    """{file name: sha256} of the folder's weight files, read once and kept in its scan record (same key)."""
    if "sha256" not in found:
        log(f"[abspos] hashing {what or folder.name}'s weight files once ...")
        digests = {}
        for path in weight_files(folder):
            h = hashlib.sha256()
            with open(path, "rb") as f:
                for block in iter(lambda: f.read(1 << 24), b""):
                    h.update(block)
            digests[path.name] = h.hexdigest()
        found["sha256"] = digests
        if "key" in found:  # a scan's record (not a bare dict of a caller's)
            _store(found)
    return found["sha256"]


def hashes_problem(hashes: dict[str, str], published: dict[str, str]) -> str | None:
    """Why weight files with these hashes are not the published ones (None when they are), after "<folder> holds"."""
    if set(hashes) != set(published):
        missing, extra = sorted(set(published) - set(hashes)), sorted(set(hashes) - set(published))
        return (
            f"other weight files than the published checkpoint's (missing {', '.join(missing) or 'none'}; "
            f"not published {', '.join(extra) or 'none'})"
        )
    for name, digest in sorted(hashes.items()):
        if digest != published[name]:
            return (
                f"weights that are not the published checkpoint ({name}: sha256 {digest[:12]}…, published "
                f"{published[name][:12]}…)"
            )
    return None


def check_finite(spec: ModelSpec, model, folder: Path) -> None:
    """WrongWeights (one line) when a loaded parameter is not finite: a NaN or inf is refused at load, never turned
    into a verdict (the folder's own check reads the files; this reads what was loaded, in the run's dtype)."""
    import torch

    for name, p in model.named_parameters():  # a NaN or an inf shows in a tensor's extremes (one fast pass)
        if p.is_floating_point() and p.numel() and not all(map(math.isfinite, torch.aminmax(p.detach()))):
            raise WrongWeights(
                f"{spec.name}: {folder} holds weights that are not finite once loaded ({name}); refusing to measure it"
            )
