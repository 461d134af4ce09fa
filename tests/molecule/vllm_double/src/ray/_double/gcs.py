# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmfleet contributors
# Apache License 2.0 (see LICENSE)
"""The GCS stand-in of the Ray test double, its nodes and its drivers (standard library only).

Line-JSON over TCP (one JSON object per line)::

    node   -> {"op": "register", "node_ip": ..., "num_gpus": n, "pid": p, "hostname": h, "env": {...}}
           <- {"op": "registered", "node_id": "<56 hex>", "nodes": [...], "total_gpus": g}
    driver -> {"op": "driver", "pid": p}
           <- {"op": "nodes", "nodes": [...], "total_gpus": g}     now and on every change
    status -> {"op": "status"}   <- {"op": "status", "nodes": [...], "total_gpus": g}, then closed
    {"op": "hb"} both ways on node and driver connections, every heartbeat interval

A node whose connection drops or whose heartbeats stop for ``VLLM_DOUBLE_HEARTBEAT_TIMEOUT``
seconds is removed from the cluster (the drivers are told); a node that loses the GCS exits 1.
"""

from __future__ import annotations

import hashlib
import os
import socket
import sys
import threading
import time
import uuid

try:
    from ray._double import common  # copied into the wheel by build.py
except ImportError:  # the source tree: src/_llmfleet_double
    from _llmfleet_double import common

DEFAULT_PORT = 6379


def log(msg, level="INFO"):
    sys.stdout.write("%s %s [ray-double] %s\n" % (time.strftime("%Y-%m-%d %H:%M:%S"), level, msg))
    sys.stdout.flush()


def parse_address(address, default_port=DEFAULT_PORT):
    """``H:P`` / ``ray://H:P`` / ``auto`` / None -> (host, port)."""
    address = (address or "auto").strip()
    if "://" in address:
        address = address.split("://", 1)[1]
    if address in ("auto", "local", ""):
        return "127.0.0.1", default_port
    host, sep, port = address.rpartition(":")
    if not sep:
        return address, default_port
    return host.strip("[]"), int(port)


def new_node_id():
    return hashlib.sha224(uuid.uuid4().bytes).hexdigest()


def connect(host, port, deadline, stop, what):
    """A socket connected to the GCS, retrying every RETRY_INTERVAL until ``deadline``; None on timeout/stop."""

    def note(exc):
        log("Unable to connect to GCS at %s:%d (%s); retrying every %.1f s while waiting for %s" % (
            host, port, exc.strerror or exc, common.RETRY_INTERVAL, what))

    return common.connect(host, port, deadline, stop, note)


class Gcs(common.Hub):
    """The head: a GCS stand-in that keeps the node table."""

    def __init__(self, port, head_node):
        common.Hub.__init__(self)
        self.port = port
        self.nodes = {}
        self.order = []
        self.drivers = []
        self._add(dict(head_node, conn=None))

    def start(self, bind="0.0.0.0"):
        try:
            self.listen(bind, self.port)
        except OSError as exc:
            return "Failed to start the GCS server on port %d: %s" % (self.port, exc)
        self.serve()
        return None

    def _conns(self):
        with self.lock:
            return [n["conn"] for n in self.nodes.values() if n["conn"] is not None] + list(self.drivers)

    def summary(self):
        with self.lock:
            nodes = [dict((k, v) for k, v in self.nodes[i].items() if k != "conn") for i in self.order]
        return {"nodes": nodes, "total_gpus": sum(n["num_gpus"] for n in nodes)}

    def _add(self, node):
        self.nodes[node["node_id"]] = node
        self.order.append(node["node_id"])

    def _notify(self):
        msg = dict(self.summary(), op="nodes")
        with self.lock:
            drivers = list(self.drivers)
        for d in drivers:
            d.try_send(msg)

    def _handle(self, sock):
        conn = common.Conn(sock, common.heartbeat_timeout())
        try:
            msg = conn.recv_skip_hb() or {}
        except (OSError, ValueError):
            msg = {}
        op = msg.get("op")
        if op == "status":
            conn.try_send(dict(self.summary(), op="status"))
            conn.close()
        elif op == "register":
            self._register(conn, msg)
        elif op == "driver":
            with self.lock:
                self.drivers.append(conn)
            log("driver (pid %s) connected from %s" % (msg.get("pid"), conn.peer))
            conn.try_send(dict(self.summary(), op="nodes"))
            why = common.read_until_gone(conn)
            with self.lock:
                self.drivers.remove(conn)
            log("driver (pid %s) from %s disconnected (%s)" % (msg.get("pid"), conn.peer, why))
            conn.close()
        else:
            conn.try_send({"op": "error", "reason": "unknown request %r" % op})
            conn.close()

    def _register(self, conn, msg):
        try:
            gpus = float(msg.get("num_gpus"))
        except (TypeError, ValueError):
            conn.try_send({"op": "error", "reason": "num_gpus must be a number"})
            conn.close()
            return
        node = {"node_id": new_node_id(), "node_ip": msg.get("node_ip") or conn.peer, "num_gpus": gpus,
                "is_head": False, "peer": conn.peer, "pid": msg.get("pid"), "hostname": msg.get("hostname"),
                "env": msg.get("env") or {}, "conn": conn}
        with self.lock:
            self._add(node)
        summary = self.summary()
        log("node %s (%s) joined with %s GPUs; the cluster has %d nodes, %s GPUs" % (
            node["node_ip"], node["node_id"][:8], _num(gpus), len(summary["nodes"]), _num(summary["total_gpus"])))
        conn.try_send(dict(summary, op="registered", node_id=node["node_id"]))
        self._notify()
        why = common.read_until_gone(conn)
        with self.lock:
            self.nodes.pop(node["node_id"], None)
            self.order.remove(node["node_id"])
        log("node %s (%s) is dead (%s); removed from the cluster" % (node["node_ip"], node["node_id"][:8], why),
            "WARNING")
        conn.close()
        self._notify()


