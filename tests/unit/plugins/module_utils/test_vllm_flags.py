# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmfleet contributors
# Apache License 2.0 (see LICENSE)
"""Unit tests of plugins/module_utils/vllm_flags.py, tools/vllm_flag_catalog.py and
tools/flag_audit.py.

Nothing here downloads anything: ``from-wheel`` runs on a synthetic wheel zipped from
``fixtures/vllm_flags/fake_wheel``; ``from-listing`` on ``fixtures/vllm_flags/listing``
and, when ``../shared`` is present, on the real listings (the shipped catalogues must be
what the tool generates from them).
"""

from __future__ import annotations

import copy
import gzip
import importlib.util
import json
import os
import pathlib
import shutil
import sys
import zipfile

import pytest

from ansible_collections.llmfleet.vllm.plugins.module_utils import vllm_flags as vf
from ansible_collections.llmfleet.vllm.plugins.module_utils.errors import FlagValidationError, RecipeError

REPO = pathlib.Path(__file__).resolve().parents[4]
FIXTURES = REPO / "tests" / "unit" / "fixtures" / "vllm_flags"
SHIPPED = ["0.17.0", "0.28.0", "0.33.0"]


def _load_tool(name):
    spec = importlib.util.spec_from_file_location("_test_" + name, str(REPO / "tools" / (name + ".py")))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def catalog_tool():
    return _load_tool("vllm_flag_catalog")


@pytest.fixture(scope="module")
def audit_tool():
    return _load_tool("flag_audit")


def codes(args, version, **kw):
    return [(p.flag, p.code) for p in vf.find_problems(args, version, **kw)]


# ---------------------------------------------------------------------------
# versions and version selection
# ---------------------------------------------------------------------------


def test_catalog_dir_is_relative_to_the_collection_root():
    assert pathlib.Path(vf.CATALOG_DIR).resolve() == (REPO / "data" / "vllm_cli").resolve()


def test_available_versions_are_the_shipped_catalogues_sorted():
    assert vf.available_versions() == SHIPPED


def test_available_versions_sorts_numerically(tmp_path):
    for v in ("0.9.0", "0.10.1", "0.28.0", "0.17.0"):
        (tmp_path / (v + ".json")).write_text("{}")
    (tmp_path / "README.md").write_text("")
    assert vf.available_versions(str(tmp_path)) == ["0.9.0", "0.10.1", "0.17.0", "0.28.0"]
    assert vf.available_versions(str(tmp_path / "missing")) == []


@pytest.mark.parametrize(
    "image, version",
    [
        ("vllm/vllm-openai:v0.28.0", "0.28.0"),
        ("vllm/vllm-openai:0.28.0", "0.28.0"),
        ("vllm/vllm-openai:v0.28.0-cu129", "0.28.0"),
        ("vllm/vllm-openai-rocm:v0.33.0", "0.33.0"),
        ("docker.io/vllm/vllm-openai:v0.17.0@sha256:0123abcd", "0.17.0"),
        ("localhost:5000/vllm/vllm-openai:v0.33.0", "0.33.0"),
        ("vllm/vllm-openai:v0.28", "0.28.0"),
    ],
)
def test_select_version_from_image_tag(image, version):
    got, reason = vf.select_version(image=image)
    assert got == version
    assert image in reason and version in reason


@pytest.mark.parametrize(
    "image",
    [
        "vllm/vllm-openai:latest",
        "vllm/vllm-openai:nightly",
        "vllm/vllm-openai-rocm:nightly-4c626633159887b0f2c962058c17c78f1434556d",
        "vllm/vllm-openai-cpu:latest-x86_64",
        "vllm/vllm-openai",
    ],
)
def test_rolling_tags_use_the_newest_catalogue_and_say_so(image):
    got, reason = vf.select_version(image=image)
    assert got == "0.33.0"
    assert "rolling tag" in reason and "newest" in reason and "0.33.0" in reason


def test_tag_naming_no_release_uses_newest_or_the_version_given():
    got, reason = vf.select_version(image="vllm/vllm-openai:gemma4-0505-cu129")
    assert got == "0.33.0" and "names no vLLM release" in reason
    got, reason = vf.select_version(image="vllm/vllm-openai:latest", version="0.28.0")
    assert got == "0.28.0" and "version given" in reason


def test_image_tag_wins_over_a_conflicting_version():
    got, reason = vf.select_version(image="vllm/vllm-openai:v0.17.0", version="0.33.0")
    assert got == "0.17.0"
    assert "wins" in reason


def test_explicit_version_and_default():
    assert vf.select_version(version="0.28.0") == ("0.28.0", "vLLM 0.28.0: catalogue 0.28.0")
    assert vf.select_version(version="v0.33.0")[0] == "0.33.0"
    got, reason = vf.select_version()
    assert got == "0.33.0" and "newest" in reason


def test_version_without_catalogue_maps_to_newest_not_newer():
    got, reason = vf.select_version(version="0.29.1")
    assert got == "0.28.0"
    assert "no catalogue for vLLM 0.29.1" in reason and "0.28.0" in reason
    got, reason = vf.select_version(image="vllm/vllm-openai:v0.21.0-cu130")
    assert got == "0.17.0" and "0.21.0" in reason
    got, reason = vf.select_version(version="0.40.0")
    assert got == "0.33.0" and "newest shipped" in reason and "unknown" in reason


@pytest.mark.parametrize("version", ["0.10.0", "0.16.9", "0.17.0rc1"])
def test_version_older_than_every_catalogue_is_an_error(version):
    with pytest.raises(vf.UnsupportedVllmVersion) as exc:
        vf.select_version(version=version)
    assert "older than every flag catalogue" in str(exc.value)
    assert "0.17.0" in str(exc.value)
    assert isinstance(exc.value, RecipeError) and isinstance(exc.value, ValueError)
    with pytest.raises(vf.UnsupportedVllmVersion):
        vf.select_version(image="vllm/vllm-openai:v%s" % version)
    with pytest.raises(vf.UnsupportedVllmVersion):
        vf.check_args(["--enforce-eager"], version)


