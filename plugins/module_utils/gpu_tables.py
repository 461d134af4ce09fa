# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmfleet contributors
# Apache License 2.0 (see LICENSE)
"""Hardware tables of GPU detection (``gpu.py``): vendors, PCI ids, architectures, profile rules.

Data only; pure Python (no imports, no Ansible). A new GPU model is a row here: its PCI device
id (for sysfs and tools that print a generic name), its architecture rule and, when the recipes
taxonomy has a profile for it, a :data:`PROFILE_RULES` row naming that profile. GPU counts and
VRAM sizes are the taxonomy's (``data/recipes/taxonomy.yaml`` or a site-local tree's): the
rules name profiles, the taxonomy says which GPU count each one fits.
"""

from __future__ import annotations

VENDOR_BY_PCI_ID = {"0x10de": "nvidia", "0x1002": "amd", "0x8086": "intel"}
VENDOR_PRECEDENCE = ("nvidia", "amd", "intel")
VENDOR_NAMES = {"nvidia": "NVIDIA", "amd": "AMD", "intel": "Intel"}
TOOL_VENDOR = {"nvidia-smi": "nvidia", "amd-smi": "amd", "rocm-smi": "amd", "xpu-smi": "intel"}
# Kernel drivers that make a GPU usable for vLLM, per vendor.
VENDOR_KERNEL_DRIVERS = {"nvidia": ("nvidia",), "amd": ("amdgpu",), "intel": ("xe", "i915")}

# Values the tools print for "no value".
NA_VALUES = frozenset(("", "n/a", "[n/a]", "na", "not supported", "[not supported]", "unknown", "unknown error",
                       "[unknown error]", "not found", "insufficient permissions", "[insufficient permissions]",
                       "not available", "[not available]", "none"))

# Vendor -> product rules, matched in order against the normalized product name (lower case,
# "(R)"/"(TM)" dropped, "-"/"_" as spaces). ``profiles`` names the taxonomy profiles of the
# product; each id also stands for the ``<id>_<N>x`` profiles the taxonomy has (rtx_pro_6000 brings
# rtx_pro_6000_2x and rtx_pro_6000_8x), so a site-local taxonomy adds a count variant without a
# new rule. Which of them fits the host is the taxonomy's ``gpu_count`` and ``scalable``: a
# non-scalable profile needs exactly its GPU count, a scalable one takes any. Rows without
# ``profiles`` are known products without a profile (``hint`` names the closest one).
# ``min_mib``: the product name covers variants and only the large one fits (``big_variant``: the
# name of the large one).
PROFILE_RULES = {
    "nvidia": (
        {"pattern": r"\bgb10\b", "label": "NVIDIA GB10", "profiles": ("dgx_spark_gb10",)},
        {"pattern": r"\bgb300\b", "label": "NVIDIA GB300", "profiles": ("dgx_station_gb300", "gb300")},
        {"pattern": r"\bgb200\b", "label": "NVIDIA GB200", "profiles": ("gb200",)},
        {"pattern": r"\bb300\b", "label": "NVIDIA B300", "profiles": ("b300",)},
        {"pattern": r"\bb200\b", "label": "NVIDIA B200", "profiles": ("b200",)},
        {"pattern": r"\bgh200\b", "label": "NVIDIA GH200", "hint": "h200"},
        {"pattern": r"\bh200\b", "label": "NVIDIA H200", "profiles": ("h200",)},
        {"pattern": r"\bh100\b", "label": "NVIDIA H100", "profiles": ("h100",)},
        {"pattern": r"\brtx pro 6000\b.*\bblackwell\b", "label": "NVIDIA RTX PRO 6000 Blackwell",
         "profiles": ("rtx_pro_6000",)},
        {"pattern": r"\brtx pro 5000\b.*\bblackwell\b", "label": "NVIDIA RTX PRO 5000 Blackwell",
         "profiles": ("rtx_pro_5000",), "min_mib": 65536, "big_variant": r"\b72gb\b"},
        {"pattern": r"\brtx 5090\b", "label": "NVIDIA GeForce RTX 5090", "profiles": ("rtx_5090",)},
        {"pattern": r"\brtx 4090\b", "label": "NVIDIA GeForce RTX 4090", "profiles": ("rtx_4090",)},
    ),
    "amd": (
        {"pattern": r"\bmi355x\b", "label": "AMD Instinct MI355X", "profiles": ("mi355x",)},
        {"pattern": r"\bmi350x\b", "label": "AMD Instinct MI350X", "hint": "mi355x"},
        {"pattern": r"\bmi325x\b", "label": "AMD Instinct MI325X", "profiles": ("mi325x",)},
        {"pattern": r"\bmi300x\b", "label": "AMD Instinct MI300X", "profiles": ("mi300x",)},
    ),
    "intel": (
        {"pattern": r"\bpro b60\b", "label": "Intel Arc Pro B60", "profiles": ("arc_pro_b60",)},
        {"pattern": r"\bpro b70\b", "label": "Intel Arc Pro B70", "profiles": ("arc_pro_b70",)},
    ),
}

# AMD by gfx target and per-GPU memory as the tools report it, when the product name says nothing
# (amd-smi "N/A", VFs with odd names): gfx target -> ((min MiB, max MiB, profile), ...).
AMD_GFX_MEMORY_RULES = {
    "gfx942": ((180000, 204800, "mi300x"), (240000, 270000, "mi325x")),
    "gfx950": ((270000, 310000, "mi355x"),),
}

