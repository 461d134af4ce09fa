#!/usr/bin/env bash
# scripts/sanity.sh - `make sanity`: ansible-test sanity for llmfleet.vllm, offline-friendly.
# Extra arguments go to ansible-test (e.g. --test pep8, --skip-test pylint).
#
# How it runs and why:
# * From .collections/ansible_collections/llmfleet/vllm (a symlink to this checkout)
#   with ANSIBLE_TEST_CONTENT_ROOT set: ansible-test locates the collection through
#   os.getcwd(), which resolves the symlink to the checkout (no ansible_collections/
#   parent) and then refuses to run.
# * --local --python X.Y (X.Y = .venv's Python): the controller is .venv itself and
#   nothing is installed into it; every sanity test that needs packages still gets its
#   own venv with ansible-test's pinned requirements from PyPI (cached under
#   $HOME/.ansible/test/venv, i.e. .work/home/ under make). --venv does not work from
#   the symlinked path: its delegation re-runs ansible-test with the content root taken
#   from os.getcwd() (the resolved checkout) and fails as above. --docker needs quay.io.
# * Those venvs are bootstrapped with a get-pip script from ci-files.testing.ansible.com,
#   which is unreachable here. A stand-in is put into ansible-test's cache: ensurepip
#   (stdlib) then `pip install pip==<ansible-test's pin>` from PyPI.
# * ansible-test tests the files git lists: tracked plus untracked-but-not-ignored
#   (git ls-files --cached --others --exclude-standard); ignored files are invisible,
#   so nothing needs `git add` first.
#
# Skipped tests:
#   pslint       PowerShell; needs pwsh and the collection has no PowerShell code
#   (shellcheck) only when the shellcheck binary is missing (.ci/run installs it)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VENV=$ROOT/.venv
COLL_DIR=$ROOT/.collections/ansible_collections/llmfleet/vllm
[ -x "$VENV/bin/ansible-test" ] || { echo "sanity: run 'make setup' first" >&2; exit 2; }
[ -d "$COLL_DIR" ] || { echo "sanity: $COLL_DIR missing; run 'make setup'" >&2; exit 2; }

pyver=$("$VENV/bin/python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')

# get-pip stand-in for the pip version this ansible-test pins.
"$VENV/bin/python" - <<'EOF'
import os, types
from ansible_test._internal.python_requirements import get_venv_packages
import sys
ver = get_venv_packages(types.SimpleNamespace(version="%d.%d" % sys.version_info[:2]))["pip"]
path = os.path.expanduser("~/.ansible/test/cache/get_pip_%s.py" % ver.replace(".", "_"))
src = '''\
# Stand-in for get-pip %s written by llmfleet.vllm scripts/sanity.sh: the real one lives
# on ci-files.testing.ansible.com, which this network cannot reach. ansible-test runs it as
# `python get_pip.py [pip options] pip==X`; get-pip's own --no-setuptools/--no-wheel are dropped.
import subprocess
import sys

args = [a for a in sys.argv[1:] if a not in ("--no-setuptools", "--no-wheel")]
subprocess.check_call([sys.executable, "-m", "ensurepip", "--default-pip"], stdout=subprocess.DEVNULL)
subprocess.check_call([sys.executable, "-m", "pip", "install"] + args)
''' % ver
if not os.path.exists(path) or open(path).read() != src:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(src)
EOF

skip=(--skip-test pslint)
command -v shellcheck >/dev/null || { skip+=(--skip-test shellcheck); echo "sanity: shellcheck not installed; skipping that test"; }
color=()
[ -n "${CI:-}" ] && color=(--color no)

cd "$COLL_DIR"
export ANSIBLE_TEST_CONTENT_ROOT=$COLL_DIR
set -x
exec "$VENV/bin/ansible-test" sanity --local --python "$pyver" "${color[@]}" "${skip[@]}" "$@"
