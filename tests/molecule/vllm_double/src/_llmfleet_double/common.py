# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmfleet contributors
# Apache License 2.0 (see LICENSE)
"""What the test doubles share (standard library only): line-JSON connections with heartbeats,
listening, accepting and connecting with retries, the rendezvous knobs, the HTTP server plumbing.

No wheel has this package: build.py copies this one file into every wheel that needs it, as
``<package>/_double/common.py`` (``vllm``, ``ray``, ``vllm_router``), so that each wheel stays
self-contained. The doubles import it as::

    try:
        from vllm._double import common  # the wheel: build.py copied it in
    except ImportError:  # the source tree (src/ on sys.path)
        from _llmfleet_double import common
"""

from __future__ import annotations

import json
import os
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ENV_NAMES = ("VLLM_HOST_IP", "NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME", "NCCL_IB_HCA")
RETRY_INTERVAL = 0.5


def rendezvous_timeout():
    return float(os.environ.get("VLLM_DOUBLE_RENDEZVOUS_TIMEOUT") or 900)


def heartbeat_timeout():
    return float(os.environ.get("VLLM_DOUBLE_HEARTBEAT_TIMEOUT") or 5)


def heartbeat_interval():
    return min(0.5, heartbeat_timeout() / 4.0)


def node_env():
    """This node's networking environment as a hello carries it (``None`` when unset)."""
    return dict((name, os.environ.get(name)) for name in ENV_NAMES)


def daemon(target, *args):
    """``target(*args)`` on a new daemon thread (started and returned)."""
    t = threading.Thread(target=target, args=args)
    t.daemon = True
    t.start()
    return t


def why_gone(exc):
    """Why a connection ended, from what its read raised (OSError, socket.timeout, ValueError)."""
    if isinstance(exc, socket.timeout):
        return "no heartbeat for %.1f s" % heartbeat_timeout()
    return str(exc) or exc.__class__.__name__


# ---------------------------------------------------------------------------
# line-JSON connections
# ---------------------------------------------------------------------------


class Conn(object):
    """One line-JSON connection; reads time out after the heartbeat timeout."""

    def __init__(self, sock, timeout):
        self.sock = sock
        sock.settimeout(timeout)
        self.rfile = sock.makefile("rb")
        self.wlock = threading.Lock()
        self.closed = threading.Event()
        try:
            self.peer = sock.getpeername()[0]
        except OSError:
            self.peer = None

    def send(self, obj):
        data = (json.dumps(obj) + "\n").encode("utf-8")
        with self.wlock:
            self.sock.sendall(data)

    def try_send(self, obj):
        try:
            self.send(obj)
            return True
        except OSError:
            return False

    def recv(self):
        """The next message, or None at end of stream. Raises OSError (timeout too) or ValueError."""
        line = self.rfile.readline(1 << 20)
        if not line or not line.endswith(b"\n"):
            return None
        msg = json.loads(line.decode("utf-8"))
        if not isinstance(msg, dict):
            raise ValueError("not a JSON object")
        return msg

    def recv_skip_hb(self):
        while True:
            msg = self.recv()
            if msg is None or msg.get("op") != "hb":
                return msg

    def close(self, write_first=False):
        """Close both ways; ``write_first``: only shut down our side (the peer still reads what we sent)."""
        self.closed.set()
        try:
            self.sock.shutdown(socket.SHUT_WR if write_first else socket.SHUT_RDWR)
        except OSError:
            pass
        if not write_first:
            for f in (self.rfile, self.sock):
                try:
                    f.close()
                except OSError:
                    pass

    def heartbeats(self):
        """Send ``{"op": "hb"}`` every heartbeat interval (daemon thread) until closed or a send fails."""
        daemon(self._hb_loop)

    def _hb_loop(self):
        interval = heartbeat_interval()
        while not self.closed.wait(interval):
            if not self.try_send({"op": "hb"}):
                return


