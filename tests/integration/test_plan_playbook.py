# -*- coding: utf-8 -*-
"""`playbooks/plan.yml` over the embedded example fleet (issue 3 §4, §5 and "Done when").

One real ``ansible-playbook -v -i inventories/example playbooks/plan.yml`` run (module scope, JSON
stdout callback; -v prints the per-host detail) plus a second one, without -v, for idempotence and
the default output (the fleet table and counts, no detail for 13 hosts), and a third one limited to
two hosts with the default stdout callback (the table as a person reads it; detail by default for
a few hosts). For every host of the example inventory the plan files are compared with what the
resolver gives for the same inputs, computed in-process, and, where the upstream builder rendered
the same (variant, hardware, strategy, node count), with the golden rendering after placeholder
binding.
"""

from __future__ import annotations

import gzip
import json
import subprocess

import pytest

from ansible_collections.llmfleet.vllm.plugins.module_utils.catalog import get_catalog
from ansible_collections.llmfleet.vllm.plugins.module_utils.fleet import Fleet, served_names
from ansible_collections.llmfleet.vllm.plugins.module_utils.replica import bind
from ansible_collections.llmfleet.vllm.plugins.module_utils.render import format_command, shell_quote
from ansible_collections.llmfleet.vllm.plugins.module_utils.resolver import Resolver

from plan_views import recipe_view
from playbook_runner import JSON_CALLBACK, REPO, run, tool

GOLDEN = "seed_qwen3.6-35b-a3b_json_api_renderings.jsonl.gz"
PLAN_FILES = ("argv.json", "command.sh", "env.json", "image.txt", "plan.json")


@pytest.fixture(scope="module")
def example(tmp_path_factory):
    """Two plan runs over inventories/example, the inventory as Ansible sees it, and the plan dir."""
    tmp = tmp_path_factory.mktemp("plan")
    plan_dir = tmp / "plan"
    argv = [tool("ansible-playbook"), "-i", str(REPO / "inventories" / "example"), str(REPO / "playbooks" / "plan.yml"),
            "-e", "vllm_plan_dir=%s" % plan_dir]
    first = run(argv + ["-v"], tmp, JSON_CALLBACK)
    assert first.returncode == 0, first.stdout[-4000:] + first.stderr[-4000:]
    mtimes = dict((str(p), p.stat().st_mtime_ns) for p in plan_dir.rglob("*") if p.is_file())
    second = run(argv, tmp, JSON_CALLBACK)
    assert second.returncode == 0, second.stdout[-4000:] + second.stderr[-4000:]
    # two hosts, the default callback; long_context brings its feature env (deviation D1)
    few = run([tool("ansible-playbook"), "-i", str(REPO / "inventories" / "example"), str(REPO / "playbooks" / "plan.yml"),
               "-l", "h100-01,h100-02", "-e", "vllm_plan_dir=%s" % (tmp / "plan-few"),
               "-e", json.dumps({"vllm_features": {"long_context": True}})], tmp)
    assert few.returncode == 0, few.stdout[-4000:] + few.stderr[-4000:]
    inv = run([tool("ansible-inventory"), "-i", str(REPO / "inventories" / "example"), "--list"], tmp)
    assert inv.returncode == 0, inv.stderr
    inventory = json.loads(inv.stdout)
    hostvars = inventory.pop("_meta")["hostvars"]
    groups = dict((g, list(v.get("hosts", []))) for g, v in inventory.items())
    groups["all"] = sorted(hostvars)
    return {"first": json.loads(first.stdout[first.stdout.index("{"):]),  # -v prints a config line first
            "second": json.loads(second.stdout), "few": few.stdout, "mtimes": mtimes,
            "plan_dir": plan_dir, "hostvars": hostvars, "groups": groups}


def read_plan(example, host):
    d = example["plan_dir"] / host
    return {"argv": json.loads((d / "argv.json").read_text()), "env": json.loads((d / "env.json").read_text()),
            "command.sh": (d / "command.sh").read_text(), "image": (d / "image.txt").read_text(),
            "plan": json.loads((d / "plan.json").read_text())}


