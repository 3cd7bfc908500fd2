"""Stage 5: bind a model's numbers to a composed regime, then estimate or solve.

Each result carries its derivation as data (:class:`Step` records: regime
definition, term definitions, expansion, substitution, simplification,
solution), so printers render it later without recomputing anything.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Dict, List, Mapping, Optional, Tuple

import sympy

from . import ast as A
from .build import to_sympy
from .capacity import to_int_bytes
from .diagnostics import DoesNotFit, InputError, SolveError, suggest
from .library import Library, names_in
from .models import ModelSpec, config_value
from .regimes import Composed
from .inverse import largest_fitting
from .values import domain_problem, to_fraction


@dataclass(frozen=True)
class Step:
    kind: str            # definition | term | expansion | substitution | simplification | solution | check | result
    title: str
    lhs: Optional[str] = None
    expr: Optional[sympy.Expr] = None
    value: Optional[object] = None
    note: Optional[str] = None
    sources: Tuple[str, ...] = ()


@dataclass(frozen=True)
class Component:
    name: str
    description: str
    unit: str
    expr: sympy.Expr          # expanded, over symbols
    exact: Fraction           # exact bytes
    sources: Tuple[str, ...]

    @property
    def bytes(self) -> int:
        return to_int_bytes(self.exact)


@dataclass(frozen=True)
class Binding:
    values: Dict[str, Fraction]
    provenance: Dict[str, str]   # symbol -> "input" | "config:<key>" | "default"


@dataclass(frozen=True)
class Estimate:
    regime: str
    description: str
    model: str
    options: Tuple[Tuple[str, str], ...]
    binding: Binding
    components: Tuple[Component, ...]
    exact_total: Fraction
    steps: Tuple[Step, ...]
    notes: Tuple[str, ...] = ()
    used_options: Tuple[str, ...] = ()
    params: Optional[int] = None   # exact parameter count of the model (term P), when the regime uses it
    composed: Optional[Composed] = field(default=None, compare=False, repr=False)

    def term_bytes(self, name: str) -> int:
        """Any term the regime reaches (not only its components), evaluated with this estimate's values."""
        if self.composed is None or name not in self.composed.expanded:
            raise InputError(f"regime {self.regime} does not use a term '{name}'")
        e = self.composed.expanded[name].xreplace(
            {self.composed.symbols[k]: sympy.Rational(v.numerator, v.denominator) for k, v in self.binding.values.items()})
        return to_int_bytes(_as_fraction(e, name))

    @property
    def total_bytes(self) -> int:
        return to_int_bytes(self.exact_total)

    def largest(self) -> Component:
        return max(self.components, key=lambda c: c.exact)


@dataclass(frozen=True)
class Solution:
    variable: str              # symbol name
    alias: str                 # user-facing name (batch, seq, ...)
    value: int
    capacity_bytes: int
    method: str
    equation: sympy.Expr       # total as a function of the variable
    estimate: Estimate         # the estimate at the solution
    next_total_bytes: Optional[int]
    steps: Tuple[Step, ...]

    @property
    def total_bytes(self) -> int:
        return self.estimate.total_bytes


def _to_fraction(value, what: str) -> Fraction:
    v = to_fraction(value)
    if v is None:
        raise InputError(f"{what} is {value!r}, not a number")
    return v


def _check_domain(decl: A.SymbolDecl, v: Fraction, origin: str) -> None:
    bad = domain_problem(decl.domain, v)
    if bad:
        shown = decl.alias or decl.name
        raise InputError(f"{shown} ({decl.description}) must be {bad}, got {v} from {origin}")


