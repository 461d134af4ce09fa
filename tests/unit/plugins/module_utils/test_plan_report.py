# -*- coding: utf-8 -*-
"""plan_report: the fleet table plan.yml prints, its warning codes and the counts."""

from __future__ import annotations

import pytest

from ansible_collections.llmfleet.vllm.plugins.module_utils.plan_report import (
    COLUMNS, WARNING_KINDS, deviations, host_codes, image_unpinned, row, summarize, table, warning_code)


def plan(host, **kw):
    out = {
        "host": host, "recipe": "Qwen/Qwen3.6-35B-A3B", "variant": "fp8", "hardware": "h200", "gpu_count": 8,
        "strategy": "single_node_tp", "replica": None, "rank": 0, "role": "single",
        "image": "vllm/vllm-openai:v0.28.0", "port": 8000, "serves_http": True,
        "argv": ["vllm", "serve", "Qwen/Qwen3.6-35B-A3B-FP8", "--tensor-parallel-size", "8"],
        "args_provenance": [{"arg": ["--tensor-parallel-size", "8"], "source": "strategy single_node_tp \u203a parallelism"}],
        "env_provenance": {}, "warnings": [],
    }
    out.update(kw)
    return out


@pytest.mark.parametrize("image, unpinned", [
    ("vllm/vllm-openai:latest", True),
    ("vllm/vllm-openai:nightly", True),
    ("vllm/vllm-openai", True),
    ("registry.local:5000/vllm/vllm-openai", True),        # a registry port is not a tag
    ("", True),
    (None, True),
    ("vllm/vllm-openai:v0.28.0", False),
    ("registry.local:5000/vllm/vllm-openai:v0.28.0", False),
    ("vllm/vllm-openai:nightly-20260101", False),          # a dated nightly names one build
    ("vllm/vllm-openai@sha256:" + "a" * 64, False),
    ("vllm/vllm-openai:latest@sha256:" + "a" * 64, False),  # the digest pins it
])
def test_image_unpinned(image, unpinned):
    assert image_unpinned(image) is unpinned


@pytest.mark.parametrize("text, code", [
    ("feature reasoning: mode x is not available for variant fp8 on h200; using y", "mode_fallback"),
    ("kv_offload lmcache skipped on b200 with multi_node_tp: gated", "kv_offload_skipped"),
    ("pd_cluster prefill pool co-located on rtx_5090 has no GPU (the node has 1)", "pd_pool_without_gpu"),
    ("pd_cluster decode pool: data-parallel size 8 exceeds the co-located pool's 4 GPUs (upstream quirk)", "pd_pool_dp_size"),
    ("pd_cluster decode pool: tensor-parallel size 8 exceeds the node's 4 GPUs; rendered with one data-parallel rank "
     "per node (upstream quirk)", "pd_pool_tp_size"),
    ("pd_cluster prefill pool: parallelism tep is not offered by the recipe; using tp", "pd_parallelism"),
    ("variant nvfp4 sets nightly_required, but Intel XPU has no nightly image: using x as upstream does", "xpu_nightly"),
    ("recipe r: meta.hardware.foo is not a hardware profile of the taxonomy (ignored, D5)", "D5"),
    ("host h: the plan uses 1 of its 8 GPUs; 7 GPUs stay idle (set vllm_gpu_ids)", "idle_gpus"),
    ("something new", "other"),
])
def test_warning_code(text, code):
    assert warning_code(text) == code
    assert code in WARNING_KINDS


def test_deviations_from_provenance_and_gpu_count():
    p = plan("a", env_provenance={"VLLM_ALLOW_LONG_MAX_MODEL_LEN": {"source": "feature long_context \u203a env (D1)"}})
    assert deviations(p, 8) == {"D1"}
    assert deviations(plan("b", gpu_count=4), 8) == {"D6"}       # the host's count replaced the profile's
    assert deviations(plan("b", gpu_count=4)) == set()           # profile unknown: not claimed
    assert deviations(plan("r", role="router", gpu_count=4), 8) == set()  # a router uses no GPU
    replaced = {"X": {"source": "recipe env", "replaced": [{"value": "1", "source": "feature f \u203a env (D1)"}]}}
    assert deviations(plan("c", env_provenance=replaced), 8) == set()  # only what applied counts


def test_host_codes_order_and_unpinned():
    p = plan("a", image="vllm/vllm-openai:latest", gpu_count=4,
             warnings=["kv_offload x skipped on h200 with single_node_tp: no", "something new"],
             env_provenance={"K": {"source": "feature long_context \u203a env (D1)"}})
    assert host_codes(p, 8) == ["unpinned", "kv_offload_skipped", "other", "D1", "D6"]
    assert host_codes(plan("b"), 8) == []


