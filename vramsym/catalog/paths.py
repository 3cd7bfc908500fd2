"""Where the bundled data lives: inside the wheel, or beside the package in a checkout.

Plain strings and ``os.path`` (pathlib costs a start-up import the warm path avoids)."""
from __future__ import annotations

import os

_HERE = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))   # the package folder


def formulas_path() -> str:
    installed = os.path.join(_HERE, "formulas")
    if os.path.isdir(installed):
        return installed
    return os.path.join(os.path.dirname(_HERE), "formulas")


def formulas_dir():
    """The formula folder as a ``pathlib.Path``."""
    from pathlib import Path
    return Path(formulas_path())


def read_text(path: str) -> str:
    with open(path, encoding="utf-8") as fh:
        return fh.read()
