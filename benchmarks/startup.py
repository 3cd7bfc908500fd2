"""Speed, as ratios measured in one run on one machine (issue targets in brackets):

1. warm ``vramsym estimate`` / ``solve`` (compiled regime from the cache, no sympy) over a
   bare ``python -c pass`` of the same interpreter            [at most 3x]
2. cold start (empty cache: parse, check, compose, compile)   [under 1.0 s]
3. in-process ``r.evaluate(batch=.., seq=..)`` of a compiled regime, exact
                                                              [at least 50,000 configs/s]

    python benchmarks/startup.py [--runs 7]

The entry point measured is the ``vramsym`` console script beside the interpreter (what
users run; ``python -m vramsym.cli`` when there is none). Figures go to docs/performance.md.
"""
import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

COMMANDS = {
    "solve": ["solve", "max_batch", "--model", "llama-3.1-8b", "--seq", "4096", "--gpu", "24GB"],
    "estimate": ["estimate", "--model", "llama-3.1-8b", "--batch", "1", "--seq", "4096"],
}


def timed(argv, env, runs, before=None):
    times = []
    for _ in range(runs):
        if before:
            before()
        t = time.perf_counter()
        r = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        times.append(time.perf_counter() - t)
        if r.returncode != 0:
            raise SystemExit(f"{argv} failed: {r.stderr.decode()}")
    return statistics.median(times)


def evaluate_rate(n=200_000):
    import vramsym
    r = vramsym.compile("llama-3.1-8b", "inference", {"precision": "bf16"})
    t = time.perf_counter()
    total = 0
    for i in range(n):
        total += r.evaluate(batch=1 + i % 64, seq=512 + i % 4096).total_bytes
    return n / (time.perf_counter() - t)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=7)
    args = ap.parse_args()
    py = sys.executable
    import vramsym
    # an installed wheel ships bytecode; a checkout run with PYTHONDONTWRITEBYTECODE has none
    subprocess.run([py, "-m", "compileall", "-q", os.path.dirname(vramsym.__file__)], check=True)
    base = dict(os.environ)
    base.pop("VRAMSYM_NO_CACHE", None)
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; "
          f"median of {args.runs} runs")
    bare = timed([py, "-c", "pass"], base, args.runs)
    print(f"  python -c pass                      {bare:.3f} s")
    with tempfile.TemporaryDirectory() as tmp:
        warm = dict(base, VRAMSYM_CACHE_DIR=os.path.join(tmp, "warm"))
        cold_dir = os.path.join(tmp, "cold")
        cold = dict(base, VRAMSYM_CACHE_DIR=cold_dir)
        script = os.path.join(os.path.dirname(py), "vramsym")    # the console script users run
        entry = [script] if os.path.exists(script) else [py, "-m", "vramsym.cli"]
        print(f"  entry point: {' '.join(entry)}")
        for name, cmd in COMMANDS.items():
            argv = [*entry, *cmd]
            subprocess.run(argv, env=warm, stdout=subprocess.DEVNULL)
            w = timed(argv, warm, args.runs)
            c = timed(argv, cold, args.runs, before=lambda: subprocess.run(["rm", "-rf", cold_dir]))
            print(f"  vramsym {name:<9} warm {w:.3f} s = {w / bare:4.1f}x python -c pass [target <= 3x]; "
                  f"cold (empty cache) {c:.3f} s [target < 1.0 s]")
    rate = evaluate_rate()
    print(f"  r.evaluate(batch, seq), in process  {rate:,.0f} exact configs/s [target >= 50,000]")


if __name__ == "__main__":
    main()
