"""The pipeline's front half: files -> parsed modules -> one checked :class:`Library`.

``load(paths)`` reads like the pipeline: parse every file (following
includes), gather declarations, then check names, units, matches, regimes and
cycles. It returns ``(library, diagnostics)``; only :func:`load_or_raise`
raises (one :class:`FormulaError` with every diagnostic).
"""
from __future__ import annotations

import hashlib
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Sequence, Set, Tuple

from ..catalog.paths import formulas_path
from ..records import Domain
from . import ast as A
from .diagnostics import (MSG_ARITY, MSG_COMPARE_OUTSIDE_IF, MSG_CYCLE, MSG_DUPLICATE,
                          MSG_BINDING_UNIT, MSG_COMPONENT_UNIT, MSG_DEFAULT_TERM, MSG_DEFAULT_UNIT, MSG_IF_CONDITION, MSG_NO_SOURCE, MSG_INCLUDE, MSG_LET_UNIT, MSG_MATCH_INCOMPLETE,
                          MSG_TERM_UNIT, MSG_UNKNOWN_CHOICE, MSG_UNKNOWN_COMPONENT,
                          MSG_UNKNOWN_DOMAIN, MSG_UNKNOWN_FUNCTION, MSG_UNKNOWN_NAME,
                          MSG_UNKNOWN_OPTION, MSG_UNKNOWN_REGIME, Diagnostic, FormulaError)
from .parse import deep_recursion, parse_text
from .units import Constant, build_unit, fmt, registry, same, unit_of, units_file_default

DOMAINS = tuple(d.value for d in Domain)
MAX_FILE_BYTES = 2**20     # one formula file
MAX_EXPONENT = 64          # |n| in x^n
FUNCTIONS = {"min": (2, None), "max": (2, None), "ceil": (1, 1), "floor": (1, 1), "if": (3, 3)}


@dataclass
class Library:
    """Every declaration of the loaded formula files, checked. Picklable, no pint/lark inside."""
    symbols: Dict[str, A.SymbolDecl] = field(default_factory=dict)
    options: Dict[str, A.OptionDecl] = field(default_factory=dict)
    terms: Dict[str, A.TermDef] = field(default_factory=dict)
    regimes: Dict[str, A.RegimeDef] = field(default_factory=dict)
    presets: Dict[str, A.PresetDef] = field(default_factory=dict)   # option -> its preset
    fits: List[A.FitDef] = field(default_factory=list)              # rows of `vramsym fit`
    shapes: Dict[str, A.ShapeDef] = field(default_factory=dict)     # symbol values for `TERM with SHAPE`
    units: Dict[str, str] = field(default_factory=dict)  # name -> readable unit
    sources: Dict[str, str] = field(default_factory=dict)  # file -> text
    files: Tuple[str, ...] = ()
    file_hashes: Dict[str, str] = field(default_factory=dict)  # absolute path -> sha256 (for the cache)

    def symbol_by_alias(self, name: str) -> Optional[A.SymbolDecl]:
        if name in self.symbols:
            return self.symbols[name]
        for s in self.symbols.values():
            if s.alias == name:
                return s
        return None


def files_hash(paths: Iterable[Path]) -> str:
    h = hashlib.sha256()
    for p in sorted(_expand(paths)):
        h.update(str(p).encode())
        h.update(p.read_bytes() if p.is_file() else b"<missing>")
    return h.hexdigest()


def _expand(paths: Iterable[Path]) -> List[Path]:
    out: List[Path] = []
    for p in paths:
        p = Path(p)
        if p.is_dir():
            out.extend(sorted(q for q in p.glob("*.vram")))
            units = p / "units.txt"
            if units.exists():
                out.append(units)
        else:
            out.append(p)
    return out


