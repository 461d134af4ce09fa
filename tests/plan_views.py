# -*- coding: utf-8 -*-
"""Views of host plans for tests (``tests/`` is on sys.path through tests/conftest.py).

Used by tests/unit/plugins/module_utils/test_fleet.py, tests/unit/plugins/module_utils/test_replica_runtime.py and
tests/integration/test_plan_playbook.py.
"""

from __future__ import annotations


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
    """The hosts of ``hosts`` that serve vLLM (have vllm_recipe)."""
    return [h for h in hosts if (hostvars.get(h) or {}).get("vllm_recipe")]
