# -*- coding: utf-8 -*-
"""Behaviour of the resolver: the spec's worked results, deviations D1-D6, provenance."""

from __future__ import annotations

import copy
import os

import pytest
import yaml

from ansible_collections.llmfleet.vllm.plugins.module_utils.catalog import BUILTIN_TREE, Catalog
from ansible_collections.llmfleet.vllm.plugins.module_utils.errors import ResolveError, UnsupportedError
from ansible_collections.llmfleet.vllm.plugins.module_utils.resolver import Resolver, check_warnings

SEED = "Qwen/Qwen3.6-35B-A3B"
SEED_FILE = os.path.join(BUILTIN_TREE, "models", "Qwen", "Qwen3.6-35B-A3B.yaml")


@pytest.fixture(scope="module")
def res():
    return Resolver(Catalog())


def flags(node):
    return node["argv"][3:]


def prov_of(node, flag):
    return next(p for p in node["args_provenance"] if p["arg"][0] == flag)


def make_tree(tmp_path, mutate):
    """A recipe tree holding the built-in taxonomy/strategies and a mutated seed recipe."""
    with open(SEED_FILE) as handle:
        recipe = yaml.safe_load(handle)
    recipe = copy.deepcopy(recipe)
    mutate(recipe)
    tree = tmp_path / "tree"
    (tree / "models" / "Qwen").mkdir(parents=True)
    (tree / "models" / "Qwen" / "Qwen3.6-35B-A3B.yaml").write_text(yaml.safe_dump(recipe, sort_keys=False))
    return Resolver(Catalog([BUILTIN_TREE, str(tree)]))


# --------------------------------------------------------------------------- §5.9 worked results

def test_h200_default_single_node(res):
    plan = res.resolve(SEED, variant="default", hardware="h200", strategy="single_node_tp", node_count=1)
    node = plan["nodes"][0]
    assert node["argv"] == ["vllm", "serve", "Qwen/Qwen3.6-35B-A3B", "--trust-remote-code", "--tensor-parallel-size", "1",
                            "--enable-auto-tool-choice", "--tool-call-parser", "qwen3_coder", "--reasoning-parser", "qwen3",
                            "--mm-encoder-tp-mode", "data"]
    assert node["env"] == {}
    assert plan["image"] == "vllm/vllm-openai:latest"
    assert plan["docker_gpu_flags"] == ["--gpus", "all"]
    assert node["role"] == "single"


def test_h100_auto_tp_is_whole_node(res):
    node = res.resolve(SEED, variant="default", hardware="h100", strategy="single_node_tp", node_count=1)["nodes"][0]
    assert flags(node)[1:3] == ["--tensor-parallel-size", "8"]


def test_mi300x_env_image_and_device_flags(res):
    plan = res.resolve(SEED, variant="default", hardware="mi300x", strategy="single_node_tp", node_count=1)
    assert plan["nodes"][0]["env"] == {"VLLM_ROCM_USE_AITER": "1"}
    assert plan["nodes"][0]["env_provenance"]["VLLM_ROCM_USE_AITER"]["source"] == "hardware_overrides.amd"
    assert plan["image"] == "vllm/vllm-openai-rocm:latest"
    assert plan["docker_gpu_flags"] == ["--device=/dev/kfd", "--device=/dev/dri", "--security-opt", "seccomp=unconfined",
                                        "--group-add", "video"]


def test_arc_b60_xpu(res):
    plan = res.resolve(SEED, variant="default", hardware="arc_pro_b60", strategy="single_node_tp", node_count=1)
    assert flags(plan["nodes"][0])[:4] == ["--trust-remote-code", "--tensor-parallel-size", "4", "--enforce-eager"]
    assert plan["image"] == "vllm/vllm-openai-xpu:latest"
    assert plan["docker_gpu_flags"] == ["--device", "/dev/dri", "-v", "/dev/dri/by-path:/dev/dri/by-path", "--shm-size", "16g"]


def test_exact_gpu_variant_override_sits_before_tp(res):
    node = res.resolve(SEED, variant="default", hardware="rtx_pro_6000", strategy="single_node_tp", node_count=1)["nodes"][0]
    assert flags(node)[:5] == ["--trust-remote-code", "--max-num-seqs", "8", "--tensor-parallel-size", "1"]
    assert prov_of(node, "--max-num-seqs")["source"] == "variant default \u203a hardware_overrides.rtx_pro_6000"


