# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmfleet contributors
# Apache License 2.0 (see LICENSE)
"""Filters for systemd units and env files: systemd_exec, env_file (docs in the sidecar .yml files)."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.llmfleet.vllm.plugins.module_utils import systemd_unit
from ansible_collections.llmfleet.vllm.plugins.module_utils.errors import RecipeError
from ansible_collections.llmfleet.vllm.plugins.plugin_utils.inventory_view import to_plain


def systemd_exec(argv, multiline=False, indent="    ", break_before=None):
    try:
        return systemd_unit.exec_line(to_plain(argv), multiline=multiline, indent=indent,
                                      break_before=to_plain(break_before))
    except RecipeError as exc:
        raise AnsibleFilterError("llmfleet.vllm.systemd_exec: %s" % exc)


def env_file(env, fmt="systemd", header=None):
    try:
        return systemd_unit.env_file(to_plain(env), fmt=fmt, header=header)
    except RecipeError as exc:
        raise AnsibleFilterError("llmfleet.vllm.env_file: %s" % exc)  # the messages never include a value


class FilterModule(object):

    def filters(self):
        return {
            "systemd_exec": systemd_exec,
            "env_file": env_file,
        }
