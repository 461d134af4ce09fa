# -*- coding: utf-8 -*-
"""`playbooks/deploy.yml` and the `vllm_serve` role's refusals, in check mode on this machine.

Check mode changes nothing (the role's handlers and health gate do not run in it); every host
is this machine over `connection: local`, with an engine path that does not exist, a data dir
in the test's temp dir and an instance name no real service uses. The real runs (venv and
container runtimes, health gate, rollback) are the molecule scenario `serve`.
"""

from __future__ import annotations

import json
import uuid

import pytest
import yaml

from playbook_runner import JSON_CALLBACK, REPO, run, tool

SEED = "Qwen/Qwen3.6-35B-A3B"
API_KEY = "sk-itest-" + uuid.uuid4().hex
HF_TOKEN = "hf_itest_" + uuid.uuid4().hex
DIGEST = "sha256:" + "ab" * 32


def host(tmp, **kw):
    hv = {"ansible_connection": "local", "vllm_recipe": SEED, "vllm_hardware": "h200",
          "vllm_image": "vllm/vllm-openai:v0.28.0", "vllm_serve_name": "itest-" + uuid.uuid4().hex[:8],
          "vllm_serve_engine_path": "/nonexistent/llmfleet-itest/docker",
          "vllm_serve_data_dir": str(tmp / "data"), "vllm_serve_venv_root": str(tmp / "venvs"),
          "vllm_serve_venv_os_packages": [],
          "vllm_serve_api_key": API_KEY, "vllm_serve_hf_token": HF_TOKEN}
    hv.update(kw)
    return dict((k, v) for k, v in hv.items() if v is not None)


def deploy(tmp, hosts, callback=None):
    path = tmp / "hosts.yml"
    path.write_text(yaml.safe_dump({"all": {"hosts": hosts}}))
    return run([tool("ansible-playbook"), "-i", str(path), str(REPO / "playbooks" / "deploy.yml"), "--check", "--diff",
                "-e", "vllm_deploy_max_fail_percentage=100"], tmp, callback)


@pytest.mark.integration
def test_check_mode_shows_units_and_env_without_secrets(tmp_path):
    hosts = {
        "ctr-01": host(tmp_path, vllm_served_model_name="qwen3.6"),
        "digest-01": host(tmp_path, vllm_serve_engine="podman", vllm_serve_image_digest=DIGEST),
        # no key: an explicit opt-out, or a loopback-only server
        "optout-01": host(tmp_path, vllm_serve_api_key=None, vllm_serve_allow_unauthenticated=True),
        "venv-lo-01": host(tmp_path, vllm_serve_api_key=None, vllm_serve_runtime="venv",
                           vllm_extra_args=["--host", "127.0.0.1"]),
    }
    proc = deploy(tmp_path, hosts)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    assert "+ExecStart=/nonexistent/llmfleet-itest/docker run \\" in out
    assert "+    --env-file /etc/llmfleet/%s.env \\" % hosts["ctr-01"]["vllm_serve_name"] in out
    assert "+    vllm/vllm-openai:v0.28.0 Qwen/Qwen3.6-35B-A3B \\" in out
    assert "+    --gpus all \\" in out and "+    --ipc=host \\" in out
    assert "/venvs/venv-0.28.0/bin/vllm serve Qwen/Qwen3.6-35B-A3B \\" in out
    assert "+    vllm/vllm-openai:v0.28.0@%s Qwen/Qwen3.6-35B-A3B \\" % DIGEST in out  # pinned by digest
    assert "+    --device nvidia.com/gpu=all \\" in out  # podman: CDI
    assert '+VLLM_API_KEY="(secret, not shown)"' in out and '+HF_TOKEN="(secret, not shown)"' in out
    assert API_KEY not in out and HF_TOKEN not in out
    assert not (tmp_path / "data").exists() and not (tmp_path / "venvs").exists()  # check mode wrote nothing


@pytest.mark.integration
def test_preflight_stops_a_bad_flag_before_the_role(tmp_path):
    proc = deploy(tmp_path, {"serve-01": host(tmp_path, vllm_extra_args=["--no-such-flag"])})
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "--no-such-flag" in out
    assert "Plan | the host's plan" not in out


REFUSED = {
    "nokey": ({"vllm_serve_api_key": None}, "without an API key"),
    "keyflag": ({"vllm_extra_args": ["--api-key", "sk-on-the-command-line"]}, "cannot be served safely"),
    "tokenenv": ({"vllm_extra_env": {"HF_TOKEN": "hf_in_the_env"}}, "cannot be served safely"),
    "unpinned": ({"vllm_serve_runtime": "venv", "vllm_image": "vllm/vllm-openai:latest"}, "a pinned vLLM version"),
    "digest": ({"vllm_serve_image_digest": "sha256:abc"}, "vllm_serve_image_digest sha256:<64 hex>"),
}


ROLE_ONLY = """- name: The vllm_serve role alone, without preflight (its own refusals, the defence behind preflight)
  hosts: all
  gather_facts: false
  roles:
    - role: llmfleet.vllm.vllm_serve
"""


