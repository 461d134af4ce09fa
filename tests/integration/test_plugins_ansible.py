# -*- coding: utf-8 -*-
"""The lookup `llmfleet.vllm.recipe` and the filters shell_command / container_argv / explain through a
real ansible-playbook (issue 3 §2, "Done when"), and their docs through ansible-doc.

One playbook run (module scope, JSON stdout callback) over a small inventory written to a temp
dir: a single H200 host with served names, a port and extra env; a GB10 host with long_context; a
2-node multi_node_tp_pp replica whose vllm_cluster_interface is a template. Each task's result is
compared with the same call made in-process (Fleet / Resolver / render).
"""

from __future__ import annotations

import json

import pytest
import yaml

from ansible_collections.llmfleet.vllm.plugins.module_utils import render
from ansible_collections.llmfleet.vllm.plugins.module_utils.catalog import get_catalog
from ansible_collections.llmfleet.vllm.plugins.module_utils.fleet import Fleet
from ansible_collections.llmfleet.vllm.plugins.module_utils.resolver import Resolver

from playbook_runner import JSON_CALLBACK, run, tool

SEED = "Qwen/Qwen3.6-35B-A3B"


INVENTORY = {"all": {
    "vars": {"vllm_recipe": SEED},
    "hosts": {
        "h1": {"ansible_host": "198.51.100.11", "vllm_hardware": "h200", "vllm_port": 9000,
               "vllm_served_model_name": ["qwen", "q"], "vllm_extra_env": {"FOO": "bar"}},
        "s1": {"ansible_host": "198.51.100.12", "vllm_hardware": "dgx_spark_gb10", "vllm_variant": "nvfp4",
               "vllm_features": {"long_context": True}},
    },
    "children": {"rep": {
        "hosts": {"n2": {"ansible_host": "198.51.100.22"}, "n1": {"ansible_host": "198.51.100.21"}},
        "vars": {"vllm_replica": "rep", "vllm_hardware": "b200", "vllm_variant": "nvfp4",
                 "vllm_strategy": "multi_node_tp_pp",
                 "vllm_cluster_interface": "{{ 'ens' ~ '1f0' }}"},  # templated: plugins must see "ens1f0"
    }},
}}
HOSTS = ["h1", "n1", "n2", "s1"]

PLAYBOOK = r"""
- name: Plugins through a real play
  hosts: all
  connection: local
  gather_facts: false
  tasks:
    - name: fleet
      llmfleet.vllm.fleet_plan:
      run_once: true
      register: fleet

    - name: filters over fleet_plan plans
      ansible.builtin.debug:
        msg:
          cmd: "{{ fleet.plans[inventory_hostname] | llmfleet.vllm.shell_command }}"
          cmd_env: "{{ fleet.plans[inventory_hostname] | llmfleet.vllm.shell_command(env=true) }}"
          docker: "{{ fleet.plans[inventory_hostname] | llmfleet.vllm.container_argv }}"
          podman: >-
            {{ fleet.plans[inventory_hostname]
               | llmfleet.vllm.container_argv(engine='podman', env_file='/etc/llmfleet/vllm.env', name='qwen') }}
          explain: "{{ fleet.plans[inventory_hostname] | llmfleet.vllm.explain }}"

    - name: shell_command on a non-plan
      ansible.builtin.debug:
        msg: "{{ {'argv': 'nope'} | llmfleet.vllm.shell_command }}"
      run_once: true
      ignore_errors: true

    - name: container_argv with a bad engine
      ansible.builtin.debug:
        msg: "{{ fleet.plans[inventory_hostname] | llmfleet.vllm.container_argv(engine='lxc') }}"
      run_once: true
      ignore_errors: true

    - name: lookup without terms
      ansible.builtin.debug:
        msg: "{{ lookup('llmfleet.vllm.recipe') }}"
      ignore_errors: true

    - name: lookup of another host
      ansible.builtin.debug:
        msg: "{{ lookup('llmfleet.vllm.recipe', host='n2') }}"
      run_once: true
      ignore_errors: true

    - name: lookup with a term and options
      ansible.builtin.debug:
        msg: "{{ lookup('llmfleet.vllm.recipe', 'Qwen/Qwen3.6-35B-A3B', variant='nvfp4', hardware='b200', strategy='multi_node_dep', node_count=2) }}"
      run_once: true
      ignore_errors: true

    - name: lookup with a term, features, gpu_count
      ansible.builtin.debug:
        msg: >-
          {{ lookup('llmfleet.vllm.recipe', 'Qwen/Qwen3.6-35B-A3B', variant='fp8', hardware='h100', gpu_count=4,
                    features=['reasoning', 'spec_decoding'], feature_modes={'spec_decoding': 'mtp'}) }}
      run_once: true
      ignore_errors: true

    - name: lookup piped into the filters
      ansible.builtin.debug:
        msg:
          cmd: "{{ lookup('llmfleet.vllm.recipe') | llmfleet.vllm.shell_command(env=true) }}"
          docker: "{{ lookup('llmfleet.vllm.recipe') | llmfleet.vllm.container_argv }}"
          explain: "{{ lookup('llmfleet.vllm.recipe') | llmfleet.vllm.explain }}"
      ignore_errors: true

    - name: lookup of an unknown recipe
      ansible.builtin.debug:
        msg: "{{ lookup('llmfleet.vllm.recipe', 'Qwen/Qwen3.6-35B-A3X') }}"
      run_once: true
      ignore_errors: true
"""


