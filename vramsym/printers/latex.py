"""LaTeX for derivations: a sympy ``LatexPrinter`` that knows the library's names, the
derivation as neutral blocks (shared with the Markdown printer), and their LaTeX rendering.

Math always goes through :class:`VramLatexPrinter` (sympy's printer, configured with
``symbol_names``: every declared symbol prints with its ``latex`` attribute, every term
placeholder with the term's ``latex`` or ``\\mathrm{name}``). Text is escaped per format.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from fractions import Fraction
from typing import Dict, List, Optional, Sequence, Tuple, Union

import sympy
from sympy import fraction
from sympy.core.sorting import default_sort_key
from sympy.printing.latex import LatexPrinter

from ..lang.build import make_symbol, placeholder
from ..catalog.capacity import fmt_bytes, to_int_bytes
from ..engine.results import Solution
from ..engine.steps import derivation_steps

# ---------------------------------------------------------------------------
# names and the printer

_TEXT_ESCAPES = {
    "\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
    "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
    "<": r"\textless{}", ">": r"\textgreater{}", "|": r"\textbar{}",
}


#: characters beyond Latin-1 and Latin Extended-A that pdflatex's utf8 input (with T1 fonts) typesets
_TYPESET = set("\u2013\u2014\u2018\u2019\u201c\u201d\u2022\u2026")


def _char(ch: str) -> str:
    if ch in _TEXT_ESCAPES:
        return _TEXT_ESCAPES[ch]
    if ord(ch) <= 0x17F or ch in _TYPESET:
        return ch
    return f"[U+{ord(ch):04X}]"      # a character pdflatex cannot typeset (a check mark, CJK, an emoji): named


def tex_text(s: str) -> str:
    """Escape plain text for LaTeX text mode; a character pdflatex cannot typeset is written as its
    code point ([U+2713]), so that any text compiles."""
    return "".join(_char(ch) for ch in str(s))


def mathrm(name: str) -> str:
    """``\\mathrm{kv\\_cache}``: an identifier upright in math mode."""
    return r"\mathrm{" + name.replace("\\", "").replace("_", r"\_") + "}"


# A string read with Python escapes turns "\\beta" into a backspace and "eta", "\\nu" into a
# newline and "u": no control character is valid LaTeX, so put the backslash back.
_CONTROL = {"\a": r"\a", "\b": r"\b", "\f": r"\f", "\n": r"\n", "\r": r"\r", "\t": r"\t", "\v": r"\v"}


def declared_latex(tex: str) -> str:
    """A declared ``latex`` attribute, with escape-mangled backslashes restored."""
    return "".join(_CONTROL.get(ch, ch) for ch in tex)


def name_latex(lib, name: str) -> str:
    """LaTeX of a symbol or term name: its declared ``latex``, else ``\\mathrm{name}``."""
    if name in lib.symbols and lib.symbols[name].latex:
        return declared_latex(lib.symbols[name].latex)
    t = lib.terms.get(name)
    if t is not None and t.latex:
        return declared_latex(t.latex)
    return mathrm(name)


def symbol_names(lib) -> Dict[sympy.Symbol, str]:
    """The ``symbol_names`` setting for :class:`LatexPrinter`, built from the library."""
    names: Dict[sympy.Symbol, str] = {}
    for n in lib.terms:
        names[placeholder(n)] = name_latex(lib, n)
    for n, d in lib.symbols.items():
        names[make_symbol(d)] = name_latex(lib, n)
        names.setdefault(placeholder(n), name_latex(lib, n))   # a `let` on a symbol
    return names


class VramLatexPrinter(LatexPrinter):
    """sympy's LaTeX printer with the library's names; products written with a thin space.

    It remembers the text of every expression it printed: the line breaker (:func:`_pieces`)
    prints each wide subexpression on its own, and this keeps that linear in the size."""

    def __init__(self, lib, settings: Optional[dict] = None):
        s = {"symbol_names": symbol_names(lib), "mul_symbol": None}
        s.update(settings or {})
        super().__init__(s)
        self.lib = lib
        self._texts: Dict[sympy.Basic, str] = {}

    def _print(self, expr, **kwargs) -> str:
        if kwargs or not isinstance(expr, sympy.Basic):
            return super()._print(expr, **kwargs)
        tex = self._texts.get(expr)
        if tex is None:
            tex = self._texts[expr] = super()._print(expr)
        return tex

    def _print_Symbol(self, expr, style="plain"):
        names = self._settings["symbol_names"]
        if expr in names:
            return names[expr]
        if expr.name in self.lib.symbols or expr.name in self.lib.terms:
            return name_latex(self.lib, expr.name)
        return super()._print_Symbol(expr, style=style)


def to_latex(expr, lib) -> str:
    return VramLatexPrinter(lib).doprint(expr)


def split_add(expr, lib, per_line: int = 3) -> List[str]:
    """An expression cut into lines at its top-level ``+``: ``['a + b', '+ c']``."""
    p = VramLatexPrinter(lib)
    if not isinstance(expr, sympy.Add):
        return [p.doprint(expr)]
    terms = p._as_ordered_terms(expr)
    pieces: List[str] = []
    for i, t in enumerate(terms):
        s = p._print(t)
        if i == 0:
            pieces.append(s)
        elif s.startswith("-"):
            pieces.append("- " + s[1:].lstrip())
        else:
            pieces.append("+ " + s)
    lines = [" ".join(pieces[i:i + per_line]) for i in range(0, len(pieces), per_line)]
    return lines


# ---------------------------------------------------------------------------
# widths and line breaks: displays and tables that fit the page

# The page the LaTeX is laid out for: article's text block at 10 pt, 345 pt = 34.5 em. Widths
# below are estimates in em of Computer Modern (1 em = 10 pt), close enough to keep a margin.
PAGE_EM = 34.5

_TOKEN = re.compile(r"\\[A-Za-z]+|\\.|\s+|\S")
_SIZE = {"D": 1.0, "T": 1.0, "S": 0.78, "SS": 0.6}         # display, text, script, scriptscript
_SCRIPT = {"D": "S", "T": "S", "S": "SS", "SS": "SS"}
_FRAC = {"D": "T", "T": "S", "S": "SS", "SS": "SS"}
_BIN = {"+", "-", "*", r"\cdot", r"\times", r"\pm", r"\mp"}
_REL = {"=", "<", ">", r"\le", r"\ge", r"\leq", r"\geq", r"\approx", r"\to", r"\ne", r"\neq", r"\mapsto",
        r"\equiv", r"\sim", r"\in"}
_SPACES = {r"\ ": 0.33, r"\,": 0.17, r"\:": 0.22, r"\;": 0.28, r"\!": -0.17, r"\quad": 1.0, r"\qquad": 2.0, "~": 0.33}
_TEXTS = {r"\mathrm", r"\text", r"\textrm", r"\operatorname", r"\mathtt", r"\mathsf", r"\texttt", r"\mathit",
          r"\textbf", r"\mathbf"}
_OPERATORS = {r"\max", r"\min", r"\log", r"\ln", r"\exp", r"\sin", r"\cos", r"\sup", r"\inf", r"\lim", r"\gcd"}
_ARGS = {r"\hat", r"\tilde", r"\bar", r"\vec", r"\dot", r"\ddot", r"\widehat", r"\widetilde", r"\overline",
         r"\mathcal", r"\mathbb", r"\boldsymbol"}
_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
_ITALIC = dict(zip(_LETTERS, (                                                          # cmmi10
    .53, .43, .43, .52, .47, .49, .48, .58, .35, .41, .52, .30, .88, .60, .49, .50, .45, .45, .47, .36, .57, .49,
    .72, .57, .49, .47, .75, .76, .72, .83, .74, .64, .79, .83, .44, .56, .85, .68, .97, .80, .76, .64, .79, .76,
    .61, .58, .68, .58, .94, .83, .58, .68)))
_ROMAN = {**dict(zip(_LETTERS, (                                                        # cmr10
    .50, .56, .44, .56, .44, .31, .50, .56, .28, .31, .53, .28, .83, .56, .50, .56, .53, .39, .39, .39, .56, .53,
    .72, .53, .53, .44) + (.75,) * 26)), r"\_": .75, " ": .33, ",": .28, ".": .28, ";": .28, ":": .28}
_DELIMS = {"(": 0.39, ")": 0.39, "[": 0.28, "]": 0.28, r"\{": 0.5, r"\}": 0.5, "|": 0.28, ".": 0.12,
           r"\lceil": 0.45, r"\rceil": 0.45, r"\lfloor": 0.45, r"\rfloor": 0.45}


class _Width:
    """The estimated width of math, by a walk over its tokens: Computer Modern's glyph widths,
    spacing by TeX's math classes, fractions by their wider part, scripts smaller, ``\\left`` /
    ``\\right`` wider around a display fraction or an environment, ``cases`` by its widest columns."""

    def __init__(self, tex: str, cap: float):
        self.toks = _TOKEN.findall(tex)
        self.i = 0
        self.tall = False
        self.cap = cap

    def peek(self, text: bool = False) -> Optional[str]:
        while not text and self.i < len(self.toks) and self.toks[self.i].isspace():
            self.i += 1
        return self.toks[self.i] if self.i < len(self.toks) else None

    def run(self, style: str, text: bool = False, stops: Tuple[str, ...] = ()) -> float:
        w = 0.0
        while self.peek(text) is not None and self.peek(text) not in stops:
            w += self.one(style, text)
            if w > self.cap:            # a part is never wider than the whole: no need to read on
                raise _Wider
        return w

    def arg(self, style: str, text: bool = False) -> float:
        """A command's argument: a braced group or one token."""
        if self.peek() != "{":
            return self.one(style, text) if self.peek() is not None else 0.0
        self.i += 1
        w = self.run(style, text, ("}",))
        self.i += 1
        return w

    def delimiter(self, style: str) -> float:
        """The delimiter after ``\\left`` or ``\\right``: wider when what it encloses is tall."""
        d = self.peek()
        self.i += 1
        return _SIZE[style] * (0.12 if d == "." else 0.75 if self.tall else _DELIMS.get(d, 0.45))

    def one(self, style: str, text: bool) -> float:
        s, spaced = _SIZE[style], style in ("D", "T")
        tok = self.toks[self.i]
        self.i += 1
        if tok == "{":
            w = self.run(style, text, ("}",))
            self.i += 1
            return w
        if tok in ("_", "^"):
            w = self.arg(_SCRIPT[style], text)
            if self.peek() in ("_", "^"):
                self.i += 1
                w = max(w, self.arg(_SCRIPT[style], text))
            return w + 0.08
        if text:
            return s * _ROMAN.get(tok, 0.5)
        if tok in _TEXTS:
            return self.arg(style, True) + (0.17 if tok == r"\operatorname" else 0.0)
        if tok in _OPERATORS:
            return s * sum(_ROMAN[ch] for ch in tok[1:]) + (0.17 if spaced else 0.0)
        if tok in (r"\frac", r"\dfrac", r"\tfrac"):
            self.tall = self.tall or style == "D"
            return max(self.arg(_FRAC[style]), self.arg(_FRAC[style])) + 0.24 * s
        if tok == r"\sqrt":
            if self.peek() == "[":
                while self.peek() not in ("]", None):
                    self.i += 1
                self.i += 1
            return self.arg(style) + 0.85 * s
        if tok == r"\left":                           # the content first: the delimiters follow its height
            outer, self.tall = self.tall, False
            left = self.i
            self.i += 1
            w = self.run(style, text, (r"\right",))
            if self.peek() is not None:
                self.i += 1
                w += self.delimiter(style)
            end, self.i = self.i, left
            w += self.delimiter(style)
            self.i, self.tall = end, outer or self.tall
            return w
        if tok == r"\right":
            return self.delimiter(style)
        if tok == r"\begin":
            self.arg(style, True)
            self.tall = True
            return self.environment()
        if tok in _ARGS:
            return self.arg(style) * (1.2 if tok in (r"\mathcal", r"\mathbb") else 1.0)
        if tok in _SPACES:
            return s * _SPACES[tok]
        if tok in _BIN:
            return s * 0.78 + (0.44 if spaced else 0.0)
        if tok in _REL:
            return s * 0.78 + (0.56 if spaced else 0.0)
        if tok in (",", ";"):
            return s * 0.28 + (0.17 if spaced else 0.0)
        if tok in _DELIMS:
            return s * _DELIMS[tok]
        if tok.startswith("\\") and len(tok) > 2:      # \alpha, \Gamma, \infty, ...
            return s * (0.75 if tok[1].isupper() else 1.0 if tok == r"\infty" else 0.57)
        return s * _ITALIC.get(tok, 0.5)

    def environment(self) -> float:
        """``cases`` and its kind: the widest cell of each column, a quad between columns, a brace."""
        rows: List[List[float]] = [[]]
        while self.peek() is not None:
            tok = self.peek()
            if tok == r"\end":
                self.i += 1
                self.arg("T", True)
                break
            if tok in ("&", r"\\"):
                self.i += 1
                if tok == r"\\":
                    rows.append([])
                continue
            rows[-1].append(self.run("T", stops=("&", r"\\", r"\end")))
        cols = [max((r[k] for r in rows if len(r) > k), default=0.0) for k in range(max(map(len, rows)))]
        return sum(cols) + 1.0 * max(len(cols) - 1, 0) + 1.0


