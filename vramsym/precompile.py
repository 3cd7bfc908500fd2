"""Compile the bundled formulas once, into data the package ships, so that a first run needs no sympy.

``write(folder)`` writes the library's digest (:func:`vramsym.engine.units.digest`: its regimes,
terms, symbols and each definition's choice of unit by option) and every unit (one definition
compiled for the options its matches read, with the terms that are 0 there substituted:
:func:`vramsym.engine.units.compile_unit`) that the whole catalog reaches: every regime with the
options each model resolves to by default, every ``fit`` row and every configuration of the
calculator page (one option changed at a time: vramsym.printers.calculator.PAGE_REGIMES). Any
other combination of options assembles from the same units (:mod:`vramsym.engine.assemble`):
every definition is also shipped for every choice of the options it reads with no term
substituted (:func:`every_unit`), which stands in where a combination's zero terms make a unit
none of those reached. Each file is JSON, xz-compressed (source code,
not bytecode: any Python reads them), with the key they were compiled under
(:func:`vramsym.engine.cache.shipped_key`). The repository ships what it writes into the
package's ``_precompiled/`` (generated data, committed: tests/test_precompiled.py fails while it
is stale), so that installing compiles nothing (the build hook, ``hatch_build.py``, only checks
the key). Into ``page/`` it writes every group of the whole catalog's calculator page as sympy
prints it (exact JavaScript, :func:`vramsym.printers.calculator.make_group`), under a key that
also covers those printers, so ``vramsym html`` builds the page from data.

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

from .catalog.models import catalog, load_model
from .catalog.paths import formulas_path
from .lang.library import load_or_raise
from .printers import calculator
from .engine import cache
from .engine.options import interface_of
from .engine.unit_keys import specialized
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


SUFFIX = ".json.xz"      # each entry's JSON, xz-compressed on its own (342 entries: about 6 MB, not 79)


def every_unit(digest) -> list:
    """Each definition's unit for every choice of the options it reads, with no term substituted:
    what any combination of options assembles from (vramsym.engine.assemble falls back to it where
    the unit with that combination's zero terms substituted is not shipped)."""
    out = []

    def walk(t):
        if "u" in t:
            out.append(specialized(t["u"], ()))
        else:
            for sub in t["c"].values():
                walk(sub)
    for e in digest["exprs"].values():
        walk(e["tree"])
    return list(dict.fromkeys(out))


def _pack(data) -> bytes:
    return lzma.compress(json.dumps(data, separators=(",", ":"), sort_keys=True).encode("utf-8"))


_JOB: dict = {}


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
        if f.endswith((".json", SUFFIX)) or f in ("KEY", "REFUSED"):
            os.unlink(os.path.join(folder, f))


def _write_all(folder: str, packed: dict, key: str) -> None:
    for name, data in packed.items():
        with open(os.path.join(folder, name + SUFFIX), "wb") as fh:
            fh.write(data)
    with open(os.path.join(folder, "KEY"), "w", encoding="ascii") as fh:   # last: a half-written folder is never used
        fh.write(key + "\n")


def write(folder: str, models=None, processes: int = None, regimes: bool = True) -> int:
    """Write the shipped data into ``folder`` (replacing what is there): the library's digest and
    every definition (unit) that the catalog's combinations for ``models`` (names; default: the
    whole catalog) assemble from, then the page groups into ``folder``/page (``regimes`` False:
    those alone, from the digest and units already in ``folder``), printed in ``processes``
    processes (default: one per CPU); the number of files written."""
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
        for _, regime, resolved, _ in todo:       # compiles each unit they read, once
            vocabulary.compiled(regime, dict(resolved))
        if models is None:      # and, for the package, each definition for every choice of options:
            for key in every_unit(vocabulary.digest()):       # what combinations none of those made
                vocabulary.unit(key)                            # assemble from
        packed = {"interface": _pack(interface_of(lib).to_json()), "digest": _pack(vocabulary.digest()),
                  "units": _pack(dict(sorted(vocabulary._unit_sources[1].items())))}
        _write_all(folder, packed, cache.shipped_key())
    else:       # the page groups alone: from the digest and units shipped, if current
        try:
            with open(os.path.join(folder, "KEY"), encoding="ascii") as fh:
                current = fh.read().strip() == cache.shipped_key()
        except OSError:
            current = False
        if not current:
            raise SystemExit(f"vramsym: the compiled units in {folder} are missing or stale: run "
                             f"`python -m vramsym.precompile` (without --page) first")
        with open(os.path.join(folder, "units" + SUFFIX), "rb") as fh:
            vocabulary._unit_sources = (json.loads(lzma.decompress(fh.read())), {})
        packed = {}

    def compiled(regime, opts, config):
        return vocabulary.compiled(regime, opts, config)
    groups = calculator.page_group_specs(vocabulary, specs, compiled)
    page = os.path.join(folder, "page")
    _clear(page)
    pages = dict(_run(_print_one, sorted(groups.items()), processes))
    _write_all(page, pages, cache.shipped_key(page=True))
    return len(packed) + len(pages)


USAGE = """usage: python -m vramsym.precompile [--page] [FOLDER]

Writes the shipped data (the digest, the units, then the calculator page's groups) into FOLDER
(default: the package's vramsym/_precompiled/), replacing what is there. --page: the page groups
alone, from the units already in FOLDER."""


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if any(a in ("-h", "--help") for a in argv):
        print(USAGE)
        return 0
    regimes = "--page" not in argv
    argv = [a for a in argv if a != "--page"]
    unknown = [a for a in argv if a.startswith("-")]
    if unknown or len(argv) > 1:     # never a folder named after a mistyped option
        print(f"vramsym.precompile: unexpected argument {(unknown or argv[1:])[0]!r}\n{USAGE}", file=sys.stderr)
        return 2
    folder = argv[0] if argv else cache.SHIPPED
    n = write(folder, regimes=regimes)
    print(f"vramsym: {n} compiled entries written to {folder}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