def test_not_a_version_is_an_error():
    with pytest.raises(vf.UnsupportedVllmVersion):
        vf.select_version(version="banana")


def test_parse_image_tag():
    assert vf.parse_image_tag("vllm/vllm-openai:v0.28.0-cu129") == ("vllm/vllm-openai", "v0.28.0-cu129", "0.28.0")
    assert vf.parse_image_tag("localhost:5000/vllm/x") == ("localhost:5000/vllm/x", None, None)
    assert vf.parse_image_tag("vllm/vllm-openai:stepfun37") == ("vllm/vllm-openai", "stepfun37", None)
    assert vf.parse_image_tag("vllm/vllm-openai:0.11.0rc2")[2] == "0.11.0rc2"
    assert vf.parse_image_tag("vllm/vllm-openai:v0.10.1.1")[2] == "0.10.1"
    assert vf.parse_image_tag("vllm/vllm-openai:v0.28.0.post1-cu129")[2] == "0.28.0post1"
    assert vf.select_version(image="vllm/vllm-openai:v0.28.0.post1")[0] == "0.28.0"
    assert vf.select_version(image="vllm/vllm-openai:v0.28.0rc1")[0] == "0.17.0"


# ---------------------------------------------------------------------------
# catalogues
# ---------------------------------------------------------------------------


def test_load_catalog_is_cached_and_rejects_unknown_versions():
    a = vf.load_catalog("0.28.0")
    assert a is vf.load_catalog("v0.28.0")
    assert a.version == "0.28.0"
    with pytest.raises(vf.UnsupportedVllmVersion):
        vf.load_catalog("0.29.0")


@pytest.mark.parametrize("version", SHIPPED)
def test_shipped_catalogues_cover_the_listed_flags(version, shared_dir):
    cat = vf.load_catalog(version)
    listed = [line.strip() for line in (shared_dir / "vllm-cli" / ("flags-%s.txt" % version)).read_text().splitlines() if line.strip()]
    longs = [o for o in cat.option_strings() if o.startswith("--")]
    assert sorted(longs) == sorted(listed)
    assert cat.doc["format_version"] == 1 and cat.doc["vllm_version"] == version


def test_lookup_normalizes_and_groups_spellings():
    cat = vf.load_catalog("0.28.0")
    assert cat.canonical("--tensor_parallel_size") == "--tensor-parallel-size"
    assert cat.canonical("-tp") == "--tensor-parallel-size"
    assert cat.canonical("--no-enable-prefix-caching") == "--enable-prefix-caching"
    assert cat.is_negative("--no-enable-prefix-caching") and not cat.is_negative("--enable-prefix-caching")
    assert cat.is_boolean("--enforce-eager") and not cat.takes_value("--enforce-eager")
    assert cat.takes_value("--max-model-len") and not cat.is_boolean("--max-model-len")
    assert cat.is_json("--compilation-config") and cat.is_json("-cc") and not cat.is_json("--tokenizer")
    assert cat.entry("--compilation-config")["json"]["config"] == "VllmConfig.compilation_config"
    assert "--no-max-model-len" not in cat
    assert cat.choices("--mm-encoder-tp-mode") == ["data", "weights"]
    assert "qwen3_coder" in cat.runtime_choices("--tool-call-parser")
    assert "-h" in cat.option_strings()


def test_enable_disable_pairs_only_in_0_33():
    c33 = vf.load_catalog("0.33.0")
    assert c33.canonical("--disable-prefix-caching") == "--enable-prefix-caching"
    assert c33.is_negative("--disable-prefix-caching")
    assert c33.canonical("--enable-cascade-attn") == "--disable-cascade-attn"
    assert c33.is_negative("--enable-cascade-attn")
    assert c33.canonical("--device-memory-utilization") == "--gpu-memory-utilization"
    assert "--disable-prefix-caching" not in vf.load_catalog("0.28.0")


def test_catalogue_short_aliases_by_version():
    assert "-sc" not in vf.load_catalog("0.17.0") and vf.load_catalog("0.28.0").canonical("-sc") == "--speculative-config"
    assert vf.load_catalog("0.17.0").canonical("-cc") == "--compilation-config"
    assert vf.load_catalog("0.33.0").canonical("-dpm") == "--data-parallel-multi-port-external-lb"


# ---------------------------------------------------------------------------
# check_args: normalization rules
# ---------------------------------------------------------------------------

GOOD = [
    "--trust-remote-code",
    "--tensor-parallel-size",
    "8",
    "--enable-auto-tool-choice",
    "--tool-call-parser",
    "qwen3_coder",
    "--reasoning-parser",
    "qwen3",
    "--mm-encoder-tp-mode",
    "data",
]


@pytest.mark.parametrize("version", SHIPPED)
def test_full_argv_and_flag_list_are_both_understood(version):
    assert vf.check_args(["vllm", "serve", "Qwen/Qwen3.6-35B-A3B"] + GOOD, version) == []
    assert vf.check_args(GOOD, version) == []
    assert vf.check_args(["/usr/local/bin/vllm", "serve", "m"] + GOOD, version) == []
    assert vf.check_args([], version) == []


def test_underscore_spelling_equals_dash_spelling():
    assert vf.check_args(["--tokenizer_mode", "auto", "--max_model_len", "32k", "--enable_prefix_caching"], "0.17.0") == []
    assert vf.check_args(["--config_format", "mistral", "--load_format", "mistral", "--logits_processors", "a.B"], "0.28.0") == []
    # single-dash options are not rewritten
    assert codes(["-t_p", "2"], "0.28.0") == [("-t_p", "unknown")]


def test_equals_form():
    assert vf.check_args(["--max-model-len=32768", "--tensor_parallel_size=2", "-tp=4", "--hf-overrides={\"a\": 1}"], "0.28.0") == []
    probs = vf.check_args(["--kv-cache-dtype=fp9"], "0.28.0")
    assert len(probs) == 1 and "--kv-cache-dtype" in probs[0] and "'fp9'" in probs[0]


