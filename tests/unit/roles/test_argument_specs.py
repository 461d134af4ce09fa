# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmfleet contributors
# Apache License 2.0 (see LICENSE)
"""Every role's defaults/main.yml and meta/argument_specs.yml agree.

The rules, for each role under roles/ (the options of a role are those of all its entry points):

* every key of defaults/main.yml is a documented option;
* every option documented with a ``default`` is in defaults/main.yml, with that value unless the
  value there is a Jinja template (the spec then documents what it comes to);
* an option of defaults/main.yml whose value is neither null nor a template documents it as its
  ``default`` (null means "derived by the role", e.g. from the per-OS values, and has no default);
* the main entry point exists, and a role with defaults/main.yml has argument specs.
"""

from __future__ import annotations

import pathlib

import pytest
import yaml

ROLES = pathlib.Path(__file__).resolve().parents[3] / "roles"


def _load(path):
    if not path.is_file():
        return None
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def _is_template(value):
    return isinstance(value, str) and ("{{" in value or "{%" in value)


def disagreements(role_dir):
    """The ways ``role_dir``'s defaults/main.yml and meta/argument_specs.yml disagree ([] if none)."""
    role_dir = pathlib.Path(role_dir)
    defaults = _load(role_dir / "defaults" / "main.yml")
    specs = _load(role_dir / "meta" / "argument_specs.yml")
    if specs is None:
        return ["no meta/argument_specs.yml"] if defaults else []
    entry_points = (specs or {}).get("argument_specs") or {}
    problems = []
    if "main" not in entry_points:
        problems.append("no main entry point in meta/argument_specs.yml")
    options = {}
    for entry in entry_points.values():
        options.update((entry or {}).get("options") or {})
    defaults = defaults or {}
    for name in sorted(defaults):
        if name not in options:
            problems.append("%s: in defaults/main.yml, not documented in meta/argument_specs.yml" % name)
    for name in sorted(options):
        spec = options[name] or {}
        value = defaults.get(name)
        if "default" in spec:
            if name not in defaults:
                problems.append("%s: documented default %r, missing from defaults/main.yml" % (name, spec["default"]))
            elif not _is_template(value) and value != spec["default"]:
                problems.append("%s: defaults/main.yml has %r, meta/argument_specs.yml documents %r"
                                % (name, value, spec["default"]))
        elif name in defaults and value is not None and not _is_template(value):
            problems.append("%s: defaults/main.yml has %r, meta/argument_specs.yml documents no default" % (name, value))
    return problems


ALL_ROLES = sorted(path.name for path in ROLES.iterdir() if (path / "tasks").is_dir())


def test_every_role_is_checked():
    assert {"container_engine", "nvidia_driver", "rocm", "intel_xpu", "vllm_serve", "_host_os"} <= set(ALL_ROLES)


@pytest.mark.parametrize("role", ALL_ROLES)
def test_defaults_and_argument_specs_agree(role):
    assert disagreements(ROLES / role) == []


# ---- the checker itself


def _role(tmp_path, defaults, options, entry="main"):
    (tmp_path / "defaults").mkdir()
    (tmp_path / "meta").mkdir()
    (tmp_path / "defaults" / "main.yml").write_text(yaml.safe_dump(defaults), encoding="utf-8")
    specs = {"argument_specs": {entry: {"short_description": "x", "options": options}}}
    (tmp_path / "meta" / "argument_specs.yml").write_text(yaml.safe_dump(specs), encoding="utf-8")
    return tmp_path


def test_agreeing_role(tmp_path):
    role = _role(tmp_path, {"r_a": 1, "r_b": None, "r_c": "{{ r_x }}/y", "r_d": []},
                 {"r_a": {"type": "int", "default": 1}, "r_b": {"type": "str"},
                  "r_c": {"type": "str", "default": "<x>/y"}, "r_d": {"type": "list", "default": []},
                  "r_e": {"type": "str"}})
    assert disagreements(role) == []


def test_undocumented_default(tmp_path):
    role = _role(tmp_path, {"r_a": 1, "r_new": 2}, {"r_a": {"type": "int", "default": 1}})
    assert disagreements(role) == ["r_new: in defaults/main.yml, not documented in meta/argument_specs.yml"]


def test_documented_default_missing_from_defaults(tmp_path):
    role = _role(tmp_path, {}, {"r_a": {"type": "int", "default": 1}})
    assert disagreements(role) == ["r_a: documented default 1, missing from defaults/main.yml"]


def test_different_values(tmp_path):
    role = _role(tmp_path, {"r_a": "580"}, {"r_a": {"type": "str", "default": "570"}})
    assert disagreements(role) == ["r_a: defaults/main.yml has '580', meta/argument_specs.yml documents '570'"]


def test_value_without_documented_default(tmp_path):
    role = _role(tmp_path, {"r_a": ["x"]}, {"r_a": {"type": "list"}})
    assert disagreements(role) == ["r_a: defaults/main.yml has ['x'], meta/argument_specs.yml documents no default"]


def test_no_main_entry_point(tmp_path):
    role = _role(tmp_path, {"r_a": 1}, {"r_a": {"type": "int", "default": 1}}, entry="other")
    assert disagreements(role) == ["no main entry point in meta/argument_specs.yml"]


def test_defaults_without_argument_specs(tmp_path):
    (tmp_path / "defaults").mkdir()
    (tmp_path / "defaults" / "main.yml").write_text("r_a: 1\n", encoding="utf-8")
    assert disagreements(tmp_path) == ["no meta/argument_specs.yml"]
