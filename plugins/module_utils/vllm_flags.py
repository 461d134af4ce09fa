# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmfleet contributors
# Apache License 2.0 (see LICENSE)
"""Check rendered ``vllm serve`` arguments against the flags a vLLM version accepts.

Pure Python (standard library only, Python 3.8+, no Ansible imports), shared by
modules, plugins, tests and ``tools/``.

The catalogues are ``<collection root>/data/vllm_cli/<version>.json``, one per
vLLM release, built by ``tools/vllm_flag_catalog.py`` (see
``data/vllm_cli/README.md`` for the format).  The checker models what vLLM's
``FlexibleArgumentParser`` (argparse plus vLLM's pre-processing) does with an
argv, and the start-up check of tool-call / reasoning parser names:

* ``--tokenizer_mode`` == ``--tokenizer-mode`` (underscores become dashes in the
  option name, up to the first ``.``; single-dash options are left alone);
* ``--flag=value`` and ``--flag value``;
* ``--no-X`` (and, from 0.33, ``--disable-X``/``--enable-X``) only exist for
  boolean flags: they are option strings of the catalogue entry;
* dotted JSON keys: ``--compilation-config.mode 3``, ``-cc.mode=3``,
  ``--attention_config.use_trtllm_attention=True`` are merged by vLLM into one
  JSON value of the base option, which must be JSON-valued; the dotted form
  always takes the next token as its value;
* ``-O3``, ``-O=3``, ``-O 3`` mean ``--optimization-level 3``;
* tokenization as the resolver's (``resolver._Args.units``): a token starting with ``-``
  is an option, the next token is its value when the option takes one and the
  token does not start with ``-`` (argparse also takes negative numbers such as
  ``-1`` as values); options with ``nargs='+'`` take every following value;
  any other token is a positional, and ``vllm serve`` takes exactly one: the
  model;
* argparse choices (after vLLM's type conversion) and the value types argparse
  converts (int, float, human-readable ints, JSON);
* unique prefixes of long options are accepted by argparse (``allow_abbrev``);
  the collection reports them anyway unless ``allow_abbrev=True`` is passed,
  since a later vLLM may add a flag that makes the prefix ambiguous.
"""

from __future__ import annotations

import difflib
import json
import os
import re
import threading

try:
    from .errors import FlagValidationError, RecipeError, ValidationIssue
except ImportError:  # a top-level module: tests/molecule/vllm_double/build.py puts module_utils/ on sys.path
    from errors import FlagValidationError, RecipeError, ValidationIssue  # type: ignore

__all__ = [
    "CATALOG_DIR",
    "FlagCatalog",
    "UnsupportedVllmVersion",
    "available_versions",
    "check_args",
    "find_problems",
    "load_catalog",
    "parse_image_tag",
    "resolve_catalog_version",
    "select_version",
    "validate_args",
]

CATALOG_DIR = os.path.join(
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "data", "vllm_cli"
)
CATALOG_FORMAT = "llmfleet.vllm/vllm-flag-catalog"

_VERSION_FILE_RE = re.compile(r"^(\d+\.\d+(?:\.\d+)*(?:[.+-][0-9A-Za-z.]+)?)\.json$")
_TAG_VERSION_RE = re.compile(r"^v?(\d+\.\d+(?:\.\d+)?)((?:rc|a|b|\.?dev|\.?post)\d*)?(?:[-+_.][0-9A-Za-z.+_-]*)?$")
_NEGATIVE_NUMBER_RE = re.compile(r"^-\d+$|^-\d*\.\d+$")
_PLACEHOLDER_RE = re.compile(r"^\$[A-Za-z_][A-Za-z0-9_]*$|^\$\{[^}]+\}$")
_HUMAN_INT_RE = re.compile(r"^(\d+(?:\.\d+)?)([kKmMgGtT])$")
_JSON_OBJECT_RE = re.compile(r"^\s*{.*}\s*$", re.S)
_ROLLING_TAGS = ("latest", "nightly", "main", "dev", "edge")


class UnsupportedVllmVersion(RecipeError, ValueError):
    """A vLLM version older than every shipped flag catalogue, or not a version."""


