# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmfleet contributors
# Apache License 2.0 (see LICENSE)
"""tests/molecule/aptrepo/build_repo.py: the signed stand-in apt repositories of the molecule scenarios."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tarfile
import time

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[3]
TOOL = ROOT / "tests" / "molecule" / "aptrepo" / "build_repo.py"
SPECS = ROOT / "tests" / "molecule" / "aptrepo" / "specs"

SPEC = """\
---
label: unit test
packages:
  - &p
    name: demo-tool
    version: "1.0-1"
    depends: [base-files, "libc6 (>= 2.36)"]
    provides: demo
    description: |
      demo stand-in
      second line
    files:
      - path: /usr/bin/demo-tool
        mode: "0755"
        content: |
          #!/bin/sh
          echo @VERSION@
        substitute: true
      - path: /etc/demo.conf
        content: "a=1\\n"
      - path: /usr/share/keyrings/demo.gpg
        key: binary
    postinst: |
      echo configured
  - <<: *p
    version: "2.0-1"
    architecture: amd64
"""


def need_gpg():
    if shutil.which("gpg") is None:
        if os.environ.get("CI"):
            pytest.fail("gpg is required in CI (apt-get install gpg)")
        pytest.skip("gpg is not installed")


def run(spec, out, *extra, check=True):
    proc = subprocess.run([sys.executable, str(TOOL), str(spec), str(out), "--suite", "unit", "-q"] + list(extra),
                          capture_output=True, text=True, check=False)
    if check:
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout.strip().splitlines()[-1])
    return proc


def parse_paragraphs(text):
    out = []
    for para in text.strip().split("\n\n"):
        fields, key = {}, None
        for line in para.splitlines():
            if line.startswith(" ") and key:
                fields[key] += "\n" + line[1:]
            else:
                key, _sep, value = line.partition(":")
                fields[key] = value.strip()
        out.append(fields)
    return out


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    need_gpg()
    base = tmp_path_factory.mktemp("aptrepo")
    spec = base / "spec.yml"
    spec.write_text(SPEC)
    result = run(spec, base / "out", "--builder", "python", "--tarball", str(base / "out.tar.gz"))
    return base, spec, result


def test_layout_and_summary(built):
    base, _spec, result = built
    out = base / "out"
    assert result["changed"] is True
    for rel in ["InRelease", "Release", "Release.gpg", "Packages", "Packages.gz", "keys/archive-key.asc",
                "keys/archive-keyring.gpg", "dists/unit/InRelease", "dists/unit/Release.gpg",
                "dists/unit/main/binary-amd64/Packages", "dists/unit/main/binary-arm64/Packages.gz",
                "pool/main/demo-tool_1.0-1_all.deb", "pool/main/demo-tool_2.0-1_amd64.deb"]:
        assert (out / rel).is_file(), rel
    info = json.loads((out / "repo.json").read_text())
    assert info["suite"] == "unit" and info["component"] == "main" and info["builder"] == "python"
    assert len(info["fingerprint"]) == 40
    assert (out / "keys/archive-key.asc").read_text().startswith("-----BEGIN PGP PUBLIC KEY BLOCK-----")
    with tarfile.open(base / "out.tar.gz") as tar:
        assert "./dists/unit/InRelease" in tar.getnames()


def test_indexes_match_the_debs(built):
    out = built[0] / "out"
    amd64 = parse_paragraphs((out / "dists/unit/main/binary-amd64/Packages").read_text())
    arm64 = parse_paragraphs(gzip.decompress((out / "dists/unit/main/binary-arm64/Packages.gz").read_bytes()).decode())
    flat = parse_paragraphs((out / "Packages").read_text())
    assert [p["Version"] for p in amd64] == ["1.0-1", "2.0-1"]
    assert [p["Version"] for p in arm64] == ["1.0-1"]          # the amd64 package is not in arm64
    assert len(flat) == 2
    first = amd64[0]
    assert first["Depends"] == "base-files, libc6 (>= 2.36)" and first["Provides"] == "demo"
    assert first["Description"] == "demo stand-in\nsecond line"
    deb = (out / first["Filename"]).read_bytes()
    assert first["SHA256"] == hashlib.sha256(deb).hexdigest() and int(first["Size"]) == len(deb)
    # Release lists every index with its real hash and size
    release = (out / "dists/unit/Release").read_text()
    sha = release.split("SHA256:\n", 1)[1]
    for line in sha.strip().splitlines():
        digest, size, rel = line.split()
        data = (out / "dists/unit" / rel).read_bytes()
        assert hashlib.sha256(data).hexdigest() == digest and int(size) == len(data), rel
    assert "Suite: unit" in release and "Components: main" in release and "Architectures: amd64 arm64" in release


@pytest.mark.parametrize("signed", ["dists/unit/InRelease", "InRelease"])
def test_signatures_verify_with_the_exported_key(built, signed):
    if shutil.which("gpgv") is None:
        pytest.skip("gpgv is not installed")
    out = built[0] / "out"
    proc = subprocess.run(["gpgv", "--keyring", str(out / "keys/archive-keyring.gpg"), str(out / signed)],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    detached = out / signed.replace("InRelease", "Release.gpg")
    proc = subprocess.run(["gpgv", "--keyring", str(out / "keys/archive-keyring.gpg"), str(detached),
                           str(out / signed.replace("InRelease", "Release"))], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr


def test_python_deb_reads_with_dpkg_deb(built):
    if shutil.which("dpkg-deb") is None:
        pytest.skip("dpkg-deb is not installed")
    out = built[0] / "out"
    deb = out / "pool/main/demo-tool_1.0-1_all.deb"
    info = subprocess.run(["dpkg-deb", "--info", str(deb)], capture_output=True, text=True, check=True).stdout
    assert "Package: demo-tool" in info and "postinst" in info and "conffiles" in info
    contents = subprocess.run(["dpkg-deb", "--contents", str(deb)], capture_output=True, text=True, check=True).stdout
    assert "-rwxr-xr-x root/root" in contents and "./usr/bin/demo-tool" in contents
    dest = built[0] / "x"
    subprocess.run(["dpkg-deb", "-x", str(deb), str(dest)], check=True)
    assert (dest / "usr/bin/demo-tool").read_text() == "#!/bin/sh\necho 1.0-1\n"
    key = (dest / "usr/share/keyrings/demo.gpg").read_bytes()
    assert key == (out / "keys/archive-keyring.gpg").read_bytes()   # the repository's own key
    control = built[0] / "ctrl"
    subprocess.run(["dpkg-deb", "-e", str(deb), str(control)], check=True)
    assert (control / "conffiles").read_text() == "/etc/demo.conf\n"    # files under /etc by default
    assert (control / "postinst").read_text().startswith("#!/bin/sh\nset -e\n")


def test_dpkg_deb_builder_gives_the_same_packages(built, tmp_path):
    if shutil.which("dpkg-deb") is None:
        pytest.skip("dpkg-deb is not installed")
    result = run(built[1], tmp_path / "out", "--builder", "dpkg-deb")
    assert result["changed"]
    a = parse_paragraphs((built[0] / "out/Packages").read_text())
    b = parse_paragraphs((tmp_path / "out/Packages").read_text())
    drop = ("Size", "MD5sum", "SHA1", "SHA256")
    assert [{k: v for k, v in p.items() if k not in drop} for p in a] == [{k: v for k, v in p.items() if k not in drop} for p in b]


def test_cache_and_rebuild(built, tmp_path):
    need_gpg()
    spec = tmp_path / "spec.yml"
    spec.write_text(SPEC)
    first = run(spec, tmp_path / "out")
    t0 = time.time()
    again = run(spec, tmp_path / "out")
    assert again["changed"] is False and again["build_hash"] == first["build_hash"]
    assert time.time() - t0 < 5
    spec.write_text(SPEC.replace('"2.0-1"', '"2.1-1"'))
    changed = run(spec, tmp_path / "out")
    assert changed["changed"] is True and changed["build_hash"] != first["build_hash"]
    assert (tmp_path / "out/pool/main/demo-tool_2.1-1_amd64.deb").is_file()
    assert not (tmp_path / "out/pool/main/demo-tool_2.0-1_amd64.deb").exists()
    assert [p.name for p in tmp_path.iterdir() if ".build-" in p.name or ".old-" in p.name] == []


@pytest.mark.parametrize("bad, message", [
    ("packages: []\n", "'packages' must be a non-empty list"),
    ("packages:\n  - {name: Bad_Name, version: '1'}\n", "not a valid Debian package name"),
    ("packages:\n  - {name: ok, version: 1.0}\n", "quote the version"),
    ("packages:\n  - {name: ok, version: '1', depend: [x]}\n", "unknown keys ['depend']"),
    ("packages:\n  - {name: ok, version: '1', files: [{path: /x, mode: 755, content: y}]}\n", "'mode' must be an octal string"),
    ("packages:\n  - {name: ok, version: '1', files: [{path: relative, content: y}]}\n", "absolute file path"),
    ("packages:\n  - {name: ok, version: '1', files: [{path: /x, content: y, key: binary}]}\n", "exactly one of content, src, key"),
])
def test_spec_errors(tmp_path, bad, message):
    spec = tmp_path / "spec.yml"
    spec.write_text(bad)
    proc = run(spec, tmp_path / "out", check=False)
    assert proc.returncode == 2
    assert message in proc.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("name", sorted(p.name for p in SPECS.glob("*.yml")))
def test_shipped_specs_are_valid(name):
    sys.path.insert(0, str(TOOL.parent))
    try:
        import build_repo
    finally:
        sys.path.pop(0)
    _raw, data = build_repo.load_spec(str(SPECS / name))
    meta, pkgs, _extra = build_repo.check_spec(data, str(SPECS))
    assert pkgs and meta["label"]
