# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmfleet contributors
# Apache License 2.0 (see LICENSE)
"""One host's plan from its resolved deployment, and what a multi-node replica adds to it.

``fleet.py`` reads the inventory, finds a host's replica and has the resolver resolve the
deployment; this module does the rest:

* :func:`layout`: where a host stands in its replica, by rank (``mp``/``ray``) or in the PD pools,
  and the values of the placeholders (``$HEAD_IP``, ``$PREFILL_NODE_1``, ``$ROUTER_PORT``, ...);
* :func:`assemble`: the host plan (what the ``llmfleet.vllm.recipe`` lookup returns): the node's
  argv and env with the placeholders bound; on a node of a multi-node replica also what vLLM needs
  beyond the recipe (provenance ``replica: ...``): ``VLLM_HOST_IP``, the ``mp`` backend on ROCm,
  InfiniBand, Ray mode; and the ports the replica's peers rendezvous on; on any node the GPUs
  ``vllm_gpu_ids`` selects (the brand's visibility env, provenance ``inventory: vllm_gpu_ids``, and
  NVIDIA's container flags).

A single host is planned the same way, as a replica of one without the additions.

Pure Python: no Ansible imports.
"""

from __future__ import annotations

import json
import re

from .argv import flag_value, strip_flags
from .inventory_vars import PD_ROLES, REPLICA_SHARED, FleetError, default_of, gpu_ids_of
from .render import docker_gpu_selection, format_command, format_router

#: Strategies whose replicas may run on Ray (one vLLM engine spread over the Ray cluster).
RAY_STRATEGIES = ("multi_node_tp", "multi_node_tp_pp", "multi_node_tep")
#: vLLM's default rendezvous ports (vllm/config/parallel.py, the same in 0.17-0.33).
DEFAULT_MASTER_PORT = 29501
DEFAULT_DP_RPC_PORT = 29550
DEFAULT_DP_MASTER_PORT = 29500
DEFAULT_RAY_PORT = default_of("vllm_ray_port")
DEFAULT_PORT = default_of("vllm_port")
#: The API ports of the PD pools (vllm_port does not apply there).
PD_PORTS = {"prefill": 8001, "decode": 8002}
PLACEHOLDER = re.compile(r"\$([A-Z_][A-Z0-9_]*)")
#: The env that makes only the selected GPUs visible, per hardware brand. AMD: ROCR_VISIBLE_DEVICES
#: masks at the lowest level (ROCr) and is honoured by everything above it; HIP_VISIBLE_DEVICES is
#: not set as well, because its indices count the devices ROCr left visible, not the machine's.
#: Intel: the Level Zero affinity mask.
VISIBILITY_ENV = {"nvidia": "CUDA_VISIBLE_DEVICES", "amd": "ROCR_VISIBLE_DEVICES", "intel": "ZE_AFFINITY_MASK"}


def bind(text, mapping):
    """Replace ``$NAME`` placeholders (whole identifiers) that ``mapping`` knows."""
    if "$" not in text:
        return text
    return PLACEHOLDER.sub(lambda m: str(mapping[m.group(1)]) if m.group(1) in mapping else m.group(0), text)


def visibility_env(host, brand_key, ids):
    """(env name, value) that makes only GPUs ``ids`` visible on hardware of ``brand_key``."""
    name = VISIBILITY_ENV.get(brand_key)
    if name is None:
        raise FleetError(["host %s: vllm_gpu_ids=%s selects GPUs on NVIDIA, AMD or Intel hardware; the host's hardware "
                          "is %s (unset vllm_gpu_ids)" % (host, json.dumps(ids), brand_key)])
    return name, ",".join(str(i) for i in ids)


def set_env(env, env_prov, key, value, why, layer="replica"):
    """Set ``env[key]`` with provenance ``<layer>: <why>``, recording a value it replaces."""
    old = env.get(key)
    rec = {"source": "%s: %s" % (layer, why)}
    if old is not None and old != value:
        rec["replaced"] = [{"value": old, "source": env_prov.get(key, {}).get("source", "")}]
    env[key] = value
    env_prov[key] = rec


