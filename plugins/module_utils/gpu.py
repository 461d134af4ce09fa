# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmfleet contributors
# Apache License 2.0 (see LICENSE)
"""GPU detection for ``llmfleet.vllm.gpu_facts``: parsers, sysfs scan, profile match.

Pure Python (stdlib only, no Ansible imports) so the module, unit tests and tools share it.
Every parser takes the text a tool printed (or a sysfs root) and returns plain dicts; the
only function that runs anything is :func:`gather`, through a ``run(argv)`` callable the
caller supplies (the module passes ``AnsibleModule.run_command``).

Sources, in order of trust:

1. ``nvidia-smi -q -x`` (XML), completed by ``nvidia-smi --query-gpu=...`` (the XML has no
   compute capability) and ``nvidia-smi nvlink -s``. When ``-q -x`` is not XML (old or
   stand-in tools), the ``--query-gpu`` CSV is the source.
2. ``amd-smi static --json`` (+ ``version``/``metric``), else ``rocm-smi ... --json``.
3. ``xpu-smi discovery -j`` (+ ``discovery -d N -j`` per device, ``xpu-smi -v``).
4. sysfs PCI devices: vendor 0x10de/0x1002/0x8086 with class 0x03xx (display) or 0x12xx
   (processing accelerator: AMD Instinct uses it). Used when no tool answered.

The normalized per-source result is ``{"vendor", "source", "driver_version", ...,
"gpus": [{"index", "product", "uuid", "pci_bus_id", "pci_device_id", "memory_mib", ...}]}``;
:func:`summarize` turns it into the ``llmfleet_gpu`` facts and :func:`match_profile` picks the
recipes-taxonomy hardware profile among the profiles the caller passes (the action plugin
reads them from the host's taxonomy; see :func:`profile_specs`). The hardware tables (PCI ids,
architectures, which product is which profile) are in ``gpu_tables.py``.
"""

from __future__ import annotations

import functools
import json
import os
import re
import xml.etree.ElementTree as ET

from .gpu_tables import (
    AMD_GFX_ARCH, AMD_GFX_MEMORY_RULES, AMD_PCI_IDS, INTEL_PCI_IDS, NA_VALUES, NVIDIA_ARCH_RULES, NVIDIA_PCI_IDS,
    PROFILE_RULES, TOOL_VENDOR, UNIFIED_MEMORY_PRODUCTS, VENDOR_BY_PCI_ID, VENDOR_KERNEL_DRIVERS, VENDOR_NAMES,
    VENDOR_PRECEDENCE,
)

MIB = 1024 * 1024

# nvidia-smi --query-gpu field lists: the full one first, then one every nvidia-smi (and the
# fake-nvidia-smi stand-in of the test hosts) understands.
NV_QUERY_FIELDS_FULL = ("index", "name", "uuid", "memory.total", "driver_version", "pci.bus_id",
                        "pci.device_id", "compute_cap", "mig.mode.current")
NV_QUERY_FIELDS_BASIC = ("index", "name", "uuid", "memory.total", "driver_version", "pci.bus_id")


# ---------------------------------------------------------------------------------------------
# Small helpers
# ---------------------------------------------------------------------------------------------

def _clean(value):
    """Strip a tool value; None for the many spellings of "no value"."""
    if value is None:
        return None
    text = str(value).strip()
    if text.lower() in NA_VALUES:
        return None
    return text


def normalize_product(name):
    """Lower case, trademarks dropped, punctuation as spaces: the form PROFILE_RULES match."""
    text = (name or "").lower()
    text = re.sub(r"\((r|tm)\)", " ", text)
    text = re.sub(r"[-_/,]+", " ", text)
    return re.sub(r"\s+", " ", text).strip()


def to_mib(value, default_unit="MiB"):
    """``"143771 MiB"``, ``"80 GiB"``, ``{"value": 196592, "unit": "MB"}``, bytes ... -> MiB (int).

    amd-smi's "MB" is MiB (196592 "MB" on a 192 GiB MI300X), so MB/GB count as MiB/GiB.
    """
    if isinstance(value, dict):
        return to_mib(value.get("value"), value.get("unit") or default_unit)
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        number, unit = float(value), default_unit
    else:
        text = _clean(value)
        if text is None:
            return None
        match = re.match(r"^([0-9]+(?:\.[0-9]+)?)\s*([A-Za-z]*)$", text.replace(",", ""))
        if not match:
            return None
        number, unit = float(match.group(1)), match.group(2) or default_unit
    factor = {"b": 1.0 / MIB, "kb": 1.0 / 1024, "kib": 1.0 / 1024, "mb": 1, "mib": 1, "gb": 1024, "gib": 1024,
              "tb": 1024 * 1024, "tib": 1024 * 1024}.get(unit.lower())
    if factor is None:
        return None
    return int(number * factor)


def _pci_id(value):
    """``"233510DE"`` (nvidia-smi: device+vendor), ``"0x233510DE"``, ``"0x74a1"``, ``"74A1"`` -> ``"0x2335"``."""
    text = _clean(value)
    if text is None:
        return None
    text = text.lower()
    if text.startswith("0x"):
        text = text[2:]
    if not re.match(r"^[0-9a-f]+$", text):
        return None
    if len(text) == 8:  # nvidia-smi packs device id and vendor id: 233510DE
        text = text[:4]
    return "0x%04x" % int(text, 16)


def _first_line(text, limit=300):
    for line in (text or "").splitlines():
        line = line.strip()
        if line:
            return line[:limit]
    return ""


def load_json_lenient(text):
    """json.loads, tolerating banner lines (amd-smi/rocm-smi print WARNING lines first)."""
    text = (text or "").strip()
    try:
        return json.loads(text)
    except ValueError:
        pass
    decoder = json.JSONDecoder()
    for match in re.finditer(r"^\s*[\[{]", text, re.MULTILINE):  # a line that opens a document
        try:
            return decoder.raw_decode(text[match.end() - 1:])[0]
        except ValueError:
            continue
    raise ValueError("no JSON document in the output")


def _lookup_ci(mapping, *keys):
    """First non-empty value of ``keys`` in ``mapping``, keys compared case-insensitively."""
    lowered = dict((str(k).lower(), v) for k, v in mapping.items())
    for key in keys:
        value = lowered.get(key.lower())
        if isinstance(value, (dict, list)):
            return value
        value = _clean(value)
        if value is not None:
            return value
    return None


def _canonical_product(vendor, pci_device_id, subsystem_device=None):
    """Product name (and AMD gfx / Intel architecture) from a PCI id; (None, None) if unknown."""
    if vendor == "nvidia":
        name = NVIDIA_PCI_IDS.get((pci_device_id, subsystem_device)) or NVIDIA_PCI_IDS.get(pci_device_id)
        return name, None
    if vendor == "amd":
        return AMD_PCI_IDS.get(pci_device_id, (None, None))
    if vendor == "intel":
        return INTEL_PCI_IDS.get(pci_device_id, (None, None))
    return None, None


