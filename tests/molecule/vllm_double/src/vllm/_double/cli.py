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
* ``VLLM_DOUBLE_RENDEZVOUS_TIMEOUT`` seconds a multi-node rendezvous may take (default 900)
* ``VLLM_DOUBLE_HEARTBEAT_TIMEOUT``  seconds without a heartbeat before a member is lost (default 5)

Multi-node (see cluster.py and the README): ``--nnodes``/``--node-rank``/``--master-addr``/
``--master-port`` form an ``mp`` group, ``--data-parallel-size`` > ``--data-parallel-size-local``
a ``dp`` group, ``--distributed-executor-backend ray`` (TP x PP > 1) waits for a Ray cluster
(the ``ray`` test double). The API server opens only once they are formed; a member lost after
that ends the process with status 1.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time

import vllm
from vllm._double import cluster

try:
    from vllm._double import common  # copied into the wheel by build.py
except ImportError:  # the source tree: src/_llmfleet_double
    from _llmfleet_double import common

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


INT_DESTS = ("port", "tensor_parallel_size", "pipeline_parallel_size", "nnodes", "node_rank", "master_port",
             "data_parallel_size", "data_parallel_size_local", "data_parallel_start_rank", "data_parallel_rank",
             "data_parallel_rpc_port")
STR_DESTS = ("model", "host", "master_addr", "data_parallel_address", "distributed_executor_backend")
BOOL_DESTS = ("headless", "data_parallel_hybrid_lb", "data_parallel_external_lb", "enable_expert_parallel")


def parse_serve_args(tokens, catalog):
    """The settings the double acts on, from an argv the checker accepted (keys are argparse dests).

    Options are found through the catalogue, so aliases (``-tp``, ``-dp``, ``-dpl``, ``-dpa``, ``-dpp``,
    ``-dph``, ``-n``, ``-r`` ...) and ``--no-`` forms work. Defaults are vLLM's: ``--port`` 8000,
    ``--master-addr`` 127.0.0.1, ``--master-port`` 29501, ``--data-parallel-rpc-port`` 29550.
    """
    out = {"model": None, "host": None, "port": 8000, "served_model_name": None, "api_key": None,
           "headless": False, "tensor_parallel_size": 1, "pipeline_parallel_size": 1, "nnodes": 1, "node_rank": 0,
           "master_addr": "127.0.0.1", "master_port": 29501, "data_parallel_size": 1,
           "data_parallel_size_local": None, "data_parallel_start_rank": None, "data_parallel_rank": None,
           "data_parallel_address": None, "data_parallel_rpc_port": 29550, "data_parallel_hybrid_lb": False,
           "data_parallel_external_lb": False, "enable_expert_parallel": False,
           "distributed_executor_backend": None, "kv_transfer_config": None}
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
        dest = entry.get("dest")
        values = []
        if not entry.get("takes_value"):
            if dest in BOOL_DESTS:
                out[dest] = not catalog.is_negative(base)
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
        if not values:
            continue
        if dest in INT_DESTS:
            try:
                out[dest] = int(values[0])
            except ValueError:
                pass
        elif dest in STR_DESTS:
            out[dest] = values[0]
        elif dest in ("served_model_name", "api_key"):
            out[dest] = values
        elif dest == "kv_transfer_config":
            out[dest] = _json_option(out[dest], name[len(base) + 1:] if name != base else None, values[0])
    return out


