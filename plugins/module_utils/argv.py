# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmfleet contributors
# Apache License 2.0 (see LICENSE)
"""Reading ``vllm serve`` argv tokens, and the secrets that must never be on a command line.

One reader of flag values for every module that looks into an argv (the replica assembly, the
service spec, the preflight checks): ``--flag value`` and ``--flag=value``, the last one winning
as in vLLM's argparse; a next token that starts with ``-`` is another flag, not a value.

Pure Python (standard library only, no Ansible imports); imports nothing of the collection, so
every module may import it.
"""

from __future__ import annotations

#: Flags that would put a secret on the command line (visible in ps and systemctl show).
SECRET_FLAGS = ("--api-key", "--hf-token")
#: Env names that hold a secret: they belong in the role's 0600 env file, never in a plan.
SECRET_ENV = ("HF_TOKEN", "VLLM_API_KEY", "HUGGING_FACE_HUB_TOKEN")
#: What stands where a secret value was.
SECRET_PLACEHOLDER = "(secret, not shown)"


def flag_values(argv, flags):
    """``[(flag as given, value or None, index of the flag)]`` of every ``flag v`` / ``flag=v``."""
    out = []
    for i, tok in enumerate(argv):
        tok = str(tok)
        name, eq, value = tok.partition("=")
        if name not in flags:
            continue
        if eq:
            out.append((name, value, i))
        elif i + 1 < len(argv) and not str(argv[i + 1]).startswith("-"):
            out.append((name, str(argv[i + 1]), i))
        else:
            out.append((name, None, i))
    return out


def flag_value(argv, flag, default=None):
    """The last value of ``flag`` in ``argv`` (``--flag v`` or ``--flag=v``), else ``default``."""
    found = [v for _f, v, _i in flag_values(argv, (flag,)) if v is not None]
    return found[-1] if found else default


def strip_flags(argv, with_value, bare=()):
    """``argv`` without the flags ``with_value`` (and their values) and the ``bare`` flags."""
    out = []
    skip = False
    for tok in argv:
        if skip:
            skip = False
            continue
        name = tok.split("=", 1)[0]
        if tok in with_value:
            skip = True
            continue
        if (name in with_value and "=" in tok) or tok in bare:
            continue
        out.append(tok)
    return out


__all__ = ["SECRET_FLAGS", "SECRET_ENV", "SECRET_PLACEHOLDER", "flag_values", "flag_value", "strip_flags"]
