# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmfleet contributors
# Apache License 2.0 (see LICENSE)
"""From inventory to per-host plans.

:class:`Fleet` reads the hosts' inventory variables (the table in ``inventory_vars.py`` names,
types and explains each), finds each host's replica, has the resolver resolve the deployment,
and checks the whole inventory (:meth:`Fleet.check`). Laying out a replica and assembling a host's
plan from the resolved deployment (placeholders, ``VLLM_HOST_IP``, InfiniBand, Ray mode, cluster
ports) is ``replica.py``'s.

Pure Python: no Ansible imports.
"""

from __future__ import annotations

import json

from .catalog import get_catalog
from .errors import RecipeError
from .inventory_vars import FleetError, type_problems
from . import preflight
from .machines import check_machines, gpu_count_of, with_idle_warning
from .replica import assemble, disagreements, host_extras, layout, node_of
from .resolver import Resolver, unique
from . import vllm_flags


def served_names(value):
    """The served model names of a ``vllm_served_model_name`` value, canonical name first."""
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [value["name"]] + [a for a in (value.get("aliases") or []) if a != value["name"]]
    return list(value)


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

    # ------------------------------------------------------------------ planning
    def plan(self, host):
        """The plan of one host (raises FleetError / RecipeError on bad input)."""
        hv = self.vars(host)
        problems = type_problems(host, hv)
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
        gpu_count = gpu_count_of(host, hv, gpu_count)  # vllm_gpu_ids sets the count
        names = served_names(hv.get("vllm_served_model_name"))
        kwargs = dict(recipe_id=hv["vllm_recipe"], variant=hv.get("vllm_variant"), hardware=hardware,
                      strategy=hv.get("vllm_strategy"), features=_features_arg(hv.get("vllm_features")),
                      feature_modes=hv.get("vllm_feature_modes"), kv_offload=hv.get("vllm_kv_offload"),
                      advanced=hv.get("vllm_advanced"), gpu_count=gpu_count)
        return catalog, kwargs, names

    def _resolve(self, catalog, kwargs, extra_args=None, extra_env=None):
        key = json.dumps([catalog.paths, kwargs, extra_args, extra_env], sort_keys=True, default=str)
        dep = self._deployments.get(key)
        if dep is None:
            dep = Resolver(catalog).resolve(extra_args=extra_args, extra_env=extra_env, **kwargs)
            self._deployments[key] = dep
        return dep

    def _single(self, host, hv):
        catalog, kwargs, names = self._inputs(host, hv)
        sel = Resolver(catalog).select(kwargs["recipe_id"], kwargs["variant"], kwargs["hardware"], kwargs["strategy"],
                                       None, kwargs["gpu_count"])
        strat = catalog.strategies[sel["strategy"]]
        if strat.get("deploy_type") != "single_node":
            raise FleetError(["host %s: strategy %s spans several nodes: put the host in an inventory group and set "
                              "vllm_replica to that group's name" % (host, sel["strategy"])] + self._single_fit(host, hv, catalog, kwargs, sel))
        kwargs.update(variant=sel["variant"], strategy=sel["strategy"], node_count=1)
        dep = self._resolve(catalog, kwargs, host_extras(hv, names, "single"), hv.get("vllm_extra_env"))
        return self._assemble(host, hv, dep, dep["nodes"][0], None, [host], {}, names)

    def _single_fit(self, host, hv, catalog, kwargs, sel):
        """Why a single host got a multi-node strategy: its variant does not fit its GPUs (or nothing)."""
        resolver = Resolver(catalog)
        recipe = catalog.recipe(kwargs["recipe_id"])
        hw = resolver.hardware(kwargs["hardware"], kwargs["gpu_count"])
        _gpus, why = preflight.real_gpu_count(hv, self.facts.get(host), {"gpu_count": hw.gpu_count, "hardware": hw.id})
        where = "host %s (%s %s on %s)" % (host, kwargs["recipe_id"], sel["variant"], hw.id)
        return preflight.vram_problems(where, {"deploy_type": "single_node", "variant": sel["variant"], "node_count": 1},
                                       recipe["variants"][sel["variant"]], hw, why, resolver.pick_fitting_variant(recipe, hw))

    def _replica_plan(self, host, hv, replica, members):
        problems = disagreements(replica, members, self.vars)
        if problems:
            raise FleetError(problems)
        catalog, kwargs, names = self._inputs(host, hv)
        resolver = Resolver(catalog)
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
        pd_cluster = dtype == "pd_cluster"
        place = layout(replica, host, members, pd_cluster, self.vars, self.address)
        kwargs.update(place["resolve"])
        dep = self._resolve(catalog, kwargs, host_extras(hv, names, place["role"]), hv.get("vllm_extra_env"))
        return self._assemble(host, hv, dep, node_of(dep, place, pd_cluster), replica, place["members"], place["bindings"], names)

    def _assemble(self, host, hv, dep, node, replica, members, bindings, names):
        brand_key = detected_hcas = None
        if (replica is not None or hv.get("vllm_gpu_ids") is not None) and node["role"] != "router":
            brand_key = Resolver(self.catalog(hv)).hardware(dep["hardware"], dep["gpu_count"]).brand_key
            detected_hcas = (self.facts.get(host) or {}).get("infiniband_hcas")
        plan = assemble(host, hv, dep, node, replica, members, bindings, names, self.address, brand_key, detected_hcas)
        return with_idle_warning(plan, hv, self.facts.get(host))

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
                msg = str(exc) if isinstance(exc, ImportError) else "host %s: %s" % (host, exc)  # a missing library: once
                if msg not in problems:
                    problems.append(msg)
            problems.extend(preflight.input_problems(host, self.hostvars.get(host) or {}))
        for host, plan in plans.items():
            problems.extend(self._semantic_checks(host, plan))
        problems.extend(check_machines(plans, self.vars, self.facts))  # services sharing one machine
        secrets = [v for host in hosts for v in preflight.host_secrets(self.hostvars.get(host) or {})]
        return plans, unique(preflight.redact(problems, secrets))  # no message carries a secret value

    def _semantic_checks(self, host, plan):
        out = []
        hv = self.vars(host)
        catalog = self.catalog(hv)
        resolver = Resolver(catalog)
        recipe = catalog.recipe(plan["recipe"])
        variant = recipe["variants"][plan["variant"]]
        hw = resolver.hardware(plan["hardware"], plan["gpu_count"])
        where = "host %s (%s %s on %s)" % (host, plan["recipe"], plan["variant"], hw.id)
        # what the resolver found (it warns about each); here precision, VRAM fit and PD pool sizes are errors
        facts = resolver.check_facts(plan["recipe"], recipe, plan["variant"], hw, plan["pools"])

        def found(check, role=None):
            return next((f for f in facts if f["check"] == check and (role is None or f["role"] == role)), None)

        fact = found("precision")
        if fact:
            out.append("%s: precision %s needs %s %s, but %s is %s %s" % (
                where, fact["precision"], fact["needs_brand"] or "NVIDIA", fact["needs_generation"] or "blackwell",
                fact["hardware"], fact["brand"], fact["generation"]))
        fact = found("vram_fit")
        if fact:
            out.append("%s: variant %s needs %s GB but %s has %s GB and cannot scale out%s" % (
                where, fact["variant"], fact["vram_minimum_gb"], fact["hardware"], fact["vram_gb"],
                "; a variant that fits: %s" % fact["fitting_variant"] if fact["fitting_variant"] else ""))
        offered = resolver.compatible_strategies(recipe, variant, hw)
        if plan["strategy"] not in offered:
            out.append("%s: strategy %s is not offered on %s; valid: %s" % (where, plan["strategy"], hw.id, ", ".join(offered) or "none"))
        floor = resolver.min_gpus(recipe, plan["strategy"], hw.id)
        if plan["deploy_type"] == "multi_node" and plan["node_count"] * hw.gpu_count < floor:
            out.append("%s: replica %s has %d nodes x %d GPUs but %s needs at least %d GPUs (strategy_min_gpus)" % (
                where, plan["replica"], plan["node_count"], hw.gpu_count, plan["strategy"], floor))
        if plan["deploy_type"] == "multi_node" and hw.generation == "xpu":
            out.append("%s: Intel XPU runs single-node only" % where)
        for role in plan["pools"] or ():
            fact = found("pd_pool_dp_size", role)
            if found("pd_pool_without_gpu", role):
                out.append("%s: pd_cluster %s pool has no GPU" % (where, role))
            elif fact:
                out.append("%s: pd_cluster %s pool DP size %d exceeds its %d GPUs" % (where, role, fact["dp_size"], fact["pool_gpus"]))
        if plan["deploy_type"] == "multi_node" and plan["role"] in ("head", "worker") and "IFACE_NAME" in plan["unbound_placeholders"]:
            out.append("host %s: replica %s needs vllm_cluster_interface (the NIC for NCCL/GLOO, e.g. ens1f0)" % (host, plan["replica"]))
        if plan["unbound_placeholders"] and "IFACE_NAME" not in plan["unbound_placeholders"]:
            out.append("host %s: unbound placeholders %s" % (host, ", ".join("$" + p for p in plan["unbound_placeholders"])))
        out.extend(self.gpu_fact_problems(host, plan, variant))
        out.extend(self._plan_problems(host, plan, hv, resolver, recipe, variant, where, vram_reported=bool(found("vram_fit"))))
        if plan["role"] != "router":
            out.extend("%s: %s" % (where, p) for p in flag_problems(plan))
        return out

    def _plan_problems(self, host, plan, hv, resolver, recipe, variant, where, vram_reported):
        """Ports, vLLM version, GPU capacity on the host's real GPU count, replica addresses."""
        out = preflight.port_problems(host, plan) + preflight.version_problems(host, plan, hv)
        if plan["role"] != "router":
            gpus, why = preflight.real_gpu_count(hv, self.facts.get(host), plan)
            hw = resolver.hardware(plan["hardware"], gpus)
            if not vram_reported:
                out.extend(preflight.vram_problems(where, plan, variant, hw, why, resolver.pick_fitting_variant(recipe, hw)))
            out.extend(preflight.parallel_problems(where, plan, gpus, why))
        out.extend(preflight.address_problems(plan, self.vars, self.address))
        return out


def flag_problems(plan):
    """Rendered flags the target vLLM version would reject (empty if none)."""
    version, _reason = vllm_flags.select_version(image=plan["image"], version=plan.get("vllm_version"))
    return vllm_flags.check_args(plan["argv"], version)


__all__ = ["Fleet", "FleetError", "served_names", "flag_problems"]
