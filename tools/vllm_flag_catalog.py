# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmfleet contributors
# Apache License 2.0 (see LICENSE)
"""Build the ``vllm serve`` flag catalogues shipped in ``data/vllm_cli/<version>.json``.

Sub-commands
------------
``from-listing``
    Build a catalogue from the plain-text listings of one vLLM version
    (``flags-X.txt``, ``argparse-types-X.tsv``, ``json-flags-X.txt`` and
    ``parsers-by-version.txt``).  This is how the shipped catalogues are made.

``from-wheel``
    Build a catalogue straight from a vLLM wheel, *without installing vLLM*:
    the wheel's Python sources are extracted to a temporary directory and a
    child interpreter imports vLLM's own parser construction
    (``make_arg_parser`` -> ``FrontendArgs.add_cli_args`` ->
    ``AsyncEngineArgs.add_cli_args``) with every third-party dependency
    (torch, transformers, numpy, ...) replaced by import-time stubs.  The real
    argparse parser is then walked.  Only ``pydantic`` (vLLM's config classes
    are pydantic dataclasses) and ``packaging`` must be importable by the
    interpreter that runs the child (``--python``, default: this one).

``diff``
    Compare two catalogues flag by flag (e.g. one made from a wheel against
    the shipped one made from the listing) and print the differences.

The catalogue format is described in ``data/vllm_cli/README.md`` and in
``plugins/module_utils/vllm_flags.py``.
"""

from __future__ import absolute_import, division, print_function

import argparse
import ast
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile

FORMAT = "llmfleet.vllm/vllm-flag-catalog"
FORMAT_VERSION = 1

# argparse action class name -> catalogue action kind
ACTION_KINDS = {
    "_StoreAction": "store",
    "_StoreTrueAction": "store_true",
    "_StoreFalseAction": "store_false",
    "_StoreConstAction": "store_const",
    "_AppendAction": "append",
    "_AppendConstAction": "append_const",
    "_ExtendAction": "extend",
    "_CountAction": "count",
    "_HelpAction": "help",
    "_VersionAction": "version",
    "BooleanOptionalAction": "boolean_optional",
    # vLLM >= 0.33: BooleanOptionalAction re-registered as EnableDisableAction
    # (adds --disable-X for every --enable-X and vice versa).
    "EnableDisableAction": "boolean_optional",
}
NO_VALUE_KINDS = frozenset(
    ["store_true", "store_false", "store_const", "append_const", "count", "help", "version", "boolean_optional"]
)

# ---------------------------------------------------------------------------
# Facts the plain-text listings do not carry.  They were read from the vLLM
# 0.17.0, 0.28.0 and 0.33.0 wheels with ``from-wheel`` and are only used by
# ``from-listing``; ``from-wheel`` reads them from the parser itself.
# ---------------------------------------------------------------------------

# Short option aliases: short -> (long option, first version that has it).
# An alias is added when its long option is in the listing and the listing's
# version is >= that first version.
LISTING_SHORT_OPTIONS = {
    "-h": ("--help", "0.0.0"),
    "-asc": ("--api-server-count", "0.0.0"),
    "-q": ("--quantization", "0.0.0"),
    "-pp": ("--pipeline-parallel-size", "0.0.0"),
    "-n": ("--nnodes", "0.0.0"),
    "-r": ("--node-rank", "0.0.0"),
    "-tp": ("--tensor-parallel-size", "0.0.0"),
    "-dcp": ("--decode-context-parallel-size", "0.0.0"),
    "-pcp": ("--prefill-context-parallel-size", "0.0.0"),
    "-dp": ("--data-parallel-size", "0.0.0"),
    "-dpn": ("--data-parallel-rank", "0.0.0"),
    "-dpr": ("--data-parallel-start-rank", "0.0.0"),
    "-dpl": ("--data-parallel-size-local", "0.0.0"),
    "-dpa": ("--data-parallel-address", "0.0.0"),
    "-dpp": ("--data-parallel-rpc-port", "0.0.0"),
    "-dpb": ("--data-parallel-backend", "0.0.0"),
    "-dph": ("--data-parallel-hybrid-lb", "0.0.0"),
    "-dpe": ("--data-parallel-external-lb", "0.0.0"),
    "-dpm": ("--data-parallel-multi-port-external-lb", "0.0.0"),
    "-ep": ("--enable-expert-parallel", "0.0.0"),
    "-sc": ("--speculative-config", "0.28.0"),
    "-dc": ("--diffusion-config", "0.0.0"),
    "-cc": ("--compilation-config", "0.0.0"),
    "-ac": ("--attention-config", "0.0.0"),
}

# nargs of the options that take several values (argparse ``nargs``).
# Every other value-taking option takes exactly one value.
LISTING_NARGS = {}  # filled in below (kept apart so the table stays readable)

# Option strings the listing gives without a row of their own, mapped to the
# row (the alphabetically first option string of the same argparse action).
LISTING_EXTRA_ALIASES = {
    "--gpu-memory-utilization": "--device-memory-utilization",  # 0.33: one action, dest gpu_memory_utilization
}
# Canonical spelling for such a group (the spelling matching the argparse dest).
LISTING_CANONICAL = {
    "--device-memory-utilization": "--gpu-memory-utilization",
}

# Options whose argparse choices depend on the platform vLLM detects at start
# (the listings and ``from-wheel`` both see no accelerator).  The extra values
# are accepted by the checker as well.
PLATFORM_CHOICES = {
    # choices = ["auto", "cpu"] + [current_platform.device_type]
    "--mm-processor-device": ["cuda", "tpu", "xpu"],
}

# Options validated by vLLM at start-up (not by argparse) against the built-in
# parser registries; see data/vllm_cli/README.md for why the collection checks them.
RUNTIME_NAME_OPTIONS = {
    "--tool-call-parser": {"registry": "ToolParserManager", "plugin_option": "--tool-parser-plugin"},
    "--reasoning-parser": {"registry": "ReasoningParserManager", "plugin_option": "--reasoning-parser-plugin"},
}

