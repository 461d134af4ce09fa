#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmfleet contributors
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
module: gpu_facts
author: llmfleet contributors (@llmfleet)
version_added: 0.1.0
short_description: Detect the GPUs of a host and the matching vLLM recipes hardware profile
description:
  - Detects the NVIDIA, AMD or Intel GPUs of the host and returns them as the C(llmfleet_gpu) fact,
    with the recipes taxonomy hardware profile they match (C(h200), C(b200), C(dgx_spark_gb10),
    C(rtx_pro_6000_2x), C(mi300x), C(arc_pro_b60), ...) and the reason for the match or for its absence.
  - "Sources, in order of trust: C(nvidia-smi -q -x) (completed by C(nvidia-smi --query-gpu) for the
    compute capability and C(nvidia-smi nvlink -s)); when that is not XML, the C(--query-gpu) CSV alone;
    C(amd-smi static --json), else C(rocm-smi --showproductname --showmeminfo vram --json);
    C(xpu-smi discovery -j); and, when no tool answers (no driver yet, driver not loaded), the sysfs PCI
    devices of vendor 0x10de, 0x1002 or 0x8086 with a display (0x03) or processing-accelerator (0x12) class."
  - A tool that exists but fails (for example C(nvidia-smi) exiting 9 because it cannot reach the driver)
    does not fail the task; the facts then come from sysfs and say so in RV(ansible_facts.llmfleet_gpu.warnings)
    and RV(ansible_facts.llmfleet_gpu.sources_tried).
  - A host without a GPU is a clean result with C(vendor=none).
  - Reads only; never changes the host. Runs the same in check mode.
  - "The profile match uses the recipes taxonomy of the host: the action plugin of the same name loads, on the
    controller, the C(taxonomy.yaml) of the host's C(vllm_recipes_path) trees (the last tree that has one wins, as in
    planning), else the collection's built-in taxonomy, and passes its hardware profiles to the module as O(profiles).
    A profile that a site-local taxonomy adds is matched without a code change when it is a count variant
    C(<profile>_<N>x) of a profile the collection knows a GPU model for (for example C(rtx_pro_6000_4x))."
options:
  nvidia_smi_path:
    description:
      - Path of C(nvidia-smi). When unset, C(nvidia-smi) is searched in E(PATH), the system binary
        directories and C(/usr/local/nvidia/bin).
      - A path that does not exist or is not executable counts as the tool being absent.
    type: path
  amd_smi_path:
    description:
      - Path of C(amd-smi). When unset, it is searched in E(PATH), the system binary directories and C(/opt/rocm/bin).
      - A path that does not exist counts as the tool being absent.
    type: path
  rocm_smi_path:
    description:
      - Path of C(rocm-smi), used when C(amd-smi) is absent or fails. When unset, it is searched like O(amd_smi_path).
      - A path that does not exist counts as the tool being absent.
    type: path
  xpu_smi_path:
    description:
      - Path of Intel's C(xpu-smi). When unset, it is searched in E(PATH) and the system binary directories.
      - A path that does not exist counts as the tool being absent.
    type: path
  sysfs_root:
    description:
      - Root of sysfs; the PCI devices are read from C(<sysfs_root>/bus/pci/devices).
      - Tests point it at a fixture tree.
    type: path
    default: /sys
  dgx_release_path:
    description:
      - File that identifies DGX OS (C(DGX_NAME), C(DGX_SWBUILD_VERSION), C(DGX_OTA_VERSION), C(DGX_PLATFORM)).
        Absent on other systems.
    type: path
    default: /etc/dgx-release
  meminfo_path:
    description:
      - C(/proc/meminfo) of the host. Its C(MemTotal) is the GPU memory of unified-memory GPUs (NVIDIA GB10,
        DGX Spark), whose C(nvidia-smi) reports no framebuffer size.
    type: path
    default: /proc/meminfo
  profiles:
    description:
      - The taxonomy hardware profiles the GPUs are matched against, profile id -> C(gpu_count) (GPUs per node),
        C(vram_gb) (GPU memory of the node in GB, as C(taxonomy.yaml) has it) and C(scalable) (V(false) for profiles
        that need exactly C(gpu_count) GPUs; default V(true)). Other keys are ignored, so entries of
        C(hardware_profiles) can be given as they are.
      - Filled by the action plugin from the host's taxonomy when unset (see the description); set it to match
        against other profiles than the taxonomy's.
      - When the module runs without its action plugin and without this option, no profile matches and
        RV(ansible_facts.llmfleet_gpu.profile_reason) says so.
    type: dict
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - ansible.builtin.action_common_attributes.flow
  - ansible.builtin.action_common_attributes.facts
attributes:
  action:
    support: full
    details: The action plugin reads the taxonomy on the controller; the detection runs on the host.
  async:
    support: none
  bypass_host_loop:
    support: none
  check_mode:
    support: full
    details: The module only reads; check mode changes nothing.
  diff_mode:
    support: none
  facts:
    support: full
  platform:
    platforms: posix
