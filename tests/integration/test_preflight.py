# -*- coding: utf-8 -*-
"""`playbooks/preflight.yml` and `playbooks/plan.yml` on a broken inventory (issue 3 §3).

One inventory written to a temp dir holds one broken host or replica per error class of §3, plus
a valid host. Preflight runs once (JSON callback, for the exact problem list) and plan.yml once
(default callback, for what a user reads); both must fail, report every problem in that one run,
and plan.yml must write nothing (zero hosts changed).
"""

from __future__ import annotations

import copy
import json

import pytest
import yaml

from playbook_runner import JSON_CALLBACK, REPO, run, tool

BUILTIN = REPO / "data" / "recipes"
SEED = "Qwen/Qwen3.6-35B-A3B"
#: Secrets given where they must not be (issue 12 §2): none may reach any output or plan file.
SECRETS = {"api": "api-secret-value-7f3e", "hf": "hf_" + "Zq9Xw8Vu7T" * 4, "env": "env-secret-value-5d1c",
           "sk": "sk-" + "live_Q1w2E3r4" * 3}
#: Unreachable documentation addresses (TEST-NET-2): a contacted host would show up as UNREACHABLE.
NET = "198.51.100.%d"


def small_tree(tmp):
    """The seed recipe with strategy_min_gpus multi_node_tep: 32 (a 2 x 8-GPU replica is too small)."""
    recipe = yaml.safe_load((BUILTIN / "models" / "Qwen" / "Qwen3.6-35B-A3B.yaml").read_text())
    recipe = copy.deepcopy(recipe)
    recipe["strategy_min_gpus"] = {"multi_node_tep": 32}
    tree = tmp / "tree"
    (tree / "models" / "Qwen").mkdir(parents=True)
    (tree / "models" / "Qwen" / "Qwen3.6-35B-A3B.yaml").write_text(yaml.safe_dump(recipe, sort_keys=False))
    return [str(BUILTIN), str(tree)]


def replica(name, members, **common):
    common.setdefault("vllm_cluster_interface", "ens1f0")
    common.update(vllm_replica=name)
    return {"hosts": dict((m, dict(v)) for m, v in members.items()), "vars": common}


