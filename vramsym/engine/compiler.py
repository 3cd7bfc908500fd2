"""Stage 5, on a cache miss: the exact Python printer, and a composed regime prepared for export.

:class:`ExactPythonPrinter` prints every definition the engine runs
(:func:`vramsym.engine.units.compile_unit`, which :mod:`vramsym.engine.assemble` joins) and the
``export --to python`` module (:func:`python_module`, which :mod:`vramsym.printers.codegen` takes
from here): both are exact over ``int`` and ``Fraction``. :func:`prepare` binds a composed regime's
constants for the printers (``export``, the calculator page's groups). Only a cache miss imports
this module (and sympy).
"""
from __future__ import annotations

import keyword
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

import sympy
from sympy.printing.pycode import PythonCodePrinter

from ..catalog.paths import formulas_path
from ..errors import InputError, suggest
from ..lang.build import to_sympy
from ..lang.library import load_or_raise
from ..version import __version__


def load_library(extra=()):
    """The bundled formula files and ``extra`` ones, parsed and checked (lark, pint): a cache miss."""
    return load_or_raise([Path(formulas_path())] + [Path(p) for p in extra])


#: the key of a phase's total among a prepared regime's entries: ``phase:<name>``
PHASE_KEY = "phase:"


@dataclass(frozen=True)
class Entry:
    key: str             # "total" or a term name
    func: str            # function name
    expr: sympy.Expr     # over the argument symbols (bound values substituted)
    description: str
    unit: str
    sources: Tuple[str, ...]


@dataclass(frozen=True)
class Prepared:
    regime: str
    description: str
    options: Tuple[Tuple[str, str], ...]
    entries: Tuple[Entry, ...]
    args: Tuple[str, ...]              # symbol names, sorted
    bound: Dict[str, Fraction]
    terms: Tuple[str, ...]             # terms reached by the exported entries (for their sources)
    defaults: Dict[str, Tuple[Tuple[str, ...], sympy.Expr]] = None  # symbol -> (its arguments, default)
    bounds: Dict[str, Dict] = None     # symbol -> {"max"/"min": (arguments, expr), "divides": [symbols]}


def _rational(v) -> sympy.Rational:
    if isinstance(v, bool):
        v = int(v)
    if isinstance(v, float):
        v = Fraction(repr(v))
    if isinstance(v, str):
        try:
            v = Fraction(v.replace("_", ""))
        except (ValueError, ZeroDivisionError):
            raise InputError(f"bound value {v!r} is not a number") from None
    f = Fraction(v)
    return sympy.Rational(f.numerator, f.denominator)


def _reached(composed, roots: Sequence[str]) -> List[str]:
    """Terms reached from ``roots`` through the resolved definitions (unused match branches drop)."""
    out, seen, todo = [], set(), list(roots)
    while todo:
        n = todo.pop(0)
        if n in seen or n not in composed.definitions:
            continue
        seen.add(n)
        out.append(n)
        todo.extend(sorted(s.name for s in composed.definitions[n].free_symbols
                           if s.name in composed.definitions and s.name != n))
    return out


