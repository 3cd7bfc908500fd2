"""Printers: derivations (LaTeX, Markdown) of estimates and solutions, and exports of a
composed regime to code (Python, NumPy, JavaScript, C), a JSON expression tree, or LaTeX.

    from vramsym.printers import derivation, export
    print(derivation(vramsym.solve("max_batch", "24GB", m, inputs={"seq": 4096}), lib))
    print(export(vramsym.compose("inference", model=m, library=lib), lib, "python"))

Everything prints what the engine computed (its ``Step`` records and ``Composed``
expressions) through sympy's printers; nothing is recomputed.
"""
from __future__ import annotations



from ..errors import InputError

FORMATS = ("markdown", "latex")


def derivation(result, lib, fmt: str = "markdown", standalone: bool = False) -> str:
    """The derivation of an ``Estimate`` or ``Solution`` as Markdown or LaTeX.

    ``fmt``: ``"markdown"`` (headings, tables, ``$...$`` / ``$$...$$`` math) or ``"latex"``
    (a fragment of sections, ``equation*`` / ``align*`` environments and tables; with
    ``standalone=True`` a complete ``article`` document using amsmath).
    """
    if fmt in ("markdown", "md"):
        from .markdown import derivation_markdown
        return derivation_markdown(result, lib)
    if fmt in ("latex", "tex"):
        from .latex import derivation_latex
        return derivation_latex(result, lib, standalone=standalone)
    raise InputError(f"unknown derivation format '{fmt}': use {' or '.join(FORMATS)}")


def export(composed, lib, target: str, binding_values: Optional[Dict[str, object]] = None,
           term: Optional[str] = None) -> str:
    """A composed regime as source text for ``target``.

    Targets: ``python`` (pure Python, exact ``Fraction``/integer arithmetic), ``numpy``
    (vectorized, float64), ``javascript`` (Number arithmetic), ``c`` (double), ``json``
    (expression trees with symbols, units, descriptions and sources), ``latex``.
    ``binding_values`` (symbol name or alias -> number) are bound as constants; the
    functions take the remaining free symbols, sorted. ``term=None`` exports the total
    plus one function per component; ``term="kv_cache"`` just that term.
    """
    from .codegen import export as _export
    return _export(composed, lib, target, binding_values=binding_values, term=term)


__all__ = ["derivation", "export", "FORMATS"]
