# -*- coding: utf-8 -*-
"""Several instances on one machine: vllm_gpu_ids (GPU count, visibility env per brand, container
flags) and the machine checks (GPU ids, ports and unit names used twice; idle GPUs)."""

from __future__ import annotations

import json

import pytest

from ansible_collections.llmfleet.vllm.plugins.module_utils.fleet import Fleet
from ansible_collections.llmfleet.vllm.plugins.module_utils.inventory_vars import FleetError, type_problems
from ansible_collections.llmfleet.vllm.plugins.module_utils.machines import check_machines, gpu_count_of, machine_of
from ansible_collections.llmfleet.vllm.plugins.module_utils.render import (
    container_argv, container_env, container_gpu_flags, docker_gpu_selection)
from ansible_collections.llmfleet.vllm.plugins.module_utils.service import service_spec
from ansible_collections.llmfleet.vllm.plugins.module_utils.systemd_unit import exec_line

SEED = "Qwen/Qwen3.6-35B-A3B"


def host(**kw):
    hv = {"vllm_recipe": SEED, "vllm_hardware": "h200", "vllm_variant": "fp8"}
    hv.update(kw)
    return hv


def box(n, **kw):
    """``n`` hosts on one machine 10.0.0.1, each with its own GPU, port and unit name."""
    return dict(("q%d" % i, host(ansible_host="10.0.0.1", vllm_gpu_ids=[i], vllm_port=8000 + i, vllm_serve_name="q%d" % i, **kw))
                for i in range(n))


def check(hv, facts=None, groups=None):
    return Fleet(hv, groups or {"all": sorted(hv)}, facts=facts).check(sorted(hv))


def mine(problems):
    return [p for p in problems if p.startswith("machine ") or "vllm_gpu_ids" in p or "GPU counts" in p]


# ---------------------------------------------------------------------- the variable
def test_gpu_ids_type():
    assert type_problems("h", {"vllm_gpu_ids": [0, 3]}) == []
    for bad in ([], [0, 0], [-1], ["0"], [True], 1, "0,1"):
        assert type_problems("h", {"vllm_gpu_ids": bad}) == [
            "host h: vllm_gpu_ids=%s: expected a list of distinct GPU indices >= 0, e.g. [0, 1]" % json.dumps(bad)]


def test_machine_is_ansible_host_else_the_inventory_hostname():
    assert machine_of("a", {"ansible_host": "10.0.0.1"}) == "10.0.0.1"
    assert machine_of("a", {}) == "a"


def test_the_gpu_count_follows_the_ids():
    assert gpu_count_of("h", {}, 8) == 8
    assert gpu_count_of("h", {"vllm_gpu_ids": [2, 3]}, 8) == 2
    assert gpu_count_of("h", {"vllm_gpu_ids": [2, 3], "vllm_gpu_count": 2}, None) == 2
    with pytest.raises(FleetError) as err:
        gpu_count_of("h", {"vllm_gpu_ids": [2, 3], "vllm_gpu_count": 4}, 4)
    assert err.value.problems == ["host h: vllm_gpu_count=4 but vllm_gpu_ids=[2, 3] names 2 GPU(s); set one of them, "
                                  "or make them agree"]


def test_the_count_drives_the_resolver():
    """D6 as with vllm_gpu_count: two GPUs of an H100 box plan the default (bf16, 84 GB) variant at TP 2."""
    plan = Fleet({"h": host(vllm_hardware="h100", vllm_variant="default", vllm_gpu_ids=[4, 5])}, {}).plan("h")
    same = Fleet({"h": host(vllm_hardware="h100", vllm_variant="default", vllm_gpu_count=2)}, {}).plan("h")
    assert plan["gpu_count"] == 2 and plan["argv"] == same["argv"]
    assert plan["argv"][plan["argv"].index("--tensor-parallel-size") + 1] == "2"