def expected_from_resolver(example, host):
    """The resolver's node for this host, computed from the inventory inputs without the Fleet class.

    Returns (argv, env, image, bindings, served-name tail, (variant, hardware, strategy, node_count), rank).
    """
    hv = example["hostvars"][host]
    resolver = Resolver(get_catalog(None))
    tail = ["--served-model-name"] + served_names(hv["vllm_served_model_name"]) if hv.get("vllm_served_model_name") else []
    replica = hv.get("vllm_replica")
    if replica:
        members = sorted(example["groups"][replica])  # rank = position by inventory hostname
        rank, node_count = members.index(host), len(members)
        head = example["hostvars"][members[0]]
        mapping = {"HEAD_IP": head.get("vllm_cluster_address") or head.get("ansible_host") or members[0],
                   "IFACE_NAME": hv["vllm_cluster_interface"]}
    else:
        rank, node_count, mapping = 0, 1, {}
    sel = resolver.select(hv["vllm_recipe"], hv.get("vllm_variant"), hv["vllm_hardware"], hv.get("vllm_strategy"),
                          node_count if replica else None, hv.get("vllm_gpu_count"))
    dep = resolver.resolve(hv["vllm_recipe"], variant=sel["variant"], hardware=sel["hardware"],
                           strategy=sel["strategy"], node_count=node_count, gpu_count=hv.get("vllm_gpu_count"),
                           extra_args=tail)
    node = dep["nodes"][rank]
    argv = [bind(t, mapping) for t in node["argv"]]
    env = dict((k, bind(v, mapping)) for k, v in node["env"].items())
    key = (dep["variant"], dep["hardware"], dep["strategy"], dep["node_count"])
    return argv, env, dep["image"], mapping, tail, key, rank


def test_every_example_host_is_planned(example):
    hosts = sorted(example["hostvars"])
    assert len(hosts) == 13
    assert sorted(p.name for p in example["plan_dir"].iterdir()) == hosts
    for host in hosts:
        assert sorted(p.name for p in (example["plan_dir"] / host).iterdir()) == sorted(PLAN_FILES)


def test_argv_json_equals_the_resolver_for_every_host(example):
    for host in sorted(example["hostvars"]):
        files = read_plan(example, host)
        argv, env, image, mapping, _tail, _key, _rank = expected_from_resolver(example, host)
        # argv.json/env.json are the plan's; minus the fleet's multi-node additions (provenance
        # "replica: ...", e.g. VLLM_HOST_IP) they are exactly the resolver's output, bound
        assert (files["argv"], files["env"]) == (files["plan"]["argv"], files["plan"]["env"]), host
        assert recipe_view(files["plan"]) == (argv, env), host
        assert files["argv"][:2] == ["vllm", "serve"]
        assert not [t for t in files["argv"] if "$" in t], host  # bound to real addresses
        assert files["image"] == image + "\n", host
        assert files["plan"]["bindings"] == mapping, host


def test_argv_json_equals_the_fleet_model(example):
    fleet = Fleet(example["hostvars"], example["groups"])
    plans, problems = fleet.check(sorted(example["hostvars"]))
    assert problems == []
    for host, plan in plans.items():
        files = read_plan(example, host)
        assert (files["argv"], files["env"], files["image"]) == (plan["argv"], plan["env"], plan["image"] + "\n")


def test_command_sh_agrees_with_argv_and_env(example):
    for host in sorted(example["hostvars"]):
        files = read_plan(example, host)
        text = files["command.sh"]
        assert text.startswith("#!/bin/sh\n# %s: Qwen/Qwen3.6-35B-A3B " % host)
        exports = "".join("export %s=%s\n" % (k, shell_quote(v)) for k, v in sorted(files["env"].items()))
        assert text.endswith(exports + format_command(files["argv"]) + "\n"), host
        check = subprocess.run(["sh", "-n", str(example["plan_dir"] / host / "command.sh")], capture_output=True, text=True, check=False)
        assert check.returncode == 0, check.stderr


