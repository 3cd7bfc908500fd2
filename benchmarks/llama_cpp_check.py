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
  backend's buffer is printed beside it, as the relative difference (not a bound of the CUDA figure);
- for the recurrent models (Mamba, Mamba2, Granite 4.0-H-, Qwen3-Next- and Nemotron-H-style
  hybrids): the model buffer, the KV cache of their attention blocks and the recurrent state buffer
  ("llama_memory_recurrent: size = ..."), to two decimals of MiB, vramsym reading the GGUF file
  (and the equivalent config.json, which must read the same).

Every case runs in its own process (llama.cpp logs to stderr); the models are written with the
gguf package (llama architecture: F16 and Q8_0 tensors, a SentencePiece vocabulary of 512 tokens;
the recurrent ones likewise, F16 matrices).
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


def _add_vocabulary(w, vocab):
    """A SentencePiece-style vocabulary of ``vocab`` tokens (<unk>, <s>, </s> and placeholders)."""
    w.add_tokenizer_model("llama")
    w.add_token_list([b"<unk>", b"<s>", b"</s>"] + [f"t{i}".encode() for i in range(3, vocab)])
    w.add_token_scores([0.0] * vocab)
    w.add_token_types([2, 3, 3] + [1] * (vocab - 3))
    w.add_unk_token_id(0)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)


