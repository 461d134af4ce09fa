# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmfleet contributors
# Apache License 2.0 (see LICENSE)
"""``vllm-router`` entry point of the router test double (molecule only; NOT vllm-router).

``vllm-router --policy round_robin --vllm-pd-disaggregation --prefill http://P:8001 [BOOTSTRAP_PORT]
--decode http://D:8002 --host H --port 30000 --intra-node-data-parallel-size 1``: ``--prefill`` and
``--decode`` repeat; a prefill URL may be followed by a bootstrap port (or ``none``), as upstream.
``--worker-urls`` (regular mode) round-robins every request over the workers. Unknown flags exit 2.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
import time

import vllm_router

POLICIES = ["random", "round_robin", "cache_aware", "power_of_two", "consistent_hash"]


def log(msg, level="INFO"):
    sys.stdout.write("%s %s [vllm-router-double] %s\n" % (time.strftime("%Y-%m-%dT%H:%M:%S"), level, msg))
    sys.stdout.flush()


def build_parser():
    ap = argparse.ArgumentParser(prog="vllm-router", allow_abbrev=False,
                                 description="vllm-router test double (llmfleet.vllm molecule only; not vllm-router)")
    ap.add_argument("--version", "-V", action="version", version="vllm-router %s" % vllm_router.__version__)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=30000)
    ap.add_argument("--policy", default="cache_aware", choices=POLICIES)
    ap.add_argument("--prefill-policy", choices=POLICIES)
    ap.add_argument("--decode-policy", choices=POLICIES)
    ap.add_argument("--vllm-pd-disaggregation", action="store_true")
    ap.add_argument("--pd-disaggregation", action="store_true")
    ap.add_argument("--prefill", action="append", nargs="+", default=[], metavar="URL [BOOTSTRAP_PORT]")
    ap.add_argument("--decode", action="append", default=[], metavar="URL")
    ap.add_argument("--worker-urls", nargs="*", default=[], metavar="URL")
    ap.add_argument("--intra-node-data-parallel-size", type=int, default=1)
    ap.add_argument("--dp-aware", action="store_true")
    ap.add_argument("--api-key")
    ap.add_argument("--log-level", default="info", choices=["debug", "info", "warn", "error"])
    ap.add_argument("--log-dir")
    ap.add_argument("--request-timeout-secs", type=int, default=1800)
    ap.add_argument("--worker-startup-timeout-secs", type=int, default=600)
    ap.add_argument("--worker-startup-check-interval", type=int, default=30)
    ap.add_argument("--health-check-timeout-secs", type=int, default=5)
    ap.add_argument("--prometheus-host", default="127.0.0.1")
    ap.add_argument("--prometheus-port", type=int, default=29000)
    return ap


def parse(argv):
    ap = build_parser()
    args = ap.parse_args(argv)
    prefill = []
    for entry in args.prefill:
        if len(entry) > 2:
            ap.error("argument --prefill: expected a URL and an optional bootstrap port, got %s" % " ".join(entry))
        port = None
        if len(entry) == 2 and entry[1].lower() != "none":
            try:
                port = int(entry[1])
            except ValueError:
                ap.error("argument --prefill: invalid bootstrap port %r (a number or none)" % entry[1])
        prefill.append({"url": entry[0].rstrip("/"), "bootstrap_port": port})
    decode = [{"url": u.rstrip("/")} for u in args.decode]
    for b in prefill + decode + [{"url": u} for u in args.worker_urls]:
        if not b["url"].startswith(("http://", "https://")):
            ap.error("worker URL %r must start with http:// or https://" % b["url"])
    pd = args.vllm_pd_disaggregation or args.pd_disaggregation
    if args.vllm_pd_disaggregation and args.pd_disaggregation:
        ap.error("--vllm-pd-disaggregation and --pd-disaggregation are mutually exclusive")
    if pd and (not prefill or not decode):
        ap.error("PD disaggregation mode requires --prefill and --decode URLs")
    if not pd and not args.worker_urls:
        ap.error("regular mode requires --worker-urls (or use --vllm-pd-disaggregation with --prefill/--decode)")
    return args, prefill, decode


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    args, prefill, decode = parse(argv)
    from vllm_router._double.server import make_server  # pylint: disable=import-outside-toplevel
    stop = threading.Event()

    def on_term(signum, _frame):
        log("received signal %d, shutting down" % signum)
        stop.set()

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)
    mode = "vllm-pd" if args.vllm_pd_disaggregation else ("pd" if args.pd_disaggregation else "regular")
    srv = make_server(args.host, args.port, {
        "argv": ["vllm-router"] + argv, "version": vllm_router.__version__, "mode": mode, "policy": args.policy,
        "prefill": prefill, "decode": decode, "workers": [{"url": u.rstrip("/")} for u in args.worker_urls],
        "api_key": args.api_key, "timeout": float(args.request_timeout_secs),
        "health_timeout": float(args.health_check_timeout_secs),
        "intra_node_data_parallel_size": args.intra_node_data_parallel_size,
    })
    log("vllm-router %s (llmfleet TEST DOUBLE, not vllm-router): mode %s, policy %s" % (
        vllm_router.__version__, mode, args.policy))
    for p in prefill:
        log("prefill %s (bootstrap port %s)" % (p["url"], p["bootstrap_port"]))
    for d in decode:
        log("decode %s" % d["url"])
    for w in args.worker_urls:
        log("worker %s" % w)
    log("listening on http://%s:%d" % (args.host, args.port))
    thread = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.2})
    thread.daemon = True
    thread.start()
    stop.wait()
    srv.shutdown()
    srv.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