def nvidia_arch(product):
    """(architecture, compute capability) of an NVIDIA product name, or (None, None)."""
    norm = normalize_product(product)
    for pattern, arch, cc in NVIDIA_ARCH_RULES:
        if re.search(pattern, norm):
            return arch, cc
    return None, None


def _intel_is_discrete(device_id):
    if device_id in INTEL_PCI_IDS:
        return True
    try:
        number = int(device_id, 16)
    except (TypeError, ValueError):
        return False
    return (number >> 8) in (0xe2, 0x56) or 0x0bd0 <= number <= 0x0bdf


# ---------------------------------------------------------------------------------------------
# NVIDIA
# ---------------------------------------------------------------------------------------------

def parse_nvidia_smi_xml(text):
    """``nvidia-smi -q -x`` -> normalized result. ValueError when the text is not that XML.

    The XML (DTD v13 on driver 580) has no compute capability: ``compute_capability`` is
    None here and filled later from ``--query-gpu=compute_cap`` or the product table.
    """
    text = (text or "").strip()
    if not text.startswith("<"):
        raise ValueError("not XML")
    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        raise ValueError("nvidia-smi XML does not parse: %s" % exc)
    if root.tag != "nvidia_smi_log":
        raise ValueError("XML root is <%s>, not <nvidia_smi_log>" % root.tag)
    gpus = []
    for index, node in enumerate(root.findall("gpu")):
        memory_raw = _clean(node.findtext("fb_memory_usage/total"))
        gpus.append({
            "index": index,
            "product": _clean(node.findtext("product_name")),
            "uuid": _clean(node.findtext("uuid")),
            "pci_bus_id": _clean(node.get("id")) or _clean(node.findtext("pci/pci_bus_id")),
            "pci_device_id": _pci_id(node.findtext("pci/pci_device_id")),
            "memory_mib": to_mib(memory_raw),
            "memory_reported": (node.findtext("fb_memory_usage/total") or "").strip() or None,
            "architecture": _clean(node.findtext("product_architecture")),
            "compute_capability": None,
            "mig_mode": (_clean(node.findtext("mig_mode/current_mig")) or "").lower() or None,
            "addressing_mode": _clean(node.findtext("addressing_mode")),
            "c2c_mode": _clean(node.findtext("c2c_mode")),
            "fabric_state": _clean(node.findtext("fabric/state")),
            "multigpu_board": _clean(node.findtext("multigpu_board")),
        })
    return {
        "vendor": "nvidia",
        "source": "nvidia-smi -q -x",
        "driver_version": _clean(root.findtext("driver_version")),
        "cuda_version": _clean(root.findtext("cuda_version")),
        "gpus": gpus,
    }


def parse_nvidia_smi_csv(text, fields=NV_QUERY_FIELDS_FULL):
    """``nvidia-smi --query-gpu=<fields> --format=csv,noheader,nounits`` -> normalized result.

    ValueError when a line does not have one value per field (a traceback, an error message
    or a header). ``[N/A]`` values (GB10 memory) become None.
    """
    gpus = []
    driver = None
    for line in (text or "").splitlines():
        if not line.strip():
            continue
        values = [v.strip() for v in line.split(",")]
        if len(values) != len(fields):
            raise ValueError("expected %d CSV values, got %d: %r" % (len(fields), len(values), line[:200]))
        row = dict(zip(fields, values))
        try:
            index = int(row.get("index", len(gpus)))
        except ValueError:
            raise ValueError("not a GPU index: %r" % line[:200])
        product = _clean(row.get("name"))
        cc = _clean(row.get("compute_cap"))
        gpus.append({
            "index": index,
            "product": product,
            "uuid": _clean(row.get("uuid")),
            "pci_bus_id": _clean(row.get("pci.bus_id")),
            "pci_device_id": _pci_id(row.get("pci.device_id")),
            "memory_mib": to_mib(row.get("memory.total")),
            "memory_reported": _clean(row.get("memory.total")),
            "architecture": None,
            "compute_capability": cc,
            "mig_mode": (_clean(row.get("mig.mode.current")) or "").lower() or None,
        })
        driver = driver or _clean(row.get("driver_version"))
    if not gpus:
        raise ValueError("no GPU lines")
    return {
        "vendor": "nvidia",
        "source": "nvidia-smi --query-gpu",
        "driver_version": driver,
        "cuda_version": None,
        "gpus": gpus,
    }


def parse_nvidia_smi_banner(text):
    """Plain ``nvidia-smi`` (or its table header) -> {driver_version, cuda_version}."""
    driver = re.search(r"Driver Version:\s*([0-9][0-9.]*)", text or "")
    cuda = re.search(r"CUDA Version:\s*([0-9][0-9.]*)", text or "")
    return {"driver_version": driver.group(1) if driver else None, "cuda_version": cuda.group(1) if cuda else None}


def parse_nvidia_nvlink_status(text):
    """``nvidia-smi nvlink -s`` -> {"active_links": total, "per_gpu": {index: active}}.

    A GPU block starts with ``GPU <n>: <name> (UUID: ...)``; each ``Link <k>: <x> GB/s`` line
    is an active link, ``Link <k>: <inactive>`` is not. No GPU block at all (a PCIe card
    prints nothing, or "NVLink is not supported") means no NVLink.
    """
    per_gpu = {}
    current = None
    for line in (text or "").splitlines():
        gpu = re.match(r"^\s*GPU\s+(\d+):", line)
        if gpu:
            current = int(gpu.group(1))
            per_gpu.setdefault(current, 0)
            continue
        link = re.match(r"^\s*Link\s+\d+:\s*(.+)$", line)
        if link and current is not None and re.search(r"[0-9.]+\s*[GM]B/s", link.group(1)):
            per_gpu[current] += 1
    return {"active_links": sum(per_gpu.values()), "per_gpu": per_gpu}


def _merge_nvidia_query(xml_result, csv_result):
    """Copy compute capability, MIG mode and PCI id from the CSV into the XML result."""
    by_key = {}
    for gpu in csv_result["gpus"]:
        by_key[gpu.get("uuid") or gpu["index"]] = gpu
    for gpu in xml_result["gpus"]:
        other = by_key.get(gpu.get("uuid") or gpu["index"]) or by_key.get(gpu["index"])
        if not other:
            continue
        for key in ("compute_capability", "mig_mode", "pci_device_id"):
            if gpu.get(key) is None and other.get(key) is not None:
                gpu[key] = other[key]
    return xml_result


# ---------------------------------------------------------------------------------------------
# AMD
# ---------------------------------------------------------------------------------------------

