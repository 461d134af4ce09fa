# -*- coding: utf-8 -*-
"""Multi-node replicas of the vLLM test double (tests/molecule/vllm_double), on loopback only.

Every "node" is a ``python -m vllm serve`` process from the source tree; the rendezvous ports are
free loopback ports (the head listens on all interfaces, the others connect to 127.0.0.1).
"""

from __future__ import annotations

import json
import signal
import threading
import time

import pytest

from test_vllm_double import MODEL, free_port, request, run_double

# losses by a closed connection are seen at once; a generous heartbeat timeout keeps a busy machine from faking one
FAST = {"VLLM_DOUBLE_HEARTBEAT_TIMEOUT": "3", "VLLM_DOUBLE_RENDEZVOUS_TIMEOUT": "20"}


def env(**kw):
    out = dict(FAST)
    out.update(kw)
    return out


class Node(object):
    """A double process whose output is read as it comes (so a test can wait for a log line)."""

    def __init__(self, args, environ=None, module="vllm"):
        self.proc = run_double(args, env=env(**(environ or {})), module=module)
        self.pid = self.proc.pid
        self.lines = []
        self.reader = threading.Thread(target=self._read)
        self.reader.daemon = True
        self.reader.start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.append(line)

    @property
    def out(self):
        return "".join(self.lines)

    def alive(self):
        return self.proc.poll() is None

    def wait_for(self, text, timeout=10):
        end = time.time() + timeout
        while time.time() < end:
            if text in self.out:
                return
            if not self.alive():
                self.reader.join(5)
                break
            time.sleep(0.05)
        assert text in self.out, "%r not in the output:\n%s" % (text, self.out)

    def wait_http(self, port, timeout=10):
        end = time.time() + timeout
        while time.time() < end:
            assert self.alive(), "the double exited:\n%s" % self.out
            try:
                return request(port, "GET", "/health")[0]
            except OSError:
                time.sleep(0.05)
        raise AssertionError("no HTTP on port %d:\n%s" % (port, self.out))

    def signal(self, sig):
        self.proc.send_signal(sig)

    def finish(self, timeout=10):
        """(exit status, output) of a process expected to end on its own."""
        rc = self.proc.wait(timeout)
        self.reader.join(5)
        return rc, self.out

    def stop(self):
        if self.alive():
            self.proc.kill()
        self.proc.wait(10)
        self.reader.join(5)


def stop_all(*nodes):
    for n in nodes:
        if n is not None:
            n.stop()


def info(port):
    return json.loads(request(port, "GET", "/_double/info")[1])


def refused(port):
    try:
        request(port, "GET", "/health", timeout=1)
    except ConnectionRefusedError:
        return True
    return False


def mp_args(nnodes, rank, mport, extra=()):
    return ["serve", MODEL, "-tp", "4", "--nnodes", str(nnodes), "--node-rank", str(rank), "--master-addr", "127.0.0.1",
            "--master-port", str(mport)] + list(extra)


