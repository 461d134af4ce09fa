# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmfleet contributors
# Apache License 2.0 (see LICENSE)
"""From inventory to per-host plans.

The inventory model (every variable is optional unless said otherwise):

=========================  ===============================================================
``vllm_recipe``            HF id of the recipe (required on a host that serves vLLM)
``vllm_variant``           variant key; default: the recipe's choice for the hardware
``vllm_hardware``          taxonomy profile id; default: the host's detected profile
``vllm_gpu_count``         real GPUs per node, replacing the profile's (deviation D6)
``vllm_strategy``          strategy id; default: the recipe's recommendation
``vllm_features``          a list of features to enable (emitted in that order), or a dict
                           feature -> bool on top of the recipe defaults (recipe order)
``vllm_feature_modes``     dict feature -> mode
``vllm_kv_offload``        a taxonomy kv_offload key (``simple``, ``lmcache``, ...)
``vllm_advanced``          list of advanced preset ids (``gpu_mem_095``, ...)
``vllm_extra_args``        list of argv tokens appended last (provenance ``inventory``)
``vllm_extra_env``         dict appended last (provenance ``inventory``)
``vllm_image``             container image, replacing the recipe's
``vllm_version``           vLLM version for flag checks when the image tag has none
``vllm_port``              API port (default 8000; 8001/8002 for PD pools)
``vllm_served_model_name`` a name, a list [canonical, alias...], or {name, aliases}
``vllm_recipes_path``      list of recipe trees (later wins); default: the built-in tree
``vllm_replica``           name of the inventory group forming this host's multi-node replica
``vllm_node_rank``         explicit rank in the replica (default: order of inventory names)
``vllm_cluster_address``   address other nodes use for this host (default ``ansible_host``)
``vllm_cluster_interface`` NIC for NCCL/GLOO (``$IFACE_NAME``); required in multi-node replicas
``vllm_pd_role``           ``prefill``, ``decode`` or ``router`` in a pd_cluster replica
``vllm_pd_dp_rpc_port``    DP RPC port of PD DEP pools (default 13345)
``vllm_router_port``       client port of the PD router (default 30000)
``vllm_infiniband_hca``    InfiniBand HCAs of a replica node (``mlx5_0,mlx5_1``): NCCL_IB_HCA + RDMA
                           container flags
``vllm_multinode_backend`` ``mp`` (default: vLLM's multiprocessing, ``--nnodes``) or ``ray`` (TP, TP x PP
                           and TEP replicas on images that carry Ray: ``ray start`` on every node,
                           ``--distributed-executor-backend ray`` on the head)
``vllm_ray_port``          Ray GCS port on the head in ``ray`` mode (default 6379)
=========================  ===============================================================

Pure Python: no Ansible imports.
"""

from __future__ import annotations

import json
import re

from .catalog import get_catalog, _unknown
from .errors import RecipeError
from .resolver import Resolver, format_command, format_router, unique

VARS = (
    "vllm_recipe", "vllm_variant", "vllm_hardware", "vllm_gpu_count", "vllm_strategy", "vllm_features",
    "vllm_feature_modes", "vllm_kv_offload", "vllm_advanced", "vllm_extra_args", "vllm_extra_env", "vllm_image",
    "vllm_version", "vllm_port", "vllm_served_model_name", "vllm_recipes_path", "vllm_replica", "vllm_node_rank",
    "vllm_cluster_address", "vllm_cluster_interface", "vllm_pd_role", "vllm_pd_dp_rpc_port", "vllm_router_port",
    "vllm_infiniband_hca", "vllm_multinode_backend", "vllm_ray_port",
)
#: Variables every member of one replica must agree on.
REPLICA_SHARED = ("vllm_recipe", "vllm_variant", "vllm_hardware", "vllm_gpu_count", "vllm_strategy", "vllm_features",
                  "vllm_feature_modes", "vllm_kv_offload", "vllm_advanced", "vllm_image", "vllm_version",
                  "vllm_recipes_path", "vllm_multinode_backend", "vllm_ray_port")
MULTINODE_BACKENDS = ("mp", "ray")
#: Strategies whose replicas may run on Ray (one vLLM engine spread over the Ray cluster).
RAY_STRATEGIES = ("multi_node_tp", "multi_node_tp_pp", "multi_node_tep")
#: vLLM's default rendezvous ports (vllm/config/parallel.py, the same in 0.17-0.33).
DEFAULT_MASTER_PORT = 29501
DEFAULT_DP_RPC_PORT = 29550
DEFAULT_DP_MASTER_PORT = 29500
DEFAULT_RAY_PORT = 6379
PD_ROLES = ("prefill", "decode", "router")
DEFAULT_PORT = 8000
PD_PORTS = {"prefill": 8001, "decode": 8002}
_PLACEHOLDER = re.compile(r"\$([A-Z_][A-Z0-9_]*)")