# FlexibleArgumentParser behaviour (vllm/utils/argparse_utils.py), identical in
# 0.17, 0.28 and 0.33; from-wheel probes it on the real parser.
DEFAULT_PARSER_FEATURES = {
    "underscore_dash_equivalent": True,  # --tensor_parallel_size == --tensor-parallel-size
    "dotted_json_keys": True,  # --compilation-config.mode 3 -> --compilation-config '{"mode": 3}'
    "optimization_level_shorthand": "--optimization-level",  # -O3, -O=3, -O 3
    "allow_abbrev": True,  # argparse default: unique prefixes of long options are accepted
    "model_option_moves_to_positional": True,  # vllm serve --model X -> vllm serve X
    "positionals": ["model_tag"],  # exactly one optional positional: the model
}


def _nargs_table():
    plus = [
        "--allowed-media-domains",
        "--api-key",
        "--collect-detailed-traces",
        "--cpu-offload-params",
        "--cudagraph-capture-sizes",
        "--ignore-patterns",
        "--kv-cache-dtype-skip-layers",
        "--logits-processors",
        "--lora-modules",
        "--lora-target-modules",
        "--numa-bind-cpus",
        "--numa-bind-nodes",
        "--offload-params",
        "--served-model-name",
        "--sleep-preserve-parameter-names",
    ]
    table = dict((f, "+") for f in plus)
    table["--hf-token"] = "?"  # bool | str | None -> nargs='?', const=True
    return table


LISTING_NARGS.update(_nargs_table())


# ---------------------------------------------------------------------------
# helpers shared by both builders
# ---------------------------------------------------------------------------


def version_key(v):
    parts = []
    for p in re.split(r"[.+-]", str(v)):
        m = re.match(r"^(\d+)(.*)$", p)
        if m:
            parts.append((int(m.group(1)), m.group(2)))
        else:
            parts.append((-1, p))
    return tuple(parts)


_OPTIONAL_RE = re.compile(r"^optional_type\.<locals>\._optional_type\((.*)\)$")


def semantic_type(argparse_type):
    """Map the textual description of an argparse ``type=`` callable to a checker type.

    Returns ``(type, optional)``.  ``optional`` is True when vLLM wraps the type in
    ``optional_type`` (the strings ``""`` and ``"None"`` then mean null).
    Types: ``str``, ``int``, ``float``, ``human_int`` (1k, 2M, 25.6k),
    ``human_int_or_auto`` (also -1/auto), ``json`` (json.loads), ``json_object``
    (a JSON object validated against a config dataclass), ``json_or_str`` (JSON
    when it looks like ``{...}``, else a plain string), ``opaque`` (a callable
    the checker does not emulate).
    """
    if argparse_type in (None, "", "None"):
        return "str", False
    optional = False
    desc = argparse_type
    while True:
        m = _OPTIONAL_RE.match(desc)
        if not m:
            break
        optional = True
        desc = m.group(1)
    simple = {
        "str": "str",
        "int": "int",
        "float": "float",
        "human_readable_int": "human_int",
        "human_readable_int_or_auto": "human_int_or_auto",
        "loads": "json",
        "parse_type.<locals>._parse_type(loads)": "json",
        "union_dict_and_str": "json_or_str",
        "parse_reasoning_parser": "str",
    }
    if desc in simple:
        return simple[desc], optional
    if desc.endswith("parse_dataclass") or desc.endswith("parse_dataclass)"):
        return "json_object", optional
    return "opaque", optional


def _entry(option_strings, dest=None):
    return {
        "dest": dest,
        "option_strings": list(option_strings),
        "negative_option_strings": [],
        "action": None,
        "argparse_action": None,
        "takes_value": True,
        "nargs": None,
        "type": "str",
        "optional": False,
        "argparse_type": None,
        "choices": None,
        "choices_normalize": None,
        "platform_choices": None,
        "json": None,
        "runtime_choices": None,
    }


def _dest_from_option(opt):
    return opt.lstrip("-").replace("-", "_")


def _finish_catalog(version, flags, source, parser_features=None, warnings=None):
    """Sort and wrap the flag entries into the catalogue document."""
    out_flags = {}
    for canon in sorted(flags):
        e = flags[canon]
        e["option_strings"] = sorted(set(e["option_strings"]), key=lambda s: (not s.startswith("--"), s))
        e["negative_option_strings"] = sorted(set(e["negative_option_strings"]))
        out_flags[canon] = e
    doc = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "vllm_version": version,
        "generated_by": source.get("generated_by"),
        "source": source,
        "parser": dict(parser_features or DEFAULT_PARSER_FEATURES),
        "flag_count": len(out_flags),
        "option_string_count": sum(len(e["option_strings"]) for e in out_flags.values()),
        "flags": out_flags,
    }
    if warnings:
        doc["warnings"] = list(warnings)
    return doc


def _negative_forms(option_strings, kind, action_class):
    """The option strings of a boolean action that set it to False."""
    if kind != "boolean_optional":
        return []
    neg = [o for o in option_strings if o.startswith("--no-")]
    if action_class == "EnableDisableAction":
        # --disable-X is the negative of field enable_X and the other way round.
        pos = [o for o in option_strings if not o.startswith("--no-")]
        fields = [o for o in pos if ("--no-" + o[2:]) in option_strings]
        for f in fields:
            for a, b in (("--enable-", "--disable-"), ("--disable-", "--enable-")):
                if f.startswith(a):
                    inv = b + f[len(a):]
                    if inv in option_strings:
                        neg.append(inv)
    return neg


def _apply_runtime_names(flags, parsers, version, null_values_by_flag=None):
    for opt, info in RUNTIME_NAME_OPTIONS.items():
        if opt not in flags:
            continue
        names = parsers.get(opt)
        if not names:
            continue
        nulls = (null_values_by_flag or {}).get(opt) or []
        flags[opt]["runtime_choices"] = {
            "values": sorted(set(names)),
            "registry": info["registry"],
            "plugin_option": info["plugin_option"] if info["plugin_option"] in flags else None,
            "null_values": sorted(set(nulls)),
            "enforced_by": "vLLM start-up (not argparse): an unknown name stops the server",
        }


# ---------------------------------------------------------------------------
# from-listing
# ---------------------------------------------------------------------------


def _tab_rows(path):
    """The tab-separated fields of every non-blank line of ``path``."""
    with open(path) as fh:
        return [line.split("\t") for line in (raw.rstrip("\n") for raw in fh) if line.strip()]


