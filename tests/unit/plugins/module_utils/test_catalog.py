# -*- coding: utf-8 -*-
"""Catalog: tree layout, stacking (later trees win), per-process parse cache."""

from __future__ import annotations

import os
import shutil

import pytest

from ansible_collections.llmfleet.vllm.plugins.module_utils import catalog as catalog_mod
from ansible_collections.llmfleet.vllm.plugins.module_utils.catalog import BUILTIN_TREE, Catalog
from ansible_collections.llmfleet.vllm.plugins.module_utils.errors import RecipeNotFound, RecipeValidationError
from ansible_collections.llmfleet.vllm.plugins.module_utils.resolver import Resolver

SEED = "Qwen/Qwen3.6-35B-A3B"


def test_builtin_tree_is_data_only():
    cat = Catalog()
    assert cat.recipe_ids() == [SEED]
    recipe = cat.recipe(SEED)
    assert "guide" not in recipe
    assert "description" not in recipe["meta"] and "description" not in recipe["variants"]["default"]
    assert set(cat.strategies) >= {"single_node_tp", "multi_node_dep", "pd_cluster", "kv_store_centralized_mooncake"}
    assert cat.hardware_profiles["h200"]["gpu_count"] == 8
    assert recipe["meta"]["date_added"] == "2026-04-16"  # dates normalized to strings


def test_builtin_seed_matches_upstream_data(shared_dir):
    """The built-in copy drops prose only: every field the resolver reads is identical."""
    up = Catalog([str(shared_dir / "recipes")], validate=False).recipe(SEED)
    ours = Catalog().recipe(SEED)

    def strip(v):
        if isinstance(v, dict):
            return dict((k, strip(x)) for k, x in v.items() if k not in ("guide", "description", "performance_headline", "hardware_notes"))
        if isinstance(v, list):
            return [strip(x) for x in v]
        return v
    assert strip(up) == ours


def test_case_insensitive_ids_and_unknown_recipe():
    cat = Catalog()
    assert cat.canonical_id("qwen/qwen3.6-35b-a3b") == SEED
    with pytest.raises(RecipeNotFound) as err:
        cat.recipe("Qwen/Qwen3.6-35B")
    assert "unknown recipe" in str(err.value) and SEED in str(err.value) and BUILTIN_TREE in str(err.value)


def test_missing_or_foreign_tree(tmp_path):
    with pytest.raises(RecipeNotFound, match="does not exist"):
        Catalog([str(tmp_path / "nope")])
    with pytest.raises(RecipeNotFound, match="vllm-project/recipes layout"):
        Catalog([str(tmp_path)])


def _site_tree(tmp_path, base_args):
    tree = tmp_path / "site"
    (tree / "models" / "Qwen").mkdir(parents=True)
    with open(os.path.join(BUILTIN_TREE, "models", "Qwen", "Qwen3.6-35B-A3B.yaml")) as src:
        text = src.read()
    text = text.replace("  base_args:\n  - --trust-remote-code\n", "  base_args:\n" + "".join("  - %s\n" % a for a in base_args))
    path = tree / "models" / "Qwen" / "Qwen3.6-35B-A3B.yaml"
    path.write_text(text)
    return tree, path


def test_later_tree_overrides_per_recipe_id(tmp_path, shared_dir):
    tree, _path = _site_tree(tmp_path, ["--trust-remote-code", "--max-model-len", "'65536'"])
    cat = Catalog([str(shared_dir / "recipes"), str(tree)])
    assert len(cat.recipe_ids()) > 100  # upstream recipes stay visible
    assert cat.recipe_path(SEED) == str(tree / "models" / "Qwen" / "Qwen3.6-35B-A3B.yaml")
    node = Resolver(cat).resolve(SEED, variant="default", hardware="h200", strategy="single_node_tp", node_count=1)["nodes"][0]
    assert node["argv"][3:6] == ["--trust-remote-code", "--max-model-len", "65536"]
    # the other order: upstream wins
    cat2 = Catalog([str(tree), str(shared_dir / "recipes")])
    assert cat2.recipe_path(SEED).startswith(str(shared_dir))


def _clear_parse_cache():
    with catalog_mod._CACHE_LOCK:
        catalog_mod._CACHE.clear()


def test_each_file_parsed_once_per_process(tmp_path, monkeypatch):
    tree, path = _site_tree(tmp_path, ["--trust-remote-code"])
    _clear_parse_cache()
    calls = []
    real = catalog_mod.yaml.load

    def counting(stream, Loader):
        calls.append(getattr(stream, "name", "?"))
        return real(stream, Loader=Loader)
    monkeypatch.setattr(catalog_mod.yaml, "load", counting)
    # a fleet of 1,000 hosts, each building its own Catalog over the same trees
    for _host in range(1000):
        cat = Catalog([BUILTIN_TREE, str(tree)])
        cat.recipe(SEED)
        assert cat.strategies and cat.taxonomy
    assert calls.count(str(path)) == 1
    assert len(calls) == len(set(calls))
    # a changed file (new mtime/size) is parsed again
    path.write_text(path.read_text().replace("--trust-remote-code", "--trust-remote-code\n  - --enforce-eager", 1))
    st = os.stat(path)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 10 ** 9))
    cat = Catalog([BUILTIN_TREE, str(tree)])
    assert "--enforce-eager" in cat.recipe(SEED)["model"]["base_args"]
    assert calls.count(str(path)) == 2


