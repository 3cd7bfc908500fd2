"""Input values as exact fractions, and symbol domains (shared by the engine and the fast path)."""
from __future__ import annotations

from fractions import Fraction


def to_fraction(value) -> Fraction | None:
    """An exact Fraction for ints, bools, floats (by their repr) and decimal strings; None otherwise."""
    if isinstance(value, bool):
        return Fraction(int(value))
    if isinstance(value, (int, Fraction)):
        return Fraction(value)
    if isinstance(value, float):
        return Fraction(repr(value))
    if isinstance(value, str):
        try:
            return Fraction(value.replace("_", ""))
        except (ValueError, ZeroDivisionError):
            return None
    return None


def domain_problem(domain: str, v: Fraction) -> str | None:
    """What ``v`` must be to belong to ``domain``, or None when it does."""
    if domain in ("posint", "nonnegint", "bool") and v.denominator != 1:
        return "a whole number"
    if domain in ("posint", "posreal") and v <= 0:
        return "positive"
    if domain in ("nonnegint", "nonnegreal") and v < 0:
        return "non-negative"
    if domain == "bool" and v not in (0, 1):
        return "0 or 1 (false or true)"
    return None
