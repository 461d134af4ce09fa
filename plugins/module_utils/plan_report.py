# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmfleet contributors
# Apache License 2.0 (see LICENSE)
"""The fleet summary that ``playbooks/plan.yml`` prints: one table row per host, then counts.

``summarize(plans, profile_gpus)`` takes the host plans of ``fleet_plan`` and returns the rows,
the counts by recipe, hardware and warning kind, and the text lines to print (fixed-width
columns, ASCII only, so that Ansible's default callback shows them aligned in a list of
strings). The WARNINGS column holds short codes (``WARNING_KINDS``):

* ``unpinned``: the image has no tag, or the tag ``latest`` or ``nightly`` (a digest pins it);
* the kind of each plan warning (``warning_code``), e.g. ``idle_gpus``, ``kv_offload_skipped``;
* the deliberate deviations from upstream that applied to the host, as far as the plan shows
  them: ``D1`` (a provenance source tagged ``(D1)``: a feature's env), ``D5`` (a plan warning
  tagged D5), ``D6`` (the plan's GPUs per node differ from the hardware profile's).
  D2, D3 and D4 turn upstream's silent fallbacks into errors, so a planned host never shows
  them. D7 (our own systemd-managed invocation instead of upstream's ``docker run`` line)
  applies to every host: it is counted once for the fleet, not repeated on each row.

Pure Python: no Ansible imports.
"""

from __future__ import annotations

import re

from .preflight import parallel_sizes

#: Image tags that do not pin a version.
UNPINNED_TAGS = ("latest", "nightly")

#: Warning code -> what it means (the legend of the counts).
WARNING_KINDS = {
    "unpinned": "image tag latest, nightly or none: pin a version with vllm_image",
    "idle_gpus": "the plan uses fewer GPUs than the host has (set vllm_gpu_ids to run several instances)",
    "mode_fallback": "a requested feature mode is not available; the available one is used (upstream quirk)",
    "kv_offload_skipped": "a KV-offload option is gated out by the strategy, recipe or brand and skipped",
    "pd_pool_without_gpu": "a co-located PD pool has no GPU (upstream quirk)",
    "pd_pool_dp_size": "a co-located PD DEP pool sizes DP by the whole node (upstream quirk)",
    "pd_pool_tp_size": "a PD pool's TP exceeds the node's GPUs: one data-parallel rank per node (upstream quirk)",
    "pd_parallelism": "a PD pool's parallelism is not offered by the recipe; another one is used",
    "xpu_nightly": "nightly_required, but Intel XPU has no nightly image: its default image is used (as upstream)",
    "vram_fit": "the variant does not fit the hardware's memory",
    "precision": "the variant's precision is not supported on the hardware",
    "other": "another plan warning (see the plan files, or -v)",
    "D1": "deviation D1: a feature's env is applied (upstream ignores it)",
    "D5": "deviation D5: a recipe's meta.hardware id missing from the taxonomy is ignored, with a warning",
    "D6": "deviation D6: the host's GPU count replaced the hardware profile's",
    "D7": "deviation D7: our systemd-managed invocation replaces upstream's docker run line (every host)",
}

#: Plan warning text -> its code: the first pattern that matches.
_WARNING_PATTERNS = (
    ("D5", re.compile(r"\bD5\b")),
    ("idle_gpus", re.compile(r"\bidle\b", re.I)),
    ("mode_fallback", re.compile(r"^feature \S+: mode \S+ is not available")),
    ("kv_offload_skipped", re.compile(r"^kv_offload \S+ skipped")),
    ("pd_pool_without_gpu", re.compile(r"pool co-located on \S+ has no GPU")),
    ("pd_pool_dp_size", re.compile(r"data-parallel size \d+ exceeds the co-located pool")),
    ("pd_pool_tp_size", re.compile(r"tensor-parallel size \d+ exceeds the node's")),
    ("pd_parallelism", re.compile(r"pool: parallelism \S+ is not offered")),
    ("xpu_nightly", re.compile(r"nightly.*Intel XPU|Intel XPU.*nightly")),
    ("vram_fit", re.compile(r"^variant \S+ needs \S+ GB but")),
    ("precision", re.compile(r"^variant \S+ \(\S+\) is not supported on")),
)
_DEVIATION_TAG = re.compile(r"\((D[1-9])\)")
#: Code order in a row and in the counts: the kinds above in this order, deviations last.
_ORDER = dict((code, i) for i, code in enumerate(WARNING_KINDS))
#: Roles that run no GPU process of their own.
_NO_GPU_ROLES = ("router",)

COLUMNS = ("HOST", "ROLE", "REPLICA", "HARDWARE", "VARIANT", "STRATEGY", "IMAGE", "PORT", "TP/PP/DP", "WARNINGS")


def image_unpinned(image):
    """True when ``image`` pins no version: no tag, or tag ``latest``/``nightly``, and no digest."""
    if not image:
        return True
    image = str(image)
    if "@" in image:
        return False
    name = image.rsplit("/", 1)[-1]
    if ":" not in name:
        return True
    return name.rsplit(":", 1)[1] in UNPINNED_TAGS


def warning_code(text):
    """The short code of one plan warning (``other`` when no kind matches)."""
    for code, pattern in _WARNING_PATTERNS:
        if pattern.search(text):
            return code
    return "other"


