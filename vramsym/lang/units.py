"""Stage 2: dimensional analysis of every formula, with pint.

Each symbol and term declares a unit; :func:`unit_of` computes the unit of an
expression and reports mismatches as diagnostics. Units are built from the
syntax tree (never by parsing user text with pint's own parser).
"""
from __future__ import annotations

import functools
from fractions import Fraction
from pathlib import Path
from typing import Callable, List, Optional

import pint

from ..catalog.paths import formulas_path
from . import ast as A
from .diagnostics import (MSG_EXPONENT, MSG_NOT_DIMENSIONLESS, MSG_UNIT_MISMATCH,
                          MSG_UNKNOWN_UNIT, Diagnostic)


@functools.lru_cache(maxsize=4)
def registry(units_file: str) -> pint.UnitRegistry:
    ureg = pint.UnitRegistry(None)
    ureg.load_definitions(units_file)
    return ureg


def build_unit(node: A.Unit, ureg: pint.UnitRegistry, diags: List[Diagnostic]) -> Optional[pint.Unit]:
    """Turn a unit syntax tree into a pint unit; unknown names become diagnostics."""
    return UnitBuilder(ureg, diags).visit(node)


class UnitBuilder(A.Visitor):
    def __init__(self, ureg, diags):
        self.ureg, self.diags = ureg, diags

    def visit_UnitOne(self, node):
        return self.ureg.dimensionless

    def visit_UnitName(self, node):
        if node.name not in self.ureg:
            self.diags.append(Diagnostic(node.span, "unit", MSG_UNKNOWN_UNIT.format(
                name=node.name, known=", ".join(sorted(_canonical(self.ureg))))))
            return None
        return self.ureg.Unit(node.name)

    def visit_UnitPow(self, node):
        base = self.visit(node.base)
        return None if base is None else base ** node.exponent

    def visit_UnitBin(self, node):
        left, right = self.visit(node.left), self.visit(node.right)
        if left is None or right is None:
            return None
        return left * right if node.op == "*" else left / right


def _canonical(ureg) -> List[str]:
    return [str(name) for name in ureg._units if not name.startswith("_")]


def fmt(unit: pint.Unit) -> str:
    """Readable dimension, e.g. 'byte / element'; dimensionless prints as '1'."""
    dim = unit.dimensionality
    if not dim:
        return "1"
    parts_num, parts_den = [], []
    for name, power in sorted(dim.items()):
        n = name.strip("[]")
        n = "byte" if n == "information" else n
        target = parts_num if power > 0 else parts_den
        p = abs(power)
        target.append(n if p == 1 else f"{n}^{p:g}")
    s = " * ".join(parts_num) if parts_num else "1"
    if parts_den:
        s += " / " + (parts_den[0] if len(parts_den) == 1 else "(" + " * ".join(parts_den) + ")")
    return s


def same(a: pint.Unit, b: pint.Unit) -> bool:
    return a.dimensionality == b.dimensionality


Lookup = Callable[[A.Name], Optional[pint.Unit]]


def unit_of(expr: A.Expr, lookup: Lookup, ureg: pint.UnitRegistry,
            diags: List[Diagnostic]) -> Optional[pint.Unit]:
    """The unit of ``expr``; ``None`` when an error was reported (errors do not cascade)."""
    return UnitOf(lookup, ureg, diags).visit(expr)


