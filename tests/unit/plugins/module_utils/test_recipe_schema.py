# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmfleet contributors
# Apache License 2.0 (see LICENSE)
"""Tests for plugins/module_utils/recipe_schema.py and data/schema/recipe.schema.json.

The real corpus is read from ``<repo>/../shared/recipes`` (the ``shared_dir`` fixture of
tests/conftest.py skips when it is absent). Broken-recipe tests deep-copy a real recipe
(Qwen/Qwen3.6-35B-A3B) and break one thing. Tests under "fixture tree" use the small
hand-written files in fixtures/recipe_schema/ and run without the corpus.
"""

from __future__ import annotations

import ast
import copy
import datetime
import json
import os
import pathlib
import subprocess
import sys
import time

import pytest

yaml = pytest.importorskip("yaml")
jsonschema = pytest.importorskip("jsonschema")

from ansible_collections.llmfleet.vllm.plugins.module_utils import recipe_schema as rs  # noqa: E402
from ansible_collections.llmfleet.vllm.plugins.module_utils.catalog import scan_tree  # noqa: E402
from ansible_collections.llmfleet.vllm.plugins.module_utils.errors import (  # noqa: E402
    RecipeValidationError,
    ValidationIssue,
)

FIXTURES = pathlib.Path(__file__).resolve().parents[2] / "fixtures" / "recipe_schema"
QWEN = "Qwen/Qwen3.6-35B-A3B"
QWEN_FILE = "Qwen3.6-35B-A3B.yaml"


# ----------------------------------------------------------------------------- helpers

def load_yaml_file(path):
    """``yaml.safe_load`` of one file (C loader when available): the raw data, dates as
    :class:`datetime.date` (the catalog's loader normalizes them; these tests need both)."""
    with open(path, "rb") as handle:
        return yaml.load(handle, Loader=getattr(yaml, "CSafeLoader", None) or yaml.SafeLoader)


def recipe_id_from_path(path):
    """``.../models/Qwen/Qwen3.6-35B-A3B.yaml`` -> ``Qwen/Qwen3.6-35B-A3B``."""
    norm = os.path.normpath(str(path))
    stem = os.path.basename(norm)
    for ext in (".yaml", ".yml"):
        if stem.endswith(ext):
            stem = stem[:-len(ext)]
            break
    org = os.path.basename(os.path.dirname(norm))
    return "%s/%s" % (org, stem) if org else stem


def validate_recipe_tree(root):
    """Every issue of ``taxonomy.yaml``, ``strategies/*.yaml``, ``kv_store/*.yaml`` and
    ``models/<org>/<name>.yaml`` under ``root``; a file that does not parse is an error."""
    issues = []

    def _load(path):
        try:
            return load_yaml_file(path), True
        except Exception as exc:  # yaml.YAMLError, OSError
            issues.append(ValidationIssue(path, "", "cannot parse YAML: %s" % exc, "error"))
            return None, False

    recipes, tax_path, strategy_files = scan_tree(root)
    taxonomy = None
    if tax_path:
        taxonomy, ok = _load(tax_path)
        if ok:
            issues.extend(rs.validate_taxonomy(taxonomy, tax_path))
    strategy_ids = set()
    for path in strategy_files.values():
        data, ok = _load(path)
        if not ok:
            continue
        stem = os.path.basename(path).rsplit(".", 1)[0]
        issues.extend(rs.validate_strategy(data, path, expected_name=stem))
        if isinstance(data, dict) and isinstance(data.get("name"), str):
            strategy_ids.add(data["name"])
    for recipe_id, path in sorted(recipes.items()):
        data, ok = _load(path)
        if ok:
            issues.extend(rs.validate_recipe(data, path, taxonomy=taxonomy, strategy_ids=strategy_ids or None,
                                             expected_id=recipe_id))
    return issues


# ----------------------------------------------------------------------------- fixtures

@pytest.fixture(scope="session")
def recipes_dir(shared_dir):
    path = shared_dir / "recipes"
    if not (path / "taxonomy.yaml").is_file():
        pytest.skip("upstream recipe corpus not found at %s" % path)
    return path


@pytest.fixture(scope="session")
def corpus(recipes_dir):
    """Everything parsed once: taxonomy, strategies, and the model recipes by path."""
    taxonomy = load_yaml_file(str(recipes_dir / "taxonomy.yaml"))
    strategies = {}
    for sub in ("strategies", "kv_store"):
        for path in sorted((recipes_dir / sub).glob("*.yaml")):
            strategies[str(path)] = load_yaml_file(str(path))
    recipes = {}
    for path in sorted((recipes_dir / "models").glob("*/*.yaml")):
        recipes[str(path)] = load_yaml_file(str(path))
    return {
        "taxonomy": taxonomy,
        "strategies": strategies,
        "strategy_ids": sorted(s["name"] for s in strategies.values()),
        "recipes": recipes,
        "dir": recipes_dir,
    }


