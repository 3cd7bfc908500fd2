"""Accuracy matrix: vramsym's prediction vs PyTorch's accounting, written to docs/accuracy.md.

    python benchmarks/accuracy.py            # the full matrix (tens of minutes on 2 cores)
    python benchmarks/accuracy.py --quick    # a few cases
    python benchmarks/accuracy.py --only qlora --keep-from docs/accuracy.md
                                             # measure the cases whose regime contains "qlora" and take
                                             # every other case from a previous docs/accuracy.md, its
                                             # prediction re-derived (a case whose prediction changed
                                             # is dropped with a message: measure it again)

Architectures x regimes x sizes. Full-size configs are traced under FakeTensorMode
(no memory is allocated); MoE runs for real at a small size (routing has
data-dependent shapes), and so does QLoRA (bitsandbytes' 4-bit kernels read the values; its
CPU backend needs bitsandbytes>=0.48). Every figure in docs/accuracy.md comes from this script.
"""
from __future__ import annotations

import argparse
import datetime
import json
import platform
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import vramsym  # noqa: E402
from vramsym.measure.compare import MEASURED_AS, compare  # noqa: E402
from vramsym.catalog.models import _spec  # noqa: E402

TINY_MIXTRAL = {"model_type": "mixtral", "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
                "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 256, "num_local_experts": 4,
                "num_experts_per_tok": 2, "tie_word_embeddings": False, "max_position_embeddings": 512}


def arch(name, layers=None):
    """A catalog model, optionally cut to fewer layers (widths, vocab and heads stay real)."""
    m = vramsym.load_model(name)
    if layers is None:
        return m
    cfg = dict(m.raw_config)
    cfg["num_hidden_layers" if "num_hidden_layers" in cfg else "n_layer"] = layers
    return _spec(cfg, f"{name} ({layers} layers)", m.source)


TINY_QWEN3_MOE = {"model_type": "qwen3_moe", "hidden_size": 64, "intermediate_size": 160, "num_hidden_layers": 2,
                  "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 256,
                  "num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 32, "decoder_sparse_step": 1,
                  "mlp_only_layers": [], "tie_word_embeddings": False, "max_position_embeddings": 512}
TINY_DEEPSEEK = {"model_type": "deepseek_v3", "hidden_size": 64, "intermediate_size": 160, "num_hidden_layers": 2,
                 "num_attention_heads": 4, "num_key_value_heads": 4, "vocab_size": 256, "max_position_embeddings": 512,
                 "tie_word_embeddings": False, "q_lora_rank": 32, "kv_lora_rank": 16, "qk_rope_head_dim": 8,
                 "qk_nope_head_dim": 16, "v_head_dim": 16, "n_routed_experts": 4, "num_experts_per_tok": 2,
                 "moe_intermediate_size": 32, "n_shared_experts": 1, "first_k_dense_replace": 1, "n_group": 1,
                 "topk_group": 1, "rope_interleave": True}

ARCHS = {
    "llama-3.1-8b (GQA, full size)": lambda: arch("llama-3.1-8b"),
    "llama-3.2-1b (GQA, tied, full size)": lambda: arch("llama-3.2-1b"),
    "gpt2 (MHA, LayerNorm, tied, full size)": lambda: arch("gpt2"),
    "qwen2.5-0.5b (qkv bias, full size)": lambda: arch("qwen2.5-0.5b"),
    "gemma-3-4b (vocab 262k, head_dim 256, 2 layers)": lambda: arch("gemma-3-4b", 2),
    "gemma-2-9b (soft-capping, eager, 2 layers)": lambda: arch("gemma-2-9b", 2),
    "qwen3-4b (explicit head_dim, qk-norm, 4 layers)": lambda: arch("qwen3-4b", 4),
    "mistral-7b-v0.3 (GQA, 4 layers)": lambda: arch("mistral-7b-v0.3", 4),
    "phi-3-mini-4k (fused qkv / gate_up, 4 layers)": lambda: arch("phi-3-mini-4k", 4),
    "mixtral (MoE, tiny, real tensors)": lambda: _spec(TINY_MIXTRAL, "tiny-mixtral", "benchmarks/accuracy.py"),
    "qwen3-moe (MoE, tiny, real tensors)": lambda: _spec(TINY_QWEN3_MOE, "tiny-qwen3-moe", "benchmarks/accuracy.py"),
    "deepseek-v3 (MLA + MoE, tiny, real tensors)": lambda: _spec(TINY_DEEPSEEK, "tiny-deepseek-v3", "benchmarks/accuracy.py"),
}

