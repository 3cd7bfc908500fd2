"""Results as plain data, and their human rendering (tables with GiB and GB).

The results of the compiled regime (vramsym.engine.results) become plain dicts: ``--json``
prints them, the tables below render them.
"""
from __future__ import annotations

from fractions import Fraction

from ..catalog.capacity import fmt_both, fmt_bytes
from ..engine.layouts import layout_of
from ..flags import show    # the command line's spelling of a choice


def estimate_data(est) -> dict:
    total = est.exact_total
    rows = [{"name": c.name, "description": c.description, "bytes": c.bytes,
             "share": 0.0 if c.host or not total else float(c.exact / total), "definition": c.definition,
             "formula": c.formula, "sources": list(c.sources), "host": c.host} for c in est.components]
    used = set(est.used_options)
    peak = est.peak_phase
    phases = [{"name": p.name, "description": p.description, "total_bytes": p.bytes, "components": list(p.components)}
              for p in est.phases]
    return {"model": est.model, "regime": est.regime, "description": est.description, "params": est.params,
            "options": {k: show(v) for k, v in est.options if k in used},
            "inputs": {k: str(v) for k, v in sorted(est.inputs.items())},
            "total_bytes": est.total_bytes, "low_bytes": est.low_bytes, "high_bytes": est.high_bytes,
            "ranges": _ranges(est), "host_bytes": est.host_bytes, "layout": _layout(est),
            "components": rows, "phases": phases, "peak_phase": peak.name, "notes": list(est.notes),
            "approximate": est.approximate is not None, "approximate_reason": est.approximate}


def _ranges(est) -> dict:
    """The run-time ranges behind low_bytes / high_bytes: symbol -> {low, point, high} (exact strings)."""
    values, prov = est.binding.values, est.binding.provenance
    return {n: {"low": str(lo), "point": str(values[n]), "high": str(hi), "unit": est.compiled.symbols[n].unit}
            for n, (lo, hi) in sorted(est.compiled.ranges.items())
            if n in values and prov.get(n) != "input" and lo != hi}


def _layout(est):
    return layout_of(est)


def with_capacity(data: dict, capacity: int | None, cap_desc: str | None = None) -> dict:
    if capacity is None:
        return data
    return dict(data, capacity_bytes=capacity, **({"capacity": cap_desc} if cap_desc else {}),
                fits=data["total_bytes"] <= capacity,
                fits_worst_case=data["high_bytes"] <= capacity, headroom_bytes=capacity - data["total_bytes"])


def solution_data(sol, cap_desc: str) -> dict:
    est = sol.estimate
    return {"variable": sol.alias, "symbol": sol.variable, "value": sol.value, "total_bytes": sol.total_bytes,
            "capacity_bytes": sol.capacity_bytes, "headroom_bytes": sol.capacity_bytes - sol.total_bytes,
            "next_total_bytes": sol.next_total_bytes, "step_bytes": sol.next_total_bytes - sol.total_bytes,
            "method": sol.method, "next_refused": sol.next_refused, "estimate": estimate_data(est),
            "approximate": est.approximate is not None, "approximate_reason": est.approximate,
            "capacity_description": cap_desc}


def _sizes(n: int, unit: str | None) -> str:
    return fmt_bytes(n, unit) if unit else fmt_both(n)


