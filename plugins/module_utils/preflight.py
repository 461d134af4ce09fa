# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmfleet contributors
# Apache License 2.0 (see LICENSE)
"""The preflight checks of inputs and plans that the resolver does not make, and secret redaction.

``Fleet.check`` (``fleet.py``) calls these for every vLLM host; each returns problem messages that
name the host, the variable or flag, the bad value and what is valid:

* :func:`input_problems`, on a host's inventory variables alone (so they are reported even when
  the host cannot be planned): ports outside 1-65535 (the port variables and the port flags of
  ``vllm_extra_args``), env names in ``vllm_extra_env`` that are not env names, and secrets in
  ``vllm_extra_args`` / ``vllm_extra_env`` (flags, env names, values shaped like tokens);
* :func:`plan_problems`, on a host's plan: a service port that is one of the node's rendezvous
  ports, an image or ``vllm_version`` older than the recipe's ``min_vllm_version``, VRAM fit on the
  host's real GPU count, tensor x pipeline x data-parallel sizes of the final argv beyond the
  host's GPUs, and replica members whose address is not an IP.

:func:`redact` replaces every secret value in a plan (or any JSON-like value) with
argv.py's ``SECRET_PLACEHOLDER``; no problem message carries a secret value.

Pure Python: no Ansible imports.
"""

from __future__ import annotations

import math
import re

from .argv import SECRET_ENV, SECRET_FLAGS, SECRET_PLACEHOLDER, flag_value, flag_values
from .inventory_vars import gpu_ids_of, is_ip
from .render import shell_quote
from .vllm_flags import _version_key, parse_image_tag

# This module imports only leaf modules (argv, inventory_vars, render, vllm_flags), so that
# replica.py and its helpers can import from it; the secret names are argv.py's (the one list).

#: Port variables (the planner's defaults apply when unset).
PORT_VARS = ("vllm_port", "vllm_router_port", "vllm_pd_dp_rpc_port", "vllm_ray_port")
#: vLLM flags whose value is a TCP port (long names and their short aliases).
PORT_FLAGS = ("--port", "--master-port", "--data-parallel-rpc-port", "-dpp", "--data-parallel-supervisor-port",
              "--grpc-port")
PORT_RANGE = (1, 65535)
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
#: Values shaped like a Hugging Face token or an OpenAI-style API key, anywhere in a string.
TOKEN_SHAPES = (
    (re.compile(r"hf_[A-Za-z0-9]{30,}"), "a Hugging Face token (hf_...)", "vllm_serve_hf_token"),
    (re.compile(r"sk-[A-Za-z0-9_-]{20,}"), "an API key (sk-...)", "vllm_serve_api_key"),
)
#: The parallel sizes read from the final argv: long flag, short alias.
PARALLEL_FLAGS = {
    "tp": ("--tensor-parallel-size", "-tp"),
    "pp": ("--pipeline-parallel-size", "-pp"),
    "dp": ("--data-parallel-size", "-dp"),
    "dpl": ("--data-parallel-size-local", "-dpl"),
}


def _role_var(name):
    """The vllm_serve setting that carries the secret named by a flag or env name."""
    low = name.lower()
    return "vllm_serve_hf_token" if ("hf" in low or "hugging" in low) else "vllm_serve_api_key"


