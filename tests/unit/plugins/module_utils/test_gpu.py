# -*- coding: utf-8 -*-
"""gpu_facts: every parser, the sysfs scan, the profile match and the module's main path.

Fixtures: tests/unit/fixtures/gpu/<vendor-product>/ (each with a SOURCE.md) and the real H200
capture in ../shared/fixtures/gpu/nvidia-h200/ (skipped when ../shared is absent).
"""

from __future__ import annotations

import json
import os
import pathlib
import stat
import subprocess
import sys

import pytest
import yaml

from ansible_collections.llmfleet.vllm.plugins.module_utils import gpu, gpu_tables
from ansible_collections.llmfleet.vllm.plugins.module_utils.catalog import get_catalog
from fake_gpu_tools import fake_nvidia_smi_source, install_fake_nvidia_smi

FIX = pathlib.Path(__file__).resolve().parents[2] / "fixtures" / "gpu"
REPO = pathlib.Path(__file__).resolve().parents[4]
MODULE = REPO / "plugins" / "modules" / "gpu_facts.py"

Q_FULL = "--query-gpu=" + ",".join(gpu.NV_QUERY_FIELDS_FULL)
Q_BASIC = "--query-gpu=" + ",".join(gpu.NV_QUERY_FIELDS_BASIC)
CSV_FMT = "--format=csv,noheader,nounits"
AMD_STATIC = ("static", "--asic", "--bus", "--vram", "--driver", "--board", "--json")
ROCM_SMI = ("--showproductname", "--showmeminfo", "vram", "--showdriverversion", "--json")

# The built-in taxonomy's profiles, as the action plugin passes them to the module.
PROFILES = gpu.profile_specs(get_catalog().hardware_profiles)


def summarize(result, **kwargs):
    return gpu.summarize(result, profiles=PROFILES, **kwargs)


def match_profile(facts):
    return gpu.match_profile(facts, PROFILES)


def gather(run, tools, **kwargs):
    return gpu.gather(run, tools, profiles=PROFILES, **kwargs)


def read(*parts):
    return FIX.joinpath(*parts).read_text()


@pytest.fixture(scope="module")
def h200(shared_dir):
    path = shared_dir / "fixtures" / "gpu" / "nvidia-h200"
    if not path.is_dir():
        pytest.skip("%s is absent" % path)
    return path


class FakeRunner:
    """``run(argv)`` for gpu.gather: answers by the arguments after the tool path."""

    def __init__(self, answers):
        self.answers = dict((tuple(k), v) for k, v in answers.items())
        self.calls = []

    def __call__(self, argv):
        self.calls.append(tuple(argv))
        answer = self.answers.get(tuple(argv[1:]))
        if answer is None:
            return 2, "", "unknown arguments %s" % " ".join(argv[1:])
        if isinstance(answer, str):
            return 0, answer, ""
        return answer


def tool(tmp_path, name):
    """An executable placeholder (gather checks the path; FakeRunner answers)."""
    path = tmp_path / "bin" / name
    path.parent.mkdir(exist_ok=True)
    path.write_text("#!/bin/sh\nexit 99\n")
    path.chmod(0o755)
    return str(path)


def no_tools():
    return {"nvidia-smi": None, "amd-smi": None, "rocm-smi": None, "xpu-smi": None}


# ---------------------------------------------------------------------------------------------
# NVIDIA
# ---------------------------------------------------------------------------------------------

def test_real_h200_xml(h200):
    result = gpu.parse_nvidia_smi_xml((h200 / "nvidia-smi-q.xml").read_text())
    assert result["driver_version"] == "580.159.04" and result["cuda_version"] == "13.0"
    (g,) = result["gpus"]
    assert g["product"] == "NVIDIA H200" and g["memory_mib"] == 143771 and g["pci_device_id"] == "0x2335"
    assert g["pci_bus_id"] == "00000000:00:06.0" and g["uuid"] == "GPU-367031c7-4063-471c-e29e-a4fb1e1717fe"
    assert g["architecture"] == "Hopper" and g["mig_mode"] == "disabled" and g["fabric_state"] is None
    assert g["compute_capability"] is None  # not in the XML

    facts = summarize(result, sysfs=gpu.scan_sysfs_pci(str(FIX / "sysfs-nvidia-h200-1x")), cpu_arch="x86_64")
    assert facts["profile"] == "h200"
    assert facts["count"] == 1
    assert facts["memory_mib"] == 143771 and facts["memory_total_mib"] == 143771
    assert facts["driver_version"] == "580.159.04"
    assert facts["compute_capability"] == "9.0"  # from the product table
    assert facts["vendor"] == "nvidia" and facts["cuda_version"] == "13.0" and facts["mig_mode"] == "disabled"
    assert facts["kernel_driver"] == "nvidia" and facts["driver_loaded"] is True
    assert facts["nvswitch"] is False and facts["nvswitch_count"] == 0
    assert "this host has 1 GPU" in facts["profile_reason"] and facts["warnings"] == []


def test_real_h200_text_outputs(h200):
    banner = gpu.parse_nvidia_smi_banner((h200 / "nvidia-smi.txt").read_text())
    assert banner == {"driver_version": "580.159.04", "cuda_version": "13.0"}
    # the header+units CSV of the capture is not the noheader,nounits form the module asks for
    with pytest.raises(ValueError):
        gpu.parse_nvidia_smi_csv((h200 / "query-gpu-wide.csv").read_text())


def test_real_h200_gather(h200, tmp_path):
    """The module's sequence on the H200: -q -x, --query-gpu for compute_cap, nvlink -s (empty)."""
    runner = FakeRunner({
        ("-q", "-x"): (h200 / "nvidia-smi-q.xml").read_text(),
        (Q_FULL, CSV_FMT): read("nvidia-h200", "query-gpu.csv"),
        ("nvlink", "-s"): "",
    })
    tools = dict(no_tools(), **{"nvidia-smi": tool(tmp_path, "nvidia-smi")})
    facts = gather(runner, tools, sysfs_root=str(FIX / "sysfs-nvidia-h200-1x"),
                   dgx_release_path=str(tmp_path / "absent"), cpu_arch="x86_64")
    assert (facts["profile"], facts["count"], facts["memory_mib"], facts["driver_version"],
            facts["compute_capability"]) == ("h200", 1, 143771, "580.159.04", "9.0")
    assert facts["source"] == "nvidia-smi -q -x" and facts["nvlink"] is False and facts["nvlink_active_links"] == 0
    assert facts["dgx_os"] is None and facts["warnings"] == []
    assert [c[1:] for c in runner.calls] == [("-q", "-x"), (Q_FULL, CSV_FMT), ("nvlink", "-s")]
    statuses = [(e["source"], e["status"]) for e in facts["sources_tried"]]
    assert statuses[:3] == [("nvidia-smi", "ok")] * 3
    assert ("sysfs", "ok") in statuses


