# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmfleet contributors
# Apache License 2.0 (see LICENSE)
"""Controller-side glue: a lazy view of Ansible ``hostvars`` for the fleet planner."""

from __future__ import annotations

from collections.abc import Mapping

from ansible_collections.llmfleet.vllm.plugins.module_utils.inventory_vars import NAMES

#: What the planner reads of a host: the inventory variables of its table, and ansible_host.
_KEYS = NAMES + ("ansible_host",)


class HostvarsView(Mapping):
    """hostname -> {vllm_* variables, ansible_host}, templated on first access only.

    Reading every variable of 1,000 hosts through Ansible's ``hostvars`` is costly; the
    planner only needs the host being planned and the members of its replica.
    """

    def __init__(self, hostvars, hosts):
        self._hostvars = hostvars
        self._hosts = list(hosts)
        self._cache = {}

    def __getitem__(self, host):
        hit = self._cache.get(host)
        if hit is not None:
            return hit
        if host not in self._hosts and host not in self._hostvars:
            raise KeyError(host)
        raw = self._hostvars[host]
        out = {}
        for key in _KEYS:
            if key in raw:
                out[key] = to_plain(raw[key])
        try:
            facts = raw.get("ansible_facts", {}).get("llmfleet_gpu")
        except AttributeError:
            facts = None
        if facts:
            out["_gpu_facts"] = to_plain(facts)
        self._cache[host] = out
        return out

    def __iter__(self):
        return iter(self._hosts)

    def __len__(self):
        return len(self._hosts)

    def facts(self):
        """hostname -> llmfleet_gpu facts, for the hosts read so far and on demand."""
        view = self

        class _Facts(Mapping):
            def __getitem__(self, host):
                return view[host].get("_gpu_facts") or {}

            def __iter__(self):
                return iter(view._hosts)

            def __len__(self):
                return len(view._hosts)
        return _Facts()


def to_plain(value):
    """Ansible's lazy/unsafe containers as plain dict/list/str (JSON-safe)."""
    if isinstance(value, Mapping):
        return dict((str(k), to_plain(v)) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return [to_plain(v) for v in value]
    if isinstance(value, str):
        return str(value)
    return value
