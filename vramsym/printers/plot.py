"""Pictures of the engine's data (vramsym.engine.sweep) with matplotlib, the optional extra
``vramsym[plot]``: a stacked area of the components against one input with the capacity lines
and the solved limits, and a (batch, seq) map of the total with the exact fits frontier.
The figures only draw numbers computed elsewhere.

Every text vramsym writes in a figure is plain text, never mathtext (``parse_math=False``): a model name comes
from a folder or file name, and ``$\\frac{1}{$`` there must be drawn as written, not parsed (nor
crash the parser). Control characters and lone surrogates (a file name that is not UTF-8) are
drawn as visible ``\\xNN`` / ``\\uNNNN`` escapes: a font has no glyph for them, and an SVG or
PDF cannot hold a surrogate."""
from __future__ import annotations

import os
import re
import warnings

from ..errors import InputError
from ..terminal import shown

FORMATS = ("png", "svg", "pdf")
UNITS = {"GiB": 2**30, "GB": 10**9}


#: text as drawn: every control character and lone surrogate a visible escape (the terminal's rule)
plain = shown


def _legend(ax, **kw) -> None:
    """The legend, its entries plain text (the axes' tick labels stay mathtext: 2^10 on a log axis)."""
    for t in ax.legend(**kw).get_texts():
        t.set_parse_math(False)


def _matplotlib():
    """The gate of matplotlib (the plot extra; tests/test_imports.py GATES), drawing off-screen."""
    try:
        import matplotlib.colors
        import matplotlib.pyplot
    except ImportError:
        raise InputError("plotting needs matplotlib, the optional extra [plot]: "
                         "pip install 'vramsym[plot]' (or pip install matplotlib)") from None
    matplotlib.use("Agg")
    return matplotlib


def check_output(path: str) -> str:
    ext = os.path.splitext(path)[1].lower().lstrip(".")
    if ext not in FORMATS:
        raise InputError(f"-o {path}: the file name must end in .png, .svg or .pdf")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise InputError(f"-o {path}: no such folder '{folder}'")
    return ext


def _save(fig, path: str) -> None:
    ext = check_output(path)
    try:
        with warnings.catch_warnings():      # a character the font lacks is drawn as a box: no warning
            warnings.filterwarnings("ignore", message=r"Glyph \d+ .*missing from")
            fig.savefig(path, format=ext, dpi=120, bbox_inches="tight", metadata={} if ext != "png" else None)
    except OSError as e:
        raise InputError(f"cannot write {path}: {e.strerror}") from None


def _title(data: dict) -> str:
    ins = ", ".join(f"{k}={v}" for k, v in sorted(data["inputs"].items()))
    return plain(f"{data['model']} - {data['regime']}" + (f" ({ins})" if ins else ""))


def curve(data: dict, path: str, unit: str = "GiB", log: bool = False) -> None:
    plt = _matplotlib().pyplot
    scale = UNITS[unit]
    xs = [float(x) for x in data["x"]]       # exact below 2^53 (sweep.MAX_X); numpy takes no bigger int
    fig, ax = plt.subplots(figsize=(9, 5.5))
    names = list(data["components"])      # at each x, the components of its peak phase: they sum to the total
    if names:
        ax.stackplot(xs, *[[b / scale for b in data["components"][n]] for n in names],
                     labels=[plain(n) for n in names], alpha=0.85)
    totals = [t / scale for t in data["total_bytes"]]
    ax.plot(xs, totals, color="black", linewidth=2, label="total", marker="o" if len(xs) == 1 else None)  # one point: a dot
    colors = ["#d62728", "#1f77b4", "#2ca02c", "#9467bd", "#8c564b", "#e377c2"]
    for i, c in enumerate(data["capacities"]):
        color = colors[i % len(colors)]
        y = c["capacity_bytes"] / scale
        ax.axhline(y, color=color, linestyle="--", linewidth=1.5,
                   label=plain(f"{c['label']}: {y:,.2f} {unit}"))
        if c["value"] is not None and xs[0] <= c["value"] <= xs[-1]:
            word = "fewest" if c["kind"] == "fewest" else "max"
            ax.axvline(float(c["value"]), color=color, linestyle=":", linewidth=1.2)
            ax.annotate(f"{word} {data['vary']} = {c['value']:,}", (float(c["value"]), y), textcoords="offset points",
                        xytext=(4, 6), color=color, fontsize=9, parse_math=False)
    ax.set_xlabel(plain(data["vary"].replace("_", " ")), parse_math=False)
    ax.set_ylabel(f"memory per GPU ({unit} = {'2^30' if unit == 'GiB' else '10^9'} bytes)", parse_math=False)
    if log:
        ax.set_xscale("log", base=2)
    ax.set_xlim(*((xs[0], xs[-1]) if xs[-1] > xs[0] else (xs[0] / 1.5, xs[0] * 1.5)))   # one point: around it
    stack = [sum(v[i] for v in data["components"].values()) for i in range(len(xs))]
    top = max([max(data["total_bytes"]), max(stack)] + [c["capacity_bytes"] for c in data["capacities"]]) / scale
    ax.set_ylim(0, top * 1.08)
    ax.set_title(_title(data), fontsize=10, parse_math=False)
    _legend(ax, loc="upper left", fontsize=8, ncol=2)
    ax.grid(alpha=0.3)
    _save(fig, path)
    plt.close(fig)


def heatmap(data: dict, path: str, unit: str = "GiB", label: str = "") -> None:
    plt = _matplotlib().pyplot
    scale = UNITS[unit]
    fig, ax = plt.subplots(figsize=(8, 6))
    bs, ss = data["batch"], data["seq"]
    z = [[t / scale for t in row] for row in data["total_bytes"]]
    mesh = ax.pcolormesh(_edges(bs), _edges(ss), z, shading="flat", cmap="viridis",
                         norm=_matplotlib().colors.LogNorm(vmin=min(min(row) for row in z), vmax=max(max(row) for row in z)))
    fig.colorbar(mesh, ax=ax, label=f"total ({unit})")
    # the frontier from the exact solve: at each sequence length, the largest batch that fits
    fx, fy = [], []
    for s, lo, hi, m in zip(ss, _edges(ss)[:-1], _edges(ss)[1:], data["max_batch"]):
        if m is None:
            continue
        fx += [m + 0.5, m + 0.5]
        fy += [lo, hi]
    if fx:
        ax.plot(fx, fy, color="red", linewidth=2.5,
                label=plain(f"largest batch that fits {label or ''} ({data['capacity_bytes'] / scale:,.2f} {unit})"))
        _legend(ax, loc="upper right", fontsize=8)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    ax.set_xlabel("batch", parse_math=False)
    ax.set_ylabel("sequence length", parse_math=False)
    ax.set_title(_title(data), fontsize=10, parse_math=False)
    _save(fig, path)
    plt.close(fig)


def _edges(values: list) -> list:
    """Cell edges around integer points on a log axis: geometric midpoints, outer halves mirrored."""
    if len(values) == 1:
        v = values[0]
        return [v / 1.5, v * 1.5]
    mids = [(a * b) ** 0.5 for a, b in zip(values, values[1:])]
    return [values[0] ** 2 / mids[0]] + mids + [values[-1] ** 2 / mids[-1]]