class _Wider(Exception):
    """Raised by :class:`_Width` once the width passes its cap."""


def tex_width(tex: str, style: str = "D", cap: float = math.inf) -> float:
    """The estimated width in em of math ``tex`` (display style unless ``style`` says ``T``), or
    infinity once it is known to be wider than ``cap``."""
    try:
        return _Width(tex, cap).run(style)
    except _Wider:
        return math.inf


@dataclass(frozen=True)
class _Piece:
    """A unit of a broken display: ``atom`` (never split), ``op`` (a sign a continued line may begin
    with), ``brk`` (a place to break; ``tex`` begins the next line, ``rank`` -1 between the phases
    of a regime, 0 between terms and arguments, 1 between factors), ``open`` / ``close`` (a
    ``\\left`` / ``\\right`` pair that may span lines: a line that ends inside it closes with
    ``\\right.``, the next opens ``\\left.``)."""
    tex: str
    width: float = 0.0
    kind: str = "atom"
    rank: int = 0


def _atom(tex: str) -> _Piece:
    return _Piece(tex, tex_width(tex))


_BRK = _Piece("", 0.0, "brk")
_PHASE = _Piece("", 0.0, "brk", -1)
_TIMES = _Piece(r"\times", 1.22, "brk", 1)
_OPEN = _Piece(r"\left(", 0.55, "open")
_CLOSE = _Piece(r"\right)", 0.55, "close")


