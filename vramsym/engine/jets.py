"""The slope of a compiled total in one input, by running its code on truncated Taylor series.

``vramsym advise`` reports d total / d x at the configuration (x the batch or the length): how many
bytes one more costs. The compiled regime's code (:mod:`vramsym.engine.assemble`) is run with x
replaced by a :class:`Jet`, x0 + e, every other input a number: each operation carries the exact
coefficients of e^0 .. e^ORDER, so the result is the total's Taylor polynomial at x0, exact
(``int`` / ``Fraction`` coefficients), with no sympy. Each max / min / conditional takes the branch
active at x0 (the comparisons read the value); each ceiling or floor of an expression that reads
x keeps that expression's slope (a KV cache padded to 256 cells grows in steps of 256 tokens: the
slope between steps, 0, would say a shorter context saves nothing), and says so.
"""
from __future__ import annotations

import math
from fractions import Fraction

from .compiled import _whole as _exact

#: the highest power of e carried: the totals are at most quadratic in the batch or the length,
#: and a nonzero term of this order says the slope is no low polynomial
ORDER = 3


class Jet:
    """x0 + e-series, truncated after e^ORDER: ``c[k]`` is the coefficient of e^k."""
    __slots__ = ("c", "steps")

    def __init__(self, c, steps=False):
        self.c = c
        self.steps = steps

    @staticmethod
    def of(v):
        return v if isinstance(v, Jet) else Jet([v] + [0] * ORDER)

    def _other(self, o):
        return o if isinstance(o, Jet) else Jet.of(o)

    def __add__(self, o):
        o = self._other(o)
        return Jet([a + b for a, b in zip(self.c, o.c)], self.steps or o.steps)
    __radd__ = __add__

    def __neg__(self):
        return Jet([-a for a in self.c], self.steps)

    def __pos__(self):
        return self

    def __abs__(self):
        return -self if self.c[0] < 0 else self

    def __sub__(self, o):
        return self + (-self._other(o))

    def __rsub__(self, o):
        return self._other(o) - self

    def __mul__(self, o):
        o = self._other(o)
        a, b = self.c, o.c
        return Jet([sum(a[i] * b[k - i] for i in range(k + 1)) for k in range(ORDER + 1)], self.steps or o.steps)
    __rmul__ = __mul__

    def __truediv__(self, o):
        o = self._other(o)
        b = o.c
        if b[0] == 0:
            raise ZeroDivisionError("division by zero")
        q = []
        for k in range(ORDER + 1):
            s = self.c[k] - sum(q[i] * b[k - i] for i in range(k))
            q.append(_exact(Fraction(s) / b[0]))
        return Jet(q, self.steps or o.steps)

    def __rtruediv__(self, o):
        return self._other(o) / self

    def __pow__(self, n):
        if not isinstance(n, int) or isinstance(n, Jet):
            raise TypeError("only whole-number powers")
        if n < 0:
            return Jet.of(1) / (self ** -n)
        out = Jet.of(1)
        for _ in range(n):
            out = out * self
        return out

    def _round(self, f):
        moving = any(self.c[1:])
        return Jet([f(self.c[0])] + self.c[1:], self.steps or moving)

    def __ceil__(self):
        return self._round(math.ceil)

    def __floor__(self):
        return self._round(math.floor)

    def _v(self, o):
        return o.c[0] if isinstance(o, Jet) else o

    def __lt__(self, o):
        return self.c[0] < self._v(o)

    def __le__(self, o):
        return self.c[0] <= self._v(o)

    def __gt__(self, o):
        return self.c[0] > self._v(o)

    def __ge__(self, o):
        return self.c[0] >= self._v(o)

    def __eq__(self, o):
        return self.c[0] == self._v(o)

    def __ne__(self, o):
        return self.c[0] != self._v(o)

    __hash__ = object.__hash__


def _quotient(n, d=1):
    """The generated code's ``_q`` and ``Fraction(p, q)`` over jets."""
    if isinstance(n, Jet) or isinstance(d, Jet):
        return Jet.of(n) / d
    return _exact(Fraction(n, d))


def _poly_text(coeffs, x: str) -> str:
    """``sum coeffs[k] * x**k`` as sympy's printer writes it (highest power first)."""
    parts = []
    for k in range(len(coeffs) - 1, -1, -1):
        c = Fraction(coeffs[k])
        if c == 0:
            continue
        sign = "-" if c < 0 else "+"
        c = abs(c)
        power = "" if k == 0 else (x if k == 1 else f"{x}**{k}")
        if k == 0:
            body = str(c)
        elif c == 1:
            body = power
        elif c.denominator == 1:
            body = f"{c.numerator}*{power}"
        else:
            body = f"{c.numerator}*{power}/{c.denominator}" if c.numerator != 1 else f"{power}/{c.denominator}"
        parts.append((sign, body))
    if not parts:
        return "0"
    text = ("-" if parts[0][0] == "-" else "") + parts[0][1]
    for sign, body in parts[1:]:
        text += f" {sign} {body}"
    return text


def slope(compiled, values: dict, symbol: str) -> dict:
    """d total / d ``symbol`` at ``values`` (every argument of ``compiled``): ``{"symbol",
    "derivative": the slope as a polynomial in the symbol (the total's Taylor polynomial at this
    point, differentiated, when it is at most quadratic there; else the value), "bytes_per_unit",
    "exact", "averaged_over_steps"}``."""
    ns: dict = {}
    exec(compiled.code_object, ns)          # vramsym's own generated module, as CompiledRegime runs it
    ns["_q"], ns["Fraction"] = _quotient, _quotient
    x0 = values[symbol]
    args = [Jet([x0, 1] + [0] * (ORDER - 1)) if a == symbol else values[a] for a in compiled.args]
    total = ns[compiled.data["total"]](*args)
    t = Jet.of(total)
    d = [k * t.c[k] for k in range(1, ORDER + 1)]       # the slope's series in e = x - x0
    exact = _exact(d[0])
    if d[-1] == 0:      # a polynomial of degree < ORDER - 1 in e: written in x
        coeffs = [0] * (ORDER - 1)
        for k, c in enumerate(d[:-1]):          # c * (x - x0)^k
            for j in range(k + 1):
                coeffs[j] += c * math.comb(k, j) * (-x0) ** (k - j)
        text = _poly_text(coeffs, symbol)
    else:
        text = str(exact)
    return {"symbol": symbol, "derivative": text, "bytes_per_unit": float(exact), "exact": str(exact),
            "averaged_over_steps": bool(t.steps)}
