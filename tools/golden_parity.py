#!/usr/bin/env python
"""Re-resolve every record of the upstream builder's golden files and compare.

    tools/golden_parity.py [--recipes DIR ...] FILE.jsonl.gz ...

Both record shapes of the golden README are understood:

* JSON-API renderings (recipe, variant, hardware, strategy, node_count; default features,
  PD pool sizes chosen as the JSON API does);
* selection-matrix cases (inputs: variant, hw, strategy, nodeCount, features in order,
  featureModes, kvOffload, advancedArgs).

Compared: argv, env (minus keys that provenance attributes to deviation D1), docker image and
GPU device flags; for multi-node the head and every worker argv; for PD both pools and the
router. Only out-of-scope deploy types (Mooncake ``kv_store_lb``) are skipped.

Prints each mismatch compactly and ends with ``N passed, M failed, K skipped``; exits 1
when M > 0.
"""

from __future__ import print_function

import argparse
import collections
import gzip
import io
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _collection_path  # noqa: E402,F401  pylint: disable=wrong-import-position,unused-import

from ansible_collections.llmfleet.vllm.plugins.module_utils.catalog import Catalog  # noqa: E402
from ansible_collections.llmfleet.vllm.plugins.module_utils.errors import RecipeError  # noqa: E402
from ansible_collections.llmfleet.vllm.plugins.module_utils.render import format_command  # noqa: E402
from ansible_collections.llmfleet.vllm.plugins.module_utils.resolver import ADVANCED_PRESETS, Resolver  # noqa: E402

DEFAULT_RECIPES = os.path.join(_collection_path.ROOT, "..", "shared", "recipes")
OUT_OF_SCOPE = ("kv_store_lb",)


def read_records(path):
    opener = gzip.open if path.endswith(".gz") else io.open
    with opener(path, "rt", encoding="utf-8") as handle:
        for line in handle:
            line = line.strip()
            if line:
                yield json.loads(line)


def presets_for(raw_args):
    """Map a raw advanced-args list back to preset ids (the matrix stores the args)."""
    ids = []
    i = 0
    raw = list(raw_args or [])
    while i < len(raw):
        for pid, (args, _gate) in ADVANCED_PRESETS.items():
            if raw[i:i + len(args)] == args:
                ids.append(pid)
                i += len(args)
                break
        else:
            raise ValueError("advanced args %r match no preset" % (raw[i:],))
    return ids


def case_inputs(rec):
    """(label, resolver kwargs, deploy type, expectations) for one record, or None to skip."""
    if "inputs" in rec:
        inp = rec["inputs"]
        res = rec.get("result") or {}
        dtype = res.get("deployType")
        label = "case %s %s %s/%s/%s n=%s" % (rec.get("case"), rec["recipe"], inp["variant"], inp["hw"], inp["strategy"], inp["nodeCount"])
        kwargs = dict(recipe_id=rec["recipe"], variant=inp["variant"], hardware=inp["hw"], strategy=inp["strategy"],
                      node_count=inp["nodeCount"], features=inp.get("features") or [],
                      feature_modes=inp.get("featureModes"), kv_offload=inp.get("kvOffload"),
                      advanced=presets_for(inp.get("advancedArgs")), pd_nodes=inp.get("pdNodes"))
        exp = {"image": rec.get("docker_image")}
        argv = (rec.get("docker") or {}).get("argv")
        if argv and "--ipc=host" in argv:
            exp["gpu_flags_list"] = argv[2:argv.index("--ipc=host")]
        if dtype == "single_node":
            exp.update(argv=res.get("argv"), env=res.get("env"), command=res.get("command"))
        elif dtype == "multi_node":
            exp.update(head_argv=res.get("headArgv"), worker_argvs=res.get("workerArgvs"), env=res.get("env"),
                       command=res.get("headCommand"))
        elif dtype == "pd_cluster":
            exp.update(prefill=res.get("prefill"), decode=res.get("decode"), router=(res.get("router") or {}).get("command"))
        if inp.get("kvOffload") in OUT_OF_SCOPE or (rec.get("error") is None and dtype in OUT_OF_SCOPE):
            return label, None, dtype, exp
        if str(inp.get("kvOffload") or "").startswith("kv_store_"):
            return label, None, "kv_store_lb", exp
        return label, kwargs, dtype, exp
    dtype = rec.get("deploy_type")
    label = "%s %s/%s/%s n=%s" % (rec["recipe"], rec["variant"], rec["hardware"], rec["strategy"], rec["node_count"])
    kwargs = dict(recipe_id=rec["recipe"], variant=rec["variant"], hardware=rec["hardware"], strategy=rec["strategy"],
                  node_count=rec["node_count"])
    exp = {"image": rec.get("docker_image")}
    argv = rec.get("docker_argv") or rec.get("head_docker_argv")
    if argv and "--ipc=host" in argv:
        exp["gpu_flags_list"] = argv[2:argv.index("--ipc=host")]
    if dtype == "single_node":
        exp.update(argv=rec.get("argv"), env=rec.get("env"), command=rec.get("command"))
    elif dtype == "multi_node":
        exp.update(head_argv=rec.get("head_argv"), worker_argvs=rec.get("worker_argvs"), env=rec.get("env"),
                   command=rec.get("head_command"))
    elif dtype == "pd_cluster":
        exp.update(prefill=rec.get("prefill"), decode=rec.get("decode"), router=(rec.get("router") or {}).get("command"))
        kwargs["pd_nodes"] = "select"
    return label, kwargs, dtype, exp


