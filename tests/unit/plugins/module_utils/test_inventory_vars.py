# -*- coding: utf-8 -*-
"""The table of inventory variables: its type checks, and the README's table and the
``llmfleet.vllm.recipe`` lookup's notes, which must name and describe every variable as it does."""

from __future__ import annotations

import ast
import json
import re

import pytest
import yaml

from ansible_collections.llmfleet.vllm.plugins.module_utils import inventory_vars as iv
from ansible_collections.llmfleet.vllm.plugins.module_utils.inventory_vars import (
    INVENTORY_VARS, NAMES, REPLICA_SHARED, FleetError, default_of, one_of, type_problems)

SECTION = "## Describing a fleet in inventory"


def readme_row(var):
    """The README's row of ``var``: | name | type | default | replica-wide | meaning |."""
    return ["`%s`" % var.name, var.kind.label, var.default_text, "yes" if var.shared else "", var.meaning]


def lookup_note(var):
    """The lookup's note on ``var``, in Ansible markup (Markdown `code` as C(code))."""
    head = var.kind.label + ("; default: %s" % var.default_text if var.default_text else "") + ("; replica-wide" if var.shared else "")
    return re.sub(r"`([^`]*)`", r"C(\1)", "`%s` (%s): %s" % (var.name, head, var.meaning))


def readme_rows(repo_root):
    text = (repo_root / "README.md").read_text()
    section = text[text.index(SECTION):]
    section = section[:section.index("\n#", len(SECTION))]  # up to its first subsection (### Plugins)
    rows = {}
    for line in section.splitlines():
        if line.startswith("| `vllm_"):
            cells = [c.strip() for c in line.strip()[1:-1].split("|")]
            rows[cells[0].strip("`")] = cells
    return rows


def lookup_notes(repo_root):
    tree = ast.parse((repo_root / "plugins" / "lookup" / "recipe.py").read_text())
    doc = next(node.value.value for node in tree.body if isinstance(node, ast.Assign)
               and any(getattr(t, "id", None) == "DOCUMENTATION" for t in node.targets))
    notes = yaml.safe_load(doc).get("notes") or []
    return dict((m.group(1), note) for note in notes for m in [re.match(r"C\((vllm_\w+)\) ", note)] if m)


def test_readme_table_is_the_table(repo_root):
    rows = readme_rows(repo_root)
    assert sorted(set(NAMES) - set(rows)) == [], "README misses these variables"
    assert sorted(set(rows) - set(NAMES)) == [], "README names variables the planner does not read"
    wrong = dict((v.name, (rows[v.name], readme_row(v))) for v in INVENTORY_VARS if rows[v.name] != readme_row(v))
    assert wrong == {}, "README rows (found, expected)"
    assert list(rows) == list(NAMES), "README rows in table order"


def test_lookup_notes_are_the_table(repo_root):
    notes = lookup_notes(repo_root)
    assert sorted(set(NAMES) - set(notes)) == [], "the recipe lookup's notes miss these variables"
    assert sorted(set(notes) - set(NAMES)) == []
    wrong = dict((v.name, (notes[v.name], lookup_note(v))) for v in INVENTORY_VARS if notes[v.name] != lookup_note(v))
    assert wrong == {}, "lookup notes (found, expected)"


def test_names_are_unique_and_shared_ones_are_table_rows():
    assert len(set(NAMES)) == len(NAMES) == len(INVENTORY_VARS)
    assert all(n.startswith("vllm_") for n in NAMES)
    assert set(REPLICA_SHARED) <= set(NAMES)
    assert [n for n in NAMES if n in REPLICA_SHARED] == list(REPLICA_SHARED)
    assert "vllm_recipe" in REPLICA_SHARED and "vllm_cluster_address" not in REPLICA_SHARED


def test_defaults():
    assert default_of("vllm_port") == 8000 and default_of("vllm_router_port") == 30000
    assert default_of("vllm_pd_dp_rpc_port") == 13345 and default_of("vllm_ray_port") == 6379
    assert default_of("vllm_multinode_backend") == "mp" and default_of("vllm_variant") is None
    by_name = dict((v.name, v) for v in INVENTORY_VARS)
    assert by_name["vllm_port"].default_text == "`8000`"
    assert by_name["vllm_kv_offload"].default_text == ""
    assert by_name["vllm_variant"].default_text == "the recipe's choice for the hardware"


def test_one_of():
    kind = one_of("a", "b", "c")
    assert kind.label == "`a`, `b` or `c`" and kind.expected == "one of a, b, c"
    assert kind.ok("b") and not kind.ok("d") and not kind.ok({"a": 1})
    assert one_of("mp", "ray").label == "`mp` or `ray`"