def test_b200_xml_csv_nvlink():
    result = gpu.parse_nvidia_smi_xml(read("nvidia-b200-8x", "nvidia-smi-q.xml"))
    csv = gpu.parse_nvidia_smi_csv(read("nvidia-b200-8x", "query-gpu.csv"))
    assert [g["compute_capability"] for g in csv["gpus"]] == ["10.0"] * 8
    gpu._merge_nvidia_query(result, csv)
    result["nvlink"] = gpu.parse_nvidia_nvlink_status(read("nvidia-b200-8x", "nvlink-s.txt"))
    assert result["nvlink"]["active_links"] == 144 and result["nvlink"]["per_gpu"][7] == 18
    facts = summarize(result)
    assert facts["product"] == "NVIDIA B200" and facts["count"] == 8
    assert facts["memory_mib"] == 183359 and facts["memory_total_mib"] == 8 * 183359
    assert facts["compute_capability"] == "10.0" and facts["architecture"] == "Blackwell"
    assert facts["nvlink"] is True and facts["nvswitch"] is True  # fabric state Completed
    assert facts["profile"] == "b200"
    assert facts["gpus"][3]["pci_bus_id"] == "00000000:61:00.0"


def test_gb10_unified_memory(tmp_path):
    result = gpu.parse_nvidia_smi_xml(read("nvidia-gb10", "nvidia-smi-q.xml"))
    (g,) = result["gpus"]
    assert g["memory_mib"] is None and g["memory_reported"] == "N/A" and g["addressing_mode"] == "ATS"
    csv = gpu.parse_nvidia_smi_csv(read("nvidia-gb10", "query-gpu.csv"))
    assert csv["gpus"][0]["memory_mib"] is None and csv["gpus"][0]["mig_mode"] is None
    gpu._merge_nvidia_query(result, csv)
    dgx = gpu.parse_dgx_release(read("nvidia-gb10", "dgx-release"))
    assert dgx["name"] == "DGX Spark" and dgx["version"] == "7.3.1" and dgx["swbuild_version"] == "7.2.3"
    assert "DGX_SERIAL_NUMBER" not in dgx["fields"]
    meminfo = gpu.parse_meminfo_total_mib(read("nvidia-gb10", "meminfo"))
    assert meminfo == 124610
    facts = summarize(result, sysfs=gpu.scan_sysfs_pci(str(FIX / "sysfs-nvidia-gb10")), cpu_arch="aarch64",
                      dgx_os=dgx, meminfo_mib=meminfo)
    assert facts["unified_memory"] is True and facts["memory_source"] == "system_memory"
    assert facts["memory_mib"] == 124610 and facts["compute_capability"] == "12.1"
    assert facts["profile"] == "dgx_spark_gb10" and "unified" in facts["profile_reason"]
    assert facts["cpu_arch"] == "aarch64" and facts["dgx_os"]["pretty_name"] == "NVIDIA DGX Spark"
    assert gpu.parse_nvidia_smi_banner(read("nvidia-gb10", "nvidia-smi.txt"))["cuda_version"] == "13.0"


def test_gb10_gather_reads_dgx_release_and_meminfo(tmp_path):
    runner = FakeRunner({
        ("-q", "-x"): read("nvidia-gb10", "nvidia-smi-q.xml"),
        (Q_FULL, CSV_FMT): read("nvidia-gb10", "query-gpu.csv"),
        ("nvlink", "-s"): "",
    })
    tools = dict(no_tools(), **{"nvidia-smi": tool(tmp_path, "nvidia-smi")})
    facts = gather(runner, tools, sysfs_root=str(FIX / "sysfs-nvidia-gb10"),
                   dgx_release_path=str(FIX / "nvidia-gb10" / "dgx-release"),
                   meminfo_path=str(FIX / "nvidia-gb10" / "meminfo"), cpu_arch="aarch64")
    assert facts["profile"] == "dgx_spark_gb10" and facts["memory_mib"] == 124610
    assert facts["dgx_os"]["name"] == "DGX Spark" and facts["kernel_driver"] == "nvidia"


def test_rtx_pro_6000_by_count():
    result = gpu.parse_nvidia_smi_csv(read("nvidia-rtx-pro-6000-2x", "query-gpu.csv"))
    assert result["source"] == "nvidia-smi --query-gpu" and result["driver_version"] == "580.95.05"
    facts = summarize(result)
    assert facts["profile"] == "rtx_pro_6000_2x" and facts["count"] == 2 and facts["memory_mib"] == 97887
    assert facts["compute_capability"] == "12.0" and facts["mig_mode"] is None and facts["nvswitch"] is None


def test_nvidia_csv_rejects_garbage():
    for text in ("", "Traceback (most recent call last):\n  KeyError: 'compute_cap'\n",
                 "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver."):
        with pytest.raises(ValueError):
            gpu.parse_nvidia_smi_csv(text)
    with pytest.raises(ValueError):
        gpu.parse_nvidia_smi_csv("x, NVIDIA H100, u, 1, 2, 3, 4, 5, 6\n")


def test_nvidia_xml_rejects_other_text():
    for text in ("| NVIDIA-SMI 550.54.15    Driver Version: 550.54.15    CUDA Version: 12.4 |", "<a/>", "<broken"):
        with pytest.raises(ValueError):
            gpu.parse_nvidia_smi_xml(text)


def test_nvlink_status_without_links():
    assert gpu.parse_nvidia_nvlink_status("") == {"active_links": 0, "per_gpu": {}}
    text = "GPU 0: NVIDIA H100 (UUID: GPU-1)\n\t Link 0: <inactive>\n\t Link 1: 26.562 GB/s\n"
    assert gpu.parse_nvidia_nvlink_status(text) == {"active_links": 1, "per_gpu": {0: 1}}


