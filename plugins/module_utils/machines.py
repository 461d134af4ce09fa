# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmfleet contributors
# Apache License 2.0 (see LICENSE)
"""Several vLLM services on one machine: GPU selection (``vllm_gpu_ids``) and the machine checks.

Each inventory host is one vLLM service. Several inventory hosts may share one machine: the
hosts with the same ``ansible_host`` (a host without one is a machine of its own, named by its
inventory hostname). Each of them then takes its own GPUs (``vllm_gpu_ids``), its own ports and
its own unit name (``vllm_serve_name``). This module:

* turns ``vllm_gpu_ids`` into the GPU count the resolver plans with (:func:`gpu_count_of`; the
  brand's device-visibility env is ``replica.py``'s, which assembles the plan);
* checks the plans of a whole inventory machine by machine (:func:`check_machines`): GPUs given
  to two services, a port used twice, two units of the same name, GPU ids the host does not have,
  replica members whose GPU counts differ;
* warns where a plan leaves GPUs of its host idle (:func:`with_idle_warning`, on every plan).

Pure Python: no Ansible imports.
"""

from __future__ import annotations

import json
from collections import OrderedDict

from .inventory_vars import FleetError, gpu_ids_of
from .preflight import parallel_sizes

#: The role's default unit name (``vllm_serve_name``; the unit is ``vllm-<name>.service``).
DEFAULT_SERVE_NAME = "serve"


def machine_of(host, hv):
    """The machine an inventory host runs on: its ``ansible_host``, else its inventory hostname."""
    return str(hv.get("ansible_host") or host)


def gpu_count_of(host, hv, gpu_count):
    """The GPU count to plan with: ``len(vllm_gpu_ids)`` when set, else ``gpu_count``.

    Setting ``vllm_gpu_count`` to another count than ``vllm_gpu_ids`` names is an error."""
    ids = gpu_ids_of(hv)
    if ids is None:
        return gpu_count
    declared = hv.get("vllm_gpu_count")
    if declared is not None and str(declared) != str(len(ids)):
        raise FleetError(["host %s: vllm_gpu_count=%s but vllm_gpu_ids=%s names %d GPU(s); set one of them, or make "
                          "them agree" % (host, declared, json.dumps(ids), len(ids))])
    return len(ids)


# ---------------------------------------------------------------------- whole-inventory checks
def check_machines(plans, vars_of, facts=None):
    """Problems across the services that share a machine, and GPU ids versus the host's GPUs.

    ``plans``: host -> plan (``Fleet.check``'s); ``vars_of``: host -> its variables (read:
    ``ansible_host``, ``vllm_gpu_ids``, ``vllm_serve_name``); ``facts``: host -> ``llmfleet_gpu``
    facts. Returns the problems, each naming the machine, the hosts, the variable and the values.
    """
    facts = facts or {}
    machines = OrderedDict()
    for host in sorted(plans):
        machines.setdefault(machine_of(host, vars_of(host)), []).append(host)
    out = []
    for machine, hosts in machines.items():
        if len(hosts) > 1:
            out.extend(_gpu_overlaps(machine, hosts, plans, vars_of))
            out.extend(_port_clashes(machine, hosts, plans, vars_of))
            out.extend(_name_clashes(machine, hosts, vars_of))
    for host in sorted(plans):
        out.extend(_ids_the_host_lacks(host, vars_of(host), facts.get(host) or {}))
    out.extend(_replica_gpu_counts(plans, vars_of))
    return out


def _where(machine, hosts):
    return "machine %s (hosts %s)" % (machine, ", ".join(hosts))


def _gpu_overlaps(machine, hosts, plans, vars_of):
    users = [h for h in hosts if plans[h]["role"] != "router"]  # a PD router runs on no GPU
    if len(users) < 2:
        return []
    out = []
    unset = [h for h in users if gpu_ids_of(vars_of(h)) is None]
    if unset:
        out.append("%s: %s set no vllm_gpu_ids and would use every GPU of the machine; set vllm_gpu_ids (distinct GPU "
                   "indices) on each vLLM host of one machine" % (_where(machine, users), ", ".join(unset)))
    owners = OrderedDict()
    for h in users:
        for gpu in gpu_ids_of(vars_of(h)) or ():
            owners.setdefault(gpu, []).append(h)
    shared = [gpu for gpu, hs in owners.items() if len(hs) > 1]
    if shared:
        holders = sorted(set(h for gpu in shared for h in owners[gpu]))
        out.append("%s: vllm_gpu_ids overlap on GPU %s (%s); each GPU of a machine serves one host" % (
            _where(machine, users), ", ".join(str(g) for g in sorted(shared)),
            ", ".join("%s=%s" % (h, json.dumps(gpu_ids_of(vars_of(h)))) for h in holders)))
    return out


