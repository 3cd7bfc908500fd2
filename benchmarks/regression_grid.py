"""Every catalog model x regime x precision x option set, estimated to the byte, per component.

    python benchmarks/regression_grid.py --write before.json     # on the old code
    python benchmarks/regression_grid.py --compare before.json   # on the new code: prints what differs

A refactor that must not change a number (a new evaluator, presets over per-tensor formats)
shows here that it did not: 30 models x 10 regimes x 8 precisions x 4 option sets = 9,600
estimates, plus sharded training on 2 GPUs (4 regimes x ZeRO 1-3 x FSDP2 / DeepSpeed: 720 more).
A row is the total, the components by name and the peak phase; `--compare` compares totals and
the bytes of every component both sides name, and prints the differing totals by class.
(2026-12-01: the compiled path and the precision preset against the sympy engine
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


MULTI_REGIMES = ["train", "train_states", "lora", "qlora"]


def grid(multi: bool = True, models=None) -> dict:
    lib = vramsym.load_library()
    out = {}
    rows = [r for r in vramsym.catalog_models() if models is None or r["name"] in models]
    for row in rows:
        model = vramsym.load_model(row["name"])
        for r in REGIMES:
            for p in PRECISIONS:
                for i, ex in enumerate(EXTRA):
                    ins = {"batch": 3, "seq": 1000}
                    if r == "vllm":
                        ins["capacity"] = 80 * 10**9
                    key = f"{row['name']}|{r}|{p}|{i}"
                    out[key] = _row(model, r, dict(ex, precision=p), ins, lib)
    if multi:
        # sharded training on 2 GPUs: every ZeRO stage of FSDP2 and DeepSpeed
        for row in rows:
            model = vramsym.load_model(row["name"])
            for r in MULTI_REGIMES:
                for impl in ("fsdp2", "deepspeed"):
                    for z in (1, 2, 3):
                        key = f"{row['name']}|{r}|gpus=2,zero={z},{impl}"
                        out[key] = _row(model, r, {"zero_impl": impl}, {"batch": 3, "seq": 1000, "gpus": 2, "zero": z}, lib)
    return out


def _row(model, regime, options, inputs, lib):
    """{"total": bytes, "components": {name: bytes}, "peak_phase": name} or "ERR <kind>"."""
    try:
        e = vramsym.estimate(model, regime, options, inputs, library=lib)
    except vramsym.VramError as err:
        return "ERR " + type(err).__name__
    row = {"total": e.total_bytes, "components": {c.name: c.bytes for c in e.components}}
    if hasattr(e, "peak_phase"):
        row["peak_phase"] = e.peak_phase.name
    return row


def main():
    ap = argparse.ArgumentParser()
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--write")
    g.add_argument("--compare")
    ap.add_argument("--show", type=int, default=50, help="rows of differences to print")
    ap.add_argument("--single-gpu", action="store_true", help="only the 9,600 one-GPU estimates")
    ap.add_argument("--models", help="these catalog models only (comma-separated): against an engine "
                                     "that compiles each combination with sympy, the whole grid takes hours")
    args = ap.parse_args()
    now = grid(multi=not args.single_gpu, models=args.models.split(",") if args.models else None)
    if args.write:
        json.dump(now, open(args.write, "w"), indent=0)
        print(f"{len(now)} estimates written to {args.write}")
        return 0
    before = json.load(open(args.compare))

    def total(row):
        if isinstance(row, list):           # the format before 2027-01: [total, component bytes...]
            return row[0]
        return row if isinstance(row, str) else row["total"]
    if args.models:
        keep = set(args.models.split(","))
        before = {k: v for k, v in before.items() if k.split("|")[0] in keep}
    diff = [k for k in before if total(before[k]) != total(now.get(k))]
    # components that kept their name must keep their bytes (the peak phase's breakdown may list fewer)
    comp = [k for k in before if k not in diff and isinstance(before[k], dict) and isinstance(now.get(k), dict)
            and any(now[k]["components"].get(n, v) != v for n, v in before[k]["components"].items()
                    if n in now[k]["components"])]
    classes = {}
    for k in diff:
        model, regime, *rest = k.split("|")
        classes.setdefault((regime, "|".join(rest)), []).append(k)
    for k in diff[:args.show]:
        o, n = total(before[k]), total(now.get(k))
        ph = now[k].get("peak_phase") if isinstance(now.get(k), dict) else None
        rel = f" ({(n - o) / o * 100:+.2f}%)" if isinstance(o, int) and isinstance(n, int) and o else ""
        print(f"{k}: {o} -> {n}{rel}" + (f", peak phase {ph}" if ph else ""))
    if diff:
        print("by regime and option set:")
        for (regime, rest), ks in sorted(classes.items()):
            print(f"  {regime} {rest}: {len(ks)}")
    for k in comp[:args.show]:
        print(f"component changed: {k}")
    print(f"{len(before)} estimates, {len(diff)} totals differ, {len(comp)} with a changed component")
    return 1 if diff or comp else 0


if __name__ == "__main__":
    sys.exit(main())
