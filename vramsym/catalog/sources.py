"""What a model reader found, before it becomes a :class:`~vramsym.catalog.models.ModelSpec`:
the config as given, its name and origin, and what the weight files' headers add.

Readers sit below the catalog (:mod:`.checkpoints` for a folder of safetensors, :mod:`.gguf_file`,
:mod:`.hub` for a Hugging Face id); each returns a :class:`Found`, and :mod:`.models` alone turns
it into a model. ``config.json`` files are read here, bounded and checked (:func:`read_config`).
"""
from __future__ import annotations

import json
from ..errors import InputError
from ..numbers import NonFinite
from ..records import _Record, _set
from .paths import read_bounded

MAX_CONFIG_BYTES = 16 * 2**20


class Found(_Record):
    """A model as a reader found it: ``config`` as given (not yet flattened or checked),
    ``fields`` the config fields only the weight files set (``ckpt_*``), ``notes`` what the
    reader has to say, ``checkpoint`` the headers' summary (None: a config only). A record
    (:mod:`vramsym.records`), not a dataclass: every run reads a model, and ``dataclasses``
    imports ``inspect`` (about 8 ms of a warm run)."""
    __slots__ = ("config", "name", "source", "hf_id", "published", "fields", "notes", "checkpoint")

    def __init__(self, config: dict, name: str, source: str, hf_id: str | None = None,
                 published: int | None = None, fields: dict | None = None, notes: tuple = (),
                 checkpoint: dict | None = None):
        for k, v in (("config", config), ("name", name), ("source", source), ("hf_id", hf_id),
                     ("published", published), ("fields", {} if fields is None else fields),
                     ("notes", notes), ("checkpoint", checkpoint)):
            _set(self, k, v)

    def noted(self, *notes: str) -> "Found":
        return Found(self.config, self.name, self.source, self.hf_id, self.published, self.fields,
                     tuple(self.notes) + notes, self.checkpoint)


def read_config(path, root=None, what="model config") -> dict:
    """A config.json as a dict: a regular file (inside ``root`` when given) of at most
    16 MiB, UTF-8 JSON, checked."""
    data = read_bounded(path, MAX_CONFIG_BYTES, root, what, ": a config.json is a few kilobytes")
    try:
        raw = json.loads(data.decode("utf-8"), parse_constant=NonFinite)   # refused where a number is read
    except UnicodeDecodeError:
        raise InputError(f"cannot read {what} '{path}': it is not UTF-8 text") from None
    except RecursionError:
        raise InputError(f"cannot read {what} '{path}': its JSON nests too deeply") from None
    except ValueError as e:
        raise InputError(f"cannot read {what} '{path}': {str(e)[:200]}") from None
    if not isinstance(raw, dict):
        raise InputError(f"{what} '{path}' is not a JSON object")
    return raw
