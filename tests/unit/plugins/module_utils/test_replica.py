# -*- coding: utf-8 -*-
"""replica.py on plain data: a replica's layout, the host plan it assembles, Ray mode and ports.

tests/unit/plugins/module_utils/test_fleet*.py and test_replica_runtime.py cover the same through ``Fleet`` with real recipes.
"""

from __future__ import annotations

import pytest

from ansible_collections.llmfleet.vllm.plugins.module_utils.inventory_vars import FleetError
from ansible_collections.llmfleet.vllm.plugins.module_utils.replica import (
    DEFAULT_DP_MASTER_PORT, DEFAULT_MASTER_PORT, assemble, api_port, cluster_ports, disagreements, host_extras, layout,
    node_of, ranked, set_env)


def vars_of(hostvars):
    return lambda h: hostvars[h]


def address(h):
    return "10.0.0.%s" % h[-1]


def dep(**kw):
    """A resolved deployment with the keys assemble() reads."""
    out = {"recipe": "org/m", "model": "org/m", "variant": "default", "hardware": "h200", "gpu_count": 8,
           "strategy": "multi_node_tp", "deploy_type": "multi_node", "node_count": 2, "image": "vllm/vllm-openai:v0.28.0",
           "image_source": "recipe", "docker_gpu_flags": ["--gpus", "all"], "features": [], "feature_modes": {},
           "kv_offload": None, "min_vllm_version": None, "pools": None, "warnings": [], "notes": [],
           "router": {"argv": ["vllm-router", "--port", "$ROUTER_PORT"]},
           "nodes": [{"role": "head", "rank": 0, "argv": ["vllm", "serve", "org/m", "--nnodes", "2", "--master-addr", "$HEAD_IP"],
                      "env": {"NCCL_SOCKET_IFNAME": "$IFACE_NAME"}, "args_provenance": [
                          {"arg": ["--master-addr", "$HEAD_IP"], "source": "strategy"}],
                      "env_provenance": {"NCCL_SOCKET_IFNAME": {"source": "strategy"}}},
                     {"role": "worker", "rank": 1, "argv": ["vllm", "serve", "org/m", "--nnodes", "2", "--headless"],
                      "env": {}, "args_provenance": [], "env_provenance": {}}]}
    out.update(kw)
    return out


def test_set_env_records_the_value_it_replaces():
    env, prov = {"A": "old"}, {"A": {"source": "recipe"}}
    set_env(env, prov, "A", "new", "why")
    assert env == {"A": "new"} and prov["A"] == {"source": "replica: why", "replaced": [{"value": "old", "source": "recipe"}]}
    set_env(env, prov, "B", "b", "other")
    assert prov["B"] == {"source": "replica: other"}
    set_env(env, prov, "B", "b", "again")  # the same value replaces nothing
    assert prov["B"] == {"source": "replica: again"}


def test_disagreements_name_each_shared_variable_and_every_members_value():
    hv = {"a": {"vllm_recipe": "x", "vllm_port": 1}, "b": {"vllm_recipe": "y", "vllm_port": 2}}
    assert disagreements("r", ["a", "b"], vars_of(hv)) == [
        'replica r: members disagree on vllm_recipe (a="x", b="y"); every member of a replica must run the same deployment']
    assert disagreements("r", ["a"], vars_of(hv)) == []


def test_ranked_by_name_or_by_explicit_rank():
    assert ranked(["b", "a"], vars_of({"a": {}, "b": {}})) == ["a", "b"]
    assert ranked(["a", "b"], vars_of({"a": {"vllm_node_rank": 1}, "b": {"vllm_node_rank": 0}})) == ["b", "a"]
    with pytest.raises(FleetError, match="set vllm_node_rank but b do not"):
        ranked(["a", "b"], vars_of({"a": {"vllm_node_rank": 0}, "b": {}}))
    with pytest.raises(FleetError, match=r"expected each of 0..1 exactly once"):
        ranked(["a", "b"], vars_of({"a": {"vllm_node_rank": 0}, "b": {"vllm_node_rank": 2}}))


def test_layout_by_rank():
    hv = {"n1": {"vllm_cluster_interface": "ens1"}, "n2": {}}
    place = layout("r", "n1", ["n2", "n1"], False, vars_of(hv), address)
    assert place == {"role": "head", "rank": 0, "members": ["n1", "n2"], "resolve": {"node_count": 2},
                     "bindings": {"HEAD_IP": "10.0.0.1", "IFACE_NAME": "ens1"}}
    assert layout("r", "n2", ["n2", "n1"], False, vars_of(hv), address)["role"] == "worker"


