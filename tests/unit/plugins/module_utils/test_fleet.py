# -*- coding: utf-8 -*-
"""The inventory model (issue 3 §1): plain-dict hostvars/groups -> per-host plans, whole-inventory checks.

Every expectation on argv/env is derived from the resolver itself (``Resolver.resolve`` with the
same inputs), so these tests pin the *composition* the fleet adds on top: ranks, placeholder
binding, PD roles, served model names, ports, extra args, and the errors.
"""

from __future__ import annotations

import copy
import json
import os

import pytest
import yaml

from ansible_collections.llmfleet.vllm.plugins.module_utils.catalog import BUILTIN_TREE, Catalog
from ansible_collections.llmfleet.vllm.plugins.module_utils.fleet import Fleet, FleetError, served_names
from ansible_collections.llmfleet.vllm.plugins.module_utils.replica import bind
from ansible_collections.llmfleet.vllm.plugins.module_utils.render import format_command, format_router
from ansible_collections.llmfleet.vllm.plugins.module_utils.resolver import Resolver

from plan_views import fleet_hosts, recipe_view

SEED = "Qwen/Qwen3.6-35B-A3B"
SEED_FILE = os.path.join(BUILTIN_TREE, "models", "Qwen", "Qwen3.6-35B-A3B.yaml")


@pytest.fixture(scope="module")
def res():
    return Resolver(Catalog())


def host(**kw):
    hv = {"vllm_recipe": SEED, "vllm_hardware": "h200"}
    hv.update(kw)
    return hv


def fleet(hostvars, **groups):
    """A Fleet over plain dicts; ``groups`` adds inventory groups (``all`` is made)."""
    g = {"all": list(hostvars), "ungrouped": []}
    g.update(groups)
    return Fleet(hostvars, g)


def problems_of(excinfo):
    return "\n".join(excinfo.value.problems)


def make_tree(tmp_path, mutate):
    """A recipe tree with a mutated copy of the seed recipe (taxonomy/strategies come from the built-in tree)."""
    with open(SEED_FILE) as handle:
        recipe = copy.deepcopy(yaml.safe_load(handle))
    mutate(recipe)
    tree = tmp_path / "tree"
    (tree / "models" / "Qwen").mkdir(parents=True)
    (tree / "models" / "Qwen" / "Qwen3.6-35B-A3B.yaml").write_text(yaml.safe_dump(recipe, sort_keys=False))
    return [BUILTIN_TREE, str(tree)]


# --------------------------------------------------------------------------- single hosts

def test_single_host_plan_is_the_resolvers_node(res):
    plan = fleet({"h1": host(ansible_host="192.0.2.1")}).plan("h1")
    dep = res.resolve(SEED, variant="default", hardware="h200", strategy="single_node_tp", node_count=1)
    node = dep["nodes"][0]
    assert plan["argv"] == node["argv"]
    assert plan["argv"][:3] == ["vllm", "serve", SEED]
    assert plan["env"] == node["env"] == {}
    assert plan["command"] == format_command(node["argv"])
    assert plan["image"] == dep["image"] == "vllm/vllm-openai:latest"
    assert plan["docker_gpu_flags"] == ["--gpus", "all"]
    assert (plan["host"], plan["role"], plan["rank"], plan["replica"], plan["members"]) == ("h1", "single", 0, None, ["h1"])
    assert (plan["variant"], plan["strategy"], plan["deploy_type"], plan["node_count"]) == ("default", "single_node_tp", "single_node", 1)
    assert plan["port"] == 8000
    assert plan["served_model_names"] == [SEED]
    assert plan["bindings"] == {} and plan["unbound_placeholders"] == []
    assert plan["args_provenance"] == node["args_provenance"]


def test_unset_variant_is_chosen_as_upstream_does(res):
    # rtx_5090 cannot scale out and the BF16 default (84 GB) does not fit its 32 GB: the largest variant that fits
    plan = fleet({"g": host(vllm_hardware="rtx_5090")}).plan("g")
    assert plan["variant"] == "nvfp4"
    assert plan["argv"] == res.resolve(SEED, variant="nvfp4", hardware="rtx_5090", strategy="single_node_tp",
                                       node_count=1)["nodes"][0]["argv"]


