"""The fewest GPUs that hold a job: ``solve min_gpus``.

A layout is the parallel degrees (tp, pp, cp, ep), the ZeRO stage and the data-parallel
degree dp; the GPU count is dp x tp x pp x cp. For a layout with everything but dp fixed,
the per-GPU total does not grow with dp, and the smallest dp that fits comes from the exact
search of :func:`vramsym.engine.inverse.smallest_fitting` over the compiled total. Degrees
the user did not fix are searched: powers of two for tp (within a node) and pp (up to the
layers), and the ZeRO stages, as ``formulas/layouts.json`` lists them; the layouts are ranked
by GPU count, then by headroom.
"""
from __future__ import annotations

import json
import os
from fractions import Fraction
from math import gcd

from ..catalog.paths import formulas_path, read_text
from ..errors import DoesNotFit, InputError, SolveError
from .bind import bound_of
from .inverse import smallest_fitting
from ..numbers import NumberError, to_fraction

#: the command-line names of a layout's degrees and the symbols they set
DEGREES = ("tp", "pp", "cp", "ep")
_SPACE: dict = {}
#: the inputs the layout search reads beside the regime's own: the GPUs of one node bound tensor parallelism
SEARCH_READS = ("gpus_per_node", "gpus_node")


def search_space() -> dict:
    """``formulas/layouts.json``: the degrees searched where the user fixed none (read once)."""
    if not _SPACE:
        _SPACE.update(json.loads(read_text(os.path.join(formulas_path(), "layouts.json"))))
    return _SPACE


def _tp_choices(base: dict) -> list:
    """Powers of two up to the GPUs of one node: ``--gpus-per-node`` when given, else the file's."""
    space = search_space()
    node = space["node_gpus"]
    for k in SEARCH_READS:
        if k in base:
            node = _whole("gpus-per-node", base[k], 1)
            if node > space["node_gpus_max"]:
                raise InputError(f"--gpus-per-node must be at most {space['node_gpus_max']:,}, got {_quoted(base[k])}")
    out, t = [], 1
    while t <= node:
        out.append(t)
        t *= 2
    return out


