"""Printers: derivations (LaTeX, Markdown) of estimates and solutions, and exports of a
composed regime to code (Python, NumPy, JavaScript, C), a JSON expression tree, or LaTeX.

    from vramsym.printers.derive import derivation
    from vramsym.printers.codegen import export
    print(derivation(vramsym.solve("max_batch", "24GB", m, inputs={"seq": 4096}), lib))
    print(export(vramsym.compose("inference", model=m, library=lib), lib, "python"))

Everything prints what the engine computed (its ``Step`` records and ``Composed``
expressions) through sympy's printers; nothing is recomputed. This package's own module is
empty, so that the printers the warm path needs (:mod:`vramsym.printers.report`) import no sympy.
"""
