# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmfleet contributors
# Apache License 2.0 (see LICENSE)
"""Filter service_spec: a host plan as the vllm_serve role writes it (docs in service_spec.yml)."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.llmfleet.vllm.plugins.module_utils import service
from ansible_collections.llmfleet.vllm.plugins.module_utils.errors import RecipeError
from ansible_collections.llmfleet.vllm.plugins.plugin_utils.inventory_view import to_plain


def service_spec(plan, settings=None):
    try:
        return service.service_spec(to_plain(plan), to_plain(settings or {}))
    except RecipeError as exc:
        raise AnsibleFilterError("llmfleet.vllm.service_spec: %s" % exc)  # the messages never include a secret


class FilterModule(object):

    def filters(self):
        return {"service_spec": service_spec}