def print_estimate(data: dict, unit: str | None, out, capacity: int | None = None, cap_desc: str | None = None) -> None:
    if capacity is not None:          # the answer first: the verdict, the number, the card
        card = ""
        if cap_desc and not cap_desc[:1].isdigit():      # a GPU name: 'rtx-4090, 24 GB: 24,564 MiB as ...'
            card = f" on {cap_desc.split(',')[0]} ({cap_desc.split(': ', 1)[-1].split(' MiB')[0]} MiB)"
        verdict = "fits" if data["total_bytes"] <= capacity else "does NOT fit"
        print(f"{verdict}: {_sizes(data['total_bytes'], unit)} of {_sizes(capacity, unit)}{card}", file=out)
    params = f" ({data['params']:,} parameters)" if data.get("params") is not None else ""
    print(f"model {data['model']}{params}, regime {data['regime']}: {data['description']}", file=out)
    print("options: " + ", ".join(f"{k}={v}" for k, v in data["options"].items()), file=out)
    if data["inputs"]:
        print("inputs: " + ", ".join(f"{k}={v}" for k, v in data["inputs"].items()), file=out)
    if data.get("approximate"):
        print(f"APPROXIMATE: {data['approximate_reason']}", file=out)
    for n in data["notes"]:
        if not (data.get("approximate") and n == f"approximate: {data['approximate_reason']}"):
            print(f"note: {n}", file=out)
    rows = data["components"]
    phases = data.get("phases") or []
    if len(phases) > 1:
        peak = next(p for p in phases if p["name"] == data["peak_phase"])
        print(f"peak phase: {peak['name']} ({peak['description']}); the components alive in it:", file=out)
    w = max([len(r["name"]) for r in rows] + [5])
    fw = min(44, max([len(r.get("definition", "")) for r in rows] + [7]))
    cols = ["GiB", "GB"] if unit is None else [unit]
    print(f"  {'component':<{w}}  {'formula':<{fw}}  {'bytes':>18}  " + "  ".join(f"{c:>10}" for c in cols)
          + "   share  description", file=out)

    def line(name, definition, n, share, description=""):
        d = definition if len(definition) <= fw else definition[: fw - 3] + "..."
        sizes = "  ".join(f"{fmt_bytes(n, c).split()[0]:>10}" for c in cols)
        print(f"  {name:<{w}}  {d:<{fw}}  {n:>18,}  {sizes}  {share:>6}  {description}".rstrip(), file=out)

    for r in rows:
        if not r.get("host"):
            line(r["name"], r.get("definition", ""), r["bytes"], f"{r['share'] * 100:5.1f}%", r["description"])
    line("total", "", data["total_bytes"], "100.0%")
    if len(phases) > 1:
        u = unit or "GiB"
        print("phase totals: " + ", ".join(f"{p['name']} {fmt_bytes(p['total_bytes'], u)}"
                                           + (" (peak)" if p["name"] == data["peak_phase"] else "")
                                           for p in phases), file=out)
    host = [r for r in rows if r.get("host")]
    if host and data["host_bytes"]:
        print("host (CPU) memory of each GPU's process, not in the GPU total:", file=out)
        for r in host:
            line(r["name"], r.get("definition", ""), r["bytes"], "", r["description"])
        line("host total", "", data["host_bytes"], "")
    lo, hi = data.get("low_bytes", data["total_bytes"]), data.get("high_bytes", data["total_bytes"])
    if (lo, hi) != (data["total_bytes"],) * 2:
        why = ", ".join(f"{n} {_end(r['low'], r)}..{_end(r['high'], r)}" for n, r in data.get("ranges", {}).items())
        print(f"range with the run-time terms at their ends ({why}): {lo:,} B = {_sizes(lo, unit)} to "
              f"{hi:,} B = {_sizes(hi, unit)}", file=out)
    if capacity is not None:
        head = capacity - data["total_bytes"]
        verdict = "fits" if head >= 0 else "does NOT fit"
        if head >= 0 and hi != data["total_bytes"]:
            verdict += " even in the worst case" if hi <= capacity else " at the point figure, but may not fit in the worst case"
        named = f" ({cap_desc})" if cap_desc and not cap_desc[:1].isdigit() else ""
        print(f"capacity {capacity:,} B{named}: {verdict}, headroom {head:,} B ({_sizes(abs(head), unit)}"
              f"{'' if head >= 0 else ' short'})", file=out)
    for hrow in data.get("heuristics", []):
        print(f"rule of thumb, not derived: {hrow['description']}: {hrow['total_bytes']:,} B = "
              f"{_sizes(hrow['total_bytes'], unit)}", file=out)


def _end(value: str, r: dict) -> str:
    """A range's end as the CLI prints it: bytes with both units, other values as they are."""
    if r.get("unit") == "byte":
        return f"{int(Fraction(value)):,} B"
    return value


def _layout_text(lay: dict) -> str:
    parts = f"dp {lay['dp']} x tp {lay['tp']} x pp {lay['pp']}" + (f" x cp {lay['cp']}" if lay.get("cp", 1) > 1 else "")
    parts += f", ep {lay['ep']}" if lay.get("ep", 1) > 1 else ""
    parts += f", ZeRO-{lay['zero']}"
    if lay.get("zero_impl"):
        parts += f" ({show(lay['zero_impl'])})"
    if lay.get("offload") not in (None, "none"):
        parts += f", offload {show(lay['offload'])}"
    if lay.get("layers_per_stage") is not None and lay["pp"] > 1:
        parts += f", {lay['layers_per_stage']} layers per stage"
    return parts