def test_spark_nvfp4(res):
    plan = res.resolve(SEED, variant="nvfp4", hardware="dgx_spark_gb10", strategy="single_node_tp", node_count=1)
    node = plan["nodes"][0]
    assert plan["model"] == node["argv"][2] == "nvidia/Qwen3.6-35B-A3B-NVFP4"
    assert plan["image"] == "vllm/vllm-openai:v0.28.0"
    assert plan["image_source"] == "variant nvfp4 \u203a docker_image"
    assert plan["min_vllm_version"] == "0.28.0"
    assert " ".join(flags(node)) == (
        "--trust-remote-code --kv-cache-dtype fp8 --attention-backend flashinfer --moe-backend marlin "
        "--gpu-memory-utilization 0.5 --max-model-len 262144 --max-num-seqs 8 --max-num-batched-tokens 8192 "
        "--enable-chunked-prefill --async-scheduling --enable-prefix-caching --load-format fastsafetensors "
        "--tensor-parallel-size 1 --enable-auto-tool-choice --tool-call-parser qwen3_coder --reasoning-parser qwen3 "
        "--mm-encoder-tp-mode data")


def test_b200_multi_node_dep_head_and_worker(res):
    plan = res.resolve(SEED, variant="nvfp4", hardware="b200", strategy="multi_node_dep", node_count=2)
    head, worker = plan["nodes"]
    assert (head["role"], head["rank"], worker["role"], worker["rank"]) == ("head", 0, "worker", 1)
    dp = ["--enable-expert-parallel", "--data-parallel-hybrid-lb", "--data-parallel-size", "16",
          "--data-parallel-size-local", "8", "--data-parallel-address", "$HEAD_IP"]
    assert flags(head)[1:1 + len(dp)] == dp
    assert flags(worker)[1:3 + len(dp)] == dp + ["--data-parallel-start-rank", "8"]
    assert "--headless" not in worker["argv"]
    assert head["env"] == worker["env"] == {"GLOO_SOCKET_IFNAME": "$IFACE_NAME", "NCCL_SOCKET_IFNAME": "$IFACE_NAME"}


def test_b200_tp_pp_three_nodes(res):
    plan = res.resolve(SEED, variant="nvfp4", hardware="b200", strategy="multi_node_tp_pp", node_count=3)
    assert [n["rank"] for n in plan["nodes"]] == [0, 1, 2]
    for node in plan["nodes"]:
        f = flags(node)
        i = f.index("--tensor-parallel-size")
        assert f[i:i + 10] == ["--tensor-parallel-size", "8", "--pipeline-parallel-size", "3", "--nnodes", "3",
                               "--node-rank", str(node["rank"]), "--master-addr", "$HEAD_IP"]
        assert ("--headless" in f) == (node["rank"] > 0)


# --------------------------------------------------------------------------- provenance

def test_feature_beats_hardware_override_and_records_what_it_replaced(res):
    plan = res.resolve(SEED, variant="nvfp4", hardware="dgx_spark_gb10", strategy="single_node_tp", node_count=1,
                       features=["tool_calling", "reasoning", "encoder_parallel", "long_context"])
    node = plan["nodes"][0]
    f = flags(node)
    assert f[f.index("--max-model-len") + 1] == "1010000"
    assert f.count("--max-model-len") == 1
    prov = prov_of(node, "--max-model-len")
    assert prov["source"] == "feature long_context"
    assert prov["replaced"] == [{"arg": ["--max-model-len", "262144"],
                                 "source": "variant nvfp4 \u203a hardware_overrides.dgx_spark_gb10"}]


def test_strategy_flag_overrides_base_args_with_provenance(tmp_path):
    def mutate(r):
        r["model"]["base_args"] = ["--tensor-parallel-size", "8", "--trust-remote-code"]
    res = make_tree(tmp_path, mutate)
    node = res.resolve(SEED, variant="default", hardware="h200", strategy="single_node_tp", node_count=1)["nodes"][0]
    assert flags(node)[:3] == ["--trust-remote-code", "--tensor-parallel-size", "1"]
    prov = prov_of(node, "--tensor-parallel-size")
    assert prov["source"] == "strategy single_node_tp \u203a parallelism"
    assert prov["replaced"] == [{"arg": ["--tensor-parallel-size", "8"], "source": "model.base_args"}]


