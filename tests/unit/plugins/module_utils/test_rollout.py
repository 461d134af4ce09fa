# -*- coding: utf-8 -*-
"""rollout: Ansible's serial batching, and the replicas a limit or a batch size would split."""

from __future__ import annotations

import pytest

from ansible_collections.llmfleet.vllm.plugins.module_utils.errors import RecipeError
from ansible_collections.llmfleet.vllm.plugins.module_utils.rollout import (
    parse_serial, replica_batch_problems, serial_batches)

HOSTS = ["h%d" % i for i in range(1, 8)]


@pytest.mark.parametrize("serial, sizes", [
    ("100%", [7]),
    (3, [3, 3, 1]),
    ("3", [3, 3, 1]),
    ("50%", [3, 3, 1]),        # int(0.5 * 7) = 3
    ("10%", [1] * 7),          # at least one host
    ([1, "50%"], [1, 3, 3]),   # a list: the last size repeats
    (0, [7]),                  # 0 or less: one batch, as Ansible does
    ([], [7]),
])
def test_batches_follow_ansible_serial(serial, sizes):
    batches = serial_batches(HOSTS, serial)
    assert [len(b) for b in batches] == sizes
    assert sum(batches, []) == HOSTS


def test_batches_match_ansible_itself():
    from ansible.utils.helpers import pct_to_int
    for serial in ("1", "2", "33%", "99%", "100%"):
        assert len(serial_batches(HOSTS, serial)[0]) == pct_to_int(serial, len(HOSTS))


@pytest.mark.parametrize("bad", ["a lot", "50 percent", True, None, [2, "x"], 1.5])
def test_a_bad_serial_names_the_valid_forms(bad):
    with pytest.raises(RecipeError, match="vllm_deploy_serial=.*expected an integer .*percentage"):
        parse_serial(bad)


REPLICAS = {"tp": ["tp-a", "tp-b"], "tq": ["tq-a", "tq-b"]}
PLAY = ["tp-a", "tp-b", "tq-a", "tq-b"]


def test_whole_replicas_in_whole_batches_pass():
    assert replica_batch_problems(PLAY, REPLICAS, "100%") == []
    assert replica_batch_problems(PLAY, REPLICAS, 2) == []
    assert replica_batch_problems(PLAY + ["single"], REPLICAS, [2, 3]) == []


def test_a_batch_that_splits_a_replica_is_named():
    problems = replica_batch_problems(PLAY, REPLICAS, 3)
    assert len(problems) == 1
    assert "vllm_deploy_serial=3 (batches of 3 hosts, in inventory-name order) splits tq" in problems[0]
    assert "splits tq:" in problems[0] and "tp" not in problems[0].split("splits")[1].split(":")[0]


def test_a_limit_that_cuts_a_replica_is_named():
    problems = replica_batch_problems(["tp-a", "tq-a", "tq-b"], REPLICAS, "100%")
    assert problems == ["a multi-node replica restarts together, so it must be deployed whole. Replicas with members "
                        "left out of this run (by -l/--limit): tp: include every member (e.g. -l tp)"]
