# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmfleet contributors
# Apache License 2.0 (see LICENSE)
"""Recipe resolver: (recipe, variant, hardware, strategy, nodes, features, ...) -> per-node
``vllm serve`` argv, env and container image.

This follows the upstream recipes command builder (recipes.vllm.ai, commit 8959cf64; its
function names are quoted in the docstrings below), checked against the builder's own outputs
by ``tools/golden_parity.py``, with the deliberate deviations D1-D6 (also in the README):

* D1 feature (and feature mode) ``env`` is applied, after the hardware-override env layers
  and before the PD-only clean-up;
* D2 ``text_only`` and ``encoder_parallel`` (or any pair a recipe declares with
  ``conflicts_with``) cannot both be enabled;
* D3 a multi-node strategy needs at least 2 nodes;
* D4 unknown variant / hardware / strategy / feature / mode / preset ids are errors that
  list the valid ids, instead of silent fall-backs;
* D5 ``meta.hardware`` ids missing from the taxonomy are reported as warnings;
* D6 the host's real GPU count may replace the profile's GPUs per node.

Every argv unit and env key carries its provenance: the layer that produced it and what it
replaced. The resolver selects and builds; it renders nothing but the router's command
(shell forms are in ``render``). What is off with a deployment it reports as facts
(:meth:`Resolver.check_facts`), worded as the deployment's warnings; preflight decides which
of them are errors. Pure Python: no Ansible imports.
"""

from __future__ import annotations

import math

from .errors import ResolveError, UnsupportedError, _unknown
from .render import format_router

# --------------------------------------------------------------------------- constants

MAX_NODES = 16

#: Built-in "Advanced" presets of the upstream builder (CommandBuilder.jsx ADVANCED_OPTIONS).
#: gate: None, "supports_dcp", "flashinfer_autotune" (model flags) or "ep" (strategy ends in tep/dep).
ADVANCED_PRESETS = {
    "max_batched_8k": (["--max-num-batched-tokens", "8192"], None),
    "max_num_seqs_256": (["--max-num-seqs", "256"], None),
    "gpu_mem_095": (["--gpu-memory-utilization", "0.95"], None),
    "max_model_len_auto": (["--max-model-len", "auto"], None),
    "dcp_8": (["--decode-context-parallel-size", "8"], "supports_dcp"),
    "no_flashinfer_autotune": (["--no-enable-flashinfer-autotune"], "flashinfer_autotune"),
    "ep_weight_filter": (["--enable-ep-weight-filter"], "ep"),
}

#: Features that cannot be enabled together unless a recipe says otherwise (D2). The upstream
#: web UI hard-codes this pair; recipes may add pairs with ``features.<f>.conflicts_with``.
BUILTIN_CONFLICTS = (("text_only", "encoder_parallel"),)

#: Env keys only meaningful on NVL4 trays; PD pools drop them elsewhere (the last step of buildEnv).
NVL4_ONLY_ENV = ("VLLM_USE_NCCL_SYMM_MEM", "NCCL_CUMEM_ENABLE", "NCCL_MNNVL_ENABLE", "NCCL_NVLS_ENABLE", "UCX_NET_DEVICES")
NVL4_HARDWARE = ("gb200", "gb300")

DEFAULT_IMAGES = {
    ("nvidia", False): "vllm/vllm-openai:latest",
    ("amd", False): "vllm/vllm-openai-rocm:latest",
    ("tpu", False): "vllm/vllm-tpu:latest",
    ("intel", False): "vllm/vllm-openai-cpu:latest-x86_64",
    ("nvidia", True): "vllm/vllm-openai:nightly",
    ("amd", True): "vllm/vllm-openai-rocm:nightly",
    ("tpu", True): "vllm/vllm-tpu:nightly",
    ("intel", True): "vllm/vllm-openai-cpu:nightly",
}
# Intel XPU has one default image: upstream ignores ``nightly_required`` there (no nightly XPU image).
XPU_DEFAULT_IMAGE = "vllm/vllm-openai-xpu:latest"

GPU_FLAGS = {
    "tpu": ["--privileged", "--network", "host", "-v", "/dev/shm:/dev/shm"],
    "amd": ["--device=/dev/kfd", "--device=/dev/dri", "--security-opt", "seccomp=unconfined", "--group-add", "video"],
    "xpu": ["--device", "/dev/dri", "-v", "/dev/dri/by-path:/dev/dri/by-path", "--shm-size", "16g"],
    "cpu": ["--shm-size", "16g"],
    "nvidia": ["--gpus", "all"],
}

# --------------------------------------------------------------------------- small helpers


def env_str(value):
    """Env values are strings; YAML scalars render as the upstream JS ``String()`` would."""
    if isinstance(value, str):
        return value
    if value is True:
        return "true"
    if value is False:
        return "false"
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def unique(items):
    """``items`` without repeats, first occurrence kept, order kept."""
    seen = set()
    out = []
    for item in items:
        if item not in seen:
            seen.add(item)
            out.append(item)
    return out


