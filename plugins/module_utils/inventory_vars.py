# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmfleet contributors
# Apache License 2.0 (see LICENSE)
"""The inventory variables the fleet planner reads, in one table.

Each :class:`Var` of :data:`INVENTORY_VARS` gives a variable's name, its type (a :class:`Kind`:
how the docs name it, what a valid value looks like and the phrase of a type error), its default,
its meaning, and whether every member of a multi-node replica must set the same value. From the
table come the type checks (:func:`type_problems`), the variables a replica's members must agree
on (:data:`REPLICA_SHARED`) and the keys read from Ansible's hostvars (:data:`NAMES`); the
README's table and the notes of the ``llmfleet.vllm.recipe`` lookup are tested against it
(texts use Markdown backticks for code). Every variable is optional unless its meaning says
``required``.

Pure Python: no Ansible imports.
"""

from __future__ import annotations

import difflib
import ipaddress
import json
import re
from collections import namedtuple

from .errors import RecipeError


class FleetError(RecipeError):
    """Problems with the inventory; ``problems`` lists one message per problem."""

    def __init__(self, problems):
        self.problems = list(problems)
        super().__init__("\n".join(self.problems))


class Kind(namedtuple("Kind", "label expected ok coerce", defaults=(None, None, None))):
    """The type of a variable: ``label`` (as the docs name it), ``expected`` (the end of a type
    error, ``expected <expected>``) and ``ok`` (value -> bool); a kind without ``ok`` is not checked.
    ``coerce`` (text -> value, or None where the text has no unambiguous meaning) reads the string
    that ``-e key=value`` gives (see :func:`coerce_text`)."""

    __slots__ = ()


class Var(namedtuple("Var", "name kind meaning default default_doc shared", defaults=(None, None, False))):
    """One inventory variable. ``default``: the value the planner uses when the variable is unset
    (None where the default is derived); ``default_doc``: that default in words, where it is derived
    or needs more than the value; ``shared``: every member of a replica must set the same value."""

    __slots__ = ()

    @property
    def default_text(self):
        """The default as the docs write it ("" when there is none)."""
        if self.default_doc is not None:
            return self.default_doc
        return "" if self.default is None else "`%s`" % self.default


def is_ip(text):
    """Whether ``text`` is an IPv4 or IPv6 address (what a replica's rendezvous and firewall need)."""
    try:
        ipaddress.ip_address(str(text))
    except ValueError:
        return False
    return True


def _is_str(v):
    return isinstance(v, str) and v != ""


def _is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def _names(v):
    return isinstance(v, list) and bool(v) and all(_is_str(x) for x in v)


def _int_text(text):
    """``"9001"`` -> 9001; None for anything but plain decimal digits."""
    text = text.strip()
    return int(text) if re.match(r"^[0-9]+$", text) else None


def _bool_text(text):
    """The words Ansible's ``bool`` filter reads as true or false (``yes``, ``off``, ``1``, ...); None otherwise."""
    text = text.strip().lower()
    if text in ("true", "yes", "on", "1"):
        return True
    if text in ("false", "no", "off", "0"):
        return False
    return None


def one_of(*choices):
    """A kind that takes exactly one of ``choices``."""
    label = "`%s` or `%s`" % ("`, `".join(choices[:-1]), choices[-1])
    return Kind(label, "one of %s" % ", ".join(choices), lambda v: v in choices)


STRING = Kind("string", "a non-empty string", _is_str)
POSITIVE_INT = Kind("integer > 0", "a positive integer", lambda v: _is_int(v) and v > 0, _int_text)
RANK = Kind("integer >= 0", "an integer >= 0", lambda v: _is_int(v) and v >= 0, _int_text)
BOOLEAN = Kind("boolean", "true or false", lambda v: isinstance(v, bool), _bool_text)
VERSION = Kind("version string", "a version string such as \"0.28.0\"",
               lambda v: isinstance(v, str) and bool(re.match(r"^v?\d+(\.\d+)*$", v)))
FEATURES = Kind("list or dict", "a list of feature names, or a dict feature -> true/false",
                lambda v: (isinstance(v, list) and all(_is_str(x) for x in v))
                or (isinstance(v, dict) and all(isinstance(x, bool) for x in v.values())))
FEATURE_MODES = Kind("dict", "a dict feature -> mode name", lambda v: isinstance(v, dict) and all(_is_str(x) for x in v.values()))
STRINGS = Kind("list of strings", "a list of strings (quote numbers: \"8\")",
               lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v))
