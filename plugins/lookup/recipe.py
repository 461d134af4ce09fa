# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmfleet contributors
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
name: recipe
author: llmfleet contributors (@llmfleet)
version_added: 0.1.0
short_description: Resolve a vLLM recipe into the per-host C(vllm serve) plan
description:
  - Without terms, returns the plan of the current host from its inventory variables
    (C(vllm_recipe), C(vllm_variant), C(vllm_hardware), C(vllm_strategy), C(vllm_replica), ...),
    that is the C(vllm serve) argv and env bound to real addresses, the container image, the host's role
    in its replica (V(single), V(head), V(worker), V(prefill), V(decode) or V(router)), the
    provenance of every flag and env key, and warnings.
  - With a recipe id as the term, resolves that recipe from the options given and returns the whole
    deployment (every node, with placeholders such as C($HEAD_IP) left unbound).
  - Follows the upstream recipes builder (recipes.vllm.ai) exactly, with the deliberate deviations
    D1-D7 documented in the collection README.
  - Multi-node replicas are inventory groups named by C(vllm_replica); ranks follow the inventory
    hostname order unless C(vllm_node_rank) is set; the rank-0 host's C(vllm_cluster_address)
    (default C(ansible_host)) replaces C($HEAD_IP) and C(vllm_cluster_interface) replaces C($IFACE_NAME).
notes:
  - "Without terms, the current host's variables are read as Ansible resolved them for it at this point, in
    Ansible's own precedence (host and group vars, play C(vars), C(roles) and C(include_role)/C(import_role) vars,
    block and task C(vars), C(set_fact), C(-e)). Other hosts (the members of its replica, or O(host)) are read from
    C(hostvars), which holds no play, role or task vars: the current host's values of the inventory variables (below) that its own C(hostvars)
    lack or hold differently (from a play, role or task scope) are applied to the other hosts of the play too, with
    a warning where such a host's own value differs; hosts outside the play get their C(hostvars) only."
  - "C(-e name=value) gives strings: integer variables read the ones with one meaning (C(-e vllm_port=9001))."
  - "An unknown vllm_* variable name (not below, not a playbook variable of the collection README, not a role
    variable C(vllm_serve_*)) is an error naming the closest spelling, and so is a host with variables below but no
    usable C(vllm_recipe)."
  - Without terms, the plan is made from these inventory variables of the host (and of the members of its
    replica), each optional unless said otherwise; C(replica-wide) ones must be the same on every member of a
    multi-node replica. The collection README has the same table.
  - "C(vllm_recipe) (string; replica-wide): recipe id (Hugging Face model id), e.g. C(Qwen/Qwen3.6-35B-A3B);
    required on a host that serves vLLM"
  - "C(vllm_variant) (string; default: the recipe's choice for the hardware; replica-wide): variant key (C(default),
    C(fp8), C(nvfp4), ...)"
  - "C(vllm_hardware) (string; default: the host's detected profile; replica-wide): taxonomy profile id (C(h200),
    C(dgx_spark_gb10), C(mi300x), ...)"
  - "C(vllm_gpu_count) (integer > 0; default: the profile's; with a detected profile, the detected count;
    replica-wide): real GPUs per node, replacing the profile's (deviation D6)"
  - "C(vllm_strategy) (string; default: the recipe's recommendation, chosen as upstream chooses it; replica-wide):
    strategy id (C(single_node_tp), C(multi_node_dep), ...)"
  - "C(vllm_features) (list or dict; default: the recipe's defaults; replica-wide): a list of features to enable
    (emitted in that order), or a dict C(feature: true/false) on top of the recipe defaults (recipe order)"
  - "C(vllm_feature_modes) (dict; default: each feature's default mode; replica-wide): mode per feature, e.g.
    C({spec_decoding: mtp})"
  - "C(vllm_kv_offload) (string; replica-wide): a taxonomy KV-offload option (C(simple), C(lmcache), ...)"
  - "C(vllm_advanced) (list of strings; replica-wide): advanced preset ids (C(gpu_mem_095), ...)"
  - "C(vllm_extra_args) (list of strings): argv tokens appended last, with provenance C(inventory)"
  - "C(vllm_extra_env) (dict): env appended last, with provenance C(inventory)"
  - "C(vllm_image) (string; default: the recipe's image; replica-wide): container image, replacing the recipe's"
  - "C(vllm_version) (version string; default: the image tag's, else the newest flag catalogue; replica-wide): vLLM
    version for the flag checks when the image tag names none"
  - "C(vllm_port) (integer > 0; default: C(8000)): API port (in a PD replica: C(8001) on prefill, C(8002) on decode,
    C(vllm_router_port) on the router)"
  - "C(vllm_served_model_name) (string, list or dict; default: the model id): a name, a list C([canonical,
    alias...]) or C({name: qwen-3.6-35b-a3b, aliases: [qwen-3.6-a3b]})"
  - "C(vllm_recipes_path) (path or list of paths; default: the built-in tree; replica-wide): recipe trees in the
    vllm-project/recipes layout (later trees win)"
  - "C(vllm_replica) (string; default: none (the host serves alone)): name of the inventory group forming this
    host's multi-node replica"
  - "C(vllm_node_rank) (integer >= 0; default: the order of inventory hostnames): rank in the replica (set on every
    member or on none)"
  - "C(vllm_cluster_address) (string; default: C(ansible_host), else the inventory hostname): address the other
    members use for this host (C($HEAD_IP) on rank 0, C(VLLM_HOST_IP))"
  - "C(vllm_cluster_interface) (string): NIC for NCCL/GLOO (C($IFACE_NAME)); required in multi-node replicas"
  - "C(vllm_pd_role) (C(prefill), C(decode) or C(router)): the host's role in a C(pd_cluster) replica (required
    there)"
  - "C(vllm_pd_dp_rpc_port) (integer > 0; default: C(13345)): DP RPC port of a PD pool's data-parallel ranks (read
    from the pool's first member)"
  - "C(vllm_router_port) (integer > 0; default: C(30000)): client port of the PD router"
  - "C(vllm_infiniband_hca) (string or list of strings; default: the HCAs C(gpu_facts) detected): InfiniBand HCAs of
    a replica node (C(mlx5_0,mlx5_1)): C(NCCL_IB_HCA) and the RDMA container flags; C([]) turns them off"
  - "C(vllm_multinode_backend) (C(mp) or C(ray); default: C(mp); replica-wide): how a multi-node replica starts:
    vLLM's multiprocessing (C(--nnodes)), or Ray for TP, TP x PP and TEP replicas on images that carry Ray (C(ray
    start) on every node, C(--distributed-executor-backend ray) on the head)"
  - "C(vllm_ray_port) (integer > 0; default: C(6379); replica-wide): Ray GCS port on the head in C(ray) mode"
  - "C(vllm_gpu_ids) (list of integers >= 0; default: every GPU of the machine): the GPUs this host's vLLM runs on
    (C([0, 1])): C(CUDA_VISIBLE_DEVICES), C(ROCR_VISIBLE_DEVICES) or C(ZE_AFFINITY_MASK), and NVIDIA's container flags
    (C(--gpus '\"device=0,1\"')); the GPU count follows (deviation D6; C(vllm_gpu_count), if set, must agree). Hosts
    sharing one machine (C(ansible_host)) each take their own GPUs, C(vllm_port) and C(vllm_serve_name)"
