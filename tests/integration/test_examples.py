# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmfleet contributors
# Apache License 2.0 (see LICENSE)
"""Every plugin's EXAMPLES block runs as written, in one ansible-playbook run.

The examples come from ``ansible-doc --json`` (what a user reads), one block per plugin, against
an inventory of one local host with the variables the examples name (``vllm_recipe``,
``vllm_hardware``, ``vllm_port``, the Vault-backed ``vault_hf_token``/``vault_vllm_api_key``).
What the test adds around them, and only that:

* each plugin's tasks sit in a block with ``ignore_errors`` so that one run reports every
  example, and their names get the plugin as a prefix;
* examples that write system files (``ansible.builtin.copy`` to ``/etc/...``) run in check mode
  with diff, so the rendered content is checked and nothing is written;
* ``vllm_health`` polls a stand-in vLLM server (``/health``, ``/v1/models``, ``/v1/completions``)
  started by the test on ``vllm_port``, and ``systemctl``/``journalctl`` on PATH are stand-ins
  that report the watched unit active (the test machine need not run systemd);
* ``gpu_facts`` runs for real (a host without a GPU reports vendor ``none``); its site-local
  tree example gets a ``recipes/`` tree beside the inventory.
"""

from __future__ import annotations

import json
import os
import pathlib
import re
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import yaml

from playbook_runner import JSON_CALLBACK, REPO, ansible_env, tool

HOST = "llm-01"
API_KEY = "test-api-key-0123"
SERVED = "qwen-3.6-35b-a3b"
#: plugin type -> (directory under plugins/, file suffix of a documented plugin)
PLUGIN_DIRS = {"lookup": ("lookup", ".py"), "filter": ("filter", ".yml"), "module": ("modules", ".py")}


def plugins():
    """Every documented plugin of the collection: [(type, name)] in a fixed order."""
    out = []
    for kind, (folder, suffix) in PLUGIN_DIRS.items():
        for path in sorted((REPO / "plugins" / folder).glob("*" + suffix)):
            if not path.name.startswith("_"):
                out.append((kind, path.stem))
    return out


def examples_of(tmp):
    """{(type, name): EXAMPLES text} from ansible-doc --json, one call per plugin type."""
    found = {}
    for kind in PLUGIN_DIRS:
        names = [n for k, n in plugins() if k == kind]
        proc = subprocess.run([tool("ansible-doc"), "--json", "-t", kind] + ["llmfleet.vllm." + n for n in names],
                              cwd=str(tmp), env=ansible_env(tmp), capture_output=True, text=True, check=False, timeout=300)
        assert proc.returncode == 0, proc.stderr
        for fqcn, doc in json.loads(proc.stdout).items():
            found[(kind, fqcn.rsplit(".", 1)[1])] = doc.get("examples") or ""
    return found


def label(kind, name):
    return "%s %s" % (kind, name)


def example_play(examples):
    """The play: one block per plugin holding its examples verbatim (names prefixed)."""
    blocks = []
    for (kind, name), text in sorted(examples.items(), key=lambda kv: plugins().index(kv[0])):
        tasks = yaml.safe_load(text)
        for task in tasks:
            task["name"] = "%s | %s" % (label(kind, name), task["name"])
        block = {"name": label(kind, name), "block": tasks, "ignore_errors": True}
        if any("ansible.builtin.copy" in task for task in tasks):
            block.update(check_mode=True, diff=True)
        blocks.append(block)
    return [{"name": "Every EXAMPLES block", "hosts": HOST, "gather_facts": False, "tasks": blocks}]