# ---------------------------------------------------------------------------
# versions
# ---------------------------------------------------------------------------


def _version_key(v):
    """Sort key for versions like 0.28.0, 0.10.1.1, 0.11.0rc2 (pre-releases sort first)."""
    m = re.match(r"^v?(\d+(?:\.\d+)*)(.*)$", str(v).strip())
    if not m:
        raise UnsupportedVllmVersion("not a vLLM version: %r" % (v,))
    nums = [int(x) for x in m.group(1).split(".")]
    while len(nums) < 3:
        nums.append(0)
    rest = m.group(2).lstrip(".-+_")
    # 0.11.0rc1 < 0.11.0 < 0.11.0.post1
    if not rest:
        tail = (1, "")
    elif rest.startswith(("post", "p")):
        tail = (2, rest)
    else:
        tail = (0, rest)
    return tuple(nums) + tail


def _norm_version(v):
    m = re.match(r"^v?(\d+(?:\.\d+)*)(.*)$", str(v).strip())
    if not m:
        raise UnsupportedVllmVersion("not a vLLM version: %r" % (v,))
    return m.group(1) + m.group(2)


def available_versions(catalog_dir=None):
    """Sorted list (oldest first) of the vLLM versions that have a shipped catalogue."""
    d = catalog_dir or CATALOG_DIR
    try:
        names = os.listdir(d)
    except OSError:
        return []
    out = []
    for n in names:
        m = _VERSION_FILE_RE.match(n)
        if m:
            out.append(m.group(1))
    return sorted(out, key=_version_key)


def resolve_catalog_version(version, catalog_dir=None):
    """``(catalogue version, note)`` for a vLLM version: the exact catalogue, else
    the newest one not newer than ``version``.  ``note`` is empty for an exact
    match.  Raises :class:`UnsupportedVllmVersion` for a version older than every
    catalogue."""
    versions = available_versions(catalog_dir)
    if not versions:
        raise UnsupportedVllmVersion("no vLLM flag catalogue found in %s" % (catalog_dir or CATALOG_DIR))
    want = _norm_version(version)
    key = _version_key(want)
    for v in versions:
        if _version_key(v) == key:
            return v, ""
    older = [v for v in versions if _version_key(v) <= key]
    if not older:
        raise UnsupportedVllmVersion(
            "vLLM %s is older than every flag catalogue (oldest: %s; shipped: %s): "
            "its flags cannot be checked" % (want, versions[0], ", ".join(versions))
        )
    best = older[-1]
    if best == versions[-1]:
        note = (
            "no catalogue for vLLM %s; using %s, the newest shipped (flags added after %s will be "
            "reported as unknown)" % (want, best, best)
        )
    else:
        note = "no catalogue for vLLM %s; using %s, the newest catalogue not newer than it" % (want, best)
    return best, note


def parse_image_tag(image):
    """``(repository, tag, version)`` of a container image reference.

    ``version`` is the vLLM release the tag names (``v0.28.0``, ``0.28.0``,
    ``v0.28.0-cu129`` -> ``0.28.0``), or None (``latest``, ``nightly-<sha>``,
    ``gemma4-0505-cu129``, no tag).  A digest (``@sha256:...``) is ignored.
    """
    ref = str(image).strip()
    ref = ref.split("@", 1)[0]
    slash = ref.rfind("/")
    colon = ref.rfind(":")
    if colon > slash:
        repo, tag = ref[:colon], ref[colon + 1:]
    else:
        repo, tag = ref, None
    version = None
    if tag:
        m = _TAG_VERSION_RE.match(tag)
        if m:
            version = m.group(1)
            if version.count(".") == 1:
                version += ".0"
            version += (m.group(2) or "").lstrip(".")
    return repo, tag, version