def test_mp_group_forms_serves_then_dies_with_a_rank():
    mport, port, wport = free_port(), free_port(), free_port()
    head = w1 = w2 = None
    try:
        # a worker started before its head retries until the head is up
        w1 = Node(mp_args(3, 1, mport, ["--headless", "--port", str(wport)]),
                  {"VLLM_HOST_IP": "10.0.0.2", "NCCL_SOCKET_IFNAME": "eth1", "GLOO_SOCKET_IFNAME": "eth1"})
        w1.wait_for("waiting for the head at 127.0.0.1:%d" % mport)
        head = Node(mp_args(3, 0, mport, ["--port", str(port), "--host", "127.0.0.1"]),
                    {"VLLM_HOST_IP": "10.0.0.1", "NCCL_IB_HCA": "mlx5_0"})
        head.wait_for("node rank 1/3 joined from 127.0.0.1 (VLLM_HOST_IP=10.0.0.2)")
        w1.wait_for("joined head 127.0.0.1:%d as node rank 1" % mport)
        assert refused(port)  # rank 2 is missing: no API yet, like a head waiting for its engine
        w2 = Node(["serve", MODEL, "-tp", "4", "-n", "3", "-r", "2", "--master-addr", "127.0.0.1",
                   "--master-port", str(mport), "--headless"], {"VLLM_HOST_IP": "10.0.0.3"})
        assert head.wait_http(port) == 200
        c = info(port)["cluster"]
        assert c["mode"] == "mp" and c["node_rank"] == 0 and c["nnodes"] == 3
        assert c["master"] == "127.0.0.1:%d" % mport
        assert c["VLLM_HOST_IP"] == "10.0.0.1" and c["NCCL_IB_HCA"] == "mlx5_0" and c["NCCL_SOCKET_IFNAME"] is None
        joined = dict((j["node_rank"], j) for j in c["joined"])
        assert sorted(joined) == [1, 2] and set(j["kind"] for j in c["joined"]) == {"mp"}
        assert joined[1]["VLLM_HOST_IP"] == "10.0.0.2" and joined[1]["NCCL_SOCKET_IFNAME"] == "eth1"
        assert joined[1]["GLOO_SOCKET_IFNAME"] == "eth1" and joined[1]["NCCL_IB_HCA"] is None
        assert joined[1]["pid"] == w1.pid and joined[2]["pid"] == w2.pid and joined[2]["peer"] == "127.0.0.1"
        metrics = request(port, "GET", "/metrics")[1]
        assert "\nvllm_double_nnodes 3\n" in metrics and "\nvllm_double_joined_members 2\n" in metrics
        w1.wait_for("headless worker")
        assert refused(wport)  # headless: never an HTTP port
        w1.signal(signal.SIGTERM)  # a rank goes away: the whole replica dies
        h_rc, h_out = head.finish()
        w2_rc, w2_out = w2.finish()
        w1_rc, w1_out = w1.finish()
    finally:
        stop_all(head, w1, w2)
    assert h_rc == 1 and w2_rc == 1 and w1_rc == 0
    assert "node rank 2/3 joined from 127.0.0.1 (VLLM_HOST_IP=10.0.0.3)" in h_out
    assert h_out.index("all 3 node ranks joined") < h_out.index("Starting vLLM API server")
    assert "node rank 1 lost: engine dead" in h_out and "node rank 1 lost: engine dead" in w2_out
    assert "Starting vLLM API server" not in w1_out + w2_out


def test_mp_head_rejects_bad_hellos():
    mport, port = free_port(), free_port()
    head = good = None
    bad = {}
    try:
        head = Node(mp_args(3, 0, mport, ["--port", str(port), "--host", "127.0.0.1"]))
        good = Node(mp_args(3, 1, mport, ["--headless"]))
        head.wait_for("node rank 1/3 joined")
        bad = {
            "nnodes": Node(mp_args(2, 1, mport, ["--headless"])),
            "range": Node(mp_args(3, 3, mport, ["--headless"])),
            "duplicate": Node(mp_args(3, 1, mport, ["--headless"])),
            "signature": Node(["serve", MODEL, "-tp", "8", "-n", "3", "-r", "2", "--master-port", str(mport),
                               "--headless"]),
        }
        results = dict((k, n.finish()) for k, n in bad.items())
        assert head.alive() and good.alive() and refused(port)  # still waiting for rank 2
    finally:
        stop_all(head, good, *bad.values())
    for k, (rc, _out) in results.items():
        assert rc == 1, k
    assert "--nnodes 2 differs from the head's --nnodes 3" in results["nnodes"][1]
    assert "node rank 3 is out of range 1..2" in results["range"][1]
    assert "node rank 1 has already joined" in results["duplicate"][1]
    sig = results["signature"][1]
    assert "rejected node rank 2" in sig and "tensor_parallel_size=8 (head: 4)" in sig
    assert "rejected node rank 1 from 127.0.0.1: node rank 1 has already joined" in head.out


def test_rendezvous_timeouts():
    short = {"VLLM_DOUBLE_RENDEZVOUS_TIMEOUT": "1"}
    head = Node(mp_args(3, 0, free_port(), ["--port", str(free_port())]), short)
    lonely = Node(mp_args(2, 1, free_port(), ["--headless"]), short)
    try:
        h_rc, h_out = head.finish()
        w_rc, w_out = lonely.finish()
    finally:
        stop_all(head, lonely)
    assert h_rc == 1 and "gave up after 1 s (VLLM_DOUBLE_RENDEZVOUS_TIMEOUT) waiting for node ranks 1, 2" in h_out
    assert w_rc == 1 and "gave up: the head at 127.0.0.1:" in w_out and "within 1 s" in w_out