# QLoRA as users run it (vramsym.measure.hf_model._build_qlora_model): random bf16 weights saved and
# loaded with BitsAndBytesConfig(load_in_4bit, nf4, double quantization, bf16 compute), peft's
# prepare_model_for_kbit_training (precision fp32: the parameters that are not 4-bit become fp32),
# LoRA, model.train(), forward + backward + AdamW. Tiny dense configs, real tensors.
QLORA_ARCHS = {
    "llama (QLoRA, tiny, real tensors)": {"model_type": "llama", "hidden_size": 128, "intermediate_size": 320,
                                          "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
                                          "vocab_size": 1024, "tie_word_embeddings": False,
                                          "max_position_embeddings": 512},
    "qwen2 (QLoRA, qkv bias, tied, tiny, real tensors)": {"model_type": "qwen2", "hidden_size": 128,
                                                          "intermediate_size": 256, "num_hidden_layers": 2,
                                                          "num_attention_heads": 4, "num_key_value_heads": 1,
                                                          "vocab_size": 1024, "tie_word_embeddings": True,
                                                          "max_position_embeddings": 512},
    "qwen3 (QLoRA, qk-norm, tiny, real tensors)": {"model_type": "qwen3", "hidden_size": 128, "intermediate_size": 256,
                                                   "num_hidden_layers": 2, "num_attention_heads": 4,
                                                   "num_key_value_heads": 2, "head_dim": 32, "vocab_size": 1024,
                                                   "tie_word_embeddings": False, "max_position_embeddings": 512},
}
QLORA_REGIMES = [
    ("qlora all-linear (prepare_model_for_kbit_training)", "qlora", {"lora_targets": "all_linear", "precision": "fp32", "checkpointing": "none"}),
    ("qlora qv (prepare_model_for_kbit_training)", "qlora", {"lora_targets": "qv", "precision": "fp32", "checkpointing": "none"}),
    ("qlora all-linear bf16 (no prepare)", "qlora", {"lora_targets": "all_linear", "precision": "bf16", "checkpointing": "none"}),
]
QLORA_SIZES = [(1, 32), (2, 64)]

REGIMES = [
    ("inference bf16", "inference", {"precision": "bf16"}),
    ("inference fp32 eager", "inference", {"precision": "fp32", "attention": "eager"}),
    ("train fp32", "train", {"precision": "fp32"}),
    ("train mixed-bf16", "train", {"precision": "mixed_bf16"}),
    ("train bf16 sgd", "train", {"precision": "bf16", "optimizer": "sgd"}),
    ("train mixed-bf16 eager ckpt", "train", {"precision": "mixed_bf16", "attention": "eager", "checkpointing": "full"}),
    ("lora all-linear bf16", "lora", {"precision": "bf16", "lora_targets": "all_linear"}),
    ("lora qv fp32", "lora", {"precision": "fp32", "lora_targets": "qv"}),
    ("train mixed-bf16 ckpt half", "train", {"precision": "mixed_bf16", "checkpointing": "full"}, {"checkpoint_ratio": "1/2"}),
    ("train fp32 eager", "train", {"precision": "fp32", "attention": "eager"}),
]
# Gemma 2 refuses SDPA (soft-capping); DeepSeek's MLA has a value head narrower than its query head, which
# the CPU's fused SDPA kernel does not take (it falls back to the math kernel and saves the b x n x s^2
# scores, which CUDA's memory-efficient kernel does not): every case of these runs eager.
EAGER_ONLY = ("gemma-2", "deepseek")
NO_QV = ("deepseek",)       # MLA has no q_proj / v_proj for peft's qv targets
SIZES = [(1, 512), (4, 1024)]
GEMMA_REGIMES = ("inference bf16", "train fp32", "lora qv fp32")  # bf16 matmuls on the CPU are slow


