# -*- coding: utf-8 -*-
"""Molecule scenarios on real systemd container hosts, one pytest test per scenario.

Runs `molecule test -s <scenario>` from the collection root (where galaxy.yml is, so the shared
extensions/molecule/config.yml applies, and with it the shared create playbook that starts each
platform from config.yml's `driver.systemd_host`). Needs a docker daemon and the local test images
(tests/images/build.sh; `.ci/run` and `make images` build them). `make molecule S=<name>` runs one.
"""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCEN_DIR = os.path.join(ROOT, "extensions", "molecule")
SCENARIOS = sorted(d for d in os.listdir(SCEN_DIR) if os.path.isfile(os.path.join(SCEN_DIR, d, "molecule.yml")))
IMAGES = ("local/debian12-systemd:latest", "local/debian13-systemd:latest")
# what every systemd container host shares (config.yml's driver.systemd_host); a platform only adds to
# the lists and never sets the rest again
SHARED_KEYS = ("command", "stop_signal", "security_opts", "cgroupns_mode", "pre_build_image", "pull", "privileged")


def load(path):
    with open(path) as f:
        return yaml.safe_load(f) or {}


def scenario_images(scenario):
    """The images a scenario's platforms use (tests/images/build.sh builds them all)."""
    config = load(os.path.join(SCEN_DIR, scenario, "molecule.yml"))
    images = {p.get("image") for p in config.get("platforms") or [] if isinstance(p, dict) and p.get("image")}
    return sorted(images) or list(IMAGES)


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_platforms_use_the_shared_systemd_host(scenario):
    """No docker needed: the platform block lives once in config.yml, the scenario names its hosts."""
    shared = load(os.path.join(SCEN_DIR, "config.yml"))
    assert shared["provisioner"]["playbooks"]["create"] == "../create.yml"
    assert os.path.isfile(os.path.join(SCEN_DIR, scenario, shared["provisioner"]["playbooks"]["create"]))
    host = shared["driver"]["systemd_host"]
    assert "SYS_ADMIN" in host["capabilities"] and "seccomp=unconfined" in host["security_opts"]
    platforms = load(os.path.join(SCEN_DIR, scenario, "molecule.yml"))["platforms"]
    assert platforms
    for platform in platforms:
        assert platform.get("name") and platform.get("image", "").startswith("local/debian1"), platform
        assert not set(SHARED_KEYS) & set(platform), platform
        assert not set(host["capabilities"]) & set(platform.get("capabilities", [])), platform
        assert not set(host["volumes"]) & set(platform.get("volumes", [])), platform
        assert not set(host["tmpfs"]) & set(platform.get("tmpfs", [])), platform


def docker_ready(scenario):
    if shutil.which("docker") is None:
        return "no docker CLI"
    proc = subprocess.run(["docker", "image", "inspect"] + scenario_images(scenario), capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        return "docker daemon or test images missing (run `make images`): " + (proc.stderr or proc.stdout).strip()[:200]
    return None


@pytest.mark.molecule
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_molecule_scenario(scenario, tmp_path):
    why = docker_ready(scenario)
    if why:
        if os.environ.get("CI"):
            pytest.fail("molecule needs docker in CI: " + why)
        pytest.skip(why)
    proc = subprocess.run(["molecule", "test", "-s", scenario], cwd=ROOT, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, check=False, timeout=1800)
    log = tmp_path / ("molecule-%s.log" % scenario)
    log.write_text(proc.stdout)
    assert proc.returncode == 0, proc.stdout[-6000:]
    # idempotence ran and found nothing to change
    assert "Idempotence completed successfully" in proc.stdout or "idempotence" in proc.stdout.lower(), proc.stdout[-3000:]