def _op(sign: str) -> List[_Piece]:
    return [_BRK, _Piece(sign, 1.22, "op")]


def _sum_pieces(texs: List[str]) -> List[_Piece]:
    """``a + b + c`` as pieces, a break before every sign."""
    out: List[_Piece] = []
    for i, t in enumerate(texs):
        out += (_op("+") if i else []) + [_atom(t)]
    return out


def _pieces(expr, p: VramLatexPrinter, room: float) -> List[_Piece]:
    """``expr`` as pieces for lines of ``room`` em, none wider than 0.6 of it where the expression
    allows (so that several share a line): a wide sum splits at its signs, a wide product into
    its factors (a wide sum among them in parentheses that may span lines; a wide fraction as
    ``\\frac{c}{d}`` times the rest of its numerator), ``\\max`` and ``\\min`` at their commas, a
    ceiling or floor inside its brackets, a wide ``cases`` into lines of its own. The order of
    terms and factors and their text are those of sympy's printer."""
    tex = p._print(expr)
    w = tex_width(tex, cap=0.6 * room)
    if w <= 0.6 * room:
        return [_Piece(tex, w)]
    if isinstance(expr, sympy.Add):
        out: List[_Piece] = []
        for i, t in enumerate(p._as_ordered_terms(expr)):
            if i:
                sign = "-" if t.could_extract_minus_sign() else "+"
                out += _op(sign)
                t = -t if sign == "-" else t
            out += _grouped(t, p, room) if p._needs_add_brackets(t) else _pieces(t, p, room)
        return out
    if isinstance(expr, sympy.Mul):
        return _product(expr, p, room)
    if isinstance(expr, (sympy.Max, sympy.Min)):
        out = [_atom("\\" + str(expr.func).lower()), _OPEN]
        for i, a in enumerate(sorted(expr.args, key=default_sort_key)):
            out += ([_Piece(",", 0.45), _BRK] if i else []) + _pieces(a, p, room)
        return out + [_CLOSE]
    if isinstance(expr, (sympy.ceiling, sympy.floor)):
        left, right = (r"\lceil", r"\rceil") if isinstance(expr, sympy.ceiling) else (r"\lfloor", r"\rfloor")
        return ([_Piece(r"\left" + left, 0.6, "open")] + _pieces(expr.args[0], p, room)
                + [_Piece(r"\right" + right, 0.6, "close")])
    if (isinstance(expr, sympy.Pow) and isinstance(expr.base, sympy.Add) and expr.exp.is_Integer
            and expr.exp > 1):
        return [_OPEN] + _pieces(expr.base, p, room) + [_Piece(r"\right)^{%s}" % p._print(expr.exp), 1.0,
                                                               "close")]
    if isinstance(expr, sympy.Piecewise):
        return [_cases(expr, p, room)]
    return [_atom(tex)]


