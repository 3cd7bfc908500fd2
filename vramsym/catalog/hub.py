"""A Hugging Face id (``org/name``) as a model: its config.json and its safetensors headers.

The id's syntax and the cache's ref are checked here, with the standard library only; the requests
go through :mod:`vramsym.catalog.hub_client`, the one module that imports ``huggingface_hub`` (the
``hub`` extra), imported when an id is read. Offline
(``HF_HUB_OFFLINE=1``) or with the files cached, everything comes from the local cache
(``HF_HUB_CACHE``, else ``HF_HOME``/hub, else ``~/.cache/huggingface/hub``): config.json and
whatever safetensors files the snapshot holds, read from their headers only
(:mod:`vramsym.catalog.checkpoints`). Online, config.json is downloaded (a few kB) and the
headers are read with ``get_safetensors_metadata`` (HTTP range requests: no tensor data).
"""
from __future__ import annotations

import os
import re

from ..errors import InputError
from .paths import inside, read_bounded
from .sources import Found

# huggingface_hub's repo id rule: letters, digits, '-', '_', '.', at most 96 characters a part
_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,95}/[A-Za-z0-9][A-Za-z0-9._-]{0,95}$")
_NOT_IDS = (".json", ".gguf", ".safetensors", ".vram")


def is_hub_id(key: str) -> bool:
    """``org/name`` syntax (the caller has ruled out catalog names and existing paths)."""
    return bool(_ID.match(key)) and ".." not in key and not key.lower().endswith(_NOT_IDS)


_COMMIT = re.compile(r"^(?:[0-9a-f]{40}|[0-9a-f]{64})$")
MAX_REF_BYTES = 256


def repo_folder(cache: str, repo_id: str) -> str:
    """huggingface_hub's cache folder of a model repository: ``<cache>/models--org--name``."""
    return os.path.join(cache, "models--" + repo_id.replace("/", "--"))


def check_ref(cache: str, repo_id: str):
    """The cache's ``refs/main`` of ``repo_id``, when it exists, must hold a commit hash (40 or 64
    hex digits) and be a regular file inside the repository's cache folder: huggingface_hub joins
    its content onto ``snapshots/``, so ``../../..`` or an absolute path would read files outside."""
    folder = repo_folder(cache, repo_id)
    ref = os.path.join(folder, "refs", "main")
    if not os.path.lexists(ref):
        return
    raw = read_bounded(ref, MAX_REF_BYTES, folder, "Hugging Face cache ref",
                       " (it holds one commit hash)")
    try:
        text = raw.decode("ascii").strip()
    except UnicodeDecodeError:
        text = None
    if text is None or not _COMMIT.match(text):
        raise InputError(f"Hugging Face cache ref '{ref}' does not hold a commit hash (40 or 64 hexadecimal "
                         f"digits): refused (a corrupt or tampered cache; delete the folder "
                         f"'{folder}' and download the model again)")
    snap = os.path.join(folder, "snapshots", text)
    if os.path.lexists(snap):
        if not inside(snap, folder):
            raise InputError(f"Hugging Face cache snapshot '{snap}' is a symbolic link out of the model's "
                             f"cache folder '{folder}': refused")


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
