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


# ---------------------------------------------------------------------------------------- resolved vars
def view_of(hostvars, resolved, play_hosts=("a", "b"), kv_names=(), resolved_names=None):
    names = resolved_names if resolved_names is not None else [k for k in resolved if k.startswith("vllm_")]
    return HostvarsView(CountingHostvars(hostvars), list(hostvars), current="a", resolved=resolved,
                        resolved_names=names, play_hosts=play_hosts, kv_names=kv_names)


def test_the_current_host_is_read_from_its_resolved_variables():
    hv = {"a": {"vllm_recipe": "r", "vllm_variant": "default", "ansible_host": "10.0.0.1"}, "b": {"vllm_recipe": "r"}}
    view = view_of(hv, {"vllm_recipe": "r", "vllm_variant": "fp8", "ansible_host": "10.0.0.1"})
    assert view["a"] == {"vllm_recipe": "r", "vllm_variant": "fp8", "ansible_host": "10.0.0.1"}
    assert view.scope() == {"vllm_variant": "fp8"}


def test_play_scope_values_reach_the_other_play_hosts_with_a_warning_where_they_differ():
    hv = {"a": {"vllm_recipe": "r"}, "b": {"vllm_recipe": "r", "vllm_variant": "default"}, "c": {"vllm_recipe": "r"},
          "out": {"vllm_recipe": "r"}}
    view = view_of(hv, {"vllm_recipe": "r", "vllm_variant": "fp8", "vllm_port": 9001}, play_hosts=("a", "b", "c"))
    assert view["c"] == {"vllm_recipe": "r", "vllm_variant": "fp8", "vllm_port": 9001} and view.warnings == []
    assert view["b"]["vllm_variant"] == "fp8"
    assert view.warnings == ["host b: its own vllm_variant differs from the value a has from play, role or task vars; "
                             "preflight used that value for b too, which it may not get when it runs"]
    assert view["out"] == {"vllm_recipe": "r"}, "hosts outside the play see their hostvars only"
    assert "vllm_port" in view.names("c") and view.names("out") == ["vllm_recipe"]


def test_a_value_equal_to_the_hostvars_one_is_not_scope():
    hv = {"a": {"vllm_recipe": "r", "vllm_port": 8000}, "b": {"vllm_recipe": "s", "vllm_port": 1}}
    view = view_of(hv, {"vllm_recipe": "r", "vllm_port": 8000})
    assert view.scope() == {} and view["b"] == {"vllm_recipe": "s", "vllm_port": 1} and view.warnings == []


class Untemplatable(dict):
    def __getitem__(self, key):
        if key == "vllm_image":
            raise ValueError("'registry' is undefined")
        return super().__getitem__(key)


def test_a_hostvars_value_that_needs_the_play_is_the_scopes():
    hv = {"a": Untemplatable(vllm_recipe="r", vllm_image="{{ registry }}/v"),
          "b": Untemplatable(vllm_recipe="r", vllm_image="{{ registry }}/v")}
    view = view_of(hv, {"vllm_recipe": "r", "vllm_image": "reg/v"})
    assert view.scope() == {"vllm_image": "reg/v"}
    assert view["b"]["vllm_image"] == "reg/v" and len(view.warnings) == 1


def test_the_current_hosts_hostvars_are_read_once():
    hv = {"a": {"vllm_recipe": "r"}, "b": {"vllm_recipe": "r"}}
    view = view_of(hv, {"vllm_recipe": "r", "vllm_variant": "fp8"})
    view["b"], view["a"], view.scope()
    assert view._hostvars.reads.count("a") == 1


def test_names_of_the_current_host_and_the_scope():
    hv = {"a": {"vllm_recipe": "r"}, "b": {"vllm_recipe": "r", "vllm_serve_name": "x"}}
    view = view_of(hv, {"vllm_recipe": "r"}, resolved_names=["vllm_recipe", "vllm_varient"])
    assert view.names("a") == ["vllm_recipe", "vllm_varient"]
    assert view.names("b") == ["vllm_recipe", "vllm_serve_name", "vllm_varient"]


def test_e_key_value_strings_become_the_tables_integers():
    hv = {"a": {"vllm_recipe": "r", "vllm_port": "9001"}, "b": {"vllm_recipe": "r", "vllm_port": "9001", "vllm_ray_port": "7"}}
    view = view_of(hv, {"vllm_recipe": "r", "vllm_port": "9001"}, kv_names=["vllm_port", "vllm_recipe"])
    assert view["a"]["vllm_port"] == 9001 and view["b"]["vllm_port"] == 9001
    assert view["b"]["vllm_ray_port"] == "7", "only names given as -e name=value"
    assert view["a"]["vllm_recipe"] == "r"


def test_extra_kv_names(monkeypatch):
    from ansible import context
    from ansible.module_utils.common.collections import ImmutableDict
    from ansible_collections.llmfleet.vllm.plugins.plugin_utils.inventory_view import extra_kv_names
    monkeypatch.setattr(context, "CLIARGS", ImmutableDict(extra_vars=(
        "vllm_port=9001 vllm_variant=fp8", '{"vllm_ray_port": "1"}', "@vars.yml", "[1]")))
    assert extra_kv_names() == frozenset(["vllm_port", "vllm_variant"])


def test_from_task_vars_templates_the_current_hosts_values():
    hostvars = {"a": {"vllm_recipe": "r"}, "b": {"vllm_recipe": "r"}}
    task_vars = {"hostvars": hostvars, "groups": {"all": ["a", "b"]}, "inventory_hostname": "a",
                 "ansible_play_hosts_all": ["a", "b"], "vllm_recipe": "r", "vllm_variant": "{{ v }}",
                 "vllm_serve_name": "x", "other": 1}
    view = HostvarsView.from_task_vars(task_vars, lambda v: "fp8" if v == "{{ v }}" else v)
    assert view["a"] == {"vllm_recipe": "r", "vllm_variant": "fp8", "vllm_serve_name": "x"}
    assert view["b"]["vllm_variant"] == "fp8"
    assert sorted(view.names("a")) == ["vllm_recipe", "vllm_serve_name", "vllm_variant"] and list(view) == ["a", "b"]


def test_role_defaults_of_the_serve_role_do_not_reach_the_other_hosts():
    hv = {"a": {"vllm_recipe": "r"}, "b": {"vllm_recipe": "r", "vllm_serve_name": "b1"}}
    view = view_of(hv, {"vllm_recipe": "r", "vllm_serve_name": "serve", "ansible_host": "10.0.0.9"})
    assert view["a"]["vllm_serve_name"] == "serve" and view.scope() == {}
    assert view["b"] == {"vllm_recipe": "r", "vllm_serve_name": "b1"} and view.warnings == []
