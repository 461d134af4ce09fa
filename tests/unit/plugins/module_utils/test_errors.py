# -*- coding: utf-8 -*-
"""errors.py: the one issue class (a recipe-tree file's issue or an argv's) and the "unknown id" message.

tests/unit/plugins/module_utils/test_recipe_schema.py and test_vllm_flags.py cover the issues their checks produce.
"""

from __future__ import annotations

import json

from ansible_collections.llmfleet.vllm.plugins.module_utils import catalog, vllm_flags
from ansible_collections.llmfleet.vllm.plugins.module_utils.errors import (
    RecipeValidationError, ValidationIssue, _unknown)


def test_a_file_issue_names_severity_file_and_path():
    issue = ValidationIssue("/t/taxonomy.yaml", "hardware_profiles.h200.gpu_count", "expected a positive integer")
    assert str(issue) == "error: /t/taxonomy.yaml: hardware_profiles.h200.gpu_count: expected a positive integer"
    assert issue.as_dict() == {"file": "/t/taxonomy.yaml", "path": "hardware_profiles.h200.gpu_count",
                               "message": "expected a positive integer", "severity": "error"}
    assert str(ValidationIssue("/t/x.yaml", "", "not valid YAML", "warning")) == "warning: /t/x.yaml: not valid YAML"
    assert issue.flag is None and issue.code is None and issue.version is None
    assert str(RecipeValidationError([issue, issue])) == "\n".join([str(issue)] * 2)


def test_an_argv_issue_is_its_message():
    issue = ValidationIssue.in_argv("--bogus", "unknown", "vLLM 0.28.0: unknown flag --bogus", "0.28.0")
    assert str(issue) == issue.message == "vLLM 0.28.0: unknown flag --bogus"
    assert issue.as_dict() == {"flag": "--bogus", "code": "unknown", "message": issue.message, "version": "0.28.0"}
    assert issue.severity == "error" and issue.file is None and issue.path == ""
    json.dumps(issue.as_dict())


def test_issues_compare_by_value():
    a = ValidationIssue.in_argv("--x", "unknown", "m", "0.28.0")
    assert a == ValidationIssue.in_argv("--x", "unknown", "m", "0.28.0") and hash(a) == hash(ValidationIssue.in_argv("--x", "unknown", "m", "0.28.0"))
    assert a != ValidationIssue.in_argv("--x", "unknown", "m", "0.17.0")
    assert ValidationIssue("f", "p", "m") == ValidationIssue("f", "p", "m") != ValidationIssue("f", "p", "m", "warning")
    assert len({ValidationIssue("f", "p", "m"), ValidationIssue("f", "p", "m")}) == 1


def test_flag_problems_are_validation_issues():
    probs = vllm_flags.find_problems(["--bogus"], "0.28.0")
    assert [type(p) for p in probs] == [ValidationIssue] and probs[0].flag == "--bogus"


def test_unknown_lists_close_matches_and_at_most_40_choices():
    assert _unknown("strategy", "single_node_pt", ["single_node_tp", "pd_cluster"]) == \
        "unknown strategy 'single_node_pt' (did you mean single_node_tp?); valid: pd_cluster, single_node_tp"
    msg = _unknown("recipe", "zzz", ["r%02d" % i for i in range(45)], where=" in /t")
    assert msg.startswith("unknown recipe 'zzz' in /t; valid: r00, ") and msg.endswith("r39, ... 5 more")
    assert catalog._unknown is _unknown  # importable from the catalog, which uses it too