def read_listing_parsers(path, version):
    out = {}
    for parts in _tab_rows(path):
        if parts[0] != version:
            continue
        names = [n for n in parts[3].split(",") if n] if len(parts) > 3 else []
        if len(parts) > 2 and parts[2].isdigit() and int(parts[2]) != len(names):
            raise ValueError("%s: %s %s: count %s != %d names" % (path, version, parts[1], parts[2], len(names)))
        out[parts[1]] = names
    return out


def build_from_listing(version, flags_path, types_path, json_path, parsers_path):
    warnings = []
    all_flags = []
    with open(flags_path) as fh:
        for line in fh:
            s = line.strip()
            if s:
                all_flags.append(s)
    flagset = set(all_flags)
    if len(flagset) != len(all_flags):
        raise ValueError("%s: duplicate flags" % flags_path)

    rows = [(parts + [""] * 4)[:4] for parts in _tab_rows(types_path)]

    json_info = {}
    for parts in _tab_rows(json_path):
        json_info[parts[0]] = {"kind": parts[1], "config": parts[2] if len(parts) > 2 else None}

    parsers = read_listing_parsers(parsers_path, version)

    claimed = {}
    flags = {}
    for key, action_class, type_desc, choices in rows:
        if key not in flagset:
            raise ValueError("%s: %s is not in %s" % (types_path, key, flags_path))
        kind = ACTION_KINDS.get(action_class, "custom")
        group = [key]
        if kind == "boolean_optional":
            base = key[2:]
            if key.startswith("--no-") and ("--" + key[5:]) in flagset:
                base = key[5:]
            bases = [base]
            if action_class == "EnableDisableAction":
                for a, b in (("enable-", "disable-"), ("disable-", "enable-")):
                    if base.startswith(a):
                        bases.append(b + base[len(a):])
            for b in bases:
                for cand in ("--" + b, "--no-" + b):
                    if cand in flagset and cand not in group:
                        group.append(cand)
        for alias, row in LISTING_EXTRA_ALIASES.items():
            if row == key and alias in flagset:
                group.append(alias)
        for g in group:
            if g in claimed:
                raise ValueError("%s claimed by %s and %s" % (g, claimed[g], key))
            claimed[g] = key
        # canonical spelling: the form whose --no- twin exists (the dataclass
        # field) for booleans, else the row key (or the documented dest form)
        canon = LISTING_CANONICAL.get(key, key)
        if canon not in group:
            canon = key
        if kind == "boolean_optional":
            fields = [g for g in group if not g.startswith("--no-") and ("--no-" + g[2:]) in group]
            if len(fields) == 1:
                canon = fields[0]
            elif key.startswith("--no-") and ("--" + key[5:]) in group:
                canon = "--" + key[5:]
        e = _entry(group, _dest_from_option(canon))
        e["action"] = kind
        e["argparse_action"] = action_class
        e["negative_option_strings"] = _negative_forms(group, kind, action_class)
        e["takes_value"] = kind not in NO_VALUE_KINDS
        if e["takes_value"]:
            e["nargs"] = LISTING_NARGS.get(canon)
            e["argparse_type"] = type_desc if type_desc != "None" else None
            e["type"], e["optional"] = semantic_type(type_desc)
            if choices:
                values = choices.split(",")
                if len(set(values)) != len(values):
                    # a choice itself contains a comma (e.g. "model,worker"): the
                    # listing joined them with commas, so keep the atoms and let
                    # the checker accept comma-joined combinations of them.
                    e["choices"] = sorted(set(values))
                    e["choices_normalize"] = "comma_combinations"
                    warnings.append("%s: choices contain commas; kept the atoms" % canon)
                else:
                    e["choices"] = values
                if "<lambda>" in (type_desc or "") and e["choices_normalize"] is None:
                    # vLLM's only choice-checked lambdas are s.lower().replace("-", "_")
                    e["choices_normalize"] = "lower_snake"
                    e["type"] = "str"
            if canon in PLATFORM_CHOICES:
                e["platform_choices"] = list(PLATFORM_CHOICES[canon])
        else:
            e["type"] = None
        if key in json_info:
            e["json"] = {"kind": json_info[key]["kind"], "config": json_info[key]["config"], "fields": None}
        flags[canon] = e

    # short aliases the listing does not carry
    for short, (long_opt, since) in sorted(LISTING_SHORT_OPTIONS.items()):
        if version_key(version) < version_key(since):
            continue
        owner = claimed.get(long_opt)
        if owner is None:
            continue
        canon = [c for c, e in flags.items() if long_opt in e["option_strings"]][0]
        flags[canon]["option_strings"].append(short)

    unclaimed = [f for f in all_flags if f not in claimed]
    for f in unclaimed:
        warnings.append(
            "%s has no row in %s; recorded with an unknown action that takes an optional value" % (f, types_path)
        )
        e = _entry([f], _dest_from_option(f))
        e["action"] = "unknown"
        e["nargs"] = "?"
        e["type"] = "opaque"
        flags[f] = e

    for j in json_info:
        if j not in claimed:
            warnings.append("JSON flag %s not in the flag listing" % j)

    _apply_runtime_names(
        flags,
        parsers,
        version,
        {
            o: ["none"]
            for o in RUNTIME_NAME_OPTIONS
            if o in flags and flags[o].get("argparse_type") == "parse_reasoning_parser"
        },
    )
    source = {
        "generated_by": "tools/vllm_flag_catalog.py from-listing",
        "kind": "listing",
        "files": [os.path.basename(p) for p in (flags_path, types_path, json_path, parsers_path)],
        "notes": [
            "short aliases and nargs are not in the listing; they come from "
            "LISTING_SHORT_OPTIONS / LISTING_NARGS in the tool (read from the wheels)",
        ],
    }
    return _finish_catalog(version, flags, source, warnings=warnings)


# ---------------------------------------------------------------------------
# from-wheel
# ---------------------------------------------------------------------------

# Modules whose make_arg_parser builds the ``vllm serve`` parser, newest first.
CLI_ARGS_CANDIDATES = (
    "vllm.entrypoints.common.cli_args",  # 0.33
    "vllm.entrypoints.openai.cli_args",  # 0.17, 0.28 (and much older)
)

# Third-party modules served by a compatible stdlib module in the child: vLLM
# uses ``import regex as re`` in FlexibleArgumentParser's pre-processing.
SUBSTITUTES = {"regex": "re"}