@pytest.fixture
def qwen(corpus):
    """A fresh deep copy of the real Qwen3.6-35B-A3B recipe, and its path."""
    path = str(corpus["dir"] / "models" / "Qwen" / QWEN_FILE)
    return copy.deepcopy(corpus["recipes"][path]), path


def check(corpus, data, path, expected_id=QWEN):
    return rs.validate_recipe(data, path, taxonomy=corpus["taxonomy"],
                              strategy_ids=corpus["strategy_ids"], expected_id=expected_id)


def errors_of(issues):
    return [i for i in issues if i.severity == "error"]


def warnings_of(issues):
    return [i for i in issues if i.severity == "warning"]


def one_error(issues, path):
    """The single error at ``path``; fails listing all issues otherwise."""
    errs = errors_of(issues)
    hits = [i for i in errs if i.path == path]
    assert len(hits) == 1, "expected one error at %s, got:\n%s" % (path, "\n".join(str(i) for i in issues))
    return hits[0]


def assert_names(issue, path, *expected_words):
    """The rendered issue names the file, the YAML path and what was expected."""
    text = str(issue)
    assert QWEN_FILE in text
    assert path in text
    assert issue.path == path
    assert "expected" in issue.message
    for word in expected_words:
        assert word in issue.message, "%r not in %r" % (word, issue.message)


# ----------------------------------------------------------------------------- the schema file

def test_schema_file_is_valid_draft_2020_12():
    schema = rs.load_schema()
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    jsonschema.Draft202012Validator.check_schema(schema)
    expected = pathlib.Path(__file__).resolve().parents[4] / "data" / "schema" / "recipe.schema.json"
    assert os.path.samefile(rs.SCHEMA_PATH, str(expected))


def test_validator_is_compiled_once():
    assert rs.get_recipe_validator() is rs.get_recipe_validator()


def test_module_is_python38_syntax_and_has_no_ansible_imports():
    src = pathlib.Path(rs.__file__).read_text()
    tree = ast.parse(src, feature_version=(3, 8))
    match_node = getattr(ast, "Match", None)
    for node in ast.walk(tree):
        assert match_node is None or not isinstance(node, match_node)
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [node.module or ""]
        else:
            continue
        for name in names:
            assert not (name == "ansible" or name.startswith("ansible.")), name


# ----------------------------------------------------------------------------- the real corpus

def test_all_real_recipes_validate_without_errors(corpus):
    assert len(corpus["recipes"]) == 173
    failures = []
    for path, data in corpus["recipes"].items():
        issues = check(corpus, data, path, expected_id=recipe_id_from_path(path))
        failures.extend(str(i) for i in errors_of(issues))
    assert not failures, "%d errors:\n%s" % (len(failures), "\n".join(failures))


def test_real_corpus_warnings_are_the_known_ones(corpus):
    warned = set()
    for path, data in corpus["recipes"].items():
        for issue in warnings_of(check(corpus, data, path, expected_id=recipe_id_from_path(path))):
            warned.add((recipe_id_from_path(path), issue.path))
    # D5: meta.hardware ids absent from the taxonomy (spec §10.13) ...
    assert ("nvidia/Cosmos3-Nano", "meta.hardware.a100") in warned
    assert ("inclusionAI/Ling-3.0-flash", "meta.hardware.h20") in warned
    assert ("tencent/Hy3-preview", "meta.hardware.mi350x") in warned
    # ... and the never-read features.<f>.hardware (spec §10.5).
    assert ("meta-models/Muse-Glimmer-30B", "features.spec_decoding.hardware") in warned
    assert len(warned) == 6, sorted(warned)


def test_validating_the_corpus_is_fast(corpus):
    rs.get_recipe_validator()
    start = time.perf_counter()
    for path, data in corpus["recipes"].items():
        check(corpus, data, path, expected_id=recipe_id_from_path(path))
    elapsed = time.perf_counter() - start
    assert elapsed < 2.0, "validating %d recipes took %.2fs" % (len(corpus["recipes"]), elapsed)


def test_taxonomy_and_strategies_validate(corpus):
    tax_path = str(corpus["dir"] / "taxonomy.yaml")
    assert rs.validate_taxonomy(corpus["taxonomy"], tax_path) == []
    assert len(corpus["strategies"]) == 11
    for path, data in corpus["strategies"].items():
        stem = os.path.splitext(os.path.basename(path))[0]
        assert rs.validate_strategy(data, path, expected_name=stem) == [], path


def test_validate_recipe_tree_on_the_corpus(corpus):
    issues = validate_recipe_tree(str(corpus["dir"]))
    assert errors_of(issues) == []
    assert len(warnings_of(issues)) == 6


def test_real_dates_are_normalized_and_input_is_not_modified(qwen, corpus):
    data, path = qwen
    assert isinstance(data["meta"]["date_added"], datetime.date)
    before = copy.deepcopy(data)
    assert errors_of(check(corpus, data, path)) == []
    assert data == before
    assert rs.normalize_yaml_types(data)["meta"]["date_added"] == "2026-04-16"


