# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmfleet contributors
# Apache License 2.0 (see LICENSE)
"""From a host plan and the ``vllm_serve`` role's settings to everything the role writes.

``service_spec(plan, settings)`` is the one place where a plan (``lookup('llmfleet.vllm.recipe')``)
becomes a systemd service: unit, env file and firewall names and paths, the ``ExecStart`` argv
(container or virtualenv), the Ray head's argv, the bind and health-probe addresses, the vLLM
version, the env file's content and the names of the secrets in it, and the problems that make
the plan unsafe to serve. The role writes files and runs services from it; it parses nothing.

``settings`` holds the role's public variables without their ``vllm_serve_`` prefix
(``name``, ``runtime``, ``engine``, ...; see ``SETTINGS``). Secrets (``api_key``, ``hf_token``)
only ever reach ``env``; no problem message carries a value of theirs.

Pure Python: no Ansible imports.
"""

from __future__ import annotations

import re

from .errors import RecipeError
from .render import container_argv, container_env, container_gpu_flags
from .argv import SECRET_ENV, SECRET_FLAGS, SECRET_PLACEHOLDER, flag_value
from .inventory_vars import is_ip
from .systemd_unit import exec_line
from .vllm_flags import parse_image_tag

#: The role's settings this module reads (role variable ``vllm_serve_<key>``) and their defaults.
SETTINGS = {
    "name": "serve",
    "runtime": "container",
    "engine": "docker",
    "engine_path": "/usr/bin/docker",
    "image": "",
    "image_digest": "",
    "image_pull": "always",
    "container_network": "",
    "container_gpu_flags": None,
    "container_allow_privileged": False,
    "container_extra_args": [],
    "version": "",
    "router_version": "",
    "venv_root": "/opt/llmfleet",
    "venv_path": "",
    "venv_installer": "pip",
    "data_dir": "/var/lib/llmfleet",
    "hf_cache": "/var/lib/llmfleet/hf-cache",
    "compile_cache": "/var/lib/llmfleet/vllm-cache",
    "ray_temp_dir": "/var/lib/llmfleet/ray/serve",
    "health_host": "",
    "firewall": True,
    "hf_token": "",
    "api_key": "",
    "allow_unauthenticated": False,
}
RUNTIMES = ("container", "venv")
ENGINES = ("docker", "podman")
IMAGE_PULL = ("always", "missing")
VENV_INSTALLERS = ("pip", "uv")
ENV_DIR = "/etc/llmfleet"
UNIT_DIR = "/etc/systemd/system"
#: vLLM's torch.compile / Triton cache inside the container (the host's compile_cache is mounted there).
CONTAINER_COMPILE_CACHE = "/root/.cache/vllm"
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1", "ip6-localhost")
WILDCARD_HOSTS = ("", "0.0.0.0", "::", "[::]")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
_DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")


def _drop_privileged(flags, allowed):
    flags = [str(f) for f in flags or []]
    return flags if allowed else [f for f in flags if f != "--privileged"]


def _names(name):
    unit_base = "vllm-%s" % name
    return {
        "unit": unit_base + ".service",
        "unit_file": "%s/%s.service" % (UNIT_DIR, unit_base),
        "container": unit_base,
        "ray_unit": unit_base + "-ray.service",
        "ray_unit_file": "%s/%s-ray.service" % (UNIT_DIR, unit_base),
        "ray_container": unit_base + "-ray",
        "env_dir": ENV_DIR,
        "unit_dir": UNIT_DIR,
        "env_file": "%s/%s.env" % (ENV_DIR, name),
        "fw_unit": "llmfleet-firewall-%s.service" % name,
        "fw_table": "llmfleet_" + re.sub(r"[^A-Za-z0-9_]", "_", name),
        "fw_file": "%s/%s.nft" % (ENV_DIR, name),
    }


def _settings(settings):
    unknown = sorted(set(settings or {}) - set(SETTINGS))
    if unknown:
        raise RecipeError("service_spec: unknown settings %s; valid: %s" % (", ".join(unknown), ", ".join(sorted(SETTINGS))))
    out = dict(SETTINGS)
    out.update(settings or {})
    return out