GOOD = {
    "vllm_recipe": "Qwen/Qwen3.6-35B-A3B", "vllm_variant": "nvfp4", "vllm_hardware": "h200", "vllm_gpu_count": 4,
    "vllm_strategy": "multi_node_tp", "vllm_features": {"reasoning": True}, "vllm_feature_modes": {"spec_decoding": "mtp"},
    "vllm_kv_offload": "simple", "vllm_advanced": ["gpu_mem_095"], "vllm_extra_args": ["--max-num-seqs", "8"],
    "vllm_extra_env": {"A": 1, "B": "x", "C": True, "D": 0.5}, "vllm_image": "vllm/vllm-openai:v0.28.0",
    "vllm_version": "v0.28.0", "vllm_port": 8080, "vllm_served_model_name": {"name": "q", "aliases": ["r"]},
    "vllm_recipes_path": ["/a", "/b"], "vllm_replica": "r", "vllm_node_rank": 0, "vllm_cluster_address": "10.0.0.1",
    "vllm_cluster_interface": "ens1f0", "vllm_pd_role": "router", "vllm_pd_dp_rpc_port": 1, "vllm_router_port": 2,
    "vllm_infiniband_hca": ["mlx5_0"], "vllm_multinode_backend": "ray", "vllm_ray_port": 3,
    "vllm_gpu_ids": [0, 1],
}


def test_good_values_pass_and_unset_ones_are_not_checked():
    assert sorted(GOOD) == sorted(NAMES)
    assert type_problems("h", GOOD) == []
    assert type_problems("h", dict((k, None) for k in NAMES)) == []
    assert type_problems("h", {"vllm_features": ["a", "b"], "vllm_recipes_path": "/a", "vllm_served_model_name": ["a", "b"]}) == []


@pytest.mark.parametrize("key, value, expectation", [
    ("vllm_cluster_interface", 3, "a non-empty string"),
    ("vllm_ray_port", "6379", "a positive integer"),
    ("vllm_node_rank", False, "an integer >= 0"),
    ("vllm_version", 28, 'a version string such as "0.28.0"'),
    ("vllm_multinode_backend", "slurm", "one of mp, ray"),
    ("vllm_recipes_path", ["/a", ""], "a path or a list of paths"),
])
def test_a_type_error_names_host_key_value_and_expectation(key, value, expectation):
    assert type_problems("gpu-07", {key: value}) == ["host gpu-07: %s=%s: expected %s" % (key, json.dumps(value), expectation)]


def test_every_kind_but_the_hcas_is_checked():
    unchecked = [v.name for v in INVENTORY_VARS if v.kind.ok is None]
    assert unchecked == ["vllm_infiniband_hca"]
    assert type_problems("h", {"vllm_infiniband_hca": 7}) == []
    assert iv.HCAS.expected is None


def test_type_errors_come_in_table_order():
    hv = {"vllm_ray_port": 0, "vllm_recipe": 1, "vllm_port": "x"}
    assert [p.split(":")[1].split("=")[0].strip() for p in type_problems("h", hv)] == ["vllm_recipe", "vllm_port", "vllm_ray_port"]


def test_fleet_error_lists_its_problems():
    exc = FleetError(["a", "b"])
    assert exc.problems == ["a", "b"] and str(exc) == "a\nb"


# ---------------------------------------------------------------------------------------- -e, names, settings
@pytest.mark.parametrize("name, text, value", [
    ("vllm_port", "9001", 9001), ("vllm_port", " 80 ", 80), ("vllm_node_rank", "0", 0),
    ("vllm_port", "9001x", "9001x"), ("vllm_port", "-1", "-1"), ("vllm_port", "1.5", "1.5"),
    ("vllm_variant", "8", "8"), ("vllm_detect_gpus", "false", False), ("vllm_check_hardware", "yes", True),
    ("vllm_check_hardware", "maybe", "maybe"), ("vllm_deploy_max_fail_percentage", "12.5", 12.5),
    ("vllm_port", 9001, 9001), ("no_such", "1", "1"),
])
def test_coerce_text(name, text, value):
    assert iv.coerce_text(name, text) == value and type(iv.coerce_text(name, text)) is type(value)


def test_an_e_string_that_means_no_integer_stays_a_type_error():
    assert type_problems("h", {"vllm_port": iv.coerce_text("vllm_port", "90o1")}) == [
        'host h: vllm_port="90o1": expected a positive integer']


@pytest.mark.parametrize("value, problems", [
    (0, []), (100, []), (12.5, []), ("10", []), ("150", ['vllm_deploy_max_fail_percentage="150": expected a number from 0 to 100']),
    (-1, ["vllm_deploy_max_fail_percentage=-1: expected a number from 0 to 100"]),
    (True, ["vllm_deploy_max_fail_percentage=true: expected a number from 0 to 100"]),
    ("ten", ['vllm_deploy_max_fail_percentage="ten": expected a number from 0 to 100']),
])
def test_max_fail_percentage(value, problems):
    assert iv.setting_problems("vllm_deploy_max_fail_percentage", value) == problems