# ----------------------------------------------------------------------------- schema errors

def test_wrong_type_at_a_deep_path(qwen, corpus):
    data, path = qwen
    data["variants"]["nvfp4"]["hardware_overrides"]["rtx_5090"]["extra_args"][3] = 8
    issues = check(corpus, data, path)
    assert len(errors_of(issues)) == 1
    issue = one_error(issues, "variants.nvfp4.hardware_overrides.rtx_5090.extra_args[3]")
    assert_names(issue, "variants.nvfp4.hardware_overrides.rtx_5090.extra_args[3]", "string", "got int 8")


def test_args_that_are_not_a_list(qwen, corpus):
    data, path = qwen
    data["variants"]["nvfp4"]["extra_args"] = "--kv-cache-dtype fp8"
    issue = one_error(check(corpus, data, path), "variants.nvfp4.extra_args")
    assert_names(issue, "variants.nvfp4.extra_args", "a list of strings", "got str '--kv-cache-dtype fp8'")


def test_missing_default_variant(qwen, corpus):
    data, path = qwen
    del data["variants"]["default"]
    issue = one_error(check(corpus, data, path), "variants.default")
    assert "required key 'default' is missing" in issue.message
    assert QWEN_FILE in str(issue)


def test_missing_model_id(qwen, corpus):
    data, path = qwen
    del data["model"]["model_id"]
    issue = one_error(check(corpus, data, path), "model.model_id")
    assert "required key 'model_id' is missing" in issue.message


def test_unknown_top_level_key_lists_the_valid_keys(qwen, corpus):
    data, path = qwen
    data["hardware_override"] = {}
    issue = one_error(check(corpus, data, path), "hardware_override")
    assert_names(issue, "hardware_override", "unknown key 'hardware_override'", "hardware_overrides, kv_cache_strategy_hardware")


def test_unknown_key_in_a_variant(qwen, corpus):
    data, path = qwen
    data["variants"]["fp8"]["extra_arg"] = ["--x"]
    issue = one_error(check(corpus, data, path), "variants.fp8.extra_arg")
    assert_names(issue, "variants.fp8.extra_arg", "extra_args", "vram_minimum_gb")


def test_enum_architecture(qwen, corpus):
    data, path = qwen
    data["model"]["architecture"] = "MoE"
    issue = one_error(check(corpus, data, path), "model.architecture")
    assert_names(issue, "model.architecture", "one of dense, moe", "got str 'MoE'")


def test_meta_hardware_status_enum(qwen, corpus):
    data, path = qwen
    data["meta"]["hardware"]["h100"] = "works"
    issue = one_error(check(corpus, data, path), "meta.hardware.h100")
    assert_names(issue, "meta.hardware.h100", "verified", "unsupported", "got str 'works'")


def test_env_values_must_be_strings_or_numbers(qwen, corpus):
    data, path = qwen
    data["variants"]["fp8"]["hardware_overrides"]["rtx_pro_6000"]["extra_env"]["VLLM_USE_DEEP_GEMM"] = False
    issue = one_error(check(corpus, data, path), "variants.fp8.hardware_overrides.rtx_pro_6000.extra_env.VLLM_USE_DEEP_GEMM")
    assert_names(issue, issue.path, "a string or number", "got bool false")


def test_env_names_must_be_identifiers(qwen, corpus):
    data, path = qwen
    data["model"]["base_env"]["NOT-VALID"] = "1"
    issue = one_error(check(corpus, data, path), "model.base_env.NOT-VALID")
    assert_names(issue, "model.base_env.NOT-VALID", "environment variable name")


def test_tp_must_be_positive_int_or_hardware_map(qwen, corpus):
    data, path = qwen
    data["variants"]["nvfp4"]["tp"] = "1"
    issue = one_error(check(corpus, data, path), "variants.nvfp4.tp")
    assert_names(issue, "variants.nvfp4.tp", "a positive integer or a map", "got str '1'")

    data["variants"]["nvfp4"]["tp"] = {"rtx_5090": 0}
    issue = one_error(check(corpus, data, path), "variants.nvfp4.tp.rtx_5090")
    assert_names(issue, "variants.nvfp4.tp.rtx_5090", "a positive integer", ">= 1", "got int 0")


def test_docker_image_forms(qwen, corpus):
    data, path = qwen
    for good in ("vllm/vllm-openai:v0.28.0",
                 {"nvidia": "a", "amd": "b"},
                 {"nvidia": {"cu129": "a", "cu130": "b"}, "amd": "c"},
                 {"cu130": "a"}):
        data["model"]["docker_image"] = good
        assert errors_of(check(corpus, data, path)) == [], good

    data["model"]["docker_image"] = 8
    issue = one_error(check(corpus, data, path), "model.docker_image")
    assert_names(issue, "model.docker_image", "an image string, a brand map", "got int 8")

    data["model"]["docker_image"] = {"nvida": "x"}
    issue = one_error(check(corpus, data, path), "model.docker_image.nvida")
    assert_names(issue, "model.docker_image.nvida", "amd, cu129, cu130, intel, nvidia, tpu")

    data["model"]["docker_image"] = {"nvidia": {"cu131": "x"}}
    issue = one_error(check(corpus, data, path), "model.docker_image.nvidia.cu131")
    assert_names(issue, "model.docker_image.nvidia.cu131", "cu129, cu130")


