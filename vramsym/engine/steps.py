"""The derivation of a result as data: :class:`Step` records for the printers.

A result (:class:`~vramsym.engine.results.Estimate` or :class:`~vramsym.engine.results.Solution`) holds
the numbers of the compiled regime; its derivation re-composes the same regime with
sympy to show each definition, the expansion, the substitution of the bound values
and, for a solve, the total as a function of the variable and its exact real root.
The numbers shown are the result's own; the closed form explains them and is checked
against them.
"""
from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import List, Optional, Tuple

import sympy

from ..lang.build import placeholder
from ..records import Domain
from .regimes import compose
from .results import Solution


@dataclass(frozen=True)
class Step:
    kind: str            # definition | term | expansion | substitution | simplification | solution | check | result
    title: str
    lhs: Optional[str] = None
    expr: Optional[sympy.Expr] = None
    value: Optional[object] = None
    note: Optional[str] = None
    sources: Tuple[str, ...] = ()


def _rat(v) -> sympy.Rational:
    v = Fraction(v)
    return sympy.Rational(v.numerator, v.denominator)


def _definition_steps(lib, composed) -> List[Step]:
    gpu = [c for c in composed.components if c not in composed.host]
    note = "chain: " + " -> ".join(composed.chain) + "; options: " + ", ".join(f"{k}={v}" for k, v in composed.options)
    if len(composed.phases) > 1:
        # the timeline: the components alive in every phase, plus the largest of the phases' own terms
        static = [placeholder(c) for c in composed.static if c not in composed.host]
        own = [sympy.Add(*[placeholder(c) for c in p.own], evaluate=False) if p.own else sympy.Integer(0)
               for p in composed.phases]
        expr = sympy.Add(*static, sympy.Max(*own, evaluate=False), evaluate=False)
        note += "; phases (the max, in order): " + "; ".join(
            f"{p.name}: {', '.join(p.own) or 'nothing more'} ({p.description})" for p in composed.phases)
    else:
        expr = sympy.Add(*[placeholder(c) for c in gpu], evaluate=False)
    steps = [Step("definition", f"Regime '{composed.regime}': {composed.description}", lhs="M", expr=expr, note=note)]
    for name, d in composed.definitions.items():
        t = lib.terms.get(name)
        desc = t.description if t else f"override of {name} in this regime"
        srcs = t.sources if t else ()
        if name in composed.overridden:
            srcs = srcs + ("regime override (let)",)
        steps.append(Step("term", desc, lhs=name, expr=d, sources=srcs))
    return steps


def closed_form(f: sympy.Expr, x: sympy.Symbol, capacity: int, lo: int):
    """The largest real root of ``f(x) = capacity`` at or above ``lo`` when ``f`` is a polynomial
    in ``x`` of degree at most 4, else None."""
    fe = sympy.expand(f)
    if not fe.is_polynomial(x):
        return fe, None
    p = sympy.Poly(fe, x)
    if p.degree() < 1 or p.degree() > 4:
        return fe, None
    roots = [r for r in sympy.real_roots((p - capacity).as_expr(), multiple=True) if r >= lo]
    if not roots:
        return fe, None
    r = max(roots)
    return fe, (r if r.is_Rational else sympy.nsimplify(r))


def derivation_steps(result, lib) -> List[Step]:
    sol = result if isinstance(result, Solution) else None
    est = sol.estimate if sol is not None else result
    composed = compose(lib, est.regime, dict(est.options))
    values, prov = est.binding.values, est.binding.provenance
    steps = _definition_steps(lib, composed)
    steps.append(Step("expansion", "Expanded into declared symbols", lhs="M", expr=composed.total))
    if sol is None:
        steps.append(Step("substitution", "Values", value={k: (values[k], prov[k]) for k in sorted(values)}))
        for c in est.components:
            steps.append(Step("result", c.description, lhs=c.name, value=c.exact))
        if len(est.phases) > 1:
            for p in est.phases:
                steps.append(Step("result", f"phase {p.name}: {p.description}" +
                                  (" (the peak)" if p.name == est.peak_phase.name else ""),
                                  lhs=f"M_{p.name}", value=p.exact))
        steps.append(Step("result", "Total" + (f" (the peak phase, {est.peak_phase.name})" if len(est.phases) > 1 else ""),
                          lhs="M", value=est.exact_total))
        return steps
    name = sol.variable
    x = composed.symbols[name]
    rest = {k: v for k, v in values.items() if k != name}
    steps.append(Step("substitution", f"Values (all but {name})",
                      value={k: (rest[k], prov[k]) for k in sorted(rest)}))
    # the solve works on the peak: the closed form is that of the phase whose total is the answer's
    peak = composed.phase_totals[est.peak_phase.name] if len(composed.phases) > 1 else composed.total
    f = peak.xreplace({composed.symbols[k]: _rat(v) for k, v in rest.items()})
    lo = Domain(lib.symbols[name].domain).lowest
    fe, root = closed_form(f, x, sol.capacity_bytes, lo)
    steps.append(Step("simplification", f"Total as a function of {name}" + (
        f" (the peak phase, {est.peak_phase.name})" if len(composed.phases) > 1 else ""), lhs=f"M({name})", expr=fe))
    if root is not None and int(sympy.floor(root)) != sol.value:
        root = None     # the real root does not floor to the answer (a step in the total): no closed form
    how = "closed form, confirmed by the exact integer search" if root is not None else sol.method
    steps.append(Step("solution", f"Largest {name} with M({name}) <= C, C = {sol.capacity_bytes:,} B ({how})",
                      lhs=name, expr=root, value=sol.value))
    steps.append(Step("check", "Exact check on the integers", value={
        "at": (sol.value, sol.total_bytes), "next": (sol.value + 1, sol.next_total_bytes),
        "capacity": sol.capacity_bytes}))
    return steps
