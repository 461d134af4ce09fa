# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmfleet contributors
# Apache License 2.0 (see LICENSE)
"""Safe quoting for systemd unit files and env files.

Pure Python (standard library only, no Ansible imports), shared by the filter plugins and the
unit tests.

``exec_line(argv)`` renders an argv as the value of ``ExecStart=`` so that systemd hands the
program exactly ``argv`` (systemd.service(5), "Command lines"):

* systemd resolves ``%`` specifiers on the whole line first, so ``%`` becomes ``%%``;
* at exec time it expands ``$NAME`` and ``${NAME}`` from the environment in every word,
  quoted or not, so ``$`` becomes ``$$``;
* words are split on whitespace; double quotes group, and C escapes (``\\\\``, ``\\"``,
  ``\\n``, ``\\xNN``) are resolved inside and outside quotes, so any word with whitespace,
  quotes, a backslash, a control character or a ``;`` (an unquoted lone ``;`` separates
  commands), a word starting with ``#`` (a continuation line starting with it would be a
  comment) and the empty word are written in double quotes with those characters escaped;
* the first word is the executable: it must be an absolute path, which also keeps systemd's
  prefixes (``-``, ``@``, ``:``, ``+``, ``!``) out of it.

``env_file(env, fmt)`` renders ``NAME=value`` lines for ``EnvironmentFile=`` (``fmt="systemd"``:
values in double quotes with ``"``, ``\\``, `````` ` `````` and ``$`` escaped, as systemd's
parser reads them) or for ``docker run --env-file``/``podman run --env-file`` (``fmt="docker"``:
the engine takes everything after the first ``=`` literally, so values are written as they
are). Names must be shell identifiers; values with a newline, a carriage return or a NUL are
refused in both formats (neither can carry them safely).
"""

from __future__ import annotations

import re

from .errors import RecipeError

__all__ = ["UnitError", "exec_word", "exec_line", "env_file", "ENV_FORMATS"]

ENV_FORMATS = ("systemd", "docker")

_NEEDS_QUOTES = re.compile(r"[\s\"'\\;\x00-\x1f\x7f]")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_C_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t", "\r": "\\r", "\a": "\\a", "\b": "\\b",
              "\f": "\\f", "\v": "\\v"}


class UnitError(RecipeError):
    """A value that cannot be put safely into a unit file or env file."""


def _to_text(value, what, show=True):
    if isinstance(value, bool) or value is None or isinstance(value, (dict, list, tuple)):
        raise UnitError("%s must be a string or a number, got %s%s"
                        % (what, type(value).__name__, " %r" % (value,) if show else ""))
    return value if isinstance(value, str) else str(value)


def exec_word(word):
    """One argv word as systemd's command-line parser must read it back."""
    text = _to_text(word, "argv word")
    if "\x00" in text:
        raise UnitError("argv word %r contains a NUL byte" % (text,))
    text = text.replace("%", "%%").replace("$", "$$")
    if text and not _NEEDS_QUOTES.search(text) and not text.startswith("#"):
        return text
    out = []
    for ch in text:
        if ch in _C_ESCAPES:
            out.append(_C_ESCAPES[ch])
        elif ord(ch) < 0x20 or ord(ch) == 0x7f:
            out.append("\\x%02x" % ord(ch))
        else:
            out.append(ch)
    return '"%s"' % "".join(out)


def exec_line(argv, multiline=False, indent="    ", break_before=None):
    """The ``ExecStart=`` value that runs ``argv`` exactly.

    ``multiline``: start a new line (with systemd's `` \\`` continuation) before every option
    word (a word starting with ``-``) and before the first occurrence of each word listed in
    ``break_before`` (for example the image of a ``docker run``), so that a unit file shows one
    flag per line.
    """
    if isinstance(argv, (str, bytes)) or not isinstance(argv, (list, tuple)) or not argv:
        raise UnitError("exec_line expects a non-empty list of argv words, got %r" % (argv,))
    words = [_to_text(w, "argv word") for w in argv]
    if not words[0].startswith("/"):
        raise UnitError("the executable %r must be an absolute path (systemd reads a leading -, @, :, + or ! "
                        "as a prefix, and searches relative names in a fixed path only)" % (words[0],))
    quoted = [exec_word(w) for w in words]
    if not multiline:
        return " ".join(quoted)
    pending = set(_to_text(w, "break_before word") for w in (break_before or []))
    lines = [[quoted[0]]]
    for raw, word in zip(words[1:], quoted[1:]):
        if (raw.startswith("-") and len(raw) > 1) or raw in pending:
            pending.discard(raw)
            lines.append([word])
        else:
            lines[-1].append(word)
    return (" \\\n" + indent).join(" ".join(line) for line in lines)


def env_file(env, fmt="systemd", header=None):
    """The text of an env file holding ``env`` (a dict; keys sorted for stable output)."""
    if fmt not in ENV_FORMATS:
        raise UnitError("env_file: format %r; valid: %s" % (fmt, ", ".join(ENV_FORMATS)))
    if not isinstance(env, dict):
        raise UnitError("env_file expects a dict NAME -> value, got %s" % type(env).__name__)
    lines = []
    if header:
        lines.extend("# " + line if line else "#" for line in str(header).splitlines())
    for key in sorted(env):
        name = _to_text(key, "env name")
        if not _ENV_NAME.match(name):
            raise UnitError("env name %r is not a valid variable name ([A-Za-z_][A-Za-z0-9_]*)" % (name,))
        value = env[key]
        if value is None:
            value = ""
        elif value is True or value is False:
            value = "true" if value else "false"
        value = _to_text(value, "the value of %s" % name, show=False)  # values may be secrets
        bad = [c for c in ("\n", "\r", "\x00") if c in value]
        if bad:
            raise UnitError("the value of %s contains %s, which an env file cannot carry"
                            % (name, " and ".join({"\n": "a newline", "\r": "a carriage return", "\x00": "a NUL"}[c]
                                                  for c in bad)))
        if fmt == "docker":
            lines.append("%s=%s" % (name, value))
        else:
            lines.append('%s="%s"' % (name, re.sub(r'(["\\`$])', r"\\\1", value)))
    return "\n".join(lines) + "\n"