def test_dates(qwen, corpus):
    data, path = qwen
    data["meta"]["date_added"] = "2026-04-16"  # already a string: fine
    assert errors_of(check(corpus, data, path)) == []
    data["meta"]["date_added"] = "16.04.2026"
    issue = one_error(check(corpus, data, path), "meta.date_added")
    assert_names(issue, "meta.date_added", "YYYY-MM-DD", "got str '16.04.2026'")


def test_unquoted_version_is_rejected(qwen, corpus):
    data, path = qwen
    data["model"]["min_vllm_version"] = 0.17
    issue = one_error(check(corpus, data, path), "model.min_vllm_version")
    assert_names(issue, "model.min_vllm_version", "version string", "got float 0.17")


def test_pd_role_block(qwen, corpus):
    data, path = qwen
    data["compatible_strategies"].append("pd_cluster")
    data["strategy_overrides"] = {"pd_cluster": {
        "prefill": {"parallelism": "dep", "nodes": {"default": 2, "gb300": 1}, "tp": 8, "vllm_args": ["--x"]},
        "decode": {"parallelism": "dep", "hardware_overrides": {"gb200": {"extra_args": ["--y"]}}},
        "pool_modes": ["dep"], "router": {"intra_node_data_parallel_size": 1}}}
    assert errors_of(check(corpus, data, path)) == []
    data["strategy_overrides"]["pd_cluster"]["prefill"]["parallelism"] = "ep"
    issue = one_error(check(corpus, data, path), "strategy_overrides.pd_cluster.prefill.parallelism")
    assert_names(issue, issue.path, "one of tp, tep, dep", "got str 'ep'")


# ----------------------------------------------------------------------------- taxonomy ids

def test_unknown_hardware_id_in_variant_hardware_overrides(qwen, corpus):
    data, path = qwen
    hos = data["variants"]["nvfp4"]["hardware_overrides"]
    hos["rtx_5091"] = hos.pop("rtx_5090")
    issue = one_error(check(corpus, data, path), "variants.nvfp4.hardware_overrides.rtx_5091")
    assert_names(issue, "variants.nvfp4.hardware_overrides.rtx_5091", "'rtx_5091'",
                 # the valid ids, sorted: profiles, generations and nvidia
                 "ada, amd, arc_pro_b60", "rtx_5090, rtx_5090_2x", "hopper", "nvidia")


def test_recipe_level_hardware_overrides_take_generations_only(qwen, corpus):
    data, path = qwen
    data["hardware_overrides"]["h100"] = {"extra_args": ["--x"]}
    issue = one_error(check(corpus, data, path), "hardware_overrides.h100")
    assert_names(issue, "hardware_overrides.h100", "generation", "amd, blackwell, cpu, hopper")
    assert "rtx_5090" not in issue.message


def test_feature_hardware_overrides_take_generations_only(qwen, corpus):
    data, path = qwen
    data["features"]["reasoning"]["hardware_overrides"] = {"rtx_5090": {"args": []}}
    issue = one_error(check(corpus, data, path), "features.reasoning.hardware_overrides.rtx_5090")
    assert_names(issue, issue.path, "hopper", "nvidia")


def test_mode_hardware_overrides_accept_ids_generations_brands_default(qwen, corpus):
    data, path = qwen
    hos = data["features"]["spec_decoding"]["modes"]["mtp"]["hardware_overrides"]
    for key in ("h200", "hopper", "amd", "nvidia", "default"):
        hos[key] = {"args": []}
    assert errors_of(check(corpus, data, path)) == []
    hos["hoper"] = {"args": []}
    one_error(check(corpus, data, path), "features.spec_decoding.modes.mtp.hardware_overrides.hoper")


def test_supported_hardware_and_default_hardware(qwen, corpus):
    data, path = qwen
    data["variants"]["nvfp4"]["supported_hardware"] = ["b200", "blackwell"]
    data["meta"]["default_hardware"] = "h300"
    issues = check(corpus, data, path)
    issue = one_error(issues, "variants.nvfp4.supported_hardware[1]")
    assert_names(issue, "variants.nvfp4.supported_hardware[1]", "'blackwell'", "b200, b300")
    issue = one_error(issues, "meta.default_hardware")
    assert_names(issue, "meta.default_hardware", "'h300'", "h100, h200")


