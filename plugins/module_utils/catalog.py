# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmfleet contributors
# Apache License 2.0 (see LICENSE)
"""Recipe catalog: load one or more recipe trees in the upstream layout.

A tree looks like vllm-project/recipes::

    models/<org>/<name>.yaml    one recipe per file, id "<org>/<name>"
    taxonomy.yaml               hardware profiles, kv_offload options, ...
    strategies/*.yaml           strategy definitions, keyed by ``name``
    kv_store/*.yaml             Mooncake KV-store strategies, keyed by ``name``

Several trees stack: a later tree overrides an earlier one per recipe id (site-local
recipes over upstream), per strategy name, and its taxonomy (when it has one) replaces the
earlier taxonomy. Parsed files are cached per process, keyed by (path, mtime, size), so a
fleet of 1,000 hosts parses each file once.

A catalog validates what it loads (``recipe_schema``): the taxonomy in use and every strategy
file when it is built, each recipe on first use. A file is checked once per process and
parse, whatever Catalog instance asks.

Pure Python: no Ansible imports.
"""

from __future__ import annotations

import datetime
import os
import threading
import time

try:
    import yaml
    HAS_YAML = True
    try:
        _SafeLoader = yaml.CSafeLoader
    except AttributeError:  # pragma: no cover - depends on libyaml
        _SafeLoader = yaml.SafeLoader
except ImportError:  # pragma: no cover - exercised only without PyYAML
    yaml = None
    HAS_YAML = False
    _SafeLoader = None

from .errors import RecipeNotFound, RecipeValidationError, ValidationIssue, _unknown
from .recipe_schema import MissingDependencyError, raise_for_issues, validate_recipe, validate_strategy, validate_taxonomy

#: The collection's own tree: the Qwen3.6-35B-A3B recipe, the taxonomy and the strategies.
BUILTIN_TREE = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "data", "recipes"))

_CACHE = {}
_CACHE_LOCK = threading.Lock()
#: Validation results, so that a parsed file is validated once per process too, whatever
#: Catalog instance asks: (recipe path, taxonomy path) -> (recipe data, taxonomy data,
#: strategy names, issues); (taxonomy or strategy path, "taxonomy" or "strategy") ->
#: (data, issues). A hit needs the very objects the parse cache holds now.
_CHECKED = {}


def _normalize(value):
    """Dates become ``YYYY-MM-DD`` strings, so every consumer sees plain JSON types."""
    if isinstance(value, dict):
        return dict((k, _normalize(v)) for k, v in value.items())
    if isinstance(value, list):
        return [_normalize(v) for v in value]
    if isinstance(value, (datetime.date, datetime.datetime)):
        return value.strftime("%Y-%m-%d")
    return value


def load_yaml(path):
    """Parse a YAML file once per process (cache keyed by path, mtime and size).

    The returned object is shared: callers must not mutate it.
    """
    if not HAS_YAML:
        raise MissingDependencyError("llmfleet.vllm needs the Python package PyYAML on the controller: pip install PyYAML "
                                     "(see requirements.txt)")
    path = os.path.abspath(path)
    try:
        st = os.stat(path)
    except OSError as exc:
        raise RecipeNotFound("%s: cannot read: %s" % (path, exc.strerror or exc))
    key = (st.st_mtime_ns, st.st_size)
    hit = _CACHE.get(path)
    if hit is not None and hit[0] == key:
        return hit[1]
    try:
        with open(path, "rb") as handle:
            data = yaml.load(handle, Loader=_SafeLoader)  # nosec - SafeLoader
    except yaml.YAMLError as exc:
        raise RecipeValidationError([ValidationIssue(path, "", "not valid YAML: %s" % (exc,))])
    data = _normalize(data)
    with _CACHE_LOCK:
        _CACHE[path] = (key, data)
    return data


