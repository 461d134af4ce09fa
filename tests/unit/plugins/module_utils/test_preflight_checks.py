# -*- coding: utf-8 -*-
"""preflight.py: the checks Fleet.check adds (ports, env names, secrets, vLLM version, GPU capacity,
replica addresses) and secret redaction; each problem names host, key, bad value and what is valid."""

from __future__ import annotations

import json

import pytest

from ansible_collections.llmfleet.vllm.plugins.module_utils import preflight
from ansible_collections.llmfleet.vllm.plugins.module_utils.fleet import Fleet
from ansible_collections.llmfleet.vllm.plugins.module_utils.service import SECRET_PLACEHOLDER

SEED = "Qwen/Qwen3.6-35B-A3B"
HF = "hf_" + "A1b2C3d4E5" * 4
SK = "sk-" + "proj_Abc123" * 3
ROLE_TAIL = "from Vault instead"


def host(**kw):
    hv = {"vllm_recipe": SEED, "vllm_hardware": "h200", "ansible_host": "192.0.2.1"}
    hv.update(kw)
    return hv


def check(hv, facts=None, **groups):
    g = {"all": list(hv)}
    g.update(groups)
    return Fleet(hv, g, facts=facts).check(list(hv))


def only(problems, start):
    found = [p for p in problems if p.startswith(start)]
    assert len(found) == 1, (start, problems)
    return found[0]


# ---------------------------------------------------------------------- ports
@pytest.mark.parametrize("key", preflight.PORT_VARS)
def test_port_variables_outside_the_tcp_range(key):
    assert preflight.input_problems("h", {key: 70000}) == ["host h: %s=70000: expected a TCP port, 1-65535" % key]
    assert preflight.input_problems("h", {key: "65536"}) == ["host h: %s=65536: expected a TCP port, 1-65535" % key]
    assert preflight.input_problems("h", {key: 65535}) == []


def test_port_flags_in_extra_args_in_either_form():
    args = ["--port", "0", "--master-port=99999", "--data-parallel-rpc-port", "abc", "-dpp", "13345"]
    assert preflight.input_problems("h", {"vllm_extra_args": args}) == [
        "host h: vllm_extra_args --port 0: expected a TCP port, 1-65535",
        "host h: vllm_extra_args --master-port 99999: expected a TCP port, 1-65535",
        "host h: vllm_extra_args --data-parallel-rpc-port abc: expected a TCP port, 1-65535"]


def test_api_port_on_a_rendezvous_port_of_the_replica():
    hv = {"a": host(vllm_replica="r", vllm_strategy="multi_node_tp", vllm_cluster_interface="eth0",
                    ansible_host="10.0.0.1", vllm_port=29501),
          "b": host(vllm_replica="r", vllm_strategy="multi_node_tp", vllm_cluster_interface="eth0", ansible_host="10.0.0.2")}
    plans, problems = check(hv, r=["a", "b"])
    assert problems == ["host a: the API port 29501 (vllm_port or --port) is the replica's rendezvous port 29501 "
                        "(torch.distributed master (--master-port)); valid: any other port (rendezvous ports: 29501)"]
    # the port given in vllm_extra_args counts, as vLLM reads the last --port
    plan = dict(plans["a"], argv=plans["a"]["argv"] + ["--port", "8000"])
    assert preflight.port_problems("a", plan) == []


# ---------------------------------------------------------------------- env names
def test_env_names_that_are_not_env_names():
    problems = preflight.input_problems("h", {"vllm_extra_env": {"BAD-NAME": "1", "9X": "2", "OK_1": "3", "_x": "4"}})
    assert problems == [
        "host h: vllm_extra_env name 'BAD-NAME' is not a valid environment variable name; valid: letters, digits and "
        "'_', not starting with a digit (^[A-Za-z_][A-Za-z0-9_]*$)",
        "host h: vllm_extra_env name '9X' is not a valid environment variable name; valid: letters, digits and "
        "'_', not starting with a digit (^[A-Za-z_][A-Za-z0-9_]*$)"]