notes:
  - C(nvidia-smi -q -x) has no compute capability field; it comes from C(--query-gpu=compute_cap) (driver 510 and
    later) or, failing that, from the product name.
  - The profile is the GPU type. For the scalable data-centre profiles (C(h100), C(h200), C(b200), C(mi300x), ...)
    any GPU count matches; the count-specific profiles (C(rtx_pro_6000), C(rtx_pro_6000_2x), C(rtx_pro_6000_8x),
    C(rtx_5090_2x), C(rtx_4090_2x), C(rtx_pro_5000_4x)) need that exact count.
  - Sysfs alone gives the product (from the PCI device id), the count and the bound kernel driver, and the VRAM size
    of AMD GPUs with C(amdgpu) loaded; versions and NVIDIA/Intel memory sizes need the vendor tool.
seealso:
  - module: ansible.builtin.setup
"""

EXAMPLES = r"""
- name: Detect the GPUs
  llmfleet.vllm.gpu_facts:

- name: Show what was found
  ansible.builtin.debug:
    msg: >-
      {{ ansible_facts.llmfleet_gpu.count }} x {{ ansible_facts.llmfleet_gpu.product }}
      -> {{ ansible_facts.llmfleet_gpu.profile }} ({{ ansible_facts.llmfleet_gpu.profile_reason }})

- name: Use the detected profile when none is declared
  ansible.builtin.set_fact:
    vllm_hardware: "{{ ansible_facts.llmfleet_gpu.profile }}"
  when: vllm_hardware is not defined and ansible_facts.llmfleet_gpu.profile is not none

- name: Detect with a tool outside PATH
  llmfleet.vllm.gpu_facts:
    amd_smi_path: /opt/rocm-7.0.0/bin/amd-smi

- name: Match against a site-local tree whose taxonomy.yaml adds a profile (rtx_pro_6000_4x, say)
  llmfleet.vllm.gpu_facts:
  vars:
    vllm_recipes_path: ["{{ inventory_dir }}/recipes"]