ENV = Kind("dict", "a dict of NAME: scalar",
           lambda v: isinstance(v, dict) and all(isinstance(x, (str, int, float, bool)) for x in v.values()))
PATHS = Kind("path or list of paths", "a path or a list of paths", lambda v: _is_str(v) or _names(v))
SERVED_NAME = Kind("string, list or dict", "a name, a list [canonical, alias...] or {name: ..., aliases: [...]}",
                   lambda v: _is_str(v) or _names(v) or (isinstance(v, dict) and _is_str(v.get("name"))))
HCAS = Kind("string or list of strings")  # not checked


def _gpu_ids_text(text):
    """``"0,1"`` or ``"[0, 1]"`` (as ``-e vllm_gpu_ids=...`` gives it) -> [0, 1]; None otherwise."""
    parts = [p.strip() for p in text.strip().strip("[]").split(",")]
    return [int(p) for p in parts] if parts and all(re.match(r"^[0-9]+$", p) for p in parts) else None


GPU_IDS = Kind("list of integers >= 0", "a list of distinct GPU indices >= 0, e.g. [0, 1]",
               lambda v: isinstance(v, list) and bool(v) and all(_is_int(x) and x >= 0 for x in v) and len(set(v)) == len(v),
               _gpu_ids_text)


def gpu_ids_of(hv):
    """A host's ``vllm_gpu_ids`` as a list of ints, or None when unset."""
    ids = hv.get("vllm_gpu_ids")
    return None if ids is None else [int(i) for i in ids]


PD_ROLES = ("prefill", "decode", "router")
MULTINODE_BACKENDS = ("mp", "ray")

INVENTORY_VARS = (
    Var("vllm_recipe", STRING, "recipe id (Hugging Face model id), e.g. `Qwen/Qwen3.6-35B-A3B`; required on a host "
        "that serves vLLM", shared=True),
    Var("vllm_variant", STRING, "variant key (`default`, `fp8`, `nvfp4`, ...)",
        default_doc="the recipe's choice for the hardware", shared=True),
    Var("vllm_hardware", STRING, "taxonomy profile id (`h200`, `dgx_spark_gb10`, `mi300x`, ...)",
        default_doc="the host's detected profile", shared=True),
    Var("vllm_gpu_count", POSITIVE_INT, "real GPUs per node, replacing the profile's (deviation D6)",
        default_doc="the profile's; with a detected profile, the detected count", shared=True),
    Var("vllm_strategy", STRING, "strategy id (`single_node_tp`, `multi_node_dep`, ...)",
        default_doc="the recipe's recommendation, chosen as upstream chooses it", shared=True),
    Var("vllm_features", FEATURES, "a list of features to enable (emitted in that order), or a dict "
        "`feature: true/false` on top of the recipe defaults (recipe order)",
        default_doc="the recipe's defaults", shared=True),
    Var("vllm_feature_modes", FEATURE_MODES, "mode per feature, e.g. `{spec_decoding: mtp}`",
        default_doc="each feature's default mode", shared=True),
    Var("vllm_kv_offload", STRING, "a taxonomy KV-offload option (`simple`, `lmcache`, ...)", shared=True),
    Var("vllm_advanced", STRINGS, "advanced preset ids (`gpu_mem_095`, ...)", shared=True),
    Var("vllm_extra_args", STRINGS, "argv tokens appended last, with provenance `inventory`"),
    Var("vllm_extra_env", ENV, "env appended last, with provenance `inventory`"),
    Var("vllm_image", STRING, "container image, replacing the recipe's", default_doc="the recipe's image", shared=True),
    Var("vllm_version", VERSION, "vLLM version for the flag checks when the image tag names none",
        default_doc="the image tag's, else the newest flag catalogue", shared=True),
    Var("vllm_port", POSITIVE_INT, "API port (in a PD replica: `8001` on prefill, `8002` on decode, `vllm_router_port` on the router)", default=8000),
    Var("vllm_served_model_name", SERVED_NAME, "a name, a list `[canonical, alias...]` or "
        "`{name: qwen-3.6-35b-a3b, aliases: [qwen-3.6-a3b]}`", default_doc="the model id"),
    Var("vllm_recipes_path", PATHS, "recipe trees in the vllm-project/recipes layout (later trees win)",
        default_doc="the built-in tree", shared=True),
    Var("vllm_replica", STRING, "name of the inventory group forming this host's multi-node replica",
        default_doc="none (the host serves alone)"),
    Var("vllm_node_rank", RANK, "rank in the replica (set on every member or on none)",
        default_doc="the order of inventory hostnames"),
    Var("vllm_cluster_address", STRING, "address the other members use for this host (`$HEAD_IP` on rank 0, `VLLM_HOST_IP`)",
        default_doc="`ansible_host`, else the inventory hostname"),
    Var("vllm_cluster_interface", STRING, "NIC for NCCL/GLOO (`$IFACE_NAME`); required in multi-node replicas"),
    Var("vllm_pd_role", one_of(*PD_ROLES), "the host's role in a `pd_cluster` replica (required there)"),
    Var("vllm_pd_dp_rpc_port", POSITIVE_INT, "DP RPC port of a PD pool's data-parallel ranks (read from the pool's first member)",
        default=13345),
    Var("vllm_router_port", POSITIVE_INT, "client port of the PD router", default=30000),
    Var("vllm_infiniband_hca", HCAS, "InfiniBand HCAs of a replica node (`mlx5_0,mlx5_1`): `NCCL_IB_HCA` and the RDMA "
        "container flags; `[]` turns them off", default_doc="the HCAs `gpu_facts` detected"),
    Var("vllm_multinode_backend", one_of(*MULTINODE_BACKENDS), "how a multi-node replica starts: vLLM's multiprocessing "
        "(`--nnodes`), or Ray for TP, TP x PP and TEP replicas on images that carry Ray (`ray start` on every node, "
        "`--distributed-executor-backend ray` on the head)", default="mp", shared=True),
    Var("vllm_ray_port", POSITIVE_INT, "Ray GCS port on the head in `ray` mode", default=6379, shared=True),
    Var("vllm_gpu_ids", GPU_IDS, "the GPUs this host's vLLM runs on (`[0, 1]`): `CUDA_VISIBLE_DEVICES`, "
        "`ROCR_VISIBLE_DEVICES` or `ZE_AFFINITY_MASK`, and NVIDIA's container flags (`--gpus '\"device=0,1\"'`); "
        "the GPU count follows (deviation D6; `vllm_gpu_count`, if set, must agree). Hosts sharing one machine "
        "(`ansible_host`) each take their own GPUs, `vllm_port` and `vllm_serve_name`",
        default_doc="every GPU of the machine"),
)

