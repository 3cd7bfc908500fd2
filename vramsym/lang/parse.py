"""Stage 1: .vram text -> :mod:`vramsym.lang.ast` nodes.

The grammar lives in ``grammar.lark``; the transformer below has one method
per rule alias. Syntax errors come back as :class:`Diagnostic` values.
"""
from __future__ import annotations

import functools
import sys
from fractions import Fraction
from pathlib import Path
from typing import List, Tuple

from lark import Lark, Token, Transformer, Tree, v_args
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken, VisitError

from ..numbers import NumberError, to_fraction
from . import ast as A
from .diagnostics import MSG_BAD_UNIT_ONE, MSG_SYNTAX, Diagnostic

GRAMMAR = Path(__file__).with_name("grammar.lark")

# Friendly names for terminals in "expected ..." messages.
_TERMINAL_NAMES = {
    "NAME": "a name", "DIGIT_NAME": "a choice", "NUMBER": "a number", "STRING": "a quoted string", "INT": "an integer",
    "SIGNED_INT": "an integer", "LPAR": "'('", "RPAR": "')'", "LBRACE": "'{'", "RBRACE": "'}'",
    "LSQB": "'['", "RSQB": "']'", "COLON": "':'", "EQUAL": "'='", "COMMA": "','",
    "PLUS": "'+'", "MINUS": "'-'", "STAR": "'*'", "SLASH": "'/'", "CIRCUMFLEX": "'^'",
    "VBAR": "'|'", "COMPARE": "a comparison", "$END": "end of file",
}


@functools.lru_cache(maxsize=1)
def _parser() -> Lark:
    return Lark(GRAMMAR.read_text(), parser="lalr", propagate_positions=True,
                maybe_placeholders=False)