class FleetError(RecipeError):
    """Problems with the inventory; ``problems`` lists one message per problem."""

    def __init__(self, problems):
        self.problems = list(problems)
        super().__init__("\n".join(self.problems))


def _is_str(v):
    return isinstance(v, str) and v != ""


def _is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def _check_types(host, hv):
    """Type errors in one host's vllm_* variables, each naming host, key, value and expectation."""
    out = []

    def bad(key, expected):
        out.append("host %s: %s=%s: expected %s" % (host, key, json.dumps(hv.get(key), default=str), expected))

    for key in ("vllm_recipe", "vllm_variant", "vllm_hardware", "vllm_strategy", "vllm_kv_offload", "vllm_image",
                "vllm_replica", "vllm_cluster_address", "vllm_cluster_interface"):
        if hv.get(key) is not None and not _is_str(hv[key]):
            bad(key, "a non-empty string")
    for key in ("vllm_gpu_count", "vllm_port", "vllm_pd_dp_rpc_port", "vllm_router_port", "vllm_ray_port"):
        v = hv.get(key)
        if v is not None and not (_is_int(v) and v > 0):
            bad(key, "a positive integer")
    if hv.get("vllm_node_rank") is not None and not (_is_int(hv["vllm_node_rank"]) and hv["vllm_node_rank"] >= 0):
        bad("vllm_node_rank", "an integer >= 0")
    v = hv.get("vllm_version")
    if v is not None and not (isinstance(v, str) and re.match(r"^v?\d+(\.\d+)*$", v)):
        bad("vllm_version", "a version string such as \"0.28.0\"")
    v = hv.get("vllm_features")
    if v is not None and not (isinstance(v, list) and all(_is_str(x) for x in v)) and \
            not (isinstance(v, dict) and all(isinstance(x, bool) for x in v.values())):
        bad("vllm_features", "a list of feature names, or a dict feature -> true/false")
    v = hv.get("vllm_feature_modes")
    if v is not None and not (isinstance(v, dict) and all(_is_str(x) for x in v.values())):
        bad("vllm_feature_modes", "a dict feature -> mode name")
    for key in ("vllm_extra_args", "vllm_advanced"):
        v = hv.get(key)
        if v is not None and not (isinstance(v, list) and all(isinstance(x, str) for x in v)):
            bad(key, "a list of strings (quote numbers: \"8\")")
    v = hv.get("vllm_extra_env")
    if v is not None and not (isinstance(v, dict) and all(isinstance(x, (str, int, float, bool)) for x in v.values())):
        bad("vllm_extra_env", "a dict of NAME: scalar")
    v = hv.get("vllm_recipes_path")
    if v is not None and not (_is_str(v) or (isinstance(v, list) and v and all(_is_str(x) for x in v))):
        bad("vllm_recipes_path", "a path or a list of paths")
    v = hv.get("vllm_served_model_name")
    if v is not None and not (_is_str(v) or (isinstance(v, list) and v and all(_is_str(x) for x in v)) or
                              (isinstance(v, dict) and _is_str(v.get("name")))):
        bad("vllm_served_model_name", "a name, a list [canonical, alias...] or {name: ..., aliases: [...]}")
    v = hv.get("vllm_pd_role")
    if v is not None and v not in PD_ROLES:
        bad("vllm_pd_role", "one of %s" % ", ".join(PD_ROLES))
    v = hv.get("vllm_multinode_backend")
    if v is not None and v not in MULTINODE_BACKENDS:
        bad("vllm_multinode_backend", "one of %s" % ", ".join(MULTINODE_BACKENDS))
    return out


def _set_env(env, env_prov, key, value, why):
    """Set ``env[key]`` with provenance ``replica: <why>``, recording a value it replaces."""
    old = env.get(key)
    rec = {"source": "replica: " + why}
    if old is not None and old != value:
        rec["replaced"] = [{"value": old, "source": env_prov.get(key, {}).get("source", "")}]
    env[key] = value
    env_prov[key] = rec


def flag_value(argv, flag, default=None):
    """The last value of ``flag`` in ``argv`` (``--flag v`` or ``--flag=v``), else ``default``."""
    found = default
    for i, tok in enumerate(argv):
        if tok == flag and i + 1 < len(argv):
            found = argv[i + 1]
        elif tok.startswith(flag + "="):
            found = tok[len(flag) + 1:]
    return found


