# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmfleet contributors
# Apache License 2.0 (see LICENSE)
"""Build the vLLM test double: a ``vllm`` wheel, a container image, and find a pip wheel.

Standard library only (no setuptools, wheel or build needed)::

    python build.py wheel --version 0.28.0 -o DIR     # DIR/vllm-0.28.0-py3-none-any.whl
    python build.py image --version 0.28.0 --tag local/vllm-double:v0.28.0 [--base IMAGE] [--engine docker]
                          [--env NAME=VALUE ...] [--label NAME=VALUE ...]
    python build.py pip-wheel -o DIR                  # copies a pip wheel found on this machine into DIR
    python build.py ray-wheel [--version 2.49.2] -o DIR        # DIR/ray-2.49.2-py3-none-any.whl (console script ray)
    python build.py router-wheel [--version 0.1.0] -o DIR      # DIR/vllm_router-0.1.0-py3-none-any.whl (vllm-router)
    python build.py image ... --with-ray [--ray-version 2.49.2]  # the image also has the Ray stand-in

The wheel is the package ``vllm`` at that version: the double's sources from ``src/`` (with
``src/_llmfleet_double/common.py``, the code the doubles share, copied in as
``vllm/_double/common.py``; the ``ray`` and ``vllm_router`` wheels get their own copy), the
collection's flag checker (``plugins/module_utils/vllm_flags.py`` and ``errors.py``) and the
flag catalogue of that version from ``data/vllm_cli/``, and a ``vllm`` console script. It is
meant for molecule test hosts only: it is built into the scenario's ephemeral directory and
installed only inside test containers.

``ray-wheel`` and ``router-wheel`` build the Ray stand-in (package ``ray``, console script ``ray``)
and the vllm-router stand-in (package ``vllm_router``, console script ``vllm-router``) the same way.

The image has ``ENTRYPOINT ["vllm", "serve"]`` like ``vllm/vllm-openai``; it is built from a
local base image with Python 3 (default: the Debian 12 test host image), without a registry.
Every command prints one JSON line describing what it made.
"""

from __future__ import annotations

import argparse
import base64
import glob
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(HERE, "src")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
MODULE_UTILS = os.path.join(ROOT, "plugins", "module_utils")
CATALOGS = os.path.join(ROOT, "data", "vllm_cli")
COMMON = os.path.join(SRC, "_llmfleet_double", "common.py")  # shared by the doubles; each wheel gets a copy
FIXED_TIME = (2026, 1, 1, 0, 0, 0)  # reproducible wheels: same input, same bytes


def _catalog_version(version):
    sys.path.insert(0, MODULE_UTILS)
    try:
        import vllm_flags  # pylint: disable=import-outside-toplevel
    finally:
        sys.path.pop(0)
    return vllm_flags.resolve_catalog_version(version, CATALOGS)[0]


def _tree_files(package):
    """(archive name, bytes) of every .py file of ``src/<package>``, sorted."""
    files = []
    for dirpath, dirnames, filenames in os.walk(os.path.join(SRC, package)):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for fn in sorted(filenames):
            if fn.endswith(".py"):
                path = os.path.join(dirpath, fn)
                with open(path, "rb") as fh:
                    files.append((os.path.relpath(path, SRC).replace(os.sep, "/"), fh.read()))
    return files


def _double_files(package, version):
    """``src/<package>``, the shared ``_llmfleet_double/common.py`` as ``<package>/_double/common.py``
    and a ``<package>/_version.py`` of ``version``: (archive name, bytes) each."""
    files = _tree_files(package)
    with open(COMMON, "rb") as fh:
        files.append((package + "/_double/common.py", fh.read()))
    files.append((package + "/_version.py", ('__version__ = "%s"\n' % version).encode()))
    return files


def package_files(version):
    """(archive name, bytes) of the ``vllm`` package at ``version``."""
    files = _double_files("vllm", version)
    for name in ("vllm_flags.py", "errors.py"):
        with open(os.path.join(MODULE_UTILS, name), "rb") as fh:
            files.append(("vllm/_double/" + name, fh.read()))
    cat = _catalog_version(version)
    with open(os.path.join(CATALOGS, cat + ".json"), "rb") as fh:
        files.append(("vllm/_double/catalog/%s.json" % cat, fh.read()))
    return files


def ray_files(version):
    """(archive name, bytes) of the Ray stand-in package ``ray`` at ``version``."""
    return _double_files("ray", version)


def router_files(version):
    """(archive name, bytes) of the vllm-router stand-in package ``vllm_router`` at ``version``."""
    return _double_files("vllm_router", version)