def test_hardware_opt_in_features(qwen, corpus):
    data, path = qwen
    data["hardware_opt_in_features"] = {"gb200": ["encoder_parallel"]}
    assert errors_of(check(corpus, data, path)) == []
    data["hardware_opt_in_features"] = {"gb201": ["encoder_paralel"]}
    issues = check(corpus, data, path)
    assert_names(one_error(issues, "hardware_opt_in_features.gb201"), "hardware_opt_in_features.gb201", "gb200")
    assert_names(one_error(issues, "hardware_opt_in_features.gb201[0]"), "hardware_opt_in_features.gb201[0]",
                 "'encoder_paralel'", "encoder_parallel, long_context, reasoning")


def test_d5_unknown_meta_hardware_is_a_warning(qwen, corpus):
    data, path = qwen
    data["meta"]["hardware"]["a100"] = "verified"
    issues = check(corpus, data, path)
    assert errors_of(issues) == []
    (warning,) = warnings_of(issues)
    assert warning.path == "meta.hardware.a100"
    assert "D5" in warning.message and "h100" in warning.message
    assert str(warning).startswith("warning: ")
    assert rs.raise_for_issues(issues) == [warning]


def test_strategy_min_gpus_keys(qwen, corpus):
    data, path = qwen
    data["strategy_min_gpus"] = {"single_node_tp": 8, "tp": 8, "h100": 32, "gb300": {"multi_node_tp": 8}}
    assert errors_of(check(corpus, data, path)) == []
    data["strategy_min_gpus"] = {"h101": 8}
    assert_names(one_error(check(corpus, data, path), "strategy_min_gpus.h101"), "strategy_min_gpus.h101",
                 "multi_node_tp", "h100")
    data["strategy_min_gpus"] = 16
    assert errors_of(check(corpus, data, path)) == []


def test_kv_offload_support_keys(qwen, corpus):
    data, path = qwen
    data["kv_offload_support"] = {"offloading_cpu": "verified", "offloading_gpu": "verified"}
    issue = one_error(check(corpus, data, path), "kv_offload_support.offloading_gpu")
    assert_names(issue, issue.path, "lmcache, offloading_cpu, offloading_fs, simple")


def test_pd_role_hardware_overrides_take_exact_ids_only(qwen, corpus):
    data, path = qwen
    data["strategy_overrides"] = {"pd_cluster": {"decode": {"hardware_overrides": {"blackwell": {"extra_args": []}}}}}
    issue = one_error(check(corpus, data, path), "strategy_overrides.pd_cluster.decode.hardware_overrides.blackwell")
    assert_names(issue, issue.path, "exact GPU id", "gb200")


def test_pd_keys_on_other_strategies_warn(qwen, corpus):
    data, path = qwen
    data["strategy_overrides"] = {"multi_node_tp": {"prefill": {"parallelism": "tp"}}}
    issues = check(corpus, data, path)
    assert errors_of(issues) == []
    assert [w.path for w in warnings_of(issues)] == ["strategy_overrides.multi_node_tp.prefill"]


# ----------------------------------------------------------------------------- strategy ids

def test_unknown_strategy_in_compatible_strategies(qwen, corpus):
    data, path = qwen
    data["compatible_strategies"][2] = "single_node_ep"
    issue = one_error(check(corpus, data, path), "compatible_strategies[2]")
    assert_names(issue, "compatible_strategies[2]", "'single_node_ep'",
                 "kv_store_centralized_mooncake, kv_store_distributed_mooncake, multi_node_dep")


def test_unknown_strategy_elsewhere(qwen, corpus):
    data, path = qwen
    data["default_strategy"] = "single_node"
    data["strategy_overrides"] = {"single_node_tpp": {"tp": 2}}
    data["strategy_hardware"] = {"multi_node_dp": {"h100": "unsupported"}}
    data["features"]["long_context"]["strategies"] = ["single_node_tp", "multinode_tp"]
    issues = check(corpus, data, path)
    for where in ("default_strategy", "strategy_overrides.single_node_tpp",
                  "strategy_hardware.multi_node_dp", "features.long_context.strategies[1]"):
        assert_names(one_error(issues, where), where, "single_node_tp")


def test_strategy_ids_fall_back_to_the_taxonomy_list(qwen, corpus):
    data, path = qwen
    data["compatible_strategies"].append("nope")
    issues = rs.validate_recipe(data, path, taxonomy=corpus["taxonomy"])
    one_error(issues, "compatible_strategies[7]")


# ----------------------------------------------------------------------------- validateFeatureModes

def test_modes_empty(qwen, corpus):
    data, path = qwen
    data["features"]["spec_decoding"]["modes"] = {}
    issue = one_error(check(corpus, data, path), "features.spec_decoding.modes")
    assert_names(issue, "features.spec_decoding.modes", "non-empty map", "got map {}")


def test_modes_not_a_map(qwen, corpus):
    data, path = qwen
    data["features"]["spec_decoding"]["modes"] = ["mtp", "dspark"]
    issue = one_error(check(corpus, data, path), "features.spec_decoding.modes")
    assert_names(issue, "features.spec_decoding.modes", "map of mode names", "got list")