def test_no_forms_only_for_boolean_flags():
    assert vf.check_args(["--no-enforce-eager", "--no-enable-prefix-caching", "--no-trust-remote-code"], "0.17.0") == []
    assert codes(["--no-max-model-len"], "0.28.0") == [("--no-max-model-len", "not-negatable")]
    msg = vf.check_args(["--no-max-model-len"], "0.28.0")[0]
    assert "only boolean flags" in msg and "--max-model-len takes a value" in msg
    # store_true switches have no --no- form either
    assert codes(["--no-headless"], "0.28.0") == [("--no-headless", "not-negatable")]
    assert "store_true" in vf.check_args(["--no-headless"], "0.28.0")[0]


def test_disable_forms_by_version():
    argv = ["--disable-prefix-caching", "--disable-log-requests"]
    assert vf.check_args(argv, "0.33.0") == []
    probs = vf.find_problems(argv, "0.28.0")
    assert [(p.flag, p.code) for p in probs] == [("--disable-prefix-caching", "unknown"), ("--disable-log-requests", "unknown")]
    assert "closest: --no-enable-prefix-caching" in probs[0].message
    assert "(accepted by vLLM 0.33.0)" in probs[0].message
    assert probs[0].message.startswith("vLLM 0.28.0: ")


@pytest.mark.parametrize(
    "argv",
    [
        ["--compilation-config.cudagraph_mode=FULL"],
        ["--compilation-config.cudagraph_mode", "FULL_AND_PIECEWISE"],
        ["--compilation_config.mode", "3"],
        ["-cc.mode=3"],
        ["-cc.pass_config.fuse_allreduce_rms", "true"],
        ["--attention_config.use_trtllm_attention=True"],
        ["--attention-config.backend", "FLASHINFER"],
        ["--speculative-config.method", "ngram", "--speculative-config.num_speculative_tokens", "3"],
        ["--hf-overrides.rope_theta", "1000000"],
        ["--limit-mm-per-prompt.video", "0"],
        ["--compilation-config.custom_ops+", "none,+rms_norm"],
        ["--kernel-config.enable_flashinfer_autotune=False"],
    ],
)
def test_dotted_json_keys_on_json_flags(argv):
    assert vf.check_args(argv, "0.28.0") == []


def test_dotted_keys_on_non_json_or_unknown_flags():
    assert codes(["--tokenizer.x", "y"], "0.28.0") == [("--tokenizer.x", "not-json")]
    assert "not JSON-valued" in vf.check_args(["--max-model-len.x=1"], "0.28.0")[0]
    assert codes(["--compilaton-config.mode", "3"], "0.28.0") == [("--compilaton-config.mode", "unknown")]
    assert "--compilation-config" in vf.check_args(["--compilaton-config.mode", "3"], "0.28.0")[0]
    assert codes(["--enforce-eager", "--compilation-config.mode"], "0.28.0") == [("--compilation-config.mode", "missing-value")]
    # vLLM swallows the next token as the value of a dotted key, even an option
    assert codes(["--compilation-config.mode", "--enforce-eager"], "0.28.0") == [("--compilation-config.mode", "missing-value")]


def test_dotted_keys_checked_against_config_fields_when_known():
    doc = copy.deepcopy(vf.load_catalog("0.28.0").doc)
    doc["flags"]["--attention-config"]["json"]["fields"] = ["backend", "use_trtllm_attention"]
    cat = vf.FlagCatalog(doc)
    assert vf.check_args(["--attention_config.use_trtllm_attention=True"], cat) == []
    probs = vf.find_problems(["--attention-config.use_trtlm_attention=True"], cat)
    assert [(p.flag, p.code) for p in probs] == [("--attention-config.use_trtlm_attention=True", "unknown-json-key")]
    assert "closest: use_trtllm_attention" in probs[0].message


def test_optimization_level_shorthand():
    for argv in (["-O3"], ["-O=3"], ["-O", "3"], ["-O0", "--enforce-eager"]):
        assert vf.check_args(argv, "0.17.0") == [], argv
    assert codes(["-O", "fast"], "0.28.0") == [("-O", "unknown")]


# ---------------------------------------------------------------------------
# check_args: values, choices, positionals
# ---------------------------------------------------------------------------


def test_choices_are_checked_with_the_valid_choices_named():
    probs = vf.find_problems(["--block-size", "24"], "0.17.0")
    assert [(p.flag, p.code) for p in probs] == [("--block-size", "bad-choice")]
    assert "valid choices: 1, 8, 16, 32, 64, 128, 256" in probs[0].message
    assert vf.check_args(["--block-size", "16"], "0.17.0") == []
    msg = vf.check_args(["--mm-encoder-tp-mode", "dta"], "0.28.0")[0]
    assert "valid choices: data, weights" in msg and "closest: data" in msg
    assert codes(["--dtype", "fp32"], "0.33.0") == [("--dtype", "bad-choice")]


def test_choice_normalization_and_platform_choices():
    # --moe-backend lower-cases and turns - into _ before the check
    assert vf.check_args(["--moe-backend", "Flashinfer-Cutlass"], "0.17.0") == []
    assert codes(["--moe-backend", "deep_gemm_mega_moe"], "0.17.0") == [("--moe-backend", "bad-choice")]
    assert vf.check_args(["--moe-backend", "deep_gemm_mega_moe"], "0.28.0") == []
    # --mm-processor-device also takes the platform's device type
    assert vf.check_args(["--mm-processor-device", "cuda"], "0.28.0") == []
    assert codes(["--mm-processor-device", "gpu"], "0.28.0") == [("--mm-processor-device", "bad-choice")]
    # choices that themselves contain commas (lossy in the listing)
    assert vf.check_args(["--collect-detailed-traces", "model,worker"], "0.17.0") == []
    assert codes(["--collect-detailed-traces", "model,disk"], "0.17.0") == [("--collect-detailed-traces", "bad-choice")]


