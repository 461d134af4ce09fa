# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmfleet contributors
# Apache License 2.0 (see LICENSE)
"""Filters over host plans: shell_command, container_argv, explain (docs in the sidecar .yml files)."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.llmfleet.vllm.plugins.module_utils import render
from ansible_collections.llmfleet.vllm.plugins.module_utils.errors import RecipeError
from ansible_collections.llmfleet.vllm.plugins.plugin_utils.inventory_view import to_plain


def _wrap(func):
    def run(plan, *args, **kwargs):
        try:
            return func(to_plain(plan), *args, **kwargs)
        except RecipeError as exc:
            raise AnsibleFilterError("llmfleet.vllm.%s: %s" % (func.__name__, exc))
    run.__name__ = func.__name__
    return run


class FilterModule(object):

    def filters(self):
        return {
            "shell_command": _wrap(render.shell_command),
            "container_argv": _wrap(render.container_argv),
            "explain": _wrap(render.explain),
        }
