"""Cache of the checked formula library, keyed by the hash of the formula files.

A warm start unpickles the library instead of importing lark and pint and
re-parsing and re-checking every file. Set VRAMSYM_NO_CACHE=1 to bypass it,
VRAMSYM_CACHE_DIR to move it.
"""
from __future__ import annotations

import os
import pickle
from pathlib import Path
from typing import Sequence

from . import __version__
from .paths import formulas_dir


def cache_dir() -> Path:
    env = os.environ.get("VRAMSYM_CACHE_DIR")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "vramsym"


def load_library(extra: Sequence = (), use_cache: bool = True):
    from .library import files_hash, load_or_raise
    paths = [formulas_dir()] + [Path(p) for p in extra]
    if not use_cache or os.environ.get("VRAMSYM_NO_CACHE"):
        return load_or_raise(paths)
    key = files_hash(paths)
    target = cache_dir() / f"library-{__version__}-{key[:24]}.pickle"
    try:
        with open(target, "rb") as fh:
            return pickle.load(fh)
    except (OSError, pickle.PickleError, EOFError, AttributeError, ImportError, TypeError):
        pass
    lib = load_or_raise(paths)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_suffix(f".{os.getpid()}.tmp")
        with open(tmp, "wb") as fh:
            pickle.dump(lib, fh, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, target)
    except OSError:
        pass
    return lib