def test_layout_of_pd_pools():
    hv = {"p1": {"vllm_pd_role": "prefill", "vllm_pd_dp_rpc_port": 999}, "p2": {"vllm_pd_role": "prefill"},
          "d1": {"vllm_pd_role": "decode"}, "r1": {"vllm_pd_role": "router", "vllm_router_port": 4000}}
    place = layout("pd", "p2", sorted(hv), True, vars_of(hv), address)
    assert place["role"] == "prefill" and place["rank"] == 1
    assert place["members"] == ["p1", "p2", "d1", "r1"]
    assert place["resolve"] == {"node_count": 3, "pd_nodes": {"prefill": 2, "decode": 1}}
    assert place["bindings"] == {"PREFILL_NODE_1": "10.0.0.1", "PREFILL_NODE_2": "10.0.0.2", "PREFILL_DP_RPC_PORT": "999",
                                 "DECODE_NODE_1": "10.0.0.1", "DECODE_DP_RPC_PORT": "13345",
                                 "ROUTER_HOST": "10.0.0.1", "ROUTER_PORT": "4000"}


@pytest.mark.parametrize("roles, message", [
    ({"a": "prefill", "b": None, "c": "router"}, "replica pd (pd_cluster): b set no vllm_pd_role; each member is one of prefill, decode, router"),
    ({"a": "prefill", "b": "prefill", "c": "router"}, "replica pd (pd_cluster): no member has vllm_pd_role=decode"),
    ({"a": "prefill", "b": "decode"}, "replica pd (pd_cluster): expected exactly one member with vllm_pd_role=router, found 0"),
])
def test_pd_layout_errors(roles, message):
    hv = dict((h, {"vllm_pd_role": r}) for h, r in roles.items())
    with pytest.raises(FleetError) as exc:
        layout("pd", "a", sorted(hv), True, vars_of(hv), address)
    assert exc.value.problems == [message]


def test_node_of():
    d = dep()
    assert node_of(d, {"role": "worker", "rank": 1}, False) is d["nodes"][1]
    assert node_of(d, {"role": "worker", "rank": 1}, True) is d["nodes"][1]
    router = node_of(d, {"role": "router", "rank": 0}, True)
    assert router["argv"] == d["router"]["argv"] and router["env"] == {} and router["rank"] == 0


def test_host_extras_and_api_port():
    hv = {"vllm_extra_args": ["--x"], "vllm_port": 9000}
    assert host_extras(hv, ["a", "b"], "single") == ["--x", "--served-model-name", "a", "b", "--port", "9000"]
    assert host_extras(hv, [], "prefill") == ["--x"] and host_extras(hv, [], "router") == ["--x"]
    assert host_extras({"vllm_port": 8000}, [], "head") == []
    assert [api_port(hv, r) for r in ("single", "prefill", "decode", "router")] == [9000, 8001, 8002, 30000]
    assert api_port({}, "head") == 8000


def test_cluster_ports():
    assert cluster_ports(["vllm", "serve", "m"], None) == []
    assert cluster_ports(["--nnodes", "2"], None) == [{"port": DEFAULT_MASTER_PORT, "purpose": "torch.distributed master (--master-port)"}]
    assert cluster_ports(["--nnodes", "2", "--master-port", "$P"], None) == []  # unbound: no port to open
    assert [p["port"] for p in cluster_ports(["--data-parallel-address", "x", "--data-parallel-rpc-port=7"], {"port": 6379})] == [
        6379, 7, DEFAULT_DP_MASTER_PORT]


def test_assemble_a_single_host_binds_nothing_and_adds_nothing():
    node = {"role": "single", "rank": 0, "argv": ["vllm", "serve", "org/m"], "env": {"A": "1"}, "args_provenance": [],
            "env_provenance": {}}
    d = dep(deploy_type="single_node", node_count=1, nodes=[node])
    plan = assemble("h", {"vllm_image": "mine:1"}, d, d["nodes"][0], None, ["h"], {}, [], address)
    assert plan["argv"] == ["vllm", "serve", "org/m"] and plan["env"] == {"A": "1"} and plan["command"]
    assert plan["image"] == "mine:1" and plan["image_source"] == "inventory (vllm_image)"
    assert plan["served_model_names"] == ["org/m"] and plan["port"] == 8000
    assert (plan["multinode_backend"], plan["ray"], plan["cluster_ports"], plan["member_addresses"]) == (None, None, [], [])
    assert plan["container_args"] == [] and plan["serves_http"]


