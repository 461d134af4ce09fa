#!/usr/bin/env bash
# scripts/setup.sh - create or refresh the development environment of llmfleet.vllm.
# Idempotent: `make setup` runs it before every target and it is a no-op (well under
# a second) when nothing changed.
#
#   .venv/          Python venv with requirements-dev.txt (Python >= 3.12) or
#                   requirements-dev-py311.txt (fallback when only Python 3.11 exists).
#                   Re-created when the stamp (python version + path, requirements
#                   file name + sha256) changes.
#   .collections/   ANSIBLE_COLLECTIONS_PATH: community.docker and ansible.posix,
#                   unpacked from the `ansible` community wheel on PyPI (Galaxy is
#                   unreachable), plus ansible_collections/llmfleet/vllm -> ../../..
#                   (relative symlink to this checkout) so the collection is importable
#                   as ansible_collections.llmfleet.vllm.*.
#   .work/          logs, caches, HOME for ansible tools (see Makefile).
#
# Knobs: LLMFLEET_PYTHON=/path/to/python3 picks the interpreter (>= 3.12 uses
# requirements-dev.txt, 3.11 the fallback). FORCE=1 rebuilds .venv and .collections.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VENV=$ROOT/.venv
COLL=$ROOT/.collections
WORK=$ROOT/.work
LOGS=$WORK/logs
STAMP_SCHEMA=1                       # bump to force every checkout to rebuild .venv

die() { echo "setup: ERROR: $*" >&2; exit 1; }
say() { echo "setup: $*"; }

mkdir -p "$LOGS" "$WORK/home" "$WORK/tmp"
# Two make targets started at once must not build the same venv twice.
exec 9>"$WORK/setup.lock"
flock 9

# ---------------------------------------------------------------- interpreter
pyver() { "$1" -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])' 2>/dev/null; }
at_least() { "$1" -c "import sys; sys.exit(sys.version_info[:2] < ($2))" 2>/dev/null; }

candidates=()
[ -n "${LLMFLEET_PYTHON:-}" ] && candidates+=("$LLMFLEET_PYTHON")
if command -v pyenv >/dev/null 2>&1; then
  candidates+=("$(pyenv root 2>/dev/null)/versions/3.12.1/bin/python3")
fi
[ -n "${PYENV_ROOT:-}" ] && candidates+=("$PYENV_ROOT/versions/3.12.1/bin/python3")
candidates+=(/root/.pyenv/versions/3.12.1/bin/python3 python3.12 python3.13 python3)

PY="" REQ=""
for c in "${candidates[@]}"; do
  c=$(command -v "$c" 2>/dev/null) || continue
  if at_least "$c" "3, 12"; then PY=$c; REQ=requirements-dev.txt; break; fi
  if [ -n "${LLMFLEET_PYTHON:-}" ] && [ "$c" = "$(command -v "$LLMFLEET_PYTHON")" ]; then break; fi
done
if [ -z "$PY" ]; then
  fb=$(command -v "${LLMFLEET_PYTHON:-python3}" 2>/dev/null) || die "no python3 found"
  at_least "$fb" "3, 11" || die "$fb is Python $(pyver "$fb" || echo '?'); need >= 3.11 (>= 3.12 preferred)"
  PY=$fb; REQ=requirements-dev-py311.txt
  if [ -n "${LLMFLEET_PYTHON:-}" ]; then why="LLMFLEET_PYTHON"; else why="no Python >= 3.12 found"; fi
  say "$why: $PY ($(pyver "$PY")) with the fallback $REQ (ansible-core 2.19)"
fi

REQ_PATH=$ROOT/$REQ
ANSIBLE_PKG=$(sed -n 's/^# collections-from: *\([^ ]*\).*/\1/p' "$REQ_PATH" | head -1)
[ -n "$ANSIBLE_PKG" ] || die "$REQ lacks a '# collections-from: ansible==X.Y.Z' line"
STAMP="schema=$STAMP_SCHEMA python=$(pyver "$PY") interpreter=$PY requirements=$REQ sha256=$(sha256sum "$REQ_PATH" | cut -c1-64)"

# ---------------------------------------------------------------- venv
if [ "${FORCE:-0}" != 1 ] && [ -x "$VENV/bin/python" ] && [ "$(cat "$VENV/.setup-stamp" 2>/dev/null)" = "$STAMP" ] \
   && "$VENV/bin/python" -c '' 2>/dev/null; then
  venv_state="up to date"