def test_every_unit_and_env_key_has_a_source(res):
    plan = res.resolve(SEED, variant="nvfp4", hardware="rtx_5090", strategy="single_node_tp", node_count=1,
                       features={"spec_decoding": True})
    node = plan["nodes"][0]
    flat = [tok for p in node["args_provenance"] for tok in p["arg"]]
    assert flat == node["argv"][3:]
    assert all(p["source"] for p in node["args_provenance"])
    assert set(node["env_provenance"]) == set(node["env"]) == {"VLLM_HAS_FLASHINFER_CUBIN"}
    spec = prov_of(node, "--speculative-config")
    assert spec["source"] == "feature spec_decoding \u203a mode mtp \u203a hardware_overrides.rtx_5090"
    assert '"num_speculative_tokens":4' in spec["arg"][1]


def test_inventory_extras_come_last(res):
    plan = res.resolve(SEED, variant="default", hardware="h200", strategy="single_node_tp", node_count=1,
                       extra_args=["--max-model-len", "32768", "--reasoning-parser", "deepseek_r1"],
                       extra_env={"HF_HUB_OFFLINE": 1})
    node = plan["nodes"][0]
    assert flags(node)[-4:] == ["--max-model-len", "32768", "--reasoning-parser", "deepseek_r1"]
    assert prov_of(node, "--reasoning-parser")["replaced"][0]["source"] == "feature reasoning"
    assert node["env"] == {"HF_HUB_OFFLINE": "1"}
    assert node["env_provenance"]["HF_HUB_OFFLINE"]["source"] == "inventory"


# --------------------------------------------------------------------------- D1 feature env

def test_d1_feature_env_applied(res):
    plan = res.resolve(SEED, variant="default", hardware="h200", strategy="single_node_tp", node_count=1,
                       features=["long_context"])
    node = plan["nodes"][0]
    assert node["env"] == {"VLLM_ALLOW_LONG_MAX_MODEL_LEN": "1"}
    assert node["env_provenance"]["VLLM_ALLOW_LONG_MAX_MODEL_LEN"]["source"] == "feature long_context \u203a env (D1)"


def test_d1_feature_env_gated_by_strategies_and_mode_env_follows(tmp_path):
    def mutate(r):
        r["features"]["long_context"]["strategies"] = ["single_node_tp"]
        r["features"]["spec_decoding"]["env"] = {"SPEC": "feature"}
        r["features"]["spec_decoding"]["modes"]["mtp"]["env"] = {"SPEC": "mode", "MTP": "1"}
    res = make_tree(tmp_path, mutate)
    feats = ["long_context", "spec_decoding"]
    on = res.resolve(SEED, variant="default", hardware="h200", strategy="single_node_tp", node_count=1, features=feats)
    env = on["nodes"][0]["env"]
    assert env == {"VLLM_ALLOW_LONG_MAX_MODEL_LEN": "1", "SPEC": "mode", "MTP": "1"}
    assert on["nodes"][0]["env_provenance"]["SPEC"]["replaced"][0]["source"] == "feature spec_decoding \u203a env (D1)"
    off = res.resolve(SEED, variant="default", hardware="h200", strategy="single_node_tep", node_count=1, features=feats)
    assert "VLLM_ALLOW_LONG_MAX_MODEL_LEN" not in off["nodes"][0]["env"]
    assert "--hf-overrides" not in off["nodes"][0]["argv"]
    assert off["features"] == ["spec_decoding"]


# --------------------------------------------------------------------------- D2 - D6

def test_d2_text_only_and_encoder_parallel_conflict(res):
    with pytest.raises(ResolveError) as err:
        res.resolve(SEED, variant="default", hardware="h200", strategy="single_node_tp", node_count=1,
                    features={"text_only": True})
    assert "text_only" in str(err.value) and "encoder_parallel" in str(err.value)
    plan = res.resolve(SEED, variant="default", hardware="h200", strategy="single_node_tp", node_count=1,
                       features={"text_only": True, "encoder_parallel": False})
    assert "--language-model-only" in plan["nodes"][0]["argv"]
    assert "--mm-encoder-tp-mode" not in plan["nodes"][0]["argv"]