def _amd_items(data):
    """amd-smi JSON shapes: ``{"gpu_data": [...]}`` (amd-smi 25+), ``[...]`` (older), one dict."""
    if isinstance(data, dict) and isinstance(data.get("gpu_data"), list):
        return data["gpu_data"]
    if isinstance(data, list):
        return [item for item in data if isinstance(item, dict)]
    if isinstance(data, dict) and "gpu" in data:
        return [data]
    raise ValueError("not amd-smi GPU JSON")


def _amd_driver_version(value):
    """amd-smi's driver block; an in-box kernel driver reports the kernel banner, squashed."""
    text = _clean(value)
    if text and text.lower().startswith("linuxversion"):
        match = re.match(r"(?i)linuxversion([0-9][\w.+-]*)", text)
        return "kernel %s" % match.group(1) if match else text
    return text


def parse_amd_smi_static(text):
    """``amd-smi static [--asic --bus --vram --driver --board] --json`` -> normalized result."""
    items = _amd_items(load_json_lenient(text))
    gpus = []
    driver = None
    for position, item in enumerate(items):
        asic = item.get("asic") if isinstance(item.get("asic"), dict) else {}
        board = item.get("board") if isinstance(item.get("board"), dict) else {}
        vram = item.get("vram") if isinstance(item.get("vram"), dict) else {}
        bus = item.get("bus") if isinstance(item.get("bus"), dict) else {}
        drv = item.get("driver") if isinstance(item.get("driver"), dict) else {}
        memory = None
        for key in ("size", "vram_size", "vram_size_mb"):
            if key in vram:
                memory = to_mib(vram[key])
                if memory is not None:
                    break
        gfx = _clean(asic.get("target_graphics_version"))
        gpus.append({
            "index": item.get("gpu", position) if isinstance(item.get("gpu"), int) else position,
            "product": _clean(asic.get("market_name")) or _clean(board.get("product_name")),
            "uuid": _clean(item.get("uuid")) or _clean(asic.get("asic_serial")),
            "pci_bus_id": _clean(bus.get("bdf")) or _clean(item.get("bdf")),
            "pci_device_id": _pci_id(asic.get("device_id")),
            "memory_mib": memory,
            "memory_reported": None if memory is None else "%d MiB" % memory,
            "gfx_target": gfx.split(":")[0].lower() if gfx else None,
            "architecture": None,
            "compute_units": asic.get("num_compute_units") if isinstance(asic.get("num_compute_units"), int) else None,
        })
        driver = driver or _amd_driver_version(drv.get("version") or drv.get("driver_version"))
    return {"vendor": "amd", "source": "amd-smi", "driver_version": driver, "rocm_version": None, "gpus": gpus}


def parse_amd_smi_metric(text):
    """``amd-smi metric --mem-usage --json`` -> {gpu index: total VRAM MiB}."""
    result = {}
    for position, item in enumerate(_amd_items(load_json_lenient(text))):
        usage = item.get("mem_usage") if isinstance(item.get("mem_usage"), dict) else {}
        total = to_mib(usage.get("total_vram"))
        if total is not None:
            result[item.get("gpu", position)] = total
    return result


def parse_amd_smi_version(text):
    """``amd-smi version --json`` -> {rocm_version, amdsmi_version, driver_version}."""
    data = load_json_lenient(text)
    if isinstance(data, list):
        data = data[0] if data and isinstance(data[0], dict) else {}
    if not isinstance(data, dict):
        raise ValueError("not amd-smi version JSON")
    return {
        "rocm_version": _clean(data.get("rocm_version")),
        "amdsmi_version": _clean(data.get("amdsmi_library_version")) or _clean(data.get("version")),
        "driver_version": _clean(data.get("amdgpu_version")),
    }


def parse_rocm_smi(text):
    """``rocm-smi --showproductname --showmeminfo vram [--showdriverversion] --json``.

    Top-level keys ``card0``, ``card1``, ... (plus ``system`` with the driver version). Key
    spelling changed across ROCm releases ("Card series" / "Card Series"), so keys are
    matched case-insensitively.
    """
    data = load_json_lenient(text)
    if not isinstance(data, dict):
        raise ValueError("not rocm-smi JSON")
    cards = []
    for key, value in data.items():
        match = re.match(r"^card(\d+)$", str(key))
        if match and isinstance(value, dict):
            cards.append((int(match.group(1)), value))
    if not cards and not isinstance(data.get("system"), dict):
        raise ValueError("no card entries in rocm-smi JSON")
    system = data.get("system") if isinstance(data.get("system"), dict) else {}
    driver = _lookup_ci(system, "Driver version")
    gpus = []
    for number, card in sorted(cards):
        gfx = _lookup_ci(card, "GFX Version")
        total = _lookup_ci(card, "VRAM Total Memory (B)")
        memory = to_mib(total, "B") if total is not None else None
        driver = driver or _lookup_ci(card, "Driver version")
        gpus.append({
            "index": number,
            "product": _lookup_ci(card, "Card Series", "Card series", "Marketing Name"),
            "uuid": _lookup_ci(card, "Unique ID", "GUID"),
            "pci_bus_id": _lookup_ci(card, "PCI Bus"),
            "pci_device_id": _pci_id(_lookup_ci(card, "Device ID", "Card Model", "Card model")),
            "memory_mib": memory,
            "memory_reported": None if memory is None else "%d MiB" % memory,
            "gfx_target": gfx.lower() if gfx else None,
            "architecture": None,
        })
    return {"vendor": "amd", "source": "rocm-smi", "driver_version": driver, "rocm_version": None, "gpus": gpus}


# ---------------------------------------------------------------------------------------------
# Intel
# ---------------------------------------------------------------------------------------------

def parse_xpu_smi_discovery(text):
    """``xpu-smi discovery -j`` -> list of {device_id, product, pci_bus_id, pci_device_id, uuid}."""
    data = load_json_lenient(text)
    items = data.get("device_list") if isinstance(data, dict) else data
    if not isinstance(items, list):
        raise ValueError("no device_list in xpu-smi JSON")
    devices = []
    for position, item in enumerate(items):
        if not isinstance(item, dict):
            continue
        if _clean(item.get("device_type")) not in (None, "GPU"):
            continue
        devices.append({
            "device_id": item.get("device_id", position),
            "product": _clean(item.get("device_name")),
            "pci_bus_id": _clean(item.get("pci_bdf_address")),
            "pci_device_id": _pci_id(item.get("pci_device_id")),
            "uuid": _clean(item.get("uuid")),
        })
    return devices


def parse_xpu_smi_device(text):
    """``xpu-smi discovery -d <id> -j`` -> {product, memory_mib, driver_version, ...}."""
    data = load_json_lenient(text)
    if not isinstance(data, dict):
        raise ValueError("not xpu-smi device JSON")
    memory = to_mib(data.get("memory_physical_size_byte"), "B")
    return {
        "device_id": data.get("device_id"),
        "product": _clean(data.get("device_name")),
        "pci_bus_id": _clean(data.get("pci_bdf_address")),
        "pci_device_id": _pci_id(data.get("pci_device_id")),
        "uuid": _clean(data.get("uuid")),
        "memory_mib": memory,
        "driver_version": _clean(data.get("driver_version")),
        "kernel_version": _clean(data.get("kernel_version")),
    }


