# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmfleet contributors
# Apache License 2.0 (see LICENSE)
"""Exceptions shared by the llmfleet.vllm resolver, the one issue class and the "unknown id" message.

Pure Python: no Ansible imports, so modules, plugins, tests and scripts share it.
"""

from __future__ import annotations

from difflib import get_close_matches


class RecipeError(Exception):
    """Base class for every error the resolver raises on bad input."""


class RecipeNotFound(RecipeError):
    """A recipe id, hardware profile, strategy or other id does not exist."""


class RecipeValidationError(RecipeError):
    """One or more recipe files break the schema or the semantic checks.

    ``issues`` is a list of :class:`ValidationIssue`.
    """

    def __init__(self, issues):
        self.issues = list(issues)
        super().__init__("\n".join(str(i) for i in self.issues))


class ValidationIssue(object):
    """One problem found in a recipe-tree file or in a ``vllm serve`` argv.

    A file issue: ``file``, the YAML file's path; ``path``, the YAML path inside it, e.g.
    ``variants.nvfp4.hardware_overrides.rtx_5090.extra_args[3]``; ``severity``, ``error`` or
    ``warning``. ``str()`` reads ``<severity>: <file>: <path>: <message>``.

    An argv issue (``flag`` set, from :mod:`vllm_flags`): ``flag``, the option or positional
    as written; ``code``, a short machine-readable kind (``unknown``, ``bad-choice``, ...);
    ``version``, the flag catalogue's vLLM version. ``str()`` is the message, which names
    the argv already.

    ``message`` says what was found and what was expected. ``as_dict()`` holds the fields
    of the issue's kind.
    """

    __slots__ = ("file", "path", "message", "severity", "flag", "code", "version")

    def __init__(self, file, path, message, severity="error", flag=None, code=None, version=None):
        self.file = file
        self.path = path
        self.message = message
        self.severity = severity
        self.flag = flag
        self.code = code
        self.version = version

    @classmethod
    def in_argv(cls, flag, code, message, version):
        """An argv issue (always an error)."""
        return cls(None, "", message, flag=flag, code=code, version=version)

    def as_dict(self):
        if self.flag is not None:
            return {"flag": self.flag, "code": self.code, "message": self.message, "version": self.version}
        return {"file": self.file, "path": self.path, "message": self.message, "severity": self.severity}

    def __str__(self):
        if self.flag is not None:
            return self.message
        where = "%s: %s" % (self.file, self.path) if self.path else str(self.file)
        return "%s: %s: %s" % (self.severity, where, self.message)

    def __repr__(self):
        if self.flag is not None:
            return "ValidationIssue.in_argv(%r, %r, %r)" % (self.flag, self.code, self.message)
        return "ValidationIssue(%r)" % (str(self),)

    def _key(self):
        return tuple(getattr(self, name) for name in self.__slots__)

    def __eq__(self, other):
        return isinstance(other, ValidationIssue) and self._key() == other._key()

    def __ne__(self, other):
        return not self == other

    def __hash__(self):
        return hash(self._key())


def _unknown(kind, value, valid, where=""):
    """``unknown <kind> '<value>'<where> (did you mean ...?); valid: a, b, ...`` (at most 40 shown)."""
    valid = sorted(valid)
    close = get_close_matches(str(value), valid, n=3, cutoff=0.6)
    hint = (" (did you mean %s?)" % " or ".join(close)) if close else ""
    shown = valid if len(valid) <= 40 else valid[:40] + ["... %d more" % (len(valid) - 40)]
    return "unknown %s %r%s%s; valid: %s" % (kind, value, where, hint, ", ".join(shown))


class ResolveError(RecipeError):
    """The inputs cannot be resolved into a deployment (bad id, bad combination)."""


class UnsupportedError(ResolveError):
    """A deployment type the collection does not support yet (e.g. Mooncake kv_store_lb)."""


class FlagValidationError(RecipeError):
    """A rendered flag does not exist in, or is rejected by, the target vLLM version.

    ``problems`` is a list of human-readable strings, one per bad flag.
    """

    def __init__(self, problems, version=None):
        self.problems = list(problems)
        self.version = version
        super().__init__("\n".join(self.problems))