def _check(plan, cfg, spec):
    """What makes the plan or the settings unsafe to serve (messages never carry a secret)."""
    out = []
    argv = spec["argv"]
    if spec["runtime"] not in RUNTIMES:
        out.append("vllm_serve_runtime=%s; valid: %s" % (spec["runtime"], ", ".join(RUNTIMES)))
    if cfg["engine"] not in ENGINES:
        out.append("vllm_serve_engine=%s; valid: %s" % (cfg["engine"], ", ".join(ENGINES)))
    if not _NAME.match(str(cfg["name"])):
        out.append("vllm_serve_name=%s: use letters, digits, '_', '.' and '-' (starting with a letter or digit)" % cfg["name"])
    if spec["is_router"]:
        shape_ok = argv[:1] == ["vllm-router"]
    elif spec["ray_worker"]:
        shape_ok = argv[:2] == ["ray", "start"]
    else:
        shape_ok = argv[:2] == ["vllm", "serve"]
    if not shape_ok:
        out.append("the plan (role %s) runs %r: expected 'vllm serve' ('vllm-router' on a PD router, 'ray start' on a "
                   "Ray worker)" % (plan.get("role"), " ".join(argv[:2])))
    flags = sorted(set(SECRET_FLAGS) & set(tok.split("=", 1)[0] for tok in argv))
    if flags:
        out.append("%s on the command line (visible in ps and systemctl show): set vllm_serve_api_key / "
                   "vllm_serve_hf_token from Vault instead; they go to the 0600 env file only" % " and ".join(flags))
    names = sorted(set(SECRET_ENV) & set(plan.get("env") or {}))
    if names:
        out.append("%s in vllm_extra_env: set vllm_serve_hf_token / vllm_serve_api_key from Vault instead; they go "
                   "to the 0600 env file only" % " and ".join(names))
    if spec["runtime"] == "venv" and not spec["version"]:
        out.append("the venv runtime needs a pinned vLLM version (vllm_version, vllm_serve_version or an image tag "
                   "naming a release)" if not spec["is_router"] else
                   "a PD router needs a pinned vllm_serve_router_version")
    if cfg["image_digest"] and not _DIGEST.match(str(cfg["image_digest"])):
        out.append("vllm_serve_image_digest sha256:<64 hex> expected (got %s)" % cfg["image_digest"])
    if cfg["image_pull"] not in IMAGE_PULL:
        out.append("vllm_serve_image_pull=%s; valid: %s" % (cfg["image_pull"], ", ".join(IMAGE_PULL)))
    if cfg["venv_installer"] not in VENV_INSTALLERS:
        out.append("vllm_serve_venv_installer=%s; valid: %s" % (cfg["venv_installer"], ", ".join(VENV_INSTALLERS)))
    return out


def _gpu_flags(plan, cfg):
    """(the container GPU flags as given, as used): ``vllm_serve_container_gpu_flags``, else the plan's
    (which select ``vllm_gpu_ids`` on NVIDIA), ``--privileged`` dropped unless allowed."""
    gpu_raw = plan.get("docker_gpu_flags") or [] if cfg["container_gpu_flags"] is None else cfg["container_gpu_flags"]
    return gpu_raw, _drop_privileged(gpu_raw, cfg["container_allow_privileged"])


