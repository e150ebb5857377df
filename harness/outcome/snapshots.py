"""Regression protection on every run: committed snapshots and recorded baselines, with declared tolerances.

Snapshots are JSON (a syrupy extension); floats match when |a - b| <= atol + rtol * |b|. The tolerance is
written into every snapshot (key ``_tolerance``), so a diff shows the numbers that moved and the bound they
broke. The bundled models at the default settings compare with the committed snapshots (claims/__snapshots__);
any other settings, device or dtype, and the paper's models, with a baseline recorded by their first run under
the same settings, device kind and dtype (``Baselines``), at that numerics' declared tolerance (``tolerance``).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import math
from pathlib import Path
from typing import Any, cast

from syrupy.extensions.json import JSONSnapshotExtension

from harness.files.atomic import JSONFileError, read_json, write_text
from harness.spec.claims import figure_resolutions

RTOL = 1e-3  # CPU fp32 reruns agree far tighter; this flags real drift from a transformers/torch/harness change
ATOL = 1e-6


def close(a, b, rtol: float = RTOL, atol: float = ATOL) -> bool:
    """Recursive tolerant equality of JSON-like data (NaN equals NaN)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(close(a[k], b[k], rtol, atol) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(close(x, y, rtol, atol) for x, y in zip(a, b))
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return abs(a - b) <= atol + rtol * abs(b)
    return a == b


def leaves(v, path: str = ""):
    """("[i]" / ".key" path, value) of every scalar in JSON-like data."""
    if isinstance(v, list):
        for i, x in enumerate(v):
            yield from leaves(x, f"{path}[{i}]")
    elif isinstance(v, dict):
        for k, x in v.items():
            yield from leaves(x, f"{path}.{k}")
    else:
        yield path, v


def _change(a, b) -> str:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool) and a:
        return f"{a:.6g} -> {b:.6g} ({(b - a) / abs(a):+.2%})"
    return f"{a!r} -> {b!r}"


def figure_atol(name: str, atol: float) -> float:
    """A figure's absolute tolerance: the declared one, plus two of its steps where it is discrete (a p-value)."""
    return atol + 2 * figure_resolutions().get(name, 0.0)


def figures_close(new: dict, old: dict, rtol: float = RTOL, atol: float = ATOL) -> bool:
    """Two {figure: value} records equal at the tolerance, each figure at its own (``figure_atol``)."""
    return new.keys() == old.keys() and all(
        close(new[k], old[k], rtol, figure_atol(k, atol) if not k.startswith("_") else atol) for k in new
    )


def moved_figures(values: dict, stored: dict, rtol: float = RTOL, atol: float = ATOL) -> list[str]:
    """One phrase per figure beyond tolerance ("name: old -> new (+x%)"; for an array, how many elements moved and
    the one that moved most), and per figure measured only now or only before."""
    out = []
    base_atol = atol
    for name in dict.fromkeys([*stored, *values]):
        if name not in values or name not in stored:
            out.append(f"{name}: " + ("no longer measured" if name not in values else "new figure"))
            continue
        new, old = json.loads(json.dumps(values[name])), stored[name]
        atol = figure_atol(name, base_atol)
        if close(new, old, rtol, atol):
            continue
        la, lb = dict(leaves(old)), dict(leaves(new))
        if list(la) == [""] and list(lb) == [""]:
            out.append(f"{name}: {_change(old, new)}")
            continue
        bad = [
            k for k in dict.fromkeys([*la, *lb]) if k not in la or k not in lb or not close(lb[k], la[k], rtol, atol)
        ]

        def size(k):
            a, b = la.get(k), lb.get(k)
            num = all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in (a, b))
            return abs(b - a) / (abs(a) or 1) if num and not (math.isnan(a) or math.isnan(b)) else math.inf

        worst = max(bad, key=size)
        out.append(
            f"{name}: {len(bad)} of {max(len(la), len(lb))} elements moved, most {name}{worst}: "
            f"{_change(la.get(worst), lb.get(worst))}"
        )
    return out


class TolerantJSONSnapshot(JSONSnapshotExtension):
    def serialize(self, data, **kwargs):
        return super().serialize({"_tolerance": {"rtol": RTOL, "atol": ATOL}, **data}, **kwargs)

    def matches(self, *, serialized_data, snapshot_data) -> bool:
        try:
            new, old = json.loads(serialized_data), json.loads(snapshot_data)
            return figures_close(new, old) if isinstance(new, dict) and isinstance(old, dict) else close(new, old)
        except (TypeError, ValueError):
            return serialized_data == snapshot_data


