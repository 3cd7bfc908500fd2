"""A Hugging Face id (``org/name``) as a model: its config.json and its safetensors headers.

The id's syntax is checked here, with the standard library only; the cache's ref checks and the
requests go through :mod:`vramsym.catalog.hub_client`, the one module that imports ``huggingface_hub`` (the
``hub`` extra), imported when an id is read. Offline
(``HF_HUB_OFFLINE=1``) or with the files cached, everything comes from the local cache
(``HF_HUB_CACHE``, else ``HF_HOME``/hub, else ``~/.cache/huggingface/hub``): config.json and
whatever safetensors files the snapshot holds, read from their headers only
(:mod:`vramsym.catalog.checkpoints`). Online, config.json is downloaded (a few kB) and the
headers are read with ``get_safetensors_metadata`` (HTTP range requests: no tensor data).
"""
from __future__ import annotations

import re

from ..errors import InputError
from .sources import Found

# huggingface_hub's repo id rule: letters, digits, '-', '_', '.', at most 96 characters a part
_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,95}/[A-Za-z0-9][A-Za-z0-9._-]{0,95}$")
_NOT_IDS = (".json", ".gguf", ".safetensors", ".vram")


def is_hub_id(key: str) -> bool:
    """``org/name`` syntax (the caller has ruled out catalog names and existing paths)."""
    return bool(_ID.match(key)) and ".." not in key and not key.lower().endswith(_NOT_IDS)


def load_hub(repo_id: str) -> Found:
    """The model a Hugging Face id names (the cache's ref checked first; see :mod:`.hub_client`)."""
    try:
        from . import hub_client     # the gate of the optional dependency (tests/test_imports.py GATES)
    except ImportError as e:
        if not (e.name or "").startswith("huggingface_hub"):
            raise
        raise InputError(f"'{repo_id}' looks like a Hugging Face id; reading one needs huggingface_hub: "
                         f"pip install 'vramsym[hub]' (or give a local folder with --model DIR)") from None
    return hub_client.load(repo_id)
