# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmfleet contributors
# Apache License 2.0 (see LICENSE)
"""Controller-side implementation of llmfleet.vllm.fleet_plan (see plugins/modules/fleet_plan.py)."""

from __future__ import annotations

import json
import os

from ansible.plugins.action import ActionBase

from ansible_collections.llmfleet.vllm.plugins.module_utils.errors import RecipeError
from ansible_collections.llmfleet.vllm.plugins.module_utils.fleet import Fleet
from ansible_collections.llmfleet.vllm.plugins.module_utils.inventory_vars import (
    missing_recipe_problems, no_vllm_host_problems, setting_problems, unknown_name_problems)
from ansible_collections.llmfleet.vllm.plugins.module_utils.plan_report import summarize
from ansible_collections.llmfleet.vllm.plugins.module_utils.preflight import redact_plan
from ansible_collections.llmfleet.vllm.plugins.module_utils.render import explain, shell_command, shell_quote
from ansible_collections.llmfleet.vllm.plugins.module_utils.resolver import Resolver
from ansible_collections.llmfleet.vllm.plugins.module_utils.rollout import replica_batch_problems
from ansible_collections.llmfleet.vllm.plugins.plugin_utils.inventory_view import HostvarsView, to_plain

ARGSPEC = dict(
    hosts=dict(type="list", elements="str"),
    scope=dict(type="str", default="inventory", choices=["inventory", "play"]),
    dest=dict(type="path"),
    report=dict(type="bool", default=False),
    return_plans=dict(type="bool", default=True),
    fail_on_problems=dict(type="bool", default=True),
    serial=dict(type="raw"),
    max_fail_percentage=dict(type="raw"),
    plan=dict(type="bool", default=True),
)


def report_of(plan):
    """What plan.yml prints for a host (a plan redact_plan has cleaned): role, image, command lines, env,
    provenance lines."""
    role = plan["role"]
    if plan["replica"]:
        role += " rank %d of replica %s" % (plan["rank"], plan["replica"])
    return {
        "role": role,
        "image": plan["image"],
        "command": shell_command(plan).split("\n"),
        "env": plan["env"],
        "provenance": explain(plan),
    }


def plan_files(plan):
    """The files of plan/<host>/ of a plan redact_plan has cleaned: name -> text."""
    return {
        "argv.json": json.dumps(plan["argv"], indent=2) + "\n",
        "env.json": json.dumps(plan["env"], indent=2, sort_keys=True) + "\n",
        "command.sh": "#!/bin/sh\n# %s: %s %s on %s, %s (%s rank %s)\n%s%s\n" % (
            plan["host"], plan["recipe"], plan["variant"], plan["hardware"], plan["strategy"], plan["role"], plan["rank"],
            "".join("export %s=%s\n" % (k, shell_quote(v)) for k, v in sorted(plan["env"].items())), plan["command"]),
        "image.txt": plan["image"] + "\n",
        "plan.json": json.dumps(plan, indent=2, sort_keys=True) + "\n",
    }


def write_if_changed(path, text, check_mode):
    try:
        with open(path) as handle:
            if handle.read() == text:
                return False
    except (IOError, OSError):
        pass
    if not check_mode:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = path + ".tmp"
        with open(tmp, "w") as handle:
            handle.write(text)
        os.replace(tmp, path)
    return True


class ActionModule(ActionBase):

    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(ARGSPEC)
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        _validation, args = self.validate_argument_spec(argument_spec=ARGSPEC)
        task_vars = task_vars or {}
        hostvars = task_vars.get("hostvars")
        groups = to_plain(task_vars.get("groups") or {})
        hosts = args.get("hosts") or to_plain(task_vars.get("ansible_play_hosts_all") or [])
        everyone = groups.get("all") or hosts
        view = HostvarsView.from_task_vars(task_vars, self._templar.template, everyone) if hostvars is not None \
            else HostvarsView({}, everyone)
        # Validate the whole inventory (scope=inventory) so that a run limited with -l cannot
        # start while another part of the fleet is broken; plan files and the report cover the
        # play's hosts only.
        checked = everyone if args["scope"] == "inventory" else hosts
        serving = [h for h in checked if view.get(h, {}).get("vllm_recipe")]
        fleet = Fleet(view, groups, facts=view.facts())
        plans, problems = fleet.check(serving) if args["plan"] else ({}, [])
        if args["plan"]:
            problems = self._name_problems(view, checked, hosts) + problems
        if args.get("max_fail_percentage") is not None:
            problems = problems + setting_problems("vllm_deploy_max_fail_percentage", args["max_fail_percentage"])
        if args.get("serial") is not None:
            problems = problems + self._batch_problems(fleet, view, hosts, args["serial"])
        in_play = set(hosts)
        # no secret leaves the plans: the files, the report and the result all come from these
        plans = dict((h, redact_plan(p)) for h, p in plans.items() if h in in_play)
        written = []
        if args.get("dest"):
            dest = os.path.abspath(os.path.expanduser(args["dest"]))
            for host in sorted(plans):
                for name, text in sorted(plan_files(plans[host]).items()):
                    path = os.path.join(dest, host, name)
                    if write_if_changed(path, text, self._task.check_mode):
                        written.append(path)
        result.update(
            changed=bool(written),
            problems=problems,
            warnings_by_host=dict((h, p["warnings"]) for h, p in plans.items() if p["warnings"]),
            written=written,
            planned=len(plans),
            checked=len(serving) if args["plan"] else 0,
        )
        if view.warnings:
            result.setdefault("warnings", []).extend(w for w in view.warnings if w not in result["warnings"])
        if args["return_plans"]:
            result["plans"] = plans
        if args["report"]:
            result["report"] = dict((h, report_of(plans[h])) for h in sorted(plans))
            summary = summarize(plans, lambda host, hw: Resolver(fleet.catalog(fleet.vars(host))).hardware(hw).profile_gpu_count)
            result.update(summary=summary["lines"], counts=summary["counts"])
            result["_ansible_verbose_override"] = True  # -v prints the summary and report via debug, not twice
        if problems and args["fail_on_problems"]:
            result["failed"] = True
            result["msg"] = "preflight found %d problem(s) in the inventory; no host was changed:\n- %s" % (
                len(problems), "\n- ".join(problems))
        else:
            result["msg"] = "checked %d vLLM host(s), planned %d%s" % (
                result["checked"], len(plans), "; %d problem(s)" % len(problems) if problems else "")
        return result

    @staticmethod
    def _name_problems(view, checked, hosts):
        """Unknown vllm_* names, planner variables without a usable vllm_recipe, a play without a vLLM host."""
        out = unknown_name_problems(dict((h, view.names(h)) for h in checked if h in view))
        for host in checked:
            out.extend(missing_recipe_problems(host, view.get(host, {})))
        if hosts and not [h for h in hosts if view.get(h, {}).get("vllm_recipe")]:
            out.extend(no_vllm_host_problems(hosts))
        return out

    @staticmethod
    def _batch_problems(fleet, view, hosts, serial):
        """Replicas that a -l leaves incomplete, or that batches of ``serial`` split (play hosts, sorted)."""
        serving = sorted(h for h in hosts if view.get(h, {}).get("vllm_recipe"))
        replicas = {}
        try:
            for host in serving:
                name, members = fleet.replica_members(host, view[host])
                if name is not None:
                    replicas[name] = [m for m in members if view.get(m, {}).get("vllm_recipe")]
            return replica_batch_problems(serving, replicas, serial)
        except RecipeError as exc:
            return [str(exc)]
