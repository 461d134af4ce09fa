# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmfleet contributors
# Apache License 2.0 (see LICENSE)
"""Validation of vLLM recipe files, the taxonomy and strategy definitions.

Pure Python (no Ansible imports): usable from modules, plugins, tests and scripts.

Two layers:

* **Structure** -- ``data/schema/recipe.schema.json`` (JSON Schema draft 2020-12),
  checked with :mod:`jsonschema`. Types of every field the command builder reads are
  strict; display-only blocks accept extra keys.
* **Semantics** -- cross-references the schema cannot express: taxonomy hardware ids,
  strategy ids, the upstream ``validateFeatureModes`` rules, opt-in feature names and
  ``model.model_id`` against the file path.

This module checks parsed data only; reading the files of a tree, and calling these checks
on what it reads, is the catalog's job (``catalog.py``).

Every problem is a :class:`ValidationIssue` whose ``path`` is a YAML path such as
``variants.nvfp4.hardware_overrides.rtx_5090.extra_args[3]`` and whose ``message``
names the bad value and what was expected.

Dates: PyYAML loads an unquoted ``2026-04-16`` as :class:`datetime.date`. The
validator normalizes dates to ``YYYY-MM-DD`` strings (see :func:`normalize_yaml_types`)
before checking; the input is never modified.
"""

from __future__ import annotations

import datetime
import importlib
import importlib.util
import json
import os
import re

from .errors import RecipeError, RecipeValidationError, ValidationIssue

#: jsonschema is imported when the first validator is built: importing it costs tens of
#: milliseconds, and most processes that load this module (through the catalog) never
#: build one.
HAS_JSONSCHEMA = importlib.util.find_spec("jsonschema") is not None


ERROR = "error"
WARNING = "warning"

#: ``<collection root>/data/schema/recipe.schema.json``
SCHEMA_PATH = os.path.join(
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
    "data", "schema", "recipe.schema.json",
)

#: PD pool parallelism modes (``strategy_overrides.pd_cluster.<role>.parallelism``).
POOL_MODES = ("tp", "tep", "dep")
#: Keys that only mean something under ``strategy_overrides.pd_cluster``.
PD_ONLY_KEYS = ("prefill", "decode", "pool_modes", "router")
STRATEGY_DEPLOY_TYPES = ("single_node", "multi_node", "pd_cluster", "kv_store_lb")


class MissingDependencyError(RecipeError, ImportError):
    """A Python library needed for validation (jsonschema, PyYAML) is not installed."""


# --------------------------------------------------------------------------------------
# helpers: paths, values, dependency guards
# --------------------------------------------------------------------------------------

_PLAIN_KEY = re.compile(r"^[A-Za-z0-9_\-/+@:]+$")


def format_path(parts):
    """Render path parts as ``a.b[3].c`` (dots for keys, ``[i]`` for list indices).

    A key that is not a plain identifier-like word is rendered as ``["key"]``.
    """
    out = ""
    for part in parts:
        if isinstance(part, bool):
            part = str(part)
        if isinstance(part, int):
            out += "[%d]" % part
            continue
        key = str(part)
        if not _PLAIN_KEY.match(key):
            out += "[%s]" % json.dumps(key)
        elif out:
            out += "." + key
        else:
            out = key
    return out


def _type_name(value):
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "str"
    if isinstance(value, (list, tuple)):
        return "list"
    if isinstance(value, dict):
        return "map"
    if isinstance(value, datetime.datetime):
        return "datetime"
    if isinstance(value, datetime.date):
        return "date"
    return type(value).__name__


def describe_value(value, limit=60):
    """``int 8``, ``str '--x'``, ``bool true``, ``null``, ``map {...}`` -- for messages."""
    name = _type_name(value)
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool %s" % ("true" if value else "false")
    if isinstance(value, str):
        shown = repr(value)
    else:
        try:
            shown = json.dumps(value, sort_keys=False, default=str)
        except (TypeError, ValueError):
            shown = repr(value)
    if len(shown) > limit:
        shown = shown[:limit - 3] + "..."
    return "%s %s" % (name, shown)


def _ids(values):
    """Sorted, comma-separated list of ids for messages."""
    return ", ".join(sorted(str(v) for v in values))


def _jsonschema():
    """The :mod:`jsonschema` module, imported on first use; :class:`MissingDependencyError`
    (one line, no traceback) when it is missing, fails to import or is older than 4.0."""
    reason = "it is not installed"
    if HAS_JSONSCHEMA:
        try:
            module = importlib.import_module("jsonschema")
        except ImportError as exc:
            reason = "importing it failed: %s" % (str(exc).splitlines() or [type(exc).__name__])[0]
        else:
            if not hasattr(module, "Draft202012Validator"):
                raise MissingDependencyError(
                    "llmfleet.vllm needs the Python package jsonschema >= 4.0 (Draft 2020-12) on the controller, "
                    "found %s: pip install 'jsonschema>=4.0' (see requirements.txt)"
                    % getattr(module, "__version__", "an older version"))
            return module
    raise MissingDependencyError(
        "llmfleet.vllm needs the Python package jsonschema on the controller: pip install jsonschema "
        "(see requirements.txt); %s" % reason)


