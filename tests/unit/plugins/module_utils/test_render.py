# -*- coding: utf-8 -*-
"""Renderers over host plans (plugins/module_utils/render.py): shell_command, container_argv, explain."""

from __future__ import annotations

import copy

import pytest

from ansible_collections.llmfleet.vllm.plugins.module_utils.errors import RecipeError
from ansible_collections.llmfleet.vllm.plugins.module_utils.fleet import Fleet
from ansible_collections.llmfleet.vllm.plugins.module_utils.render import (
    HF_CACHE_IN_CONTAINER, container_argv, env_exports, explain, format_command, format_router, shell_command, shell_quote)

SEED = "Qwen/Qwen3.6-35B-A3B"


def plan_of(name="h1", groups=None, **kw):
    hv = {"vllm_recipe": SEED, "vllm_hardware": "h200", "ansible_host": "192.0.2.1"}
    hv.update(kw)
    return Fleet({name: hv}, groups or {"all": [name]}).plan(name)


@pytest.fixture(scope="module")
def plans():
    """A few real plans: NVIDIA single, AMD, Intel XPU, a multi-node head, a PD-free long-context GB10."""
    out = {
        "h200": plan_of("h200-01", vllm_port=9000, vllm_served_model_name=["qwen", "q"]),
        "mi300x": plan_of("mi300x-01", vllm_hardware="mi300x"),
        "b60": plan_of("b60-01", vllm_hardware="arc_pro_b60"),
        "gb10": plan_of("spark-01", vllm_hardware="dgx_spark_gb10", vllm_variant="nvfp4",
                        vllm_features={"long_context": True}),
    }
    hv = dict((n, {"vllm_recipe": SEED, "vllm_hardware": "b200", "vllm_variant": "nvfp4", "vllm_replica": "r",
                   "vllm_strategy": "multi_node_tp_pp", "vllm_cluster_interface": "ens1f0", "ansible_host": a})
              for n, a in (("b200-01", "192.0.2.61"), ("b200-02", "192.0.2.62")))
    f = Fleet(hv, {"all": list(hv), "r": list(hv)})
    out["head"], out["worker"] = f.plan("b200-01"), f.plan("b200-02")
    return out


# --------------------------------------------------------------------------- shell_command

def test_shell_command_is_the_upstream_form(plans):
    p = plans["h200"]
    assert shell_command(p) == p["command"] == format_command(p["argv"])
    assert shell_command(p).splitlines()[0] == "vllm serve Qwen/Qwen3.6-35B-A3B \\"
    assert "  --served-model-name qwen q \\" in shell_command(p).splitlines()


def test_shell_command_quotes_json_values(plans):
    cmd = shell_command(plans["gb10"])
    assert "  --hf-overrides '{\"text_config\": " in cmd
    assert "  --max-model-len 1010000" in cmd.splitlines()


def test_shell_command_env(plans):
    p = plans["gb10"]
    assert shell_command(p, env=True) == "export VLLM_ALLOW_LONG_MAX_MODEL_LEN=1\n" + p["command"]
    head = plans["head"]
    lines = shell_command(head, env=True).splitlines()
    assert lines[:3] == ["export GLOO_SOCKET_IFNAME=ens1f0", "export NCCL_SOCKET_IFNAME=ens1f0",
                         "export VLLM_HOST_IP=%s" % head["env"]["VLLM_HOST_IP"]]
    assert lines[3] == "vllm serve nvidia/Qwen3.6-35B-A3B-NVFP4 \\"
    # no env: no export lines, even when asked
    assert shell_command(plans["h200"], env=True) == plans["h200"]["command"]


def test_shell_command_of_a_router_and_of_a_bare_resolver_node():
    router = {"argv": ["vllm-router", "--policy", "round_robin", "--host", "10.0.0.9", "--port", "30000"]}
    assert shell_command(router) == format_router(router["argv"])
    node = {"argv": ["vllm", "serve", "m", "--x", "1"]}  # a resolver node, not a host plan
    assert shell_command(node) == "vllm serve m \\\n  --x 1"


@pytest.mark.parametrize("bad", [None, "vllm serve m", {"command": "x"}, {"argv": "vllm serve"}])
def test_shell_command_rejects_non_plans(bad):
    with pytest.raises(RecipeError, match="shell_command expects a host plan"):
        shell_command(bad)


# --------------------------------------------------------------------------- container_argv

def test_container_argv_docker_nvidia_single(plans):
    p = plans["h200"]
    assert container_argv(p) == [
        "docker", "run", "--rm", "--name", "vllm-h200-01", "--gpus", "all", "--ipc=host", "-p", "9000:9000",
        "-v", "/var/lib/llmfleet/hf-cache:" + HF_CACHE_IN_CONTAINER,
        "vllm/vllm-openai:latest"] + p["argv"][2:]
    # the image's entrypoint is `vllm serve`: the argv after the image starts at the model
    argv = container_argv(p)
    assert argv[argv.index("vllm/vllm-openai:latest") + 1] == SEED
    assert "serve" not in argv