# ---------------------------------------------------------------------------------------------
# AMD
# ---------------------------------------------------------------------------------------------

def test_amd_smi_gpu_data_format_mi355x():
    result = gpu.parse_amd_smi_static(read("amd-mi355x-8x", "amd-smi-static.json"))
    assert len(result["gpus"]) == 8 and result["driver_version"] == "6.14.14"
    g = result["gpus"][5]
    assert (g["index"], g["product"], g["gfx_target"], g["memory_mib"], g["pci_device_id"], g["pci_bus_id"]) == (
        5, "AMD Instinct MI355X", "gfx950", 294896, "0x75a3", "0000:a6:00.0")
    version = gpu.parse_amd_smi_version(read("amd-mi355x-8x", "amd-smi-version.json"))
    assert version == {"rocm_version": "7.0.0", "amdsmi_version": "26.0.0", "driver_version": "6.14.14"}
    assert gpu.parse_amd_smi_metric(read("amd-mi355x-8x", "amd-smi-metric.json")) == dict((i, 294896) for i in range(8))
    result["rocm_version"] = version["rocm_version"]
    facts = summarize(result)
    assert facts["profile"] == "mi355x" and facts["architecture"] == "CDNA4" and facts["gfx_target"] == "gfx950"
    assert facts["rocm_version"] == "7.0.0" and facts["memory_total_mib"] == 8 * 294896
    assert facts["compute_capability"] is None and facts["mig_mode"] is None


def test_amd_smi_list_format_with_warning_line_mi300x():
    text = read("amd-mi300x-8x", "amd-smi-static.json")
    assert text.startswith("WARNING:")
    result = gpu.parse_amd_smi_static(text)
    assert [g["index"] for g in result["gpus"]] == list(range(8))
    assert set(g["memory_mib"] for g in result["gpus"]) == {196592}
    assert gpu.parse_amd_smi_version(read("amd-mi300x-8x", "amd-smi-version.json"))["rocm_version"] == "6.2.0"
    facts = summarize(result)
    assert facts["profile"] == "mi300x" and facts["gfx_target"] == "gfx942" and facts["architecture"] == "CDNA3"


def test_rocm_smi_mi300x_matches_amd_smi():
    result = gpu.parse_rocm_smi(read("amd-mi300x-8x", "rocm-smi.json"))
    assert result["driver_version"] == "6.7.0" and len(result["gpus"]) == 8
    g = result["gpus"][0]
    assert (g["product"], g["gfx_target"], g["memory_mib"], g["pci_device_id"]) == (
        "AMD Instinct MI300X", "gfx942", 196592, "0x74a1")
    assert summarize(result)["profile"] == "mi300x"


def test_rocm_smi_mi325x():
    result = gpu.parse_rocm_smi(read("amd-mi325x-8x", "rocm-smi.json"))
    facts = summarize(result)
    assert facts["profile"] == "mi325x" and facts["memory_mib"] == 262128 and facts["driver_version"] == "6.10.5"
    assert facts["count"] == 8 and facts["gpus"][7]["index"] == 7


def test_rocm_smi_lowercase_keys_and_card_order():
    text = json.dumps({"card1": {"Card series": "AMD Instinct MI300X", "VRAM Total Memory (B)": "206141652992"},
                       "card0": {"Card series": "AMD Instinct MI300X", "VRAM Total Memory (B)": "206141652992",
                                 "Driver version": "6.8.5"}})
    result = gpu.parse_rocm_smi(text)
    assert [g["index"] for g in result["gpus"]] == [0, 1] and result["driver_version"] == "6.8.5"
    with pytest.raises(ValueError):
        gpu.parse_rocm_smi('{"foo": 1}')


def test_amd_profile_by_gfx_target_and_memory():
    def static(gfx, mib):
        return json.dumps({"gpu_data": [{"gpu": i, "asic": {"market_name": "N/A", "target_graphics_version": gfx},
                                         "vram": {"size": {"value": mib, "unit": "MB"}}} for i in range(8)]})

    for gfx, mib, profile in (("gfx942", 196592, "mi300x"), ("gfx942", 262128, "mi325x"), ("gfx950", 294896, "mi355x"),
                              ("gfx942", 131072, None)):
        facts = summarize(gpu.parse_amd_smi_static(static(gfx, mib)))
        assert facts["profile"] == profile, (gfx, mib, facts["profile_reason"])
        if profile:
            assert "gfx target" in facts["profile_reason"]


def test_amd_inbox_driver_and_old_vram_key():
    text = json.dumps([{"gpu": 0, "asic": {"market_name": "AMD Instinct MI210", "target_graphics_version": "gfx90a",
                                           "device_id": "0x740f"},
                        "vram": {"vram_size_mb": 65520},
                        "driver": {"name": "amdgpu", "version": "Linuxversion6.14.0-24-generic(buildd@lcy02)"}}])
    result = gpu.parse_amd_smi_static(text)
    assert result["driver_version"] == "kernel 6.14.0-24-generic" and result["gpus"][0]["memory_mib"] == 65520
    facts = summarize(result)
    assert facts["profile"] is None and "no taxonomy profile" in facts["profile_reason"]
    assert facts["architecture"] == "CDNA2"


# ---------------------------------------------------------------------------------------------
# Intel
# ---------------------------------------------------------------------------------------------

def _intel(fixture):
    devices = gpu.parse_xpu_smi_discovery(read(fixture, "xpu-smi-discovery.json"))
    details = dict((d["device_id"], gpu.parse_xpu_smi_device(read(fixture, "xpu-smi-device-%d.json" % d["device_id"])))
                   for d in devices)
    return devices, details


def test_xpu_smi_b60():
    devices, details = _intel("intel-arc-pro-b60-4x")
    assert [d["pci_device_id"] for d in devices] == ["0xe211"] * 4
    assert details[0]["memory_mib"] == 24448 and details[0]["driver_version"] == "1.6.34666+13"
    version = gpu.parse_xpu_smi_version(read("intel-arc-pro-b60-4x", "xpu-smi-version.txt"))
    assert version == {"xpu_smi_version": "1.3.1.20250724", "level_zero_version": "1.21.9"}
    facts = summarize(gpu.build_intel_result(devices, details, version))
    assert facts["profile"] == "arc_pro_b60" and facts["count"] == 4 and facts["memory_mib"] == 24448
    assert facts["level_zero_version"] == "1.21.9" and facts["architecture"].startswith("Xe2")