def _grouped(expr, p: VramLatexPrinter, room: float) -> List[_Piece]:
    """``expr`` in parentheses: one atom when narrow, else a pair that may span lines."""
    inner = _pieces(expr, p, room)
    if len(inner) == 1:
        return [_atom(r"\left(" + inner[0].tex + r"\right)")]
    return [_OPEN] + inner + [_CLOSE]


def _product(expr, p: VramLatexPrinter, room: float) -> List[_Piece]:
    """A wide product as sympy's ``_print_Mul`` writes it (a leading minus, the factors in order,
    ``\\cdot`` between two numbers), with ``\\frac{c}{d}`` in front when it has a denominator
    (``c`` its numerator's number); a break between two factors shows ``\\times``."""
    out: List[_Piece] = []
    if expr.could_extract_minus_sign():
        expr = -expr
        out.append(_Piece("-", 0.78, "op"))
    numer, denom = fraction(expr, exact=True)
    if denom is not sympy.S.One:
        coeff, expr = numer.as_coeff_Mul()
        out.append(_atom(r"\frac{%s}{%s}" % (p._print(coeff), p._print(denom))))
    factors = expr.as_ordered_factors() if isinstance(expr, sympy.Mul) else [] if expr is sympy.S.One else [expr]
    last = out[-1].tex if out else ""
    for i, f in enumerate(factors):
        if p._needs_mul_brackets(f, first=(i == 0 and not out), last=(i == len(factors) - 1)):
            pieces = _grouped(f, p, room)
        else:
            pieces = _pieces(f, p, room)
        if out and re.search(r"[0-9][} ]*$", last) and re.match(r"(\d|\\frac{\d+}{\d+})", pieces[0].tex):
            out.append(_Piece(r"\cdot", 0.72))
        elif out and out[-1].kind != "op":
            out.append(_TIMES)
        out += pieces
        last = pieces[-1].tex
    return out


def _condition(cond, p: VramLatexPrinter) -> str:
    """A case's condition as sympy's ``_print_Piecewise`` writes it."""
    return r"\text{otherwise}" if cond == sympy.true else r"\text{for}\: " + p._print(cond)


def _cases(expr, p: VramLatexPrinter, room: float) -> _Piece:
    """A wide ``cases`` as one atom at most ``room`` em wide, its values broken into lines of
    their own, each condition after the last line of its value."""
    rows = []
    width = 0.0
    for e, c in expr.args:
        cond = _condition(c, p)
        cw = tex_width(cond, "T")
        inner = max(room - cw - 6.0, room / 3)
        lines = _fill(_pieces(e, p, inner), inner, inner - 1.0)
        width = max(width, max(lw for _, lw in lines) + cw + 2.0)
        rows += [(r"\quad " if k else "") + ln + (" & " + cond if k == len(lines) - 1 else " &")
                 for k, (ln, _) in enumerate(lines)]
    return _Piece(r"\begin{cases} " + r" \\ ".join(rows) + r" \end{cases}", width)


def _line(pieces: List[_Piece], depth: int) -> Tuple[str, float, int]:
    """One line of pieces that begins inside ``depth`` open parentheses: its text, its width and
    the depth at its end. A break shows only where it begins the line (``\\times``); a sign that
    begins the line is kept binary with ``{}``; parentheses open at either end are closed with
    ``\\right.`` and reopened with ``\\left.``."""
    texts = [r"\left."] * depth
    width = 0.12 * depth
    for k, pc in enumerate(pieces):
        if pc.kind == "brk":
            if k == 0 and pc.tex:
                texts.append("{}" + pc.tex)
                width += pc.width
            continue
        lead = pc.kind == "op" and all(x.kind == "brk" for x in pieces[:k])
        texts.append(("{}" if lead else "") + pc.tex)
        width += pc.width
        depth += {"open": 1, "close": -1}.get(pc.kind, 0)
    return " ".join(texts + [r"\right."] * depth), width + 0.12 * depth, depth


def _fill(pieces: List[_Piece], first: float, rest: float) -> List[Tuple[str, float]]:
    """Pieces into lines of at most ``first`` em (then ``rest``), each with its width, greedily:
    while a line overflows, it ends at its last break of the lowest rank (a sign before a factor)."""
    lines: List[Tuple[str, float]] = []
    cur: List[_Piece] = []
    depth = 0
    for pc in pieces:
        cur.append(pc)
        while pc.kind != "brk":
            breaks = [k for k in range(1, len(cur) - 1) if cur[k].kind == "brk"]
            if not breaks or _line(cur, depth)[1] <= (rest if lines else first):
                break
            low = min(cur[k].rank for k in breaks)
            k = max(k for k in breaks if cur[k].rank == low)
            text, width, depth_end = _line(cur[:k], depth)
            lines.append((text, width))
            cur, depth = cur[k:], depth_end
    text, width, _ = _line(cur, depth)
    return lines + [(text, width)]


def tex_int(n: int) -> str:
    """An integer with thin-space-free thousands separators: ``16{,}060{,}522{,}496``."""
    return f"{n:,}".replace(",", "{,}")


def tex_fraction(v: Fraction) -> str:
    v = Fraction(v)
    if v.denominator == 1:
        return tex_int(v.numerator)
    sign = "-" if v < 0 else ""
    return rf"{sign}\frac{{{tex_int(abs(v.numerator))}}}{{{tex_int(v.denominator)}}}"


