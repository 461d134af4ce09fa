# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmfleet contributors
# Apache License 2.0 (see LICENSE)
"""A stand-in for vllm-router (prefill/decode disaggregation), for the llmfleet.vllm molecule
scenarios only. NOT vllm-router. See tests/molecule/vllm_double/README.md.
"""

try:
    from vllm_router._version import __version__  # written into the wheel by build.py
except ImportError:  # running from the source tree
    __version__ = "0.0.0"

TEST_DOUBLE = True