def test_invalid_recipe_is_refused_on_first_use(tmp_path):
    tree = tmp_path / "bad"
    (tree / "models" / "acme").mkdir(parents=True)
    shutil.copy(os.path.join(BUILTIN_TREE, "taxonomy.yaml"), tree / "taxonomy.yaml")
    (tree / "models" / "acme" / "m.yaml").write_text("model:\n  model_id: acme/m\nvariants:\n  default:\n    extra_args: --x\n")
    cat = Catalog([BUILTIN_TREE, str(tree)])
    with pytest.raises(RecipeValidationError) as err:
        cat.recipe("acme/m")
    assert "m.yaml" in str(err.value) and "variants.default.extra_args" in str(err.value)
    (tree / "models" / "acme" / "x.yaml").write_text("model: [unclosed\n")
    with pytest.raises(RecipeValidationError, match="not valid YAML"):
        Catalog([BUILTIN_TREE, str(tree)], validate=False).recipe("acme/x")


# ----------------------------------------------------------------------------- the catalog validates what it loads

def _broken_site_tree(tmp_path):
    """A site tree whose taxonomy.yaml and strategies/site_tp.yaml each break the schema."""
    yaml = pytest.importorskip("yaml")
    tree = tmp_path / "broken_site"
    (tree / "strategies").mkdir(parents=True)
    with open(os.path.join(BUILTIN_TREE, "taxonomy.yaml")) as src:
        taxonomy = yaml.safe_load(src)
    taxonomy["hardware_profiles"]["h200"]["gpu_count"] = "8"
    taxonomy["kv_offload"]["offloading_cpu"]["group"] = "offload"
    (tree / "taxonomy.yaml").write_text(yaml.safe_dump(taxonomy))
    (tree / "strategies" / "site_tp.yaml").write_text("name: site_tp\ndeploy_type: cluster\nvllm_args: []\n")
    return tree


def test_broken_site_taxonomy_and_strategy_are_refused_when_the_tree_is_loaded(tmp_path):
    tree = _broken_site_tree(tmp_path)
    with pytest.raises(RecipeValidationError) as err:
        Catalog([BUILTIN_TREE, str(tree)])
    text = str(err.value)
    tax_file, strategy_file = str(tree / "taxonomy.yaml"), str(tree / "strategies" / "site_tp.yaml")
    assert {i.file for i in err.value.issues} == {tax_file, strategy_file}, text
    # the file, the key path, the bad value and the valid choices, as for a recipe
    assert "error: %s: hardware_profiles.h200.gpu_count: expected a positive integer" % tax_file in text
    assert "got str '8'" in text
    assert "error: %s: kv_offload.offloading_cpu.group: unknown kv_offload group 'offload'; " \
           "expected one of: offloading" % tax_file in text
    assert "error: %s: deploy_type: expected one of single_node, multi_node, pd_cluster, kv_store_lb, " \
           "got str 'cluster'" % strategy_file in text
    # without validation the tree loads as before
    assert Catalog([BUILTIN_TREE, str(tree)], validate=False).hardware_profiles["h200"]["gpu_count"] == "8"


def test_a_strategy_named_unlike_its_file_is_refused(tmp_path):
    tree = tmp_path / "site"
    (tree / "strategies").mkdir(parents=True)
    shutil.copy(os.path.join(BUILTIN_TREE, "strategies", "single_node_tp.yaml"), tree / "strategies" / "site_tp.yaml")
    with pytest.raises(RecipeValidationError) as err:
        Catalog([BUILTIN_TREE, str(tree)])
    assert "site_tp.yaml: name: name 'single_node_tp' does not match the file name; expected 'site_tp'" in str(err.value)


def test_a_taxonomy_broken_after_loading_is_refused_on_next_read(tmp_path):
    tree = tmp_path / "site"
    tree.mkdir()
    path = tree / "taxonomy.yaml"
    shutil.copy(os.path.join(BUILTIN_TREE, "taxonomy.yaml"), path)
    cat = Catalog([BUILTIN_TREE, str(tree)])
    cat.freshness = 0
    assert cat.hardware_profiles["h200"]["gpu_count"] == 8
    path.write_text(path.read_text().replace("gpu_count: 8", "gpu_count: eight", 1))
    st = os.stat(path)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 10 ** 9))
    with pytest.raises(RecipeValidationError, match=r"taxonomy\.yaml: hardware_profiles\.\w+\.gpu_count: .*got str 'eight'"):
        cat.taxonomy


def test_taxonomy_and_strategies_are_validated_once_per_process(tmp_path, monkeypatch):
    tree = tmp_path / "site"
    (tree / "strategies").mkdir(parents=True)
    shutil.copy(os.path.join(BUILTIN_TREE, "taxonomy.yaml"), tree / "taxonomy.yaml")
    shutil.copy(os.path.join(BUILTIN_TREE, "strategies", "single_node_tp.yaml"), tree / "strategies" / "single_node_tp.yaml")
    calls = []
    for name in ("validate_taxonomy", "validate_strategy"):
        real = getattr(catalog_mod, name)
        monkeypatch.setattr(catalog_mod, name, lambda data, source, _real=real, **kw: calls.append(source) or _real(data, source, **kw))
    for _host in range(1000):
        cat = Catalog([BUILTIN_TREE, str(tree)])
        assert cat.taxonomy and cat.strategies
    ours = [c for c in calls if c.startswith(str(tree))]
    assert sorted(ours) == sorted([str(tree / "taxonomy.yaml"), str(tree / "strategies" / "single_node_tp.yaml")])


def test_builtin_and_upstream_trees_load_validated(shared_dir):
    for paths in ([BUILTIN_TREE], [str(shared_dir / "recipes")], [str(shared_dir / "recipes"), BUILTIN_TREE]):
        cat = Catalog(paths)
        assert cat.validate and cat.taxonomy["hardware_profiles"] and "single_node_tp" in cat.strategies
        assert catalog_mod._CHECKED[(cat.taxonomy_path, "taxonomy")][1] == []