def bind(lib: Library, composed: Composed, model: Optional[ModelSpec], inputs: Mapping[str, object],
         exclude: Tuple[str, ...] = ()) -> Binding:
    """Give every symbol the total needs a value: user input, then model config, then default."""
    values: Dict[str, Fraction] = {}
    prov: Dict[str, str] = {}
    user: Dict[str, object] = {}
    for k, v in inputs.items():
        decl = lib.symbol_by_alias(k)
        if decl is None:
            hint = suggest(k, [s.alias or s.name for s in lib.symbols.values()] + list(lib.symbols))
            raise InputError(f"unknown input '{k}'" + (f"; did you mean {', '.join(hint)}?" if hint else ""))
        if decl.name in composed.overridden:
            raise InputError(f"{k} is fixed by regime '{composed.regime}' (a `let` in its chain): "
                             f"it cannot also be given as an input")
        user[decl.name] = v
    cfg = model.config if model else {}

    def value_of(name: str, stack: Tuple[str, ...]) -> Fraction:
        if name in values:
            return values[name]
        decl = lib.symbols[name]
        if name in user:
            v = _to_fraction(user[name], f"input {decl.alias or name}")
            origin = "input"
        else:
            key, raw = config_value(cfg, decl.config_keys)
            if key is not None:
                if isinstance(raw, (list, dict)):
                    raise InputError(f"model config field '{key}' is {type(raw).__name__}, not a number "
                                     f"(needed for {decl.description})")
                v = _to_fraction(raw, f"model config field '{key}'")
                origin = f"config:{key}"
            elif decl.default is not None:
                if name in stack:
                    raise InputError(f"cyclic defaults: {' -> '.join(stack + (name,))}")
                deps = {n.name: value_of(n.name, stack + (name,)) for n in names_in(decl.default)
                        if n.name in lib.symbols}
                expr = to_sympy(decl.default, lambda n: composed.symbols[n], dict(composed.options))
                r = expr.xreplace({composed.symbols[k]: sympy.Rational(f.numerator, f.denominator)
                                   for k, f in deps.items()})
                if not r.is_Rational:
                    raise InputError(f"the default of {name} does not evaluate to a number")
                v = Fraction(int(r.p), int(r.q))
                origin = "default"
            else:
                if decl.config_keys:
                    where = (f"the model config ({model.source}) has none of the fields "
                             f"{', '.join(decl.config_keys)}") if model else "no model was given"
                    raise InputError(f"missing value for {decl.alias or name} ({decl.description}): {where}")
                flag = decl.alias or name
                how = f"--{flag} N" if flag in ("batch", "seq") else f"--set {name}=VALUE"
                raise InputError(f"missing value for {flag} ({decl.description}): give it with {how}")
        _check_domain(decl, v, origin if origin != "input" else "the input")
        values[name] = v
        prov[name] = origin
        return v

    for n in composed.free_symbols():
        if n not in exclude:
            value_of(n, ())
    for n in user:
        if n not in values and n not in exclude:
            value_of(n, ())
    return Binding(values, prov)


def _subs(composed: Composed, binding: Binding, skip: Tuple[str, ...] = ()) -> Dict[sympy.Symbol, sympy.Rational]:
    return {composed.symbols[k]: sympy.Rational(v.numerator, v.denominator)
            for k, v in binding.values.items() if k not in skip}


def _as_fraction(e: sympy.Expr, what: str) -> Fraction:
    if isinstance(e, int):
        return Fraction(e)
    if not e.is_Rational:
        e2 = sympy.nsimplify(e)
        if not e2.is_Rational:
            raise SolveError(f"{what} did not reduce to an exact number: {e}")
        e = e2
    return Fraction(int(e.p), int(e.q))


def _definition_steps(lib: Library, composed: Composed) -> List[Step]:
    from .build import placeholder
    steps = [Step("definition", f"Regime '{composed.regime}': {composed.description}", lhs="M",
                  expr=sympy.Add(*[placeholder(c) for c in composed.components], evaluate=False),
                  note="chain: " + " -> ".join(composed.chain) + "; options: " +
                       ", ".join(f"{k}={v}" for k, v in composed.options))]
    for name, d in composed.definitions.items():
        t = lib.terms.get(name)
        desc = t.description if t else f"override of {name} in this regime"
        srcs = t.sources if t else ()
        if name in composed.overridden:
            srcs = srcs + ("regime override (let)",)
        steps.append(Step("term", desc, lhs=name, expr=d, sources=srcs))
    return steps


def estimate(lib: Library, composed: Composed, model: Optional[ModelSpec], inputs: Mapping[str, object],
             binding: Optional[Binding] = None) -> Estimate:
    binding = binding or bind(lib, composed, model, inputs)
    subs = _subs(composed, binding)
    comps = []
    for c in composed.components:
        t = lib.terms[c]
        e = composed.expanded[c]
        v = _as_fraction(e.xreplace(subs), f"component {c}")
        comps.append(Component(c, t.description, lib.units.get(c, "byte"), e, v, t.sources))
    total = sum((c.exact for c in comps), Fraction(0))
    steps = _definition_steps(lib, composed)
    steps.append(Step("expansion", "Expanded into declared symbols", lhs="M", expr=composed.total))
    steps.append(Step("substitution", "Values", value={k: (binding.values[k], binding.provenance[k])
                                                      for k in sorted(binding.values)}))
    for c in comps:
        steps.append(Step("result", c.description, lhs=c.name, value=c.exact))
    steps.append(Step("result", "Total", lhs="M", value=total))
    from .regimes import used_options
    params = None
    if "P" in composed.expanded:
        p = composed.expanded["P"].xreplace(subs)
        if p.is_Rational:
            params = int(p)
    return Estimate(composed.regime, composed.description, model.name if model else "", composed.options,
                    binding, tuple(comps), total, tuple(steps), model.notes if model else (),
                    tuple(used_options(lib, composed)), params, composed)


