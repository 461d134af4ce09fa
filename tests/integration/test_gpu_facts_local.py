# -*- coding: utf-8 -*-
"""llmfleet.vllm.gpu_facts through a real ``ansible-playbook`` run against localhost.

The GPU tool is ``../shared/fixtures/gpu/fake-nvidia-smi``: a copy of it runs behind a small
wrapper (tests/fake_gpu_tools.py) that redirects its hard-wired ``/etc/fake-gpus.json`` to a
JSON file in the test's tmp directory (builtins.open is patched before the unchanged script
runs), so nothing is written to /etc. fake-nvidia-smi answers ``-L``, ``--query-gpu`` and the
summary table but not ``-q -x``: these runs exercise the module's ``--query-gpu`` CSV path (and,
with ``"fail": true``, the fallback to sysfs). The XML path is covered by tests/unit/plugins/module_utils/test_gpu.py
with the real H200 capture. sysfs comes from tests/unit/fixtures/gpu/sysfs-* through the module's ``sysfs_root``.

The profile match runs through the module's action plugin, which reads the taxonomy of the
host's ``vllm_recipes_path`` (the built-in one unless a test sets it).

No docker needed; each playbook run takes a few seconds.
"""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import subprocess
import sys

import pytest
import yaml

from fake_gpu_tools import fake_nvidia_smi_source, install_fake_nvidia_smi

pytestmark = pytest.mark.slow

FIX = pathlib.Path(__file__).resolve().parents[1] / "unit" / "fixtures" / "gpu"

PLAYBOOK = """\
- name: Detect GPUs
  hosts: localhost
  connection: local
  gather_facts: false
  vars: {play_vars}
  tasks:
    - name: Detect
      llmfleet.vllm.gpu_facts: {args}
      register: detected

    - name: Detect again in check mode
      llmfleet.vllm.gpu_facts: {args}
      check_mode: true
      register: detected_check

    - name: The facts are set on the host and nothing changed
      ansible.builtin.assert:
        that:
          - ansible_facts.llmfleet_gpu is mapping
          - detected is not changed
          - detected_check is not changed
          - detected_check.ansible_facts.llmfleet_gpu.profile == ansible_facts.llmfleet_gpu.profile

    - name: Save the facts for the test
      ansible.builtin.copy:
        content: "{{{{ {{'facts': ansible_facts.llmfleet_gpu, 'warnings': detected.warnings | default([])}} | to_json }}}}"
        dest: {out}
        mode: "0644"
"""


@pytest.fixture(scope="module")
def fake_source(shared_dir):
    return fake_nvidia_smi_source(shared_dir)


@pytest.fixture(scope="module")
def ansible_playbook():
    path = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
    if not os.path.isfile(path):
        path = shutil.which("ansible-playbook")
    if not path:
        pytest.skip("ansible-playbook not found")
    return path


def install_fake(fake_source, tmp_path, config):
    """tmp/bin/nvidia-smi: the wrapper; tmp/fake-nvidia-smi.py: the unchanged copy."""
    return install_fake_nvidia_smi(fake_source, tmp_path, config, wrapper_dir=tmp_path / "bin")