def _num(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _as_list(value):
    return value if isinstance(value, list) else []


def _as_map(value):
    return value if isinstance(value, dict) else {}


def version_key(text):
    parts = []
    for piece in str(text or "0").split("."):
        digits = ""
        for ch in piece:
            if ch.isdigit():
                digits += ch
            else:
                break
        parts.append(int(digits or 0))
    return tuple(parts)


def max_version(*versions):
    best = None
    for version in versions:
        if version is None or version == "":
            continue
        if best is None or version_key(version) > version_key(best):
            best = str(version)
    return best


class Hardware(object):
    """A taxonomy profile, with the per-host GPU count of deviation D6 applied."""

    __slots__ = ("id", "profile", "brand", "generation", "gpu_count", "profile_gpu_count",
                 "vram_per_gpu", "vram_gb", "scalable", "restricted", "brand_key", "is_nvidia")

    def __init__(self, hw_id, profile, gpu_count=None):
        self.id = hw_id
        self.profile = profile
        self.brand = str(profile.get("brand") or "")
        gen = profile.get("generation")
        if isinstance(gen, list):
            gen = gen[0] if gen else None
        self.generation = gen
        self.profile_gpu_count = int(profile.get("gpu_count") or 1)
        self.gpu_count = int(gpu_count) if gpu_count else self.profile_gpu_count
        vram = profile.get("vram_gb")
        self.vram_per_gpu = (float(vram) / self.profile_gpu_count) if _num(vram) else None
        if self.vram_per_gpu is None:
            self.vram_gb = None
        elif self.gpu_count == self.profile_gpu_count:
            self.vram_gb = vram
        else:
            self.vram_gb = self.vram_per_gpu * self.gpu_count
        self.scalable = profile.get("scalable", True) is not False
        self.restricted = bool(profile.get("restricted"))
        self.is_nvidia = self.brand == "NVIDIA"
        if self.generation == "tpu":
            self.brand_key = "tpu"
        elif self.brand == "AMD":
            self.brand_key = "amd"
        elif self.generation in ("cpu", "xpu") or self.brand == "Intel":
            self.brand_key = "intel"
        else:
            self.brand_key = "nvidia"

    def keyed(self, mapping):
        """hardwareKeyedValue: exact id > generation > lower-cased brand > ``default``."""
        if not isinstance(mapping, dict):
            return None
        for key in (self.id, self.generation, self.brand.lower(), "default"):
            value = mapping.get(key)
            if value is not None:
                return value
        return None

    def gen_or_nvidia(self, mapping):
        """The generation block of a map, else (NVIDIA only) its ``nvidia`` block (JS ``||``)."""
        if not isinstance(mapping, dict):
            return None, None
        block = mapping.get(self.generation) if self.generation else None
        if block:
            return block, self.generation
        if self.is_nvidia:
            block = mapping.get("nvidia")
            if block:
                return block, "nvidia"
        return None, None


# --------------------------------------------------------------------------- argv assembly


class _Args(object):
    """Tokens appended layer by layer, each remembering the layer that produced it."""

    __slots__ = ("tokens", "sources")

    def __init__(self):
        self.tokens = []
        self.sources = []

    def add(self, tokens, source):
        if tokens:
            for tok in tokens:
                if tok is None or tok == "":
                    continue  # args.filter(Boolean)
                self.tokens.append(str(tok) if not isinstance(tok, str) else tok)
                self.sources.append(source)

    def units(self):
        """Tokenization: a ``-`` token is a flag, taking the next token as its value
        unless that one starts with ``-``; anything else is a positional.

        Further non-dash tokens right after a flag's value, from the same layer, are more
        values of that flag (``--served-model-name a b``): they travel with the flag, so a
        later occurrence replaces all of them. Positionals from another layer stay positionals
        (upstream keeps them; the corpus has none).
        """
        toks = self.tokens
        srcs = self.sources
        out = []
        i = 0
        n = len(toks)
        while i < n:
            tok = toks[i]
            if tok[0] == "-":
                if i + 1 < n and toks[i + 1][0] != "-":
                    j = i + 2
                    while j < n and toks[j][0] != "-" and srcs[j] == srcs[i]:
                        j += 1
                    out.append((tok, toks[i + 1], srcs[i], toks[i + 2:j] if j > i + 2 else None))
                    i = j
                    continue
                out.append((tok, None, srcs[i], None))
            else:
                out.append((None, tok, srcs[i], None))
            i += 1
        return out


def _unit_tokens(unit):
    flag, value, _source, extra = unit
    if flag is None:
        return [value]
    toks = [flag] if value is None else [flag, value]
    if extra:
        toks.extend(extra)
    return toks


def dedupe(units):
    """Last wins per flag string; survivors keep their relative order; positionals stay.

    Returns (flat args, provenance) where provenance lists, per surviving unit, its tokens,
    its source and the units it replaced.
    """
    seen = {}
    keep = []
    for unit in reversed(units):
        flag = unit[0]
        if flag is None:
            keep.append([unit, None])
            continue
        entry = seen.get(flag)
        if entry is None:
            entry = [unit, None]
            seen[flag] = entry
            keep.append(entry)
        else:
            if entry[1] is None:
                entry[1] = []
            entry[1].append(unit)
    keep.reverse()
    args = []
    prov = []
    for unit, replaced in keep:
        toks = _unit_tokens(unit)
        args.extend(toks)
        rec = {"arg": toks, "source": unit[2]}
        if replaced:
            rec["replaced"] = [{"arg": _unit_tokens(r), "source": r[2]} for r in reversed(replaced)]
        prov.append(rec)
    return args, prov


class _Env(object):
    __slots__ = ("values", "prov")

    def __init__(self):
        self.values = {}
        self.prov = {}

    def update(self, mapping, source):
        if not mapping or not isinstance(mapping, dict):
            return
        for key, value in mapping.items():
            key = str(key)
            value = env_str(value)
            old = self.prov.get(key)
            if old is not None:
                rec = {"source": source, "replaced": [{"value": self.values[key], "source": old["source"]}] + old.get("replaced", [])}
            else:
                rec = {"source": source}
            self.values[key] = value
            self.prov[key] = rec

    def delete(self, key):
        self.values.pop(key, None)
        self.prov.pop(key, None)


# --------------------------------------------------------------------------- check facts as warnings

#: The resolver's warning for each kind of :meth:`Resolver.check_facts` fact.
CHECK_WARNINGS = {
    "pd_pool_without_gpu": "pd_cluster %(role)s pool co-located on %(hardware)s has no GPU (the node has %(gpu_count)d)",
    "pd_pool_dp_size": "pd_cluster %(role)s pool: data-parallel size %(dp_size)d exceeds the co-located pool's "
                       "%(pool_gpus)d GPUs (upstream quirk)",
    "pd_pool_tp_size": "pd_cluster %(role)s pool: tensor-parallel size %(tp)d exceeds the node's %(gpu_count)d GPUs; "
                       "rendered with one data-parallel rank per node (upstream quirk)",
    "meta_hardware_unknown": "recipe %(recipe)s: meta.hardware.%(hardware)s is not a hardware profile of the taxonomy (ignored, D5)",
    "vram_fit": "variant %(variant)s needs %(vram_minimum_gb)s GB but %(hardware)s has %(vram_gb)s GB and cannot scale out",
    "precision": "variant %(variant)s (%(precision)s) is not supported on %(hardware)s (%(brand)s %(generation)s)",
}


def check_warnings(facts):
    """The warning texts of :meth:`Resolver.check_facts` facts, in their order."""
    return [CHECK_WARNINGS[fact["check"]] % fact for fact in facts]


# --------------------------------------------------------------------------- the resolver


class Resolver(object):
    """Resolve recipes of one :class:`~.catalog.Catalog`."""

    def __init__(self, catalog):
        self.catalog = catalog

    # ------------------------------------------------------------------ lookups
    def hardware(self, hw_id, gpu_count=None):
        profiles = self.catalog.hardware_profiles
        profile = profiles.get(hw_id)
        if not isinstance(profile, dict):
            raise ResolveError(_unknown("hardware profile", hw_id, profiles, where=" (taxonomy %s)" % self.catalog.taxonomy_path))
        if gpu_count is not None:
            if not _num(gpu_count) or int(gpu_count) != gpu_count or gpu_count < 1:
                raise ResolveError("gpu_count must be a positive integer, got %r" % (gpu_count,))
        return Hardware(hw_id, profile, gpu_count)

    def strategy(self, name):
        strategies = self.catalog.strategies
        strat = strategies.get(name)
        if not isinstance(strat, dict):
            raise ResolveError(_unknown("strategy", name, strategies))
        return strat

    # ------------------------------------------------------------------ selection helpers
    @staticmethod
    def variant_key(recipe, variant, rid=""):
        variants = _as_map(recipe.get("variants"))
        key = "default" if variant in (None, "") else variant
        if key not in variants:
            raise ResolveError(_unknown("variant", key, variants, where=" for recipe %s" % rid))
        return key

    @staticmethod
    def default_features(recipe, hw_id, variant_key):
        """Recipe defaults in recipe key order: every feature but the opt-in ones, plus the
        features a variant's ``default_modes`` force on."""
        features = _as_map(recipe.get("features"))
        off = set(_as_list(recipe.get("opt_in_features")))
        off.update(_as_list(_as_map(recipe.get("hardware_opt_in_features")).get(hw_id)))
        forced = _as_map(_as_map(_as_map(recipe.get("variants")).get(variant_key)).get("default_modes"))
        return [f for f in features if f not in off or f in forced]

    def effective_compatible(self, recipe):
        offered = list(_as_list(recipe.get("compatible_strategies")))
        for name, block in _as_map(recipe.get("strategy_hardware")).items():
            if name not in offered and isinstance(block, dict) and "supported" in block.values():
                offered.append(name)
        return offered

    @staticmethod
    def strategy_supported_on(recipe, strategy_name, hw):
        block = _as_map(recipe.get("strategy_hardware")).get(strategy_name)
        verdict = hw.keyed(block) if isinstance(block, dict) else None
        if verdict is not None:
            return verdict != "unsupported"
        return strategy_name in _as_list(recipe.get("compatible_strategies"))

    @staticmethod
    def min_gpus(recipe, key, hw_id):
        """minGpusForStrategy: the fewest GPUs a strategy needs on this hardware."""
        spec = recipe.get("strategy_min_gpus")
        if spec is None:
            return 0
        if _num(spec):
            return spec

        def lookup(block):
            if _num(block):
                return block
            if not isinstance(block, dict):
                return 0
            for name in (key, "multi_node_" + key, "single_node_" + key):
                value = block.get(name)
                if _num(value):
                    return value
            return 0

        return max(lookup(spec), lookup(spec.get(hw_id)) if isinstance(spec, dict) else 0)

    def nodes_for(self, recipe, strategy_name, hw):
        floor = self.min_gpus(recipe, strategy_name, hw.id)
        return int(math.ceil(float(floor) / hw.gpu_count)) or 1

    @staticmethod
    def precision_needs(variant):
        """(brand, generation) a variant's precision needs, either may be None; None if any hardware will do.

        The variant's ``precision_hardware`` says it; without one, FP4 needs NVIDIA Blackwell.
        """
        needs = variant.get("precision_hardware")
        if isinstance(needs, dict) and needs:
            return needs.get("brand"), needs.get("generation")
        if str(variant.get("precision") or "").lower() in ("nvfp4", "fp4"):
            return "NVIDIA", "blackwell"
        return None

    @staticmethod
    def precision_ok(variant, hw):
        needs = Resolver.precision_needs(variant)
        if needs is None:
            return True
        brand, generation = needs
        return not (brand and brand != hw.brand) and not (generation and generation != hw.generation)

    @staticmethod
    def fits_single_node(variant, hw):
        vmin = variant.get("vram_minimum_gb")
        if not _num(vmin) or hw.vram_gb is None:
            return True
        return vmin <= hw.vram_gb

    def hardware_candidates(self, recipe, variant):
        """listCompatibleHardware + the JSON API's restricted filter, in taxonomy order."""
        meta_hw = _as_map(_as_map(recipe.get("meta")).get("hardware"))
        allow = variant.get("supported_hardware")
        out = []
        for hw_id, profile in self.catalog.hardware_profiles.items():
            if not isinstance(profile, dict):
                continue
            hw = Hardware(hw_id, profile)
            if not self.precision_ok(variant, hw):
                continue
            if meta_hw.get(hw_id) == "unsupported":
                continue
            if isinstance(allow, list) and hw_id not in allow:
                continue
            if hw.restricted and hw_id not in meta_hw:
                continue
            out.append(hw_id)
        return out

    def pick_default_hardware(self, recipe, variant):
        """pickDefaultHardware: the hardware upstream picks for a variant when none is given."""
        cands = self.hardware_candidates(recipe, variant)
        default = _as_map(recipe.get("meta")).get("default_hardware")
        if default in cands:
            return default
        needs = self.precision_needs(variant)
        if needs is not None and needs[1] == "blackwell":
            for hw_id in ("b200", "gb200"):
                if hw_id in cands:
                    return hw_id
        if "h200" in cands:
            return "h200"
        if cands:
            profiles = self.catalog.hardware_profiles

            def order(hw_id):
                brand = profiles[hw_id].get("brand")
                return (0 if brand == "NVIDIA" else 1 if brand == "AMD" else 2, hw_id)
            return sorted(cands, key=order)[0]
        return "h200"

    def pick_fitting_variant(self, recipe, hw):
        """Largest precision-compatible variant that fits a node; ties: first in key order."""
        best = None
        for key, variant in _as_map(recipe.get("variants")).items():
            variant = _as_map(variant)
            if not self.precision_ok(variant, hw) or not self.fits_single_node(variant, hw):
                continue
            size = variant.get("vram_minimum_gb") if _num(variant.get("vram_minimum_gb")) else 0
            if best is None or size > best[0]:
                best = (size, key)
        return best[1] if best else None

    def compatible_strategies(self, recipe, variant, hw):
        """Strategies offered on this hardware (the JSON API rules, plus the web UI rule that keeps Intel XPU single-node)."""
        kinds = self.catalog.strategies
        out = []
        for name in self.effective_compatible(recipe):
            strat = kinds.get(name)
            if not isinstance(strat, dict):
                continue
            if not self.strategy_supported_on(recipe, name, hw):
                continue
            deploy_type = strat.get("deploy_type")
            max_nodes = MAX_NODES if deploy_type in ("multi_node", "pd_cluster") else 1
            if max_nodes * hw.gpu_count < self.min_gpus(recipe, name, hw.id):
                continue
            if not hw.scalable and (name.startswith("multi_node_") or name == "pd_cluster"):
                continue
            if hw.generation == "xpu" and deploy_type in ("multi_node", "pd_cluster", "kv_store_lb"):
                continue  # the web UI limits Intel XPU to single-node
            out.append(name)
        return out

    def recommend_strategy(self, recipe, node_count, compatible):
        """recommendStrategy: upstream's pick among the compatible strategies for a node count."""
        default = recipe.get("default_strategy")
        if default in compatible:
            if node_count > 1 and str(default).startswith("single_node_"):
                multi = "multi_node_" + default[len("single_node_"):]
                if multi in compatible:
                    return multi
            return default
        if node_count > 1:
            for name in ("multi_node_tp", "multi_node_dep", "multi_node_tep"):
                if name in compatible:
                    return name
        if "single_node_tp" in compatible:
            return "single_node_tp"
        return compatible[0] if compatible else None

    def pick_pd_nodes(self, recipe, variant, hw):
        """pickPdNodes: None (co-located), {prefill: n, decode: n}, or "skip"
        (``strategy_overrides.pd_cluster.<role>.nodes`` is ignored, as upstream ignores it)."""
        vmin = variant.get("vram_minimum_gb")
        node_vram = hw.vram_gb
        if not _num(vmin) or node_vram is None or 2 * vmin <= node_vram:
            return None
        per = int(math.ceil(float(vmin) / node_vram))
        strat = self.catalog.strategies.get("pd_cluster") or {}
        overrides = _as_map(_as_map(recipe.get("strategy_overrides")).get("pd_cluster"))
        out = {}
        for role in ("prefill", "decode"):
            mode = _as_map(overrides.get(role)).get("parallelism") or _as_map(strat.get(role)).get("parallelism") or "tp"
            floor = int(math.ceil(float(self.min_gpus(recipe, mode, hw.id)) / hw.gpu_count))
            out[role] = max(per, floor)
        if max(out.values()) > 4:
            return "skip"
        return out

    def select(self, recipe_id, variant=None, hardware=None, strategy=None, node_count=None, gpu_count=None):
        """Fill in what the user left unset, as the upstream JSON API would.

        Returns a dict with ``variant``, ``hardware``, ``strategy``, ``node_count`` and
        ``pd_nodes`` (for pd_cluster), plus ``notes`` explaining each choice. An explicit
        choice is never replaced: preflight refuses a variant that does not fit
        non-scalable hardware instead of substituting one.
        """
        recipe = self.catalog.recipe(recipe_id)
        rid = self.catalog.canonical_id(recipe_id)
        notes = []
        vkey = None if variant in (None, "") else self.variant_key(recipe, variant, rid)
        if hardware in (None, ""):
            hardware = self.pick_default_hardware(recipe, _as_map(recipe["variants"].get(vkey or "default")))
            notes.append("hardware %s: the recipe's default hardware" % hardware)
        hw = self.hardware(hardware, gpu_count)
        if vkey is None:
            vkey = "default"
            default = _as_map(recipe["variants"]["default"])
            if not (self.precision_ok(default, hw) and (hw.scalable or self.fits_single_node(default, hw))):
                fit = self.pick_fitting_variant(recipe, hw)
                if fit:
                    notes.append("variant %s: the largest variant that fits %s" % (fit, hw.id))
                    vkey = fit
        chosen = _as_map(recipe["variants"][vkey])
        compatible = self.compatible_strategies(recipe, chosen, hw)
        fits = self.fits_single_node(chosen, hw)
        multi_possible = hw.scalable and any(name.startswith("multi_node_") for name in compatible)
        base_nodes = 2 if (not fits and multi_possible) else 1
        if node_count not in (None, "") and int(node_count) > 1:
            base_nodes = int(node_count)  # a replica of N nodes: recommend for N nodes
        if strategy in (None, ""):
            strategy = self.recommend_strategy(recipe, base_nodes, compatible)
            if strategy is None or strategy not in compatible:
                rest = [name for name in compatible if self.catalog.strategies[name].get("deploy_type") not in ("kv_store_lb", "pd_cluster")]
                strategy = rest[0] if rest else strategy
            if strategy is None:
                raise ResolveError("recipe %s offers no strategy on hardware %s" % (rid, hw.id))
            notes.append("strategy %s: the recipe's recommendation" % strategy)
        strat = self.strategy(strategy)
        pd_nodes = None
        if node_count in (None, ""):
            if strat.get("deploy_type") == "multi_node":
                node_count = max(base_nodes, 2, self.nodes_for(recipe, strategy, hw))
            elif strat.get("deploy_type") == "pd_cluster":
                node_count = 1
            else:
                node_count = 1
        if strat.get("deploy_type") == "pd_cluster":
            pd_nodes = self.pick_pd_nodes(recipe, chosen, hw)
        return {"recipe": rid, "variant": vkey, "hardware": hw.id, "strategy": strategy,
                "node_count": int(node_count), "pd_nodes": pd_nodes, "notes": notes}

    # ------------------------------------------------------------------ checks
    def check_facts(self, recipe_id, recipe, variant_key, hw, pools=None):
        """What is off with one deployment, as facts for the caller to judge.

        A list of dicts, each with a ``check`` key naming what was found, and its data:

        * ``pd_pool_without_gpu`` (role, hardware, gpu_count): a co-located PD pool gets no GPU;
        * ``pd_pool_dp_size`` (role, dp_size, pool_gpus): a co-located data-parallel pool's DP
          size exceeds its GPUs (an upstream quirk);
        * ``pd_pool_tp_size`` (role, tp, gpu_count): a data-parallel pool's explicit TP exceeds a
          node's GPUs, so each node gets one DP rank of more GPUs than it has (an upstream quirk);
        * ``meta_hardware_unknown`` (recipe, hardware): a ``meta.hardware`` id the taxonomy
          lacks (D5);
        * ``vram_fit`` (variant, vram_minimum_gb, hardware, vram_gb, fitting_variant): the
          variant does not fit one node of hardware that cannot scale out;
        * ``precision`` (variant, precision, needs_brand, needs_generation, hardware, brand,
          generation): the hardware lacks what the variant's precision needs.

        The resolver words them as its warnings (:func:`check_warnings`); preflight
        (``Fleet.check``) refuses those it counts as errors. ``pools`` is a deployment's
        ``pools`` (None unless pd_cluster).
        """
        variant = _as_map(_as_map(recipe.get("variants")).get(variant_key))
        facts = []
        for role, info in (pools or {}).items():
            if info["pool_gpus"] == 0:  # only a co-located pool (0 nodes) can get half of one GPU
                facts.append({"check": "pd_pool_without_gpu", "role": role, "hardware": hw.id, "gpu_count": hw.gpu_count})
        for role, info in (pools or {}).items():
            if info["parallelism"] == "dep" and info["nodes"] == 0 and info["dp_size"] > info["pool_gpus"]:
                facts.append({"check": "pd_pool_dp_size", "role": role, "dp_size": info["dp_size"], "pool_gpus": info["pool_gpus"]})
        for role, info in (pools or {}).items():
            if info["parallelism"] == "dep" and info.get("tp") is not None and int(info["tp"]) > hw.gpu_count:
                facts.append({"check": "pd_pool_tp_size", "role": role, "tp": int(info["tp"]), "gpu_count": hw.gpu_count})
        profiles = self.catalog.hardware_profiles
        for hw_id in _as_map(_as_map(recipe.get("meta")).get("hardware")):
            if hw_id not in profiles:
                facts.append({"check": "meta_hardware_unknown", "recipe": recipe_id, "hardware": hw_id})
        if not hw.scalable and not self.fits_single_node(variant, hw):
            facts.append({"check": "vram_fit", "variant": variant_key, "vram_minimum_gb": variant.get("vram_minimum_gb"),
                          "hardware": hw.id, "vram_gb": hw.vram_gb, "fitting_variant": self.pick_fitting_variant(recipe, hw)})
        if not self.precision_ok(variant, hw):
            brand, generation = self.precision_needs(variant)
            facts.append({"check": "precision", "variant": variant_key, "precision": variant.get("precision"),
                          "needs_brand": brand, "needs_generation": generation,
                          "hardware": hw.id, "brand": hw.brand, "generation": hw.generation})
        return facts

    # ------------------------------------------------------------------ features and modes
    def _feature_plan(self, recipe, rid, vkey, variant, hw, strategy_name, features, feature_modes, warnings):
        """Return [(feature key, feature dict, mode key or None)] in emission order."""
        all_features = _as_map(recipe.get("features"))
        if features is None:
            features = self.default_features(recipe, hw.id, vkey)
        elif isinstance(features, dict):
            enabled = dict((f, True) for f in self.default_features(recipe, hw.id, vkey))
            for f, on in features.items():
                if f not in all_features:
                    raise ResolveError(_unknown("feature", f, all_features, where=" for recipe %s" % rid))
                enabled[f] = bool(on)
            features = [f for f in all_features if enabled.get(f)]
        else:
            features = list(features)
            for f in features:
                if f not in all_features:
                    raise ResolveError(_unknown("feature", f, all_features, where=" for recipe %s" % rid))
        ordered = unique(features)
        seen = set(ordered)
        # D2: mutually exclusive features
        pairs = list(BUILTIN_CONFLICTS)
        for f, feat in all_features.items():
            for other in _as_list(_as_map(feat).get("conflicts_with")):
                pairs.append((f, other))
        for first, second in pairs:
            if first in seen and second in seen:
                raise ResolveError("features %s and %s of recipe %s are mutually exclusive: enable only one of them" % (first, second, rid))
        feature_modes = _as_map(feature_modes)
        for f in feature_modes:
            if f not in all_features:
                raise ResolveError(_unknown("feature", f, all_features, where=" in feature_modes for recipe %s" % rid))
            if not isinstance(_as_map(all_features[f]).get("modes"), dict):
                modal = [k for k, feat in all_features.items() if isinstance(_as_map(feat).get("modes"), dict)]
                raise ResolveError("feature %s of recipe %s has no modes; features with modes: %s" % (f, rid, ", ".join(modal) or "none"))
        plan = []
        default_modes = _as_map(variant.get("default_modes"))
        for f in ordered:
            feat = _as_map(all_features.get(f))
            modes = feat.get("modes")
            if not isinstance(modes, dict):
                plan.append((f, feat, None))
                continue
            pick = feature_modes.get(f)
            if pick is not None and pick not in modes:
                raise ResolveError(_unknown("mode", pick, modes, where=" for feature %s of recipe %s" % (f, rid)))

            def available(m):
                mode = _as_map(modes.get(m))
                allowed = mode.get("variants")
                if isinstance(allowed, list) and vkey not in allowed:
                    return False
                gate = _as_map(mode.get("hardware"))
                return gate.get(hw.generation) != "unsupported" and gate.get(hw.id) != "unsupported"

            chosen = None
            for cand in (pick, default_modes.get(f), feat.get("default_mode")):
                if cand is not None and cand in modes and available(cand):
                    chosen = cand
                    break
            if chosen is None:
                for m in modes:
                    if available(m):
                        chosen = m
                        break
            if pick is not None and chosen != pick:
                warnings.append("feature %s: mode %s is not available for variant %s on %s; using %s" % (
                    f, pick, vkey, hw.id, chosen or "no mode (the feature emits nothing)"))
            plan.append((f, feat, chosen))
        return plan

    # ------------------------------------------------------------------ main entry point
    def resolve(self, recipe_id, variant=None, hardware=None, strategy=None, node_count=None,
                features=None, feature_modes=None, pd_nodes=None, kv_offload=None, advanced=None,
                gpu_count=None, extra_args=None, extra_env=None):
        """Resolve one deployment.

        Unset ``variant``/``hardware``/``strategy``/``node_count`` are chosen as upstream does
        (see :meth:`select`). ``features``: ``None`` for the recipe defaults, an ordered list
        of feature keys to enable, or a dict feature -> bool on top of the defaults.
        ``pd_nodes``: ``{"prefill": n | {"nodes", "rank", "parallelism"}, "decode": ...}``.
        ``kv_offload``: a taxonomy ``kv_offload`` key. ``advanced``: preset ids.
        ``gpu_count``: the host's real GPUs per node (D6). ``extra_args``/``extra_env``:
        appended last with provenance ``inventory``.

        Returns a :class:`Deployment` (a dict).
        """
        sel = None
        if variant in (None, "") or hardware in (None, "") or strategy in (None, "") or node_count in (None, ""):
            sel = self.select(recipe_id, variant, hardware, strategy, node_count, gpu_count)
            variant, hardware, strategy, node_count = sel["variant"], sel["hardware"], sel["strategy"], sel["node_count"]
            if pd_nodes is None and sel["pd_nodes"] not in (None, "skip"):
                pd_nodes = sel["pd_nodes"]
        return _Build(self, recipe_id, variant, hardware, strategy, node_count, features, feature_modes,
                      pd_nodes, kv_offload, advanced, gpu_count, extra_args, extra_env,
                      sel["notes"] if sel else []).run()


class _Build(object):
    """One resolveCommand call: every node of one deployment."""

    def __init__(self, resolver, recipe_id, variant, hardware, strategy, node_count, features, feature_modes,
                 pd_nodes, kv_offload, advanced, gpu_count, extra_args, extra_env, notes):
        cat = resolver.catalog
        self.resolver = resolver
        self.recipe = recipe = cat.recipe(recipe_id)
        self.rid = rid = cat.canonical_id(recipe_id)
        self.vkey = vkey = resolver.variant_key(recipe, variant, rid)
        self.variant = _as_map(recipe["variants"][vkey])
        self.model = _as_map(recipe.get("model"))
        self.hw = hw = resolver.hardware(hardware, gpu_count)
        meta_hw = _as_map(_as_map(recipe.get("meta")).get("hardware"))
        if meta_hw.get(hw.id) == "unsupported":
            raise ResolveError("recipe %s marks hardware %s unsupported (meta.hardware.%s)" % (rid, hw.id, hw.id))
        self.strategy_name = strategy
        self.strat = resolver.strategy(strategy)
        self.deploy_type = self.strat.get("deploy_type") or "single_node"
        if self.deploy_type == "kv_store_lb":
            raise UnsupportedError("strategy %s (Mooncake kv_store_lb) is not supported yet; use a serving strategy "
                                   "such as %s" % (strategy, ", ".join(resolver.effective_compatible(recipe)[:4])))
        if not _num(node_count) or int(node_count) != node_count or node_count < 1:
            raise ResolveError("node count must be a positive integer, got %r" % (node_count,))
        self.node_count = int(node_count)
        if self.node_count > MAX_NODES:
            raise ResolveError("node count %d exceeds the maximum of %d" % (self.node_count, MAX_NODES))
        if self.deploy_type == "multi_node" and self.node_count < 2:
            raise ResolveError("%s needs at least 2 nodes, got %d (use a single_node_* strategy for one node)" % (strategy, self.node_count))
        #: the recipe's ``strategy_overrides`` block of the chosen strategy
        self.overrides = _as_map(_as_map(recipe.get("strategy_overrides")).get(strategy))
        self.gpus_per_node = hw.gpu_count
        self.model_id = self.variant.get("model_id") or self.model.get("model_id")
        self.warnings = []
        self.notes = list(notes)
        self.features = resolver._feature_plan(recipe, rid, vkey, self.variant, hw, strategy, features,
                                               feature_modes, self.warnings)
        self.pd_nodes = _as_map(pd_nodes)
        self._pools = {}
        self.kv_offload = kv_offload
        self.advanced = self._advanced(advanced)
        #: (taxonomy key, option) of the KV offload that applies, or None
        self.kv_option = self._kv_option()
        self.extra_args = list(extra_args or [])
        self.extra_env = _as_map(extra_env)
        # provenance labels of the variant, the strategy and the strategy overrides
        self.variant_label = "variant %s" % vkey
        self.strategy_label = "strategy %s" % strategy
        self.overrides_label = "strategy_overrides.%s" % strategy

    # ------------------------------------------------------------------ gated inputs
    def _advanced(self, advanced):
        out = []
        custom = dict((o.get("id"), o) for o in _as_list(self.recipe.get("advanced_options")) if isinstance(o, dict))
        for pid in advanced or []:
            if pid in custom:
                out.append((pid, _as_list(custom[pid].get("args"))))
                continue
            if pid not in ADVANCED_PRESETS:
                raise ResolveError(_unknown("advanced preset", pid, list(ADVANCED_PRESETS) + list(custom)))
            args, gate = ADVANCED_PRESETS[pid]
            if gate == "supports_dcp" and not self.model.get("supports_dcp"):
                raise ResolveError("advanced preset dcp_8 needs model.supports_dcp in recipe %s" % self.rid)
            if gate == "flashinfer_autotune" and not self.model.get("flashinfer_autotune"):
                raise ResolveError("advanced preset no_flashinfer_autotune needs model.flashinfer_autotune in recipe %s" % self.rid)
            if gate == "ep" and not self.strategy_name.endswith(("tep", "dep")):
                raise ResolveError("advanced preset ep_weight_filter needs an expert-parallel strategy (*_tep or *_dep), not %s" % self.strategy_name)
            out.append((pid, args))
        return out

    def _kv_option(self):
        key = self.kv_offload
        if key in (None, "", "none"):
            return None
        catalog = self.resolver.catalog
        options = _as_map(catalog.taxonomy.get("kv_offload"))
        if key in catalog.strategies and catalog.strategies[key].get("deploy_type") == "kv_store_lb":
            raise UnsupportedError("KV offload %s (Mooncake kv_store_lb) is not supported yet; choose one of %s" % (key, ", ".join(sorted(options))))
        opt = options.get(key)
        if not isinstance(opt, dict):
            raise ResolveError(_unknown("kv_offload option", key, options))
        why = None
        support = _as_map(self.recipe.get("kv_offload_support")).get(key)
        allowed = opt.get("strategies")
        if self.deploy_type in ("pd_cluster", "kv_store_lb"):
            why = "pd_cluster owns --kv-transfer-config"
        elif isinstance(allowed, list) and self.strategy_name not in allowed:
            why = "it supports only strategies %s" % ", ".join(allowed)
        elif support == "unsupported":
            why = "the recipe marks it unsupported (kv_offload_support.%s)" % key
        elif opt.get("requires_opt_in") and support != "verified":
            why = "it requires the recipe to list it as verified under kv_offload_support"
        elif isinstance(opt.get("brands"), list) and self.hw.brand not in opt["brands"]:
            why = "it supports only %s hardware" % "/".join(opt["brands"])
        if why:
            self.warnings.append("kv_offload %s skipped on %s with %s: %s" % (key, self.hw.id, self.strategy_name, why))
            return None
        return (key, opt)

    # ------------------------------------------------------------------ layers shared by argv and env
    def _base_layers(self, kind, role):
        """The first layers of ``kind`` ("args" or "env"), as (source, value) in emission order:
        the model's base layer, the variant's, the variant's exact-hardware layer and the
        strategy's (for a PD pool, its role's) ``vllm_args`` or ``env``."""
        variant, label, hw_id = self.variant, self.variant_label, self.hw.id
        yield "model.base_" + kind, self.model.get("base_" + kind)
        yield label + " \u203a extra_" + kind, variant.get("extra_" + kind)
        yield (label + " \u203a hardware_overrides." + hw_id,
               _as_map(_as_map(variant.get("hardware_overrides")).get(hw_id)).get("extra_" + kind))
        field = "vllm_args" if kind == "args" else kind
        if role:
            yield self.strategy_label + " \u203a %s.%s" % (role, field), _as_map(self.strat.get(role)).get(field)
        else:
            yield self.strategy_label + " \u203a " + field, self.strat.get(field)

    def _override_layers(self, kind, role):
        """The hardware-override layers of ``kind`` ("args" or "env"), as (source, value).

        The generation block of the strategy overrides, else the recipe's and then the
        variant's generation block; then the exact-hardware block of the strategy overrides
        and, for a PD pool, the one of its role.
        """
        hw, overrides, label = self.hw, self.overrides, self.overrides_label
        field = "extra_" + kind
        by_hardware = _as_map(overrides.get("hardware_overrides"))
        block, key = hw.gen_or_nvidia(by_hardware)
        if block:
            yield label + " \u203a hardware_overrides." + key, _as_map(block).get(field)
        else:
            block, key = hw.gen_or_nvidia(_as_map(self.recipe.get("hardware_overrides")))
            if block:
                yield "hardware_overrides." + key, _as_map(block).get(field)
            block, key = hw.gen_or_nvidia(_as_map(self.variant.get("hardware_overrides")))
            if block:
                yield self.variant_label + " \u203a hardware_overrides." + key, _as_map(block).get(field)
        yield label + " \u203a hardware_overrides." + hw.id, _as_map(by_hardware.get(hw.id)).get(field)
        if role:
            role_block = _as_map(_as_map(_as_map(overrides.get(role)).get("hardware_overrides")).get(hw.id))
            yield label + " \u203a %s.hardware_overrides.%s" % (role, hw.id), role_block.get(field)

    # ------------------------------------------------------------------ argv layers
    def _parallel(self, args, role, rank):
        """Step 3: the parallelism flag block (TP/PP/DP/EP sizes and their ranks)."""
        strat, overrides, gpus, node_count = self.strat, self.overrides, self.gpus_per_node, self.node_count
        src = self.strategy_label + " \u203a parallelism"
        flag = strat.get("parallel_flag") or "--tensor-parallel-size"
        if self.deploy_type == "pd_cluster":
            self._pd_parallel(args, role, rank)
            return
        multi = self.deploy_type == "multi_node" and node_count > 1
        parallelism = strat.get("parallelism")
        head = "$HEAD_IP"
        if multi and flag == "--data-parallel-size":
            dp_local = gpus
            gen_block = self.hw.gen_or_nvidia(_as_map(overrides.get("hardware_overrides")))[0]
            exact = _as_map(_as_map(overrides.get("hardware_overrides")).get(self.hw.id))
            scan = _as_list(overrides.get("vllm_args")) + _as_list(overrides.get("extra_args")) + \
                _as_list(_as_map(gen_block).get("extra_args")) + _as_list(exact.get("extra_args"))
            for i, tok in enumerate(scan):
                if tok == "--data-parallel-size-local" and i + 1 < len(scan):
                    try:
                        dp_local = int(scan[i + 1])
                    except (TypeError, ValueError):
                        pass
            toks = ["--data-parallel-size", str(gpus * node_count), "--data-parallel-size-local", str(gpus),
                    "--data-parallel-address", head]
            if rank > 0:
                toks += ["--data-parallel-start-rank", str(rank * dp_local)]
        elif multi and parallelism == "tp_pp":
            toks = ["--tensor-parallel-size", str(gpus), "--pipeline-parallel-size", str(node_count), "--nnodes", str(node_count),
                    "--node-rank", str(rank), "--master-addr", head]
            if rank > 0:
                toks.append("--headless")
        elif multi and parallelism == "tp_dp":
            toks = ["--tensor-parallel-size", str(gpus), "--data-parallel-size", str(node_count), "--data-parallel-size-local", "1",
                    "--data-parallel-address", head]
            if rank > 0:
                toks += ["--data-parallel-start-rank", str(rank)]
        elif multi:
            toks = [flag, str(gpus * node_count), "--nnodes", str(node_count), "--node-rank", str(rank), "--master-addr", head]
            if rank > 0:
                toks.append("--headless")
        else:
            toks = [flag, str(self.single_node_size())]
        args.add(toks, src)

    def single_node_size(self):
        """resolveSingleNodeTp: the tensor-parallel size of a single-node deployment."""
        gpus, hw = self.gpus_per_node, self.hw
        if self.strategy_name != "single_node_tp":
            return gpus
        overrides_tp = _as_map(_as_map(self.recipe.get("strategy_overrides")).get("single_node_tp")).get("tp")
        for value in (self.variant.get("tp"), overrides_tp):
            if isinstance(value, dict):
                value = hw.keyed(value)
            if _num(value) and value > 0:
                value = int(value)
                return value if hw.generation == "cpu" else min(value, gpus)
        vmin = self.variant.get("vram_minimum_gb")
        if not _num(vmin) or hw.vram_per_gpu is None:
            return gpus
        return 1 if vmin <= hw.vram_per_gpu else gpus

    def pool(self, role):
        """PD pool geometry for ``role`` (the pd_cluster branch of the parallelism block), computed once per role."""
        info = self._pools.get(role)
        if info is None:
            info = self._pools[role] = self._pool(role)
        return info

    def _pool(self, role):
        gpus = self.gpus_per_node
        want = self.pd_nodes.get(role)
        spec = want if isinstance(want, dict) else {"nodes": want} if want is not None else {}
        nodes = spec.get("nodes")
        if nodes is None:
            nodes = 1 if self.node_count > 1 else 0
        nodes = int(nodes)
        rank = int(spec.get("rank") or 0)
        role_overrides = _as_map(self.overrides.get(role))
        role_strategy = _as_map(self.strat.get(role))
        parallelism = spec.get("parallelism") or role_overrides.get("parallelism") or role_strategy.get("parallelism") or "tp"
        allowed = self.pool_modes()
        if parallelism not in allowed:
            self.warnings.append("pd_cluster %s pool: parallelism %s is not offered by the recipe; using %s" % (role, parallelism, allowed[0]))
            parallelism = allowed[0]
        pool_gpus = (gpus // 2) if nodes == 0 else nodes * gpus
        info = {"nodes": nodes, "rank": rank, "parallelism": parallelism, "pool_gpus": pool_gpus}
        if parallelism == "dep":
            tp = role_overrides.get("tp") if role_overrides.get("tp") is not None else role_strategy.get("tp")
            # DP ranks per node: the whole node's GPUs over tp (tp 1 when unset), never below 1
            # (a tp larger than the node gives one rank per node, as upstream renders it)
            dp_local = max(1, gpus // int(tp or 1))
            info.update(tp=tp, dp_local=dp_local, dp_size=max(1, nodes) * dp_local, start_rank=rank * dp_local)
        else:
            info.update(tp=pool_gpus, dp_local=0, dp_size=1, start_rank=0)
        return info

    def pool_modes(self):
        modes = []
        for name in _as_list(self.recipe.get("compatible_strategies")):
            for suffix, mode in (("_tep", "tep"), ("_dep", "dep"), ("_tp", "tp")):
                if str(name).endswith(suffix):
                    if mode not in modes:
                        modes.append(mode)
                    break
        narrowed = _as_list(self.overrides.get("pool_modes"))
        if narrowed:
            modes = [m for m in modes if m in narrowed] or [m for m in narrowed if m in ("tp", "tep", "dep")]
        order = ("tp", "tep", "dep")
        modes = [m for m in order if m in modes]
        return modes or ["tp"]

    def _pd_parallel(self, args, role, rank):
        role_overrides = _as_map(self.overrides.get(role))
        role_strategy = _as_map(self.strat.get(role))
        info = self.pool(role)
        nodes = info["nodes"]
        upper = role.upper()
        addr = "$%s_NODE_1" % upper
        src = self.strategy_label + " \u203a %s pool (%s)" % (role, info["parallelism"])
        if info["parallelism"] == "dep":
            toks = []
            if info["tp"] is not None:
                toks += ["--tensor-parallel-size", str(info["tp"])]
            toks += ["--data-parallel-size", str(info["dp_size"]), "--data-parallel-size-local", str(info["dp_local"]),
                     "--data-parallel-start-rank", str(rank * info["dp_local"]), "--data-parallel-address", addr,
                     "--data-parallel-rpc-port", "$%s_DP_RPC_PORT" % upper]
            if nodes > 1:
                toks.append("--data-parallel-hybrid-lb")
            toks.append("--enable-expert-parallel")
        else:
            flag = role_overrides.get("parallel_flag") or role_strategy.get("parallel_flag") or self.strat.get("parallel_flag") \
                or "--tensor-parallel-size"
            toks = [flag, str(info["pool_gpus"])]
            if info["parallelism"] == "tep":
                toks.append("--enable-expert-parallel")
            if nodes > 1:
                toks += ["--nnodes", str(nodes), "--node-rank", str(rank), "--master-addr", addr]
                if rank > 0:
                    toks.append("--headless")
        args.add(toks, src)

    def build_args(self, role=None, rank=0):
        """buildArgs: every layer appended in order; last-wins dedupe at the end."""
        args = _Args()
        hw, overrides, overrides_label = self.hw, self.overrides, self.overrides_label
        # 1-3. model, variant, strategy
        for source, value in self._base_layers("args", role):
            args.add(_as_list(value), source)
        self._parallel(args, role, rank)
        # 4. strategy overrides
        if role:
            role_overrides = _as_map(overrides.get(role))
            args.add(_as_list(role_overrides.get("extra_args")), overrides_label + " \u203a %s.extra_args" % role)
            args.add(_as_list(role_overrides.get("vllm_args")), overrides_label + " \u203a %s.vllm_args" % role)
        else:
            args.add(_as_list(overrides.get("extra_args")), overrides_label + " \u203a extra_args")
            args.add(_as_list(overrides.get("vllm_args")), overrides_label + " \u203a vllm_args")
        # 5. hardware overrides
        for source, value in self._override_layers("args", role):
            args.add(_as_list(value), source)
        # 6. advanced presets
        for pid, toks in self.advanced:
            args.add(toks, "advanced " + pid)
        # 7. features
        for fkey, feat, mode in self.features:
            if not self._feature_allowed(feat):
                continue
            if feat.get("modes") is not None and isinstance(feat.get("modes"), dict):
                if mode is None:
                    continue
                mode_def = _as_map(feat["modes"].get(mode))
                mode_overrides = _as_map(mode_def.get("hardware_overrides"))
                hw_block = hw.keyed(mode_overrides)
                hw_args = _as_map(hw_block).get("args") if isinstance(hw_block, dict) else None
                if hw_args is not None:
                    which = next(k for k in (hw.id, hw.generation, hw.brand.lower(), "default")
                                 if mode_overrides.get(k) is not None)
                    args.add(_as_list(hw_args), "feature %s \u203a mode %s \u203a hardware_overrides.%s" % (fkey, mode, which))
                else:
                    args.add(_as_list(mode_def.get("args")), "feature %s \u203a mode %s" % (fkey, mode))
            else:
                block, key = hw.gen_or_nvidia(_as_map(feat.get("hardware_overrides")))
                if block is not None and _as_map(block).get("args") is not None:
                    args.add(_as_list(block["args"]), "feature %s \u203a hardware_overrides.%s" % (fkey, key))
                else:
                    args.add(_as_list(feat.get("args")), "feature " + fkey)
        # 8. KV offload (composing options)
        if self.kv_option:
            args.add(_as_list(self.kv_option[1].get("args")), "kv_offload " + self.kv_option[0])
        # inventory extras come last
        args.add(self.extra_args, "inventory")
        return dedupe(args.units())

    def _feature_allowed(self, feat):
        allowed = feat.get("strategies")
        return not isinstance(allowed, list) or self.strategy_name in allowed

    # ------------------------------------------------------------------ env layers
    def build_env(self, role=None, rank=0):
        """buildEnv, with D1 (feature env) before the PD-only clean-up."""
        env = _Env()
        hw, overrides = self.hw, self.overrides
        strategy_label, overrides_label = self.strategy_label, self.overrides_label
        for source, value in self._base_layers("env", role):
            env.update(_as_map(value), source)
        if self.kv_option:
            env.update(_as_map(self.kv_option[1].get("env")), "kv_offload " + self.kv_option[0])
        if role:
            info = self.pool(role)
            gpus = self.gpus_per_node
            if info["nodes"] == 0:
                half = gpus // 2
                ids = range(0, half) if role == "prefill" else range(half, 2 * half)
            else:
                ids = range(0, gpus)
            if len(ids):
                env.update({"CUDA_VISIBLE_DEVICES": ",".join(str(i) for i in ids)}, strategy_label + " \u203a %s pool GPUs" % role)
            if info["nodes"] >= 2:
                env.update({"GLOO_SOCKET_IFNAME": "$IFACE_NAME", "NCCL_SOCKET_IFNAME": "$IFACE_NAME"},
                           strategy_label + " \u203a %s pool (multi-node)" % role)
        env.update(_as_map(overrides.get("env")), overrides_label + " \u203a env")
        if role:
            env.update(_as_map(_as_map(overrides.get(role)).get("env")), overrides_label + " \u203a %s.env" % role)
        else:
            env.update(_as_map(overrides.get("extra_env")), overrides_label + " \u203a extra_env")
        for source, value in self._override_layers("env", role):
            env.update(_as_map(value), source)
        # D1: feature env, then the chosen mode's env, in feature order
        for fkey, feat, mode in self.features:
            if not self._feature_allowed(feat):
                continue
            env.update(_as_map(feat.get("env")), "feature %s \u203a env (D1)" % fkey)
            if mode is not None:
                env.update(_as_map(_as_map(_as_map(feat.get("modes")).get(mode)).get("env")),
                           "feature %s \u203a mode %s \u203a env (D1)" % (fkey, mode))
        if role:
            if hw.id not in NVL4_HARDWARE:
                for key in NVL4_ONLY_ENV:
                    env.delete(key)
            info = self.pool(role)
            if info["parallelism"] == "dep" and rank > 0:
                old = "$%s_NODE_1" % role.upper()
                new = "$%s_NODE_%d" % (role.upper(), rank + 1)
                for key, value in list(env.values.items()):
                    if value == old:
                        env.update({key: new}, strategy_label + " \u203a %s pool rank %d address" % (role, rank))
        env.update(self.extra_env, "inventory")
        return env

    # ------------------------------------------------------------------ image
    def image(self):
        """computeDockerMeta: (image, provenance)."""
        hw, variant = self.hw, self.variant
        brand_key = hw.brand_key
        nightly = bool(self.model.get("nightly_required") or variant.get("nightly_required"))
        pin = _as_map(_as_map(variant.get("hardware_overrides")).get(hw.id)).get("docker_image")
        if isinstance(pin, str) and pin:
            return pin, self.variant_label + " \u203a hardware_overrides.%s.docker_image" % hw.id
        cuda = None
        for value, label in ((variant.get("docker_image"), self.variant_label + " \u203a docker_image"),
                             (self.model.get("docker_image"), "model.docker_image")):
            if isinstance(value, str) and value:
                if brand_key == "nvidia":
                    return value, label
            elif isinstance(value, dict):
                if brand_key in value:
                    sub = value[brand_key]
                    if isinstance(sub, str) and sub:
                        return sub, label + "." + brand_key
                    if brand_key == "nvidia" and isinstance(sub, dict) and cuda is None:
                        cuda = (sub, label + ".nvidia")
                elif brand_key == "nvidia" and ("cu130" in value or "cu129" in value) and cuda is None:
                    cuda = (value, label)
        if hw.generation == "xpu":
            if nightly:
                where = "model" if self.model.get("nightly_required") else self.variant_label
                self.warnings.append("%s sets nightly_required, but Intel XPU has no nightly image: using %s as upstream does "
                                     "(pin vllm_image if it is too old)" % (where, XPU_DEFAULT_IMAGE))
            return XPU_DEFAULT_IMAGE, "default image for Intel XPU"
        if cuda is not None:
            for key in ("cu130", "cu129"):
                if cuda[0].get(key):
                    return cuda[0][key], cuda[1] + "." + key
        return DEFAULT_IMAGES[(brand_key, nightly)], "default image for %s%s" % (brand_key, " (nightly)" if nightly else "")

    def gpu_flags(self):
        hw = self.hw
        if hw.brand_key == "intel":
            return list(GPU_FLAGS["xpu" if hw.generation == "xpu" else "cpu"])
        return list(GPU_FLAGS[hw.brand_key])

    # ------------------------------------------------------------------ router
    def router(self, prefill, decode):
        policy = _as_map(self.strat.get("router")).get("policy") or "round_robin"
        argv = ["vllm-router", "--policy", policy, "--vllm-pd-disaggregation"]
        for role, info, port in (("prefill", prefill, 8001), ("decode", decode, 8002)):
            count = max(1, info["nodes"]) if info["parallelism"] == "dep" else 1
            for i in range(count):
                argv += ["--" + role, "http://$%s_NODE_%d:%d" % (role.upper(), i + 1, port)]
        intra = _as_map(self.overrides.get("router")).get("intra_node_data_parallel_size")
        if intra is None:
            intra = max(prefill["dp_local"], decode["dp_local"], 1)
        argv += ["--host", "$ROUTER_HOST", "--port", "$ROUTER_PORT", "--intra-node-data-parallel-size", str(intra)]
        return {"argv": argv, "command": format_router(argv), "install": "uv pip install vllm-router", "policy": policy}

    # ------------------------------------------------------------------ run
    def _node(self, role, rank, pool_role=None):
        args, args_prov = self.build_args(pool_role, rank)
        env = self.build_env(pool_role, rank)
        return {"role": role, "rank": rank, "argv": ["vllm", "serve", self.model_id] + args,
                "env": env.values, "args_provenance": args_prov, "env_provenance": env.prov}

    def run(self):
        hw = self.hw
        image, image_source = self.image()
        nodes = []
        pools = None
        router = None
        if self.deploy_type == "pd_cluster":
            pools = {}
            for role in ("prefill", "decode"):
                info = self.pool(role)
                pools[role] = info
                for rank in range(max(1, info["nodes"])):
                    node = self._node(role, rank, role)
                    node["pool_nodes"] = info["nodes"]
                    nodes.append(node)
            router = self.router(pools["prefill"], pools["decode"])
        elif self.deploy_type == "multi_node":
            nodes.append(self._node("head", 0))
            for rank in range(1, self.node_count):
                nodes.append(self._node("worker", rank))
        else:
            nodes.append(self._node("single", 0))
        self.warnings.extend(check_warnings(self.resolver.check_facts(self.rid, self.recipe, self.vkey, hw, pools)))
        return {
            "recipe": self.rid,
            "model": self.model_id,
            "variant": self.vkey,
            "hardware": hw.id,
            "gpu_count": self.gpus_per_node,
            "strategy": self.strategy_name,
            "deploy_type": self.deploy_type,
            "node_count": self.node_count,
            "features": [f for f, feat, _m in self.features if self._feature_allowed(feat)],
            "feature_modes": dict((f, m) for f, _feat, m in self.features if m is not None),
            "kv_offload": self.kv_option[0] if self.kv_option else None,
            "advanced": [pid for pid, _t in self.advanced],
            "image": image,
            "image_source": image_source,
            "docker_gpu_flags": self.gpu_flags(),
            "min_vllm_version": max_version(self.model.get("min_vllm_version"), self.variant.get("min_vllm_version")),
            "nightly": bool(self.model.get("nightly_required") or self.variant.get("nightly_required")),
            "nodes": nodes,
            "pools": pools,
            "router": router,
            "warnings": self.warnings,
            "notes": self.notes,
        }