def test_args_together_with_modes(qwen, corpus):
    data, path = qwen
    data["features"]["spec_decoding"]["args"] = ["--speculative-config", "{}"]
    issue = one_error(check(corpus, data, path), "features.spec_decoding.args")
    assert_names(issue, "features.spec_decoding.args", "cannot be combined with modes", "dspark, mtp")


def test_unknown_default_mode(qwen, corpus):
    data, path = qwen
    data["features"]["spec_decoding"]["default_mode"] = "eagle"
    issue = one_error(check(corpus, data, path), "features.spec_decoding.default_mode")
    assert_names(issue, "features.spec_decoding.default_mode", "'eagle'", "dspark, mtp")


def test_default_mode_without_modes(qwen, corpus):
    data, path = qwen
    data["features"]["reasoning"]["default_mode"] = "on"
    issue = one_error(check(corpus, data, path), "features.reasoning.default_mode")
    assert_names(issue, "features.reasoning.default_mode", "has no modes")


def test_mode_args_not_an_array(qwen, corpus):
    data, path = qwen
    data["features"]["spec_decoding"]["modes"]["mtp"]["args"] = "--speculative-config {}"
    issue = one_error(check(corpus, data, path), "features.spec_decoding.modes.mtp.args")
    assert_names(issue, "features.spec_decoding.modes.mtp.args", "a list of strings", "got str")

    del data["features"]["spec_decoding"]["modes"]["mtp"]["args"]
    issue = one_error(check(corpus, data, path), "features.spec_decoding.modes.mtp.args")
    assert "required key 'args' is missing" in issue.message


def test_mode_variants_naming_an_unknown_variant(qwen, corpus):
    data, path = qwen
    data["features"]["spec_decoding"]["modes"]["dspark"]["variants"] = ["default", "bf16"]
    issue = one_error(check(corpus, data, path), "features.spec_decoding.modes.dspark.variants[1]")
    assert_names(issue, "features.spec_decoding.modes.dspark.variants[1]", "'bf16'",
                 "default, fp8, nvfp4, redhat_fp8, redhat_fp8_plain, redhat_nvfp4")


def test_variant_with_no_available_mode(qwen, corpus):
    data, path = qwen
    all_but_one = ["default", "fp8", "nvfp4", "redhat_fp8", "redhat_fp8_plain"]
    data["features"]["spec_decoding"]["modes"]["mtp"]["variants"] = all_but_one
    issue = one_error(check(corpus, data, path), "features.spec_decoding.modes")
    assert_names(issue, "features.spec_decoding.modes", "'redhat_nvfp4'", "dspark -> [default]")


def test_default_modes_unknown_feature(qwen, corpus):
    data, path = qwen
    data["variants"]["fp8"]["default_modes"] = {"spec_decode": "mtp"}
    issue = one_error(check(corpus, data, path), "variants.fp8.default_modes.spec_decode")
    assert_names(issue, issue.path, "unknown feature 'spec_decode'", "spec_decoding")


def test_default_modes_non_modal_feature(qwen, corpus):
    data, path = qwen
    data["variants"]["fp8"]["default_modes"] = {"reasoning": "on"}
    issue = one_error(check(corpus, data, path), "variants.fp8.default_modes.reasoning")
    assert_names(issue, issue.path, "has no modes", "spec_decoding")


def test_default_modes_unknown_mode(qwen, corpus):
    data, path = qwen
    data["variants"]["fp8"]["default_modes"] = {"spec_decoding": "eagle"}
    issue = one_error(check(corpus, data, path), "variants.fp8.default_modes.spec_decoding")
    assert_names(issue, issue.path, "unknown mode 'eagle'", "dspark, mtp")


def test_default_modes_mode_unavailable_for_the_variant(qwen, corpus):
    data, path = qwen
    data["variants"]["default"]["default_modes"] = {"spec_decoding": "dspark"}  # allowed: dspark lists default
    assert errors_of(check(corpus, data, path)) == []
    data["variants"]["fp8"]["default_modes"] = {"spec_decoding": "dspark"}
    issue = one_error(check(corpus, data, path), "variants.fp8.default_modes.spec_decoding")
    assert_names(issue, issue.path, "not available for variant 'fp8'", "restricted to variants: default", "mtp")


def test_opt_in_features_naming_unknown_features(qwen, corpus):
    data, path = qwen
    data["opt_in_features"].append("long_ctx")
    issue = one_error(check(corpus, data, path), "opt_in_features[3]")
    assert_names(issue, "opt_in_features[3]", "unknown feature 'long_ctx'", "encoder_parallel, long_context")


def test_conflicts_with_names_other_features(qwen, corpus):
    data, path = qwen
    data["features"]["text_only"]["conflicts_with"] = ["encoder_parallel"]
    assert errors_of(check(corpus, data, path)) == []
    data["features"]["text_only"]["conflicts_with"] = ["encoder_parallel", "text_only", "vision"]
    issues = check(corpus, data, path)
    assert_names(one_error(issues, "features.text_only.conflicts_with[1]"), "features.text_only.conflicts_with[1]",
                 "unknown feature 'text_only'", "encoder_parallel, long_context")
    one_error(issues, "features.text_only.conflicts_with[2]")


