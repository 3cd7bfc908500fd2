"""Inverse solve: mem(x*) <= capacity < mem(x*+1), closed form and integer search; failures reported."""
from fractions import Fraction

import pytest
import sympy
from hypothesis import given, settings, strategies as st, HealthCheck

from vramsym.diagnostics import DoesNotFit, SolveError
from vramsym.engine import estimate, solve_max
from vramsym.inverse import largest_fitting
from vramsym.regimes import compose

from helpers import lib_text

TEMPLATE = '''
symbol x : sequence "the variable" domain posint alias xx
symbol y : 1 "a fixed input" domain posint default {y}
symbol z : 1 "a symbol no term uses" domain posint
term fixed = {c0} * [byte] : byte "constant part" source "test"
term lin = {c1} * y * x * [byte/sequence] : byte "linear part" source "test"
term quad = {c2} * x^2 * [byte/sequence^2] : byte "quadratic part" source "test"
term stepped = {c3} * ceil(x / ({k} * [sequence])) * [byte] + min(x * [byte/sequence], {cap_m} * [byte]) : byte "stepped part" source "test"
regime poly "polynomial" {{ add fixed, lin, quad }}
regime steps extends poly "with ceil and min" {{ add stepped }}
'''

coef = st.integers(min_value=0, max_value=10**6)


def _mem(lib, regime, x):
    c = compose(lib, regime)
    return estimate(lib, c, None, {"x": x}).exact_total


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(c0=coef, c1=st.integers(1, 10**6), c2=coef, c3=coef, y=st.integers(1, 100), k=st.integers(1, 64),
       cap_m=st.integers(1, 10**4), extra=st.integers(0, 10**12), regime=st.sampled_from(["poly", "steps"]))
def test_largest_fitting_property(c0, c1, c2, c3, y, k, cap_m, extra, regime):
    lib = lib_text(TEMPLATE.format(c0=c0, c1=c1, c2=c2, c3=c3, y=y, k=k, cap_m=cap_m))
    c = compose(lib, regime)
    base = _mem(lib, regime, 1)
    capacity = int(base) + extra
    sol = solve_max(lib, c, None, {}, "xx", capacity)
    assert _mem(lib, regime, sol.value) <= capacity < _mem(lib, regime, sol.value + 1)
    assert sol.total_bytes <= capacity < sol.next_total_bytes
    if regime == "poly":
        assert sol.method == "closed form"


def test_nothing_fits_reports_shortfall_and_largest_term():
    lib = lib_text(TEMPLATE.format(c0=1000, c1=10, c2=0, c3=0, y=1, k=1, cap_m=1))
    c = compose(lib, "poly")
    with pytest.raises(DoesNotFit) as ei:
        solve_max(lib, c, None, {}, "x", 500)
    d = ei.value.details
    assert d["shortfall_bytes"] == 1010 - 500
    assert d["largest_term"]["name"] == "fixed"
    assert "over the capacity" in str(ei.value)


def test_non_monotone_total_is_refused():
    x = sympy.Symbol("x", positive=True, integer=True)
    with pytest.raises(SolveError, match="monotone|decreases"):
        largest_fitting(100 - 30 * x + x**2, x, 90, lo=1)
    with pytest.raises(SolveError, match="decreases"):
        largest_fitting(1000 - x, x, 999, lo=1)


def test_non_monotone_non_polynomial_is_refused():
    x = sympy.Symbol("x", positive=True, integer=True)
    f = 10 * x + 1000 * sympy.Piecewise((1, x < 5), (0, True))
    with pytest.raises(SolveError, match="monotone"):
        largest_fitting(f, x, 1100, lo=1)


def test_total_independent_of_variable():
    lib = lib_text(TEMPLATE.format(c0=1, c1=1, c2=0, c3=0, y=1, k=1, cap_m=1))
    c = compose(lib, "poly")
    with pytest.raises(SolveError, match="does not depend"):
        solve_max(lib, c, None, {"xx": 1}, "z", 10**6)
    x = sympy.Symbol("x", positive=True, integer=True)
    with pytest.raises(SolveError, match="does not depend"):
        largest_fitting(sympy.Integer(5) + 0 * x, x, 10, lo=1)


def test_closed_form_quadratic_exact_at_boundary():
    # capacity exactly equal to the total at x = 7 must give 7, not 6 (no float rounding)
    x = sympy.Symbol("x", positive=True, integer=True)
    f = 3 * x**2 + 5 * x + 11
    cap = int(f.subs(x, 7))
    r = largest_fitting(f, x, cap, lo=1)
    assert r.value == 7 and r.method == "closed form"
    big = sympy.Integer(10) ** 30
    f2 = big * x + 1
    assert largest_fitting(f2, x, int(big * 123456789 + 1), lo=1).value == 123456789