def _int(value):
    """An int from an int or a string of digits (as ``-e key=value`` gives), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and re.match(r"^-?\d+$", value.strip()):
        return int(value)
    return None


def _port_ok(port):
    return PORT_RANGE[0] <= port <= PORT_RANGE[1]


# ---------------------------------------------------------------------- secrets
def secret_values(argv=(), env=None):
    """The secret values found in an argv and an env dict: values of the secret flags, of the
    secret env names, and every substring shaped like a token."""
    found = []
    secret_flags, secret_env = SECRET_FLAGS, SECRET_ENV
    argv = [str(t) for t in argv or ()]
    for _flag, value, _i in flag_values(argv, secret_flags):
        if value:
            found.append(value)
    for name, value in (env or {}).items():
        if name in secret_env and value not in (None, ""):
            found.append(str(value))
    for text in list(argv) + [str(v) for v in (env or {}).values()]:
        for shape, _what, _var in TOKEN_SHAPES:
            found.extend(shape.findall(text))
    return sorted(set(found), key=lambda v: (-len(v), v))


def redact(value, secrets):
    """``value`` (strings, lists, dicts) with every secret in ``secrets`` and every token-shaped
    substring replaced by argv.py's ``SECRET_PLACEHOLDER``; dict keys are kept."""
    placeholder = SECRET_PLACEHOLDER
    if isinstance(value, str):
        for secret in secrets:
            quoted = shell_quote(secret)
            if quoted != secret:
                value = value.replace(quoted, placeholder)
            value = value.replace(secret, placeholder)
        for shape, _what, _var in TOKEN_SHAPES:
            value = shape.sub(placeholder, value)
        return value
    if isinstance(value, dict):
        return dict((k, redact(v, secrets)) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return [redact(v, secrets) for v in value]
    return value


def redact_plan(plan):
    """A host plan without its secrets (argv, env, command, provenance, Ray argv, ...)."""
    ray = plan.get("ray") or {}
    secrets = secret_values(list(plan.get("argv") or []) + list(ray.get("argv") or []), plan.get("env"))
    return redact(plan, secrets)


def host_secrets(hv):
    """The secret values in a host's vllm_extra_args and vllm_extra_env."""
    args = hv.get("vllm_extra_args")
    env = hv.get("vllm_extra_env")
    return secret_values(args if isinstance(args, list) else (), env if isinstance(env, dict) else None)


def _secret_problems(host, hv):
    secret_flags, secret_env = SECRET_FLAGS, SECRET_ENV
    out = []
    args = hv.get("vllm_extra_args")
    args = [str(t) for t in args] if isinstance(args, list) else []
    env = hv.get("vllm_extra_env") if isinstance(hv.get("vllm_extra_env"), dict) else {}
    tail = "from Vault instead (it goes to the 0600 env file only, never to the command line or the plan files)"
    for flag in sorted(set(f for f, _v, _i in flag_values(args, secret_flags))):
        out.append("host %s: vllm_extra_args passes %s (a secret; its value is not shown): set %s %s"
                   % (host, flag, _role_var(flag), tail))
    for name in sorted(set(secret_env) & set(env)):
        out.append("host %s: vllm_extra_env sets %s (a secret; its value is not shown): set %s %s"
                   % (host, name, _role_var(name), tail))
    flagged = set(v for _f, v, _i in flag_values(args, secret_flags) if v)
    for shape, what, var in TOKEN_SHAPES:
        for i, tok in enumerate(args):
            if shape.search(tok) and tok not in flagged and tok.partition("=")[0] not in secret_flags:
                out.append("host %s: vllm_extra_args[%d] holds a value shaped like %s (not shown): set %s %s"
                           % (host, i, what, var, tail))
        for name, value in sorted(env.items()):
            if name not in secret_env and shape.search(str(value)):
                out.append("host %s: vllm_extra_env.%s holds a value shaped like %s (not shown): set %s %s"
                           % (host, name, what, var, tail))
    return out


# ---------------------------------------------------------------------- inputs
def input_problems(host, hv):
    """Problems in one host's variables that need no plan: ports, env names, secrets."""
    out = []
    for key in PORT_VARS:
        port = _int(hv.get(key))
        if port is not None and not _port_ok(port):
            out.append("host %s: %s=%d: expected a TCP port, %d-%d" % (host, key, port, PORT_RANGE[0], PORT_RANGE[1]))
    args = hv.get("vllm_extra_args")
    args = [str(t) for t in args] if isinstance(args, list) else []
    for flag, value, _i in flag_values(args, PORT_FLAGS):
        port = _int(value)
        if port is None or not _port_ok(port):
            out.append("host %s: vllm_extra_args %s %s: expected a TCP port, %d-%d" % (
                host, flag, value if value is not None else "(no value)", PORT_RANGE[0], PORT_RANGE[1]))
    env = hv.get("vllm_extra_env")
    if isinstance(env, dict):
        for name in env:
            if not ENV_NAME.match(str(name)):
                out.append("host %s: vllm_extra_env name %r is not a valid environment variable name; valid: letters, "
                           "digits and '_', not starting with a digit (%s)" % (host, str(name), ENV_NAME.pattern))
    out.extend(_secret_problems(host, hv))
    return out


# ---------------------------------------------------------------------- plans
def port_problems(host, plan):
    """A service port that is one of the node's rendezvous ports."""
    if not plan.get("serves_http") or plan.get("role") == "router":
        return []
    port = _int(flag_value([str(t) for t in plan.get("argv") or []], "--port", plan.get("port")))
    out = []
    for item in plan.get("cluster_ports") or []:
        if port is not None and port == item["port"]:
            out.append("host %s: the API port %d (vllm_port or --port) is the replica's rendezvous port %d (%s); "
                       "valid: any other port (rendezvous ports: %s)" % (
                           host, port, item["port"], item["purpose"],
                           ", ".join(str(p["port"]) for p in plan["cluster_ports"])))
    return out


def version_problems(host, plan, hv):
    """An image tag (or vllm_version) naming a vLLM release older than the plan's min_vllm_version."""
    need = plan.get("min_vllm_version")
    if not need or plan.get("role") == "router":
        return []
    image = plan.get("image") or ""
    _repo, tag, have = parse_image_tag(image) if image else (None, None, None)
    source = "vllm_image" if hv.get("vllm_image") else "the recipe's image"
    what = "%s=%s" % (source, image) if hv.get("vllm_image") else "%s %s" % (source, image)
    if have is None and plan.get("vllm_version") and (tag is None or not _rolling(tag)):
        have = str(plan["vllm_version"]).lstrip("v")
        what = "vllm_version=%s (image %s names no release)" % (plan["vllm_version"], image or "none")
    if have is None:
        return []  # a rolling tag (latest, nightly) names no release: nothing to compare
    try:
        older = _version_key(have) < _version_key(need)
    except ValueError:
        return []
    if not older:
        return []
    return ["host %s: %s runs vLLM %s but %s %s needs vLLM >= %s (min_vllm_version); valid: an image tag or "
            "vllm_version >= %s, or a rolling tag (latest, nightly)" % (
                host, what, have, plan["recipe"], plan["variant"], need, need)]


def _rolling(tag):
    t = str(tag).lower()
    return any(t == r or t.startswith(r + "-") for r in ("latest", "nightly"))


def real_gpu_count(hv, facts, plan):
    """The host's real GPUs per node: vllm_gpu_count, else the detected count, else the plan's."""
    ids = gpu_ids_of(hv)
    if ids:  # the GPUs this host's vLLM may use (the plan's count follows them)
        return len(ids), "vllm_gpu_ids=%s" % ",".join(str(i) for i in ids)
    declared = _int(hv.get("vllm_gpu_count"))
    if declared:
        return declared, "vllm_gpu_count=%d" % declared
    count = (facts or {}).get("count")
    if isinstance(count, int) and not isinstance(count, bool) and count > 0:
        return count, "%d detected" % count
    return plan["gpu_count"], "the %s profile's %d" % (plan["hardware"], plan["gpu_count"])


def vram_problems(where, plan, variant, hw, count_why, fitting):
    """The variant's VRAM floor against the GPUs the host really has (``hw``: the profile with the
    real GPU count; a profile's vram_gb is per node), over the replica's nodes."""
    need = variant.get("vram_minimum_gb")
    if not isinstance(need, (int, float)) or isinstance(need, bool) or hw.vram_gb is None:
        return []
    if plan["deploy_type"] == "single_node":
        nodes = 1
    elif plan["deploy_type"] == "multi_node":
        nodes = plan["node_count"]
    else:
        return []  # pd_cluster pools are sized by the resolver
    have = hw.vram_gb * nodes
    if need <= have:
        return []
    gpus = int(math.ceil(float(need) / hw.vram_per_gpu)) if hw.vram_per_gpu else None
    valid = []
    if gpus and nodes == 1:
        valid.append("vllm_gpu_count >= %d" % gpus)
    elif gpus:
        valid.append("%d GPUs in all" % gpus)
    if fitting:
        valid.append("a variant that fits: %s" % fitting)
    gpus_text = ("%d nodes x %d GPUs" % (nodes, hw.gpu_count)) if nodes > 1 else "%d GPU(s)" % hw.gpu_count
    return ["%s: variant %s needs %s GB of GPU memory but %s of %s (%s) have %.0f GB; valid: %s" % (
        where, plan["variant"], need, gpus_text, hw.id, count_why, have, ", ".join(valid) or "more GPUs")]


def parallel_sizes(argv):
    """The tp, pp, dp and dpl sizes of an argv (dpl None when unset; the others default to 1)."""
    argv = [str(t) for t in argv]
    out = {}
    for key, flags in PARALLEL_FLAGS.items():
        value = None
        for flag in flags:
            found = flag_value(argv, flag)
            if found is not None:
                value = found
        out[key] = _int(value) if value is not None else None
    for key in ("tp", "pp", "dp"):
        if not out[key] or out[key] < 1:
            out[key] = 1
    return out


def parallel_problems(where, plan, gpus, count_why):
    """tensor x pipeline x data-parallel(-local) sizes of the final argv that need more GPUs per
    node than the host has."""
    argv = plan.get("argv") or []
    if plan.get("role") == "router" or not argv:
        return []
    s = parallel_sizes(argv)
    world = s["tp"] * s["pp"] * s["dp"]
    if plan["deploy_type"] == "single_node":
        nodes = 1
    elif plan["deploy_type"] == "multi_node":
        nodes = plan["node_count"]
    else:
        pool = (plan.get("pools") or {}).get(plan.get("role")) or {}
        nodes = pool.get("nodes") or 0
        if nodes == 0:
            return []  # a co-located pool: the resolver's pool checks apply
    if s["dpl"]:
        per_node = s["tp"] * s["pp"] * s["dpl"]
        how = "tensor %d x pipeline %d x data-parallel-local %d" % (s["tp"], s["pp"], s["dpl"])
    else:
        per_node = int(math.ceil(float(world) / nodes))
        how = "tensor %d x pipeline %d x data-parallel %d%s" % (
            s["tp"], s["pp"], s["dp"], " over %d nodes" % nodes if nodes > 1 else "")
    if per_node <= gpus:
        return []
    return ["%s: the argv (with vllm_extra_args) asks for %s = %d GPUs per node but the host has %d (%s); valid: "
            "sizes whose product per node is at most %d" % (where, how, per_node, gpus, count_why, gpus)]


def address_problems(plan, vars_of, address):
    """Members of a multi-node replica whose cluster address is not an IP (the rendezvous and the
    nftables firewall need one); one problem per bad member."""
    if plan.get("replica") is None:
        return []
    out = []
    for member in plan.get("members") or []:
        value = str(address(member))
        if is_ip(value):
            continue
        hv = vars_of(member)
        key = ("vllm_cluster_address" if hv.get("vllm_cluster_address") else
               "ansible_host" if hv.get("ansible_host") else "the inventory hostname (no vllm_cluster_address or ansible_host)")
        out.append("host %s: %s=%s is not an IP address, but replica %s needs one (its members rendezvous on it and "
                   "the firewall admits only the members' IPs); valid: an IPv4 or IPv6 address in vllm_cluster_address"
                   % (member, key, value, plan["replica"]))
    return out


__all__ = ["input_problems", "port_problems", "version_problems", "vram_problems", "parallel_problems",
           "address_problems", "parallel_sizes", "real_gpu_count", "secret_values", "host_secrets", "redact",
           "redact_plan", "PORT_VARS", "PORT_FLAGS", "ENV_NAME", "TOKEN_SHAPES"]
