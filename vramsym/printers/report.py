"""Results as plain data, and their human rendering (tables with GiB and GB).

The results of the compiled regime (vramsym.engine.results) become plain dicts: ``--json``
prints them, the tables below render them.
"""
from __future__ import annotations

import os
import sys
import textwrap
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


def with_capacity(data: dict, capacity: int | None, cap_desc: str | None = None, est=None) -> dict:
    """``data`` with the capacity's verdict; with ``est``, a regime with a paged KV cache adds vLLM's
    own figures on that capacity (``vllm``: KV tokens, blocks, maximum concurrency)."""
    if capacity is None:
        return data
    pool = est.kv_pool(capacity) if est is not None else None
    return dict(data, capacity_bytes=capacity, **({"capacity": cap_desc} if cap_desc else {}),
                **({"vllm": pool} if pool else {}),
                fits=data["total_bytes"] <= capacity,
                fits_worst_case=data["high_bytes"] <= capacity, headroom_bytes=capacity - data["total_bytes"])


def solution_data(sol, cap_desc: str) -> dict:
    est = sol.estimate
    pool = est.kv_pool(sol.capacity_bytes)       # vLLM's own figures at the solution (a paged KV cache only)
    return {**({"vllm": pool} if pool else {}), "variable": sol.alias, "symbol": sol.variable, "value": sol.value,
            "total_bytes": sol.total_bytes,
            "capacity_bytes": sol.capacity_bytes, "headroom_bytes": sol.capacity_bytes - sol.total_bytes,
            "next_total_bytes": sol.next_total_bytes, "step_bytes": sol.next_total_bytes - sol.total_bytes,
            "method": sol.method, "next_refused": sol.next_refused, "estimate": estimate_data(est),
            "approximate": est.approximate is not None, "approximate_reason": est.approximate,
            "capacity_description": cap_desc}


def _sizes(n: int, unit: str | None) -> str:
    return fmt_bytes(n, unit) if unit else fmt_both(n)


def _columns() -> int:
    """``shutil.get_terminal_size((100, 24)).columns`` without importing shutil (about 2 ms of a
    warm run, with the bz2 and lzma modules it loads): ``COLUMNS``, else the terminal's, else 100."""
    try:
        given = int(os.environ.get("COLUMNS", "0"))
    except ValueError:
        given = 0
    if given > 0:
        return given
    try:
        return os.get_terminal_size(sys.__stdout__.fileno()).columns or 100
    except (AttributeError, ValueError, OSError):
        return 100


def width() -> int:
    """The terminal's width (``COLUMNS`` first, 100 when the output is not a terminal), at least 72."""
    return max(72, _columns())


def _wrap(text: str, w: int) -> str:
    """One line of prose folded to ``w`` columns, the continuation lines indented."""
    return textwrap.fill(text, w, subsequent_indent="    ", break_on_hyphens=False)


def _cut(text: str, n: int) -> str:
    return text if len(text) <= n else (text[: max(n - 3, 0)] + "..." if n > 3 else "")


