#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmfleet contributors
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
module: vllm_health
author: llmfleet contributors (@llmfleet)
version_added: 0.1.0
short_description: Wait until a vLLM server is ready, in three stages
description:
  - Polls a vLLM OpenAI server on the managed host until it serves, then checks it, in three stages.
  - "Stage C(health): C(GET /health) answers 200. A refused connection, a timeout or a 503 mean
    I(still starting) (vLLM binds its port only after the model is loaded and warmed up), so the
    module keeps polling every O(interval) seconds until O(timeout)."
  - "Stage C(models): C(GET /v1/models) lists every name of O(served_model_names)."
  - "Stage C(completion): a one-token C(POST /v1/completions) for the first served name succeeds
    (skipped with O(completion=false))."
  - "With O(unit), the systemd unit is watched while waiting: when it fails, stops, or is restarted
    by systemd (C(Restart=on-failure)), the module fails at once instead of waiting for the timeout."
  - On failure the message names the stage and the reason and ends with the last O(journal_lines)
    lines of the unit's journal.
  - Reads only; never changes the host.
options:
  host:
    description: Address to connect to. An address the server binds to, usually the loopback address.
    type: str
    default: 127.0.0.1
  port:
    description: The server's port.
    type: int
    default: 8000
  served_model_names:
    description: Names C(/v1/models) must list. Empty skips the C(models) stage and the completion.
    type: list
    elements: str
    default: []
  api_key:
    description: The server's API key (C(VLLM_API_KEY) or C(--api-key)), sent as a bearer token to C(/v1) routes.
    type: str
  timeout:
    description: Seconds to wait for the whole check, start-up included. Size it for the model (30 minutes and more for large MoE models).
    type: int
    default: 1800
  interval:
    description: Seconds between two C(/health) probes.
    type: float
    default: 5
  request_timeout:
    description: Seconds one HTTP request may take (the completion too).
    type: float
    default: 30
  completion:
    description: Run the one-token completion stage.
    type: bool
    default: true
  unit:
    description: The systemd unit serving vLLM, watched while waiting and quoted from the journal on failure.
    type: str
  journal_lines:
    description: Lines of the unit's journal in a failure message (0 for none).
    type: int
    default: 40
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
    details: The module only reads; it runs the same in check mode.
  diff_mode:
    support: none
  platform:
    platforms: posix
notes:
  - The API key is a secret; the module marks it C(no_log) and never returns it.
"""

EXAMPLES = r"""
- name: Wait for the new server (30 minutes for a large model)
  llmfleet.vllm.vllm_health:
    port: "{{ vllm_port | default(8000) }}"
    served_model_names: [qwen-3.6-35b-a3b]
    api_key: "{{ vault_vllm_api_key }}"
    unit: vllm-serve.service
    timeout: 1800
"""

RETURN = r"""
elapsed:
  description: Seconds from the start of the check to its end.
  returned: always
  type: float
stage:
  description: The last stage reached (C(health), C(models), C(completion)) or C(ready).
  returned: always
  type: str
  sample: ready
models:
  description: The model ids C(/v1/models) listed.
  returned: when the models stage ran
  type: list
  elements: str
probes:
  description: Number of C(/health) probes made.
  returned: always
  type: int
journal:
  description: The last lines of the unit's journal (on failure, with O(unit)).
  returned: on failure
  type: list
  elements: str
