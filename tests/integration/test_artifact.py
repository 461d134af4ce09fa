# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmfleet contributors
# Apache License 2.0 (see LICENSE)
"""The collection as users get it: `ansible-galaxy collection build`, then install, then use.

One build and one offline install into a temp dir; from there, with only that directory as the
collections path: `ansible-doc` of the lookup, `ansible-playbook llmfleet.vllm.plan` over the
installed example inventory, and the same playbook with jsonschema made unimportable (a clear
one-line error, once, no traceback, nothing planned).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tarfile

import pytest
import yaml

from playbook_runner import REPO, ansible_env, tool

#: top-level entries the artifact must carry, and the development trees it must not
CARRIED = ("plugins", "roles", "playbooks", "data", "meta", "inventories", "README.md", "LICENSE", "CHANGELOG.md",
           "requirements.txt")
LEFT_OUT = ("tests", "bench", "tools", "scripts", "extensions", ".ci", ".work", ".venv", ".collections", "Makefile",
            "pytest.ini", "requirements-dev.txt", "requirements-dev-py311.txt", ".ansible-lint", ".flake8", "plan")
MISSING_JSONSCHEMA = ("llmfleet.vllm needs the Python package jsonschema on the controller: pip install jsonschema "
                      "(see requirements.txt)")


def installed_env(tmp, collections):
    """ansible's environment with ``collections`` as the only collections path."""
    env = ansible_env(tmp)
    env.update(ANSIBLE_COLLECTIONS_PATH=str(collections), ANSIBLE_COLLECTIONS_SCAN_SYS_PATH="false")
    env.pop("PYTHONPATH", None)
    return env


def call(argv, tmp, env, cwd=None):
    return subprocess.run(argv, cwd=str(cwd or tmp), env=env, capture_output=True, text=True, check=False, timeout=300)


@pytest.fixture(scope="module")
def artifact(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("artifact")
    meta = yaml.safe_load((REPO / "galaxy.yml").read_text())
    env = installed_env(tmp, tmp / "collections")
    build = call([tool("ansible-galaxy"), "collection", "build", "--output-path", str(tmp / "dist"), str(REPO)], tmp, env)
    assert build.returncode == 0, build.stdout + build.stderr
    tarball = tmp / "dist" / ("%s-%s-%s.tar.gz" % (meta["namespace"], meta["name"], meta["version"]))
    with tarfile.open(str(tarball)) as tar:
        names = tar.getnames()
    install = call([tool("ansible-galaxy"), "collection", "install", "--offline", "-p", str(tmp / "collections"),
                    str(tarball)], tmp, env)
    assert install.returncode == 0, install.stdout + install.stderr
    root = tmp / "collections" / "ansible_collections" / "llmfleet" / "vllm"
    return {"tmp": tmp, "env": env, "names": names, "root": root}


def test_tarball_carries_what_a_user_needs(artifact):
    top = set(n.split("/", 1)[0] for n in artifact["names"])
    for entry in CARRIED:
        assert entry in top, entry
    for entry in LEFT_OUT:
        assert entry not in top, entry
    assert not [n for n in artifact["names"] if "__pycache__" in n or n.endswith((".pyc", ".tar.gz"))]
    for path in ("plugins/lookup/recipe.py", "plugins/module_utils/resolver.py", "data/recipes/taxonomy.yaml",
                 "data/schema/recipe.schema.json", "roles/vllm_serve/tasks/main.yml", "playbooks/plan.yml",
                 "meta/runtime.yml", "meta/execution-environment.yml", "inventories/example/hosts.yml"):
        assert path in artifact["names"], path


def test_controller_requirements_are_declared_for_ansible_builder(artifact):
    root = artifact["root"]
    ee = yaml.safe_load((root / "meta" / "execution-environment.yml").read_text())
    assert ee["dependencies"]["python"] == "requirements.txt"
    reqs = [re.split(r"[<>=!~ #;]", line, maxsplit=1)[0].lower()
            for line in (root / "requirements.txt").read_text().splitlines() if line.strip() and not line.startswith("#")]
    assert "jsonschema" in reqs and "pyyaml" in reqs
    readme = (REPO / "README.md").read_text()
    assert "## Requirements" in readme and "requirements.txt" in readme


def test_installed_docs(artifact):
    doc = call([tool("ansible-doc"), "-t", "lookup", "llmfleet.vllm.recipe"], artifact["tmp"], artifact["env"])
    assert doc.returncode == 0, doc.stderr
    assert str(artifact["root"]) in doc.stdout  # the installed copy, not the checkout
    assert "EXAMPLES" in doc.stdout


def test_installed_plan_playbook_by_fqcn(artifact):
    cwd = artifact["tmp"] / "work"
    cwd.mkdir()
    inventory = artifact["root"] / "inventories" / "example"
    proc = call([tool("ansible-playbook"), "-i", str(inventory), "llmfleet.vllm.plan"], artifact["tmp"], artifact["env"],
                cwd=cwd)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    hosts = yaml.safe_load((inventory / "hosts.yml").read_text())

    def members(group):
        out = list((group.get("hosts") or {}))
        for child in (group.get("children") or {}).values():
            out += members(child or {})
        return out
    expected = sorted(set(members(hosts["all"])))
    assert expected and sorted(p.name for p in (cwd / "plan").iterdir()) == expected  # plan/ under the current directory
    assert (cwd / "plan" / expected[0] / "argv.json").is_file()
    assert not (artifact["root"] / "plan").exists()
    assert "failed=1" not in proc.stdout


def test_missing_jsonschema_is_one_clear_line(artifact):
    """The installed plan.yml with jsonschema unimportable: rc != 0, the message once, no traceback."""
    tmp = artifact["tmp"]
    blocked = tmp / "no-jsonschema"
    blocked.mkdir()
    (blocked / "jsonschema.py").write_text("raise ImportError('blocked by the test: no jsonschema here')\n")
    env = dict(artifact["env"], PYTHONPATH=str(blocked))
    cwd = tmp / "work-nojs"
    cwd.mkdir()
    proc = call([tool("ansible-playbook"), "-i", str(artifact["root"] / "inventories" / "example"), "llmfleet.vllm.plan"],
                tmp, env, cwd=cwd)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "preflight found 1 problem(s) in the inventory; no host was changed:\n- " + MISSING_JSONSCHEMA in out
    assert "Traceback" not in out and "File \"" not in out
    # once in the message and once in the result's problems, not once per host
    assert out.count(MISSING_JSONSCHEMA) <= 3
    assert not (cwd / "plan").exists()


def test_missing_jsonschema_in_python(artifact):
    """The validation itself, with the import blocked in sys.modules: the same one line."""
    code = ("import sys; sys.modules['jsonschema'] = None; sys.path.insert(0, %r)\n"
            "from ansible_collections.llmfleet.vllm.plugins.module_utils.catalog import Catalog\n"
            "from ansible_collections.llmfleet.vllm.plugins.module_utils.recipe_schema import MissingDependencyError\n"
            "try:\n    Catalog().recipe('Qwen/Qwen3.6-35B-A3B')\n"
            "except MissingDependencyError as exc:\n    print(exc)\nelse:\n    print('no error')\n"
            % str(artifact["root"].parents[2]))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=120,
                          env=dict(os.environ, PYTHONPATH=""))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == MISSING_JSONSCHEMA + "; it is not installed"