def test_d2_conflicts_are_data_driven(tmp_path):
    def mutate(r):
        r["features"]["reasoning"]["conflicts_with"] = ["tool_calling"]
    res = make_tree(tmp_path, mutate)
    with pytest.raises(ResolveError, match="reasoning and tool_calling"):
        res.resolve(SEED, variant="default", hardware="h200", strategy="single_node_tp", node_count=1)


def test_d3_multi_node_needs_two_nodes(res):
    with pytest.raises(ResolveError, match="multi_node_tp needs at least 2 nodes"):
        res.resolve(SEED, variant="default", hardware="h200", strategy="multi_node_tp", node_count=1)


@pytest.mark.parametrize("kwargs, kind, valid", [
    ({"variant": "fp4"}, "variant", "redhat_fp8_plain"),
    ({"hardware": "h300"}, "hardware profile", "h200"),
    ({"strategy": "multi_node_xx"}, "strategy", "multi_node_tp_pp"),
    ({"features": ["tool_calling", "vision"]}, "feature", "long_context"),
    ({"features": ["spec_decoding"], "feature_modes": {"spec_decoding": "eagle"}}, "mode", "dspark"),
    ({"advanced": ["gpu_mem_099"]}, "advanced preset", "gpu_mem_095"),
    ({"kv_offload": "lmcache2"}, "kv_offload option", "offloading_cpu"),
])
def test_d4_unknown_ids_list_valid_ones(res, kwargs, kind, valid):
    args = dict(variant="default", hardware="h200", strategy="single_node_tp", node_count=1)
    args.update(kwargs)
    with pytest.raises(ResolveError) as err:
        res.resolve(SEED, **args)
    msg = str(err.value)
    assert msg.startswith("unknown %s " % kind)
    assert "valid:" in msg and valid in msg


def test_d4_unknown_recipe(res):
    with pytest.raises(Exception) as err:
        res.resolve("Qwen/Qwen9", variant="default", hardware="h200", strategy="single_node_tp", node_count=1)
    assert "unknown recipe 'Qwen/Qwen9'" in str(err.value) and SEED in str(err.value)


def test_d4_unavailable_mode_falls_back_with_warning(res):
    plan = res.resolve(SEED, variant="fp8", hardware="h200", strategy="single_node_tp", node_count=1,
                       features=["spec_decoding"], feature_modes={"spec_decoding": "dspark"})
    assert plan["feature_modes"] == {"spec_decoding": "mtp"}
    assert any("dspark is not available for variant fp8" in w for w in plan["warnings"])


def test_d5_unknown_meta_hardware_is_a_warning(tmp_path):
    def mutate(r):
        r["meta"]["hardware"]["a100"] = "verified"
    res = make_tree(tmp_path, mutate)
    plan = res.resolve(SEED, variant="default", hardware="h200", strategy="single_node_tp", node_count=1)
    assert any("meta.hardware.a100" in w and "D5" in w for w in plan["warnings"])


def test_d6_real_gpu_count_replaces_profile(res):
    plan = res.resolve(SEED, variant="default", hardware="h100", strategy="single_node_tp", node_count=1, gpu_count=4)
    assert plan["gpu_count"] == 4
    assert flags(plan["nodes"][0])[1:3] == ["--tensor-parallel-size", "4"]  # 84 GB > 80 GB per GPU: whole node
    plan = res.resolve(SEED, variant="fp8", hardware="h100", strategy="multi_node_dep", node_count=2, gpu_count=4)
    worker = flags(plan["nodes"][1])
    assert worker[worker.index("--data-parallel-size") + 1] == "8"
    assert worker[worker.index("--data-parallel-size-local") + 1] == "4"
    assert worker[worker.index("--data-parallel-start-rank") + 1] == "4"
    with pytest.raises(ResolveError, match="gpu_count must be a positive integer"):
        res.resolve(SEED, variant="fp8", hardware="h100", strategy="single_node_tp", node_count=1, gpu_count=0)


# --------------------------------------------------------------------------- other behaviour