def test_gpu_count_replaces_the_profile_d6(res):
    plan = fleet({"h": host(vllm_hardware="h100", vllm_variant="fp8", vllm_gpu_count=4)}).plan("h")
    assert plan["gpu_count"] == 4
    assert plan["argv"] == res.resolve(SEED, variant="fp8", hardware="h100", strategy=plan["strategy"], node_count=1,
                                       gpu_count=4)["nodes"][0]["argv"]
    eight = fleet({"h": host(vllm_hardware="h100", vllm_variant="fp8")}).plan("h")
    assert eight["gpu_count"] == 8


def test_hardware_from_gpu_facts_when_unset():
    hv = {"h": {"vllm_recipe": SEED}}
    plan = Fleet(hv, {"all": ["h"]}, facts={"h": {"profile": "h100", "count": 4}}).plan("h")
    assert (plan["hardware"], plan["gpu_count"]) == ("h100", 4)
    with pytest.raises(FleetError) as exc:
        Fleet(hv, {"all": ["h"]}).plan("h")
    assert "host h: vllm_hardware is not set" in problems_of(exc)


def test_vllm_image_replaces_the_recipes():
    plan = fleet({"h": host(vllm_image="registry.example/vllm:v0.33.0")}).plan("h")
    assert plan["image"] == "registry.example/vllm:v0.33.0"
    assert plan["image_source"] == "inventory (vllm_image)"


def test_extra_args_and_env_come_last_with_inventory_provenance(res):
    plan = fleet({"h": host(vllm_variant="nvfp4", vllm_hardware="dgx_spark_gb10",
                            vllm_extra_args=["--max-model-len", "4096", "--enable-log-requests"],
                            vllm_extra_env={"HF_HUB_OFFLINE": 1, "FOO": "bar"})}).plan("h")
    argv = plan["argv"]
    assert argv[-3:] == ["--max-model-len", "4096", "--enable-log-requests"]
    assert argv.count("--max-model-len") == 1  # the recipe's 262144 is replaced, not duplicated
    prov = next(p for p in plan["args_provenance"] if p["arg"][0] == "--max-model-len")
    assert prov["source"] == "inventory"
    assert prov["replaced"] == [{"arg": ["--max-model-len", "262144"],
                                 "source": "variant nvfp4 › hardware_overrides.dgx_spark_gb10"}]
    assert plan["env"]["HF_HUB_OFFLINE"] == "1" and plan["env"]["FOO"] == "bar"
    assert plan["env_provenance"]["FOO"]["source"] == "inventory"


# --------------------------------------------------------------------------- features

def test_features_list_enables_exactly_those_in_list_order(res):
    plan = fleet({"h": host(vllm_features=["spec_decoding", "reasoning"])}).plan("h")
    assert plan["features"] == ["spec_decoding", "reasoning"]
    expected = res.resolve(SEED, variant="default", hardware="h200", strategy="single_node_tp", node_count=1,
                           features=["spec_decoding", "reasoning"])["nodes"][0]["argv"]
    assert plan["argv"] == expected
    assert "--enable-auto-tool-choice" not in plan["argv"] and "--mm-encoder-tp-mode" not in plan["argv"]
    assert plan["argv"].index("--speculative-config") < plan["argv"].index("--reasoning-parser")


def test_features_empty_list_disables_every_feature():
    plan = fleet({"h": host(vllm_features=[])}).plan("h")
    assert plan["features"] == []
    assert plan["argv"][3:] == ["--trust-remote-code", "--tensor-parallel-size", "1"]


def test_features_dict_toggles_the_defaults(res):
    plan = fleet({"h": host(vllm_features={"reasoning": False, "spec_decoding": True})}).plan("h")
    assert plan["features"] == ["tool_calling", "spec_decoding", "encoder_parallel"]
    expected = res.resolve(SEED, variant="default", hardware="h200", strategy="single_node_tp", node_count=1,
                           features={"reasoning": False, "spec_decoding": True})["nodes"][0]["argv"]
    assert plan["argv"] == expected
    assert "--reasoning-parser" not in plan["argv"]


def test_feature_modes_choose_the_mode():
    plan = fleet({"h": host(vllm_features={"spec_decoding": True},
                            vllm_feature_modes={"spec_decoding": "dspark"})}).plan("h")
    assert plan["feature_modes"] == {"spec_decoding": "dspark"}
    spec = plan["argv"][plan["argv"].index("--speculative-config") + 1]
    assert '"method": "dspark"' in spec


def test_long_context_env_d1_and_replacement_provenance():
    plan = fleet({"h": host(vllm_variant="nvfp4", vllm_hardware="dgx_spark_gb10",
                            vllm_features={"long_context": True})}).plan("h")
    assert plan["env"] == {"VLLM_ALLOW_LONG_MAX_MODEL_LEN": "1"}
    assert plan["argv"][plan["argv"].index("--max-model-len") + 1] == "1010000"