def test_assemble_a_replica_node_binds_and_adds_the_runtime():
    d = dep()
    bindings = {"HEAD_IP": "10.0.0.1", "IFACE_NAME": "ens1"}
    plan = assemble("n1", {}, d, d["nodes"][0], "r", ["n1", "n2"], bindings, ["q"], address, "amd", ["mlx5_0", "mlx5_1"])
    assert plan["argv"] == ["vllm", "serve", "org/m", "--nnodes", "2", "--master-addr", "10.0.0.1",
                            "--distributed-executor-backend", "mp"]
    assert plan["args_provenance"][0]["arg"] == ["--master-addr", "10.0.0.1"]
    assert plan["env"] == {"NCCL_SOCKET_IFNAME": "ens1", "VLLM_HOST_IP": "10.0.0.1", "NCCL_IB_HCA": "mlx5_0,mlx5_1"}
    assert plan["env_provenance"]["NCCL_IB_HCA"] == {"source": "replica: InfiniBand HCAs detected on the host"}
    assert plan["container_args"] == ["--device", "/dev/infiniband", "--cap-add", "IPC_LOCK", "--ulimit", "memlock=-1:-1"]
    assert plan["multinode_backend"] == "mp" and plan["member_addresses"] == ["10.0.0.1", "10.0.0.2"]
    assert plan["cluster_ports"] == [{"port": DEFAULT_MASTER_PORT, "purpose": "torch.distributed master (--master-port)"}]
    assert plan["unbound_placeholders"] == [] and plan["served_model_names"] == ["q"]
    # declared HCAs win over detected ones; [] turns them off; NVIDIA needs no explicit backend
    plan = assemble("n2", {"vllm_infiniband_hca": []}, d, d["nodes"][1], "r", ["n1", "n2"], bindings, [], address, "nvidia",
                    ["mlx5_0"])
    assert "NCCL_IB_HCA" not in plan["env"] and plan["container_args"] == []
    assert "--distributed-executor-backend" not in plan["argv"] and not plan["serves_http"]


def test_assemble_ray_mode():
    d = dep()
    hv = {"vllm_multinode_backend": "ray", "vllm_ray_port": 7000}
    head = assemble("n1", hv, d, d["nodes"][0], "r", ["n1", "n2"], {"HEAD_IP": "10.0.0.1"}, [], address)
    assert head["argv"] == ["vllm", "serve", "org/m", "--distributed-executor-backend", "ray"]
    assert head["args_provenance"][0]["arg"] == []
    assert head["env"]["RAY_ADDRESS"] == "10.0.0.1:7000"
    assert head["ray"]["argv"][:5] == ["ray", "start", "--head", "--port", "7000"]
    assert head["cluster_ports"] == [{"port": 7000, "purpose": "Ray GCS"}]
    worker = assemble("n2", hv, d, d["nodes"][1], "r", ["n1", "n2"], {"HEAD_IP": "10.0.0.1"}, [], address)
    assert worker["argv"] == [] and worker["command"] == "" and not worker["serves_http"]
    assert worker["ray"] == {"role": "worker", "address": "10.0.0.1:7000", "port": 7000,
                             "argv": ["ray", "start", "--address", "10.0.0.1:7000", "--node-ip-address", "10.0.0.2",
                                      "--num-gpus", "8", "--block"]}
    with pytest.raises(FleetError, match="strategy multi_node_dep runs with mp only"):
        assemble("n1", hv, dep(strategy="multi_node_dep"), d["nodes"][0], "r", ["n1", "n2"], {}, [], address)


def test_assemble_a_router():
    d = dep(deploy_type="pd_cluster")
    node = node_of(d, {"role": "router", "rank": 0}, True)
    plan = assemble("r1", {"vllm_router_port": 4000}, d, node, "pd", ["p1", "d1", "r1"], {"ROUTER_PORT": "4000"}, [], address,
                    "amd", ["mlx5_0"])
    assert plan["argv"] == ["vllm-router", "--port", "4000"] and plan["port"] == 4000 and plan["serves_http"]
    assert plan["env"] == {} and plan["container_args"] == [] and plan["multinode_backend"] is None
    assert plan["member_addresses"] == ["10.0.0.1", "10.0.0.1", "10.0.0.1"]