def _json_option(current, dotted, value):
    """``--X '{json}'`` or ``--X.key value`` (vLLM's dotted form) into a dict."""
    if dotted is None:
        try:
            doc = json.loads(value)
        except ValueError:
            return current
        return doc if isinstance(doc, dict) else current
    doc = dict(current or {})
    node = doc
    keys = dotted.split(".")
    for k in keys[:-1]:
        node = node.setdefault(k, {})
    try:
        node[keys[-1]] = json.loads(value)
    except ValueError:
        node[keys[-1]] = value
    return doc


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
    fatal = []
    fatal_lock = threading.Lock()

    def on_term(signum, _frame):
        log("received signal %d, shutting down" % signum)
        stop.set()

    def on_fatal(message):
        with fatal_lock:
            if fatal:
                return
            fatal.append(message)
        log("EngineCore died (%s); exiting with status 1" % message, "ERROR")
        stop.set()

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)
    topo = Topology(args)
    kv = args["kv_transfer_config"]
    if kv is not None:
        log("KV transfer: connector %s, role %s" % (kv.get("kv_connector"), kv.get("kv_role")))
    status = topo.form(stop, on_fatal)
    if status is not None:
        topo.close()
        return 1 if fatal else status
    if delay > 0 and not stop.is_set():
        log("loading model %s (simulated, %.1f s)" % (args["model"], delay))
        stop.wait(delay)
    if stop.is_set():
        return topo.finish(fatal)
    if os.environ.get("VLLM_DOUBLE_CRASH") == "1":
        log("EngineCore failed to start (VLLM_DOUBLE_CRASH=1)", "ERROR")
        topo.close()
        return 1
    if not topo.serves_http():
        if args["headless"]:
            log("headless worker: no API server; waiting for the head")
        else:
            log("node rank %d serves no API (vLLM runs the API server on node rank 0 only)" % args["node_rank"])
        stop.wait()
        return topo.finish(fatal)
    from vllm._double.server import make_server
    host = args["host"] or "0.0.0.0"
    srv = make_server(host, args["port"], {
        "model": args["model"], "served_model_names": names, "api_keys": api_keys, "version": ver,
        "argv": ["vllm", "serve"] + list(argv),
        "unhealthy": os.environ.get("VLLM_DOUBLE_UNHEALTHY") == "1",
        "cluster": topo.info, "kv_transfer_config": kv,
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
    return topo.finish(fatal)


class Topology(object):
    """The node's place in a multi-node replica, and the rendezvous that form it."""

    def __init__(self, args):
        self.args = args
        tp, pp = args["tensor_parallel_size"], args["pipeline_parallel_size"]
        self.dp_size = max(1, args["data_parallel_size"])
        if args["data_parallel_rank"] is not None and args["data_parallel_start_rank"] is None:
            self.dp_start = args["data_parallel_rank"]  # external LB: one rank per server
            self.dp_local = args["data_parallel_size_local"] or 1
        else:
            self.dp_start = args["data_parallel_start_rank"] or 0
            self.dp_local = args["data_parallel_size_local"] or (self.dp_size - self.dp_start)
        self.mp = args["nnodes"] > 1
        self.dp = self.dp_size > self.dp_local
        self.ray = (args["distributed_executor_backend"] or "") == "ray" and tp * pp > 1
        self.world = tp * pp
        self.signature = {"model": args["model"], "tensor_parallel_size": tp, "pipeline_parallel_size": pp,
                          "data_parallel_size": self.dp_size, "nnodes": args["nnodes"]}
        self.groups = []
        self.ray_driver = None
        self.ray_address = None

    def mode(self):
        parts = [m for m, on in (("mp", self.mp), ("dp", self.dp), ("ray", self.ray)) if on]
        return "+".join(parts) or "single"

    def serves_http(self):
        return not self.args["headless"] and not (self.mp and self.args["node_rank"] > 0)

    def form(self, stop, on_fatal):
        """Run the rendezvous this node takes part in; None when done, else the exit status."""
        a = self.args
        if self.ray and self._ray_client() is None:
            return 1  # vLLM fails on the missing module before any distributed setup
        if self.mp:
            log("multi-node (mp): node rank %d of %d, head %s:%d" % (
                a["node_rank"], a["nnodes"], a["master_addr"], a["master_port"]))
            status = self._form_group(cluster.MpSpec(a["nnodes"], a["node_rank"], a["master_addr"], a["master_port"],
                                                     self.signature), stop, on_fatal)
            if status is not None:
                return status
        if self.dp_size > 1:
            log("data parallel ranks %s of %d (start rank %d)" % (
                cluster.rank_range(self.dp_start, self.dp_local), self.dp_size, self.dp_start))
        if self.dp and self.mp and a["node_rank"] > 0:
            log("data parallel rendezvous: left to node rank 0 of this node's group")
        elif self.dp:
            addr = a["data_parallel_address"] or "127.0.0.1"
            status = self._form_group(cluster.DpSpec(self.dp_size, self.dp_local, self.dp_start, addr,
                                                     a["data_parallel_rpc_port"], self.signature), stop, on_fatal)
            if status is not None:
                return status
        if self.ray:
            return self._join_ray(stop, on_fatal)
        return None

    def _form_group(self, spec, stop, on_fatal):
        """Form the group of ``spec`` (kept in ``groups``); None when formed, else the exit status."""
        a = self.args
        hello = cluster.make_hello(spec, a["node_rank"], a["nnodes"], self.dp_start, self.dp_local, self.dp_size)
        group, status = cluster.run_group(spec, hello, on_fatal, stop)
        if group is not None:
            self.groups.append(group)
        return status

    @staticmethod
    def _ray_client():
        """The Ray double's (Driver, parse_address), or None after logging why Ray is unusable."""
        try:
            import ray  # pylint: disable=import-outside-toplevel
        except ImportError as exc:
            log("ModuleNotFoundError: %s" % exc, "ERROR")
            log("ValueError: Failed to import Ray: %s. Please install Ray with `pip install ray`. "
                "--distributed-executor-backend ray needs Ray in this image/venv (test double: "
                "`build.py image --with-ray`, or install the wheel from `build.py ray-wheel`)" % exc, "ERROR")
            return None
        try:
            from ray._double.gcs import Driver, parse_address  # pylint: disable=import-outside-toplevel
        except ImportError:
            log("ray %s is installed, but it is not the llmfleet Ray test double" % getattr(ray, "__version__", "?"),
                "ERROR")
            return None
        return Driver, parse_address

    def _join_ray(self, stop, on_fatal):
        client = self._ray_client()
        if client is None:
            return 1
        driver_cls, parse_address = client
        env_addr = os.environ.get("RAY_ADDRESS")
        host, port = parse_address(env_addr)
        self.ray_address = "%s:%d" % (host, port)
        log("connecting to the Ray cluster at %s (RAY_ADDRESS=%s); needs %d GPUs (tensor_parallel_size x "
            "pipeline_parallel_size)" % (self.ray_address, env_addr, self.world))
        deadline = time.time() + common.rendezvous_timeout()
        drv = driver_cls(host, port)
        if not drv.connect(deadline, stop):
            if stop.is_set():
                return 0
            log("gave up: no Ray cluster at %s within %g s (VLLM_DOUBLE_RENDEZVOUS_TIMEOUT)" % (
                self.ray_address, common.rendezvous_timeout()), "ERROR")
            return 1
        self.ray_driver = drv
        chunk = 1.0  # the first answer comes at once; then a note every 10 s, as vLLM's placement group wait
        while not drv.wait_gpus(self.world, min(deadline, time.time() + chunk), stop):
            chunk = 10.0
            if stop.is_set():
                drv.close()
                return 0
            if drv.gone:
                log("lost the Ray cluster at %s while waiting for GPUs (%s)" % (self.ray_address, drv.gone), "ERROR")
                return 1
            if time.time() >= deadline:
                log("gave up after %g s (VLLM_DOUBLE_RENDEZVOUS_TIMEOUT): the Ray cluster at %s has %g GPUs, "
                    "needs %d" % (common.rendezvous_timeout(), self.ray_address, drv.total_gpus, self.world), "ERROR")
                drv.close()
                return 1
            log("waiting for the Ray cluster at %s to have %d GPUs (it has %g on %d nodes); check `ray status`" % (
                self.ray_address, self.world, drv.total_gpus, len(drv.nodes)))
        log("Ray cluster at %s has %d nodes, %g GPUs (needs %d)" % (
            self.ray_address, len(drv.nodes), drv.total_gpus, self.world))

        def on_lost(message):
            log(message, "ERROR")
            on_fatal(message)

        drv.watch(on_lost)
        return None

    def close(self):
        for g in self.groups:
            g.close()
        if self.ray_driver is not None:
            self.ray_driver.close()

    def finish(self, fatal):
        if fatal:
            time.sleep(0.3)  # let the loss reach the other members before our sockets close
        self.close()
        return 1 if fatal else 0

    def joined(self):
        out = []
        for g in self.groups:
            out += g.joined()
        if self.ray_driver is not None:
            with self.ray_driver.cond:
                nodes = list(self.ray_driver.nodes)
            for n in nodes:
                entry = {"kind": "ray", "node_id": n.get("node_id"), "node_ip": n.get("node_ip"),
                         "num_gpus": n.get("num_gpus"), "is_head": n.get("is_head"), "peer": n.get("peer"),
                         "pid": n.get("pid"), "hostname": n.get("hostname"), "node_rank": None}
                for name in common.ENV_NAMES:
                    entry[name] = (n.get("env") or {}).get(name)
                out.append(entry)
        return out

    def info(self):
        a = self.args
        doc = {
            "mode": self.mode(), "node_rank": a["node_rank"], "nnodes": a["nnodes"],
            "master": "%s:%d" % (a["master_addr"], a["master_port"]) if self.mp else None,
            "headless": a["headless"], "tensor_parallel_size": a["tensor_parallel_size"],
            "pipeline_parallel_size": a["pipeline_parallel_size"],
            "enable_expert_parallel": a["enable_expert_parallel"],
            "distributed_executor_backend": a["distributed_executor_backend"],
            "joined": self.joined(),
            "dp_start_rank": self.dp_start, "dp_size": self.dp_size, "dp_size_local": self.dp_local,
            "dp_ranks": list(range(self.dp_start, self.dp_start + self.dp_local)),
            "dp_address": "%s:%d" % (a["data_parallel_address"] or "127.0.0.1", a["data_parallel_rpc_port"])
            if self.dp else None,
            "dp_hybrid_lb": a["data_parallel_hybrid_lb"], "dp_external_lb": a["data_parallel_external_lb"],
            "ray_address": self.ray_address,
            "ray_gpus": self.ray_driver.total_gpus if self.ray_driver is not None else None,
        }
        doc.update(common.node_env())
        return doc


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
