"""vramsym's llama_cpp regime against a real llama.cpp (issue 25): small GGUF models with random
weights, loaded by llama.cpp's own loader (llama-cpp-python's bindings, built from source on the
CPU), every buffer size llama.cpp logs parsed and compared with the regime's terms.

    pip install llama-cpp-python gguf numpy     # builds llama.cpp from source (CPU; minutes)
    python benchmarks/llama_cpp_check.py [--out docs/llama_cpp_check.md]

What is compared, per case (n_ctx, n_ubatch, flash attention, KV type, sequences; -ngl 0, the CPU):
- the model buffer ("CPU_Mapped model buffer size") and the KV cache: its cells and layers (the
  "llama_kv_cache: size = ... (N cells, L layers, S/S seqs)" line, exact) and its MiB (llama.cpp
  prints two decimals, so equal to 0.005 MiB);
- the compute buffer: vramsym's lcpp_compute is the CUDA scheduler's worst-case graph; the CPU
  backend's buffer is printed beside it, as the relative difference (not a bound of the CUDA figure).

Every case runs in its own process (llama.cpp logs to stderr); the models are written with the
gguf package (llama architecture: F16 and Q8_0 tensors, a SentencePiece vocabulary of 512 tokens).
"""
import argparse
import itertools
import os
import re
import subprocess
import sys
import tempfile

LOAD = r'''
import sys, llama_cpp as L
path, n_ctx, n_ubatch, fa, tk, tv, n_seq = sys.argv[1], *map(int, sys.argv[2:8])
L.llama_backend_init()
mp = L.llama_model_default_params()
mp.n_gpu_layers = 0
model = L.llama_model_load_from_file(path.encode(), mp)
cp = L.llama_context_default_params()
cp.n_ctx, cp.n_batch, cp.n_ubatch, cp.n_seq_max = n_ctx, max(n_ubatch, 512), n_ubatch, n_seq
cp.flash_attn_type = fa
cp.type_k, cp.type_v = tk, tv
cp.swa_full = False
ctx = L.llama_init_from_model(model, cp)
assert ctx, "context failed"
print("model_size", L.llama_model_size(model))
'''

GGML = {"f16": 1, "q8_0": 8}
MIB = 1 << 20


