# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmfleet contributors
# Apache License 2.0 (see LICENSE)
"""Renderers over a host plan: shell command, container run argv, provenance explanation.

Pure Python: no Ansible imports.
"""

from __future__ import annotations

from .errors import RecipeError
from .resolver import format_command, format_router

HF_CACHE_IN_CONTAINER = "/root/.cache/huggingface"


def _check_plan(plan, what):
    if not isinstance(plan, dict) or not isinstance(plan.get("argv"), list):
        raise RecipeError("%s expects a host plan (from lookup('llmfleet.vllm.recipe')) or a resolver node with "
                          "an 'argv' list; got %s" % (what, type(plan).__name__))


def shell_command(plan, env=False):
    """The plan's command as one shell string, quoted as upstream quotes it."""
    _check_plan(plan, "shell_command")
    argv = [str(t) for t in plan["argv"]]
    cmd = format_router(argv) if argv[0] == "vllm-router" else format_command(argv)
    if env and plan.get("env"):
        from .resolver import env_exports
        return env_exports(plan["env"]) + "\n" + cmd
    return cmd


def container_argv(plan, engine="docker", name=None, hf_cache="/var/lib/llmfleet/hf-cache", env_file=None,
                   inline_env=True, network=None, extra_args=None, detach=False, remove=True):
    """The ``docker run``/``podman run`` argv of a plan (deviation D7: our production invocation).

    Only the GPU device flags per brand and the image come from upstream; the rest is ours:
    a named container, expanded paths, the port from inventory, host networking for multi-node
    roles (NCCL, Gloo and ZMQ need it), the image entrypoint ``vllm serve`` (so the argv
    carries the model and flags, not ``vllm serve`` again) and secrets only through
    ``--env-file``.
    """
    _check_plan(plan, "container_argv")
    if engine not in ("docker", "podman"):
        raise RecipeError("container_argv: engine=%r; valid: docker, podman" % (engine,))
    argv = [str(t) for t in plan["argv"]]
    ray = argv[:2] == ["ray", "start"]
    if not ray and (argv[:1] != ["vllm"] or argv[1:2] != ["serve"]):
        raise RecipeError("container_argv: only `vllm serve` and `ray start` (Ray mode) run in the vLLM image (role %s)"
                          % plan.get("role"))
    out = [engine, "run"]
    if remove:
        out.append("--rm")
    if detach:
        out.append("-d")
    out += ["--name", name or "vllm-%s" % plan.get("host", "serve")]
    gpu = list(plan.get("docker_gpu_flags") or [])
    if engine == "podman" and gpu == ["--gpus", "all"]:
        gpu = ["--device", "nvidia.com/gpu=all"]  # CDI, the podman way
    out += gpu
    out.append("--ipc=host")
    if network is None:
        network = "host" if plan.get("deploy_type") in ("multi_node", "pd_cluster") else None
    if network:
        out += ["--network", network]
    else:
        port = int(plan.get("port") or 8000)
        out += ["-p", "%d:%d" % (port, port)]
    out += ["-v", "%s:%s" % (hf_cache, HF_CACHE_IN_CONTAINER)]
    model = "" if ray else argv[2]
    if model.startswith("/"):
        out += ["-v", "%s:%s:ro" % (model, model)]
    env = plan.get("env") or {}
    for key in sorted(env):
        if key.endswith("_CONFIG_PATH") and env[key].startswith("/"):
            out += ["-v", "%s:%s:ro" % (env[key], env[key])]
    if env_file:
        out += ["--env-file", env_file]
    if inline_env:
        for key, value in env.items():
            out += ["-e", "%s=%s" % (key, value)]
    out += list(plan.get("container_args") or [])  # e.g. RDMA devices of a multi-node replica
    out += list(extra_args or [])
    if ray:  # a Ray node of a Ray-mode replica: the same image, entrypoint ray
        out += ["--entrypoint", "ray", plan["image"]] + argv[1:]
        return out
    out.append(plan["image"])
    out += argv[2:]
    return out


def explain(plan):
    """Provenance as readable lines: each flag and env key with the layer that set it."""
    if not isinstance(plan, dict) or "args_provenance" not in plan:
        raise RecipeError("explain expects a host plan or resolver node with args_provenance")
    lines = []
    head = []
    for key in ("host", "role", "rank", "recipe", "variant", "hardware", "strategy"):
        if plan.get(key) is not None:
            head.append("%s=%s" % (key, plan[key]))
    if head:
        lines.append(" ".join(head))
    if plan.get("image"):
        lines.append("image %s  <- %s" % (plan["image"], plan.get("image_source", "")))
    for item in plan["args_provenance"]:
        line = "%-48s <- %s" % (" ".join(item["arg"]), item["source"])
        for old in item.get("replaced", []):
            line += "; replaced %s (%s)" % (" ".join(old["arg"]), old["source"])
        lines.append(line)
    for key, value in sorted((plan.get("env") or {}).items()):
        prov = (plan.get("env_provenance") or {}).get(key, {})
        line = "env %s=%s  <- %s" % (key, value, prov.get("source", "binding"))
        for old in prov.get("replaced", []):
            line += "; replaced %r (%s)" % (old["value"], old["source"])
        lines.append(line)
    for warning in plan.get("warnings") or []:
        lines.append("warning: " + warning)
    return lines
