"""Many configurations of one compiled regime: the data behind ``vramsym plot``.

``curve`` evaluates every component at integer points of one input (batch, seq, lora_rank,
gpus) and solves, for each capacity, the largest value that fits (the smallest, for gpus);
``grid`` evaluates the total over (batch, seq) and solves the exact frontier: for each
sequence length the largest batch that fits. Every number comes from the compiled regime,
exactly as ``estimate`` and ``solve`` give it; the printers only draw.
"""
from __future__ import annotations

from ..errors import DoesNotFit, InputError, SolveError

VARY = ("batch", "seq", "lora_rank", "gpus")
MAX_POINTS = 4096          # evaluations of one curve at most (bounded work)
MAX_CELLS = 256 * 256      # cells of one map at most


def _int(text, what: str) -> int:
    try:
        v = int(str(text).replace("_", ""))
    except ValueError:
        raise InputError(f"{what} must be a whole number, got '{text}'") from None
    if v < 1:
        raise InputError(f"{what} must be at least 1, got {v}")
    return v


def points(lo: int, hi: int, n: int, log: bool) -> list:
    """At most ``n`` distinct integers from ``lo`` to ``hi`` (both kept): evenly spaced, or
    geometrically when ``log``."""
    if hi < lo:
        raise InputError(f"--to ({hi}) must not be below --from ({lo})")
    if n < 2:
        raise InputError(f"--points must be at least 2, got {n}")
    if n > MAX_POINTS:
        raise InputError(f"--points must be at most {MAX_POINTS:,}, got {n:,}")
    if hi - lo + 1 <= n:
        return list(range(lo, hi + 1))
    if log:
        ratio = (hi / lo) ** (1 / (n - 1))
        out = {min(hi, max(lo, round(lo * ratio ** i))) for i in range(n)}
    else:
        out = {lo + (hi - lo) * i // (n - 1) for i in range(n)}
    return sorted(out | {lo, hi})


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
    _check_vary(r, vary, inputs)
    ests = [r.evaluate(dict(inputs, **{vary: x})) for x in xs]
    names = [c.name for c in ests[0].components if not c.host]
    comps = {n: [e.component(n).bytes for e in ests] for n in names}
    data = {"vary": vary, "x": xs, "components": {n: v for n, v in comps.items() if any(v)},
            "total_bytes": [e.total_bytes for e in ests], "regime": r.regime.regime,
            "model": r.model.name if r.model is not None else "", "inputs": {k: str(v) for k, v in inputs.items()},
            "options": dict(ests[0].options), "capacities": []}
    for label, cap in capacities:
        data["capacities"].append(dict(label=label, capacity_bytes=cap, **_limit(r, vary, cap, inputs, xs, data)))
    return data


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