def test_value_types():
    ok = [
        "--max-model-len", "auto", "--max-num-batched-tokens", "16k", "--gpu-memory-utilization", "0.9",
        "--kv-cache-memory-bytes", "8G", "--seed", "-1", "--default-chat-template-kwargs", '{"enable_thinking": false}',
        "--speculative-config", '{"method": "ngram"}', "--hf-overrides", "plain-string", "--max-model-len", "-1",
    ]
    assert vf.check_args(ok, "0.28.0") == []
    assert codes(["--tensor-parallel-size", "eight"], "0.28.0") == [("--tensor-parallel-size", "bad-value")]
    assert "expects an integer" in vf.check_args(["--tensor-parallel-size", "eight"], "0.28.0")[0]
    assert codes(["--max-num-batched-tokens", "1.5K"], "0.28.0") == [("--max-num-batched-tokens", "bad-value")]
    assert codes(["--gpu-memory-utilization", "ninety"], "0.28.0") == [("--gpu-memory-utilization", "bad-value")]
    assert codes(["--default-chat-template-kwargs", "{enable_thinking: false}"], "0.28.0") == [
        ("--default-chat-template-kwargs", "bad-value")
    ]
    assert codes(["--compilation-config", "[3]"], "0.28.0") == [("--compilation-config", "bad-value")]
    assert codes(["--hf-overrides", "{'a': 1}"], "0.28.0") == [("--hf-overrides", "bad-value")]


def test_placeholders_are_not_type_checked():
    argv = ["--data-parallel-address", "$HEAD_IP", "--data-parallel-rpc-port", "$DP_RPC_PORT", "--node-rank", "${NODE_RANK}",
            "--tensor-parallel-size", "{{ tp }}"]
    assert vf.check_args(argv, "0.28.0") == []


def test_missing_values():
    assert codes(["--max-model-len"], "0.28.0") == [("--max-model-len", "missing-value")]
    probs = vf.check_args(["--max-model-len", "--enforce-eager"], "0.28.0")
    assert len(probs) == 1 and "starts with '-'" in probs[0]
    # nargs='?' (--hf-token) may stand alone
    assert vf.check_args(["--hf-token", "--enforce-eager"], "0.28.0") == []


def test_store_true_given_a_value():
    # a following token becomes a stray positional: vllm serve takes only the model
    probs = vf.find_problems(["vllm", "serve", "m", "--headless", "true"], "0.28.0")
    assert [(p.flag, p.code) for p in probs] == [("true", "stray-positional")]
    assert "--headless, which takes no value" in probs[0].message
    assert codes(["--enforce-eager", "false"], "0.17.0") == [("false", "stray-positional")]
    # --flag=value is an argparse error of its own
    probs = vf.find_problems(["--enforce-eager=true"], "0.28.0")
    assert [(p.flag, p.code) for p in probs] == [("--enforce-eager=true", "unexpected-value")]
    assert "--no-enforce-eager" in probs[0].message
    # a switch followed by an option is fine
    assert vf.check_args(["--headless", "--enforce-eager", "--disable-log-stats"], "0.28.0") == []


def test_positionals():
    assert vf.check_args(["vllm", "serve", "--enforce-eager", "model/id"], "0.28.0") == []
    assert codes(["vllm", "serve", "model/id", "other"], "0.28.0") == [("other", "stray-positional")]
    assert codes(["--port", "8000", "extra"], "0.28.0") == [("extra", "stray-positional")]
    # nargs='+' options take every following value, as argparse does
    assert vf.check_args(["--served-model-name", "a", "b", "--port", "8000"], "0.28.0") == []
    assert vf.check_args(["--served-model-name=a", "--port", "1"], "0.28.0") == []
    assert codes(["vllm", "serve", "a", "--model", "b"], "0.28.0") == [("--model", "model-twice")]
    assert vf.check_args(["vllm", "serve", "--model", "b", "--port", "1"], "0.28.0") == []
    # "--" ends the options: what follows is positional
    assert codes(["vllm", "serve", "m", "--", "--port"], "0.28.0") == [("--port", "stray-positional")]


def test_unknown_option_with_a_value_reports_only_the_option():
    probs = vf.find_problems(["--tool-call-parser-plugin", "x.py", "--enforce-eager"], "0.28.0")
    assert [(p.flag, p.code) for p in probs] == [("--tool-call-parser-plugin", "unknown")]
    assert "closest: --tool-parser-plugin" in probs[0].message


def test_closest_spellings():
    msg = vf.check_args(["--tensor-paralel-size", "2"], "0.28.0")[0]
    assert "closest: --tensor-parallel-size" in msg and msg.startswith("vLLM 0.28.0: --tensor-paralel-size")
    msg = vf.check_args(["--gpu-memory-utilisation", "0.9"], "0.17.0")[0]
    assert "--gpu-memory-utilization" in msg
    msg = vf.check_args(["--linear-backend", "auto"], "0.17.0")[0]
    assert "(accepted by vLLM 0.28.0, 0.33.0)" in msg


def test_abbreviations():
    assert codes(["--gpu-memory-util", "0.8"], "0.28.0") == [("--gpu-memory-util", "abbreviation")]
    assert "--gpu-memory-utilization" in vf.check_args(["--gpu-memory-util", "0.8"], "0.28.0")[0]
    assert vf.check_args(["--gpu-memory-util", "0.8"], "0.28.0", allow_abbrev=True) == []
    # the abbreviation's value is still checked
    assert codes(["--gpu-memory-util", "x"], "0.28.0", allow_abbrev=True) == [("--gpu-memory-util", "bad-value")]
    assert codes(["--enable-p", "--port", "1"], "0.28.0", allow_abbrev=True) == [("--enable-p", "ambiguous")]


def test_short_option_with_attached_value():
    assert vf.check_args(["-q", "fp8", "-qfp8", "-tp", "2"], "0.28.0") == []
    assert codes(["-tp8"], "0.28.0") == [("-tp8", "unknown")]


def test_help_stops_the_server():
    assert codes(["--help"], "0.28.0") == [("--help", "help")]
    assert codes(["-h"], "0.28.0") == [("-h", "help")]


