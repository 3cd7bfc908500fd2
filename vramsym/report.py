"""Results as plain data, and their human rendering (tables with GiB and GB).

The engine's results and the fast path's both become the same dicts, so every
run prints the same text whichever path computed it.
"""
from __future__ import annotations

from fractions import Fraction
from typing import Dict, List, Optional

from .capacity import fmt_both, fmt_bytes, to_int_bytes


def show(choice: str) -> str:
    return choice.replace("_", "-")


def components_data(items, exact_total: Fraction) -> List[Dict]:
    """items: (name, description, exact bytes, formula text, sources, definition text)."""
    rows = []
    for name, desc, exact, formula, sources, definition in items:
        rows.append({"name": name, "description": desc, "bytes": to_int_bytes(exact),
                     "share": float(exact / exact_total) if exact_total else 0.0,
                     "definition": definition, "formula": formula, "sources": list(sources)})
    return rows


def make_estimate_data(model, params, regime, description, options, inputs, notes, items) -> Dict:
    total = sum((i[2] for i in items), Fraction(0))
    return {"model": model, "regime": regime, "description": description, "params": params,
            "options": {k: show(v) for k, v in options}, "inputs": {k: str(v) for k, v in sorted(inputs.items())},
            "total_bytes": to_int_bytes(total), "components": components_data(items, total), "notes": list(notes)}


def estimate_data(est) -> Dict:
    defs = est.composed.definitions if est.composed is not None else {}
    items = [(c.name, c.description, c.exact, str(c.expr), c.sources, str(defs.get(c.name, c.expr)))
             for c in est.components]
    inputs = {k: v for k, v in est.binding.values.items() if est.binding.provenance[k] == "input"}
    return make_estimate_data(est.model, est.params, est.regime, est.description,
                              [(k, v) for k, v in est.options if k in est.used_options], inputs, est.notes, items)


def with_capacity(data: Dict, capacity: Optional[int]) -> Dict:
    if capacity is None:
        return data
    return dict(data, capacity_bytes=capacity, fits=data["total_bytes"] <= capacity,
                headroom_bytes=capacity - data["total_bytes"])


def solution_data(sol, cap_desc: str) -> Dict:
    return {"variable": sol.alias, "symbol": sol.variable, "value": sol.value, "total_bytes": sol.total_bytes,
            "capacity_bytes": sol.capacity_bytes, "headroom_bytes": sol.capacity_bytes - sol.total_bytes,
            "next_total_bytes": sol.next_total_bytes, "method": sol.method, "equation": str(sol.equation),
            "estimate": estimate_data(sol.estimate), "capacity_description": cap_desc}


def _sizes(n: int, unit: Optional[str]) -> str:
    return fmt_bytes(n, unit) if unit else fmt_both(n)


def print_estimate(data: Dict, unit: Optional[str], out, capacity: Optional[int] = None) -> None:
    params = f" ({data['params']:,} parameters)" if data.get("params") is not None else ""
    print(f"model {data['model']}{params}, regime {data['regime']}: {data['description']}", file=out)
    print("options: " + ", ".join(f"{k}={v}" for k, v in data["options"].items()), file=out)
    if data["inputs"]:
        print("inputs: " + ", ".join(f"{k}={v}" for k, v in data["inputs"].items()), file=out)
    for n in data["notes"]:
        print(f"note: {n}", file=out)
    rows = data["components"]
    w = max([len(r["name"]) for r in rows] + [5])
    fw = min(44, max([len(r.get("definition", "")) for r in rows] + [7]))
    cols = ["GiB", "GB"] if unit is None else [unit]
    print(f"  {'component':<{w}}  {'formula':<{fw}}  {'bytes':>18}  " + "  ".join(f"{c:>10}" for c in cols)
          + "   share  description", file=out)
    for r in rows:
        d = r.get("definition", "")
        d = d if len(d) <= fw else d[: fw - 3] + "..."
        sizes = "  ".join(f"{fmt_bytes(r['bytes'], c).split()[0]:>10}" for c in cols)
        print(f"  {r['name']:<{w}}  {d:<{fw}}  {r['bytes']:>18,}  {sizes}  {r['share'] * 100:5.1f}%  {r['description']}", file=out)
    sizes = "  ".join(f"{fmt_bytes(data['total_bytes'], c).split()[0]:>10}" for c in cols)
    print(f"  {'total':<{w}}  {'':<{fw}}  {data['total_bytes']:>18,}  {sizes}  100.0%", file=out)
    if capacity is not None:
        head = capacity - data["total_bytes"]
        verdict = "fits" if head >= 0 else "does NOT fit"
        print(f"capacity {capacity:,} B: {verdict}, headroom {head:,} B ({_sizes(abs(head), unit)}"
              f"{'' if head >= 0 else ' short'})", file=out)
    for hrow in data.get("heuristics", []):
        print(f"rule of thumb, not derived: {hrow['description']}: {hrow['total_bytes']:,} B = "
              f"{_sizes(hrow['total_bytes'], unit)}", file=out)


def print_solution(d: Dict, unit: Optional[str], out) -> None:
    print(f"largest {d['variable']} that fits: {d['value']}", file=out)
    print(f"capacity: {d['capacity_description']} = {d['capacity_bytes']:,} B = {_sizes(d['capacity_bytes'], unit)}", file=out)
    print(f"total at {d['variable']}={d['value']}: {d['total_bytes']:,} B = {_sizes(d['total_bytes'], unit)}; "
          f"at {d['value'] + 1}: {d['next_total_bytes']:,} B = {_sizes(d['next_total_bytes'], unit)} (over)", file=out)
    print(f"M({d['symbol']}) = {d['equation']}   [bytes; {d['method']}]", file=out)
    print(file=out)
    print_estimate(d["estimate"], unit, out, d["capacity_bytes"])
