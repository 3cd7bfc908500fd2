"""Stage 5, on a cache miss: each definition of the formula files compiled once, on its own.

A regime's total is made of definitions (terms, a regime's ``let`` overrides, the defaults and
bounds of symbols). Each definition is compiled by itself, for each choice of the options its own
``match`` expressions read on the way to a case (:func:`tree`), into a *unit*: exact Python (the
printer of ``export --to python``, :class:`vramsym.engine.compiler.ExactPythonPrinter`) in which
every name it reads is a marker ``@name@``, the other definitions it reads stay names, and each
``TERM with {...}`` stays a reference to the term evaluated under other symbol values.
:mod:`vramsym.engine.assemble` joins the units of one regime and option choice into the
module that runs, without sympy; so the cost of compiling depends on the definitions, never on
how many option combinations there are (about 1,700 units cover every combination of every
regime). :func:`digest` gives the library's structure the assembler reads, as plain data.

Only a cache miss imports this module (and sympy).
"""
from __future__ import annotations

import json
import re
from fractions import Fraction
from typing import Dict, List, Optional, Tuple

import sympy

from ..lang import ast as A
from ..lang.build import Substituted, make_symbol, placeholder, to_sympy
from ..lang.library import names_in
from ..lang.parse import deep_recursion
from .compiler import ExactPythonPrinter, _hold_piecewise, _text, load_library  # noqa: F401  (runtime's miss)
from .options import _chain, assembled
from .regimes import _Options
from .unit_keys import UNIT_FORMAT, unit_key


#: the bounds a symbol declares with an expression, and its default
SYMBOL_KINDS = ("default", "max", "min", "multiple")


# ---------------------------------------------------------------------------
# which definition: a reference, and the options its matches read on the way to a case

def term_ref(name: str) -> str:
    return "t:" + name


def let_ref(regime: str, name: str) -> str:
    return f"l:{regime}:{name}"


def symbol_ref(name: str, kind: str) -> str:
    return f"s:{name}:{kind}"


def expr_of(lib, ref: str) -> A.Expr:
    kind, _, rest = ref.partition(":")
    if kind == "t":
        return lib.terms[rest].expr
    if kind == "l":
        regime, _, name = rest.partition(":")
        return next(l.expr for l in lib.regimes[regime].lets if l.name == name)
    name, _, which = rest.partition(":")
    return getattr(lib.symbols[name], which)


def _children(lib, e):
    if isinstance(e, A.With) and e.shape is not None:      # a shape's values are part of the expression
        return (e.target,) + tuple(b.expr for b in lib.shapes[e.shape].bindings)
    return A.children(e)


def _undecided(lib, e, fixed) -> Optional[str]:
    """The first option a ``match`` reads, in evaluation order, that ``fixed`` does not choose."""
    if isinstance(e, A.Match):
        if e.option not in fixed:
            return e.option
        for c in e.cases:
            if fixed[e.option] in c.labels:
                return _undecided(lib, c.expr, fixed)
        return None
    for c in _children(lib, e):
        o = _undecided(lib, c, fixed)
        if o is not None:
            return o
    return None


def tree(lib, ref: str, fixed: Tuple[Tuple[str, str], ...] = ()) -> dict:
    """How ``ref``'s unit is chosen: ``{"o": option, "c": {choice: subtree}}`` or, once every
    option read on the way is chosen, ``{"u": unit key, "p": the choices, in order, "n": the
    terms the chosen cases read}`` (a term that is 0 under the options is substituted: the unit's
    key then names it, :func:`specialized`)."""
    e = expr_of(lib, ref)
    o = _undecided(lib, e, dict(fixed))
    if o is None:
        names = sorted(set(_names_on_path(lib, e, dict(fixed))))
        return {"u": unit_key(ref, fixed), "p": [list(kv) for kv in fixed], "n": names}
    return {"o": o, "c": {c: tree(lib, ref, fixed + ((o, c),)) for c in lib.options[o].choices}}


def _names_on_path(lib, e, fixed):
    if isinstance(e, A.Name):
        yield e.name
        return
    if isinstance(e, A.Match):
        for c in e.cases:
            if fixed[e.option] in c.labels:
                yield from _names_on_path(lib, c.expr, fixed)
        return
    for c in _children(lib, e):
        yield from _names_on_path(lib, c, fixed)