def select_version(image=None, version=None, catalog_dir=None):
    """Pick the flag catalogue to check against: ``(catalogue version, reason)``.

    1. an image tag naming a release (``vllm/vllm-openai:v0.28.0``, ``:0.28.0``,
       ``:v0.28.0-cu129``);
    2. else the explicit ``version``;
    3. else (no image, or a tag such as ``latest``/``nightly`` that names no
       release) the newest catalogue.

    A version without an exact catalogue maps to the newest catalogue not newer
    than it (the reason says so); a version older than every catalogue raises
    :class:`UnsupportedVllmVersion`.
    """
    versions = available_versions(catalog_dir)
    if not versions:
        raise UnsupportedVllmVersion("no vLLM flag catalogue found in %s" % (catalog_dir or CATALOG_DIR))
    newest = versions[-1]
    if image:
        repo, tag, tag_version = parse_image_tag(image)
        if tag_version:
            cat, note = resolve_catalog_version(tag_version, catalog_dir)
            reason = "image %s names vLLM %s" % (image, tag_version)
            if version and _version_key(_norm_version(version)) != _version_key(tag_version):
                reason += " (the image tag wins over the version %s given)" % (version,)
            reason += "; " + (note if note else "catalogue %s" % cat)
            return cat, reason
        if version:
            cat, note = resolve_catalog_version(version, catalog_dir)
            reason = "image %s names no vLLM release (tag %s); using the version given, %s" % (
                image,
                tag or "none, i.e. latest",
                version,
            )
            return cat, reason + ("; " + note if note else "")
        kind = "names no vLLM release"
        t = (tag or "latest").lower()
        if any(t == r or t.startswith(r + "-") for r in _ROLLING_TAGS):
            kind = "is a rolling tag"
        return newest, "image %s: tag %s %s; using the newest catalogue, %s" % (
            image,
            tag or "(none, i.e. latest)",
            kind,
            newest,
        )
    if version:
        cat, note = resolve_catalog_version(version, catalog_dir)
        return cat, (note if note else "vLLM %s: catalogue %s" % (_norm_version(version), cat))
    return newest, "no image or version given; using the newest catalogue, %s" % newest


# ---------------------------------------------------------------------------
# catalogue
# ---------------------------------------------------------------------------


def _normalize_long(name):
    """FlexibleArgumentParser: underscores -> dashes between the leading ``--`` and the first ``.``."""
    if name.startswith("--"):
        head, dot, tail = name[2:].partition(".")
        return "--" + head.replace("_", "-") + dot + tail
    return name


class FlagCatalog(object):
    """The flags one vLLM version accepts; built from a catalogue document."""

    def __init__(self, doc, path=None):
        if doc.get("format") not in (None, CATALOG_FORMAT):
            raise ValueError("%s: not a vLLM flag catalogue (format %r)" % (path, doc.get("format")))
        self.doc = doc
        self.path = path
        self.version = doc["vllm_version"]
        self.parser = dict(doc.get("parser") or {})
        self.flags = doc["flags"]
        self._by_option = {}
        for canon, e in self.flags.items():
            for o in e["option_strings"]:
                self._by_option[o] = canon
        self._long_options = sorted(o for o in self._by_option if o.startswith("--"))
        self._all_options = sorted(self._by_option)
        self._suggest_cache = {}

    def __repr__(self):
        return "FlagCatalog(%s, %d flags)" % (self.version, len(self.flags))

    # lookups --------------------------------------------------------------
    def option_strings(self):
        """Every option string argparse registers (``--no-`` forms and short aliases too)."""
        return list(self._all_options)

    def normalize(self, option):
        """The spelling argparse sees after vLLM's pre-processing (``_`` -> ``-``)."""
        if self.parser.get("underscore_dash_equivalent", True):
            return _normalize_long(option)
        return option

    def lookup(self, option):
        """``(canonical, entry)`` for an exact (normalized) option string, else None."""
        canon = self._by_option.get(self.normalize(option))
        if canon is None:
            return None
        return canon, self.flags[canon]

    def canonical(self, option):
        hit = self.lookup(option)
        return hit[0] if hit else None

    def entry(self, option):
        hit = self.lookup(option)
        return hit[1] if hit else None

    def __contains__(self, option):
        return self.lookup(option) is not None

    def takes_value(self, option):
        e = self.entry(option)
        return bool(e and e["takes_value"])

    def is_boolean(self, option):
        e = self.entry(option)
        return bool(e and e["action"] == "boolean_optional")

    def is_negative(self, option):
        """True for the spellings that switch a boolean off (``--no-X``, 0.33 ``--disable-X``)."""
        e = self.entry(option)
        return bool(e) and self.normalize(option) in e.get("negative_option_strings", [])

    def is_json(self, option):
        e = self.entry(option)
        return bool(e and e.get("json"))

    def choices(self, option):
        e = self.entry(option)
        return list(e["choices"]) if e and e.get("choices") is not None else None

    def runtime_choices(self, option):
        e = self.entry(option)
        rc = e.get("runtime_choices") if e else None
        return list(rc["values"]) if rc else None

    def prefix_matches(self, prefix):
        """Option strings argparse would accept ``prefix`` as an abbreviation of."""
        p = self.normalize(prefix)
        if p.startswith("--"):
            return [o for o in self._long_options if o.startswith(p)]
        return [o for o in self._all_options if not o.startswith("--") and o.startswith(p)]

    def suggest(self, option, n=3):
        """Closest valid spellings (difflib) of an unknown option."""
        name = self.normalize(option)
        key = (name, n)
        hit = self._suggest_cache.get(key)
        if hit is None:
            hit = self._suggest_cache[key] = self._suggest(name, n)
        return list(hit)

    def _suggest(self, name, n):
        pool = self._long_options if name.startswith("--") else self._all_options
        out = []
        # --disable-X / --enable-X written for a --X / --no-X boolean
        for a, b in (("--disable-", "--no-enable-"), ("--enable-", "--"), ("--disable-", "--no-")):
            if name.startswith(a):
                alt = b + name[len(a):]
                if alt in self._by_option and alt not in out:
                    out.append(alt)
        if name.startswith("--no-") and ("--" + name[5:]) in self._by_option:
            out.append("--" + name[5:])
        for c in difflib.get_close_matches(name, pool, n=n + 2, cutoff=0.6):
            if c not in out:
                out.append(c)
        return out[:n]