def comparable_env(node):
    """Our env as upstream would render it: keys set by deviation D1 removed (or restored)."""
    env = {}
    for key, value in node["env"].items():
        prov = node["env_provenance"].get(key) or {}
        if "(D1)" in prov.get("source", ""):
            for older in prov.get("replaced", []):
                if "(D1)" not in older["source"]:
                    env[key] = older["value"]
                    break
            continue
        env[key] = value
    return env


def str_env(env):
    return dict((k, v if isinstance(v, str) else json.dumps(v) if isinstance(v, bool) else str(v)) for k, v in (env or {}).items())


def diff_list(want, got):
    if want == got:
        return None
    i = 0
    while i < min(len(want), len(got)) and want[i] == got[i]:
        i += 1
    return "at [%d]: want %s got %s" % (i, json.dumps(want[i:i + 4]), json.dumps(got[i:i + 4]))


def diff_env(want, got):
    want, got = str_env(want), dict(got)
    if want == got:
        return None
    parts = []
    for k in sorted(set(want) | set(got)):
        if want.get(k) != got.get(k):
            parts.append("%s: want %r got %r" % (k, want.get(k), got.get(k)))
    return "; ".join(parts)


def compare(resolver, kwargs, dtype, exp):
    if kwargs.get("pd_nodes") == "select":
        recipe = resolver.catalog.recipe(kwargs["recipe_id"])
        variant = recipe["variants"][kwargs["variant"]]
        pick = resolver.pick_pd_nodes(recipe, variant, resolver.hardware(kwargs["hardware"]))
        kwargs["pd_nodes"] = pick if isinstance(pick, dict) else None
    plan = resolver.resolve(**kwargs)
    problems = []
    if plan["deploy_type"] != dtype:
        problems.append("deploy_type: want %s got %s" % (dtype, plan["deploy_type"]))
        return problems
    if exp.get("image") is not None and plan["image"] != exp["image"]:
        problems.append("image: want %s got %s" % (exp["image"], plan["image"]))
    # upstream's docker argv is <gpu flags> --privileged --ipc=host ...; --privileged is D7
    if exp.get("gpu_flags_list") is not None and plan["docker_gpu_flags"] + ["--privileged"] != exp["gpu_flags_list"]:
        problems.append("gpu flags: want %r got %r" % (exp["gpu_flags_list"], plan["docker_gpu_flags"] + ["--privileged"]))
    nodes = plan["nodes"]
    if exp.get("command") is not None and format_command(nodes[0]["argv"]) != exp["command"]:
        problems.append("command: want %r got %r" % (exp["command"], format_command(nodes[0]["argv"])))
    if dtype == "single_node":
        d = diff_list(exp["argv"], nodes[0]["argv"])
        if d:
            problems.append("argv " + d)
        d = diff_env(exp.get("env"), comparable_env(nodes[0]))
        if d:
            problems.append("env " + d)
    elif dtype == "multi_node":
        d = diff_list(exp["head_argv"], nodes[0]["argv"])
        if d:
            problems.append("head argv " + d)
        workers = exp.get("worker_argvs") or []
        if len(workers) != len(nodes) - 1:
            problems.append("workers: want %d got %d" % (len(workers), len(nodes) - 1))
        for i, (want, node) in enumerate(zip(workers, nodes[1:])):
            d = diff_list(want, node["argv"])
            if d:
                problems.append("worker %d argv %s" % (i + 1, d))
        for node in nodes:
            d = diff_env(exp.get("env"), comparable_env(node))
            if d:
                problems.append("%s %d env %s" % (node["role"], node["rank"], d))
                break
    elif dtype == "pd_cluster":
        for role in ("prefill", "decode"):
            want = exp.get(role) or {}
            node = next(n for n in nodes if n["role"] == role and n["rank"] == int(want.get("currentNode") or 0))
            d = diff_list(want.get("argv") or [], node["argv"])
            if d:
                problems.append("%s argv %s" % (role, d))
            d = diff_env(want.get("env"), comparable_env(node))
            if d:
                problems.append("%s env %s" % (role, d))
        if exp.get("router") is not None and plan["router"]["command"] != exp["router"]:
            problems.append("router: want %r got %r" % (exp["router"], plan["router"]["command"]))
    return problems


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    ap.add_argument("--recipes", action="append", help="recipe tree (repeatable; later trees win); default ../shared/recipes")
    ap.add_argument("--max-show", type=int, default=50, help="mismatches to print in full (default 50)")
    ap.add_argument("--no-validate", dest="validate", action="store_false", help="skip schema validation of the recipes")
    ap.add_argument("files", nargs="+")
    args = ap.parse_args(argv)
    catalog = Catalog(args.recipes or [DEFAULT_RECIPES], validate=args.validate)
    resolver = Resolver(catalog)
    passed = failed = skipped = 0
    skipped_by = collections.Counter()
    failed_by = collections.Counter()
    shown = 0
    for path in args.files:
        for rec in read_records(path):
            label, kwargs, dtype, exp = case_inputs(rec)
            if kwargs is None or dtype in OUT_OF_SCOPE:
                skipped += 1
                skipped_by[dtype] += 1
                continue
            try:
                problems = compare(resolver, kwargs, dtype, exp)
            except RecipeError as exc:
                problems = ["error: %s" % exc]
            if problems:
                failed += 1
                failed_by[rec["recipe"]] += 1
                if shown < args.max_show:
                    shown += 1
                    print("FAIL %s [%s]" % (label, os.path.basename(path)))
                    for p in problems:
                        print("  " + p)
            else:
                passed += 1
    if failed_by:
        print("failures by recipe: " + ", ".join("%s=%d" % kv for kv in failed_by.most_common()))
    if skipped_by:
        print("skipped (out of scope): " + ", ".join("%s=%d" % kv for kv in sorted(skipped_by.items())))
    print("%d passed, %d failed, %d skipped" % (passed, failed, skipped))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
