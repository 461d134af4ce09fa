# -*- coding: utf-8 -*-
"""``../shared/fixtures/gpu/fake-nvidia-smi`` as an ``nvidia-smi`` for tests, without touching /etc.

fake-nvidia-smi reads its GPUs from the hard-wired ``/etc/fake-gpus.json``. :func:`install_fake_nvidia_smi`
copies the script unchanged next to a JSON config and writes a small wrapper that patches
``builtins.open`` to read that config instead, then runs the copy. Used by tests/unit/plugins/module_utils/test_gpu.py
and tests/integration/test_gpu_facts_local.py (``tests/`` is on sys.path through tests/conftest.py).
"""

from __future__ import annotations

import json
import shutil
import sys

import pytest

WRAPPER = '''#!{python}
"""fake-nvidia-smi with its config read from {config} instead of /etc/fake-gpus.json."""
import builtins
import runpy
import sys

_open = builtins.open


def _redirect(file, *args, **kwargs):
    if file == "/etc/fake-gpus.json":
        file = {config!r}
    return _open(file, *args, **kwargs)


builtins.open = _redirect
sys.argv[0] = {script!r}
runpy.run_path({script!r}, run_name="__main__")
'''


def fake_nvidia_smi_source(shared_dir):
    """The fake-nvidia-smi script in ``shared_dir``; skips the test when it is absent."""
    path = shared_dir / "fixtures" / "gpu" / "fake-nvidia-smi"
    if not path.is_file():
        pytest.skip("%s is absent" % path)
    return path


def install_fake_nvidia_smi(fake_source, tmp_path, config, wrapper_dir=None):
    """``tmp_path/fake-nvidia-smi.py`` (the unchanged copy), ``tmp_path/fake-gpus.json`` (``config``)
    and the executable wrapper ``<wrapper_dir or tmp_path>/nvidia-smi``, whose path is returned."""
    script = tmp_path / "fake-nvidia-smi.py"
    shutil.copyfile(str(fake_source), str(script))
    cfg = tmp_path / "fake-gpus.json"
    cfg.write_text(json.dumps(config))
    wrapper_dir = wrapper_dir or tmp_path
    wrapper_dir.mkdir(exist_ok=True)
    wrapper = wrapper_dir / "nvidia-smi"
    wrapper.write_text(WRAPPER.format(python=sys.executable, config=str(cfg), script=str(script)))
    wrapper.chmod(0o755)
    return str(wrapper)