def test_roles_of_the_example_fleet(example):
    roles = dict((h, (read_plan(example, h)["plan"]["role"], read_plan(example, h)["plan"]["rank"])) for h in example["hostvars"])
    assert roles["b200-01"] == ("head", 0) and roles["b200-02"] == ("worker", 1)
    assert roles["h200-dep-01"] == ("head", 0) and roles["h200-dep-02"] == ("worker", 1)
    assert all(r == ("single", 0) for h, r in roles.items() if not h.startswith(("b200-", "h200-dep-")))
    worker = read_plan(example, "b200-02")["argv"]
    assert worker[worker.index("--master-addr") + 1] == "192.0.2.61"
    dep = read_plan(example, "h200-dep-02")["argv"]
    assert dep[dep.index("--data-parallel-address") + 1] == "192.0.2.71"
    assert read_plan(example, "h100-02")["plan"]["gpu_count"] == 4  # D6


def test_golden_rendering_after_binding(example, shared_dir):
    """Where the upstream builder rendered the same (variant, hardware, strategy, node_count) with default
    features, our argv matches its argv once its $HEAD_IP/$IFACE_NAME are bound to the inventory's values
    and the `--served-model-name ...` tail is taken off ours: that tail comes from the inventory's
    vllm_served_model_name, which upstream has no notion of (it is always appended last, so removing the
    last len(tail) tokens is exact). Hosts with vllm_gpu_count differ on purpose (deviation D6) and are
    not compared."""
    golden = {}
    with gzip.open(str(shared_dir / "golden" / GOLDEN), "rt") as handle:
        for line in handle:
            rec = json.loads(line)
            if rec["deploy_type"] in ("single_node", "multi_node"):
                golden.setdefault((rec["variant"], rec["hardware"], rec["strategy"], rec["node_count"]), []).append(rec)
    compared = []
    for host in sorted(example["hostvars"]):
        if example["hostvars"][host].get("vllm_gpu_count"):
            continue
        files = read_plan(example, host)
        _argv, _env, _image, mapping, tail, key, rank = expected_from_resolver(example, host)
        records = golden.get(key)
        if not records:
            continue
        recipe_argv, recipe_env = recipe_view(files["plan"])
        assert tail and recipe_argv[-len(tail):] == tail, host
        ours = recipe_argv[:-len(tail)]
        for rec in records:
            if rec["deploy_type"] == "single_node":
                theirs = rec["argv"]
            else:
                theirs = rec["head_argv"] if rank == 0 else rec["worker_argvs"][rank - 1]
            assert ours == [bind(t, mapping) for t in theirs], host
            assert recipe_env == dict((k, bind(v, mapping)) for k, v in rec["env"].items()), host
            assert files["image"] == rec["docker_image"] + "\n", host
        compared.append(host)
    # every host but the D6 one has a golden rendering
    assert compared == sorted(h for h in example["hostvars"] if h != "h100-02")


def test_plan_play_prints_role_command_env_image_and_provenance(example):
    plan_play = next(p for p in example["first"]["plays"] if p["play"]["name"].startswith("Plan |"))
    show = next(t for t in plan_play["tasks"] if t["task"]["name"] == "Plan | show the plan of each host")
    (result,) = show["hosts"].values()  # run_once: one task prints the whole fleet
    assert sorted(result["msg"]) == sorted(example["hostvars"])
    for host, msg in result["msg"].items():
        files = read_plan(example, host)
        plan = files["plan"]
        assert msg["role"].split()[0] == plan["role"]
        if plan["replica"]:
            assert "rank %d of replica %s" % (plan["rank"], plan["replica"]) in msg["role"]
        assert "\n".join(msg["command"]) == format_command(files["argv"])
        assert msg["env"] == files["env"]
        assert msg["image"] + "\n" == files["image"]
        assert msg["provenance"][0].startswith("host=%s role=%s" % (host, plan["role"]))
        assert len([ln for ln in msg["provenance"] if " <- " in ln]) >= len(plan["args_provenance"])