# --------------------------------------------------------------------------- served names and ports

@pytest.mark.parametrize("value, names", [
    ("qwen", ["qwen"]),
    (["qwen-3.6-35b-a3b", "qwen-3.6-a3b"], ["qwen-3.6-35b-a3b", "qwen-3.6-a3b"]),
    ({"name": "qwen-3.6-35b-a3b", "aliases": ["qwen-3.6-a3b", "qwen-3.6-35b-a3b", "q36"]},
     ["qwen-3.6-35b-a3b", "qwen-3.6-a3b", "q36"]),
    ({"name": "only"}, ["only"]),
])
def test_served_model_names(value, names):
    assert served_names(value) == names
    plan = fleet({"h": host(vllm_served_model_name=value)}).plan("h")
    assert plan["served_model_names"] == names
    assert plan["argv"][-(len(names) + 1):] == ["--served-model-name"] + names
    assert plan["argv"].count("--served-model-name") == 1
    assert "--served-model-name " + " ".join(names) in plan["command"]


def test_replaced_multi_value_flag_leaves_no_stray_value():
    hv = {"h": host(vllm_extra_args=["--served-model-name", "x", "y"], vllm_served_model_name="z")}
    plan = fleet(hv).plan("h")
    assert plan["argv"][-2:] == ["--served-model-name", "z"]
    assert "x" not in plan["argv"] and "y" not in plan["argv"]


def test_replaced_multi_value_flag_is_replaced_whole():
    hv = {"h": host(vllm_extra_args=["--served-model-name", "x", "y"], vllm_served_model_name="z")}
    plans, problems = fleet(hv).check(["h"])
    assert problems == []
    prov = [p for p in plans["h"]["args_provenance"] if p["arg"][0] == "--served-model-name"]
    assert prov == [{"arg": ["--served-model-name", "z"], "source": "inventory",
                     "replaced": [{"arg": ["--served-model-name", "x", "y"], "source": "inventory"}]}]


def test_served_model_name_unset_and_empty():
    assert served_names(None) == []
    plan = fleet({"h": host()}).plan("h")
    assert "--served-model-name" not in plan["argv"]


def test_vllm_port():
    plan = fleet({"h": host(vllm_port=9000)}).plan("h")
    assert plan["port"] == 9000
    assert plan["argv"][-2:] == ["--port", "9000"]
    default = fleet({"h": host(vllm_port=8000)}).plan("h")
    assert default["port"] == 8000 and "--port" not in default["argv"]


def test_vllm_port_on_a_replica_head():
    hv = dict((n, host(vllm_replica="r", vllm_strategy="multi_node_dep", vllm_cluster_interface="eth0", vllm_port=9000,
                       ansible_host=a)) for n, a in (("n1", "10.0.0.1"), ("n2", "10.0.0.2")))
    head = fleet(hv, r=["n1", "n2"]).plan("n1")
    assert head["port"] == 9000
    assert head["argv"][head["argv"].index("--port") + 1] == "9000"


# --------------------------------------------------------------------------- multi-node replicas

def replica(names, strategy="multi_node_tp", hw="h200", **common):
    """hostvars of one replica ``r`` whose members are ``names`` (name -> extra vars)."""
    out = {}
    for name, extra in names.items():
        hv = host(vllm_hardware=hw, vllm_strategy=strategy, vllm_replica="r", vllm_cluster_interface="ens1f0")
        hv.update(common)
        hv.update(extra)
        out[name] = hv
    return out


