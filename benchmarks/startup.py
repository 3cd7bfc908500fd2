"""Speed, as ratios measured in one run on one machine (issue targets in brackets):

1. warm ``vramsym estimate`` / ``solve`` (compiled regime from the cache, no sympy) over a
   bare ``python -c pass`` of the same interpreter            [at most 3x]
2. cold start (empty user cache)                              [under 1.0 s]
   with the bundled formulas, a first run reads the regimes compiled when the wheel was
   built (vramsym/_precompiled/, see vramsym/engine/precompile.py); with ``--formulas``
   files of the user's, or a checkout without them, it parses, checks, composes and
   compiles (printed too, for information)
3. in-process ``r.evaluate(batch=.., seq=..)`` of a compiled regime, exact
                                                              [at least 50,000 configs/s]

    python benchmarks/startup.py [--runs 15]

The bare interpreter and the warm commands are timed in alternation, round by round, so that
a drift of the machine's load affects every figure alike; each figure is the median.

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


def once(argv, env, before=None):
    if before:
        before()
    t = time.perf_counter()
    r = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    dt = time.perf_counter() - t
    if r.returncode != 0:
        raise SystemExit(f"{argv} failed: {r.stderr.decode()}")
    return dt


def alternating(jobs, runs):
    """{name: median seconds} for jobs {name: (argv, env, before)}, timed round by round."""
    times = {name: [] for name in jobs}
    for _ in range(runs):
        for name, (argv, env, before) in jobs.items():
            times[name].append(once(argv, env, before))
    return {name: statistics.median(ts) for name, ts in times.items()}


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
    ap.add_argument("--runs", type=int, default=15)
    args = ap.parse_args()
    py = sys.executable
    import vramsym
    from vramsym.engine import cache
    # an installed wheel ships bytecode; a checkout run with PYTHONDONTWRITEBYTECODE has none
    subprocess.run([py, "-m", "compileall", "-q", os.path.dirname(vramsym.__file__)], check=True)
    base = dict(os.environ)
    base.pop("VRAMSYM_NO_CACHE", None)
    shipped = cache.shipped(cache.shipped_key, "interface") is not None
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; "
          f"median of {args.runs} alternating runs; compiled regimes shipped with the package: "
          f"{'yes' if shipped else 'NO (run python -m vramsym.engine.precompile, or install the wheel)'}")
    with tempfile.TemporaryDirectory() as tmp:
        warm = dict(base, VRAMSYM_CACHE_DIR=os.path.join(tmp, "warm"))
        cold_dir = os.path.join(tmp, "cold")
        cold = dict(base, VRAMSYM_CACHE_DIR=cold_dir)
        user = os.path.join(tmp, "user.vram")
        with open(user, "w") as fh:      # a user's formula file: nothing shipped can answer
            fh.write("symbol my_extra : byte \"my extra bytes\"\n")
        script = os.path.join(os.path.dirname(py), "vramsym")    # the console script users run
        entry = [script] if os.path.exists(script) else [py, "-m", "vramsym.cli"]
        print(f"  entry point: {' '.join(entry)}")
        clear = lambda: subprocess.run(["rm", "-rf", cold_dir])     # noqa: E731
        jobs = {"pass": ([py, "-c", "pass"], base, None)}
        for name, cmd in COMMANDS.items():
            subprocess.run([*entry, *cmd], env=warm, stdout=subprocess.DEVNULL)
            jobs["warm " + name] = ([*entry, *cmd], warm, None)
        t = alternating(jobs, args.runs)
        cold_t = alternating({name: ([*entry, *cmd], cold, clear) for name, cmd in COMMANDS.items()},
                             max(3, args.runs // 3))
        user_t = alternating({name: ([*entry, *cmd, "--formulas", user], cold, clear)
                              for name, cmd in COMMANDS.items()}, 3)
    bare = t["pass"]
    print(f"  python -c pass                      {bare:.3f} s")
    for name in COMMANDS:
        w = t["warm " + name]
        print(f"  vramsym {name:<9} warm {w:.3f} s = {w / bare:4.1f}x python -c pass [target <= 3x]; "
              f"cold (empty cache) {cold_t[name]:.3f} s [target < 1.0 s]; "
              f"cold with a --formulas file {user_t[name]:.3f} s")
    rate = evaluate_rate()
    print(f"  r.evaluate(batch, seq), in process  {rate:,.0f} exact configs/s [target >= 50,000]")


if __name__ == "__main__":
    main()