def _write_file(w):
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def write_llama(path, qtype, layers=4, h=256, ff=512, nq=4, nkv=2, vocab=512, arch="llama", experts=0, used=2):
    """A small GGUF: ``arch`` llama (or qwen2, with q/k/v biases), ``experts`` routed experts per block
    (llama.cpp's MoE tensors ffn_*_exps with an F32 router), in ``qtype``: f16, q8_0, or q4_k_m (Q4_K with
    Q6_K for attn_v, ffn_down and the output, as llama-quantize's mix gives a small model). A quantized
    tensor's bytes are random (its values do not change its size), so any ggml type can be written."""
    import gguf
    import numpy as np
    T = gguf.GGMLQuantizationType
    w = gguf.GGUFWriter(path, arch)
    w.add_context_length(4096)
    w.add_embedding_length(h)
    w.add_block_count(layers)
    w.add_feed_forward_length(ff)
    w.add_head_count(nq)
    w.add_head_count_kv(nkv)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_rope_dimension_count(h // nq)
    if experts:
        w.add_expert_count(experts)
        w.add_expert_used_count(used)
    w.add_file_type({"f16": 1, "q8_0": 7, "q4_k_m": 15}[qtype])
    _add_vocabulary(w, vocab)
    rng = np.random.default_rng(0)
    qt = {"f16": T.F16, "q8_0": T.Q8_0, "q4_k_m": T.Q4_K}[qtype]
    more = T.Q6_K if qtype == "q4_k_m" else qt

    def matrix(name, *shape, t=qt):
        if t == T.F16:
            w.add_tensor(name, rng.standard_normal(shape).astype(np.float16))
        else:
            w.add_tensor(name, rng.integers(0, 255, size=gguf.quants.quant_shape_to_byte_shape(shape, t), dtype=np.uint8),
                         raw_dtype=t)

    def vector(name, *shape):
        w.add_tensor(name, np.ones(shape, dtype=np.float32))

    d = h // nq
    matrix("token_embd.weight", vocab, h)
    for i in range(layers):
        vector(f"blk.{i}.attn_norm.weight", h)
        matrix(f"blk.{i}.attn_q.weight", nq * d, h)
        matrix(f"blk.{i}.attn_k.weight", nkv * d, h)
        matrix(f"blk.{i}.attn_v.weight", nkv * d, h, t=more)
        if arch == "qwen2":
            vector(f"blk.{i}.attn_q.bias", nq * d)
            vector(f"blk.{i}.attn_k.bias", nkv * d)
            vector(f"blk.{i}.attn_v.bias", nkv * d)
        matrix(f"blk.{i}.attn_output.weight", h, nq * d)
        vector(f"blk.{i}.ffn_norm.weight", h)
        if experts:
            vector(f"blk.{i}.ffn_gate_inp.weight", experts, h)
            matrix(f"blk.{i}.ffn_gate_exps.weight", experts, ff, h)
            matrix(f"blk.{i}.ffn_up_exps.weight", experts, ff, h)
            matrix(f"blk.{i}.ffn_down_exps.weight", experts, h, ff, t=more)
        else:
            matrix(f"blk.{i}.ffn_gate.weight", ff, h)
            matrix(f"blk.{i}.ffn_up.weight", ff, h)
            matrix(f"blk.{i}.ffn_down.weight", h, ff, t=more)
    vector("output_norm.weight", h)
    matrix("output.weight", vocab, h, t=more)
    _write_file(w)


#: the attention models measured: (label, GGUF architecture, weights, routed experts)
MODELS = (("llama", "llama", "f16", 0), ("llama", "llama", "q8_0", 0), ("qwen2", "qwen2", "q4_k_m", 0),
          ("llama MoE (4 experts, 2 used)", "llama", "q4_k_m", 4))


def write_hybrid(path, arch, pattern, h=256, ff=512, nq=4, nkv=2, vocab=512, d_state=64, ssm_heads=8, groups=2,
                 d_conv=4, experts=4, ff_exp=128, dt_rank=16):
    """A small recurrent GGUF with random weights, its blocks given by ``pattern``: "s" a Mamba
    block (``mamba``), "m" a Mamba2 block (``mamba2``, ``granitehybrid``, ``nemotron_h``), "g" a
    Gated DeltaNet block (``qwen3next``: ``groups`` key heads and ``ssm_heads`` value heads of
    ``d_state``, as llama.cpp's qwen3next reads them), "a" an attention block, "f" an MLP block
    (``nemotron_h``: a plain up / down MLP of ``ff``). Granite's blocks each add a gated MLP of
    ``ff``, Qwen3-Next's ``experts`` routed experts of ``ff_exp`` and a gated shared one of ``ff``.
    llama.cpp reads a Granite or Nemotron-H block with head_count_kv 0 (and, Nemotron-H, no MLP) as
    recurrent, and every full_attention_interval-th Qwen3-Next block as attention. The Mamba and
    Mamba2 inner width is 2 h (llama.cpp's Granite hybrid asserts it); the tensors are written as
    llama.cpp's conversion/*.py writes them: matrices in F16, conv1d, A, D, the biases and the norms
    in F32. Returns the equivalent config.json (a dict)."""
    import gguf
    import numpy as np
    w = gguf.GGUFWriter(path, arch)
    d_inner, d = 2 * h, h // nq
    conv_dim = d_inner + 2 * groups * d_state
    w.add_context_length(4096)
    w.add_embedding_length(h)
    w.add_block_count(len(pattern))
    w.add_layer_norm_rms_eps(1e-5)
    w.add_ssm_conv_kernel(d_conv)
    w.add_ssm_inner_size(ssm_heads * d_state if arch == "qwen3next" else d_inner)    # Gated DeltaNet: H_v d_v
    w.add_ssm_state_size(d_state)
    w.add_ssm_time_step_rank(dt_rank if arch == "mamba" else ssm_heads)
    if arch == "nemotron_h":
        w.add_layer_norm_eps(1e-5)     # src/models/nemotron-h.cpp reads attention.layer_norm_epsilon too
    if arch == "mamba":
        w.add_ssm_dt_b_c_rms(False)
    else:
        w.add_ssm_group_count(groups)
    if arch in ("granitehybrid", "nemotron_h"):
        w.add_feed_forward_length(ff if arch == "granitehybrid" else [ff if k == "f" else 0 for k in pattern])
        w.add_head_count(nq)
        w.add_head_count_kv([nkv if k == "a" else 0 for k in pattern])
        w.add_key_length(d)
        w.add_value_length(d)
        w.add_rope_dimension_count(d)
    if arch == "qwen3next":
        interval = pattern.index("a") + 1
        assert pattern == ("g" * (interval - 1) + "a") * (len(pattern) // interval)
        w.add_full_attention_interval(interval)
        w.add_head_count(nq)
        w.add_head_count_kv(nkv)
        w.add_key_length(d)
        w.add_value_length(d)
        w.add_rope_dimension_count(d)
        w.add_expert_count(experts)
        w.add_expert_used_count(2)
        w.add_expert_feed_forward_length(ff_exp)
        w.add_expert_shared_feed_forward_length(ff)
    w.add_file_type(1)
    _add_vocabulary(w, vocab)
    rng = np.random.default_rng(0)

    def matrix(name, rows, cols, dtype=np.float16):
        w.add_tensor(name, rng.standard_normal((rows, cols)).astype(dtype))

    def vector(name, n):
        w.add_tensor(name, np.ones(n, dtype=np.float32))

    def experts3(name, e, rows, cols):
        w.add_tensor(name, rng.standard_normal((e, rows, cols)).astype(np.float16))

    def block(i, kind):
        if kind == "s":                  # src/models/mamba.cpp
            matrix(f"blk.{i}.ssm_in.weight", 2 * d_inner, h)
            matrix(f"blk.{i}.ssm_conv1d.weight", d_inner, d_conv, np.float32)
            vector(f"blk.{i}.ssm_conv1d.bias", d_inner)
            matrix(f"blk.{i}.ssm_x.weight", dt_rank + 2 * d_state, d_inner)
            matrix(f"blk.{i}.ssm_dt.weight", d_inner, dt_rank)
            vector(f"blk.{i}.ssm_dt.bias", d_inner)
            matrix(f"blk.{i}.ssm_a", d_inner, d_state, np.float32)
            vector(f"blk.{i}.ssm_d", d_inner)
            matrix(f"blk.{i}.ssm_out.weight", h, d_inner)
        elif kind == "m":                # src/models/mamba2.cpp, granite-hybrid.cpp, nemotron-h.cpp
            matrix(f"blk.{i}.ssm_in.weight", 2 * d_inner + 2 * groups * d_state + ssm_heads, h)
            matrix(f"blk.{i}.ssm_conv1d.weight", conv_dim, d_conv, np.float32)
            vector(f"blk.{i}.ssm_conv1d.bias", conv_dim)
            vector(f"blk.{i}.ssm_dt.bias", ssm_heads)
            matrix(f"blk.{i}.ssm_a", ssm_heads, 1, np.float32)
            matrix(f"blk.{i}.ssm_d", ssm_heads, 1, np.float32)
            matrix(f"blk.{i}.ssm_norm.weight", groups, d_inner // groups, np.float32)
            matrix(f"blk.{i}.ssm_out.weight", h, d_inner)
        elif kind == "g":                # src/models/qwen3next.cpp
            key_dim, value_dim = groups * d_state, ssm_heads * d_state
            matrix(f"blk.{i}.ssm_in.weight", 2 * key_dim + 2 * value_dim, h)
            matrix(f"blk.{i}.ssm_conv1d.weight", 2 * key_dim + value_dim, d_conv, np.float32)
            vector(f"blk.{i}.ssm_dt.bias", ssm_heads)
            vector(f"blk.{i}.ssm_a", ssm_heads)
            matrix(f"blk.{i}.ssm_ba.weight", 2 * ssm_heads, h)
            vector(f"blk.{i}.ssm_norm.weight", d_state)
            matrix(f"blk.{i}.ssm_out.weight", h, value_dim)
        elif kind == "a":
            matrix(f"blk.{i}.attn_q.weight", (2 if arch == "qwen3next" else 1) * nq * d, h)   # qwen3next: + gate
            matrix(f"blk.{i}.attn_k.weight", nkv * d, h)
            matrix(f"blk.{i}.attn_v.weight", nkv * d, h)
            matrix(f"blk.{i}.attn_output.weight", h, nq * d)
            if arch == "qwen3next":
                vector(f"blk.{i}.attn_q_norm.weight", d)
                vector(f"blk.{i}.attn_k_norm.weight", d)
        elif kind == "f":                # nemotron-h.cpp: an MLP block, relu2(up) then down
            matrix(f"blk.{i}.ffn_up.weight", ff, h)
            matrix(f"blk.{i}.ffn_down.weight", h, ff)
        if arch == "granitehybrid":
            vector(f"blk.{i}.ffn_norm.weight", h)
            matrix(f"blk.{i}.ffn_gate.weight", ff, h)
            matrix(f"blk.{i}.ffn_up.weight", ff, h)
            matrix(f"blk.{i}.ffn_down.weight", h, ff)
        if arch == "qwen3next":
            vector(f"blk.{i}.post_attention_norm.weight", h)
            matrix(f"blk.{i}.ffn_gate_inp.weight", experts, h, np.float32)
            experts3(f"blk.{i}.ffn_gate_exps.weight", experts, ff_exp, h)
            experts3(f"blk.{i}.ffn_up_exps.weight", experts, ff_exp, h)
            experts3(f"blk.{i}.ffn_down_exps.weight", experts, h, ff_exp)
            vector(f"blk.{i}.ffn_gate_inp_shexp.weight", h)
            matrix(f"blk.{i}.ffn_gate_shexp.weight", ff, h)
            matrix(f"blk.{i}.ffn_up_shexp.weight", ff, h)
            matrix(f"blk.{i}.ffn_down_shexp.weight", h, ff)

    matrix("token_embd.weight", vocab, h)
    for i, kind in enumerate(pattern):
        vector(f"blk.{i}.attn_norm.weight", h)
        block(i, kind)
    vector("output_norm.weight", h)
    matrix("output.weight", vocab, h)
    _write_file(w)
    common = {"hidden_size": h, "vocab_size": vocab, "num_hidden_layers": len(pattern), "tie_word_embeddings": False,
              "max_position_embeddings": 4096, "torch_dtype": "float16"}
    mamba2 = {"mamba_n_heads": ssm_heads, "mamba_d_head": d_inner // ssm_heads, "mamba_d_state": d_state,
              "mamba_n_groups": groups, "mamba_d_conv": d_conv, "mamba_expand": 2, "mamba_conv_bias": True,
              "mamba_proj_bias": False}
    if arch == "mamba":
        return {"model_type": "mamba", "architectures": ["MambaForCausalLM"], **common, "intermediate_size": d_inner,
                "expand": 2, "state_size": d_state, "conv_kernel": d_conv, "time_step_rank": dt_rank,
                "use_conv_bias": True, "use_bias": False, "layer_norm_epsilon": 1e-5}
    if arch == "mamba2":
        return {"model_type": "mamba2", "architectures": ["Mamba2ForCausalLM"], **common, "num_heads": ssm_heads,
                "head_dim": d_inner // ssm_heads, "state_size": d_state, "n_groups": groups, "conv_kernel": d_conv,
                "expand": 2, "use_conv_bias": True, "use_bias": False, "layer_norm_epsilon": 1e-5}
    if arch == "qwen3next":
        return {"model_type": "qwen3_next", "architectures": ["Qwen3NextForCausalLM"], **common,
                "num_attention_heads": nq, "num_key_value_heads": nkv, "head_dim": d, "intermediate_size": ff,
                "num_experts": experts, "num_experts_per_tok": 2, "moe_intermediate_size": ff_exp,
                "shared_expert_intermediate_size": ff, "decoder_sparse_step": 1, "mlp_only_layers": [],
                "full_attention_interval": pattern.index("a") + 1,
                "linear_num_key_heads": groups, "linear_num_value_heads": ssm_heads, "linear_key_head_dim": d_state,
                "linear_value_head_dim": d_state, "linear_conv_kernel_dim": d_conv, "rms_norm_eps": 1e-6}
    if arch == "nemotron_h":
        return {"model_type": "nemotron_h", "architectures": ["NemotronHForCausalLM"], **common,
                "hybrid_override_pattern": "".join({"m": "M", "a": "*", "f": "-"}[k] for k in pattern),
                "num_attention_heads": nq, "num_key_value_heads": nkv, "head_dim": d, "intermediate_size": ff,
                "mamba_num_heads": ssm_heads, "mamba_head_dim": d_inner // ssm_heads, "ssm_state_size": d_state,
                "n_groups": groups, "conv_kernel": d_conv, "use_conv_bias": True, "use_bias": False,
                "layer_norm_epsilon": 1e-5}
    return {"model_type": "granitemoehybrid", "architectures": ["GraniteMoeHybridForCausalLM"], **common,
            "layer_types": ["mamba" if k == "m" else "attention" for k in pattern], "num_attention_heads": nq,
            "num_key_value_heads": nkv, "intermediate_size": ff, "shared_intermediate_size": ff,
            "num_local_experts": 0, "num_experts_per_tok": 0, **mamba2,
            "position_embedding_type": "rope", "rms_norm_eps": 1e-5}


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
            "rs_mib": mib(r"llama_memory_recurrent: size = +([\d.]+) MiB"),
            "rs_cells": [(int(c), int(l)) for c, l in
                         re.findall(r"llama_memory_recurrent: size = +[\d.]+ MiB \( *(\d+) cells, +(\d+) layers", log)],
            "compute_mib": mib(r"CPU compute buffer size = +([\d.]+) MiB"),
            "output_mib": mib(r"CPU +output buffer size = +([\d.]+) MiB")}


def predict(path, n_ctx, n_ubatch, fa, kv, n_seq):
    """vramsym's llama_cpp regime for the model at ``path`` (a GGUF file, or the config.json of the
    same model where vramsym does not read that architecture's GGUF)."""
    import vramsym
    r = vramsym.compile(path, "llama_cpp", {"cache_type_k": kv, "cache_type_v": kv, "flash_attn": "on" if fa else "off"})
    est = r.evaluate(batch=n_seq, seq=n_ctx // n_seq, n_ubatch=n_ubatch, n_batch=max(n_ubatch, 512), gpu_layers=0)
    parts = {c.name: c.bytes for c in est.all_components}
    return {"model": parts["lcpp_weights"] + parts["lcpp_weights_host"],
            "kv": parts["lcpp_kv_cache"] + parts["lcpp_kv_cache_host"], "compute": parts["lcpp_compute"],
            "rs": parts.get("lcpp_rs_cache", 0) + parts.get("lcpp_rs_cache_host", 0),
            "output": parts["lcpp_output_host"]}


#: the recurrent models measured: (GGUF architecture, block pattern)
HYBRIDS = (("mamba", "sss"), ("mamba2", "mmmm"), ("granitehybrid", "mamam"), ("qwen3next", "gaga"),
           ("nemotron_h", "mafm"))


def hybrid_rows(tmp, worst):
    """The recurrent models, read from their GGUF files: the model buffer, the KV cache of their
    attention blocks and the recurrent state buffer (r and s rows of every recurrent block, F32,
    one per sequence), compared to the byte (two decimals of MiB). The equivalent config.json must
    give the same KV, recurrent state and compute buffer (the GGUF reader maps the ssm.* metadata
    onto the config's fields): a difference stops the run."""
    import json
    rows = []
    for arch, pattern in HYBRIDS:
        path = os.path.join(tmp, f"{arch}.gguf")
        cfg_path = os.path.join(tmp, f"{arch}.json")
        with open(cfg_path, "w") as fh:
            json.dump(write_hybrid(path, arch, pattern), fh)
        for n_ctx, n_ubatch, n_seq in itertools.product((512, 8192), (128, 512), (1, 4)):
            got = measure(path, n_ctx, n_ubatch, 1, "f16", n_seq)
            want = predict(path, n_ctx, n_ubatch, 1, "f16", n_seq)
            same = predict(cfg_path, n_ctx, n_ubatch, 1, "f16", n_seq)
            if any(want[k] != same[k] for k in ("kv", "rs", "compute")):
                raise SystemExit(f"{arch}: the GGUF and its config.json read differently: {want} / {same}")
            d_model = want["model"] / MIB - got["model_mib"]
            d_kv, d_rs = want["kv"] / MIB - got["kv_mib"], want["rs"] / MIB - got["rs_mib"]
            worst["model"] = max(worst["model"], abs(d_model))
            worst["kv"] = max(worst["kv"], abs(d_kv))
            worst["rs"] = max(worst["rs"], abs(d_rs))
            rel = want["compute"] / (got["compute_mib"] * MIB) - 1 if got["compute_mib"] else float("nan")
            rows.append(f"| {arch} ({pattern}) | {n_ctx} | {n_ubatch} | {n_seq} | "
                        f"{got['model_mib']:.2f} / {want['model'] / MIB:.2f} | {got['kv_mib']:.2f} / {want['kv'] / MIB:.2f} | "
                        f"{got['kv_cells']} | {got['rs_mib']:.2f} / {want['rs'] / MIB:.2f} | {got['rs_cells']} | "
                        f"{got['compute_mib']:.2f} / {want['compute'] / MIB:.2f} ({rel:+.1%}) |")
            print(rows[-1], flush=True)
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", help="write the table (Markdown) there too")
    args = ap.parse_args()
    rows, worst = [], {"model": 0.0, "kv": 0.0, "rs": 0.0}
    with tempfile.TemporaryDirectory() as tmp:
        for label, arch, qtype, experts in MODELS:
            path = os.path.join(tmp, f"{arch}-{qtype}-{experts}.gguf")
            write_llama(path, qtype, arch=arch, experts=experts)
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
                rows.append(f"| {label} | {qtype} | {n_ctx} | {n_ubatch} | {'on' if fa else 'off'} | {kv} | {n_seq} | "
                            f"{got['model_mib']:.2f} / {want['model'] / MIB:.2f} | {got['kv_mib']:.2f} / {want['kv'] / MIB:.2f} | "
                            f"{got['kv_cells']} | {got['compute_mib']:.2f} / {want['compute'] / MIB:.2f} ({rel:+.1%}) |")
                print(rows[-1], flush=True)
        recurrent = hybrid_rows(tmp, worst)
    head = ["| model | weights | n_ctx | n_ubatch | flash attn | KV type | seqs | model MiB (llama.cpp / vramsym) | "
            "KV MiB (llama.cpp / vramsym) | KV caches (cells, layers) | compute MiB: CPU backend / vramsym's CUDA figure |",
            "|---|---|---|---|---|---|---|---|---|---|---|"]
    summary = (f"worst |model buffer difference| {worst['model']:.3f} MiB, worst |KV difference| {worst['kv']:.3f} MiB, "
               f"worst |recurrent state difference| {worst['rs']:.3f} MiB "
               f"(llama.cpp prints MiB with two decimals: 0.005 MiB is equality)")
    print(summary)
    if args.out:
        from importlib.metadata import version
        with open(args.out, "w") as fh:
            fh.write("\n".join([
                "# vramsym's llama_cpp regime against a real llama.cpp", "",
                f"`python benchmarks/llama_cpp_check.py --out docs/llama_cpp_check.md`, llama-cpp-python "
                f"{version('llama-cpp-python')} (its vendored llama.cpp, built from source for the CPU), -ngl 0: "
                "every buffer is the CPU backend's. Small GGUFs (4 blocks, hidden 256, 4 heads, 2 KV heads, "
                "vocabulary 512): llama in F16 and Q8_0, qwen2 (q, k, v biases) and a llama-architecture MoE "
                "(4 routed experts, 2 used) in a Q4_K_M mix (Q4_K, with Q6_K for attn_v, ffn_down and the output). "
                "Gemma 2/3 are not in the grid yet.", "",
                summary, "",
                "The model buffer and the KV cache do not depend on the backend: the same tensors are allocated "
                "in the layer's buffer type (llama-model.cpp load_tensors, llama-kv-cache.cpp). The compute "
                "buffer does: it is what ggml-alloc measures for the backend's own graph split, and vramsym's "
                "lcpp_compute is the CUDA scheduler's worst-case graph (F32 KQ mask on the host, scores or the "
                "F16 mask on the device). The last column puts the CPU backend's figure beside vramsym's CUDA "
                "one: not a check of it (no GPU was lent to measure CUDA's).", "",
                *head, *rows, "",
                "## Recurrent models", "",
                "Blocks of Mamba (`s`, llama.cpp's `mamba` architecture), Mamba2 (`m`: `mamba2`, a Granite "
                "4.0-H-style `granitehybrid` whose blocks each add a gated MLP, a Nemotron-H-style `nemotron_h` "
                "with MLP blocks `f`), Gated DeltaNet (`g`: a Qwen3-Next-style `qwen3next`, 2 key and 8 value "
                "heads of 64, 4 routed experts and a shared one) and attention (`a`); hidden 256, Mamba inner "
                "width 512 (Mamba2: 8 heads), state 64, 2 groups, conv 4; flash attention on, F16 KV. vramsym "
                "reads each GGUF file (its ssm.* metadata and per-block head_count_kv / feed_forward_length "
                "arrays), and the equivalent config.json gives the same KV, recurrent state and compute "
                "buffer. The KV cache holds the attention blocks alone; the recurrent state buffer "
                "(`llama_memory_recurrent`) holds F32 r (conv) and s (SSM or delta-rule state) rows of every "
                "recurrent block for each sequence (its log line counts every block in `layers`; the size is "
                "the recurrent blocks').", "",
                "| model (blocks) | n_ctx | n_ubatch | seqs | model MiB (llama.cpp / vramsym) | "
                "KV MiB (llama.cpp / vramsym) | KV caches (cells, layers) | recurrent MiB (llama.cpp / vramsym) | "
                "recurrent caches (cells, layers) | compute MiB: CPU backend / vramsym's CUDA figure |",
                "|---|---|---|---|---|---|---|---|---|---|",
                *recurrent]) + "\n")


if __name__ == "__main__":
    main()
