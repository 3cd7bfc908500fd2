"""Many configurations of one compiled regime: the data behind ``vramsym plot``.

``curve`` evaluates every component at integer points of one input (batch, seq, lora_rank,
gpus) and solves, for each capacity, the largest value that fits (the smallest, for gpus);
``grid`` evaluates the total over (batch, seq) and solves the exact frontier: for each
sequence length the largest batch that fits. Every number comes from the compiled regime,
exactly as ``estimate`` and ``solve`` give it; the printers only draw.
"""
from __future__ import annotations

import math

from ..errors import DoesNotFit, InputError, SolveError
from .bind import bound_of
from ..numbers import NumberError, to_fraction

VARY = ("batch", "seq", "lora_rank", "gpus")
MAX_POINTS = 4096          # evaluations of one curve at most (bounded work)
MAX_CELLS = 256 * 256      # cells of one map at most
#: the largest value a curve reaches when the varied symbol declares no ``max`` of its own: 10^15
#: (a quadrillion sequences or tokens is far past any GPU, and every point stays an exact float)
MAX_X = 10**15


def _int(text, what: str) -> int:
    """A flag's whole number, read as every number vramsym reads (vramsym.numbers: at most
    40 significant digits and an exponent of at most 40), at least 1."""
    try:
        v = to_fraction(str(text))
    except NumberError as e:
        shown = repr(str(text)) if len(str(text)) <= 60 else repr(str(text)[:57] + "...")
        raise InputError(f"{what} {shown}: {e}; it must be a whole number of at least 1") from None
    if v.denominator != 1:
        raise InputError(f"{what} must be a whole number, got {text}")
    if v < 1:
        raise InputError(f"{what} must be at least 1, got {v}")
    return v.numerator