# ----------------------------------------------------------------------------- model id vs path

def test_model_id_must_match_the_path(qwen, corpus):
    data, path = qwen
    data["model"]["model_id"] = "Qwen/Qwen3.6-35B-A3B-Instruct"
    issue = one_error(check(corpus, data, path), "model.model_id")
    assert_names(issue, "model.model_id", "'Qwen/Qwen3.6-35B-A3B-Instruct'", "'Qwen/Qwen3.6-35B-A3B'")


def test_model_id_case_differences_are_accepted(qwen, corpus):
    data, path = qwen
    data["model"]["model_id"] = "qwen/qwen3.6-35b-a3b"  # as google/ vs Google/ in the corpus
    assert errors_of(check(corpus, data, path)) == []


def test_model_id_may_differ_when_a_variant_serves_the_path_id(qwen, corpus):
    data, path = qwen
    data["model"]["model_id"] = "Qwen/Qwen3.6-35B-A3B-NVFP4"  # as thinkingmachines/Inkling in the corpus
    data["variants"]["bf16"] = {"model_id": QWEN, "precision": "bf16"}
    assert errors_of(check(corpus, data, path)) == []


def test_recipe_id_from_path():
    assert recipe_id_from_path("/x/recipes/models/Qwen/Qwen3.6-35B-A3B.yaml") == QWEN
    assert recipe_id_from_path("models/google/gemma.yml") == "google/gemma"


# ----------------------------------------------------------------------------- raising, messages

def test_raise_for_issues_raises_only_errors(qwen, corpus):
    data, path = qwen
    data["meta"]["hardware"]["a100"] = "verified"
    data["variants"]["nvfp4"]["hardware_overrides"]["rtx_5090"]["extra_args"][3] = 8
    issues = check(corpus, data, path)
    with pytest.raises(RecipeValidationError) as info:
        rs.raise_for_issues(issues)
    assert [i.severity for i in info.value.issues] == ["error"]
    text = str(info.value)
    assert QWEN_FILE in text
    assert "variants.nvfp4.hardware_overrides.rtx_5090.extra_args[3]" in text
    assert "a100" not in text
    assert rs.split_issues(issues)[1][0].path == "meta.hardware.a100"


def test_every_issue_names_path_value_and_expectation(qwen, corpus):
    data, path = qwen
    data["model"]["architecture"] = 3
    data["variants"]["fp8"]["vram_minimum_gb"] = "42"
    data["variants"]["fp8"]["tp"] = {"h100": "2"}
    data["compatible_strategies"].append(7)
    data["features"]["reasoning"]["strategies"] = "single_node_tp"
    data["strategy_overrides"] = {"single_node_tp": {"tp": 0, "env": ["A=1"]}}
    data["omni"] = {"tasks": [{"id": "t2i", "extra_args": [1]}]}
    issues = errors_of(check(corpus, data, path))
    assert {i.path for i in issues} == {
        "model.architecture", "variants.fp8.vram_minimum_gb", "variants.fp8.tp.h100",
        "compatible_strategies[7]", "features.reasoning.strategies", "strategy_overrides.single_node_tp.tp",
        "strategy_overrides.single_node_tp.env", "omni.tasks[0].extra_args[0]",
    }, "\n".join(str(i) for i in issues)
    for issue in issues:
        assert isinstance(issue, ValidationIssue)
        assert issue.file == path and issue.path in str(issue) and QWEN_FILE in str(issue)
        assert "expected" in issue.message and "got" in issue.message, issue.message


def test_format_path():
    assert rs.format_path(["variants", "nvfp4", "hardware_overrides", "rtx_5090", "extra_args", 3]) == \
        "variants.nvfp4.hardware_overrides.rtx_5090.extra_args[3]"
    assert rs.format_path([]) == ""
    assert rs.format_path(["meta", "a.b"]) == 'meta["a.b"]'
    assert rs.format_path(["omni", "tasks", 0, "id"]) == "omni.tasks[0].id"


def test_describe_value():
    assert rs.describe_value(8) == "int 8"
    assert rs.describe_value("x") == "str 'x'"
    assert rs.describe_value(True) == "bool true"
    assert rs.describe_value(None) == "null"
    assert rs.describe_value({"a": 1}) == 'map {"a": 1}'
    assert rs.describe_value("y" * 200).endswith("...")


def test_missing_jsonschema_gives_a_clear_error(monkeypatch):
    monkeypatch.setattr(rs, "HAS_JSONSCHEMA", False)
    monkeypatch.setattr(rs, "_CACHE", {})
    with pytest.raises(rs.MissingDependencyError) as info:
        rs.validate_recipe({}, "x.yaml")
    assert "jsonschema" in str(info.value)
    assert isinstance(info.value, ImportError)


