"""The fewest GPUs that hold a job: ``solve min_gpus``.

A layout is the parallel degrees (tp, pp, cp, ep), the ZeRO stage and the data-parallel
degree dp; the GPU count is dp x tp x pp x cp. For a layout with everything but dp fixed,
the per-GPU total does not grow with dp, and the smallest dp that fits comes from the exact
search of :func:`vramsym.engine.inverse.smallest_fitting` over the compiled total. Degrees
the user did not fix are searched: powers of two for tp (within a node) and pp (up to the
layers), and the ZeRO stages; the layouts are ranked by GPU count, then by headroom.
"""
from __future__ import annotations

from ..errors import DoesNotFit, InputError, SolveError
from .inverse import smallest_fitting

#: the command-line names of a layout's degrees and the symbols they set
DEGREES = ("tp", "pp", "cp", "ep")
NODE = 8          # tensor parallelism stays within a node of 8 GPUs (NVLink)
MAX_DP = 2**16


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


def min_gpus(r, capacity: int, inputs: dict) -> dict:
    """The fewest GPUs for compiled regime ``r`` (a :class:`vramsym.engine.runtime.Compiled`):
    ``{"best": (estimate, layout), "layouts": [(estimate, layout), ...], "searched": [...]}``."""
    if r.regime.symbol("gpus") is None:
        raise SolveError(f"regime '{r.regime.regime}' has no GPU count to solve for")
    if "gpus" in inputs or "n_gpu" in inputs:
        raise InputError("'gpus' is both given and solved for: drop --gpus")
    fixed = {a: int(inputs[a]) for a in (*DEGREES, "zero") if a in inputs}
    base = {k: v for k, v in inputs.items() if k not in (*DEGREES, "zero")}
    layers = r.evaluate(dict(base, **fixed)).binding.values.get("L")
    pps = [p for p in (1, 2, 4, 8, 16, 32, 64) if layers is None or p <= layers]
    choices = {
        "tp": [fixed["tp"]] if "tp" in fixed else [1, 2, 4, NODE],
        "pp": [fixed["pp"]] if "pp" in fixed else pps,
        "cp": [fixed.get("cp", 1)],
        "ep": [fixed.get("ep", 1)],
        "zero": [fixed["zero"]] if "zero" in fixed else [0, 1, 2, 3],
    }
    found, problems = [], []
    for t in choices["tp"]:
        for p in choices["pp"]:
            for c in choices["cp"]:
                for e in choices["ep"]:
                    for z in choices["zero"]:
                        lay = {"tp": t, "pp": p, "cp": c, "ep": e, "zero": z}
                        width = t * p * c

                        def total(dp, lay=lay, width=width):
                            return r.evaluate(dict(base, gpus=dp * width, **lay)).exact_total
                        lo = max(1, -(-e // width))
                        try:
                            # one replica, then two or more: DDP's gradient buckets (and the
                            # communication buffers) exist only from two ranks on
                            dp = lo if total(lo) <= capacity else smallest_fitting(
                                total, capacity, lo=lo + 1, limit=MAX_DP, name="dp")
                        except InputError as err:         # a layout this model cannot take (a bound)
                            problems.append((lay, str(err)))
                            continue
                        except SolveError as err:
                            problems.append((lay, str(err)))
                            continue
                        if dp is None:
                            continue
                        est = r.evaluate(dict(base, gpus=dp * width, **lay))
                        found.append((est, layout_of(est)))
    if not found:
        why = f"; for example tp {problems[0][0]['tp']}, pp {problems[0][0]['pp']}: {problems[0][1]}" if problems else ""
        raise DoesNotFit(f"no layout fits {capacity:,} B per GPU with up to {MAX_DP:,} data-parallel ranks"
                         f" (searched tp {choices['tp']}, pp {choices['pp']}, zero {choices['zero']}){why}",
                         {"capacity_bytes": capacity, "searched": choices})
    found.sort(key=lambda x: (x[1]["gpus"], x[0].total_bytes))
    return {"best": found[0], "layouts": found, "searched": choices, "problems": problems}
