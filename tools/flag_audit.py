# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmfleet contributors
# Apache License 2.0 (see LICENSE)
"""Check every ``vllm serve`` argv of the golden renderings against the flag catalogues.

    python3 tools/flag_audit.py [--golden FILE ...] [--recipes DIR] [--catalog-dir DIR]
                        [--json OUT.json] [--strict]

Each argv (any list ``["vllm", "serve", ...]`` anywhere in a record: ``argv``,
``head_argv``, ``worker_argvs``, ``prefill.argv``, ``result.headArgv``, ...) is
checked twice:

* at the recipe's own minimum vLLM version: max(``model.min_vllm_version``,
  the rendered variant's ``min_vllm_version``, and for kv_store records the
  record's ``kv_min_vllm_version``), mapped to the newest catalogue not newer
  than it; a minimum older than every catalogue is checked at the oldest
  catalogue (0.17.0) and the report says so;
* at the newest catalogue.

Prints a compact report per recipe (flag -> problem -> catalogue version, with
how many argvs and which variants/hardware) and a summary.  ``--json`` writes
the same as data.  Exit status: 0, or 1 with ``--strict`` when any argv is
rejected at its recipe's own minimum version.

Defaults: ``--golden ../shared/golden/*.jsonl.gz``, ``--recipes ../shared/recipes``.
"""

from __future__ import print_function

import argparse
import collections
import glob
import gzip
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _collection_path  # noqa: E402  pylint: disable=wrong-import-position

from ansible_collections.llmfleet.vllm.plugins.module_utils import vllm_flags  # noqa: E402

DEFAULT_SHARED = os.path.join(os.path.dirname(_collection_path.ROOT), "shared")