def _display(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        try:
            return "formulas/" + str(path.resolve().relative_to(Path(formulas_path()).resolve()))
        except ValueError:
            return str(path)


def load(paths: Sequence[Path], units_file: Optional[str] = None) -> Tuple[Library, List[Diagnostic]]:
    lib = Library()
    diags: List[Diagnostic] = []
    seen: Set[Path] = set()
    modules: List[A.Module] = []

    def visit(path: Path, via: Optional[A.Include]):
        path = path.resolve()
        if path in seen:
            return
        seen.add(path)
        try:
            st = os.stat(path)
            if not stat.S_ISREG(st.st_mode):
                raise OSError(0, "not a regular file")
            if st.st_size > MAX_FILE_BYTES:
                raise OSError(0, f"larger than {MAX_FILE_BYTES:,} bytes (a formula file is a few kilobytes)")
            with open(path, "rb") as fh:
                data = fh.read(MAX_FILE_BYTES + 1)
            if len(data) > MAX_FILE_BYTES:
                raise OSError(0, f"larger than {MAX_FILE_BYTES:,} bytes")
            text = data.decode("utf-8")
        except (OSError, UnicodeDecodeError, ValueError) as e:
            span = via.span if via else A.Span(str(path), 0, 0, 0, 0)
            diags.append(Diagnostic(span, "include", MSG_INCLUDE.format(path=str(path), why=getattr(e, "strerror", None) or str(e))))
            return
        name = _display(path)
        digest = hashlib.sha256(data).hexdigest()
        if digest in lib.file_hashes.values():
            return      # the same text under another path (a checkout's copy of a bundled file)
        lib.file_hashes[str(path)] = digest
        module, d = parse_text(text, name)
        lib.sources[name] = text
        diags.extend(d)
        modules.append(module)
        for st in module.statements:
            if isinstance(st, A.Include):
                visit(path.parent / st.path, st)

    for p in _expand(paths):
        if p.name != "units.txt" or not p.exists():
            visit(p, None)
    lib.files = tuple(m.path for m in modules)
    with deep_recursion():
        _collect(lib, modules, diags)
        if units_file is None:
            units_file = units_file_default()
        _check(lib, diags, units_file)
    return lib, diags


def load_or_raise(paths: Sequence[Path], units_file: Optional[str] = None) -> Library:
    lib, diags = load(paths, units_file)
    if diags:
        raise FormulaError(diags, lib.sources)
    return lib


def _where(span: A.Span) -> str:
    return f"{span.file}:{span.line}:{span.column}"


def _collect(lib: Library, modules: List[A.Module], diags: List[Diagnostic]) -> None:
    c = _Collector(lib, diags)
    for m in modules:
        for st in m.statements:
            c.visit(st)


class _Collector(A.Visitor):
    """Gathers the declarations of every file into the library; a name declared twice is a diagnostic."""

    def __init__(self, lib: Library, diags: List[Diagnostic]):
        self.lib, self.diags, self.values = lib, diags, {}

    def _fresh(self, name, span, seen_span) -> bool:
        if seen_span is not None:
            self.diags.append(Diagnostic(span, "definition", MSG_DUPLICATE.format(name=name, first=_where(seen_span))))
            return False
        return True

    def visit_SymbolDecl(self, st):
        if self._fresh(st.name, st.span, self.values.get(st.name)):
            self.values[st.name] = st.span
            self.lib.symbols[st.name] = st

    def visit_TermDef(self, st):
        if self._fresh(st.name, st.span, self.values.get(st.name)):
            self.values[st.name] = st.span
            self.lib.terms[st.name] = st

    def visit_OptionDecl(self, st):
        seen = self.lib.options.get(st.name)
        if self._fresh(st.name, st.span, seen.span if seen else None):
            self.lib.options[st.name] = st

    def visit_RegimeDef(self, st):
        seen = self.lib.regimes.get(st.name)
        if self._fresh(st.name, st.span, seen.span if seen else None):
            self.lib.regimes[st.name] = st

    def visit_PresetDef(self, st):
        seen = self.lib.options.get(st.option)
        if self._fresh(st.option, st.span, seen.span if seen else None):
            self.lib.presets[st.option] = st
            self.lib.options[st.option] = st.as_option()

    def visit_FitDef(self, st):
        self.lib.fits.append(st)

    def visit_ShapeDef(self, st):
        seen = self.lib.shapes.get(st.name)
        if self._fresh(st.name, st.span, seen.span if seen else None):
            self.lib.shapes[st.name] = st

    def visit_Include(self, st):
        pass        # followed while reading the files


def _check_choices(lib: Library, diags, assigns) -> None:
    for opt, choice, span in assigns:
        o = lib.options.get(opt)
        if o is None:
            diags.append(Diagnostic(span, "name", MSG_UNKNOWN_OPTION.format(name=opt)))
        elif choice not in o.choices:
            diags.append(Diagnostic(span, "name", MSG_UNKNOWN_CHOICE.format(option=opt, choice=choice, choices=", ".join(o.choices))))


def _check_presets(lib: Library, diags) -> None:
    for p in lib.presets.values():
        o = lib.options.get(p.option)
        if o is None:
            diags.append(Diagnostic(p.span, "name", MSG_UNKNOWN_OPTION.format(name=p.option)))
            continue
        covered: Set[str] = set()
        for labels, assigns, span in p.cases:
            for label in labels:
                if label not in o.choices:
                    diags.append(Diagnostic(span, "name", MSG_UNKNOWN_CHOICE.format(option=o.name, choice=label, choices=", ".join(o.choices))))
                covered.add(label)
            _check_choices(lib, diags, assigns)
            for opt, _, span2 in assigns:
                if opt in lib.presets:
                    diags.append(Diagnostic(span2, "definition", f"preset '{p.option}' sets '{opt}', which is a preset itself: a preset may only set plain options"))
        missing = [c for c in o.choices if c not in covered]
        if missing:
            diags.append(Diagnostic(p.span, "definition", MSG_MATCH_INCOMPLETE.format(option=f"preset {o.name}", missing=", ".join(missing))))
    for f in lib.fits:
        if f.regime not in lib.regimes:
            diags.append(Diagnostic(f.span, "name", MSG_UNKNOWN_REGIME.format(name=f.regime)))
        _check_choices(lib, diags, f.options)


def _check(lib: Library, diags: List[Diagnostic], units_file: str) -> None:
    ureg = registry(units_file)
    declared = {}
    for name, decl in list(lib.symbols.items()) + list(lib.terms.items()):
        u = build_unit(decl.unit, ureg, diags)
        if u is not None:
            declared[name] = u
            lib.units[name] = fmt(u)
    for s in lib.symbols.values():
        if s.domain not in DOMAINS:
            diags.append(Diagnostic(s.span, "definition", MSG_UNKNOWN_DOMAIN.format(name=s.domain, known=", ".join(DOMAINS))))
    for o in lib.options.values():
        if o.default not in o.choices:
            diags.append(Diagnostic(o.span, "definition", MSG_UNKNOWN_CHOICE.format(option=o.name, choice=o.default, choices=", ".join(o.choices))))

    def lookup(n: A.Name):
        if n.name in declared:
            return declared[n.name]
        return None  # unknown names are reported by _check_names

    def check_expr(expr: A.Expr, want, what: str, span: A.Span, name: str):
        before = len(diags)
        _check_names(expr, lib, diags, in_if=False)
        if len(diags) != before:
            return
        got = unit_of(expr, lookup, ureg, diags)
        if got is not None and want is not None and not same(got, want):
            msg = {"term": MSG_TERM_UNIT, "let": MSG_LET_UNIT, "default": MSG_DEFAULT_UNIT,
                   "binding": MSG_BINDING_UNIT}[what].format(
                name=name, declared=fmt(want), actual=fmt(got))
            diags.append(Diagnostic(span, "unit", msg))

    for t in lib.terms.values():
        check_expr(t.expr, declared.get(t.name), "term", t.expr.span, t.name)
    for s in lib.symbols.values():
        for what, e in (("default", s.default), ("bound", s.max), ("bound", s.min), ("bound", s.multiple)):
            if e is None:
                continue
            bad = [n for n in names_in(e) if n.name in lib.terms]
            for n in bad:
                diags.append(Diagnostic(n.span, "definition", MSG_DEFAULT_TERM.format(name=s.name, term=n.name)
                                        .replace("the default", "a default or bound")))
            if not bad:
                check_expr(e, declared.get(s.name), "default", e.span, s.name)
        if (s.low is None) != (s.high is None) or (s.low is not None and s.default is None):
            diags.append(Diagnostic(s.span, "definition", f"the range of '{s.name}' needs a default, a low and a high"))
        for what, e in (("low", s.low), ("high", s.high)):
            if e is None:
                continue
            if list(names_in(e)):
                diags.append(Diagnostic(e.span, "definition", f"the {what} value of '{s.name}' must be a constant "
                                        f"(a run-time range is a number with its unit)"))
            else:
                check_expr(e, declared.get(s.name), "default", e.span, s.name)
        for t in s.divides:
            if t not in lib.symbols:
                diags.append(Diagnostic(s.span, "name", MSG_UNKNOWN_NAME.format(name=t)))
    for t in lib.terms.values():
        if not t.sources:
            diags.append(Diagnostic(t.span, "definition", MSG_NO_SOURCE.format(name=t.name)))
    for d in list(lib.symbols.values()) + list(lib.terms.values()):
        problem = latex_problem(d.latex) if d.latex else None
        if problem:
            diags.append(Diagnostic(d.span, "definition", f"the latex name of '{d.name}' {problem}"))
    for sh in lib.shapes.values():
        if not sh.sources:
            diags.append(Diagnostic(sh.span, "definition", MSG_NO_SOURCE.format(name=sh.name)))
        _NameCheck(lib, diags).bindings(sh.bindings)
        for b in sh.bindings:
            terms = [n for n in names_in(b.expr) if n.name in lib.terms]
            for n in terms:     # a shape is read where any term may be: its values are symbols' expressions
                diags.append(Diagnostic(n.span, "definition", f"the shape '{sh.name}' gives '{b.name}' a value that "
                                        f"reads the term '{n.name}': a shape's values may read symbols only"))
            if b.name in declared and not terms:
                check_expr(b.expr, declared[b.name], "binding", b.span, b.name)
    _check_regimes(lib, diags, check_expr, declared)
    _check_presets(lib, diags)
    _check_cycles(lib, diags)


def _check_names(e: A.Expr, lib: Library, diags: List[Diagnostic], in_if: bool = False) -> None:
    _NameCheck(lib, diags).check(e, in_if)


class _NameCheck(A.Visitor):
    """Names, functions and their arity, comparisons only inside if(), match coverage."""

    def __init__(self, lib: Library, diags: List[Diagnostic]):
        self.lib, self.diags, self.in_if = lib, diags, False

    def check(self, e, in_if=False):
        self.in_if = in_if
        self.visit(e)

    def visit_Name(self, e):
        if e.name not in self.lib.symbols and e.name not in self.lib.terms:
            self.diags.append(Diagnostic(e.span, "name", MSG_UNKNOWN_NAME.format(name=e.name)))

    def visit_BinOp(self, e):
        if e.op == "^":
            k = Constant().visit(e.right)
            if k is None or k.denominator != 1 or abs(k) > MAX_EXPONENT:
                self.diags.append(Diagnostic(e.right.span, "syntax",
                                             f"an exponent must be a whole-number constant between -{MAX_EXPONENT} "
                                             f"and {MAX_EXPONENT}"))
                return
        self.generic_visit(e)

    def visit_Compare(self, e):
        in_if, self.in_if = self.in_if, False     # set only for the condition of an if()
        if not in_if:
            self.diags.append(Diagnostic(e.span, "syntax", MSG_COMPARE_OUTSIDE_IF))
        self.generic_visit(e)

    def visit_Call(self, e):
        if e.func not in FUNCTIONS:
            self.diags.append(Diagnostic(e.span, "name", MSG_UNKNOWN_FUNCTION.format(
                name=e.func, known=", ".join(sorted(FUNCTIONS)))))
            return
        lo, hi = FUNCTIONS[e.func]
        n = len(e.args)
        if n < lo or (hi is not None and n > hi):
            exp = str(lo) if lo == hi else f"at least {lo}"
            self.diags.append(Diagnostic(e.span, "syntax", MSG_ARITY.format(name=e.func, expected=exp, got=n)))
            return
        for i, a in enumerate(e.args):
            if e.func == "if" and i == 0:
                if not isinstance(a, A.Compare):
                    self.diags.append(Diagnostic(a.span, "syntax", MSG_IF_CONDITION))
                    continue
                self.check(a, True)
            else:
                self.check(a, False)

    def visit_Match(self, e):
        opt = self.lib.options.get(e.option)
        diags = self.diags
        if opt is None:
            diags.append(Diagnostic(e.span, "name", MSG_UNKNOWN_OPTION.format(name=e.option)))
        else:
            covered: Set[str] = set()
            for c in e.cases:
                for label in c.labels:
                    if label not in opt.choices:
                        diags.append(Diagnostic(c.span, "name", MSG_UNKNOWN_CHOICE.format(
                            option=opt.name, choice=label, choices=", ".join(opt.choices))))
                    elif label in covered:
                        diags.append(Diagnostic(c.span, "definition", MSG_DUPLICATE.format(
                            name=f"{opt.name}={label}", first="an earlier case")))
                    covered.add(label)
            missing = [c for c in opt.choices if c not in covered]
            if missing:
                diags.append(Diagnostic(e.span, "definition", MSG_MATCH_INCOMPLETE.format(
                    option=opt.name, missing=", ".join(missing))))
        self.generic_visit(e)

    def visit_With(self, e):
        if e.target.name in self.lib.symbols:
            self.diags.append(Diagnostic(e.target.span, "definition", f"'{e.target.name}' is a symbol: `with` "
                                         f"substitutes inside a term's expansion, so it takes a term"))
        if e.shape is not None and e.shape not in self.lib.shapes:
            known = ", ".join(sorted(self.lib.shapes)) or "none"
            self.diags.append(Diagnostic(e.span, "name", f"unknown shape '{e.shape}' (declared shapes: {known})"))
        self.bindings(e.bindings)
        self.visit(e.target)

    def bindings(self, bindings) -> None:
        seen: Set[str] = set()
        for b in bindings:
            if b.name not in self.lib.symbols:
                what = "a term" if b.name in self.lib.terms else "not declared"
                self.diags.append(Diagnostic(b.span, "name", f"'{b.name}' is {what}: `with` replaces symbols only"))
            elif b.name in seen:
                self.diags.append(Diagnostic(b.span, "definition", MSG_DUPLICATE.format(
                    name=b.name, first="an earlier binding of this `with`")))
            seen.add(b.name)
            self.check(b.expr, False)


def _check_regimes(lib: Library, diags, check_expr, declared) -> None:
    for r in lib.regimes.values():
        if r.extends is not None and r.extends not in lib.regimes:
            diags.append(Diagnostic(r.span, "name", MSG_UNKNOWN_REGIME.format(name=r.extends)))
        seen_phases = set()
        for ph in r.phases:
            if ph.name in seen_phases:
                diags.append(Diagnostic(ph.span, "definition", f"regime '{r.name}' declares the phase '{ph.name}' twice"))
            seen_phases.add(ph.name)
            for name, span in ph.terms:
                if name in lib.terms and (lib.terms[name].host or lib.terms[name].share):
                    kind = "host" if lib.terms[name].host else "share"
                    diags.append(Diagnostic(span, "definition", f"the component '{name}' is declared {kind}: it is "
                                            f"alive in every phase, add it to the regime instead of the phase '{ph.name}'"))
        phase_terms = [t for ph in r.phases for t in ph.terms]
        for name, span in r.add + r.drop + tuple(phase_terms):
            if name not in lib.terms:
                diags.append(Diagnostic(span, "name", MSG_UNKNOWN_COMPONENT.format(name=name)))
            elif name in declared and lib.terms[name].share:
                if fmt(declared[name]) != "1":
                    diags.append(Diagnostic(span, "unit", f"the component '{name}' is declared share (a fraction of the "
                                            f"other components) but has the unit {fmt(declared[name])}: a share has unit 1"))
            elif name in declared and fmt(declared[name]) != "byte":
                diags.append(Diagnostic(span, "unit", MSG_COMPONENT_UNIT.format(name=name, unit=fmt(declared[name]))))
        _check_choices(lib, diags, r.options)
        for let in r.lets:
            if let.name not in lib.symbols and let.name not in lib.terms:
                diags.append(Diagnostic(let.span, "name", MSG_UNKNOWN_NAME.format(name=let.name)))
                continue
            check_expr(let.expr, declared.get(let.name), "let", let.span, let.name)
    # inheritance cycles
    for r in lib.regimes.values():
        chain, cur = [r.name], r
        while cur.extends and cur.extends in lib.regimes:
            if cur.extends in chain:
                diags.append(Diagnostic(r.span, "cycle", MSG_CYCLE.format(chain=" -> ".join(chain + [cur.extends]))))
                break
            chain.append(cur.extends)
            cur = lib.regimes[cur.extends]


class _Names(A.Visitor):
    def __init__(self):
        self.found: List[A.Name] = []

    def visit_Name(self, e):
        self.found.append(e)


# A `latex` attribute goes into derivations as math: only a name's worth of LaTeX.
LATEX_COMMANDS = frozenset("""alpha beta gamma delta epsilon varepsilon zeta eta theta vartheta iota kappa lambda
mu nu xi pi varpi rho varrho sigma varsigma tau upsilon phi varphi chi psi omega Gamma Delta Theta Lambda Xi Pi
Sigma Upsilon Phi Psi Omega ell hbar prime mathrm mathit mathbf mathsf mathtt mathcal hat tilde bar vec dot ddot
widehat widetilde overline partial nabla infty star ast""".split())


def latex_problem(tex: str):
    """Why ``tex`` is not a LaTeX name vramsym will print, or None: letters, digits, ``_``, ``^``,
    ``'``, braces (balanced), spaces, and backslash commands from :data:`LATEX_COMMANDS` only."""
    depth = 0
    for ch in tex:
        depth += {"{": 1, "}": -1}.get(ch, 0)
        if depth < 0:
            return "closes a brace it did not open"
    if depth:
        return "leaves a brace open"
    for cmd in re.findall(r"\\([A-Za-z]+|.)", tex):
        if cmd not in LATEX_COMMANDS:
            return (f"uses \\{cmd}, which is not a math name command (allowed: Greek letters, \\mathrm, "
                    f"\\hat, ... in vramsym.lang.library.LATEX_COMMANDS)")
    bad = next((ch for ch in re.sub(r"\\[A-Za-z]+", "", tex) if not (ch.isalnum() or ch in "_^{}' ,.")), None)
    if bad is not None:
        return f"contains {bad!r}: a LaTeX name may hold letters, digits, _ ^ ' {{ }} and math commands"
    return None


def names_in(e: A.Expr) -> List[A.Name]:
    """Every name an expression reads, in order."""
    v = _Names()
    v.visit(e)
    return v.found


def _check_cycles(lib: Library, diags: List[Diagnostic]) -> None:
    graph: Dict[str, List[A.Name]] = {}
    spans: Dict[str, A.Span] = {}
    for t in lib.terms.values():
        graph[t.name] = names_in(t.expr)
        spans[t.name] = t.span
    for s in lib.symbols.values():
        graph[s.name] = names_in(s.default) if s.default is not None else []   # bounds may refer back
        spans[s.name] = s.span
    cycle = find_cycle({k: [n.name for n in v] for k, v in graph.items()})
    if cycle:
        diags.append(Diagnostic(spans[cycle[0]], "cycle", MSG_CYCLE.format(chain=" -> ".join(cycle))))


def find_cycle(graph: Dict[str, List[str]]) -> Optional[List[str]]:
    WHITE, GREY, BLACK = 0, 1, 2
    color = {k: WHITE for k in graph}
    stack: List[str] = []

    def dfs(u):
        color[u] = GREY
        stack.append(u)
        for v in graph.get(u, ()):
            if v not in color:
                continue
            if color[v] == GREY:
                return stack[stack.index(v):] + [v]
            if color[v] == WHITE:
                c = dfs(v)
                if c:
                    return c
        stack.pop()
        color[u] = BLACK
        return None

    for k in sorted(graph):
        if color[k] == WHITE:
            c = dfs(k)
            if c:
                return c
    return None