def parse_xpu_smi_version(text):
    """``xpu-smi -v`` -> {xpu_smi_version, level_zero_version}."""
    version = re.search(r"Version:\s*([0-9][\w.+-]*)", text or "")
    level_zero = re.search(r"Level Zero Version:\s*([0-9][\w.+-]*)", text or "")
    return {"xpu_smi_version": version.group(1) if version else None,
            "level_zero_version": level_zero.group(1) if level_zero else None}


def build_intel_result(devices, details=None, version=None):
    """Combine the discovery list, the per-device details and ``xpu-smi -v``."""
    details = details or {}
    gpus = []
    driver = None
    for position, dev in enumerate(devices):
        info = details.get(dev["device_id"]) or {}
        memory = info.get("memory_mib")
        gpus.append({
            "index": dev["device_id"] if isinstance(dev["device_id"], int) else position,
            "product": info.get("product") or dev["product"],
            "uuid": info.get("uuid") or dev["uuid"],
            "pci_bus_id": info.get("pci_bus_id") or dev["pci_bus_id"],
            "pci_device_id": info.get("pci_device_id") or dev["pci_device_id"],
            "memory_mib": memory,
            "memory_reported": None if memory is None else "%d MiB" % memory,
            "architecture": None,
        })
        driver = driver or info.get("driver_version")
    return {"vendor": "intel", "source": "xpu-smi", "driver_version": driver,
            "level_zero_version": (version or {}).get("level_zero_version"), "gpus": gpus}


# ---------------------------------------------------------------------------------------------
# sysfs, /etc/dgx-release, /proc/meminfo
# ---------------------------------------------------------------------------------------------

def _read(path):
    try:
        with open(path, "r") as handle:
            return handle.read().strip()
    except (IOError, OSError, UnicodeDecodeError):
        return None


def _uevent(device_dir):
    """``uevent`` of a sysfs device as a dict (DRIVER, PCI_CLASS, PCI_ID, PCI_SLOT_NAME, ...)."""
    fields = {}
    for line in (_read(os.path.join(device_dir, "uevent")) or "").splitlines():
        if "=" in line:
            key, value = line.split("=", 1)
            fields[key.strip()] = value.strip()
    return fields


def _sysfs_driver(device_dir, uevent):
    """Bound kernel driver: the ``driver`` symlink, else ``DRIVER=`` in ``uevent``."""
    link = os.path.join(device_dir, "driver")
    if os.path.islink(link):
        return os.path.basename(os.readlink(link).rstrip("/")) or None
    return uevent.get("DRIVER") or None


def scan_sysfs_pci(sysfs_root="/sys"):
    """GPUs among ``<sysfs_root>/bus/pci/devices/*``.

    Returns {"available": bool, "devices_scanned": int, "gpus": [...], "nvswitch_count": int,
    "ignored": [{"pci_bus_id", "reason"}]}. A GPU is vendor 0x10de/0x1002/0x8086 with PCI
    base class 0x03 (display) or 0x12 (processing accelerator); Intel devices that are not a
    known discrete part are integrated graphics and ignored. NVIDIA class 0x0680 (bridge)
    devices are NVSwitches. AMD: ``mem_info_vram_total`` (bytes) and ``product_name`` when
    amdgpu is bound. The bus id is ``PCI_SLOT_NAME`` of ``uevent`` (the directory name when
    absent), so fixture trees can avoid ":" in file names.
    """
    base = os.path.join(sysfs_root or "/sys", "bus", "pci", "devices")
    result = {"available": os.path.isdir(base), "devices_scanned": 0, "gpus": [], "nvswitch_count": 0, "ignored": []}
    if not result["available"]:
        return result
    for bdf in sorted(os.listdir(base)):
        device_dir = os.path.join(base, bdf)
        vendor_id = (_read(os.path.join(device_dir, "vendor")) or "").lower()
        pci_class = (_read(os.path.join(device_dir, "class")) or "").lower()
        if not vendor_id:
            continue
        result["devices_scanned"] += 1
        vendor = VENDOR_BY_PCI_ID.get(vendor_id)
        if vendor is None or not pci_class.startswith("0x"):
            continue
        class_code = pci_class[2:].rjust(6, "0")
        device_id = _pci_id(_read(os.path.join(device_dir, "device")))
        if vendor == "nvidia" and class_code.startswith("0680"):
            result["nvswitch_count"] += 1
            continue
        if not (class_code.startswith("03") or class_code.startswith("12")):
            continue
        if vendor == "intel" and not _intel_is_discrete(device_id):
            result["ignored"].append({"pci_bus_id": _uevent(device_dir).get("PCI_SLOT_NAME") or bdf,
                                      "reason": "Intel integrated graphics %s" % device_id})
            continue
        uevent = _uevent(device_dir)
        subsystem = _pci_id(_read(os.path.join(device_dir, "subsystem_device")))
        product, extra = _canonical_product(vendor, device_id, subsystem)
        if vendor == "amd":
            product = _clean(_read(os.path.join(device_dir, "product_name"))) or product
        vram = _read(os.path.join(device_dir, "mem_info_vram_total")) if vendor == "amd" else None
        memory = to_mib(vram, "B") if vram else None
        result["gpus"].append({
            "vendor": vendor,
            "pci_bus_id": uevent.get("PCI_SLOT_NAME") or bdf,
            "pci_device_id": device_id,
            "pci_class": "0x" + class_code,
            "subsystem_device": subsystem,
            "kernel_driver": _sysfs_driver(device_dir, uevent),
            "product": product,
            "gfx_target": extra if vendor == "amd" else None,
            "architecture": extra if vendor == "intel" else None,
            "memory_mib": memory,
            "memory_reported": None if memory is None else "%d MiB" % memory,
        })
    return result


def sysfs_result(scan):
    """The sysfs scan as a normalized result for the vendor with precedence (or None)."""
    by_vendor = {}
    for gpu in scan.get("gpus", []):
        by_vendor.setdefault(gpu["vendor"], []).append(gpu)
    for vendor in VENDOR_PRECEDENCE:
        if by_vendor.get(vendor):
            gpus = []
            for index, gpu in enumerate(by_vendor[vendor]):
                entry = dict(gpu)
                entry["index"] = index
                entry["uuid"] = None
                del entry["vendor"]
                gpus.append(entry)
            return {"vendor": vendor, "source": "sysfs", "driver_version": None, "gpus": gpus}
    return None


