# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmfleet contributors
# Apache License 2.0 (see LICENSE)
"""Build a small signed apt repository of stand-in packages, offline (test double factory).

    python3 build_repo.py SPEC.yml OUT_DIR --suite NAME [--component main] [--arch amd64 --arch arm64]
                  [--builder auto|dpkg-deb|python] [--tarball FILE] [--force] [--quiet]

SPEC (YAML or JSON) lists packages under their real names (``nvidia-open``,
``nvidia-container-toolkit``, ``amdgpu-dkms``...) with a version, relations, files to install
and maintainer scripts; every package becomes a ``.deb`` (``dpkg-deb --build`` when it is on
PATH, else a pure-Python ar/tar writer), the indexes are written in Python, and the Release
files are signed with a throwaway GnuPG key made for this repository. OUT_DIR then holds:

    pool/<component>/<name>_<version>_<arch>.deb
    dists/<suite>/{Release,InRelease,Release.gpg}          "deb [signed-by=KEY] URI <suite> <component>"
    dists/<suite>/<component>/binary-<arch>/Packages{,.gz}
    Packages{,.gz}, Release, InRelease, Release.gpg        flat layout: "deb [signed-by=KEY] URI /"
    keys/archive-key.asc, keys/archive-keyring.gpg         the public key, armored and binary
    repo.json                                              what was built (suite, fingerprint, packages)

A re-run with the same spec, referenced files, options and tool version finds the hash in
OUT_DIR/repo.json and returns at once. The new tree is built beside OUT_DIR and renamed into
place, so OUT_DIR is never half written. See README.md beside this file for the spec format.
Stand-in packages are test doubles: use them under tests/ and molecule only.
"""

from __future__ import annotations

import argparse
import email.utils
import fcntl
import gzip
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time

TOOL_VERSION = 1
# Fixed member times keep the .debs of an unchanged spec byte-identical (python builder).
EPOCH = 1767225600  # 2026-01-01T00:00:00Z
NAME_RE = re.compile(r"^[a-z0-9][a-z0-9+.-]+$")
VERSION_RE = re.compile(r"^([0-9]+:)?[0-9][A-Za-z0-9.+~:-]*$")
SUITE_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
RELATIONS = ("pre_depends", "depends", "recommends", "suggests", "provides", "conflicts", "breaks", "replaces")
SCRIPTS = ("preinst", "postinst", "prerm", "postrm")
PACKAGE_KEYS = set(RELATIONS + SCRIPTS) | {
    "name", "version", "architecture", "section", "priority", "maintainer", "description",
    "homepage", "essential", "files", "conffiles", "directories",
}
FILE_KEYS = {"path", "mode", "content", "src", "key", "substitute"}
SPEC_KEYS = {"origin", "label", "description", "key_uid", "packages"}
DEFAULT_MAINTAINER = "llmfleet test doubles <test-doubles@llmfleet.invalid>"


class SpecError(Exception):
    pass


def log(args, msg):
    if not args.quiet:
        print("aptrepo: " + msg, file=sys.stderr)


# ----------------------------------------------------------------------------- spec
def load_spec(path):
    with open(path, "rb") as f:
        raw = f.read()
    text = raw.decode("utf-8")
    if path.endswith(".json"):
        data = json.loads(text)
    else:
        try:
            import yaml
        except ImportError:  # JSON is valid YAML 1.2; let plain python read JSON specs
            try:
                data = json.loads(text)
            except ValueError:
                raise SpecError("%s: PyYAML is not installed; install it or write the spec as JSON" % path)
        else:
            data = yaml.safe_load(text)
    return raw, data


def as_list(value, where):
    if value is None:
        return []
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return [v.strip() for v in value]
    raise SpecError("%s: expected a list of strings or a comma-separated string, got %r" % (where, value))