_CACHE = {}
_CACHE_LOCK = threading.Lock()


def load_catalog(version, catalog_dir=None):
    """The :class:`FlagCatalog` of a vLLM version (cached).

    ``version`` must name a shipped catalogue exactly (``0.28.0`` or
    ``v0.28.0``); use :func:`select_version` / :func:`resolve_catalog_version`
    to map other versions first.
    """
    d = os.path.abspath(catalog_dir or CATALOG_DIR)
    v = _norm_version(version)
    key = (d, v)
    with _CACHE_LOCK:
        cat = _CACHE.get(key)
        if cat is not None:
            return cat
        path = os.path.join(d, v + ".json")
        if not os.path.isfile(path):
            raise UnsupportedVllmVersion(
                "no flag catalogue for vLLM %s in %s (shipped: %s)"
                % (v, d, ", ".join(available_versions(catalog_dir)) or "none")
            )
        with open(path) as fh:
            cat = FlagCatalog(json.load(fh), path)
        _CACHE[key] = cat
        return cat


def _catalog_for(version, catalog_dir=None):
    """``(catalog, label)`` for a version string (mapped like select_version) or a FlagCatalog."""
    if isinstance(version, FlagCatalog):
        return version, "vLLM %s" % version.version
    if version is None:
        v = available_versions(catalog_dir)
        if not v:
            raise UnsupportedVllmVersion("no vLLM flag catalogue found")
        return load_catalog(v[-1], catalog_dir), "vLLM %s" % v[-1]
    cat_v, note = resolve_catalog_version(version, catalog_dir)
    cat = load_catalog(cat_v, catalog_dir)
    want = _norm_version(version)
    if note:
        return cat, "vLLM %s (checked against the %s catalogue)" % (want, cat_v)
    return cat, "vLLM %s" % cat_v


# ---------------------------------------------------------------------------
# value checks
# ---------------------------------------------------------------------------


def _is_placeholder(value):
    return bool(_PLACEHOLDER_RE.match(value)) or "{{" in value


def _human_int(value):
    v = value.strip()
    m = _HUMAN_INT_RE.match(v)
    if m:
        number, suffix = m.groups()
        if suffix in "KMGT" and "." in number:
            raise ValueError("decimals are not allowed with binary suffixes")
        return int(float(number)) if suffix in "kmgt" else int(number)
    return int(v)