"""

RETURN = r"""
ansible_facts:
  description: The facts.
  returned: always
  type: dict
  contains:
    llmfleet_gpu:
      description: The GPUs of the host. Every key is always present; unknown values are V(null).
      returned: always
      type: dict
      contains:
        vendor:
          description: V(nvidia), V(amd), V(intel) or V(none).
          type: str
          returned: always
          sample: nvidia
        product:
          description: GPU model (the most common one when models are mixed), as the vendor tool names it.
          type: str
          returned: always
          sample: NVIDIA H200
        count:
          description: Number of GPUs of that vendor.
          type: int
          returned: always
          sample: 1
        memory_mib:
          description: Memory per GPU in MiB (the smallest when they differ); for unified memory, the host's C(MemTotal).
          type: int
          returned: always
          sample: 143771
        memory_total_mib:
          description: Memory of all GPUs together in MiB.
          type: int
          returned: always
          sample: 143771
        memory_source:
          description: Where the memory size comes from, V(device), V(sysfs) or V(system_memory) (unified memory).
          type: str
          returned: always
          sample: device
        unified_memory:
          description: Whether the GPU uses the host memory (NVIDIA GB10, DGX Spark).
          type: bool
          returned: always
          sample: false
        driver_version:
          description: Kernel driver version (NVIDIA driver, amdgpu, Intel compute runtime as C(xpu-smi) reports it).
          type: str
          returned: always
          sample: 580.159.04
        driver_loaded:
          description: Whether the vendor tool reached the GPUs or, from sysfs, the vendor kernel driver is bound to them.
          type: bool
          returned: always
          sample: true
        kernel_driver:
          description: The kernel driver sysfs shows bound to the GPUs (V(nvidia), V(nouveau), V(amdgpu), V(xe), ...).
          type: str
          returned: always
          sample: nvidia
        cuda_version:
          description: CUDA version the NVIDIA driver supports.
          type: str
          returned: always
          sample: "13.0"
        rocm_version:
          description: ROCm release (C(amd-smi version), or C(.info/version) of the ROCm tree of the tool).
          type: str
          returned: always
          sample: 7.0.0
        level_zero_version:
          description: oneAPI Level Zero version C(xpu-smi -v) reports.
          type: str
          returned: always
          sample: 1.21.9
        compute_capability:
          description: NVIDIA compute capability.
          type: str
          returned: always
          sample: "9.0"
        gfx_target:
          description: AMD gfx target (V(gfx942) for MI300X/MI325X, V(gfx950) for MI355X).
          type: str
          returned: always
          sample: gfx942
        architecture:
          description: GPU architecture (V(Hopper), V(Blackwell), V(CDNA3), V(Xe2 (Battlemage BMG-G21)), ...).
          type: str
          returned: always
          sample: Hopper
        mig_mode:
          description: NVIDIA MIG mode, V(enabled), V(disabled) or V(mixed); V(null) where MIG does not exist.
          type: str
          returned: always
          sample: disabled
        nvlink:
          description: Whether C(nvidia-smi nvlink -s) shows active NVLink links; V(null) when not checked.
          type: bool
          returned: always
          sample: false
        nvlink_active_links:
          description: Active NVLink links of all GPUs together.
          type: int
          returned: always
          sample: 0
        nvswitch:
          description: Whether the GPUs sit behind NVSwitches (NVSwitch PCI devices, or a fabric state in C(nvidia-smi -q)).
          type: bool
          returned: always
          sample: false
        nvswitch_count:
          description: NVSwitch PCI devices (vendor 0x10de, class 0x0680) in sysfs.
          type: int
          returned: always
          sample: 0
        infiniband_hcas:
          description:
            - RDMA devices under C(<sysfs_root>/class/infiniband). Multi-node replicas use them for C(NCCL_IB_HCA)
              and the RDMA container flags unless C(vllm_infiniband_hca) is set.
          type: list
          elements: str
          returned: always
          sample: [mlx5_0, mlx5_1]
        dgx_os:
          description:
            - DGX OS identity from O(dgx_release_path), or V(null) when the file is absent.
            - Keys C(name), C(pretty_name), C(version) (OTA version, else build version), C(swbuild_version),
              C(ota_version), C(platform) and C(fields) (every key of the file but the serial number).
          type: dict
          returned: always
          sample: {"name": "DGX Spark", "version": "7.3.1"}
        cpu_arch:
          description: CPU architecture of the host (C(platform.machine())).
          type: str
          returned: always
          sample: x86_64
        mixed:
          description: Whether the host has GPUs of different models.
          type: bool
          returned: always
          sample: false
        gpus:
          description: One entry per GPU with C(index), C(product), C(uuid), C(pci_bus_id), C(pci_device_id) and C(memory_mib).
          type: list
          elements: dict
          returned: always
        profile:
          description: The recipes taxonomy hardware profile id the GPUs match (among O(profiles)), or V(null).
          type: str
          returned: always
          sample: h200
        profile_reason:
          description: Why that profile matched, or why none did.
          type: str
          returned: always
          sample: "1 x NVIDIA H200 (143771 MiB each) is h200 (taxonomy node 8 x 141 GB); this host has 1 GPU"
        source:
          description: >-
            Source of the facts: V(nvidia-smi -q -x), V(nvidia-smi --query-gpu), V(amd-smi), V(rocm-smi),
            V(xpu-smi), V(sysfs) or V(none).
          type: str
          returned: always
          sample: nvidia-smi -q -x
        sources_tried:
          description: >-
            Every probe made, in order: C(source), C(path), C(command), C(status) (V(ok), V(missing), V(failed),
            V(unparsable), V(no_gpus)), C(rc) and C(message).
          type: list
          elements: dict
          returned: always
        warnings:
          description: Problems worth a look (a vendor tool that cannot reach its GPUs, MIG enabled, fewer GPUs than sysfs lists).
          type: list
          elements: str
          returned: always
"""

import platform

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.llmfleet.vllm.plugins.module_utils.gpu import gather

TOOLS = (
    ("nvidia-smi", "nvidia_smi_path", ["/usr/local/nvidia/bin", "/usr/lib/wsl/lib"]),
    ("amd-smi", "amd_smi_path", ["/opt/rocm/bin"]),
    ("rocm-smi", "rocm_smi_path", ["/opt/rocm/bin"]),
    ("xpu-smi", "xpu_smi_path", []),
)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            nvidia_smi_path=dict(type="path"),
            amd_smi_path=dict(type="path"),
            rocm_smi_path=dict(type="path"),
            xpu_smi_path=dict(type="path"),
            sysfs_root=dict(type="path", default="/sys"),
            dgx_release_path=dict(type="path", default="/etc/dgx-release"),
            meminfo_path=dict(type="path", default="/proc/meminfo"),
            profiles=dict(type="dict"),
        ),
        supports_check_mode=True,
    )

    tools = {}
    for name, option, extra_dirs in TOOLS:
        tools[name] = module.params[option] or module.get_bin_path(name, opt_dirs=extra_dirs)

    def run(argv):
        try:
            return module.run_command(argv, errors="surrogate_then_replace", handle_exceptions=False)
        except (OSError, IOError) as exc:
            return 127, "", str(exc)

    facts = gather(
        run,
        tools,
        sysfs_root=module.params["sysfs_root"],
        dgx_release_path=module.params["dgx_release_path"],
        meminfo_path=module.params["meminfo_path"],
        cpu_arch=platform.machine() or None,
        profiles=module.params["profiles"],
    )
    for warning in facts["warnings"]:
        module.warn(warning)
    module.exit_json(changed=False, ansible_facts={"llmfleet_gpu": facts})


if __name__ == "__main__":
    main()
