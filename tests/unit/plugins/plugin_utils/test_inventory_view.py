# -*- coding: utf-8 -*-
"""HostvarsView: the inventory variables of the table (and ansible_host), read lazily, as plain data."""

from __future__ import annotations

import pytest

from ansible_collections.llmfleet.vllm.plugins.module_utils.inventory_vars import NAMES
from ansible_collections.llmfleet.vllm.plugins.plugin_utils.inventory_view import HostvarsView, to_plain


class CountingHostvars(dict):
    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.reads = []

    def __getitem__(self, host):
        self.reads.append(host)
        return super().__getitem__(host)


def test_reads_the_tables_variables_and_ansible_host_only():
    raw = dict((name, "v") for name in NAMES)
    raw.update(ansible_host="10.0.0.1", ansible_user="root", other=1,
               ansible_facts={"llmfleet_gpu": {"vendor": "nvidia", "count": (8,)}})
    view = HostvarsView({"h": raw}, ["h"])
    assert sorted(view["h"]) == sorted(NAMES + ("ansible_host", "_gpu_facts"))
    assert view.facts()["h"] == {"vendor": "nvidia", "count": [8]}


def test_reads_a_host_once_and_on_demand():
    hv = CountingHostvars({"a": {"vllm_recipe": "x"}, "b": {}})
    view = HostvarsView(hv, ["a", "b"])
    assert hv.reads == [] and len(view) == 2 and list(view) == ["a", "b"]
    assert view["a"] == {"vllm_recipe": "x"} and view["a"] == {"vllm_recipe": "x"}
    assert hv.reads == ["a"]
    assert view.facts()["b"] == {}
    with pytest.raises(KeyError):
        view["ghost"]
    assert view.get("ghost", {}) == {}


def test_to_plain():
    assert to_plain({1: ("a", {"b": [2]})}) == {"1": ["a", {"b": [2]}]}