options:
  _terms:
    description: A recipe id (Hugging Face model id such as C(Qwen/Qwen3.6-35B-A3B)). Omit it to plan the current host.
    type: list
    elements: str
    required: false
  host:
    description: Plan this inventory host instead of the current one (no terms only).
    type: str
  variant:
    description: Variant key (with a term). Default is the recipe's choice for the hardware.
    type: str
  hardware:
    description: Hardware profile id of the recipes taxonomy, for example V(h200) or V(dgx_spark_gb10) (with a term).
    type: str
  strategy:
    description: Strategy id, for example V(single_node_tp) or V(multi_node_dep) (with a term). Default is the recipe's recommendation.
    type: str
  node_count:
    description: Number of nodes (with a term).
    type: int
  gpu_count:
    description: Real GPUs per node, replacing the profile's (deviation D6) (with a term).
    type: int
  features:
    description: Features to enable (a list), or a dict feature -> bool on top of the recipe defaults (with a term).
    type: raw
  feature_modes:
    description: "Mode per feature, for example C({spec_decoding: mtp}) (with a term)."
    type: dict
  pd_nodes:
    description: "PD pool sizes, for example C({prefill: 2, decode: 1}) (with a term)."
    type: dict
  kv_offload:
    description: A taxonomy C(kv_offload) key such as V(simple) (with a term).
    type: str
  advanced:
    description: Advanced preset ids such as V(gpu_mem_095) (with a term).
    type: list
    elements: str
  recipes_path:
    description:
      - Recipe trees in the vllm-project/recipes layout; a later tree overrides an earlier one per recipe id.
      - Default is the host's C(vllm_recipes_path), else the collection's built-in tree.
    type: list
    elements: path