def normalize_yaml_types(data):
    """Return a copy of ``data`` with YAML dates as ``YYYY-MM-DD`` strings.

    ``datetime.datetime`` values become ISO timestamps (which the schema's date
    pattern rejects, on purpose). Containers are copied; the input is not modified.
    """
    if isinstance(data, dict):
        return dict((k, normalize_yaml_types(v)) for k, v in data.items())
    if isinstance(data, (list, tuple)):
        return [normalize_yaml_types(v) for v in data]
    if isinstance(data, datetime.datetime):
        return data.isoformat()
    if isinstance(data, datetime.date):
        return data.isoformat()
    return data


def split_issues(issues):
    """Return ``(errors, warnings)``."""
    errors = [i for i in issues if i.severity == ERROR]
    warnings = [i for i in issues if i.severity != ERROR]
    return errors, warnings


def raise_for_issues(issues):
    """Raise :class:`RecipeValidationError` with only the errors; return the warnings."""
    errors, warnings = split_issues(issues)
    if errors:
        raise RecipeValidationError(errors)
    return warnings


# --------------------------------------------------------------------------------------
# schema loading (cached)
# --------------------------------------------------------------------------------------

_CACHE = {}


def load_schema(path=None):
    """Return the parsed recipe JSON Schema (cached per path)."""
    path = path or SCHEMA_PATH
    key = ("schema", path)
    if key not in _CACHE:
        try:
            with open(path, "r") as handle:
                _CACHE[key] = json.load(handle)
        except (IOError, OSError) as exc:
            raise RecipeError("cannot read the recipe schema %s: %s" % (path, exc))
    return _CACHE[key]