def prepare(composed, lib, binding_values: Optional[Mapping[str, object]] = None,
            term: Optional[str] = None, with_params: bool = False) -> Prepared:
    bound: Dict[str, Fraction] = {}
    subs: Dict[sympy.Symbol, sympy.Rational] = {}
    for k, v in (binding_values or {}).items():
        decl = lib.symbol_by_alias(k)
        if decl is None or decl.name not in composed.symbols:
            hint = suggest(k, list(lib.symbols))
            raise InputError(f"cannot bind '{k}': no such symbol" + (f"; did you mean {', '.join(hint)}?" if hint else ""))
        r = _rational(v)
        bound[decl.name] = Fraction(int(r.p), int(r.q))
        subs[composed.symbols[decl.name]] = r
    regime = composed.regime
    entries: List[Entry] = []
    if term is None:
        phases = composed.phases or ()
        desc = composed.description
        if len(phases) > 1:
            desc += " (the largest phase total: " + ", ".join(p.name for p in phases) + ")"
        entries.append(Entry("total", f"{regime}_total", composed.total.xreplace(subs), desc, "byte", ()))
        if len(phases) > 1:      # each phase's total: its components, the ones alive in every phase with its own
            for ph in phases:
                entries.append(Entry(PHASE_KEY + ph.name, f"{regime}_phase_{ph.name}",
                                     composed.phase_totals[ph.name].xreplace(subs),
                                     f"phase {ph.name}: {ph.description}", "byte", ()))
        keys = list(composed.components)
    else:
        if term not in composed.expanded:
            hint = suggest(term, list(composed.expanded))
            raise InputError(f"term '{term}' is not part of regime '{regime}'" +
                             (f"; did you mean {', '.join(hint)}?" if hint else
                              f"; its components are {', '.join(composed.components)}"))
        keys = [term]
    for k in keys:
        t = lib.terms.get(k)
        entries.append(Entry(k, f"{regime}_{k}", composed.expanded[k].xreplace(subs),
                             t.description if t else f"{k} (regime override)",
                             lib.units.get(k, "byte"), tuple(t.sources) if t else ()))
    used = set().union(*[e.expr.free_symbols for e in entries])
    if with_params and "P" in composed.expanded and composed.expanded["P"].free_symbols <= used:
        # the model's size, when the regime's total reads everything it needs (a regime that
        # overrides the parameter count with a number does not ask for the model's widths)
        entries.append(Entry("P", f"{regime}_params", composed.expanded["P"].xreplace(subs),
                             "parameters of the model", "parameter", ()))
    args = sorted({s.name for e in entries for s in e.expr.free_symbols})
    reached = _reached(composed, list(composed.components) if term is None else [term])
    defaults, bounds = _defaults(composed, lib, args, bound)
    return Prepared(regime, composed.description, composed.options, tuple(entries), tuple(args), bound,
                    tuple(reached), defaults, bounds)


def _defaults(composed, lib, args, bound):
    """The defaults and bounds of the free symbols and of every symbol those read, in order:
    (defaults, bounds) with defaults: symbol -> (its arguments, expression) and bounds:
    symbol -> {"max"|"min": (arguments, expression), "divides": [symbols]}."""
    defaults: Dict[str, Tuple[Tuple[str, ...], sympy.Expr]] = {}
    bounds: Dict[str, Dict] = {}
    seen = set()
    todo = [a for a in args if a in lib.symbols]
    while todo:
        n = todo.pop(0)
        if n in seen or n in bound:
            continue
        seen.add(n)
        d = lib.symbols[n]
        for kind, e in (("default", d.default), ("max", d.max), ("min", d.min)):
            if e is None:
                continue
            x = to_sympy(e, lambda s: composed.symbols[s], dict(composed.options))
            deps = tuple(sorted(s.name for s in x.free_symbols))
            if kind == "default":
                defaults[n] = (deps, x)
            else:
                bounds.setdefault(n, {})[kind] = (deps, x)
            todo.extend(s for s in deps if s in lib.symbols)
        if d.divides:
            bounds.setdefault(n, {})["divides"] = list(d.divides)
            todo.extend(d.divides)
    return defaults, bounds


# ---------------------------------------------------------------------------
# escaping and identifiers

def py_string(text: str) -> str:
    """A triple-quoted Python literal (a docstring) holding ``text`` verbatim, whatever it holds:
    backslashes and quotes are escaped, so it can never end early or run."""
    body = str(text).replace("\\", "\\\\").replace('"', '\\"')
    return '"""' + body + '"""'


_PY_RESERVED = set(keyword.kwlist) | {"Fraction", "math", "min", "max", "int", "float", "numpy",
                                       "functools", "_exact"}

def _safe(name: str, reserved: set) -> str:
    while name in reserved:
        name += "_"
    return name


# ---------------------------------------------------------------------------
# the exact Python printer

class _Renaming:
    """Mixin: print symbols under their target-safe names."""
    _renames: Dict[str, str] = {}

    def _print_Symbol(self, expr):
        return self._renames.get(expr.name, expr.name)