def broken_inventory(tmp):
    return {"all": {
        "vars": {"vllm_recipe": SEED, "vllm_hardware": "h200"},
        "hosts": {
            "good-01": {"ansible_host": "198.51.100.1"},
            "u-recipe": {"vllm_recipe": "Qwen/Qwen3.6-35B-A3X"},
            "u-variant": {"vllm_variant": "fp9"},
            "u-hardware": {"vllm_hardware": "h2000"},
            "u-strategy": {"vllm_strategy": "single_node_tpx"},
            "u-feature": {"vllm_features": ["tool_calling", "toolcalling"]},
            "u-mode": {"vllm_features": {"spec_decoding": True}, "vllm_feature_modes": {"spec_decoding": "mtpx"}},
            "nofit-5090": {"vllm_hardware": "rtx_5090", "vllm_variant": "default"},
            "fp4-h100": {"vllm_hardware": "h100", "vllm_variant": "nvfp4"},
            "excl": {"vllm_features": ["text_only", "encoder_parallel"]},
            "badflag": {"vllm_extra_args": ["--no-such-flag", "1"]},
            "badtype": {"vllm_port": "80"},
            # issue 12 §2: ports, env names, vLLM version, GPU capacity, secrets
            "port-range": {"ansible_host": NET % 10, "vllm_port": 70000},
            "port-args": {"ansible_host": NET % 11, "vllm_extra_args": ["--master-port", "99999"]},
            "env-name": {"ansible_host": NET % 12, "vllm_extra_env": {"BAD-NAME": "1"}},
            "old-image": {"ansible_host": NET % 13, "vllm_hardware": "b200", "vllm_variant": "nvfp4",
                          "vllm_image": "vllm/vllm-openai:v0.17.0"},
            "vram-h100": {"ansible_host": NET % 14, "vllm_hardware": "h100", "vllm_gpu_count": 1,
                          "vllm_variant": "default", "vllm_strategy": "single_node_tp"},
            "tp-over": {"ansible_host": NET % 15, "vllm_hardware": "h100", "vllm_variant": "fp8", "vllm_gpu_count": 4,
                        "vllm_extra_args": ["--tensor-parallel-size", "8"]},
            "secret-args": {"ansible_host": NET % 16, "vllm_extra_args": [
                "--api-key", SECRETS["api"], "--hf-token=" + SECRETS["hf"]]},
            "secret-env": {"ansible_host": NET % 17, "vllm_extra_env": {"HF_TOKEN": SECRETS["env"], "OTHER": SECRETS["sk"]}},
        },
        "children": {
            # a strategy the recipe does not offer (not in its compatible_strategies)
            "r_tpdp": replica("r_tpdp", {"tpdp-1": {}, "tpdp-2": {}}, vllm_strategy="multi_node_tp_dp"),
            # a strategy offered by the recipe but not on this hardware (rtx_5090 cannot scale out)
            "r_5090": replica("r_5090", {"g5090-1": {}, "g5090-2": {}}, vllm_strategy="multi_node_tp",
                              vllm_hardware="rtx_5090", vllm_variant="nvfp4"),
            # replica sizes the strategy cannot use: one node (D3), 2 x 8 GPUs where 32 are needed
            "r_one": replica("r_one", {"one-1": {}}, vllm_strategy="multi_node_tp"),
            "r_small": replica("r_small", {"small-1": {}, "small-2": {}}, vllm_strategy="multi_node_tep",
                               vllm_recipes_path=small_tree(tmp)),
            # mixed hardware, and members disagreeing on the variant
            "r_mixed": replica("r_mixed", {"mixed-1": {}, "mixed-2": {"vllm_hardware": "b200"}},
                               vllm_strategy="multi_node_tp"),
            "r_disagree": replica("r_disagree", {"dis-1": {"vllm_variant": "default"}, "dis-2": {"vllm_variant": "fp8"}},
                                  vllm_strategy="multi_node_dep"),
            # ranks set on some members only; no cluster interface
            "r_rank": replica("r_rank", {"rank-1": {"vllm_node_rank": 0}, "rank-2": {}}, vllm_strategy="multi_node_tp"),
            "r_noiface": {"hosts": {"noiface-1": {}, "noiface-2": {}},
                          "vars": {"vllm_replica": "r_noiface", "vllm_strategy": "multi_node_tp"}},
            # issue 12 §2: the API port on the master port; member addresses that are not IPs
            "r_rdv": replica("r_rdv", {"rdv-1": {"ansible_host": NET % 20, "vllm_port": 29501},
                                       "rdv-2": {"ansible_host": NET % 21}}, vllm_strategy="multi_node_tp"),
            "r_names": replica("r_names", {"names-1": {"ansible_host": "names-1.invalid"},
                                           "names-2": {"ansible_host": NET % 23, "vllm_cluster_address": "names-2"}},
                               vllm_strategy="multi_node_tp"),
        },
    }}


BROKEN_HOSTS = ["u-recipe", "u-variant", "u-hardware", "u-strategy", "u-feature", "u-mode", "nofit-5090", "fp4-h100",
                "excl", "badflag", "badtype", "tpdp-1", "tpdp-2", "g5090-1", "g5090-2", "one-1", "small-1", "small-2",
                "noiface-1", "noiface-2",
                "port-range", "port-args", "env-name", "old-image", "vram-h100", "tp-over", "secret-args", "secret-env",
                "rdv-1", "names-1", "names-2"]
BROKEN_REPLICAS = ["r_mixed", "r_disagree"]