# Third-party packages the child imports for real when they are installed.
REAL_PACKAGES = ("pydantic", "pydantic_core", "typing_extensions", "annotated_types", "typing_inspection", "packaging")


def extract_wheel(wheel, dest):
    """Extract the vLLM Python sources and the dist-info of a wheel into ``dest``.

    Returns the version from the wheel's METADATA (or file name).
    """
    version = None
    with zipfile.ZipFile(wheel) as zf:
        for info in zf.infolist():
            name = info.filename
            if name.endswith("/"):
                continue
            top = name.split("/", 1)[0]
            keep = (top == "vllm" and name.endswith((".py", ".json", ".yaml", ".jinja", ".txt"))) or (
                top.endswith(".dist-info") and name.rsplit("/", 1)[-1] in ("METADATA", "entry_points.txt")
            )
            if not keep:
                continue
            target = os.path.normpath(os.path.join(dest, name))
            if not target.startswith(os.path.normpath(dest) + os.sep):
                raise ValueError("unsafe path in wheel: %s" % name)
            d = os.path.dirname(target)
            if not os.path.isdir(d):
                os.makedirs(d)
            with zf.open(info) as src, open(target, "wb") as out:
                shutil.copyfileobj(src, out)
            if top.endswith(".dist-info") and name.endswith("/METADATA"):
                with open(target) as fh:
                    for line in fh:
                        if line.startswith("Version:"):
                            version = line.split(":", 1)[1].strip()
                            break
    if version is None:
        m = re.match(r"^vllm-([^-]+)-", os.path.basename(wheel))
        if m:
            version = m.group(1)
    if not os.path.isdir(os.path.join(dest, "vllm")):
        raise ValueError("%s has no vllm/ package" % wheel)
    return version


def find_cli_args_module(root):
    """The module defining ``make_arg_parser`` for ``vllm serve`` (static look-up)."""
    serve = os.path.join(root, "vllm", "entrypoints", "cli", "serve.py")
    if os.path.isfile(serve):
        with open(serve) as fh:
            tree = ast.parse(fh.read())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                if any(a.name == "make_arg_parser" for a in node.names):
                    return node.module
    for cand in CLI_ARGS_CANDIDATES:
        if os.path.isfile(os.path.join(root, *cand.split(".")) + ".py"):
            return cand
    raise ValueError("cannot find make_arg_parser in %s" % root)


def static_parser_names(root):
    """Parser names registered in the source, read with ``ast`` (fallback).

    Looks at ``*_TO_REGISTER = {name: ...}`` dict literals and at
    ``register_module("name")`` / ``register_lazy_module("name", ...)`` calls in
    ``vllm/tool_parsers`` (or the older ``vllm/entrypoints/openai/tool_parsers``)
    and ``vllm/reasoning``.
    """
    out = {}
    places = {
        "--tool-call-parser": ["vllm/tool_parsers", "vllm/entrypoints/openai/tool_parsers"],
        "--reasoning-parser": ["vllm/reasoning"],
    }
    for opt, dirs in places.items():
        names = set()
        for d in dirs:
            full = os.path.join(root, d)
            if not os.path.isdir(full):
                continue
            for fn in sorted(os.listdir(full)):
                if not fn.endswith(".py"):
                    continue
                with open(os.path.join(full, fn)) as fh:
                    try:
                        tree = ast.parse(fh.read())
                    except SyntaxError:
                        continue
                for node in ast.walk(tree):
                    if isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict):
                        tname = getattr(node.targets[0], "id", "")
                        if tname.endswith("_TO_REGISTER"):
                            for k in node.value.keys:
                                if isinstance(k, ast.Constant) and isinstance(k.value, str):
                                    names.add(k.value)
                    if isinstance(node, ast.Call):
                        fname = getattr(node.func, "attr", None) or getattr(node.func, "id", None)
                        if fname not in ("register_module", "register_lazy_module"):
                            continue
                        if fn == "__init__.py" and fname == "register_lazy_module" and not node.args:
                            continue
                        cand = node.args[0] if node.args else None
                        for kw in node.keywords:
                            if kw.arg in ("name", "names"):
                                cand = kw.value
                        if isinstance(cand, ast.Constant) and isinstance(cand.value, str):
                            names.add(cand.value)
                        elif isinstance(cand, (ast.List, ast.Tuple)):
                            for elt in cand.elts:
                                if isinstance(elt, ast.Constant) and isinstance(elt.value, str):
                                    names.add(elt.value)
        if names:
            out[opt] = sorted(names)
    return out


def dump_parser_in_child(root, python=None, module=None, timeout=600):
    """Run ``_dump-parser`` in a child interpreter and return its JSON document."""
    cmd = [python or sys.executable, os.path.abspath(__file__), "_dump-parser", root]
    if module:
        cmd += ["--module", module]
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    env["VLLM_LOGGING_LEVEL"] = "ERROR"
    env["VLLM_CONFIGURE_LOGGING"] = "0"
    env["PYTHONWARNINGS"] = "ignore"
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, timeout=timeout, check=False)
    if proc.returncode != 0:
        raise RuntimeError(
            "building the parser from %s failed (exit %d):\n%s"
            % (root, proc.returncode, proc.stderr.decode("utf-8", "replace")[-6000:])
        )
    out = proc.stdout.decode("utf-8")
    start = out.index("\n@@CATALOG@@\n") + len("\n@@CATALOG@@\n")
    return json.loads(out[start:])