# ---------------------------------------------------------------------------
# the derivation as neutral blocks

Inline = List[Tuple[str, str]]          # [("t", text) | ("m", tex) | ("c", code)]


@dataclass
class Heading:
    text: str
    level: int = 2


@dataclass
class Para:
    parts: Inline


@dataclass
class Eq:
    """A row of a display as LaTeX breaks it over lines when it is wider than the page:
    ``lhs rel text tail``, ``text`` the printed ``expr`` (``printer``'s), or ``pieces`` made by the
    caller where the right side is no single expression (the regime definition)."""
    lhs: str
    rel: str
    text: str
    expr: Optional[sympy.Basic] = None
    printer: Optional[VramLatexPrinter] = None
    pieces: Optional[List[_Piece]] = None
    tail: str = ""


@dataclass
class Display:
    rows: List[Tuple[str, str]]         # (lhs, rhs) pairs, aligned at the relation in rhs
    tag: Optional[str] = None
    eqs: Optional[List[Eq]] = None      # the same equations, for a printer that fits them to a page


def _equations(eqs: List[Eq], rows: Optional[List[Tuple[str, str]]] = None) -> Display:
    """A display of equations, each row ``lhs``, ``rel text tail`` unless ``rows`` are given."""
    return Display(rows or [(e.lhs, f"{e.rel} {e.text}{e.tail}") for e in eqs], eqs=eqs)


@dataclass
class Items:
    items: List[Inline]


@dataclass
class Table:
    header: List[str]
    rows: List[List[Inline]]
    align: str = ""                     # a letter per column: r (flush right) or l; the page printer sizes them


Block = Union[Heading, Para, Display, Items, Table]


def _t(s: str) -> Tuple[str, str]:
    return ("t", s)


def _m(s: str) -> Tuple[str, str]:
    return ("m", s)


def _c(s: str) -> Tuple[str, str]:
    return ("c", s)


def _sizes(n: Fraction) -> Inline:
    """Exact bytes (rounded up to a whole byte when fractional), GiB and GB, each named."""
    whole = to_int_bytes(n)
    parts: Inline = [_t(f"{whole:,} B")]
    if Fraction(n).denominator != 1:
        parts += [_t(" (exact "), _m(tex_fraction(n) + r"\ \mathrm{B}"), _t(", rounded up)")]
    parts += [_t(f" = {fmt_bytes(whole, 'GiB')} = {fmt_bytes(whole, 'GB')}")]
    return parts


def _reachable_terms(steps, composed_components: Sequence[str]) -> List:
    """Term steps reachable from the components through the resolved definitions, in
    breadth-first order (references sorted by name): unused ``match`` branches drop out."""
    by_name = {s.lhs: s for s in steps if s.kind == "term"}
    order, seen = [], set()
    queue = [c for c in composed_components if c in by_name]
    while queue:
        n = queue.pop(0)
        if n in seen:
            continue
        seen.add(n)
        st = by_name[n]
        order.append(st)
        refs = sorted({s.name for s in (st.expr.free_symbols if isinstance(st.expr, sympy.Basic) else ())
                       if s.name in by_name and s.name != n})
        queue.extend(r for r in refs if r not in seen)
    return order


def _value_cell(v) -> str:
    return tex_fraction(Fraction(v))


def _provenance(p: str) -> Inline:
    if p.startswith("config:"):
        return [_t("config "), _c(p.split(":", 1)[1])]
    return [_t(p)]