# ---------------------------------------------------------------------- env and container flags
@pytest.mark.parametrize("hardware, name", [("h200", "CUDA_VISIBLE_DEVICES"), ("mi300x", "ROCR_VISIBLE_DEVICES"),
                                            ("arc_pro_b60", "ZE_AFFINITY_MASK")])
def test_visibility_env_per_brand(hardware, name):
    plan = Fleet({"h": host(vllm_hardware=hardware, vllm_variant=None, vllm_gpu_ids=[2, 3])}, {}).plan("h")
    assert plan["env"][name] == "2,3" and plan["gpu_ids"] == [2, 3]
    assert plan["env_provenance"][name] == {"source": "inventory: vllm_gpu_ids"}
    others = set(["CUDA_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ZE_AFFINITY_MASK"]) - set([name])
    assert not others & set(plan["env"])


def test_no_ids_no_env_and_the_brands_flags():
    plan = Fleet({"h": host()}, {}).plan("h")
    assert "CUDA_VISIBLE_DEVICES" not in plan["env"] and plan["gpu_ids"] is None
    assert plan["docker_gpu_flags"] == ["--gpus", "all"]


def test_ids_and_extra_env_must_agree():
    with pytest.raises(FleetError, match=r"host h: vllm_extra_env sets CUDA_VISIBLE_DEVICES=0 but vllm_gpu_ids=\[1\] "
                                         r"selects 1; set only vllm_gpu_ids"):
        Fleet({"h": host(vllm_gpu_ids=[1], vllm_extra_env={"CUDA_VISIBLE_DEVICES": "0"})}, {}).plan("h")
    plan = Fleet({"h": host(vllm_gpu_ids=[1], vllm_extra_env={"CUDA_VISIBLE_DEVICES": "1"})}, {}).plan("h")
    assert plan["env"]["CUDA_VISIBLE_DEVICES"] == "1"


def test_ids_on_a_tpu_are_refused():
    with pytest.raises(FleetError, match=r"vllm_gpu_ids=\[0, 1\] selects GPUs on NVIDIA, AMD or Intel hardware; the host's "
                                         "hardware is tpu"):
        Fleet({"h": host(vllm_hardware="trillium", vllm_gpu_ids=[0, 1])}, {}).plan("h")


def test_nvidia_docker_flags_select_the_devices():
    one = Fleet({"h": host(vllm_gpu_ids=[3])}, {}).plan("h")
    two = Fleet({"h": host(vllm_gpu_ids=[0, 1])}, {}).plan("h")
    assert one["docker_gpu_flags"] == ["--gpus", "device=3"]
    # docker reads --gpus as CSV: the argv element carries the double quotes (shell: --gpus '"device=0,1"')
    assert two["docker_gpu_flags"] == ["--gpus", '"device=0,1"']


def test_amd_and_intel_keep_every_render_node():
    amd = Fleet({"h": host(vllm_hardware="mi300x", vllm_variant=None, vllm_gpu_ids=[1])}, {}).plan("h")
    assert amd["docker_gpu_flags"] == Fleet({"h": host(vllm_hardware="mi300x", vllm_variant=None)}, {}).plan("h")["docker_gpu_flags"]
    assert "--device=/dev/dri" in amd["docker_gpu_flags"]


def test_a_router_takes_no_gpu_ids():
    hv = dict((n, host(vllm_variant=None, vllm_replica="pd", vllm_strategy="pd_cluster", vllm_pd_role=r,
                       vllm_cluster_interface="ens1", ansible_host=a, vllm_gpu_ids=[0]))
              for n, r, a in (("p", "prefill", "10.0.0.1"), ("d", "decode", "10.0.0.2"), ("r", "router", "10.0.0.3")))
    fleet = Fleet(hv, {"all": list(hv), "pd": list(hv)})
    assert fleet.plan("p")["env"]["CUDA_VISIBLE_DEVICES"] == "0"
    router = fleet.plan("r")
    assert router["gpu_ids"] is None and "CUDA_VISIBLE_DEVICES" not in router["env"]


