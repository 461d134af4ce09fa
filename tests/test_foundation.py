# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmfleet contributors
# Apache License 2.0 (see LICENSE)
"""The collection's skeleton: metadata parses and the checkout imports as llmfleet.vllm."""

from __future__ import annotations

import importlib
import pathlib

import yaml


def test_galaxy_metadata(repo_root):
    meta = yaml.safe_load((repo_root / "galaxy.yml").read_text())
    assert (meta["namespace"], meta["name"]) == ("llmfleet", "vllm")
    assert meta["license"] == ["Apache-2.0"]
    for ignored in (".venv", ".collections", ".work", "tests/output"):
        assert ignored in meta["build_ignore"]


def test_runtime_requires_ansible(repo_root):
    runtime = yaml.safe_load((repo_root / "meta" / "runtime.yml").read_text())
    assert runtime["requires_ansible"].startswith(">=")


def test_collection_imports_from_checkout(repo_root):
    pkg = importlib.import_module("ansible_collections.llmfleet.vllm.plugins.module_utils")
    paths = [pathlib.Path(p).resolve() for p in pkg.__path__]
    assert repo_root / "plugins" / "module_utils" in paths