@pytest.fixture(scope="module")
def broken(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("preflight")
    inv = tmp / "hosts.yml"
    inv.write_text(yaml.safe_dump(broken_inventory(tmp), sort_keys=False))
    plan_dir = tmp / "plan"
    pre = run([tool("ansible-playbook"), "-i", str(inv), str(REPO / "playbooks" / "preflight.yml")], tmp,
              JSON_CALLBACK)
    plan = run([tool("ansible-playbook"), "-i", str(inv), str(REPO / "playbooks" / "plan.yml"),
                "-e", "vllm_plan_dir=%s" % plan_dir], tmp)
    out = json.loads(pre.stdout)
    task = next(t for p in out["plays"] for t in p["tasks"] if t["task"]["name"].startswith("Preflight | resolve and check"))
    (result,) = task["hosts"].values()
    return {"pre": pre, "result": result, "problems": result["problems"], "plan": plan, "plan_dir": plan_dir}


def problem(broken, start, *parts):
    """The one problem starting with ``start`` (a host or replica prefix), checked to contain ``parts``."""
    found = [p for p in broken["problems"] if p.startswith(start) and all(x in p for x in parts)]
    assert found, "no problem starting %r with %r in:\n%s" % (start, parts, "\n".join(broken["problems"]))
    return found[0]


def test_preflight_fails_and_reports_every_problem_at_once(broken):
    assert broken["pre"].returncode != 0
    result = broken["result"]
    assert result["failed"] is True
    assert result["msg"].startswith("preflight found %d problem(s) in the inventory; no host was changed:\n- "
                                    % len(broken["problems"]))
    for host in BROKEN_HOSTS:
        assert [p for p in broken["problems"] if p.startswith(("host %s:" % host, "host %s " % host))], host
    for name in BROKEN_REPLICAS:
        assert [p for p in broken["problems"] if p.startswith("replica %s:" % name)], name
    assert [p for p in broken["problems"] if "vllm_node_rank" in p and "rank-1" in p]
    assert not [p for p in broken["problems"] if "good-01" in p]
    assert len(broken["problems"]) == len(set(broken["problems"]))


@pytest.mark.parametrize("host, kind, bad, valid", [
    ("u-recipe", "recipe", "Qwen/Qwen3.6-35B-A3X", "valid: Qwen/Qwen3.6-35B-A3B"),
    ("u-variant", "variant", "fp9", "valid: default, fp8, nvfp4, redhat_fp8, redhat_fp8_plain, redhat_nvfp4"),
    ("u-hardware", "hardware profile", "h2000", "valid: arc_pro_b60, arc_pro_b70, ascend_950pr, b200,"),
    ("u-strategy", "strategy", "single_node_tpx", "single_node_tep, single_node_tp"),
    ("u-feature", "feature", "toolcalling",
     "valid: encoder_parallel, long_context, reasoning, spec_decoding, text_only, tool_calling"),
    ("u-mode", "mode", "mtpx", "valid: dspark, mtp"),
])
def test_unknown_ids_list_the_valid_choices(broken, host, kind, bad, valid):
    problem(broken, "host %s: " % host, "unknown %s '%s'" % (kind, bad), valid)


def test_variant_that_does_not_fit_a_non_scalable_profile(broken):
    problem(broken, "host nofit-5090 (Qwen/Qwen3.6-35B-A3B default on rtx_5090): ",
            "variant default needs 84 GB but rtx_5090 has 32 GB and cannot scale out", "a variant that fits: nvfp4")


def test_nvfp4_on_hopper(broken):
    problem(broken, "host fp4-h100 (Qwen/Qwen3.6-35B-A3B nvfp4 on h100): ",
            "precision nvfp4 needs NVIDIA blackwell, but h100 is NVIDIA hopper")


def test_strategy_not_offered(broken):
    for host in ("tpdp-1", "tpdp-2"):
        problem(broken, "host %s (Qwen/Qwen3.6-35B-A3B default on h200): " % host,
                "strategy multi_node_tp_dp is not offered on h200; valid: single_node_tp")
    for host in ("g5090-1", "g5090-2"):
        problem(broken, "host %s (Qwen/Qwen3.6-35B-A3B nvfp4 on rtx_5090): " % host,
                "strategy multi_node_tp is not offered on rtx_5090; valid: single_node_tp, single_node_tep, single_node_dep")


def test_replica_size_the_strategy_cannot_use(broken):
    problem(broken, "host one-1: ", "multi_node_tp needs at least 2 nodes, got 1")
    problem(broken, "host small-1 (Qwen/Qwen3.6-35B-A3B default on h200): ",
            "replica r_small has 2 nodes x 8 GPUs but multi_node_tep needs at least 32 GPUs")


def test_replica_with_mixed_hardware_or_disagreeing_members(broken):
    problem(broken, "replica r_mixed: ", 'members disagree on vllm_hardware (mixed-1="h200", mixed-2="b200")')
    problem(broken, "replica r_disagree: ", 'members disagree on vllm_variant (dis-1="default", dis-2="fp8")')


def test_replica_ranks_and_cluster_interface(broken):
    problem(broken, "replica members rank-1 set vllm_node_rank but rank-2 do not")
    for host in ("noiface-1", "noiface-2"):
        problem(broken, "host %s: replica r_noiface needs vllm_cluster_interface" % host)


def test_text_only_with_encoder_parallel(broken):
    problem(broken, "host excl: ", "features text_only and encoder_parallel", "mutually exclusive")


def test_type_error_names_host_key_value_and_expectation(broken):
    problem(broken, 'host badtype: vllm_port="80": expected a positive integer')


def test_flag_unknown_to_the_target_vllm_version(broken):
    problem(broken, "host badflag (Qwen/Qwen3.6-35B-A3B default on h200): ", "--no-such-flag")


def test_plan_playbook_changes_no_host(broken):
    plan = broken["plan"]
    text = plan.stdout + plan.stderr
    assert plan.returncode != 0
    assert not broken["plan_dir"].exists()  # the plan play never ran: no plan/ directory
    assert "TASK [Plan | resolve every host and write the plan files]" not in text
    assert "preflight found %d problem(s) in the inventory; no host was changed" % len(broken["problems"]) in text
    for p in broken["problems"]:  # what the user reads names every problem, in the same run
        assert p in text, p
    recap = text[text.index("PLAY RECAP"):]
    assert "changed=1" not in recap and "changed=0" in recap


def test_a_limit_does_not_hide_a_broken_part_of_the_inventory(tmp_path):
    """Preflight validates the whole inventory: `-l good` still fails on the broken host."""
    inv = {"all": {"hosts": {
        "good": {"vllm_recipe": SEED, "vllm_hardware": "h200"},
        "broken": {"vllm_recipe": SEED, "vllm_hardware": "h300"},
    }}}
    path = tmp_path / "hosts.yml"
    path.write_text(yaml.safe_dump(inv))
    proc = run([tool("ansible-playbook"), "-i", str(path), str(REPO / "playbooks" / "preflight.yml"), "-l", "good"], tmp_path)
    assert proc.returncode != 0
    assert "host broken: unknown hardware profile 'h300'" in proc.stdout
    assert "problem(s) in the inventory; no host was changed" in proc.stdout


# ---------------------------------------------------------------------- issue 12 §2
def test_no_host_is_contacted(broken):
    for proc in (broken["pre"], broken["plan"]):
        text = proc.stdout + proc.stderr
        assert "UNREACHABLE" not in text and "unreachable=1" not in text
    assert "TASK [Preflight | gpu_facts]" not in broken["plan"].stdout  # every host declares its hardware


@pytest.mark.parametrize("start, parts", [
    ("host port-range: ", ["vllm_port=70000: expected a TCP port, 1-65535"]),
    ("host port-args: ", ["vllm_extra_args --master-port 99999: expected a TCP port, 1-65535"]),
    ("host rdv-1: ", ["the API port 29501 (vllm_port or --port) is the replica's rendezvous port 29501",
                      "valid: any other port"]),
    ("host env-name: ", ["vllm_extra_env name 'BAD-NAME' is not a valid environment variable name",
                         "valid: letters, digits and '_', not starting with a digit"]),
    ("host old-image: ", ["vllm_image=vllm/vllm-openai:v0.17.0 runs vLLM 0.17.0 but Qwen/Qwen3.6-35B-A3B nvfp4 needs "
                          "vLLM >= 0.28.0 (min_vllm_version)", "valid: an image tag or vllm_version >= 0.28.0"]),
    ("host vram-h100 (Qwen/Qwen3.6-35B-A3B default on h100): ",
     ["variant default needs 84 GB of GPU memory but 1 GPU(s) of h100 (vllm_gpu_count=1) have 80 GB",
      "valid: vllm_gpu_count >= 2, a variant that fits: fp8"]),
    ("host tp-over (Qwen/Qwen3.6-35B-A3B fp8 on h100): ",
     ["asks for tensor 8 x pipeline 1 x data-parallel 1 = 8 GPUs per node but the host has 4 (vllm_gpu_count=4)",
      "valid: sizes whose product per node is at most 4"]),
    ("host names-1: ", ["ansible_host=names-1.invalid is not an IP address, but replica r_names needs one",
                        "valid: an IPv4 or IPv6 address in vllm_cluster_address"]),
    ("host names-2: ", ["vllm_cluster_address=names-2 is not an IP address"]),
    ("host secret-args: ", ["vllm_extra_args passes --api-key (a secret; its value is not shown): set vllm_serve_api_key "
                            "from Vault instead"]),
    ("host secret-args: ", ["vllm_extra_args passes --hf-token (a secret; its value is not shown): set vllm_serve_hf_token "
                            "from Vault instead"]),
    ("host secret-env: ", ["vllm_extra_env sets HF_TOKEN (a secret; its value is not shown): set vllm_serve_hf_token"]),
    ("host secret-env: ", ["vllm_extra_env.OTHER holds a value shaped like an API key (sk-...) (not shown): set "
                           "vllm_serve_api_key from Vault instead"]),
])
def test_preflight_refuses_unsafe_inputs(broken, start, parts):
    problem(broken, start, *parts)


def test_no_secret_in_any_output(broken):
    for proc in (broken["pre"], broken["plan"]):
        for secret in SECRETS.values():
            assert secret not in proc.stdout + proc.stderr


def test_plan_files_and_results_carry_no_secret(tmp_path):
    """fleet_plan with fail_on_problems: false writes the plans of hosts with secrets: redacted everywhere."""
    inv = {"all": {"vars": {"vllm_recipe": SEED, "vllm_hardware": "h200"}, "hosts": {
        "sec-1": {"ansible_host": NET % 30, "vllm_extra_args": ["--api-key", SECRETS["api"], "--hf-token=" + SECRETS["hf"]],
                  "vllm_extra_env": {"VLLM_API_KEY": SECRETS["env"], "SOME_URL": "https://x/?k=" + SECRETS["sk"]}}}}}
    (tmp_path / "hosts.yml").write_text(yaml.safe_dump(inv))
    (tmp_path / "play.yml").write_text(yaml.safe_dump([{
        "name": "plan without failing", "hosts": "all", "gather_facts": False, "connection": "local",
        "tasks": [{"name": "plan", "run_once": True, "register": "out", "llmfleet.vllm.fleet_plan": {
            "dest": str(tmp_path / "plan"), "fail_on_problems": False, "report": True}},
            {"name": "show", "ansible.builtin.debug": {"var": "out"}}]}]))
    proc = run([tool("ansible-playbook"), "-i", "hosts.yml", "play.yml", "-v"], tmp_path)
    text = proc.stdout + proc.stderr
    assert proc.returncode == 0, text
    files = sorted((tmp_path / "plan" / "sec-1").iterdir())
    assert [f.name for f in files] == ["argv.json", "command.sh", "env.json", "image.txt", "plan.json"]
    for secret in SECRETS.values():
        assert secret not in text
        for f in files:
            assert secret not in f.read_text(), (secret, f.name)
    argv = json.loads((tmp_path / "plan" / "sec-1" / "argv.json").read_text())
    assert argv[argv.index("--api-key") + 1] == "(secret, not shown)" and "--hf-token=(secret, not shown)" in argv
    assert json.loads((tmp_path / "plan" / "sec-1" / "env.json").read_text())["VLLM_API_KEY"] == "(secret, not shown)"
    assert "vllm_extra_args passes --api-key (a secret; its value is not shown)" in text