def test_xpu_smi_generic_name_is_named_from_pci_id():
    devices, details = _intel("intel-arc-pro-b70-2x")
    facts = summarize(gpu.build_intel_result(devices, details))
    assert facts["product"] == "Intel Arc Pro B70" and facts["profile"] == "arc_pro_b70"
    assert facts["memory_mib"] == 32656


def test_xpu_smi_guide_example_shape():
    """The exact example of intel/xpumanager's smi_user_guide.md (a Flex-era part without a profile)."""
    text = json.dumps({"device_list": [{"device_id": 0, "device_name": "Intel(R) Graphics [0x020a]", "device_type": "GPU",
                                        "pci_bdf_address": "0000:4d:00.0", "pci_device_id": "0x20a",
                                        "uuid": "00000000-0000-0000-0000-020a00008086",
                                        "vendor_name": "Intel(R) Corporation"}]})
    (dev,) = gpu.parse_xpu_smi_discovery(text)
    assert dev["pci_device_id"] == "0x020a" and dev["pci_bus_id"] == "0000:4d:00.0"
    facts = summarize(gpu.build_intel_result([dev]))
    assert facts["vendor"] == "intel" and facts["profile"] is None


# ---------------------------------------------------------------------------------------------
# sysfs
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("tree, vendor, count, product, profile, driver_loaded, memory", [
    ("sysfs-nvidia-h200-1x", "nvidia", 1, "NVIDIA H200", "h200", True, None),
    ("sysfs-nvidia-h100-8x-nvswitch", "nvidia", 8, "NVIDIA H100 80GB HBM3", "h100", False, None),
    ("sysfs-nvidia-gb10", "nvidia", 1, "NVIDIA GB10", "dgx_spark_gb10", True, None),
    ("sysfs-amd-mi300x-2x", "amd", 2, "AMD Instinct MI300X", "mi300x", True, 196592),
    ("sysfs-intel-b60-2x-igpu", "intel", 2, "Intel Arc Pro B60", "arc_pro_b60", True, None),
    ("sysfs-none", "none", 0, None, None, None, None),
])
def test_sysfs_trees(tree, vendor, count, product, profile, driver_loaded, memory):
    scan = gpu.scan_sysfs_pci(str(FIX / tree))
    facts = summarize(gpu.sysfs_result(scan), sysfs=scan)
    assert (facts["vendor"], facts["count"], facts["product"], facts["profile"]) == (vendor, count, product, profile), \
        facts["profile_reason"]
    assert facts["driver_loaded"] is driver_loaded and facts["memory_mib"] == memory
    if vendor != "none":
        assert facts["source"] == "sysfs"


def test_sysfs_details():
    h100 = gpu.scan_sysfs_pci(str(FIX / "sysfs-nvidia-h100-8x-nvswitch"))
    assert h100["nvswitch_count"] == 4 and h100["devices_scanned"] == 13
    facts = summarize(gpu.sysfs_result(h100), sysfs=h100)
    assert facts["nvswitch"] is True and facts["kernel_driver"] is None
    assert any("no kernel driver is bound" in w for w in facts["warnings"])
    intel = gpu.scan_sysfs_pci(str(FIX / "sysfs-intel-b60-2x-igpu"))
    assert intel["ignored"] == [{"pci_bus_id": "0000:00:02.0", "reason": "Intel integrated graphics 0xa780"}]
    h200 = gpu.scan_sysfs_pci(str(FIX / "sysfs-nvidia-h200-1x"))
    assert [g["pci_bus_id"] for g in h200["gpus"]] == ["0000:00:06.0"]  # PCI_SLOT_NAME, not the fixture dir name
    amd = gpu.scan_sysfs_pci(str(FIX / "sysfs-amd-mi300x-2x"))
    assert [g["pci_class"] for g in amd["gpus"]] == ["0x120000", "0x120000"]  # the audio function is not a GPU
    assert gpu.scan_sysfs_pci(str(FIX / "does-not-exist"))["available"] is False


def test_sysfs_unknown_device_id(tmp_path):
    d = tmp_path / "bus" / "pci" / "devices" / "0000:17:00.0"
    d.mkdir(parents=True)
    for name, value in (("vendor", "0x10de"), ("device", "0x20b2"), ("class", "0x030200"), ("uevent", "DRIVER=nvidia")):
        (d / name).write_text(value + "\n")
    scan = gpu.scan_sysfs_pci(str(tmp_path))
    facts = summarize(gpu.sysfs_result(scan), sysfs=scan)
    assert facts["product"] == "NVIDIA device 0x20b2" and facts["profile"] is None and facts["driver_loaded"] is True
    assert facts["profile_reason"].startswith("NVIDIA device 0x20b2 has no taxonomy profile")


def test_sysfs_driver_symlink_product_name_and_nouveau(tmp_path):
    base = tmp_path / "bus" / "pci" / "devices"
    for bdf, vendor, device, driver in (("0000:01:00.0", "0x10de", "0x2684", "nouveau"),
                                        ("0000:02:00.0", "0x10de", "0x2684", "nouveau")):
        d = base / bdf
        d.mkdir(parents=True)
        for name, value in (("vendor", vendor), ("device", device), ("class", "0x030000")):
            (d / name).write_text(value + "\n")
        target = tmp_path / "bus" / "pci" / "drivers" / driver
        target.mkdir(parents=True, exist_ok=True)
        os.symlink(os.path.relpath(str(target), str(d)), str(d / "driver"))
    amd = base / "0000:83:00.0"
    amd.mkdir(parents=True)
    for name, value in (("vendor", "0x1002"), ("device", "0x74b5"), ("class", "0x120000"),
                        ("product_name", "AMD Instinct MI300X VF"), ("mem_info_vram_total", "205822885888")):
        (amd / name).write_text(value + "\n")
    scan = gpu.scan_sysfs_pci(str(tmp_path))
    assert [g["kernel_driver"] for g in scan["gpus"]] == ["nouveau", "nouveau", None]
    facts = summarize(gpu.sysfs_result(scan), sysfs=scan)  # NVIDIA wins over AMD
    assert facts["profile"] == "rtx_4090_2x" and facts["driver_loaded"] is False
    assert any("nouveau" in w for w in facts["warnings"])
    amd_only = dict(scan, gpus=[g for g in scan["gpus"] if g["vendor"] == "amd"])
    facts = summarize(gpu.sysfs_result(amd_only), sysfs=amd_only)
    assert facts["product"] == "AMD Instinct MI300X VF" and facts["profile"] == "mi300x"