def test_loading_the_catalog_does_not_import_jsonschema(collections_dir):
    """jsonschema is imported when the first validator is built, not with the modules."""
    code = ("import sys; sys.path.insert(0, %r); "
            "from ansible_collections.llmfleet.vllm.plugins.module_utils import catalog, recipe_schema; "
            "assert recipe_schema.HAS_JSONSCHEMA; print('jsonschema' in sys.modules)" % str(collections_dir))
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    assert out.strip() == "False"


# ----------------------------------------------------------------------------- taxonomy / strategy files

def test_taxonomy_structure_errors(corpus):
    tax = copy.deepcopy(corpus["taxonomy"])
    tax["hardware_profiles"]["h100"]["gpu_count"] = "8"
    tax["hardware_profiles"]["h200"]["vram_gb"] = 0
    del tax["hardware_profiles"]["b200"]["brand"]
    tax["kv_offload"]["offloading_cpu"]["group"] = "offload"
    issues = rs.validate_taxonomy(tax, "taxonomy.yaml")
    paths = {i.path: i for i in issues}
    assert "a positive integer" in paths["hardware_profiles.h100.gpu_count"].message
    assert "got str '8'" in paths["hardware_profiles.h100.gpu_count"].message
    assert "> 0" in paths["hardware_profiles.h200.vram_gb"].message
    assert "required key 'brand' is missing" in paths["hardware_profiles.b200.brand"].message
    assert "offloading" in paths["kv_offload.offloading_cpu.group"].message
    assert len(issues) == 4


def test_strategy_structure_errors(corpus):
    path = str(corpus["dir"] / "strategies" / "pd_cluster.yaml")
    data = copy.deepcopy(corpus["strategies"][path])
    data["deploy_type"] = "cluster"
    data["prefill"]["vllm_args"] = "--port 8001"
    data["name"] = "pd"
    issues = rs.validate_strategy(data, path, expected_name="pd_cluster")
    by_path = {i.path: i for i in issues}
    assert "one of single_node, multi_node, pd_cluster, kv_store_lb" in by_path["deploy_type"].message
    assert "a list of strings" in by_path["prefill.vllm_args"].message
    assert "expected 'pd_cluster'" in by_path["name"].message
    assert all("pd_cluster.yaml" in str(i) for i in issues)


# ----------------------------------------------------------------------------- fixture tree (no corpus needed)

@pytest.fixture
def tiny():
    tax = load_yaml_file(str(FIXTURES / "taxonomy.yaml"))
    recipe = load_yaml_file(str(FIXTURES / "minimal_recipe.yaml"))
    return tax, recipe


def test_fixture_taxonomy_and_strategy_validate():
    tax = load_yaml_file(str(FIXTURES / "taxonomy.yaml"))
    assert rs.validate_taxonomy(tax, "taxonomy.yaml") == []
    strat = load_yaml_file(str(FIXTURES / "strategy.yaml"))
    assert rs.validate_strategy(strat, "strategy.yaml", expected_name="strategy") == []


def test_fixture_recipe_validates(tiny):
    tax, recipe = tiny
    issues = rs.validate_recipe(recipe, "models/example-org/Tiny-1B.yaml", taxonomy=tax,
                                expected_id="example-org/Tiny-1B")
    assert issues == []


def test_fixture_recipe_errors(tiny):
    tax, recipe = tiny
    recipe["variants"]["fp8"]["hardware_overrides"]["gpu_z"] = {}
    recipe["variants"]["fp8"]["default_modes"] = {"spec": "slow"}
    recipe["meta"]["hardware"]["gpu_q"] = "verified"
    recipe["meta"]["tasks"].append("video")
    issues = rs.validate_recipe(recipe, "models/example-org/Tiny-1B.yaml", taxonomy=tax,
                                expected_id="example-org/Other")
    by_path = dict((i.path, i) for i in issues)
    assert "blackwell, gpu_a, gpu_b, gpu_c, hopper, nvidia" in by_path["variants.fp8.hardware_overrides.gpu_z"].message
    assert "not available for variant 'fp8'" in by_path["variants.fp8.default_modes.spec"].message
    assert by_path["meta.hardware.gpu_q"].severity == "warning"
    assert "omni, text" in by_path["meta.tasks[1]"].message
    assert "'example-org/Other'" in by_path["model.model_id"].message
    assert len(errors_of(issues)) == 4


def test_fixture_recipe_without_taxonomy_checks_structure_and_modes_only(tiny):
    recipe = tiny[1]
    recipe["variants"]["fp8"]["hardware_overrides"]["gpu_z"] = {}
    assert rs.validate_recipe(recipe, "r.yaml") == []
    recipe["features"]["spec"]["default_mode"] = "medium"
    issues = rs.validate_recipe(recipe, "r.yaml")
    assert [i.path for i in issues] == ["features.spec.default_mode"]


def test_non_mapping_recipe(tiny):
    issues = rs.validate_recipe(["not", "a", "map"], "r.yaml")
    assert len(issues) == 1 and issues[0].path == ""
    assert "expected a recipe map, got list" in issues[0].message
    assert json.dumps([i.as_dict() for i in issues])