def test_heartbeats_stopping_is_a_loss():
    mport, port = free_port(), free_port()
    head = worker = None
    try:
        hb = {"VLLM_DOUBLE_HEARTBEAT_TIMEOUT": "1"}
        head = Node(mp_args(2, 0, mport, ["--port", str(port), "--host", "127.0.0.1"]), hb)
        worker = Node(mp_args(2, 1, mport, ["--headless"]), hb)
        assert head.wait_http(port) == 200
        worker.signal(signal.SIGSTOP)  # alive but silent: no heartbeats
        rc, out = head.finish()
        worker.signal(signal.SIGCONT)
    finally:
        stop_all(head, worker)
    assert rc == 1 and "node rank 1 lost: engine dead (no heartbeat for 1.0 s)" in out


def test_head_stop_ends_workers_and_a_restarted_group_forms_again():
    mport, port = free_port(), free_port()
    nodes = []
    try:
        head = Node(mp_args(2, 0, mport, ["--port", str(port), "--host", "127.0.0.1"]))
        worker = Node(mp_args(2, 1, mport, ["--headless"]))
        nodes += [head, worker]
        assert head.wait_http(port) == 200
        head.signal(signal.SIGTERM)  # systemctl stop on the head
        h_rc, _h_out = head.finish()
        w_rc, w_out = worker.finish()
        # systemd restarts the worker (Restart=on-failure) before the head is back: it retries
        worker2 = Node(mp_args(2, 1, mport, ["--headless"]))
        nodes.append(worker2)
        worker2.wait_for("waiting for the head at 127.0.0.1:%d" % mport)
        head2 = Node(mp_args(2, 0, mport, ["--port", str(port), "--host", "127.0.0.1"]))
        nodes.append(head2)
        assert head2.wait_http(port) == 200
        assert [j["pid"] for j in info(port)["cluster"]["joined"]] == [worker2.pid]
    finally:
        stop_all(*nodes)
    assert h_rc == 0 and w_rc == 1
    assert "node rank 0 lost: engine dead (head at 127.0.0.1:%d: connection closed)" % mport in w_out


def dp_args(start, port, rpc, extra=()):
    return ["serve", MODEL, "--enable-expert-parallel", "-dp", "4", "-dpl", "2", "-dpr", str(start), "-dpa", "127.0.0.1",
            "-dpp", str(rpc), "--port", str(port), "--host", "127.0.0.1"] + list(extra)


def test_dp_hybrid_lb_every_node_serves_once_formed():
    rpc, p0, p1 = free_port(), free_port(), free_port()
    head = other = None
    try:
        head = Node(["serve", MODEL, "--enable-expert-parallel", "--data-parallel-hybrid-lb", "--data-parallel-size",
                     "4", "--data-parallel-size-local", "2", "--data-parallel-address", "127.0.0.1",
                     "--data-parallel-rpc-port", str(rpc), "--port", str(p0), "--host", "127.0.0.1"],
                    {"VLLM_HOST_IP": "10.0.0.1"})
        head.wait_for("data parallel coordinator listening on 0.0.0.0:%d" % rpc)
        assert refused(p0)
        other = Node(dp_args(2, p1, rpc, ["-dph"]), {"VLLM_HOST_IP": "10.0.0.2"})
        assert head.wait_http(p0) == 200 and other.wait_http(p1) == 200
        c0, c1 = info(p0)["cluster"], info(p1)["cluster"]
        assert c0["mode"] == "dp" and c0["dp_ranks"] == [0, 1] and c0["dp_size"] == 4 and c0["dp_hybrid_lb"]
        assert c1["dp_start_rank"] == 2 and c1["dp_size_local"] == 2 and c1["dp_ranks"] == [2, 3]
        assert c1["dp_address"] == "127.0.0.1:%d" % rpc and c1["VLLM_HOST_IP"] == "10.0.0.2"
        assert [(j["kind"], j["dp_start_rank"], j["VLLM_HOST_IP"]) for j in c0["joined"]] == [("dp", 2, "10.0.0.2")]
        assert c1["joined"] == c0["joined"]  # the coordinator tells every member who joined
        m1 = request(p1, "GET", "/metrics")[1]
        assert "\nvllm_double_dp_start_rank 2\n" in m1 and "\nvllm_double_dp_size_local 2\n" in m1
        assert "\nvllm_double_dp_start_rank 0\n" in request(p0, "GET", "/metrics")[1]
        head.signal(signal.SIGKILL)  # the coordinator dies: the other node goes down too
        rc, out = other.finish()
    finally:
        stop_all(head, other)
    assert rc == 1 and "data parallel ranks 0..1 (start rank 0) lost: engine dead" in out
    assert "data parallel ranks 2..3 of 4 (start rank 2)" in out
    assert "joined data parallel coordinator 127.0.0.1:%d with ranks 2..3 (start rank 2)" % rpc in out
    assert "data parallel ranks 2..3 joined from 127.0.0.1 (start rank 2, VLLM_HOST_IP=10.0.0.2)" in head.out
    assert "all 4 data parallel ranks joined" in head.out


