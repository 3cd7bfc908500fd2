"""Configs evaluated per second: the NumPy export (vectorized) against the engine's own
per-config evaluation (exact sympy), measured in one run, printed as a ratio.

    python benchmarks/export_throughput.py [--configs 100000]
"""
import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402

import vramsym  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--configs", type=int, default=100_000)
    ap.add_argument("--engine-configs", type=int, default=20_000)
    ap.add_argument("--regime", default="inference")
    args = ap.parse_args()
    lib = vramsym.load_library()
    model = vramsym.load_model("llama-3.1-8b")
    r = vramsym.compile(model, args.regime, library=lib)
    code = vramsym.export(args.regime, "numpy", model, free=("b", "s"), library=lib)
    ns = {}
    exec(compile(code, "<numpy export>", "exec"), ns)  # our own generated module
    fn = ns[f"{args.regime}_total"]
    rng = np.random.default_rng(0)
    b = rng.integers(1, 65, args.configs).astype(np.float64)
    s = rng.integers(1, 32769, args.configs).astype(np.float64)
    t = time.perf_counter()
    out = fn(b, s)
    t_np = time.perf_counter() - t
    t = time.perf_counter()
    for i in range(args.engine_configs):
        est = r.evaluate(batch=int(b[i]), seq=int(s[i]))
        assert abs(float(est.exact_total) - out[i]) <= 1e-9 * float(est.exact_total)
    t_engine = time.perf_counter() - t
    np_rate = args.configs / t_np
    engine_rate = args.engine_configs / t_engine
    print(f"regime {args.regime}, model llama-3.1-8b, free symbols b and s")
    print(f"  numpy export : {np_rate:14,.0f} configs/s ({args.configs:,} configs in {t_np:.4f} s)")
    print(f"  compiled     : {engine_rate:14,.1f} configs/s ({args.engine_configs:,} configs in {t_engine:.2f} s, exact)")
    print(f"  ratio        : {np_rate / engine_rate:14,.0f} x (results agree within 1e-9 relative)")


if __name__ == "__main__":
    main()
