"""Figures for `advise`, `plot` and `html`: how long each takes in one process, how large the page is.

    python benchmarks/advice_and_pages.py

Prints wall-clock seconds (cold: the first call in the process, compiling what it needs; warm: the
same call again), the plotted points per second, and the calculator page's size in bytes.
"""
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import vramsym  # noqa: E402


def timed(label, fn, repeat=2):
    out = None
    for i in range(repeat):
        t = time.perf_counter()
        out = fn()
        print(f"{label} ({'cold' if i == 0 else 'warm'}): {time.perf_counter() - t:.2f} s")
    return out


def main():
    timed("advise llama-3.1-8b inference b=16 s=8192 on 24GB",
          lambda: vramsym.advise("llama-3.1-8b", "inference", {}, {"batch": 16, "seq": 8192}, gpu="24GB"))
    adv = timed("advise llama-3.1-8b train mixed-bf16 b=4 s=2048 on rtx-4090",
                lambda: vramsym.advise("llama-3.1-8b", "train", {"precision": "mixed_bf16"},
                                       {"batch": 4, "seq": 2048}, gpu="rtx-4090"))
    print(f"  changes listed: {len(adv['changes'])}, of which fit: {sum(c['fits'] for c in adv['changes'])}")
    r = vramsym.compile("llama-3.1-8b")
    t = time.perf_counter()
    data = vramsym.plot_curve(r, "seq", 1, 131072, {"batch": 1}, [("24GB", 24 * 10**9)], points=4096)
    dt = time.perf_counter() - t
    print(f"plot data: {len(data['x'])} points with every component and one solve in {dt:.2f} s "
          f"({len(data['x']) / dt:,.0f} points/s)")
    t = time.perf_counter()
    grid = vramsym.plot_map(r, "rtx-4090", points=64)
    print(f"map data: {len(grid['batch'])} x {len(grid['seq'])} cells and {len(grid['seq'])} solves in "
          f"{time.perf_counter() - t:.2f} s")
    page = timed("html, 4 models", lambda: vramsym.calculator_html(["llama-3.1-8b", "gpt2", "mixtral-8x7b",
                                                                    "gemma-2-9b"]), repeat=1)
    print(f"  page: {len(page.encode()):,} bytes")
    page = timed("html, the whole catalog", lambda: vramsym.calculator_html(), repeat=1)
    print(f"  page: {len(page.encode()):,} bytes")


if __name__ == "__main__":
    main()