def test_kv_offload_composes_and_gates(res):
    plan = res.resolve(SEED, variant="default", hardware="h200", strategy="single_node_tp", node_count=1, kv_offload="simple")
    node = plan["nodes"][0]
    assert node["argv"][-2] == "--kv-transfer-config" and "SimpleCPUOffloadConnector" in node["argv"][-1]
    assert prov_of(node, "--kv-transfer-config")["source"] == "kv_offload simple"
    gated = res.resolve(SEED, variant="default", hardware="h200", strategy="multi_node_tp", node_count=2, kv_offload="lmcache")
    assert "--kv-transfer-config" not in gated["nodes"][0]["argv"]
    assert gated["kv_offload"] is None
    assert any("lmcache skipped" in w for w in gated["warnings"])


def test_mooncake_is_not_supported_yet(res):
    with pytest.raises(UnsupportedError, match="not supported yet"):
        res.resolve(SEED, variant="default", hardware="h200", strategy="single_node_tp", node_count=1,
                    kv_offload="kv_store_centralized_mooncake")
    with pytest.raises(UnsupportedError, match="not supported yet"):
        res.resolve(SEED, variant="default", hardware="h200", strategy="kv_store_distributed_mooncake", node_count=1)


def test_advanced_presets_and_gates(res):
    plan = res.resolve(SEED, variant="default", hardware="h200", strategy="single_node_tep", node_count=1,
                       advanced=["gpu_mem_095", "ep_weight_filter"])
    f = flags(plan["nodes"][0])
    assert "--enable-ep-weight-filter" in f and f[f.index("--gpu-memory-utilization") + 1] == "0.95"
    with pytest.raises(ResolveError, match="expert-parallel strategy"):
        res.resolve(SEED, variant="default", hardware="h200", strategy="single_node_tp", node_count=1, advanced=["ep_weight_filter"])
    with pytest.raises(ResolveError, match="supports_dcp"):
        res.resolve(SEED, variant="default", hardware="h200", strategy="single_node_tp", node_count=1, advanced=["dcp_8"])


def test_pd_colocated_on_one_gpu_profile_has_no_prefill_devices(tmp_path):
    def mutate(r):
        r["compatible_strategies"].append("pd_cluster")
    res = make_tree(tmp_path, mutate)
    plan = res.resolve(SEED, variant="nvfp4", hardware="dgx_spark_gb10", strategy="pd_cluster", node_count=1)
    pre = next(n for n in plan["nodes"] if n["role"] == "prefill")
    dec = next(n for n in plan["nodes"] if n["role"] == "decode")
    assert "CUDA_VISIBLE_DEVICES" not in pre["env"]
    assert plan["pools"]["prefill"]["pool_gpus"] == 0
    assert any("prefill pool co-located on dgx_spark_gb10 has no GPU" in w for w in plan["warnings"])
    assert dec["argv"][dec["argv"].index("--port") + 1] == "8002"
    assert plan["router"]["argv"][:4] == ["vllm-router", "--policy", "round_robin", "--vllm-pd-disaggregation"]


def test_pd_dep_pool_ranks_rewrite_node_address(tmp_path):
    def mutate(r):
        r["compatible_strategies"] += ["single_node_dep", "pd_cluster"]
        r["strategy_overrides"] = {"pd_cluster": {"prefill": {"parallelism": "dep"}, "decode": {"parallelism": "dep"}}}
    res = make_tree(tmp_path, mutate)
    plan = res.resolve(SEED, variant="default", hardware="h200", strategy="pd_cluster", node_count=1,
                       pd_nodes={"prefill": 2, "decode": 1})
    prefill = [n for n in plan["nodes"] if n["role"] == "prefill"]
    assert [n["rank"] for n in prefill] == [0, 1]
    assert prefill[0]["env"]["VLLM_NIXL_SIDE_CHANNEL_HOST"] == "$PREFILL_NODE_1"
    assert prefill[1]["env"]["VLLM_NIXL_SIDE_CHANNEL_HOST"] == "$PREFILL_NODE_2"
    f1 = flags(prefill[1])
    assert f1[f1.index("--data-parallel-start-rank") + 1] == "8"
    assert "--data-parallel-hybrid-lb" in f1
    assert prefill[1]["env"]["GLOO_SOCKET_IFNAME"] == "$IFACE_NAME"
    assert "NCCL_CUMEM_ENABLE" not in prefill[0]["env"]  # NVL4-only keys dropped off gb200/gb300
    router = plan["router"]["argv"]
    assert router.count("--prefill") == 2 and router.count("--decode") == 1
    assert router[-1] == "8"  # intra-node DP size = max(dpLocal)