def test_row_of_a_replica_worker_and_a_router():
    worker = plan("w", replica="h200_tp_0001", rank=1, role="worker", serves_http=False, strategy="multi_node_tp",
                  argv=["vllm", "serve", "m", "--tensor-parallel-size=8", "--pipeline-parallel-size", "2", "--headless"])
    r = row(worker, 8)
    assert (r["replica"], r["role"], r["port"], r["tp/pp/dp"], r["hardware"]) == ("h200_tp_0001[1]", "worker", "-", "8/2/1", "h200 x8")
    dep = row(plan("d", argv=["vllm", "serve", "m", "-dp", "16", "--data-parallel-size-local", "8"]), 8)
    assert dep["tp/pp/dp"] == "1/1/16"
    router = row(plan("r", role="router", replica="pd", rank=2, port=8080, argv=["vllm-router", "--port", "8080"]), 8)
    assert (router["tp/pp/dp"], router["hardware"], router["port"]) == ("-", "h200", 8080)
    ray_worker = row(plan("rw", role="worker", replica="x", rank=1, argv=[], serves_http=False), 8)
    assert ray_worker["tp/pp/dp"] == "-"


def test_table_is_fixed_width_and_ascii():
    lines = table(("A", "LONGER"), [("xxxx", 1), ("y", None)])
    assert lines == ["A     LONGER", "xxxx  1", "y     -"]


def test_summarize_rows_counts_and_lines():
    plans = {
        "h200-01": plan("h200-01", image="vllm/vllm-openai:latest"),
        "h100-01": plan("h100-01", hardware="h100", gpu_count=4, variant="default",
                        warnings=["host h100-01: 3 GPUs stay idle"]),
        "b200-01": plan("b200-01", hardware="b200", replica="b200_tp", role="head", strategy="multi_node_tp"),
        "b200-02": plan("b200-02", hardware="b200", replica="b200_tp", rank=1, role="worker", strategy="multi_node_tp",
                        serves_http=False),
    }
    out = summarize(plans, lambda host, hw: 8)
    assert [r["host"] for r in out["rows"]] == sorted(plans)
    counts = out["counts"]
    assert counts["recipe"] == {"Qwen/Qwen3.6-35B-A3B": 4}
    assert counts["variant"] == {"Qwen/Qwen3.6-35B-A3B": {"default": 1, "fp8": 3}}
    assert counts["hardware"] == {"b200": 2, "h100": 1, "h200": 1}
    assert counts["gpus"] == {"b200": 16, "h100": 4, "h200": 8}
    assert counts["warning"] == {"unpinned": 1, "idle_gpus": 1, "D6": 1, "D7": 4}
    lines = out["lines"]
    assert lines[0].startswith("4 host(s) planned: 2 single, 2 in 1 replica(s)")
    header = lines[1]
    assert header.split() == list(COLUMNS)
    starts = [header.index(c) for c in COLUMNS]
    body = lines[2:6]
    assert [ln.split()[0] for ln in body] == sorted(plans)
    for ln in body:  # every cell starts under its header
        for start in starts[1:]:
            assert ln[start - 2:start] == "  " and ln[start] != " ", (ln, start)
    h100 = next(ln for ln in body if ln.startswith("h100-01"))
    assert h100.endswith("  idle_gpus,D6") and "h100 x4" in h100
    assert next(ln for ln in body if ln.startswith("h200-01")).endswith("  unpinned")
    assert next(ln for ln in body if ln.startswith("b200-02")).split()[2] == "b200_tp[1]"
    assert "RECIPE                HOSTS  VARIANTS" in lines
    assert "Qwen/Qwen3.6-35B-A3B  4      default 1, fp8 3" in lines
    assert lines[lines.index("HARDWARE  HOSTS  GPUS") + 1:][:3] == ["b200      2      16", "h100      1      4", "h200      1      8"]
    warn = lines.index(next(ln for ln in lines if ln.startswith("WARNING")))
    assert [ln.split()[:2] for ln in lines[warn + 1:]] == [["unpinned", "1"], ["idle_gpus", "1"], ["D6", "1"], ["D7", "4"]]
    assert all(ln == ln.rstrip() and ln.isascii() for ln in lines)


def test_summarize_without_profile_gpus_and_empty():
    out = summarize({"a": plan("a", gpu_count=4)})
    assert out["counts"]["warning"] == {"D7": 1}
    empty = summarize({})
    assert empty["rows"] == [] and empty["counts"]["warning"] == {}
    assert empty["lines"][0].startswith("0 host(s) planned")
