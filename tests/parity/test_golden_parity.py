# -*- coding: utf-8 -*-
"""Golden parity: every in-scope record of ../shared/golden re-resolves exactly.

Runs tools/golden_parity.py (the same tool users run) over each golden file and checks
its closing line: 0 failed, and nothing skipped but Mooncake kv_store_lb records.
"""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

SUMMARY = re.compile(r"^(\d+) passed, (\d+) failed, (\d+) skipped$", re.M)


def golden_files(shared):
    return sorted((shared / "golden").glob("*.jsonl.gz"))


@pytest.fixture(scope="module")
def files(shared_dir):
    found = golden_files(shared_dir)
    if not found:
        pytest.skip("no golden files under %s" % (shared_dir / "golden"))
    return found


def run_tool(repo_root, shared_dir, *args):
    cmd = [sys.executable, str(repo_root / "tools" / "golden_parity.py"), "--recipes", str(shared_dir / "recipes")]
    return subprocess.run(cmd + [str(a) for a in args], capture_output=True, text=True, timeout=600, check=False)


def test_every_golden_record_matches(repo_root, shared_dir, files):
    proc = run_tool(repo_root, shared_dir, *files)
    out = proc.stdout
    match = SUMMARY.search(out)
    assert match, out[-3000:] + proc.stderr[-3000:]
    passed, failed, skipped = (int(g) for g in match.groups())
    assert failed == 0 and proc.returncode == 0, out[-6000:]
    assert passed > 10000
    skipped_line = re.search(r"^skipped \(out of scope\): (.*)$", out, re.M)
    if skipped:
        assert skipped_line and re.fullmatch(r"kv_store_lb=\d+", skipped_line.group(1)), out[-2000:]


def test_tool_reports_mismatches(repo_root, shared_dir, tmp_path):
    """A doctored record must fail, be printed compactly, and exit 1."""
    import gzip
    import json
    src = golden_files(shared_dir)[0]
    with gzip.open(src, "rt") as handle:
        rec = next(json.loads(line) for line in handle if '"single_node"' in line)
    rec["argv"] = rec["argv"][:-1] + ["tampered"]
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(rec) + "\n")
    proc = run_tool(repo_root, shared_dir, bad)
    assert proc.returncode == 1
    assert "0 passed, 1 failed, 0 skipped" in proc.stdout
    assert "FAIL " in proc.stdout and "tampered" in proc.stdout
