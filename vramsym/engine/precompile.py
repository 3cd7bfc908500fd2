"""Compile the bundled regimes when the package is built, so that a first run needs no sympy.

``write(folder)`` compiles the vocabulary and, for every model of the catalog, every regime
with the options it resolves to by default and every ``fit`` row, and writes them as JSON
(source code, not bytecode: any Python reads them) with the key they were compiled under
(:func:`vramsym.engine.cache.shipped_key`). The wheel's build hook (``hatch_build.py``) runs it;
at run time :func:`vramsym.engine.cache.shipped` reads an entry only while that key matches
the installed files, and copies it into the user's cache with its bytecode.

    python -m vramsym.engine.precompile [FOLDER]     (default: the package's _precompiled/)
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from ..catalog.models import catalog, load_model, unmodelled
from ..catalog.paths import formulas_path
from ..lang.library import load_or_raise
from . import cache
from .compiler import compile_regime
from .options import interface_of
from .regimes import compose
from .runtime import Vocabulary


def combinations(vocabulary, models):
    """The (regime, options, models) to compile: defaults of every regime and every fit row, with the
    models that resolve to them."""
    seen = {}
    for m in models:
        asks = [(r, {}) for r in vocabulary.interface.regimes] + [(f.regime, dict(f.options))
                                                                  for f in vocabulary.interface.fits]
        for regime, opts in asks:
            resolved = vocabulary.resolve(regime, opts, m.config)
            seen.setdefault((regime, tuple(sorted(resolved.items()))), (regime, opts, []))[2].append(m)
    return list(seen.values())


def write(folder: str, models=None) -> int:
    """Write the shipped entries into ``folder`` (replacing what is there) for ``models`` (names;
    default: the whole catalog); the number written."""
    key = cache.shipped_key()
    lib = load_or_raise([Path(formulas_path())])
    vocabulary = Vocabulary(library=lib)
    os.makedirs(folder, exist_ok=True)
    for f in os.listdir(folder):
        if f.endswith(".json") or f == "KEY":
            os.unlink(os.path.join(folder, f))
    entries = {"interface": interface_of(lib).to_json()}
    for regime, opts, users in combinations(vocabulary, [load_model(n) for n in (models or sorted(catalog()))]):
        resolved = vocabulary.resolve(regime, opts, users[0].config)
        composed = compose(lib, regime, resolved)
        terms = [getattr(c, "name", c) for c in composed.components]
        if all(unmodelled(m, terms) is not None for m in users):
            continue        # every model with these options is refused this regime (Gemma 4's activations,
            #                 a hybrid's training): never evaluated without --assume, so not shipped
        name = cache.entry_name("regime", regime, sorted(resolved.items()))
        entries[name] = compile_regime(lib, composed)
    for name, data in entries.items():
        with open(os.path.join(folder, name + ".json"), "w", encoding="utf-8") as fh:
            json.dump(data, fh, separators=(",", ":"), sort_keys=True)
    with open(os.path.join(folder, "KEY"), "w", encoding="ascii") as fh:   # last: a half-written folder is never used
        fh.write(key + "\n")
    return len(entries)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    folder = argv[0] if argv else cache.SHIPPED
    n = write(folder)
    print(f"vramsym: {n} compiled entries written to {folder}")


if __name__ == "__main__":
    main()