# ---------------------------------------------------------------------- secrets
@pytest.mark.parametrize("args, flag, var", [
    (["--api-key", "s3cr3t-value"], "--api-key", "vllm_serve_api_key"),
    (["--api-key=s3cr3t-value"], "--api-key", "vllm_serve_api_key"),
    (["--hf-token", "s3cr3t-value"], "--hf-token", "vllm_serve_hf_token"),
    (["--hf-token=s3cr3t-value"], "--hf-token", "vllm_serve_hf_token"),
])
def test_secret_flags_in_extra_args(args, flag, var):
    (problem,) = preflight.input_problems("h", {"vllm_extra_args": args})
    assert problem.startswith("host h: vllm_extra_args passes %s (a secret; its value is not shown): set %s %s"
                              % (flag, var, ROLE_TAIL))
    assert "s3cr3t-value" not in problem
    assert preflight.secret_values(args) == ["s3cr3t-value"]


@pytest.mark.parametrize("name, var", [("HF_TOKEN", "vllm_serve_hf_token"), ("HUGGING_FACE_HUB_TOKEN", "vllm_serve_hf_token"),
                                       ("VLLM_API_KEY", "vllm_serve_api_key")])
def test_secret_env_names(name, var):
    (problem,) = preflight.input_problems("h", {"vllm_extra_env": {name: "s3cr3t-value"}})
    assert problem.startswith("host h: vllm_extra_env sets %s (a secret; its value is not shown): set %s %s" % (name, var, ROLE_TAIL))
    assert "s3cr3t-value" not in problem


def test_values_shaped_like_tokens_anywhere():
    hv = {"vllm_extra_args": ["--foo", HF, "--bar=x" + SK], "vllm_extra_env": {"SOME": "Bearer " + SK, "OTHER": HF}}
    problems = preflight.input_problems("h", hv)
    assert len(problems) == 4
    assert problems[0].startswith("host h: vllm_extra_args[1] holds a value shaped like a Hugging Face token (hf_...) "
                                  "(not shown): set vllm_serve_hf_token " + ROLE_TAIL)
    assert problems[1].startswith("host h: vllm_extra_env.OTHER holds a value shaped like a Hugging Face token")
    assert problems[2].startswith("host h: vllm_extra_args[2] holds a value shaped like an API key (sk-...) (not shown): "
                                  "set vllm_serve_api_key")
    assert problems[3].startswith("host h: vllm_extra_env.SOME holds a value shaped like an API key")
    assert not [p for p in problems if HF in p or SK in p]
    assert "hf_short" not in json.dumps(preflight.input_problems("h", {"vllm_extra_args": ["hf_short"]}))
    assert preflight.input_problems("h", {"vllm_extra_args": ["hf_short", "sk-short"]}) == []


def test_redact_replaces_every_secret_in_a_plan():
    hv = {"s": host(vllm_extra_args=["--api-key", "plain'key", "--hf-token=" + HF, "--x", SK],
                    vllm_extra_env={"VLLM_API_KEY": "envsecret", "FOO": "bar"})}
    plans, problems = check(hv)
    raw = json.dumps(plans["s"])
    assert "plain" in raw and HF in raw and "envsecret" in raw  # the Fleet's own plan is the real one
    text = json.dumps(problems)
    assert "plain'key" not in text and HF not in text and SK not in text and "envsecret" not in text
    red = preflight.redact_plan(plans["s"])
    dumped = json.dumps(red)
    for secret in ("plain'key", "plain", HF, SK, "envsecret"):
        assert secret not in dumped and secret not in red["command"], secret
    assert red["env"]["VLLM_API_KEY"] == SECRET_PLACEHOLDER and red["env"]["FOO"] == "bar"
    assert red["argv"][red["argv"].index("--api-key") + 1] == SECRET_PLACEHOLDER
    assert "--hf-token=" + SECRET_PLACEHOLDER in red["argv"]
    assert preflight.redact_plan(red) == red  # idempotent
    assert red["recipe"] == plans["s"]["recipe"]