def test_parser_names_checked_at_each_version():
    argv = ["--enable-auto-tool-choice", "--tool-call-parser", "gemma4", "--reasoning-parser", "gemma4"]
    assert vf.check_args(argv, "0.28.0") == []
    probs = vf.find_problems(argv, "0.17.0")
    assert [(p.flag, p.code) for p in probs] == [
        ("--tool-call-parser", "unknown-parser"),
        ("--reasoning-parser", "unknown-parser"),
    ]
    assert "(built into vLLM 0.28.0, 0.33.0)" in probs[0].message
    assert "--tool-parser-plugin" in probs[0].message
    probs = vf.find_problems(["--tool-call-parser", "qwen3_codr"], "0.33.0")
    assert "closest: qwen3_coder" in probs[0].message
    # a plugin may register other names
    assert vf.check_args(["--tool-parser-plugin", "/p.py", "--tool-call-parser", "mine"], "0.28.0") == []
    assert vf.check_args(["--reasoning-parser-plugin", "/p.py", "--reasoning-parser", "mine"], "0.28.0") == []
    # 0.33 maps "none" (any case) to unset; 0.28 does not
    assert vf.check_args(["--reasoning-parser", "None"], "0.33.0") == []
    assert codes(["--reasoning-parser", "none"], "0.28.0") == [("--reasoning-parser", "unknown-parser")]


def test_every_problem_names_flag_and_version():
    argv = ["--bogus", "--block-size", "24", "--enforce-eager=1", "--no-port", "--kv-cache-dtype", "fp9"]
    probs = vf.find_problems(argv, "0.17.0")
    assert len(probs) == 5
    for p in probs:
        assert p.version == "0.17.0" and p.message.startswith("vLLM 0.17.0: ")
        assert p.flag.split("=")[0] in p.message
        assert str(p) == p.message and p.as_dict()["code"] == p.code


def test_version_mapping_in_check_args():
    msg = vf.check_args(["--bogus"], "0.30.0")[0]
    assert msg.startswith("vLLM 0.30.0 (checked against the 0.28.0 catalogue): ")
    assert vf.find_problems(["--bogus"], None)[0].version == "0.33.0"
    assert vf.find_problems(["--bogus"], vf.load_catalog("0.17.0"))[0].version == "0.17.0"


def test_validate_args():
    assert vf.validate_args(GOOD, "0.28.0") is True
    with pytest.raises(FlagValidationError) as exc:
        vf.validate_args(["vllm", "serve", "m", "--disable-log-requests", "--block-size", "24"], "0.17.0")
    assert exc.value.version == "0.17.0"
    assert len(exc.value.problems) == 2
    assert "--disable-log-requests" in str(exc.value) and "--block-size" in str(exc.value)
    assert isinstance(exc.value, RecipeError)


def test_non_string_tokens_are_stringified():
    assert vf.check_args(["--tensor-parallel-size", 8, "--gpu-memory-utilization", 0.9], "0.28.0") == []


# ---------------------------------------------------------------------------
# golden renderings
# ---------------------------------------------------------------------------


def _golden_argvs(path, audit_tool):
    out = set()
    with gzip.open(str(path), "rt") as fh:
        for line in fh:
            for _where, argv in audit_tool.iter_argvs(json.loads(line)):
                out.add(tuple(argv))
    return out


@pytest.mark.parametrize(
    "name, count",
    [("seed_qwen3.6-35b-a3b_json_api_renderings.jsonl.gz", 252), ("seed_qwen3.6-35b-a3b_selection_matrix.jsonl.gz", 3463)],
)
def test_every_seed_golden_argv_passes_at_every_shipped_version(name, count, shared_dir, audit_tool):
    argvs = _golden_argvs(shared_dir / "golden" / name, audit_tool)
    assert len(argvs) == count
    for version in SHIPPED:
        bad = dict((a, vf.check_args(list(a), version)) for a in argvs)
        bad = dict((a, p) for a, p in bad.items() if p)
        assert bad == {}, (version, list(bad.items())[:3])


def test_upstream_golden_known_rejections(shared_dir, audit_tool):
    """Real outcomes for a few upstream recipes (see tools/flag_audit.py for all)."""
    wanted = {"nvidia/NVIDIA-Nemotron-Nano-9B-v2", "moonshotai/Kimi-K2-Instruct", "zai-org/GLM-5.2", "Google/gemma-4-31B-it"}
    found = {}
    with gzip.open(str(shared_dir / "golden" / "upstream_api_renderings_visible.jsonl.gz"), "rt") as fh:
        for line in fh:
            rec = json.loads(line)
            if rec["recipe"] not in wanted:
                continue
            for _where, argv in audit_tool.iter_argvs(rec):
                for v in SHIPPED:
                    for p in vf.find_problems(argv, v):
                        found.setdefault((rec["recipe"], p.flag, p.code), set()).add(v)
    assert found == {
        # misspelt plugin option (it is --tool-parser-plugin), so nemotron_json is never registered
        ("nvidia/NVIDIA-Nemotron-Nano-9B-v2", "--tool-call-parser-plugin", "unknown"): set(SHIPPED),
        ("nvidia/NVIDIA-Nemotron-Nano-9B-v2", "--tool-call-parser", "unknown-parser"): set(SHIPPED),
        ("moonshotai/Kimi-K2-Instruct", "--disable-log-requests", "unknown"): {"0.17.0", "0.28.0"},
        ("zai-org/GLM-5.2", "--linear-backend", "unknown"): {"0.17.0"},
        ("Google/gemma-4-31B-it", "--tool-call-parser", "unknown-parser"): {"0.17.0"},
        ("Google/gemma-4-31B-it", "--reasoning-parser", "unknown-parser"): {"0.17.0"},
    }


# ---------------------------------------------------------------------------
# tools/vllm_flag_catalog.py
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "desc, expected",
    [
        (None, ("str", False)),
        ("None", ("str", False)),
        ("int", ("int", False)),
        ("optional_type.<locals>._optional_type(int)", ("int", True)),
        ("human_readable_int", ("human_int", False)),
        ("human_readable_int_or_auto", ("human_int_or_auto", False)),
        ("loads", ("json", False)),
        ("optional_type.<locals>._optional_type(parse_type.<locals>._parse_type(loads))", ("json", True)),
        ("_compute_kwargs.<locals>.parse_dataclass", ("json_object", False)),
        ("optional_type.<locals>._optional_type(_compute_kwargs.<locals>.parse_dataclass)", ("json_object", True)),
        ("union_dict_and_str", ("json_or_str", False)),
        ("parse_reasoning_parser", ("str", False)),
        ("EngineArgs.add_cli_args.<locals>.<lambda>", ("opaque", False)),
    ],
)
def test_semantic_type(catalog_tool, desc, expected):
    assert catalog_tool.semantic_type(desc) == expected