def parse_dgx_release(text):
    """``/etc/dgx-release`` (KEY="value" lines) -> {name, pretty_name, version, ..., fields}."""
    fields = {}
    for line in (text or "").splitlines():
        match = re.match(r"^\s*([A-Z0-9_]+)\s*=\s*(.*?)\s*$", line)
        if match:
            value = match.group(2)
            if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
                value = value[1:-1]
            fields[match.group(1)] = value
    if not fields:
        return None
    return {
        "name": fields.get("DGX_NAME"),
        "pretty_name": fields.get("DGX_PRETTY_NAME"),
        "version": fields.get("DGX_OTA_VERSION") or fields.get("DGX_SWBUILD_VERSION"),
        "swbuild_version": fields.get("DGX_SWBUILD_VERSION"),
        "ota_version": fields.get("DGX_OTA_VERSION"),
        "platform": fields.get("DGX_PLATFORM"),
        "fields": dict((k, v) for k, v in fields.items() if k != "DGX_SERIAL_NUMBER"),
    }


def parse_meminfo_total_mib(text):
    """``/proc/meminfo`` -> MemTotal in MiB (None if absent)."""
    match = re.search(r"^MemTotal:\s*(\d+)\s*kB", text or "", re.MULTILINE)
    return int(match.group(1)) // 1024 if match else None


def rocm_version_near(tool_path):
    """ROCm release from ``<rocm>/.info/version`` next to ``<rocm>/bin/<tool>`` (or None)."""
    if not tool_path:
        return None
    rocm_dir = os.path.dirname(os.path.dirname(os.path.realpath(tool_path)))
    text = _read(os.path.join(rocm_dir, ".info", "version"))
    match = re.match(r"^([0-9]+\.[0-9]+(?:\.[0-9]+)?)", text or "")
    return match.group(1) if match else None


# ---------------------------------------------------------------------------------------------
# Facts and the profile match
# ---------------------------------------------------------------------------------------------

FACT_KEYS = (
    "vendor", "product", "count", "memory_mib", "memory_total_mib", "memory_source", "unified_memory",
    "driver_version", "driver_loaded", "kernel_driver", "cuda_version", "rocm_version", "level_zero_version",
    "compute_capability", "gfx_target", "architecture", "mig_mode", "nvlink", "nvlink_active_links",
    "nvswitch", "nvswitch_count", "dgx_os", "cpu_arch", "mixed", "gpus", "profile", "profile_reason",
    "infiniband_hcas", "source", "sources_tried", "warnings",
)


def empty_facts():
    """The facts of a host without a GPU; every key is always present."""
    facts = dict((key, None) for key in FACT_KEYS)
    facts.update({"vendor": "none", "count": 0, "unified_memory": False, "mixed": False, "gpus": [],
                  "infiniband_hcas": [], "source": "none", "sources_tried": [], "warnings": []})
    return facts


def infiniband_hcas(sysfs_root="/sys"):
    """RDMA devices (``mlx5_0``, ...) under ``<sysfs>/class/infiniband``, sorted; [] when none."""
    folder = os.path.join(sysfs_root or "/sys", "class", "infiniband")
    try:
        return sorted(name for name in os.listdir(folder) if not name.startswith("."))
    except OSError:
        return []


def _most_common(values):
    counts = {}
    order = []
    for value in values:
        if value not in counts:
            order.append(value)
        counts[value] = counts.get(value, 0) + 1
    return max(order, key=lambda v: counts[v]) if order else None


def summarize(result, sysfs=None, cpu_arch=None, dgx_os=None, meminfo_mib=None, profiles=None):
    """Normalized source result (or None) + host context -> the ``llmfleet_gpu`` facts.

    ``profiles``: the taxonomy hardware profiles to match (:func:`match_profile`).
    """
    facts = empty_facts()
    facts["cpu_arch"] = cpu_arch
    facts["dgx_os"] = dgx_os
    sysfs = sysfs or {}
    if sysfs.get("available"):
        facts["nvswitch_count"] = sysfs.get("nvswitch_count", 0)
    if not result or not result.get("gpus"):
        facts["profile"], facts["profile_reason"] = match_profile(facts, profiles)
        return facts
    vendor = result["vendor"]
    facts["vendor"] = vendor
    facts["source"] = result.get("source")
    for key in ("driver_version", "cuda_version", "rocm_version", "level_zero_version"):
        facts[key] = result.get(key)

    gpus = []
    for gpu in sorted(result["gpus"], key=lambda g: g.get("index", 0)):
        entry = dict(gpu)
        raw = entry.get("product")
        canonical, extra = _canonical_product(vendor, entry.get("pci_device_id"), entry.get("subsystem_device"))
        generic = raw is None or re.search(r"graphics \[0x[0-9a-f]+\]|^(amd|intel|nvidia)( gpu| graphics)?$",
                                           normalize_product(raw))
        if canonical and generic:
            entry["product"] = canonical
            entry["product_reported"] = raw
        if entry.get("product") is None and entry.get("pci_device_id"):
            entry["product"] = "%s device %s" % (VENDOR_NAMES[vendor], entry["pci_device_id"])
        if vendor == "amd" and not entry.get("gfx_target") and extra:
            entry["gfx_target"] = extra
        if vendor == "intel" and not entry.get("architecture") and extra:
            entry["architecture"] = extra
        if vendor == "nvidia":
            arch, cc = nvidia_arch(entry.get("product"))
            entry["architecture"] = entry.get("architecture") or arch
            entry["compute_capability"] = entry.get("compute_capability") or cc
        if vendor == "amd":
            entry["architecture"] = entry.get("architecture") or AMD_GFX_ARCH.get(entry.get("gfx_target"))
        gpus.append(entry)

    products = [g.get("product") for g in gpus]
    facts["product"] = _most_common(products)
    facts["mixed"] = len(set(products)) > 1
    facts["count"] = len(gpus)
    per_gpu_keys = ("index", "product", "uuid", "pci_bus_id", "pci_device_id", "memory_mib")
    facts["gpus"] = [dict((k, g.get(k)) for k in per_gpu_keys) for g in gpus]
    first = [g for g in gpus if g.get("product") == facts["product"]][0]
    facts["architecture"] = first.get("architecture")
    if vendor == "nvidia":
        facts["compute_capability"] = first.get("compute_capability")
    if vendor == "amd":
        facts["gfx_target"] = first.get("gfx_target")

    memories = [g.get("memory_mib") for g in gpus if g.get("memory_mib")]
    unified = vendor == "nvidia" and not memories and (
        any(re.search(p, normalize_product(facts["product"])) for p in UNIFIED_MEMORY_PRODUCTS)
        or any((g.get("addressing_mode") or "").upper() in ("ATS",) for g in gpus))
    facts["unified_memory"] = bool(unified)
    if memories:
        facts["memory_mib"] = min(memories)
        facts["memory_total_mib"] = sum(memories) if len(memories) == len(gpus) else None
        facts["memory_source"] = "sysfs" if result.get("source") == "sysfs" else "device"
        if len(memories) < len(gpus):
            facts["warnings"].append("memory is known for %d of %d GPUs" % (len(memories), len(gpus)))
    elif unified and meminfo_mib:
        facts["memory_mib"] = meminfo_mib
        facts["memory_total_mib"] = meminfo_mib
        facts["memory_source"] = "system_memory"

    modes = set(g.get("mig_mode") for g in gpus if g.get("mig_mode"))
    if modes:
        facts["mig_mode"] = modes.pop() if len(modes) == 1 else "mixed"
        if facts["mig_mode"] in ("enabled", "mixed"):
            facts["warnings"].append("MIG is enabled: vLLM sees MIG instances, not whole GPUs")

    nvlink = result.get("nvlink")
    if isinstance(nvlink, dict):
        facts["nvlink_active_links"] = nvlink.get("active_links", 0)
        facts["nvlink"] = facts["nvlink_active_links"] > 0
    fabric = [g.get("fabric_state") for g in gpus if g.get("fabric_state")]
    if vendor == "nvidia":
        if facts["nvswitch_count"] or fabric:
            facts["nvswitch"] = True
        elif sysfs.get("available"):
            facts["nvswitch"] = False

    drivers = [g.get("kernel_driver") for g in gpus if g.get("kernel_driver")]
    facts["kernel_driver"] = drivers[0] if drivers else None
    if result.get("source") == "sysfs":
        good = VENDOR_KERNEL_DRIVERS.get(vendor, ())
        facts["driver_loaded"] = bool(drivers) and all(d in good for d in drivers)
        if not drivers:
            facts["warnings"].append("no kernel driver is bound to the %s GPUs (driver not installed or not loaded)"
                                     % vendor)
        elif not facts["driver_loaded"]:
            facts["warnings"].append("GPU bound to kernel driver %s, not %s" % (", ".join(sorted(set(drivers))),
                                                                                " or ".join(good)))
    else:
        facts["driver_loaded"] = True
        same = [g for g in sysfs.get("gpus", []) if g.get("vendor") == vendor]
        if same:
            facts["kernel_driver"] = same[0].get("kernel_driver")
        if len(same) > len(gpus):
            facts["warnings"].append("sysfs lists %d %s GPUs but %s reports %d" % (
                len(same), vendor, result.get("source"), len(gpus)))
    facts["profile"], facts["profile_reason"] = match_profile(facts, profiles)
    return facts