def _record_hash(data):
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def _write_wheel(dist, version, files, scripts, summary, outdir):
    """A py3-none-any wheel of ``files`` with console ``scripts`` ({name: module:function})."""
    files = list(files)
    info = "%s-%s.dist-info" % (dist, version)
    meta = ("Metadata-Version: 2.1\nName: %s\nVersion: %s\nSummary: %s\nLicense: Apache-2.0\n"
            "Requires-Python: >=3.8\n" % (dist.replace("_", "-"), version, summary))
    entry_points = "[console_scripts]\n" + "".join("%s = %s\n" % kv for kv in sorted(scripts.items()))
    top = sorted(set(name.split("/", 1)[0] for name, _data in files))
    files += [
        (info + "/METADATA", meta.encode()),
        (info + "/WHEEL", b"Wheel-Version: 1.0\nGenerator: llmfleet-vllm-double\nRoot-Is-Purelib: true\nTag: py3-none-any\n"),
        (info + "/entry_points.txt", entry_points.encode()),
        (info + "/top_level.txt", "".join(t + "\n" for t in top).encode()),
    ]
    record = "".join("%s,%s,%d\n" % (name, _record_hash(data), len(data)) for name, data in files)
    record += "%s/RECORD,,\n" % info
    files.append((info + "/RECORD", record.encode()))
    os.makedirs(outdir, exist_ok=True)
    path = os.path.join(outdir, "%s-%s-py3-none-any.whl" % (dist, version))
    tmp = path + ".tmp"
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in files:
            zi = zipfile.ZipInfo(name, FIXED_TIME)
            zi.external_attr = 0o644 << 16
            zi.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(zi, data)
    os.replace(tmp, path)
    return path


def build_wheel(version, outdir):
    path = _write_wheel("vllm", version, package_files(version), {"vllm": "vllm._double.cli:main"},
                        "llmfleet.vllm TEST DOUBLE of the vLLM OpenAI server (molecule only; not vLLM)", outdir)
    return {"wheel": path, "version": version, "catalog": _catalog_version(version)}


DEFAULT_RAY_VERSION = "2.49.2"
DEFAULT_ROUTER_VERSION = "0.1.0"


def build_ray_wheel(version, outdir):
    path = _write_wheel("ray", version, ray_files(version), {"ray": "ray._double.cli:main"},
                        "llmfleet.vllm TEST DOUBLE of Ray: a GCS stand-in and ray start/status (molecule only; not Ray)",
                        outdir)
    return {"wheel": path, "version": version}


def build_router_wheel(version, outdir):
    path = _write_wheel("vllm_router", version, router_files(version), {"vllm-router": "vllm_router._double.cli:main"},
                        "llmfleet.vllm TEST DOUBLE of vllm-router (PD disaggregation; molecule only; not vllm-router)",
                        outdir)
    return {"wheel": path, "version": version}


DOCKERFILE = """\
# The vLLM test double as a container image (llmfleet.vllm molecule only; not vLLM).
FROM {base}
COPY site /opt/vllm-double
COPY vllm /usr/local/bin/vllm
{ray}ENV PYTHONPATH=/opt/vllm-double
LABEL io.llmfleet.test-double=vllm io.llmfleet.test-double.version={version}
{extra}ENTRYPOINT ["vllm", "serve"]
CMD []
"""

LAUNCHER = """#!/usr/bin/env python3
import sys
from {package}._double.cli import main
sys.exit(main())
"""

RAY_DOCKERFILE = """COPY ray /usr/local/bin/ray
LABEL io.llmfleet.test-double.ray={ray_version}
"""