def check_spec(data, spec_dir):
    """Validate and normalise the spec; return (meta, packages, referenced file bytes)."""
    if not isinstance(data, dict):
        raise SpecError("the spec must be a mapping with a 'packages' list")
    unknown = set(data) - SPEC_KEYS
    if unknown:
        raise SpecError("unknown top-level keys %s (known: %s)" % (sorted(unknown), sorted(SPEC_KEYS)))
    pkgs = data.get("packages")
    if not isinstance(pkgs, list) or not pkgs:
        raise SpecError("'packages' must be a non-empty list")
    extra = []
    seen = set()
    out = []
    for i, p in enumerate(pkgs):
        where = "packages[%d]" % i
        if not isinstance(p, dict):
            raise SpecError("%s: expected a mapping" % where)
        unknown = set(p) - PACKAGE_KEYS
        if unknown:
            raise SpecError("%s: unknown keys %s (known: %s)" % (where, sorted(unknown), sorted(PACKAGE_KEYS)))
        name, version = p.get("name"), p.get("version")
        if not isinstance(name, str) or not NAME_RE.match(name):
            raise SpecError("%s: 'name' %r is not a valid Debian package name" % (where, name))
        where = "packages[%d] (%s)" % (i, name)
        if isinstance(version, (int, float)):
            raise SpecError("%s: quote the version (%r is read as a number)" % (where, version))
        if not isinstance(version, str) or not VERSION_RE.match(version):
            raise SpecError("%s: 'version' %r is not a valid Debian version" % (where, version))
        arch = p.get("architecture", "all")
        if not isinstance(arch, str) or not re.match(r"^[a-z0-9-]+$", arch):
            raise SpecError("%s: bad architecture %r" % (where, arch))
        if (name, version, arch) in seen:
            raise SpecError("%s: %s %s (%s) is listed twice" % (where, name, version, arch))
        seen.add((name, version, arch))
        pkg = {
            "name": name, "version": version, "architecture": arch,
            "section": p.get("section", "misc"), "priority": p.get("priority", "optional"),
            "maintainer": p.get("maintainer", DEFAULT_MAINTAINER),
            "description": p.get("description") or "stand-in %s for offline tests" % name,
            "homepage": p.get("homepage"), "essential": bool(p.get("essential", False)),
            "files": [], "directories": [], "scripts": {},
        }
        for rel in RELATIONS:
            pkg[rel] = as_list(p.get(rel), "%s.%s" % (where, rel))
        for script in SCRIPTS:
            body = p.get(script)
            if body is None:
                continue
            if not isinstance(body, str):
                raise SpecError("%s.%s: expected the script text" % (where, script))
            if not body.startswith("#!"):
                body = "#!/bin/sh\nset -e\n" + body
            pkg["scripts"][script] = body
        for j, f in enumerate(p.get("files") or []):
            fwhere = "%s.files[%d]" % (where, j)
            if not isinstance(f, dict):
                raise SpecError("%s: expected a mapping" % fwhere)
            unknown = set(f) - FILE_KEYS
            if unknown:
                raise SpecError("%s: unknown keys %s (known: %s)" % (fwhere, sorted(unknown), sorted(FILE_KEYS)))
            path = f.get("path")
            if not isinstance(path, str) or not path.startswith("/") or ".." in path.split("/") or path.endswith("/"):
                raise SpecError("%s: 'path' must be an absolute file path, got %r" % (fwhere, path))
            sources = [k for k in ("content", "src", "key") if k in f]
            if len(sources) != 1:
                raise SpecError("%s: give exactly one of content, src, key" % fwhere)
            mode = f.get("mode", "0644")
            if isinstance(mode, int) or not re.match(r"^0?[0-7]{3,4}$", str(mode)):
                raise SpecError("%s: 'mode' must be an octal string such as \"0755\", got %r" % (fwhere, mode))
            if not isinstance(f.get("substitute", False), bool) or (f.get("substitute") and "key" in f):
                raise SpecError("%s: 'substitute' is a boolean, for content or src" % fwhere)
            entry = {"path": path, "mode": int(str(mode), 8)}
            if "content" in f:
                if not isinstance(f["content"], str):
                    raise SpecError("%s: 'content' must be text" % fwhere)
                entry["data"] = f["content"].encode("utf-8")
            elif "src" in f:
                src = os.path.join(spec_dir, f["src"])
                if not os.path.isfile(src):
                    raise SpecError("%s: src %s does not exist" % (fwhere, src))
                with open(src, "rb") as fh:
                    entry["data"] = fh.read()
                extra.append(entry["data"])
            else:
                if f["key"] not in ("armored", "binary"):
                    raise SpecError("%s: 'key' must be armored or binary (the repository's public key)" % fwhere)
                entry["key"] = f["key"]
            if f.get("substitute"):
                for token, value in (("@NAME@", name), ("@VERSION@", version),
                                     ("@UPSTREAM_VERSION@", version.split(":")[-1].rsplit("-", 1)[0])):
                    entry["data"] = entry["data"].replace(token.encode(), value.encode())
            pkg["files"].append(entry)
        for d in p.get("directories") or []:
            if not isinstance(d, str) or not d.startswith("/"):
                raise SpecError("%s.directories: absolute paths expected, got %r" % (where, d))
            pkg["directories"].append(d.rstrip("/"))
        conffiles = p.get("conffiles")
        if conffiles is None:
            pkg["conffiles"] = [f["path"] for f in pkg["files"] if f["path"].startswith("/etc/")]
        else:
            pkg["conffiles"] = as_list(conffiles, where + ".conffiles")
        out.append(pkg)
    meta = {
        "origin": str(data.get("origin", "llmfleet-test")),
        "label": str(data.get("label", "llmfleet test doubles")),
        "description": str(data.get("description", "stand-in packages for offline tests")),
        "key_uid": str(data.get("key_uid", "llmfleet throwaway test repository key <aptrepo@llmfleet.invalid>")),
    }
    return meta, out, extra


