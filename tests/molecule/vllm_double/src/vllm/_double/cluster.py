# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmfleet contributors
# Apache License 2.0 (see LICENSE)
"""Multi-node rendezvous of the vLLM test double (standard library only).

Two kinds of groups, both with the same small line-JSON protocol over TCP (one JSON object per
line, UTF-8):

* ``mp``: multiprocessing multi-node (TP / PP / TEP over ``--nnodes``). Node rank 0 (the head)
  listens on ``0.0.0.0:--master-port``; ranks 1..N-1 connect to ``--master-addr``.
* ``dp``: data parallel across nodes (``--data-parallel-size`` > ``--data-parallel-size-local``).
  The node with ``--data-parallel-start-rank 0`` is the coordinator and listens on
  ``0.0.0.0:--data-parallel-rpc-port``; the others connect to ``--data-parallel-address``.

Protocol (member -> coordinator unless noted)::

    {"op": "hello", "kind": "mp"|"dp", "node_rank": r, "nnodes": N, "dp_start_rank": S,
     "dp_size_local": L, "dp_size": D, "signature": {...}, "env": {"VLLM_HOST_IP": ...}, "pid": p}
    <- {"op": "welcome", "waiting_for": "..."}        or  <- {"op": "reject", "reason": "...", "retry": bool}
    <- {"op": "formed", "joined": [...]}               once every member has joined
    {"op": "hb"}                                        both ways, every HEARTBEAT_INTERVAL
    <- {"op": "lost", "message": "node rank 1 lost: engine dead"}   then the coordinator exits 1

A member whose connection drops, or whose heartbeats stop for ``VLLM_DOUBLE_HEARTBEAT_TIMEOUT``
seconds, is lost: before the group is formed it is just forgotten (it may join again); after,
every other member logs the loss and exits 1, as vLLM's engine does when a rank dies.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import threading
import time

try:
    from vllm._double import common  # copied into the wheel by build.py
except ImportError:  # the source tree: src/_llmfleet_double
    from _llmfleet_double import common


def log(msg, level="INFO"):
    sys.stdout.write("%s %s [vllm-double] %s\n" % (level, time.strftime("%m-%d %H:%M:%S"), msg))
    sys.stdout.flush()


def rank_range(start, size):
    try:
        return "%d..%d" % (start, start + size - 1)
    except TypeError:
        return "%s..?" % (start,)


# ---------------------------------------------------------------------------
# the two kinds of groups
# ---------------------------------------------------------------------------


class _Spec(object):
    """What a group's members must agree on: where the coordinator listens (``addr``, ``port``) and
    the parallel ``signature``. Subclasses: the ranks, and how hellos are checked and described."""

    kind = None
    what = None

    def __init__(self, addr, port, signature):
        self.addr, self.port, self.signature = addr, port, signature

    def endpoint(self):
        return "%s:%d" % (self.addr, self.port)


class MpSpec(_Spec):
    """``--nnodes`` / ``--node-rank`` / ``--master-addr`` / ``--master-port``."""

    kind = "mp"
    what = "head"

    def __init__(self, nnodes, node_rank, addr, port, signature):
        _Spec.__init__(self, addr, port, signature)
        self.nnodes, self.node_rank = nnodes, node_rank

    def is_coordinator(self):
        return self.node_rank == 0

    @staticmethod
    def key(hello):
        return hello.get("node_rank")

    @staticmethod
    def describe(hello):
        return "node rank %s" % hello.get("node_rank")

    def validate(self, hello, members):
        nnodes, rank = hello.get("nnodes"), hello.get("node_rank")
        if nnodes != self.nnodes:
            return "--nnodes %s differs from the head's --nnodes %d" % (nnodes, self.nnodes)
        if not isinstance(rank, int) or not 0 < rank < self.nnodes:
            return "node rank %s is out of range 1..%d (--nnodes %d)" % (rank, self.nnodes - 1, self.nnodes)
        if rank in members:
            return "node rank %d has already joined (from %s)" % (rank, members[rank]["peer"])
        return signature_problem(hello.get("signature"), self.signature)

    def joined_line(self, hello, peer):
        return "node rank %s/%d joined from %s (VLLM_HOST_IP=%s)" % (
            hello.get("node_rank"), self.nnodes, peer, (hello.get("env") or {}).get("VLLM_HOST_IP") or "unset")

    def complete(self, members):
        return len(members) == self.nnodes

    def missing(self, members):
        return "node ranks %s" % ", ".join(str(r) for r in range(self.nnodes) if r not in members)

    def formed_line(self):
        return "all %d node ranks joined" % self.nnodes

    def welcome_line(self):
        return "joined head %s as node rank %d" % (self.endpoint(), self.node_rank)


class DpSpec(_Spec):
    """``--data-parallel-size`` / ``-size-local`` / ``-start-rank`` / ``-address`` / ``-rpc-port``."""

    kind = "dp"
    what = "data parallel coordinator"

    def __init__(self, size, size_local, start_rank, addr, port, signature):
        _Spec.__init__(self, addr, port, signature)
        self.size, self.size_local, self.start_rank = size, size_local, start_rank

    def is_coordinator(self):
        return self.start_rank == 0

    @staticmethod
    def key(hello):
        return hello.get("dp_start_rank")

    @staticmethod
    def describe(hello):
        start, local = hello.get("dp_start_rank"), hello.get("dp_size_local")
        return "data parallel ranks %s (start rank %s)" % (rank_range(start, local), start)

    def validate(self, hello, members):
        size, start, local = hello.get("dp_size"), hello.get("dp_start_rank"), hello.get("dp_size_local")
        if size != self.size:
            return "--data-parallel-size %s differs from the coordinator's --data-parallel-size %d" % (size, self.size)
        if not isinstance(start, int) or not isinstance(local, int) or local < 1 or start < 0 or start + local > size:
            return "data parallel ranks %s (start rank %s, size local %s) are out of range 0..%d" % (
                rank_range(start or 0, local or 0), start, local, size - 1)
        mine = set(range(start, start + local))
        for other in members.values():
            o_start, o_local = other["hello"]["dp_start_rank"], other["hello"]["dp_size_local"]
            if mine & set(range(o_start, o_start + o_local)):
                return "data parallel ranks %s overlap ranks %s of start rank %d (from %s)" % (
                    rank_range(start, local), rank_range(o_start, o_local), o_start, other["peer"])
        return signature_problem(hello.get("signature"), self.signature)

    def joined_line(self, hello, peer):
        return "data parallel ranks %s joined from %s (start rank %s, VLLM_HOST_IP=%s)" % (
            rank_range(hello.get("dp_start_rank"), hello.get("dp_size_local")), peer, hello.get("dp_start_rank"),
            (hello.get("env") or {}).get("VLLM_HOST_IP") or "unset")

    def complete(self, members):
        return sum(m["hello"]["dp_size_local"] for m in members.values()) == self.size

    def missing(self, members):
        covered = set()
        for m in members.values():
            covered.update(range(m["hello"]["dp_start_rank"], m["hello"]["dp_start_rank"] + m["hello"]["dp_size_local"]))
        return "data parallel ranks %s" % ", ".join(str(r) for r in range(self.size) if r not in covered)

    def formed_line(self):
        return "all %d data parallel ranks joined" % self.size

    def welcome_line(self):
        return "joined data parallel coordinator %s with ranks %s (start rank %d)" % (
            self.endpoint(), rank_range(self.start_rank, self.size_local), self.start_rank)


def signature_problem(theirs, ours):
    if not isinstance(theirs, dict):
        return "the hello has no parallel signature"
    diffs = ["%s=%s (head: %s)" % (k, json.dumps(theirs.get(k)), json.dumps(ours.get(k)))
             for k in sorted(set(ours) | set(theirs)) if theirs.get(k) != ours.get(k)]
    if diffs:
        return "parallel flags differ from the head's (vLLM needs identical parallel flags on every node): %s" % (
            ", ".join(diffs))
    return None


def make_hello(spec, node_rank, nnodes, dp_start_rank, dp_size_local, dp_size):
    return {"op": "hello", "kind": spec.kind, "node_rank": node_rank, "nnodes": nnodes,
            "dp_start_rank": dp_start_rank, "dp_size_local": dp_size_local, "dp_size": dp_size,
            "signature": spec.signature, "env": common.node_env(), "pid": os.getpid(), "hostname": socket.gethostname()}


def joined_entry(kind, hello, peer):
    entry = {"kind": kind, "node_rank": hello.get("node_rank"), "peer": peer, "pid": hello.get("pid"),
             "hostname": hello.get("hostname")}
    if kind == "dp":
        entry.update(dp_start_rank=hello.get("dp_start_rank"), dp_size_local=hello.get("dp_size_local"))
    for name in common.ENV_NAMES:
        entry[name] = (hello.get("env") or {}).get(name)
    return entry


# ---------------------------------------------------------------------------
# coordinator (the head / DP start rank 0) and member (everyone else)
# ---------------------------------------------------------------------------


class Coordinator(common.Hub):
    def __init__(self, spec, own_hello, on_fatal):
        common.Hub.__init__(self)
        self.spec = spec
        self.on_fatal = on_fatal
        self.own = own_hello
        self.members = {spec.key(own_hello): {"hello": own_hello, "conn": None, "peer": "self"}}
        self.formed = threading.Event()
        self.lost = False
        self.closing = False

    def start(self, bind="0.0.0.0"):
        """Listen; returns an error message (the port is taken) or None."""
        try:
            self.listen(bind, self.spec.port)
        except OSError as exc:
            return "cannot listen on %s:%d for the %s group: %s" % (bind, self.spec.port, self.spec.kind, exc)
        log("%s listening on %s:%d (%s group); waiting for %s" % (
            self.spec.what, bind, self.spec.port, self.spec.kind, self.spec.missing(self.members)))
        self.serve()
        if self.spec.complete(self.members):
            self.formed.set()
        return None

    def wait(self, deadline, stop):
        """True once formed; False on timeout or stop."""
        while not self.formed.is_set():
            if stop.is_set():
                return False
            left = deadline - time.time()
            if left <= 0:
                return False
            self.formed.wait(min(left, 0.2))
        return True

    def missing(self):
        with self.lock:
            return self.spec.missing(self.members)

    def joined(self):
        with self.lock:
            return [joined_entry(self.spec.kind, m["hello"], m["peer"])
                    for k, m in sorted(self.members.items()) if m["conn"] is not None]

    def close(self):
        self.closing = True
        common.Hub.close(self)

    def _conns(self):
        with self.lock:
            return [m["conn"] for m in self.members.values() if m["conn"] is not None]

    # -- threads ---------------------------------------------------------------
    def _handle(self, sock):
        conn = common.Conn(sock, common.heartbeat_timeout())
        try:
            hello = conn.recv_skip_hb()
        except (OSError, ValueError):
            hello = None
        if not hello or hello.get("op") != "hello" or hello.get("kind") != self.spec.kind:
            conn.try_send({"op": "reject", "retry": False,
                           "reason": "expected a %s hello (is this the right port?)" % self.spec.kind})
            conn.close()
            return
        key = self.spec.key(hello)
        with self.lock:
            if self.formed.is_set():
                reason, retry = "the group is already formed; a restarted node must wait for the head to restart", True
            else:
                reason, retry = self.spec.validate(hello, self.members), False
            if reason:
                log("rejected %s from %s: %s" % (self.spec.describe(hello), conn.peer, reason), "WARNING")
                conn.try_send({"op": "reject", "reason": reason, "retry": retry})
                conn.close(write_first=True)
                return
            entry = {"hello": hello, "conn": conn, "peer": conn.peer}
            self.members[key] = entry
            log(self.spec.joined_line(hello, conn.peer))
            complete = self.spec.complete(self.members)
            conn.try_send({"op": "welcome", "waiting_for": None if complete else self.spec.missing(self.members)})
            if complete:
                joined = [joined_entry(self.spec.kind, m["hello"], m["peer"])
                          for _k, m in sorted(self.members.items()) if m["conn"] is not None]
                coordinator = joined_entry(self.spec.kind, self.own, None)
                for m in self.members.values():
                    if m["conn"] is not None:
                        m["conn"].try_send({"op": "formed", "joined": joined, "coordinator": coordinator})
                log(self.spec.formed_line())
                self.formed.set()
        self._gone(key, entry, common.read_until_gone(conn))

    def _gone(self, key, entry, why):
        with self.lock:
            if self.members.get(key) is not entry or self.closing:
                return
            if not self.formed.is_set():
                del self.members[key]
                log("%s left before the group formed (%s); waiting for it again" % (self.spec.describe(entry["hello"]), why),
                    "WARNING")
                entry["conn"].close()
                return
            if self.lost:
                return
            self.lost = True
            others = [m["conn"] for k, m in self.members.items() if m["conn"] is not None and k != key]
        message = "%s lost: engine dead" % self.spec.describe(entry["hello"])
        log("%s (%s)" % (message, why), "ERROR")
        for c in others:
            c.try_send({"op": "lost", "message": message})
            c.close(write_first=True)
        entry["conn"].close()
        self.on_fatal(message)


class Member(object):
    def __init__(self, spec, hello, on_fatal):
        self.spec = spec
        self.hello = hello
        self.on_fatal = on_fatal
        self.conn = None
        self.formed_joined = []
        self.coordinator = None

    def joined(self):
        return list(self.formed_joined)

    def close(self):
        if self.conn is not None:
            self.conn.close()

    def join(self, deadline, stop):
        """'formed', 'rejected', 'timeout' or 'stopped' (errors are logged here)."""
        endpoint = self.spec.endpoint()
        throttle = common.Throttle()

        def waiting(exc):
            log("waiting for the %s at %s (%s); retrying every %.1f s" % (
                self.spec.what, endpoint, exc.strerror or exc, common.RETRY_INTERVAL))

        while True:
            sock = common.connect(self.spec.addr, self.spec.port, deadline, stop, waiting, throttle)
            if sock is None:
                if stop.is_set():
                    return "stopped"
                log("gave up: the %s at %s did not form the group within %g s (VLLM_DOUBLE_RENDEZVOUS_TIMEOUT) as %s" % (
                    self.spec.what, endpoint, common.rendezvous_timeout(), self.spec.describe(self.hello)), "ERROR")
                return "timeout"
            conn = common.Conn(sock, common.heartbeat_timeout())
            result = self._session(conn, deadline, stop)
            if result in ("formed", "rejected", "stopped", "timeout"):
                return result
            conn.close()
            if throttle.ready():
                log("the %s at %s %s; retrying" % (self.spec.what, endpoint, result), "WARNING")
            stop.wait(common.RETRY_INTERVAL)

    def _session(self, conn, deadline, stop):
        endpoint = self.spec.endpoint()
        try:
            conn.send(self.hello)
            reply = conn.recv_skip_hb()
        except (OSError, ValueError):
            reply = None
        if reply is None:
            return "closed the connection"
        if reply.get("op") == "reject":
            if reply.get("retry"):
                return "is busy (%s)" % reply.get("reason")
            log("the %s at %s rejected %s: %s" % (self.spec.what, endpoint, self.spec.describe(self.hello),
                                                  reply.get("reason")), "ERROR")
            conn.close()
            return "rejected"
        if reply.get("op") != "welcome":
            return "answered %r" % reply.get("op")
        log(self.spec.welcome_line())
        conn.heartbeats()
        while True:
            if stop.is_set():
                conn.close()
                return "stopped"
            if time.time() > deadline:
                log("gave up: the group at %s did not form within %g s (VLLM_DOUBLE_RENDEZVOUS_TIMEOUT)" % (
                    endpoint, common.rendezvous_timeout()), "ERROR")
                conn.close()
                return "timeout"
            try:
                msg = conn.recv()
            except (OSError, ValueError):
                msg = None
            if msg is not None and msg.get("op") == "hb":
                continue
            if msg is None:
                conn.closed.set()
                return "closed the connection before the group formed"
            if msg.get("op") == "formed":
                self.formed_joined = msg.get("joined") or []
                self.coordinator = msg.get("coordinator")
                self.conn = conn
                log(self.spec.formed_line())
                common.daemon(self._monitor, conn)
                return "formed"

    def _monitor(self, conn):
        try:
            self._watch(conn)
        except Exception as exc:  # pylint: disable=broad-except
            # never die silently: a dead monitor would hide a loss
            log("monitor of the %s failed: %r" % (self.spec.what, exc), "ERROR")
            self.on_fatal("%s lost: engine dead" % self.spec.what)

    def _watch(self, conn):
        where = "%s at %s" % (self.spec.what, self.spec.endpoint())
        message, why = "%s lost: engine dead" % self.spec.describe(self._coordinator_hello()), "connection closed"
        try:
            while True:
                msg = conn.recv()
                if msg is None:
                    break
                if msg.get("op") == "lost":
                    message, why = msg.get("message") or message, "reported by the %s" % where
                    break
        except (OSError, ValueError) as exc:
            why = common.why_gone(exc)
        if conn.closed.is_set() and why == "connection closed":
            return  # we closed it ourselves (shutting down)
        if not why.startswith("reported"):
            why = "%s: %s" % (where, why)
        log("%s (%s)" % (message, why), "ERROR")
        conn.close()
        self.on_fatal(message)

    def _coordinator_hello(self):
        if self.coordinator:
            return self.coordinator
        return {"node_rank": 0, "dp_start_rank": 0, "dp_size_local": 1}


def run_group(spec, hello, on_fatal, stop):
    """Form one group; returns (group, None) or (None, exit status)."""
    deadline = time.time() + common.rendezvous_timeout()
    if spec.is_coordinator():
        group = Coordinator(spec, hello, on_fatal)
        err = group.start()
        if err:
            log(err, "ERROR")
            return None, 1
        if not group.wait(deadline, stop):
            if stop.is_set():
                group.close()
                return None, 0
            log("gave up after %g s (VLLM_DOUBLE_RENDEZVOUS_TIMEOUT) waiting for %s to join on port %d" % (
                common.rendezvous_timeout(), group.missing(), spec.port), "ERROR")
            group.close()
            return None, 1
        return group, None
    group = Member(spec, hello, on_fatal)
    result = group.join(deadline, stop)
    if result == "formed":
        return group, None
    return None, 0 if result == "stopped" else 1