def _measure_case(rows, model, aname, rname, regime, opts, extra, b, s, real, lib):
    t = time.time()
    try:
        res = compare(model, regime, opts, dict(extra, batch=b, seq=s), fake=not real, library=lib)
    except Exception as e:  # record and go on: the table says which case failed and why
        rows.append({"arch": aname, "regime": rname, "b": b, "s": s, "error": f"{type(e).__name__}: {e}"})
        print(f"{aname} | {rname} | b={b} s={s}: ERROR {e}", flush=True)
        return
    total = next(r for r in res["rows"] if r["component"] == "total (peak)")
    rows.append({"arch": aname, "regime": rname, "b": b, "s": s, "seconds": round(time.time() - t, 1),
                 "predicted": total["predicted_bytes"], "measured": total["measured_bytes"],
                 "error": None, "rel": total["relative_error"], "phase": res["measured_peak_phase"],
                 "predicted_phase": res["predicted_peak_phase"],
                 "components": res["rows"], "torch": res["measurement"].get("torch_version"),
                 "transformers": res["measurement"].get("transformers_version")})
    print(f"{aname} | {rname} | b={b} s={s}: {total['relative_error'] * 100:+.2f}% "
          f"({time.time() - t:.0f}s)", flush=True)


def cases(quick: bool, only=None):
    """Every case of the matrix: (arch, regime label, model, regime, options, extra inputs, b, s, real tensors)."""
    archs = list(ARCHS.items())[:3] if quick else list(ARCHS.items())
    regimes = REGIMES[:3] if quick else REGIMES
    sizes = SIZES[:1] if quick else SIZES
    for aname, make in archs:
        model = make()
        big = "8b" in aname
        for rname, regime, opts, *extra in regimes:
            extra = extra[0] if extra else {}
            if only and only not in rname:
                continue
            if any(k in aname for k in EAGER_ONLY):
                opts = dict(opts, attention="eager")
            if any(k in aname for k in NO_QV) and opts.get("lora_targets") == "qv":
                continue
            for b, s in sizes:
                if big and (b, s) != sizes[0]:
                    continue  # one size for the 8B model keeps the run short
                if "gemma" in aname and (b, s) != sizes[0]:
                    continue  # a 256k vocabulary makes every case large: one size
                real = "real tensors" in aname
                if "tiny" in aname:
                    b, s = (1, 32) if (b, s) == sizes[0] else (2, 64)
                elif real:
                    b, s = (1, 128) if (b, s) == sizes[0] else (2, 256)
                yield aname, rname, model, regime, opts, extra, b, s, real
    qarchs = list(QLORA_ARCHS.items())[:1] if quick else list(QLORA_ARCHS.items())
    for aname, cfg in qarchs:
        model = _spec(cfg, "tiny-" + aname.split(" ")[0], "benchmarks/accuracy.py")
        for rname, regime, opts in (QLORA_REGIMES[:1] if quick else QLORA_REGIMES):
            if only and only not in rname:
                continue
            for b, s in (QLORA_SIZES[:1] if quick else QLORA_SIZES):
                yield aname, rname, model, regime, opts, {}, b, s, True


def run(quick: bool, only=None):
    rows = []
    lib = vramsym.load_library()
    for aname, rname, model, regime, opts, extra, b, s, real in cases(quick, only):
        _measure_case(rows, model, aname, rname, regime, opts, extra, b, s, real, lib)
    return rows