def print_estimate(data: dict, unit: str | None, out, capacity: int | None = None, cap_desc: str | None = None,
                   show_all: bool = False, explain: bool = False, columns: int | None = None) -> None:
    """The answer first (verdict, total, card), then what it assumed, then the components alive at the
    peak, in ``columns`` (the terminal's width by default). Components of 0 B and the rules of thumb are
    listed with ``show_all``; the formula column with ``explain`` (the whole derivation: ``vramsym derive``)."""
    W = columns or width()

    def say(text):
        print(_wrap(text, W), file=out)

    if capacity is not None:          # the answer first: the verdict, the number, the card
        card = ""
        if cap_desc and not cap_desc[:1].isdigit():      # a GPU name: 'rtx-4090, 24 GB: 24,564 MiB as ...'
            card = f" on {cap_desc.split(',')[0]} ({cap_desc.split(': ', 1)[-1].split(' MiB')[0]} MiB)"
        verdict = "fits" if data["total_bytes"] <= capacity else "does NOT fit"
        say(f"{verdict}: {_sizes(data['total_bytes'], unit)} of {_sizes(capacity, unit)}{card}")
    if data.get("assumed") or (data.get("recipe") or {}).get("engines"):
        say(_assumed_line(data, unit))
    params = f" ({data['params']:,} parameters)" if data.get("params") is not None else ""
    say(f"model {data['model']}{params}, regime {data['regime']}: {data['description']}")
    say("options: " + ", ".join(f"{k}={v}" for k, v in data["options"].items()))
    if data["inputs"]:
        say("inputs: " + ", ".join(f"{k}={v}" for k, v in data["inputs"].items()))
    if data.get("approximate"):
        say(f"APPROXIMATE: {data['approximate_reason']}")
    for n in data["notes"]:
        if not (data.get("approximate") and n == f"approximate: {data['approximate_reason']}"):
            say(f"note: {n}")
    rows = data["components"]
    phases = data.get("phases") or []
    if len(phases) > 1:
        peak = next(p for p in phases if p["name"] == data["peak_phase"])
        say(f"peak phase: {peak['name']} ({peak['description']}); the components alive in it:")
    shown = [r for r in rows if not r.get("host") and (show_all or r["bytes"] != 0)]
    zero = [r["name"] for r in rows if not r.get("host") and not show_all and r["bytes"] == 0]
    w = max([len(r["name"]) for r in shown] + [10])
    fw = min(44, max([len(r.get("definition", "")) for r in rows] + [7])) if explain else 0
    cols = ["GiB", "GB"] if unit is None else [unit]
    formula = f"  {'formula':<{fw}}" if explain else ""

    def header():
        return f"  {'component':<{w}}{formula}  {'bytes':>17}  " + "  ".join(f"{c:>8}" for c in cols) + "   share"
    head = header()
    if len(head) > W and len(cols) > 1:         # a narrow terminal: GiB only (the bytes column stays exact)
        cols = cols[:1]
        head = header()
    rest = W - len(head) - 2          # what is left of the line for the description
    print(head + ("  description" if rest >= 12 else ""), file=out)

    def line(name, definition, n, share, description=""):
        d = f"  {_cut(definition, fw):<{fw}}" if explain else ""
        sizes = "  ".join(f"{fmt_bytes(n, c).split()[0]:>8}" for c in cols)
        text = f"  {name:<{w}}{d}  {n:>17,}  {sizes}  {share:>6}"
        print((text + (f"  {_cut(description, rest)}" if rest >= 12 and description else "")).rstrip(), file=out)

    for r in shown:
        line(r["name"], r.get("definition", ""), r["bytes"], f"{r['share'] * 100:5.1f}%", r["description"])
    line("total", "", data["total_bytes"], "100.0%")
    if zero:
        say(f"0 B, not shown (--all lists them): {', '.join(zero)}")
    if len(phases) > 1:
        u = unit or "GiB"
        say("phase totals: " + ", ".join(f"{p['name']} {fmt_bytes(p['total_bytes'], u)}"
                                         + (" (peak)" if p["name"] == data["peak_phase"] else "") for p in phases))
    host = [r for r in rows if r.get("host")]
    if host and data["host_bytes"]:
        say("host (CPU) memory of each GPU's process, not in the GPU total:")
        for r in host:
            line(r["name"], r.get("definition", ""), r["bytes"], "", r["description"])
        line("host total", "", data["host_bytes"], "")
    lo, hi = data.get("low_bytes", data["total_bytes"]), data.get("high_bytes", data["total_bytes"])
    if (lo, hi) != (data["total_bytes"],) * 2:
        why = ", ".join(f"{n} {_end(r['low'], r)}..{_end(r['high'], r)}" for n, r in data.get("ranges", {}).items())
        say(f"range with the run-time terms at their ends ({why}): {lo:,} B = {_sizes(lo, unit)} to "
            f"{hi:,} B = {_sizes(hi, unit)}")
    if capacity is not None:
        head_room = capacity - data["total_bytes"]
        verdict = "fits" if head_room >= 0 else "does NOT fit"
        if head_room >= 0 and hi != data["total_bytes"]:
            verdict += " even in the worst case" if hi <= capacity else " at the point figure, but may not fit in the worst case"
        named = f" ({cap_desc})" if cap_desc and not cap_desc[:1].isdigit() else ""
        say(f"capacity {capacity:,} B{named}: {verdict}, headroom {head_room:,} B ({_sizes(abs(head_room), unit)}"
            f"{'' if head_room >= 0 else ' short'})")
    if data.get("vllm"):
        _say_pool(data["vllm"], out, W)
    heuristics = data.get("heuristics", [])
    if show_all:
        for hrow in heuristics:
            say(f"rule of thumb, not derived: {hrow['description']}: {hrow['total_bytes']:,} B = "
                f"{_sizes(hrow['total_bytes'], unit)}")
    elif heuristics:
        say(f"rules of thumb beside this answer: {len(heuristics)} (--all prints them)")


