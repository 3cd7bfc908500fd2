"""Stage 5a: the inverse problem, the largest integer x with total(x) <= capacity.

Closed form when the total is a polynomial in x (the usual linear or quadratic
case): the largest real root of ``total(x) = capacity``, floored exactly, then
checked on the integers. Otherwise an exact integer search (exponential probe,
then bisection) over exact rationals. A total that decreases somewhere above
the minimum is reported, not solved.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, List, Optional, Tuple

import sympy

from .diagnostics import SolveError

SEARCH_LIMIT = 2**62


@dataclass(frozen=True)
class Root:
    value: int                 # the largest x that fits
    method: str                # "closed form" | "integer search"
    equation: sympy.Expr       # total(x) as solved
    root: Optional[sympy.Expr] = None  # exact real root of total(x) = capacity (closed form)


def _evaluator(f: sympy.Expr, x: sympy.Symbol) -> Callable[[int], sympy.Expr]:
    def at(v: int) -> sympy.Expr:
        r = f.xreplace({x: sympy.Integer(v)})
        if not r.is_number:
            raise SolveError(f"the total still depends on {sorted(s.name for s in r.free_symbols)} after substitution")
        if not r.is_Rational:
            r = sympy.nsimplify(r) if r.is_real else r
        return r
    return at


def _check_monotone_poly(p: sympy.Poly, lo: int, name: str) -> None:
    if p.LC() < 0:
        raise SolveError(f"the total decreases as {name} grows (leading coefficient {p.LC()} < 0): "
                         f"no largest {name} is well defined")
    d = p.diff()
    if d.degree() < 1:
        return
    for r in sympy.real_roots(d.as_expr(), multiple=True) if d.degree() > 0 else []:
        if r > lo:
            # the derivative changes sign at a root above lo unless it only touches zero
            eps = sympy.Rational(1, 10**6)
            if d.eval(r - eps) < 0 or d.eval(r + eps) < 0:
                raise SolveError(f"the total is not monotone in {name} above {lo} (turning point near {float(r):.4g}): "
                                 f"refusing to return a largest value that might be wrong")
    if d.eval(lo) < 0:
        raise SolveError(f"the total decreases in {name} at {name}={lo}")


def largest_fitting(f: sympy.Expr, x: sympy.Symbol, capacity: int, lo: int = 1,
                    hi: Optional[int] = None) -> Root:
    """Largest integer ``v >= lo`` (and ``<= hi`` when given) with ``f(v) <= capacity``.

    The caller checks ``f(lo) <= capacity`` first (otherwise nothing fits).
    """
    at = _evaluator(f, x)
    cap = sympy.Integer(capacity)
    name = x.name
    if x not in f.free_symbols:
        if hi is not None:
            return Root(hi, "constant", f)
        raise SolveError(f"the total does not depend on {name}: any {name} fits, there is no largest one")
    if at(lo) > cap:
        raise AssertionError("caller must check the minimum first")
    fe = sympy.expand(f)
    if fe.is_polynomial(x):
        p = sympy.Poly(fe, x)
        _check_monotone_poly(p, lo, name)
        if p.degree() <= 4:
            roots = [r for r in sympy.real_roots((p - cap).as_expr(), multiple=True)]
            roots = [r for r in roots if r >= lo]
            if roots:
                r = max(roots)
                v = int(sympy.floor(r))
                v = max(v, lo)
                # exact check on the integers (guards against any rounding of algebraic roots)
                while at(v) > cap:
                    v -= 1
                while at(v + 1) <= cap:
                    v += 1
                if hi is not None and v > hi:
                    v = hi
                return Root(v, "closed form", fe, sympy.nsimplify(r) if not r.is_Rational else r)
    # integer search
    values: List[Tuple[int, sympy.Expr]] = [(lo, at(lo))]
    good, step = lo, 1
    bad = None
    while True:
        probe = lo + step
        if hi is not None and probe > hi:
            probe = hi
        if probe > SEARCH_LIMIT:
            raise SolveError(f"the total stays within capacity for {name} up to {SEARCH_LIMIT}: "
                             f"it does not grow with {name}")
        fv = at(probe)
        values.append((probe, fv))
        if fv > cap:
            bad = probe
            break
        good = probe
        if hi is not None and probe == hi:
            return Root(hi, "integer search", f)
        step *= 2
    while bad - good > 1:
        mid = (good + bad) // 2
        fv = at(mid)
        values.append((mid, fv))
        if fv <= cap:
            good = mid
        else:
            bad = mid
    values.sort()
    for (x1, f1), (x2, f2) in zip(values, values[1:]):
        if f2 < f1:
            raise SolveError(f"the total is not monotone in {name} (it falls from {x1} to {x2}): "
                             f"refusing to return a largest value that might be wrong")
    return Root(good, "integer search", f)