def catalog_from_dump(dump, version):
    """Turn the raw parser dump of ``_dump-parser`` into a catalogue."""
    flags = {}
    warnings = list(dump.get("warnings") or [])
    for a in dump["actions"]:
        opts = a["option_strings"]
        if not opts:
            continue  # positional
        cls = a["action_class"]
        kind = ACTION_KINDS.get(cls, "custom")
        canon = None
        if a.get("dest"):
            d = "--" + a["dest"].replace("_", "-")
            if d in opts:
                canon = d
        if canon is None:
            longs = [o for o in a.get("declared_option_strings") or opts if o.startswith("--")]
            canon = longs[0] if longs else opts[0]
        e = _entry(opts, a.get("dest"))
        e["action"] = kind
        e["argparse_action"] = cls
        e["negative_option_strings"] = _negative_forms(opts, kind, cls)
        if kind == "custom":
            e["takes_value"] = a.get("nargs") != 0
        else:
            e["takes_value"] = kind not in NO_VALUE_KINDS
        if e["takes_value"]:
            n = a.get("nargs")
            e["nargs"] = n if n not in (None, 1) else None
            if n == 1:
                e["nargs"] = 1
            e["argparse_type"] = a.get("type")
            e["type"], e["optional"] = semantic_type(a.get("type"))
            if a.get("type_probe") == "lower_snake":
                e["type"] = "str"
                if a.get("choices") is not None:
                    e["choices_normalize"] = "lower_snake"
            if a.get("choices") is not None:
                e["choices"] = list(a["choices"])
            if canon in PLATFORM_CHOICES:
                e["platform_choices"] = list(PLATFORM_CHOICES[canon])
        else:
            e["type"] = None
        if a.get("json_kind"):
            e["json"] = {"kind": a["json_kind"], "config": a.get("json_config"), "fields": a.get("json_fields")}
            if a.get("json_fields_strict") is not None:
                e["json"]["fields_strict"] = a["json_fields_strict"]
        if canon in flags:
            warnings.append("two actions share the spelling %s" % canon)
            canon = canon + "#2"
        flags[canon] = e
    nulls = dict((o, v) for o, v in (dump.get("parser_null_values") or {}).items() if v)
    _apply_runtime_names(flags, dump.get("parsers") or {}, version, nulls)
    features = dict(DEFAULT_PARSER_FEATURES)
    features.update(dump.get("parser_features") or {})
    source = {
        "generated_by": "tools/vllm_flag_catalog.py from-wheel",
        "kind": "wheel",
        "files": [dump.get("wheel")] if dump.get("wheel") else [],
        "cli_args_module": dump.get("module"),
        "stubbed_vllm_modules": dump.get("stubbed_vllm_modules") or [],
        "parsers_from": dump.get("parsers_from"),
        "platform": dump.get("platform"),
    }
    return _finish_catalog(version, flags, source, parser_features=features, warnings=warnings)


def build_from_wheel(wheel, python=None, keep=None):
    tmp = keep or tempfile.mkdtemp(prefix="vllm-wheel-")
    try:
        version = extract_wheel(wheel, tmp)
        module = find_cli_args_module(tmp)
        dump = dump_parser_in_child(tmp, python=python, module=module)
        if not dump.get("parsers"):
            dump["parsers"] = static_parser_names(tmp)
            dump["parsers_from"] = "ast"
        dump["wheel"] = os.path.basename(wheel)
        return catalog_from_dump(dump, version)
    finally:
        if keep is None:
            shutil.rmtree(tmp, ignore_errors=True)


# ---------------------------------------------------------------------------
# _dump-parser: runs in the child interpreter, with the extracted wheel first
# on sys.path.  Everything vLLM imports from outside itself is stubbed, except
# the standard library and REAL_PACKAGES.
# ---------------------------------------------------------------------------


def _describe_callable(t, depth=0):
    """Describe an argparse ``type=`` callable like the listings do.

    ``optional_type(str)`` -> ``optional_type.<locals>._optional_type(str)``.
    """
    if t is None:
        return None
    name = getattr(t, "__qualname__", None) or getattr(t, "__name__", None) or type(t).__name__
    closure = getattr(t, "__closure__", None)
    if closure and depth < 5:
        inner = []
        for cell in closure:
            try:
                c = cell.cell_contents
            except ValueError:
                continue
            if callable(c) and not isinstance(c, type(sys)):
                inner.append(_describe_callable(c, depth + 1))
        if inner:
            name += "(" + ",".join(inner) + ")"
    return name


def _stdlib_names():
    names = set(getattr(sys, "stdlib_module_names", ()))
    if names:
        return names
    # Python < 3.10: the builtin modules plus what lives in the stdlib directory
    import sysconfig

    names = set(sys.builtin_module_names)
    std = sysconfig.get_paths()["stdlib"]
    for d in (std, os.path.join(std, "lib-dynload")):
        if not os.path.isdir(d):
            continue
        for fn in os.listdir(d):
            if fn == "site-packages":
                continue
            names.add(fn.split(".")[0])
    return names