ASSUMED_SHOWN = 3      # the settings the assumed line names: those that decide the most bytes


def _assumed_line(data: dict, unit: str | None) -> str:
    """'assumed (qlora's recipe trl; ...): checkpointing=full (decides 1.20 GiB), ...': the regime's recipe
    and the settings of it the user did not give that decide the most bytes (all of them: --json's
    ``assumed``); for a regime that other engines answer too (inference), those engines."""
    rows = data["assumed"][:ASSUMED_SHOWN]
    rec = data.get("recipe")
    if rec and not rows:
        return (f"assumed ({data['regime']}'s recipe {rec['name']}: {rec['description']}; "
                + " or ".join(f"--regime {show(e)}" for e in rec["engines"]) + " for those engines)")
    whose = f"{data['regime']}'s recipe {rec['name']}" if rec else f"regime {data['regime']}'s settings"
    change = (f"--recipe {' or '.join(rec['others'])} or a flag changes them" if rec and rec["others"]
              else "a flag changes each")
    more = f", {len(data['assumed']) - len(rows)} more in --json" if len(data["assumed"]) > len(rows) else ""
    return (f"assumed ({whose}; {change}): "
            + ", ".join(f"{r['option'].replace('_', '-')}={r['choice']}"
                        + (f" (decides {fmt_bytes(r['decides_bytes'], unit or 'GiB')})" if r["decides_bytes"] else "")
                        for r in rows) + more)


def _say_pool(pool: dict, out, w: int) -> None:
    """vLLM's two log lines for the KV pool on this card, in its words."""
    groups = pool.get("kv_groups", 1)
    shared = f", shared by {groups} KV-cache groups" if groups > 1 else ""
    print(_wrap(f"vLLM's log on this card: GPU KV cache size: {pool['kv_cache_tokens']:,} tokens "
                f"({pool['num_blocks']:,} blocks of {pool['block_tokens']}{shared}); Maximum concurrency for "
                f"{pool['tokens_per_request']:,} tokens per request: {pool['max_concurrency_float']:.2f}x", w), file=out)


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
    W = width()

    def say(text):
        print(_wrap(text, W), file=out)

    say(f"largest {d['variable']} that fits: {d['value']}")
    say(f"capacity: {d['capacity_description']} = {d['capacity_bytes']:,} B = {_sizes(d['capacity_bytes'], unit)}")
    say(f"total at {d['variable']}={d['value']}: {d['total_bytes']:,} B = {_sizes(d['total_bytes'], unit)}; "
        f"at {d['value'] + 1}: {d['next_total_bytes']:,} B = {_sizes(d['next_total_bytes'], unit)} "
        + (f"(fits, but refused: {d['next_refused']})" if d.get("next_refused") else "(over)"))
    say(f"one more {d['variable']} adds {d['step_bytes']:,} B there ({d['method']} over the compiled formulas; "
        f"`vramsym derive --solve` shows the derivation)")
    if d.get("vllm"):
        _say_pool(d["vllm"], out, width())
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
        print(f"d total / d {alias}: {here} B per one more {alias} ({shape}; at the active branch)", file=out)
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