# ----------------------------------------------------------------------------- .deb
def control_text(pkg, installed_kib):
    fields = [
        ("Package", pkg["name"]), ("Version", pkg["version"]), ("Architecture", pkg["architecture"]),
        ("Maintainer", pkg["maintainer"]), ("Installed-Size", str(installed_kib)),
    ]
    if pkg["essential"]:
        fields.append(("Essential", "yes"))
    for rel in RELATIONS:
        if pkg[rel]:
            fields.append((rel.replace("_", "-").title(), ", ".join(pkg[rel])))
    fields += [("Section", pkg["section"]), ("Priority", pkg["priority"])]
    if pkg["homepage"]:
        fields.append(("Homepage", pkg["homepage"]))
    lines = ["%s: %s" % kv for kv in fields]
    desc = pkg["description"].strip().splitlines()
    lines.append("Description: " + desc[0])
    lines += [" " + (d if d.strip() else ".") for d in desc[1:]]
    return "\n".join(lines) + "\n"


def package_tree(pkg, keys):
    """The files of the package: {path: (mode, bytes)}, directories: sorted list."""
    files = {}
    for f in pkg["files"]:
        data = f["data"] if "data" in f else keys[f["key"]]
        files[f["path"]] = (f["mode"], data)
    dirs = set(pkg["directories"])
    for path in list(files) + list(pkg["directories"]):
        parts = path.strip("/").split("/")
        for n in range(1, len(parts) if path in files else len(parts) + 1):
            dirs.add("/" + "/".join(parts[:n]))
    return files, sorted(dirs)


