# -*- coding: utf-8 -*-
"""Multi-node replicas from inventory: per-rank argv bound to real addresses (every golden
multi-node record), and what the fleet adds per node (VLLM_HOST_IP, mp backend on ROCm, RDMA)."""

from __future__ import annotations

import gzip
import json

from ansible_collections.llmfleet.vllm.plugins.module_utils.catalog import Catalog
from ansible_collections.llmfleet.vllm.plugins.module_utils.fleet import Fleet
from ansible_collections.llmfleet.vllm.plugins.module_utils.replica import bind
from ansible_collections.llmfleet.vllm.plugins.module_utils.render import container_argv
from ansible_collections.llmfleet.vllm.plugins.module_utils.resolver import ADVANCED_PRESETS

from plan_views import recipe_view

SEED = "Qwen/Qwen3.6-35B-A3B"


def replica_inventory(n, recipes=None, **common):
    common.setdefault("vllm_recipe", SEED)
    common.setdefault("vllm_cluster_interface", "ens1f0")
    common["vllm_replica"] = "r"
    if recipes:
        common["vllm_recipes_path"] = recipes
    hv = dict(("node-%02d" % i, dict(common, ansible_host="10.9.0.%d" % (i + 1))) for i in range(n))
    return hv, {"r": sorted(hv)}


def test_rocm_replica_gets_an_explicit_mp_backend():
    hv, groups = replica_inventory(2, vllm_hardware="mi300x", vllm_strategy="multi_node_tp")
    plan = Fleet(hv, groups).plan("node-01")
    assert plan["argv"][-2:] == ["--distributed-executor-backend", "mp"]
    assert plan["args_provenance"][-1]["source"].startswith("replica: explicit mp backend")
    argv, env = recipe_view(plan)
    assert "--distributed-executor-backend" not in argv
    assert env == {"GLOO_SOCKET_IFNAME": "ens1f0", "NCCL_SOCKET_IFNAME": "ens1f0", "VLLM_ROCM_USE_AITER": "1"}
    assert plan["env"]["VLLM_HOST_IP"] == "10.9.0.2"
    # NVIDIA picks mp by itself for these launches: nothing added
    hv, groups = replica_inventory(2, vllm_hardware="h200", vllm_strategy="multi_node_tp")
    assert "--distributed-executor-backend" not in Fleet(hv, groups).plan("node-00")["argv"]


def test_infiniband_hca_sets_nccl_and_rdma_container_flags():
    hv, groups = replica_inventory(2, vllm_hardware="h200", vllm_strategy="multi_node_tp_pp",
                                   vllm_infiniband_hca=["mlx5_0", "mlx5_1"])
    plan = Fleet(hv, groups).plan("node-00")
    assert plan["env"]["NCCL_IB_HCA"] == "mlx5_0,mlx5_1"
    assert plan["container_args"] == ["--device", "/dev/infiniband", "--cap-add", "IPC_LOCK", "--ulimit", "memlock=-1:-1"]
    run = container_argv(plan)
    image = run.index(plan["image"])
    assert run[image - 6:image] == plan["container_args"]
    assert run[run.index("--network") + 1] == "host"
    single = Fleet({"h": {"vllm_recipe": SEED, "vllm_hardware": "h200", "vllm_infiniband_hca": "mlx5_0"}}, {}).plan("h")
    assert single["container_args"] == [] and "NCCL_IB_HCA" not in single["env"]


