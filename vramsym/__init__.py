"""vramsym: GPU memory of LLM jobs from cited formulas, with the derivation of every number.

Public API (the command line uses only this)::

    import vramsym
    m = vramsym.load_model("llama-3.1-8b")
    r = vramsym.compile(m, regime="inference", options={"precision": "bf16"})
    r.evaluate(batch=4, seq=4096).total_bytes          # int, the CLI's number
    r.solve("batch", "24GB", seq=4096).value           # the largest batch that fits
    vramsym.estimate(m, "inference", inputs={"batch": 1, "seq": 4096})   # one-off
    print(vramsym.derive(vramsym.solve("batch", "24GB", m, inputs={"seq": 4096})))

Every number comes from one compiled regime (vramsym.engine.compiled); sympy composes and
derives, and is imported only when a regime is compiled or a derivation is printed.

The functions live in :mod:`vramsym.api` (answers from compiled regimes: no sympy) and
:mod:`vramsym.symbolic` (what reads the formula files and composes with sympy); this module
is their name table, and imports the module that holds a name when the name is first read.
"""
from __future__ import annotations

from importlib import import_module     # the name table needs it on every run that reads a public name

from .errors import DoesNotFit, InputError, SolveError, VramError
from .version import __version__

__all__ = [
    "load_library", "load_model", "vocabulary", "compose", "compile", "estimate", "solve", "min_gpus", "derive", "export",
    "advise", "sensitivity", "plot_curve", "plot_map", "calculator_html",
    "resolve_capacity", "find_gpu", "check", "explain_dtype", "catalog_models", "catalog_gpus", "compare_with_pytorch", "Diagnostic", "DoesNotFit", "FormulaError", "InputError", "SolveError",
    "VramError", "__version__",
]


#: the façade's name table: public name -> the module that defines it
_WHERE = {
    **dict.fromkeys(("vocabulary", "load_model", "compile", "estimate", "solve", "min_gpus", "plot_curve",
                     "plot_map", "resolve_capacity", "find_gpu", "catalog_models", "catalog_gpus", "advise",
                     "calculator_html"), "vramsym.api"),
    **dict.fromkeys(("load_library", "compose", "sensitivity", "derive", "export",
                     "check", "explain_dtype", "compare_with_pytorch"), "vramsym.symbolic"),
    # the formula-file error types
    **dict.fromkeys(("Diagnostic", "FormulaError"), "vramsym.lang.diagnostics"),
}


def __getattr__(name):
    """A public name, imported from its module on first use (the warm path imports no sympy)."""
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module 'vramsym' has no attribute '{name}'")
    value = globals()[name] = getattr(import_module(where), name)
    return value


def __dir__():
    return sorted(set(globals()) | set(_WHERE))