def blocks(result, lib) -> List[Block]:
    """The derivation of an :class:`~vramsym.engine.results.Estimate` or :class:`~vramsym.engine.results.Solution`
    as blocks, in the order of its steps (vramsym.engine.steps)."""
    sol = result if isinstance(result, Solution) else None
    est = sol.estimate if sol is not None else result
    steps = derivation_steps(result, lib)
    P = VramLatexPrinter(lib)
    out: List[Block] = []
    M = "M"

    title = f"Memory of regime '{est.regime}'"
    if est.model:
        title += f" for {est.model}"
    if sol is not None:
        title = f"Largest {sol.alias} that fits: regime '{est.regime}'" + (f" for {est.model}" if est.model else "")
    out.append(Heading(title, 1))
    intro: Inline = [_t(est.description + ".")]
    used = [f"{k}={v}" for k, v in est.options if k in set(est.used_options)]
    if used:
        intro += [_t(" Options in effect: ")] + _join([[_c(u)] for u in used]) + [_t(".")]
    out.append(Para(intro))
    for note in est.notes:
        out.append(Para([_t("Note: " + note)]))

    comps = [c.name for c in est.all_components if not c.host]          # the GPU total
    host = [c.name for c in est.all_components if c.host]
    phases = est.phases
    common = set.intersection(*[set(p.components) for p in phases]) if phases else set()
    st_phases = [_PhaseOwn(p.name, p.description, [c for c in p.components if c not in common and c in comps])
                 for p in phases]
    term_steps = _reachable_terms(steps, comps + host)
    section = 0

    def head(text):
        nonlocal section
        section += 1
        out.append(Heading(f"{section}. {text}", 2))

    for st in steps:
        k = st.kind
        if k == "definition":
            head("Regime definition")
            if len(phases) > 1:
                static = [c for c in comps if not any(c in p.own for p in st_phases)]
                owns = [" + ".join(name_latex(lib, c) for c in p.own) or "0" for p in st_phases]
                rhs = " + ".join(name_latex(lib, c) for c in static) + r" + \max\left(" + ", ".join(owns) + r"\right)"
                pieces = _sum_pieces([name_latex(lib, c) for c in static]) + _op("+") + [_atom(r"\max"), _OPEN]
                for i, p in enumerate(st_phases):
                    pieces += ([_Piece(",", 0.45), _PHASE] if i else []) + _sum_pieces(
                        [name_latex(lib, c) for c in p.own] or ["0"])
                out.append(Para([_t("The job is a timeline of phases; the total is the largest phase total: the "
                                    "components alive in every phase, plus the largest of the phases' own terms:")]))
                out.append(_equations([Eq(M, "=", rhs, pieces=pieces + [_CLOSE])]))
                out.append(Para([_t("The phases, in the order of the maximum: ")] + _join(
                    [[_c(p.name), _t(f" ({p.description}): ")] + (_join([[_m(name_latex(lib, c))] for c in p.own])
                                                                 if p.own else [_t("nothing more")])
                     for p in st_phases], "; ") + [_t(".")]))
            else:
                if comps:
                    names = [name_latex(lib, c) for c in comps]
                    eq = Eq(M, "=", " + ".join(names), pieces=_sum_pieces(names))
                else:
                    eq = Eq(M, "=", P.doprint(st.expr), st.expr, P)
                out.append(Para([_t("The total is the sum of the regime's components:")]))
                out.append(_equations([eq]))
            if host:
                out.append(Para([_t("Host (CPU) memory, outside the GPU total: ")] +
                                _join([[_m(name_latex(lib, c))] for c in host]) + [_t(".")]))
            if st.note:
                out.append(Para([_t(st.note.split(";")[0].strip().capitalize() + ".")]))
        elif k == "term":
            if term_steps and st is term_steps[0]:
                head("Term definitions")
                out.append(Para([_t("Each term with its description and citation(s); "
                                    "names in other terms stand for their definitions.")]))
                for ts in term_steps:
                    lhs = name_latex(lib, ts.lhs)
                    unit = lib.units.get(ts.lhs)
                    desc: Inline = [_c(ts.lhs), _t(f": {ts.title}")]
                    if unit:
                        desc += [_t(f" [{unit}]")]
                    out.append(Para(desc))
                    out.append(_equations([Eq(lhs, "=", P.doprint(ts.expr), ts.expr, P)]))
                    if ts.sources:
                        out.append(Items([[_t("Source: " + s)] for s in ts.sources]))
        elif k == "expansion":
            head("Expansion")
            out.append(Para([_t("Every term replaced by its definition, down to declared symbols:")]))
            lines = split_add(st.expr, lib)
            rows = [(M, "= " + lines[0])] + [("", r"\quad " + ln) for ln in lines[1:]]
            out.append(_equations([Eq(M, "=", P.doprint(st.expr), st.expr, P)], rows))
        elif k == "substitution":
            head("Substitution")
            out.append(Para([_t(st.title + ", with where each came from "
                                "(input: given by the user; config: the model's config field; "
                                "default: the symbol's declared default):")]))
            rows = []
            for name, (v, prov) in (st.value or {}).items():
                d = lib.symbols.get(name)
                rows.append([[_m(name_latex(lib, name))], [_c(name)],
                             [_t(d.description if d else "")], [_m(_value_cell(v))],
                             [_t(lib.units.get(name, ""))], _provenance(prov)])
            out.append(Table(["symbol", "name", "meaning", "value", "unit", "from"], rows, "lllrll"))
        elif k == "simplification":
            head("Simplification")
            xl = name_latex(lib, sol.variable) if sol else "x"
            out.append(Para([_t(st.title + ":")]))
            out.append(_equations([Eq(rf"M\left({xl}\right)", "=", P.doprint(st.expr), st.expr, P)]))
        elif k == "solution":
            head("Inverse solution")
            xl = name_latex(lib, sol.variable) if sol else mathrm(st.lhs or "x")
            cap = sol.capacity_bytes if sol else None
            out.append(Para([_t(st.title + ".")]))
            eqs = [Eq(rf"M\left({xl}\right)", r"\le", "C = " + tex_int(cap) + r"\ \mathrm{B}")] if cap else []
            if st.expr is not None:
                approx = ""
                try:
                    approx = rf" \approx {float(st.expr):.6g}"
                except (TypeError, ValueError):
                    pass
                eqs.append(Eq(xl + "^{*}", "=", P.doprint(st.expr), st.expr, P, tail=approx))
                fl = int(sympy.floor(st.expr))
                rel = "=" if fl == st.value else r"\to"
                eqs.append(Eq(xl, "=", rf"\left\lfloor {xl}^{{*}} \right\rfloor {rel} {tex_int(int(st.value))}"))
                out.append(Para([_t("The exact root "), _m(xl + "^{*}"), _t(" of "),
                                 _m(rf"M\left({xl}\right) = C"), _t(", and its floor:")]))
            else:
                eqs.append(Eq(xl, "=", tex_int(int(st.value))))
                out.append(Para([_t("No closed form: an exact search on the integers "
                                    "(exponential probe, then bisection).")]))
            out.append(_equations(eqs))
        elif k == "check":
            head("Exact integer check")
            v = st.value or {}
            xl = name_latex(lib, sol.variable) if sol else "x"
            at, at_b = v.get("at", (None, None))
            nx, nx_b = v.get("next", (None, None))
            cap = v.get("capacity")
            out.append(Para([_t("The total evaluated exactly at the answer and one above it:")]))
            rows = []
            if at is not None:
                rows.append((rf"M\left({tex_int(at)}\right)",
                             rf"= {tex_int(at_b)}\ \mathrm{{B}} \le C = {tex_int(cap)}\ \mathrm{{B}}"))
            if nx is not None and nx_b is not None:
                rows.append((rf"M\left({tex_int(nx)}\right)",
                             rf"= {tex_int(nx_b)}\ \mathrm{{B}} > C"))
            out.append(Display(rows))
        elif k == "result":
            continue
        else:   # a step kind this printer does not know: show what it holds
            head(st.title)
            if st.expr is not None:
                out.append(_equations([Eq(name_latex(lib, st.lhs) if st.lhs else "", "=", P.doprint(st.expr),
                                          st.expr, P)]))
            if st.value is not None:
                out.append(Para([_t(str(st.value))]))

    # final figures
    head("Result")
    out.append(Para([_t("Sizes in bytes (B), GiB = "), _m("2^{30}"), _t(" B and GB = "), _m("10^{9}"),
                     _t(" B; a fractional byte count is rounded up to a whole byte.")]))
    rows = []
    for c in est.components:
        if not c.host:
            rows.append([[_m(name_latex(lib, c.name))], [_t(c.description)]] + [[p] for p in _size_cells(c.exact)])
    if len(phases) > 1:
        for p in phases:
            peak = " (the peak: the components above)" if p.name == est.peak_phase.name else ""
            rows.append([[_m(r"M_{\mathrm{" + p.name.replace("_", r"\_") + "}}")],
                         [_t(f"phase {p.name}: {p.description}{peak}")]] + [[c] for c in _size_cells(p.exact)])
    rows.append([[_m(M)], [_t("total (GPU)")]] + [[p] for p in _size_cells(est.exact_total)])
    for c in est.components:
        if c.host:
            rows.append([[_m(name_latex(lib, c.name))], [_t(c.description)]] +
                        [[p] for p in _size_cells(c.exact)])
    out.append(Table(["term", "meaning", "bytes", "GiB", "GB"], rows, "llrrr"))
    if sol is not None:
        xl = name_latex(lib, sol.variable)
        out.append(Para([_t(f"Largest {sol.alias} that fits: "), _m(f"{xl} = {tex_int(sol.value)}"),
                         _t(f" ({sol.method}). Capacity C = ")] + _sizes(Fraction(sol.capacity_bytes)) +
                        [_t("; total at the answer ")] + _sizes(est.exact_total) +
                        [_t(f"; headroom {sol.capacity_bytes - est.total_bytes:,} B.")]))
    else:
        out.append(Para([_t("Total: ")] + _sizes(est.exact_total) + [_t(".")]))
    return out


