# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmfleet contributors
# Apache License 2.0 (see LICENSE)
"""A test double of the vLLM OpenAI server, for molecule scenarios only.

NOT vLLM. It stands in for the ``vllm`` package on test hosts so that the llmfleet.vllm roles
can install it, run it as a systemd service and health-gate it without a GPU. See
tests/molecule/vllm_double/README.md.
"""

try:
    from vllm._version import __version__  # written into the wheel by build.py
except ImportError:  # running from the source tree
    __version__ = "0.0.0"

TEST_DOUBLE = True