def print_min_gpus(d: dict, cap_desc: str, unit: str | None, out) -> None:
    lay = d["layout"]
    print(f"fewest GPUs that fit: {d['value']} ({_layout_text(lay)})", file=out)
    if d.get("approximate"):
        print(f"APPROXIMATE: {d['approximate_reason']}", file=out)
    print(f"capacity per GPU: {cap_desc} = {d['capacity_bytes']:,} B = {_sizes(d['capacity_bytes'], unit)}", file=out)
    print(f"per GPU (most loaded): {d['total_bytes']:,} B = {_sizes(d['total_bytes'], unit)}; headroom "
          f"{d['headroom_bytes']:,} B" + (f"; host {d['host_bytes']:,} B per GPU process" if d["host_bytes"] else ""),
          file=out)
    if len(d["layouts"]) > 1:
        print("other layouts that fit, by GPU count then per-GPU total:", file=out)
        for row in d["layouts"][1:6]:
            print(f"  {row['layout']['gpus']:>6} GPUs  {_layout_text(row['layout']):<60} "
                  f"{row['total_bytes']:>18,} B", file=out)
    for p in d["problems"][:3]:
        print(f"layout left out: tp {p['layout']['tp']}, pp {p['layout']['pp']}, zero {p['layout']['zero']}: {p['error']}",
              file=out)
    if len(d["problems"]) > 3:
        print(f"({len(d['problems']) - 3} more layouts left out; --json lists them)", file=out)


def print_solution(d: dict, unit: str | None, out) -> None:
    print(f"largest {d['variable']} that fits: {d['value']}", file=out)
    print(f"capacity: {d['capacity_description']} = {d['capacity_bytes']:,} B = {_sizes(d['capacity_bytes'], unit)}", file=out)
    print(f"total at {d['variable']}={d['value']}: {d['total_bytes']:,} B = {_sizes(d['total_bytes'], unit)}; "
          f"at {d['value'] + 1}: {d['next_total_bytes']:,} B = {_sizes(d['next_total_bytes'], unit)} "
          + (f"(fits, but refused: {d['next_refused']})" if d.get("next_refused") else "(over)"), file=out)
    print(f"one more {d['variable']} adds {d['step_bytes']:,} B there ({d['method']} over the compiled formulas; "
          f"`vramsym derive --solve` shows the derivation)", file=out)
    print(file=out)
    print_estimate(d["estimate"], unit, out, d["capacity_bytes"])


COST = {0: "none", 1: "small", 2: "moderate", 3: "large"}


def print_advice(d: dict, cap_desc: str, unit: str | None, out) -> None:
    """``vramsym advise``: the configuration's total, then the changes, those that fit first."""
    state = "fits" if d["fits"] else "does not fit"
    print(f"now: {d['total_bytes']:,} B = {_sizes(d['total_bytes'], unit)} on {cap_desc} = "
          f"{d['capacity_bytes']:,} B: {state}, headroom {d['headroom_bytes']:,} B", file=out)
    for alias, s in d.get("sensitivity", {}).items():
        if s["exact"] is None:
            continue
        here = f"{float(s['exact']):,.0f}" if "/" not in s["exact"] else f"{s['exact']} = {float(s['exact']):,.2f}"
        shape = "constant here" if s["derivative"] == s["exact"] else f"= {s['derivative']}"
        if s.get("averaged_over_steps"):
            shape += f"; the total grows in steps of {alias}: the average slope across them"
        print(f"d total / d {alias}: {here} B per one more {alias} ({shape}; sympy, at the active branch)", file=out)
    if not d["changes"]:
        print("no change in formulas/advice.json lowers the total of this configuration", file=out)
        return
    print(file=out)
    print(f"  {'':1} {'change':<58} {'total':>24} {'headroom':>19}  {'cost':<8}  flags", file=out)
    for c in d["changes"]:
        mark = "+" if c["fits"] else "-"
        tot = f"{c['total_bytes']:,} B"
        name = c["change"]
        if len(name) > 58:
            print(f"  {mark} {name}", file=out)
            mark, name = " ", ""
        print(f"  {mark} {name:<58} {tot:>24} {c['headroom_bytes']:>17,} B  {COST.get(c['cost_rank'], '?'):<8}  "
              f"{' '.join(c['args'])}", file=out)
    print(file=out)
    print("+ fits, - does not fit; cost: what the change costs in speed or quality (--json: throughput, quality, "
          "source, and argv, the `vramsym estimate` command that gives each total)", file=out)
    for c in d["changes"]:
        if c["fits"]:
            print(f"best: {c['change']}: {c['throughput']}; quality: {c['quality']}", file=out)
            print(f"  vramsym {' '.join(c['argv'])}", file=out)
            break
    for p in d.get("problems", []):
        if "--allow-" in p["error"]:
            print(f"left out: {p['change']}: {p['error']}", file=out)