def _inline_refs(node, defs, stack=()):
    """Replace local ``{"$ref": "#/$defs/x", ...}`` by a copy of ``$defs/x`` (merged
    with the sibling keys). The schema is not recursive, and inlining roughly halves
    validation time (no reference resolution per instance node)."""
    if isinstance(node, list):
        return [_inline_refs(item, defs, stack) for item in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/") and ref[len("#/$defs/"):] in defs \
            and ref not in stack:
        target = _inline_refs(defs[ref[len("#/$defs/"):]], defs, stack + (ref,))
        merged = dict(target)
        for key, value in node.items():
            if key != "$ref":
                merged[key] = _inline_refs(value, defs, stack)
        return merged
    return dict((key, value if key == "$defs" else _inline_refs(value, defs, stack))
                for key, value in node.items())


def _validator_for(name, schema_factory):
    key = ("validator", name)
    if key not in _CACHE:
        schema = schema_factory()
        cls = _jsonschema().Draft202012Validator
        cls.check_schema(schema)
        inlined = _inline_refs(schema, schema.get("$defs") or {})
        _CACHE[key] = cls(inlined)
    return _CACHE[key]


def get_recipe_validator():
    """The compiled Draft 2020-12 validator for recipes (built once per process)."""
    return _validator_for("recipe:%s" % SCHEMA_PATH, load_schema)


# --------------------------------------------------------------------------------------
# jsonschema error -> ValidationIssue
# --------------------------------------------------------------------------------------

_TYPE_WORDS = {
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "a boolean (true or false)",
    "array": "a list",
    "object": "a map",
    "null": "null",
}


def _expected(schema):
    """Human wording of what ``schema`` accepts."""
    if not isinstance(schema, dict):
        return "a valid value"
    if schema.get("x-expected"):
        return schema["x-expected"]
    if "enum" in schema:
        return "one of %s" % ", ".join(str(v) for v in schema["enum"])
    for word in ("anyOf", "oneOf"):
        if word in schema:
            return " or ".join(_expected(s) for s in schema[word])
    typ = schema.get("type")
    if isinstance(typ, list):
        return " or ".join(_TYPE_WORDS.get(t, t) for t in typ)
    if typ == "array" and isinstance(schema.get("items"), dict):
        inner = schema["items"].get("type")
        if inner == "string":
            return "a list of strings"
    if typ in _TYPE_WORDS:
        return _TYPE_WORDS[typ]
    return "a valid value"


def _is_type_mismatch(err):
    """True if ``err`` says the instance itself is the wrong kind of thing."""
    return not list(err.relative_path) and err.validator in ("type", "enum", "const")


def _pick_alternative(err):
    """For anyOf/oneOf: the most relevant sub-error, or None if every branch
    rejected the value's type outright (then the caller reports the union)."""
    by_branch = {}
    for sub in err.context or ():
        branch = sub.relative_schema_path[0] if sub.relative_schema_path else None
        by_branch.setdefault(branch, []).append(sub)
    candidates = []
    for subs in by_branch.values():
        if any(_is_type_mismatch(s) for s in subs):
            continue
        candidates.extend(subs)
    if not candidates:
        return None
    # Prefer the deepest error; best_match breaks ties the jsonschema way.
    deepest = max(len(list(c.absolute_path)) for c in candidates)
    candidates = [c for c in candidates if len(list(c.absolute_path)) == deepest]
    if len(candidates) == 1:
        return candidates[0]
    return _jsonschema().exceptions.best_match(candidates)


def _in_property_names(err):
    return "propertyNames" in list(err.relative_schema_path)[:-1] or \
        "propertyNames" in list(err.schema_path)[:-1]


def _schema_error_messages(err):
    """Yield ``(path_parts, message)`` for one jsonschema error."""
    path = list(err.absolute_path)
    validator = err.validator
    instance = err.instance
    schema = err.schema if isinstance(err.schema, dict) else {}

    if validator in ("anyOf", "oneOf"):
        sub = _pick_alternative(err)
        if sub is not None:
            yield from _schema_error_messages(sub)
            return
        yield path, "expected %s, got %s" % (_expected(schema), describe_value(instance))
        return

    if _in_property_names(err):
        yield path + [str(instance)], "invalid key %r: expected %s" % (instance, _expected(schema))
        return

    if validator == "required":
        present = instance if isinstance(instance, dict) else {}
        props = schema.get("properties") or {}
        for key in err.validator_value:
            if key in present:
                continue
            sub = props.get(key)
            if sub is None and isinstance(schema.get("additionalProperties"), dict):
                sub = schema["additionalProperties"]
            what = (" (%s)" % _expected(sub)) if sub is not None else ""
            yield path + [key], "required key %r is missing%s" % (key, what)
        return

    if validator == "additionalProperties":
        allowed = sorted(schema.get("properties") or {})
        present = instance if isinstance(instance, dict) else {}
        for key in present:
            if key in (schema.get("properties") or {}):
                continue
            yield path + [key], "unknown key %r: expected one of %s" % (key, ", ".join(allowed))
        return

    if validator == "enum":
        yield path, "expected one of %s, got %s" % (
            ", ".join(str(v) for v in err.validator_value), describe_value(instance))
        return

    if validator == "type":
        yield path, "expected %s, got %s" % (_expected(schema), describe_value(instance))
        return

    if validator in ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"):
        op = {"minimum": ">=", "exclusiveMinimum": ">", "maximum": "<=", "exclusiveMaximum": "<"}[validator]
        yield path, "expected %s (%s %s), got %s" % (
            _expected(schema), op, err.validator_value, describe_value(instance))
        return

    if validator == "minProperties":
        yield path, "expected %s with at least %d entr%s, got %s" % (
            _expected(schema), err.validator_value, "y" if err.validator_value == 1 else "ies",
            describe_value(instance))
        return

    if validator in ("minItems", "minLength"):
        yield path, "expected %s (not empty), got %s" % (_expected(schema), describe_value(instance))
        return

    if validator == "pattern":
        yield path, "expected %s, got %s" % (_expected(schema), describe_value(instance))
        return

    yield path, "%s (expected %s)" % (err.message, _expected(schema))


def _path_sort_key(parts):
    return [(0, p, "") if isinstance(p, int) and not isinstance(p, bool) else (1, 0, str(p)) for p in parts]


def _schema_issues(validator, instance, source):
    found = []
    for err in validator.iter_errors(instance):
        for parts, message in _schema_error_messages(err):
            found.append((parts, message))
    found.sort(key=lambda item: _path_sort_key(item[0]))
    issues, seen = [], set()
    for parts, message in found:
        path = format_path(parts)
        if (path, message) in seen:
            continue
        seen.add((path, message))
        issues.append(ValidationIssue(source, path, message, ERROR))
    return issues


# --------------------------------------------------------------------------------------
# semantic checks
# --------------------------------------------------------------------------------------

def _as_dict(value):
    return value if isinstance(value, dict) else {}


def _as_list(value):
    return value if isinstance(value, list) else []


class _Taxonomy(object):
    """Id sets derived from a parsed taxonomy.yaml."""

    def __init__(self, taxonomy):
        taxonomy = _as_dict(taxonomy)
        profiles = _as_dict(taxonomy.get("hardware_profiles"))
        self.profiles = set(str(k) for k in profiles)
        self.generations = set()
        self.brands = set()
        self.brands_lower = set()
        for prof in profiles.values():
            prof = _as_dict(prof)
            gen = prof.get("generation")
            for g in (gen if isinstance(gen, list) else [gen]):
                if isinstance(g, str):
                    self.generations.add(g)
            brand = prof.get("brand")
            if isinstance(brand, str):
                self.brands.add(brand)
                self.brands_lower.add(brand.lower())
        self.tasks = set()
        for task in _as_list(taxonomy.get("tasks")):
            if isinstance(task, dict) and isinstance(task.get("id"), str):
                self.tasks.add(task["id"])
            elif isinstance(task, str):
                self.tasks.add(task)
        self.strategies = set(s for s in _as_list(taxonomy.get("strategies")) if isinstance(s, str))
        self.kv_offload = set(str(k) for k in _as_dict(taxonomy.get("kv_offload")))
        # key families (spec 5.6)
        self.gen_keys = self.generations | set(["nvidia"])
        self.exact_or_gen = self.profiles | self.gen_keys
        self.hw_keyed = self.profiles | self.generations | self.brands_lower | set(["default"])


def _schema_checked(validator, data, source):
    """(normalized ``data``, its schema issues, a :class:`_Checker` adding to those issues).

    The checker is None when ``data`` is not a map: the semantic checks have nothing to read.
    """
    doc = normalize_yaml_types(data)
    issues = _schema_issues(validator, doc, source)
    return doc, issues, _Checker(source, issues) if isinstance(doc, dict) else None


class _Checker(object):
    def __init__(self, source, issues):
        self.source = source
        self.issues = issues

    def error(self, parts, message):
        self.issues.append(ValidationIssue(self.source, format_path(parts), message, ERROR))

    def warn(self, parts, message):
        self.issues.append(ValidationIssue(self.source, format_path(parts), message, WARNING))

    def keys_in(self, mapping, parts, valid, what, severity=ERROR, note=""):
        """Every key of ``mapping`` must be in ``valid``."""
        for key in _as_dict(mapping):
            if key not in valid:
                msg = "unknown %s %r%s; expected one of: %s" % (what, key, note, _ids(valid))
                if severity == ERROR:
                    self.error(parts + [key], msg)
                else:
                    self.warn(parts + [key], msg)

    def items_in(self, items, parts, valid, what):
        for idx, item in enumerate(_as_list(items)):
            if isinstance(item, str) and item not in valid:
                self.error(parts + [idx], "unknown %s %r; expected one of: %s" % (what, item, _ids(valid)))


def _check_feature_modes(chk, recipe):
    """The rules upstream ``validateFeatureModes`` enforces, plus opt-in feature names."""
    features = _as_dict(recipe.get("features"))
    variants = _as_dict(recipe.get("variants"))
    variant_keys = set(variants)

    for fkey, feat in features.items():
        if not isinstance(feat, dict):
            continue
        base = ["features", fkey]
        if "modes" not in feat:
            if "default_mode" in feat:
                chk.error(base + ["default_mode"],
                          "default_mode %r is set but feature %r has no modes; expected modes or no default_mode"
                          % (feat.get("default_mode"), fkey))
            continue
        modes = feat.get("modes")
        if not isinstance(modes, dict):
            continue  # the schema reports the type
        if not modes:
            chk.error(base + ["modes"], "expected a non-empty map of modes, got map {}")
            continue
        if "args" in feat:
            chk.error(base + ["args"],
                      "args cannot be combined with modes (feature %r has modes: %s); expected args inside each mode"
                      % (fkey, _ids(modes)))
        default_mode = feat.get("default_mode")
        if default_mode is not None and isinstance(default_mode, str) and default_mode not in modes:
            chk.error(base + ["default_mode"],
                      "unknown default_mode %r; expected one of the modes: %s" % (default_mode, _ids(modes)))
        for mkey, mode in modes.items():
            if not isinstance(mode, dict):
                continue
            for idx, vname in enumerate(_as_list(mode.get("variants"))):
                if isinstance(vname, str) and vname not in variant_keys:
                    chk.error(base + ["modes", mkey, "variants", idx],
                              "unknown variant %r; expected one of: %s" % (vname, _ids(variant_keys)))
        for vkey in variants:
            available = [m for m, mode in modes.items() if _mode_allows_variant(mode, vkey)]
            if not available:
                restrictions = "; ".join(
                    "%s -> [%s]" % (m, ", ".join(str(v) for v in _as_list(_as_dict(mode).get("variants"))))
                    for m, mode in modes.items())
                chk.error(base + ["modes"],
                          "no mode of feature %r is available for variant %r (mode variants: %s); expected at "
                          "least one mode without a variants list or listing %r" % (fkey, vkey, restrictions, vkey))

    modal = dict((k, f["modes"]) for k, f in features.items()
                 if isinstance(f, dict) and isinstance(f.get("modes"), dict) and f["modes"])
    for vkey, variant in variants.items():
        for fkey, mkey in _as_dict(_as_dict(variant).get("default_modes")).items():
            parts = ["variants", vkey, "default_modes", fkey]
            if fkey not in features:
                chk.error(parts, "unknown feature %r; expected one of the features with modes: %s"
                          % (fkey, _ids(modal) or "(none)"))
                continue
            if fkey not in modal:
                chk.error(parts, "feature %r has no modes; expected one of the features with modes: %s"
                          % (fkey, _ids(modal) or "(none)"))
                continue
            if not isinstance(mkey, str):
                continue
            modes = modal[fkey]
            if mkey not in modes:
                chk.error(parts, "unknown mode %r of feature %r; expected one of: %s" % (mkey, fkey, _ids(modes)))
                continue
            if not _mode_allows_variant(modes[mkey], vkey):
                allowed = [m for m, mode in modes.items() if _mode_allows_variant(mode, vkey)]
                chk.error(parts, "mode %r of feature %r is not available for variant %r (it is restricted to "
                                 "variants: %s); expected one of: %s"
                          % (mkey, fkey, vkey, ", ".join(str(v) for v in _as_list(modes[mkey].get("variants"))),
                             _ids(allowed) or "(none)"))

    feature_keys = set(features)
    chk.items_in(recipe.get("opt_in_features"), ["opt_in_features"], feature_keys, "feature")
    for fkey, feat in features.items():
        others = feature_keys - set([fkey])
        chk.items_in(_as_dict(feat).get("conflicts_with"), ["features", fkey, "conflicts_with"], others,
                     "feature")
    for hw, names in _as_dict(recipe.get("hardware_opt_in_features")).items():
        chk.items_in(names, ["hardware_opt_in_features", hw], feature_keys, "feature")


def _mode_allows_variant(mode, vkey):
    if not isinstance(mode, dict) or "variants" not in mode:
        return True
    return vkey in _as_list(mode.get("variants"))


def _check_taxonomy_ids(chk, recipe, tax):
    meta = _as_dict(recipe.get("meta"))
    # D5: meta.hardware ids missing from the taxonomy are ignored upstream -> warning.
    for hw in _as_dict(meta.get("hardware")):
        if hw not in tax.profiles:
            chk.warn(["meta", "hardware", hw],
                     "GPU id %r is not a taxonomy hardware profile and is ignored (deviation D5); known ids: %s"
                     % (hw, _ids(tax.profiles)))
    default_hw = meta.get("default_hardware")
    if isinstance(default_hw, str) and default_hw not in tax.profiles:
        chk.error(["meta", "default_hardware"], "unknown hardware profile %r; expected one of: %s"
                  % (default_hw, _ids(tax.profiles)))
    if tax.tasks:
        chk.items_in(meta.get("tasks"), ["meta", "tasks"], tax.tasks, "task")

    # recipe generation layer: generations + nvidia only (an exact id would be ignored)
    chk.keys_in(recipe.get("hardware_overrides"), ["hardware_overrides"], tax.gen_keys,
                "hardware_overrides key", note=" (the recipe-level layer is keyed by taxonomy generation or "
                                               "'nvidia'; exact GPU ids belong in variants.<v>.hardware_overrides)")

    for vkey, variant in _as_dict(recipe.get("variants")).items():
        variant = _as_dict(variant)
        base = ["variants", vkey]
        hos = _as_dict(variant.get("hardware_overrides"))
        chk.keys_in(hos, base + ["hardware_overrides"], tax.exact_or_gen, "hardware id")
        for key, block in hos.items():
            if key in tax.gen_keys and key not in tax.profiles and "docker_image" in _as_dict(block):
                chk.warn(base + ["hardware_overrides", key, "docker_image"],
                         "docker_image is only read from exact-GPU overrides and is ignored under the "
                         "generation key %r; expected it under a GPU id" % key)
        chk.items_in(variant.get("supported_hardware"), base + ["supported_hardware"], tax.profiles,
                     "hardware profile")
        if isinstance(variant.get("tp"), dict):
            chk.keys_in(variant["tp"], base + ["tp"], tax.hw_keyed, "hardware key")
        ph = _as_dict(variant.get("precision_hardware"))
        if isinstance(ph.get("brand"), str) and ph["brand"] not in tax.brands:
            chk.error(base + ["precision_hardware", "brand"], "unknown brand %r; expected one of: %s"
                      % (ph["brand"], _ids(tax.brands)))
        if isinstance(ph.get("generation"), str) and ph["generation"] not in tax.generations:
            chk.error(base + ["precision_hardware", "generation"], "unknown generation %r; expected one of: %s"
                      % (ph["generation"], _ids(tax.generations)))

    for fkey, feat in _as_dict(recipe.get("features")).items():
        feat = _as_dict(feat)
        base = ["features", fkey]
        chk.keys_in(feat.get("hardware_overrides"), base + ["hardware_overrides"], tax.gen_keys,
                    "hardware_overrides key", note=" (feature overrides are keyed by taxonomy generation or "
                                                   "'nvidia'; exact GPU ids are never consulted here)")
        for mkey, mode in _as_dict(feat.get("modes")).items():
            mode = _as_dict(mode)
            chk.keys_in(mode.get("hardware_overrides"), base + ["modes", mkey, "hardware_overrides"],
                        tax.hw_keyed, "hardware key")
            chk.keys_in(mode.get("hardware"), base + ["modes", mkey, "hardware"],
                        tax.profiles | tax.generations, "hardware id")

    for skey, so in _as_dict(recipe.get("strategy_overrides")).items():
        so = _as_dict(so)
        base = ["strategy_overrides", skey]
        chk.keys_in(so.get("hardware_overrides"), base + ["hardware_overrides"], tax.exact_or_gen, "hardware id")
        if isinstance(so.get("tp"), dict):
            chk.keys_in(so["tp"], base + ["tp"], tax.hw_keyed, "hardware key")
        for role in ("prefill", "decode"):
            block = _as_dict(so.get(role))
            chk.keys_in(block.get("hardware_overrides"), base + [role, "hardware_overrides"], tax.profiles,
                        "hardware profile", note=" (PD role overrides are keyed by exact GPU id only)")
            if isinstance(block.get("nodes"), dict):
                chk.keys_in(block["nodes"], base + [role, "nodes"], tax.hw_keyed, "hardware key")

    for skey, gates in _as_dict(recipe.get("strategy_hardware")).items():
        chk.keys_in(gates, ["strategy_hardware", skey], tax.hw_keyed, "hardware key")

    for skey, gates in _as_dict(recipe.get("kv_cache_strategy_hardware")).items():
        chk.keys_in(gates, ["kv_cache_strategy_hardware", skey], tax.profiles, "hardware profile")

    chk.keys_in(recipe.get("hardware_opt_in_features"), ["hardware_opt_in_features"], tax.profiles,
                "hardware profile")
    chk.keys_in(recipe.get("hardware_notes"), ["hardware_notes"], tax.profiles, "hardware profile",
                severity=WARNING, note=" (display only)")
    if tax.kv_offload:
        chk.keys_in(recipe.get("kv_offload_support"), ["kv_offload_support"], tax.kv_offload,
                    "KV-offload option")
    for idx, dep in enumerate(_as_list(recipe.get("dependencies"))):
        brand = _as_dict(dep).get("brand")
        if isinstance(brand, str) and tax.brands and brand not in tax.brands:
            chk.warn(["dependencies", idx, "brand"],
                     "unknown brand %r (the dependency is never shown); expected one of: %s"
                     % (brand, _ids(tax.brands)))
    omni = _as_dict(recipe.get("omni"))
    for idx, task in enumerate(_as_list(omni.get("tasks"))):
        chk.keys_in(_as_dict(task).get("hardware_overrides"), ["omni", "tasks", idx, "hardware_overrides"],
                    tax.hw_keyed, "hardware key")


def _check_strategy_ids(chk, recipe, known, kv_store_checked):
    chk.items_in(recipe.get("compatible_strategies"), ["compatible_strategies"], known, "strategy")
    ds = recipe.get("default_strategy")
    if isinstance(ds, str) and ds not in known:
        chk.error(["default_strategy"], "unknown strategy %r; expected one of: %s" % (ds, _ids(known)))
    chk.keys_in(recipe.get("strategy_overrides"), ["strategy_overrides"], known, "strategy")
    chk.keys_in(recipe.get("strategy_hardware"), ["strategy_hardware"], known, "strategy")
    if kv_store_checked:
        chk.keys_in(recipe.get("kv_cache_strategy_hardware"), ["kv_cache_strategy_hardware"], known, "strategy")
    for fkey, feat in _as_dict(recipe.get("features")).items():
        chk.items_in(_as_dict(feat).get("strategies"), ["features", fkey, "strategies"], known, "strategy")


def _check_strategy_min_gpus(chk, recipe, known, tax):
    smg = recipe.get("strategy_min_gpus")
    if not isinstance(smg, dict):
        return
    suffixes = set()
    for name in known:
        for prefix in ("multi_node_", "single_node_"):
            if name.startswith(prefix):
                suffixes.add(name[len(prefix):])
    strategy_keys = set(known) | suffixes | set(POOL_MODES)
    profiles = tax.profiles if tax is not None else set()
    for key, value in smg.items():
        parts = ["strategy_min_gpus", key]
        if key in strategy_keys:
            if isinstance(value, dict):
                chk.error(parts, "expected an integer GPU floor for strategy %r, got %s"
                          % (key, describe_value(value)))
        elif tax is not None and key in profiles:
            if isinstance(value, dict):
                chk.keys_in(value, parts, strategy_keys, "strategy or pool mode")
        elif tax is not None:
            chk.error(parts, "unknown key %r; expected a strategy id, a pool mode or a hardware profile: %s"
                      % (key, _ids(strategy_keys | profiles)))


def _check_pd_only_keys(chk, recipe):
    for skey, so in _as_dict(recipe.get("strategy_overrides")).items():
        if skey == "pd_cluster":
            continue
        for key in PD_ONLY_KEYS:
            if key in _as_dict(so):
                chk.warn(["strategy_overrides", skey, key],
                         "%r is only read under strategy_overrides.pd_cluster and is ignored for %r" % (key, skey))


def _check_misc(chk, recipe):
    for fkey, feat in _as_dict(recipe.get("features")).items():
        if "hardware" in _as_dict(feat):
            chk.warn(["features", fkey, "hardware"],
                     "features.<f>.hardware is never read by the builder (no gating effect); expected "
                     "modes.<m>.hardware, meta.hardware or variants.<v>.supported_hardware for gating")


def _check_model_id(chk, recipe, expected_id):
    model = _as_dict(recipe.get("model"))
    model_id = model.get("model_id")
    if not isinstance(model_id, str) or not model_id:
        return
    want = str(expected_id)
    if model_id.lower() == want.lower():
        return
    # A recipe may serve a quantized checkpoint by default and the path's checkpoint
    # through a variant (thinkingmachines/Inkling: model_id Inkling-NVFP4, variant bf16).
    for variant in _as_dict(recipe.get("variants")).values():
        vid = _as_dict(variant).get("model_id")
        if isinstance(vid, str) and vid.lower() == want.lower():
            return
    chk.error(["model", "model_id"],
              "model_id %r does not match the recipe id %r implied by the file path; expected %r "
              "(compared case-insensitively; a variant model_id equal to it also counts)"
              % (model_id, want, want))


def validate_recipe(data, source, taxonomy=None, strategy_ids=None, expected_id=None):
    """Validate one parsed recipe; return a list of :class:`ValidationIssue`.

    :param data: the recipe as loaded by ``yaml.safe_load`` (not modified).
    :param source: the file path, used in every issue.
    :param taxonomy: parsed ``taxonomy.yaml``; enables hardware/task/KV-offload id checks.
    :param strategy_ids: iterable (or dict) of known strategy and kv_store names; enables the
        strategy id checks. Without it, the taxonomy's ``strategies`` list is used if given.
    :param expected_id: the recipe id implied by the path (``Qwen/X`` for ``models/Qwen/X.yaml``).
    """
    recipe, issues, chk = _schema_checked(get_recipe_validator(), data, source)
    if chk is None:
        return issues
    _check_feature_modes(chk, recipe)
    _check_misc(chk, recipe)
    _check_pd_only_keys(chk, recipe)
    tax = _Taxonomy(taxonomy) if taxonomy is not None else None
    if tax is not None:
        _check_taxonomy_ids(chk, recipe, tax)
    known = None
    if strategy_ids is not None:
        known = set(str(s) for s in strategy_ids)
    elif tax is not None and tax.strategies:
        known = set(tax.strategies)
    if known is not None:
        _check_strategy_ids(chk, recipe, known, kv_store_checked=strategy_ids is not None)
        _check_strategy_min_gpus(chk, recipe, known, tax)
    if expected_id is not None:
        _check_model_id(chk, recipe, expected_id)
    return issues


# --------------------------------------------------------------------------------------
# taxonomy and strategies
# --------------------------------------------------------------------------------------

def _d(name):
    return {"$ref": "#/$defs/%s" % name}


_COMMON_DEFS = {
    "string": {"type": "string", "x-expected": "a string"},
    "nonEmptyString": {"type": "string", "minLength": 1, "x-expected": "a non-empty string"},
    "bool": {"type": "boolean", "x-expected": "a boolean (true or false)"},
    "args": {"type": "array", "items": {"type": "string", "x-expected": "a string"},
             "x-expected": "a list of strings (vllm serve argv tokens)"},
    "idList": {"type": "array", "items": {"type": "string", "minLength": 1, "x-expected": "a non-empty string"},
               "x-expected": "a list of ids (strings)"},
    "env": {"type": "object", "x-expected": "a map of environment variable names to string values",
            "propertyNames": {"type": "string", "pattern": "^[A-Za-z_][A-Za-z0-9_]*$",
                              "x-expected": "an environment variable name matching [A-Za-z_][A-Za-z0-9_]*"},
            "additionalProperties": {"type": ["string", "number"],
                                     "x-expected": "a string or number (quote booleans, e.g. \"1\")"}},
    "posInt": {"type": "integer", "minimum": 1, "x-expected": "a positive integer"},
}


def _taxonomy_schema():
    defs = dict(_COMMON_DEFS)
    profile = {
        "type": "object", "x-expected": "a hardware profile map",
        "required": ["brand", "generation", "gpu_count", "vram_gb"],
        "properties": {
            "brand": _d("nonEmptyString"),
            "generation": {"x-expected": "a generation string or a list of them",
                           "anyOf": [_d("nonEmptyString"), {"type": "array", "minItems": 1,
                                                            "items": _d("nonEmptyString"),
                                                            "x-expected": "a list of generation strings"}]},
            "display_name": _d("string"), "description": _d("string"),
            "gpu_count": _d("posInt"),
            "vram_gb": {"type": "number", "exclusiveMinimum": 0, "x-expected": "a positive number (GB per node)"},
            "multi_node": _d("bool"), "scalable": _d("bool"), "restricted": _d("bool"),
        },
    }
    kv_option = {
        "type": "object", "x-expected": "a KV-offload option map",
        "properties": {
            "display_name": _d("string"), "label": _d("string"), "description": _d("string"),
            "order": {"type": "number", "x-expected": "a number"},
            "group": _d("nonEmptyString"), "requires_opt_in": _d("bool"),
            "brands": _d("idList"), "strategies": _d("idList"), "args": _d("args"), "env": _d("env"),
            "install": _d("string"), "docs_url": _d("string"),
            "companion": {"type": "object", "x-expected": "a map {label, description?, command}",
                          "required": ["command"], "properties": {"command": _d("string")}},
        },
    }
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object", "x-expected": "a taxonomy map",
        "required": ["hardware_profiles"],
        "properties": {
            "hardware_profiles": {"type": "object", "minProperties": 1, "additionalProperties": profile,
                                  "x-expected": "a map of GPU ids to hardware profiles",
                                  "propertyNames": {"pattern": "^[a-z0-9_]+$",
                                                    "x-expected": "a lower-case id ([a-z0-9_]+)"}},
            "tasks": {"type": "array", "x-expected": "a list of task maps {id, display_name, description}",
                      "items": {"type": "object", "required": ["id"], "x-expected": "a task map {id, ...}",
                                "properties": {"id": _d("nonEmptyString")}}},
            "strategies": _d("idList"),
            "kv_offload": {"type": "object", "additionalProperties": kv_option,
                           "x-expected": "a map of KV-offload option ids to options"},
            "kv_offload_groups": {"type": "object", "x-expected": "a map of group ids to group maps",
                                  "additionalProperties": {"type": "object", "x-expected": "a group map"}},
        },
        "$defs": defs,
    }


