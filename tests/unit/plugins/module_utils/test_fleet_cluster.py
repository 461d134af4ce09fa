# -*- coding: utf-8 -*-
"""What a replica node needs beyond its argv: the ports its peers reach (and only they may),
whether it serves HTTP (health-gated), and the optional Ray mode."""

from __future__ import annotations

import pytest

from ansible_collections.llmfleet.vllm.plugins.module_utils.fleet import Fleet
from ansible_collections.llmfleet.vllm.plugins.module_utils.argv import flag_value, strip_flags

from test_replica_runtime import replica_inventory


def plans(n=2, **common):
    hv, groups = replica_inventory(n, **common)
    fleet = Fleet(hv, groups)
    out, problems = fleet.check(sorted(hv))
    return out, problems


def test_mp_tensor_parallel_replica_opens_the_master_port_and_only_the_head_serves():
    out, problems = plans(3, vllm_hardware="h200", vllm_strategy="multi_node_tp")
    assert problems == []
    head, w1, w2 = (out["node-%02d" % i] for i in range(3))
    assert (head["role"], head["serves_http"]) == ("head", True)
    assert [(p["role"], p["serves_http"]) for p in (w1, w2)] == [("worker", False)] * 2
    for plan in (head, w1, w2):
        assert [p["port"] for p in plan["cluster_ports"]] == [29501]
        assert plan["member_addresses"] == ["10.9.0.1", "10.9.0.2", "10.9.0.3"]
        assert plan["multinode_backend"] == "mp" and plan["ray"] is None


def test_master_port_follows_the_argv():
    out, problems = plans(2, vllm_hardware="h200", vllm_strategy="multi_node_tp",
                          vllm_extra_args=["--master-port", "29777"])
    assert problems == []
    assert [p["port"] for p in out["node-01"]["cluster_ports"]] == [29777]


def test_hybrid_dep_replica_serves_on_every_node_and_opens_dp_ports():
    out, problems = plans(2, vllm_hardware="h200", vllm_strategy="multi_node_dep")
    assert problems == []
    for name, start in (("node-00", None), ("node-01", "8")):
        plan = out[name]
        assert plan["serves_http"] is True
        assert flag_value(plan["argv"], "--data-parallel-start-rank") == start
        assert [p["port"] for p in plan["cluster_ports"]] == [29550, 29500]


def test_single_node_plans_have_no_cluster_ports():
    hv = {"solo": {"vllm_recipe": "Qwen/Qwen3.6-35B-A3B", "vllm_hardware": "h200", "ansible_host": "10.0.0.9"}}
    plan = Fleet(hv, {}).plan("solo")
    assert (plan["serves_http"], plan["cluster_ports"], plan["member_addresses"], plan["ray"]) == (True, [], [], None)


@pytest.mark.parametrize("strategy", ["multi_node_tp", "multi_node_tp_pp", "multi_node_tep"])
def test_ray_mode_runs_one_engine_on_the_head_and_ray_everywhere(strategy):
    out, problems = plans(2, vllm_hardware="h200", vllm_strategy=strategy, vllm_multinode_backend="ray",
                          vllm_ray_port=6380)
    assert problems == []
    head, worker = out["node-00"], out["node-01"]
    for tok in ("--nnodes", "--node-rank", "--master-addr", "--headless"):
        assert tok not in head["argv"]
    assert head["argv"][:2] == ["vllm", "serve"]
    assert head["argv"][-2:] == ["--distributed-executor-backend", "ray"]
    assert head["env"]["RAY_ADDRESS"] == "10.9.0.1:6380"
    assert head["ray"]["argv"] == ["ray", "start", "--head", "--port", "6380", "--node-ip-address", "10.9.0.1",
                                   "--num-gpus", "8", "--disable-usage-stats", "--block"]
    assert worker["argv"] == [] and worker["command"] == "" and worker["serves_http"] is False
    assert worker["ray"]["argv"] == ["ray", "start", "--address", "10.9.0.1:6380", "--node-ip-address", "10.9.0.2",
                                     "--num-gpus", "8", "--block"]
    assert worker["env"]["VLLM_HOST_IP"] == "10.9.0.2"
    assert [p["port"] for p in head["cluster_ports"]] == [6380]
    # the flags left on the head are all in the head's provenance, and nothing mp-only is
    provenance = [t for item in head["args_provenance"] for t in item["arg"]]
    assert "--nnodes" not in provenance and "ray" in provenance


def test_ray_mode_on_rocm_replaces_the_explicit_mp_backend():
    out, problems = plans(2, vllm_hardware="mi300x", vllm_strategy="multi_node_tp", vllm_multinode_backend="ray")
    assert problems == []
    argv = out["node-00"]["argv"]
    assert argv.count("--distributed-executor-backend") == 1 and argv[-1] == "ray"


def test_ray_mode_is_refused_where_it_does_not_apply():
    _out, problems = plans(2, vllm_hardware="h200", vllm_strategy="multi_node_dep", vllm_multinode_backend="ray")
    assert any("vllm_multinode_backend=ray supports strategies multi_node_tp, multi_node_tp_pp, multi_node_tep; "
               "strategy multi_node_dep runs with mp only" in p for p in problems)
    _out, problems = plans(2, vllm_hardware="h200", vllm_strategy="multi_node_tp", vllm_multinode_backend="slurm")
    assert 'host node-00: vllm_multinode_backend="slurm": expected one of mp, ray' in problems


def test_members_must_agree_on_the_backend():
    hv, groups = replica_inventory(2, vllm_hardware="h200", vllm_strategy="multi_node_tp")
    hv["node-01"]["vllm_multinode_backend"] = "ray"
    _plans, problems = Fleet(hv, groups).check(sorted(hv))
    assert any("members disagree on vllm_multinode_backend" in p for p in problems)


def test_flag_helpers():
    argv = ["vllm", "serve", "m", "--nnodes", "2", "--master-port=1", "--headless", "--x", "y"]
    assert flag_value(argv, "--master-port") == "1" and flag_value(argv, "--nnodes") == "2"
    assert flag_value(argv, "--absent", 7) == 7
    assert strip_flags(argv, ("--nnodes", "--master-port"), ("--headless",)) == ["vllm", "serve", "m", "--x", "y"]
