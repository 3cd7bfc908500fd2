"""Exact numbers: input values as exact fractions within bounds, symbol domains, whole bytes.

Every number vramsym reads from a user (a flag, a config.json field, a capacity) goes
through :func:`to_fraction`: exact (a float by its shortest repr, a decimal string as
written), finite, and small enough to compute with (at most ``MAX_DIGITS`` digits and an
exponent of at most ``MAX_EXPONENT``), so that no input can make vramsym hang or run out
of memory building a number.
"""
from __future__ import annotations

import re
from fractions import Fraction

from .records import Domain

MAX_DIGITS = 40          # significant digits of a number read from the user
MAX_EXPONENT = 40        # |e| in 1e40
_DECIMAL = re.compile(r"^\s*([+-]?)(\d[\d_]*)?(?:\.(\d*))?(?:[eE]([+-]?\d+))?\s*$")
_RATIO = re.compile(r"^\s*([+-]?\d+)\s*/\s*(\d+)\s*$")


class NumberError(ValueError):
    """Why a value is not a number vramsym accepts (a sentence)."""


class NonFinite(str):
    """A non-finite constant (``Infinity``, ``-Infinity``, ``NaN``) as a config.json may hold it
    (Python's json writes them: Mamba2 configs publish ``time_step_limit: [0.0, Infinity]``): kept as
    its text, so a field no formula reads loads, and refused wherever a number is read."""


def to_fraction(value, allow_bool: bool = True, allow_str: bool = True) -> Fraction:
    """``value`` as an exact Fraction, or :class:`NumberError` saying why not."""
    if isinstance(value, bool):
        if not allow_bool:
            raise NumberError("a true/false value, not a number")
        return Fraction(int(value))
    if isinstance(value, int):
        if abs(value) >= 10**MAX_DIGITS:
            raise NumberError(f"larger than 10^{MAX_DIGITS}")
        return Fraction(value)
    if isinstance(value, Fraction):
        return value
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise NumberError("not a finite number")
        return _from_text(repr(value))
    if isinstance(value, NonFinite):
        raise NumberError(f"{value}, which is not a number JSON allows")
    if isinstance(value, str):
        if not allow_str:
            raise NumberError("a string, not a number (write it without quotes)")
        return _from_text(value)
    raise NumberError(f"a {type(value).__name__}, not a number")


def _from_text(text: str) -> Fraction:
    if len(text) > 2 * MAX_DIGITS + 10:
        raise NumberError(f"longer than {2 * MAX_DIGITS + 10} characters")
    m = _RATIO.match(text)
    if m:
        if int(m.group(2)) == 0:
            raise NumberError("a fraction with a zero denominator")
        return Fraction(int(m.group(1)), int(m.group(2)))
    m = _DECIMAL.match(text)
    if not m or not (m.group(2) or m.group(3)):
        raise NumberError("not a number")
    digits = (m.group(2) or "").replace("_", "") + (m.group(3) or "")
    if len(digits.lstrip("0")) > MAX_DIGITS:
        raise NumberError(f"more than {MAX_DIGITS} significant digits")
    if m.group(4) and abs(int(m.group(4))) > MAX_EXPONENT:
        raise NumberError(f"an exponent beyond ±{MAX_EXPONENT}")
    return Fraction(text.strip().replace("_", ""))


def domain_problem(domain: Domain, v: Fraction) -> str | None:
    """What ``v`` must be to belong to ``domain``, or None when it does."""
    if domain in (Domain.POSINT, Domain.NONNEGINT, Domain.BOOL) and v.denominator != 1:
        return "a whole number"
    if domain in (Domain.POSINT, Domain.POSREAL) and v <= 0:
        return "positive"
    if domain in (Domain.NONNEGINT, Domain.NONNEGREAL) and v < 0:
        return "non-negative"
    if domain == Domain.BOOL and v not in (0, 1):
        return "0 or 1 (false or true)"
    return None


def to_int_bytes(value) -> int:
    """Round a byte figure up to a whole byte (memory is allocated in whole bytes)."""
    n, d = value.numerator, value.denominator
    return -((-n) // d)