def repredict(kept: list, quick: bool = False) -> list:
    """Kept rows (measured earlier) with the prediction of today's formulas and its peak phase. A
    kept row whose predicted total changed is dropped with a message: it must be measured again."""
    lib = vramsym.load_library()
    by_key = {(r["arch"], r["regime"], r["b"], r["s"]): r for r in kept}
    out = []
    for aname, rname, model, regime, opts, extra, b, s, real in cases(quick):
        row = by_key.get((aname, rname, b, s))
        if row is None or row.get("error"):
            continue
        est = vramsym.estimate(model, regime, dict(opts, overhead="none"), dict(extra, batch=b, seq=s), library=lib)
        if est.total_bytes != row["predicted"]:
            print(f"{aname} | {rname} | b={b} s={s}: the prediction changed "
                  f"({row['predicted']:,} -> {est.total_bytes:,} B): measure it again (--only)", flush=True)
            continue
        out.append(dict(row, predicted_phase=est.peak_phase.name, phase=MEASURED_AS.get(row["phase"], row["phase"])))
    return out


# Why a case misses the targets (median 5%, worst 10% on the total; components exact). Written
# from the measurements, matched to the table's rows by architecture and regime.
EXPLAIN = [
    ("MoE", "lora all-linear", "LoRA on an MoE model keeps about 4-8 h bytes per token and MoE layer more than the "
                               "formulas count (the same with adapters on the attention only, independent of the "
                               "experts' count, top-k and widths); not yet traced to its tensor. At hidden 64 it is "
                               "a large share of the activations."),
    ("mixtral", "inference fp32 eager", "tiny MoE with eager attention: the prefill peak holds MoE buffers together "
                                        "with the attention scores of the same layer; the max of the two branches "
                                        "misses their overlap (a few hundred bytes per token at hidden 64)."),
    ("MoE", "", "tiny MoE (hidden 64): small per-token routing terms are a large share of the activations."),
    ("", "ckpt", "autocast + checkpointing: the timing of the 16-bit weight copies and of the recomputed layer "
                 "against the gradients is modelled as a max of phases."),
]


def _why(r) -> str:
    for arch_key, regime_key, text in EXPLAIN:
        if arch_key in r["arch"] and regime_key in r["regime"]:
            return text
    return ""


GPU = """## On a GPU

No GPU was lent to the sessions that produced this table, so `benchmarks/gpu_calibration.py` has
not run on a card yet: the CUDA context keeps its documented default of 500 MiB with the range
200 MB - 2 GB (seed article 2, section 6.2), and the caching allocator's slack its default 0 with
the range 0 - 1/4 of the tensors (`formulas/inference.vram`: `cuda_ctx`, `frag`). `vramsym estimate`
reports both ends (`low_bytes`, `high_bytes`) and `solve --bound high` answers for the worst case.
When a device is lent, `python benchmarks/gpu_calibration.py` measures the context, the workspaces
and `max_memory_reserved` beside `max_memory_allocated` on it.
"""

MANY_GPUS = """## Many GPUs

One rank of an FSDP2 job (ZeRO-2 and ZeRO-3, fp32 / mixed-bf16 / bf16, with and without
checkpointing), measured in one CPU process under PyTorch's fake process group (equal to a
real 2-process gloo run to the byte): [`accuracy_multi_gpu.md`](accuracy_multi_gpu.md),
generated by `benchmarks/fsdp_accuracy.py --write docs/accuracy_multi_gpu.md`.
"""


