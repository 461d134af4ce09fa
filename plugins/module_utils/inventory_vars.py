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

import json
import re
from collections import namedtuple

from .errors import RecipeError


class FleetError(RecipeError):
    """Problems with the inventory; ``problems`` lists one message per problem."""

    def __init__(self, problems):
        self.problems = list(problems)
        super().__init__("\n".join(self.problems))


class Kind(namedtuple("Kind", "label expected ok", defaults=(None, None))):
    """The type of a variable: ``label`` (as the docs name it), ``expected`` (the end of a type
    error, ``expected <expected>``) and ``ok`` (value -> bool); a kind without ``ok`` is not checked."""

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


def _is_str(v):
    return isinstance(v, str) and v != ""


def _is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def _names(v):
    return isinstance(v, list) and bool(v) and all(_is_str(x) for x in v)


def one_of(*choices):
    """A kind that takes exactly one of ``choices``."""
    label = "`%s` or `%s`" % ("`, `".join(choices[:-1]), choices[-1])
    return Kind(label, "one of %s" % ", ".join(choices), lambda v: v in choices)


STRING = Kind("string", "a non-empty string", _is_str)
POSITIVE_INT = Kind("integer > 0", "a positive integer", lambda v: _is_int(v) and v > 0)
RANK = Kind("integer >= 0", "an integer >= 0", lambda v: _is_int(v) and v >= 0)
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
)

#: The variable names, in table order.
NAMES = tuple(v.name for v in INVENTORY_VARS)
#: Variables every member of one replica must agree on.
REPLICA_SHARED = tuple(v.name for v in INVENTORY_VARS if v.shared)
_BY_NAME = dict((v.name, v) for v in INVENTORY_VARS)


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
