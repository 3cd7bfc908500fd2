"""The public functions that read the formula files and compose with sympy: the library, its
check, compositions, derivations, exports, advice and its sensitivity, the calculator page, the
number formats, the comparison with PyTorch. The façade (``vramsym/__init__.py``) reads these
names from here, on first use: importing this module imports sympy, pint and lark.
"""
from __future__ import annotations

from pathlib import Path

from .api import compile, load_model, resolve_capacity
from .catalog.dtypes import explain
from .catalog.paths import formulas_path
from .engine.advice import sensitivity as _sens
from .engine.bind import bind
from .engine.regimes import compose as _compose
from .engine.runtime import Vocabulary
from .errors import InputError
from .lang.library import load, load_or_raise
from .measure.compare import compare
from .printers.codegen import export as _export
from .printers.derive import derivation


def load_library(extra=(), use_cache: bool = True):
    """The bundled formula files plus ``extra`` files or folders, parsed and checked.

    (``use_cache`` is accepted for compatibility: the cache holds compiled regimes, not libraries.)"""
    return load_or_raise([Path(formulas_path())] + [Path(p) for p in extra])


def compose(regime: str = "inference", options=None, model=None, library=None):
    """The regime's sympy composition (for derivations and exports)."""
    lib = library or load_library()
    return _compose(lib, regime, dict(options or {}), model.config if model is not None else None)


def sensitivity(estimate, names=("batch", "seq"), library=None) -> dict:
    """d total / d input at an estimate's configuration (sympy): ``{alias: {derivative, exact, ...}}``;
    ``library``: the formula library it was compiled from, when it has files beyond the bundled ones."""
    return _sens(estimate, names, library)


def derive(result, fmt: str = "markdown", standalone: bool = False, library=None) -> str:
    """The step-by-step derivation of an estimate or a solve, as Markdown or LaTeX."""
    return derivation(result, library or load_library(), fmt, standalone)


def export(regime: str = "inference", target: str = "python", model=None, options=None,
           free=("b", "s"), term=None, library=None) -> str:
    """A regime (or one ``term``) as code another tool can embed: python, numpy, javascript, c, json, latex.

    With a ``model``, its numbers are bound and only the ``free`` symbols stay arguments."""
    lib = library or load_library()
    composed = compose(regime, options, model, lib)
    values = None
    if model is not None:
        r = compile(model, regime, options, lib)
        keep = tuple(r.regime.symbol(f) or f for f in free)
        values = bind(r.regime, model.config, {}, exclude=keep, source=model.source)[0]
    return _export(composed, lib, target, values, term)


def check(files):
    """(library, diagnostics) for the bundled formulas plus ``files`` (each must exist)."""
    for f in files:
        if not Path(f).exists():
            raise InputError(f"cannot check '{f}': no such file")
    return load([Path(formulas_path())] + [Path(f) for f in files])


def explain_dtype(name: str, library=None) -> dict:
    """A number format's bit layout, range and storage size (``bf16``, ``fp8-e4m3``, ``nf4``, ...)."""
    return explain(name, library or load_library())


def compare_with_pytorch(model, regime: str = "inference", options=None, inputs=None, fake: bool = True,
            decode_steps: int = 4, library=None) -> dict:
    """The prediction next to what PyTorch allocates for the same job (needs ``vramsym[measure]``)."""
    return compare(model, regime, options, inputs, fake=fake, decode_steps=decode_steps, library=library)
