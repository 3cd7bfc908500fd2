"""The inverse problem: the largest integer x with total(x) <= capacity, by exact search.

``total`` is the compiled regime's exact total as a function of x (every other symbol
bound). Exponential probe from the minimum, then bisection, all in exact arithmetic;
every probed value must be at least the one before it (a total that falls as x grows
has no well-defined largest x, and is reported, not solved). The closed form a
derivation shows (sympy's real root, floored) lives with the derivation, not here.
"""
from __future__ import annotations

from ..errors import SolveError

SEARCH_LIMIT = 2**62


def _monotone(seen: dict, name: str, grows: bool, capacity=None) -> None:
    """Every probed total at least (``grows``) or at most the one before it, or SolveError. With
    ``capacity`` (a largest value), a fall from one integer to the next that stays within it is not
    one: SDPA pads a sliding mask to a multiple of 8 keys, so s = 8k + 8 can cost less than 8k + 7,
    and the largest value that fits, every smaller one fitting, is still well defined."""
    pts = sorted(seen.items())
    for (x1, f1), (x2, f2) in zip(pts, pts[1:]):
        if capacity is not None and x2 == x1 + 1 and f2 < f1 <= capacity:
            continue
        if getattr(f1, "near", None) is not None and f1.near(f2):
            # screened totals (solve min_gpus) within a billionth of each other: a rise or fall that small
            # (under a byte per gigabyte) decides no fit, so no exact evaluation is spent on it
            continue
        if (f2 < f1) if grows else (f2 > f1):
            if grows:
                raise SolveError(f"the total decreases as {name} grows (it falls from {name}={x1} to {name}={x2}): "
                                 f"it is not monotone, so no largest {name} is well defined")
            raise SolveError(f"the total grows as {name} grows (from {name}={x1} to {name}={x2}): "
                             f"it is not monotone, so no smallest {name} is well defined")


def _narrow(at, capacity, fit: int, unfit: int) -> int:
    """Bisect between a value that fits and one that does not (either order): the fitting value
    next to the boundary."""
    while abs(fit - unfit) > 1:
        mid = (fit + unfit) // 2
        if at(mid) <= capacity:
            fit = mid
        else:
            unfit = mid
    return fit


def largest_fitting(total, capacity, lo: int = 1, hi=None, name: str = "x") -> int:
    """Largest integer ``v`` with ``lo <= v (<= hi)`` and ``total(v) <= capacity``.

    The caller checks ``total(lo) <= capacity`` first (otherwise nothing fits)."""
    seen = {}

    def at(v):
        if v not in seen:
            seen[v] = total(v)
        return seen[v]

    def monotone_so_far():
        _monotone(seen, name, grows=True, capacity=capacity)

    if at(lo) > capacity:
        raise AssertionError("caller must check the minimum first")
    good, step, bad = lo, 1, None
    while bad is None:
        probe = lo + step
        if hi is not None and probe >= hi:
            probe = hi
        if probe > SEARCH_LIMIT:
            if at(lo + 1) == at(lo):
                raise SolveError(f"the total does not depend on {name}: any {name} fits, there is no largest one")
            raise SolveError(f"the total stays within capacity for {name} up to {SEARCH_LIMIT}: "
                             f"it does not grow with {name}")
        at(probe)
        monotone_so_far()
        if seen[probe] > capacity:
            bad = probe
        else:
            good = probe
            if hi is not None and probe == hi:
                return hi
            step *= 2
    good = _narrow(at, capacity, good, bad)
    while good + 1 < bad and at(good + 1) <= capacity:    # past a fall below capacity (a sawtooth)
        good += 1
    at(good + 1)
    monotone_so_far()
    return good


def smallest_fitting(total, capacity, lo: int = 1, limit: int = 2**20, name: str = "x"):
    """Smallest integer ``v >= lo`` with ``total(v) <= capacity`` for a total that does not grow
    with ``v`` (more GPUs share more), or None when even ``limit`` does not fit. Every probed
    value must be at most the one before it: a total that grows somewhere is reported."""
    seen = {}

    def at(v):
        if v not in seen:
            seen[v] = total(v)
            _monotone(seen, name, grows=False)
        return seen[v]

    if at(lo) <= capacity:
        return lo
    bad, step = lo, 1
    while True:
        probe = min(lo + step, limit)
        if at(probe) <= capacity:
            good = probe
            break
        if probe == limit:
            return None
        bad, step = probe, step * 2
    return _narrow(at, capacity, good, bad)
