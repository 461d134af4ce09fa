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


def run_double(args, version="0.28.0", env=None, module="vllm"):
    """The double (``python -m vllm``; ``module`` ray or vllm_router for the other stand-ins) from the source tree."""
    e = dict(os.environ, PYTHONPATH=os.pathsep.join([str(DOUBLE / "src"), str(COLLECTIONS_DIR)]),
             VLLM_DOUBLE_VERSION=version)
    e.update(env or {})
    return subprocess.Popen([sys.executable, "-m", module] + list(args), env=e, stdout=subprocess.PIPE,
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
        assert "vllm/_double/common.py" in names  # the shared src/_llmfleet_double/common.py, copied in
        assert zf.read("vllm/_version.py") == b'__version__ = "0.29.1"\n'
        assert zf.read("vllm-0.29.1.dist-info/entry_points.txt").decode().strip().endswith("vllm._double.cli:main")
        assert zf.testzip() is None


def test_single_node_cluster_info_and_gauges(served):
    info = json.loads(request(served, "GET", "/_double/info")[1])
    c = info["cluster"]
    assert c["mode"] == "single" and c["node_rank"] == 0 and c["nnodes"] == 1 and c["master"] is None
    assert c["joined"] == [] and c["dp_ranks"] == [0] and c["dp_size"] == 1
    assert set(["VLLM_HOST_IP", "NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME", "NCCL_IB_HCA"]) <= set(c)
    assert info["kv_transfer_config"] is None and info["kv_role"] is None
    text = request(served, "GET", "/metrics")[1]
    assert "\nvllm_double_dp_start_rank 0\n" in text and "\nvllm_double_dp_size_local 1\n" in text
    assert "# TYPE vllm_double_dp_start_rank gauge" in text


def _wheel(tmp_path, cmd, *extra):
    proc = subprocess.run([sys.executable, str(DOUBLE / "build.py"), cmd, "-o", str(tmp_path)] + list(extra),
                          capture_output=True, text=True, check=True)
    return json.loads(proc.stdout)


def _console_script(site, wheel, name, args):
    """Run a wheel's console script the way its launcher would, on a Python without site-packages."""
    with zipfile.ZipFile(wheel) as zf:
        eps = [ln for ln in zf.read([n for n in zf.namelist() if n.endswith("entry_points.txt")][0]).decode().splitlines()
               if ln.startswith(name + " = ")]
        zf.extractall(site)
    module, func = eps[0].split(" = ")[1].split(":")
    code = "import sys; from %s import %s; sys.exit(%s())" % (module, func, func)
    return subprocess.run([sys.executable, "-S", "-c", code] + list(args), env={"PYTHONPATH": str(site)},
                          capture_output=True, text=True, timeout=20, check=False)


def test_ray_and_router_wheels(tmp_path):
    ray_a = _wheel(tmp_path / "a", "ray-wheel")
    ray_b = _wheel(tmp_path / "b", "ray-wheel")
    assert os.path.basename(ray_a["wheel"]) == "ray-2.49.2-py3-none-any.whl" and ray_a["version"] == "2.49.2"
    with open(ray_a["wheel"], "rb") as fa, open(ray_b["wheel"], "rb") as fb:
        assert fa.read() == fb.read()  # reproducible
    router = _wheel(tmp_path / "a", "router-wheel", "--version", "0.1.9")
    assert os.path.basename(router["wheel"]) == "vllm_router-0.1.9-py3-none-any.whl"
    vllm_whl = _wheel(tmp_path / "a", "wheel", "--version", "0.28.0")["wheel"]
    with zipfile.ZipFile(vllm_whl) as zf:
        assert all(n.startswith(("vllm/", "vllm-0.28.0.dist-info/")) for n in zf.namelist())  # no ray in vllm's wheel
    with zipfile.ZipFile(ray_a["wheel"]) as zf:
        assert zf.testzip() is None and zf.read("ray/_version.py") == b'__version__ = "2.49.2"\n'
        common = (DOUBLE / "src" / "_llmfleet_double" / "common.py").read_bytes()
        assert zf.read("ray/_double/common.py") == common
        assert "Name: ray\n" in zf.read("ray-2.49.2.dist-info/METADATA").decode()
    with zipfile.ZipFile(router["wheel"]) as zf:
        assert zf.read("vllm_router/_double/common.py") == common
        assert all(n.startswith(("vllm_router/", "vllm_router-0.1.9.dist-info/")) for n in zf.namelist())
    out = _console_script(tmp_path / "site", ray_a["wheel"], "ray", ["--version"])
    assert out.returncode == 0 and out.stdout.strip() == "ray, version 2.49.2"
    imp = subprocess.run([sys.executable, "-S", "-c", "import ray; print(ray.__version__, ray.TEST_DOUBLE)"],
                         env={"PYTHONPATH": str(tmp_path / "site")}, capture_output=True, text=True, timeout=20, check=False)
    assert imp.stdout.strip() == "2.49.2 True"
    out = _console_script(tmp_path / "site", router["wheel"], "vllm-router", ["--version"])
    assert out.returncode == 0 and out.stdout.strip() == "vllm-router 0.1.9"
    out = _console_script(tmp_path / "site", router["wheel"], "vllm-router", ["--nope"])
    assert out.returncode == 2 and "unrecognized arguments: --nope" in out.stderr


FAKE_DOCKER = """#!%s
import os, shutil, sys
shutil.copytree(sys.argv[-1], os.environ["FAKE_DOCKER_OUT"])
print("sha256:" + "0" * 64)
"""


@pytest.mark.parametrize("with_ray", [True, False])
def test_image_context(tmp_path, with_ray):
    """``build.py image`` with a stand-in docker that keeps the build context."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "docker").write_text(FAKE_DOCKER % sys.executable)
    (bin_dir / "docker").chmod(0o755)
    ctx = tmp_path / "ctx"
    cmd = [sys.executable, str(DOUBLE / "build.py"), "image", "--version", "0.28.0", "--tag", "local/vllm-double:t",
           "--env", "VLLM_DOUBLE_CRASH=1"] + (["--with-ray", "--ray-version", "2.50.0"] if with_ray else [])
    proc = subprocess.run(cmd, env=dict(os.environ, PATH="%s%s%s" % (bin_dir, os.pathsep, os.environ["PATH"]),
                                        FAKE_DOCKER_OUT=str(ctx)), capture_output=True, text=True, check=True)
    out = json.loads(proc.stdout)
    assert out["image"] == "local/vllm-double:t" and out["ray"] == ("2.50.0" if with_ray else None)
    dockerfile = (ctx / "Dockerfile").read_text()
    assert 'ENTRYPOINT ["vllm", "serve"]' in dockerfile and 'ENV VLLM_DOUBLE_CRASH="1"' in dockerfile
    site = {"PYTHONPATH": str(ctx / "site")}
    vllm_v = subprocess.run([sys.executable, "-S", str(ctx / "vllm"), "--version"], env=site, capture_output=True,
                            text=True, timeout=20, check=False)
    assert vllm_v.stdout.strip() == "0.28.0"
    if with_ray:
        assert "COPY ray /usr/local/bin/ray" in dockerfile and "io.llmfleet.test-double.ray=2.50.0" in dockerfile
        ray_v = subprocess.run([sys.executable, "-S", str(ctx / "ray"), "--version"], env=site, capture_output=True,
                               text=True, timeout=20, check=False)
        assert ray_v.stdout.strip() == "ray, version 2.50.0"
    else:
        assert "COPY ray" not in dockerfile and "test-double.ray" not in dockerfile
        assert not (ctx / "ray").exists() and not (ctx / "site" / "ray").exists()