class _Builder(Transformer):
    def __init__(self, file: str):
        super().__init__()
        self.file = file

    def _span(self, meta) -> A.Span:
        if getattr(meta, "empty", True):
            return A.Span(self.file, 0, 0, 0, 0)
        return A.Span(self.file, meta.line, meta.column, meta.end_line, meta.end_column)

    def _tspan(self, tok: Token) -> A.Span:
        return A.Span(self.file, tok.line, tok.column, tok.end_line, tok.end_column)

    def _str(self, tok: Token) -> str:
        """A string literal's text: only \\" and \\\\ are escapes (LaTeX names keep their backslashes).
        Control characters are refused: every string ends up on a terminal or in generated code."""
        text = str(tok)[1:-1].replace('\\"', '"').replace("\\\\", "\\")
        bad = next((ch for ch in text if ord(ch) < 32 or 0x7f <= ord(ch) < 0xa0 or ch in "\u2028\u2029"), None)
        if bad is not None:
            raise _LimitError(self._tspan(tok), f"a string may not contain the control character {bad!r}")
        if len(text) > MAX_STRING:
            raise _LimitError(self._tspan(tok), f"a string may be at most {MAX_STRING:,} characters long, "
                                                f"this one has {len(text):,}")
        return text

    # ---- statements ----
    def start(self, items):
        return tuple(items)

    @v_args(meta=True)
    def include(self, meta, items):
        return A.Include(self._str(items[0]), self._span(meta))

    @v_args(meta=True)
    def symbol_decl(self, meta, items):
        name, unit, desc, *attrs = items
        kw = {"sources": ()}
        for key, value in attrs:
            if key == "sources":
                kw["sources"] = kw["sources"] + (value,)
            elif key == "divides":
                kw["divides"] = kw.get("divides", ()) + (value,)
            else:
                kw[key] = value
        return A.SymbolDecl(str(name), unit, self._str(desc), self._span(meta), **kw)

    def attr_latex(self, items):
        return ("latex", self._str(items[0]))

    def attr_domain(self, items):
        return ("domain", str(items[0]))

    def attr_default(self, items):
        return ("default", items[0])

    def attr_from(self, items):
        return ("config_keys", tuple(str(t) for t in items))

    def attr_max(self, items):
        return ("max", items[0])

    def attr_min(self, items):
        return ("min", items[0])

    def attr_multiple(self, items):
        return ("multiple", items[0])

    def attr_divides(self, items):
        return ("divides", str(items[0]))

    def attr_host(self, items):
        return ("host", True)

    def attr_share(self, items):
        return ("share", True)

    def attr_low(self, items):
        return ("low", items[0])

    def attr_high(self, items):
        return ("high", items[0])

    def attr_alias(self, items):
        return ("alias", str(items[0]))

    def attr_source(self, items):
        return ("sources", self._str(items[0]))

    @v_args(meta=True)
    def option_decl(self, meta, items):
        name = str(items[0])
        attrs = [i for i in items if isinstance(i, tuple)]
        names = [str(i) for i in items[1:] if isinstance(i, Token) and i.type in ("NAME", "DIGIT_NAME")]
        desc = next(i for i in items if isinstance(i, Token) and i.type == "STRING")
        choices, default = tuple(names[:-1]), names[-1]
        keys = tuple(k for key, v in attrs if key == "config_keys" for k in v)
        return A.OptionDecl(name, choices, default, self._str(desc), self._span(meta),
                            tuple(v for key, v in attrs if key == "sources"), keys)

    @v_args(meta=True)
    def term_def(self, meta, items):
        name, expr, unit, desc, *attrs = items
        sources = tuple(v for k, v in attrs if k == "sources")
        latex = next((v for k, v in attrs if k == "latex"), None)
        host = any(k == "host" for k, _ in attrs)
        share = any(k == "share" for k, _ in attrs)
        return A.TermDef(str(name), expr, unit, self._str(desc), self._span(meta), sources, latex, host=host, share=share)

    @v_args(meta=True)
    def regime_def(self, meta, items):
        name = str(items[0])
        rest = list(items[1:])
        extends = None
        if rest and isinstance(rest[0], Token) and rest[0].type == "NAME":
            extends = str(rest.pop(0))
        desc = self._str(rest.pop(0))
        add, drop, lets, opts, sources, labels, phases = [], [], [], [], [], [], []
        for kind, value in rest:
            {"add": add, "drop": drop, "let": lets, "set": opts, "source": sources, "label": labels,
             "phase": phases}[kind].extend(value)
        return A.RegimeDef(name, extends, desc, self._span(meta), tuple(add), tuple(drop),
                           tuple(lets), tuple(opts), tuple(sources), tuple(labels), tuple(phases))

    @v_args(meta=True)
    def phase_def(self, meta, items):
        name, desc, *terms = items
        return ("phase", [A.Phase(str(name), self._str(desc), tuple((str(t), self._tspan(t)) for t in terms),
                                  self._span(meta))])

    def regime_label(self, items):
        return ("label", [str(items[0])])

    @v_args(meta=True)
    def preset_def(self, meta, items):
        name, default, desc, *rest = items
        cases = tuple(i for i in rest if not (isinstance(i, tuple) and len(i) == 2 and isinstance(i[0], str)))
        sources = tuple(v for i in rest if isinstance(i, tuple) and len(i) == 2 and i[0] == "sources" for v in [i[1]])
        return A.PresetDef(str(name), cases, self._span(meta), str(default), self._str(desc), sources)

    @v_args(meta=True)
    def preset_case(self, meta, items):
        labels = tuple(str(i) for i in items if isinstance(i, Token))
        return (labels, tuple(i for i in items if not isinstance(i, Token)), self._span(meta))

    def assign(self, items):
        return (str(items[0]), str(items[1]), self._tspan(items[1]))

    @v_args(meta=True)
    def fit_def(self, meta, items):
        return A.FitDef(str(items[0]), tuple(items[1:]), self._span(meta))

    def add_components(self, items):
        return ("add", [(str(t), self._tspan(t)) for t in items])

    def drop_components(self, items):
        return ("drop", [(str(t), self._tspan(t)) for t in items])

    @v_args(meta=True)
    def let_override(self, meta, items):
        return ("let", [A.Let(str(items[0]), items[1], self._span(meta))])

    def set_option(self, items):
        return ("set", [(str(items[0]), str(items[1]), self._tspan(items[1]))])

    def regime_source(self, items):
        return ("source", [self._str(items[0])])

    # ---- expressions ----
    @v_args(meta=True)
    def number(self, meta, items):
        text = str(items[0])
        try:
            value = to_fraction(text)
        except NumberError as e:
            raise _LimitError(self._span(meta), f"the number {text[:40]}{'...' if len(text) > 40 else ''} is {e}") from None
        return A.Num(value, text, self._span(meta))

    @v_args(meta=True)
    def name(self, meta, items):
        return A.Name(str(items[0]), self._span(meta))

    def _bin(op):
        @v_args(meta=True)
        def method(self, meta, items):
            return A.BinOp(op, items[0], items[-1], self._span(meta))
        return method

    add = _bin("+")
    sub = _bin("-")
    mul = _bin("*")
    div = _bin("/")
    pow = _bin("^")
    del _bin

    @v_args(meta=True)
    def neg(self, meta, items):
        return A.Neg(items[0], self._span(meta))

    @v_args(meta=True)
    def compare(self, meta, items):
        return A.Compare(str(items[1]), items[0], items[2], self._span(meta))

    @v_args(meta=True)
    def call(self, meta, items):
        return A.Call(str(items[0]), tuple(items[1:]), self._span(meta))

    @v_args(meta=True)
    def unit_literal(self, meta, items):
        return A.UnitLiteral(items[0], self._span(meta))

    @v_args(meta=True)
    def match(self, meta, items):
        return A.Match(str(items[0]), tuple(items[1:]), self._span(meta))

    @v_args(meta=True)
    def with_expr(self, meta, items):
        return A.With(A.Name(str(items[0]), self._tspan(items[0])), tuple(items[1:]), self._span(meta))

    @v_args(meta=True)
    def with_shape(self, meta, items):
        return A.With(A.Name(str(items[0]), self._tspan(items[0])), (), self._span(meta), shape=str(items[1]))

    @v_args(meta=True)
    def shape_def(self, meta, items):
        name, desc, *rest = items
        bindings = tuple(i for i in rest if isinstance(i, A.Binding))
        sources = tuple(v for i in rest if isinstance(i, tuple) and i[0] == "sources" for v in [i[1]])
        return A.ShapeDef(str(name), self._str(desc), bindings, self._span(meta), sources)

    @v_args(meta=True)
    def binding(self, meta, items):
        return A.Binding(str(items[0]), items[1], self._span(meta))

    @v_args(meta=True)
    def case(self, meta, items):
        return A.Case(tuple(str(t) for t in items[:-1]), items[-1], self._span(meta))

    # ---- units ----
    @v_args(meta=True)
    def unit_name(self, meta, items):
        return A.UnitName(str(items[0]), self._span(meta))

    @v_args(meta=True)
    def unit_one(self, meta, items):
        if str(items[0]) != "1":
            raise _UnitOneError(self._tspan(items[0]), str(items[0]))
        return A.UnitOne(self._span(meta))

    @v_args(meta=True)
    def unit_mul(self, meta, items):
        return A.UnitBin("*", items[0], items[1], self._span(meta))

    @v_args(meta=True)
    def unit_div(self, meta, items):
        return A.UnitBin("/", items[0], items[1], self._span(meta))

    @v_args(meta=True)
    def unit_pow(self, meta, items):
        return A.UnitPow(items[0], int(str(items[-1])), self._span(meta))


