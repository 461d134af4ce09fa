# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmfleet contributors
# Apache License 2.0 (see LICENSE)
"""A stand-in for Ray, for the llmfleet.vllm molecule scenarios only.

NOT Ray. ``ray start --head ... --block`` runs a GCS stand-in, ``ray start --address H:P ... --block``
registers a node with it, ``ray status`` lists the live nodes. The vLLM test double talks to it
(``ray._double.gcs.Driver``) when started with ``--distributed-executor-backend ray``. See
tests/molecule/vllm_double/README.md.
"""

try:
    from ray._version import __version__  # written into the wheel by build.py
except ImportError:  # running from the source tree
    __version__ = "0.0.0"

TEST_DOUBLE = True
