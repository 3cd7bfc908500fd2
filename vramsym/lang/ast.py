"""Stage 1 output: the typed, immutable syntax tree of a .vram file.

Every node carries a :class:`Span` so that later stages can point at the exact
text a user wrote. Nothing here knows about units or sympy.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Optional, Tuple, Union


@dataclass(frozen=True)
class Span:
    file: str
    line: int
    column: int
    end_line: int
    end_column: int


NOSPAN = Span("<builtin>", 0, 0, 0, 0)


# ---- units ----
@dataclass(frozen=True)
class UnitName:
    name: str
    span: Span


@dataclass(frozen=True)
class UnitOne:
    span: Span


@dataclass(frozen=True)
class UnitBin:
    op: str  # "*" or "/"
    left: "Unit"
    right: "Unit"
    span: Span


@dataclass(frozen=True)
class UnitPow:
    base: "Unit"
    exponent: int
    span: Span


Unit = Union[UnitName, UnitOne, UnitBin, UnitPow]


# ---- expressions ----
@dataclass(frozen=True)
class Num:
    value: Fraction
    text: str
    span: Span


@dataclass(frozen=True)
class Name:
    name: str
    span: Span


@dataclass(frozen=True)
class UnitLiteral:
    unit: Unit
    span: Span


@dataclass(frozen=True)
class BinOp:
    op: str  # + - * / ^
    left: "Expr"
    right: "Expr"
    span: Span


@dataclass(frozen=True)
class Neg:
    operand: "Expr"
    span: Span


@dataclass(frozen=True)
class Compare:
    op: str
    left: "Expr"
    right: "Expr"
    span: Span


@dataclass(frozen=True)
class Call:
    func: str
    args: Tuple["Expr", ...]
    span: Span


@dataclass(frozen=True)
class Case:
    labels: Tuple[str, ...]
    expr: "Expr"
    span: Span


@dataclass(frozen=True)
class Match:
    option: str
    cases: Tuple[Case, ...]
    span: Span


@dataclass(frozen=True)
class Binding:
    name: str           # a symbol
    expr: "Expr"        # its value in the substituted term
    span: Span


@dataclass(frozen=True)
class With:
    """``term with {symbol = expr, ...}`` (or ``term with SHAPE``, a declared set of them): the
    term's full expansion with the symbols replaced."""
    target: Name
    bindings: Tuple[Binding, ...]
    span: Span
    shape: Optional[str] = None


Expr = Union[Num, Name, UnitLiteral, BinOp, Neg, Compare, Call, Match, With]


def children(node) -> tuple:
    """The sub-expressions of an expression node, in order."""
    get = _CHILDREN.get(type(node))
    return get(node) if get else ()


_CHILDREN = {
    BinOp: lambda e: (e.left, e.right),
    Compare: lambda e: (e.left, e.right),
    Neg: lambda e: (e.operand,),
    Call: lambda e: tuple(e.args),
    Match: lambda e: tuple(c.expr for c in e.cases),
    With: lambda e: (e.target,) + tuple(b.expr for b in e.bindings),
}


class Visitor:
    """Walks an expression tree as lark's visitors do: ``visit(node)`` calls
    ``visit_<NodeClass>(node)``; a node class without its method gets ``generic_visit``,
    which visits the children and returns None. Every pass over expressions (building
    sympy, checking names and units, collecting names or options) is one of these."""

    def visit(self, node):
        method = getattr(self, "visit_" + type(node).__name__, None)
        return method(node) if method is not None else self.generic_visit(node)

    def generic_visit(self, node):
        for c in children(node):
            self.visit(c)
        return None


# ---- statements ----
@dataclass(frozen=True)
class ShapeDef:
    """``shape NAME "description" { symbol = expr, ... }``: symbol values for ``TERM with NAME``."""
    name: str
    description: str
    bindings: Tuple[Binding, ...]
    span: Span
    sources: Tuple[str, ...] = ()


@dataclass(frozen=True)
class Include:
    path: str
    span: Span


@dataclass(frozen=True)
class SymbolDecl:
    name: str
    unit: Unit
    description: str
    span: Span
    latex: Optional[str] = None
    domain: str = "posint"
    default: Optional[Expr] = None
    config_keys: Tuple[str, ...] = ()
    alias: Optional[str] = None
    sources: Tuple[str, ...] = ()
    max: Optional[Expr] = None          # an upper bound, from other symbols
    min: Optional[Expr] = None          # a lower bound
    divides: Tuple[str, ...] = ()       # symbols this one must divide
    multiple: Optional[Expr] = None     # the value must be a whole multiple of this
    low: Optional[Expr] = None          # run-time range around the default (constants)
    high: Optional[Expr] = None


@dataclass(frozen=True)
class OptionDecl:
    name: str
    choices: Tuple[str, ...]
    default: str
    description: str
    span: Span
    sources: Tuple[str, ...] = ()
    config_keys: Tuple[str, ...] = ()


@dataclass(frozen=True)
class TermDef:
    name: str
    expr: Expr
    unit: Unit
    description: str
    span: Span
    sources: Tuple[str, ...] = ()
    latex: Optional[str] = None
    host: bool = False                  # host (CPU) memory: a component outside the GPU total
    share: bool = False                 # a fraction of the regime's other GPU components


@dataclass(frozen=True)
class Let:
    name: str
    expr: Expr
    span: Span


@dataclass(frozen=True)
class Phase:
    """A phase of a regime's timeline: the terms alive in it besides the regime's components
    that no phase names (alive in every phase)."""
    name: str
    description: str
    terms: Tuple[Tuple[str, Span], ...]
    span: Span


@dataclass(frozen=True)
class RegimeDef:
    name: str
    extends: Optional[str]
    description: str
    span: Span
    add: Tuple[Tuple[str, Span], ...] = ()
    drop: Tuple[Tuple[str, Span], ...] = ()
    lets: Tuple[Let, ...] = ()
    options: Tuple[Tuple[str, str, Span], ...] = ()
    sources: Tuple[str, ...] = ()
    labels: Tuple[str, ...] = ()
    phases: Tuple[Phase, ...] = ()      # declared or redefined here, in order


@dataclass(frozen=True)
class PresetDef:
    """An option whose every choice stands for choices of other options: ``cases`` are
    (choices, the (option, choice, span) it sets, span), and the choices are the option's."""
    option: str
    cases: Tuple[Tuple[Tuple[str, ...], Tuple[Tuple[str, str, Span], ...], Span], ...]
    span: Span
    default: str = ""
    description: str = ""
    sources: Tuple[str, ...] = ()

    def as_option(self) -> "OptionDecl":
        choices = tuple(label for labels, _, _ in self.cases for label in labels)
        return OptionDecl(self.option, choices, self.default, self.description, self.span, self.sources)


@dataclass(frozen=True)
class FitDef:
    """A row of ``vramsym fit``: a regime and the options it sets."""
    regime: str
    options: Tuple[Tuple[str, str, Span], ...]
    span: Span


Statement = Union[Include, SymbolDecl, OptionDecl, TermDef, RegimeDef, PresetDef, FitDef]


@dataclass(frozen=True)
class Module:
    """One parsed file."""
    path: str
    statements: Tuple[Statement, ...] = field(default_factory=tuple)
