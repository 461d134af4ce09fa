# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmfleet contributors
# Apache License 2.0 (see LICENSE)
"""Shared pytest setup for llmfleet.vllm.

Makes the checkout importable as ``ansible_collections.llmfleet.vllm`` by putting
``<repo>/.collections`` on ``sys.path``; ``.collections/ansible_collections/llmfleet/vllm``
is a relative symlink to the checkout (``../../..``), made here if ``make setup`` has not
made it yet. Fixtures: ``repo_root``, ``collections_dir``, ``shared_dir``.
"""

from __future__ import annotations

import os
import pathlib
import sys

import pytest

REPO_ROOT = pathlib.Path(__file__).resolve().parent.parent
COLLECTIONS_DIR = REPO_ROOT / ".collections"
COLLECTION_LINK = COLLECTIONS_DIR / "ansible_collections" / "llmfleet" / "vllm"
SHARED_DIR = pathlib.Path(os.environ.get("LLMFLEET_SHARED", REPO_ROOT.parent / "shared"))


def _ensure_collection_link():
    if not os.path.lexists(COLLECTION_LINK):
        COLLECTION_LINK.parent.mkdir(parents=True, exist_ok=True)
        try:
            COLLECTION_LINK.symlink_to(os.path.join("..", "..", ".."), target_is_directory=True)
        except FileExistsError:  # made concurrently by another process
            pass
    if COLLECTION_LINK.resolve() != REPO_ROOT:
        raise RuntimeError(
            "%s resolves to %s, not to this checkout %s; remove it and run `make setup`"
            % (COLLECTION_LINK, COLLECTION_LINK.resolve(), REPO_ROOT)
        )


_ensure_collection_link()
if str(COLLECTIONS_DIR) not in sys.path:
    sys.path.insert(0, str(COLLECTIONS_DIR))
# Subprocesses (ansible-playbook, molecule) started by tests find the same collections, and
# ansible keeps its state under .work/ as under `make` even when pytest is run directly.
_WORK_HOME = REPO_ROOT / ".work" / "home"
os.environ.setdefault("ANSIBLE_COLLECTIONS_PATH", str(COLLECTIONS_DIR))
os.environ.setdefault("ANSIBLE_HOME", str(_WORK_HOME / ".ansible"))
os.environ.setdefault("ANSIBLE_LOCAL_TEMP", str(REPO_ROOT / ".work" / "tmp" / "ansible-local"))
os.environ.setdefault("ANSIBLE_REMOTE_TMP", str(_WORK_HOME / ".ansible" / "tmp"))


@pytest.fixture(scope="session")
def repo_root():
    """The checkout (the collection root, where galaxy.yml lives)."""
    return REPO_ROOT


@pytest.fixture(scope="session")
def collections_dir():
    """``<repo>/.collections``: the ANSIBLE_COLLECTIONS_PATH entry holding this collection."""
    return COLLECTIONS_DIR


@pytest.fixture(scope="session")
def shared_dir():
    """``<repo>/../shared`` (or $LLMFLEET_SHARED): upstream recipes, golden outputs, fixtures.

    Tests that need it are skipped with a reason when it is absent; under CI (CI set)
    its absence is an error instead, since CI always provides it.
    """
    if not SHARED_DIR.is_dir():
        msg = "reference data directory %s is absent (expected ../shared beside the checkout)" % SHARED_DIR
        if os.environ.get("CI"):
            pytest.fail(msg + "; CI must provide it")
        pytest.skip(msg)
    return SHARED_DIR