def test_the_collections_names_are_known():
    assert iv.unknown_names(["vllm_recipe", "vllm_plan_dir", "vllm_deploy_serial", "vllm_deploy_max_fail_percentage",
                             "vllm_detect_gpus", "vllm_check_hardware", "vllm_serve_name", "vllm_serve_anything",
                             "vllm_fleet", "vllm_plan", "other", "__vllm_serve_x"]) == []
    assert iv.unknown_names(["vllm_varient", "vllm_deploy_seral"]) == ["vllm_varient", "vllm_deploy_seral"]


def test_the_collections_own_vllm_names_are_known(repo_root):
    """Every vllm_* Ansible variable the roles, playbooks and plugin examples use is a known name."""
    used = set()
    for top in ("roles", "playbooks", "plugins/filter", "plugins/lookup", "plugins/modules"):
        for path in (repo_root / top).rglob("*"):
            if path.suffix in (".yml", ".yaml", ".j2", ".py") and path.is_file():
                used.update(re.findall(r"(?<![\w.])vllm_[a-z0-9_]+", path.read_text()))
    # Python module and role names, not variables
    used -= {"vllm_serve", "vllm_health", "vllm_flags", "vllm_cli", "vllm_router"}
    assert iv.unknown_names(sorted(used)) == []


def test_unknown_names_are_grouped_with_the_closest_spelling():
    problems = iv.unknown_name_problems({"a": ["vllm_varient", "vllm_recipe"], "b": ["vllm_varient"], "c": ["vllm_qqqqzzzz"]})
    assert problems[1] == "hosts a, b: vllm_varient is not a variable of llmfleet.vllm (did you mean vllm_variant?)"
    assert problems[0].startswith("host c: vllm_qqqqzzzz is not a variable of llmfleet.vllm (valid: the inventory "
                                  "variables vllm_recipe, vllm_variant,")
    assert problems[0].endswith("vllm_check_hardware, or the role variables vllm_serve_*)")
    many = iv.unknown_name_problems(dict(("h%d" % i, ["vllm_deploy_seral"]) for i in range(8)))
    assert many == ["hosts h0, h1, h2, h3, h4 and 3 more: vllm_deploy_seral is not a variable of llmfleet.vllm "
                    "(did you mean vllm_deploy_serial?)"]


@pytest.mark.parametrize("hv, problem", [
    ({}, None), ({"vllm_recipe": "r"}, None), ({"vllm_recipe": "r", "vllm_port": 1}, None),
    ({"vllm_variant": "fp8", "vllm_port": None}, "host h: sets vllm_variant but vllm_recipe is not set: expected a recipe id"),
    ({"vllm_recipe": ""}, 'host h: sets vllm_recipe but vllm_recipe is "": expected'),
    ({"vllm_recipe": None, "vllm_hardware": "h200"}, "host h: sets vllm_hardware but vllm_recipe is not set"),
])
def test_missing_recipe(hv, problem):
    found = iv.missing_recipe_problems("h", hv)
    assert (found == []) if problem is None else (len(found) == 1 and found[0].startswith(problem)), found


def test_no_vllm_host():
    assert iv.no_vllm_host_problems(["web-%d" % i for i in range(7)]) == [
        "no vLLM host in this play: none of its 7 host(s) (web-0, web-1, web-2, web-3, web-4 and 2 more) sets "
        "vllm_recipe; check the inventory (-i) and the limit (-l)"]


def test_playbook_vars_are_a_table_too():
    assert iv.PLAYBOOK_NAMES == ("vllm_deploy_serial", "vllm_deploy_max_fail_percentage", "vllm_plan_dir",
                                 "vllm_plan_detail_hosts", "vllm_detect_gpus", "vllm_check_hardware")
    assert not set(iv.PLAYBOOK_NAMES) & set(NAMES)


PLAYBOOK_SECTION = "### Playbook variables"


def test_readme_playbook_variables_table_is_the_table(repo_root):
    text = (repo_root / "README.md").read_text()
    section = text[text.index(PLAYBOOK_SECTION):]
    section = section[:section.index("\n#", len(PLAYBOOK_SECTION))]
    rows = [[c.strip() for c in line.strip()[1:-1].split("|")] for line in section.splitlines() if line.startswith("| `vllm_")]
    assert rows == [["`%s`" % v.name, v.kind.label, v.default_text, v.meaning] for v in iv.PLAYBOOK_VARS]