def plan_task(out):
    """Per-host results of the plan play's fleet_plan task (run_once: one host)."""
    play = next(p for p in out["plays"] if p["play"]["name"].startswith("Plan |"))
    return next(t for t in play["tasks"] if t["task"]["name"] == "Plan | resolve every host and write the plan files")["hosts"]


def test_first_run_writes_every_file_second_run_changes_nothing(example):
    first_plan = plan_task(example["first"])
    (result,) = first_plan.values()
    assert result["changed"] is True
    assert len(result["written"]) == len(PLAN_FILES) * 13
    second_plan = plan_task(example["second"])
    (again,) = second_plan.values()
    assert again["changed"] is False and again["written"] == []
    assert all(s["changed"] == 0 and s["failures"] == 0 for s in example["second"]["stats"].values())
    mtimes = dict((str(p), p.stat().st_mtime_ns) for p in example["plan_dir"].rglob("*") if p.is_file())
    assert mtimes == example["mtimes"]


def plan_play_task(out, name):
    """The per-host results of the plan play's task ``name``."""
    play = next(p for p in out["plays"] if p["play"]["name"].startswith("Plan |"))
    return next(t for t in play["tasks"] if t["task"]["name"] == name)["hosts"]


def test_default_output_is_one_table_and_counts(example):
    """Without -v, 13 hosts: no per-host detail, one table row per host, then the counts."""
    (detail,) = plan_play_task(example["second"], "Plan | show the plan of each host").values()
    assert detail.get("skipped") is True and "msg" not in detail
    (shown,) = plan_play_task(example["second"], "Plan | fleet table and counts").values()
    lines = shown["msg"]
    hosts = sorted(example["hostvars"])
    assert lines[0].startswith("13 host(s) planned: 9 single, 4 in 2 replica(s)")
    header = lines[1]
    assert header.split() == ["HOST", "ROLE", "REPLICA", "HARDWARE", "VARIANT", "STRATEGY", "IMAGE", "PORT", "TP/PP/DP",
                              "WARNINGS"]
    rows = dict((ln.split()[0], ln) for ln in lines[2:2 + len(hosts)])
    assert sorted(rows) == hosts and lines[2 + len(hosts)] == ""
    cols = [header.index(c) for c in ("ROLE", "REPLICA", "HARDWARE", "VARIANT", "STRATEGY", "IMAGE", "PORT", "TP/PP/DP")]
    for host, line in rows.items():
        plan = read_plan(example, host)["plan"]
        cells = [line[a:b].strip() for a, b in zip([0] + cols, cols + [len(line)])]
        assert cells[:7] == [host, plan["role"], "%s[%d]" % (plan["replica"], plan["rank"]) if plan["replica"] else "-",
                             "%s x%d" % (plan["hardware"], plan["gpu_count"]), plan["variant"], plan["strategy"],
                             plan["image"]], line
        argv = plan["argv"]
        tp = argv[argv.index("--tensor-parallel-size") + 1] if "--tensor-parallel-size" in argv else "1"
        assert cells[8].split()[0].split("/")[0] == tp, line
        assert ("unpinned" in line) == plan["image"].endswith((":latest", ":nightly")), line
    assert "D6" in rows["h100-02"].split()[-1].split(",")                 # vllm_gpu_count: 4 on an 8-GPU profile
    assert "D6" not in rows["h100-01"] and "D1" not in rows["h100-01"]
    assert rows["b200-02"].split()[1:3] == ["worker", "b200_tp_pp[1]"]
    recipes = lines.index("RECIPE                HOSTS  VARIANTS")
    assert lines[recipes + 1].split()[:2] == ["Qwen/Qwen3.6-35B-A3B", "13"]
    hardware = next(i for i, ln in enumerate(lines) if ln.startswith("HARDWARE  "))
    by_hw = dict((ln.split()[0], int(ln.split()[1])) for ln in lines[hardware + 1:lines.index("", hardware)])
    assert by_hw == dict((hw, len([h for h in hosts if read_plan(example, h)["plan"]["hardware"] == hw]))
                         for hw in set(read_plan(example, h)["plan"]["hardware"] for h in hosts))
    warning = next(i for i, ln in enumerate(lines) if ln.startswith("WARNING  "))
    by_code = dict((ln.split()[0], int(ln.split()[1])) for ln in lines[warning + 1:])
    assert by_code["D7"] == 13 and by_code["D6"] == 1
    assert by_code.get("unpinned", 0) == len([ln for ln in rows.values() if "unpinned" in ln.split()[-1]])
    assert all(ln.isascii() and ln == ln.rstrip() for ln in lines)