def test_dp_internal_lb_headless_member_and_rejections():
    rpc, p0, mport = free_port(), free_port(), free_port()
    head = member = None
    bad = {}
    try:
        head = Node(dp_args(0, p0, rpc))
        head.wait_for("data parallel coordinator listening")
        bad = {"overlap": Node(dp_args(1, free_port(), rpc, ["--headless"])),
               "size": Node(["serve", MODEL, "-dp", "8", "-dpl", "2", "-dpr", "2", "-dpp", str(rpc), "--headless"])}
        results = dict((k, n.finish()) for k, n in bad.items())
        assert refused(p0)
        member = Node(dp_args(2, mport, rpc, ["--headless"]))
        assert head.wait_http(p0) == 200
        member.wait_for("headless worker")
        assert refused(mport)  # headless: no API even once formed
        member.signal(signal.SIGTERM)
        rc, out = head.finish()
        m_rc, _m_out = member.finish()
    finally:
        stop_all(head, member, *bad.values())
    assert results["overlap"][0] == 1 and "data parallel ranks 1..2 overlap ranks 0..1 of start rank 0" in \
        results["overlap"][1]
    assert results["size"][0] == 1
    assert "--data-parallel-size 8 differs from the coordinator's --data-parallel-size 4" in results["size"][1]
    assert rc == 1 and "data parallel ranks 2..3 (start rank 2) lost: engine dead" in out
    assert m_rc == 0


def test_mp_and_dp_together():
    """Two DP ranks, each a two-node TP group: the mp heads form the DP group; mp workers only join their head."""
    rpc = free_port()
    ports = [free_port(), free_port()]
    masters = [free_port(), free_port()]
    nodes = []
    try:
        for dp_rank in (0, 1):
            for node_rank in (0, 1):
                args = ["serve", MODEL, "-tp", "8", "--nnodes", "2", "--node-rank", str(node_rank),
                        "--master-port", str(masters[dp_rank]), "-dp", "2", "-dpl", "1", "-dpr", str(dp_rank),
                        "-dpa", "127.0.0.1", "-dpp", str(rpc), "-dph"]
                args += ["--headless"] if node_rank else ["--port", str(ports[dp_rank]), "--host", "127.0.0.1"]
                nodes.append(Node(args, {"VLLM_HOST_IP": "10.0.%d.%d" % (dp_rank, node_rank)}))
        assert nodes[0].wait_http(ports[0]) == 200 and nodes[2].wait_http(ports[1]) == 200
        c0, c1 = info(ports[0])["cluster"], info(ports[1])["cluster"]
        nodes[3].signal(signal.SIGTERM)  # the TP worker of DP rank 1: its TP group, then the DP group, die
        results = [n.finish() for n in nodes[:3]]
    finally:
        stop_all(*nodes)
    assert c0["mode"] == "mp+dp" and c1["mode"] == "mp+dp"
    assert sorted((j["kind"], j["VLLM_HOST_IP"]) for j in c0["joined"]) == [("dp", "10.0.1.0"), ("mp", "10.0.0.1")]
    assert c1["dp_ranks"] == [1] and c1["master"] == "127.0.0.1:%d" % masters[1]
    assert [r[0] for r in results] == [1, 1, 1]
    assert "node rank 1 lost: engine dead" in results[2][1]
    assert "data parallel ranks 1..1 (start rank 1) lost: engine dead" in results[0][1]
    assert "data parallel rendezvous: left to node rank 0" in results[1][1]


@pytest.mark.parametrize("extra", [["--headless"], []])
def test_single_node_without_groups_keeps_old_behaviour(extra):
    """No --nnodes and DP all local: nothing listens but the API (and a headless one serves nothing)."""
    port = free_port()
    node = Node(["serve", MODEL, "-dp", "2", "--port", str(port), "--host", "127.0.0.1"] + extra)
    try:
        if extra:
            node.wait_for("headless worker")
            assert refused(port)
        else:
            assert node.wait_http(port) == 200
            c = info(port)["cluster"]
            assert c["mode"] == "single" and c["dp_ranks"] == [0, 1] and c["joined"] == [] and c["master"] is None
        node.signal(signal.SIGTERM)
        rc, out = node.finish()
    finally:
        stop_all(node)
    assert rc == 0 and "data parallel ranks 0..1 of 2 (start rank 0)" in out