def _convert(entry, value):
    """Emulate the argparse ``type=`` conversion: returns the converted value or
    raises ValueError with a reason.  ``None`` stands for vLLM's null."""
    t = entry.get("type") or "str"
    if entry.get("optional") and value in ("", "None"):
        return None
    if t == "int":
        try:
            return int(value)
        except ValueError:
            raise ValueError("expects an integer")
    if t == "float":
        try:
            return float(value)
        except ValueError:
            raise ValueError("expects a number")
    if t == "human_int":
        try:
            return _human_int(value)
        except ValueError:
            raise ValueError("expects an integer such as 8192, 32k or 1M")
    if t == "human_int_or_auto":
        if value.strip() == "-1" or value.strip().lower() == "auto":
            return -1
        try:
            return _human_int(value)
        except ValueError:
            raise ValueError("expects an integer such as 32768, 32k or 1M, or auto")
    if t in ("json", "json_object"):
        try:
            parsed = json.loads(value)
        except ValueError as exc:
            raise ValueError("expects JSON (%s)" % exc)
        if t == "json_object" and not isinstance(parsed, dict):
            raise ValueError("expects a JSON object ({...})")
        return parsed
    if t == "json_or_str":
        if _JSON_OBJECT_RE.match(value):
            try:
                return json.loads(value)
            except ValueError as exc:
                raise ValueError("looks like a JSON object but is not valid JSON (%s)" % exc)
        return value
    return value


def _choice_ok(entry, converted, raw):
    choices = entry.get("choices")
    if choices is None:
        return True
    allowed = set(choices) | set(entry.get("platform_choices") or [])
    norm = entry.get("choices_normalize")
    if converted is None:
        # vLLM's optional_type turns "None" into None, which argparse then
        # compares with the string choices: only a literal None would pass.
        return False
    value = converted
    if norm == "lower_snake":
        value = raw.lower().replace("-", "_")
    if norm == "comma_combinations":
        return all(part in allowed for part in str(value).split(","))
    return str(value) in allowed


def _fmt_list(values, limit=60):
    values = list(values)
    if len(values) > limit:
        return ", ".join(values[:limit]) + ", ... (%d in all)" % len(values)
    return ", ".join(values)


# ---------------------------------------------------------------------------
# the checker
# ---------------------------------------------------------------------------