def test_replica_ranks_follow_inventory_names(res):
    hv = replica({"node-b": {"ansible_host": "10.0.0.2"}, "node-a": {"ansible_host": "10.0.0.1"}})
    f = fleet(hv, r=["node-b", "node-a"])  # group order is not rank order
    head, worker = f.plan("node-a"), f.plan("node-b")
    assert (head["role"], head["rank"], worker["role"], worker["rank"]) == ("head", 0, "worker", 1)
    assert head["members"] == worker["members"] == ["node-a", "node-b"]
    assert head["replica"] == "r" and head["node_count"] == 2 and head["deploy_type"] == "multi_node"
    dep = res.resolve(SEED, variant="default", hardware="h200", strategy="multi_node_tp", node_count=2)
    mapping = {"HEAD_IP": "10.0.0.1", "IFACE_NAME": "ens1f0"}
    for plan, node in ((head, dep["nodes"][0]), (worker, dep["nodes"][1])):
        assert plan["argv"] == [bind(t, mapping) for t in node["argv"]]
        assert recipe_view(plan) == (plan["argv"], dict((k, bind(v, mapping)) for k, v in node["env"].items()))
        assert plan["env"] == {"GLOO_SOCKET_IFNAME": "ens1f0", "NCCL_SOCKET_IFNAME": "ens1f0",
                               "VLLM_HOST_IP": hv[plan["host"]]["ansible_host"]}
        assert plan["env_provenance"]["VLLM_HOST_IP"]["source"].startswith("replica: ")
        assert plan["bindings"] == mapping and plan["unbound_placeholders"] == []
        assert not any("$" in t for t in plan["argv"])
    assert worker["argv"][worker["argv"].index("--master-addr") + 1] == "10.0.0.1"
    assert "--headless" in worker["argv"] and "--headless" not in head["argv"]
    assert worker["argv"][worker["argv"].index("--node-rank") + 1] == "1"


def test_explicit_node_rank_wins_over_names():
    hv = replica({"a": {"ansible_host": "10.0.0.1", "vllm_node_rank": 1},
                  "b": {"ansible_host": "10.0.0.2", "vllm_node_rank": 0}})
    f = fleet(hv, r=["a", "b"])
    assert (f.plan("b")["role"], f.plan("a")["role"]) == ("head", "worker")
    assert f.plan("a")["members"] == ["b", "a"]
    assert f.plan("a")["bindings"]["HEAD_IP"] == "10.0.0.2"


def test_partial_node_ranks_rejected():
    hv = replica({"a": {"vllm_node_rank": 0}, "b": {}})
    with pytest.raises(FleetError) as exc:
        fleet(hv, r=["a", "b"]).plan("a")
    msg = problems_of(exc)
    assert "a set vllm_node_rank but b do not" in msg and "every member or on none" in msg


@pytest.mark.parametrize("ranks", [(1, 1), (0, 2), (1, 2)])
def test_duplicate_or_gapped_node_ranks_rejected(ranks):
    hv = replica({"a": {"vllm_node_rank": ranks[0]}, "b": {"vllm_node_rank": ranks[1]}})
    with pytest.raises(FleetError) as exc:
        fleet(hv, r=["a", "b"]).plan("b")
    msg = problems_of(exc)
    assert "expected each of 0..1 exactly once" in msg
    assert "a=%d" % ranks[0] in msg and "b=%d" % ranks[1] in msg


@pytest.mark.parametrize("head_vars, expected", [
    ({"ansible_host": "10.0.0.1", "vllm_cluster_address": "172.16.0.1"}, "172.16.0.1"),  # cluster address first
    ({"ansible_host": "10.0.0.1"}, "10.0.0.1"),                                         # else ansible_host
    ({}, "n1"),                                                                          # else the inventory name
])
def test_head_ip_binding(head_vars, expected):
    hv = replica({"n1": head_vars, "n2": {"ansible_host": "10.0.0.2", "vllm_cluster_address": "172.16.0.2"}},
                 strategy="multi_node_dep")
    f = fleet(hv, r=["n1", "n2"])
    for name in ("n1", "n2"):
        plan = f.plan(name)
        assert plan["bindings"]["HEAD_IP"] == expected
        assert plan["argv"][plan["argv"].index("--data-parallel-address") + 1] == expected


def test_iface_unbound_without_cluster_interface():
    hv = replica({"n1": {}, "n2": {}})
    for name in hv:
        del hv[name]["vllm_cluster_interface"]
    f = fleet(hv, r=["n1", "n2"])
    plan = f.plan("n1")
    assert plan["unbound_placeholders"] == ["IFACE_NAME"]
    assert plan["env"]["NCCL_SOCKET_IFNAME"] == "$IFACE_NAME"
    _plans, problems = f.check(["n1", "n2"])
    assert "host n1: replica r needs vllm_cluster_interface (the NIC for NCCL/GLOO, e.g. ens1f0)" in problems
    assert "host n2: replica r needs vllm_cluster_interface (the NIC for NCCL/GLOO, e.g. ens1f0)" in problems