def test_from_listing_fixture(catalog_tool):
    d = FIXTURES / "listing"
    doc = catalog_tool.build_from_listing(
        "9.1.0",
        str(d / "flags-9.1.0.txt"),
        str(d / "argparse-types-9.1.0.tsv"),
        str(d / "json-flags-9.1.0.txt"),
        str(d / "parsers-by-version.txt"),
    )
    f = doc["flags"]
    assert doc["vllm_version"] == "9.1.0" and doc["source"]["kind"] == "listing"
    # BooleanOptionalAction listed under its --no- form: canonical is the field form
    assert f["--trust-remote-code"]["option_strings"] == ["--no-trust-remote-code", "--trust-remote-code"]
    assert f["--trust-remote-code"]["negative_option_strings"] == ["--no-trust-remote-code"]
    assert f["--trust-remote-code"]["action"] == "boolean_optional" and not f["--trust-remote-code"]["takes_value"]
    # 0.33-style EnableDisableAction: --disable-X / --no-enable-X switch field enable_X off
    e = f["--enable-auto-tool-choice"]
    assert e["option_strings"] == ["--disable-auto-tool-choice", "--enable-auto-tool-choice", "--no-enable-auto-tool-choice"]
    assert e["negative_option_strings"] == ["--disable-auto-tool-choice", "--no-enable-auto-tool-choice"]
    assert f["--gpu-memory-utilization"]["option_strings"] == ["--device-memory-utilization", "--gpu-memory-utilization"]
    assert f["--tensor-parallel-size"]["option_strings"] == ["--tensor-parallel-size", "-tp"]
    assert f["--speculative-config"]["option_strings"] == ["--speculative-config", "-sc"]  # -sc since 0.28
    assert f["--help"]["option_strings"] == ["--help", "-h"] and f["--help"]["action"] == "help"
    assert f["--headless"]["action"] == "store_true"
    assert f["--moe-backend"]["choices_normalize"] == "lower_snake" and f["--moe-backend"]["choices"] == ["auto", "deep_gemm", "triton"]
    assert f["--collect-detailed-traces"]["choices_normalize"] == "comma_combinations"
    assert f["--collect-detailed-traces"]["nargs"] == "+" and f["--served-model-name"]["nargs"] == "+"
    assert f["--compilation-config"]["json"] == {"kind": "json-dataclass", "config": "VllmConfig.compilation_config", "fields": None}
    assert f["--compilation-config"]["type"] == "json_object"
    assert f["--speculative-config"]["type"] == "json" and f["--speculative-config"]["optional"] is True
    rc = f["--tool-call-parser"]["runtime_choices"]
    assert rc["values"] == ["hermes", "qwen3_coder"] and rc["plugin_option"] == "--tool-parser-plugin" and rc["null_values"] == []
    rc = f["--reasoning-parser"]["runtime_choices"]
    assert rc["values"] == ["qwen3"] and rc["null_values"] == ["none"] and rc["plugin_option"] is None
    assert f["--orphan-flag"]["action"] == "unknown"
    assert any("--orphan-flag" in w for w in doc["warnings"])
    # the checker understands the result
    cat = vf.FlagCatalog(doc)
    assert vf.check_args(["--disable-auto-tool-choice", "--orphan-flag", "x", "-sc.method", "ngram", "--reasoning-parser", "NONE"], cat) == []
    assert codes(["--no-disable-auto-tool-choice"], cat) == [("--no-disable-auto-tool-choice", "unknown")]


def test_shipped_catalogues_are_generated_from_the_listings(catalog_tool, shared_dir):
    src = shared_dir / "vllm-cli"
    for v in SHIPPED:
        doc = catalog_tool.build_from_listing(
            v,
            str(src / ("flags-%s.txt" % v)),
            str(src / ("argparse-types-%s.tsv" % v)),
            str(src / ("json-flags-%s.txt" % v)),
            str(src / "parsers-by-version.txt"),
        )
        doc = json.loads(json.dumps(doc))
        with open(os.path.join(vf.CATALOG_DIR, v + ".json")) as fh:
            shipped = json.load(fh)
        assert doc == shipped, "data/vllm_cli/%s.json is stale: regenerate it (see data/vllm_cli/README.md)" % v


def test_listing_parser_counts_are_checked(catalog_tool, tmp_path):
    p = tmp_path / "parsers.txt"
    p.write_text("1.0.0\t--tool-call-parser\t3\ta,b\n")
    with pytest.raises(ValueError):
        catalog_tool.read_listing_parsers(str(p), "1.0.0")


def _fake_tree(tmp_path):
    """The synthetic vLLM source tree, materialized: its Python files are stored as ``*.py.txt``
    because they imitate vLLM's layout (non-empty ``__init__.py``, imports kept for discovery),
    which ansible-test's sanity checks would reject as collection code."""
    tree = tmp_path / "fake_wheel_src"
    if not tree.exists():
        shutil.copytree(str(FIXTURES / "fake_wheel"), str(tree))
        for path in list(tree.rglob("*.py.txt")):
            path.rename(path.with_name(path.name[:-len(".txt")]))
    return tree


def _fake_wheel(tmp_path):
    src = _fake_tree(tmp_path)
    whl = tmp_path / "vllm-0.99.0-py3-none-any.whl"
    with zipfile.ZipFile(str(whl), "w") as zf:
        for path in sorted(src.rglob("*")):
            rel = path.relative_to(src).as_posix()
            if path.is_file() and (rel.startswith("vllm/") or rel.startswith("vllm-0.99.0.dist-info/")) and "__pycache__" not in rel:
                zf.write(str(path), rel)
    return whl