def _ports_of(plan, hv):
    """(port, what) a service listens on: its API port, and on a replica's rank 0 its rendezvous ports."""
    out = []
    if plan.get("serves_http"):
        key = "vllm_router_port" if plan["role"] == "router" else "vllm_port"
        out.append((int(plan["port"]), "%s=%s, API" % (key, plan["port"])))
    if plan.get("rank") == 0:  # the rendezvous ports are served by each replica's (or PD pool's) first node
        for item in plan.get("cluster_ports") or ():
            out.append((int(item["port"]), "%s, replica %s" % (item["purpose"], plan.get("replica"))))
    return out


def _port_clashes(machine, hosts, plans, vars_of):
    users = OrderedDict()
    for h in hosts:
        for port, what in _ports_of(plans[h], vars_of(h)):
            users.setdefault(port, []).append((h, what))
    out = []
    for port, uses in sorted(users.items()):
        if len(set(h for h, _w in uses)) > 1:
            out.append("%s: port %d is used by more than one service: %s; each service of one machine needs its own "
                       "ports (vllm_port, vllm_router_port, or the rendezvous port flags in vllm_extra_args)" % (
                           _where(machine, sorted(set(h for h, _w in uses))), port,
                           ", ".join("%s (%s)" % (h, w) for h, w in uses)))
    return out


def _name_clashes(machine, hosts, vars_of):
    names = OrderedDict()
    for h in hosts:
        names.setdefault(str(vars_of(h).get("vllm_serve_name") or DEFAULT_SERVE_NAME), []).append(h)
    return ["%s: vllm_serve_name=%s on each of them (unit vllm-%s.service would collide); give each host of one machine "
            "its own vllm_serve_name" % (_where(machine, hs), name, name) for name, hs in names.items() if len(hs) > 1]


def _ids_the_host_lacks(host, hv, facts):
    ids = gpu_ids_of(hv)
    count = facts.get("count")
    if ids is None or not isinstance(count, int) or isinstance(count, bool) or not count:
        return []
    missing = [i for i in ids if i >= count]
    if not missing:
        return []
    return ["host %s: vllm_gpu_ids=%s names GPU %s but the host has %d GPU(s); valid: %s" % (
        host, json.dumps(ids), ", ".join(str(i) for i in missing), count, "0-%d" % (count - 1) if count > 1 else "0")]


def with_idle_warning(plan, hv, facts=None):
    """``plan`` with an ``idle GPUs`` warning when it is single-node and uses fewer GPUs than its host
    has (the detected count, else the plan's), or than ``vllm_gpu_ids`` names."""
    facts = facts or {}
    if plan.get("deploy_type") != "single_node":
        return plan  # a replica node's share of the world size is the resolver's
    sizes = parallel_sizes(plan["argv"])
    used = sizes["tp"] * sizes["pp"] * (sizes["dpl"] or sizes["dp"])
    ids = gpu_ids_of(hv)
    if ids is not None:
        if used < len(ids):
            plan["warnings"].append("idle GPUs: the plan uses %d of the %d GPUs vllm_gpu_ids=%s names; name fewer GPUs "
                                    "(and give the others to another instance)" % (used, len(ids), json.dumps(ids)))
        return plan
    count = facts.get("count")
    have = count if isinstance(count, int) and not isinstance(count, bool) and count else plan["gpu_count"]
    if used < have:
        plan["warnings"].append("idle GPUs: the plan uses %d of the host's %d GPUs; set vllm_gpu_ids to run more instances "
                                "on this machine (one inventory host each, with its own vllm_port and vllm_serve_name)"
                                % (used, have))
    return plan


def _replica_gpu_counts(plans, vars_of):
    replicas = OrderedDict()
    for host in sorted(plans):
        if plans[host].get("replica") is not None:
            replicas.setdefault(plans[host]["replica"], []).append(host)
    out = []
    for name, hosts in replicas.items():
        counts = dict((h, plans[h]["gpu_count"]) for h in hosts)
        if len(set(counts.values())) > 1 and any(gpu_ids_of(vars_of(h)) is not None for h in hosts):
            out.append("replica %s: members plan with different GPU counts (%s); vllm_gpu_ids must name as many GPUs on "
                       "every member" % (name, ", ".join("%s=%d (vllm_gpu_ids=%s)" % (
                           h, counts[h], json.dumps(gpu_ids_of(vars_of(h)))) for h in hosts)))
    return out


__all__ = ["machine_of", "gpu_count_of", "check_machines", "with_idle_warning", "DEFAULT_SERVE_NAME"]
