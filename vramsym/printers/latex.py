"""LaTeX for derivations: a sympy ``LatexPrinter`` that knows the library's names, the
derivation as neutral blocks (shared with the Markdown printer), and their LaTeX rendering.

Math always goes through :class:`VramLatexPrinter` (sympy's printer, configured with
``symbol_names``: every declared symbol prints with its ``latex`` attribute, every term
placeholder with the term's ``latex`` or ``\\mathrm{name}``). Text is escaped per format.
"""
from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Dict, List, Optional, Sequence, Tuple, Union

import sympy
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


def tex_text(s: str) -> str:
    """Escape plain text for LaTeX text mode."""
    return "".join(_TEXT_ESCAPES.get(ch, ch) for ch in str(s))


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
    """sympy's LaTeX printer with the library's names; products written with a thin space."""

    def __init__(self, lib, settings: Optional[dict] = None):
        s = {"symbol_names": symbol_names(lib), "mul_symbol": None}
        s.update(settings or {})
        super().__init__(s)
        self.lib = lib

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
class Display:
    rows: List[Tuple[str, str]]         # (lhs, rhs) pairs, aligned at the relation in rhs
    tag: Optional[str] = None


@dataclass
class Items:
    items: List[Inline]


@dataclass
class Table:
    header: List[str]
    rows: List[List[Inline]]
    align: str = ""


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
                out.append(Para([_t("The job is a timeline of phases; the total is the largest phase total: the "
                                    "components alive in every phase, plus the largest of the phases' own terms:")]))
                out.append(Display([(M, "= " + rhs)]))
                out.append(Para([_t("The phases, in the order of the maximum: ")] + _join(
                    [[_c(p.name), _t(f" ({p.description}): ")] + (_join([[_m(name_latex(lib, c))] for c in p.own])
                                                                 if p.own else [_t("nothing more")])
                     for p in st_phases], "; ") + [_t(".")]))
            else:
                rhs = " + ".join(name_latex(lib, c) for c in comps) if comps else P.doprint(st.expr)
                out.append(Para([_t("The total is the sum of the regime's components:")]))
                out.append(Display([(M, "= " + rhs)]))
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
                    out.append(Display([(lhs, "= " + P.doprint(ts.expr))]))
                    if ts.sources:
                        out.append(Items([[_t("Source: " + s)] for s in ts.sources]))
        elif k == "expansion":
            head("Expansion")
            out.append(Para([_t("Every term replaced by its definition, down to declared symbols:")]))
            lines = split_add(st.expr, lib)
            rows = [(M, "= " + lines[0])] + [("", r"\quad " + ln) for ln in lines[1:]]
            out.append(Display(rows))
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
            out.append(Table(["symbol", "name", "meaning", "value", "unit", "from"], rows, "llp{5cm}rll"))
        elif k == "simplification":
            head("Simplification")
            xl = name_latex(lib, sol.variable) if sol else "x"
            out.append(Para([_t(st.title + ":")]))
            out.append(Display([(rf"M\left({xl}\right)", "= " + P.doprint(st.expr))]))
        elif k == "solution":
            head("Inverse solution")
            xl = name_latex(lib, sol.variable) if sol else mathrm(st.lhs or "x")
            cap = sol.capacity_bytes if sol else None
            out.append(Para([_t(st.title + ".")]))
            rows = [(rf"M\left({xl}\right)", r"\le C = " + tex_int(cap) + r"\ \mathrm{B}")] if cap else []
            if st.expr is not None:
                root = P.doprint(st.expr)
                approx = ""
                try:
                    approx = rf" \approx {float(st.expr):.6g}"
                except (TypeError, ValueError):
                    pass
                rows.append((xl + "^{*}", "= " + root + approx))
                fl = int(sympy.floor(st.expr))
                rel = "=" if fl == st.value else r"\to"
                rows.append((xl, rf"= \left\lfloor {xl}^{{*}} \right\rfloor {rel} {tex_int(int(st.value))}"))
                out.append(Para([_t("The exact root "), _m(xl + "^{*}"), _t(" of "),
                                 _m(rf"M\left({xl}\right) = C"), _t(", and its floor:")]))
            else:
                rows.append((xl, "= " + tex_int(int(st.value))))
                out.append(Para([_t("No closed form: an exact search on the integers "
                                    "(exponential probe, then bisection).")]))
            out.append(Display(rows))
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
                out.append(Display([(name_latex(lib, st.lhs) if st.lhs else "", "= " + P.doprint(st.expr))]))
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
    out.append(Table(["term", "meaning", "bytes", "GiB", "GB"], rows, "lp{6cm}rrr"))
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


def _inline_tex(parts: Inline) -> str:
    return render_inline(parts, tex_text, lambda s: r"\texttt{" + tex_text(s) + "}")


def _display_tex(d: Display) -> str:
    if len(d.rows) == 1 and d.rows[0][0] and not d.rows[0][0].startswith(r"\quad"):
        lhs, rhs = d.rows[0]
        return "\\begin{equation*}\n" + f"{lhs} {rhs}\n" + "\\end{equation*}"
    body = " \\\\\n".join(f"{lhs} &{rhs}" for lhs, rhs in d.rows)
    return "\\begin{align*}\n" + body + "\n\\end{align*}"


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
            align = b.align or "l" * len(b.header)
            lines = [r"\begin{tabular}{" + align + "}", r"\hline",
                     " & ".join(r"\textbf{" + tex_text(h) + "}" for h in b.header) + r" \\", r"\hline"]
            for row in b.rows:
                lines.append(" & ".join(_inline_tex(c) for c in row) + r" \\")
            lines += [r"\hline", r"\end{tabular}"]
            parts.append("\\begin{center}\n" + "\n".join(lines) + "\n\\end{center}")
    body = "\n\n".join(parts) + "\n"
    if not standalone:
        return body
    return ("\\documentclass{article}\n\\usepackage[T1]{fontenc}\n\\usepackage{amsmath}\n\\usepackage{amssymb}\n"
            "\\allowdisplaybreaks\n\n\\begin{document}\n\n" + body + "\n\\end{document}\n")


def derivation_latex(result, lib, standalone: bool = False) -> str:
    return render_latex(blocks(result, lib), standalone=standalone)