else
  t0=$SECONDS
  say "creating .venv with $PY ($(pyver "$PY")) from $REQ (log: .work/logs/pip-install.log)"
  rm -rf "$VENV"
  "$PY" -m venv "$VENV" >"$LOGS/venv.log" 2>&1 \
    || { cat "$LOGS/venv.log" >&2; die "'$PY -m venv' failed (Debian: apt-get install python3-venv)"; }
  if ! "$VENV/bin/python" -m pip install --no-input --disable-pip-version-check -r "$REQ_PATH" >"$LOGS/pip-install.log" 2>&1; then
    grep -v "^WARNING: Location 'file://" "$LOGS/pip-install.log" | tail -25 >&2
    die "pip install -r $REQ failed; full log: $LOGS/pip-install.log"
  fi
  "$VENV/bin/python" -m pip check >"$LOGS/pip-check.log" 2>&1 || { cat "$LOGS/pip-check.log" >&2; die "pip check failed"; }
  echo "$STAMP" >"$VENV/.setup-stamp"
  venv_state="created in $((SECONDS - t0))s ($(du -sh "$VENV" | cut -f1))"
fi

# ---------------------------------------------------------------- collections
mkdir -p "$COLL/ansible_collections"
if [ "${FORCE:-0}" != 1 ] && [ "$(cat "$COLL/.setup-stamp" 2>/dev/null)" = "$ANSIBLE_PKG" ] \
   && [ -f "$COLL/ansible_collections/community/docker/MANIFEST.json" ] \
   && [ -f "$COLL/ansible_collections/ansible/posix/MANIFEST.json" ]; then
  coll_state="up to date"
else
  t0=$SECONDS
  wheels=$WORK/cache/wheels
  say "unpacking community.docker + ansible.posix from the $ANSIBLE_PKG wheel (log: .work/logs/pip-download.log)"
  mkdir -p "$wheels"
  "$VENV/bin/python" -m pip download --no-deps --only-binary :all: --disable-pip-version-check -d "$wheels" "$ANSIBLE_PKG" \
    >"$LOGS/pip-download.log" 2>&1 || { tail -20 "$LOGS/pip-download.log" >&2; die "pip download $ANSIBLE_PKG failed"; }
  rm -rf "$COLL/ansible_collections/community/docker" "$COLL/ansible_collections/ansible/posix"
  "$VENV/bin/python" - "$wheels" "${ANSIBLE_PKG#*==}" "$COLL" <<'EOF'
import glob, sys, zipfile
whl = glob.glob("%s/ansible-%s-*.whl" % (sys.argv[1], sys.argv[2]))
if len(whl) != 1:
    sys.exit("expected one ansible-%s wheel in %s, found %r" % (sys.argv[2], sys.argv[1], whl))
want = ("ansible_collections/community/docker/", "ansible_collections/ansible/posix/")
with zipfile.ZipFile(whl[0]) as z:
    names = [n for n in z.namelist() if n.startswith(want)]
    if not names:
        sys.exit("no community.docker / ansible.posix in " + whl[0])
    z.extractall(sys.argv[3], names)
EOF
  echo "$ANSIBLE_PKG" >"$COLL/.setup-stamp"
  coll_state="unpacked in $((SECONDS - t0))s"
fi

# The collection itself: .collections/ansible_collections/llmfleet/vllm -> ../../.. (this checkout).
link=$COLL/ansible_collections/llmfleet/vllm
if [ "$(readlink "$link" 2>/dev/null)" != "../../.." ]; then
  mkdir -p "$(dirname "$link")"
  if [ -L "$link" ]; then rm -f "$link"; elif [ -e "$link" ]; then rm -rf "$link"; fi
  ln -s ../../.. "$link"
fi
[ "$(cd "$link" && pwd -P)" = "$(cd "$ROOT" && pwd -P)" ] || die "$link does not resolve to $ROOT"

# ---------------------------------------------------------------- summary
if [ "$venv_state" = "up to date" ] && [ "$coll_state" = "up to date" ]; then
  say "up to date ($(pyver "$VENV/bin/python"), $REQ, $ANSIBLE_PKG collections)"
else
  core=$("$VENV/bin/python" -c 'from ansible.release import __version__; print(__version__)')
  ver() { "$VENV/bin/python" -c 'import json,sys; print(json.load(open(sys.argv[1]))["collection_info"]["version"])' "$1"; }
  say ".venv: $venv_state; Python $(pyver "$VENV/bin/python"), ansible-core $core"
  say ".collections: $coll_state; community.docker $(ver "$COLL/ansible_collections/community/docker/MANIFEST.json")," \
      "ansible.posix $(ver "$COLL/ansible_collections/ansible/posix/MANIFEST.json"), llmfleet.vllm -> checkout"
fi
