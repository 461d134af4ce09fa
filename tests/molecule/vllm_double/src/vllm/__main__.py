# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmfleet contributors
# Apache License 2.0 (see LICENSE)
"""``python -m vllm`` runs the test double's CLI."""

from __future__ import annotations

import sys

from vllm._double.cli import main

sys.exit(main())