# ---------------------------------------------------------------------------------------------
# Profile match
# ---------------------------------------------------------------------------------------------

def facts_for(vendor, product, count, memory=None, gfx=None, unified=False):
    facts = gpu.empty_facts()
    facts.update(vendor=vendor, product=product, count=count, memory_mib=memory, gfx_target=gfx, unified_memory=unified,
                 gpus=[{"product": product}] * count)
    return facts


@pytest.mark.parametrize("vendor, product, count, memory, expected", [
    ("nvidia", "NVIDIA H200", 8, 143771, "h200"),
    ("nvidia", "NVIDIA H200 NVL", 2, 143771, "h200"),
    ("nvidia", "NVIDIA H100 80GB HBM3", 8, 81559, "h100"),
    ("nvidia", "NVIDIA H100 PCIe", 1, 81559, "h100"),
    ("nvidia", "NVIDIA H100 NVL", 2, 95830, "h100"),
    ("nvidia", "NVIDIA B200", 8, 183359, "b200"),
    ("nvidia", "NVIDIA GB200", 4, 189471, "gb200"),
    ("nvidia", "NVIDIA B300 SXM6 AC", 8, 275040, "b300"),
    ("nvidia", "NVIDIA GB300", 4, 284208, "gb300"),
    ("nvidia", "NVIDIA GB300", 1, 252000, "dgx_station_gb300"),
    ("nvidia", "NVIDIA GB10", 1, 124610, "dgx_spark_gb10"),
    ("nvidia", "NVIDIA RTX PRO 6000 Blackwell Workstation Edition", 1, 97887, "rtx_pro_6000"),
    ("nvidia", "NVIDIA RTX PRO 6000 Blackwell Server Edition", 2, 97887, "rtx_pro_6000_2x"),
    ("nvidia", "NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition", 8, 97887, "rtx_pro_6000_8x"),
    ("nvidia", "NVIDIA RTX PRO 6000 Blackwell Workstation Edition", 4, 97887, None),
    ("nvidia", "NVIDIA RTX PRO 5000 72GB Blackwell", 1, 73000, "rtx_pro_5000"),
    ("nvidia", "NVIDIA RTX PRO 5000 Blackwell", 4, 73000, "rtx_pro_5000_4x"),
    ("nvidia", "NVIDIA RTX PRO 5000 Blackwell", 1, 48900, None),
    ("nvidia", "NVIDIA GeForce RTX 5090", 1, 32607, "rtx_5090"),
    ("nvidia", "NVIDIA GeForce RTX 5090", 2, 32607, "rtx_5090_2x"),
    ("nvidia", "NVIDIA GeForce RTX 4090", 2, 24564, "rtx_4090_2x"),
    ("nvidia", "NVIDIA GeForce RTX 4090", 1, 24564, None),
    ("nvidia", "NVIDIA RTX 6000 Ada Generation", 1, 49140, None),
    ("nvidia", "NVIDIA A100-SXM4-80GB", 8, 81920, None),
    ("nvidia", "NVIDIA GH200 480GB", 1, 97871, None),
    ("amd", "AMD Instinct MI300X", 8, 196592, "mi300x"),
    ("amd", "AMD Instinct MI300X VF", 1, 196592, "mi300x"),
    ("amd", "AMD Instinct MI325X", 8, 262128, "mi325x"),
    ("amd", "AMD Instinct MI355X", 8, 294896, "mi355x"),
    ("amd", "AMD Instinct MI350X", 8, 294896, None),
    ("amd", "AMD Radeon PRO W7900", 1, 49136, None),
    ("intel", "Intel(R) Arc(TM) Pro B60 Graphics", 4, 24448, "arc_pro_b60"),
    ("intel", "Intel(R) Arc(TM) Pro B60 Graphics", 1, 24448, "arc_pro_b60"),
    ("intel", "Intel Arc Pro B70", 2, 32656, "arc_pro_b70"),
    ("intel", "Intel(R) Data Center GPU Max 1550", 8, 65536, None),
])
def test_match_profile(vendor, product, count, memory, expected):
    profile, reason = match_profile(facts_for(vendor, product, count, memory))
    assert profile == expected, reason
    assert reason


def test_match_profile_reasons():
    reason = match_profile(facts_for("nvidia", "NVIDIA A100-SXM4-80GB", 8))[1]
    assert reason.startswith("NVIDIA A100-SXM4-80GB has no taxonomy profile")
    reason = match_profile(facts_for("nvidia", "NVIDIA RTX PRO 6000 Blackwell Workstation Edition", 4, 97887))[1]
    assert "none for 4 GPUs" in reason and "set vllm_hardware to rtx_pro_6000_2x to use 2 of them" in reason
    reason = match_profile(facts_for("nvidia", "NVIDIA GeForce RTX 4090", 1))[1]
    assert "rtx_4090_2x (2 GPUs)" in reason
    reason = match_profile(facts_for("amd", "AMD Instinct MI350X", 8))[1]
    assert "the closest is mi355x" in reason
    reason = match_profile(facts_for("nvidia", "NVIDIA GH200 480GB", 1))[1]
    assert "the closest is h200" in reason
    reason = match_profile(facts_for("nvidia", "NVIDIA RTX PRO 5000 Blackwell", 1, 48900))[1]
    assert "72 GB card" in reason
    reason = match_profile(facts_for("nvidia", "NVIDIA H100 PCIe", 1, 40000))[1]
    assert "less than the taxonomy's 80 GB" in reason
    assert match_profile(gpu.empty_facts()) == (None, "no NVIDIA, AMD or Intel GPU found")
    mixed = facts_for("nvidia", "NVIDIA H100 PCIe", 2)
    mixed.update(mixed=True, gpus=[{"product": "NVIDIA H100 PCIe"}, {"product": "NVIDIA A100-PCIE-40GB"}])
    profile, reason = match_profile(mixed)
    assert profile is None and reason.startswith("mixed GPU models")