def _file_issues(path, kind, data):
    """Issues of a parsed taxonomy (``kind`` "taxonomy") or strategy file ("strategy"; its
    ``name`` must be the file name), checked once per parse."""
    key = (path, kind)
    hit = _CHECKED.get(key)
    if hit is not None and hit[0] is data:
        return hit[1]
    if kind == "taxonomy":
        issues = validate_taxonomy(data, path)
    else:
        issues = validate_strategy(data, path, expected_name=os.path.basename(path).rsplit(".", 1)[0])
    _CHECKED[key] = (data, issues)
    return issues


def scan_tree(root):
    """Walk a tree in the upstream layout: (recipes {id: path}, taxonomy path or None,
    strategy files {(folder, file name): path})."""
    recipes = {}
    models = os.path.join(root, "models")
    if os.path.isdir(models):
        for org in sorted(os.listdir(models)):
            org_dir = os.path.join(models, org)
            if not os.path.isdir(org_dir):
                continue
            for name in sorted(os.listdir(org_dir)):
                if name.endswith((".yaml", ".yml")) and not name.startswith("."):
                    recipes["%s/%s" % (org, name.rsplit(".", 1)[0])] = os.path.join(org_dir, name)
    taxonomy = os.path.join(root, "taxonomy.yaml")
    strategies = {}
    for sub in ("strategies", "kv_store"):
        sdir = os.path.join(root, sub)
        if os.path.isdir(sdir):
            for name in sorted(os.listdir(sdir)):
                if name.endswith((".yaml", ".yml")):
                    strategies[(sub, name)] = os.path.join(sdir, name)
    return recipes, (taxonomy if os.path.isfile(taxonomy) else None), strategies