def test_replica_tp_pp_matches_the_resolver(res):
    hv = replica({"b1": {"ansible_host": "192.0.2.61"}, "b2": {"ansible_host": "192.0.2.62"}},
                 strategy="multi_node_tp_pp", hw="b200", vllm_variant="nvfp4")
    f = fleet(hv, r=["b1", "b2"])
    dep = res.resolve(SEED, variant="nvfp4", hardware="b200", strategy="multi_node_tp_pp", node_count=2)
    for rank, name in enumerate(("b1", "b2")):
        assert f.plan(name)["argv"] == [bind(t, {"HEAD_IP": "192.0.2.61"}) for t in dep["nodes"][rank]["argv"]]
    plans, problems = f.check(["b1", "b2"])
    assert problems == [] and sorted(plans) == ["b1", "b2"]


def test_replica_members_must_agree():
    hv = replica({"a": {}, "b": {"vllm_hardware": "b200", "vllm_gpu_count": 4}})
    with pytest.raises(FleetError) as exc:
        fleet(hv, r=["a", "b"]).plan("a")
    msg = problems_of(exc)
    assert 'replica r: members disagree on vllm_hardware (a="h200", b="b200")' in msg
    assert "members disagree on vllm_gpu_count (a=null, b=4)" in msg


def test_replica_of_one_is_rejected_d3():
    _plans, problems = fleet(replica({"a": {}}), r=["a"]).check(["a"])
    assert problems == ["host a: multi_node_tp needs at least 2 nodes, got 1 (use a single_node_* strategy for one node)"]


def test_replica_smaller_than_strategy_min_gpus(tmp_path):
    paths = make_tree(tmp_path, lambda r: r.update(strategy_min_gpus={"multi_node_tep": 32}))
    hv = replica({"a": {}, "b": {}}, strategy="multi_node_tep", vllm_recipes_path=paths)
    _plans, problems = fleet(hv, r=["a", "b"]).check(["a", "b"])
    assert any(p.startswith("host a (Qwen/Qwen3.6-35B-A3B default on h200): replica r has 2 nodes x 8 GPUs but "
                            "multi_node_tep needs at least 32 GPUs") for p in problems), problems
    four = replica(dict((m, {"ansible_host": "10.0.0.%d" % i}) for i, m in enumerate("abcd", 1)),
                   strategy="multi_node_tep", vllm_recipes_path=paths)  # members need IPs (the rendezvous, the firewall)
    assert fleet(four, r=["a", "b", "c", "d"]).check(list(four))[1] == []


def test_replica_group_errors():
    hv = {"a": host(vllm_replica="nope", vllm_strategy="multi_node_tp"),
          "b": host(vllm_replica="other", vllm_strategy="multi_node_tp")}
    f = fleet(hv, other=["c"], c=["c"])
    with pytest.raises(FleetError, match=r"host a: vllm_replica=nope names no inventory group with hosts; groups: c, other"):
        f.plan("a")
    with pytest.raises(FleetError, match="host b: vllm_replica=other but the host is not a member of group other"):
        f.plan("b")


def test_multi_node_strategy_without_replica():
    with pytest.raises(FleetError, match="host a: strategy multi_node_tp spans several nodes: put the host in an "
                                         "inventory group and set vllm_replica"):
        fleet({"a": host(vllm_strategy="multi_node_tp")}).plan("a")


def test_single_node_strategy_in_a_replica():
    hv = replica({"a": {}, "b": {}}, strategy="single_node_tp")
    with pytest.raises(FleetError, match="replica r: strategy single_node_tp is single-node"):
        fleet(hv, r=["a", "b"]).plan("a")


def test_replica_without_strategy_gets_the_multi_node_recommendation():
    hv = replica({"a": {"ansible_host": "10.0.0.1"}, "b": {"ansible_host": "10.0.0.2"}}, strategy=None)
    plan = fleet(hv, r=["a", "b"]).plan("a")
    assert plan["strategy"] == "multi_node_tp" and plan["node_count"] == 2


# --------------------------------------------------------------------------- pd_cluster

@pytest.fixture(scope="module")
def pd_paths(tmp_path_factory):
    return make_tree(tmp_path_factory.mktemp("pd"), lambda r: r["compatible_strategies"].append("pd_cluster"))


def pd_inventory(paths, **over):
    base = host(vllm_strategy="pd_cluster", vllm_replica="pd", vllm_recipes_path=paths, vllm_cluster_interface="eth0",
                vllm_served_model_name=["qwen", "q"])
    members = {
        "p1": {"vllm_pd_role": "prefill", "ansible_host": "10.1.0.1"},
        "p2": {"vllm_pd_role": "prefill", "ansible_host": "10.1.0.2"},
        "d1": {"vllm_pd_role": "decode", "ansible_host": "10.1.0.3", "vllm_cluster_address": "172.16.0.3"},
        "rt": {"vllm_pd_role": "router", "ansible_host": "10.1.0.9", "vllm_router_port": 31000},
    }
    hv = {}
    for name, extra in members.items():
        hv[name] = dict(base, **extra)
        hv[name].update(over.get(name, {}))
    return hv