def profile_specs(hardware_profiles):
    """The taxonomy facts the match needs: ``{id: {"gpu_count", "vram_gb", "scalable"}}``.

    ``hardware_profiles`` is the taxonomy's map (``vram_gb`` is the node's total, ``scalable``
    is true unless it says false) or this reduced form again; entries without a positive
    GPU count or a VRAM size are left out. The ``profiles`` option of the module is this map.
    """
    specs = {}
    for name, entry in (hardware_profiles or {}).items():
        if not isinstance(entry, dict):
            continue
        count, vram = entry.get("gpu_count"), entry.get("vram_gb")
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            continue
        if isinstance(vram, bool) or not isinstance(vram, (int, float)) or vram <= 0:
            continue
        specs[str(name)] = {"gpu_count": count, "vram_gb": vram, "scalable": entry.get("scalable", True) is not False}
    return specs


def _number(value):
    """72.0 -> 72, 70.5 -> 70.5: GB figures as the taxonomy writes them."""
    return int(value) if float(value).is_integer() else round(value, 1)


def _spec(specs, profile):
    """(GPUs per node, GB per GPU, scalable) of a profile."""
    entry = specs[profile]
    return entry["gpu_count"], _number(float(entry["vram_gb"]) / entry["gpu_count"]), entry["scalable"]


def _describe_profile(specs, profile):
    count, vram, scalable = _spec(specs, profile)
    return "taxonomy node %d x %s GB%s" % (count, vram, "" if scalable else ", fixed GPU count")


def _candidates(rule, specs):
    """The taxonomy profiles of a rule, in rule order: each id, then its ``<id>_<N>x`` profiles by N."""
    found = []
    for base in rule.get("profiles", ()):
        sibling = re.compile(r"^%s_(\d+)x$" % re.escape(base))
        names = sorted((name for name in specs if sibling.match(name)), key=lambda n: int(sibling.match(n).group(1)))
        for name in ([base] if base in specs else []) + names:
            if name not in found:
                found.append(name)
    return found


def _count_choices(specs, candidates):
    def label(profile):
        count, _vram, scalable = _spec(specs, profile)
        return "any" if scalable else "%d GPU%s" % (count, "" if count == 1 else "s")
    ordered = sorted(candidates, key=lambda p: (specs[p]["scalable"], str(specs[p]["gpu_count"])))
    return ", ".join("%s (%s)" % (p, label(p)) for p in ordered)


def _pick(specs, candidates, count):
    """The candidate for ``count`` GPUs: a fixed-count profile of exactly that count, else a scalable one."""
    for profile in candidates:
        if not specs[profile]["scalable"] and specs[profile]["gpu_count"] == count:
            return profile
    for profile in candidates:
        if specs[profile]["scalable"]:
            return profile
    return None