# PCI device id -> product name, for sysfs (no tool) and for tools that print a generic
# name. NVIDIA names as NVIDIA's own supported-gpus.json spells them; (device, subsystem
# device) entries win over device-only ones.
NVIDIA_PCI_IDS = {
    "0x2330": "NVIDIA H100 80GB HBM3",
    "0x2331": "NVIDIA H100 PCIe",
    "0x2339": "NVIDIA H100",
    "0x2335": "NVIDIA H200",
    "0x233b": "NVIDIA H200 NVL",
    "0x2342": "NVIDIA GH200",
    "0x2901": "NVIDIA B200",
    "0x2909": "NVIDIA B200",
    "0x2941": "NVIDIA GB200",
    "0x3182": "NVIDIA B300 SXM6 AC",
    "0x31c2": "NVIDIA GB300",
    "0x31c3": "NVIDIA GB300",
    "0x2e12": "NVIDIA GB10",
    "0x2bb1": "NVIDIA RTX PRO 6000 Blackwell Workstation Edition",
    "0x2bb4": "NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition",
    "0x2bb5": "NVIDIA RTX PRO 6000 Blackwell Server Edition",
    "0x2bb3": "NVIDIA RTX PRO 5000 Blackwell",
    ("0x2bb3", "0x227a"): "NVIDIA RTX PRO 5000 72GB Blackwell",
    "0x2b85": "NVIDIA GeForce RTX 5090",
    "0x2684": "NVIDIA GeForce RTX 4090",
    "0x26b9": "NVIDIA L40S",
    "0x26b5": "NVIDIA L40",
    "0x27b8": "NVIDIA L4",
}

# AMD PCI device id -> (product, gfx target).
AMD_PCI_IDS = {
    "0x74a1": ("AMD Instinct MI300X", "gfx942"),
    "0x74b5": ("AMD Instinct MI300X VF", "gfx942"),
    "0x74a5": ("AMD Instinct MI325X", "gfx942"),
    "0x74a0": ("AMD Instinct MI300A", "gfx942"),
    "0x75a0": ("AMD Instinct MI350X", "gfx950"),
    "0x75a3": ("AMD Instinct MI355X", "gfx950"),
    "0x740f": ("AMD Instinct MI210", "gfx90a"),
    "0x740c": ("AMD Instinct MI250X/MI250", "gfx90a"),
}

# Intel PCI device id -> (product, architecture). B60 = BMG-G21 (8086:e211), B70 = BMG-G31
# (8086:e223): Linux include/drm/intel/pciids.h and Intel's compute runtime.
INTEL_PCI_IDS = {
    "0xe211": ("Intel Arc Pro B60", "Xe2 (Battlemage BMG-G21)"),
    "0xe212": ("Intel Arc Pro B50", "Xe2 (Battlemage BMG-G21)"),
    "0xe223": ("Intel Arc Pro B70", "Xe2 (Battlemage BMG-G31)"),
    "0xe20b": ("Intel Arc B580", "Xe2 (Battlemage BMG-G21)"),
    "0xe20c": ("Intel Arc B570", "Xe2 (Battlemage BMG-G21)"),
    "0x56a0": ("Intel Arc A770", "Xe-HPG (Alchemist)"),
    "0x56c0": ("Intel Data Center GPU Flex 170", "Xe-HPG"),
    "0x56c1": ("Intel Data Center GPU Flex 140", "Xe-HPG"),
    "0x0bd5": ("Intel Data Center GPU Max 1550", "Xe-HPC (Ponte Vecchio)"),
    "0x0bda": ("Intel Data Center GPU Max 1100", "Xe-HPC (Ponte Vecchio)"),
}

# NVIDIA product -> (architecture, compute capability) when the tool does not say.
NVIDIA_ARCH_RULES = (
    (r"\bgb10\b", "Blackwell", "12.1"),
    (r"\b(gb300|b300)\b", "Blackwell", "10.3"),
    (r"\b(gb200|b200)\b", "Blackwell", "10.0"),
    (r"\brtx pro \d+\b.*\bblackwell\b|\brtx 50\d0\b", "Blackwell", "12.0"),
    (r"\b(h100|h200|h800|h20|gh200)\b", "Hopper", "9.0"),
    (r"\b(rtx 40\d0|l40s?|l4|l20)\b|\bada generation\b", "Ada Lovelace", "8.9"),
    (r"\b(a100|a800|a30)\b", "Ampere", "8.0"),
    (r"\b(a10|a40|a16|a2|rtx a\d+|rtx 30\d0)\b", "Ampere", "8.6"),
    (r"\bv100\b", "Volta", "7.0"),
    (r"\bt4\b", "Turing", "7.5"),
)

AMD_GFX_ARCH = {
    "gfx942": "CDNA3", "gfx950": "CDNA4", "gfx90a": "CDNA2", "gfx908": "CDNA",
    "gfx1100": "RDNA3", "gfx1101": "RDNA3", "gfx1102": "RDNA3", "gfx1200": "RDNA4", "gfx1201": "RDNA4",
}

# GPUs whose memory is the host's (no framebuffer of their own): nvidia-smi reports N/A.
UNIFIED_MEMORY_PRODUCTS = (r"\bgb10\b",)