def write(rows, path: Path, note=None):
    ok = [r for r in rows if r.get("error") is None]
    errs = [abs(r["rel"]) for r in ok]
    lines = ["# Accuracy: predicted vs measured peak memory", "",
             f"Generated by `benchmarks/accuracy.py` on {datetime.date.today()} "
             f"({platform.machine()}, torch {ok[0]['torch'] if ok else '?'}, transformers {ok[0]['transformers'] if ok else '?'}). "
             "Do not edit by hand.", "",
             "These hand-picked cases are a smoke set. The evidence drawn at random (full-size models, sequences up to "
             "16k, batch and GPU counts nobody picked) is [docs/accuracy_sweep.md](accuracy_sweep.md) "
             "(`benchmarks/accuracy_sweep.py --seed N --cases K`), with its worst cases; the families described after it "
             "(Phi, OPT, OLMo, GPT-BigCode, GPT-J, CodeGen, Arcee) have their own seeded sweep, "
             "[docs/accuracy_sweep_families.md](accuracy_sweep_families.md) (`--families`), and a seed drawn after the "
             "fixes that seed 3 led to is [docs/accuracy_sweep_seed5.md](accuracy_sweep_seed5.md); GPT-Neo, read from "
             "its structure after them, has seed 6, [docs/accuracy_sweep_seed6.md](accuracy_sweep_seed6.md), BLOOM seed 7 "
             "([docs/accuracy_sweep_seed7.md](accuracy_sweep_seed7.md)), MPT seed 8 "
             "([docs/accuracy_sweep_seed8.md](accuracy_sweep_seed8.md)), and Gemma 4, whose training and LoRA are read "
             "from its layer shapes since, seed 9 ([docs/accuracy_sweep_seed9.md](accuracy_sweep_seed9.md): synthetic "
             "configs at full widths with sliding and full-attention layers at their own head dimensions, layers that "
             "reuse keys and values, per-layer inputs or none, values from the keys). Seed 10 draws multi-GPU jobs only, "
             "tensor parallelism with full checkpointing among them ([docs/accuracy_sweep_seed10.md](accuracy_sweep_seed10.md)); "
             "every sweep's multi-GPU cases were measured again on 2026-12-05, after the multi-GPU harness was made to "
             "train as Trainer does (no KV cache) and to take a real run's unpacked path under FakeTensorMode.", "",
             "Measured = PyTorch's own accounting (`torch.distributed._tools.mem_tracker.MemTracker`) of live tensor "
             "storages, under FakeTensorMode for full-size configs (real CPU tensors for the tiny MoE and QLoRA models), "
             "training in `model.train()` with the config's dropout rates (dropout run as CUDA runs it: "
             "a bool mask per dropout, attention dropout inside the SDPA kernel). "
             "Predicted = `vramsym estimate --overhead none` (tensors only: no CUDA context or allocator slack; "
             "see benchmarks/gpu_calibration.py for those). "
             "QLoRA as users run it: random bf16 weights loaded with `BitsAndBytesConfig(load_in_4bit=True, "
             "bnb_4bit_quant_type=\"nf4\", bnb_4bit_use_double_quant=True, bnb_4bit_compute_dtype=torch.bfloat16)` "
             "(bitsandbytes' CPU backend), peft's `prepare_model_for_kbit_training` (its fp32 cast of every parameter "
             "that is not 4-bit; the `bf16 (no prepare)` rows skip it), LoRA, `model.train()`, forward, backward and "
             "an AdamW step; the 4-bit weights are counted with their QuantState (absmax, codes, offset).", ""]
    if note:
        lines += [note, ""]
    if errs:
        lines += [f"**Total peak, |relative error| over {len(errs)} cases: median {statistics.median(errs) * 100:.2f}%, "
                  f"worst {max(errs) * 100:.2f}%.**", ""]
        dense = [abs(r["rel"]) for r in ok if "MoE" not in r["arch"]]
        if dense:
            lines += [f"Dense architectures ({len(dense)} cases): median {statistics.median(dense) * 100:.2f}%, "
                      f"worst {max(dense) * 100:.2f}%; the mixture-of-experts cases are listed below with the reason.", ""]
        qlora = [abs(r["rel"]) for r in ok if r["regime"].startswith("qlora")]
        if qlora:
            lines += [f"QLoRA, bitsandbytes 4-bit base ({len(qlora)} cases, tiny configs, real tensors): median "
                      f"{statistics.median(qlora) * 100:.2f}%, worst {max(qlora) * 100:.2f}%.", ""]
        lines += ["| family | cases | median | worst |", "|---|---|---|---|"]
        fams = {}
        for r in ok:
            fams.setdefault(r["arch"].split(" (")[0], []).append(abs(r["rel"]))
        for fam, es in fams.items():
            lines.append(f"| {fam} | {len(es)} | {statistics.median(es) * 100:.2f}% | {max(es) * 100:.2f}% |")
        lines.append("")
        phased = [r for r in ok if r.get("predicted_phase")]
        differ = [r for r in phased if MEASURED_AS.get(r["predicted_phase"], r["predicted_phase"])
                  != MEASURED_AS.get(r["phase"], r["phase"])]
        if phased:
            lines += [f"Peak phase: the predicted peak phase lies in the measured one in {len(phased) - len(differ)} of "
                      f"{len(phased)} cases" + ("." if not differ else "; they differ in " + "; ".join(
                          f"{r['arch']} / {r['regime']} / b={r['b']} s={r['s']} (predicted {r['predicted_phase']}, "
                          f"measured {r['phase']}, {r['rel'] * 100:+.2f}%)" for r in differ) + "."), ""]
        worst = sorted(ok, key=lambda r: -abs(r["rel"]))[:5]
        lines += ["Worst cases: " + "; ".join(f"{r['arch']} / {r['regime']} / b={r['b']} s={r['s']} ({r['rel'] * 100:+.2f}%)" for r in worst), ""]
    misses = [r for r in ok if abs(r["rel"]) > 0.05]
    lines += ["## Where the targets are not met, and why", ""]
    if misses:
        for r in sorted(misses, key=lambda r: -abs(r["rel"])):
            lines.append(f"- {r['arch']} / {r['regime']} / b={r['b']} s={r['s']}: {r['rel'] * 100:+.2f}%. {_why(r)}")
    else:
        lines.append("- every measured case is within 5%.")
    failed = [r for r in rows if r.get("error")]
    if failed:
        lines.append(f"- {len(failed)} case(s) could not be measured (the reason is in the table).")
    lines += ["", "## Cases", ""]
    lines += ["The predicted peak phase is the largest phase of the regime's timeline; the harness marks a step's "
              "forward, backward and optimizer step (a prefill and decode steps), and each predicted phase lies in one "
              "of them (`vramsym.measure.compare.MEASURED_AS`).", "",
              "| architecture | regime | b | s | predicted B | measured B | error | predicted peak phase | measured peak in |",
              "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if r.get("error"):
            lines.append(f"| {r['arch']} | {r['regime']} | {r['b']} | {r['s']} | | | not measured: {r['error']} | | |")
        else:
            lines.append(f"| {r['arch']} | {r['regime']} | {r['b']} | {r['s']} | {r['predicted']:,} | {r['measured']:,} | "
                         f"{r['rel'] * 100:+.2f}% | {r.get('predicted_phase') or ''} | {r['phase']} |")
    lines += ["", "## Per-component errors", "",
              "| architecture | regime | b | s | component | predicted B | measured B | error |", "|---|---|---|---|---|---|---|---|"]
    for r in ok:
        for c in r["components"]:
            if c["component"] == "total (peak)":
                continue
            e = "" if c["relative_error"] is None else f"{c['relative_error'] * 100:+.2f}%"
            lines.append(f"| {r['arch']} | {r['regime']} | {r['b']} | {r['s']} | {c['component']} | "
                         f"{c['predicted_bytes']:,} | {c['measured_bytes']:,} | {e} |")
    lines += ["", GPU, MANY_GPUS, *llama_cpp_section()]
    text = "\n".join(lines) + "\n"
    if path.exists():     # the index of the seeded sweeps is kept up by hand as sweeps are added: keep it
        kept = [p for p in path.read_text().split("\n\n") if p.startswith(INTRO)]
        mine = [p for p in text.split("\n\n") if p.startswith(INTRO)]
        if kept and mine:
            text = text.replace(mine[0], kept[0], 1)
    path.write_text(text)


INTRO = "These hand-picked cases are a smoke set."
LLAMA_CPP = ROOT / "docs" / "llama_cpp_check.md"


def llama_cpp_section() -> list:
    """The llama_cpp regime against a real llama.cpp: docs/llama_cpp_check.md's findings and its table
    (benchmarks/llama_cpp_check.py writes it; llama-cpp-python builds from source, so it is run apart)."""
    if not LLAMA_CPP.exists():
        return []
    body = [("#" + line) if line.startswith("## ") else line for line in LLAMA_CPP.read_text().split("\n")[1:]]
    return ["", "## llama.cpp, against a real llama.cpp", "",
            "From [docs/llama_cpp_check.md](llama_cpp_check.md) (`python benchmarks/llama_cpp_check.py`): every "
            "buffer llama.cpp logs, case by case, next to the `llama_cpp` regime's term.", *body]


def _num(x: str) -> int:
    return int(x.replace(",", ""))


def rows_from_doc(path: Path) -> list:
    """The rows of a previous docs/accuracy.md (its Cases and Per-component tables), for --keep-from."""
    text = path.read_text()
    import re
    m = re.search(r"torch ([^,]+), transformers ([^)]+)\)", text)
    torch_v, tf_v = (m.group(1), m.group(2)) if m else ("?", "?")
    cases = text.split("## Cases", 1)[1].split("## Per-component errors", 1)
    rows, by_key = [], {}
    for line in cases[0].splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) not in (8, 9) or not cells[2].isdigit():
            continue
        arch, regime, b, s_, pred, meas, err, *phases = cells
        pphase, phase = phases if len(phases) == 2 else ("", phases[0])
        key = (arch, regime, int(b), int(s_))
        if err.startswith("not measured: "):
            rows.append({"arch": arch, "regime": regime, "b": int(b), "s": int(s_), "error": err[len("not measured: "):]})
            continue
        p, mm = _num(pred), _num(meas)
        row = {"arch": arch, "regime": regime, "b": int(b), "s": int(s_), "predicted": p, "measured": mm,
               "error": None, "rel": (p - mm) / mm if mm else 0.0, "phase": phase, "predicted_phase": pphase, "components": [],
               "torch": torch_v, "transformers": tf_v}
        rows.append(row)
        by_key[key] = row
    for line in cases[1].split("## On a GPU", 1)[0].splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 8 or not cells[2].isdigit():
            continue
        arch, regime, b, s_, comp, pred, meas, err = cells
        row = by_key.get((arch, regime, int(b), int(s_)))
        if row is None:
            continue
        p, mm = _num(pred), _num(meas)
        rel = None if err == "" else ((p - mm) / mm if mm else 0.0)
        row["components"].append({"component": comp, "predicted_bytes": p, "measured_bytes": mm, "relative_error": rel})
    for row in by_key.values():
        row["components"].append({"component": "total (peak)", "predicted_bytes": row["predicted"],
                                  "measured_bytes": row["measured"], "relative_error": row["rel"]})
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", default=str(ROOT / "docs" / "accuracy.md"))
    ap.add_argument("--json", default=None, help="also write the raw rows here")
    ap.add_argument("--from-json", default=None, help="render the table from rows a previous run wrote (no measuring)")
    ap.add_argument("--only", default=None, help="measure only the cases whose regime name contains this text")
    ap.add_argument("--keep-from", default=None,
                    help="with --only: take every other case from this previous docs/accuracy.md (its tables)")
    args = ap.parse_args()
    if args.keep_from and not args.only:
        ap.error("--keep-from needs --only")
    rows = json.loads(Path(args.from_json).read_text()) if args.from_json else run(args.quick, args.only)
    if args.keep_from and not args.from_json:
        old = Path(args.keep_from).read_text()
        kept = repredict([r for r in rows_from_doc(Path(args.keep_from)) if args.only not in r["regime"]])
        order = {(c[0], c[1], c[6], c[7]): i for i, c in enumerate(cases(False))}
        rows = sorted(kept + rows, key=lambda r: order.get((r["arch"], r["regime"], r["b"], r["s"]), len(order)))
        import re
        when = re.search(r"Generated by `benchmarks/accuracy.py` on (\S+) ", old)
        note = (f"The cases whose regime contains \"{args.only}\" were measured on {datetime.date.today()}; the "
                f"others were measured on {when.group(1) if when else 'an earlier run'} and kept "
                f"(`--keep-from`), their predictions re-derived from today's formulas (identical totals; "
                f"a case whose prediction changed is measured again).")
    write(rows, Path(args.out), note if args.keep_from and not args.from_json else None)
    if args.json and not args.from_json:
        Path(args.json).write_text(json.dumps(rows, indent=1, default=str))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