def match_profile(facts, profiles):
    """(profile id or None, reason) for the detected GPUs.

    ``profiles``: the taxonomy's hardware profiles (see :func:`profile_specs`); None when the
    caller has none (the module run without its action plugin), and then no profile matches.
    Product names decide first (PROFILE_RULES name the candidate profiles), then AMD gfx target
    plus memory. Among the candidates the taxonomy decides: a fixed-count profile
    (rtx_pro_6000 / _2x / _8x, rtx_5090 / _2x, rtx_4090_2x, ...) needs that exact count, a
    scalable data-centre profile (h100, h200, mi300x, ...) matches any count.
    """
    vendor = facts.get("vendor")
    count = facts.get("count") or 0
    product = facts.get("product")
    memory = facts.get("memory_mib")
    if vendor in (None, "none") or not count:
        return None, "no NVIDIA, AMD or Intel GPU found"
    if profiles is None:
        return None, ("no taxonomy hardware profiles to match against (the llmfleet.vllm.gpu_facts action "
                      "passes the taxonomy's as the profiles option)")
    specs = profile_specs(profiles)
    if facts.get("mixed"):
        names = sorted(set(g.get("product") or "unknown" for g in facts.get("gpus") or []))
        return None, "mixed GPU models on one host (%s): no single taxonomy profile" % ", ".join(names)
    norm = normalize_product(product)
    if memory is None:
        mem_note = ""
    elif facts.get("unified_memory"):
        mem_note = " (%d MiB unified host memory)" % memory
    else:
        mem_note = " (%d MiB each)" % memory
    host = "%d x %s%s" % (count, product or "unknown %s GPU" % vendor, mem_note)

    for rule in PROFILE_RULES.get(vendor, ()):
        if not re.search(rule["pattern"], norm):
            continue
        candidates = _candidates(rule, specs)
        if not candidates:
            hint = rule.get("hint")
            return None, "%s has no taxonomy profile%s" % (rule["label"], _hint(specs, hint))
        if rule.get("min_mib") and not re.search(rule.get("big_variant", r"$^"), norm):
            if memory is None or memory < rule["min_mib"]:
                return None, "%s: the taxonomy profile is the %s GB card; this one has %s" % (
                    host, _spec(specs, candidates[0])[1], "unknown memory" if memory is None else "%d MiB" % memory)
        profile = _pick(specs, candidates, count)
        if profile is None:
            smaller = [p for p in candidates if specs[p]["gpu_count"] < count]
            best = max(smaller, key=lambda p: specs[p]["gpu_count"]) if smaller else None
            advice = ("; set vllm_hardware to %s to use %d of them" % (best, specs[best]["gpu_count"])
                      if best else "")
            return None, "%s: the taxonomy has %s, none for %d GPU%s%s" % (
                host, _count_choices(specs, candidates), count, "" if count == 1 else "s", advice)
        return profile, _match_reason(specs, host, profile, count, memory)

    gfx = facts.get("gfx_target")
    if vendor == "amd" and gfx in AMD_GFX_MEMORY_RULES:
        if memory is None:
            return None, "%s: %s without a product name or memory size; cannot tell the Instinct model" % (host, gfx)
        for low, high, profile in AMD_GFX_MEMORY_RULES[gfx]:
            if low <= memory <= high and profile in specs:
                return profile, _match_reason(specs, host, profile, count, memory,
                                              "matched by gfx target %s and memory size" % gfx)
        return None, "%s: %s with %d MiB per GPU fits no taxonomy profile" % (host, gfx, memory)
    known = []
    for rule in PROFILE_RULES.get(vendor, ()):
        known.extend(p for p in _candidates(rule, specs) if p not in known)
    return None, "%s has no taxonomy profile (%s profiles: %s)" % (
        product or "this %s GPU" % VENDOR_NAMES.get(vendor, vendor), VENDOR_NAMES.get(vendor, vendor),
        ", ".join(known) or "none")


def _hint(specs, hint):
    if not hint:
        return ""
    if hint not in specs:
        return "; the closest is %s" % hint
    return "; the closest is %s (%s)" % (hint, _describe_profile(specs, hint))


def _match_reason(specs, host, profile, count, memory, how=None):
    per_node, vram_gb, scalable = _spec(specs, profile)
    reason = "%s is %s (%s)" % (host, profile, _describe_profile(specs, profile))
    if how:
        reason += "; " + how
    if scalable and count != per_node:
        reason += "; this host has %d GPU%s" % (count, "" if count == 1 else "s")
    if memory is not None and memory < 0.9 * vram_gb * 1e9 / MIB:  # taxonomy GB are 10**9 bytes
        reason += "; note: %d MiB per GPU is less than the taxonomy's %s GB" % (memory, vram_gb)
    return reason


# ---------------------------------------------------------------------------------------------
# Orchestration (the module runs this with AnsibleModule.run_command)
# ---------------------------------------------------------------------------------------------

def _usable(path):
    return bool(path) and os.path.isfile(path) and os.access(path, os.X_OK)


def _missing(path):
    if not path:
        return "not found in PATH"
    return "%s does not exist" % path if not os.path.exists(path) else "%s is not an executable file" % path


def _attempt(tried, tool, path, command, status, rc=None, message=None):
    tried.append({"source": tool, "path": path, "command": command, "status": status, "rc": rc,
                  "message": message})


def _run(run, tool, path, args):
    argv = [path] + list(args)
    command = " ".join([tool] + list(args))
    rc, out, err = run(argv)
    return command, rc, out or "", err or ""


def _present(tried, tool, path):
    """True when ``path`` is an executable; else records the tool as missing in ``tried``."""
    if _usable(path):
        return True
    _attempt(tried, tool, path, None, "missing", message=_missing(path))
    return False


def _run_parsed(run, tried, tool, path, args, parse, stdout_first=False):
    """Run ``tool args``, parse its output and record the attempt in ``tried``.

    Returns (status, parsed): ("failed", None) when the command exits non-zero (the message is
    the first line of stderr, else of stdout; ``stdout_first`` the other way round),
    ("unparsable", None) when ``parse`` raises ValueError, else ("ok", parse(stdout)).
    """
    command, rc, out, err = _run(run, tool, path, args)
    if rc != 0:
        first = (_first_line(out) or _first_line(err)) if stdout_first else (_first_line(err) or _first_line(out))
        _attempt(tried, tool, path, command, "failed", rc, first)
        return "failed", None
    try:
        parsed = parse(out)
    except ValueError as exc:
        _attempt(tried, tool, path, command, "unparsable", rc, str(exc))
        return "unparsable", None
    _attempt(tried, tool, path, command, "ok", rc)
    return "ok", parsed


def _gather_nvidia(run, path, tried):
    if not _present(tried, "nvidia-smi", path):
        return None
    status, result = _run_parsed(run, tried, "nvidia-smi", path, ["-q", "-x"], parse_nvidia_smi_xml, stdout_first=True)
    if status == "failed":
        return None
    if result is not None and not result["gpus"]:
        return result
    # The XML lacks the compute capability: one --query-gpu call adds it. Without usable XML
    # the CSV is the source; tools that do not know every field get the basic field list.
    csv_result = None
    for fields in (NV_QUERY_FIELDS_FULL,) if result is not None else (NV_QUERY_FIELDS_FULL, NV_QUERY_FIELDS_BASIC):
        args = ["--query-gpu=" + ",".join(fields), "--format=csv,noheader,nounits"]
        status, csv_result = _run_parsed(run, tried, "nvidia-smi", path, args,
                                         functools.partial(parse_nvidia_smi_csv, fields=fields), stdout_first=True)
        if status == "ok":
            break
    if result is None:
        result = csv_result
    elif csv_result is not None:
        _merge_nvidia_query(result, csv_result)
    if result is None:
        return None
    if not result.get("cuda_version"):
        bcommand, brc, bout, berr = _run(run, "nvidia-smi", path, [])
        banner = parse_nvidia_smi_banner(bout) if brc == 0 else {}
        result["cuda_version"] = banner.get("cuda_version")
        result["driver_version"] = result.get("driver_version") or banner.get("driver_version")
        _attempt(tried, "nvidia-smi", path, bcommand, "ok" if banner.get("cuda_version") else "unparsable", brc)
    ncommand, nrc, nout, nerr = _run(run, "nvidia-smi", path, ["nvlink", "-s"])
    if nrc == 0:
        result["nvlink"] = parse_nvidia_nvlink_status(nout)
        _attempt(tried, "nvidia-smi", path, ncommand, "ok", nrc)
    else:
        _attempt(tried, "nvidia-smi", path, ncommand, "failed", nrc, _first_line(nout) or _first_line(nerr))
    return result