def deviations(plan, profile_gpu_count=None):
    """The deviation codes (D1..D6) that applied to ``plan``, as far as the plan records them."""
    out = set()
    sources = [p.get("source", "") for p in plan.get("args_provenance") or []]
    sources += [p.get("source", "") for p in (plan.get("env_provenance") or {}).values() if isinstance(p, dict)]
    for source in sources:
        out.update(_DEVIATION_TAG.findall(str(source)))
    if (profile_gpu_count is not None and plan.get("role") not in _NO_GPU_ROLES
            and plan.get("gpu_count") is not None and plan["gpu_count"] != profile_gpu_count):
        out.add("D6")
    return out


def host_codes(plan, profile_gpu_count=None):
    """The WARNINGS codes of one host, in ``WARNING_KINDS`` order."""
    codes = set(warning_code(str(w)) for w in plan.get("warnings") or [])
    if image_unpinned(plan.get("image")):
        codes.add("unpinned")
    codes.update(deviations(plan, profile_gpu_count))
    return sorted(codes, key=lambda c: (_ORDER.get(c, len(_ORDER)), c))


def row(plan, profile_gpu_count=None):
    """The table row of one host plan: a dict keyed like ``COLUMNS`` (lower case)."""
    argv = plan.get("argv") or []
    sizes = parallel_sizes(argv) if argv[:2] == ["vllm", "serve"] else None
    replica = plan.get("replica")
    hardware = str(plan.get("hardware"))
    if plan.get("role") not in _NO_GPU_ROLES and plan.get("gpu_count"):
        hardware += " x%s" % plan["gpu_count"]
    return {
        "host": plan["host"],
        "role": plan.get("role"),
        "replica": "%s[%s]" % (replica, plan.get("rank")) if replica else "-",
        "hardware": hardware,
        "variant": plan.get("variant"),
        "strategy": plan.get("strategy"),
        "image": plan.get("image") or "-",
        "port": plan.get("port") if plan.get("serves_http", True) else "-",
        "tp/pp/dp": "%(tp)s/%(pp)s/%(dp)s" % sizes if sizes else "-",
        "warnings": host_codes(plan, profile_gpu_count),
    }


def table(header, rows):
    """Fixed-width text lines: ``header`` then ``rows`` (sequences of cells), two spaces apart."""
    cells = [[str(c) for c in header]] + [["-" if c is None else str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    return ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in cells]


def _tally(items):
    out = {}
    for item in items:
        out[item] = out.get(item, 0) + 1
    return out


def summarize(plans, profile_gpus=None):
    """The summary of ``plans`` (host -> plan): ``rows``, ``counts`` and ``lines``.

    ``profile_gpus(host, hardware)`` gives a hardware profile's own GPUs per node (for D6); without
    it, D6 is not shown. ``counts``: ``recipe`` (id -> hosts), ``variant`` (recipe -> variant ->
    hosts), ``hardware`` (id -> hosts), ``gpus`` (hardware id -> GPUs the plans use) and
    ``warning`` (code -> hosts, with D7 for every host).
    """
    hosts = sorted(plans)
    rows = []
    for host in hosts:
        plan = plans[host]
        profile = profile_gpus(host, plan["hardware"]) if profile_gpus else None
        rows.append(row(plan, profile))
    counts = {
        "recipe": _tally(plans[h]["recipe"] for h in hosts),
        "variant": {},
        "hardware": _tally(plans[h]["hardware"] for h in hosts),
        "gpus": {},
        "warning": _tally(code for r in rows for code in r["warnings"]),
    }
    for host in hosts:
        plan = plans[host]
        by_variant = counts["variant"].setdefault(plan["recipe"], {})
        by_variant[plan["variant"]] = by_variant.get(plan["variant"], 0) + 1
        if plan.get("role") not in _NO_GPU_ROLES:
            counts["gpus"][plan["hardware"]] = counts["gpus"].get(plan["hardware"], 0) + int(plan.get("gpu_count") or 0)
    if hosts:
        counts["warning"]["D7"] = len(hosts)
    return {"rows": rows, "counts": counts, "lines": summary_lines(plans, rows, counts)}


def summary_lines(plans, rows, counts):
    """The text that plan.yml prints: a headline, the host table, then the counts."""
    replicas = set(p["replica"] for p in plans.values() if p.get("replica"))
    in_replicas = len([p for p in plans.values() if p.get("replica")])
    lines = ["%d host(s) planned: %d single, %d in %d replica(s); per-host detail in the plan files (-v prints it)" % (
        len(plans), len(plans) - in_replicas, in_replicas, len(replicas))]
    lines += table(COLUMNS, [[r[c.lower()] for c in COLUMNS[:-1]] + [",".join(r["warnings"]) or "-"] for r in rows])
    lines.append("")
    lines += table(("RECIPE", "HOSTS", "VARIANTS"), [
        (recipe, n, ", ".join("%s %d" % (v, k) for v, k in sorted(counts["variant"][recipe].items())))
        for recipe, n in sorted(counts["recipe"].items())])
    lines.append("")
    lines += table(("HARDWARE", "HOSTS", "GPUS"), [
        (hw, n, counts["gpus"].get(hw, 0)) for hw, n in sorted(counts["hardware"].items())])
    lines.append("")
    order = sorted(counts["warning"], key=lambda c: (_ORDER.get(c, len(_ORDER)), c))
    lines += table(("WARNING", "HOSTS", "MEANING"), [
        (code, counts["warning"][code], WARNING_KINDS.get(code, "")) for code in order])
    return lines