class ExactPythonPrinter(_Renaming, PythonCodePrinter):
    """Pure Python, exact over ``int`` and ``Fraction`` arguments: rationals print as
    ``Fraction(p, q)``, every quotient as ``_q(numerator, denominator)`` (never ``/``, which
    would turn two ints into a float): an ``int`` when it divides, else a ``Fraction``, so
    integers stay ``int`` (fast arithmetic)."""

    def __init__(self, renames, settings=None):
        super().__init__(dict(settings or {}, fully_qualified_modules=True, order="none"))
        self._renames = renames

    def _print_Rational(self, expr):
        return f"Fraction({expr.p}, {expr.q})"

    def _print_Mul(self, expr):
        num, den = [], []
        for f in sympy.Mul.make_args(expr):
            if f.is_Pow and f.exp.is_Integer and f.exp < 0:
                den.append(f.base ** -f.exp)
            elif f.is_Rational and not f.is_Integer:
                num.append(sympy.Integer(f.p))
                den.append(sympy.Integer(f.q))
            else:
                num.append(f)
        if not den:
            return super()._print_Mul(expr)
        num = [x for x in num if x != 1]
        n = sympy.Mul(*num, evaluate=False) if len(num) > 1 else (num[0] if num else sympy.Integer(1))
        d = sympy.Mul(*den, evaluate=False) if len(den) > 1 else den[0]
        return f"_q({self._print(n)}, {self._print(d)})"

    def _print_Pow(self, expr, rational=False):
        if not expr.exp.is_Integer:
            raise InputError(f"cannot compile {expr} exactly: only whole-number powers have exact values")
        if expr.exp < 0:
            return f"_q(1, {self._print(expr.base ** -expr.exp)})"
        return super()._print_Pow(expr, rational)

    def _print_Half(self, expr):
        return self._print_Rational(expr)

    def _print_PyMax(self, expr):
        return "max(" + ", ".join(self._print(a) for a in expr.args) + ")"

    def _print_PyMin(self, expr):
        return "min(" + ", ".join(self._print(a) for a in expr.args) + ")"


# ---------------------------------------------------------------------------
# the exact Python module (``export --to python``)

def _arg_doc(lib, name: str, with_name: bool = True) -> str:
    d = lib.symbols.get(name)
    unit = lib.units.get(name, "1")
    head = f"{name} [{unit}]" if with_name else f"[{unit}]"
    if d is None:
        return head
    bits = [f"{head}: {d.description}", f"domain {d.domain}"]
    if d.alias:
        bits.append(f"alias {d.alias}")
    if d.config_keys:
        bits.append("config " + " | ".join(d.config_keys))
    return "; ".join(bits)


def _header_lines(p: Prepared, lib, target: str) -> List[str]:
    lines = [f"Memory of regime '{p.regime}': {p.description}.",
             f"Generated by vramsym {__version__} (target {target}) from the regime's formulas; "
             f"results are in bytes unless a term's unit says otherwise.",
             "Options: " + ", ".join(f"{k}={v}" for k, v in p.options) + "."]
    if p.bound:
        lines.append("Bound constants: " + ", ".join(f"{k} = {v}" for k, v in sorted(p.bound.items())) + ".")
    lines.append("Arguments (sorted by name):" if p.args else "Arguments: none.")
    lines += ["  " + _arg_doc(lib, a) for a in p.args]
    lines.append("Functions:")
    for e in p.entries:
        lines.append(f"  {e.func}: {e.description} [{e.unit}]")
        lines += [f"    source: {s}" for s in e.sources]
    return lines


def _py_module_head(p: Prepared, lib, target: str, ren, note, imports) -> List[str]:
    """Docstring (header + a note on the arithmetic), imports, __all__ and ARGUMENTS of a Python module."""
    doc = "\n".join(_header_lines(p, lib, target))
    return ([py_string("\n".join([doc, ""] + note))] + imports
            + ["", f"__all__ = {[e.func for e in p.entries]!r}", f"ARGUMENTS = {list(ren[a] for a in p.args)!r}", ""])