class _Checker(object):
    def __init__(self, catalog, label, allow_abbrev, catalog_dir):
        self.cat = catalog
        self.label = label
        self.allow_abbrev = allow_abbrev
        self.catalog_dir = catalog_dir
        self.problems = []

    def add(self, flag, code, message):
        self.problems.append(ValidationIssue.in_argv(flag, code, "%s: %s" % (self.label, message), self.cat.version))

    # tokens ---------------------------------------------------------------
    def is_option_like(self, tok):
        """argparse's view: does this token start an option (else it is a value/positional)?"""
        if not tok.startswith("-") or tok == "-":
            return False
        if tok == "--":
            return True
        name = tok.split("=", 1)[0]
        if self.cat.lookup(name.split(".", 1)[0] if name.startswith("-") else name) is not None:
            return True
        if _NEGATIVE_NUMBER_RE.match(tok):
            return False  # vLLM registers no option that looks like a negative number
        if " " in tok and not self.cat.prefix_matches(name):
            return False
        return True

    def other_versions_with(self, option):
        out = []
        for v in available_versions(self.catalog_dir):
            if v == self.cat.version:
                continue
            try:
                if load_catalog(v, self.catalog_dir).lookup(option) is not None:
                    out.append(v)
            except Exception:  # pragma: no cover - a broken extra catalogue
                continue
        return out

    def unknown(self, written, name):
        msg = "%s is not a vllm serve option" % written
        if name.startswith("--no-") and self.cat.lookup("--" + name[5:]) is not None:
            base = "--" + name[5:]
            canon, e = self.cat.lookup(base)
            if e["action"] == "boolean_optional":
                msg = "%s is not an option of this version; %s is a boolean flag spelled %s" % (
                    written,
                    canon,
                    ", ".join(e["option_strings"]),
                )
                self.add(written, "unknown", msg)
                return
            msg = "%s does not exist: only boolean flags have a --no- form, and %s %s" % (
                written,
                base,
                "takes a value" if e["takes_value"] else "is a %s switch" % e["action"],
            )
            self.add(written, "not-negatable", msg)
            return
        sugg = self.cat.suggest(name)
        if sugg:
            msg += "; closest: %s" % ", ".join(sugg)
        others = self.other_versions_with(name)
        if others:
            msg += " (accepted by vLLM %s)" % ", ".join(others)
        self.add(written, "unknown", msg)

    def resolve(self, written, name):
        """``(canonical, entry, joined_value)`` for an option name, or None.

        Reports unknown, abbreviated and ambiguous names.  ``joined_value`` is set
        for argparse's joined short form (``-qfp8`` is ``-q fp8``).
        """
        hit = self.cat.lookup(name)
        if hit is not None:
            return hit[0], hit[1], None
        # argparse._get_option_tuples: long options match by prefix when
        # allow_abbrev; a single-dash token matches its first two characters
        # (the rest is the value) and the options it is a prefix of.
        tuples = []
        if name.startswith("--"):
            if self.cat.parser.get("allow_abbrev", True):
                tuples = [(o, None) for o in self.cat.prefix_matches(name)]
        else:
            if len(name) > 2 and self.cat.lookup(name[:2]) is not None:
                tuples.append((name[:2], name[2:]))
            tuples += [(o, None) for o in self.cat.prefix_matches(name)]
        if len(tuples) == 1:
            target, joined = tuples[0]
            canon, entry = self.cat.lookup(target)
            if joined is None and not self.allow_abbrev:
                self.add(
                    written,
                    "abbreviation",
                    "%s is an abbreviation of %s: argparse accepts unique prefixes, but a later vLLM "
                    "may add an option that makes it ambiguous; spell it out" % (written, target),
                )
            return canon, entry, joined
        if len(tuples) > 1:
            self.add(
                written,
                "ambiguous",
                "%s is ambiguous (argparse error): it could be %s"
                % (written, _fmt_list([t if j is None else "%s %s" % (t, j) for t, j in tuples], 8)),
            )
            return None
        self.unknown(written, name)
        return None

    def check_value(self, written, canon, entry, value):
        if value is None or _is_placeholder(value):
            return
        try:
            converted = _convert(entry, value)
        except ValueError as exc:
            self.add(written, "bad-value", "%s %r: %s (argparse type %s)" % (
                written, value, exc, entry.get("argparse_type") or entry.get("type")))
            return
        if not _choice_ok(entry, converted, value):
            valid = list(entry["choices"]) + list(entry.get("platform_choices") or [])
            close = difflib.get_close_matches(value, valid, n=3, cutoff=0.5)
            msg = "%s %r is not a valid choice; valid choices: %s" % (written, value, _fmt_list(valid))
            if close:
                msg += "; closest: %s" % ", ".join(close)
            self.add(written, "bad-choice", msg)

    # main loop ------------------------------------------------------------
    def run(self, args):
        toks = ["%s" % a for a in args if a is not None]
        full = len(toks) >= 2 and os.path.basename(toks[0]) == "vllm" and toks[1] == "serve"
        rest = toks[2:] if full else toks
        model_slot_free = full
        positional_model = False
        model_option = False
        runtime_values = []  # (written, canonical, entry, value)
        present = set()  # canonical names seen
        prev = None  # (written, takes_value) of the previous option, for messages
        only_positionals = False
        features = self.cat.parser
        olevel = features.get("optimization_level_shorthand")
        i = 0
        n = len(rest)
        while i < n:
            tok = rest[i]
            if only_positionals or not self.is_option_like(tok):
                if model_slot_free:
                    model_slot_free = False
                    positional_model = True
                else:
                    why = ""
                    if prev is not None and not prev[1]:
                        why = " (it follows %s, which takes no value)" % prev[0]
                    elif prev is not None:
                        why = " (it follows the value of %s)" % prev[0]
                    self.add(
                        tok,
                        "stray-positional",
                        "%r is a stray positional argument%s; vllm serve accepts one positional "
                        "argument, the model, so argparse stops with 'unrecognized arguments'" % (tok, why),
                    )
                i += 1
                continue
            if tok == "--":
                only_positionals = True
                i += 1
                continue
            # -O3 / -O=3 / -O 3 -> --optimization-level
            if olevel and tok.startswith("-O") and not tok.startswith("--") and self.cat.lookup(olevel):
                if tok != "-O":
                    value = tok[3:] if tok[2:3] == "=" else tok[2:]
                    canon, entry = self.cat.lookup(olevel)
                    present.add(canon)
                    self.check_value(tok, canon, entry, value)
                    prev = (tok, True)
                    i += 1
                    continue
                if i + 1 < n and rest[i + 1] in ("0", "1", "2", "3"):
                    canon, entry = self.cat.lookup(olevel)
                    present.add(canon)
                    prev = (tok, True)
                    i += 2
                    continue
            name, eq, explicit = tok.partition("=")
            if not eq:
                explicit = None
            # dotted JSON keys: --compilation-config.mode 3, -cc.mode=3
            if "." in name and features.get("dotted_json_keys", True):
                base, _dot, path = name.partition(".")
                base_n = self.cat.normalize(base)
                value = explicit
                if value is None:
                    if i + 1 < n:
                        value = rest[i + 1]
                        i += 1
                        if self.is_option_like(value):
                            self.add(tok, "missing-value", "%s takes the next token, %r, as its value "
                                     "(vLLM does so for dotted JSON keys even when it starts with '-')"
                                     % (tok, value))
                    else:
                        self.add(tok, "missing-value", "%s needs a value (vLLM takes the next token as "
                                 "the value of a dotted JSON key)" % tok)
                i += 1
                prev = (tok, True)
                hit = self.resolve(tok, base_n)
                if hit is None:
                    continue
                canon, entry, _joined = hit
                present.add(canon)
                if not entry.get("json"):
                    self.add(
                        tok,
                        "not-json",
                        "%s: dotted keys merge into a JSON value, but %s is not JSON-valued (%s)"
                        % (tok, canon, entry.get("type") or entry["action"]),
                    )
                    continue
                fields = (entry.get("json") or {}).get("fields")
                key = path.rstrip("+").split(".", 1)[0]
                if fields and key not in fields:
                    close = difflib.get_close_matches(key, fields, n=3, cutoff=0.5)
                    msg = "%s: %s has no field %r" % (tok, entry["json"].get("config") or canon, key)
                    if close:
                        msg += "; closest: %s" % ", ".join(close)
                    self.add(tok, "unknown-json-key", msg)
                continue
            name_n = self.cat.normalize(name)
            hit = self.resolve(tok, name_n)
            i += 1
            if hit is None:
                # unknown option: argparse would stop anyway; do not guess at its value,
                # but a following non-option token reads as its value (5.7)
                if i < n and not self.is_option_like(rest[i]) and explicit is None:
                    i += 1
                prev = (tok, True)
                continue
            canon, entry, joined = hit
            present.add(canon)
            if entry["action"] == "help":
                self.add(tok, "help", "%s prints the help text and exits: the server would not start" % tok)
                prev = (tok, False)
                continue
            if canon == "--model":
                model_option = True
            if joined is not None:
                # "-qfp8" style: the rest of the token is the value
                explicit = joined if explicit is None else joined + "=" + explicit
            if not entry["takes_value"]:
                if explicit is not None:
                    self.add(
                        tok,
                        "unexpected-value",
                        "%s takes no value (argparse: ignored explicit argument %r)%s"
                        % (name, explicit, self._switch_hint(canon, entry)),
                    )
                prev = (tok, False)
                continue
            nargs = entry.get("nargs")
            values = []
            if explicit is not None:
                values.append(explicit)
            else:
                while i < n and not self.is_option_like(rest[i]):
                    values.append(rest[i])
                    i += 1
                    if nargs not in ("+", "*"):
                        break
                if not values and nargs not in ("?", "*"):
                    nxt = (" (the next token, %r, starts with '-')" % rest[i]) if i < n else " (it is last)"
                    self.add(tok, "missing-value", "%s expects a value%s" % (tok, nxt))
            for v in values:
                self.check_value(tok, canon, entry, v)
                if entry.get("runtime_choices"):
                    runtime_values.append((tok, canon, entry, v))
            prev = (tok, True)
        if positional_model and model_option:
            self.add("--model", "model-twice", "the model is given both as the positional argument and "
                     "with --model; vLLM moves --model's value to the positional slot and the other one "
                     "becomes an unrecognized argument")
        # start-up check of built-in parser names
        for written, canon, entry, value in runtime_values:
            rc = entry["runtime_choices"]
            if _is_placeholder(value):
                continue
            plugin = rc.get("plugin_option")
            if plugin and self.cat.canonical(plugin) in present:
                continue  # a plugin may register more names
            if value.lower() in [x.lower() for x in rc.get("null_values") or []]:
                continue
            if value in rc["values"]:
                continue
            close = difflib.get_close_matches(value, rc["values"], n=3, cutoff=0.5)
            msg = "%s %r is not a built-in parser of this version (vLLM checks it at start-up and stops)" % (
                written,
                value,
            )
            if close:
                msg += "; closest: %s" % ", ".join(close)
            else:
                msg += "; built-in: %s" % _fmt_list(rc["values"])
            if plugin:
                msg += "; a custom parser needs %s" % plugin
            others = self.other_versions_with_value(canon, value)
            if others:
                msg += " (built into vLLM %s)" % ", ".join(others)
            self.add(written, "unknown-parser", msg)
        return self.problems

    def other_versions_with_value(self, canon, value):
        out = []
        for v in available_versions(self.catalog_dir):
            if v == self.cat.version:
                continue
            try:
                e = load_catalog(v, self.catalog_dir).entry(canon)
            except Exception:  # pragma: no cover
                continue
            rc = e.get("runtime_choices") if e else None
            if rc and value in rc["values"]:
                out.append(v)
        return out

    def _switch_hint(self, canon, entry):
        neg = [o for o in entry.get("negative_option_strings") or [] if o.startswith("--no-")]
        if neg:
            return "; use %s or %s" % (canon, neg[0])
        return ""