# ---------------------------------------------------------------------- a replica's layout
def disagreements(replica, members, vars_of):
    """The variables that must be the same on every member of ``replica`` and are not."""
    problems = []
    for key in REPLICA_SHARED:
        values = dict((m, vars_of(m).get(key)) for m in members)
        if len(set(json.dumps(v, sort_keys=True, default=str) for v in values.values())) > 1:
            problems.append("replica %s: members disagree on %s (%s); every member of a replica must run the same "
                            "deployment" % (replica, key, ", ".join("%s=%s" % (m, json.dumps(v, default=str)) for m, v in sorted(values.items()))))
    return problems


def ranked(hosts, vars_of):
    """Order by explicit vllm_node_rank, else by inventory hostname."""
    explicit = [h for h in hosts if vars_of(h).get("vllm_node_rank") is not None]
    if explicit and len(explicit) != len(hosts):
        raise FleetError(["replica members %s set vllm_node_rank but %s do not: set it on every member or on none"
                          % (", ".join(sorted(explicit)), ", ".join(sorted(set(hosts) - set(explicit))))])
    if explicit:
        ranks = sorted((vars_of(h)["vllm_node_rank"], h) for h in hosts)
        seen = [r for r, _h in ranks]
        if seen != list(range(len(hosts))):
            raise FleetError(["replica members have vllm_node_rank %s; expected each of 0..%d exactly once (%s)"
                              % (seen, len(hosts) - 1, ", ".join("%s=%s" % (h, r) for r, h in ranks))])
        return [h for _r, h in ranks]
    return sorted(hosts)


def layout(replica, host, members, pd_cluster, vars_of, address):
    """Where ``host`` stands in ``replica``: a dict with ``role``, ``rank``, ``members`` (by rank, or
    the prefill, decode and router pools in turn), ``bindings`` (placeholder -> value) and ``resolve``
    (the resolver's ``node_count``, and ``pd_nodes`` in a ``pd_cluster``)."""
    if pd_cluster:
        place = _pd_layout(replica, host, members, vars_of, address)
    else:
        ordered = ranked(members, vars_of)
        rank = ordered.index(host)
        place = {"role": "head" if rank == 0 else "worker", "rank": rank, "members": ordered,
                 "bindings": {"HEAD_IP": address(ordered[0])}, "resolve": {"node_count": len(ordered)}}
    iface = vars_of(host).get("vllm_cluster_interface")
    if iface:
        place["bindings"]["IFACE_NAME"] = iface
    return place


def _pd_layout(replica, host, members, vars_of, address):
    pd_roles = dict((m, vars_of(m).get("vllm_pd_role")) for m in members)
    missing = sorted(m for m, r in pd_roles.items() if r is None)
    if missing:
        raise FleetError(["replica %s (pd_cluster): %s set no vllm_pd_role; each member is one of %s"
                          % (replica, ", ".join(missing), ", ".join(PD_ROLES))])
    pools = dict((r, ranked([m for m in members if pd_roles[m] == r], vars_of)) for r in PD_ROLES)
    for role in ("prefill", "decode"):
        if not pools[role]:
            raise FleetError(["replica %s (pd_cluster): no member has vllm_pd_role=%s" % (replica, role)])
    if len(pools["router"]) != 1:
        raise FleetError(["replica %s (pd_cluster): expected exactly one member with vllm_pd_role=router, found %d"
                          % (replica, len(pools["router"]))])
    bindings = {}
    for role in ("prefill", "decode"):
        for i, m in enumerate(pools[role]):
            bindings["%s_NODE_%d" % (role.upper(), i + 1)] = address(m)
        bindings["%s_DP_RPC_PORT" % role.upper()] = str(vars_of(pools[role][0]).get("vllm_pd_dp_rpc_port")
                                                        or default_of("vllm_pd_dp_rpc_port"))
    router = pools["router"][0]
    bindings["ROUTER_HOST"] = address(router)
    bindings["ROUTER_PORT"] = str(vars_of(router).get("vllm_router_port") or default_of("vllm_router_port"))
    role = pd_roles[host]
    return {"role": role, "rank": pools[role].index(host), "members": pools["prefill"] + pools["decode"] + pools["router"],
            "bindings": bindings, "resolve": {"node_count": len(pools["prefill"]) + len(pools["decode"]),
                                              "pd_nodes": {"prefill": len(pools["prefill"]), "decode": len(pools["decode"])}}}