def test_pd_cluster_roles_and_bindings(pd_paths):
    hv = pd_inventory(pd_paths)
    f = fleet(hv, pd=["rt", "d1", "p2", "p1"])
    plans, problems = f.check(list(hv))
    assert problems == []
    expected_bindings = {"PREFILL_NODE_1": "10.1.0.1", "PREFILL_NODE_2": "10.1.0.2", "DECODE_NODE_1": "172.16.0.3",
                         "PREFILL_DP_RPC_PORT": "13345", "DECODE_DP_RPC_PORT": "13345",
                         "ROUTER_HOST": "10.1.0.9", "ROUTER_PORT": "31000", "IFACE_NAME": "eth0"}
    roles = dict((h, (p["role"], p["rank"], p["port"])) for h, p in plans.items())
    assert roles == {"p1": ("prefill", 0, 8001), "p2": ("prefill", 1, 8001), "d1": ("decode", 0, 8002),
                     "rt": ("router", 0, 31000)}
    for name, plan in plans.items():
        assert plan["bindings"] == expected_bindings, name
        assert plan["members"] == ["p1", "p2", "d1", "rt"]
        assert plan["unbound_placeholders"] == [] and plan["deploy_type"] == "pd_cluster"
        assert not any("$" in t for t in plan["argv"]) and not any("$" in v for v in plan["env"].values())
    assert plans["p1"]["env"]["VLLM_NIXL_SIDE_CHANNEL_HOST"] == "10.1.0.1"
    assert plans["d1"]["env"]["VLLM_NIXL_SIDE_CHANNEL_HOST"] == "172.16.0.3"
    assert plans["p2"]["argv"][plans["p2"]["argv"].index("--master-addr") + 1] == "10.1.0.1"
    for name in ("p1", "p2", "d1"):
        assert plans[name]["argv"][:3] == ["vllm", "serve", SEED]
        assert plans[name]["argv"][-3:] == ["--served-model-name", "qwen", "q"]
    router = plans["rt"]
    assert router["argv"] == ["vllm-router", "--policy", "round_robin", "--vllm-pd-disaggregation",
                              "--prefill", "http://10.1.0.1:8001", "--decode", "http://172.16.0.3:8002",
                              "--host", "10.1.0.9", "--port", "31000", "--intra-node-data-parallel-size", "1"]
    assert router["command"] == format_router(router["argv"]) and router["env"] == {}


def test_pd_cluster_matches_the_resolver(pd_paths):
    hv = pd_inventory(pd_paths)
    plans = fleet(hv, pd=list(hv)).check(list(hv))[0]
    dep = Resolver(Catalog(pd_paths)).resolve(SEED, variant="default", hardware="h200", strategy="pd_cluster",
                                              node_count=3, pd_nodes={"prefill": 2, "decode": 1},
                                              extra_args=["--served-model-name", "qwen", "q"])
    mapping = plans["p1"]["bindings"]
    for name, role, rank in (("p1", "prefill", 0), ("p2", "prefill", 1), ("d1", "decode", 0)):
        node = next(n for n in dep["nodes"] if n["role"] == role and n["rank"] == rank)
        assert recipe_view(plans[name]) == ([bind(t, mapping) for t in node["argv"]],
                                            dict((k, bind(v, mapping)) for k, v in node["env"].items()))
        assert plans[name]["env"]["VLLM_HOST_IP"] == hv[name].get("vllm_cluster_address", hv[name]["ansible_host"])
    assert plans["rt"]["argv"] == [bind(t, mapping) for t in dep["router"]["argv"]]


@pytest.mark.parametrize("over, message", [
    ({"d1": {"vllm_pd_role": None}}, "replica pd (pd_cluster): d1 set no vllm_pd_role; each member is one of prefill, decode, router"),
    ({"d1": {"vllm_pd_role": "prefill"}}, "replica pd (pd_cluster): no member has vllm_pd_role=decode"),
    ({"p2": {"vllm_pd_role": "router"}}, "replica pd (pd_cluster): expected exactly one member with vllm_pd_role=router, found 2"),
    ({"rt": {"vllm_pd_role": "decode"}}, "replica pd (pd_cluster): expected exactly one member with vllm_pd_role=router, found 0"),
])
def test_pd_cluster_role_errors(pd_paths, over, message):
    hv = pd_inventory(pd_paths, **over)
    _plans, problems = fleet(hv, pd=list(hv)).check(list(hv))
    assert message in problems


