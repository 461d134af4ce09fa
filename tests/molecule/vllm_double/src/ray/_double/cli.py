# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmfleet contributors
# Apache License 2.0 (see LICENSE)
"""``ray`` entry point of the Ray test double (molecule only; NOT Ray).

* ``ray start --head [--port 6379] [--node-ip-address IP] [--num-gpus N] ... --block``: a GCS
  stand-in on the port (all interfaces), with this node registered in it.
* ``ray start --address H:P [--node-ip-address IP] [--num-gpus N] ... --block``: registers a node
  with the head and stays connected (retrying until ``VLLM_DOUBLE_RENDEZVOUS_TIMEOUT``); exits 1
  when the GCS goes away.
* ``ray status [--address H:P]``: the live nodes and total GPUs (exit 1: no GCS reachable).
* ``ray stop``: a no-op (the double only runs under ``--block``; systemd stops it).
* ``ray --version``.

``--num-gpus`` defaults to ``VLLM_DOUBLE_GPUS_PER_NODE`` or 1. Without ``--block``, ``ray start``
exits 2: the double does not daemonize.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import sys
import threading
import time

import ray
from ray._double import gcs

try:
    from ray._double import common  # copied into the wheel by build.py
except ImportError:  # the source tree: src/_llmfleet_double
    from _llmfleet_double import common


def _gpus_default():
    return float(os.environ.get("VLLM_DOUBLE_GPUS_PER_NODE") or 1)


def _bool(text):
    if text.lower() in ("true", "1", "yes"):
        return True
    if text.lower() in ("false", "0", "no"):
        return False
    raise argparse.ArgumentTypeError("expected true or false, got %r" % text)


def build_parser():
    ap = argparse.ArgumentParser(prog="ray", allow_abbrev=False, description="Ray test double (llmfleet.vllm molecule only; not Ray)")
    ap.add_argument("--version", action="version", version="ray, version %s" % ray.__version__)
    sub = ap.add_subparsers(dest="cmd", metavar="{start,status,stop}")
    sub.required = True
    s = sub.add_parser("start", allow_abbrev=False, help="start a head (GCS stand-in) or a worker node; needs --block")
    s.add_argument("--head", action="store_true")
    s.add_argument("--address")
    s.add_argument("--port", type=int, default=gcs.DEFAULT_PORT)
    s.add_argument("--node-ip-address")
    s.add_argument("--num-gpus", type=float)
    s.add_argument("--num-cpus", type=float)
    s.add_argument("--temp-dir")
    s.add_argument("--disable-usage-stats", action="store_true")
    s.add_argument("--dashboard-host")
    s.add_argument("--dashboard-port", type=int)
    s.add_argument("--include-dashboard", type=_bool)
    s.add_argument("--block", action="store_true")
    st = sub.add_parser("status", allow_abbrev=False, help="live nodes and GPUs of the cluster")
    st.add_argument("--address")
    sp = sub.add_parser("stop", allow_abbrev=False, help="no-op in the double")
    sp.add_argument("--force", "-f", action="store_true")
    sp.add_argument("--grace-period", "-g", type=int)
    return ap


def _install_stop():
    stop = threading.Event()

    def on_term(signum, _frame):
        gcs.log("received signal %d, shutting down" % signum)
        stop.set()

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)
    return stop


def _local_ip():
    try:
        return socket.gethostbyname(socket.gethostname())
    except OSError:
        return "127.0.0.1"


def _temp_dir(path, address):
    if not path:
        return
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, "ray_current_cluster"), "w") as fh:
        fh.write(address + "\n")


def start(args, ap):
    if args.head == bool(args.address):
        ap.error("ray start needs exactly one of --head or --address")
    if not args.block:
        sys.stderr.write("ray start: the llmfleet Ray test double only supports `ray start ... --block` "
                         "(run it in the foreground, e.g. as a systemd service); it does not daemonize\n")
        return 2
    gpus = args.num_gpus if args.num_gpus is not None else _gpus_default()
    stop = _install_stop()
    if args.head:
        ip = args.node_ip_address or _local_ip()
        head = {"node_id": gcs.new_node_id(), "node_ip": ip, "num_gpus": float(gpus), "is_head": True,
                "peer": None, "pid": os.getpid(), "hostname": socket.gethostname(), "env": common.node_env()}
        server = gcs.Gcs(args.port, head)
        err = server.start()
        if err:
            gcs.log(err, "ERROR")
            return 1
        _temp_dir(args.temp_dir, "%s:%d" % (ip, args.port))
        gcs.log("Local node IP: %s" % ip)
        gcs.log("Ray runtime started (llmfleet Ray TEST DOUBLE %s, not Ray): GCS on 0.0.0.0:%d, this node has %s GPUs"
                % (ray.__version__, args.port, gcs._num(float(gpus))))
        gcs.log("To add another node to this Ray cluster, run: ray start --address='%s:%d'" % (ip, args.port))
        gcs.log("--block: this command will now block until terminated by a signal")
        stop.wait()
        server.close()
        return 0
    host, port = gcs.parse_address(args.address)
    _temp_dir(args.temp_dir, "%s:%d" % (host, port))
    gcs.log("--block: joining the Ray cluster at %s:%d (llmfleet Ray TEST DOUBLE %s, not Ray)" % (
        host, port, ray.__version__))
    return gcs.run_worker_node(host, port, args.node_ip_address, float(gpus), stop)


def status(args):
    host, port = gcs.parse_address(args.address or os.environ.get("RAY_ADDRESS"))
    try:
        st = gcs.query_status(host, port)
    except (OSError, ValueError) as exc:
        sys.stderr.write("ConnectionError: Could not find any running Ray instance at %s:%d (%s). "
                         "Please specify the one to connect to by setting `--address` flag or `RAY_ADDRESS` "
                         "environment variable.\n" % (host, port, exc))
        return 1
    out = ["======== Autoscaler status: %s ========" % time.strftime("%Y-%m-%d %H:%M:%S"),
           "Node status", "-" * 63, "Active:"]
    for n in st["nodes"]:
        head = ", head" if n.get("is_head") else ""
        out.append(" 1 node_%s (%s%s, %s GPUs)" % (n["node_id"], n["node_ip"], head, gcs._num(float(n["num_gpus"]))))
    out += ["Pending:", " (no pending nodes)", "Recent failures:", " (no failures)", "", "Resources", "-" * 63,
            "Usage:", " 0.0/%.1f GPU" % float(st["total_gpus"]), "",
            "Demands:", " (no resource demands)",
            "(llmfleet Ray test double) live nodes: %d, total GPUs: %s" % (
                len(st["nodes"]), gcs._num(float(st["total_gpus"])))]
    sys.stdout.write("\n".join(out) + "\n")
    return 0


def main(argv=None):
    ap = build_parser()
    args = ap.parse_args(sys.argv[1:] if argv is None else argv)
    if args.cmd == "start":
        return start(args, ap)
    if args.cmd == "status":
        return status(args)
    sys.stdout.write("Did not find any active Ray processes. (the llmfleet Ray test double stops with its service)\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