class Catalog(object):
    """Recipes, taxonomy and strategies from a stack of trees (later trees win).

    ``paths``: a list of tree roots; ``None`` or empty means the built-in tree.
    ``validate``: check the taxonomy and the strategy files now, and each recipe the first
    time it is read, against the schemas and the semantic checks of ``recipe_schema``: the
    constructor, ``taxonomy``, ``strategies`` and ``recipe()`` raise
    :class:`RecipeValidationError` naming the file, the YAML path, the bad value and what
    is valid.
    """

    #: Seconds during which a file read through this catalog is not stat'ed again. Within one
    #: playbook run recipes do not change; the process-wide cache still re-parses a file
    #: whose mtime or size changed once this interval has passed.
    freshness = 1.0

    def __init__(self, paths=None, validate=True):
        if isinstance(paths, str):
            paths = [paths]
        self.paths = [os.path.abspath(os.path.expanduser(p)) for p in (paths or [BUILTIN_TREE])]
        self.validate = validate
        self._recipe_paths = {}
        self._lower = {}
        self._strategy_paths = []
        self._taxonomy_path = None
        for root in self.paths:
            if not os.path.isdir(root):
                raise RecipeNotFound("recipe tree %s does not exist (vllm_recipes_path)" % root)
            recipes, taxonomy, strategies = scan_tree(root)
            if not (recipes or taxonomy or strategies):
                raise RecipeNotFound(
                    "recipe tree %s has none of models/, taxonomy.yaml, strategies/ or kv_store/ "
                    "(expected the vllm-project/recipes layout)" % root)
            self._recipe_paths.update(recipes)
            if taxonomy:
                self._taxonomy_path = taxonomy
            self._strategy_paths.extend(strategies.values())
        if self._taxonomy_path is None:
            raise RecipeNotFound("no taxonomy.yaml in any recipe tree: %s" % ", ".join(self.paths))
        for rid in self._recipe_paths:
            self._lower[rid.lower()] = rid
        self._checked = {}
        self._valid_taxonomy = None
        self._strategies = None
        self._memo = {}
        if validate:  # refuse a broken tree now, with every problem of its taxonomy and strategies
            raise_for_issues(self._issues([self._taxonomy_path], "taxonomy") + self._issues(self._strategy_paths, "strategy"))

    def _load(self, path):
        """load_yaml, stat'ing the file at most once per ``freshness`` seconds."""
        now = time.monotonic()
        hit = self._memo.get(path)
        if hit is not None and now - hit[0] < self.freshness:
            return hit[1]
        data = load_yaml(path)
        self._memo[path] = (now, data)
        return data

    def _issues(self, paths, kind):
        """The issues of taxonomy or strategy files, as they are parsed now."""
        return [issue for path in paths for issue in _file_issues(path, kind, self._load(path))]

    # ------------------------------------------------------------------ taxonomy / strategies
    @property
    def taxonomy(self):
        data = self._load(self._taxonomy_path)
        if self.validate and self._valid_taxonomy is not data:
            raise_for_issues(_file_issues(self._taxonomy_path, "taxonomy", data))
            self._valid_taxonomy = data
        if not isinstance(data, dict) or not isinstance(data.get("hardware_profiles"), dict):
            raise RecipeValidationError([ValidationIssue(
                self._taxonomy_path, "hardware_profiles", "expected a map of hardware profiles")])
        return data

    @property
    def taxonomy_path(self):
        return self._taxonomy_path

    @property
    def hardware_profiles(self):
        return self.taxonomy["hardware_profiles"]

    @property
    def strategies(self):
        """Merged map of strategies/*.yaml and kv_store/*.yaml keyed by ``name``."""
        key = tuple(id(self._load(p)) for p in self._strategy_paths)
        if self._strategies is None or self._strategies[0] != key:
            if self.validate:
                raise_for_issues(self._issues(self._strategy_paths, "strategy"))
            merged = {}
            for path in self._strategy_paths:
                data = self._load(path)
                if not isinstance(data, dict) or not data.get("name"):
                    raise RecipeValidationError([ValidationIssue(path, "name", "a strategy file needs a `name`")])
                merged[data["name"]] = data
            self._strategies = (key, merged)
        return self._strategies[1]

    # ------------------------------------------------------------------ recipes
    def recipe_ids(self):
        return sorted(self._recipe_paths)

    def canonical_id(self, recipe_id):
        """The tree's spelling of a recipe id (HF ids are matched case-insensitively)."""
        if recipe_id in self._recipe_paths:
            return recipe_id
        rid = self._lower.get(str(recipe_id).lower())
        if rid is None:
            raise RecipeNotFound(_unknown("recipe", recipe_id, self.recipe_ids(), where=" in %s" % ", ".join(self.paths)))
        return rid

    def recipe_path(self, recipe_id):
        return self._recipe_paths[self.canonical_id(recipe_id)]

    def recipe(self, recipe_id):
        """The parsed recipe (validated on first use when ``validate`` is set)."""
        rid = self.canonical_id(recipe_id)
        path = self._recipe_paths[rid]
        data = self._load(path)
        if self.validate and self._checked.get(path) is not data:
            raise_for_issues(self.check_recipe(rid))
            self._checked[path] = data
        return data

    def check_recipe(self, recipe_id):
        """All schema and semantic issues (errors and warnings) of one recipe."""
        rid = self.canonical_id(recipe_id)
        path = self._recipe_paths[rid]
        data = self._load(path)
        taxonomy = self.taxonomy
        strategies = self.strategies
        key = (path, self._taxonomy_path)
        hit = _CHECKED.get(key)
        if hit is not None and hit[0] is data and hit[1] is taxonomy and hit[2] == sorted(strategies):
            return hit[3]
        issues = validate_recipe(data, path, taxonomy=taxonomy, strategy_ids=set(strategies), expected_id=rid)
        _CHECKED[key] = (data, taxonomy, sorted(strategies), issues)
        return issues


_DEFAULT_CATALOGS = {}


def get_catalog(paths=None, validate=True):
    """A process-wide Catalog per (paths, validate), so plugins share parsed data."""
    key = (tuple(paths) if isinstance(paths, (list, tuple)) else paths, validate)
    cat = _DEFAULT_CATALOGS.get(key)
    if cat is None:
        cat = Catalog(paths, validate=validate)
        _DEFAULT_CATALOGS[key] = cat
    return cat