def test_image_precedence(tmp_path):
    def mutate(r):
        r["model"]["docker_image"] = {"nvidia": {"cu129": "img:cu129", "cu130": "img:cu130"}, "amd": "rocm:pinned"}
        r["variants"]["fp8"]["docker_image"] = {"amd": "rocm:fp8"}
        r["variants"]["fp8"]["hardware_overrides"]["h200"] = {"docker_image": "exact:h200"}
        r["model"]["nightly_required"] = True
    res = make_tree(tmp_path, mutate)

    def img(variant, hw):
        return res.resolve(SEED, variant=variant, hardware=hw, strategy="single_node_tp", node_count=1)["image"]
    assert img("fp8", "h200") == "exact:h200"           # exact-GPU HO wins
    assert img("fp8", "mi300x") == "rocm:fp8"           # variant brand map
    assert img("fp8", "h100") == "img:cu130"            # partial variant map falls through to the model's CUDA map
    assert img("default", "mi325x") == "rocm:pinned"
    assert img("default", "arc_pro_b60") == "vllm/vllm-openai-xpu:latest"  # XPU ignores nightly_required
    assert img("default", "xeon6") == "vllm/vllm-openai-cpu:nightly"


def test_xpu_image_ignores_nightly_required(tmp_path):
    def mutate(r):
        r["variants"]["fp8"]["nightly_required"] = True
        r["variants"]["nvfp4"]["hardware_overrides"]["arc_pro_b70"] = {"docker_image": "intel/vllm:pinned"}
        r["variants"]["nvfp4"]["nightly_required"] = True
    res = make_tree(tmp_path, mutate)

    def plan(variant, hw):
        return res.resolve(SEED, variant=variant, hardware=hw, strategy="single_node_tp", node_count=1)
    for hw in ("arc_pro_b60", "arc_pro_b70"):
        xpu = plan("fp8", hw)
        assert (xpu["image"], xpu["image_source"]) == ("vllm/vllm-openai-xpu:latest", "default image for Intel XPU")
        assert xpu["nightly"] is True
        assert "variant fp8 sets nightly_required, but Intel XPU has no nightly image: using vllm/vllm-openai-xpu:latest " \
               "as upstream does (pin vllm_image if it is too old)" in xpu["warnings"]
    plain = plan("default", "arc_pro_b60")
    assert plain["image"] == "vllm/vllm-openai-xpu:latest"
    assert not any("nightly" in w for w in plain["warnings"])
    assert plan("nvfp4", "arc_pro_b70")["image"] == "intel/vllm:pinned"  # a pin still wins
    assert plan("fp8", "h200")["image"] == "vllm/vllm-openai:nightly"  # other brands still honour it
    assert plan("fp8", "xeon6")["image"] == "vllm/vllm-openai-cpu:nightly"  # Intel CPU is not XPU