# --------------------------------------------------------------------------- type errors

@pytest.mark.parametrize("key, value, expectation", [
    ("vllm_recipe", 42, "a non-empty string"),
    ("vllm_variant", "", "a non-empty string"),
    ("vllm_hardware", ["h200"], "a non-empty string"),
    ("vllm_gpu_count", 0, "a positive integer"),
    ("vllm_gpu_count", True, "a positive integer"),
    ("vllm_port", "8000", "a positive integer"),
    ("vllm_router_port", -1, "a positive integer"),
    ("vllm_node_rank", -1, "an integer >= 0"),
    ("vllm_version", "latest", 'a version string such as "0.28.0"'),
    ("vllm_features", "reasoning", "a list of feature names, or a dict feature -> true/false"),
    ("vllm_features", {"reasoning": "yes"}, "a list of feature names, or a dict feature -> true/false"),
    ("vllm_feature_modes", ["mtp"], "a dict feature -> mode name"),
    ("vllm_extra_args", ["--max-num-seqs", 8], 'a list of strings (quote numbers: "8")'),
    ("vllm_advanced", "gpu_mem_095", 'a list of strings (quote numbers: "8")'),
    ("vllm_extra_env", {"A": {"nested": 1}}, "a dict of NAME: scalar"),
    ("vllm_recipes_path", [], "a path or a list of paths"),
    ("vllm_served_model_name", [], "a name, a list [canonical, alias...] or {name: ..., aliases: [...]}"),
    ("vllm_served_model_name", {"aliases": ["x"]}, "a name, a list [canonical, alias...] or {name: ..., aliases: [...]}"),
    ("vllm_pd_role", "master", "one of prefill, decode, router"),
])
def test_type_errors_name_host_key_value_and_expectation(key, value, expectation):
    with pytest.raises(FleetError) as exc:
        fleet({"gpu-07": host(**{key: value})}).plan("gpu-07")
    assert exc.value.problems == ["host gpu-07: %s=%s: expected %s" % (key, json.dumps(value), expectation)]


def test_every_type_error_of_a_host_is_reported_at_once():
    with pytest.raises(FleetError) as exc:
        fleet({"h": host(vllm_port="80", vllm_gpu_count=True, vllm_features="x", vllm_extra_args=[8])}).plan("h")
    keys = [p.split(":")[1].split("=")[0].strip() for p in exc.value.problems]
    assert sorted(keys) == ["vllm_extra_args", "vllm_features", "vllm_gpu_count", "vllm_port"]


def test_missing_recipe_and_unknown_host():
    f = fleet({"h": {"vllm_hardware": "h200"}})
    with pytest.raises(FleetError, match=r"host h: vllm_recipe is not set \(the HF id of a recipe"):
        f.plan("h")
    with pytest.raises(FleetError, match="host ghost is not in the inventory"):
        f.plan("ghost")


# --------------------------------------------------------------------------- whole-inventory checks

