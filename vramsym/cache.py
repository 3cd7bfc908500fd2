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
    key = files_hash(paths + _code_files())
    target = cache_dir() / f"library-{__version__}-{key[:24]}.pickle"
    try:
        with open(target, "rb") as fh:
            lib = pickle.load(fh)
        if _fresh(lib):
            lib.cache_key = key
            return lib
    except (OSError, pickle.PickleError, EOFError, AttributeError, ImportError, TypeError):
        pass
    lib = load_or_raise(paths)
    lib.cache_key = key
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_suffix(f".{os.getpid()}.tmp")
        with open(tmp, "wb") as fh:
            pickle.dump(lib, fh, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, target)
    except OSError:
        pass
    return lib


def _code_files():
    """The pipeline's own code and grammar are part of the key: a new version re-checks everything."""
    here = Path(__file__).parent
    return [here / n for n in ("grammar.lark", "parse.py", "units.py", "library.py", "ast.py", "diagnostics.py")]


def _fresh(lib) -> bool:
    """Every file the cached library read (includes too) still has the same content."""
    import hashlib
    for path, digest in lib.file_hashes.items():
        try:
            if hashlib.sha256(Path(path).read_bytes()).hexdigest() != digest:
                return False
        except OSError:
            return False
    return True
