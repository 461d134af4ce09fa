# -*- coding: utf-8 -*-
"""Variables as Ansible gives them (issue 12 §1), and the name checks of preflight (§2).

One playbook has a play per pattern: play vars, task vars, include_role vars, import_role vars,
``roles:`` vars, ``set_fact``, group_vars and host_vars, each setting ``vllm_variant: fp8`` on
hosts whose inventory leaves it unset (the recipe's choice on h200 is ``default``), and the same
run gives ``-e vllm_port=9001`` (a ``key=value`` string) and ``-e`` JSON (a list) to every host.
In each play a probe (a tiny role) calls the lookup ``llmfleet.vllm.recipe`` and ``fleet_plan``
and records what they saw. The playbook runs once on the checkout and once on the collection
built and installed from its tarball.

Then three runs that must fail in preflight, before any host is contacted: plan.yml over an
inventory with unknown and misspelt names and hosts without a usable recipe, limited to a host
that serves no vLLM; deploy.yml with a limit without a vLLM host; deploy.yml with
``vllm_deploy_max_fail_percentage=150``.
"""

from __future__ import annotations

import json
import subprocess

import pytest
import yaml

import installed_collection as installed_fixture
from playbook_runner import JSON_CALLBACK, REPO, ansible_env, run, tool

installed_collection = installed_fixture.installed_collection  # the session-wide fixture: build and install once
installed_env = installed_fixture.installed_env

SEED = "Qwen/Qwen3.6-35B-A3B"
FP8 = {"vllm_variant": "fp8"}
E_ARGS = ["-e", "vllm_port=9001", "-e", json.dumps({"vllm_served_model_name": ["qwen-e", "qwen-e-alias"]})]


def write(path, data):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else yaml.safe_dump(data, sort_keys=False))


def probe_tasks(task_vars=None):
    """Lookup, fleet_plan (scope play, run once) and a record of what both saw."""
    tasks = [
        {"name": "Probe | lookup", "ansible.builtin.set_fact": {"probe_lookup": "{{ lookup('llmfleet.vllm.recipe') }}"}},
        {"name": "Probe | fleet_plan", "llmfleet.vllm.fleet_plan": {"scope": "play", "fail_on_problems": False},
         "run_once": True, "register": "probe_fleet"},
    ]
    for task in tasks:
        if task_vars:
            task["vars"] = dict(task_vars)
    tasks.append({"name": "Probe | record", "ansible.builtin.debug": {"msg": {
        "pattern": "{{ probe_pattern }}",
        "lookup": "{{ {'variant': probe_lookup.variant, 'port': probe_lookup.port, "
                  "'names': probe_lookup.served_model_names} }}",
        "plans": "{{ probe_fleet.plans | dict2items | map(attribute='key') | zip(probe_fleet.plans.values() "
                 "| map(attribute='variant'), probe_fleet.plans.values() | map(attribute='port'), "
                 "probe_fleet.plans.values() | map(attribute='served_model_names')) }}",
        "problems": "{{ probe_fleet.problems }}",
        "warnings": "{{ probe_fleet.warnings | default([]) }}",
    }}})
    return tasks


def play(pattern, hosts, **extra):
    out = {"name": "Pattern %s" % pattern, "hosts": hosts, "gather_facts": False}
    out.update(extra)
    out.setdefault("vars", {})["probe_pattern"] = pattern
    return out


def probe_role():
    return {"ansible.builtin.include_role": {"name": "vars_probe"}}