def _golden_multi_node(shared):
    for path in sorted((shared / "golden").glob("*.jsonl.gz")):
        with gzip.open(str(path), "rt") as handle:
            for line in handle:
                rec = json.loads(line)
                if "inputs" in rec:
                    if (rec.get("result") or {}).get("deployType") != "multi_node":
                        continue
                    inp = rec["inputs"]
                    yield rec, dict(vllm_variant=inp["variant"], vllm_hardware=inp["hw"], vllm_strategy=inp["strategy"],
                                    vllm_features=inp.get("features") or [], vllm_feature_modes=inp.get("featureModes"),
                                    vllm_kv_offload=inp.get("kvOffload"), vllm_advanced=_presets(inp.get("advancedArgs"))), \
                        inp["nodeCount"], rec["result"]["headArgv"], rec["result"]["workerArgvs"], rec["result"]["env"]
                elif rec.get("deploy_type") == "multi_node":
                    yield rec, dict(vllm_variant=rec["variant"], vllm_hardware=rec["hardware"], vllm_strategy=rec["strategy"]), \
                        rec["node_count"], rec["head_argv"], rec["worker_argvs"], rec["env"]


def _presets(raw):
    out = []
    raw = list(raw or [])
    while raw:
        pid = next(p for p, (args, _gate) in ADVANCED_PRESETS.items() if raw[:len(args)] == args)
        out.append(pid)
        raw = raw[len(ADVANCED_PRESETS[pid][0]):]
    return out or None


def test_every_golden_multi_node_record_binds_per_rank(shared_dir):
    """Each rank's argv and env, from an inventory replica of node_count hosts, equal the golden
    head/worker renderings after $HEAD_IP/$IFACE_NAME substitution (minus the fleet's own
    per-node additions and the D1 feature env upstream does not apply)."""
    recipes = [str(shared_dir / "recipes")]
    catalog = Catalog(recipes)
    compared = 0
    for rec, inputs, nodes, head, workers, env in _golden_multi_node(shared_dir):
        inputs = dict((k, v) for k, v in inputs.items() if v is not None)
        hv, groups = replica_inventory(nodes, recipes=recipes, vllm_recipe=rec["recipe"], **inputs)
        fleet = Fleet(hv, groups, catalog_factory=lambda paths: catalog)
        mapping = {"HEAD_IP": "10.9.0.1", "IFACE_NAME": "ens1f0"}
        for rank, host in enumerate(sorted(hv)):
            plan = fleet.plan(host)
            argv, our_env = recipe_view(plan)
            want = head if rank == 0 else workers[rank - 1]
            assert argv == [bind(t, mapping) for t in want], (rec.get("case") or rec.get("source"), rank)
            d1 = [k for k, p in plan["env_provenance"].items() if "(D1)" in p.get("source", "")]
            for key in d1:
                our_env.pop(key, None)
            assert our_env == dict((k, bind(str(v), mapping)) for k, v in env.items()), (rec.get("case") or rec.get("source"), rank)
            assert plan["env"]["VLLM_HOST_IP"] == hv[host]["ansible_host"]
        compared += 1
    assert compared > 6000


def test_detected_infiniband_is_used_unless_declared(tmp_path):
    from ansible_collections.llmfleet.vllm.plugins.module_utils import gpu
    (tmp_path / "class" / "infiniband" / "mlx5_1").mkdir(parents=True)
    (tmp_path / "class" / "infiniband" / "mlx5_0").mkdir()
    assert gpu.infiniband_hcas(str(tmp_path)) == ["mlx5_0", "mlx5_1"]
    assert gpu.infiniband_hcas(str(tmp_path / "nothing")) == []
    facts = {"vendor": "nvidia", "profile": "h200", "count": 8, "infiniband_hcas": ["mlx5_0", "mlx5_1"]}
    hv, groups = replica_inventory(2, vllm_hardware="h200", vllm_strategy="multi_node_tp")
    plan = Fleet(hv, groups, facts={"node-00": facts}).plan("node-00")
    assert plan["env"]["NCCL_IB_HCA"] == "mlx5_0,mlx5_1"
    assert plan["env_provenance"]["NCCL_IB_HCA"]["source"] == "replica: InfiniBand HCAs detected on the host"
    assert "--device" in plan["container_args"]
    hv["node-00"]["vllm_infiniband_hca"] = "mlx5_3"
    assert Fleet(hv, groups, facts={"node-00": facts}).plan("node-00")["env"]["NCCL_IB_HCA"] == "mlx5_3"
