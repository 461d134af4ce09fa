# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmfleet contributors
# Apache License 2.0 (see LICENSE)
"""Renderers over an argv, an env or a host plan: shell quoting, the shell command (as upstream
prints it), env exports, the container run argv and the provenance explanation.

Pure Python: no Ansible imports. Nothing here selects or builds; the resolver and the fleet
layer hand in what they built.
"""

from __future__ import annotations

from .errors import RecipeError

HF_CACHE_IN_CONTAINER = "/root/.cache/huggingface"

# --------------------------------------------------------------------------- shell form

_SAFE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_./=:@,+%-")


def shell_quote(value):
    """Upstream's shellQuote: a bare ``$VAR`` and safe words as they are, anything else single-quoted."""
    if value and value[0] == "$" and len(value) > 1 and (value[1].isupper() or value[1] == "_") and \
            all(c.isupper() or c.isdigit() or c == "_" for c in value[1:]) and value[1:2] not in "0123456789":
        return value
    if value and all(c in _SAFE for c in value):
        return value
    return "'" + value.replace("'", "'\\''") + "'"


def _lines(args):
    """One line per unit (flag [value] or positional), as the resolver's dedupe tokenized them."""
    out = []
    i = 0
    n = len(args)
    while i < n:
        tok = args[i]
        if tok[:1] == "-":
            if i + 1 < n and args[i + 1][:1] != "-":
                out.append("%s %s" % (tok, shell_quote(args[i + 1])))
                i += 2
                continue
            out.append(tok)
        elif out:
            out[-1] += " " + shell_quote(tok)  # an extra value of a multi-value flag (--served-model-name a b)
        else:
            out.append(shell_quote(tok))
        i += 1
    return out


def format_command(argv):
    """Upstream's formatCommand: ``vllm serve <model> \\`` then one unit per line."""
    head = "%s %s %s" % (argv[0], argv[1], shell_quote(argv[2]))
    lines = _lines(argv[3:])
    if not lines:
        return head
    return head + " \\\n  " + " \\\n  ".join(lines)


def format_router(argv):
    """The router command as upstream prints it (values are never quoted there)."""
    lines = []
    for tok in argv[1:]:
        if tok[:1] == "-" or not lines:
            lines.append(tok)
        else:
            lines[-1] += " " + tok
    return argv[0] + " " + lines[0] + "".join(" \\\n    " + ln for ln in lines[1:])


def env_exports(env):
    """``export KEY=value`` lines, values quoted as :func:`shell_quote` quotes them."""
    return "\n".join("export %s=%s" % (k, shell_quote(v)) for k, v in env.items())


# --------------------------------------------------------------------------- host plans


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
        return env_exports(plan["env"]) + "\n" + cmd
    return cmd


def docker_gpu_selection(flags, gpu_ids):
    """The docker GPU flags that run on GPUs ``gpu_ids`` only, from a brand's flags ``flags``.

    NVIDIA's ``--gpus all`` becomes ``--gpus device=0`` or, for several GPUs, ``--gpus
    '"device=0,1"'`` as a shell writes it: docker reads the value as CSV, so a comma-separated
    device list needs the double quotes inside the value itself (the argv element is
    ``"device=0,1"``; systemd and exec pass it as it is). Other brands' flags (AMD, Intel: every
    ``/dev/dri`` node) are returned unchanged; their GPUs are selected by the env
    (``ROCR_VISIBLE_DEVICES``, ``ZE_AFFINITY_MASK``), which indexes the machine's devices."""
    flags = list(flags)
    if flags != ["--gpus", "all"]:
        return flags
    spec = "device=" + ",".join(str(i) for i in gpu_ids)
    return ["--gpus", '"%s"' % spec if len(gpu_ids) > 1 else spec]


def _selected_nvidia(flags):
    """The GPU indices a ``--gpus device=...`` value of ``flags`` selects (None: no selection)."""
    for i, tok in enumerate(flags[:-1]):
        if tok == "--gpus":
            value = flags[i + 1].strip('"\'')
            if value.startswith("device="):
                return value[len("device="):].split(",")
    return None


def container_gpu_flags(flags, engine="docker"):
    """The GPU flags for ``engine``: docker's as they are; on podman NVIDIA's ``--gpus`` becomes CDI
    devices (``--device nvidia.com/gpu=all``, or one ``--device nvidia.com/gpu=<i>`` per selected GPU)."""
    flags = [str(f) for f in flags]
    if engine != "podman" or "--gpus" not in flags:
        return flags
    ids = _selected_nvidia(flags)
    devices = []
    for dev in ids if ids is not None else ["all"]:
        devices += ["--device", "nvidia.com/gpu=%s" % dev]
    at = flags.index("--gpus")
    return flags[:at] + devices + flags[at + 2:]


def container_env(env, gpu_flags):
    """The env inside a container run with ``gpu_flags``: when the flags select NVIDIA GPUs
    (``--gpus device=...``, CDI ``nvidia.com/gpu=<i>``) the container sees only those, numbered
    from 0, so ``CUDA_VISIBLE_DEVICES`` (the machine's indices) is left out."""
    flags = [str(f) for f in gpu_flags]
    selects = _selected_nvidia(flags) is not None or any(
        f.startswith("nvidia.com/gpu=") and f != "nvidia.com/gpu=all" for f in flags)
    if not selects or "CUDA_VISIBLE_DEVICES" not in env:
        return env
    return dict((k, v) for k, v in env.items() if k != "CUDA_VISIBLE_DEVICES")


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
    gpu = container_gpu_flags(plan.get("docker_gpu_flags") or [], engine)
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
        for key, value in container_env(env, gpu).items():
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