def _exec(plan, cfg, spec):
    """(ExecStart argv, the Ray head's ExecStart argv or [], --privileged dropped?)."""
    argv = spec["argv"]
    ray = plan.get("ray")
    ray_temp = ["--temp-dir", cfg["ray_temp_dir"]]
    worker_tail = ray_temp if spec["ray_worker"] else []
    if spec["runtime"] == "venv":
        exec_argv = ["%s/bin/%s" % (spec["venv"], argv[0])] + argv[1:] + worker_tail
        ray_exec = ["%s/bin/ray" % spec["venv"]] + [str(t) for t in ray["argv"][1:]] + ray_temp if spec["ray_head"] else []
        return exec_argv, ray_exec, False
    gpu_raw, gpu = _gpu_flags(plan, cfg)
    extra = ["-v", "%s:%s" % (cfg["compile_cache"], CONTAINER_COMPILE_CACHE),
             "--label", "io.llmfleet.vllm.service=%s" % cfg["name"]] + [str(a) for a in cfg["container_extra_args"] or []]
    if ray is not None:
        extra += ["-v", "%s:%s" % (cfg["ray_temp_dir"], cfg["ray_temp_dir"])]
    ctr_plan = dict(plan, image=spec["image_ref"], docker_gpu_flags=gpu,
                    container_args=_drop_privileged(plan.get("container_args"), cfg["container_allow_privileged"]))
    common = dict(engine=cfg["engine"], hf_cache=cfg["hf_cache"], env_file=spec["env_file"], inline_env=False,
                  network=cfg["container_network"] or None, extra_args=extra)
    main = container_argv(dict(ctr_plan, argv=argv + worker_tail), name=spec["container"], **common)
    exec_argv = [cfg["engine_path"]] + main[1:]
    ray_exec = []
    if spec["ray_head"]:
        head = container_argv(dict(ctr_plan, argv=[str(t) for t in ray["argv"]] + ray_temp), name=spec["ray_container"], **common)
        ray_exec = [cfg["engine_path"]] + head[1:]
    return exec_argv, ray_exec, "--privileged" in [str(f) for f in gpu_raw] and "--privileged" not in gpu


def _env(plan, cfg, spec):
    """(env file content, the same with secret values masked, names of the secrets)."""
    public = dict(plan.get("env") or {})
    if spec["runtime"] == "container":  # GPUs the container flags select are renumbered from 0 inside
        public = container_env(public, container_gpu_flags(_gpu_flags(plan, cfg)[1], cfg["engine"]))
    if spec["runtime"] == "venv":
        public.update({"HF_HOME": cfg["hf_cache"], "VLLM_CACHE_ROOT": cfg["compile_cache"],
                       "TRITON_CACHE_DIR": cfg["compile_cache"] + "/triton", "HOME": spec["home"]})
    secrets = {}
    if cfg["hf_token"]:
        secrets["HF_TOKEN"] = cfg["hf_token"]
    if cfg["api_key"]:
        secrets["VLLM_API_KEY"] = cfg["api_key"]
    env = dict(public, **secrets)
    masked = dict(public, **dict((k, SECRET_PLACEHOLDER) for k in secrets))
    return env, masked, list(secrets)


