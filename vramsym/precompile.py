"""Compile the bundled regimes once, into data the package ships, so that a first run needs no sympy.

``write(folder)`` compiles the vocabulary and, for every model of the catalog, every regime
with the options it resolves to by default, every ``fit`` row and every configuration of the
calculator page (one option changed at a time: vramsym.printers.calculator.PAGE_REGIMES), and
writes them as JSON, each xz-compressed
(source code, not bytecode: any Python reads them) with the key they were compiled under
(:func:`vramsym.engine.cache.shipped_key`). The repository ships what it writes into the
package's ``_precompiled/`` (generated data, committed: tests/test_precompiled.py fails while it
is stale), so that installing compiles nothing (the build hook, ``hatch_build.py``, only checks
the key); at run time :func:`vramsym.engine.cache.shipped` reads an entry only while that key matches
the installed files, and copies it into the user's cache with its bytecode. Into ``page/`` it
writes every group of the whole catalog's calculator page as sympy prints it (exact JavaScript,
:func:`vramsym.printers.calculator.make_group`), under a key that also covers those printers, so
``vramsym html`` builds the page from data.

    python -m vramsym.precompile [--page] [FOLDER]     (default: the package's _precompiled/;
                                                               --page: the page groups alone)
"""
from __future__ import annotations

import json
import lzma
import multiprocessing
import os
import sys
from pathlib import Path

from .catalog.models import catalog, load_model, unmodelled
from .catalog.paths import formulas_path
from .lang.library import load_or_raise
from .printers import calculator
from .engine import cache
from .engine.compiled import CompiledRegime
from .engine.compiler import compile_regime
from .engine.options import interface_of
from .engine.regimes import compose
from .engine.runtime import Vocabulary


def combinations(vocabulary, models):
    """The (regime, options, models) to compile: defaults of every regime, every fit row and every
    configuration of the calculator page, with the models that resolve to them."""
    seen = {}
    for m in models:
        asks = [(r, {}) for r in vocabulary.interface.regimes] + [(f.regime, dict(f.options))
                                                                  for f in vocabulary.interface.fits]
        asks += calculator.page_variants(vocabulary, m.config)
        for regime, opts in asks:
            resolved = vocabulary.resolve(regime, opts, m.config)
            seen.setdefault((regime, tuple(sorted(resolved.items()))), (regime, opts, []))[2].append(m)
    return list(seen.values())


def entry_of(vocabulary, regime, opts, model):
    """The shipped entry's name for ``regime`` with ``opts`` over ``model``, and the options they
    resolve to (sorted pairs)."""
    resolved = tuple(sorted(vocabulary.resolve(regime, opts, model.config).items()))
    return cache.entry_name("regime", regime, list(resolved)), resolved


def shipped_name(lib, vocabulary, regime, opts, model):
    """The name of the shipped entry for ``regime`` with ``opts`` over ``model`` (the options it
    resolves to), and the names of the terms it composes."""
    name, resolved = entry_of(vocabulary, regime, opts, model)
    composed = compose(lib, regime, dict(resolved))
    return name, [getattr(c, "name", c) for c in composed.components]


SUFFIX = ".json.xz"      # each entry's JSON, xz-compressed on its own (342 entries: about 6 MB, not 79)


def _pack(data) -> bytes:
    return lzma.compress(json.dumps(data, separators=(",", ":"), sort_keys=True).encode("utf-8"))


REFUSED = "REFUSED"       # the combinations left out (every model asking for one is refused it): a name and the
#                           names of the terms it composes per line, so a refusal needs no compile

_JOB: dict = {}


def _compile_one(item):
    """(name, packed entry), or (name, the names of its terms) where every model asking for it is
    refused it."""
    name, regime, resolved, users = item
    lib = _JOB["lib"]
    composed = compose(lib, regime, dict(resolved))
    terms = [getattr(c, "name", c) for c in composed.components]
    if all(unmodelled(load_model(m), terms) is not None for m in users):
        return name, terms      # every model with these options is refused this regime (Gemma 4's
        #                         activations, a hybrid's training): never evaluated without --assume
    return name, _pack(compile_regime(lib, composed))