def find_problems(args, version=None, allow_abbrev=False, catalog_dir=None):
    """Structured problems of an argv for a vLLM version: a list of argv issues
    (:class:`ValidationIssue` with ``flag``, ``code``, ``message`` and ``version``).

    ``flag``: the option (or positional) as written; ``code``: ``unknown``,
    ``abbreviation``, ``ambiguous``, ``not-negatable``, ``unexpected-value``,
    ``missing-value``, ``bad-value``, ``bad-choice``, ``not-json``,
    ``unknown-json-key``, ``unknown-parser``, ``stray-positional``, ``help`` or
    ``model-twice``; ``message``: the human-readable text (also ``str(issue)``);
    ``version``: the catalogue version checked against.

    ``args``: a full argv (``["vllm", "serve", model, ...]``) or only the
    options that follow the model.  ``version``: a version string (mapped to the
    newest catalogue not newer than it), a :class:`FlagCatalog`, or None for the
    newest catalogue.
    """
    if isinstance(args, (str, bytes)):
        raise TypeError("args must be a list of argv tokens, not a string: %r" % (args[:60],))
    cat, label = _catalog_for(version, catalog_dir)
    return _Checker(cat, label, allow_abbrev, catalog_dir).run(list(args))


def check_args(args, version=None, allow_abbrev=False, catalog_dir=None):
    """List of problem strings for an argv (empty: vLLM ``version`` accepts it).

    See :func:`find_problems` for the arguments.
    """
    return [p.message for p in find_problems(args, version, allow_abbrev, catalog_dir)]


def validate_args(args, version=None, allow_abbrev=False, catalog_dir=None):
    """Raise :class:`FlagValidationError` if :func:`check_args` finds any problem."""
    problems = find_problems(args, version, allow_abbrev, catalog_dir)
    if problems:
        raise FlagValidationError([p.message for p in problems], problems[0].version)
    return True
