# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmfleet contributors
# Apache License 2.0 (see LICENSE)
"""HTTP side of the vllm-router test double (standard library only).

* ``GET /health``: 200 when every prefill and decode backend (or worker) answers ``/health`` with
  200; else 503 with the backends that failed.
* ``GET /v1/models``: proxied from a decode backend (round robin).
* ``POST /v1/completions``, ``POST /v1/chat/completions``: PD mode sends the request to a prefill
  backend (round robin) with ``max_tokens`` forced to 1 and ``stream`` off, then the original
  request to a decode backend (round robin), and returns the decode answer (streams relayed);
  both get the same ``X-Request-Id`` (``___prefill_addr_<p>___decode_addr_<d>_<uuid>``). The
  client's ``Authorization`` header goes to the backends (else ``Bearer --api-key`` if set).
* Test-only ``GET /_double/info``: argv, mode, policy, backends, request counts.
"""

from __future__ import annotations

import http.client
import itertools
import json
import os
import threading
import uuid
from urllib.parse import urlsplit

try:
    from vllm_router._double import common  # copied into the wheel by build.py
except ImportError:  # the source tree: src/_llmfleet_double
    from _llmfleet_double import common


class Backend(object):
    def __init__(self, role, spec):
        self.role = role
        self.url = spec["url"]
        self.bootstrap_port = spec.get("bootstrap_port")
        parts = urlsplit(self.url)
        self.scheme = parts.scheme
        self.host = parts.hostname
        self.port = parts.port or (443 if parts.scheme == "https" else 80)
        self.prefix = parts.path.rstrip("/")
        self.requests = 0

    def addr(self):
        return "%s:%d" % (self.host, self.port)

    def connection(self, timeout):
        cls = http.client.HTTPSConnection if self.scheme == "https" else http.client.HTTPConnection
        return cls(self.host, self.port, timeout=timeout)

    def info(self):
        d = {"role": self.role, "url": self.url, "requests": self.requests}
        if self.role == "prefill":
            d["bootstrap_port"] = self.bootstrap_port
        return d


class State(object):
    def __init__(self, cfg):
        self.cfg = cfg
        self.lock = threading.Lock()
        self.prefill = [Backend("prefill", s) for s in cfg["prefill"]]
        self.decode = [Backend("decode", s) for s in cfg["decode"]]
        self.workers = [Backend("worker", s) for s in cfg["workers"]]
        self._rr = {"prefill": itertools.count(), "decode": itertools.count(), "worker": itertools.count()}
        self.requests = 0

    def pick(self, role):
        pool = {"prefill": self.prefill, "decode": self.decode, "worker": self.workers}[role]
        with self.lock:
            b = pool[next(self._rr[role]) % len(pool)]
            b.requests += 1
            return b

    def all_backends(self):
        return self.prefill + self.decode + self.workers


