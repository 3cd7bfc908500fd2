"""Every catalog model x regime x precision x option set, estimated to the byte, per component.

    python benchmarks/regression_grid.py --write before.json     # on the old code
    python benchmarks/regression_grid.py --compare before.json   # on the new code: prints what differs

A refactor that must not change a number (a new evaluator, presets over per-tensor formats)
shows here that it did not: 30 models x 10 regimes x 8 precisions x 4 option sets = 9,600
estimates. (2026-12-01: the compiled path and the precision preset against the sympy engine
and the 19 `match precision` blocks: 9,600 of 9,600 identical.)
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
os.environ.setdefault("VRAMSYM_NO_CACHE", "1")

import vramsym  # noqa: E402

REGIMES = ["inference", "inference_kv", "train", "train_states", "lora", "qlora", "freeze", "adapters", "prefix", "vllm"]
PRECISIONS = ["fp32", "bf16", "fp16", "mixed_bf16", "mixed_fp16", "zero_mixed", "megatron", "fp16_fp32grad"]
EXTRA = [{}, {"attention": "eager"}, {"checkpointing": "full", "lora_dtype": "base"},
         {"optimizer": "adafactor", "lora_targets": "qv"}]


def grid() -> dict:
    lib = vramsym.load_library()
    out = {}
    for row in vramsym.catalog_models():
        model = vramsym.load_model(row["name"])
        for r in REGIMES:
            for p in PRECISIONS:
                for i, ex in enumerate(EXTRA):
                    ins = {"batch": 3, "seq": 1000}
                    if r == "vllm":
                        ins["capacity"] = 80 * 10**9
                    key = f"{row['name']}|{r}|{p}|{i}"
                    try:
                        e = vramsym.estimate(model, r, dict(ex, precision=p), ins, library=lib)
                        out[key] = [e.total_bytes] + [c.bytes for c in e.components]
                    except vramsym.VramError as err:
                        out[key] = "ERR " + type(err).__name__
    return out


def main():
    ap = argparse.ArgumentParser()
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--write")
    g.add_argument("--compare")
    args = ap.parse_args()
    now = grid()
    if args.write:
        json.dump(now, open(args.write, "w"), indent=0)
        print(f"{len(now)} estimates written to {args.write}")
        return 0
    before = json.load(open(args.compare))

    def same(old, new):
        # a component added since (at the end of the list) must be zero here: the multi-GPU terms
        # (DDP buckets, host memory) vanish on one GPU
        if isinstance(old, list) and isinstance(new, list) and len(new) > len(old):
            return new[:len(old)] == old and not any(new[len(old):])
        return old == new
    diff = [k for k in before if not same(before[k], now.get(k))]
    for k in diff[:50]:
        print(f"{k}: {before[k]} -> {now.get(k)}")
    print(f"{len(before)} estimates, {len(diff)} differ")
    return 1 if diff else 0


if __name__ == "__main__":
    sys.exit(main())
