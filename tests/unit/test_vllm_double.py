# -*- coding: utf-8 -*-
"""The vLLM test double of the molecule scenarios (tests/molecule/vllm_double), on loopback only.

Runs the double from its source tree (its flag checker is then the collection's own
vllm_flags), checks the wheel build, and talks to it with http.client.
"""

from __future__ import annotations

import http.client
import json
import os
import socket
import subprocess
import sys
import time
import zipfile

import pytest

from conftest import COLLECTIONS_DIR, REPO_ROOT

DOUBLE = REPO_ROOT / "tests" / "molecule" / "vllm_double"
MODEL = "Qwen/Qwen3.6-35B-A3B"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_double(args, version="0.28.0", env=None):
    e = dict(os.environ, PYTHONPATH=os.pathsep.join([str(DOUBLE / "src"), str(COLLECTIONS_DIR)]),
             VLLM_DOUBLE_VERSION=version)
    e.update(env or {})
    return subprocess.Popen([sys.executable, "-m", "vllm"] + list(args), env=e, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)


def request(port, method, path, body=None, key=None, timeout=5):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    headers = {"Content-Type": "application/json"}
    if key:
        headers["Authorization"] = "Bearer " + key
    conn.request(method, path, body=json.dumps(body) if body is not None else None, headers=headers)
    resp = conn.getresponse()
    data = resp.read().decode()
    conn.close()
    return resp.status, data


def wait_up(port, proc, timeout=10):
    end = time.time() + timeout
    while time.time() < end:
        if proc.poll() is not None:
            raise AssertionError("double exited: %s" % proc.stdout.read())
        try:
            return request(port, "GET", "/health")
        except OSError:
            time.sleep(0.05)
    raise AssertionError("double did not come up")


@pytest.fixture(scope="module")
def served():
    port = free_port()
    proc = run_double(["serve", MODEL, "--tensor-parallel-size", "1", "--served-model-name", "qwen", "q",
                       "--port", str(port), "--host", "127.0.0.1", "--chat-template", "x $y 100% \"z\""],
                      env={"VLLM_API_KEY": "sk-test", "LLMFLEET_TEST_VALUE": "a b", "HF_TOKEN": "hf_x"})
    wait_up(port, proc)
    yield port
    proc.terminate()
    proc.wait(10)


@pytest.mark.parametrize("args, version, needle", [
    (["serve", MODEL, "--no-such-flag"], "0.28.0", "unrecognized arguments: --no-such-flag"),
    (["serve", MODEL, "--grpc-port", "9"], "0.28.0", "unrecognized arguments: --grpc-port"),
    (["serve", MODEL, "--tensor-parallel-size", "two"], "0.28.0", "expects an integer"),
    (["serve"], "0.28.0", "required: model_tag"),
    (["bench"], "0.28.0", "invalid choice"),
])
def test_bad_argv_exits_2(args, version, needle):
    proc = run_double(args, version)
    out = proc.communicate(timeout=20)[0]
    assert proc.returncode == 2, out
    assert needle in out


def test_version_and_crash_knob():
    proc = run_double(["--version"], "0.33.0")
    assert proc.communicate(timeout=20)[0].strip() == "0.33.0"
    proc = run_double(["serve", MODEL, "--port", str(free_port())], env={"VLLM_DOUBLE_CRASH": "1"})
    out = proc.communicate(timeout=20)[0]
    assert proc.returncode == 1 and "EngineCore failed to start" in out


def test_startup_delay_refuses_connections_then_serves():
    port = free_port()
    proc = run_double(["serve", MODEL, "--port", str(port), "--host", "127.0.0.1"],
                      env={"VLLM_DOUBLE_STARTUP_DELAY": "1.0", "VLLM_API_KEY": ""})
    try:
        time.sleep(0.5)
        with pytest.raises(ConnectionRefusedError):
            request(port, "GET", "/health")
        assert wait_up(port, proc)[0] == 200
        status, body = request(port, "GET", "/v1/models")  # no key configured: open
        assert status == 200 and [m["id"] for m in json.loads(body)["data"]] == [MODEL]
    finally:
        proc.terminate()
        assert proc.wait(10) == 0


