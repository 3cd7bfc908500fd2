"""Stage 3: syntax tree -> sympy expressions (exact rationals, no text parsing).

``SymPyBuilder`` turns one checked expression into sympy, resolving ``match``
on the chosen options and leaving references to other terms as placeholder
symbols, so a derivation can show each term before it is expanded.
"""
from __future__ import annotations

from typing import Callable, Mapping

import sympy

from ..records import Domain
from . import ast as A

_ASSUMPTIONS = {
    Domain.POSINT: dict(integer=True, positive=True),
    Domain.NONNEGINT: dict(integer=True, nonnegative=True),
    Domain.POSREAL: dict(real=True, positive=True),
    Domain.NONNEGREAL: dict(real=True, nonnegative=True),
    Domain.BOOL: dict(integer=True, nonnegative=True),
}

_COMPARE = {"<": sympy.StrictLessThan, "<=": sympy.LessThan, ">": sympy.StrictGreaterThan,
            ">=": sympy.GreaterThan, "==": sympy.Eq, "!=": sympy.Ne}


def make_symbol(decl: A.SymbolDecl) -> sympy.Symbol:
    return sympy.Symbol(decl.name, **_ASSUMPTIONS.get(decl.domain, dict(real=True)))


def placeholder(name: str) -> sympy.Symbol:
    """Stands for a term inside another term's definition until expansion."""
    return sympy.Symbol(name, real=True)


def to_sympy(expr: A.Expr, resolve: Callable[[str], sympy.Expr], options: Mapping[str, str]) -> sympy.Expr:
    """``expr`` as sympy; ``resolve`` gives each name's sympy value, ``options`` choose the ``match`` cases."""
    return SymPyBuilder(resolve, options).visit(expr)


class SymPyBuilder(A.Visitor):
    _CALLS = {"min": sympy.Min, "max": sympy.Max, "ceil": sympy.ceiling, "floor": sympy.floor}
    _BINARY = {"+": lambda l, r: l + r, "-": lambda l, r: l - r, "*": lambda l, r: l * r,
               "/": lambda l, r: l / r, "^": lambda l, r: l ** r}

    def __init__(self, resolve, options):
        self.resolve, self.options = resolve, options

    def visit_Num(self, e):
        return sympy.Rational(e.value.numerator, e.value.denominator)

    def visit_Name(self, e):
        return self.resolve(e.name)

    def visit_UnitLiteral(self, e):
        return sympy.Integer(1)

    def visit_Neg(self, e):
        return -self.visit(e.operand)

    def visit_BinOp(self, e):
        return self._BINARY[e.op](self.visit(e.left), self.visit(e.right))

    def visit_Compare(self, e):
        return _COMPARE[e.op](self.visit(e.left), self.visit(e.right))

    def visit_Call(self, e):
        args = [self.visit(a) for a in e.args]
        if e.func == "if":
            return sympy.Piecewise((args[1], args[0]), (args[2], True))
        return self._CALLS[e.func](*args)

    def visit_Match(self, e):
        chosen = self.options[e.option]
        for c in e.cases:
            if chosen in c.labels:
                return self.visit(c.expr)
        raise AssertionError(f"match on {e.option} has no case {chosen}")

    def generic_visit(self, node):
        raise AssertionError(f"unhandled node {node!r}")