def plain_hostvars():
    """The inventory's hostvars as Ansible renders them (group vars merged, templates rendered)."""
    inv = INVENTORY["all"]
    out = {}
    for name, hv in inv["hosts"].items():
        out[name] = dict(inv["vars"], **hv)
    for group in inv["children"].values():
        for name, hv in group["hosts"].items():
            merged = dict(inv["vars"], **group["vars"])
            merged.update(hv)
            merged["vllm_cluster_interface"] = "ens1f0"
            out[name] = merged
    return out


def jsonable(value):
    return json.loads(json.dumps(value))


@pytest.fixture(scope="module")
def expected():
    f = Fleet(plain_hostvars(), {"all": HOSTS, "rep": ["n2", "n1"], "ungrouped": ["h1", "s1"]})
    plans, problems = f.check(HOSTS)
    assert problems == []
    return plans


@pytest.fixture(scope="module")
def play(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("plugins")
    (tmp / "hosts.yml").write_text(yaml.safe_dump(INVENTORY, sort_keys=False))
    (tmp / "play.yml").write_text(PLAYBOOK)
    proc = run([tool("ansible-playbook"), "-i", str(tmp / "hosts.yml"), str(tmp / "play.yml")], tmp, JSON_CALLBACK)
    try:
        out = json.loads(proc.stdout)
    except ValueError:
        pytest.fail("no JSON from ansible-playbook (rc %s):\n%s\n%s" % (proc.returncode, proc.stdout[-3000:], proc.stderr[-3000:]))
    tasks = dict((t["task"]["name"], t["hosts"]) for t in out["plays"][0]["tasks"])
    return {"proc": proc, "tasks": tasks, "stats": out["stats"]}


def ok(result):
    assert not result.get("failed"), result.get("msg")
    return result["msg"]


# --------------------------------------------------------------------------- filters

def test_play_ran_every_host(play):
    assert play["proc"].returncode == 0, play["proc"].stderr[-3000:]  # every failure above is ignore_errors
    assert sorted(play["stats"]) == HOSTS


def test_filters_over_fleet_plan_plans(play, expected):
    results = play["tasks"]["filters over fleet_plan plans"]
    assert sorted(results) == HOSTS
    for host, result in results.items():
        msg = ok(result)
        plan = expected[host]
        assert msg["cmd"] == render.shell_command(plan) == plan["command"]
        assert msg["cmd_env"] == render.shell_command(plan, env=True)
        assert msg["docker"] == render.container_argv(plan)
        assert msg["podman"] == render.container_argv(plan, engine="podman", env_file="/etc/llmfleet/vllm.env", name="qwen")
        assert msg["explain"] == jsonable(render.explain(plan))
    h1 = ok(results["h1"])
    assert h1["cmd"].endswith("  --served-model-name qwen q \\\n  --port 9000")
    assert h1["cmd_env"].startswith("export FOO=bar\nvllm serve Qwen/Qwen3.6-35B-A3B \\\n")
    assert h1["docker"][h1["docker"].index("-p") + 1] == "9000:9000"
    assert h1["podman"][:7] == ["podman", "run", "--rm", "--name", "qwen", "--device", "nvidia.com/gpu=all"]
    n2 = ok(results["n2"])
    assert "  --master-addr 198.51.100.21 \\" in n2["cmd"].splitlines()
    assert n2["cmd_env"].startswith("export GLOO_SOCKET_IFNAME=ens1f0\n")  # the template was rendered
    assert n2["docker"][n2["docker"].index("--network") + 1] == "host"
    s1 = ok(results["s1"])
    assert "env VLLM_ALLOW_LONG_MAX_MODEL_LEN=1  <- feature long_context › env (D1)" in s1["explain"]


def test_filter_errors_name_the_filter(play):
    (result,) = play["tasks"]["shell_command on a non-plan"].values()
    assert result["failed"] is True
    assert "llmfleet.vllm.shell_command: shell_command expects a host plan" in result["msg"]
    (result,) = play["tasks"]["container_argv with a bad engine"].values()
    assert result["failed"] is True
    assert "llmfleet.vllm.container_argv: container_argv: engine='lxc'; valid: docker, podman" in result["msg"]


# --------------------------------------------------------------------------- lookup

def test_lookup_without_terms_returns_the_host_plan(play, expected):
    results = play["tasks"]["lookup without terms"]
    assert sorted(results) == HOSTS
    for host, result in results.items():
        assert ok(result) == jsonable(expected[host]), host
    n1, n2 = ok(results["n1"]), ok(results["n2"])
    assert (n1["role"], n1["rank"], n2["role"], n2["rank"]) == ("head", 0, "worker", 1)
    assert n2["bindings"] == {"HEAD_IP": "198.51.100.21", "IFACE_NAME": "ens1f0"}
    assert n2["env"] == {"GLOO_SOCKET_IFNAME": "ens1f0", "NCCL_SOCKET_IFNAME": "ens1f0", "VLLM_HOST_IP": "198.51.100.22"}
    assert ok(results["h1"])["served_model_names"] == ["qwen", "q"]


def test_lookup_host_option(play, expected):
    (result,) = play["tasks"]["lookup of another host"].values()
    assert ok(result) == jsonable(expected["n2"])


def test_lookup_with_a_term_and_options(play):
    resolver = Resolver(get_catalog(None))
    (result,) = play["tasks"]["lookup with a term and options"].values()
    dep = ok(result)
    assert dep == jsonable(resolver.resolve(SEED, variant="nvfp4", hardware="b200", strategy="multi_node_dep", node_count=2))
    assert [n["role"] for n in dep["nodes"]] == ["head", "worker"]
    assert "$HEAD_IP" in dep["nodes"][1]["argv"]  # a direct resolution leaves placeholders unbound
    (result,) = play["tasks"]["lookup with a term, features, gpu_count"].values()
    dep = ok(result)
    assert dep == jsonable(resolver.resolve(SEED, variant="fp8", hardware="h100", gpu_count=4,
                                            features=["reasoning", "spec_decoding"],
                                            feature_modes={"spec_decoding": "mtp"}))
    assert dep["gpu_count"] == 4 and dep["features"] == ["reasoning", "spec_decoding"]


def test_lookup_piped_into_the_filters(play, expected):
    results = play["tasks"]["lookup piped into the filters"]
    for host, result in results.items():
        msg = ok(result)
        assert msg["cmd"] == render.shell_command(expected[host], env=True)
        assert msg["docker"] == render.container_argv(expected[host])
        assert msg["explain"] == jsonable(render.explain(expected[host]))


def test_lookup_error_names_the_problem(play):
    (result,) = play["tasks"]["lookup of an unknown recipe"].values()
    assert result["failed"] is True
    assert "llmfleet.vllm.recipe: unknown recipe 'Qwen/Qwen3.6-35B-A3X'" in result["msg"]
    assert "valid: Qwen/Qwen3.6-35B-A3B" in result["msg"]


# --------------------------------------------------------------------------- ansible-doc

@pytest.mark.parametrize("kind, name, options", [
    ("lookup", "llmfleet.vllm.recipe",
     ["_terms", "host", "variant", "hardware", "strategy", "node_count", "gpu_count", "features", "feature_modes",
      "pd_nodes", "kv_offload", "advanced", "recipes_path"]),
    ("filter", "llmfleet.vllm.shell_command", ["_input", "env"]),
    ("filter", "llmfleet.vllm.container_argv",
     ["_input", "engine", "name", "hf_cache", "env_file", "inline_env", "network", "extra_args", "detach", "remove"]),
    ("filter", "llmfleet.vllm.explain", ["_input"]),
    ("filter", "llmfleet.vllm.service_spec", ["_input", "settings"]),
    ("module", "llmfleet.vllm.fleet_plan",
     ["hosts", "scope", "dest", "report", "return_plans", "fail_on_problems", "serial", "max_fail_percentage", "plan"]),
])
def test_ansible_doc(tmp_path, kind, name, options):
    proc = run([tool("ansible-doc"), "-t", kind, "--json", name], tmp_path)
    assert proc.returncode == 0 and "[ERROR]" not in proc.stderr, proc.stderr
    doc = json.loads(proc.stdout)[name]
    assert sorted(doc["doc"]["options"]) == sorted(options)
    for opt in doc["doc"]["options"].values():
        assert opt.get("description"), opt
    assert doc["examples"] and name in doc["examples"]
    assert doc["return"]
    text = run([tool("ansible-doc"), "-t", kind, name], tmp_path)
    assert text.returncode == 0, text.stderr
    assert "OPTIONS" in text.stdout
    for opt in options:
        if opt != "_terms" and opt != "_input":
            assert opt in text.stdout, opt