def test_every_rule_profile_exists_in_the_taxonomy(repo_root):
    taxonomy = yaml.safe_load((repo_root / "data" / "recipes" / "taxonomy.yaml").read_text())["hardware_profiles"]
    rules = [rule for vendor_rules in gpu_tables.PROFILE_RULES.values() for rule in vendor_rules]
    for rule in rules:
        if rule.get("profiles"):
            assert gpu._candidates(rule, PROFILES), rule
        assert rule.get("hint") is None or rule["hint"] in taxonomy, rule
    for bands in gpu_tables.AMD_GFX_MEMORY_RULES.values():
        assert all(band[2] in taxonomy for band in bands)
    # every NVIDIA/AMD/Intel taxonomy profile is reachable from some rule
    reachable = set(p for r in rules for p in gpu._candidates(r, PROFILES))
    gpu_brands = [k for k, v in taxonomy.items() if v["brand"] in ("NVIDIA", "AMD") or v["generation"] == "xpu"]
    assert sorted(set(gpu_brands) - reachable) == []


def test_profile_specs_reduce_the_taxonomy():
    assert PROFILES["h200"] == {"gpu_count": 8, "vram_gb": 1128, "scalable": True}
    assert PROFILES["rtx_pro_6000_2x"]["scalable"] is False and gpu._spec(PROFILES, "rtx_pro_6000_2x") == (2, 96, False)
    assert gpu._spec(PROFILES, "dgx_station_gb300") == (1, 252, False)
    assert gpu.profile_specs(PROFILES) == PROFILES  # the reduced form passes through unchanged
    odd = {"cpu": {"gpu_count": 0, "vram_gb": 10}, "bad": "x", "novram": {"gpu_count": 2},
           "flag": {"gpu_count": True, "vram_gb": 8}, "half": {"gpu_count": 2, "vram_gb": 141, "brand": "NVIDIA"}}
    assert gpu.profile_specs(odd) == {"half": {"gpu_count": 2, "vram_gb": 141, "scalable": True}}
    assert gpu._spec(gpu.profile_specs(odd), "half") == (2, 70.5, True)
    assert gpu.profile_specs(None) == {}


def test_site_local_count_variant_is_matched_without_a_rule():
    four = dict(PROFILES, rtx_pro_6000_4x={"gpu_count": 4, "vram_gb": 384, "scalable": False})
    facts = facts_for("nvidia", "NVIDIA RTX PRO 6000 Blackwell Workstation Edition", 4, 97887)
    profile, reason = gpu.match_profile(facts, four)
    assert profile == "rtx_pro_6000_4x" and "taxonomy node 4 x 96 GB, fixed GPU count" in reason
    profile, reason = gpu.match_profile(facts, PROFILES)
    assert profile is None and ("the taxonomy has rtx_pro_6000 (1 GPU), rtx_pro_6000_2x (2 GPUs), "
                                "rtx_pro_6000_8x (8 GPUs), none for 4 GPUs") in reason
    # a site-local taxonomy without a profile of the rule: no profile, said plainly
    profile, reason = gpu.match_profile(facts_for("nvidia", "NVIDIA H200", 8, 143771), {})
    assert profile is None and reason == "NVIDIA H200 has no taxonomy profile"
    # the hint names a profile the taxonomy lacks
    assert gpu.match_profile(facts_for("amd", "AMD Instinct MI350X", 8), {})[1].endswith("the closest is mi355x")


def test_without_profiles_nothing_matches():
    profile, reason = gpu.match_profile(facts_for("nvidia", "NVIDIA H200", 8, 143771), None)
    assert profile is None and "no taxonomy hardware profiles" in reason
    assert gpu.match_profile(gpu.empty_facts(), None) == (None, "no NVIDIA, AMD or Intel GPU found")


def test_pci_tables_name_products_the_rules_know():
    for key, name in gpu_tables.NVIDIA_PCI_IDS.items():
        arch, cc = gpu.nvidia_arch(name)
        assert arch and cc, name
    for product, gfx in gpu_tables.AMD_PCI_IDS.values():
        assert gfx in gpu_tables.AMD_GFX_ARCH
    assert match_profile(facts_for("nvidia", gpu_tables.NVIDIA_PCI_IDS[("0x2bb3", "0x227a")], 1))[0] == "rtx_pro_5000"


@pytest.mark.parametrize("value, expected", [
    ("143771 MiB", 143771), ("80 GiB", 81920), ({"value": 196592, "unit": "MB"}, 196592), ("N/A", None),
    ("[N/A]", None), ("Not Supported", None), (None, None), ("12 parsecs", None), (1.5, 1),
])
def test_to_mib(value, expected):
    assert gpu.to_mib(value) == expected


def test_json_and_pci_helpers():
    assert gpu.load_json_lenient('WARNING: x\n{"a": [1]}\ntrailing') == {"a": [1]}
    with pytest.raises(ValueError):
        gpu.load_json_lenient("no json here")
    assert gpu._pci_id("233510DE") == "0x2335" and gpu._pci_id("0x74A1") == "0x74a1" and gpu._pci_id("N/A") is None
    assert gpu.normalize_product("Intel(R) Arc(TM) Pro B60 Graphics") == "intel arc pro b60 graphics"
    assert gpu.parse_dgx_release("") is None and gpu.parse_meminfo_total_mib("") is None


# ---------------------------------------------------------------------------------------------
# gather(): fallbacks
# ---------------------------------------------------------------------------------------------

FAKE_TABLE = "| NVIDIA-SMI 550.54.15    Driver Version: 550.54.15    CUDA Version: 12.4 |\n"


