# -*- coding: utf-8 -*-
"""The collection as a user gets it: built with ``ansible-galaxy collection build``, installed
offline with ``ansible-galaxy collection install -p`` into a temp dir, once per test session.

``installed_collection`` (a fixture) gives that install; ``installed_env(tmp, installed)`` is
:func:`playbook_runner.ansible_env` with ``ANSIBLE_COLLECTIONS_PATH`` pointing at the install
first and at the dependencies of ``.collections`` (ansible.posix, community.*) but not at the
checkout's own ``llmfleet/vllm`` link. Import both into a test module::

    from installed_collection import installed_collection, installed_env  # noqa: F401
"""

from __future__ import annotations

import os
import subprocess

import pytest

from playbook_runner import REPO, ansible_env, tool

_BUILT = {}


def _build_and_install(base):
    (base / "build").mkdir()
    env = ansible_env(base)
    build = subprocess.run([tool("ansible-galaxy"), "collection", "build", str(REPO), "--output-path", str(base / "build")],
                           cwd=str(base), env=env, capture_output=True, text=True, check=False, timeout=600)
    if build.returncode != 0:
        pytest.fail("ansible-galaxy collection build failed:\n%s\n%s" % (build.stdout[-3000:], build.stderr[-3000:]))
    (tarball,) = sorted((base / "build").glob("llmfleet-vllm-*.tar.gz"))
    inst = base / "installed"
    # --force: the checkout's llmfleet.vllm, of the same version, is on the collections path too
    install = subprocess.run([tool("ansible-galaxy"), "collection", "install", "--offline", "--no-deps", "--force", "-p", str(inst),
                              str(tarball)], cwd=str(base), env=env, capture_output=True, text=True, check=False,
                             timeout=600)
    if install.returncode != 0:
        pytest.fail("ansible-galaxy collection install failed:\n%s\n%s" % (install.stdout[-3000:], install.stderr[-3000:]))
    # The dependencies of .collections (everything but llmfleet, which is the checkout there).
    deps = base / "deps" / "ansible_collections"
    deps.mkdir(parents=True)
    source = REPO / ".collections" / "ansible_collections"
    for namespace in sorted(os.listdir(str(source))):
        if namespace != "llmfleet":
            os.symlink(str(source / namespace), str(deps / namespace))
    collection = inst / "ansible_collections" / "llmfleet" / "vllm"
    assert (collection / "MANIFEST.json").is_file() and not os.path.islink(str(collection))
    return {"tarball": tarball, "path": inst, "collection": collection, "deps": base / "deps"}


@pytest.fixture(scope="module")
def installed_collection(tmp_path_factory):
    """The built and installed collection (built once per test session, shared by every module)."""
    if "install" not in _BUILT:
        _BUILT["install"] = _build_and_install(tmp_path_factory.mktemp("installed-collection"))
    return _BUILT["install"]


def installed_env(tmp, installed, callback=None):
    """Ansible's environment for runs against the installed collection (not the checkout)."""
    env = ansible_env(tmp, callback)
    env["ANSIBLE_COLLECTIONS_PATH"] = "%s%s%s" % (installed["path"], os.pathsep, installed["deps"])
    return env