def _dump_parser_main(root, module=None):  # noqa: C901  (runs in the child)
    import dataclasses
    import importlib
    import importlib.abc
    import importlib.machinery
    import importlib.metadata
    import traceback
    import types
    import typing
    from unittest import mock

    root = os.path.abspath(root)
    sys.path.insert(0, root)
    stdlib = _stdlib_names()
    real = set()
    for name in REAL_PACKAGES:
        try:
            importlib.import_module(name)
            real.add(name)
        except ImportError:
            pass
    if "pydantic" not in real:
        # vLLM's config classes are pydantic dataclasses: a real wheel needs it
        # (the error below says so); small test trees do not.
        sys.stderr.write(
            "warning: pydantic is not importable by %s; it is stubbed, which real vLLM wheels do not survive\n"
            % sys.executable
        )

    class Stub(mock.MagicMock):
        def __get_pydantic_core_schema__(self, source_type, handler):
            from pydantic_core import core_schema

            return core_schema.any_schema()

    def _any_schema(cls, source_type, handler):
        from pydantic_core import core_schema

        return core_schema.any_schema()

    class _StubMeta(type):
        def __new__(mcs, name, bases, ns, **kw):
            return super(_StubMeta, mcs).__new__(mcs, name, bases, ns)

        def __init__(cls, name, bases, ns, **kw):
            super(_StubMeta, cls).__init__(name, bases, ns)

        def __getattr__(cls, name):
            if name.startswith("__") and name.endswith("__"):
                raise AttributeError(name)
            return Stub(name=cls.__qualname__ + "." + name)

    class StubBase(metaclass=_StubMeta):
        def __init_subclass__(cls, **kw):
            pass

        def __init__(self, *a, **k):
            pass

        def __getattr__(self, name):
            if name.startswith("__") and name.endswith("__"):
                raise AttributeError(name)
            return Stub(name=name)

        def __class_getitem__(cls, item):
            return cls

        def __call__(self, *a, **k):
            return Stub()

        __get_pydantic_core_schema__ = classmethod(_any_schema)

    class StubModule(types.ModuleType):
        """A module whose CamelCase attributes are classes (usable as bases) and
        whose other attributes are MagicMocks."""

        def __init__(self, name):
            super(StubModule, self).__init__(name)
            self.__path__ = []
            self.__all__ = []
            self.__dict__["_stub_cache"] = {}

        def __getattr__(self, name):
            if name.startswith("__") and name.endswith("__"):
                raise AttributeError(name)
            cache = self.__dict__["_stub_cache"]
            if name not in cache:
                full = self.__name__ + "." + name
                if full in sys.modules:
                    return sys.modules[full]
                if name[:1].isupper() and not name.isupper():
                    cache[name] = _StubMeta(name, (StubBase,), {"__module__": self.__name__})
                else:
                    cache[name] = Stub(name=full)
            return cache[name]

    class StubLoader(importlib.abc.Loader):
        def create_module(self, spec):
            return StubModule(spec.name)

        def exec_module(self, module):
            pass

    stubbed_third_party = set()
    post_import = {}

    class AliasLoader(importlib.abc.Loader):
        """Serve a stdlib module under a third-party name (regex -> re)."""

        def __init__(self, target):
            self.target = target

        def create_module(self, spec):
            return importlib.import_module(self.target)

        def exec_module(self, module):
            pass

    class HookLoader(importlib.abc.Loader):
        def __init__(self, inner, hook):
            self.inner = inner
            self.hook = hook

        def create_module(self, spec):
            return self.inner.create_module(spec)

        def exec_module(self, mod):
            self.inner.exec_module(mod)
            self.hook(mod)

    class Front(importlib.abc.MetaPathFinder):
        def find_spec(self, fullname, path=None, target=None):
            top = fullname.split(".")[0]
            if fullname in post_import:
                spec = importlib.machinery.PathFinder.find_spec(fullname, path)
                if spec is not None and spec.loader is not None:
                    spec.loader = HookLoader(spec.loader, post_import.pop(fullname))
                return spec
            if top in stdlib or top in real or top == "vllm" or top.startswith("_"):
                return None
            if fullname in SUBSTITUTES:
                return importlib.machinery.ModuleSpec(fullname, AliasLoader(SUBSTITUTES[fullname]))
            stubbed_third_party.add(top)
            return importlib.machinery.ModuleSpec(fullname, StubLoader(), is_package=True)

    class Back(importlib.abc.MetaPathFinder):
        """vLLM's own compiled modules (vllm._C, ...) are not in the sources."""

        def find_spec(self, fullname, path=None, target=None):
            if fullname.split(".")[0] != "vllm":
                return None
            return importlib.machinery.ModuleSpec(fullname, StubLoader(), is_package=True)

    def _force_platform(mod):
        # No accelerator: vLLM's UnspecifiedPlatform (what `vllm serve --help`
        # shows on a machine without GPUs).
        if hasattr(mod, "resolve_current_platform_cls_qualname"):
            mod.resolve_current_platform_cls_qualname = lambda: "vllm.platforms.interface.UnspecifiedPlatform"

    post_import["vllm.platforms"] = _force_platform
    sys.meta_path.insert(0, Front())
    sys.meta_path.append(Back())
    _real_version = importlib.metadata.version

    def _version(name):
        try:
            return _real_version(name)
        except Exception:
            return "999.0.0"

    importlib.metadata.version = _version

    critical = (
        "vllm.config",
        "vllm.engine.arg_utils",
        "vllm.utils.argparse_utils",
        "vllm.entrypoints.openai.cli_args",
        "vllm.entrypoints.common.cli_args",
    )
    stubbed_vllm = []

    def _modname(path):
        rel = os.path.relpath(path, root)
        if rel.startswith("..") or not rel.endswith(".py"):
            return None
        parts = rel[:-3].split(os.sep)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        return ".".join(parts)

    def robust_import(name, allow_stub=True):
        """Import ``name``; a vLLM module that fails at import time because of the
        stubs (and is not one the parser is built from) is replaced by a stub."""
        for _attempt in range(200):
            try:
                return importlib.import_module(name)
            except Exception as exc:
                if not allow_stub:
                    raise
                cand = None
                for fr in traceback.extract_tb(exc.__traceback__):
                    if fr.name == "<module>" and fr.filename.startswith(root + os.sep):
                        cand = _modname(fr.filename)
                if (
                    cand is None
                    or cand == name
                    or cand in stubbed_vllm
                    or any(cand == c or cand.startswith(c + ".") for c in critical)
                ):
                    raise
                stubbed_vllm.append("%s (%s: %s)" % (cand, type(exc).__name__, str(exc)[:120]))
                sys.modules[cand] = StubModule(cand)
        raise ImportError(name)

    warnings = []
    robust_import("vllm.platforms")
    module = module or CLI_ARGS_CANDIDATES[-1]
    cli = robust_import(module)
    argparse_utils = robust_import("vllm.utils.argparse_utils")
    au = robust_import("vllm.engine.arg_utils")
    vc = robust_import("vllm.config")

    # record which config class/field each argparse kwargs dict came from
    origin_key = "_llmfleet_origin"
    origins = {}
    if hasattr(au, "get_kwargs"):
        _orig_get_kwargs = au.get_kwargs

        def _get_kwargs(cls):
            kw = _orig_get_kwargs(cls)
            for field_name, d in kw.items():
                if isinstance(d, dict):
                    d[origin_key] = (id(cls), field_name)
            origins[id(cls)] = cls
            return kw

        au.get_kwargs = _get_kwargs
    _orig_add_argument = argparse._ActionsContainer.add_argument

    def _add_argument(self, *args, **kwargs):
        origin = kwargs.pop(origin_key, None)
        action = _orig_add_argument(self, *args, **kwargs)
        if origin is not None:
            action._llmfleet_origin = origin
        action._llmfleet_declared = list(action.option_strings)
        return action

    argparse._ActionsContainer.add_argument = _add_argument
    # DefaultFactory of VllmConfig fields build whole config objects, whose
    # validators need real torch/CUDA: keep the FieldInfo as the default instead.
    if hasattr(au, "FieldInfo"):
        au.FieldInfo = type("_NoFieldInfo", (), {})
    patches = []
    dev = getattr(vc, "DeviceConfig", None)
    if dev is not None:
        patches.append(mock.patch.object(dev, "__post_init__", lambda self, *a, **k: None))
    for p in patches:
        p.start()
    FlexibleArgumentParser = argparse_utils.FlexibleArgumentParser
    parser = FlexibleArgumentParser(prog="vllm serve")
    parser = cli.make_arg_parser(parser) or parser
    for p in patches:
        p.stop()
    argparse._ActionsContainer.add_argument = _orig_add_argument

    def jsonable(v):
        if v is None or isinstance(v, (str, int, float, bool)):
            return v
        return str(v)

    union_type = getattr(types, "UnionType", None)

    def hints_of(cls, field_name):
        try:
            hints = typing.get_type_hints(cls)
            t = hints.get(field_name)
        except Exception:
            t = None
        if t is None and dataclasses.is_dataclass(cls):
            for f in dataclasses.fields(cls):
                if f.name == field_name:
                    t = f.type
        flat = set()

        def walk(h):
            origin = typing.get_origin(h)
            if origin is typing.Annotated:
                walk(typing.get_args(h)[0])
            elif origin is typing.Union or (union_type is not None and origin is union_type):
                for a in typing.get_args(h):
                    walk(a)
            else:
                flat.add(h)

        walk(t)
        return flat

    def is_type(h, t):
        return h is t or typing.get_origin(h) is t

    actions = []
    for action in parser._actions:
        registered = [s for s, a in parser._option_string_actions.items() if a is action]
        rec = {
            "option_strings": registered,
            "declared_option_strings": getattr(action, "_llmfleet_declared", list(action.option_strings)),
            "dest": action.dest,
            "action_class": type(action).__name__,
            "nargs": action.nargs,
            "type": _describe_callable(action.type),
            "choices": [str(c) for c in action.choices] if action.choices is not None else None,
        }
        if action.type is not None and "<lambda>" in (rec["type"] or ""):
            try:
                if action.type("Ab-Cd") == "ab_cd":
                    rec["type_probe"] = "lower_snake"
            except Exception:
                pass
        origin = getattr(action, "_llmfleet_origin", None)
        json_kind = None
        if origin is not None:
            cls = origins[origin[0]]
            field_name = origin[1]
            hints = hints_of(cls, field_name)
            rec["json_config"] = "%s.%s" % (cls.__name__, field_name)
            dcs = [h for h in hints if isinstance(h, type) and dataclasses.is_dataclass(h)]
            if dcs:
                dc = dcs[0]
                try:
                    rec["json_fields"] = sorted(f.name for f in dataclasses.fields(dc))
                    cfg = getattr(dc, "__pydantic_config__", None) or {}
                    rec["json_fields_strict"] = cfg.get("extra") == "forbid"
                except Exception:
                    pass
            desc = rec["type"] or ""
            if "union_dict_and_str" in desc:
                # JSON when the value looks like {...}, else a string
                others = [
                    h
                    for h in hints
                    if isinstance(h, type)
                    and h is not typing.Any
                    and h.__module__ != "builtins"
                    and not dataclasses.is_dataclass(h)
                ]
                if dcs:
                    json_kind = "json-dataclass"
                elif str in hints or others:
                    json_kind = "json-or-str"
                else:
                    json_kind = "json"
        desc = rec["type"] or ""
        if json_kind is None and "parse_dataclass" in desc:
            json_kind = "json-dataclass"
        if json_kind is None and "loads" in desc:
            json_kind = "json"
        if json_kind is None and "union_dict_and_str" in desc:
            json_kind = "json-or-str"
        if type(action).__name__ == "LoRAParserAction":
            json_kind = "str-or-json(list)"
        if json_kind is not None:
            rec["json_kind"] = json_kind
            rec.setdefault("json_config", None)
        actions.append(rec)

    # parser-level behaviour of FlexibleArgumentParser.parse_args (pre-processing)
    features = {}
    captured = {}

    def _capture(self, args=None, namespace=None):
        captured["args"] = list(args)
        return argparse.Namespace()

    with mock.patch.object(argparse.ArgumentParser, "parse_args", _capture):
        for probe, key in (
            (["--tensor_parallel_size", "2"], "underscore"),
            (["--compilation-config.mode", "3"], "dotted"),
            (["-O3"], "olevel"),
        ):
            captured.clear()
            try:
                FlexibleArgumentParser.parse_args(parser, probe)
            except Exception:
                pass
            got = captured.get("args")
            if key == "underscore":
                features["underscore_dash_equivalent"] = got == ["--tensor-parallel-size", "2"]
            elif key == "dotted":
                features["dotted_json_keys"] = bool(got) and got[0] == "--compilation-config" and '"mode"' in got[1]
            elif key == "olevel":
                features["optimization_level_shorthand"] = got[0] if got and got[0].startswith("--") else None
    features["allow_abbrev"] = bool(parser.allow_abbrev)
    features["positionals"] = [a.dest for a in parser._actions if not a.option_strings]

    # built-in tool-call / reasoning parser names
    parsers = {}
    null_values = {}
    parsers_from = None
    for opt, mods, attr in (
        ("--tool-call-parser", ("vllm.tool_parsers", "vllm.entrypoints.openai.tool_parsers"), "ToolParserManager"),
        ("--reasoning-parser", ("vllm.reasoning",), "ReasoningParserManager"),
    ):
        for modname in mods:
            if not os.path.exists(os.path.join(root, *modname.split("."))):
                continue
            try:
                m = robust_import(modname, allow_stub=False)
                mgr = getattr(m, attr)
                if hasattr(mgr, "list_registered"):
                    names = mgr.list_registered()
                else:
                    names = set()
                    for d in ("tool_parsers", "reasoning_parsers", "lazy_parsers"):
                        names |= set(getattr(mgr, d, {}) or {})
                names = sorted(n for n in names if isinstance(n, str))
                if names:
                    parsers[opt] = names
                    parsers_from = "registry"
                    break
            except Exception as exc:
                warnings.append("parser registry %s.%s: %s: %s" % (modname, attr, type(exc).__name__, exc))
        act = parser._option_string_actions.get(opt)
        if act is not None and callable(act.type):
            try:
                if act.type("NONE") in ("", None):
                    null_values[opt] = ["none"]
            except Exception:
                pass
    doc = {
        "module": module,
        "actions": actions,
        "parser_features": features,
        "parsers": parsers,
        "parsers_from": parsers_from,
        "parser_null_values": null_values,
        "stubbed_vllm_modules": stubbed_vllm,
        "stubbed_packages": sorted(stubbed_third_party),
        "platform": "UnspecifiedPlatform (no accelerator)",
        "warnings": warnings,
    }
    sys.stdout.write("\n@@CATALOG@@\n")
    sys.stdout.write(json.dumps(doc, sort_keys=True))
    sys.stdout.flush()


