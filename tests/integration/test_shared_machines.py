# -*- coding: utf-8 -*-
"""Several vLLM instances on one machine (issue 12 §3), through real ``ansible-playbook`` runs.

Run 1 (``plan.yml``): a good pair on one H200 box (the same ``ansible_host``, distinct
``vllm_gpu_ids``, ports and unit names) plans cleanly; each plan selects its own GPUs, and the
pair has no idle-GPU warning while a lone 8-GPU box at TP 1 gets one.
Run 2 (``preflight.yml``, JSON callback): machines whose hosts share GPU ids, a port, or a unit
name fail the preflight in one run that names every problem, before any host is contacted.
"""

from __future__ import annotations

import json

import pytest
import yaml

from playbook_runner import JSON_CALLBACK, REPO, run, tool

SEED = "Qwen/Qwen3.6-35B-A3B"
#: Unreachable documentation addresses (TEST-NET-2): a contacted host would show up as UNREACHABLE.
NET = "198.51.100.%d"


def good_inventory():
    return {"all": {
        "vars": {"vllm_recipe": SEED, "vllm_hardware": "h200", "vllm_variant": "fp8"},
        "hosts": {
            "box1-a": {"ansible_host": NET % 61, "vllm_gpu_ids": [0, 1, 2, 3], "vllm_port": 8000, "vllm_serve_name": "a"},
            "box1-b": {"ansible_host": NET % 61, "vllm_gpu_ids": [4], "vllm_port": 8001, "vllm_serve_name": "b",
                       "vllm_variant": "fp8"},
            "lone": {"ansible_host": NET % 62},
        },
    }}


def bad_inventory():
    return {"all": {
        "vars": {"vllm_recipe": SEED, "vllm_hardware": "h200", "vllm_variant": "fp8"},
        "hosts": {
            # a good pair: passes
            "ok-a": {"ansible_host": NET % 71, "vllm_gpu_ids": [0], "vllm_port": 8000, "vllm_serve_name": "a"},
            "ok-b": {"ansible_host": NET % 71, "vllm_gpu_ids": [1], "vllm_port": 8001, "vllm_serve_name": "b"},
            # overlapping GPU ids
            "ov-a": {"ansible_host": NET % 72, "vllm_gpu_ids": [0, 1], "vllm_port": 8000, "vllm_serve_name": "a"},
            "ov-b": {"ansible_host": NET % 72, "vllm_gpu_ids": [1, 2], "vllm_port": 8001, "vllm_serve_name": "b"},
            # the same port
            "port-a": {"ansible_host": NET % 73, "vllm_gpu_ids": [0], "vllm_port": 9000, "vllm_serve_name": "a"},
            "port-b": {"ansible_host": NET % 73, "vllm_gpu_ids": [1], "vllm_port": 9000, "vllm_serve_name": "b"},
            # the same unit name (both default to vllm_serve_name serve)
            "name-a": {"ansible_host": NET % 74, "vllm_gpu_ids": [0], "vllm_port": 8000},
            "name-b": {"ansible_host": NET % 74, "vllm_gpu_ids": [1], "vllm_port": 8001},
            # one host without ids beside one with them; ids the count contradicts
            "noid-a": {"ansible_host": NET % 75, "vllm_gpu_ids": [0], "vllm_port": 8000, "vllm_serve_name": "a"},
            "noid-b": {"ansible_host": NET % 75, "vllm_port": 8001, "vllm_serve_name": "b"},
            "count": {"ansible_host": NET % 76, "vllm_gpu_ids": [0, 1], "vllm_gpu_count": 4},
        },
    }}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("machines")
    good = tmp / "good.yml"
    good.write_text(yaml.safe_dump(good_inventory(), sort_keys=False))
    bad = tmp / "bad.yml"
    bad.write_text(yaml.safe_dump(bad_inventory(), sort_keys=False))
    plan_dir = tmp / "plan"
    plan = run([tool("ansible-playbook"), "-i", str(good), str(REPO / "playbooks" / "plan.yml"),
                "-e", "vllm_plan_dir=%s" % plan_dir], tmp)
    pre = run([tool("ansible-playbook"), "-i", str(bad), str(REPO / "playbooks" / "preflight.yml")], tmp, JSON_CALLBACK)
    out = json.loads(pre.stdout)
    task = next(t for p in out["plays"] for t in p["tasks"] if t["task"]["name"].startswith("Preflight | resolve and check"))
    (result,) = task["hosts"].values()
    return {"plan": plan, "plan_dir": plan_dir, "pre": pre, "result": result, "problems": result["problems"]}