# ---- tolerance per device and dtype ----------------------------------------------------------------
#: Declared tolerances (rtol, atol) for comparing a run with figures recorded under the same settings, device
#: kind and dtype: float32 on the CPU ("same": reruns agree to ~1e-6; RTOL flags real drift); float32 on a GPU
#: ("device": kernels may pick other reduction orders between runs and versions); half precision (bf16/fp16
#: weights, "half"). Declared, not fitted to a run: a drift beyond them is reported, never absorbed.
TOLERANCE = {"same": (RTOL, ATOL), "device": (1e-2, 1e-5), "half": (1e-1, 1e-3)}  # keys: see ``tolerance``


def tolerance(device: str, dtype: str) -> tuple:
    """(rtol, atol) for comparing a run on (device, dtype) with figures recorded under the same numerics."""
    if dtype in ("float16", "bfloat16"):
        return TOLERANCE["half"]
    return TOLERANCE["same" if device.split(":")[0] == "cpu" else "device"]


# ---- baselines for settings without a committed snapshot -------------------------------------------
class Baselines:
    """The figures of the first run at a model's settings, one JSON file per (model, settings key) under
    ``root``: every later run at those settings compares with them at the declared tolerance. Committed
    snapshots (syrupy) cover the bundled models at the default settings; these cover everything else (other
    lengths, prompts, seeds, and the paper's models once they have run somewhere)."""

    def __init__(self, root: Path, key: dict, device: str, dtype: str):
        self.root, self.device, self.dtype = Path(root), device, dtype
        self.key = {**key, "device": device.split(":")[0], "dtype": dtype}  # each numerics its own baseline

    def path(self, model: str) -> Path:
        """root/<model>/<settings digest>.json; a model given by reference is keyed by its weights too
        (``weights.identity``): a re-trained folder or a replaced GGUF under the same name records afresh."""
        from harness.spec.models import REGISTRY

        digest = hashlib.sha1(json.dumps(self.key, sort_keys=True).encode()).hexdigest()[:12]
        spec = REGISTRY.get(model)
        if spec is not None and spec.group == "local":
            from harness.model.weights import identity

            model = f"{model}-{identity(spec)}"
        return self.root / model / f"{digest}.json"

    def check(self, model: str, test: str, values: dict, update: bool = False) -> tuple[str, Path, list[str]]:
        """("recorded" | "re-recorded" | "matched" | "drifted", the file, the figures that moved beyond
        tolerance); ``update`` re-records the test's figures. The file is rewritten atomically (harness.files.atomic); a
        damaged one raises ``BaselineError`` (one line naming it) and is never overwritten."""
        path = self.path(model)
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path.with_suffix(".lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # xdist workers may share a model's file
            data: dict[str, Any] = (
                load_baseline(path)
                if path.exists()
                else {"settings": self.key, "device": self.device, "dtype": self.dtype, "tests": {}}
            )
            if test not in data["tests"] or update:
                status = "re-recorded" if test in data["tests"] else "recorded"
                data["tests"][test] = values
                write_text(path, json.dumps(data, indent=1, sort_keys=True, allow_nan=True) + "\n")
                return status, path, []
        moved = moved_figures(values, data["tests"][test], *tolerance(self.device, self.dtype))
        return ("drifted" if moved else "matched"), path, moved

    def problems(self, models) -> list[str]:
        """One line per baseline file this run would read for ``models`` that is damaged (checked at configure
        time, before anything is measured)."""
        out = []
        for m in models:
            try:
                path = self.path(m)
                if path.exists() or path.is_symlink():
                    load_baseline(path)
            except BaselineError as e:
                out.append(f"--baseline-dir: {e}")
            except OSError as e:
                out.append(
                    f"--baseline-dir: {getattr(e, 'filename', None) or self.root}: cannot read it ({e.strerror or e})"
                )
        return out


class BaselineError(JSONFileError):
    """A baseline file that cannot be used; the message is one line naming the file and what is wrong."""

    #: Any damage, a dangling link in its place included, is mended the same way: record the baseline afresh.
    PHRASES = {
        **JSONFileError.PHRASES,
        "missing": JSONFileError.PHRASES["unreadable"],
        "undecodable": JSONFileError.PHRASES["unreadable"],
        "empty": JSONFileError.PHRASES["invalid"],
    }
    ADVICE = "delete it to record the baseline afresh"
    ADVISED = frozenset({"missing", "unreadable", "undecodable", "empty", "invalid"})


def load_baseline(path: Path) -> dict[str, Any]:
    """A baseline file, checked: an object whose "tests" maps each test to an object of its figures."""
    path = Path(path)
    data = read_json(path, "baseline", BaselineError)
    problem = (
        "not a JSON object"
        if not isinstance(data, dict)
        else 'no "tests" object'
        if not isinstance(data.get("tests"), dict)
        else next(
            (
                f"the entry for {t} is not an object of figures"
                for t, v in data["tests"].items()
                if not isinstance(v, dict)
            ),
            None,
        )
    )
    if problem:
        raise BaselineError(f"{path}: not a baseline file ({problem}); {BaselineError.ADVICE}")
    return cast(dict[str, Any], data)