"""

EXAMPLES = r"""
- name: The current host's plan from its inventory variables
  ansible.builtin.set_fact:
    vllm_plan: "{{ lookup('llmfleet.vllm.recipe') }}"

- name: Show the exact command
  ansible.builtin.debug:
    msg: "{{ vllm_plan | llmfleet.vllm.shell_command }}"

- name: Resolve a recipe directly, without inventory
  ansible.builtin.debug:
    msg: "{{ lookup('llmfleet.vllm.recipe', 'Qwen/Qwen3.6-35B-A3B', variant='nvfp4', hardware='b200',
             strategy='multi_node_dep', node_count=2).nodes | map(attribute='argv') }}"
"""

RETURN = r"""
_raw:
  description:
    - Without terms, one dict per call, the host plan, with keys C(host), C(recipe), C(model), C(variant),
      C(hardware), C(gpu_count), C(strategy), C(deploy_type), C(node_count), C(replica), C(members), C(role),
      C(rank), C(argv) (starting V(vllm), V(serve), the model; V(vllm-router) on a PD router; empty on a Ray-mode
      worker), C(env), C(command), C(image), C(image_source), C(docker_gpu_flags) (on NVIDIA selecting
      C(vllm_gpu_ids)), C(gpu_ids) (C(vllm_gpu_ids), or None), C(port), C(served_model_names), C(features),
      C(feature_modes), C(args_provenance), C(env_provenance), C(bindings), C(unbound_placeholders),
      C(container_args), C(serves_http) (whether the node answers the API, so is health-gated),
      C(multinode_backend) (V(mp) or V(ray) in a replica), C(ray) (Ray mode, the node's C(ray start) argv, the GCS
      C(address) and C(port)), C(cluster_ports) (a replica node's rendezvous ports, each with C(port) and
      C(purpose)), C(member_addresses), C(warnings) and C(notes).
    - With a term, the deployment, with C(nodes) (one entry per node, each with C(role), C(rank), C(argv),
      C(env) and provenance), C(image), C(docker_gpu_flags), C(pools) and C(router) for pd_cluster, and C(warnings).
  type: list
  elements: dict
"""

from ansible.errors import AnsibleLookupError
from ansible.plugins.lookup import LookupBase
from ansible.utils.display import Display

from ansible_collections.llmfleet.vllm.plugins.module_utils.catalog import get_catalog
from ansible_collections.llmfleet.vllm.plugins.module_utils.errors import RecipeError
from ansible_collections.llmfleet.vllm.plugins.module_utils.fleet import Fleet
from ansible_collections.llmfleet.vllm.plugins.module_utils.inventory_vars import (
    FleetError, missing_recipe_problems, unknown_name_problems)
from ansible_collections.llmfleet.vllm.plugins.module_utils.preflight import redact_plan
from ansible_collections.llmfleet.vllm.plugins.module_utils.resolver import Resolver
from ansible_collections.llmfleet.vllm.plugins.plugin_utils.inventory_view import HostvarsView, to_plain

display = Display()


class LookupModule(LookupBase):

    def run(self, terms, variables=None, **kwargs):
        self.set_options(var_options=variables, direct=kwargs)
        variables = variables or {}
        try:
            if terms:
                return [self._direct(term) for term in terms]
            return [self._host_plan(variables)]
        except RecipeError as exc:
            raise AnsibleLookupError("llmfleet.vllm.recipe: %s" % exc)

    def _direct(self, recipe_id):
        names = ("variant", "hardware", "strategy", "node_count", "gpu_count", "features", "feature_modes", "pd_nodes",
                 "kv_offload", "advanced")
        opts = dict((k, self.get_option(k)) for k in names)
        catalog = get_catalog(self.get_option("recipes_path") or None)
        return Resolver(catalog).resolve(str(recipe_id), **to_plain(opts))

    def _host_plan(self, variables):
        hostvars = variables.get("hostvars")
        groups = to_plain(variables.get("groups") or {})
        host = self.get_option("host") or variables.get("inventory_hostname")
        if hostvars is None or not host:
            raise AnsibleLookupError("llmfleet.vllm.recipe: without terms it needs a play context (hostvars, inventory_hostname)")
        view = HostvarsView.from_task_vars(variables, self._templar.template, groups.get("all") or list(hostvars))
        problems = unknown_name_problems({host: view.names(host)}) + missing_recipe_problems(host, view.get(host, {}))
        if problems:
            raise FleetError(problems)
        plan = Fleet(view, groups, facts=view.facts()).plan(host)
        for warning in view.warnings:
            display.warning("llmfleet.vllm.recipe: %s" % warning)
        return redact_plan(plan)  # a secret misplaced in vllm_extra_args/env never leaves the lookup
