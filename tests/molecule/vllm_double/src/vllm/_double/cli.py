# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmfleet contributors
# Apache License 2.0 (see LICENSE)
"""``vllm`` entry point of the test double: ``vllm serve <model> [flags]``, ``vllm --version``.

The argv is checked against the flag catalogue of the double's vLLM version with the
collection's own checker (vllm_flags.check_args, copied into the wheel with the catalogue); any
problem ends the process with status 2 and an argparse-style message, as ``vllm serve`` does.

Environment knobs (test only):

* ``VLLM_API_KEY``                 the API key (like vLLM; ``--api-key`` wins)
* ``VLLM_DOUBLE_STARTUP_DELAY``    seconds before the port is bound (a real server loads the
                                   model first; probes get "connection refused" meanwhile)
* ``VLLM_DOUBLE_CRASH``            ``1``: exit 1 after the delay, like an engine that fails to load
* ``VLLM_DOUBLE_UNHEALTHY``        ``1``: ``/health`` answers 503 (engine dead)
* ``VLLM_DOUBLE_VERSION``          the vLLM version to emulate (default: the package version)
* ``VLLM_DOUBLE_CATALOG_DIR``      where the flag catalogues are (default: inside the package)
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time

import vllm

PROG = "vllm"


def _flags_module():
    try:
        from vllm._double import vllm_flags  # copied into the wheel by build.py
    except ImportError:  # source tree: the collection's own module
        from ansible_collections.llmfleet.vllm.plugins.module_utils import vllm_flags
    return vllm_flags


def _catalog_dir(flags):
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "catalog")
    return os.environ.get("VLLM_DOUBLE_CATALOG_DIR") or (here if os.path.isdir(here) else flags.CATALOG_DIR)


def version():
    return os.environ.get("VLLM_DOUBLE_VERSION") or vllm.__version__


def log(msg, level="INFO"):
    sys.stdout.write("%s %s [vllm-double] %s\n" % (level, time.strftime("%m-%d %H:%M:%S"), msg))
    sys.stdout.flush()


def usage_error(messages):
    sys.stderr.write("usage: vllm serve [model_tag] [options]\n")
    for m in messages:
        sys.stderr.write("vllm serve: error: %s\n" % m)
    sys.stderr.flush()
    return 2


def parse_serve_args(tokens, catalog):
    """The few settings the double acts on, from an argv the checker accepted.

    Returns a dict: model, host, port, served_model_name (list), api_key (list), headless.
    """
    out = {"model": None, "host": None, "port": 8000, "served_model_name": None, "api_key": None,
           "headless": False}
    i, n = 0, len(tokens)
    while i < n:
        tok = tokens[i]
        i += 1
        if not tok.startswith("-") or tok == "-" or _is_number(tok):
            if out["model"] is None:
                out["model"] = tok
            continue
        name, eq, joined = tok.partition("=")
        base = name.split(".", 1)[0]
        hit = catalog.lookup(base)
        if hit is None:
            continue  # abbreviations and -O3: the checker accepted them; the double ignores them
        _canon, entry = hit
        values = []
        if not entry.get("takes_value"):
            if entry.get("dest") == "headless":
                out["headless"] = True
            continue
        if eq:
            values = [joined]
        elif entry.get("nargs") in ("+", "*") and base == name:
            while i < n and not (tokens[i].startswith("-") and not _is_number(tokens[i])):
                values.append(tokens[i])
                i += 1
        elif i < n:
            values = [tokens[i]]
            i += 1
        dest = entry.get("dest")
        if dest == "model":
            out["model"] = values[0] if values else None
        elif dest == "host":
            out["host"] = values[0] if values else None
        elif dest == "port":
            out["port"] = int(values[0])
        elif dest in ("served_model_name", "api_key"):
            out[dest] = values
    return out


def _is_number(tok):
    try:
        float(tok)
        return True
    except ValueError:
        return False


def serve(argv):
    flags = _flags_module()
    cat_dir = _catalog_dir(flags)
    ver = version()
    full = ["vllm", "serve"] + list(argv)
    try:
        problems = flags.find_problems(full, ver, catalog_dir=cat_dir)
        cat_version, _note = flags.resolve_catalog_version(ver, cat_dir)
        catalog = flags.load_catalog(cat_version, cat_dir)
    except Exception as exc:  # a version without a catalogue: fail like a broken install
        return usage_error(["the test double cannot check flags for vLLM %s: %s" % (ver, exc)])
    if problems:
        msgs = []
        unknown = [p.flag for p in problems if p.code in ("unknown", "not-negatable")]
        if unknown:
            msgs.append("unrecognized arguments: %s" % " ".join(unknown))
        msgs += [p.message.split(": ", 1)[-1] for p in problems]
        return usage_error(msgs)
    args = parse_serve_args(list(argv), catalog)
    if not args["model"]:
        return usage_error(["the following arguments are required: model_tag"])
    api_keys = args["api_key"] or ([os.environ["VLLM_API_KEY"]] if os.environ.get("VLLM_API_KEY") else [])
    names = args["served_model_name"] or [args["model"]]
    log("vLLM API server version %s (llmfleet TEST DOUBLE, not vLLM)" % ver)
    log("non-default args: %s" % json.dumps(list(argv)))
    delay = float(os.environ.get("VLLM_DOUBLE_STARTUP_DELAY") or 0)
    stop = threading.Event()

    def on_term(signum, _frame):
        log("received signal %d, shutting down" % signum)
        stop.set()

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)
    if delay > 0:
        log("loading model %s (simulated, %.1f s)" % (args["model"], delay))
        if stop.wait(delay):
            return 0
    if os.environ.get("VLLM_DOUBLE_CRASH") == "1":
        log("EngineCore failed to start (VLLM_DOUBLE_CRASH=1)", "ERROR")
        return 1
    if args["headless"]:
        log("headless worker: no API server; waiting for the head")
        stop.wait()
        return 0
    from vllm._double.server import make_server
    host = args["host"] or "0.0.0.0"
    srv = make_server(host, args["port"], {
        "model": args["model"], "served_model_names": names, "api_keys": api_keys, "version": ver,
        "argv": ["vllm", "serve"] + list(argv),
        "unhealthy": os.environ.get("VLLM_DOUBLE_UNHEALTHY") == "1",
    })
    log("Starting vLLM API server on http://%s:%d" % (host, args["port"]))
    log("served model names: %s; API key %s" % (", ".join(names), "required" if api_keys else "not set"))
    thread = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.2})
    thread.daemon = True
    thread.start()
    log("Application startup complete.")
    stop.wait()
    srv.shutdown()
    srv.server_close()
    return 0


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        sys.stdout.write("usage: vllm [-v] {serve} ...\n(llmfleet vLLM test double %s)\n" % version())
        return 0 if argv else 2
    if argv[0] in ("-v", "--version"):
        sys.stdout.write("%s\n" % version())
        return 0
    if argv[0] != "serve":
        return usage_error(["argument subparser: invalid choice: %r (the test double knows only 'serve')" % argv[0]])
    return serve(argv[1:])


if __name__ == "__main__":
    sys.exit(main())