def test_pd_dep_pool_dp_local_is_never_below_one(tmp_path):
    def mutate(r):
        r["compatible_strategies"] += ["single_node_dep", "pd_cluster"]
        r["strategy_overrides"] = {"pd_cluster": {"prefill": {"parallelism": "dep", "tp": 8},
                                                  "decode": {"parallelism": "dep", "tp": 2}}}
    res = make_tree(tmp_path, mutate)
    # gb200 has 4 GPUs per node: prefill tp 8 > 4 gives one DP rank per node, not 0
    plan = res.resolve(SEED, variant="default", hardware="gb200", strategy="pd_cluster", node_count=1,
                       pd_nodes={"prefill": 2, "decode": 1})
    prefill = [n for n in plan["nodes"] if n["role"] == "prefill"]
    for rank, node in enumerate(prefill):
        f = flags(node)
        i = f.index("--tensor-parallel-size")
        assert f[i:i + 8] == ["--tensor-parallel-size", "8", "--data-parallel-size", "2", "--data-parallel-size-local", "1",
                              "--data-parallel-start-rank", str(rank)]
    decode = flags(next(n for n in plan["nodes"] if n["role"] == "decode"))
    i = decode.index("--data-parallel-size")
    assert decode[i:i + 4] == ["--data-parallel-size", "2", "--data-parallel-size-local", "2"]  # 4 // 2
    assert plan["pools"]["prefill"]["dp_local"] == 1 and plan["pools"]["prefill"]["dp_size"] == 2
    assert plan["router"]["argv"][-1] == "2"  # max(dpLocal)
    facts = res.check_facts(SEED, res.catalog.recipe(SEED), "default", res.hardware("gb200"), plan["pools"])
    assert [f for f in facts if f["check"] == "pd_pool_tp_size"] == [
        {"check": "pd_pool_tp_size", "role": "prefill", "tp": 8, "gpu_count": 4}]
    assert "pd_cluster prefill pool: tensor-parallel size 8 exceeds the node's 4 GPUs; rendered with one " \
           "data-parallel rank per node (upstream quirk)" in plan["warnings"]
    # one node per pool: DP size 1, DP-local 1
    one = res.resolve(SEED, variant="default", hardware="gb200", strategy="pd_cluster", node_count=1,
                      pd_nodes={"prefill": 1, "decode": 1})
    f = flags(next(n for n in one["nodes"] if n["role"] == "prefill"))
    i = f.index("--data-parallel-size")
    assert f[i:i + 4] == ["--data-parallel-size", "1", "--data-parallel-size-local", "1"]
    # co-located (0 nodes): still 1
    colo = res.resolve(SEED, variant="default", hardware="gb200", strategy="pd_cluster", node_count=1,
                       pd_nodes={"prefill": 0, "decode": 0})
    assert colo["pools"]["prefill"]["dp_local"] == 1 and colo["pools"]["prefill"]["dp_size"] == 1
    # the GPU count the host really has counts (D6): tp 8 fits an 8-GPU gb200 box
    big = res.resolve(SEED, variant="default", hardware="gb200", strategy="pd_cluster", node_count=1,
                      pd_nodes={"prefill": 1, "decode": 1}, gpu_count=8)
    assert big["pools"]["prefill"]["dp_local"] == 1
    assert not any("tensor-parallel size" in w for w in big["warnings"])


def test_selection_fills_unset_inputs(res):
    sel = res.select(SEED, hardware="rtx_5090")
    assert sel["variant"] == "nvfp4"  # the default variant does not fit a non-scalable 32 GB GPU
    assert sel["strategy"] == "single_node_tp"
    assert res.select(SEED)["hardware"] == "h200"
    assert res.select(SEED, variant="nvfp4")["hardware"] == "b200"
    plan = res.resolve(SEED, hardware="h200", strategy="multi_node_tp")
    assert plan["node_count"] == 2 and len(plan["nodes"]) == 2
    # an explicit variant is never substituted (preflight refuses it instead)
    plan = res.resolve(SEED, variant="default", hardware="rtx_5090")
    assert plan["variant"] == "default"
    assert any("cannot scale out" in w for w in plan["warnings"])


# --------------------------------------------------------------------------- check facts

def test_check_facts_are_the_deployment_warnings(res):
    recipe = res.catalog.recipe(SEED)
    plan = res.resolve(SEED, variant="nvfp4", hardware="h200", strategy="single_node_tp", node_count=1)
    facts = res.check_facts(SEED, recipe, "nvfp4", res.hardware("h200"))
    assert facts == [{"check": "precision", "variant": "nvfp4", "precision": "nvfp4", "needs_brand": "NVIDIA",
                      "needs_generation": "blackwell", "hardware": "h200", "brand": "NVIDIA", "generation": "hopper"}]
    assert plan["warnings"] == check_warnings(facts) == ["variant nvfp4 (nvfp4) is not supported on h200 (NVIDIA hopper)"]
    plan = res.resolve(SEED, variant="default", hardware="rtx_5090")
    (fact,) = res.check_facts(SEED, recipe, "default", res.hardware("rtx_5090"))
    assert fact == {"check": "vram_fit", "variant": "default", "vram_minimum_gb": 84, "hardware": "rtx_5090",
                    "vram_gb": 32, "fitting_variant": "nvfp4"}
    assert plan["warnings"] == check_warnings([fact]) == ["variant default needs 84 GB but rtx_5090 has 32 GB and cannot scale out"]
    assert res.check_facts(SEED, recipe, "default", res.hardware("h200")) == []


