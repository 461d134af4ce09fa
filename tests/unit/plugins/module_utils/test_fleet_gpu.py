# -*- coding: utf-8 -*-
"""GPU facts wired into planning: detected profile and count, mismatch and real-VRAM checks."""

from __future__ import annotations

import pytest

from ansible_collections.llmfleet.vllm.plugins.module_utils.fleet import Fleet, FleetError

SEED = "Qwen/Qwen3.6-35B-A3B"


def facts(profile, count, mib, product="NVIDIA H200", vendor="nvidia", reason="matched"):
    return {"vendor": vendor, "product": product, "count": count, "memory_mib": mib,
            "memory_total_mib": mib * count if mib else None, "profile": profile, "profile_reason": reason}


def test_detected_profile_and_count_replace_unset_hardware():
    hv = {"gpu1": {"vllm_recipe": SEED}}
    fleet = Fleet(hv, {}, facts={"gpu1": facts("h100", 4, 81559, "NVIDIA H100 80GB HBM3")})
    plan = fleet.plan("gpu1")
    assert plan["hardware"] == "h100" and plan["gpu_count"] == 4
    assert plan["argv"][plan["argv"].index("--tensor-parallel-size") + 1] == "4"  # 84 GB > 80 GB: whole (real) node


def test_no_profile_and_no_facts_are_clear_errors():
    hv = {"a": {"vllm_recipe": SEED}, "b": {"vllm_recipe": SEED}}
    fleet = Fleet(hv, {}, facts={"b": facts(None, 8, 81920, "NVIDIA A100-SXM4-80GB", reason="NVIDIA A100 has no taxonomy profile")})
    with pytest.raises(FleetError, match="host a: vllm_hardware is not set and no detected GPU profile"):
        fleet.plan("a")
    with pytest.raises(FleetError, match="A100 has no taxonomy profile"):
        fleet.plan("b")


def test_declared_versus_detected_mismatch_is_reported():
    hv = {"h": {"vllm_recipe": SEED, "vllm_hardware": "h100", "vllm_variant": "fp8"},
          "n": {"vllm_recipe": SEED, "vllm_hardware": "h200"}}
    fleet = Fleet(hv, {}, facts={"h": facts("h200", 8, 143771), "n": {"vendor": "none", "count": 0, "profile": None}})
    _plans, problems = fleet.check(["h", "n"])
    assert any("host h: vllm_hardware=h100 but the host's GPUs match h200 (NVIDIA H200 x8)" in p for p in problems)
    assert any("host n: vllm_hardware=h200 but no GPU was detected" in p for p in problems)


def test_real_gpu_count_and_vram_checks():
    hv = {"small": {"vllm_recipe": SEED, "vllm_hardware": "h200"},
          "tiny": {"vllm_recipe": SEED, "vllm_hardware": "h200", "vllm_gpu_count": 1}}
    fleet = Fleet(hv, {}, facts={"small": facts("h200", 1, 143771), "tiny": facts("h200", 1, 40000)})
    _plans, problems = fleet.check(["small", "tiny"])
    assert any("host small: the plan uses 8 GPUs per node but the host has 1" in p and "vllm_gpu_count: 1" in p for p in problems)
    assert any("host tiny: variant default needs 84 GB of GPU memory but the host has 42 GB" in p for p in problems)
    assert not any(p.startswith("host tiny: the plan uses") for p in problems)


def test_failing_tool_without_any_gpu_is_a_warning(tmp_path):
    from ansible_collections.llmfleet.vllm.plugins.module_utils import gpu
    msg = "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver."
    tool = tmp_path / "nvidia-smi"
    tool.write_text("#!/bin/sh\nexit 9\n")
    tool.chmod(0o755)
    facts = gpu.gather(lambda argv: (9, msg, ""), {"nvidia-smi": str(tool)},
                       sysfs_root=str(tmp_path / "no-sysfs"), dgx_release_path=None, meminfo_path=None, cpu_arch="x86_64")
    assert facts["vendor"] == "none" and facts["count"] == 0
    assert any("is installed but failed (rc 9" in w and "sysfs shows no GPU" in w for w in facts["warnings"])