class StandIn(BaseHTTPRequestHandler):
    """The three routes vllm_health probes, answering as a ready vLLM server would."""

    requests = []

    def _send(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _authorized(self):
        return self.headers.get("Authorization") == "Bearer " + API_KEY

    def do_GET(self):  # noqa: N802 (http.server's naming)
        self.requests.append(("GET", self.path, self.headers.get("Authorization")))
        if self.path == "/health":
            self._send(200, {})
        elif self.path == "/v1/models":
            self._send(200, {"object": "list", "data": [{"id": SERVED, "object": "model"}]}) if self._authorized() \
                else self._send(401, {"error": "unauthorized"})
        else:
            self._send(404, {})

    def do_POST(self):  # noqa: N802
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        self.requests.append(("POST", self.path, self.headers.get("Authorization"), body))
        if self.path == "/v1/completions" and self._authorized():
            self._send(200, {"choices": [{"index": 0, "text": " pong"}]})
        else:
            self._send(401 if self.path == "/v1/completions" else 404, {})

    def log_message(self, *args):
        pass


def stand_in_tools(bindir):
    """``systemctl show`` reporting the unit active; ``journalctl`` printing one line."""
    bindir.mkdir()
    (bindir / "systemctl").write_text("#!/bin/sh\nprintf 'ActiveState=active\\nSubState=running\\nResult=success\\n"
                                      "NRestarts=0\\nMainPID=4242\\n'\n")
    (bindir / "journalctl").write_text("#!/bin/sh\necho 'stand-in journal'\n")
    for name in ("systemctl", "journalctl"):
        (bindir / name).chmod(0o755)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("examples")
    examples = examples_of(tmp)
    server = ThreadingHTTPServer(("127.0.0.1", 0), StandIn)
    StandIn.requests = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        inv_dir = tmp / "inventory"
        (inv_dir / "recipes").mkdir(parents=True)
        taxonomy = yaml.safe_load((REPO / "data" / "recipes" / "taxonomy.yaml").read_text())
        taxonomy["hardware_profiles"]["rtx_pro_6000_4x"] = dict(taxonomy["hardware_profiles"]["rtx_pro_6000_2x"],
                                                                gpu_count=4, scalable=False)
        (inv_dir / "recipes" / "taxonomy.yaml").write_text(yaml.safe_dump(taxonomy, sort_keys=False))
        (inv_dir / "hosts.yml").write_text(yaml.safe_dump({"all": {"hosts": {HOST: {
            "ansible_connection": "local",
            "vllm_recipe": "Qwen/Qwen3.6-35B-A3B",
            "vllm_hardware": "h200",
            "vllm_port": server.server_address[1],
            "vault_hf_token": "hf_example_token_from_vault",
            "vault_vllm_api_key": API_KEY,
        }}}}, sort_keys=False))
        pb_dir = tmp / "playbooks"  # fleet_plan's dest example defaults to <playbook_dir>/../plan
        pb_dir.mkdir()
        (pb_dir / "examples.yml").write_text(yaml.safe_dump(example_play(examples), sort_keys=False))
        stand_in_tools(tmp / "bin")
        env = ansible_env(tmp, JSON_CALLBACK)
        env["PATH"] = "%s%s%s" % (tmp / "bin", os.pathsep, env["PATH"])
        proc = subprocess.run([tool("ansible-playbook"), "-i", str(inv_dir / "hosts.yml"), str(pb_dir / "examples.yml")],
                              cwd=str(tmp), env=env, capture_output=True, text=True, check=False, timeout=600)
    finally:
        server.shutdown()
        server.server_close()
    assert proc.stdout.lstrip().startswith("{"), proc.stdout[-3000:] + proc.stderr[-3000:]
    out = json.loads(proc.stdout)
    results = {}
    for play in out["plays"]:
        for task in play["tasks"]:
            results[task["task"]["name"]] = task["hosts"].get(HOST, {})
    (tmp / "results.json").write_text(json.dumps(results, indent=1))  # to read when a check fails
    return {"proc": proc, "examples": examples, "results": results, "tmp": tmp, "requests": list(StandIn.requests)}


def of(run, kind, name):
    """[(task name, result)] of one plugin's examples, in order."""
    prefix = label(kind, name) + " | "
    return [(n[len(prefix):], r) for n, r in run["results"].items() if n.startswith(prefix)]


def test_readme_plugin_table_lists_every_plugin():
    readme = (REPO / "README.md").read_text()
    listed = re.findall(r"^\| (lookup|filter|module) `llmfleet\.vllm\.(\w+)`", readme, re.M)
    assert sorted(listed) == sorted(plugins())


def test_every_plugin_has_examples_and_each_task_ran(run):
    assert sorted(run["examples"]) == sorted(plugins())
    for key in plugins():
        text = run["examples"][key]
        assert text.strip(), "%s has no EXAMPLES" % label(*key)
        ran = of(run, *key)
        assert [n for n, _r in ran] == [t["name"] for t in yaml.safe_load(text)], label(*key)


def test_no_example_fails(run):
    failed = dict((n, r.get("msg") or r.get("censored")) for n, r in run["results"].items() if r.get("failed"))
    assert not failed, json.dumps(failed, indent=2)
    assert run["proc"].returncode == 0, run["proc"].stderr[-3000:]
    skipped = [n for n, r in run["results"].items() if r.get("skipped")]
    # the only conditional example: it adopts the detected profile when vllm_hardware is unset (set here)
    assert skipped == ["module gpu_facts | Use the detected profile when none is declared"]


def test_lookup_and_filter_examples_render_the_plan(run):
    lookup = dict(of(run, "lookup", "recipe"))
    assert lookup["Show the exact command"]["msg"].startswith("vllm serve Qwen/Qwen3.6-35B-A3B")
    argvs = lookup["Resolve a recipe directly, without inventory"]["msg"]
    assert len(argvs) == 2 and all(a[:3] == ["vllm", "serve", "nvidia/Qwen3.6-35B-A3B-NVFP4"] for a in argvs)
    (_n, shell), = of(run, "filter", "shell_command")
    assert shell["msg"] == lookup["Show the exact command"]["msg"]
    (_n, argv), = of(run, "filter", "container_argv")
    run_argv = argv["ansible_facts"]["vllm_run_argv"]
    assert run_argv[:2] == ["docker", "run"] and "--env-file" in run_argv
    (_n, explain), = of(run, "filter", "explain")
    assert explain["msg"]
    spec = dict(of(run, "filter", "service_spec"))
    exec_argv = spec["The ExecStart argv of this host's vLLM service (venv runtime, API key from Vault)"]["msg"]
    assert exec_argv[0].endswith("/bin/vllm") and exec_argv[1:3] == ["serve", "Qwen/Qwen3.6-35B-A3B"]
    assert API_KEY not in json.dumps(exec_argv)
    (problem,) = spec["What would make it unsafe to serve without the key"]["msg"]
    assert "without an API key" in problem


def test_systemd_exec_example_renders_the_unit(run):
    (_n, unit), = of(run, "filter", "systemd_exec")
    assert unit["changed"] is True  # check mode: reported, not written
    after = unit["diff"][0]["after"]
    assert after.startswith("[Service]\nExecStart=/usr/bin/docker run \\\n")
    assert " \\\n    " in after and "Qwen/Qwen3.6-35B-A3B" in after
    assert not pathlib.Path("/etc/systemd/system/vllm-serve.service").exists() or unit["diff"][0]["before"]


def test_env_file_example_keeps_the_secret_out_of_the_output(run):
    (_n, env), = of(run, "filter", "env_file")
    assert not env.get("failed")
    assert "hf_example_token_from_vault" not in json.dumps(run["results"])


def test_fleet_plan_examples(run):
    ran = dict(of(run, "module", "fleet_plan"))
    assert ran["Validate the whole inventory before touching any host"]["checked"] == 1
    assert ran["Plan every host and write plan/<host>/ files"]["planned"] == 1
    assert (run["tmp"] / "plan" / HOST / "argv.json").is_file()


def test_gpu_facts_examples_on_a_host_without_gpu(run):
    ran = dict(of(run, "module", "gpu_facts"))
    facts = ran["Detect the GPUs"]["ansible_facts"]["llmfleet_gpu"]
    if facts["vendor"] != "none":
        pytest.skip("this machine has a GPU (%s); the example ran on it" % facts["vendor"])
    assert facts["count"] == 0 and facts["profile"] is None
    assert ran["Show what was found"]["msg"].startswith("0 x ")


def test_vllm_health_example_against_a_stand_in_server(run):
    (_n, health), = of(run, "module", "vllm_health")
    assert health["stage"] == "ready" and health["models"] == [SERVED]
    assert API_KEY not in json.dumps(health)
    gets = [r[:3] for r in run["requests"] if r[0] == "GET"]
    assert ("GET", "/health", None) in gets and ("GET", "/v1/models", "Bearer " + API_KEY) in gets
    (post,) = [r for r in run["requests"] if r[0] == "POST"]
    assert post[1:3] == ("/v1/completions", "Bearer " + API_KEY) and post[3]["model"] == SERVED
