# -*- coding: utf-8 -*-
"""The health gate module (plugins/modules/vllm_health.py) against the vLLM test double, on loopback.

The module runs as Ansible runs it (JSON arguments on stdin); the double starts with a delay,
so the first probes are refused ("still starting"). Watching a systemd unit needs systemd and
is covered by the molecule scenario `serve`.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time

import pytest

from conftest import COLLECTIONS_DIR, REPO_ROOT

KEY = "sk-health-test-0123456789"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def gate(**args):
    payload = json.dumps({"ANSIBLE_MODULE_ARGS": dict({"interval": 0.1, "timeout": 10}, **args)})
    proc = subprocess.run([sys.executable, "-m", "ansible_collections.llmfleet.vllm.plugins.modules.vllm_health"],
                          input=payload, capture_output=True, text=True, check=False, timeout=60,
                          env=dict(os.environ, PYTHONPATH=str(COLLECTIONS_DIR)))
    return json.loads(proc.stdout)


@pytest.fixture(scope="module")
def double():
    port = free_port()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO_ROOT / "tests" / "molecule" / "vllm_double" / "src"),
                                                       str(COLLECTIONS_DIR)]),
               VLLM_DOUBLE_VERSION="0.28.0", VLLM_DOUBLE_STARTUP_DELAY="1.5", VLLM_API_KEY=KEY)
    proc = subprocess.Popen([sys.executable, "-m", "vllm", "serve", "Qwen/Qwen3.6-35B-A3B", "--host", "127.0.0.1",
                             "--port", str(port), "--served-model-name", "qwen", "q"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    started = time.time()
    yield port, started
    proc.terminate()
    proc.wait(10)


def test_waits_through_refused_connections_then_passes(double):
    port, started = double
    res = gate(port=port, served_model_names=["qwen", "q"], api_key=KEY)
    assert not res.get("failed"), res
    assert res["stage"] == "ready" and res["models"] == ["qwen", "q"]
    assert time.time() - started >= 1.5 and res["probes"] >= 2
    assert KEY not in json.dumps(res)


@pytest.mark.parametrize("args, stage, needle", [
    ({"served_model_names": ["qwen", "nope"], "api_key": KEY}, "models", "but not ['nope']"),
    ({"served_model_names": ["qwen"], "api_key": "sk-wrong-key-0123456789"}, "models", "answered 401"),
    ({"served_model_names": ["qwen"]}, "models", "answered 401"),
])
def test_fails_on_names_and_keys(double, args, stage, needle):
    port, _started = double
    res = gate(port=port, **args)
    assert res.get("failed") and res["stage"] == stage and needle in res["msg"], res


def test_times_out_on_a_port_nobody_serves():
    t0 = time.time()
    res = gate(port=free_port(), timeout=1, interval=0.2)
    assert res.get("failed") and res["stage"] == "health"
    assert "did not answer 200 within 1s" in res["msg"] and "still starting" in res["msg"]
    assert time.time() - t0 < 10