def test_from_wheel_on_a_synthetic_wheel(catalog_tool, tmp_path):
    whl = _fake_wheel(tmp_path)
    doc = catalog_tool.build_from_wheel(str(whl), python=sys.executable)
    f = doc["flags"]
    assert doc["vllm_version"] == "0.99.0" and doc["source"]["kind"] == "wheel"
    assert doc["source"]["cli_args_module"] == "vllm.entrypoints.openai.cli_args"
    # the module that fails at import time under stubs was replaced, and said so
    assert [m.split(" ")[0] for m in doc["source"]["stubbed_vllm_modules"]] == ["vllm.entrypoints.openai.protocol"]
    assert sorted(f) == [
        "--api-server-count", "--compilation-config", "--default-chat-template-kwargs", "--disable-log-stats",
        "--enable-auto-tool-choice", "--enable-log-requests", "--enable-prefix-caching", "--headless", "--help",
        "--hf-overrides", "--kv-cache-dtype", "--max-model-len", "--moe-backend", "--optimization-level", "--port",
        "--reasoning-parser", "--served-model-name", "--tensor-parallel-size", "--tool-call-parser",
    ]
    assert f["--tensor-parallel-size"]["option_strings"] == ["--tensor-parallel-size", "-tp"]
    assert f["--api-server-count"]["option_strings"] == ["--api-server-count", "-asc"]
    assert f["--enable-prefix-caching"]["option_strings"] == ["--enable-prefix-caching", "--no-enable-prefix-caching"]
    assert f["--enable-prefix-caching"]["action"] == "boolean_optional"
    assert f["--headless"]["action"] == "store_true" and f["--help"]["option_strings"] == ["--help", "-h"]
    assert f["--served-model-name"]["nargs"] == "+"
    assert f["--kv-cache-dtype"]["choices"] == ["auto", "fp8", "fp8_e4m3"]
    assert f["--moe-backend"]["choices_normalize"] == "lower_snake"
    assert f["--max-model-len"]["type"] == "int" and f["--max-model-len"]["optional"] is True
    assert f["--compilation-config"]["json"]["kind"] == "json-dataclass"
    assert f["--compilation-config"]["json"]["config"] == "VllmConfig.compilation_config"
    assert f["--compilation-config"]["json"]["fields"] == ["cudagraph_mode", "mode"]
    assert f["--hf-overrides"]["json"]["kind"] == "json-or-str" and f["--hf-overrides"]["type"] == "json_or_str"
    assert f["--default-chat-template-kwargs"]["json"]["kind"] == "json"
    assert f["--tool-call-parser"]["runtime_choices"]["values"] == ["hermes", "qwen3_coder"]
    assert f["--reasoning-parser"]["runtime_choices"]["values"] == ["deepseek_r1", "qwen3"]
    # FlexibleArgumentParser's pre-processing was probed on the real object
    assert doc["parser"]["underscore_dash_equivalent"] is True
    assert doc["parser"]["dotted_json_keys"] is True
    assert doc["parser"]["optimization_level_shorthand"] == "--optimization-level"
    assert doc["parser"]["positionals"] == ["model_tag"]
    # and the checker uses it, JSON field names included
    cat = vf.FlagCatalog(json.loads(json.dumps(doc)))
    assert vf.check_args(["vllm", "serve", "m", "-tp", "2", "-cc.mode", "3", "--moe-backend", "Deep-Gemm", "-O3"], cat) == []
    assert codes(["--compilation-config.mod", "3"], cat) == [("--compilation-config.mod", "unknown-json-key")]
    assert codes(["--tool-call-parser", "mistral"], cat) == [("--tool-call-parser", "unknown-parser")]


def test_from_wheel_cli_writes_the_catalogue(catalog_tool, tmp_path, capsys):
    whl = _fake_wheel(tmp_path)
    out = tmp_path / "out" / "0.99.0.json"
    assert catalog_tool.main(["from-wheel", str(whl), "-o", str(out), "--python", sys.executable]) == 0
    doc = json.loads(out.read_text())
    assert doc["flag_count"] == 19 and doc["option_string_count"] == 26
    # diff against itself: no differences; against a changed copy: found
    assert catalog_tool.main(["diff", str(out), str(out)]) == 0
    changed = json.loads(out.read_text())
    changed["flags"]["--kv-cache-dtype"]["choices"].append("fp4")
    del changed["flags"]["--headless"]
    other = tmp_path / "changed.json"
    other.write_text(json.dumps(changed))
    capsys.readouterr()
    assert catalog_tool.main(["diff", str(out), str(other)]) == 1
    text = capsys.readouterr().out
    assert "- --headless" in text and "--kv-cache-dtype choices" in text


def test_from_wheel_static_helpers(catalog_tool, tmp_path):
    root = _fake_tree(tmp_path)
    assert catalog_tool.find_cli_args_module(str(root)) == "vllm.entrypoints.openai.cli_args"
    assert catalog_tool.static_parser_names(str(root)) == {
        "--tool-call-parser": ["hermes", "qwen3_coder"],
        "--reasoning-parser": ["deepseek_r1", "qwen3"],
    }
    whl = _fake_wheel(tmp_path)
    dest = tmp_path / "x"
    dest.mkdir()
    assert catalog_tool.extract_wheel(str(whl), str(dest)) == "0.99.0"
    assert (dest / "vllm" / "engine" / "arg_utils.py").is_file()
    bad = tmp_path / "vllm-6.6.6-py3-none-any.whl"
    with zipfile.ZipFile(str(bad), "w") as zf:
        zf.writestr("vllm/../../evil.py", "x = 1\n")
    dest2 = tmp_path / "y"
    dest2.mkdir()
    with pytest.raises(ValueError):
        catalog_tool.extract_wheel(str(bad), str(dest2))


def test_from_wheel_reports_a_broken_parser(catalog_tool, tmp_path):
    tree = _fake_tree(tmp_path)
    (tree / "vllm" / "engine" / "arg_utils.py").write_text("raise RuntimeError('arg_utils is broken')\n")
    with pytest.raises(RuntimeError) as exc:
        catalog_tool.dump_parser_in_child(str(tree), python=sys.executable, module="vllm.entrypoints.openai.cli_args")
    assert "arg_utils is broken" in str(exc.value)


# ---------------------------------------------------------------------------
# tools/flag_audit.py
# ---------------------------------------------------------------------------