# ---------------------------------------------------------------------- vLLM version
def test_image_older_than_min_vllm_version():
    hv = {"old": host(vllm_hardware="b200", vllm_variant="nvfp4", vllm_image="vllm/vllm-openai:v0.17.0"),
          "ver": host(vllm_hardware="b200", vllm_variant="nvfp4", vllm_image="registry.local/vllm:custom", vllm_version="0.17.0"),
          "rolling": host(vllm_hardware="b200", vllm_variant="nvfp4", vllm_image="vllm/vllm-openai:nightly"),
          "latest": host(vllm_hardware="b200", vllm_variant="nvfp4", vllm_image="vllm/vllm-openai:latest", vllm_version="0.17.0"),
          "new": host(vllm_hardware="b200", vllm_variant="nvfp4", vllm_image="vllm/vllm-openai:v0.28.0")}
    plans, problems = check(hv)
    assert plans["old"]["min_vllm_version"] == "0.28.0"
    assert [p for p in problems if "min_vllm_version" in p] == [
        "host old: vllm_image=vllm/vllm-openai:v0.17.0 runs vLLM 0.17.0 but Qwen/Qwen3.6-35B-A3B nvfp4 needs "
        "vLLM >= 0.28.0 (min_vllm_version); valid: an image tag or vllm_version >= 0.28.0, or a rolling tag (latest, nightly)",
        "host ver: vllm_version=0.17.0 (image registry.local/vllm:custom names no release) runs vLLM 0.17.0 but "
        "Qwen/Qwen3.6-35B-A3B nvfp4 needs vLLM >= 0.28.0 (min_vllm_version); valid: an image tag or vllm_version >= "
        "0.28.0, or a rolling tag (latest, nightly)"]


# ---------------------------------------------------------------------- GPU capacity
def test_vram_fit_on_the_real_gpu_count():
    hv = {"one": host(vllm_hardware="h100", vllm_gpu_count=1, vllm_variant="default", vllm_strategy="single_node_tp"),
          "two": host(vllm_hardware="h100", vllm_gpu_count=2, vllm_variant="default", vllm_strategy="single_node_tp"),
          "auto": host(vllm_hardware="h100", vllm_gpu_count=1)}
    _plans, problems = check(hv)
    msg = ("variant default needs 84 GB of GPU memory but 1 GPU(s) of h100 (vllm_gpu_count=1) have 80 GB; valid: "
           "vllm_gpu_count >= 2, a variant that fits: fp8")
    assert only(problems, "host one (") == "host one (Qwen/Qwen3.6-35B-A3B default on h100): " + msg
    assert not [p for p in problems if p.startswith("host two")]
    # unset variant and strategy: the resolver picks a multi-node strategy; preflight says why
    assert "host auto (Qwen/Qwen3.6-35B-A3B default on h100): " + msg in problems


def test_vram_fit_with_the_detected_gpu_count():
    hv = {"d": host(vllm_hardware="h100", vllm_variant="default", vllm_strategy="single_node_tp")}
    facts = {"d": {"vendor": "nvidia", "product": "H100", "count": 1, "profile": "h100"}}
    _plans, problems = check(hv, facts)
    assert ("host d (Qwen/Qwen3.6-35B-A3B default on h100): variant default needs 84 GB of GPU memory but 1 GPU(s) of "
            "h100 (1 detected) have 80 GB; valid: vllm_gpu_count >= 2, a variant that fits: fp8") in problems


