#!/usr/bin/env python
"""Benchmark: resolve and render every in-scope record of the golden files, warm catalog.

    bench/resolve_bench.py [--recipes DIR ...] [--repeat N] [FILE.jsonl.gz ...]

Prints cases per second and the median / p95 time per case. The reference point is the
upstream JavaScript builder: 5,472 Qwen3.6 selection-matrix cases in 1.25 s of wall time,
node start-up included; our target is a median under 0.25 ms per case.
"""

from __future__ import print_function

import argparse
import glob
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tools"))
import _collection_path  # noqa: E402,F401  pylint: disable=wrong-import-position,unused-import
import golden_parity  # noqa: E402  pylint: disable=wrong-import-position

from ansible_collections.llmfleet.vllm.plugins.module_utils.catalog import Catalog  # noqa: E402
from ansible_collections.llmfleet.vllm.plugins.module_utils.render import format_command  # noqa: E402
from ansible_collections.llmfleet.vllm.plugins.module_utils.resolver import Resolver  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    ap.add_argument("--recipes", action="append")
    ap.add_argument("--repeat", type=int, default=3, help="timed passes over all cases (default 3)")
    ap.add_argument("files", nargs="*")
    args = ap.parse_args(argv)
    files = args.files or sorted(glob.glob(os.path.join(golden_parity.DEFAULT_RECIPES, "..", "golden", "*.jsonl.gz")))
    if not files:
        print("no golden files found; pass FILE.jsonl.gz", file=sys.stderr)
        return 2
    catalog = Catalog(args.recipes or [golden_parity.DEFAULT_RECIPES])
    resolver = Resolver(catalog)
    cases = []
    for path in files:
        for rec in golden_parity.read_records(path):
            _label, kwargs, dtype, _exp = golden_parity.case_inputs(rec)
            if kwargs is None or dtype in golden_parity.OUT_OF_SCOPE:
                continue
            if kwargs.get("pd_nodes") == "select":
                recipe = catalog.recipe(kwargs["recipe_id"])
                pick = resolver.pick_pd_nodes(recipe, recipe["variants"][kwargs["variant"]], resolver.hardware(kwargs["hardware"]))
                kwargs["pd_nodes"] = pick if isinstance(pick, dict) else None
            cases.append(kwargs)
    for kwargs in cases:  # warm-up: parse and validate every recipe once
        resolver.resolve(**kwargs)
    times = []
    clock = time.perf_counter
    wall0 = clock()
    for _pass in range(args.repeat):
        for kwargs in cases:
            t0 = clock()
            plan = resolver.resolve(**kwargs)
            for node in plan["nodes"]:
                format_command(node["argv"])
            times.append(clock() - t0)
    wall = clock() - wall0
    times.sort()
    median = statistics.median(times)
    p95 = times[int(len(times) * 0.95)]
    print("cases: %d x %d passes (%s)" % (len(cases), args.repeat, ", ".join(os.path.basename(f) for f in files)))
    print("throughput: %.0f cases/s (%.2f s wall for %d resolutions)" % (len(times) / wall, wall, len(times)))
    print("median: %.1f us per case (p95 %.1f us); target < 250 us" % (median * 1e6, p95 * 1e6))
    return 0


if __name__ == "__main__":
    sys.exit(main())