class Handler(common.Handler):
    server_version = "vllm-router-double"
    access_log = 'INFO %s:%d "%s" %s\n'

    def backend_headers(self, request_id=None):
        headers = {"Content-Type": "application/json"}
        auth = self.headers.get("Authorization")
        if not auth and self.state.cfg.get("api_key"):
            auth = "Bearer " + self.state.cfg["api_key"]
        if auth:
            headers["Authorization"] = auth
        if request_id:
            headers["X-Request-Id"] = request_id
        return headers

    def call(self, backend, method, path, body=None, headers=None, timeout=None):
        """(status, headers, body bytes) from a backend; raises OSError."""
        conn = backend.connection(timeout or self.state.cfg["timeout"])
        try:
            conn.request(method, backend.prefix + path, body=body, headers=headers or {})
            resp = conn.getresponse()
            return resp.status, resp.getheader("Content-Type") or "application/json", resp.read()
        finally:
            conn.close()

    # -- routes ----------------------------------------------------------------
    def do_GET(self):  # noqa: N802
        path = self.path.split("?", 1)[0]
        st = self.state
        if path == "/health":
            self.health()
        elif path in ("/liveness", "/ping"):
            self.send_body(200, b"OK", "text/plain")
        elif path == "/v1/models":
            role = "decode" if st.decode else "worker"
            backend = st.pick(role)
            try:
                code, ctype, body = self.call(backend, "GET", "/v1/models", headers=self.backend_headers())
            except OSError as exc:
                self.send_json(502, {"error": {"message": "%s backend %s: %s" % (role, backend.url, exc),
                                               "type": "BadGateway", "code": 502}})
                return
            self.send_body(code, body, ctype)
        elif path == "/_double/info":
            self.send_json(200, {
                "test_double": True, "version": st.cfg["version"], "argv": st.cfg["argv"], "pid": os.getpid(),
                "mode": st.cfg["mode"], "policy": st.cfg["policy"],
                "intra_node_data_parallel_size": st.cfg["intra_node_data_parallel_size"],
                "prefill": [b.info() for b in st.prefill], "decode": [b.info() for b in st.decode],
                "workers": [b.info() for b in st.workers], "requests": st.requests,
                "env": dict((k, v) for k, v in os.environ.items() if k.startswith("LLMFLEET_TEST_")),
            })
        else:
            self.send_json(404, {"detail": "Not Found"})

    def health(self):
        failed = []
        for b in self.state.all_backends():
            try:
                code = self.call(b, "GET", "/health", timeout=self.state.cfg["health_timeout"])[0]
                if code != 200:
                    failed.append({"role": b.role, "url": b.url, "error": "HTTP %d" % code})
            except OSError as exc:
                failed.append({"role": b.role, "url": b.url, "error": str(exc) or exc.__class__.__name__})
        if failed:
            self.send_json(503, {"status": "unhealthy", "failed": failed,
                                 "message": "; ".join("%s %s: %s" % (f["role"], f["url"], f["error"]) for f in failed)})
        else:
            self.send_body(200, b"OK", "text/plain")

    def do_POST(self):  # noqa: N802
        path = self.path.split("?", 1)[0]
        if path not in ("/v1/completions", "/v1/chat/completions"):
            self.send_json(404, {"detail": "Not Found"})
            return
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw.decode("utf-8") or "{}")
            if not isinstance(body, dict):
                raise ValueError("not an object")
        except ValueError:
            self.send_json(400, {"error": {"message": "request body must be a JSON object", "type": "BadRequestError",
                                           "code": 400}})
            return
        st = self.state
        with st.lock:
            st.requests += 1
        if not st.prefill:
            self.relay(st.pick("worker"), path, raw, self.backend_headers())
            return
        prefill, decode = st.pick("prefill"), st.pick("decode")
        request_id = "___prefill_addr_%s___decode_addr_%s_%s" % (prefill.addr(), decode.addr(), uuid.uuid4().hex)
        first = dict(body, max_tokens=1, stream=False)
        first.pop("stream_options", None)
        if "max_completion_tokens" in first:
            first["max_completion_tokens"] = 1
        try:
            code, ctype, answer = self.call(prefill, "POST", path, json.dumps(first).encode("utf-8"),
                                            self.backend_headers(request_id))
        except OSError as exc:
            self.send_json(502, {"error": {"message": "prefill backend %s: %s" % (prefill.url, exc),
                                           "type": "BadGateway", "code": 502}})
            return
        if code != 200:
            self.send_body(code, answer, ctype)  # the prefill's error, as upstream returns it
            return
        self.relay(decode, path, raw, self.backend_headers(request_id))

    def relay(self, backend, path, raw, headers):
        conn = backend.connection(self.state.cfg["timeout"])
        try:
            try:
                conn.request("POST", backend.prefix + path, body=raw, headers=headers)
                resp = conn.getresponse()
            except OSError as exc:
                self.send_json(502, {"error": {"message": "%s backend %s: %s" % (backend.role, backend.url, exc),
                                               "type": "BadGateway", "code": 502}})
                return
            self.send_response(resp.status)
            self.send_header("Content-Type", resp.getheader("Content-Type") or "application/json")
            if resp.getheader("Content-Length"):
                self.send_header("Content-Length", resp.getheader("Content-Length"))
            self.end_headers()
            try:
                while True:
                    chunk = resp.read1(65536)
                    if not chunk:
                        break
                    self.wfile.write(chunk)
                    self.wfile.flush()
            except OSError:
                pass  # the backend or the client went away mid-stream: the connection just ends
        finally:
            conn.close()


def make_server(host, port, cfg):
    return common.make_server(host, port, Handler, State(cfg))