def test_parallel_sizes_of_the_final_argv():
    assert preflight.parallel_sizes(["-tp", "4", "--pipeline-parallel-size=2"]) == {"tp": 4, "pp": 2, "dp": 1, "dpl": None}
    hv = {"tp": host(vllm_hardware="h100", vllm_variant="fp8", vllm_gpu_count=4,
                     vllm_extra_args=["--tensor-parallel-size", "8"]),
          "dp": host(vllm_hardware="h100", vllm_variant="fp8", vllm_gpu_count=4,
                     vllm_extra_args=["--tensor-parallel-size", "2", "-dp", "4"]),
          "ok": host(vllm_hardware="h100", vllm_variant="fp8", vllm_gpu_count=4,
                     vllm_extra_args=["--tensor-parallel-size", "2", "-dp", "2"])}
    _plans, problems = check(hv)
    assert only(problems, "host tp (") == (
        "host tp (Qwen/Qwen3.6-35B-A3B fp8 on h100): the argv (with vllm_extra_args) asks for tensor 8 x pipeline 1 x "
        "data-parallel 1 = 8 GPUs per node but the host has 4 (vllm_gpu_count=4); valid: sizes whose product per node "
        "is at most 4")
    assert "asks for tensor 2 x pipeline 1 x data-parallel 4 = 8 GPUs per node" in only(problems, "host dp (")
    assert not [p for p in problems if p.startswith("host ok")]


def test_parallel_sizes_of_a_replica_are_per_node():
    plan = {"role": "head", "deploy_type": "multi_node", "node_count": 2,
            "argv": ["vllm", "serve", "m", "--tensor-parallel-size", "8", "--pipeline-parallel-size", "2", "--nnodes", "2"]}
    assert preflight.parallel_problems("w", plan, 8, "x") == []
    assert preflight.parallel_problems("w", plan, 4, "vllm_gpu_count=4") == [
        "w: the argv (with vllm_extra_args) asks for tensor 8 x pipeline 2 x data-parallel 1 over 2 nodes = 8 GPUs per "
        "node but the host has 4 (vllm_gpu_count=4); valid: sizes whose product per node is at most 4"]
    dep = {"role": "head", "deploy_type": "multi_node", "node_count": 2,
           "argv": ["vllm", "serve", "m", "--data-parallel-size", "16", "--data-parallel-size-local", "8"]}
    assert preflight.parallel_problems("w", dep, 8, "x") == []
    assert "data-parallel-local 8 = 8 GPUs per node but the host has 4" in preflight.parallel_problems("w", dep, 4, "x")[0]
    assert preflight.parallel_problems("w", dict(dep, role="router"), 1, "x") == []


# ---------------------------------------------------------------------- replica addresses
def test_replica_members_need_ip_addresses():
    common = dict(vllm_replica="r", vllm_strategy="multi_node_tp", vllm_cluster_interface="eth0")
    hv = {"a": host(ansible_host="node-a.example", **common),
          "b": host(ansible_host="node-b.example", vllm_cluster_address="10.0.0.2", **common),
          "c": host(vllm_cluster_address="node-c", **common),
          "single": host(ansible_host="plain-host.example")}
    hv["d"] = dict(host(**common))
    del hv["d"]["ansible_host"]
    _plans, problems = check(hv, r=["a", "b", "c", "d"])
    bad = [p for p in problems if "is not an IP address" in p]
    tail = ("is not an IP address, but replica r needs one (its members rendezvous on it and the firewall admits only "
            "the members' IPs); valid: an IPv4 or IPv6 address in vllm_cluster_address")
    assert bad == ["host a: ansible_host=node-a.example " + tail, "host c: vllm_cluster_address=node-c " + tail,
                   "host d: the inventory hostname (no vllm_cluster_address or ansible_host)=d " + tail]
    assert not [p for p in problems if p.startswith(("host b", "host single"))]


def test_every_problem_of_a_host_at_once():
    hv = {"x": host(vllm_port=70000, vllm_extra_env={"BAD-NAME": "1", "HF_TOKEN": HF},
                    vllm_hardware="b200", vllm_variant="nvfp4", vllm_image="vllm/vllm-openai:v0.17.0")}
    _plans, problems = check(hv)
    assert [p.split(":", 2)[1].strip().split("=")[0].split(" ")[0] for p in problems if p.startswith("host x: ")] == [
        "vllm_port", "vllm_extra_env", "vllm_extra_env", "vllm_image"]
    assert HF not in json.dumps(problems)