def run_play(ansible_playbook, collections_dir, tmp_path, play_vars=None, **module_args):
    absent = str(tmp_path / "absent")
    args = dict(amd_smi_path=absent, rocm_smi_path=absent, xpu_smi_path=absent, dgx_release_path=absent)
    args.update(module_args)
    out = tmp_path / "facts.json"
    playbook = tmp_path / "play.yml"
    playbook.write_text(PLAYBOOK.format(args=json.dumps(args), out=json.dumps(str(out)), play_vars=json.dumps(play_vars or {})))
    env = dict(os.environ)
    env.update({
        "ANSIBLE_COLLECTIONS_PATH": str(collections_dir),
        "ANSIBLE_LOCAL_TEMP": str(tmp_path / "ansible-local"),
        "ANSIBLE_REMOTE_TMP": str(tmp_path / "ansible-remote"),
        "ANSIBLE_NOCOLOR": "1",
        "ANSIBLE_RETRY_FILES_ENABLED": "0",
        "ANSIBLE_LOCALHOST_WARNING": "0",
        "ANSIBLE_INVENTORY_UNPARSED_WARNING": "0",
    })
    proc = subprocess.run(
        [ansible_playbook, "-i", "localhost,", "-e", "ansible_python_interpreter=%s" % sys.executable, str(playbook)],
        capture_output=True, text=True, env=env, cwd=str(tmp_path), timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    saved = json.loads(out.read_text())
    return saved["facts"], proc.stdout + proc.stderr


@pytest.mark.parametrize("gpus, expected", [
    (
        [{"name": "NVIDIA H100 80GB HBM3", "memory_total_mib": 81559}] * 8,
        {"product": "NVIDIA H100 80GB HBM3", "count": 8, "memory_mib": 81559, "memory_total_mib": 8 * 81559,
         "profile": "h100", "compute_capability": "9.0", "architecture": "Hopper"},
    ),
    (
        [{"name": "NVIDIA RTX PRO 6000 Blackwell Workstation Edition", "memory_total_mib": 97887}] * 2,
        {"count": 2, "memory_mib": 97887, "profile": "rtx_pro_6000_2x", "compute_capability": "12.0"},
    ),
])
def test_fake_nvidia_smi(fake_source, ansible_playbook, collections_dir, tmp_path, gpus, expected):
    wrapper = install_fake(fake_source, tmp_path, {"driver_version": "550.54.15", "cuda_version": "12.4", "gpus": gpus})
    facts = run_play(ansible_playbook, collections_dir, tmp_path, nvidia_smi_path=wrapper,
                     sysfs_root=str(FIX / "sysfs-nvidia-h100-8x-nvswitch"))[0]
    for key, value in expected.items():
        assert facts[key] == value, (key, facts[key], facts["profile_reason"])
    assert facts["vendor"] == "nvidia" and facts["source"] == "nvidia-smi --query-gpu"
    assert facts["driver_version"] == "550.54.15" and facts["cuda_version"] == "12.4"
    assert facts["driver_loaded"] is True and facts["nvswitch_count"] == 4
    assert [g["pci_bus_id"] for g in facts["gpus"]][:2] == ["00000000:01:00.0", "00000000:02:00.0"]
    statuses = [(e["command"], e["status"]) for e in facts["sources_tried"] if e["source"] == "nvidia-smi"]
    assert statuses[0] == ("nvidia-smi -q -x", "unparsable")  # the stand-in prints its table for -q -x
    assert [e["source"] for e in facts["sources_tried"]][-1] == "sysfs"  # NVIDIA answered: no AMD/Intel probes
    assert "amd-smi" not in [e["source"] for e in facts["sources_tried"]]
    assert facts["cpu_arch"] and facts["dgx_os"] is None and facts["mixed"] is False


def test_tool_fails_falls_back_to_sysfs(fake_source, ansible_playbook, collections_dir, tmp_path):
    wrapper = install_fake(fake_source, tmp_path, {"fail": True, "gpus": [{"name": "NVIDIA H100 80GB HBM3",
                                                                           "memory_total_mib": 81559}] * 8})
    facts, output = run_play(ansible_playbook, collections_dir, tmp_path, nvidia_smi_path=wrapper,
                             sysfs_root=str(FIX / "sysfs-nvidia-h100-8x-nvswitch"))
    assert (facts["vendor"], facts["source"], facts["count"], facts["product"], facts["profile"]) == (
        "nvidia", "sysfs", 8, "NVIDIA H100 80GB HBM3", "h100")
    assert facts["driver_loaded"] is False and facts["kernel_driver"] is None
    assert facts["memory_mib"] is None and facts["driver_version"] is None and facts["nvswitch"] is True
    first = facts["sources_tried"][0]
    assert (first["command"], first["status"], first["rc"]) == ("nvidia-smi -q -x", "failed", 9)
    assert "couldn't communicate with the NVIDIA driver" in first["message"]
    assert any(w.startswith("nvidia-smi -q -x: rc 9") for w in facts["warnings"])
    assert "[WARNING]" in output and "rc 9" in output


def test_no_gpu(ansible_playbook, collections_dir, tmp_path):
    facts, output = run_play(ansible_playbook, collections_dir, tmp_path, nvidia_smi_path=str(tmp_path / "absent"),
                             sysfs_root=str(FIX / "sysfs-none"))
    assert facts["vendor"] == "none" and facts["count"] == 0 and facts["gpus"] == []
    assert facts["profile"] is None and facts["profile_reason"] == "no NVIDIA, AMD or Intel GPU found"
    assert facts["driver_loaded"] is None and facts["warnings"] == [] and facts["source"] == "none"
    assert "[WARNING]" not in output


def test_site_local_taxonomy_profile_is_matched(fake_source, ansible_playbook, collections_dir, repo_root, tmp_path):
    """A site-local taxonomy adds rtx_pro_6000_4x: 4 RTX PRO 6000 match it, with no Python change."""
    taxonomy = yaml.safe_load((repo_root / "data" / "recipes" / "taxonomy.yaml").read_text())
    taxonomy["hardware_profiles"]["rtx_pro_6000_4x"] = dict(
        taxonomy["hardware_profiles"]["rtx_pro_6000_2x"], display_name="RTX PRO 6000 Blackwell 4x", gpu_count=4,
        vram_gb=384)
    site = tmp_path / "recipes-site"
    site.mkdir()
    (site / "taxonomy.yaml").write_text(yaml.safe_dump(taxonomy, sort_keys=False))
    gpus = [{"name": "NVIDIA RTX PRO 6000 Blackwell Workstation Edition", "memory_total_mib": 97887}] * 4
    wrapper = install_fake(fake_source, tmp_path, {"driver_version": "580.95.05", "cuda_version": "13.0", "gpus": gpus})
    args = dict(nvidia_smi_path=wrapper, sysfs_root=str(FIX / "sysfs-none"))
    facts = run_play(ansible_playbook, collections_dir, tmp_path, **args)[0]
    assert facts["count"] == 4 and facts["profile"] is None, facts["profile_reason"]  # the built-in taxonomy
    assert "none for 4 GPUs" in facts["profile_reason"]
    facts = run_play(ansible_playbook, collections_dir, tmp_path, play_vars={"vllm_recipes_path": [str(site)]},
                     **args)[0]
    assert facts["profile"] == "rtx_pro_6000_4x", facts["profile_reason"]
    assert "is rtx_pro_6000_4x (taxonomy node 4 x 96 GB, fixed GPU count)" in facts["profile_reason"]
