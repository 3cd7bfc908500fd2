"""Memory sizes as exact integers of bytes, and their printing with explicit units.

``GB`` is 10^9 bytes and ``GiB`` is 2^30 bytes; every printed figure names which.
"""
from __future__ import annotations

import re
from fractions import Fraction

from ..errors import InputError
from ..numbers import NumberError, to_fraction, to_int_bytes  # noqa: F401 (to_int_bytes: re-exported)

DECIMAL = {"B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12}
BINARY = {"KIB": 2**10, "MIB": 2**20, "GIB": 2**30, "TIB": 2**40}
_UNITS = {**DECIMAL, **BINARY, "BYTE": 1, "BYTES": 1}
_RE = re.compile(r"^\s*(\d+(?:_\d+)*(?:\.\d+)?(?:[eE][+-]?\d+)?)\s*([A-Za-z]*)\s*$")


def parse_size(text: str) -> int:
    """'24GB' -> 24000000000; '24GiB' -> 25769803776; '80000MiB'; '1.5 GB'. Exact, or an error."""
    m = _RE.match(str(text))
    if not m:
        raise InputError(f"cannot read '{text}' as a memory size: write a number and a unit, "
                         f"e.g. 24GB (10^9 B), 24GiB (2^30 B) or 80000MiB")
    number, unit = m.group(1), m.group(2).upper()
    if unit == "":
        raise InputError(f"'{text}' has no unit: write 24GB (10^9 bytes) or 24GiB (2^30 bytes)")
    if unit not in _UNITS:
        raise InputError(f"unknown memory unit '{m.group(2)}' in '{text}': use B, KB, MB, GB, TB "
                         f"(powers of 10) or KiB, MiB, GiB, TiB (powers of 2)")
    try:
        value = to_fraction(number) * _UNITS[unit]
    except NumberError as e:
        raise InputError(f"cannot read '{text}' as a memory size: the number is {e}") from None
    if value.denominator != 1:
        raise InputError(f"'{text}' is not a whole number of bytes ({value} B)")
    if value <= 0:
        raise InputError(f"a memory size must be positive, got '{text}'")
    return int(value)


def _fmt(value: Fraction, digits: int) -> str:
    q = round(value, digits)
    s = f"{float(q):,.{digits}f}"
    return s


def fmt_bytes(n, unit: str = "GiB", digits: int = 2) -> str:
    """Format a byte count in one unit; the unit is always printed."""
    unit_key = unit.upper()
    div = _UNITS[unit_key]
    canon = {"GIB": "GiB", "MIB": "MiB", "KIB": "KiB", "TIB": "TiB"}.get(unit_key, unit_key if unit_key != "BYTE" else "B")
    if canon == "B":
        return f"{int(n):,} B" if Fraction(n).denominator == 1 else f"{float(n):,.1f} B"
    return f"{_fmt(Fraction(n) / div, digits)} {canon}"


def fmt_both(n, digits: int = 2) -> str:
    return f"{fmt_bytes(n, 'GiB', digits)} ({fmt_bytes(n, 'GB', digits)})"