@dataclass(frozen=True)
class _PhaseOwn:
    """A phase as a derivation shows it: the terms alive in it beyond those of every phase."""
    name: str
    description: str
    own: List[str]


def _size_cells(v: Fraction) -> List[Tuple[str, str]]:
    whole = to_int_bytes(v)
    b = f"{whole:,}" + ("" if Fraction(v).denominator == 1 else " (rounded up)")
    return [_t(b), _t(fmt_bytes(whole, "GiB")), _t(fmt_bytes(whole, "GB"))]


def _join(parts: List[Inline], sep: str = ", ") -> Inline:
    out: Inline = []
    for i, p in enumerate(parts):
        if i:
            out.append(_t(sep))
        out.extend(p)
    return out


# ---------------------------------------------------------------------------
# LaTeX rendering of the blocks

def render_inline(parts: Inline, text, code) -> str:
    """Inline parts to text: math as $...$, code and prose through the target's own functions."""
    return "".join(f"${s}$" if kind == "m" else code(s) if kind == "c" else text(s) for kind, s in parts)


def _breakable(s: str, after: str) -> str:
    """``s`` escaped by :func:`tex_text`, with ``\\allowbreak{}`` after each character of ``after``
    that a letter (or, but for ``.``, a digit) follows: an identifier, path or dotted name
    (``orig_inv_freq``, ``docs/measurements.md``) may then end a line or fit a table column."""
    out = []
    for i, ch in enumerate(s):
        out.append(tex_text(ch))
        nxt = s[i + 1] if i + 1 < len(s) else ""
        if ch in after and (nxt.isalpha() or (nxt.isdigit() and ch != ".")):
            out.append(r"\allowbreak{}")
    return "".join(out)


def _inline_tex(parts: Inline) -> str:
    return render_inline(parts, lambda s: _breakable(s, "_/."),
                         lambda s: r"\texttt{" + _breakable(s, "_/.=,-") + "}")


def _inline_widths(parts: Inline, bold: bool = False) -> Tuple[float, float]:
    """The estimated width in em of inline parts on one line, and of their widest unbreakable
    stretch (a word, a piece of code between its breaks, a formula; a long word of letters
    hyphenates into pieces of about 3 em, but for the first, which TeX never hyphenates)."""
    total, widest, first = 0.0, 0.0, True
    for kind, s in parts:
        if kind == "m":
            w = tex_width(s, "T")
            total, widest = total + w, max(widest, w)
            continue
        per = (lambda ch: 0.53) if kind == "c" else (lambda ch: _ROMAN.get(ch, 0.5) * (1.1 if bold else 1.0))
        total += sum(per(ch) for ch in s)
        breaks = r"\s+|(?<=[_/.=,-])(?=\w)" if kind == "c" else r"\s+|(?<=[_/.])(?=[A-Za-z])|(?<=-)(?=\w)"
        for word in re.split(breaks, s):
            w = sum(per(ch) for ch in word)
            hyphenates = kind == "t" and not first and len(word) > 5 and word.strip("()[],.;:'").isalpha()
            widest = max(widest, min(w, 3.0) if hyphenates else w)
            first = first and not word
    return total, widest


# How much of the page a broken display's lines fill, for the error of the width estimates (0.92 left a
# substituted LoRA total with nested cases 1.6 pt over the text block).
_FILL = 0.90