def py_module_start(p: Prepared, lib, target: str, printer, note, imports):
    """What a Python-family export (exact Python, NumPy) starts with: the arguments renamed off
    Python's reserved words, the expression printer over them, the parameter list, and the
    module's first lines (:func:`_py_module_head`): ``(ren, printer, params, lines)``."""
    ren = {a: _safe(a, _PY_RESERVED) for a in p.args}
    return ren, printer(ren), ", ".join(ren[a] for a in p.args), _py_module_head(p, lib, target, ren, note, imports)


class PyMax(sympy.Function):
    """sympy's Max as a plain function (no evaluation): what Python's ``max`` computes."""


class PyMin(sympy.Function):
    """sympy's Min as a plain function (no evaluation): what Python's ``min`` computes."""


#: Max / Min held as PyMax / PyMin through the common-subexpression elimination, whose rebuild of
#: a sympy Max compares every pair of its arguments (seconds per regime); printed as max / min
_PY_MINMAX = {sympy.Max: PyMax, sympy.Min: PyMin}


def _hold_piecewise(expr, prefix: str):
    """``expr`` with each Piecewise that no other Piecewise holds replaced by a symbol, and those
    ``{symbol: Piecewise}`` in a stable order. The changed nodes are rebuilt unevaluated (a
    regime's total is an unevaluated Max of its phases: ``xreplace`` would evaluate it, which
    compares every pair of phases, seconds per regime)."""
    held: Dict = {}

    def walk(e):
        if isinstance(e, sympy.Piecewise):
            if e not in held:
                held[e] = sympy.Symbol(f"{prefix}pw{len(held)}")
            return held[e]
        if not e.args:
            return e
        args = [walk(a) for a in e.args]
        if isinstance(e, (sympy.Max, sympy.Min)):       # Python's own max / min, which cse's rebuild
            return _PY_MINMAX[type(e)](*args)           # cannot evaluate (sympy's compares every pair)
        if all(a is b for a, b in zip(args, e.args)):
            return e
        return e.func(*args, evaluate=False)
    out = walk(expr)
    return out, {v: k for k, v in held.items()}


def shared_subexpressions(expr, printer, taken) -> List[str]:
    """The body of a function returning ``expr``: each subexpression that occurs more than once is
    computed once into a local (sympy's common-subexpression elimination: a training total of
    ~10,000 operations runs in ~300), then the result. Exact as before: the locals are the same
    sympy subexpressions, printed by the same exact printer. A Piecewise is a conditional
    expression, whose untaken branch Python never evaluates (a division by zero there is harmless);
    so no subexpression is taken out of one: each outermost Piecewise becomes a local of its own,
    printed whole, in the place the expression already evaluated it."""
    prefix = "_v"
    while any(t.startswith(prefix) for t in taken):
        prefix += "_"
    held, pieces = _hold_piecewise(expr, prefix)
    lines = [f"    {sym.name} = {printer.doprint(pw)}" for sym, pw in pieces.items()]
    reps, (reduced,) = sympy.cse([held], symbols=sympy.numbered_symbols(prefix), optimizations=None, order="none")
    lines += [f"    {sym.name} = {printer.doprint(value)}" for sym, value in reps]
    return lines + [f"    return {printer.doprint(reduced)}"]