def test_container_argv_podman_nvidia_uses_cdi(plans):
    argv = container_argv(plans["h200"], engine="podman")
    assert argv[:2] == ["podman", "run"]
    assert ["--device", "nvidia.com/gpu=all"] == argv[argv.index("--device"):argv.index("--device") + 2]
    assert "--gpus" not in argv


@pytest.mark.parametrize("engine", ["docker", "podman"])
def test_container_argv_amd(plans, engine):
    p = plans["mi300x"]
    argv = container_argv(p, engine=engine)
    flags = ["--device=/dev/kfd", "--device=/dev/dri", "--security-opt", "seccomp=unconfined", "--group-add", "video"]
    assert p["docker_gpu_flags"] == flags
    start = argv.index("--device=/dev/kfd")
    assert argv[start:start + len(flags)] == flags
    assert argv[argv.index("vllm/vllm-openai-rocm:latest") + 1:] == p["argv"][2:]
    assert "-e" in argv and "VLLM_ROCM_USE_AITER=1" in argv


def test_container_argv_intel_xpu(plans):
    p = plans["b60"]
    argv = container_argv(p)
    flags = ["--device", "/dev/dri", "-v", "/dev/dri/by-path:/dev/dri/by-path", "--shm-size", "16g"]
    assert p["docker_gpu_flags"] == flags
    start = argv.index("--device")
    assert argv[start:start + len(flags)] == flags
    assert argv[-len(p["argv"][2:]) - 1] == "vllm/vllm-openai-xpu:latest"


def test_container_argv_multi_node_uses_host_network(plans):
    for role in ("head", "worker"):
        argv = container_argv(plans[role])
        assert argv[argv.index("--network") + 1] == "host"
        assert "-p" not in argv
        assert "GLOO_SOCKET_IFNAME=ens1f0" in argv and "NCCL_SOCKET_IFNAME=ens1f0" in argv
    assert container_argv(plans["worker"])[-len(plans["worker"]["argv"][2:]):] == plans["worker"]["argv"][2:]
    # an explicit network wins, for single hosts too
    argv = container_argv(plans["h200"], network="bridge0")
    assert argv[argv.index("--network") + 1] == "bridge0" and "-p" not in argv


def test_container_argv_mounts_an_absolute_model_path_read_only(plans):
    p = copy.deepcopy(plans["h200"])
    p["argv"][2] = "/srv/models/qwen3.6"
    argv = container_argv(p)
    assert "/srv/models/qwen3.6:/srv/models/qwen3.6:ro" in argv
    assert argv[argv.index("/srv/models/qwen3.6:/srv/models/qwen3.6:ro") - 1] == "-v"
    assert argv[argv.index("vllm/vllm-openai:latest") + 1] == "/srv/models/qwen3.6"
    assert not [a for a in container_argv(plans["h200"]) if a.endswith(":ro")]  # HF ids are not mounted


def test_container_argv_mounts_config_path_env(plans):
    p = copy.deepcopy(plans["h200"])
    p["env"] = {"VLLM_TOOL_CONFIG_PATH": "/etc/vllm/tools.json", "OTHER_CONFIG_PATH": "relative.json"}
    argv = container_argv(p)
    assert "/etc/vllm/tools.json:/etc/vllm/tools.json:ro" in argv
    assert "relative.json:relative.json:ro" not in argv


def test_container_argv_env_file_and_inline_env(plans):
    p = plans["gb10"]
    argv = container_argv(p, env_file="/etc/llmfleet/vllm.env")
    assert argv[argv.index("--env-file") + 1] == "/etc/llmfleet/vllm.env"
    assert argv[argv.index("-e") + 1] == "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1"
    assert argv.index("--env-file") < argv.index("-e") < argv.index(p["image"])
    quiet = container_argv(p, env_file="/etc/llmfleet/vllm.env", inline_env=False)
    assert "-e" not in quiet and "--env-file" in quiet


def test_container_argv_options(plans):
    p = plans["h200"]
    argv = container_argv(p, name="qwen", hf_cache="/data/hf", detach=True, remove=False,
                          extra_args=["--pull", "always"])
    assert argv[:5] == ["docker", "run", "-d", "--name", "qwen"]
    assert "--rm" not in argv
    assert "/data/hf:" + HF_CACHE_IN_CONTAINER in argv
    assert argv[argv.index(p["image"]) - 2:argv.index(p["image"])] == ["--pull", "always"]


def test_container_argv_errors(plans):
    with pytest.raises(RecipeError, match=r"container_argv: engine='nerdctl'; valid: docker, podman"):
        container_argv(plans["h200"], engine="nerdctl")
    router = {"role": "router", "argv": ["vllm-router", "--policy", "round_robin"]}
    with pytest.raises(RecipeError, match=r"only `vllm serve` and `ray start` \(Ray mode\) run in the vLLM image \(role router\)"):
        container_argv(router)
    with pytest.raises(RecipeError, match="container_argv expects a host plan"):
        container_argv(["vllm", "serve"])