def test_check_facts_of_pd_pools_and_meta_hardware(tmp_path):
    def mutate(r):
        r["compatible_strategies"] += ["single_node_dep", "pd_cluster"]
        r["strategy_overrides"] = {"pd_cluster": {"prefill": {"parallelism": "dep"}}}
        r["meta"]["hardware"]["a100"] = "verified"
    res = make_tree(tmp_path, mutate)
    plan = res.resolve(SEED, variant="nvfp4", hardware="dgx_spark_gb10", strategy="pd_cluster", node_count=1)
    facts = res.check_facts(SEED, res.catalog.recipe(SEED), "nvfp4", res.hardware("dgx_spark_gb10"), plan["pools"])
    assert [(f["check"], f.get("role")) for f in facts] == [
        ("pd_pool_without_gpu", "prefill"), ("pd_pool_without_gpu", "decode"), ("pd_pool_dp_size", "prefill"),
        ("meta_hardware_unknown", None)]
    assert facts[2]["dp_size"] == 1 and facts[2]["pool_gpus"] == 0
    assert check_warnings(facts) == [
        "pd_cluster prefill pool co-located on dgx_spark_gb10 has no GPU (the node has 1)",
        "pd_cluster decode pool co-located on dgx_spark_gb10 has no GPU (the node has 1)",
        "pd_cluster prefill pool: data-parallel size 1 exceeds the co-located pool's 0 GPUs (upstream quirk)",
        "recipe %s: meta.hardware.a100 is not a hardware profile of the taxonomy (ignored, D5)" % SEED]
    assert plan["warnings"][-4:] == check_warnings(facts)


def test_precision_needs():
    assert Resolver.precision_needs({"precision": "bf16"}) is None
    assert Resolver.precision_needs({"precision": "NVFP4"}) == ("NVIDIA", "blackwell")
    assert Resolver.precision_needs({"precision": "mxfp4", "precision_hardware": {"brand": "AMD"}}) == ("AMD", None)
    res = Resolver(Catalog())
    variant = {"precision": "mxfp4", "precision_hardware": {"brand": "AMD"}}
    assert res.precision_ok(variant, res.hardware("mi300x")) and not res.precision_ok(variant, res.hardware("h200"))


# --------------------------------------------------------------------------- one set of override layers for argv and env

def test_hardware_override_layers_serve_args_and_env_alike(tmp_path):
    def mutate(r):
        r["hardware_overrides"]["hopper"] = {"extra_args": ["--max-num-seqs", "64"], "extra_env": {"A": "1"}}
        r["variants"]["default"]["hardware_overrides"] = {"hopper": {"extra_args": ["--max-num-seqs", "32"], "extra_env": {"A": "2"}}}
        r["strategy_overrides"] = {"single_node_tp": {"hardware_overrides": {"h200": {"extra_args": ["--seed", "1"], "extra_env": {"B": "1"}}}}}
    res = make_tree(tmp_path, mutate)
    node = res.resolve(SEED, variant="default", hardware="h200", strategy="single_node_tp", node_count=1)["nodes"][0]
    seqs = prov_of(node, "--max-num-seqs")
    assert seqs["source"] == node["env_provenance"]["A"]["source"] == "variant default \u203a hardware_overrides.hopper"
    assert seqs["replaced"][0]["source"] == node["env_provenance"]["A"]["replaced"][0]["source"] == "hardware_overrides.hopper"
    assert prov_of(node, "--seed")["source"] == node["env_provenance"]["B"]["source"] == \
        "strategy_overrides.single_node_tp \u203a hardware_overrides.h200"

    # a generation block of the strategy overrides replaces those of the recipe and the variant, in argv and env
    def mutate_gen(r):
        mutate(r)
        r["strategy_overrides"]["single_node_tp"]["hardware_overrides"]["hopper"] = {"extra_args": ["--max-num-seqs", "16"], "extra_env": {"A": "3"}}
    res = make_tree(tmp_path / "gen", mutate_gen)
    node = res.resolve(SEED, variant="default", hardware="h200", strategy="single_node_tp", node_count=1)["nodes"][0]
    assert prov_of(node, "--max-num-seqs")["arg"] == ["--max-num-seqs", "16"] and node["env"]["A"] == "3"
    assert prov_of(node, "--max-num-seqs")["source"] == node["env_provenance"]["A"]["source"] == \
        "strategy_overrides.single_node_tp \u203a hardware_overrides.hopper"