#: The variable names, in table order.
NAMES = tuple(v.name for v in INVENTORY_VARS)
#: Variables every member of one replica must agree on.
REPLICA_SHARED = tuple(v.name for v in INVENTORY_VARS if v.shared)
_BY_NAME = dict((v.name, v) for v in INVENTORY_VARS)


def _percent_text(text):
    try:
        return float(text.strip())
    except ValueError:
        return None


SERIAL = Kind("integer, percentage or list")  # checked by rollout.parse_serial (fleet_plan's serial)
PERCENT = Kind("number 0-100", "a number from 0 to 100",
               lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and 0 <= v <= 100, _percent_text)
PATH = Kind("path", "a non-empty path", _is_str)

#: The collection's playbook variables (set them in inventory or with -e, like the ones above).
PLAYBOOK_VARS = (
    Var("vllm_deploy_serial", SERIAL, "`deploy.yml`'s batch size, as a play's `serial` takes it (`2`, `\"25%\"`, "
        "`[1, \"50%\"]`); a batch that would split a multi-node replica is refused before any host is touched",
        default_doc="`100%` (every host at once)"),
    Var("vllm_deploy_max_fail_percentage", PERCENT, "`deploy.yml` stops the rollout after a batch in which more than "
        "this percentage of the play's hosts failed (later batches keep their services)", default=0),
    Var("vllm_plan_dir", PATH, "where `plan.yml` writes the `<inventory_hostname>/` plan files",
        default_doc="`plan` (under the current directory)"),
    Var("vllm_plan_detail_hosts", RANK, "`plan.yml` prints each host's detail (command, env, provenance) when it "
        "plans at most this many hosts, else only with `-v` (the plan files always have it)", default=3),
    Var("vllm_detect_gpus", BOOLEAN, "preflight detects the GPUs (`gpu_facts`) of hosts without `vllm_hardware`; "
        "`plan.yml` turns it off (it contacts no host)", default_doc="`true`"),
    Var("vllm_check_hardware", BOOLEAN, "preflight also detects the GPUs of hosts that declare `vllm_hardware` and "
        "checks the declaration (and the VRAM fit) against them", default_doc="`false`"),
)
PLAYBOOK_NAMES = tuple(v.name for v in PLAYBOOK_VARS)
#: Other vllm_* names the collection uses: what plan.yml registers, what the plugin examples set.
OTHER_NAMES = ("vllm_fleet", "vllm_plan", "vllm_run_argv")
#: Prefixes of the roles' own variables (a role checks them with its argument spec).
ROLE_PREFIXES = ("vllm_serve_",)
_ALL_VARS = dict((v.name, v) for v in INVENTORY_VARS + PLAYBOOK_VARS)