def node_of(dep, place, pd_cluster):
    """The resolved node (argv, env, provenance) that ``place`` (see :func:`layout`) runs."""
    if place["role"] == "router":
        return {"role": "router", "rank": 0, "argv": dep["router"]["argv"], "env": {}, "args_provenance": [],
                "env_provenance": {}}
    if pd_cluster:
        return next(n for n in dep["nodes"] if n["role"] == place["role"] and n["rank"] == place["rank"])
    return dep["nodes"][place["rank"]]


def host_extras(hv, names, role):
    """The argv a host's inventory appends: vllm_extra_args, the served model names, vllm_port."""
    extra = list(hv.get("vllm_extra_args") or [])
    if names:
        extra += ["--served-model-name"] + names
    port = hv.get("vllm_port")
    if port and role not in PD_PORTS and role != "router" and port != DEFAULT_PORT:
        extra += ["--port", str(port)]
    return extra


def api_port(hv, role):
    """The port a node answers the API on."""
    if role in PD_PORTS:
        return PD_PORTS[role]
    if role == "router":
        return int(hv.get("vllm_router_port") or default_of("vllm_router_port"))
    return int(hv.get("vllm_port") or DEFAULT_PORT)


# ---------------------------------------------------------------------- the host plan
def assemble(host, hv, dep, node, replica, members, bindings, names, address, brand_key=None, detected_hcas=None):
    """The plan of ``host``: ``node`` of the deployment ``dep`` with ``bindings`` bound.

    ``replica``: its group (None for a single host); ``members``: the replica's hosts in order;
    ``names``: the served model names; ``address``: host -> cluster address; ``brand_key`` and
    ``detected_hcas``: the hardware brand and the detected InfiniBand HCAs of a replica node.
    """
    argv = [bind(t, bindings) for t in node["argv"]]
    env = dict((k, bind(v, bindings)) for k, v in node["env"].items())
    args_prov = [dict(p, arg=[bind(t, bindings) for t in p["arg"]]) for p in node["args_provenance"]]
    env_prov = dict(node["env_provenance"])
    role = node["role"]
    container_args = []
    ray = None
    replica_node = replica is not None and role != "router"  # a rank of a multi-node replica or PD pool
    backend = (hv.get("vllm_multinode_backend") or default_of("vllm_multinode_backend")) if replica_node else None
    gpu_ids = gpu_ids_of(hv) if role != "router" else None
    gpu_flags = list(dep["docker_gpu_flags"])
    if gpu_ids is not None:
        gpu_flags = _select_gpus(host, hv, brand_key, gpu_ids, gpu_flags, env, env_prov)
    if replica_node:
        _replica_runtime(str(address(host)), hv, brand_key, detected_hcas, argv, env, args_prov, env_prov, container_args)
        if backend == "ray":
            argv, ray = _ray_mode(host, hv, dep, role, argv, env, args_prov, env_prov, members, address)
    unbound = sorted(set(m.group(1) for t in list(argv) + list(env.values()) for m in PLACEHOLDER.finditer(t)))
    if role == "router":
        command = format_router(argv)
    elif argv:
        command = format_command(argv)
    else:  # a Ray worker runs no vLLM process of its own
        command = ""
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
        "image": hv.get("vllm_image") or dep["image"],
        "image_source": "inventory (vllm_image)" if hv.get("vllm_image") else dep["image_source"],
        "docker_gpu_flags": gpu_flags,
        "gpu_ids": gpu_ids,
        "port": api_port(hv, role),
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
        "cluster_ports": cluster_ports(argv, ray) if replica_node else [],
        "member_addresses": [str(address(m)) for m in members] if replica is not None else [],
        "pools": dep["pools"],
        "warnings": list(dep["warnings"]),
        "notes": list(dep["notes"]),
    }


def _select_gpus(host, hv, brand_key, ids, gpu_flags, env, env_prov):
    """``vllm_gpu_ids``: the brand's device visibility in the env (provenance ``inventory:
    vllm_gpu_ids``) and, on NVIDIA, the container flags selecting those GPUs (``--gpus
    '"device=0,1"'``). AMD and Intel containers get every ``/dev/dri`` node and select with the env.
    Returns the container GPU flags."""
    name, value = visibility_env(host, brand_key, ids)
    given = (hv.get("vllm_extra_env") or {}).get(name)
    if given is not None and str(given) != value:
        raise FleetError(["host %s: vllm_extra_env sets %s=%s but vllm_gpu_ids=%s selects %s; set only vllm_gpu_ids"
                          % (host, name, given, json.dumps(ids), value)])
    set_env(env, env_prov, name, value, "vllm_gpu_ids", layer="inventory")
    return docker_gpu_selection(gpu_flags, ids)