class _UnitOneError(Exception):
    def __init__(self, span, text):
        self.span, self.text = span, text


def _expected(exc: UnexpectedInput) -> str:
    exp = sorted(getattr(exc, "expected", None) or getattr(exc, "allowed", None) or [])
    names = []
    for e in exp:
        n = _TERMINAL_NAMES.get(e)
        if n is None:
            n = f"'{e.lower()}'" if e.isupper() and e.isalpha() else e
        if n not in names:
            names.append(n)
    if not names:
        return ""
    if len(names) > 8:
        names = names[:8] + ["..."]
    return "expected " + ", ".join(names)


MAX_DEPTH = 2000          # nesting of one expression (a sum of 2,000 terms is that deep)
MAX_STRING = 10_000       # characters of one string


class _LimitError(Exception):
    def __init__(self, span, message):
        super().__init__(message)
        self.span, self.message = span, message


def _too_deep(tree):
    """(line, column) inside an expression nested deeper than MAX_DEPTH, else None (no recursion)."""
    stack = [(tree, 0)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            meta = getattr(node, "meta", None)
            return (getattr(meta, "line", 1) or 1, getattr(meta, "column", 1) or 1)
        for c in node.children:
            if isinstance(c, Tree):
                stack.append((c, depth + 1))
    return None


class deep_recursion:
    """Room for the recursive passes over an expression of MAX_DEPTH levels."""

    def __enter__(self):
        self.old = sys.getrecursionlimit()
        sys.setrecursionlimit(max(self.old, 8 * MAX_DEPTH + 2000))

    def __exit__(self, *exc):
        sys.setrecursionlimit(self.old)


def parse_text(text: str, file: str = "<string>") -> Tuple[A.Module, List[Diagnostic]]:
    """Parse one file's text. Returns ``(module, diagnostics)``; never raises for bad text."""
    try:
        tree = _parser().parse(text)
    except UnexpectedCharacters as e:
        span = A.Span(file, e.line, e.column, e.line, e.column + 1)
        ch = text[e.pos_in_stream] if 0 <= e.pos_in_stream < len(text) else "?"
        return A.Module(file), [Diagnostic(span, "syntax", MSG_SYNTAX.format(detail=f"unexpected character {ch!r}"))]
    except UnexpectedToken as e:
        tok = e.token
        if tok.type == "$END":
            line = max(1, text.count("\n") + (0 if text.endswith("\n") else 1))
            last = text.splitlines()[-1] if text.splitlines() else ""
            span = A.Span(file, line, len(last) + 1, line, len(last) + 2)
            detail = "unexpected end of file"
        else:
            span = A.Span(file, tok.line, tok.column, tok.end_line or tok.line,
                          tok.end_column or tok.column + 1)
            detail = f"unexpected {str(tok)!r}"
        exp = _expected(e)
        return A.Module(file), [Diagnostic(span, "syntax", MSG_SYNTAX.format(detail=detail + (f"; {exp}" if exp else "")))]
    except UnexpectedEOF:  # pragma: no cover - LALR reports UnexpectedToken($END)
        line = text.count("\n") + 1
        return A.Module(file), [Diagnostic(A.Span(file, line, 1, line, 2), "syntax",
                                           MSG_SYNTAX.format(detail="unexpected end of file"))]
    except UnexpectedInput as e:  # pragma: no cover
        return A.Module(file), [Diagnostic(A.Span(file, getattr(e, "line", 1), getattr(e, "column", 1), 0, 0),
                                           "syntax", MSG_SYNTAX.format(detail=str(e).splitlines()[0]))]
    deep = _too_deep(tree)
    if deep is not None:
        return A.Module(file), [Diagnostic(A.Span(file, deep[0], deep[1], deep[0], deep[1] + 1), "syntax",
                                           f"an expression may nest at most {MAX_DEPTH:,} levels deep "
                                           f"(here: more): split it into terms")]
    try:
        with deep_recursion():
            statements = _Builder(file).transform(tree)
    except VisitError as e:
        orig = e.orig_exc
        if isinstance(orig, _LimitError):
            return A.Module(file), [Diagnostic(orig.span, "syntax", orig.message)]
        if isinstance(orig, _UnitOneError):
            return A.Module(file), [Diagnostic(orig.span, "syntax", MSG_BAD_UNIT_ONE.format(text=orig.text))]
        if isinstance(orig, (ValueError, OverflowError, ZeroDivisionError)):
            return A.Module(file), [Diagnostic(A.Span(file, 1, 1, 1, 2), "syntax",
                                               MSG_SYNTAX.format(detail=str(orig)))]
        raise
    return A.Module(file, tuple(statements)), []