# ---------------------------------------------------------------------------
# diff
# ---------------------------------------------------------------------------

COMPARED_FIELDS = ("action", "takes_value", "nargs", "type", "optional", "choices", "json_kind", "runtime_choices")


def _by_option(cat):
    out = {}
    for canon, e in cat["flags"].items():
        for o in e["option_strings"]:
            out[o] = (canon, e)
    return out


def _view(e, field):
    if field == "choices":
        return sorted(e["choices"]) if e.get("choices") is not None else None
    if field == "json_kind":
        return (e.get("json") or {}).get("kind")
    if field == "runtime_choices":
        rc = e.get("runtime_choices")
        return sorted(rc["values"]) if rc else None
    return e.get(field)


def diff_catalogs(a, b, fields=COMPARED_FIELDS):
    """Differences between two catalogues, option string by option string."""
    ia, ib = _by_option(a), _by_option(b)
    only_a = sorted(set(ia) - set(ib))
    only_b = sorted(set(ib) - set(ia))
    changed = []
    grouping = []
    seen = set()
    for o in sorted(set(ia) & set(ib)):
        ca, ea = ia[o]
        cb, eb = ib[o]
        if (ca, cb) in seen:
            continue
        seen.add((ca, cb))
        sa = set(x for x in ea["option_strings"] if x in ib)
        sb = set(x for x in eb["option_strings"] if x in ia)
        if sa != sb:
            grouping.append((o, sorted(ea["option_strings"]), sorted(eb["option_strings"])))
        for f in fields:
            va, vb = _view(ea, f), _view(eb, f)
            if va != vb:
                changed.append((ca, f, va, vb))
    return {"only_a": only_a, "only_b": only_b, "changed": changed, "grouping": grouping}