def _broken_rows(e: Eq, room: float) -> List[Tuple[str, str]]:
    """The rows of an equation too wide for a line of ``room`` em: its right side broken into
    lines (:func:`_fill`), the first after the relation, the others indented by a quad; a
    piecewise right side as one such equation per case, its condition after the case's value."""
    if isinstance(e.expr, sympy.Piecewise):
        cases = [(_pieces(v, e.printer, room), r"\quad " + _condition(c, e.printer)) for v, c in e.expr.args]
    else:
        cases = [(e.pieces if e.pieces is not None else _pieces(e.expr, e.printer, room), "")]
    rows: List[Tuple[str, str]] = []
    for k, (pieces, cond) in enumerate(cases):
        tail = cond + (e.tail if k == len(cases) - 1 else "")
        if tail:
            pieces = pieces + [_BRK, _atom(tail)]
        lines = _fill(pieces, room - tex_width(e.rel) - 0.3, room - 1.0)
        rows.append((e.lhs, f"{e.rel} {lines[0][0]}"))
        rows += [("", r"\quad " + ln) for ln, _ in lines[1:]]
    return rows


def _display_tex(d: Display) -> str:
    """A display as ``equation*`` (one row) or ``align*``; an equation wider than the page is broken
    into lines (:func:`_fill`), the first after its relation, the others indented by a quad."""
    if d.eqs:
        rows: List[Tuple[str, str]] = []
        for e in d.eqs:
            room = PAGE_EM * _FILL - tex_width(e.lhs)
            if tex_width(f"{e.rel} {e.text}{e.tail}", cap=room) <= room:
                rows.append((e.lhs, f"{e.rel} {e.text}{e.tail}"))
                continue
            rows += _broken_rows(e, room)
        d = Display(rows)
    if len(d.rows) == 1 and d.rows[0][0] and not d.rows[0][0].startswith(r"\quad"):
        lhs, rhs = d.rows[0]
        return "\\begin{equation*}\n" + f"{lhs} {rhs}\n" + "\\end{equation*}"
    body = " \\\\\n".join(f"{lhs} &{rhs}" for lhs, rhs in d.rows)
    return "\\begin{align*}\n" + body + "\n\\end{align*}"


# Tables are set in \small (9 pt) with 3 pt between a column and its rule.
_TABLE_PT, _TABLE_SEP_PT = 9.0, 3.0


def _column_widths(natural: List[float], least: List[float], room: float) -> List[float]:
    """Column widths within ``room``: each column's natural width, the widest ones cut down to one
    common cap, none below its widest unbreakable stretch."""
    if sum(natural) <= room:
        return natural
    lo, hi = 0.0, max(natural)
    for _ in range(40):
        cap = (lo + hi) / 2
        if sum(min(n, max(cap, m)) for n, m in zip(natural, least)) > room:
            hi = cap
        else:
            lo = cap
    return [min(n, max(lo, m)) for n, m in zip(natural, least)]


def _table_tex(t: Table) -> str:
    """A table as a ``longtable`` (it breaks across pages; the header repeats) whose columns are
    paragraphs of a width that fits the page: ``r`` columns flush right, the others ragged right."""
    n = len(t.header)
    kinds = t.align or "l" * n
    widths = [_inline_widths([_t(h)], bold=True) for h in t.header]
    for row in t.rows:
        widths = [(max(a, b), max(c, d)) for (a, c), (b, d) in zip(widths, map(_inline_widths, row))]
    room = (PAGE_EM * 10 - n * 2 * _TABLE_SEP_PT) / _TABLE_PT
    # 9 pt type is a little wider for its size than 10 pt; and a little air in every cell
    cols = _column_widths([1.05 * w + 0.3 for w, _ in widths], [1.05 * m + 0.3 for _, m in widths], room)
    spec = "".join((r">{\raggedleft\arraybackslash}" if k == "r" else r">{\raggedright\arraybackslash}")
                   + "p{%.3f\\linewidth}" % (w * _TABLE_PT / (PAGE_EM * 10)) for k, w in zip(kinds, cols))
    lines = [r"{\small\setlength{\tabcolsep}{%gpt}" % _TABLE_SEP_PT, r"\begin{longtable}{" + spec + "}", r"\hline",
             " & ".join(r"\textbf{" + tex_text(h) + "}" for h in t.header) + r" \\", r"\hline", r"\endhead"]
    lines += [" & ".join(_inline_tex(c) for c in row) + r" \\" for row in t.rows]
    lines += [r"\hline", r"\end{longtable}", "}"]
    return "\n".join(lines)


_SECTIONS = {1: r"\section*", 2: r"\subsection*", 3: r"\subsubsection*"}


def render_latex(bl: List[Block], standalone: bool = False, title: Optional[str] = None) -> str:
    parts: List[str] = []
    for b in bl:
        if isinstance(b, Heading):
            parts.append(_SECTIONS.get(b.level, r"\paragraph") + "{" + tex_text(b.text) + "}")
        elif isinstance(b, Para):
            parts.append(_inline_tex(b.parts))
        elif isinstance(b, Display):
            parts.append(_display_tex(b))
        elif isinstance(b, Items):
            parts.append("\\begin{itemize}\n" + "\n".join(r"\item " + _inline_tex(i) for i in b.items)
                         + "\n\\end{itemize}")
        elif isinstance(b, Table):
            parts.append(_table_tex(b))
    body = "\n\n".join(parts) + "\n"
    if not standalone:
        return body
    return ("\\documentclass{article}\n\\usepackage[T1]{fontenc}\n\\usepackage{amsmath}\n\\usepackage{amssymb}\n"
            "\\usepackage{array}\n\\usepackage{longtable}\n\\sloppy\n"
            "\\allowdisplaybreaks\n\n\\begin{document}\n\n" + body + "\n\\end{document}\n")


def derivation_latex(result, lib, standalone: bool = False) -> str:
    return render_latex(blocks(result, lib), standalone=standalone)