@pytest.mark.integration
def test_role_refuses_unsafe_settings(tmp_path):
    # Preflight refuses the secrets before the role (test_preflight.py); the role must refuse them
    # too when it is used on its own, so this runs it without deploy.yml's preflight.
    path = tmp_path / "hosts.yml"
    path.write_text(yaml.safe_dump({"all": {"hosts": dict((name, host(tmp_path, **kw)) for name, (kw, _needle) in REFUSED.items())}}))
    playbook = tmp_path / "role_only.yml"
    playbook.write_text(ROLE_ONLY)
    proc = run([tool("ansible-playbook"), "-i", str(path), str(playbook), "--check", "--diff"], tmp_path, JSON_CALLBACK)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out[-3000:]
    failed = {}
    for play in json.loads(proc.stdout)["plays"]:
        for task in play["tasks"]:
            for name, res in task["hosts"].items():
                if res.get("failed") and name not in failed:
                    failed[name] = res.get("msg", "")
    for name, (_kw, needle) in REFUSED.items():
        assert needle in failed.get(name, ""), (name, failed.get(name))
    for secret in (API_KEY, HF_TOKEN, "sk-on-the-command-line", "hf_in_the_env"):
        assert secret not in out


def replica_hosts(tmp, names, replica="tp", **kw):
    return dict((n, host(tmp, vllm_replica=replica, vllm_strategy="multi_node_tp", vllm_cluster_interface="eth0",
                         vllm_cluster_address="10.77.0.%d" % (i + 1), **kw)) for i, n in enumerate(names))


def deploy_groups(tmp, hosts, groups, *extra):
    path = tmp / "hosts.yml"
    path.write_text(yaml.safe_dump({"all": {"hosts": hosts, "children": dict(
        (g, {"hosts": dict((h, None) for h in members)}) for g, members in groups.items())}}))
    return run([tool("ansible-playbook"), "-i", str(path), str(REPO / "playbooks" / "deploy.yml"), "--check"] + list(extra),
               tmp)


@pytest.mark.integration
def test_deploy_refuses_to_split_a_replica_by_limit_or_batch(tmp_path):
    hosts = replica_hosts(tmp_path, ["tp-a", "tp-b"])
    hosts.update(replica_hosts(tmp_path, ["tq-a", "tq-b"], replica="tq"))
    groups = {"tp": ["tp-a", "tp-b"], "tq": ["tq-a", "tq-b"]}
    # a limit that leaves a member out
    proc = deploy_groups(tmp_path, hosts, groups, "-l", "tp-a,tq-a,tq-b")
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "Replicas with members left out of this run (by -l/--limit): tp" in out, out[-3000:]
    assert "Plan | the host's plan" not in out  # refused before the role ran anywhere
    # batches of 3 hosts split tq (tp-a tp-b tq-a | tq-b)
    proc = deploy_groups(tmp_path, hosts, groups, "-e", "vllm_deploy_serial=3")
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "vllm_deploy_serial=3 (batches of 3 hosts, in inventory-name order) splits tq" in " ".join(out.split()), out[-3000:]
    assert "Plan | the host's plan" not in out
    # batches of 2 hosts keep both whole: the role runs (check mode)
    proc = deploy_groups(tmp_path, hosts, groups, "-e", "vllm_deploy_serial=50%", "-e", "vllm_deploy_max_fail_percentage=100")
    out = proc.stdout + proc.stderr
    assert "Plan | the host's plan" in out, out[-3000:]
    assert "splits tq" not in out and "splits tp" not in out and "left out of this run" not in out


STUB_ENGINE = """#!/bin/sh
# test stand-in for docker: the image exists; python3 in it has no ray
case "$1" in
  image) echo sha256:0123456789abcdef; exit 0 ;;
  run) echo "ModuleNotFoundError: No module named 'ray'" >&2; exit 1 ;;
  *) exit 0 ;;
esac
"""


@pytest.mark.integration
def test_ray_mode_refuses_an_image_without_ray_before_anything_stops(tmp_path):
    engine = tmp_path / "docker"
    engine.write_text(STUB_ENGINE)
    engine.chmod(0o755)
    hosts = replica_hosts(tmp_path, ["ray-a", "ray-b"], replica="ray", vllm_multinode_backend="ray",
                          vllm_serve_engine_path=str(engine))
    proc = deploy_groups(tmp_path, hosts, {"ray": ["ray-a", "ray-b"]}, "-e", "vllm_deploy_max_fail_percentage=100")
    out = " ".join((proc.stdout + proc.stderr).split())
    assert proc.returncode != 0
    assert ("vllm_multinode_backend=ray on ray-a, but vllm/vllm-openai:v0.28.0 has no Ray (python3 -c 'import ray' in "
            "the image: ModuleNotFoundError: No module named 'ray')") in out, out[-3000:]
    assert "Nothing was stopped" in out
    assert "Configure | unit" not in out  # refused before the unit, the env or the service were touched


@pytest.mark.integration
def test_a_failed_host_lets_its_batch_finish_then_stops_the_rollout(tmp_path):
    hosts = {"bad-01": host(tmp_path, vllm_serve_api_key=None), "good-01": host(tmp_path), "good-02": host(tmp_path)}
    path = tmp_path / "hosts.yml"
    path.write_text(yaml.safe_dump({"all": {"hosts": hosts}}))
    proc = run([tool("ansible-playbook"), "-i", str(path), str(REPO / "playbooks" / "deploy.yml"), "--check",
                "-e", "vllm_deploy_serial=2"], tmp_path)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "fatal: [bad-01]" in out and "without an API key" in out
    serve_play = out.split("PLAY [Deploy | vLLM services, health-gated]")[1]
    assert "ok: [good-01]" in serve_play.split("Configure | unit")[1]  # its batch ran to the end
    flat = " ".join(out.split())
    assert "The rollout stops here: bad-01 failed (1 of 3 hosts, more than vllm_deploy_max_fail_percentage 0%)" in flat, out[-3000:]
    assert "[good-02]" not in serve_play  # the next batch never started
