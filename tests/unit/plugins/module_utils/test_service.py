# -*- coding: utf-8 -*-
"""service_spec: a host plan plus the vllm_serve role's settings -> everything the role writes."""

from __future__ import annotations

import pytest

from ansible_collections.llmfleet.vllm.plugins.module_utils.errors import RecipeError
from ansible_collections.llmfleet.vllm.plugins.module_utils.fleet import Fleet
from ansible_collections.llmfleet.vllm.plugins.module_utils.render import container_argv
from ansible_collections.llmfleet.vllm.plugins.module_utils.service import SECRET_PLACEHOLDER, service_spec

SEED = "Qwen/Qwen3.6-35B-A3B"
KEY = "sk-test-0123456789abcdef"
TOKEN = "hf_test0123456789abcdef"


def plan_of(host="h1", **hv):
    base = {"vllm_recipe": SEED, "vllm_hardware": "h200", "ansible_host": "10.0.0.1"}
    base.update(hv)
    return Fleet({host: base}, {"all": [host], "ungrouped": [host]}).plan(host)


def replica_plans(n=2, **common):
    hostvars = {}
    for i in range(n):
        hv = {"vllm_recipe": SEED, "vllm_hardware": "h200", "vllm_strategy": "multi_node_tp",
              "vllm_replica": "rep", "vllm_cluster_interface": "ens1", "ansible_host": "10.9.0.%d" % (i + 1)}
        hv.update(common)
        hostvars["node-%02d" % i] = hv
    fleet = Fleet(hostvars, {"all": sorted(hostvars), "ungrouped": [], "rep": sorted(hostvars)})
    plans, problems = fleet.check(sorted(hostvars))
    assert problems == []
    return plans


def test_names_and_paths_follow_the_service_name():
    spec = service_spec(plan_of(), {"name": "qwen", "api_key": KEY})
    assert spec["problems"] == []
    assert (spec["unit"], spec["unit_file"]) == ("vllm-qwen.service", "/etc/systemd/system/vllm-qwen.service")
    assert (spec["container"], spec["env_file"]) == ("vllm-qwen", "/etc/llmfleet/qwen.env")
    assert (spec["ray_unit"], spec["ray_container"]) == ("vllm-qwen-ray.service", "vllm-qwen-ray")
    assert (spec["fw_unit"], spec["fw_file"]) == ("llmfleet-firewall-qwen.service", "/etc/llmfleet/qwen.nft")
    assert spec["state_dir"] == "/var/lib/llmfleet/state/qwen" and spec["home"] == "/var/lib/llmfleet/home"
    assert service_spec(plan_of(), {"name": "a.b-c", "api_key": KEY})["fw_table"] == "llmfleet_a_b_c"


def test_container_exec_is_the_engine_run_of_the_plan_with_the_env_file():
    plan = plan_of()
    spec = service_spec(plan, {"api_key": KEY, "hf_token": TOKEN})
    assert spec["runtime"] == "container" and spec["image_ref"] == plan["image"]
    expected = container_argv(dict(plan, image=plan["image"]), engine="docker", name="vllm-serve",
                              hf_cache="/var/lib/llmfleet/hf-cache", env_file="/etc/llmfleet/serve.env", inline_env=False,
                              extra_args=["-v", "/var/lib/llmfleet/vllm-cache:/root/.cache/vllm",
                                          "--label", "io.llmfleet.vllm.service=serve"])
    assert spec["exec"] == ["/usr/bin/docker"] + expected[1:]
    assert spec["ray_exec"] == []
    # secrets reach the env file only
    assert KEY not in " ".join(spec["exec"]) and TOKEN not in " ".join(spec["exec"])
    assert spec["env"]["VLLM_API_KEY"] == KEY and spec["env"]["HF_TOKEN"] == TOKEN
    assert spec["env_public"]["VLLM_API_KEY"] == SECRET_PLACEHOLDER == spec["env_public"]["HF_TOKEN"]
    assert spec["secret_names"] == ["HF_TOKEN", "VLLM_API_KEY"]
    assert not any(KEY in line or TOKEN in line for line in spec["summary"])


