# -*- coding: utf-8 -*-
"""Run real ansible-playbook / ansible-doc from integration tests, isolated under a temp dir."""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
BIN = pathlib.Path(sys.executable).parent
JSON_CALLBACK = "ansible.posix.json"  # ansible-core's own json callback moved to ansible.posix (make setup installs it)


def tool(name):
    """The venv's executable ``name`` (skips the test when it is not installed)."""
    path = BIN / name
    if path.exists():
        return str(path)
    found = shutil.which(name)
    if not found:
        pytest.skip("%s is not installed (make setup)" % name)
    return found


def ansible_env(tmp, callback=None):
    env = dict(os.environ)
    env.update(
        PATH="%s%s%s" % (BIN, os.pathsep, env.get("PATH", "")),
        ANSIBLE_COLLECTIONS_PATH=str(REPO / ".collections"),
        ANSIBLE_HOME=str(tmp / "ansible-home"),
        ANSIBLE_LOCAL_TEMP=str(tmp / "ansible-tmp"),
        ANSIBLE_NOCOLOR="1",
        ANSIBLE_FORCE_COLOR="0",
        ANSIBLE_RETRY_FILES_ENABLED="0",
        ANSIBLE_PYTHON_INTERPRETER=sys.executable,
    )
    if callback:
        if callback == JSON_CALLBACK and not (REPO / ".collections" / "ansible_collections" / "ansible" / "posix").is_dir():
            pytest.skip("ansible.posix (the json stdout callback) is not in .collections: run make setup")
        env["ANSIBLE_STDOUT_CALLBACK"] = callback
    return env


def run(argv, tmp, callback=None):
    return subprocess.run(argv, cwd=str(tmp), env=ansible_env(tmp, callback), capture_output=True, text=True, check=False,
                          timeout=300)
