"""vramsym: GPU memory of LLM jobs from cited formulas, with the derivation of every number.

Public API (the command line uses only this)::

    import vramsym
    lib = vramsym.load_library()
    m = vramsym.load_model("llama-3.1-8b")
    est = vramsym.estimate(m, regime="inference", inputs={"batch": 1, "seq": 4096})
    sol = vramsym.solve("batch", "24GB", m, inputs={"seq": 4096})
"""
from __future__ import annotations

from typing import Mapping, Optional, Sequence

from .diagnostics import (Diagnostic, DoesNotFit, FormulaError, InputError, SolveError,
                          VramError)

__version__ = "0.1.0"

__all__ = [
    "load_library", "load_model", "compose", "estimate", "solve", "derive", "export", "resolve_capacity", "find_gpu",
    "Diagnostic", "DoesNotFit", "FormulaError", "InputError", "SolveError", "VramError", "__version__",
]


def load_library(extra: Sequence = (), use_cache: bool = True):
    """The bundled formula files plus ``extra`` files or folders, parsed and checked (cached by hash)."""
    from .cache import load_library as _load
    return _load(tuple(extra), use_cache=use_cache)


def load_model(name_or_path: str, extra: Sequence = ()):
    from .models import load_model as _load
    return _load(name_or_path, list(extra))


def compose(regime: str = "inference", options: Optional[Mapping[str, str]] = None, model=None, library=None):
    from .regimes import compose as _compose
    lib = library or load_library()
    return _compose(lib, regime, dict(options or {}), model.config if model is not None else None)


def estimate(model, regime: str = "inference", options: Optional[Mapping[str, str]] = None,
             inputs: Optional[Mapping[str, object]] = None, library=None):
    from .engine import estimate as _estimate
    lib = library or load_library()
    composed = compose(regime, options, model, lib)
    return _estimate(lib, composed, model, dict(inputs or {}))


def solve(variable: str, capacity, model, regime: str = "inference",
          options: Optional[Mapping[str, str]] = None, inputs: Optional[Mapping[str, object]] = None,
          library=None):
    """Largest integer ``variable`` (``batch``, ``seq``, ``max_batch``, ...) whose total fits ``capacity``
    (bytes as an int, a size such as '24GB', or a GPU name)."""
    from .engine import solve_max
    lib = library or load_library()
    if isinstance(capacity, int):
        cap = capacity
    else:
        cap, _ = resolve_capacity(capacity)
    var = variable[4:] if variable.startswith("max_") else variable
    composed = compose(regime, options, model, lib)
    return solve_max(lib, composed, model, dict(inputs or {}), var, cap)


def derive(result, fmt: str = "markdown", standalone: bool = False, library=None) -> str:
    """The step-by-step derivation of an estimate or a solve, as Markdown or LaTeX."""
    from .printers import derivation
    return derivation(result, library or load_library(), fmt, standalone)


def export(regime: str = "inference", target: str = "python", model=None,
           options: Optional[Mapping[str, str]] = None, free: Sequence[str] = ("b", "s"),
           term: Optional[str] = None, library=None) -> str:
    """A regime (or one ``term``) as code another tool can embed: python, numpy, javascript, c, json, latex.

    With a ``model``, its numbers are bound and only the ``free`` symbols stay arguments."""
    from .printers import export as _export
    lib = library or load_library()
    composed = compose(regime, options, model, lib)
    values = None
    if model is not None:
        from .engine import bind
        keep = tuple(lib.symbol_by_alias(f).name if lib.symbol_by_alias(f) else f for f in free)
        values = dict(bind(lib, composed, model, {}, exclude=keep).values)
    return _export(composed, lib, target, values, term)


def resolve_capacity(text):
    from .gpus import resolve_capacity as _rc
    return _rc(text)


def find_gpu(name: str):
    from .gpus import find_gpu as _fg
    return _fg(name)