# ---------------------------------------------------------------------- machine checks
def test_a_good_box_of_four():
    plans, problems = check(box(4))
    assert mine(problems) == []
    assert [plans[h]["env"]["CUDA_VISIBLE_DEVICES"] for h in sorted(plans)] == ["0", "1", "2", "3"]
    assert [plans[h]["port"] for h in sorted(plans)] == [8000, 8001, 8002, 8003]
    assert all(not [w for w in p["warnings"] if w.startswith("idle GPUs")] for p in plans.values())


def test_overlapping_ids_on_one_machine():
    hv = box(3)
    hv["q1"]["vllm_gpu_ids"] = [1, 2]
    hv["q2"]["vllm_gpu_ids"] = [2, 0]
    _plans, problems = check(hv)
    assert mine(problems) == ["machine 10.0.0.1 (hosts q0, q1, q2): vllm_gpu_ids overlap on GPU 0, 2 (q0=[0], q1=[1, 2], "
                              "q2=[2, 0]); each GPU of a machine serves one host"]


def test_hosts_of_other_machines_may_use_the_same_ids_ports_and_names():
    hv = box(2)
    hv["q1"].update(ansible_host="10.0.0.2", vllm_gpu_ids=[0], vllm_port=8000, vllm_serve_name="q0")
    assert mine(check(hv)[1]) == []


def test_a_host_without_ids_on_a_shared_machine():
    hv = box(2)
    del hv["q1"]["vllm_gpu_ids"]
    problems = mine(check(hv)[1])
    assert problems == ["machine 10.0.0.1 (hosts q0, q1): q1 set no vllm_gpu_ids and would use every GPU of the machine; "
                        "set vllm_gpu_ids (distinct GPU indices) on each vLLM host of one machine"]


def test_the_same_port_on_one_machine():
    hv = box(3)
    hv["q2"]["vllm_port"] = 8000
    assert mine(check(hv)[1]) == [
        "machine 10.0.0.1 (hosts q0, q2): port 8000 is used by more than one service: q0 (vllm_port=8000, API), "
        "q2 (vllm_port=8000, API); each service of one machine needs its own ports (vllm_port, vllm_router_port, or "
        "the rendezvous port flags in vllm_extra_args)"]


def test_an_api_port_on_a_replicas_rendezvous_port():
    """A single host's API port on the master port of a replica head on the same machine."""
    hv = {"solo": host(ansible_host="10.0.0.1", vllm_gpu_ids=[7], vllm_port=29501, vllm_serve_name="solo")}
    for name, addr, ids in (("n1", "10.0.0.1", [0, 1, 2, 3, 4, 5, 6]), ("n2", "10.0.0.2", [0, 1, 2, 3, 4, 5, 6])):
        hv[name] = host(vllm_variant="default", vllm_replica="r", vllm_strategy="multi_node_tp_pp", vllm_cluster_interface="ens1",
                        ansible_host=addr, vllm_gpu_ids=ids)
    plans, problems = check(hv, groups={"all": sorted(hv), "r": ["n1", "n2"]})
    assert plans["n1"]["rank"] == 0
    clash = [p for p in mine(problems) if "port 29501" in p]
    assert clash == ["machine 10.0.0.1 (hosts n1, solo): port 29501 is used by more than one service: n1 "
                     "(torch.distributed master (--master-port), replica r), solo (vllm_port=29501, API); each service "
                     "of one machine needs its own ports (vllm_port, vllm_router_port, or the rendezvous port flags in "
                     "vllm_extra_args)"]


def test_the_same_unit_name_on_one_machine():
    hv = box(3)
    hv["q0"].pop("vllm_serve_name")
    hv["q1"].pop("vllm_serve_name")
    hv["q2"]["vllm_serve_name"] = "serve"
    assert mine(check(hv)[1]) == [
        "machine 10.0.0.1 (hosts q0, q1, q2): vllm_serve_name=serve on each of them (unit vllm-serve.service would "
        "collide); give each host of one machine its own vllm_serve_name"]