def test_iter_argvs_finds_every_shape(audit_tool):
    rec = {
        "argv": ["vllm", "serve", "m"],
        "head_argv": ["vllm", "serve", "m", "--headless"],
        "worker_argvs": [["vllm", "serve", "m", "-r", "1"], ["vllm", "serve", "m", "-r", "2"]],
        "prefill": {"argv": ["vllm", "serve", "m", "--port", "1"]},
        "result": {"headArgv": ["vllm", "serve", "x"], "workerArgvs": [["vllm", "serve", "y"]]},
        "docker_argv": ["docker", "run", "img", "m"],
        "router": {"argv": ["vllm-router", "--port", "1"]},
    }
    paths = sorted(where for where, _argv in audit_tool.iter_argvs(rec))
    assert paths == ["argv", "head_argv", "prefill.argv", "result.headArgv", "result.workerArgvs[0]", "worker_argvs[0]", "worker_argvs[1]"]


def test_effective_minimum(audit_tool):
    recipe = {"model_min": "0.17.0", "variants": {"default": None, "nvfp4": "0.28.0"}}
    assert audit_tool.effective_minimum(recipe, "default", {})[0] == "0.17.0"
    assert audit_tool.effective_minimum(recipe, "nvfp4", {})[0] == "0.28.0"
    assert audit_tool.effective_minimum(recipe, "default", {"kv_min_vllm_version": "0.21.0"})[0] == "0.21.0"
    assert audit_tool.effective_minimum(None, "default", {}) == (None, "no min_vllm_version")


def test_audit_on_a_small_golden_file(audit_tool, tmp_path):
    recipes = tmp_path / "recipes" / "models" / "Org"
    recipes.mkdir(parents=True)
    (recipes / "Old.yaml").write_text('model:\n  model_id: "Org/Old"\n  min_vllm_version: "0.10.0"\nvariants:\n  default: {}\n')
    (recipes / "New.yaml").write_text(
        'model:\n  model_id: "Org/New"\n  min_vllm_version: "0.17.0"\nvariants:\n  default: {}\n'
        '  fp4:\n    min_vllm_version: "0.28.0"\n'
    )
    golden = tmp_path / "g.jsonl.gz"
    recs = [
        {"recipe": "Org/Old", "variant": "default", "hardware": "h100", "argv": ["vllm", "serve", "o", "--disable-log-requests"]},
        {"recipe": "Org/New", "variant": "default", "hardware": "h100", "argv": ["vllm", "serve", "n", "--linear-backend", "auto"]},
        {"recipe": "Org/New", "variant": "fp4", "hardware": "b200", "argv": ["vllm", "serve", "n", "--linear-backend", "auto"]},
        {"recipe": "Org/New", "inputs": {"variant": "default", "hw": "h200"},
         "result": {"headArgv": ["vllm", "serve", "n", "--tool-call-parser-plugin", "p.py"]}},
    ]
    with gzip.open(str(golden), "wt") as fh:
        for r in recs:
            fh.write(json.dumps(r) + "\n")
    result = audit_tool.audit([str(golden)], audit_tool.load_recipes(str(tmp_path / "recipes")))
    assert result["stats"]["records"] == 4 and result["stats"]["argvs"] == 4
    old = list(result["recipes"]["Org/Old"]["findings"].values())
    # 0.33 has --disable-log-requests: only the own-minimum check rejects it
    assert [(f["check"], f["catalog"], f["flag"], f["certainty"]) for f in old] == [
        ("own-minimum", "0.17.0", "--disable-log-requests", "older-minimum"),
    ]
    new = list(result["recipes"]["Org/New"]["findings"].values())
    got = sorted((f["check"], f["catalog"], f["flag"], f["certainty"], tuple(sorted(f["variants"]))) for f in new)
    assert got == [
        ("newest", "0.33.0", "--tool-call-parser-plugin", "newest", ("default",)),
        ("own-minimum", "0.17.0", "--linear-backend", "exact", ("default",)),
        ("own-minimum", "0.17.0", "--tool-call-parser-plugin", "exact", ("default",)),
    ]
    report = audit_tool.format_report(result)
    assert "Org/Old" in report and "minimum older than every catalogue" in report
    assert "Org/New: --linear-backend (unknown) at 0.17.0" in report
    data = audit_tool.to_jsonable(result)
    assert json.loads(json.dumps(data))["stats"]["argvs"] == 4


def test_single_dash_prefixes():
    # "-as" is a prefix of "-asc" only (no "-a" option): an abbreviation, not "-a s"
    assert codes(["-as", "4"], "0.28.0") == [("-as", "abbreviation")]
    assert vf.check_args(["-as", "4"], "0.28.0", allow_abbrev=True) == []
    # "-dp" exists, and "-d" is a prefix of several options
    assert vf.check_args(["-dp", "2"], "0.28.0") == []
    assert codes(["-d", "2"], "0.28.0") == [("-d", "ambiguous")]
    # "-n2" is "-n 2" (--nnodes)
    assert vf.check_args(["-n2", "-r1"], "0.28.0") == []


def test_parser_features_of_the_catalogue_are_honoured():
    doc = copy.deepcopy(vf.load_catalog("0.28.0").doc)
    doc["parser"].update(underscore_dash_equivalent=False, dotted_json_keys=False, allow_abbrev=False,
                         optimization_level_shorthand=None)
    cat = vf.FlagCatalog(doc)
    assert codes(["--tensor_parallel_size", "2"], cat) == [("--tensor_parallel_size", "unknown")]
    assert codes(["--gpu-memory-util", "0.8"], cat, allow_abbrev=True) == [("--gpu-memory-util", "unknown")]
    assert codes(["-O3"], cat) == [("-O3", "unknown")]
    assert codes(["--compilation-config.mode=3"], cat) == [("--compilation-config.mode=3", "unknown")]


def test_args_must_be_a_list():
    with pytest.raises(TypeError):
        vf.check_args("vllm serve m --enforce-eager", "0.28.0")
    assert vf.check_args(("vllm", "serve", "m", "--enforce-eager"), "0.28.0") == []
