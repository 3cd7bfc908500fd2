"""Worked examples of the two seed articles (../shared/seeds), reproduced exactly.

Seed 1: "大模型显存占用详解：单卡训练与推理" (000_63cfde3642906b3f.txt).
Seed 2: "大模型显存需求分析与优化实战技巧" (003_e02a37dc804dcda3.txt).
"""
import vramsym
from helpers import estimate
from vramsym.engine.regimes import compose

from helpers import lib_text


def comp(est, name):
    return next(c for c in est.all_components if c.name == name).bytes


def test_seed1_llama7b_kv_cache_b64(lib):
    # Seed 1, section 2(2): llama7B, hidden 4096, seq 2048, batch 64, 32 layers, fp16:
    # 2 * 64 * 32 * 2048 * 4096 * 2 B = 68,719,476,736 B = 64 GiB (the seed prints "68G", i.e. 68.7 GB).
    m = vramsym.load_model("llama-7b")
    est = vramsym.estimate(m, "inference", {"kv_dtype": "fp16"}, {"batch": 64, "seq": 2048}, library=lib)
    assert comp(est, "kv_cache") == 68_719_476_736 == 64 * 2**30


def test_seed1_llama7b_kv_cache_b1(lib):
    # Seed 1: "in a single batch the KV cache is only about 1G": 2 * 1 * 32 * 2048 * 4096 * 2 = 1 GiB.
    m = vramsym.load_model("llama-7b")
    est = vramsym.estimate(m, "inference", {"kv_dtype": "fp16"}, {"batch": 1, "seq": 2048}, library=lib)
    assert comp(est, "kv_cache") == 2**30


def test_seed2_llama2_7b_256_tokens(lib):
    # Seed 2, section 2.1: KV_cache = 2 x 1 x 32 x 256 x 4096 x 2B, printed there as "= 1GB".
    # The product is 134,217,728 B = 128 MiB: the seed's arithmetic is off by 8x.
    m = vramsym.load_model("llama-2-7b")
    est = vramsym.estimate(m, "inference", {"kv_dtype": "fp16"}, {"batch": 1, "seq": 256}, library=lib)
    assert comp(est, "kv_cache") == 2 * 1 * 32 * 256 * 4096 * 2 == 134_217_728


def test_seed2_llama2_7b_fp16_weights(lib):
    # Seed 2, section 2.1: 7B parameters x 2 B = 14 GB. Llama-2-7B has 6,738,415,616 parameters exactly.
    m = vramsym.load_model("llama-2-7b")
    est = vramsym.estimate(m, "inference", {"precision": "fp16"}, {"batch": 1, "seq": 1}, library=lib)
    assert comp(est, "weights") == 2 * 6_738_415_616


NOMINAL = '''
regime train_8b extends train_states "seed 1: 8B parameters" {
    let P_rank = 8 * 10^9 * [parameter]   # one GPU: every parameter (parallel.vram)
    let T_train = 0 * [tensor]   # the seeds count bytes per parameter only, not PyTorch's per-tensor step counters
}
regime train_4b_seed2 extends train_states "seed 2: Qwen-4B, fp16 weights + fp32 grads + fp32 Adam" {
    let P_rank = 4 * 10^9 * [parameter]
    let T_train = 0 * [tensor]
    set precision = fp16_fp32grad
}
'''


def test_seed1_mixed_precision_adamw_8b():
    # Seed 1, section 2(1): an 8B model in mixed precision with AdamW:
    # (4 + 2) weights + 2 grads + (4 + 4) Adam = 16 bytes/param: 48 + 16 + 64 = 128 G (10^9 B).
    lib = lib_text(NOMINAL, bundled=True)
    est = estimate(lib, compose(lib, "train_8b"), None, {})
    assert est.total_bytes == 128 * 10**9
    assert comp(est, "weights_train") + comp(est, "master_weights") == 48 * 10**9
    assert comp(est, "gradients") == 16 * 10**9
    assert comp(est, "optimizer_states") == 64 * 10**9


def test_seed2_qwen4b_full_finetune_states():
    # Seed 2, section 3.1: params 4B x 2B = 8 GB, grads 4B x 4B = 16 GB, Adam 2 x 4B x 4B = 32 GB.
    lib = lib_text(NOMINAL, bundled=True)
    est = estimate(lib, compose(lib, "train_4b_seed2"), None, {})
    assert comp(est, "weights_train") == 8 * 10**9
    assert comp(est, "gradients") == 16 * 10**9
    assert comp(est, "optimizer_states") == 32 * 10**9
    assert comp(est, "master_weights") == 0


def test_llama31_8b_mixed_adamw_is_16_bytes_per_param(lib):
    m = vramsym.load_model("llama-3.1-8b")
    est = vramsym.estimate(m, "train_states", {"optimizer": "adamw"}, library=lib)
    # 16 bytes/param (ZeRO section 3.1) plus torch.optim's fp32 step tensor per parameter tensor
    # (291 tensors: 32 layers x 9 + embedding + final norm + LM head; measured 291 x 4 B with vramsym measure)
    assert est.total_bytes == 16 * 8_030_261_248 + 4 * 291


def test_a_new_precision_recipe_is_one_preset_line(tmp_path):
    """A recipe (bf16 weights, compute and gradients with fp32 optimizer states, as
    torchao's AnyPrecisionAdamW and many trainers run it) is one line of the preset."""
    import shutil
    from vramsym.catalog.paths import formulas_path
    d = tmp_path / "formulas"
    shutil.copytree(formulas_path(), d)
    p = d / "dtypes.vram"
    text = p.read_text()
    line = "    bf16_fp32states: weight_format = bf16, compute_format = bf16, grad_format = bf16, state_format = fp32, master = none\n"
    assert "preset precision default bf16" in text
    i = text.index("{\n", text.index("preset precision default bf16")) + 2
    p.write_text(text[:i] + line + text[i:])
    from vramsym.lang.library import load_or_raise
    lib = load_or_raise([d])
    m = vramsym.load_model("llama-3.1-8b")
    P = 8_030_261_248
    new = vramsym.estimate(m, "train_states", {"precision": "bf16_fp32states"}, library=lib)
    assert new.total_bytes == P * (2 + 2 + 8) + 4 * 291       # bf16 weights and grads, two fp32 moments
    # the existing recipes are unchanged by the addition
    for prec in ("bf16", "mixed_bf16", "zero_mixed"):
        for regime in ("inference", "train"):
            ins = {"batch": 2, "seq": 512}
            assert (vramsym.estimate(m, regime, {"precision": prec}, ins, library=lib).total_bytes
                    == vramsym.estimate(m, regime, {"precision": prec}, ins).total_bytes)