# ---------------------------------------------------------------------------
# the library's structure, as data

def _options_in(e) -> List[str]:
    v = _Options()
    v.visit(e)
    return sorted(v.used)


def digest(lib) -> dict:
    """What the assembler reads of the library: each regime's chain, components, phases and
    overrides; each term's description, unit, sources and flags; each symbol's table entry; each
    definition's unit tree, the options anywhere in it and the names it reads (all cases)."""
    refs: List[str] = [term_ref(n) for n in lib.terms]
    regimes = {}
    for name in lib.regimes:
        chain = _chain(lib, name)
        components, phase_defs, lets = assembled(chain)
        owner = {}
        for r in chain:
            for l in r.lets:
                owner[l.name] = r.name
        let_refs = {n: let_ref(owner[n], n) for n in lets}
        refs += [r for r in let_refs.values() if r not in refs]
        regimes[name] = {"description": chain[-1].description, "chain": [r.name for r in chain],
                         "components": list(components),
                         "phases": [[n, d, list(own)] for n, (d, own) in phase_defs.items()],
                         "lets": let_refs}
    symbols = {}
    for n, d in lib.symbols.items():
        m = {"alias": d.alias, "domain": d.domain, "keys": list(d.config_keys), "description": d.description,
             "unit": lib.units.get(n, "1"), "divides": list(d.divides), "range": None}
        for kind in SYMBOL_KINDS:
            e = getattr(d, kind)
            m[kind] = symbol_ref(n, kind) if e is not None else None
            if e is not None:
                refs.append(symbol_ref(n, kind))
        if d.low is not None:
            m["range"] = [str(_constant(lib, d.low)), str(_constant(lib, d.high))]
        symbols[n] = m
    terms = {n: {"description": t.description, "unit": lib.units.get(n, "byte"), "host": bool(t.host),
                 "share": bool(t.share), "sources": list(t.sources)} for n, t in lib.terms.items()}
    exprs = {}
    for r in refs:
        e = expr_of(lib, r)
        exprs[r] = {"tree": tree(lib, r), "options": _options_in(e),
                    "names": list(dict.fromkeys(x.name for x in names_in(e)))}
    return {"format": UNIT_FORMAT, "regimes": regimes, "terms": terms, "symbols": symbols, "exprs": exprs,
            "options": {n: {"default": o.default, "keys": list(o.config_keys)} for n, o in lib.options.items()},
            "presets": {n: sorted({o for _, assigns, _ in p.cases for o, _, _ in assigns})
                        for n, p in lib.presets.items()}}


def _constant(lib, expr):
    x = to_sympy(expr, lambda s: make_symbol(lib.symbols[s]), {})
    return Fraction(str(x))


# ---------------------------------------------------------------------------
# one unit

class _Markers(dict):
    """Every name printed as ``@name@``: the assembler renames each one."""

    def get(self, name, default=None):
        return f"@{name}@"


class _Chosen(dict):
    def __missing__(self, option):
        raise AssertionError(f"option {option} read off the unit's path")


def _hold_withs(expr) -> Tuple[sympy.Expr, List[dict]]:
    """``expr`` with each ``TERM with {...}`` (innermost first) replaced by a symbol ``_w<i>``,
    and those as ``{"var", "target", "binds": [[symbol, value], ...]}``."""
    withs: List[dict] = []

    def walk(e):
        if not e.args:
            return e
        args = [walk(a) for a in e.args]
        if isinstance(e, Substituted):
            target, rest = args[0], args[1:]
            var = sympy.Symbol(f"_w{len(withs)}")
            withs.append({"var": var.name, "target": target.name,
                          "binds": [[k.name, v] for k, v in zip(rest[0::2], rest[1::2])]})
            return var
        if all(a is b for a, b in zip(args, e.args)):
            return e
        return e.func(*args)
    return walk(expr), withs


def _body(expr, printer, prefix: str):
    """(lines, result): the locals (Piecewise held whole, common subexpressions once) and the
    returned expression, as :func:`vramsym.engine.compiler.shared_subexpressions` prints them."""
    held, pieces = _hold_piecewise(expr, prefix)
    lines = [[sym.name, printer.doprint(pw)] for sym, pw in pieces.items()]
    reps, (reduced,) = sympy.cse([held], symbols=sympy.numbered_symbols(prefix), optimizations=None, order="none")
    lines += [[sym.name, printer.doprint(value)] for sym, value in reps]
    return lines, printer.doprint(reduced)