def test_every_machine_problem_at_once():
    hv = box(2)
    hv["q1"].update(vllm_gpu_ids=[0], vllm_port=8000, vllm_serve_name="q0")
    problems = mine(check(hv)[1])
    assert [p.split(": ", 1)[1].split(" ")[0] for p in problems] == ["vllm_gpu_ids", "port", "vllm_serve_name=q0"]


def test_ids_beyond_the_detected_gpus():
    facts = {"q0": {"vendor": "nvidia", "count": 4, "profile": "h200"}}
    hv = {"q0": host(ansible_host="10.0.0.1", vllm_gpu_ids=[3, 4, 5])}
    assert "host q0: vllm_gpu_ids=[3, 4, 5] names GPU 4, 5 but the host has 4 GPU(s); valid: 0-3" in check(hv, facts)[1]


def test_replica_members_with_different_counts():
    hv = dict((n, host(vllm_variant="default", vllm_replica="r", vllm_strategy="multi_node_tp_pp", vllm_cluster_interface="ens1",
                       ansible_host=a, vllm_gpu_ids=ids))
              for n, a, ids in (("n1", "10.0.0.1", [0, 1]), ("n2", "10.0.0.2", [0, 1, 2, 3])))
    problems = check(hv, groups={"all": sorted(hv), "r": ["n1", "n2"]})[1]
    assert "replica r: members plan with different GPU counts (n1=2 (vllm_gpu_ids=[0, 1]), n2=4 (vllm_gpu_ids=[0, 1, 2, 3])); " \
           "vllm_gpu_ids must name as many GPUs on every member" in problems


# ---------------------------------------------------------------------- idle GPUs
def idle(plan):
    return [w for w in plan["warnings"] if w.startswith("idle GPUs")]


def test_idle_gpus_of_the_profile():
    plans, _problems = check({"h": host()})  # fp8 on an 8-GPU H200 runs at TP 1
    assert idle(plans["h"]) == ["idle GPUs: the plan uses 1 of the host's 8 GPUs; set vllm_gpu_ids to run more instances "
                                "on this machine (one inventory host each, with its own vllm_port and vllm_serve_name)"]


def test_idle_gpus_detected():
    facts = {"h": {"vendor": "nvidia", "count": 4, "profile": "h200"}}
    plans, _problems = check({"h": host(vllm_gpu_count=4)}, facts)
    assert idle(plans["h"]) == ["idle GPUs: the plan uses 1 of the host's 4 GPUs; set vllm_gpu_ids to run more instances "
                                "on this machine (one inventory host each, with its own vllm_port and vllm_serve_name)"]


def test_no_idle_warning_when_every_gpu_is_used_or_named():
    plans, _problems = check({"full": host(vllm_hardware="h100", vllm_variant="default", vllm_gpu_count=2),
                              "one": host(vllm_gpu_ids=[5])})
    assert idle(plans["full"]) == [] and idle(plans["one"]) == []


def test_idle_gpus_among_the_named_ones():
    plans, _problems = check({"h": host(vllm_gpu_ids=[0, 1])})
    assert idle(plans["h"]) == ["idle GPUs: the plan uses 1 of the 2 GPUs vllm_gpu_ids=[0, 1] names; name fewer GPUs "
                                "(and give the others to another instance)"]


def test_check_machines_directly():
    plans = {"a": {"role": "single", "serves_http": True, "port": 8000, "rank": 0, "cluster_ports": [], "replica": None,
                   "deploy_type": "single_node", "argv": ["vllm", "serve", "m"], "gpu_count": 1, "warnings": []}}
    plans["b"] = dict(plans["a"], warnings=[])
    hv = {"a": {"ansible_host": "m1", "vllm_gpu_ids": [0], "vllm_serve_name": "a"},
          "b": {"ansible_host": "m1", "vllm_gpu_ids": [1], "vllm_serve_name": "b"}}
    problems = check_machines(plans, hv.get)
    assert len(problems) == 1 and problems[0].startswith("machine m1 (hosts a, b): port 8000")


