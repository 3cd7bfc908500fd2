"""The calculator page's own files in ``vramsym/printers/page/`` (HTML template, JavaScript app,
exact runtime), read once on first use, never at import.

:mod:`vramsym.printers.codegen` reads the exact runtime (``page/exact.js``) from here and
:mod:`vramsym.printers.calculator` the template and the app.
"""
from __future__ import annotations

import functools
import os

#: the page's own files, beside this module's folder: the HTML template with its three slots
#: (``/*DATA*/``, ``/*RUNTIME*/``, ``/*APP*/``), and the JavaScript app that reads the data
PAGE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "page")
TEMPLATE_FILE, APP_FILE = "calculator.html", "app.js"
#: the exact runtime (``const Q``) that exact-JavaScript exports and the page run on
JS_EXACT_RUNTIME_FILE = "exact.js"


@functools.lru_cache(maxsize=None)
def page_file(name: str) -> str:
    """The text of one of the page's files in ``vramsym/printers/page/`` (read once, when a page
    or an exact-JavaScript export is built; never at import)."""
    with open(os.path.join(PAGE_DIR, name), encoding="utf-8") as f:
        return f.read()


def js_exact_runtime() -> str:
    """The text of the exact runtime (``const Q``), read from ``page/exact.js`` on first use."""
    return page_file(JS_EXACT_RUNTIME_FILE)
