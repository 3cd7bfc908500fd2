"""Start-up time of the CLI: cold (no cache: parse + check every formula file) vs warm
(the checked library and the compiled regime from the cache, no sympy import), against plain
Python and bare imports; then the NumPy export's throughput against the engine's.

    python benchmarks/startup.py [--runs 5]

Prints the median wall time of each command over several runs. Target for later
(issue: speed for repeated use): the warm path well under sympy + pint's import cost.
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

COMMANDS = {
    "solve": ["solve", "max_batch", "--model", "llama-3.1-8b", "--seq", "4096", "--gpu", "24GB"],
    "estimate": ["estimate", "--model", "llama-3.1-8b", "--batch", "1", "--seq", "4096"],
}


def timed(argv, env, runs):
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        r = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        times.append(time.perf_counter() - t)
        if r.returncode != 0:
            raise SystemExit(f"{argv} failed: {r.stderr.decode()}")
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    py = sys.executable
    base = dict(os.environ)
    print(f"median of {args.runs} runs, seconds")
    print(f"  {'python -c pass':<34} {timed([py, '-c', 'pass'], base, args.runs):.3f}")
    print(f"  {'python -c import sympy':<34} {timed([py, '-c', 'import sympy'], base, args.runs):.3f}")
    print(f"  {'python -c import sympy, pint, lark':<34} {timed([py, '-c', 'import sympy, pint, lark'], base, args.runs):.3f}")
    with tempfile.TemporaryDirectory() as cache:
        cold = dict(base, VRAMSYM_NO_CACHE="1")
        warm = dict(base, VRAMSYM_CACHE_DIR=cache)
        warm.pop("VRAMSYM_NO_CACHE", None)
        subprocess.run([py, "-m", "vramsym.cli", *COMMANDS["estimate"]], env=warm, stdout=subprocess.DEVNULL)
        for name, cmd in COMMANDS.items():
            c = timed([py, "-m", "vramsym.cli", *cmd], cold, args.runs)
            w = timed([py, "-m", "vramsym.cli", *cmd], warm, args.runs)
            print(f"  vramsym {name:<26} cold {c:.3f}   warm {w:.3f}")
    print()
    print("export throughput (benchmarks/export_throughput.py):")
    subprocess.run([py, str(Path(__file__).with_name("export_throughput.py"))], env=base)


if __name__ == "__main__":
    main()