def strip_flags(argv, with_value, bare=()):
    """``argv`` without the flags ``with_value`` (and their values) and the ``bare`` flags."""
    out = []
    skip = False
    for tok in argv:
        if skip:
            skip = False
            continue
        name = tok.split("=", 1)[0]
        if tok in with_value:
            skip = True
            continue
        if (name in with_value and "=" in tok) or tok in bare:
            continue
        out.append(tok)
    return out


def served_names(value):
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [value["name"]] + [a for a in (value.get("aliases") or []) if a != value["name"]]
    return list(value)


def bind(text, mapping):
    """Replace ``$NAME`` placeholders (whole identifiers) that ``mapping`` knows."""
    if "$" not in text:
        return text
    return _PLACEHOLDER.sub(lambda m: str(mapping[m.group(1)]) if m.group(1) in mapping else m.group(0), text)


def _features_arg(value):
    """A list enables exactly those features, emitted in the list's order (as upstream's
    builder emits its ``enabledFeatures``); a dict toggles the recipe defaults (recipe order)."""
    return list(value) if isinstance(value, list) else value


class Fleet(object):
    """Plans for every vLLM host of an inventory.

    ``hostvars``: inventory hostname -> that host's variables (at least the vllm_* ones and
    ``ansible_host``); ``groups``: group name -> list of hostnames; ``facts``: optional
    hostname -> ``llmfleet_gpu`` facts (detected hardware).
    """

    def __init__(self, hostvars, groups, facts=None, catalog_factory=get_catalog):
        self.hostvars = hostvars
        self.groups = groups or {}
        self.facts = facts or {}
        self.catalog_factory = catalog_factory
        self._deployments = {}

    # ------------------------------------------------------------------ helpers
    def vars(self, host):
        hv = self.hostvars.get(host)
        if hv is None:
            raise FleetError(["host %s is not in the inventory" % host])
        return hv

    def address(self, host):
        hv = self.vars(host)
        return hv.get("vllm_cluster_address") or hv.get("ansible_host") or host

    def catalog(self, hv):
        paths = hv.get("vllm_recipes_path")
        if isinstance(paths, str):
            paths = [paths]
        return self.catalog_factory(list(paths) if paths else None)

    def hardware_of(self, host, hv):
        """(profile id, GPUs per node): declared, else detected (``llmfleet_gpu`` facts)."""
        hw = hv.get("vllm_hardware")
        if hw:
            return hw, hv.get("vllm_gpu_count")
        facts = self.facts.get(host) or {}
        if facts.get("profile"):
            return facts["profile"], hv.get("vllm_gpu_count") or facts.get("count")
        if facts:
            raise FleetError(["host %s: vllm_hardware is not set and the detected GPUs match no hardware profile: %s "
                              "(set vllm_hardware)" % (host, facts.get("profile_reason") or "vendor %s" % facts.get("vendor"))])
        raise FleetError(["host %s: vllm_hardware is not set and no detected GPU profile is known "
                          "(set vllm_hardware to a taxonomy profile id, e.g. h200, or gather GPU facts first)" % host])

    def gpu_fact_problems(self, host, plan, variant):
        """Declared versus detected hardware, and the VRAM fit on the host's real memory."""
        facts = self.facts.get(host) or {}
        if not facts or not facts.get("vendor"):
            return []
        out = []
        hv = self.vars(host)
        seen = "%s x%s" % (facts.get("product") or facts.get("vendor"), facts.get("count"))
        declared = hv.get("vllm_hardware")
        if facts.get("vendor") == "none":
            out.append("host %s: vllm_hardware=%s but no GPU was detected on the host" % (host, declared or plan["hardware"]))
            return out
        if declared and facts.get("profile") and facts["profile"] != declared:
            out.append("host %s: vllm_hardware=%s but the host's GPUs match %s (%s)" % (host, declared, facts["profile"], seen))
        elif declared and not facts.get("profile"):
            out.append("host %s: vllm_hardware=%s but the detected GPUs (%s) match no profile: %s" % (
                host, declared, seen, facts.get("profile_reason")))
        count = facts.get("count")
        if isinstance(count, int) and count and plan["gpu_count"] > count:
            out.append("host %s: the plan uses %d GPUs per node but the host has %d (%s); set vllm_gpu_count: %d" % (
                host, plan["gpu_count"], count, seen, count))
        total = facts.get("memory_total_mib")
        need = variant.get("vram_minimum_gb")
        if isinstance(total, (int, float)) and isinstance(need, (int, float)) and plan["deploy_type"] == "single_node":
            have_gb = total * 1048576 / 1e9
            if need > have_gb:
                out.append("host %s: variant %s needs %s GB of GPU memory but the host has %.0f GB (%s, %d MiB)" % (
                    host, plan["variant"], need, have_gb, seen, total))
        return out

    def replica_members(self, host, hv):
        """(group name, members ordered by rank) of a host's replica, or (None, [host])."""
        name = hv.get("vllm_replica")
        if not name:
            return None, [host]
        members = self.groups.get(name)
        if not members:
            raise FleetError(["host %s: vllm_replica=%s names no inventory group with hosts; groups: %s"
                              % (host, name, ", ".join(sorted(g for g in self.groups if g not in ("all", "ungrouped"))))])
        if host not in members:
            raise FleetError(["host %s: vllm_replica=%s but the host is not a member of group %s" % (host, name, name)])
        return name, list(members)

    @staticmethod
    def ranked(hosts, hostvars):
        """Order by explicit vllm_node_rank, else by inventory hostname."""
        explicit = [h for h in hosts if hostvars[h].get("vllm_node_rank") is not None]
        if explicit and len(explicit) != len(hosts):
            raise FleetError(["replica members %s set vllm_node_rank but %s do not: set it on every member or on none"
                              % (", ".join(sorted(explicit)), ", ".join(sorted(set(hosts) - set(explicit))))])
        if explicit:
            ranks = sorted((hostvars[h]["vllm_node_rank"], h) for h in hosts)
            seen = [r for r, _h in ranks]
            if seen != list(range(len(hosts))):
                raise FleetError(["replica members have vllm_node_rank %s; expected each of 0..%d exactly once (%s)"
                                  % (seen, len(hosts) - 1, ", ".join("%s=%s" % (h, r) for r, h in ranks))])
            return [h for _r, h in ranks]
        return sorted(hosts)

    # ------------------------------------------------------------------ planning
    def plan(self, host):
        """The plan of one host (raises FleetError / RecipeError on bad input)."""
        hv = self.vars(host)
        problems = _check_types(host, hv)
        if problems:
            raise FleetError(problems)
        if not hv.get("vllm_recipe"):
            raise FleetError(["host %s: vllm_recipe is not set (the HF id of a recipe, e.g. Qwen/Qwen3.6-35B-A3B)" % host])
        replica, members = self.replica_members(host, hv)
        if replica is None:
            return self._single(host, hv)
        return self._replica_plan(host, hv, replica, members)

    def _inputs(self, host, hv):
        catalog = self.catalog(hv)
        catalog.recipe(hv["vllm_recipe"])  # unknown or invalid recipes fail here, before any hardware question
        hardware, gpu_count = self.hardware_of(host, hv)
        extra = list(hv.get("vllm_extra_args") or [])
        names = served_names(hv.get("vllm_served_model_name"))
        kwargs = dict(recipe_id=hv["vllm_recipe"], variant=hv.get("vllm_variant"), hardware=hardware,
                      strategy=hv.get("vllm_strategy"), features=_features_arg(hv.get("vllm_features")),
                      feature_modes=hv.get("vllm_feature_modes"), kv_offload=hv.get("vllm_kv_offload"),
                      advanced=hv.get("vllm_advanced"), gpu_count=gpu_count)
        return catalog, kwargs, extra, names

    def _resolve(self, catalog, kwargs, extra_args=None, extra_env=None):
        key = json.dumps([catalog.paths, kwargs, extra_args, extra_env], sort_keys=True, default=str)
        dep = self._deployments.get(key)
        if dep is None:
            dep = Resolver(catalog).resolve(extra_args=extra_args, extra_env=extra_env, **kwargs)
            self._deployments[key] = dep
        return dep

    def _host_extras(self, hv, names, role):
        extra = list(hv.get("vllm_extra_args") or [])
        if names:
            extra += ["--served-model-name"] + names
        port = hv.get("vllm_port")
        if port and role not in PD_PORTS and role != "router" and port != DEFAULT_PORT:
            extra += ["--port", str(port)]
        return extra

    def _single(self, host, hv):
        catalog, kwargs, _extra, names = self._inputs(host, hv)
        sel = Resolver(catalog).select(kwargs["recipe_id"], kwargs["variant"], kwargs["hardware"], kwargs["strategy"],
                                       None, kwargs["gpu_count"])
        strat = catalog.strategies[sel["strategy"]]
        if strat.get("deploy_type") != "single_node":
            raise FleetError(["host %s: strategy %s spans several nodes: put the host in an inventory group and set "
                              "vllm_replica to that group's name" % (host, sel["strategy"])])
        kwargs.update(variant=sel["variant"], strategy=sel["strategy"], node_count=1)
        dep = self._resolve(catalog, kwargs, self._host_extras(hv, names, "single"), hv.get("vllm_extra_env"))
        return self._finish(host, hv, dep, dep["nodes"][0], None, [host], {}, names)

    def _replica_plan(self, host, hv, replica, members):
        problems = []
        for key in REPLICA_SHARED:
            values = dict((m, self.vars(m).get(key)) for m in members)
            if len(set(json.dumps(v, sort_keys=True, default=str) for v in values.values())) > 1:
                problems.append("replica %s: members disagree on %s (%s); every member of a replica must run the same "
                                "deployment" % (replica, key, ", ".join("%s=%s" % (m, json.dumps(v, default=str)) for m, v in sorted(values.items()))))
        if problems:
            raise FleetError(problems)
        catalog, kwargs, _extra, names = self._inputs(host, hv)
        resolver = Resolver(catalog)
        pd_roles = dict((m, self.vars(m).get("vllm_pd_role")) for m in members)
        strategy = kwargs["strategy"]
        if strategy is None:
            sel = resolver.select(kwargs["recipe_id"], kwargs["variant"], kwargs["hardware"], None, len(members), kwargs["gpu_count"])
            strategy = sel["strategy"]
        strat = resolver.strategy(strategy)
        dtype = strat.get("deploy_type")
        if dtype == "single_node":
            raise FleetError(["replica %s: strategy %s is single-node; a replica group needs a multi_node_* or pd_cluster "
                              "strategy (single-node hosts need no vllm_replica)" % (replica, strategy)])
        if kwargs["variant"] is None:
            kwargs["variant"] = resolver.select(kwargs["recipe_id"], None, kwargs["hardware"], strategy, len(members),
                                                kwargs["gpu_count"])["variant"]
        kwargs["strategy"] = strategy
        bindings = {}
        if dtype == "pd_cluster":
            missing = sorted(m for m, r in pd_roles.items() if r is None)
            if missing:
                raise FleetError(["replica %s (pd_cluster): %s set no vllm_pd_role; each member is one of %s"
                                  % (replica, ", ".join(missing), ", ".join(PD_ROLES))])
            pools = dict((r, self.ranked([m for m in members if pd_roles[m] == r], self.hostvars)) for r in PD_ROLES)
            for role in ("prefill", "decode"):
                if not pools[role]:
                    raise FleetError(["replica %s (pd_cluster): no member has vllm_pd_role=%s" % (replica, role)])
            if len(pools["router"]) != 1:
                raise FleetError(["replica %s (pd_cluster): expected exactly one member with vllm_pd_role=router, found %d"
                                  % (replica, len(pools["router"]))])
            kwargs["node_count"] = len(pools["prefill"]) + len(pools["decode"])
            kwargs["pd_nodes"] = {"prefill": len(pools["prefill"]), "decode": len(pools["decode"])}
            for role in ("prefill", "decode"):
                for i, m in enumerate(pools[role]):
                    bindings["%s_NODE_%d" % (role.upper(), i + 1)] = self.address(m)
                bindings["%s_DP_RPC_PORT" % role.upper()] = str(self.vars(pools[role][0]).get("vllm_pd_dp_rpc_port") or 13345)
            router = pools["router"][0]
            bindings["ROUTER_HOST"] = self.address(router)
            bindings["ROUTER_PORT"] = str(self.vars(router).get("vllm_router_port") or 30000)
            role = pd_roles[host]
            rank = pools[role].index(host)
            ordered = pools["prefill"] + pools["decode"] + pools["router"]
        else:
            ordered = self.ranked(members, self.hostvars)
            kwargs["node_count"] = len(ordered)
            rank = ordered.index(host)
            role = "head" if rank == 0 else "worker"
            bindings["HEAD_IP"] = self.address(ordered[0])
        iface = hv.get("vllm_cluster_interface")
        if iface:
            bindings["IFACE_NAME"] = iface
        dep = self._resolve(catalog, kwargs, self._host_extras(hv, names, role), hv.get("vllm_extra_env"))
        if role == "router":
            node = {"role": "router", "rank": 0, "argv": dep["router"]["argv"], "env": {}, "args_provenance": [],
                    "env_provenance": {}}
        else:
            node = next(n for n in dep["nodes"] if n["role"] == role and n["rank"] == rank) if dtype == "pd_cluster" \
                else dep["nodes"][rank]
        return self._finish(host, hv, dep, node, replica, ordered, bindings, names)

    def _finish(self, host, hv, dep, node, replica, members, bindings, names):
        argv = [bind(t, bindings) for t in node["argv"]]
        env = dict((k, bind(v, bindings)) for k, v in node["env"].items())
        args_prov = [dict(p, arg=[bind(t, bindings) for t in p["arg"]]) for p in node["args_provenance"]]
        env_prov = dict(node["env_provenance"])
        role = node["role"]
        container_args = []
        ray = None
        replica_node = replica is not None and role != "router"  # a rank of a multi-node replica or PD pool
        backend = (hv.get("vllm_multinode_backend") or "mp") if replica_node else None
        if replica_node:
            self._replica_runtime(host, hv, dep, argv, env, args_prov, env_prov, container_args)
            if backend == "ray":
                argv, ray = self._ray_mode(host, hv, dep, role, argv, env, args_prov, env_prov, members)
        unbound = sorted(set(m.group(1) for t in list(argv) + list(env.values()) for m in _PLACEHOLDER.finditer(t)))
        if role == "router":
            command = format_router(argv)
        elif argv:
            command = format_command(argv)
        else:  # a Ray worker runs no vLLM process of its own
            command = ""
        image = hv.get("vllm_image") or dep["image"]
        port = PD_PORTS.get(role) or (int(hv.get("vllm_router_port") or 30000) if role == "router" else int(hv.get("vllm_port") or DEFAULT_PORT))
        return {
            "host": host,
            "recipe": dep["recipe"],
            "model": dep["model"],
            "variant": dep["variant"],
            "hardware": dep["hardware"],
            "gpu_count": dep["gpu_count"],
            "strategy": dep["strategy"],
            "deploy_type": dep["deploy_type"],
            "node_count": dep["node_count"],
            "replica": replica,
            "members": members,
            "role": role,
            "rank": node["rank"],
            "argv": argv,
            "env": env,
            "command": command,
            "image": image,
            "image_source": "inventory (vllm_image)" if hv.get("vllm_image") else dep["image_source"],
            "docker_gpu_flags": dep["docker_gpu_flags"],
            "port": port,
            "served_model_names": names or [dep["model"]],
            "features": dep["features"],
            "feature_modes": dep["feature_modes"],
            "kv_offload": dep["kv_offload"],
            "min_vllm_version": dep["min_vllm_version"],
            "vllm_version": hv.get("vllm_version"),
            "bindings": bindings,
            "unbound_placeholders": unbound,
            "args_provenance": args_prov,
            "env_provenance": env_prov,
            "container_args": container_args,
            "serves_http": role == "router" or (bool(argv) and "--headless" not in argv),
            "multinode_backend": backend,
            "ray": ray,
            "cluster_ports": self._cluster_ports(argv, ray) if replica_node else [],
            "member_addresses": [str(self.address(m)) for m in members] if replica is not None else [],
            "pools": dep["pools"],
            "warnings": list(dep["warnings"]),
            "notes": list(dep["notes"]),
        }

    def _replica_runtime(self, host, hv, dep, argv, env, args_prov, env_prov, container_args):
        """What a node of a multi-node replica needs beyond the recipe (provenance ``replica: ...``).

        * ``VLLM_HOST_IP``: the node's own cluster address, so vLLM does not guess the NIC;
        * ``--distributed-executor-backend mp`` where vLLM would not pick it itself (ROCm);
        * InfiniBand (``vllm_infiniband_hca``): ``NCCL_IB_HCA`` and the RDMA container flags.
        """
        _set_env(env, env_prov, "VLLM_HOST_IP", str(self.address(host)), "this node's vllm_cluster_address")
        hw = Resolver(self.catalog(hv)).hardware(dep["hardware"], dep["gpu_count"])
        if hw.brand_key == "amd" and "--distributed-executor-backend" not in argv:
            toks = ["--distributed-executor-backend", "mp"]
            argv.extend(toks)
            args_prov.append({"arg": toks, "source": "replica: explicit mp backend (vLLM on ROCm would not pick it)"})
        hca = hv.get("vllm_infiniband_hca")
        why = "vllm_infiniband_hca"
        if hca is None:
            hca = (self.facts.get(host) or {}).get("infiniband_hcas")
            why = "InfiniBand HCAs detected on the host"
        if hca:
            _set_env(env, env_prov, "NCCL_IB_HCA", hca if isinstance(hca, str) else ",".join(hca), why)
            container_args.extend(["--device", "/dev/infiniband", "--cap-add", "IPC_LOCK", "--ulimit", "memlock=-1:-1"])

    def _ray_mode(self, host, hv, dep, role, argv, env, args_prov, env_prov, members):
        """A TP / TP x PP / TEP replica on Ray: ``ray start`` on every node, and one vLLM
        process, on the head, with ``--distributed-executor-backend ray`` (provenance
        ``replica: ray mode``). Returns (argv, ray): a worker's argv is empty."""
        if dep["strategy"] not in RAY_STRATEGIES:
            raise FleetError(["host %s: vllm_multinode_backend=ray supports strategies %s; strategy %s runs with mp only "
                              "(unset vllm_multinode_backend or set it to mp)" % (host, ", ".join(RAY_STRATEGIES), dep["strategy"])])
        head = members[0]
        port = int(hv.get("vllm_ray_port") or DEFAULT_RAY_PORT)
        address = "%s:%d" % (self.address(head), port)
        me = str(self.address(host))
        gpus = str(dep["gpu_count"])
        if role == "head":
            ray_argv = ["ray", "start", "--head", "--port", str(port), "--node-ip-address", me, "--num-gpus", gpus,
                        "--disable-usage-stats", "--block"]
        else:
            ray_argv = ["ray", "start", "--address", address, "--node-ip-address", me, "--num-gpus", gpus, "--block"]
        mp_only = ("--nnodes", "--node-rank", "--master-addr", "--master-port", "--distributed-executor-backend")
        if role != "head":
            for item in args_prov:
                item["arg"] = []
            return [], {"role": "worker", "argv": ray_argv, "address": address, "port": port}
        out = strip_flags(argv, mp_only, ("--headless",))
        for item in args_prov:
            item["arg"] = strip_flags(item["arg"], mp_only, ("--headless",))
        toks = ["--distributed-executor-backend", "ray"]
        out.extend(toks)
        args_prov.append({"arg": toks, "source": "replica: ray mode (one engine over the Ray cluster; --nnodes, "
                                                 "--node-rank and --master-addr dropped)"})
        _set_env(env, env_prov, "RAY_ADDRESS", address, "ray mode (the head's Ray GCS)")
        return out, {"role": "head", "argv": ray_argv, "address": address, "port": port}

    @staticmethod
    def _cluster_ports(argv, ray):
        """The TCP ports a replica node listens on for its peers (open only to replica members)."""
        def port(flag, default):
            value = str(flag_value(argv, flag, default))
            return int(value) if value.isdigit() else None

        ports = []
        if ray:
            ports.append({"port": ray["port"], "purpose": "Ray GCS"})
        nnodes = flag_value(argv, "--nnodes")
        if nnodes and str(nnodes).isdigit() and int(nnodes) > 1:
            ports.append({"port": port("--master-port", DEFAULT_MASTER_PORT),
                          "purpose": "torch.distributed master (--master-port)"})
        if flag_value(argv, "--data-parallel-address") is not None:
            ports.append({"port": port("--data-parallel-rpc-port", DEFAULT_DP_RPC_PORT),
                          "purpose": "data-parallel RPC (--data-parallel-rpc-port)"})
            ports.append({"port": DEFAULT_DP_MASTER_PORT, "purpose": "data-parallel master (data_parallel_master_port)"})
        return [p for p in ports if p["port"] is not None]

    # ------------------------------------------------------------------ whole-inventory checks
    def check(self, hosts):
        """Plan every host and collect every problem: (plans, problems)."""
        plans = {}
        problems = []
        for host in hosts:
            try:
                plans[host] = self.plan(host)
            except FleetError as exc:
                problems.extend(p for p in exc.problems if p not in problems)
            except RecipeError as exc:
                msg = "host %s: %s" % (host, exc)
                if msg not in problems:
                    problems.append(msg)
        for host, plan in plans.items():
            problems.extend(self._semantic_checks(host, plan))
        return plans, unique(problems)

    def _semantic_checks(self, host, plan):
        out = []
        hv = self.vars(host)
        catalog = self.catalog(hv)
        resolver = Resolver(catalog)
        recipe = catalog.recipe(plan["recipe"])
        variant = recipe["variants"][plan["variant"]]
        hw = resolver.hardware(plan["hardware"], plan["gpu_count"])
        where = "host %s (%s %s on %s)" % (host, plan["recipe"], plan["variant"], hw.id)
        if not resolver.precision_ok(variant, hw):
            ph = variant.get("precision_hardware") or {}
            need = "%s %s" % (ph.get("brand") or "NVIDIA", ph.get("generation") or "blackwell") if ph or \
                str(variant.get("precision")).lower() in ("nvfp4", "fp4") else "other hardware"
            out.append("%s: precision %s needs %s, but %s is %s %s" % (where, variant.get("precision"), need, hw.id, hw.brand, hw.generation))
        if not hw.scalable and not resolver.fits_single_node(variant, hw):
            fit = resolver.pick_fitting_variant(recipe, hw)
            out.append("%s: variant %s needs %s GB but %s has %s GB and cannot scale out%s" % (
                where, plan["variant"], variant.get("vram_minimum_gb"), hw.id, hw.vram_gb,
                "; a variant that fits: %s" % fit if fit else ""))
        offered = resolver.compatible_strategies(recipe, variant, hw)
        if plan["strategy"] not in offered:
            out.append("%s: strategy %s is not offered on %s; valid: %s" % (where, plan["strategy"], hw.id, ", ".join(offered) or "none"))
        floor = resolver.min_gpus(recipe, plan["strategy"], hw.id)
        if plan["deploy_type"] == "multi_node" and plan["node_count"] * hw.gpu_count < floor:
            out.append("%s: replica %s has %d nodes x %d GPUs but %s needs at least %d GPUs (strategy_min_gpus)" % (
                where, plan["replica"], plan["node_count"], hw.gpu_count, plan["strategy"], floor))
        if plan["deploy_type"] == "multi_node" and hw.generation == "xpu":
            out.append("%s: Intel XPU runs single-node only" % where)
        if plan["pools"]:
            for role, info in plan["pools"].items():
                if info["pool_gpus"] == 0:
                    out.append("%s: pd_cluster %s pool has no GPU" % (where, role))
                elif info["parallelism"] == "dep" and info["nodes"] == 0 and info["dp_size"] > info["pool_gpus"]:
                    out.append("%s: pd_cluster %s pool DP size %d exceeds its %d GPUs" % (where, role, info["dp_size"], info["pool_gpus"]))
        if plan["deploy_type"] == "multi_node" and plan["role"] in ("head", "worker") and "IFACE_NAME" in plan["unbound_placeholders"]:
            out.append("host %s: replica %s needs vllm_cluster_interface (the NIC for NCCL/GLOO, e.g. ens1f0)" % (host, plan["replica"]))
        if plan["unbound_placeholders"] and "IFACE_NAME" not in plan["unbound_placeholders"]:
            out.append("host %s: unbound placeholders %s" % (host, ", ".join("$" + p for p in plan["unbound_placeholders"])))
        out.extend(self.gpu_fact_problems(host, plan, variant))
        if plan["role"] != "router":
            out.extend("%s: %s" % (where, p) for p in flag_problems(plan))
        return out