def _print_one(item):
    """(name, packed page group)."""
    name, (regime, options, free, given) = item
    return name, _pack(calculator.make_group(_JOB["lib"], regime, options, free, given))


def _run(func, todo, processes):
    processes = processes or os.cpu_count() or 1
    if processes > 1 and len(todo) > 1:
        with multiprocessing.get_context("fork").Pool(processes) as pool:
            return list(pool.imap_unordered(func, todo, chunksize=1))
    return list(map(func, todo))


def _clear(folder: str) -> None:
    os.makedirs(folder, exist_ok=True)
    for f in os.listdir(folder):
        if f.endswith((".json", SUFFIX)) or f in ("KEY", REFUSED):
            os.unlink(os.path.join(folder, f))


def _write_all(folder: str, packed: dict, key: str, refused=None) -> None:
    for name, data in packed.items():
        with open(os.path.join(folder, name + SUFFIX), "wb") as fh:
            fh.write(data)
    if refused is not None:
        with open(os.path.join(folder, REFUSED), "w", encoding="ascii") as fh:
            fh.write("".join(" ".join([n, *refused[n]]) + "\n" for n in sorted(refused)))
    with open(os.path.join(folder, "KEY"), "w", encoding="ascii") as fh:   # last: a half-written folder is never used
        fh.write(key + "\n")


def write(folder: str, models=None, processes: int = None, regimes: bool = True) -> int:
    """Write the shipped entries into ``folder`` (replacing what is there) for ``models`` (names;
    default: the whole catalog), compiling them in ``processes`` processes (default: one per
    CPU), then the page groups into ``folder``/page (``regimes`` False: those alone, from the
    compiled regimes already in ``folder``); the number written."""
    lib = load_or_raise([Path(formulas_path())])
    vocabulary = Vocabulary(library=lib)
    specs = [load_model(n) for n in (models or sorted(catalog()))]
    todo = []
    for regime, opts, users in combinations(vocabulary, specs):
        name, resolved = entry_of(vocabulary, regime, opts, users[0])
        todo.append((name, regime, resolved, tuple(m.name for m in users)))
    _JOB["lib"] = lib
    if regimes:
        _clear(folder)
        packed = {"interface": _pack(interface_of(lib).to_json())}
        done = _run(_compile_one, todo, processes)
        packed.update((name, data) for name, data in done if isinstance(data, bytes))
        _write_all(folder, packed, cache.shipped_key(),
                   {name: terms for name, terms in done if not isinstance(terms, bytes)})
    else:       # the page groups alone: from compiled regimes that are current, else refused
        try:
            with open(os.path.join(folder, "KEY"), encoding="ascii") as fh:
                current = fh.read().strip() == cache.shipped_key()
        except OSError:
            current = False
        if not current:
            raise SystemExit(f"vramsym: the compiled regimes in {folder} are missing or stale: run "
                             f"`python -m vramsym.precompile` (without --page) first")
        packed = {}
    # the page groups, from the compiled regimes just written (read back as vramsym reads them)
    table = {}
    for name, regime, resolved, _ in todo:
        try:
            with open(os.path.join(folder, name + SUFFIX), "rb") as fh:
                table[(regime, resolved)] = CompiledRegime(json.loads(lzma.decompress(fh.read())))
        except FileNotFoundError:      # refused to every model asking for it
            table[(regime, resolved)] = None

    def compiled(regime, opts, config):
        return table[(regime, tuple(sorted(vocabulary.resolve(regime, opts, config).items())))]
    groups = calculator.page_group_specs(vocabulary, specs, compiled)
    page = os.path.join(folder, "page")
    _clear(page)
    pages = dict(_run(_print_one, sorted(groups.items()), processes))
    _write_all(page, pages, cache.shipped_key(page=True))
    return len(packed) + len(pages)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    regimes = "--page" not in argv
    argv = [a for a in argv if a != "--page"]
    folder = argv[0] if argv else cache.SHIPPED
    n = write(folder, regimes=regimes)
    print(f"vramsym: {n} compiled entries written to {folder}")


if __name__ == "__main__":
    main()
