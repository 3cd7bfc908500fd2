"""Stage 3: syntax tree -> sympy expressions (exact rationals, no text parsing).

``SymPyBuilder`` turns one checked expression into sympy, resolving ``match``
on the chosen options and leaving references to other terms as placeholder
symbols, so a derivation can show each term before it is expanded.
"""
from __future__ import annotations

from typing import Callable, Mapping

import sympy

from . import ast as A

_ASSUMPTIONS = {
    "posint": dict(integer=True, positive=True),
    "nonnegint": dict(integer=True, nonnegative=True),
    "posreal": dict(real=True, positive=True),
    "nonnegreal": dict(real=True, nonnegative=True),
    "bool": dict(integer=True, nonnegative=True),
}

_COMPARE = {"<": sympy.StrictLessThan, "<=": sympy.LessThan, ">": sympy.StrictGreaterThan,
            ">=": sympy.GreaterThan, "==": sympy.Eq, "!=": sympy.Ne}


def make_symbol(decl: A.SymbolDecl) -> sympy.Symbol:
    return sympy.Symbol(decl.name, **_ASSUMPTIONS.get(decl.domain, dict(real=True)))


def placeholder(name: str) -> sympy.Symbol:
    """Stands for a term inside another term's definition until expansion."""
    return sympy.Symbol(name, real=True)


def to_sympy(expr: A.Expr, resolve: Callable[[str], sympy.Expr], options: Mapping[str, str]) -> sympy.Expr:
    def go(e):
        if isinstance(e, A.Num):
            return sympy.Rational(e.value.numerator, e.value.denominator)
        if isinstance(e, A.Name):
            return resolve(e.name)
        if isinstance(e, A.UnitLiteral):
            return sympy.Integer(1)
        if isinstance(e, A.Neg):
            return -go(e.operand)
        if isinstance(e, A.BinOp):
            l, r = go(e.left), go(e.right)
            if e.op == "+":
                return l + r
            if e.op == "-":
                return l - r
            if e.op == "*":
                return l * r
            if e.op == "/":
                return l / r
            return l ** r
        if isinstance(e, A.Compare):
            return _COMPARE[e.op](go(e.left), go(e.right))
        if isinstance(e, A.Call):
            args = [go(a) for a in e.args]
            if e.func == "min":
                return sympy.Min(*args)
            if e.func == "max":
                return sympy.Max(*args)
            if e.func == "ceil":
                return sympy.ceiling(args[0])
            if e.func == "floor":
                return sympy.floor(args[0])
            if e.func == "if":
                return sympy.Piecewise((args[1], args[0]), (args[2], True))
            raise AssertionError(e.func)
        if isinstance(e, A.Match):
            chosen = options[e.option]
            for c in e.cases:
                if chosen in c.labels:
                    return go(c.expr)
            raise AssertionError(f"match on {e.option} has no case {chosen}")
        raise AssertionError(f"unhandled node {e!r}")

    return go(expr)
