"""Where the bundled data lives: inside the wheel, or beside the package in a checkout."""
from __future__ import annotations

from pathlib import Path

_HERE = Path(__file__).resolve().parent


def formulas_dir() -> Path:
    installed = _HERE / "formulas"
    if installed.is_dir():
        return installed
    return _HERE.parent / "formulas"
