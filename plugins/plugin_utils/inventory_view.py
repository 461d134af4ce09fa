# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmfleet contributors
# Apache License 2.0 (see LICENSE)
"""Controller-side glue: the variables of the fleet as the planner sees them, from a task's vars.

The current host (the one a task or lookup runs for) is read from the variables Ansible resolved
for it at that point (play, role, include_role, block and task vars, ``-e``, ``set_fact``, host
and group vars, in Ansible's own precedence). Ansible gives no such view of the other hosts:
``hostvars[host]`` holds their inventory, host/group vars, ``-e``, facts and ``set_fact`` values,
but no play, role or task vars. So the current host's vllm_* values that its hostvars lack (or
hold with another value) came from such a scope, which applies to every host of the play: they
are applied to the other hosts of the play too, with a warning where such a host's own value
differs (it may run with another value than the one preflight saw). Hosts outside the play (the
rest of the inventory) are seen through their hostvars only.
"""

from __future__ import annotations

from collections.abc import Mapping

from ansible_collections.llmfleet.vllm.plugins.module_utils.inventory_vars import NAMES, coerce_text

#: What the planner reads of a host: the inventory variables of its table, and ansible_host.
#: vllm_serve_name: the role's unit name, which must differ between the hosts of one machine.
_KEYS = NAMES + ("ansible_host", "vllm_serve_name")
#: What a play, role or task scope of the current host gives the other hosts of the play: the table's
#: variables (no role of the collection has defaults for them, the one scope that loses to inventory);
#: not ansible_host, nor vllm_serve_name, which the vllm_serve role's defaults set.
_SCOPED = frozenset(NAMES)


def extra_kv_names():
    """Names given as ``-e name=value`` (those values are strings; JSON, YAML and @file keep their types)."""
    try:
        from ansible import context
        from ansible.parsing.splitter import parse_kv
        opts = context.CLIARGS.get("extra_vars", ()) or ()
    except Exception:  # no CLI context (unit tests, API use)
        return frozenset()
    names = set()
    for opt in opts:
        opt = str(opt).strip()
        if opt and opt[0] not in "@/.[{":
            try:
                names.update(parse_kv(opt))
            except Exception:
                pass
    return frozenset(names)


class HostvarsView(Mapping):
    """hostname -> {vllm_* variables, ansible_host}, templated on first access only.

    Reading every variable of 1,000 hosts through Ansible's ``hostvars`` is costly; the
    planner only needs the host being planned and the members of its replica.

    ``current``/``resolved``: the host the task runs for and its resolved variables (name ->
    templated value, the names of the table only); ``resolved_names``: every vllm_* name it has;
    ``play_hosts``: the hosts of the play (they get the current host's play/role/task values);
    ``kv_names``: names given as ``-e name=value``, whose string values are read as the table's
    integer or boolean where unambiguous. ``warnings`` collects what preflight cannot know.
    """

    def __init__(self, hostvars, hosts, current=None, resolved=None, resolved_names=(), play_hosts=(), kv_names=()):
        self._hostvars = hostvars
        self._hosts = list(hosts)
        self._cache = {}
        self._names = {}
        self._current = current if resolved is not None else None
        self._resolved = dict(resolved or {})
        self._resolved_names = list(resolved_names)
        self._play_hosts = set(play_hosts)
        self._kv_names = frozenset(kv_names)
        self._scope = None
        self._scope_names = []
        self._raw_current = None
        self.warnings = []

    @classmethod
    def from_task_vars(cls, variables, template, hosts=None):
        """The view for a task or lookup of ``variables["inventory_hostname"]`` (``template``: value -> templated value)."""
        hostvars = variables.get("hostvars")
        groups = variables.get("groups") or {}
        everyone = hosts if hosts is not None else (list(groups.get("all") or ()) or list(hostvars or ()))
        current = variables.get("inventory_hostname")
        resolved = dict((k, to_plain(template(variables[k]))) for k in _KEYS if k in variables)
        names = [str(k) for k in variables if str(k).startswith("vllm_")]
        play = to_plain(variables.get("ansible_play_hosts_all") or [current])
        return cls(hostvars, everyone, current=current, resolved=resolved, resolved_names=names, play_hosts=play,
                   kv_names=extra_kv_names())

    # ------------------------------------------------------------------ the play/role/task scope
    def scope(self):
        """The current host's values from play, role or task scope: name -> value (table names only)."""
        if self._scope is None:
            self._scope = {}
            if self._current is not None and self._current in self._hostvars:
                own = self._raw(self._current)
                for key, value in self._resolved.items():
                    if key not in _SCOPED:
                        continue
                    if key not in own or _read(own, key, _MISSING) != value:
                        self._scope[key] = value
                self._scope_names = [n for n in self._resolved_names if n not in own or n in self._scope]
            else:
                self._scope_names = []
        return self._scope

    # ------------------------------------------------------------------ Mapping
    def __getitem__(self, host):
        hit = self._cache.get(host)
        if hit is not None:
            return hit
        if host not in self._hosts and host not in self._hostvars and host != self._current:
            raise KeyError(host)
        raw = self._raw(host) if host in self._hostvars else {}
        out = {}
        if host == self._current:
            out.update(self._resolved)
            names = list(self._resolved_names)
        else:
            scope = self.scope() if host in self._play_hosts else {}
            in_scope = host in self._play_hosts and (scope or self._scope_names)
            for key in _KEYS:
                if key in raw:
                    # a value that cannot be templated in the host's own context is the scope's to give
                    out[key] = _read(raw, key, _MISSING) if key in scope else to_plain(raw[key])
            names = [str(k) for k in raw if str(k).startswith("vllm_")]
            if in_scope:
                self._apply_scope(host, out, names)
        for key in self._kv_names:
            if key in out:
                out[key] = coerce_text(key, out[key])
        try:
            facts = raw.get("ansible_facts", {}).get("llmfleet_gpu")
        except AttributeError:
            facts = None
        if facts:
            out["_gpu_facts"] = to_plain(facts)
        self._cache[host] = out
        self._names[host] = names
        return out

    def _raw(self, host):
        """``hostvars[host]``; the current host's is read once (Ansible computes it on each access)."""
        if host != self._current:
            return self._hostvars[host]
        if self._raw_current is None:
            self._raw_current = self._hostvars[host]
        return self._raw_current

    def _apply_scope(self, host, out, names):
        for key, value in self.scope().items():
            if key in out and out[key] != value:
                self.warnings.append(
                    "host %s: its own %s differs from the value %s has from play, role or task vars; preflight "
                    "used that value for %s too, which it may not get when it runs" % (host, key, self._current, host))
            out[key] = value
        names.extend(n for n in self._scope_names if n not in names)

    def __iter__(self):
        return iter(self._hosts)

    def __len__(self):
        return len(self._hosts)

    def names(self, host):
        """Every vllm_* variable name ``host`` has (as the view sees it)."""
        self[host]
        return self._names[host]

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


_MISSING = object()


def _read(raw, key, default):
    """``raw[key]`` as plain data, or ``default`` when it cannot be templated in that host's context."""
    try:
        return to_plain(raw[key])
    except Exception:
        return default


def to_plain(value):
    """Ansible's lazy/unsafe containers as plain dict/list/str (JSON-safe)."""
    if isinstance(value, Mapping):
        return dict((str(k), to_plain(v)) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return [to_plain(v) for v in value]
    if isinstance(value, str):
        return str(value)
    return value