def service_spec(plan, settings=None):
    """Everything ``vllm_serve`` writes for ``plan`` (a host plan) under ``settings``.

    Returns a dict; ``problems`` lists what makes it unsafe to serve (empty when it can be
    served), and when it is not empty the argv-derived keys (``exec``, ``ray_exec``) are empty.
    """
    if not isinstance(plan, dict) or not isinstance(plan.get("argv"), list):
        raise RecipeError("service_spec expects a host plan (lookup('llmfleet.vllm.recipe')); got %s" % type(plan).__name__)
    cfg = _settings(settings)
    name = str(cfg["name"])
    is_router = plan.get("role") == "router"
    ray = plan.get("ray")
    ray_role = (ray or {}).get("role")
    image = cfg["image"] or plan.get("image") or ""
    spec = _names(name)
    spec.update(
        role=plan.get("role"),
        is_router=is_router,
        # the PD router (vllm-router) is not in the vLLM image: it always runs from a virtualenv
        runtime="venv" if is_router else cfg["runtime"],
        http=bool(plan.get("serves_http", True)),
        ray=ray,
        ray_worker=ray_role == "worker",
        ray_head=ray_role == "head",
        port=int(plan.get("port") or 8000),
        state_dir="%s/state/%s" % (cfg["data_dir"], name),
        home="%s/home" % cfg["data_dir"],
        image_ref=image + ("@" + cfg["image_digest"] if cfg["image_digest"] else ""),
    )
    # a Ray worker's one unit runs `ray start --address`; a Ray head runs `ray start --head` in a
    # second unit (<unit>-ray) that the vLLM unit requires
    spec["argv"] = [str(t) for t in (ray["argv"] if spec["ray_worker"] else plan["argv"])]
    spec["version"] = str(cfg["router_version"] if is_router else (
        cfg["version"] or plan.get("vllm_version") or (parse_image_tag(image)[2] if image else None) or ""))
    spec["venv"] = cfg["venv_path"] or "%s/%s-%s" % (cfg["venv_root"], "router" if is_router else "venv", spec["version"])

    container = spec["runtime"] == "container"
    network = cfg["container_network"] or ("host" if plan.get("deploy_type") in ("multi_node", "pd_cluster") else "")
    host_arg = flag_value(spec["argv"], "--host", "")
    published = container and network == ""  # a published container port listens on every address
    spec["bind"] = "0.0.0.0" if published else (host_arg or "0.0.0.0")
    spec["probe_host"] = cfg["health_host"] or ("127.0.0.1" if (host_arg in WILDCARD_HOSTS or published) else host_arg)

    spec["fw_wanted"] = bool(cfg["firewall"]) and bool(plan.get("cluster_ports"))
    spec["fw_bad_addresses"] = [a for a in plan.get("member_addresses") or [] if not is_ip(a)] if spec["fw_wanted"] else []

    problems = _check(plan, cfg, spec)
    if not (cfg["api_key"] or cfg["allow_unauthenticated"] or spec["bind"] in LOOPBACK_HOSTS
            or spec["bind"].startswith("127.") or not spec["http"] or is_router):
        problems.append("vLLM would listen on %s:%d (not loopback) without an API key. Set vllm_serve_api_key (from "
                        "Vault), bind to loopback (vllm_extra_args: [--host, 127.0.0.1] with a venv or host-network "
                        "container), or opt out explicitly with vllm_serve_allow_unauthenticated: true"
                        % (spec["bind"], spec["port"]))
    spec["exec"], spec["ray_exec"], spec["privileged_dropped"] = [], [], False
    if not problems:
        spec["exec"], spec["ray_exec"], spec["privileged_dropped"] = _exec(plan, cfg, spec)
        line = " ".join(spec["exec"] + spec["ray_exec"])
        if any(secret and secret in line for secret in (cfg["api_key"], cfg["hf_token"])):
            problems.append("a secret would appear on the command line (it is refused; the value is not shown)")
    spec["problems"] = problems
    spec["env"], spec["env_public"], spec["secret_names"] = _env(plan, cfg, spec)
    spec["summary"] = _summary(plan, cfg, spec)
    return spec


def _summary(plan, cfg, spec):
    """What will run, as the role prints it (-v): no secret values."""
    if spec["runtime"] == "container":
        how = " (%s %s)" % (cfg["engine"], spec["image_ref"])
    else:
        how = " (vLLM %s in %s)" % (spec["version"], spec["venv"])
    lines = [
        "%s: %s %s on %s, role %s, runtime %s%s" % (
            spec["unit"], plan.get("recipe"), plan.get("variant"), plan.get("hardware"), spec["role"], spec["runtime"], how),
        "listens on %s:%d; health probe %s:%d; API key %s; secrets in the env file: %s" % (
            spec["bind"], spec["port"], spec["probe_host"], spec["port"], "set" if cfg["api_key"] else "NOT set",
            ", ".join(spec["secret_names"]) or "none"),
    ]
    if spec["privileged_dropped"]:
        lines.append("--privileged dropped from the GPU flags (set vllm_serve_container_allow_privileged to keep it)")
    if spec["exec"]:
        lines.append("ExecStart=" + exec_line(spec["exec"]))
    return lines


__all__ = ["service_spec", "SETTINGS", "SECRET_FLAGS", "SECRET_ENV", "SECRET_PLACEHOLDER"]