def format_diff(d, name_a="A", name_b="B"):
    lines = []
    lines.append("option strings only in %s: %d" % (name_a, len(d["only_a"])))
    for o in d["only_a"]:
        lines.append("  - %s" % o)
    lines.append("option strings only in %s: %d" % (name_b, len(d["only_b"])))
    for o in d["only_b"]:
        lines.append("  + %s" % o)
    lines.append("actions grouped differently: %d" % len(d["grouping"]))
    for o, ga, gb in d["grouping"]:
        lines.append("  %s: %s vs %s" % (o, ga, gb))
    lines.append("field differences: %d" % len(d["changed"]))
    for canon, f, va, vb in d["changed"]:
        lines.append("  %s %s: %s=%s %s=%s" % (canon, f, name_a, json.dumps(va), name_b, json.dumps(vb)))
    return "\n".join(lines)


# ---------------------------------------------------------------------------
# CLI
# ---------------------------------------------------------------------------


def write_catalog(doc, path):
    d = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(d):
        os.makedirs(d)
    with open(path, "w") as fh:
        json.dump(doc, fh, indent=1, sort_keys=True)
        fh.write("\n")


def main(argv=None):
    ap = argparse.ArgumentParser(prog="vllm_flag_catalog.py", description=__doc__.split("\n\n", maxsplit=1)[0])
    sub = ap.add_subparsers(dest="cmd")
    sub.required = True

    p = sub.add_parser("from-listing", help="build a catalogue from the plain-text listings")
    p.add_argument("--version", help="vLLM version (default: from the flags file name, flags-X.txt)")
    p.add_argument("--flags", required=True, help="flags-X.txt: every long option, --no- forms included")
    p.add_argument("--types", required=True, help="argparse-types-X.tsv: option, action class, type, choices")
    p.add_argument("--json", required=True, help="json-flags-X.txt: option, JSON kind, config field")
    p.add_argument("--parsers", required=True, help="parsers-by-version.txt: version, option, count, names")
    p.add_argument("-o", "--output", help="write here (default: stdout)")

    p = sub.add_parser("from-wheel", help="build a catalogue from a vLLM wheel without installing it")
    p.add_argument("wheel")
    p.add_argument("-o", "--output", help="write here (default: stdout)")
    p.add_argument(
        "--python", help="interpreter for the child that imports vLLM (Python >= 3.10 with pydantic 2 and packaging)"
    )
    p.add_argument("--keep", help="extract into this directory and keep it (for debugging)")

    p = sub.add_parser("diff", help="compare two catalogues option by option")
    p.add_argument("a")
    p.add_argument("b")

    p = sub.add_parser("_dump-parser", help=argparse.SUPPRESS)
    p.add_argument("root")
    p.add_argument("--module")

    args = ap.parse_args(argv)
    if args.cmd == "_dump-parser":
        _dump_parser_main(args.root, args.module)
        return 0
    if args.cmd == "diff":
        with open(args.a) as fh:
            a = json.load(fh)
        with open(args.b) as fh:
            b = json.load(fh)
        d = diff_catalogs(a, b)
        print(format_diff(d, os.path.basename(args.a), os.path.basename(args.b)))
        return 1 if (d["only_a"] or d["only_b"] or d["changed"] or d["grouping"]) else 0
    if args.cmd == "from-listing":
        version = args.version
        if not version:
            m = re.search(r"flags-(.+)\.txt$", os.path.basename(args.flags))
            if not m:
                ap.error("--version is needed when the flags file is not named flags-X.txt")
            version = m.group(1)
        doc = build_from_listing(version, args.flags, args.types, args.json, args.parsers)
    else:
        doc = build_from_wheel(args.wheel, python=args.python, keep=args.keep)
    for w in doc.get("warnings") or []:
        sys.stderr.write("warning: %s\n" % w)
    if args.output:
        write_catalog(doc, args.output)
        sys.stderr.write(
            "wrote %s: vLLM %s, %d flags, %d option strings\n"
            % (args.output, doc["vllm_version"], doc["flag_count"], doc["option_string_count"])
        )
    else:
        json.dump(doc, sys.stdout, indent=1, sort_keys=True)
        sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