def write_llama(path, qtype, layers=4, h=256, ff=512, nq=4, nkv=2, vocab=512):
    import gguf
    import numpy as np
    T = gguf.GGMLQuantizationType
    w = gguf.GGUFWriter(path, "llama")
    w.add_context_length(4096)
    w.add_embedding_length(h)
    w.add_block_count(layers)
    w.add_feed_forward_length(ff)
    w.add_head_count(nq)
    w.add_head_count_kv(nkv)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_rope_dimension_count(h // nq)
    w.add_file_type(1 if qtype == "f16" else 7)
    w.add_tokenizer_model("llama")
    w.add_token_list([b"<unk>", b"<s>", b"</s>"] + [f"t{i}".encode() for i in range(3, vocab)])
    w.add_token_scores([0.0] * vocab)
    w.add_token_types([2, 3, 3] + [1] * (vocab - 3))
    w.add_unk_token_id(0)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    rng = np.random.default_rng(0)
    qt = T.F16 if qtype == "f16" else T.Q8_0

    def matrix(name, rows, cols):
        if qt == T.F16:
            w.add_tensor(name, rng.standard_normal((rows, cols)).astype(np.float16))
        else:
            w.add_tensor(name, gguf.quants.quantize(rng.standard_normal((rows, cols)).astype(np.float32), qt), raw_dtype=qt)

    def vector(name, n):
        w.add_tensor(name, np.ones(n, dtype=np.float32))

    d = h // nq
    matrix("token_embd.weight", vocab, h)
    for i in range(layers):
        vector(f"blk.{i}.attn_norm.weight", h)
        matrix(f"blk.{i}.attn_q.weight", nq * d, h)
        matrix(f"blk.{i}.attn_k.weight", nkv * d, h)
        matrix(f"blk.{i}.attn_v.weight", nkv * d, h)
        matrix(f"blk.{i}.attn_output.weight", h, nq * d)
        vector(f"blk.{i}.ffn_norm.weight", h)
        matrix(f"blk.{i}.ffn_gate.weight", ff, h)
        matrix(f"blk.{i}.ffn_up.weight", ff, h)
        matrix(f"blk.{i}.ffn_down.weight", h, ff)
    vector("output_norm.weight", h)
    matrix("output.weight", vocab, h)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def measure(path, n_ctx, n_ubatch, fa, kv, n_seq):
    argv = [sys.executable, "-c", LOAD, path, str(n_ctx), str(n_ubatch), str(fa), str(GGML[kv]), str(GGML[kv]), str(n_seq)]
    r = subprocess.run(argv, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"llama.cpp failed: {r.stderr[-2000:]}")
    log = r.stderr
    mib = lambda pattern: sum(float(m) for m in re.findall(pattern, log))   # noqa: E731
    cache = re.findall(r"llama_kv_cache: size = +([\d.]+) MiB \( *(\d+) cells, +(\d+) layers", log)
    return {"model_size": int(re.search(r"model_size (\d+)", r.stdout).group(1)),
            "model_mib": mib(r"CPU_Mapped model buffer size = +([\d.]+) MiB") + mib(r"\bCPU model buffer size = +([\d.]+) MiB"),
            "kv_mib": sum(float(s) for s, _, _ in cache), "kv_cells": [(int(c), int(l)) for _, c, l in cache],
            "compute_mib": mib(r"CPU compute buffer size = +([\d.]+) MiB"),
            "output_mib": mib(r"CPU +output buffer size = +([\d.]+) MiB")}


def predict(path, n_ctx, n_ubatch, fa, kv, n_seq):
    import vramsym
    r = vramsym.compile(path, "llama_cpp", {"cache_type_k": kv, "cache_type_v": kv, "flash_attn": "on" if fa else "off"})
    est = r.evaluate(batch=n_seq, seq=n_ctx // n_seq, n_ubatch=n_ubatch, n_batch=max(n_ubatch, 512), gpu_layers=0)
    parts = {c.name: c.bytes for c in est.all_components}
    return {"model": parts["lcpp_weights"] + parts["lcpp_weights_host"],
            "kv": parts["lcpp_kv_cache"] + parts["lcpp_kv_cache_host"], "compute": parts["lcpp_compute"],
            "output": parts["lcpp_output_host"]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", help="write the table (Markdown) there too")
    args = ap.parse_args()
    rows, worst = [], {"model": 0.0, "kv": 0.0}
    with tempfile.TemporaryDirectory() as tmp:
        for qtype in ("f16", "q8_0"):
            path = os.path.join(tmp, f"llama-{qtype}.gguf")
            write_llama(path, qtype)
            for n_ctx, n_ubatch, fa, kv, n_seq in itertools.product((512, 4096, 32768), (128, 512), (0, 1),
                                                                    ("f16", "q8_0"), (1, 4)):
                if kv == "q8_0" and not fa:
                    continue            # llama.cpp refuses a quantized V cache without flash attention
                got = measure(path, n_ctx, n_ubatch, fa, kv, n_seq)
                want = predict(path, n_ctx, n_ubatch, fa, kv, n_seq)
                d_model = want["model"] / MIB - got["model_mib"]
                d_kv = want["kv"] / MIB - got["kv_mib"]
                worst["model"] = max(worst["model"], abs(d_model))
                worst["kv"] = max(worst["kv"], abs(d_kv))
                rel = want["compute"] / (got["compute_mib"] * MIB) - 1 if got["compute_mib"] else float("nan")
                rows.append(f"| {qtype} | {n_ctx} | {n_ubatch} | {'on' if fa else 'off'} | {kv} | {n_seq} | "
                            f"{got['model_mib']:.2f} / {want['model'] / MIB:.2f} | {got['kv_mib']:.2f} / {want['kv'] / MIB:.2f} | "
                            f"{got['kv_cells']} | {got['compute_mib']:.2f} / {want['compute'] / MIB:.2f} ({rel:+.1%}) |")
                print(rows[-1], flush=True)
    head = ["| weights | n_ctx | n_ubatch | flash attn | KV type | seqs | model MiB (llama.cpp / vramsym) | "
            "KV MiB (llama.cpp / vramsym) | KV caches (cells, layers) | compute MiB: CPU backend / vramsym's CUDA figure |",
            "|---|---|---|---|---|---|---|---|---|---|"]
    summary = (f"worst |model buffer difference| {worst['model']:.3f} MiB, worst |KV difference| {worst['kv']:.3f} MiB "
               f"(llama.cpp prints MiB with two decimals: 0.005 MiB is equality)")
    print(summary)
    if args.out:
        from importlib.metadata import version
        with open(args.out, "w") as fh:
            fh.write("\n".join([
                "# vramsym's llama_cpp regime against a real llama.cpp", "",
                f"`python benchmarks/llama_cpp_check.py --out docs/llama_cpp_check.md`, llama-cpp-python "
                f"{version('llama-cpp-python')} (its vendored llama.cpp, built from source for the CPU), -ngl 0: "
                "every buffer is the CPU backend's. Small llama-architecture GGUFs (4 blocks, hidden 256, 4 heads, "
                "2 KV heads, vocabulary 512) in F16 and Q8_0.", "",
                summary, "",
                "The model buffer and the KV cache do not depend on the backend: the same tensors are allocated "
                "in the layer's buffer type (llama-model.cpp load_tensors, llama-kv-cache.cpp). The compute "
                "buffer does: it is what ggml-alloc measures for the backend's own graph split, and vramsym's "
                "lcpp_compute is the CUDA scheduler's worst-case graph (F32 KQ mask on the host, scores or the "
                "F16 mask on the device). The last column puts the CPU backend's figure beside vramsym's CUDA "
                "one: not a check of it (no GPU was lent to measure CUDA's).", "",
                *head, *rows]) + "\n")


if __name__ == "__main__":
    main()