def test_gather_tool_fails_falls_back_to_sysfs(tmp_path):
    msg = ("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
           "Make sure that the latest NVIDIA driver is installed and running.\n")
    runner = FakeRunner({("-q", "-x"): (9, msg, "")})
    tools = dict(no_tools(), **{"nvidia-smi": tool(tmp_path, "nvidia-smi")})
    facts = gather(runner, tools, sysfs_root=str(FIX / "sysfs-nvidia-h100-8x-nvswitch"),
                   dgx_release_path=str(tmp_path / "absent"))
    assert (facts["vendor"], facts["source"], facts["count"], facts["profile"]) == ("nvidia", "sysfs", 8, "h100")
    assert facts["driver_loaded"] is False and facts["nvswitch_count"] == 4 and facts["memory_mib"] is None
    assert facts["warnings"][0].startswith("nvidia-smi -q -x: rc 9, NVIDIA-SMI has failed")
    assert any("facts come from sysfs" in w for w in facts["warnings"])
    first = facts["sources_tried"][0]
    assert (first["source"], first["status"], first["rc"]) == ("nvidia-smi", "failed", 9)
    assert [c[1:] for c in runner.calls] == [("-q", "-x")]  # nothing else is run against a dead driver


def test_gather_stand_in_tool_uses_the_basic_csv(tmp_path):
    """fake-nvidia-smi: -q -x prints the table, compute_cap is unknown, the basic query works."""
    basic = "".join("%d, NVIDIA H100 80GB HBM3, GPU-fake-%04d, 81559, 550.54.15, 00000000:%02X:00.0\n" % (i, i, i + 1)
                    for i in range(8))
    runner = FakeRunner({
        ("-q", "-x"): FAKE_TABLE,
        (Q_FULL, CSV_FMT): (1, "", "Traceback (most recent call last):\nKeyError: 'pci.device_id'\n"),
        (Q_BASIC, CSV_FMT): basic,
        (): FAKE_TABLE,
        ("nvlink", "-s"): FAKE_TABLE,
    })
    tools = dict(no_tools(), **{"nvidia-smi": tool(tmp_path, "nvidia-smi")})
    facts = gather(runner, tools, sysfs_root=str(FIX / "sysfs-nvidia-h100-8x-nvswitch"))
    assert facts["source"] == "nvidia-smi --query-gpu" and facts["count"] == 8 and facts["memory_mib"] == 81559
    assert facts["cuda_version"] == "12.4" and facts["driver_version"] == "550.54.15"
    assert facts["compute_capability"] == "9.0" and facts["profile"] == "h100" and facts["driver_loaded"] is True
    assert facts["nvlink"] is False and facts["nvswitch"] is True and facts["warnings"] == []
    assert [e["status"] for e in facts["sources_tried"][:3]] == ["unparsable", "failed", "ok"]


def test_gather_amd_smi_then_rocm_smi(tmp_path):
    runner = FakeRunner({
        AMD_STATIC: read("amd-mi355x-8x", "amd-smi-static.json"),
        ("version", "--json"): read("amd-mi355x-8x", "amd-smi-version.json"),
    })
    tools = dict(no_tools(), **{"amd-smi": tool(tmp_path, "amd-smi")})
    facts = gather(runner, tools, sysfs_root=str(tmp_path / "nosys"))
    assert facts["profile"] == "mi355x" and facts["rocm_version"] == "7.0.0" and facts["driver_version"] == "6.14.14"
    assert facts["sources_tried"][0]["status"] == "missing"  # nvidia-smi

    # amd-smi without --board support, memory only from metric
    static = json.loads(read("amd-mi355x-8x", "amd-smi-static.json"))
    for item in static["gpu_data"]:
        item["vram"] = {"type": "HBM3E"}
    runner = FakeRunner({
        ("static", "--json"): json.dumps(static),
        ("version", "--json"): read("amd-mi355x-8x", "amd-smi-version.json"),
        ("metric", "--mem-usage", "--json"): read("amd-mi355x-8x", "amd-smi-metric.json"),
    })
    facts = gather(runner, tools, sysfs_root=str(tmp_path / "nosys"))
    assert facts["memory_mib"] == 294896 and facts["profile"] == "mi355x"

    # amd-smi cannot reach the driver: rocm-smi answers; ROCm version from <rocm>/.info/version
    rocm = tmp_path / "rocm-6.3.1"
    (rocm / ".info").mkdir(parents=True)
    (rocm / ".info" / "version").write_text("6.3.1-48\n")
    (rocm / "bin").mkdir()
    rocm_smi = rocm / "bin" / "rocm-smi"
    rocm_smi.write_text("#!/bin/sh\n")
    rocm_smi.chmod(rocm_smi.stat().st_mode | stat.S_IXUSR)
    runner = FakeRunner({AMD_STATIC: (255, "", "AMDSMI_STATUS_DRIVER_NOT_LOADED"), ("static", "--json"): (255, "", "x"),
                         ROCM_SMI: read("amd-mi325x-8x", "rocm-smi.json")})
    facts = gather(runner, dict(tools, **{"rocm-smi": str(rocm_smi)}), sysfs_root=str(tmp_path / "nosys"))
    assert facts["source"] == "rocm-smi" and facts["profile"] == "mi325x" and facts["rocm_version"] == "6.3.1"
    assert any(w.startswith("amd-smi static") for w in facts["warnings"])


def test_gather_xpu_smi(tmp_path):
    answers = {("discovery", "-j"): read("intel-arc-pro-b60-4x", "xpu-smi-discovery.json"),
               ("-v",): read("intel-arc-pro-b60-4x", "xpu-smi-version.txt")}
    for i in range(4):
        answers[("discovery", "-d", str(i), "-j")] = read("intel-arc-pro-b60-4x", "xpu-smi-device-%d.json" % i)
    tools = dict(no_tools(), **{"xpu-smi": tool(tmp_path, "xpu-smi")})
    facts = gather(FakeRunner(answers), tools, sysfs_root=str(FIX / "sysfs-intel-b60-2x-igpu"))
    assert facts["profile"] == "arc_pro_b60" and facts["level_zero_version"] == "1.21.9" and facts["count"] == 4
    assert facts["kernel_driver"] == "xe" and facts["memory_total_mib"] == 4 * 24448
    # sysfs shows 2 of them, the tool 4: no warning (more, not fewer)
    assert facts["warnings"] == []