def python_module(p: Prepared, lib) -> str:
    """Each function ``f`` is a thin wrapper that makes its arguments exact and calls ``_f``, the
    exact arithmetic over ``int``/``Fraction`` values that vramsym's compiled regimes run."""
    ren, pr, params, out = py_module_start(p, lib, "python", ExactPythonPrinter, [
        "Exact: every argument is converted with Fraction() (pass ints, Fractions or decimal",
        "strings); a result is an int when whole, else a Fraction. No sympy needed."],
        ["from fractions import Fraction", "import math"])
    out += ["",
           "def _exact(value):",
           "    value = Fraction(value)",
           "    return value.numerator if value.denominator == 1 else value",
           "",
           "",
           "def _q(n, d):",
           "    \"\"\"n / d exactly: an int when d divides n, else a Fraction.\"\"\"",
           "    if type(n) is int and type(d) is int:",
           "        q, r = divmod(n, d)",
           "        if not r:",
           "            return q",
           "    return Fraction(n, d)",
           ""]
    for e in p.entries:
        call = f"_{e.func}(" + ", ".join(f"_exact({ren[a]})" for a in p.args) + ")"
        out += ["", f"def {e.func}({params}):", "    " + py_string(f"{e.description} [{e.unit}]."),
                f"    return _exact({call})", "",
                "", f"def _{e.func}({params}):", *shared_subexpressions(e.expr, pr, ren.values()), ""]
    if p.defaults:
        out += ["", "# defaults of symbols a model's config may leave out (symbol: its arguments)"]
        for name, (deps, expr) in p.defaults.items():
            dren = {d: _safe(d, _PY_RESERVED) for d in deps}
            out += ["", f"def _default_{name}({', '.join(dren[d] for d in deps)}):",
                    f"    return {ExactPythonPrinter(dren).doprint(expr)}", ""]
        out += [f"DEFAULTS = {{{', '.join(f'{n!r}: {tuple(d)!r}' for n, (d, _) in p.defaults.items())}}}", ""]
    if p.bounds:
        out += ["", "# bounds of symbols that other symbols limit (symbol: its arguments)"]
        for name, b in p.bounds.items():
            for kind in ("max", "min"):
                if kind in b:
                    deps, expr = b[kind]
                    dren = {d: _safe(d, _PY_RESERVED) for d in deps}
                    out += ["", f"def _{kind}_{name}({', '.join(dren[d] for d in deps)}):",
                            f"    return {ExactPythonPrinter(dren).doprint(expr)}", ""]
    return "\n".join(out)


def _multiple_bounds(lib, composed, prep) -> dict:
    """The ``multiple`` bounds of the symbols the regime reads, as code (``_multiple_<symbol>``),
    with the defaults of the symbols they read that the printer did not reach:
    ``{"code": str, "multiple": symbol -> (arguments, expression), "defaults": {...}}``."""
    opts = dict(composed.options)
    reached = [n for n in composed_symbols(prep) if n in lib.symbols]
    multiple, defaults, lines = {}, {}, []
    todo, seen = list(reached), set()
    while todo:
        n = todo.pop(0)
        if n in seen or n in prep.bound:
            continue
        seen.add(n)
        d = lib.symbols[n]
        for kind, e in (("default", d.default), ("multiple", d.multiple)):
            if e is None or (kind == "default" and n in reached):
                continue        # a default of a symbol the printer reached is printed already
            x = to_sympy(e, lambda s: composed.symbols[s], opts)
            deps = tuple(sorted(s.name for s in x.free_symbols))
            todo.extend(s for s in deps if s in lib.symbols)
            (multiple if kind == "multiple" else defaults)[n] = (deps, x)
            ren = {a: _safe(a, _PY_RESERVED) for a in deps}
            lines += ["", f"def _{kind}_{n}({', '.join(ren[a] for a in deps)}):",
                      f"    return {ExactPythonPrinter(ren).doprint(x)}", ""]
    return {"code": "\n".join(["", "# whole-multiple bounds (symbol: its arguments)", *lines]) if lines else "",
            "multiple": multiple, "defaults": defaults}


def _text(lib, expr) -> str:
    """A bound as messages show it: each symbol by its command-line name (``seq``, ``tp``)."""
    ren = {x: sympy.Symbol(lib.symbols[x.name].alias) for x in expr.free_symbols
           if x.name in lib.symbols and lib.symbols[x.name].alias}
    return str(expr.xreplace(ren))


def composed_symbols(prep):
    """The symbols a prepared regime reads, with those its defaults and bounds read."""
    out = list(prep.args)
    for deps, _ in prep.defaults.values():
        out += deps
    for b in prep.bounds.values():
        for kind, v in b.items():
            out += v if kind == "divides" else v[0]
    return list(dict.fromkeys(out))