def solve_max(lib: Library, composed: Composed, model: Optional[ModelSpec], inputs: Mapping[str, object],
              variable: str, capacity: int) -> Solution:
    decl = lib.symbol_by_alias(variable)
    if decl is None:
        ints = [s.alias or s.name for s in lib.symbols.values() if s.domain in ("posint", "nonnegint")]
        hint = suggest(variable, ints)
        raise InputError(f"cannot solve for '{variable}': no such symbol" +
                         (f"; did you mean {', '.join(hint)}?" if hint else f"; integer symbols: {', '.join(sorted(ints))}"))
    if decl.domain not in ("posint", "nonnegint"):
        raise InputError(f"cannot solve for '{variable}': it is not an integer symbol (domain {decl.domain})")
    name = decl.name
    if name in inputs or (decl.alias and decl.alias in inputs):
        raise InputError(f"'{decl.alias or name}' is both given and solved for: drop --{(decl.alias or name).replace('_', '-')}")
    if name not in composed.free_symbols():
        raise SolveError(f"the {composed.regime} total does not depend on {decl.alias or name} "
                         f"({decl.description}): there is nothing to solve")
    inputs = dict(inputs)
    cap_decl = lib.symbol_by_alias("capacity")
    if cap_decl is not None and cap_decl.name in composed.free_symbols() and not (
            "capacity" in inputs or cap_decl.name in inputs):
        inputs["capacity"] = capacity   # regimes that scale with the GPU (vLLM's reserve, heuristics)
    binding = bind(lib, composed, model, inputs, exclude=(name,))
    x = composed.symbols[name]
    subs = _subs(composed, binding)
    f = composed.total.xreplace(subs)
    lo = 1 if decl.domain == "posint" else 0
    at_lo = _as_fraction(f.xreplace({x: sympy.Integer(lo)}), "total at the minimum")
    if at_lo > capacity:
        low_inputs = dict(inputs)
        low_inputs[decl.alias or name] = lo
        est = estimate(lib, composed, model, low_inputs)
        big = est.largest()
        short = to_int_bytes(at_lo - capacity)
        raise DoesNotFit(
            f"nothing fits: even at {decl.alias or name}={lo} the total is {to_int_bytes(at_lo):,} B, "
            f"{short:,} B over the capacity of {capacity:,} B; the largest term is {big.name} "
            f"({big.description}) at {big.bytes:,} B",
            {"variable": decl.alias or name, "minimum": lo, "total_bytes_at_minimum": to_int_bytes(at_lo),
             "capacity_bytes": capacity, "shortfall_bytes": short,
             "largest_term": {"name": big.name, "bytes": big.bytes},
             "components": [{"name": c.name, "bytes": c.bytes} for c in est.components]})
    root = largest_fitting(f, x, capacity, lo=lo)
    final_inputs = dict(inputs)
    final_inputs[decl.alias or name] = root.value
    est = estimate(lib, composed, model, final_inputs)
    nxt = to_int_bytes(_as_fraction(f.xreplace({x: sympy.Integer(root.value + 1)}), "total above the solution"))
    steps = _definition_steps(lib, composed)
    steps.append(Step("expansion", "Expanded into declared symbols", lhs="M", expr=composed.total))
    steps.append(Step("substitution", f"Values (all but {name})",
                      value={k: (binding.values[k], binding.provenance[k]) for k in sorted(binding.values)}))
    steps.append(Step("simplification", f"Total as a function of {name}", lhs=f"M({name})", expr=root.equation))
    steps.append(Step("solution", f"Largest {name} with M({name}) <= C, C = {capacity:,} B ({root.method})",
                      lhs=name, expr=root.root, value=root.value))
    steps.append(Step("check", "Exact check on the integers", value={
        "at": (root.value, est.total_bytes), "next": (root.value + 1, nxt), "capacity": capacity}))
    return Solution(name, decl.alias or name, root.value, capacity, root.method, root.equation, est, nxt,
                    tuple(steps))
