"""Make ``ansible_collections.llmfleet.vllm`` importable from a checkout.

Scripts under tools/ and bench/ import the collection's pure-Python resolver the same way
Ansible does. The checkout appears as ``.collections/ansible_collections/llmfleet/vllm``
(a relative symlink to the repository root, created here when missing).
"""

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COLLECTIONS = os.path.join(ROOT, ".collections")


def setup():
    link = os.path.join(COLLECTIONS, "ansible_collections", "llmfleet", "vllm")
    if not os.path.exists(link):
        os.makedirs(os.path.dirname(link), exist_ok=True)
        if os.path.islink(link):
            os.unlink(link)
        os.symlink(os.path.join("..", "..", ".."), link)
    if COLLECTIONS not in sys.path:
        sys.path.insert(0, COLLECTIONS)
    return ROOT


setup()