def test_digest_network_and_privileged_flags():
    plan = dict(plan_of(), docker_gpu_flags=["--privileged", "--gpus", "all"])
    spec = service_spec(plan, {"api_key": KEY, "image_digest": "sha256:" + "a" * 64, "container_network": "host"})
    assert spec["image_ref"] == plan["image"] + "@sha256:" + "a" * 64
    assert spec["image_ref"] in spec["exec"] and "--privileged" not in spec["exec"]
    assert spec["privileged_dropped"] is True
    assert spec["exec"][spec["exec"].index("--network") + 1] == "host" and "-p" not in spec["exec"]
    kept = service_spec(plan, {"api_key": KEY, "container_allow_privileged": True})
    assert "--privileged" in kept["exec"] and kept["privileged_dropped"] is False
    assert "--gpus" not in service_spec(plan, {"api_key": KEY, "container_gpu_flags": []})["exec"]


def test_venv_exec_version_and_env():
    plan = plan_of(vllm_image="vllm/vllm-openai:v0.28.0-cu129")
    spec = service_spec(plan, {"runtime": "venv", "api_key": KEY})
    assert spec["version"] == "0.28.0" and spec["venv"] == "/opt/llmfleet/venv-0.28.0"
    assert spec["exec"] == ["/opt/llmfleet/venv-0.28.0/bin/vllm"] + [str(t) for t in plan["argv"][1:]]
    assert spec["env"]["HF_HOME"] == "/var/lib/llmfleet/hf-cache"
    assert spec["env"]["HOME"] == "/var/lib/llmfleet/home"
    assert spec["env"]["TRITON_CACHE_DIR"] == "/var/lib/llmfleet/vllm-cache/triton"
    # an explicit version wins over the tag; an explicit venv path over the root
    spec = service_spec(plan, {"runtime": "venv", "api_key": KEY, "version": "0.33.0", "venv_path": "/srv/v"})
    assert spec["version"] == "0.33.0" and spec["exec"][0] == "/srv/v/bin/vllm"


def test_venv_without_a_pinned_version_is_refused():
    plan = plan_of(vllm_image="vllm/vllm-openai:latest")
    spec = service_spec(plan, {"runtime": "venv", "api_key": KEY})
    assert spec["exec"] == [] and any("pinned vLLM version" in p for p in spec["problems"])


@pytest.mark.parametrize("argv_tail, bind, probe", [
    ([], "0.0.0.0", "127.0.0.1"),
    (["--host", "10.0.0.5"], "10.0.0.5", "10.0.0.5"),
    (["--host=127.0.0.1"], "127.0.0.1", "127.0.0.1"),
    (["--host", "10.0.0.5", "--host=::"], "::", "127.0.0.1"),
])
def test_bind_and_probe_addresses_follow_the_last_host_flag(argv_tail, bind, probe):
    plan = plan_of(vllm_extra_args=argv_tail)
    spec = service_spec(plan, {"runtime": "venv", "version": "0.28.0", "api_key": KEY})
    assert (spec["bind"], spec["probe_host"]) == (bind, probe)
    # a published container port listens everywhere, whatever --host says; the probe is loopback
    spec = service_spec(plan, {"api_key": KEY})
    assert (spec["bind"], spec["probe_host"]) == ("0.0.0.0", "127.0.0.1")
    assert service_spec(plan, {"api_key": KEY, "health_host": "10.1.1.1"})["probe_host"] == "10.1.1.1"


def test_an_api_key_is_needed_beyond_loopback_only():
    plan = plan_of()
    assert any("without an API key" in p for p in service_spec(plan)["problems"])
    assert service_spec(plan, {"allow_unauthenticated": True})["problems"] == []
    local = plan_of(vllm_extra_args=["--host", "127.0.0.1"])
    assert service_spec(local, {"runtime": "venv", "version": "0.28.0"})["problems"] == []