def flag_problems(plan):
    """Rendered flags the target vLLM version would reject (empty if none)."""
    try:
        from . import vllm_flags
    except ImportError:  # pragma: no cover - vllm_flags ships with the collection
        return []
    version, _reason = vllm_flags.select_version(image=plan["image"], version=plan.get("vllm_version"))
    return vllm_flags.check_args(plan["argv"], version)


def recipe_view(plan):
    """(argv, env) of a host plan without the fleet's multi-node additions (provenance
    ``replica: ...``): what the recipe alone renders, bound to the inventory's addresses."""
    added = set()
    for item in plan.get("args_provenance") or []:
        if item["source"].startswith("replica: "):
            added.add(tuple(item["arg"]))
    argv = list(plan["argv"])
    for toks in added:
        for i in range(len(argv) - len(toks) + 1):
            if tuple(argv[i:i + len(toks)]) == toks:
                del argv[i:i + len(toks)]
                break
    env = {}
    for key, value in plan["env"].items():
        prov = (plan.get("env_provenance") or {}).get(key) or {}
        if prov.get("source", "").startswith("replica: "):
            if prov.get("replaced"):
                env[key] = prov["replaced"][0]["value"]
            continue
        env[key] = value
    return argv, env


def fleet_hosts(hostvars, hosts):
    """The hosts of ``hosts`` that serve vLLM (have vllm_recipe or vllm_pd_role=router)."""
    return [h for h in hosts if (hostvars.get(h) or {}).get("vllm_recipe")]


__all__ = ["Fleet", "FleetError", "bind", "flag_value", "strip_flags", "served_names", "flag_problems", "fleet_hosts", "recipe_view", "VARS", "_unknown"]