def test_check_reports_every_problem_at_once():
    hv = {
        "ok": host(),
        "u-recipe": host(vllm_recipe="Qwen/Qwen3.6-35B-A3X"),
        "u-variant": host(vllm_variant="fp9"),
        "u-hardware": host(vllm_hardware="h2000"),
        "u-strategy": host(vllm_strategy="single_node_tpx"),
        "u-feature": host(vllm_features=["tool_calling", "toolcalling"]),
        "u-mode": host(vllm_features=["spec_decoding"], vllm_feature_modes={"spec_decoding": "mtpx"}),
        "nofit": host(vllm_hardware="rtx_5090", vllm_variant="default"),
        "fp4-hopper": host(vllm_hardware="h100", vllm_variant="nvfp4"),
        "excl": host(vllm_features=["text_only", "encoder_parallel"]),
        "badflag": host(vllm_extra_args=["--no-such-flag"]),
        "m1": host(vllm_replica="mixed", vllm_strategy="multi_node_tp", vllm_cluster_interface="e"),
        "m2": host(vllm_replica="mixed", vllm_strategy="multi_node_tp", vllm_cluster_interface="e", vllm_hardware="b200"),
        "x1": host(vllm_replica="xpu", vllm_strategy="multi_node_tp", vllm_cluster_interface="e", vllm_hardware="arc_pro_b60"),
        "x2": host(vllm_replica="xpu", vllm_strategy="multi_node_tp", vllm_cluster_interface="e", vllm_hardware="arc_pro_b60"),
    }
    plans, problems = fleet(hv, mixed=["m1", "m2"], xpu=["x1", "x2"]).check(list(hv))
    text = "\n".join(problems)
    expected = [
        "host u-recipe: unknown recipe 'Qwen/Qwen3.6-35B-A3X'",
        "host u-variant: unknown variant 'fp9' for recipe Qwen/Qwen3.6-35B-A3B (did you mean fp8?); valid: default, fp8, nvfp4",
        "host u-hardware: unknown hardware profile 'h2000'",
        "host u-strategy: unknown strategy 'single_node_tpx' (did you mean single_node_tp",
        "host u-feature: unknown feature 'toolcalling' for recipe Qwen/Qwen3.6-35B-A3B (did you mean tool_calling?); valid: ",
        "host u-mode: unknown mode 'mtpx' for feature spec_decoding of recipe Qwen/Qwen3.6-35B-A3B (did you mean mtp?); valid: dspark, mtp",
        "host nofit (Qwen/Qwen3.6-35B-A3B default on rtx_5090): variant default needs 84 GB but rtx_5090 has 32 GB and "
        "cannot scale out; a variant that fits: nvfp4",
        "host fp4-hopper (Qwen/Qwen3.6-35B-A3B nvfp4 on h100): precision nvfp4 needs NVIDIA blackwell, but h100 is NVIDIA hopper",
        "host excl: features text_only and encoder_parallel of recipe Qwen/Qwen3.6-35B-A3B are mutually exclusive",
        "--no-such-flag",
        'replica mixed: members disagree on vllm_hardware (m1="h200", m2="b200")',
        "host x1 (Qwen/Qwen3.6-35B-A3B default on arc_pro_b60): strategy multi_node_tp is not offered on arc_pro_b60; "
        "valid: single_node_tp, single_node_tep, single_node_dep",
        "host x2 (Qwen/Qwen3.6-35B-A3B default on arc_pro_b60): Intel XPU runs single-node only",
    ]
    missing = [e for e in expected if e not in text]
    assert not missing, text
    assert "valid: Qwen/Qwen3.6-35B-A3B" in text
    assert "valid: arc_pro_b60, arc_pro_b70" in text
    assert [p for p in problems if "badflag" in p and "--no-such-flag" in p], text
    assert not [p for p in problems if p.startswith("host ok")]
    assert "ok" in plans and "u-recipe" not in plans
    # the mixed replica's problem is reported once, not once per member
    assert len([p for p in problems if p.startswith("replica mixed:")]) == 1


def test_check_is_clean_on_a_valid_mixed_fleet():
    hv = {"s": host(vllm_hardware="dgx_spark_gb10", vllm_variant="nvfp4"), "m": host(vllm_hardware="mi300x"),
          "x": host(vllm_hardware="arc_pro_b60"), "h": host(vllm_hardware="h100", vllm_variant="fp8")}
    hv.update(replica({"d1": {"ansible_host": "10.0.0.1"}, "d2": {"ansible_host": "10.0.0.2"}}, strategy="multi_node_dep"))
    plans, problems = fleet(hv, r=["d1", "d2"]).check(list(hv))
    assert problems == [] and sorted(plans) == sorted(hv)
    assert plans["m"]["env"] == {"VLLM_ROCM_USE_AITER": "1"}
    assert "--enforce-eager" in plans["x"]["argv"]


def test_bind_replaces_whole_known_identifiers_only():
    mapping = {"HEAD_IP": "10.0.0.1", "PREFILL_NODE_1": "p1"}
    assert bind("$HEAD_IP", mapping) == "10.0.0.1"
    assert bind("http://$PREFILL_NODE_1:8001", mapping) == "http://p1:8001"
    assert bind("$HEAD_IP_V6", mapping) == "$HEAD_IP_V6"
    assert bind("$IFACE_NAME", mapping) == "$IFACE_NAME"
    assert bind("no placeholders", mapping) == "no placeholders"


def test_fleet_hosts_keeps_hosts_with_a_recipe():
    hv = {"a": host(), "b": {"ansible_host": "x"}, "c": host()}
    assert fleet_hosts(hv, ["c", "b", "a", "missing"]) == ["c", "a"]