def test_container_argv_of_a_ray_node_uses_the_ray_entrypoint(plans):
    p = dict(plans["h200"], deploy_type="multi_node",
             argv=["ray", "start", "--address", "10.0.0.1:6379", "--node-ip-address", "10.0.0.2", "--block"])
    argv = container_argv(p, name="vllm-serve-ray", env_file="/etc/llmfleet/serve.env", inline_env=False)
    i = argv.index(p["image"])
    assert argv[i - 2:i] == ["--entrypoint", "ray"]
    assert argv[i + 1:] == ["start", "--address", "10.0.0.1:6379", "--node-ip-address", "10.0.0.2", "--block"]
    assert argv[argv.index("--network") + 1] == "host"


# --------------------------------------------------------------------------- explain

def test_explain_lists_sources_and_replacements(plans):
    p = plans["gb10"]
    lines = explain(p)
    assert lines[0] == ("host=spark-01 role=single rank=0 recipe=Qwen/Qwen3.6-35B-A3B variant=nvfp4 "
                        "hardware=dgx_spark_gb10 strategy=single_node_tp")
    assert lines[1] == "image vllm/vllm-openai:v0.28.0  <- variant nvfp4 › docker_image"
    flag_lines = lines[2:2 + len(p["args_provenance"])]
    assert len(flag_lines) == len(p["args_provenance"])
    assert flag_lines[0].startswith("--trust-remote-code") and flag_lines[0].endswith("<- model.base_args")
    mml = [ln for ln in lines if ln.startswith("--max-model-len")]
    assert mml == ["--max-model-len 1010000".ljust(48) + " <- feature long_context; replaced --max-model-len 262144 "
                   "(variant nvfp4 › hardware_overrides.dgx_spark_gb10)"]
    assert "--kv-cache-dtype fp8".ljust(48) + " <- variant nvfp4 › hardware_overrides.dgx_spark_gb10" in lines
    assert "env VLLM_ALLOW_LONG_MAX_MODEL_LEN=1  <- feature long_context › env (D1)" in lines


def test_explain_env_replacement_and_bound_values(plans):
    head = explain(plans["head"])
    assert "env NCCL_SOCKET_IFNAME=ens1f0  <- strategy multi_node_tp_pp › env" in head
    assert [ln for ln in head if ln.startswith("--master-addr 192.0.2.61")]  # provenance shows bound values
    p = plan_of(vllm_hardware="mi300x", vllm_extra_env={"VLLM_ROCM_USE_AITER": "0"})
    line = [ln for ln in explain(p) if ln.startswith("env VLLM_ROCM_USE_AITER=")]
    assert line == ["env VLLM_ROCM_USE_AITER=0  <- inventory; replaced '1' (hardware_overrides.amd)"]


def test_explain_warnings_and_bare_nodes():
    p = {"argv": ["vllm", "serve", "m"], "args_provenance": [{"arg": ["--x", "1"], "source": "s"}],
         "warnings": ["w1"], "env": {"K": "v"}}
    assert explain(p) == ["--x 1".ljust(48) + " <- s", "env K=v  <- binding", "warning: w1"]


def test_explain_rejects_non_plans():
    with pytest.raises(RecipeError, match="explain expects a host plan"):
        explain({"argv": ["vllm"]})
    with pytest.raises(RecipeError):
        explain([])


def test_explain_keeps_a_multi_value_flag_on_one_line(plans):
    lines = explain(plans["h200"])
    assert [ln for ln in lines if ln.startswith("--served-model-name qwen q ")]
    assert not [ln for ln in lines if ln.startswith("q ")]


# --------------------------------------------------------------------------- shell forms of an argv and an env

@pytest.mark.parametrize("value, quoted", [
    ("$HEAD_IP", "$HEAD_IP"),                  # a bare placeholder stays expandable
    ("$_X1", "$_X1"),
    ("$1abc", "'$1abc'"),
    ("$lower", "'$lower'"),
    ("Qwen/Qwen3.6-35B-A3B", "Qwen/Qwen3.6-35B-A3B"),
    ("a=b:c@d,e+f%g", "a=b:c@d,e+f%g"),
    ("", "''"),
    ('{"k": 1}', "'{\"k\": 1}'"),
    ("it's", "'it'\\''s'"),
])
def test_shell_quote(value, quoted):
    assert shell_quote(value) == quoted


def test_format_command_one_unit_per_line():
    argv = ["vllm", "serve", "m", "--served-model-name", "a", "b", "--enforce-eager", "--x", "{1}"]
    assert format_command(argv) == "vllm serve m \\\n  --served-model-name a b \\\n  --enforce-eager \\\n  --x '{1}'"
    assert format_command(["vllm", "serve", "m"]) == "vllm serve m"


def test_format_router_and_env_exports():
    assert format_router(["vllm-router", "--policy", "x y", "--vllm-pd-disaggregation"]) == \
        "vllm-router --policy x y \\\n    --vllm-pd-disaggregation"
    assert env_exports({"A": "1", "B": "x y"}) == "export A=1\nexport B='x y'"
