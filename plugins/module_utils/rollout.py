# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmfleet contributors
# Apache License 2.0 (see LICENSE)
"""Rollout batches: how a play's ``serial`` cuts the fleet, and the replicas a batch would split.

A multi-node replica restarts together, so it must be deployed whole and within one batch.
``serial_batches`` reproduces Ansible's own batching (``serial:`` as an int, a ``"N%"`` string
or a list of them, the last one repeating; a percentage is of the play's hosts, at least 1;
0 or less means one batch) over hosts in the play's order. ``replica_batch_problems`` names
the replicas that a limit leaves incomplete or that a batch size splits.

Pure Python: no Ansible imports.
"""

from __future__ import annotations

import re

from .errors import RecipeError

_PERCENT = re.compile(r"^\s*(-?\d+)\s*%\s*$")
_INT = re.compile(r"^\s*-?\d+\s*$")
SERIAL_FORMS = 'an integer (hosts per batch), a percentage such as "25%", or a list of them (the last repeats)'


def parse_serial(serial, what="vllm_deploy_serial"):
    """``serial`` as a list of batch sizes, each an int or ``(percent,)``; raises RecipeError."""
    items = serial if isinstance(serial, (list, tuple)) else [serial]
    if not items:
        return [-1]
    out = []
    for item in items:
        if isinstance(item, bool) or item is None:
            raise RecipeError("%s=%r: expected %s" % (what, serial, SERIAL_FORMS))
        if isinstance(item, int):
            out.append(item)
            continue
        text = str(item)
        pct = _PERCENT.match(text)
        if pct:
            out.append((int(pct.group(1)),))
        elif _INT.match(text):
            out.append(int(text))
        else:
            raise RecipeError("%s=%r: expected %s" % (what, serial, SERIAL_FORMS))
    return out


def _size(item, total):
    if isinstance(item, tuple):
        return int(item[0] / 100.0 * total) or 1
    return item


def serial_batches(hosts, serial, what="vllm_deploy_serial"):
    """The batches Ansible makes of ``hosts`` (in play order) with ``serial``."""
    sizes = parse_serial(serial, what)
    rest = list(hosts)
    total = len(rest)
    batches = []
    index = 0
    while rest:
        size = _size(sizes[index], total)
        if size <= 0:
            batches.append(rest)
            break
        batches.append(rest[:size])
        rest = rest[size:]
        index = min(index + 1, len(sizes) - 1)
    return batches


def replica_batch_problems(hosts, replicas, serial, what="vllm_deploy_serial"):
    """Problems with deploying ``hosts`` (play order) in batches of ``serial``.

    ``replicas``: replica name -> every member (from the inventory). A replica with a member
    outside ``hosts`` (a ``-l`` that cuts it) or with members in two batches is named.
    """
    batches = serial_batches(hosts, serial, what)
    batch_of = dict((h, i) for i, batch in enumerate(batches) for h in batch)
    names = sorted(replicas)
    partial = [r for r in names if any(m not in batch_of for m in replicas[r])]
    split = [r for r in names if r not in partial and len(set(batch_of[m] for m in replicas[r])) > 1]
    out = []
    if partial:
        out.append("a multi-node replica restarts together, so it must be deployed whole. Replicas with members left "
                   "out of this run (by -l/--limit): %s: include every member (e.g. -l %s)" % (", ".join(partial), partial[0]))
    if split:
        sizes = sorted(set(len(b) for b in batches[:-1])) or [len(batches[0])]
        out.append("a multi-node replica restarts together, so it must be deployed within one batch. %s=%s (batches of "
                   "%s hosts, in inventory-name order) splits %s: use a batch size in whole replicas and name the hosts "
                   "so that each replica's members sort together" % (
                       what, _show(serial), "/".join(str(s) for s in sizes), ", ".join(split)))
    return out


def _show(serial):
    if isinstance(serial, (list, tuple)):
        return "[%s]" % ", ".join(str(s) for s in serial)
    return str(serial)


__all__ = ["parse_serial", "serial_batches", "replica_batch_problems", "SERIAL_FORMS"]