def patterns_playbook():
    return [
        # p-play2's own (inventory) vllm_variant loses to the play's: fleet_plan, run on p-play, warns about it
        play("play", "p-play,p-play2", vars=dict(FP8, vllm_port=8111), tasks=[probe_role()]),
        play("task", "p-task", tasks=probe_tasks(FP8)),
        play("include_role", "p-incl", tasks=[{"ansible.builtin.include_role": {"name": "vars_probe"}, "vars": FP8}]),
        play("import_role", "p-import", tasks=[{"ansible.builtin.import_role": {"name": "vars_probe"}, "vars": FP8}]),
        play("roles", "p-roles", roles=[{"role": "vars_probe", "vars": FP8}]),
        play("set_fact", "p-setfact", tasks=[{"ansible.builtin.set_fact": FP8}, probe_role()]),
        play("group_vars", "p-group", tasks=[probe_role()]),
        play("host_vars", "p-host", tasks=[probe_role()]),
        play("none", "p-none", tasks=[probe_role()]),
    ]


def patterns_tree(tmp):
    write(tmp / "inventory" / "hosts.yml", {"all": {
        "hosts": {"p-play": {}, "p-play2": {"vllm_variant": "default"}, "p-task": {}, "p-incl": {}, "p-import": {},
                  "p-roles": {}, "p-setfact": {}, "p-host": {}, "p-none": {}},
        "children": {"g_fp8": {"hosts": {"p-group": {}}}},
    }})
    write(tmp / "inventory" / "group_vars" / "all.yml",
          {"ansible_connection": "local", "vllm_recipe": SEED, "vllm_hardware": "h200"})
    write(tmp / "inventory" / "group_vars" / "g_fp8.yml", FP8)
    write(tmp / "inventory" / "host_vars" / "p-host.yml", FP8)
    write(tmp / "roles" / "vars_probe" / "tasks" / "main.yml", probe_tasks())
    write(tmp / "patterns.yml", patterns_playbook())


def records(proc):
    try:
        out = json.loads(proc.stdout)
    except ValueError:
        pytest.fail("no JSON from ansible-playbook (rc %s):\n%s\n%s" % (proc.returncode, proc.stdout[-3000:], proc.stderr[-3000:]))
    seen = {}
    for p in out["plays"]:
        for t in p["tasks"]:
            if t["task"]["name"].endswith("Probe | record"):
                for host, res in t["hosts"].items():
                    msg = res["msg"]
                    seen[(msg["pattern"], host)] = msg
    return out, seen


def run_patterns(tmp, env):
    patterns_tree(tmp)
    argv = [tool("ansible-playbook"), "-i", str(tmp / "inventory"), str(tmp / "patterns.yml")] + E_ARGS
    proc = subprocess.run(argv, cwd=str(tmp), env=env, capture_output=True, text=True, check=False, timeout=600)
    out, seen = records(proc)
    return {"proc": proc, "out": out, "seen": seen}