def compile_unit(lib, key: str) -> dict:
    """The unit ``key`` (:func:`unit_key`): its definition as sympy with the chosen cases, printed."""
    ref, path, zeros = key.split("|")
    zeros = [z for z in zeros[2:].split(",") if z]
    options = _Chosen(kv.split("=", 1) for kv in path.split(",") if kv)
    e = expr_of(lib, ref)
    symbols = {}

    def resolve(n):
        if n in lib.symbols:
            if n not in symbols:
                symbols[n] = make_symbol(lib.symbols[n])
            return symbols[n]
        return placeholder(n)
    with deep_recursion():
        x = to_sympy(e, resolve, options, lib.shapes)
        definition = str(x)      # as the formula files write it, before the zeros
        if zeros:        # the terms that are 0 here, and so any `TERM with {...}` of one of them
            x = _without(x.xreplace({placeholder(z): sympy.Integer(0) for z in zeros}))
        held, withs = _hold_withs(x)
        printer = ExactPythonPrinter(_Markers())
        for w in withs:
            w["binds"] = [[k, printer.doprint(v)] for k, v in w["binds"]]
        lines, result = _body(held, printer, "_v")
        wvars = {w["var"] for w in withs}
        names = {s.name for s in held.free_symbols} - wvars
        for w in withs:         # the names the binding values read
            for _, code in w["binds"]:
                names |= set(_marked(code)) - wvars
        names = sorted(names)
        zero = x == 0
        zero_if, zero_if_all = _zero_rules(lib, held, withs) if not zero else ([], False)
        text = _text(lib, x) if ref.startswith("s:") else None
    return {"format": UNIT_FORMAT, "args": names, "withs": withs, "lines": lines, "result": result,
            "definition": definition, "zero": bool(zero), "zero_if": zero_if, "zero_if_all": zero_if_all,
            "text": text,
            "path": [kv.split("=", 1) for kv in path.split(",") if kv]}


def _zero_rules(lib, held, withs):
    """When the unit is 0 because terms it reads are: ``zero_if``, the terms any one of which makes
    it 0 (a factor of it, or of each of its summands), and ``zero_if_all``, whether all of them
    together do (each summand, max or branch reads one as a factor). What the assembler reads
    where no unit with those terms substituted is at hand (the unit itself is then exact, only its
    arguments may be more than sympy's substitution leaves). Read off the expression's structure
    (an under-approximation: a unit it does not call 0 is computed, and is 0)."""
    targets = {w["var"]: w["target"] for w in withs}

    def term(x):
        return x.is_Symbol and (x.name in targets or x.name not in lib.symbols)

    def factors(e) -> set:
        if term(e):
            return {targets.get(e.name, e.name)}
        if e.is_Mul:
            return set().union(*(factors(a) for a in e.args))
        if e.is_Add:
            return set.intersection(*(factors(a) for a in e.args))
        if e.is_Pow and e.exp.is_positive:
            return factors(e.base)
        return set()

    def all_zero(e) -> bool:
        if e.is_Symbol:
            return term(e)
        if e.is_Number:
            return e == 0
        if e.is_Mul:
            return any(all_zero(a) for a in e.args)
        if e.is_Add or isinstance(e, (sympy.Max, sympy.Min)):
            return all(all_zero(a) for a in e.args)
        if e.is_Pow and e.exp.is_positive:
            return all_zero(e.base)
        if isinstance(e, sympy.Piecewise):
            return all(all_zero(x) for x, _ in e.args)
        return False
    return sorted(factors(held)), bool(all_zero(held))


def _without(x):
    """``x`` with each ``TERM with {...}`` whose term is 0 replaced by 0 (and what that simplifies)."""
    if not x.has(Substituted):
        return x
    return x.replace(lambda e: isinstance(e, Substituted) and e.args[0] == 0, lambda e: sympy.Integer(0))


def _marked(code: str) -> List[str]:
    return re.findall(r"@([A-Za-z_][A-Za-z0-9_]*)@", code)




def pack(units: Dict[str, dict]) -> bytes:
    return json.dumps(units, separators=(",", ":"), sort_keys=True).encode("utf-8")