def layout_of(est) -> dict | None:
    """The layout an estimate was computed for (None for a regime without the parallel symbols)."""
    v = est.binding.values
    c = est.compiled
    sym = {a: c.symbol(a) for a in ("gpus", "tp", "pp", "cp", "ep", "zero")}
    if sym["gpus"] is None or sym["gpus"] not in v:
        return None
    get = lambda a, d=1: int(v[sym[a]]) if sym[a] in v else d      # noqa: E731
    opts = dict(est.options)
    out = {"gpus": get("gpus")}
    out.update({a: get(a) for a in DEGREES})
    width = out["tp"] * out["pp"] * out["cp"]
    if out["gpus"] % width:          # a regime that reads no n_dp (inference) still needs a whole one
        raise InputError(f"the data-parallel degree gpus / (tp x pp x cp) = {out['gpus']} / {width} is not a whole "
                         f"number (gpus={out['gpus']}, tp={out['tp']}, pp={out['pp']}, cp={out['cp']})")
    out["dp"] = out["gpus"] // width
    out["zero"] = get("zero", 0)
    for o in ("zero_impl", "sharding", "offload", "pp_schedule", "tp_style"):
        if o in opts:
            out[o] = opts[o]
    if "L" in v:
        layers = int(v["L"])
        out["layers_per_stage"] = -(-layers // out["pp"])
    return out


def _whole(flag: str, value, least: int) -> int:
    """A degree given on the command line (``--tp 2``; ``2.0`` is 2, as for every whole-number
    input), or InputError naming the flag."""
    if type(value) is int and not isinstance(value, bool):
        v = Fraction(value)
    else:
        try:
            v = to_fraction(value)
        except NumberError as e:
            raise InputError(f"--{flag} takes a whole number, got {_quoted(value)}: {e}") from None
    if v.denominator != 1:
        raise InputError(f"--{flag} takes a whole number, got {_quoted(value)}")
    if v < least:
        raise InputError(f"--{flag} must be at least {least}, got {_quoted(value)}")
    return int(v)


def _quoted(value) -> str:
    text = str(value)
    return repr(text if len(text) <= 60 else text[:57] + "...")


def _fixed(r, inputs: dict) -> tuple:
    """(the degrees the user fixed, by command-line name; the other inputs): a degree may be
    given by its command-line name (``tp``) or its symbol (``n_tp``)."""
    names = {}
    for a in (*DEGREES, "zero"):
        n = r.regime.symbol(a)
        names[a] = a
        if n is not None:
            names[n] = a
    fixed, base = {}, {}
    for k, v in inputs.items():
        a = names.get(k)
        if a is None:
            base[k] = v
            continue
        if a in fixed:
            raise InputError(f"--{a} is given twice (as {a} and as its symbol)")
        fixed[a] = _whole(a, v, 0 if a == "zero" else 1)
    return fixed, base


def _dp_dependent(err, r) -> bool:
    """Whether a bound refused only this data-parallel degree (the GPU count must be a multiple
    of something, or be divided by a degree): another degree of the same layout may pass."""
    b = getattr(err, "bound", None)
    if not b or b["kind"] not in ("multiple", "divides"):
        return False
    return bool(b["reads"] & {r.regime.symbol("gpus"), "n_dp"})


def min_gpus(r, capacity: int, inputs: dict, best_only: bool = False) -> dict:
    """The fewest GPUs for compiled regime ``r`` (a :class:`vramsym.engine.runtime.BoundRegime`):
    ``{"best": (estimate, layout), "layouts": [(estimate, layout), ...], "searched": [...]}``.

    A layout the user fixed (``--tp``, ``--pp``, ``--cp``, ``--ep``, ``--zero``) that no GPU
    count makes valid is refused with the bound's sentence (InputError); a layout the search
    chose that the model cannot take is listed under ``problems``. The GPU count steps over
    the counts a bound refuses (``--ep`` must divide it, hybrid sharding needs whole replicas).

    ``best_only``: only ``best`` is wanted (``advise``): the layouts are tried from the fewest
    GPUs their degrees take, and once one fits on N GPUs, a layout whose degrees alone take more
    than N is not searched and the others only up to N GPUs (the same ``best``; ``layouts`` and
    ``problems`` hold what was searched)."""
    gpus_sym = r.regime.symbol("gpus")
    if gpus_sym is None:
        raise SolveError(f"regime '{r.regime.regime}' has no GPU count to solve for")
    if "gpus" in inputs or gpus_sym in inputs:
        raise InputError("'gpus' is both given and solved for: drop --gpus")
    fixed, base = _fixed(r, inputs)
    most = bound_of(r.regime, gpus_sym, {}, "max")
    space = search_space()
    max_dp = space["max_dp"]
    tps = _tp_choices(base)
    max_gpus = int(most) if most is not None else max_dp * tps[-1] * space["pp"][-1]
    # the layers (for the pipeline degrees to search) at a GPU count every fixed degree divides
    probe = {a: fixed.get(a, 1) for a in DEGREES}
    try:
        layers = r.evaluate(dict(base, gpus=probe["tp"] * probe["pp"] * probe["cp"] * probe["ep"],
                                 **probe, zero=fixed.get("zero", 3))).binding.values.get("L")
    except InputError:
        layers = None          # the layouts below say why
    pps = [p for p in space["pp"] if layers is None or p <= layers]
    choices = {
        "tp": [fixed["tp"]] if "tp" in fixed else tps,
        "pp": [fixed["pp"]] if "pp" in fixed else pps,
        "cp": [fixed.get("cp", 1)],
        "ep": [fixed.get("ep", 1)],
        # a regime that reads no ZeRO stage (inference) has one layout per degree, not four
        "zero": [fixed["zero"]] if "zero" in fixed else list(space["zero"]) if r.regime.symbol("zero") else [0],
    }
    found, problems, refusals, tried = [], [], [], 0
    least = None              # the smallest per-GPU total seen: (bytes, layout, gpus)
    lays = [{"tp": t, "pp": p, "cp": c, "ep": e, "zero": z} for t in choices["tp"] for p in choices["pp"]
            for c in choices["cp"] for e in choices["ep"] for z in choices["zero"]]
    if best_only:             # the fewest GPUs the degrees take first (a stable sort: the same order within)
        lays.sort(key=lambda lay: lay["tp"] * lay["pp"] * lay["cp"] * lay["ep"])
    for lay in lays:
        cap = max_gpus
        if best_only and found:
            cap = min(max_gpus, min(g["gpus"] for _, g in found))
            if lay["tp"] * lay["pp"] * lay["cp"] * lay["ep"] > cap:
                continue       # its degrees alone take more GPUs than a layout found
        tried += 1
        try:
            dp = _smallest_dp(r, base, lay, capacity, cap)
        except (InputError, SolveError) as err:   # a layout this model cannot take (a bound)
            if cap < max_gpus:
                continue       # beyond the GPUs of a layout found: not a problem of this layout
            problems.append((lay, str(err)))
            refusals.append(err)
            continue
        if dp[0] is None:
            if dp[1] is not None and (least is None or dp[1][0] < least[0]):
                least = dp[1]
            continue
        est = r.evaluate(dict(base, gpus=dp[0], **lay))
        found.append((est, layout_of(est)))
    if not found:
        if len(refusals) == tried and all(isinstance(e, InputError) for e in refusals):
            # every layout refused by a bound: what the user fixed (--ep 3, --zero 0 with
            # --offload optimizer-params) cannot exist, whatever the GPU count
            raise refusals[0]
        smallest = ""
        if least is not None:
            b, lay, g = least
            smallest = (f"; the smallest per-GPU total found is {int(-(-b // 1)):,} B (tp {lay['tp']}, pp {lay['pp']}, "
                        f"cp {lay['cp']}, ep {lay['ep']}, zero {lay['zero']} on {g:,} GPUs)")
        raise DoesNotFit(f"nothing fits {capacity:,} B per GPU: no layout holds the job on any number of GPUs "
                         f"(searched tp {choices['tp']}, pp {choices['pp']}, zero {choices['zero']}, up to "
                         f"{min(max_dp, max_gpus):,} data-parallel ranks){smallest}",
                         {"capacity_bytes": capacity, "searched": choices,
                          "smallest_bytes": None if least is None else int(-(-least[0] // 1))})
    found.sort(key=lambda x: (x[1]["gpus"], x[0].total_bytes))
    return {"best": found[0], "layouts": found, "searched": choices, "problems": problems}


#: how many data-parallel degrees a refusing bound may step over before the layout is given up
MAX_STEPS = 64


def _smallest_dp(r, base, lay, capacity, max_gpus):
    """(the fewest GPUs that hold ``lay``, or None; the smallest total seen as (bytes, layout,
    gpus) when none does). The degrees searched are multiples of ``step`` (the
    GPU count must be a multiple of ``--ep``) that every bound accepts; a degree some bound
    refuses (hybrid sharding's whole replicas) is replaced by the next one it accepts, which
    keeps the total non-increasing over the search."""
    eff = {a: lay[a] if r.regime.symbol(a) is not None else 1 for a in DEGREES}   # a degree it reads
    width = eff["tp"] * eff["pp"] * eff["cp"]
    step = eff["ep"] // gcd(eff["ep"], width)
    limit = min(search_space()["max_dp"], max_gpus // width) // step
    if limit < 1:
        raise InputError(f"tp x pp x cp x ep = {width * step:,} GPUs is more than the {max_gpus:,} a job may have")
    valid, totals = {}, {}

    def total_at(dp):
        if dp not in totals:
            totals[dp] = r.screen_total(dict(base, gpus=dp * width, **lay))
        return totals[dp]

    def accepted(k):
        """The smallest k' >= k whose degree step x k' every bound accepts (InputError if none near)."""
        if k in valid:
            return valid[k]
        k0, err = k, None
        for _ in range(MAX_STEPS):
            if k > limit:
                valid[k0] = None     # beyond the GPUs a job may have
                return None
            try:
                total_at(step * k)
                valid[k0] = k
                return k
            except InputError as e:
                if not _dp_dependent(e, r):
                    raise
                err, b = e, e.bound
                whole = Fraction(b["value"] or 0)
                if b["kind"] == "multiple" and b["symbol"] == r.regime.symbol("gpus") and whole > 0 \
                        and whole.denominator == 1:
                    # the next GPU count that is a multiple of the bound's value
                    unit = int(whole) // gcd(int(whole), width * step)
                    k = max(k + 1, -(-k // unit) * unit)
                else:
                    k += 1
        raise err

    def f(k):
        kk = accepted(k)
        # beyond the limit: nothing fits there (the search stops at its first fit, so every total
        # seen so far is above the capacity); the smallest of them keeps the totals non-increasing
        return totals[step * kk] if kk is not None else min(totals.values())

    k1 = accepted(1)
    if k1 is None:
        return None, None
    # one replica, then two or more: DDP's gradient buckets (and the communication buffers)
    # exist only from two ranks on
    if f(k1) <= capacity:
        return step * k1 * width, None
    if k1 >= limit:
        return None, (totals[step * k1].exact(), lay, step * k1 * width)
    k = smallest_fitting(f, capacity, lo=k1 + 1, limit=limit, name="dp")
    if k is None:
        last = max(totals)
        return None, (totals[last].exact(), lay, last * width)
    return step * accepted(k) * width, None