def test_secrets_on_the_command_line_or_in_the_plan_env_are_refused_without_their_value():
    for extra in (["--api-key", KEY], ["--hf-token=" + TOKEN]):
        spec = service_spec(plan_of(vllm_extra_args=extra), {"api_key": KEY})
        assert spec["exec"] == [] and any("on the command line" in p for p in spec["problems"])
        assert not any(KEY in p or TOKEN in p for p in spec["problems"])
    spec = service_spec(plan_of(vllm_extra_env={"HF_TOKEN": TOKEN}), {"api_key": KEY})
    assert any("HF_TOKEN in vllm_extra_env" in p for p in spec["problems"])
    assert not any(TOKEN in p for p in spec["problems"])


@pytest.mark.parametrize("settings, needle", [
    ({"runtime": "docker"}, "vllm_serve_runtime=docker; valid: container, venv"),
    ({"engine": "lxc"}, "vllm_serve_engine=lxc; valid: docker, podman"),
    ({"name": "-bad"}, "vllm_serve_name=-bad"),
    ({"image_digest": "sha256:abc"}, "vllm_serve_image_digest sha256:<64 hex> expected (got sha256:abc)"),
    ({"image_pull": "never"}, "vllm_serve_image_pull=never; valid: always, missing"),
    ({"venv_installer": "conda"}, "vllm_serve_venv_installer=conda; valid: pip, uv"),
])
def test_bad_settings_are_named_with_the_valid_choices(settings, needle):
    spec = service_spec(plan_of(), dict(settings, api_key=KEY))
    assert any(needle in p for p in spec["problems"]), spec["problems"]


def test_unknown_settings_and_non_plans_raise():
    with pytest.raises(RecipeError, match="unknown settings nmae"):
        service_spec(plan_of(), {"nmae": "x"})
    with pytest.raises(RecipeError, match="expects a host plan"):
        service_spec({"argv": "vllm serve"})


def test_ray_head_gets_a_second_exec_and_a_worker_runs_ray_start():
    plans = replica_plans(2, vllm_multinode_backend="ray")
    head = service_spec(plans["node-00"], {"runtime": "venv", "version": "0.28.0", "api_key": KEY})
    worker = service_spec(plans["node-01"], {"runtime": "venv", "version": "0.28.0", "api_key": KEY})
    assert head["ray_head"] and not head["ray_worker"] and head["exec"][0].endswith("/bin/vllm")
    assert head["ray_exec"][0] == "/opt/llmfleet/venv-0.28.0/bin/ray" and head["ray_exec"][-2:] == [
        "--temp-dir", "/var/lib/llmfleet/ray/serve"]
    assert worker["ray_worker"] and worker["argv"][:2] == ["ray", "start"] and worker["ray_exec"] == []
    assert worker["exec"][0].endswith("/bin/ray") and worker["exec"][-2:] == ["--temp-dir", "/var/lib/llmfleet/ray/serve"]
    # container runtime: the head's Ray container shares the image and the Ray temp dir
    ctr = service_spec(plans["node-00"], {"api_key": KEY, "ray_temp_dir": "/r"})
    assert ctr["ray_exec"][0] == "/usr/bin/docker" and "vllm-serve-ray" in ctr["ray_exec"]
    assert "/r:/r" in ctr["exec"] and ctr["ray_exec"][ctr["ray_exec"].index("--entrypoint") + 1] == "ray"


def test_replica_firewall_is_wanted_and_checks_member_addresses():
    plans = replica_plans(2)
    spec = service_spec(plans["node-00"], {"api_key": KEY})
    assert spec["fw_wanted"] and spec["fw_bad_addresses"] == []
    bad = dict(plans["node-00"], member_addresses=["10.9.0.1", "node-b.example"])
    assert service_spec(bad, {"api_key": KEY})["fw_bad_addresses"] == ["node-b.example"]
    assert not service_spec(bad, {"api_key": KEY, "firewall": False})["fw_wanted"]
    assert not service_spec(plan_of(), {"api_key": KEY})["fw_wanted"]
