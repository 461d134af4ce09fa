# -*- coding: utf-8 -*-
"""The Ray and vllm-router stand-ins of the vLLM test double (tests/molecule/vllm_double), on loopback.

``python -m ray`` / ``python -m vllm_router`` run them from the source tree; one test runs the
vLLM double from its built wheel alone, to see it fail like vLLM when Ray is missing.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import zipfile

import pytest

from test_vllm_double import DOUBLE, MODEL, free_port, request
from test_vllm_double_multinode import Node, info, refused, stop_all


def ray(args, environ=None):
    return Node(args, environ, module="ray")


def test_ray_cluster_gates_vllm_and_a_lost_node_kills_it():
    gcs, port = free_port(), free_port()
    nodes = []
    try:
        head = ray(["start", "--head", "--port", str(gcs), "--node-ip-address", "10.0.0.1", "--num-gpus", "2",
                    "--disable-usage-stats", "--dashboard-host", "0.0.0.0", "--block"], {"VLLM_HOST_IP": "10.0.0.1"})
        nodes.append(head)
        head.wait_for("Ray runtime started")
        vllm = Node(["serve", MODEL, "-tp", "2", "-pp", "2", "--distributed-executor-backend", "ray", "--port", str(port),
                     "--host", "127.0.0.1"], {"RAY_ADDRESS": "127.0.0.1:%d" % gcs})
        nodes.append(vllm)
        vllm.wait_for("waiting for the Ray cluster at 127.0.0.1:%d to have 4 GPUs (it has 2 on 1 nodes)" % gcs)
        assert refused(port)
        worker = ray(["start", "--address", "127.0.0.1:%d" % gcs, "--node-ip-address", "10.0.0.2", "--block"],
                     {"VLLM_DOUBLE_GPUS_PER_NODE": "2", "VLLM_HOST_IP": "10.0.0.2", "NCCL_SOCKET_IFNAME": "ib0"})
        nodes.append(worker)
        assert vllm.wait_http(port) == 200
        c = info(port)["cluster"]
        assert c["mode"] == "ray" and c["ray_address"] == "127.0.0.1:%d" % gcs and c["ray_gpus"] == 4
        assert sorted((j["kind"], j["node_ip"], j["num_gpus"], j["is_head"], j["VLLM_HOST_IP"], j["NCCL_SOCKET_IFNAME"])
                      for j in c["joined"]) == [("ray", "10.0.0.1", 2, True, "10.0.0.1", None),
                                                ("ray", "10.0.0.2", 2, False, "10.0.0.2", "ib0")]
        st_rc, st_out = ray(["status", "--address", "127.0.0.1:%d" % gcs]).finish()
        assert st_rc == 0 and " 0.0/4.0 GPU" in st_out and "live nodes: 2, total GPUs: 4" in st_out
        assert "(10.0.0.2, 2 GPUs)" in st_out and "(10.0.0.1, head, 2 GPUs)" in st_out
        worker.signal(signal.SIGKILL)  # a Ray node dies: vLLM's engine dies with it, the head lives on
        rc, out = vllm.finish()
        assert head.alive()
        head.wait_for("node 10.0.0.2 (")
        head.signal(signal.SIGTERM)
        h_rc, h_out = head.finish()
    finally:
        stop_all(*nodes)
    assert rc == 1 and "ray node 10.0.0.2 (" in out and "lost: engine dead" in out
    assert "Ray cluster at 127.0.0.1:%d has 2 nodes, 4 GPUs (needs 4)" % gcs in out
    assert h_rc == 0 and "is dead" in h_out and "joined with 2 GPUs; the cluster has 2 nodes, 4 GPUs" in h_out


def test_ray_gcs_loss_kills_the_worker_node_and_vllm(tmp_path):
    gcs, port = free_port(), free_port()
    nodes = []
    try:
        head = ray(["start", "--head", "--port", str(gcs), "--num-gpus", "1", "--temp-dir", str(tmp_path / "ray"),
                    "--block"])
        nodes.append(head)
        worker = ray(["start", "--address", "127.0.0.1:%d" % gcs, "--num-gpus", "1", "--block"])
        nodes.append(worker)
        worker.wait_for("Ray runtime started")
        vllm = Node(["serve", MODEL, "-tp", "2", "--distributed-executor-backend", "ray", "--port", str(port),
                     "--host", "127.0.0.1"], {"RAY_ADDRESS": "ray://127.0.0.1:%d" % gcs})
        nodes.append(vllm)
        assert vllm.wait_http(port) == 200
        head.signal(signal.SIGKILL)
        w_rc, w_out = worker.finish()
        v_rc, v_out = vllm.finish()
    finally:
        stop_all(*nodes)
    assert w_rc == 1 and "Some Ray subprocesses exited unexpectedly" in w_out
    assert (tmp_path / "ray" / "ray_current_cluster").read_text().strip().endswith(":%d" % gcs)
    assert v_rc == 1 and "Ray GCS at 127.0.0.1:%d lost: engine dead" % gcs in v_out


@pytest.mark.parametrize("args, rc, needle", [
    (["start", "--head", "--port", "1"], 2, "only supports `ray start ... --block`"),
    (["start", "--head", "--bogus", "--block"], 2, "unrecognized arguments: --bogus"),
    (["start", "--block"], 2, "exactly one of --head or --address"),
    (["status", "--address", "127.0.0.1:1"], 1, "Could not find any running Ray instance"),
    (["stop"], 0, "Did not find any active Ray processes"),
    (["--version"], 0, "ray, version 0.0.0"),
])
def test_ray_cli(args, rc, needle):
    node = ray(args)
    try:
        got, out = node.finish()
    finally:
        stop_all(node)
    assert got == rc and needle in out, out


def test_ray_worker_gives_up_and_vllm_needs_ray(tmp_path):
    worker = ray(["start", "--address", "127.0.0.1:%d" % free_port(), "--block"],
                 {"VLLM_DOUBLE_RENDEZVOUS_TIMEOUT": "1"})
    # the vllm wheel alone (no ray next to it), on an interpreter without site-packages
    wheel = json.loads(subprocess.run([sys.executable, str(DOUBLE / "build.py"), "wheel", "--version", "0.28.0", "-o",
                                       str(tmp_path)], capture_output=True, text=True, check=True).stdout)["wheel"]
    with zipfile.ZipFile(wheel) as zf:
        zf.extractall(tmp_path / "site")
    args = ["serve", MODEL, "-tp", "2", "--distributed-executor-backend", "ray", "--port", str(free_port())]
    proc = subprocess.run([sys.executable, "-S", "-m", "vllm"] + args, env={"PYTHONPATH": str(tmp_path / "site")},
                          capture_output=True, text=True, timeout=20, check=False)
    try:
        w_rc, w_out = worker.finish()
    finally:
        stop_all(worker)
    assert w_rc == 1 and "Unable to connect to GCS at 127.0.0.1:" in w_out and "within 1 s" in w_out
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "ModuleNotFoundError: No module named 'ray'" in proc.stdout
    assert "Please install Ray" in proc.stdout and "--with-ray" in proc.stdout


def backend(port, extra=(), environ=None):
    return Node(["serve", MODEL, "--served-model-name", "qwen", "--port", str(port), "--host", "127.0.0.1"] + list(extra),
                dict({"VLLM_API_KEY": "sk-pd"}, **(environ or {})))


def test_router_pd_disaggregation():
    pp = [free_port(), free_port()]
    dp, rp = free_port(), free_port()
    kv_p = '{"kv_connector":"NixlConnector","kv_role":"kv_producer"}'
    nodes = []
    try:
        nodes += [backend(p, ["--kv-transfer-config", kv_p]) for p in pp]
        nodes.append(backend(dp, ["--kv-transfer-config.kv_connector", "NixlConnector",
                                  "--kv-transfer-config.kv_role", "kv_consumer"]))
        router = Node(["--policy", "round_robin", "--vllm-pd-disaggregation", "--prefill", "http://127.0.0.1:%d" % pp[0],
                       "--prefill", "http://127.0.0.1:%d" % pp[1], "9001", "--decode", "http://127.0.0.1:%d" % dp,
                       "--host", "127.0.0.1", "--port", str(rp), "--intra-node-data-parallel-size", "1"],
                      module="vllm_router")
        nodes.append(router)
        for n, p in zip(nodes, pp + [dp]):
            assert n.wait_http(p) == 200
        assert router.wait_http(rp) == 200
        status, body = request(rp, "GET", "/v1/models", key="sk-pd")
        assert status == 200 and [m["id"] for m in json.loads(body)["data"]] == ["qwen"]
        assert request(rp, "GET", "/v1/models")[0] == 401  # the client's key (none) goes to the backend
        for prompt in ("hi", "again"):
            status, body = request(rp, "POST", "/v1/completions", {"model": "qwen", "prompt": prompt, "max_tokens": 3},
                                   key="sk-pd")
            assert status == 200 and json.loads(body)["choices"][0]["text"] == " Hello from the"
        status, body = request(rp, "POST", "/v1/chat/completions",
                               {"model": "qwen", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 2,
                                "stream": True}, key="sk-pd")
        assert status == 200 and body.rstrip().endswith("data: [DONE]") and '"content": " from"' in body
        assert request(rp, "POST", "/v1/completions", {"model": "qwen", "prompt": "hi"})[0] == 401
        pre = [info(p) for p in pp]
        dec = info(dp)
        r = info(rp)
        nodes[2].signal(signal.SIGTERM)  # the decode backend goes away: the router is unhealthy
        nodes[2].finish()
        status, body = request(rp, "GET", "/health")
    finally:
        stop_all(*nodes)
    assert [p["kv_role"] for p in pre] == ["kv_producer", "kv_producer"] and dec["kv_role"] == "kv_consumer"
    assert dec["kv_transfer_config"] == {"kv_connector": "NixlConnector", "kv_role": "kv_consumer"}
    assert [p["requests"] for p in pre] == [2, 1]  # round robin: 3 requests (the 401 never counted)
    assert all(p["last_request"]["max_tokens"] == 1 and p["last_request"]["stream"] is False for p in pre)
    assert dec["last_request"]["max_tokens"] == 2 and dec["last_request"]["stream"] is True
    rid = dec["last_request"]["request_id"]
    assert rid.startswith("___prefill_addr_127.0.0.1:%d___decode_addr_127.0.0.1:%d_" % (pp[0], dp))
    assert pre[0]["last_request"]["request_id"] == rid
    assert r["mode"] == "vllm-pd" and r["policy"] == "round_robin"
    assert r["argv"][:3] == ["vllm-router", "--policy", "round_robin"]
    prefills = [("http://127.0.0.1:%d" % pp[0], None), ("http://127.0.0.1:%d" % pp[1], 9001)]
    assert [(b["url"], b["bootstrap_port"]) for b in r["prefill"]] == prefills
    assert [b["url"] for b in r["decode"]] == ["http://127.0.0.1:%d" % dp]
    doc = json.loads(body)
    assert status == 503 and [(f["role"], f["url"]) for f in doc["failed"]] == [("decode", "http://127.0.0.1:%d" % dp)]


@pytest.mark.parametrize("args, rc, needle", [
    (["--version"], 0, "vllm-router 0.0.0"),
    (["--vllm-pd-disaggregation", "--prefill", "http://a:1", "--bogus"], 2, "unrecognized arguments: --bogus"),
    (["--vllm-pd-disaggregation", "--prefill", "http://a:1"], 2, "requires --prefill and --decode"),
    (["--vllm-pd-disaggregation", "--prefill", "http://a:1", "x", "--decode", "http://b:2"], 2, "invalid bootstrap port"),
    (["--policy", "best", "--worker-urls", "http://a:1"], 2, "invalid choice: 'best'"),
])
def test_router_cli(args, rc, needle):
    node = Node(args, module="vllm_router")
    try:
        got, out = node.finish()
    finally:
        stop_all(node)
    assert got == rc and needle in out, out
