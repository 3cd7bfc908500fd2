"""GPU calibration: the accuracy matrix on a CUDA device, with what only a GPU shows.

    python benchmarks/gpu_calibration.py [--quick] [--out docs/gpu_calibration.md]

For each case it builds the Hugging Face model from its config with random weights
on the GPU, runs the job (two training steps, or prefill + decode), and records:
torch.cuda.max_memory_allocated (compare with vramsym --overhead none),
torch.cuda.max_memory_reserved (allocator slack), and the CUDA context
(device memory used by the process before any tensor, from torch.cuda.mem_get_info).
It writes a table with the date, the card, the driver and the library versions.
Run it whenever a GPU is available; nothing else depends on it.
"""
from __future__ import annotations

import argparse
import datetime
import gc
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import vramsym  # noqa: E402

CASES = [  # (catalog model, regime, options, batch, seq)
    ("llama-3.2-1b", "inference", {"precision": "bf16"}, 1, 2048),
    ("llama-3.2-1b", "inference", {"precision": "bf16"}, 8, 4096),
    ("llama-3.2-1b", "train", {"precision": "mixed_bf16"}, 1, 1024),
    ("llama-3.2-1b", "train", {"precision": "bf16", "optimizer": "adamw_fused", "checkpointing": "full"}, 4, 2048),
    ("qwen2.5-0.5b", "train", {"precision": "fp32"}, 2, 1024),
    ("qwen2.5-0.5b", "lora", {"precision": "bf16"}, 4, 1024),
    ("llama-3.1-8b", "inference", {"precision": "bf16"}, 4, 4096),
    ("llama-3.1-8b", "lora", {"precision": "bf16", "checkpointing": "full"}, 1, 2048),
]


def run_case(torch, transformers, name, regime, opts, b, s):
    from vramsym.measure.compare import measure_args
    lib = vramsym.load_library()
    model = vramsym.load_model(name)
    est = vramsym.estimate(model, regime, dict(opts, overhead="none"), {"batch": b, "seq": s}, library=lib)
    args = measure_args(est, regime, fake=False, decode_steps=4)
    cfg = dict(model.raw_config)
    mt = cfg.pop("model_type")
    for k in ("auto_map", "quantization_config"):
        cfg.pop(k, None)
    hf = transformers.AutoConfig.for_model(mt, **cfg)
    hf._attn_implementation = args["attention"]
    dtype = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16, "mixed_bf16": torch.float32}[args["precision"]]
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    with torch.device("cuda"):
        m = transformers.AutoModelForCausalLM.from_config(hf, torch_dtype=dtype)
    ids = torch.randint(0, hf.vocab_size, (b, s), device="cuda")
    if args["mode"] == "inference":
        m.eval()
        with torch.no_grad():
            m.generate(ids, max_new_tokens=4, do_sample=False, min_new_tokens=4)
    else:
        if args.get("checkpointing"):
            m.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        if args.get("lora"):
            import peft
            lcfg = peft.LoraConfig(r=args["lora"]["r"], lora_alpha=16, target_modules=args["lora"]["target_modules"])
            m = peft.get_peft_model(m, lcfg)
        m.train()
        params = [p for p in m.parameters() if p.requires_grad]
        opt = {"adamw": lambda: torch.optim.AdamW(params, foreach=True),
               "adamw_fused": lambda: torch.optim.AdamW(params, fused=True),
               "sgd": lambda: torch.optim.SGD(params, lr=1e-3),
               "sgd_momentum": lambda: torch.optim.SGD(params, lr=1e-3, momentum=0.9)}[args["optimizer"]]()
        for _ in range(2):
            with torch.autocast("cuda", dtype=torch.bfloat16, enabled=args["precision"] == "mixed_bf16"):
                loss = m(input_ids=ids, labels=ids).loss
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
    torch.cuda.synchronize()
    row = {"model": name, "regime": regime, "options": opts, "b": b, "s": s, "predicted": est.total_bytes,
           "allocated": torch.cuda.max_memory_allocated(), "reserved": torch.cuda.max_memory_reserved()}
    del m
    gc.collect()
    torch.cuda.empty_cache()
    return row


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", default=str(ROOT / "docs" / "gpu_calibration.md"))
    args = ap.parse_args()
    import torch
    import transformers
    if not torch.cuda.is_available():
        raise SystemExit("no CUDA device: this script calibrates against a GPU (see benchmarks/accuracy.py for the CPU matrix)")
    free0, total = torch.cuda.mem_get_info()
    torch.zeros(1, device="cuda")
    free1, _ = torch.cuda.mem_get_info()
    props = torch.cuda.get_device_properties(0)
    context = total - free1 - torch.cuda.memory_reserved()
    rows = []
    for case in (CASES[:3] if args.quick else CASES):
        try:
            rows.append(run_case(torch, transformers, *case))
        except torch.cuda.OutOfMemoryError as e:
            rows.append({"model": case[0], "regime": case[1], "options": case[2], "b": case[3], "s": case[4], "error": f"OOM: {e}"})
        print(rows[-1], flush=True)
    lines = ["# GPU calibration", "",
             f"Generated by `benchmarks/gpu_calibration.py` on {datetime.date.today()}: {props.name}, "
             f"{total / 2**20:,.0f} MiB, torch {torch.__version__} (CUDA {torch.version.cuda}), transformers {transformers.__version__}.", "",
             f"CUDA context and process overhead before the first tensor: {context / 2**20:,.0f} MiB "
             f"(vramsym's default cuda_ctx is 500 MiB; pass --set cuda_ctx={context} to use this card's figure).", "",
             "| model | regime | options | b | s | predicted (--overhead none) | max_memory_allocated | error | max_memory_reserved | allocator slack |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['model']} | {r['regime']} | {r['options']} | {r['b']} | {r['s']} | | {r['error']} | | | |")
            continue
        err = (r["predicted"] - r["allocated"]) / r["allocated"]
        lines.append(f"| {r['model']} | {r['regime']} | {r['options']} | {r['b']} | {r['s']} | {r['predicted']:,} | "
                     f"{r['allocated']:,} | {err * 100:+.2f}% | {r['reserved']:,} | {(r['reserved'] - r['allocated']) / r['allocated'] * 100:.1f}% |")
    Path(args.out).write_text("\n".join(lines) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