def _num(x):
    return ("%.1f" % x).rstrip("0").rstrip(".") if isinstance(x, float) else str(x)


def query_status(host, port, timeout=5.0):
    """The GCS's status dict; raises OSError when unreachable."""
    sock = socket.create_connection((host, port), timeout=timeout)
    conn = common.Conn(sock, timeout)
    try:
        conn.send({"op": "status"})
        reply = conn.recv_skip_hb()
    except ValueError as exc:
        raise OSError("bad answer from %s:%d: %s" % (host, port, exc))
    finally:
        conn.close()
    if not reply or reply.get("op") != "status":
        raise OSError("%s:%d did not answer like a Ray GCS" % (host, port))
    return reply


def run_worker_node(host, port, node_ip, num_gpus, stop):
    """``ray start --address H:P --block``: register, stay connected; exit status."""
    deadline = time.time() + common.rendezvous_timeout()
    while True:
        sock = connect(host, port, deadline, stop, "the head node")
        if sock is None:
            if stop.is_set():
                return 0
            log("Unable to connect to GCS at %s:%d within %g s (VLLM_DOUBLE_RENDEZVOUS_TIMEOUT). Check that the "
                "head node is running (ray start --head) and reachable." % (host, port, common.rendezvous_timeout()),
                "ERROR")
            return 1
        conn = common.Conn(sock, common.heartbeat_timeout())
        ip = node_ip or sock.getsockname()[0]
        try:
            conn.send({"op": "register", "node_ip": ip, "num_gpus": num_gpus, "pid": os.getpid(),
                       "hostname": socket.gethostname(), "env": common.node_env()})
            reply = conn.recv_skip_hb()
        except (OSError, ValueError):
            reply = None
        if reply and reply.get("op") == "error":
            log("the GCS at %s:%d refused this node: %s" % (host, port, reply.get("reason")), "ERROR")
            return 1
        if not reply or reply.get("op") != "registered":
            conn.close()
            stop.wait(common.RETRY_INTERVAL)
            continue
        break
    log("Local node IP: %s" % ip)
    log("Ray runtime started: node %s joined the cluster at %s:%d with %s GPUs (cluster: %d nodes, %s GPUs)" % (
        reply["node_id"][:8], host, port, _num(float(num_gpus)), len(reply["nodes"]), _num(reply["total_gpus"])))
    conn.heartbeats()
    result = {}

    def monitor():
        result["why"] = common.read_until_gone(conn)
        stop.set()

    common.daemon(monitor)
    stop.wait()
    if "why" in result and not conn.closed.is_set():
        log("Some Ray subprocesses exited unexpectedly: the GCS at %s:%d is gone (%s)" % (host, port, result["why"]),
            "ERROR")
        return 1
    conn.close()
    return 0


class Driver(object):
    """A driver's view of the cluster (what ``ray.init(address=...)`` keeps open in vLLM)."""

    def __init__(self, host, port):
        self.host, self.port = host, port
        self.cond = threading.Condition()
        self.nodes = []
        self.total_gpus = 0.0
        self.gone = None
        self.conn = None
        self.on_change = None

    def address(self):
        return "%s:%d" % (self.host, self.port)

    def connect(self, deadline, stop):
        sock = connect(self.host, self.port, deadline, stop, "the Ray cluster")
        if sock is None:
            return False
        self.conn = common.Conn(sock, common.heartbeat_timeout())
        self.conn.try_send({"op": "driver", "pid": os.getpid()})
        self.conn.heartbeats()
        common.daemon(self._reader)
        return True

    def close(self):
        if self.conn is not None:
            self.conn.close()

    def _reader(self):
        why = "connection closed"
        try:
            while True:
                msg = self.conn.recv()
                if msg is None:
                    break
                if msg.get("op") == "nodes":
                    with self.cond:
                        self.nodes, self.total_gpus = msg.get("nodes") or [], float(msg.get("total_gpus") or 0)
                        self.cond.notify_all()
                    if self.on_change:
                        self.on_change()
        except (OSError, ValueError) as exc:
            why = common.why_gone(exc)
        with self.cond:
            self.gone = why
            self.cond.notify_all()
        if self.on_change and not self.conn.closed.is_set():
            self.on_change()

    def wait_gpus(self, needed, deadline, stop):
        """True once the cluster has ``needed`` GPUs; False on timeout, stop or a lost GCS."""
        with self.cond:
            while self.total_gpus < needed:
                if stop.is_set() or self.gone or time.time() >= deadline:
                    return False
                self.cond.wait(0.2)
            return True

    def watch(self, on_lost):
        """Call ``on_lost(message)`` once when a node of the current set, or the GCS, goes away."""
        with self.cond:
            members = dict((n["node_id"], n) for n in self.nodes)
        fired = []

        def check():
            with self.cond:
                live = set(n["node_id"] for n in self.nodes)
                gone = self.gone
            message = None
            if gone and not self.conn.closed.is_set():
                message = "Ray GCS at %s lost: engine dead (%s)" % (self.address(), gone)
            else:
                for node_id, n in members.items():
                    if node_id not in live:
                        message = "ray node %s (%s) lost: engine dead" % (n["node_ip"], node_id[:8])
                        break
            if message and not fired:
                fired.append(message)
                on_lost(message)

        self.on_change = check
        check()
