# -*- coding: utf-8 -*-
"""Molecule scenarios on real systemd container hosts, one pytest test per scenario.

Runs `molecule test -s <scenario>` from the collection root (where galaxy.yml is, so the shared
extensions/molecule/config.yml applies). Needs a docker daemon and the local test images
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


def scenario_images(scenario):
    """The images a scenario's platforms use (tests/images/build.sh builds them all)."""
    with open(os.path.join(SCEN_DIR, scenario, "molecule.yml")) as f:
        config = yaml.safe_load(f) or {}
    images = {p.get("image") for p in config.get("platforms") or [] if isinstance(p, dict) and p.get("image")}
    return sorted(images) or list(IMAGES)


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