def image_context(ctx, version, base, env=(), labels=(), ray_version=None):
    """Write the build context of the image into ``ctx`` (``site/`` is what the image installs)."""
    site = os.path.join(ctx, "site")
    files = package_files(version) + (ray_files(ray_version) if ray_version else [])
    for name, data in files:
        path = os.path.join(site, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as fh:
            fh.write(data)
    for script, package in (("vllm", "vllm"), ("ray", "ray")):
        if package == "ray" and not ray_version:
            continue
        with open(os.path.join(ctx, script), "w") as fh:
            fh.write(LAUNCHER.format(package=package))
        os.chmod(os.path.join(ctx, script), 0o755)
    with open(os.path.join(ctx, "Dockerfile"), "w") as fh:
        extra = ""
        for e in env:
            name, _eq, value = e.partition("=")
            extra += "ENV %s=%s\n" % (name, json.dumps(value))
        for lab in labels:
            name, _eq, value = lab.partition("=")
            extra += "LABEL %s=%s\n" % (name, json.dumps(value))
        ray = RAY_DOCKERFILE.format(ray_version=ray_version) if ray_version else ""
        fh.write(DOCKERFILE.format(base=base, version=version, extra=extra, ray=ray))


def build_image(version, tag, base, engine, env=(), labels=(), ray_version=None):
    ctx = tempfile.mkdtemp(prefix="vllm-double-image-")
    try:
        image_context(ctx, version, base, env, labels, ray_version)
        benv = dict(os.environ, DOCKER_BUILDKIT="0")  # the classic builder never pulls a local base image
        cmd = [engine, "build", "-q", "-t", tag, ctx]
        if engine == "podman":
            cmd[2:2] = ["--pull=never"]
        proc = subprocess.run(cmd, env=benv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, check=False)
        if proc.returncode != 0:
            raise SystemExit("image build failed (%s): %s" % (" ".join(cmd), proc.stdout[-2000:]))
        return {"image": tag, "id": proc.stdout.strip().splitlines()[-1], "version": version, "base": base,
                "ray": ray_version}
    finally:
        shutil.rmtree(ctx, ignore_errors=True)


def _version_tuple(path):
    base = os.path.basename(path).split("-")[1]
    return tuple(int(x) if x.isdigit() else 0 for x in base.split("."))


MIN_PIP = (23, 2)


def find_pip_wheel(outdir, pythons=None):
    """Copy a pip wheel (>= 23.2) into ``outdir``: the newest bundled with ensurepip of a local
    Python or Debian's python3-pip-whl; else ``pip download`` (PyPI)."""
    candidates = []
    pythons = list(pythons or []) + [sys.executable]
    for py in pythons:
        proc = subprocess.run([py, "-c", "import ensurepip, os; print(os.path.dirname(ensurepip.__file__))"],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, check=False)
        if proc.returncode == 0:
            candidates += glob.glob(os.path.join(proc.stdout.strip(), "_bundled", "pip-*.whl"))
    candidates += glob.glob("/usr/share/python-wheels/pip-*.whl")
    # pip before 23.2 breaks on Python 3.12+ (the test hosts run 3.11 and 3.13)
    candidates = [c for c in candidates if _version_tuple(c) >= MIN_PIP]
    os.makedirs(outdir, exist_ok=True)
    if candidates:
        best = max(candidates, key=_version_tuple)
        dest = os.path.join(outdir, os.path.basename(best))
        shutil.copyfile(best, dest)
        return {"pip_wheel": dest, "source": best}
    proc = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "-d", outdir,
                           "pip"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, check=False)
    found = glob.glob(os.path.join(outdir, "pip-*.whl"))
    if proc.returncode != 0 or not found:
        raise SystemExit("no pip wheel found on this machine and pip download failed: %s" % proc.stdout[-1000:])
    return {"pip_wheel": found[0], "source": "pip download"}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    w = sub.add_parser("wheel")
    w.add_argument("--version", required=True)
    w.add_argument("-o", "--outdir", required=True)
    i = sub.add_parser("image")
    i.add_argument("--version", required=True)
    i.add_argument("--tag", required=True)
    i.add_argument("--base", default="local/debian12-systemd:latest")
    i.add_argument("--engine", default="docker", choices=["docker", "podman"])
    i.add_argument("--env", action="append", default=[], help="NAME=VALUE baked into the image (ENV)")
    i.add_argument("--label", action="append", default=[], help="NAME=VALUE image label")
    i.add_argument("--with-ray", action="store_true", help="also install the Ray stand-in (ray, import ray)")
    i.add_argument("--ray-version", default=DEFAULT_RAY_VERSION)
    r = sub.add_parser("ray-wheel")
    r.add_argument("--version", default=DEFAULT_RAY_VERSION)
    r.add_argument("-o", "--outdir", required=True)
    rt = sub.add_parser("router-wheel")
    rt.add_argument("--version", default=DEFAULT_ROUTER_VERSION)
    rt.add_argument("-o", "--outdir", required=True)
    p = sub.add_parser("pip-wheel")
    p.add_argument("-o", "--outdir", required=True)
    p.add_argument("--python", action="append", default=[], help="also look at this interpreter's ensurepip")
    args = ap.parse_args(argv)
    if args.cmd == "wheel":
        out = build_wheel(args.version, args.outdir)
    elif args.cmd == "image":
        out = build_image(args.version, args.tag, args.base, args.engine, args.env, args.label,
                          args.ray_version if args.with_ray else None)
    elif args.cmd == "ray-wheel":
        out = build_ray_wheel(args.version, args.outdir)
    elif args.cmd == "router-wheel":
        out = build_router_wheel(args.version, args.outdir)
    else:
        out = find_pip_wheel(args.outdir, args.python)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