def test_headless_worker_serves_nothing():
    port = free_port()
    proc = run_double(["serve", MODEL, "--headless", "--port", str(port)])
    try:
        time.sleep(0.8)
        assert proc.poll() is None
        with pytest.raises(ConnectionRefusedError):
            request(port, "GET", "/health")
    finally:
        proc.terminate()
        out = proc.communicate(timeout=10)[0]
    assert "headless worker" in out


def test_routes_and_auth(served):
    assert request(served, "GET", "/health")[0] == 200
    assert request(served, "GET", "/v1/models")[0] == 401
    assert request(served, "GET", "/v1/models", key="wrong")[0] == 401
    status, body = request(served, "GET", "/v1/models", key="sk-test")
    assert status == 200 and [m["id"] for m in json.loads(body)["data"]] == ["qwen", "q"]
    status, body = request(served, "POST", "/v1/completions", {"model": "q", "prompt": "hi", "max_tokens": 1}, "sk-test")
    doc = json.loads(body)
    assert status == 200 and doc["usage"]["completion_tokens"] == 1 and doc["choices"][0]["finish_reason"] == "length"
    status, body = request(served, "POST", "/v1/completions", {"model": "nope", "prompt": "hi"}, "sk-test")
    assert status == 404 and "does not exist" in body
    status, body = request(served, "POST", "/v1/chat/completions",
                           {"model": "qwen", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 3}, "sk-test")
    assert status == 200 and json.loads(body)["choices"][0]["message"]["content"] == " Hello from the"
    status, body = request(served, "GET", "/version")
    assert json.loads(body) == {"version": "0.28.0", "test_double": True}


@pytest.mark.parametrize("path, body", [
    ("/v1/completions", {"model": "qwen", "prompt": "hi", "max_tokens": 2, "stream": True}),
    ("/v1/chat/completions", {"model": "qwen", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 2,
                              "stream": True, "stream_options": {"include_usage": True}}),
])
def test_streaming(served, path, body):
    status, data = request(served, "POST", path, body, "sk-test")
    assert status == 200
    events = [ln[len("data: "):] for ln in data.splitlines() if ln.startswith("data: ")]
    assert events[-1] == "[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    text = "".join(c["choices"][0].get("text") or c["choices"][0].get("delta", {}).get("content") or ""
                   for c in chunks if c["choices"])
    assert text == " Hello from"
    if "stream_options" in body:
        assert chunks[-1]["usage"]["completion_tokens"] == 2


def test_metrics_and_info(served):
    status, text = request(served, "GET", "/metrics")
    assert status == 200 and 'vllm:request_success_total{engine="0",model_name="qwen"}' in text
    info = json.loads(request(served, "GET", "/_double/info")[1])
    assert info["argv"][:3] == ["vllm", "serve", MODEL]
    assert info["argv"][-1] == "x $y 100% \"z\""
    assert info["env"] == {"LLMFLEET_TEST_VALUE": "a b"}
    assert "sk-test" not in json.dumps(info) and "hf_x" not in json.dumps(info)
    assert len(info["secrets_sha256"]["VLLM_API_KEY"]) == 64


def test_wheel_build(tmp_path):
    proc = subprocess.run([sys.executable, str(DOUBLE / "build.py"), "wheel", "--version", "0.29.1", "-o", str(tmp_path)],
                          capture_output=True, text=True, check=True)
    out = json.loads(proc.stdout)
    assert out["catalog"] == "0.28.0"  # the newest catalogue not newer than 0.29.1
    with zipfile.ZipFile(out["wheel"]) as zf:
        names = zf.namelist()
        assert "vllm/_double/catalog/0.28.0.json" in names and "vllm/_double/vllm_flags.py" in names
        assert zf.read("vllm/_version.py") == b'__version__ = "0.29.1"\n'
        assert zf.read("vllm-0.29.1.dist-info/entry_points.txt").decode().strip().endswith("vllm._double.cli:main")
        assert zf.testzip() is None