def points(lo: int, hi: int, n: int, log: bool) -> list:
    """At most ``n`` distinct integers from ``lo`` to ``hi`` (both kept): evenly spaced, or
    geometrically when ``log``."""
    if lo < 1:
        raise InputError(f"--from must be at least 1, got {lo}")
    if hi < lo:
        raise InputError(f"--to ({hi:,}) must not be below --from ({lo:,})")
    if hi > MAX_X:
        raise InputError(f"--to must be at most {MAX_X:,} (10^15, the limit of a plotted value), got {_big(hi)}")
    if n < 2:
        raise InputError(f"--points must be at least 2, got {n}")
    if n > MAX_POINTS:
        raise InputError(f"--points must be at most {MAX_POINTS:,}, got {_big(n)}")
    if hi - lo + 1 <= n:
        return list(range(lo, hi + 1))
    if log:       # in logarithms: no power of a huge ratio, no float overflow
        step = (math.log(hi) - math.log(lo)) / (n - 1)
        out = {min(hi, max(lo, round(lo * math.exp(step * i)))) for i in range(1, n - 1)}
    else:
        out = {lo + (hi - lo) * i // (n - 1) for i in range(n)}
    return sorted(out | {lo, hi})


def _big(v: int) -> str:
    return f"{v:,}" if abs(v) < 10**30 else f"about 10^{len(str(abs(v))) - 1}"


def _check_vary(r, vary: str, inputs: dict):
    if vary not in VARY:
        raise InputError(f"--vary must be one of {', '.join(VARY)}, not '{vary}'")
    name = r.regime.symbol(vary)
    if name is None or not ({name} | r._readers({name})) & set(r.regime.args):   # read directly or by a default
        raise InputError(f"the {r.regime.regime} total does not depend on {vary}: nothing to plot against it")
    if vary in inputs or name in inputs:
        raise InputError(f"'{vary}' is both given and varied: drop --{vary.replace('_', '-')}")
    return name


def curve(r, vary: str, xs: list, inputs: dict, capacities=()) -> dict:
    """Every component at each x, the total, and per capacity the solved limit."""
    name = _check_vary(r, vary, inputs)
    _check_declared(r, name, vary, xs, inputs)
    ests = [r.evaluate(dict(inputs, **{vary: x})) for x in xs]
    # at each x the components of that x's peak phase (0 where the peak is another phase): they sum to the total
    alive = [{c.name: c.bytes for c in e.components if not c.host} for e in ests]
    names = [c.name for c in ests[0].all_components if not c.host and any(c.name in a for a in alive)]
    comps = {n: [a.get(n, 0) for a in alive] for n in names}
    data = {"vary": vary, "x": xs, "components": {n: v for n, v in comps.items() if any(v)},
            "peak_phase": [e.peak_phase.name for e in ests],
            "total_bytes": [e.total_bytes for e in ests], "regime": r.regime.regime,
            "model": r.model.name if r.model is not None else "", "inputs": {k: str(v) for k, v in inputs.items()},
            "options": dict(ests[0].options), "capacities": []}
    for label, cap in capacities:
        data["capacities"].append(dict(label=label, capacity_bytes=cap, **_limit(r, vary, cap, inputs, xs, data)))
    return data


def _check_declared(r, name, vary, xs, inputs) -> None:
    """The plotted values within the bounds the formula files declare for the varied symbol
    (``gpus``: at most 1,048,576), said for --from / --to before anything is evaluated."""
    bounds = {k: r.regime.symbols[name].bound(k) for k in ("max", "min")}
    if not any(bounds.values()):
        return
    values, _, _ = r._bind(inputs, exclude=(name,))
    hi, lo = bound_of(r.regime, name, values, "max"), bound_of(r.regime, name, values, "min")
    shown = lambda b, k: bounds[k].text if bounds[k].text == str(b) else f"{bounds[k].text} = {b}"
    if hi is not None and xs[-1] > hi:
        raise InputError(f"--to {xs[-1]:,}: {vary} must be at most {shown(hi, 'max')} (declared in the formula files)")
    if lo is not None and xs[0] < lo:
        raise InputError(f"--from {xs[0]:,}: {vary} must be at least {shown(lo, 'min')} (declared in the formula files)")


def _limit(r, vary, cap, inputs, xs, data) -> dict:
    if vary == "gpus":        # more GPUs, less per GPU: the fewest of the plotted ones that fit
        fit = [x for x, t in zip(xs, data["total_bytes"]) if t <= cap]
        return {"kind": "fewest", "value": fit[0] if fit else None, "note": "" if fit else "none of the plotted counts fits"}
    try:
        sol = r.solve(vary, cap, inputs)
    except (DoesNotFit, SolveError) as e:     # nothing fits, or no well-defined largest value: no mark
        return {"kind": "largest", "value": None, "note": str(e)}
    return {"kind": "largest", "value": sol.value, "total_bytes": sol.total_bytes, "note": ""}


def grid(r, batches: list, seqs: list, inputs: dict, capacity: int) -> dict:
    """The total over batches x seqs, and the exact frontier: the largest batch per sequence length."""
    for v in ("batch", "seq"):
        _check_vary(r, v, inputs)
    if len(batches) * len(seqs) > MAX_CELLS:
        raise InputError(f"a map of {len(batches)} x {len(seqs)} cells is over the limit of {MAX_CELLS:,}")
    totals = [[r.evaluate(dict(inputs, batch=b, seq=s)).total_bytes for b in batches] for s in seqs]
    frontier = []
    for s in seqs:
        try:
            frontier.append(r.solve("batch", capacity, dict(inputs, seq=s)).value)
        except DoesNotFit:
            frontier.append(0)
        except SolveError:
            frontier.append(None)
    return {"batch": batches, "seq": seqs, "total_bytes": totals, "capacity_bytes": capacity,
            "max_batch": frontier, "regime": r.regime.regime,
            "model": r.model.name if r.model is not None else "", "inputs": {k: str(v) for k, v in inputs.items()}}
