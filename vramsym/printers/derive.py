"""The derivation of an estimate or a solution (``vramsym derive``), as Markdown or LaTeX."""
from __future__ import annotations

from ..errors import InputError
from .latex import derivation_latex
from .markdown import derivation_markdown

FORMATS = ("markdown", "latex")


def derivation(result, lib, fmt: str = "markdown", standalone: bool = False) -> str:
    """The derivation of an ``Estimate`` or ``Solution`` as Markdown or LaTeX.

    ``fmt``: ``"markdown"`` (headings, tables, ``$...$`` / ``$$...$$`` math) or ``"latex"``
    (a fragment of sections, ``equation*`` / ``align*`` environments and ``longtable`` tables,
    laid out to fit article's page, for a preamble with amsmath, array and longtable; with
    ``standalone=True`` a complete ``article`` document).
    """
    if fmt in ("markdown", "md"):
        return derivation_markdown(result, lib)
    if fmt in ("latex", "tex"):
        return derivation_latex(result, lib, standalone=standalone)
    raise InputError(f"unknown derivation format '{fmt}': use {' or '.join(FORMATS)}")
