# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmfleet contributors
# Apache License 2.0 (see LICENSE)
"""Controller side of llmfleet.vllm.gpu_facts (see plugins/modules/gpu_facts.py).

Loads the taxonomy of the host's ``vllm_recipes_path`` trees (else the built-in one), passes its
hardware profiles to the module as ``profiles`` and runs the module on the host.
"""

from __future__ import annotations

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

from ansible_collections.llmfleet.vllm.plugins.module_utils.catalog import get_catalog
from ansible_collections.llmfleet.vllm.plugins.module_utils.errors import RecipeError
from ansible_collections.llmfleet.vllm.plugins.module_utils.gpu import profile_specs
from ansible_collections.llmfleet.vllm.plugins.plugin_utils.inventory_view import to_plain


def recipe_trees(value):
    """``vllm_recipes_path`` (a path, a list of paths or unset) as a list, or None for the built-in tree."""
    if not value:
        return None
    return [value] if isinstance(value, str) else list(value)


class ActionModule(ActionBase):

    TRANSFERS_FILES = False

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        task_vars = task_vars or {}
        args = dict(self._task.args)
        if args.get("profiles") is None:
            trees = recipe_trees(to_plain(self._templar.template(task_vars.get("vllm_recipes_path"))))
            try:
                args["profiles"] = profile_specs(get_catalog(trees).hardware_profiles)
            except RecipeError as exc:
                raise AnsibleActionFail("llmfleet.vllm.gpu_facts: the taxonomy for the profile match: %s" % exc)
        result.update(self._execute_module(module_name="llmfleet.vllm.gpu_facts", module_args=args,
                                           task_vars=task_vars))
        return result
