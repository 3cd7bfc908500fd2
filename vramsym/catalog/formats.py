"""The number formats' table (formulas/number_formats.json): their names and other names.

Data only, no sympy: what shell completion lists; :mod:`vramsym.catalog.dtypes` explains a
format from it.
"""
from __future__ import annotations

import json
import os
from typing import Dict

from .paths import formulas_path, read_text


def _table() -> Dict:
    return json.loads(read_text(os.path.join(formulas_path(), "number_formats.json")))


def formats() -> Dict[str, Dict]:
    return _table()["formats"]


def aliases(table: Dict = None) -> Dict[str, str]:
    """Other names of formats -> the format (``aliases`` in number_formats.json; keys as normalised:
    lower case, '_' for '-')."""
    table = _table() if table is None else table
    return {k: v for k, v in table.get("aliases", {}).items() if not k.startswith("_")}
