# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmfleet contributors
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
module: fleet_plan
author: llmfleet contributors (@llmfleet)
version_added: 0.1.0
short_description: Validate a whole vLLM fleet and plan every host, before any host is touched
description:
  - Runs on the controller (an action plugin; nothing is executed on the managed hosts).
  - Resolves the plan of every vLLM host of the inventory (hosts with C(vllm_recipe)) and checks the
    whole inventory at once, reporting every problem rather than the first one.
  - "Checks: unknown recipe, variant, hardware, strategy, feature or mode ids (with the valid choices);
    a variant that does not fit a non-scalable profile; a precision the hardware cannot run (nvfp4 on
    Hopper); a strategy the recipe does not offer on that hardware; replica groups whose size differs
    from what the strategy needs, or whose members disagree (mixed hardware, GPU counts, recipes);
    mutually exclusive features (C(text_only) with C(encoder_parallel)); PD pools without GPUs; missing
    cluster interfaces; and flags the target vLLM version does not know."
  - With O(dest), also writes C(<dest>/<inventory_hostname>/) with C(argv.json), C(env.json),
    C(command.sh), C(image.txt) and C(plan.json), rewriting a file only when its content changes.
  - Use it with C(run_once=true); the result is registered for every host of the play.
  - "What it sees: the host it runs for, with its variables as Ansible resolved them at this task (play, role and
    task vars, C(-e), C(set_fact), host and group vars, in Ansible's precedence); the other hosts through
    C(hostvars), which holds no play, role or task vars. The current host's values of the inventory variables
    (the C(llmfleet.vllm.recipe) lookup's notes) that its own C(hostvars)
    lack or hold differently (from a play, role or task scope) are applied to the other hosts of the play, with a
    warning where such a host's own value differs (it may get another value when it runs); hosts outside the play
    (the rest of the inventory with O(scope=inventory)) are seen through their C(hostvars) only. C(-e name=value)
    strings are read as the integer variables' integers where unambiguous."
  - "Also refused: unknown vllm_* variable names (with the closest spelling), a host that sets inventory variables
    but no usable C(vllm_recipe), and a play none of whose hosts sets C(vllm_recipe)."
options:
  hosts:
    description: Hosts to plan (plan files, O(report), RV(plans)). Default is every host of the play (C(ansible_play_hosts_all)).
    type: list
    elements: str
  scope:
    description:
      - Which hosts are validated. V(inventory) checks every host of the inventory that sets C(vllm_recipe),
        so a run limited with C(-l) cannot start while another part of the fleet is broken; V(play) checks the planned hosts only.
    type: str
    choices: [inventory, play]
    default: inventory
  report:
    description:
      - Also return RV(report), a compact per-host summary (role, image, command lines, env, provenance lines),
        and RV(summary) and RV(counts), the fleet table and counts that C(playbooks/plan.yml) prints.
      - With it, the task's own result is not printed at C(-v) (print RV(summary) and RV(report) with
        C(ansible.builtin.debug), as C(plan.yml) does), so that a large fleet is not printed twice.
    type: bool
    default: false
  return_plans:
    description: Return the full per-host plans in RV(plans). Turn it off for large fleets when only the check or the files matter.
    type: bool
    default: true
  dest:
    description: Directory for the per-host plan files. Nothing is written when unset.
    type: path
  fail_on_problems:
    description: Fail the task when any problem is found (the default). With V(false), problems are returned only.
    type: bool
    default: true
  serial:
    description:
      - "A rollout's batch size, as a play's C(serial) takes it (an integer, a percentage such as V(25%), or a list of
        them, the last one repeating). With it, the task also refuses a run that would split a multi-node replica
        (which restarts together): a replica with a member outside the play's hosts (a C(-l) that cuts it), or with
        members in two batches of the play's hosts in name order (C(order=sorted))."
      - A value of another form is a problem that names the valid forms.
    type: raw
  max_fail_percentage:
    description:
      - The rollout's C(vllm_deploy_max_fail_percentage) (a number from 0 to 100, or its text as C(-e) gives it),
        checked only; another value is a problem.
    type: raw
  plan:
    description:
      - Resolve and check the plans (the default). V(false) skips them, for a second check of O(serial) only in a
        playbook whose preflight already validated the fleet.
    type: bool
    default: true