def test_verbose_prints_the_detail_not_the_task_result(example):
    """-v: the detail task runs (see the test above it); the fleet_plan result itself is not dumped twice."""
    (detail,) = plan_play_task(example["first"], "Plan | show the plan of each host").values()
    assert sorted(detail["msg"]) == sorted(example["hostvars"])
    (result,) = plan_task(example["first"]).values()
    (shown,) = plan_play_task(example["first"], "Plan | fleet table and counts").values()
    assert result["summary"] == shown["msg"]
    assert result["_ansible_verbose_override"] is True  # the default callback does not dump this result at -v
    assert result["counts"]["recipe"] == {"Qwen/Qwen3.6-35B-A3B": 13}


def test_few_hosts_print_detail_and_the_table_by_default(example):
    """Two hosts (<= vllm_plan_detail_hosts, 3), the default callback, no -v: detail, then the aligned table."""
    out = example["few"]
    assert "TASK [Plan | show the plan of each host]" in out
    detail = out.split("TASK [Plan | show the plan of each host]")[1].split("TASK [")[0]
    assert '"h100-01": {' in detail and '"h100-02": {' in detail and '"provenance": [' in detail
    assert "env VLLM_ALLOW_LONG_MAX_MODEL_LEN=1  <- feature long_context" in detail
    table = out.split("TASK [Plan | fleet table and counts]")[1].split("PLAY RECAP")[0]
    lines = [ln.strip().rstrip(",").strip('"') for ln in table.splitlines() if ln.startswith('        "')]
    header = next(ln for ln in lines if ln.startswith("HOST "))
    rows = [ln for ln in lines if ln.startswith("h100-0")]
    assert len(rows) == 2
    for ln in rows:  # fixed width: each cell starts under its header
        for name in ("ROLE", "HARDWARE", "IMAGE", "WARNINGS"):
            start = header.index(name)
            assert ln[start - 2:start] == "  " and ln[start] != " ", (ln, name)
    codes = dict((ln.split()[0], ln.split()[-1].split(",")) for ln in rows)
    assert "D1" in codes["h100-01"] and "D6" not in codes["h100-01"]
    assert "D1" in codes["h100-02"] and "D6" in codes["h100-02"]
    assert "h100      2      12" in lines                                  # 8 + 4 GPUs
    assert [ln.split()[:2] for ln in lines if ln.startswith(("D1 ", "D6 ", "D7 "))] == [["D1", "2"], ["D6", "1"], ["D7", "2"]]
    recap = out.split("PLAY RECAP")[1]
    assert "failed=0" in recap


def test_a_second_plan_run_reports_changed_0(example):
    """Every task of the second run (preflight included) is ok or skipped: no changed in its stats."""
    assert example["second"]["stats"] and all(s["changed"] == 0 for s in example["second"]["stats"].values())
    for play in example["second"]["plays"]:
        for task in play["tasks"]:
            assert not [h for h, r in task["hosts"].items() if r.get("changed")], task["task"]["name"]
