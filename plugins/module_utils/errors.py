# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmfleet contributors
# Apache License 2.0 (see LICENSE)
"""Exceptions shared by the llmfleet.vllm resolver.

Pure Python: no Ansible imports, so modules, plugins, tests and scripts share it.
"""

from __future__ import annotations


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
    """One problem found in a recipe file.

    ``file``: path of the YAML file; ``path``: the YAML path inside it, e.g.
    ``variants.nvfp4.hardware_overrides.rtx_5090.extra_args[3]``; ``message``:
    what was found and what was expected; ``severity``: ``error`` or ``warning``.
    """

    __slots__ = ("file", "path", "message", "severity")

    def __init__(self, file, path, message, severity="error"):
        self.file = file
        self.path = path
        self.message = message
        self.severity = severity

    def as_dict(self):
        return {"file": self.file, "path": self.path, "message": self.message, "severity": self.severity}

    def __str__(self):
        where = "%s: %s" % (self.file, self.path) if self.path else str(self.file)
        return "%s: %s: %s" % (self.severity, where, self.message)

    def __repr__(self):
        return "ValidationIssue(%r)" % (str(self),)


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