def _gather_amd_smi(run, path, tried):
    if not _present(tried, "amd-smi", path):
        return None
    result = None
    for args in (["static", "--asic", "--bus", "--vram", "--driver", "--board", "--json"], ["static", "--json"]):
        status, result = _run_parsed(run, tried, "amd-smi", path, args, parse_amd_smi_static)
        if status == "ok":
            break
    if result is None or not result["gpus"]:
        return result
    command, rc, out, err = _run(run, "amd-smi", path, ["version", "--json"])
    try:
        version = parse_amd_smi_version(out) if rc == 0 else {}
    except ValueError:
        version = {}
    _attempt(tried, "amd-smi", path, command, "ok" if version else "failed", rc)
    result["rocm_version"] = version.get("rocm_version") or rocm_version_near(path)
    result["driver_version"] = version.get("driver_version") or result.get("driver_version")
    if any(g.get("memory_mib") is None for g in result["gpus"]):
        command, rc, out, err = _run(run, "amd-smi", path, ["metric", "--mem-usage", "--json"])
        try:
            totals = parse_amd_smi_metric(out) if rc == 0 else {}
        except ValueError:
            totals = {}
        _attempt(tried, "amd-smi", path, command, "ok" if totals else "failed", rc)
        for gpu in result["gpus"]:
            if gpu.get("memory_mib") is None and gpu["index"] in totals:
                gpu["memory_mib"] = totals[gpu["index"]]
                gpu["memory_reported"] = "%d MiB" % totals[gpu["index"]]
    return result


def _gather_rocm_smi(run, path, tried):
    if not _present(tried, "rocm-smi", path):
        return None
    status, result = _run_parsed(run, tried, "rocm-smi", path,
                                 ["--showproductname", "--showmeminfo", "vram", "--showdriverversion", "--json"],
                                 parse_rocm_smi)
    if status != "ok":
        return None
    result["rocm_version"] = rocm_version_near(path)
    return result


def _gather_xpu_smi(run, path, tried):
    if not _present(tried, "xpu-smi", path):
        return None
    status, devices = _run_parsed(run, tried, "xpu-smi", path, ["discovery", "-j"], parse_xpu_smi_discovery)
    if status != "ok":
        return None
    details = {}
    for dev in devices:
        dcommand, drc, dout, derr = _run(run, "xpu-smi", path, ["discovery", "-d", str(dev["device_id"]), "-j"])
        try:
            details[dev["device_id"]] = parse_xpu_smi_device(dout) if drc == 0 else {}
        except ValueError:
            details[dev["device_id"]] = {}
        _attempt(tried, "xpu-smi", path, dcommand, "ok" if details[dev["device_id"]] else "failed", drc)
    vcommand, vrc, vout, verr = _run(run, "xpu-smi", path, ["-v"])
    version = parse_xpu_smi_version(vout) if vrc == 0 else {}
    _attempt(tried, "xpu-smi", path, vcommand, "ok" if version.get("level_zero_version") else "failed", vrc)
    return build_intel_result(devices, details, version)


def _failure_parts(entry, rc_sep):
    """(command, "rc N<rc_sep>" or "", message) of a failed ``tried`` entry, for a warning."""
    return (entry["command"] or entry["source"], "rc %s%s" % (entry["rc"], rc_sep) if entry["rc"] is not None else "",
            entry["message"] or entry["status"])


def gather(run, tools, sysfs_root="/sys", dgx_release_path="/etc/dgx-release", meminfo_path="/proc/meminfo",
           cpu_arch=None, profiles=None):
    """Detect the GPUs: try the tools in order of trust, fall back to sysfs, summarize.

    ``run(argv) -> (rc, stdout, stderr)`` runs a command and reports a command that cannot start
    as a non-zero rc (it does not raise); ``tools`` maps "nvidia-smi", "amd-smi", "rocm-smi",
    "xpu-smi" to an executable path or None; ``profiles``: the taxonomy hardware profiles the
    GPUs are matched against (:func:`match_profile`). Nothing is written.
    """
    tried = []
    warnings = []
    scan = scan_sysfs_pci(sysfs_root)
    result = None
    failures = []  # the first failed command of each tool that exists but listed no GPU
    for name, gatherer in (("nvidia-smi", _gather_nvidia), ("amd-smi", _gather_amd_smi),
                           ("rocm-smi", _gather_rocm_smi), ("xpu-smi", _gather_xpu_smi)):
        start = len(tried)
        candidate = gatherer(run, tools.get(name), tried)
        if candidate is not None and candidate.get("gpus"):
            result = candidate
            break
        if candidate is not None:
            _attempt(tried, name, tools.get(name), None, "no_gpus", message="the tool ran but listed no GPU")
        bad = [e for e in tried[start:] if e["status"] in ("failed", "unparsable", "no_gpus")]
        if bad:
            failures.append(bad[0])
    if result is None:
        result = sysfs_result(scan)
    if result is not None:
        # A tool of the detected vendor that failed: the GPU is there, its tool cannot reach it.
        for entry in failures:
            if TOOL_VENDOR.get(entry["source"]) == result["vendor"]:
                warnings.append("%s: %s%s" % _failure_parts(entry, ", "))
        if result["source"] == "sysfs" and warnings:
            warnings.append("facts come from sysfs (PCI ids): no memory size, driver or runtime versions")
    else:
        # No GPU anywhere, yet a GPU tool is installed and failed: worth saying (a broken or
        # half-removed driver stack looks like this).
        for entry in failures:
            if entry["status"] == "failed":
                warnings.append("%s is installed but failed (%s%s) and sysfs shows no GPU" % _failure_parts(entry, ": "))
    _attempt(tried, "sysfs", os.path.join(sysfs_root or "/sys", "bus", "pci", "devices"), None,
             "ok" if scan["available"] else "missing",
             message="%d PCI devices, %d GPUs, %d NVSwitches" % (scan["devices_scanned"], len(scan["gpus"]),
                                                                 scan["nvswitch_count"]))
    dgx = None
    if dgx_release_path and os.path.isfile(dgx_release_path):
        dgx = parse_dgx_release(_read(dgx_release_path))
    meminfo = parse_meminfo_total_mib(_read(meminfo_path)) if meminfo_path else None
    facts = summarize(result, sysfs=scan, cpu_arch=cpu_arch, dgx_os=dgx, meminfo_mib=meminfo, profiles=profiles)
    facts["sources_tried"] = tried
    facts["warnings"] = warnings + facts["warnings"]
    facts["infiniband_hcas"] = infiniband_hcas(sysfs_root)
    return facts