def test_gather_warns_when_the_tool_sees_fewer_gpus_than_sysfs(tmp_path):
    one = read("nvidia-b200-8x", "query-gpu.csv").splitlines()[0].replace("NVIDIA B200", "NVIDIA H100 80GB HBM3") + "\n"
    runner = FakeRunner({("-q", "-x"): FAKE_TABLE, (Q_FULL, CSV_FMT): one, ("nvlink", "-s"): ""})
    tools = dict(no_tools(), **{"nvidia-smi": tool(tmp_path, "nvidia-smi")})
    facts = gather(runner, tools, sysfs_root=str(FIX / "sysfs-nvidia-h100-8x-nvswitch"))
    assert facts["count"] == 1 and "sysfs lists 8 nvidia GPUs but nvidia-smi --query-gpu reports 1" in facts["warnings"]


def test_gather_no_gpu_is_clean(tmp_path):
    facts = gather(FakeRunner({}), no_tools(), sysfs_root=str(FIX / "sysfs-none"),
                   dgx_release_path=str(tmp_path / "absent"), cpu_arch="x86_64")
    assert facts["vendor"] == "none" and facts["count"] == 0 and facts["profile"] is None
    assert facts["profile_reason"] == "no NVIDIA, AMD or Intel GPU found" and facts["warnings"] == []
    assert [e["status"] for e in facts["sources_tried"]] == ["missing"] * 4 + ["ok"]
    assert set(facts) == set(gpu.FACT_KEYS)


def test_gather_tool_without_gpus_continues(tmp_path):
    runner = FakeRunner({("-q", "-x"): (6, "No devices were found\n", "")})
    tools = dict(no_tools(), **{"nvidia-smi": tool(tmp_path, "nvidia-smi")})
    facts = gather(runner, tools, sysfs_root=str(FIX / "sysfs-amd-mi300x-2x"))
    assert facts["vendor"] == "amd" and facts["warnings"] == []  # an NVIDIA tool failing says nothing about AMD GPUs


# ---------------------------------------------------------------------------------------------
# The module's main path (subprocess, with fake-nvidia-smi from ../shared)
# ---------------------------------------------------------------------------------------------

def fake_nvidia_smi(shared_dir, tmp_path, config):
    """A copy of ../shared fake-nvidia-smi plus a wrapper that points it at ``config``."""
    return install_fake_nvidia_smi(fake_nvidia_smi_source(shared_dir), tmp_path, config)


def run_module(tmp_path, collections_dir, **args):
    args.setdefault("profiles", PROFILES)  # the action plugin's part
    args_file = tmp_path / "args.json"
    args_file.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": args}))
    env = dict(os.environ, PYTHONPATH=str(collections_dir))
    proc = subprocess.run([sys.executable, str(MODULE), str(args_file)], capture_output=True, text=True, env=env,
                          timeout=120, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads(proc.stdout)


def test_module_main_with_fake_nvidia_smi(shared_dir, collections_dir, tmp_path):
    wrapper = fake_nvidia_smi(shared_dir, tmp_path, {
        "driver_version": "550.54.15", "cuda_version": "12.4",
        "gpus": [{"name": "NVIDIA H100 80GB HBM3", "memory_total_mib": 81559}] * 8})
    absent = str(tmp_path / "absent")
    result = run_module(tmp_path, collections_dir, nvidia_smi_path=wrapper, amd_smi_path=absent, rocm_smi_path=absent,
                        xpu_smi_path=absent, sysfs_root=str(FIX / "sysfs-nvidia-h100-8x-nvswitch"),
                        dgx_release_path=absent, _ansible_check_mode=True)
    assert result["changed"] is False
    facts = result["ansible_facts"]["llmfleet_gpu"]
    assert (facts["vendor"], facts["product"], facts["count"], facts["memory_mib"], facts["profile"]) == (
        "nvidia", "NVIDIA H100 80GB HBM3", 8, 81559, "h100")
    assert facts["source"] == "nvidia-smi --query-gpu" and facts["cuda_version"] == "12.4"
    assert facts["driver_version"] == "550.54.15" and facts["driver_loaded"] is True


def test_module_main_tool_fails_and_no_gpu(shared_dir, collections_dir, tmp_path):
    wrapper = fake_nvidia_smi(shared_dir, tmp_path, {"fail": True, "gpus": [{"name": "NVIDIA H100 80GB HBM3",
                                                                            "memory_total_mib": 81559}]})
    absent = str(tmp_path / "absent")
    common = dict(amd_smi_path=absent, rocm_smi_path=absent, xpu_smi_path=absent, dgx_release_path=absent)
    result = run_module(tmp_path, collections_dir, nvidia_smi_path=wrapper,
                        sysfs_root=str(FIX / "sysfs-nvidia-h100-8x-nvswitch"), **common)
    facts = result["ansible_facts"]["llmfleet_gpu"]
    assert facts["source"] == "sysfs" and facts["profile"] == "h100" and facts["driver_loaded"] is False
    assert any("rc 9" in w for w in facts["warnings"])
    assert "rc 9" in json.dumps(result["warnings"])  # also passed to module.warn (ansible-core 2.19+ wraps them)

    result = run_module(tmp_path, collections_dir, nvidia_smi_path=absent, sysfs_root=str(FIX / "sysfs-none"), **common)
    facts = result["ansible_facts"]["llmfleet_gpu"]
    assert facts["vendor"] == "none" and facts["count"] == 0 and "warnings" not in result


def test_module_main_without_profiles_matches_nothing(shared_dir, collections_dir, tmp_path):
    """Run without its action plugin (which fills ``profiles``): the facts, but no profile."""
    wrapper = fake_nvidia_smi(shared_dir, tmp_path, {"gpus": [{"name": "NVIDIA H100 80GB HBM3", "memory_total_mib": 81559}]})
    absent = str(tmp_path / "absent")
    result = run_module(tmp_path, collections_dir, nvidia_smi_path=wrapper, amd_smi_path=absent, rocm_smi_path=absent,
                        xpu_smi_path=absent, sysfs_root=str(FIX / "sysfs-none"), dgx_release_path=absent, profiles=None)
    facts = result["ansible_facts"]["llmfleet_gpu"]
    assert facts["vendor"] == "nvidia" and facts["count"] == 1 and facts["profile"] is None
    assert "no taxonomy hardware profiles" in facts["profile_reason"]