attributes:
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
    support: full
    details: In check mode the plan files are not written; the C(changed) status says whether they would be.
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode.
    support: none
  platform:
    description: Target OS/families that can be operated against.
    support: N/A
    platforms: all
  action:
    description: Indicates this has a corresponding action plugin so some parts of the options can be executed on the controller.
    support: full
notes:
  - The collection's C(playbooks/preflight.yml) runs this task first in every entry playbook with
    C(any_errors_fatal=true), so a failed preflight changes no host.
seealso:
  - plugin: llmfleet.vllm.recipe
    plugin_type: lookup
"""

EXAMPLES = r"""
- name: Validate the whole inventory before touching any host
  llmfleet.vllm.fleet_plan:
  run_once: true

- name: Refuse a limit or a batch size that splits a multi-node replica (the plans were checked before)
  llmfleet.vllm.fleet_plan:
    serial: "{{ vllm_deploy_serial | default('100%') }}"
    plan: false
    return_plans: false
  run_once: true

- name: Plan every host and write plan/<host>/ files
  llmfleet.vllm.fleet_plan:
    dest: "{{ vllm_plan_dir | default(playbook_dir ~ '/../plan') }}"
  run_once: true
  register: fleet
"""

RETURN = r"""
plans:
  description: Inventory hostname -> host plan (the same dict the C(llmfleet.vllm.recipe) lookup returns).
  returned: when O(return_plans=true)
  type: dict
report:
  description: Inventory hostname -> C(role), C(image), C(command) (lines), C(env) and C(provenance) (lines).
  returned: when O(report=true)
  type: dict
summary:
  description:
    - Text lines with fixed-width columns (ASCII). A headline, then one table row per planned host (host, role, replica
      with the rank in brackets, hardware with its GPUs per node, variant, strategy, image, API port (V(-) for a node
      that serves no HTTP), TP/PP/DP read from the final argv (C(--tensor-parallel-size), C(--pipeline-parallel-size),
      C(--data-parallel-size) or their short aliases; a missing flag is 1; V(-) without a C(vllm serve) argv),
      warning codes), then the host counts by recipe (with its variants), by hardware (with the GPUs the plans use)
      and by warning code, each with its meaning.
    - "Warning codes: V(unpinned) (an image with no tag, or tag C(latest) or C(nightly), and no digest); the kind of each
      plan warning (V(idle_gpus), V(mode_fallback), V(kv_offload_skipped), V(pd_pool_without_gpu), V(pd_pool_dp_size),
      V(pd_pool_tp_size), V(pd_parallelism), V(xpu_nightly), V(vram_fit), V(precision), V(other)); and the deliberate
      deviations from upstream (README) that applied, as far as the plan records them: V(D1) (a provenance source
      tagged D1, a feature's env), V(D5) (a plan warning tagged D5), V(D6) (the plan's GPUs per node differ from the
      hardware profile's). D2 to D4 make upstream's silent fallbacks errors, so a planned host never shows them;
      D7 (our own invocation instead of upstream's C(docker run) line) applies to every host and is counted once."
  returned: when O(report=true)
  type: list
  elements: str
counts:
  description:
    - Host counts of the planned hosts, C(recipe) (id), C(variant) (recipe -> variant), C(hardware) (id) and
      C(warning) (code, as in RV(summary); C(D7) counts every host), and C(gpus) (hardware id -> GPUs the plans use).
  returned: when O(report=true)
  type: dict
checked:
  description: Number of vLLM hosts validated.
  returned: always
  type: int
planned:
  description: Number of hosts planned.
  returned: always
  type: int
problems:
  description: Every problem found, one message each, naming the host, the variable or id, the bad value and the valid choices.
  returned: always
  type: list
  elements: str
warnings_by_host:
  description: Non-fatal warnings per host (upstream quirks reproduced on purpose, gated options that were skipped).
  returned: always
  type: dict
written:
  description: Plan files written or rewritten (empty when O(dest) is unset or nothing changed).
  returned: always
  type: list
  elements: str
"""