"""

import json
import time

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.urls import open_url


class GateError(Exception):
    pass


def _url(host, port, path):
    if ":" in host and not host.startswith("["):
        host = "[%s]" % host
    return "http://%s:%d%s" % (host, port, path)


def _request(p, path, body=None):
    """(status, text); status None for a connection error (text says which)."""
    headers = {"Accept": "application/json"}
    if p["api_key"] and path.startswith("/v1"):
        headers["Authorization"] = "Bearer " + p["api_key"]
    data = None
    if body is not None:
        data = json.dumps(body)
        headers["Content-Type"] = "application/json"
    try:
        resp = open_url(_url(p["host"], p["port"], path), data=data, headers=headers,
                        method="POST" if body is not None else "GET", timeout=p["request_timeout"],
                        validate_certs=False, use_proxy=False, follow_redirects="none")
        return resp.getcode(), resp.read().decode("utf-8", "replace")
    except Exception as exc:  # urllib's HTTPError carries a status; anything else is "not up yet"
        code = getattr(exc, "code", None)
        if isinstance(code, int):
            try:
                text = exc.read().decode("utf-8", "replace")
            except Exception:
                text = ""
            return code, text
        reason = getattr(exc, "reason", None) or exc
        return None, "%s" % (reason,)


def _unit_state(module, unit):
    rc, out, _err = module.run_command(["systemctl", "show", unit, "-p", "ActiveState,SubState,Result,NRestarts,MainPID"])
    if rc != 0:
        return {}
    return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)


def _journal(module, unit, lines):
    if not unit or lines <= 0:
        return []
    rc, out, _err = module.run_command(["journalctl", "-u", unit, "-n", str(lines), "--no-pager", "-o", "short-iso"])
    if rc != 0:
        return []
    return out.splitlines()[-lines:]


def gate(module, p, result):
    start = time.time()
    deadline = start + p["timeout"]
    unit = p["unit"]
    first = _unit_state(module, unit) if unit else {}
    restarts0 = first.get("NRestarts")
    last = "no probe yet"
    result["stage"] = "health"
    while True:
        if unit:
            st = _unit_state(module, unit)
            dead = st.get("ActiveState") in ("failed", "inactive", "deactivating") or st.get("SubState") == "auto-restart"
            if dead or (restarts0 is not None and st.get("NRestarts") not in (None, restarts0)):
                raise GateError("%s is not running: ActiveState=%s SubState=%s Result=%s NRestarts=%s (it exited "
                                "while starting)" % (unit, st.get("ActiveState"), st.get("SubState"), st.get("Result"),
                                                     st.get("NRestarts")))
        result["probes"] += 1
        status, text = _request(p, "/health")
        if status == 200:
            break
        last = "HTTP %s" % status if status else "%s (still starting)" % text
        if time.time() + p["interval"] > deadline:
            raise GateError("/health did not answer 200 within %ds; last: %s" % (p["timeout"], last))
        time.sleep(p["interval"])
    result["health_after"] = round(time.time() - start, 1)
    names = p["served_model_names"]
    if not names:
        result["stage"] = "ready"
        return
    result["stage"] = "models"
    status, text = _request(p, "/v1/models")
    if status == 401:
        raise GateError("/v1/models answered 401: the server wants an API key and the one given is missing or wrong")
    if status != 200:
        raise GateError("/v1/models answered %s: %s" % (status, text[:300]))
    try:
        ids = [m["id"] for m in json.loads(text)["data"]]
    except (ValueError, KeyError, TypeError):
        raise GateError("/v1/models returned no model list: %s" % text[:300])
    result["models"] = ids
    missing = [n for n in names if n not in ids]
    if missing:
        raise GateError("/v1/models lists %s but not %s (check --served-model-name)" % (ids, missing))
    if not p["completion"]:
        result["stage"] = "ready"
        return
    result["stage"] = "completion"
    status, text = _request(p, "/v1/completions", {"model": names[0], "prompt": "ping", "max_tokens": 1, "temperature": 0})
    if status != 200:
        raise GateError("a one-token completion for %s answered %s: %s" % (names[0], status, text[:300]))
    try:
        choices = json.loads(text)["choices"]
    except (ValueError, KeyError, TypeError):
        choices = None
    if not choices:
        raise GateError("a one-token completion for %s returned no choices: %s" % (names[0], text[:300]))
    result["stage"] = "ready"


def main():
    module = AnsibleModule(
        argument_spec=dict(
            host=dict(type="str", default="127.0.0.1"),
            port=dict(type="int", default=8000),
            served_model_names=dict(type="list", elements="str", default=[]),
            api_key=dict(type="str", no_log=True),
            timeout=dict(type="int", default=1800),
            interval=dict(type="float", default=5),
            request_timeout=dict(type="float", default=30),
            completion=dict(type="bool", default=True),
            unit=dict(type="str"),
            journal_lines=dict(type="int", default=40),
        ),
        supports_check_mode=True,
    )
    p = module.params
    result = dict(changed=False, probes=0, stage="health")
    start = time.time()
    try:
        gate(module, p, result)
    except GateError as exc:
        result["elapsed"] = round(time.time() - start, 1)
        result["journal"] = _journal(module, p["unit"], p["journal_lines"])
        msg = "vLLM on %s:%d not ready (stage %s): %s" % (p["host"], p["port"], result["stage"], exc)
        if result["journal"]:
            msg += "\n--- journal of %s (last %d lines) ---\n%s" % (p["unit"], len(result["journal"]), "\n".join(result["journal"]))
        module.fail_json(msg=msg, **result)
    result["elapsed"] = round(time.time() - start, 1)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