class UnitOf(A.Visitor):
    def __init__(self, lookup: Lookup, ureg: pint.UnitRegistry, diags: List[Diagnostic]):
        self.lookup, self.ureg, self.diags = lookup, ureg, diags
        self.one = ureg.dimensionless

    def visit_Num(self, e):
        return self.one

    def visit_Name(self, e):
        return self.lookup(e)

    def visit_UnitLiteral(self, e):
        return build_unit(e.unit, self.ureg, self.diags)

    def visit_Neg(self, e):
        return self.visit(e.operand)

    def visit_BinOp(self, e):
        left, right = self.visit(e.left), self.visit(e.right)
        one, diags = self.one, self.diags
        if e.op == "^":
            if left is None:
                return None
            if right is not None and not right.dimensionality == one.dimensionality:
                diags.append(Diagnostic(e.right.span, "unit", MSG_NOT_DIMENSIONLESS.format(
                    what="an exponent", actual=fmt(right))))
                return None
            if left.dimensionality == one.dimensionality:
                return one
            exp = Constant().visit(e.right)
            if exp is None:
                diags.append(Diagnostic(e.span, "unit", MSG_EXPONENT.format(unit=fmt(left))))
                return None
            return left ** float(exp) if exp.denominator != 1 else left ** int(exp)
        if left is None or right is None:
            return None
        if e.op == "*":
            return left * right
        if e.op == "/":
            return left / right
        if not same(left, right):
            diags.append(Diagnostic(e.span, "unit", MSG_UNIT_MISMATCH.format(
                op="add" if e.op == "+" else "subtract", left=fmt(left), right=fmt(right))))
            return None
        return left

    def visit_Compare(self, e):
        left, right = self.visit(e.left), self.visit(e.right)
        if left is not None and right is not None and not same(left, right):
            self.diags.append(Diagnostic(e.span, "unit", MSG_UNIT_MISMATCH.format(
                op="compare", left=fmt(left), right=fmt(right))))
        return self.one

    def visit_Call(self, e):
        units = [self.visit(a) for a in e.args]
        if e.func in ("ceil", "floor"):
            u = units[0] if units else None
            if u is not None and not same(u, self.one):
                self.diags.append(Diagnostic(e.span, "unit", MSG_NOT_DIMENSIONLESS.format(
                    what=f"the argument of {e.func}()", actual=fmt(u))))
                return None
            return self.one
        values = units[1:] if e.func == "if" else units
        return _common(values, [a.span for a in (e.args[1:] if e.func == "if" else e.args)],
                       "combine", self.diags)

    def visit_Match(self, e):
        units = [self.visit(c.expr) for c in e.cases]
        return _common(units, [c.span for c in e.cases], "combine", self.diags)

    def visit_With(self, e):
        ok = True
        for b in e.bindings:
            want, got = self.lookup(A.Name(b.name, b.span)), self.visit(b.expr)
            if want is not None and got is not None and not same(want, got):
                self.diags.append(Diagnostic(b.span, "unit", f"'{b.name}' has the unit {fmt(want)}, "
                                             f"its value in this `with` {fmt(got)}"))
                ok = False
            ok = ok and got is not None
        target = self.visit(e.target)      # a shape's values are checked where it is declared
        return target if ok else None

    def generic_visit(self, node):
        raise AssertionError(f"unhandled node {node!r}")


def _common(units, spans, op, diags):
    known = [(u, s) for u, s in zip(units, spans) if u is not None]
    if len(known) != len(units):
        return None
    if not known:
        return None
    first = known[0][0]
    for u, s in known[1:]:
        if not same(u, first):
            diags.append(Diagnostic(s, "unit", MSG_UNIT_MISMATCH.format(op=op, left=fmt(first), right=fmt(u))))
            return None
    return first


class Constant(A.Visitor):
    """Value of a constant numeric expression (for exponents), else None."""

    def visit_Num(self, e):
        return e.value

    def visit_Neg(self, e):
        v = self.visit(e.operand)
        return None if v is None else -v

    def visit_BinOp(self, e):
        if e.op not in "+-*/":
            return None
        l, r = self.visit(e.left), self.visit(e.right)
        if l is None or r is None or (e.op == "/" and r == 0):
            return None
        return {"+": lambda: l + r, "-": lambda: l - r, "*": lambda: l * r, "/": lambda: Fraction(l) / r}[e.op]()

    def generic_visit(self, node):
        return None


def units_file_default() -> str:
    return str(Path(Path(formulas_path())) / "units.txt")
