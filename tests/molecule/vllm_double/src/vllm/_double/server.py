# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmfleet contributors
# Apache License 2.0 (see LICENSE)
"""The HTTP side of the vLLM test double (standard library only).

Routes, as vLLM's OpenAI server has them: ``GET /health`` (200, or 503 when told to be
unhealthy), ``GET /ping``, ``GET /version``, ``GET /metrics`` (Prometheus text, ``vllm:``
prefix), ``GET /v1/models`` (the served names), ``POST /v1/completions`` and
``POST /v1/chat/completions`` (plain JSON or ``stream: true`` server-sent events ending with
``data: [DONE]``). With an API key, every ``/v1`` route needs ``Authorization: Bearer <key>``
(401 otherwise); ``/health``, ``/ping``, ``/version`` and ``/metrics`` stay open, as in vLLM.

Test-only: ``GET /_double/info`` returns the argv the process was started with, the values of
``LLMFLEET_TEST_*`` environment variables, the uid/gid and working directory, and for
``HF_TOKEN``/``VLLM_API_KEY`` only a sha256 (so a test can check the env file without the
secret appearing anywhere), the last completion request it answered (``last_request``: path,
model, max_tokens, stream, ``X-Request-Id``), the ``cluster`` object (mode, node rank, the hellos
of the multi-node groups, data parallel ranks, this node's VLLM_HOST_IP / NCCL_SOCKET_IFNAME /
GLOO_SOCKET_IFNAME / NCCL_IB_HCA) and the ``--kv-transfer-config`` with its ``kv_role``.
``/metrics`` also has test-only gauges ``vllm_double_dp_start_rank``, ``vllm_double_dp_size_local``,
``vllm_double_dp_size``, ``vllm_double_node_rank``, ``vllm_double_nnodes`` and
``vllm_double_joined_members``.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
import uuid

try:
    from vllm._double import common  # copied into the wheel by build.py
except ImportError:  # the source tree: src/_llmfleet_double
    from _llmfleet_double import common

WORDS = [" Hello", " from", " the", " vLLM", " test", " double", "."]
MAX_TOKENS_CAP = 256


class State(object):
    def __init__(self, cfg):
        self.cfg = cfg
        self.lock = threading.Lock()
        self.started = time.time()
        self.counters = {"requests": 0, "prompt_tokens": 0, "generation_tokens": 0, "running": 0}
        self.last_request = None

    def count(self, prompt_tokens, generation_tokens):
        with self.lock:
            self.counters["requests"] += 1
            self.counters["prompt_tokens"] += prompt_tokens
            self.counters["generation_tokens"] += generation_tokens


def _sha(name):
    value = os.environ.get(name)
    return hashlib.sha256(value.encode("utf-8")).hexdigest() if value else None


class Handler(common.Handler):
    server_version = "uvicorn"
    access_log = 'INFO:     %s:%d - "%s" %s\n'

    # -- plumbing ------------------------------------------------------------
    def send_text(self, code, text, ctype="text/plain; charset=utf-8"):
        self.send_body(code, text.encode("utf-8"), ctype)

    def error(self, code, message, etype):
        self.send_json(code, {"error": {"message": message, "type": etype, "param": None, "code": code}})

    def authorized(self):
        keys = self.state.cfg["api_keys"]
        if not keys:
            return True
        header = self.headers.get("Authorization") or ""
        if header.startswith("Bearer ") and header[len("Bearer "):] in keys:
            return True
        self.send_json(401, {"error": "Unauthorized"})
        return False

    def read_json(self):
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw.decode("utf-8") or "{}")
        except ValueError:
            self.error(400, "request body is not JSON", "BadRequestError")
            return None
        if not isinstance(body, dict):
            self.error(400, "request body must be a JSON object", "BadRequestError")
            return None
        return body

    # -- routes --------------------------------------------------------------
    def do_GET(self):  # noqa: N802 - http.server's naming
        path = self.path.split("?", 1)[0]
        cfg = self.state.cfg
        if path == "/health":
            if cfg.get("unhealthy"):
                self.send_text(503, "")
            else:
                self.send_text(200, "")
        elif path == "/ping":
            self.send_text(200, "")
        elif path == "/version":
            self.send_json(200, {"version": cfg["version"], "test_double": True})
        elif path == "/metrics":
            self.send_text(200, self.metrics(), "text/plain; version=0.0.4; charset=utf-8")
        elif path == "/v1/models":
            if self.authorized():
                self.send_json(200, {"object": "list", "data": [
                    {"id": name, "object": "model", "created": int(self.state.started), "owned_by": "vllm",
                     "root": cfg["model"], "parent": None, "max_model_len": 4096, "permission": []}
                    for name in cfg["served_model_names"]]})
        elif path == "/_double/info":
            self.send_json(200, {
                "test_double": True, "version": cfg["version"], "argv": cfg["argv"], "pid": os.getpid(),
                "uid": os.getuid(), "gid": os.getgid(), "cwd": os.getcwd(),
                "env": dict((k, v) for k, v in os.environ.items() if k.startswith("LLMFLEET_TEST_")),
                "env_names": sorted(os.environ),
                "secrets_sha256": {"HF_TOKEN": _sha("HF_TOKEN"), "VLLM_API_KEY": _sha("VLLM_API_KEY")},
                "requests": self.state.counters["requests"],
                "last_request": self.state.last_request,
                "cluster": self.cluster(),
                "kv_transfer_config": cfg.get("kv_transfer_config"),
                "kv_role": (cfg.get("kv_transfer_config") or {}).get("kv_role"),
            })
        elif path.startswith("/v1/"):
            if self.authorized():
                self.error(404, "Not Found", "NotFoundError")
        else:
            self.send_json(404, {"detail": "Not Found"})

    def do_POST(self):  # noqa: N802
        path = self.path.split("?", 1)[0]
        if path == "/ping":
            self.send_text(200, "")
            return
        if path not in ("/v1/completions", "/v1/chat/completions"):
            if path.startswith("/v1/") and not self.authorized():
                return
            self.send_json(404, {"detail": "Not Found"})
            return
        if not self.authorized():
            return
        body = self.read_json()
        if body is None:
            return
        model = body.get("model")
        names = self.state.cfg["served_model_names"]
        if model is None:
            model = names[0]
        if model not in names:
            self.error(404, "The model `%s` does not exist." % model, "NotFoundError")
            return
        try:
            max_tokens = int(body.get("max_tokens") or body.get("max_completion_tokens") or 16)
        except (TypeError, ValueError):
            self.error(400, "max_tokens must be an integer", "BadRequestError")
            return
        if max_tokens < 1:
            self.error(400, "max_tokens must be at least 1, got %d." % max_tokens, "BadRequestError")
            return
        chat = path.endswith("/chat/completions")
        if chat:
            messages = body.get("messages")
            if not isinstance(messages, list) or not messages:
                self.error(400, "messages must be a non-empty list", "BadRequestError")
                return
            prompt = " ".join(str(m.get("content", "")) for m in messages if isinstance(m, dict))
        else:
            prompt = body.get("prompt")
            if prompt is None:
                self.error(400, "prompt is required", "BadRequestError")
                return
            prompt = prompt if isinstance(prompt, str) else json.dumps(prompt)
        self.state.last_request = {"path": path, "model": model, "max_tokens": max_tokens,
                                   "stream": bool(body.get("stream")),
                                   "request_id": self.headers.get("X-Request-Id")}
        n = min(max_tokens, MAX_TOKENS_CAP)
        tokens = [WORDS[i % len(WORDS)] for i in range(n)]
        finish = "length" if n >= max_tokens else "stop"
        prompt_tokens = max(1, len(prompt.split()))
        self.state.count(prompt_tokens, n)
        rid = ("chatcmpl-" if chat else "cmpl-") + uuid.uuid4().hex
        created = int(time.time())
        usage = {"prompt_tokens": prompt_tokens, "completion_tokens": n, "total_tokens": prompt_tokens + n}
        if body.get("stream"):
            self.stream(rid, created, model, tokens, finish, chat, usage, body)
            return
        if chat:
            choice = {"index": 0, "message": {"role": "assistant", "content": "".join(tokens), "tool_calls": []},
                      "logprobs": None, "finish_reason": finish, "stop_reason": None}
            obj = "chat.completion"
        else:
            choice = {"index": 0, "text": "".join(tokens), "logprobs": None, "finish_reason": finish,
                      "stop_reason": None}
            obj = "text_completion"
        self.send_json(200, {"id": rid, "object": obj, "created": created, "model": model, "choices": [choice],
                             "usage": usage})

    def stream(self, rid, created, model, tokens, finish, chat, usage, body):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()
        obj = "chat.completion.chunk" if chat else "text_completion"

        def event(choice, extra=None):
            data = {"id": rid, "object": obj, "created": created, "model": model, "choices": [choice]}
            data.update(extra or {})
            self.wfile.write(("data: %s\n\n" % json.dumps(data)).encode("utf-8"))
            self.wfile.flush()

        if chat:
            event({"index": 0, "delta": {"role": "assistant", "content": ""}, "logprobs": None, "finish_reason": None})
        for i, tok in enumerate(tokens):
            last = i == len(tokens) - 1
            if chat:
                event({"index": 0, "delta": {"content": tok}, "logprobs": None,
                       "finish_reason": finish if last else None})
            else:
                event({"index": 0, "text": tok, "logprobs": None, "finish_reason": finish if last else None})
        if (body.get("stream_options") or {}).get("include_usage"):
            data = {"id": rid, "object": obj, "created": created, "model": model, "choices": [], "usage": usage}
            self.wfile.write(("data: %s\n\n" % json.dumps(data)).encode("utf-8"))
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()

    def cluster(self):
        fn = self.state.cfg.get("cluster")
        if fn is not None:
            return fn()
        return {"mode": "single", "node_rank": 0, "nnodes": 1, "master": None, "joined": [], "dp_start_rank": 0,
                "dp_size": 1, "dp_size_local": 1, "dp_ranks": [0]}

    def metrics(self):
        c = self.state.counters
        cl = self.cluster()
        lines = []
        for name in self.state.cfg["served_model_names"][:1]:
            label = 'engine="0",model_name="%s"' % name
            for metric, kind, value, help_text in (
                    ("vllm:num_requests_running", "gauge", c["running"], "Number of requests in model execution batches."),
                    ("vllm:num_requests_waiting", "gauge", 0, "Number of requests waiting to be processed."),
                    ("vllm:request_success_total", "counter", c["requests"], "Count of successfully processed requests."),
                    ("vllm:prompt_tokens_total", "counter", c["prompt_tokens"], "Number of prefill tokens processed."),
                    ("vllm:generation_tokens_total", "counter", c["generation_tokens"], "Number of generation tokens processed.")):
                lines.append("# HELP %s %s" % (metric, help_text))
                lines.append("# TYPE %s %s" % (metric, kind))
                lines.append("%s{%s} %.1f" % (metric, label, float(value)))
        for metric, value, help_text in (
                ("vllm_double_dp_start_rank", cl["dp_start_rank"], "Test double: first data parallel rank of this node."),
                ("vllm_double_dp_size_local", cl["dp_size_local"], "Test double: data parallel ranks on this node."),
                ("vllm_double_dp_size", cl["dp_size"], "Test double: data parallel size."),
                ("vllm_double_node_rank", cl["node_rank"], "Test double: multi-node (mp) node rank."),
                ("vllm_double_nnodes", cl["nnodes"], "Test double: multi-node (mp) node count."),
                ("vllm_double_joined_members", len(cl["joined"]), "Test double: remote members in the groups.")):
            lines.append("# HELP %s %s" % (metric, help_text))
            lines.append("# TYPE %s gauge" % metric)
            lines.append("%s %d" % (metric, int(value)))
        return "\n".join(lines) + "\n"


def make_server(host, port, cfg):
    return common.make_server(host, port, Handler, State(cfg))