@pytest.fixture(scope="module")
def checkout(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("vars-checkout")
    return run_patterns(tmp, ansible_env(tmp, JSON_CALLBACK))


@pytest.fixture(scope="module")
def installed(tmp_path_factory, installed_collection):  # noqa: F811
    tmp = tmp_path_factory.mktemp("vars-installed")
    return run_patterns(tmp, installed_env(tmp, installed_collection, JSON_CALLBACK))


@pytest.fixture(params=["checkout", "installed"])
def result(request):
    return request.getfixturevalue(request.param)


PATTERNS = [("play", "p-play"), ("play", "p-play2"), ("task", "p-task"), ("include_role", "p-incl"),
            ("import_role", "p-import"), ("roles", "p-roles"), ("set_fact", "p-setfact"), ("group_vars", "p-group"),
            ("host_vars", "p-host")]


def test_the_run_passes(result):
    proc = result["proc"]
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert sorted(result["seen"]) == sorted(PATTERNS + [("none", "p-none")])


@pytest.mark.parametrize("pattern, host", PATTERNS)
def test_lookup_and_fleet_plan_see_the_pattern(result, pattern, host):
    rec = result["seen"][(pattern, host)]
    # -e key=value (a string, read as the integer) beats play vars (vllm_port: 8111); -e JSON keeps its list
    assert rec["lookup"] == {"variant": "fp8", "port": 9001, "names": ["qwen-e", "qwen-e-alias"]}, rec
    plans = dict((h, [v, p, n]) for h, v, p, n in rec["plans"])
    assert plans[host] == ["fp8", 9001, ["qwen-e", "qwen-e-alias"]], rec
    assert rec["problems"] == []


def test_without_a_pattern_the_recipe_chooses(result):
    rec = result["seen"][("none", "p-none")]
    assert rec["lookup"]["variant"] == "default" and rec["lookup"]["port"] == 9001
    assert [h for h, v, _p, _n in rec["plans"]] == ["p-none"] and rec["plans"][0][1] == "default"


def test_play_vars_reach_the_other_hosts_of_the_play_with_a_warning(result):
    rec = result["seen"][("play", "p-play2")]
    assert sorted(h for h, v, _p, _n in rec["plans"] if v == "fp8") == ["p-play", "p-play2"]
    assert [w for w in rec["warnings"] if w.startswith("host p-play2: its own vllm_variant differs")
            and "p-play has from play, role or task vars" in w and "may not get" in w], rec["warnings"]
    assert not [w for w in rec["warnings"] if w.startswith("host p-play:")]


def test_the_installed_collection_was_used(installed, installed_collection):  # noqa: F811
    assert installed_collection["tarball"].name == "llmfleet-vllm-%s.tar.gz" % yaml.safe_load(
        (REPO / "galaxy.yml").read_text())["version"]
    assert (installed_collection["collection"] / "plugins" / "lookup" / "recipe.py").is_file()
    assert str(REPO) not in installed["proc"].stdout.replace(str(REPO / ".collections" / "ansible_collections" / "ansible"), "")


# ---------------------------------------------------------------------------------------- refusals
def preflight_result(proc):
    try:
        out = json.loads(proc.stdout)
    except ValueError:
        pytest.fail("no JSON (rc %s):\n%s\n%s" % (proc.returncode, proc.stdout[-3000:], proc.stderr[-3000:]))
    tasks = [t for p in out["plays"] for t in p["tasks"]]
    return out, tasks


def task_result(tasks, start):
    found = [t for t in tasks if t["task"]["name"].startswith(start)]
    assert found, [t["task"]["name"] for t in tasks]
    (res,) = found[0]["hosts"].values()
    return res


UNREACHABLE = {"ansible_connection": "ssh", "ansible_ssh_common_args": "-o ConnectTimeout=1"}


def addressed(hosts):
    """Each host on its own unreachable machine (TEST-NET-1)."""
    return dict((h, dict(v, ansible_host="192.0.2.%d" % (i + 10))) for i, (h, v) in enumerate(hosts.items()))


@pytest.fixture(scope="module")
def names_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("vars-names")
    good = {"vllm_recipe": SEED, "vllm_hardware": "h200"}
    write(tmp / "hosts.yml", {"all": {"vars": UNREACHABLE, "hosts": addressed({
        "web-01": {},
        "good-01": dict(good),
        "typo-01": dict(good, vllm_varient="fp8"),
        "typo-02": dict(good, vllm_varient="fp8"),
        "norecipe-01": {"vllm_variant": "fp8", "vllm_hardware": "h200"},
        "empty-01": {"vllm_recipe": "", "vllm_hardware": "h200"},
        "misspelt-01": {"vllm_recipee": SEED, "vllm_hardware": "h200"},
        "roleuser-01": dict(good, vllm_serve_name="a", vllm_plan_dir="/tmp/x", vllm_deploy_serial=1),
    })}})
    proc = run([tool("ansible-playbook"), "-i", str(tmp / "hosts.yml"), str(REPO / "playbooks" / "plan.yml"),
                "-l", "web-01", "-e", "vllm_plan_dir=%s" % (tmp / "plan")], tmp, JSON_CALLBACK)
    out, tasks = preflight_result(proc)
    res = task_result(tasks, "Preflight | resolve and check")
    return {"proc": proc, "res": res, "problems": res["problems"], "tmp": tmp, "tasks": tasks}


def one(problems, *parts):
    found = [p for p in problems if all(x in p for x in parts)]
    assert len(found) == 1, "%r in:\n%s" % (parts, "\n".join(problems))
    return found[0]


def test_names_run_fails_before_any_host(names_run):
    assert names_run["proc"].returncode != 0
    assert names_run["res"]["failed"] is True
    assert not (names_run["tmp"] / "plan").exists()
    assert "UNREACHABLE" not in names_run["proc"].stdout
    assert not [t for t in names_run["tasks"] if t["task"]["name"].startswith("Plan |")]


def test_unknown_names_with_the_closest_spelling(names_run):
    p = one(names_run["problems"], "vllm_varient")
    assert p == "hosts typo-01, typo-02: vllm_varient is not a variable of llmfleet.vllm (did you mean vllm_variant?)"
    assert one(names_run["problems"], "vllm_recipee").startswith("host misspelt-01: vllm_recipee is not a variable")
    assert "did you mean vllm_recipe?" in one(names_run["problems"], "vllm_recipee")
    assert not [p for p in names_run["problems"] if "roleuser-01" in p or "good-01" in p]


def test_a_host_without_a_usable_recipe(names_run):
    problems = names_run["problems"]
    assert one(problems, "host norecipe-01:").startswith(
        "host norecipe-01: sets vllm_variant, vllm_hardware but vllm_recipe is not set: expected a recipe id")
    assert 'vllm_recipe is "":' in one(problems, "host empty-01:")
    assert "sets vllm_hardware but vllm_recipe is not set" in one(problems, "host misspelt-01: sets")
    assert not [p for p in problems if p.startswith("host web-01")]


def test_a_limit_without_a_vllm_host(names_run):
    assert one(names_run["problems"], "no vLLM host in this play") == (
        "no vLLM host in this play: none of its 1 host(s) (web-01) sets vllm_recipe; check the inventory (-i) and "
        "the limit (-l)")


@pytest.fixture(scope="module")
def deploy_runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("vars-deploy")
    good = {"vllm_recipe": SEED, "vllm_hardware": "h200"}
    write(tmp / "hosts.yml", {"all": {"vars": UNREACHABLE, "hosts": addressed({
        "web-01": {}, "good-01": dict(good), "good-02": dict(good)})}})
    deploy = [tool("ansible-playbook"), "-i", str(tmp / "hosts.yml"), str(REPO / "playbooks" / "deploy.yml")]
    limit = run(deploy + ["-l", "web-01"], tmp, JSON_CALLBACK)
    percent = run(deploy + ["-e", "vllm_deploy_max_fail_percentage=150"], tmp, JSON_CALLBACK)
    return {"limit": limit, "percent": percent}


def test_deploy_with_a_limit_without_a_vllm_host(deploy_runs):
    proc = deploy_runs["limit"]
    assert proc.returncode != 0 and "UNREACHABLE" not in proc.stdout
    _out, tasks = preflight_result(proc)
    res = task_result(tasks, "Preflight | resolve and check")
    assert res["failed"] is True
    assert "no vLLM host in this play: none of its 1 host(s) (web-01) sets vllm_recipe" in res["msg"]


def test_deploy_refuses_a_max_fail_percentage_out_of_range(deploy_runs):
    proc = deploy_runs["percent"]
    assert proc.returncode != 0 and "UNREACHABLE" not in proc.stdout
    _out, tasks = preflight_result(proc)
    res = task_result(tasks, "Deploy | every replica in the play is whole")
    assert res["failed"] is True
    assert res["problems"] == ['vllm_deploy_max_fail_percentage="150": expected a number from 0 to 100']
    assert not [t for t in tasks if t["task"]["name"].startswith("Deploy | the facts")]