def _replica_runtime(me, hv, brand_key, detected_hcas, argv, env, args_prov, env_prov, container_args):
    """What a node of a multi-node replica needs beyond the recipe (provenance ``replica: ...``).

    * ``VLLM_HOST_IP``: the node's own cluster address ``me``, so vLLM does not guess the NIC;
    * ``--distributed-executor-backend mp`` where vLLM would not pick it itself (ROCm);
    * InfiniBand (``vllm_infiniband_hca``, else the detected HCAs): ``NCCL_IB_HCA`` and the RDMA container flags.
    """
    set_env(env, env_prov, "VLLM_HOST_IP", me, "this node's vllm_cluster_address")
    if brand_key == "amd" and "--distributed-executor-backend" not in argv:
        toks = ["--distributed-executor-backend", "mp"]
        argv.extend(toks)
        args_prov.append({"arg": toks, "source": "replica: explicit mp backend (vLLM on ROCm would not pick it)"})
    hca = hv.get("vllm_infiniband_hca")
    why = "vllm_infiniband_hca"
    if hca is None:
        hca = detected_hcas
        why = "InfiniBand HCAs detected on the host"
    if hca:
        set_env(env, env_prov, "NCCL_IB_HCA", hca if isinstance(hca, str) else ",".join(hca), why)
        container_args.extend(["--device", "/dev/infiniband", "--cap-add", "IPC_LOCK", "--ulimit", "memlock=-1:-1"])


def _ray_mode(host, hv, dep, role, argv, env, args_prov, env_prov, members, address):
    """A TP / TP x PP / TEP replica on Ray: ``ray start`` on every node, and one vLLM
    process, on the head, with ``--distributed-executor-backend ray`` (provenance
    ``replica: ray mode``). Returns (argv, ray): a worker's argv is empty."""
    if dep["strategy"] not in RAY_STRATEGIES:
        raise FleetError(["host %s: vllm_multinode_backend=ray supports strategies %s; strategy %s runs with mp only "
                          "(unset vllm_multinode_backend or set it to mp)" % (host, ", ".join(RAY_STRATEGIES), dep["strategy"])])
    head = members[0]
    port = int(hv.get("vllm_ray_port") or DEFAULT_RAY_PORT)
    ray_address = "%s:%d" % (address(head), port)
    me = str(address(host))
    gpus = str(dep["gpu_count"])
    if role == "head":
        ray_argv = ["ray", "start", "--head", "--port", str(port), "--node-ip-address", me, "--num-gpus", gpus,
                    "--disable-usage-stats", "--block"]
    else:
        ray_argv = ["ray", "start", "--address", ray_address, "--node-ip-address", me, "--num-gpus", gpus, "--block"]
    mp_only = ("--nnodes", "--node-rank", "--master-addr", "--master-port", "--distributed-executor-backend")
    if role != "head":
        for item in args_prov:
            item["arg"] = []
        return [], {"role": "worker", "argv": ray_argv, "address": ray_address, "port": port}
    out = strip_flags(argv, mp_only, ("--headless",))
    for item in args_prov:
        item["arg"] = strip_flags(item["arg"], mp_only, ("--headless",))
    toks = ["--distributed-executor-backend", "ray"]
    out.extend(toks)
    args_prov.append({"arg": toks, "source": "replica: ray mode (one engine over the Ray cluster; --nnodes, "
                                             "--node-rank and --master-addr dropped)"})
    set_env(env, env_prov, "RAY_ADDRESS", ray_address, "ray mode (the head's Ray GCS)")
    return out, {"role": "head", "argv": ray_argv, "address": ray_address, "port": port}


def cluster_ports(argv, ray):
    """The TCP ports a replica node listens on for its peers (open only to replica members)."""
    def port(flag, fallback):
        value = str(flag_value(argv, flag, fallback))
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