def iter_argvs(obj, path=""):
    """Yield ``(path, argv)`` for every ``["vllm", "serve", ...]`` list inside a record."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from iter_argvs(v, path + "." + k if path else k)
    elif isinstance(obj, list):
        if len(obj) >= 2 and obj[0] == "vllm" and obj[1] == "serve" and all(isinstance(x, (str, int, float)) for x in obj):
            yield path, [str(x) for x in obj]
        else:
            for i, v in enumerate(obj):
                yield from iter_argvs(v, "%s[%d]" % (path, i))


def load_recipes(recipes_dir):
    """``{recipe id: {"model_min": str|None, "variants": {name: min|None}, "file": path}}``."""
    import yaml

    out = {}
    models = os.path.join(recipes_dir, "models")
    for dirpath, _dirs, files in os.walk(models):
        for fn in sorted(files):
            if not fn.endswith((".yaml", ".yml")):
                continue
            path = os.path.join(dirpath, fn)
            with open(path) as fh:
                doc = yaml.safe_load(fh) or {}
            model = doc.get("model") or {}
            variants = {}
            for name, v in (doc.get("variants") or {}).items():
                variants[name] = (v or {}).get("min_vllm_version")
            info = {
                "model_min": model.get("min_vllm_version"),
                "variants": variants,
                "file": os.path.relpath(path, recipes_dir),
            }
            rid = os.path.splitext(os.path.relpath(path, models))[0].replace(os.sep, "/")
            out[rid] = info
            if model.get("model_id"):
                out.setdefault(model["model_id"], info)
    return out


def _vkey(v):
    return vllm_flags._version_key(v)


def effective_minimum(recipe, variant, record):
    """``(version or None, explanation)``: max of model, variant and kv_store minimums."""
    parts = []
    if recipe is not None:
        if recipe.get("model_min"):
            parts.append(("model", str(recipe["model_min"])))
        vmin = (recipe.get("variants") or {}).get(variant)
        if vmin:
            parts.append(("variant %s" % variant, str(vmin)))
    kv = record.get("kv_min_vllm_version")
    if kv:
        parts.append(("kv_store", str(kv)))
    if not parts:
        return None, "no min_vllm_version"
    best = max(parts, key=lambda p: _vkey(p[1]))
    others = [p for p in parts if p is not best]
    why = "%s %s" % best
    if others:
        why += " (%s)" % ", ".join("%s %s" % p for p in others)
    return best[1], why


def record_variant(rec):
    if "variant" in rec:
        return rec.get("variant")
    return (rec.get("inputs") or {}).get("variant")


def record_hardware(rec):
    if "hardware" in rec:
        return rec.get("hardware")
    return (rec.get("inputs") or {}).get("hw")


def audit(golden_files, recipes, catalog_dir=None):
    versions = vllm_flags.available_versions(catalog_dir)
    if not versions:
        raise SystemExit("no flag catalogues found")
    oldest, newest = versions[0], versions[-1]
    stats = collections.Counter()
    per_recipe = collections.OrderedDict()
    cache = {}
    missing_recipes = set()

    def check(argv, cat_v):
        key = (tuple(argv), cat_v)
        probs = cache.get(key)
        if probs is None:
            probs = vllm_flags.find_problems(argv, cat_v, catalog_dir=catalog_dir)
            cache[key] = probs
        return probs
    for path in golden_files:
        with gzip.open(path, "rt") as fh:
            for line in fh:
                if not line.strip():
                    continue
                rec = json.loads(line)
                stats["records"] += 1
                rid = rec.get("recipe")
                variant = record_variant(rec)
                hw = record_hardware(rec)
                recipe = recipes.get(rid)
                if recipe is None:
                    missing_recipes.add(rid)
                min_v, why = effective_minimum(recipe, variant, rec)
                ceiling = None
                if min_v is None:
                    cat_min, note = oldest, "no minimum version known; checked at the oldest catalogue, %s" % oldest
                    certainty = "older-minimum"
                elif _vkey(min_v) < _vkey(oldest):
                    cat_min, note = oldest, "minimum %s is older than every catalogue; checked at %s" % (min_v, oldest)
                    certainty = "older-minimum"
                else:
                    cat_min, note = vllm_flags.resolve_catalog_version(min_v, catalog_dir)
                    certainty = "exact" if not note else "floor"
                    if note:
                        newer = [v for v in versions if _vkey(v) > _vkey(min_v)]
                        ceiling = newer[0] if newer else None
                r = per_recipe.setdefault(
                    rid,
                    {
                        "records": 0,
                        "argvs": 0,
                        "minimums": {},
                        "findings": collections.OrderedDict(),
                        "file": (recipe or {}).get("file"),
                    },
                )
                r["records"] += 1
                mk = "%s|%s" % (variant, min_v)
                r["minimums"].setdefault(
                    mk, {"variant": variant, "min": min_v, "from": why, "catalog": cat_min, "note": note}
                )
                for where, argv in iter_argvs(rec):
                    stats["argvs"] += 1
                    r["argvs"] += 1
                    for label, cat_v in (("own-minimum", cat_min), ("newest", newest)):
                        probs = check(argv, cat_v)
                        if probs:
                            stats["rejected-" + label] += 1
                        ceiling_keys = None
                        if label == "own-minimum" and probs and certainty == "floor":
                            ceiling_keys = set((p.flag, p.code) for p in check(argv, ceiling)) if ceiling else None
                        for p in probs:
                            if label == "newest":
                                cert = "newest"
                            elif certainty != "floor":
                                cert = certainty
                            elif ceiling_keys is None:
                                cert = "floor-only"
                            elif (p.flag, p.code) in ceiling_keys:
                                cert = "likely"
                            else:
                                cert = "inconclusive"
                            fk = (label, cat_v, p.flag, p.code, cert, min_v if label == "own-minimum" else None)
                            f = r["findings"].setdefault(
                                fk,
                                {
                                    "check": label,
                                    "catalog": cat_v,
                                    "minimum": min_v if label == "own-minimum" else None,
                                    "certainty": cert,
                                    "ceiling": ceiling if cert in ("likely", "inconclusive") else None,
                                    "flag": p.flag,
                                    "code": p.code,
                                    "message": p.message,
                                    "argvs": 0,
                                    "variants": set(),
                                    "hardware": set(),
                                    "fields": set(),
                                },
                            )
                            f["argvs"] += 1
                            f["variants"].add(str(variant))
                            f["hardware"].add(str(hw))
                            f["fields"].add(where.split("[")[0])
    return {
        "stats": stats,
        "recipes": per_recipe,
        "versions": versions,
        "missing_recipes": sorted(x for x in missing_recipes if x),
    }


def _short(values, n=6):
    values = sorted(values)
    if len(values) > n:
        return ",".join(values[:n]) + ",+%d" % (len(values) - n)
    return ",".join(values)


CERTAINTY = {
    "exact": "the minimum has its own catalogue",
    "likely": "no catalogue for the minimum; the catalogues before and after it both reject this",
    "inconclusive": "no catalogue for the minimum; the older catalogue rejects this, the next newer one accepts it",
    "floor-only": "the minimum is newer than every catalogue; checked at the newest",
    "older-minimum": "the minimum is older than every catalogue; checked at the oldest",
    "newest": "checked at the newest catalogue",
}


def _finding_tag(f):
    if f["check"] == "newest":
        return "[newest %s]" % f["catalog"]
    tag = "[own minimum %s" % (f["minimum"] or "?")
    if f["minimum"] != f["catalog"]:
        tag += " -> catalogue %s" % f["catalog"]
    if f["certainty"] == "likely":
        tag += ", %s rejects it too" % f["ceiling"]
    elif f["certainty"] == "inconclusive":
        tag += ", inconclusive: %s accepts it" % f["ceiling"]
    elif f["certainty"] == "older-minimum":
        tag += ", minimum older than every catalogue"
    return tag + "]"


def format_report(result):
    lines = []
    st = result["stats"]
    versions = result["versions"]
    lines.append(
        "flag audit: %d records, %d argvs, %d recipes; catalogues %s"
        % (st["records"], st["argvs"], len(result["recipes"]), ", ".join(versions))
    )
    summary = collections.OrderedDict((k, []) for k in ("exact", "likely", "inconclusive", "older-minimum", "floor-only", "newest"))
    for rid, r in result["recipes"].items():
        findings = list(r["findings"].values())
        if not findings:
            continue
        by_variant = collections.OrderedDict()
        for m in sorted(r["minimums"].values(), key=lambda m: (str(m["variant"]), _vkey(m["min"] or "0"))):
            text = m["min"] or "?"
            if m["min"] != m["catalog"]:
                text += "->%s" % m["catalog"]
            if m["from"].startswith("kv_store"):
                text += " (kv_store)"
            by_variant.setdefault(str(m["variant"]), []).append(text)
        mins = ["%s: %s" % (v, ", ".join(t)) for v, t in by_variant.items()]
        lines.append("")
        lines.append("%s  (%d records, %d argvs; minimum vLLM by variant: %s)" % (rid, r["records"], r["argvs"], "; ".join(mins)))
        for f in sorted(findings, key=lambda f: (f["check"] != "own-minimum", _vkey(f["catalog"]), f["flag"], str(f["minimum"]))):
            lines.append(
                "  %s %s (%s): %d argvs; variants %s; hw %s"
                % (_finding_tag(f), f["flag"], f["code"], f["argvs"], _short(f["variants"]), _short(f["hardware"]))
            )
            lines.append("      %s" % f["message"])
            summary[f["certainty"]].append((rid, f))
    lines.append("")
    lines.append("summary:")
    lines.append(
        "  argvs rejected at their recipe's own minimum version: %d of %d; at the newest catalogue (%s): %d"
        % (st["rejected-own-minimum"], st["argvs"], versions[-1], st["rejected-newest"])
    )
    titles = {
        "exact": "rejected by the recipe's own minimum version (exact catalogue)",
        "likely": "rejected at the own minimum (no exact catalogue; older and newer catalogues both reject)",
        "inconclusive": "inconclusive (no exact catalogue; the next newer catalogue accepts it)",
        "older-minimum": "minimum older than every catalogue, rejected by the oldest catalogue",
        "floor-only": "minimum newer than every catalogue, rejected by the newest",
        "newest": "rejected by the newest catalogue",
    }
    any_own = False
    for cert, items in summary.items():
        if not items:
            continue
        if cert != "newest":
            any_own = True
        lines.append("  %s:" % titles[cert])
        for rid, f in items:
            where = f["catalog"] if f["check"] == "newest" or f["minimum"] == f["catalog"] else "%s (for %s)" % (f["catalog"], f["minimum"])
            lines.append("    %s: %s (%s) at %s [%d argvs]" % (rid, f["flag"], f["code"], where, f["argvs"]))
    if not any_own:
        lines.append("  no recipe renders a flag its own minimum vLLM version rejects")
    if result["missing_recipes"]:
        lines.append("  recipes without a YAML file (checked at %s): %s" % (versions[0], ", ".join(result["missing_recipes"])))
    return "\n".join(lines)


def to_jsonable(result):
    out = {
        "stats": dict(result["stats"]),
        "versions": result["versions"],
        "missing_recipes": result["missing_recipes"],
        "recipes": {},
    }
    for rid, r in result["recipes"].items():
        out["recipes"][rid] = {
            "file": r["file"],
            "records": r["records"],
            "argvs": r["argvs"],
            "minimums": r["minimums"],
            "findings": [
                dict(
                    (k, sorted(v) if isinstance(v, set) else v)
                    for k, v in f.items()
                )
                for f in r["findings"].values()
            ],
        }
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    ap.add_argument("--golden", nargs="+", help="golden .jsonl.gz files (default: ../shared/golden/*.jsonl.gz)")
    ap.add_argument("--recipes", help="recipes directory holding models/ (default: ../shared/recipes)")
    ap.add_argument("--catalog-dir", help="flag catalogues (default: the collection's data/vllm_cli)")
    ap.add_argument("--json", help="also write the results as JSON here")
    ap.add_argument("--strict", action="store_true", help="exit 1 when an argv is rejected at its own minimum version")
    args = ap.parse_args(argv)
    golden = args.golden or sorted(glob.glob(os.path.join(DEFAULT_SHARED, "golden", "*.jsonl.gz")))
    if not golden:
        ap.error("no golden files given or found under %s" % DEFAULT_SHARED)
    recipes = load_recipes(args.recipes or os.path.join(DEFAULT_SHARED, "recipes"))
    result = audit(golden, recipes, args.catalog_dir)
    print(format_report(result))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(to_jsonable(result), fh, indent=1, sort_keys=True)
            fh.write("\n")
    if args.strict and result["stats"]["rejected-own-minimum"]:
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