def installed_size(files, dirs):
    return max(1, (sum(len(data) for _mode, data in files.values()) + 1023) // 1024 + len(dirs))


def control_members(pkg, files, dirs):
    members = {"control": (0o644, control_text(pkg, installed_size(files, dirs)).encode())}
    md5 = "".join("%s  %s\n" % (hashlib.md5(d).hexdigest(), p.lstrip("/")) for p, (_mode, d) in sorted(files.items()))
    if md5:
        members["md5sums"] = (0o644, md5.encode())
    if pkg["conffiles"]:
        members["conffiles"] = (0o644, "".join(c + "\n" for c in pkg["conffiles"]).encode())
    for name, body in pkg["scripts"].items():
        members[name] = (0o755, body.encode())
    return members


def tar_bytes(entries):
    """entries: list of (name, mode, bytes or None for a directory); gzip, root-owned, fixed mtime."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.GNU_FORMAT) as tar:
        for name, mode, data in entries:
            info = tarfile.TarInfo(name)
            info.mode, info.mtime, info.uid, info.gid, info.uname, info.gname = mode, EPOCH, 0, 0, "root", "root"
            if data is None:
                info.type = tarfile.DIRTYPE
                tar.addfile(info)
            else:
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    out = io.BytesIO()
    with gzip.GzipFile(fileobj=out, mode="wb", mtime=EPOCH, compresslevel=9) as gz:
        gz.write(raw.getvalue())
    return out.getvalue()


def ar_member(name, data):
    header = "%-16s%-12d%-6d%-6d%-8s%-10d`\n" % (name, EPOCH, 0, 0, "100644", len(data))
    return header.encode("ascii") + data + (b"\n" if len(data) % 2 else b"")


def build_deb_python(pkg, files, dirs, dest):
    control = control_members(pkg, files, dirs)
    control_tar = tar_bytes([("./", 0o755, None)] + [("./" + n, m, d) for n, (m, d) in sorted(control.items())])
    entries = [("./", 0o755, None)]
    for d in dirs:
        entries.append(("." + d + "/", 0o755, None))
    for path, (mode, data) in sorted(files.items()):
        entries.append(("." + path, mode, data))
    # tar order: a directory before its contents
    entries[1:] = sorted(entries[1:], key=lambda e: e[0].rstrip("/"))
    data_tar = tar_bytes(entries)
    with open(dest, "wb") as f:
        f.write(b"!<arch>\n")
        f.write(ar_member("debian-binary", b"2.0\n"))
        f.write(ar_member("control.tar.gz", control_tar))
        f.write(ar_member("data.tar.gz", data_tar))


def build_deb_dpkg(pkg, files, dirs, dest, workdir):
    root = os.path.join(workdir, "%s_%s_%s" % (pkg["name"], pkg["version"], pkg["architecture"]))
    os.makedirs(os.path.join(root, "DEBIAN"))
    os.chmod(root, 0o755)
    os.chmod(os.path.join(root, "DEBIAN"), 0o755)
    for d in dirs:
        os.makedirs(root + d, exist_ok=True)
        os.chmod(root + d, 0o755)
    for path, (mode, data) in files.items():
        with open(root + path, "wb") as f:
            f.write(data)
        os.chmod(root + path, mode)
    for name, (mode, data) in control_members(pkg, files, dirs).items():
        with open(os.path.join(root, "DEBIAN", name), "wb") as f:
            f.write(data)
        os.chmod(os.path.join(root, "DEBIAN", name), mode)
    env = dict(os.environ, SOURCE_DATE_EPOCH=str(EPOCH))
    proc = subprocess.run(["dpkg-deb", "--root-owner-group", "-Zgzip", "--build", root, dest],
                          capture_output=True, text=True, env=env, check=False)
    if proc.returncode != 0:
        raise RuntimeError("dpkg-deb --build %s failed: %s" % (pkg["name"], (proc.stderr or proc.stdout).strip()))
    shutil.rmtree(root)


# ----------------------------------------------------------------------------- indexes
def digests(data):
    return {"MD5sum": hashlib.md5(data).hexdigest(), "SHA1": hashlib.sha1(data).hexdigest(),
            "SHA256": hashlib.sha256(data).hexdigest()}


def packages_index(entries):
    """entries: list of (control text, filename, deb bytes) -> Packages text."""
    out = []
    for control, filename, deb in entries:
        lines = control.rstrip("\n").splitlines()
        desc_at = next(i for i, line in enumerate(lines) if line.startswith("Description:"))
        d = digests(deb)
        extra = ["Filename: " + filename, "Size: %d" % len(deb)] + ["%s: %s" % (k, d[k]) for k in ("MD5sum", "SHA1", "SHA256")]
        out.append("\n".join(lines[:desc_at] + extra + lines[desc_at:]) + "\n")
    return "\n".join(out)


def release_text(fields, files):
    """files: {relative path: bytes}."""
    lines = ["%s: %s" % kv for kv in fields if kv[1]]
    for title, algo in (("MD5Sum", "md5"), ("SHA1", "sha1"), ("SHA256", "sha256")):
        lines.append(title + ":")
        for rel in sorted(files):
            lines.append(" %s %16d %s" % (hashlib.new(algo, files[rel]).hexdigest(), len(files[rel]), rel))
    return "\n".join(lines) + "\n"


def gzip_bytes(data):
    out = io.BytesIO()
    with gzip.GzipFile(fileobj=out, mode="wb", mtime=EPOCH, compresslevel=9) as gz:
        gz.write(data)
    return out.getvalue()


def write(path, data, mode=0o644):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode("utf-8"))
    os.chmod(path, mode)


# ----------------------------------------------------------------------------- gpg
class Signer:
    """A throwaway key in a private GNUPGHOME, removed (agent included) on close()."""

    def __init__(self, uid):
        if shutil.which("gpg") is None:
            raise RuntimeError("gpg is not installed (apt-get install gpg); it signs the repository")
        self.home = tempfile.mkdtemp(prefix="aptrepo-gpg-")
        os.chmod(self.home, 0o700)
        self.gpg(["--quick-gen-key", uid, "ed25519", "sign", "never"])
        listing = self.gpg(["--with-colons", "--list-keys"]).stdout.decode()
        self.fingerprint = next(line.split(":")[9] for line in listing.splitlines() if line.startswith("fpr:"))

    def gpg(self, argv, **kw):
        cmd = ["gpg", "--homedir", self.home, "--batch", "--yes", "--no-tty", "--quiet",
               "--pinentry-mode", "loopback", "--passphrase", ""] + argv
        proc = subprocess.run(cmd, capture_output=True, check=False, **kw)
        if proc.returncode != 0:
            raise RuntimeError("%s failed: %s" % (" ".join(cmd[:1] + argv[:2]), proc.stderr.decode(errors="replace").strip()))
        return proc

    def sign(self, release_path):
        base = os.path.dirname(release_path)
        common = ["--local-user", self.fingerprint, "--digest-algo", "SHA512"]
        self.gpg(common + ["--clearsign", "-o", os.path.join(base, "InRelease"), release_path])
        self.gpg(common + ["--armor", "--detach-sign", "-o", os.path.join(base, "Release.gpg"), release_path])

    def export(self):
        return {"binary": self.gpg(["--export", self.fingerprint]).stdout,
                "armored": self.gpg(["--armor", "--export", self.fingerprint]).stdout}

    def close(self):
        subprocess.run(["gpgconf", "--homedir", self.home, "--kill", "all"], capture_output=True, check=False)
        shutil.rmtree(self.home, ignore_errors=True)


# ----------------------------------------------------------------------------- build
def build_hash(spec_raw, extra, args):
    h = hashlib.sha256()
    with open(os.path.abspath(__file__), "rb") as f:
        h.update(f.read())
    for part in [str(TOOL_VERSION).encode(), spec_raw] + extra + [
            json.dumps([args.suite, args.component, args.arch]).encode()]:
        h.update(hashlib.sha256(part).digest())
    return h.hexdigest()


def up_to_date(out_dir, wanted):
    try:
        with open(os.path.join(out_dir, "repo.json")) as f:
            info = json.load(f)
    except (OSError, ValueError):
        return False
    return info.get("build_hash") == wanted and all(
        os.path.exists(os.path.join(out_dir, p)) for p in ["InRelease", "keys/archive-keyring.gpg"] + [
            pk["filename"] for pk in info.get("packages", [])])


def build(args, meta, pkgs, digest, staging):
    builder = args.builder
    if builder == "auto":
        builder = "dpkg-deb" if shutil.which("dpkg-deb") else "python"
    signer = Signer(meta["key_uid"])
    try:
        keys = signer.export()
        write(os.path.join(staging, "keys", "archive-keyring.gpg"), keys["binary"])
        write(os.path.join(staging, "keys", "archive-key.asc"), keys["armored"])
        built = []  # (pkg, control text, filename, bytes)
        work = tempfile.mkdtemp(prefix="aptrepo-deb-", dir=staging)
        for pkg in pkgs:
            files, dirs = package_tree(pkg, keys)
            fname = "pool/%s/%s_%s_%s.deb" % (args.component, pkg["name"], pkg["version"].split(":")[-1], pkg["architecture"])
            dest = os.path.join(staging, fname)
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            if builder == "dpkg-deb":
                build_deb_dpkg(pkg, files, dirs, dest, work)
            else:
                build_deb_python(pkg, files, dirs, dest)
            os.chmod(dest, 0o644)
            with open(dest, "rb") as f:
                data = f.read()
            built.append((pkg, control_text(pkg, installed_size(files, dirs)), fname, data))
        shutil.rmtree(work)

        date = email.utils.formatdate(time.time(), usegmt=True)
        common = [("Origin", meta["origin"]), ("Label", meta["label"])]
        # dists/<suite>/<component>/binary-<arch>/
        dist_files = {}
        for arch in args.arch:
            sel = [(c, fn, d) for p, c, fn, d in built if p["architecture"] in ("all", arch)]
            text = packages_index(sel).encode()
            rel = "%s/binary-%s/" % (args.component, arch)
            arch_release = "\n".join(["Archive: " + args.suite, "Component: " + args.component] + [
                "%s: %s" % kv for kv in common] + ["Architecture: " + arch]) + "\n"
            for name, data in (("Packages", text), ("Packages.gz", gzip_bytes(text)), ("Release", arch_release.encode())):
                dist_files[rel + name] = data
        dist_dir = os.path.join(staging, "dists", args.suite)
        for rel, data in dist_files.items():
            write(os.path.join(dist_dir, rel), data)
        release = release_text(common + [
            ("Suite", args.suite), ("Codename", args.suite), ("Date", date),
            ("Architectures", " ".join(args.arch)), ("Components", args.component),
            ("Description", meta["description"])], dist_files)
        write(os.path.join(dist_dir, "Release"), release)
        signer.sign(os.path.join(dist_dir, "Release"))
        # flat layout at the top: every architecture in one Packages file
        flat = packages_index([(c, fn, d) for _pkg, c, fn, d in built]).encode()
        flat_files = {"Packages": flat, "Packages.gz": gzip_bytes(flat)}
        for rel, data in flat_files.items():
            write(os.path.join(staging, rel), data)
        write(os.path.join(staging, "Release"), release_text(common + [
            ("Date", date), ("Architectures", " ".join(args.arch)), ("Description", meta["description"])], flat_files))
        signer.sign(os.path.join(staging, "Release"))
        fingerprint = signer.fingerprint
    finally:
        signer.close()
    info = {
        "build_hash": digest, "tool_version": TOOL_VERSION, "suite": args.suite, "component": args.component,
        "architectures": args.arch, "builder": builder, "fingerprint": fingerprint, "date": date,
        "keys": {"armored": "keys/archive-key.asc", "binary": "keys/archive-keyring.gpg"},
        "sources": {"dists": "deb [signed-by=KEY] URI %s %s" % (args.suite, args.component), "flat": "deb [signed-by=KEY] URI /"},
        "packages": [{"name": p["name"], "version": p["version"], "architecture": p["architecture"], "filename": fn,
                      "sha256": hashlib.sha256(d).hexdigest()} for p, _control, fn, d in built],
    }
    write(os.path.join(staging, "repo.json"), json.dumps(info, indent=2, sort_keys=True) + "\n")
    return info


def write_tarball(out_dir, tarball, digest):
    """OUT_DIR as a .tar.gz, with a TARBALL.build-hash stamp; rewritten only when the stamp differs."""
    stamp = tarball + ".build-hash"
    try:
        with open(stamp) as f:
            if f.read().strip() == digest and os.path.exists(tarball):
                return False
    except OSError:
        pass
    os.makedirs(os.path.dirname(os.path.abspath(tarball)), exist_ok=True)
    tmp = tarball + ".tmp-%d" % os.getpid()
    with tarfile.open(tmp, "w:gz") as tar:
        tar.add(out_dir, arcname=".")
    os.replace(tmp, tarball)
    write(stamp, digest + "\n")
    return True


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0], formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="Spec format and examples: tests/molecule/aptrepo/README.md")
    ap.add_argument("spec", help="YAML or JSON spec of the stand-in packages")
    ap.add_argument("out_dir", help="output directory (replaced as a whole when rebuilt)")
    ap.add_argument("--suite", required=True, help="suite/codename of the dists layout, e.g. bookworm or stable")
    ap.add_argument("--component", default="main", help="component (default: main)")
    ap.add_argument("--arch", action="append", help="architectures of the index (repeatable; default: amd64 arm64)")
    ap.add_argument("--builder", choices=("auto", "dpkg-deb", "python"), default="auto",
                    help="how .debs are made (default auto: dpkg-deb when on PATH, else pure Python)")
    ap.add_argument("--tarball", help="also write the repository as a .tar.gz here (for unarchive into test hosts)")
    ap.add_argument("--force", action="store_true", help="rebuild even when up to date")
    ap.add_argument("--quiet", "-q", action="store_true", help="no progress messages")
    args = ap.parse_args(argv)
    args.arch = args.arch or ["amd64", "arm64"]
    for value, what in [(args.suite, "--suite"), (args.component, "--component")] + [(a, "--arch") for a in args.arch]:
        if not SUITE_RE.match(value):
            ap.error("%s %r: letters, digits, '.', '_' and '-' only" % (what, value))
    return args


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    t0 = time.time()
    try:
        spec_raw, data = load_spec(args.spec)
        meta, pkgs, extra = check_spec(data, os.path.dirname(os.path.abspath(args.spec)))
    except (OSError, ValueError, SpecError) as exc:
        print("aptrepo: ERROR: %s: %s" % (args.spec, exc), file=sys.stderr)
        return 2
    out_dir = os.path.abspath(args.out_dir)
    digest = build_hash(spec_raw, extra, args)
    os.makedirs(os.path.dirname(out_dir), exist_ok=True)
    # one builder per OUT_DIR at a time (parallel molecule runs, several hosts)
    with open(out_dir + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not args.force and up_to_date(out_dir, digest):
            changed = bool(args.tarball) and write_tarball(out_dir, args.tarball, digest)
            log(args, "%s up to date (%s)" % (out_dir, digest[:12]))
            print(json.dumps({"changed": changed, "out_dir": out_dir, "build_hash": digest}))
            return 0
        staging = tempfile.mkdtemp(prefix=".%s.build-" % os.path.basename(out_dir), dir=os.path.dirname(out_dir))
        try:
            info = build(args, meta, pkgs, digest, staging)
            os.chmod(staging, 0o755)
            old = None
            if os.path.exists(out_dir):
                old = out_dir + ".old-%d" % os.getpid()
                os.rename(out_dir, old)
            os.rename(staging, out_dir)
            if old:
                shutil.rmtree(old, ignore_errors=True)
        except (OSError, RuntimeError) as exc:
            shutil.rmtree(staging, ignore_errors=True)
            print("aptrepo: ERROR: %s" % exc, file=sys.stderr)
            return 1
        if args.tarball:
            write_tarball(out_dir, args.tarball, digest)
    log(args, "built %s: %d packages, suite %s/%s, key %s, %s builder, %.1fs" % (
        out_dir, len(pkgs), args.suite, args.component, info["fingerprint"][-16:], info["builder"], time.time() - t0))
    print(json.dumps({"changed": True, "out_dir": out_dir, "build_hash": digest, "fingerprint": info["fingerprint"]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
