"""The Hugging Face Hub through ``huggingface_hub`` (the ``hub`` extra): this module imports it at
its top, and :func:`vramsym.catalog.hub.load_hub` imports this module only when an ``org/name`` id
is read (pint's ``compat.py`` habit: one module per optional dependency, one gate).

Offline (``HF_HUB_OFFLINE=1``), or when the Hub's host does not resolve, everything comes from the
local cache; online, config.json is downloaded (a few kB) and the safetensors headers are read with
``get_safetensors_metadata`` (HTTP range requests: no tensor data).
"""
from __future__ import annotations

import os
import re
import socket
from urllib.parse import urlparse

import huggingface_hub
from huggingface_hub import constants, errors

from ..errors import InputError
from .checkpoints import Checkpoint, checked_tensor, checkpoint_fields, read_folder
from .paths import inside, read_bounded
from .sources import Found, read_config

#: what a failed request raises, besides the cases :func:`load` names
FAILED = (errors.HfHubHTTPError, errors.EntryNotFoundError, errors.OfflineModeIsEnabled, errors.HFValidationError,
          errors.SafetensorsParsingError, errors.NotASafetensorsRepoError, OSError)


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


def _truthy(v) -> bool:
    return str(v or "").strip().upper() in ("1", "ON", "YES", "TRUE")


def offline() -> bool:
    """HF_HUB_OFFLINE as set now (huggingface_hub reads it once, at its import)."""
    if "HF_HUB_OFFLINE" in os.environ:
        return _truthy(os.environ["HF_HUB_OFFLINE"])
    return bool(constants.HF_HUB_OFFLINE)


def cache_dir() -> str:
    """The hub cache as the environment sets it now (HF_HUB_CACHE, else HF_HOME/hub)."""
    for k in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
        if os.environ.get(k):
            return os.path.expanduser(os.environ[k])
    if os.environ.get("HF_HOME"):
        return os.path.join(os.path.expanduser(os.environ["HF_HOME"]), "hub")
    return constants.HF_HUB_CACHE


def reachable() -> bool:
    """Whether the Hub's host resolves: without it every request would be retried for about 25 s
    (huggingface_hub's backoff) before failing, so an unreachable Hub is treated as offline."""
    host = urlparse(constants.ENDPOINT).hostname or "huggingface.co"
    try:
        socket.getaddrinfo(host, 443)
    except OSError:
        return False
    return True


def load(repo_id: str) -> Found:
    off, cache = offline(), cache_dir()
    unreachable = not off and not reachable()
    off = off or unreachable
    check_ref(cache, repo_id)
    try:
        cfg = huggingface_hub.hf_hub_download(repo_id, "config.json", cache_dir=cache, local_files_only=off)
    except (errors.LocalEntryNotFoundError, errors.OfflineModeIsEnabled):
        why = "the Hugging Face Hub cannot be reached" if unreachable else "HF_HUB_OFFLINE is set"
        raise InputError(f"model '{repo_id}' is not in the Hugging Face cache ({cache}) and {why}: download "
                         f"it once with network access (unset HF_HUB_OFFLINE; `hf download {repo_id} "
                         f"config.json`), or point HF_HUB_CACHE / HF_HOME at a cache that holds it "
                         f"(or pass a local folder with --model DIR)") from None
    except errors.RepositoryNotFoundError:
        raise InputError(f"no model '{repo_id}' on the Hugging Face Hub (or it is private: log in "
                         f"with `hf auth login`)") from None
    except errors.GatedRepoError:
        raise InputError(f"model '{repo_id}' is gated: accept its terms on huggingface.co and log in "
                         f"with `hf auth login`") from None
    except FAILED as e:
        raise InputError(f"cannot read config.json of '{repo_id}' from the Hugging Face Hub: "
                         f"{str(e).splitlines()[0][:200] if str(e) else type(e).__name__}") from None
    snapshot = os.path.dirname(cfg)
    folder = repo_folder(cache, repo_id)
    if not inside(snapshot, folder):
        raise InputError(f"the Hugging Face cache gave '{cfg}' for '{repo_id}', which is outside the model's "
                         f"cache folder '{folder}': refused (a corrupt or tampered cache)")
    if off:
        found = read_folder(snapshot, name=repo_id, source=f"hf://{repo_id} (cache {snapshot})",
                            hf_id=repo_id, root=folder)
        if found.checkpoint is None:
            found = found.noted("offline: no safetensors file of this model is in the cache, so the "
                                "weights are counted by the formulas from config.json")
        return found
    return _online(repo_id, cfg, folder)


def _online(repo_id, cfg_path, folder=None):
    """config.json downloaded; the safetensors headers by HTTP range requests."""
    raw = read_config(cfg_path, folder)
    try:
        meta = huggingface_hub.get_safetensors_metadata(repo_id)
    except errors.NotASafetensorsRepoError:
        return Found(raw, repo_id, f"hf://{repo_id}", repo_id,
                     notes=("the repository has no safetensors files: weights counted by the formulas",))
    except FAILED as e:
        raise InputError(f"cannot read the safetensors headers of '{repo_id}': "
                         f"{str(e).splitlines()[0][:200] if str(e) else type(e).__name__}") from None
    tensors = []
    for fname, fm in sorted(meta.files_metadata.items()):
        for name, info in fm.tensors.items():
            tensors.append(checked_tensor(f"hf://{repo_id}/{fname}", name, info.dtype, list(info.shape),
                                          list(info.data_offsets), None))
    if not tensors:
        raise InputError(f"the safetensors files of '{repo_id}' on the Hugging Face Hub hold no tensors")
    ckpt = Checkpoint("safetensors", [f"hf://{repo_id}/{f}" for f in sorted(meta.files_metadata)], tensors)
    config = raw.get("text_config") if isinstance(raw.get("text_config"), dict) else raw
    fields, notes = checkpoint_fields(ckpt, {**raw, **config})
    return Found(raw, repo_id, f"hf://{repo_id}", repo_id, fields=fields, notes=tuple(notes),
                 checkpoint=ckpt.summary())