def plan_json(runs, host):
    return json.loads((runs["plan_dir"] / host / "plan.json").read_text())


def test_a_good_pair_on_one_machine_plans(runs):
    plan = runs["plan"]
    assert plan.returncode == 0, plan.stdout + plan.stderr
    a, b = plan_json(runs, "box1-a"), plan_json(runs, "box1-b")
    assert a["env"]["CUDA_VISIBLE_DEVICES"] == "0,1,2,3" and b["env"]["CUDA_VISIBLE_DEVICES"] == "4"
    assert a["env_provenance"]["CUDA_VISIBLE_DEVICES"]["source"] == "inventory: vllm_gpu_ids"
    assert a["gpu_count"] == 4 and b["gpu_count"] == 1
    assert a["docker_gpu_flags"] == ["--gpus", '"device=0,1,2,3"'] and b["docker_gpu_flags"] == ["--gpus", "device=4"]
    assert (a["port"], b["port"]) == (8000, 8001)
    env = json.loads((runs["plan_dir"] / "box1-b" / "env.json").read_text())
    assert env["CUDA_VISIBLE_DEVICES"] == "4"


def test_idle_gpus_are_warned(runs):
    lone = plan_json(runs, "lone")
    assert [w for w in lone["warnings"] if w.startswith("idle GPUs")] == [
        "idle GPUs: the plan uses 1 of the host's 8 GPUs; set vllm_gpu_ids to run more instances on this machine "
        "(one inventory host each, with its own vllm_port and vllm_serve_name)"]
    assert not [w for w in plan_json(runs, "box1-b")["warnings"] if w.startswith("idle GPUs")]
    # box1-a names 4 GPUs for a TP-1 plan: the idle ones among them are named
    assert [w for w in plan_json(runs, "box1-a")["warnings"] if w.startswith("idle GPUs")] == [
        "idle GPUs: the plan uses 1 of the 4 GPUs vllm_gpu_ids=[0, 1, 2, 3] names; name fewer GPUs (and give the "
        "others to another instance)"]


def test_preflight_refuses_every_clash_at_once(runs):
    pre, problems = runs["pre"], runs["problems"]
    assert pre.returncode != 0 and runs["result"]["failed"] is True
    assert runs["result"]["msg"].startswith("preflight found %d problem(s) in the inventory; no host was changed" % len(problems))
    expected = [
        "machine 198.51.100.72 (hosts ov-a, ov-b): vllm_gpu_ids overlap on GPU 1 (ov-a=[0, 1], ov-b=[1, 2]); each GPU "
        "of a machine serves one host",
        "machine 198.51.100.73 (hosts port-a, port-b): port 9000 is used by more than one service: port-a "
        "(vllm_port=9000, API), port-b (vllm_port=9000, API); each service of one machine needs its own ports "
        "(vllm_port, vllm_router_port, or the rendezvous port flags in vllm_extra_args)",
        "machine 198.51.100.74 (hosts name-a, name-b): vllm_serve_name=serve on each of them (unit vllm-serve.service "
        "would collide); give each host of one machine its own vllm_serve_name",
        "machine 198.51.100.75 (hosts noid-a, noid-b): noid-b set no vllm_gpu_ids and would use every GPU of the "
        "machine; set vllm_gpu_ids (distinct GPU indices) on each vLLM host of one machine",
        "host count: vllm_gpu_count=4 but vllm_gpu_ids=[0, 1] names 2 GPU(s); set one of them, or make them agree",
    ]
    for p in expected:
        assert p in problems, "%s\nnot in:\n%s" % (p, "\n".join(problems))
    assert not [p for p in problems if "ok-a" in p or "ok-b" in p or "198.51.100.71" in p]


def test_no_host_is_contacted(runs):
    for proc in (runs["pre"], runs["plan"]):
        text = proc.stdout + proc.stderr
        assert "UNREACHABLE" not in text and "unreachable=1" not in text
