"""What a model reader found, before it becomes a :class:`~vramsym.catalog.models.ModelSpec`:
the config as given, its name and origin, and what the weight files' headers add.

Readers sit below the catalog (:mod:`.checkpoints` for a folder of safetensors, :mod:`.gguf_file`,
:mod:`.hub` for a Hugging Face id); each returns a :class:`Found`, and :mod:`.models` alone turns
it into a model. ``config.json`` files are read here, bounded and checked (:func:`read_config`).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field, replace

from ..errors import InputError
from ..numbers import NonFinite
from .paths import read_bounded

MAX_CONFIG_BYTES = 16 * 2**20


@dataclass(frozen=True)
class Found:
    """A model as a reader found it: ``config`` as given (not yet flattened or checked),
    ``fields`` the config fields only the weight files set (``ckpt_*``), ``notes`` what the
    reader has to say, ``checkpoint`` the headers' summary (None: a config only)."""
    config: dict
    name: str
    source: str
    hf_id: str | None = None
    published: int | None = None
    fields: dict = field(default_factory=dict)
    notes: tuple = ()
    checkpoint: dict | None = None

    def noted(self, *notes: str) -> "Found":
        return replace(self, notes=tuple(self.notes) + notes)


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