def _strategy_schema():
    defs = dict(_COMMON_DEFS)
    role = {
        "type": "object", "x-expected": "a PD role map {vllm_args?, env?, parallelism?, tp?, parallel_flag?}",
        "properties": {
            "vllm_args": _d("args"), "args": _d("args"), "env": _d("env"),
            "parallelism": {"enum": list(POOL_MODES), "x-expected": "one of tp, tep, dep"},
            "tp": _d("posInt"), "parallel_flag": _d("nonEmptyString"),
        },
    }
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object", "x-expected": "a strategy map",
        "required": ["name", "deploy_type"],
        "properties": {
            "name": {"type": "string", "pattern": "^[a-z0-9_]+$", "x-expected": "a lower-case id ([a-z0-9_]+)"},
            "deploy_type": {"enum": list(STRATEGY_DEPLOY_TYPES),
                            "x-expected": "one of %s" % ", ".join(STRATEGY_DEPLOY_TYPES)},
            "display_name": _d("string"), "label": _d("string"), "description": _d("string"),
            "orientation": _d("string"),
            "order": {"type": "number", "x-expected": "a number"},
            "hardware_match": {"type": "object", "x-expected": "a map (never read by the builder)"},
            "vllm_args": _d("args"),
            "parallel_flag": {"type": "string", "pattern": "^--[a-z0-9-]+$", "x-expected": "a flag such as --tensor-parallel-size"},
            "parallelism": {"enum": ["tp_pp", "tp_dp"], "x-expected": "one of tp_pp, tp_dp"},
            "env": _d("env"),
            "prefill": role, "decode": role,
            "router": {"type": "object", "x-expected": "a router map {policy, install?, port?}",
                       "properties": {"policy": _d("nonEmptyString"), "install": _d("string"),
                                      "port": {"type": "integer", "minimum": 1, "maximum": 65535,
                                               "x-expected": "a TCP port (1-65535)"}}},
            "vllm": {"type": "object", "x-expected": "a map {vllm_args, env, install, port}",
                     "properties": {"vllm_args": _d("args"), "env": _d("env"),
                                    "install": {"type": "object", "x-expected": "a brand map of install commands",
                                                "additionalProperties": _d("string")},
                                    "port": {"type": "integer", "minimum": 1, "maximum": 65535,
                                             "x-expected": "a TCP port (1-65535)"}}},
            "pd": {"type": "object", "x-expected": "a map {prefill: {args}, decode: {args}}",
                   "properties": {"prefill": role, "decode": role}},
            "min_vllm_version": {"type": "string", "x-expected": "a version string such as \"0.21.0\""},
            "default_instances": _d("posInt"),
        },
        "$defs": defs,
    }


