# -*- coding: utf-8 -*-
"""Fleet preflight judges the facts the resolver reports (Resolver.check_facts): one home per check."""

from __future__ import annotations

from ansible_collections.llmfleet.vllm.plugins.module_utils.fleet import Fleet

SEED = "Qwen/Qwen3.6-35B-A3B"


def test_pd_pool_facts_are_preflight_problems():
    hv = {"h1": {"vllm_recipe": SEED, "vllm_hardware": "h200", "ansible_host": "192.0.2.1"}}
    fleet = Fleet(hv, {"all": ["h1"]})
    plan = dict(fleet.plan("h1"))
    assert fleet._semantic_checks("h1", plan) == []
    # co-located pools as a one-GPU node would give them: prefill gets no GPU, decode's DP size exceeds its GPUs
    plan["pools"] = {"prefill": {"nodes": 0, "pool_gpus": 0, "parallelism": "dep", "dp_size": 1},
                     "decode": {"nodes": 0, "pool_gpus": 4, "parallelism": "dep", "dp_size": 8}}
    where = "host h1 (%s default on h200)" % SEED
    assert fleet._semantic_checks("h1", plan) == [
        where + ": pd_cluster prefill pool has no GPU",  # and no DP-size problem on top of it
        where + ": pd_cluster decode pool DP size 8 exceeds its 4 GPUs"]