# ---------------------------------------------------------------------- container runtime
def test_gpu_selection_and_engine_flags():
    assert docker_gpu_selection(["--gpus", "all"], [2]) == ["--gpus", "device=2"]
    assert docker_gpu_selection(["--gpus", "all"], [0, 1]) == ["--gpus", '"device=0,1"']
    amd = ["--device=/dev/kfd", "--device=/dev/dri", "--group-add", "video"]
    assert docker_gpu_selection(amd, [1]) == amd
    assert container_gpu_flags(["--gpus", '"device=0,1"'], "docker") == ["--gpus", '"device=0,1"']
    assert container_gpu_flags(["--gpus", '"device=0,1"'], "podman") == [
        "--device", "nvidia.com/gpu=0", "--device", "nvidia.com/gpu=1"]
    assert container_gpu_flags(["--gpus", "device=3"], "podman") == ["--device", "nvidia.com/gpu=3"]
    assert container_gpu_flags(["--gpus", "all"], "podman") == ["--device", "nvidia.com/gpu=all"]
    assert container_gpu_flags(amd, "podman") == amd


def test_the_container_numbers_selected_gpus_from_zero():
    env = {"CUDA_VISIBLE_DEVICES": "2,3", "A": "1"}
    assert container_env(env, ["--gpus", '"device=2,3"']) == {"A": "1"}
    assert container_env(env, ["--device", "nvidia.com/gpu=2", "--device", "nvidia.com/gpu=3"]) == {"A": "1"}
    assert container_env(env, ["--gpus", "all"]) == env  # every GPU visible: the machine's indices apply
    assert container_env(env, ["--device", "nvidia.com/gpu=all"]) == env
    assert container_env({"ROCR_VISIBLE_DEVICES": "1"}, ["--device=/dev/dri"]) == {"ROCR_VISIBLE_DEVICES": "1"}


SETTINGS = {"allow_unauthenticated": True}


def test_service_docker_podman_and_venv():
    plan = Fleet({"h": host(vllm_gpu_ids=[2, 3], vllm_serve_name="b")}, {}).plan("h")
    docker = service_spec(plan, SETTINGS)
    assert docker["problems"] == []
    at = docker["exec"].index("--gpus")
    assert docker["exec"][at:at + 2] == ["--gpus", '"device=2,3"']
    # systemd hands docker the word "device=2,3" with its double quotes
    assert exec_line(docker["exec"]).count('--gpus "\\"device=2,3\\""') == 1
    assert "CUDA_VISIBLE_DEVICES" not in docker["env"]
    podman = service_spec(plan, dict(SETTINGS, engine="podman", engine_path="/usr/bin/podman"))
    assert "--gpus" not in podman["exec"] and "CUDA_VISIBLE_DEVICES" not in podman["env"]
    at = podman["exec"].index("nvidia.com/gpu=2")
    assert podman["exec"][at - 1:at + 3] == ["--device", "nvidia.com/gpu=2", "--device", "nvidia.com/gpu=3"]
    venv = service_spec(plan, dict(SETTINGS, runtime="venv", version="0.28.0"))
    assert venv["env"]["CUDA_VISIBLE_DEVICES"] == "2,3" and "--gpus" not in venv["exec"]


def test_service_amd_container_selects_with_the_env():
    plan = Fleet({"h": host(vllm_hardware="mi300x", vllm_variant=None, vllm_gpu_ids=[5])}, {}).plan("h")
    spec = service_spec(plan, SETTINGS)
    assert spec["env"]["ROCR_VISIBLE_DEVICES"] == "5" and "--device=/dev/dri" in spec["exec"]


def test_container_argv_inline_env():
    plan = Fleet({"h": host(vllm_gpu_ids=[1])}, {}).plan("h")
    argv = container_argv(plan)
    assert argv[argv.index("--gpus") + 1] == "device=1" and "CUDA_VISIBLE_DEVICES=1" not in argv
    assert "CUDA_VISIBLE_DEVICES=1" in container_argv(dict(plan, docker_gpu_flags=["--gpus", "all"]))