def validate_taxonomy(data, source):
    """Structural checks of ``taxonomy.yaml``; returns a list of :class:`ValidationIssue`."""
    tax, issues, chk = _schema_checked(_validator_for("taxonomy", _taxonomy_schema), data, source)
    if chk is None:
        return issues
    info = _Taxonomy(tax)
    groups = set(_as_dict(tax.get("kv_offload_groups")))
    seen = set()
    for idx, task in enumerate(_as_list(tax.get("tasks"))):
        tid = _as_dict(task).get("id")
        if tid in seen:
            chk.error(["tasks", idx, "id"], "duplicate task id %r; expected unique ids" % tid)
        seen.add(tid)
    for key, option in _as_dict(tax.get("kv_offload")).items():
        option = _as_dict(option)
        group = option.get("group")
        if isinstance(group, str) and group not in groups:
            chk.error(["kv_offload", key, "group"], "unknown kv_offload group %r; expected one of: %s"
                      % (group, _ids(groups) or "(none defined)"))
        chk.items_in(option.get("brands"), ["kv_offload", key, "brands"], info.brands, "brand")
        if info.strategies:
            chk.items_in(option.get("strategies"), ["kv_offload", key, "strategies"], info.strategies, "strategy")
    return issues


def validate_strategy(data, source, expected_name=None):
    """Structural checks of a ``strategies/*.yaml`` or ``kv_store/*.yaml`` file.

    ``expected_name``: the file stem; ``name`` must equal it.
    """
    strat, issues, chk = _schema_checked(_validator_for("strategy", _strategy_schema), data, source)
    if chk is None:
        return issues
    name = strat.get("name")
    if expected_name is not None and isinstance(name, str) and name != expected_name:
        chk.error(["name"], "name %r does not match the file name; expected %r" % (name, expected_name))
    dtype = strat.get("deploy_type")
    if dtype == "pd_cluster":
        for role in ("prefill", "decode"):
            if not isinstance(strat.get(role), dict):
                chk.error([role], "a pd_cluster strategy needs a %s block; expected a map {vllm_args, env}" % role)
    if dtype == "kv_store_lb" and not isinstance(strat.get("vllm"), dict):
        chk.error(["vllm"], "a kv_store_lb strategy needs a vllm block; expected a map {vllm_args, env}")
    return issues