def known_names():
    """Every vllm_* name that is not unknown (the role prefixes aside)."""
    return NAMES + PLAYBOOK_NAMES + OTHER_NAMES


def coerce_text(name, value):
    """The value of ``name`` that the string ``value`` (as ``-e name=value`` gives it) means: an
    integer or boolean where the text is unambiguous (``"9001"``, ``"true"``); else ``value`` unchanged."""
    var = _ALL_VARS.get(name)
    if var is None or var.kind.coerce is None or not isinstance(value, str):
        return value
    out = var.kind.coerce(value)
    return value if out is None else out


def setting_problems(name, value):
    """A playbook setting's type error (``value`` may be the text ``-e`` gives), as for :func:`type_problems`."""
    var = _ALL_VARS[name]
    if value is None or var.kind.ok is None or var.kind.ok(coerce_text(name, value)):
        return []
    return ["%s=%s: expected %s" % (name, json.dumps(value, default=str), var.kind.expected)]


def unknown_names(names):
    """The names in ``names`` that start with ``vllm_`` but are no variable of the collection."""
    known = set(known_names())
    return [n for n in names if n.startswith("vllm_") and n not in known and not n.startswith(ROLE_PREFIXES)]


def unknown_name_problems(names_by_host, shown=5):
    """One problem per unknown vllm_* name: the hosts that set it, and the closest known spelling."""
    hosts_of = {}
    for host in names_by_host:
        for name in unknown_names(names_by_host[host]):
            hosts_of.setdefault(name, []).append(host)
    out = []
    for name in sorted(hosts_of):
        hosts = hosts_of[name]
        where = ", ".join(hosts[:shown]) + (" and %d more" % (len(hosts) - shown) if len(hosts) > shown else "")
        close = difflib.get_close_matches(name, known_names(), n=1, cutoff=0.6)
        hint = ("did you mean %s?" % close[0]) if close else (
            "valid: the inventory variables %s, the playbook variables %s, or the role variables %s*"
            % (", ".join(NAMES), ", ".join(PLAYBOOK_NAMES), "*, ".join(ROLE_PREFIXES)))
        out.append("host%s %s: %s is not a variable of llmfleet.vllm (%s)" % ("s" if len(hosts) > 1 else "", where, name, hint))
    return out


def missing_recipe_problems(host, hv):
    """A host that sets planner variables but no usable ``vllm_recipe`` (missing, empty or not a string)."""
    recipe = hv.get("vllm_recipe")
    if _is_str(recipe):
        return []
    others = [n for n in NAMES if n != "vllm_recipe" and hv.get(n) is not None]
    if not others and recipe is None:
        return []
    state = "is not set" if recipe is None else "is %s" % json.dumps(recipe, default=str)
    return ["host %s: sets %s but vllm_recipe %s: expected a recipe id such as Qwen/Qwen3.6-35B-A3B (or unset "
            "the vllm_* variables of a host that serves no vLLM)" % (host, ", ".join(others) or "vllm_recipe", state)]


def no_vllm_host_problems(hosts, shown=5):
    """A play over hosts none of which serves vLLM (a wrong inventory or limit)."""
    hosts = list(hosts)
    where = ", ".join(hosts[:shown]) + (" and %d more" % (len(hosts) - shown) if len(hosts) > shown else "")
    return ["no vLLM host in this play: none of its %d host(s) (%s) sets vllm_recipe; check the inventory (-i) "
            "and the limit (-l)" % (len(hosts), where or "none")]


def default_of(name):
    """The planner's default for variable ``name`` (None where it is derived)."""
    return _BY_NAME[name].default


def type_problems(host, hv):
    """Type errors in one host's variables, each naming host, key, value and expectation."""
    out = []
    for var in INVENTORY_VARS:
        value = hv.get(var.name)
        if value is not None and var.kind.ok is not None and not var.kind.ok(value):
            out.append("host %s: %s=%s: expected %s" % (host, var.name, json.dumps(value, default=str), var.kind.expected))
    return out
