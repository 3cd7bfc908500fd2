"""Stage 3: syntax tree -> sympy expressions (exact rationals, no text parsing).

``SymPyBuilder`` turns one checked expression into sympy, resolving ``match``
on the chosen options and leaving references to other terms as placeholder
symbols, so a derivation can show each term before it is expanded.
"""
from __future__ import annotations

from typing import Callable, Mapping, Optional

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


class Substituted(sympy.Function):
    """``term with {symbol = value, ...}`` before expansion: ``Substituted(term, symbol, value, ...)``.
    :func:`substitute` replaces it, once the term is expanded, by that expansion with the symbols
    replaced; until then a derivation prints it as the term evaluated at the values."""

    @classmethod
    def eval(cls, *args):
        return None

    def pairs(self):
        a = self.args[1:]
        return dict(zip(a[0::2], a[1::2]))

    def _latex(self, printer):
        at = ",\\ ".join(f"{printer._print(k)} = {printer._print(v)}" for k, v in self.pairs().items())
        return f"\\left. {printer._print(self.args[0])} \\right|_{{{at}}}"


def substitute(expr: sympy.Expr) -> sympy.Expr:
    """``expr`` with every :class:`Substituted` replaced by its term's value at the bound symbols
    (the term already expanded in it), innermost first."""
    if not expr.has(Substituted):
        return expr
    return expr.replace(lambda e: isinstance(e, Substituted),
                        lambda e: substitute(e.args[0]).xreplace(
                            {k: substitute(v) for k, v in e.pairs().items()}))


def to_sympy(expr: A.Expr, resolve: Callable[[str], sympy.Expr], options: Mapping[str, str],
             shapes: Optional[Mapping[str, "A.ShapeDef"]] = None) -> sympy.Expr:
    """``expr`` as sympy; ``resolve`` gives each name's sympy value, ``options`` choose the ``match``
    cases, ``shapes`` are the declared shapes that ``with`` names."""
    return SymPyBuilder(resolve, options, shapes).visit(expr)


class SymPyBuilder(A.Visitor):
    _CALLS = {"min": sympy.Min, "max": sympy.Max, "ceil": sympy.ceiling, "floor": sympy.floor}
    _BINARY = {"+": lambda l, r: l + r, "-": lambda l, r: l - r, "*": lambda l, r: l * r,
               "/": lambda l, r: l / r, "^": lambda l, r: l ** r}

    def __init__(self, resolve, options, shapes=None):
        self.resolve, self.options, self.shapes = resolve, options, shapes or {}

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

    def visit_With(self, e):
        args = [self.visit(e.target)]
        for b in (self.shapes[e.shape].bindings if e.shape is not None else e.bindings):
            args += [self.resolve(b.name), self.visit(b.expr)]
        return Substituted(*args)

    def generic_visit(self, node):
        raise AssertionError(f"unhandled node {node!r}")