def read_until_gone(conn):
    """Read (and drop) messages until the connection ends; returns why it ended."""
    try:
        while conn.recv() is not None:
            pass
        return "connection closed"
    except (OSError, ValueError) as exc:
        return why_gone(exc)


def listen(bind, port):
    """A listening TCP socket on ``bind:port`` (IPv4, SO_REUSEADDR); raises OSError."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((bind, port))
        sock.listen(64)
    except OSError:
        sock.close()
        raise
    return sock


class Hub(object):
    """The listening end of a group (the Ray GCS, an mp/dp coordinator). Subclasses define
    ``_handle(sock)``, run on a thread of its own for every accepted connection, and ``_conns()``,
    the live connections: they get a heartbeat every interval and are closed by ``close()``."""

    def __init__(self):
        self.lock = threading.Lock()
        self.listener = None

    def listen(self, bind, port):
        """Listen on ``bind:port``; raises OSError (the port is taken). ``serve()`` then accepts."""
        self.listener = listen(bind, port)

    def serve(self):
        """Accept connections until closed, and send heartbeats (daemon threads)."""
        daemon(_accept_loop, self.listener, self._handle)
        daemon(_heartbeat_all, self._conns)

    def close(self):
        try:
            self.listener.close()
        except (OSError, AttributeError):
            pass
        for c in self._conns():
            c.close()

    def _handle(self, sock):
        raise NotImplementedError

    def _conns(self):
        raise NotImplementedError


def _accept_loop(listener, handle):
    while True:
        try:
            sock, _addr = listener.accept()
        except OSError:
            return
        daemon(handle, sock)


def _heartbeat_all(conns):
    interval = heartbeat_interval()
    while True:
        time.sleep(interval)
        for c in conns():
            c.try_send({"op": "hb"})


class Throttle(object):
    """``ready()`` is true at most once every ``seconds``: for the log lines of a retry loop."""

    def __init__(self, seconds=10):
        self.seconds = seconds
        self.last = 0.0

    def ready(self):
        if time.time() - self.last > self.seconds:
            self.last = time.time()
            return True
        return False


def connect(host, port, deadline, stop, on_error, throttle=None):
    """A socket connected to ``host:port``, retrying every RETRY_INTERVAL; None once ``deadline``
    has passed or ``stop`` is set. ``on_error(exc)`` hears of failed attempts when ``throttle``
    (default: a new one, 10 s) lets it."""
    throttle = throttle or Throttle()
    while not stop.is_set():
        left = deadline - time.time()
        if left <= 0:
            return None
        try:
            return socket.create_connection((host, port), timeout=min(2.0, max(left, 0.1)))
        except OSError as exc:
            if throttle.ready():
                on_error(exc)
            stop.wait(RETRY_INTERVAL)
    return None


# ---------------------------------------------------------------------------
# HTTP
# ---------------------------------------------------------------------------


class Handler(BaseHTTPRequestHandler):
    """A request handler with the server's ``state``, one access log line per request and JSON replies."""

    sys_version = ""
    protocol_version = "HTTP/1.0"  # streams end when the connection closes
    access_log = '%s:%d "%s" %s\n'  # client host, client port, request line, status

    @property
    def state(self):
        return self.server.state

    def log_message(self, format, *args):  # pylint: disable=redefined-builtin
        status = args[1] if len(args) > 1 else ""
        host, port = self.client_address[0], self.client_address[1]
        sys.stdout.write(self.access_log % (host, port, self.requestline, status))
        sys.stdout.flush()

    def send_body(self, code, body, ctype):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def send_json(self, code, obj):
        self.send_body(code, json.dumps(obj).encode("utf-8"), "application/json")


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def make_server(host, port, handler, state):
    """A threading HTTP server on ``host:port`` (IPv6 when the host has a colon) with ``state``."""
    cls = Server
    if ":" in host:
        cls = type("Server6", (Server,), {"address_family": socket.AF_INET6})
    srv = cls((host, port), handler)
    srv.state = state
    return srv
