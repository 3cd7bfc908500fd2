"""Tests for the optional torch measurement backend (skipped when torch is not installed)."""

import pathlib
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from vramsym.measure.torch_backend import measure  # noqa: E402

# Tiny Llama: h=64, I=128, 2 layers, 4 heads (head_dim 16), 2 kv heads, vocab 128, untied.
TINY = dict(model_type="llama", hidden_size=64, intermediate_size=128, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=2, vocab_size=128,
            tie_word_embeddings=False, max_position_embeddings=256)
TINY_PARAMS = 90432          # 128*64 (embed) + 2*36992 (layers) + 64 (norm) + 64*128 (lm_head)
TINY_PARAM_TENSORS = 21      # 2*9 + final norm + embed + lm_head
GPT2 = dict(model_type="gpt2", n_embd=64, n_layer=2, n_head=4, vocab_size=128, n_positions=64)


def _strip(r):
    """The parts of a result that must agree between fake and real runs."""
    keep = ("peak_bytes", "categories_at_peak", "peak_phase", "per_phase_peak", "param_count",
            "trainable_param_count", "kv_cache_bytes", "optimizer_state_bytes")
    return {k: r.get(k) for k in keep}


@pytest.mark.parametrize("cfg,kw", [
    (TINY, dict(mode="train", precision="fp32", attention="sdpa")),
    (TINY, dict(mode="train", precision="mixed_bf16", attention="eager", checkpointing=True)),
    (TINY, dict(mode="train", precision="bf16", optimizer="adamw_fused")),
    (TINY, dict(mode="train", precision="fp32", lora={"r": 4, "target_modules": "all-linear"})),
    (TINY, dict(mode="inference", precision="bf16", attention="sdpa")),
    (TINY, dict(mode="inference", precision="fp32", attention="eager")),
    (GPT2, dict(mode="train", precision="fp32", attention="sdpa")),
    (GPT2, dict(mode="inference", precision="fp32", attention="eager")),
])
def test_fake_matches_real_to_the_byte(cfg, kw):
    fake = measure(cfg, batch=2, seq=16, fake=True, **kw)
    real = measure(cfg, batch=2, seq=16, fake=False, **kw)
    assert fake["fake"] is True and real["fake"] is False
    assert _strip(fake) == _strip(real)


def test_train_fp32_adamw_accounting():
    r = measure(TINY, mode="train", batch=2, seq=16, precision="fp32", optimizer="adamw")
    P = TINY_PARAMS
    assert r["param_count"] == P and r["trainable_param_count"] == P
    assert r["peak_phase"] == "optimizer_step"  # tiny activations: P + G + 2P states + P foreach temps
    cats = r["categories_at_peak"]
    assert cats["parameters"] == 4 * P
    assert cats["gradients"] == 4 * P
    # exp_avg + exp_avg_sq in fp32, plus one fp32 scalar `step` tensor per parameter tensor
    assert cats["optimizer_states"] == 2 * 4 * P + 4 * TINY_PARAM_TENSORS
    assert r["optimizer_state_bytes"] == cats["optimizer_states"]
    # foreach AdamW materialises one extra state-sized buffer (sqrt(exp_avg_sq) / bias correction)
    assert cats["optimizer_temporaries"] == 4 * P
    assert r["peak_bytes"] == sum(cats.values())
    # forward ends with the saved activations; logits (b*s*V fp32) are a transient on top
    fwd = r["per_phase_peak"]["forward"]
    # (plus, for a vocab this small, the int64 labels padded by one position in HF's loss)
    transient = fwd["peak_bytes"] - fwd["end_bytes"]
    assert 0 <= transient - 2 * 16 * 128 * 4 <= 2 * 17 * 8


def test_train_bf16_and_sgd():
    r = measure(TINY, mode="train", batch=2, seq=16, precision="bf16", optimizer="sgd")
    cats = r["per_phase_peak"]["optimizer_step"]["categories"]
    assert cats["parameters"] == 2 * TINY_PARAMS
    assert cats["gradients"] == 2 * TINY_PARAMS
    assert cats["optimizer_states"] == 0
    m = measure(TINY, mode="train", batch=2, seq=16, precision="bf16", optimizer="sgd_momentum")
    assert m["optimizer_state_bytes"] == 2 * TINY_PARAMS  # momentum buffer in param dtype


def test_checkpointing_saves_only_layer_inputs():
    kw = dict(mode="train", batch=2, seq=16, precision="fp32", optimizer="sgd")
    full = measure(TINY, checkpointing=False, **kw)["per_phase_peak"]["forward"]["end_categories"]
    ckpt = measure(TINY, checkpointing=True, **kw)["per_phase_peak"]["forward"]["end_categories"]
    assert ckpt["activations"] < full["activations"]
    # per-layer saved activations: fp32 sdpa = 4*b*s*(8h + 2*kv_dim + 4I + 2 + heads)
    b, s, h, kv, I, H = 2, 16, 64, 32, 128, 4
    per_layer = 4 * b * s * (8 * h + 2 * kv + 4 * I + 2 + H)
    one = measure(dict(TINY, num_hidden_layers=1), checkpointing=False, **kw)
    one_act = one["per_phase_peak"]["forward"]["end_categories"]["activations"]
    assert full["activations"] - one_act == per_layer
    # with checkpointing, only the layer input (b*s*h) is kept per layer
    one_ck = measure(dict(TINY, num_hidden_layers=1), checkpointing=True, **kw)
    one_ck_act = one_ck["per_phase_peak"]["forward"]["end_categories"]["activations"]
    assert ckpt["activations"] - one_ck_act == 4 * b * s * h


def test_lora_gradients_and_optimizer_states():
    r = measure(TINY, mode="train", batch=2, seq=16, precision="fp32",
                lora={"r": 8, "alpha": 16, "target_modules": ["q_proj", "v_proj"]})
    # q_proj: A 8x64 + B 64x8; v_proj: A 8x64 + B 32x8; two layers
    trainable = 2 * (8 * (64 + 64) + 8 * (64 + 32))
    assert r["trainable_param_count"] == trainable
    assert r["param_count"] == TINY_PARAMS + trainable
    step = r["per_phase_peak"]["optimizer_step"]["categories"]
    assert step["gradients"] == 4 * trainable
    assert r["optimizer_state_bytes"] == 2 * 4 * trainable + 4 * 8  # + fp32 `step` per adapter tensor (A,B x q,v x 2 layers)
    assert step["parameters"] == 4 * (TINY_PARAMS + trainable)


def test_gradient_accumulation_leaves_no_tracker_leak_between_micro_steps():
    """Issue 22's sweep, seed 3, case 1004 (LoRA, full checkpointing, 3 micro-steps): -3.7%, all of it
    the tracker's. ModTracker registers a multi-grad hook on each module's inputs and drops the handle;
    on the embeddings' output, a leaf that requires grad under peft's checkpointing, the hook's closure
    holds the leaf's AccumulateGrad node, which holds the leaf: a cycle through C++ that Python never
    frees, so every micro-step left its b x s x h output and gradient behind. The job run without a
    tracker frees them; the measurement now does too: from the second micro-step on the peak is the
    same whatever the number of micro-steps (the adapters' gradients exist from the second on)."""
    lora = {"r": 4, "alpha": 16, "target_modules": ["q_proj", "v_proj"]}
    peaks = [measure(TINY, mode="train", batch=1, seq=64, precision="bf16", checkpointing=True, lora=lora,
                     grad_accum=ga, fake=True) for ga in (2, 3)]
    assert peaks[0]["peak_bytes"] == peaks[1]["peak_bytes"]
    ends = [p["per_phase_peak"]["backward"]["end_categories"]["activations"] for p in peaks]
    assert ends[0] == ends[1]


def test_inference_kv_cache_bytes():
    b, s, steps = 2, 16, 4
    r = measure(TINY, mode="inference", batch=b, seq=s, precision="bf16", decode_steps=steps)
    layers, kv_heads, head_dim, size = 2, 2, 16, 2
    assert r["kv_cache_bytes"] == 2 * b * (s + steps) * layers * kv_heads * head_dim * size
    assert r["categories_at_peak"]["parameters"] == 2 * TINY_PARAMS
    assert r["categories_at_peak"]["gradients"] == 0
    assert r["peak_phase"] in ("prefill", "decode")
    assert r["prefill_logits_bytes"] == b * s * 128 * 2  # full logits in the weight dtype
    last = measure(TINY, mode="inference", batch=b, seq=s, precision="bf16", decode_steps=steps,
                   logits_to_keep=1)
    assert last["prefill_logits_bytes"] == b * 1 * 128 * 2


@pytest.mark.parametrize("mode,precision,lora", [("train", "bf16", False), ("train", "fp32", False),
                                                 ("train", "mixed_bf16", False), ("inference", "fp16", False),
                                                 ("train", "fp32", True), ("train", "mixed_bf16", True)])
def test_moe_experts_trace_under_fake_tensors_in_every_precision(monkeypatch, mode, precision, lora):
    """grouped_mm's meta kernel takes bf16 only; CUDA runs fp32 / fp16 through ATen's fallback
    (pytorch#162059), which the measurement reproduces (hf_model._GroupedMM: transformers' fallback
    operators with ATen's saved tensors, no expert input saved when the experts are frozen).  The fake
    trace must equal a real CPU run of ATen's own grouped_mm to the byte, and must not fall back to
    real tensors."""
    from vramsym.measure import hf_model
    moe = dict(model_type="mixtral", hidden_size=64, intermediate_size=128, num_hidden_layers=2,
               num_attention_heads=4, num_key_value_heads=2, vocab_size=128,
               num_local_experts=4, num_experts_per_tok=2)
    kw = {"lora": {"r": 4, "target_modules": ["q_proj", "v_proj"]}} if lora else {}
    fake = measure(moe, mode=mode, batch=2, seq=16, precision=precision, fake=True, **kw)
    assert fake["moe"] is True and fake["fake"] is True
    assert not any("FakeTensorMode" in n for n in fake["notes"])
    # the real run without the routing: ATen's CPU grouped_mm takes every dtype
    aten = torch.nn.functional.grouped_mm
    monkeypatch.setattr(hf_model, "_GroupedMM", type("_Aten", (), {
        "apply": staticmethod(lambda a, b, offs: aten(a, b, offs=offs))}))
    real = measure(moe, mode=mode, batch=2, seq=16, precision=precision, fake=False, **kw)
    assert _strip(fake) == _strip(real)


def test_bad_arguments():
    with pytest.raises(ValueError):
        measure(TINY, mode="serve", batch=1, seq=8)
    with pytest.raises(ValueError):
        measure(TINY, mode="train", batch=1, seq=8, precision="fp16")
    with pytest.raises(ValueError):
        measure({"hidden_size": 64}, mode="train", batch=1, seq=8)


def test_module_import_is_lazy():
    """torch is imported at the measure extra's gate (vramsym.measure.compare._harness), when a
    measurement runs: not by the package, nor by the module the ``measure`` command imports."""
    code = ("import sys, vramsym, vramsym.measure.compare; vramsym.compare_with_pytorch; "
            "assert 'torch' not in sys.modules, 'torch imported eagerly'")
    root = pathlib.Path(__file__).resolve().parents[1]
    subprocess.run([sys.executable, "-c", code], check=True, cwd=root)


def test_a_pad_token_outside_the_vocabulary_is_a_sentence_not_an_internal_error(tmp_path, capsys):
    """A config.json whose pad_token_id is not below vocab_size (a tiny config cut from a real one)
    cannot be built by transformers (nn.Embedding's padding_idx assertion); `vramsym measure` said
    'internal error' with an AssertionError, and now names the field and the fix, exit 1."""
    from vramsym.cli import main
    cfg = {"model_type": "llama", "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 1,
           "num_attention_heads": 2, "num_key_value_heads": 1, "vocab_size": 100, "pad_token_id": 200018,
           "max_position_embeddings": 256}
    p = tmp_path / "config.json"
    p.write_text(__import__("json").dumps(cfg))
    assert main(["measure", "--model", str(p), "--batch", "1", "--seq", "8"]) == 1
    err = capsys.readouterr().err
    assert "pad_token_id 200018" in err and "vocab_size 100" in err and "internal error" not in err


def test_a_type_that_ships_another_familys_modeling_file_is_built_as_that_family():
    """Kimi K2's config.json says model_type kimi_k2 (unknown to transformers) and ships DeepSeek-V3's
    modeling file (auto_map); formulas/architectures.json reads it `like` deepseek_v3, and the
    measurement builds it as one."""
    from vramsym.measure.hf_model import _build_hf_config
    import transformers
    small = dict(model_type="kimi_k2", hidden_size=64, intermediate_size=96, moe_intermediate_size=32,
                 num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=4, vocab_size=128,
                 n_routed_experts=4, num_experts_per_tok=2, n_shared_experts=1, first_k_dense_replace=1,
                 q_lora_rank=32, kv_lora_rank=16, qk_rope_head_dim=8, qk_nope_head_dim=8, v_head_dim=8,
                 n_group=1, topk_group=1)
    assert "kimi_k2" not in transformers.CONFIG_MAPPING
    assert isinstance(_build_hf_config(small), transformers.DeepseekV3Config)
    with pytest.raises(ValueError):
        _build_hf_config(dict(small, model_type="no_such_family"))
    r = measure(small, mode="inference", batch=1, seq=8, precision="bf16")
    assert r["moe"] is True and r["peak_bytes"] > 0


def test_latent_attention_with_narrower_values_runs_cudas_memory_efficient_kernel():
    """Multi-head latent attention hands SDPA keys wider than its values (DeepSeek-V3, Kimi K2: q/k 192,
    v 128). CUDA's flash kernel refuses unequal head dimensions and the memory-efficient kernel takes
    them (PyTorch sdp_utils.cpp check_head_dim_size_flash / check_head_dim_size_mem_efficient), so no
    scores are kept; the CPU's flash kernel refuses them too, and its math path materialized the
    b x n x s x s scores in fp32: seed 26's Kimi K2 inference at s = 5,441 measured 68 GB of activations
    where CUDA keeps 12 GB. The measurement runs CUDA's kernel."""
    import torch.nn.functional as F
    from torch.utils._python_dispatch import TorchDispatchMode
    from vramsym.measure.hf_model import _cuda_kernel_patches

    class Ops(TorchDispatchMode):
        seen = set()

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.seen.add(str(func))
            return func(*args, **(kwargs or {}))

    from torch._subclasses.fake_tensor import FakeTensorMode
    with FakeTensorMode():
        q, k = torch.randn(1, 2, 64, 24, requires_grad=True), torch.randn(1, 2, 64, 24)
        v = torch.randn(1, 2, 64, 16)
        with _cuda_kernel_patches(), Ops() as ops:
            out = F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=0.5)
    assert out.shape == (1, 2, 64, 16)
    assert "aten._scaled_dot_product_efficient_attention.default" in ops.seen and "aten.bmm.default" not in ops.seen

    small = dict(model_type="deepseek_v3", hidden_size=64, intermediate_size=96, moe_intermediate_size=32,
                 num_hidden_layers=1, num_attention_heads=4, num_key_value_heads=4, vocab_size=128,
                 n_routed_experts=4, num_experts_per_tok=2, n_shared_experts=1, first_k_dense_replace=1,
                 q_lora_rank=32, kv_lora_rank=16, qk_rope_head_dim=8, qk_nope_head_dim=24, v_head_dim=16,
                 n_group=1, topk_group=1, max_position_embeddings=2048)
    b, s, n = 1, 1024, 4
    r = measure(small, mode="inference", batch=b, seq=s, precision="bf16")
    assert r["peak_bytes"] < b * n * s * s * 4       # the fp32 scores of the math path alone would be more


@pytest.mark.parametrize("model_type", ["deepseek_v3", "mixtral"])
def test_fp32_routing_weights_make_the_weighted_expert_outputs_fp32(tmp_path, model_type):
    """DeepSeek-V3's router (and DeepSeek-V2's, GLM-4-MoE's, Mixtral's) hands fp32 routing weights to the
    experts, so transformers' grouped_mm_experts_forward makes the weighted outputs and their reordered
    copy fp32 (type promotion in proj_out * sample_weights_g): with h wider than 4 I the prefill peaks
    there. Counted as bf16 before, Kimi K2's prefill (seed 26, case 23) was 4.7 GB short; a live-tensor
    trace found the two fp32 copies. Only the shared expert, run after the routed ones and counted beside
    them, is over (3 I_shared bf16 per token)."""
    import json
    import vramsym
    cfg = dict(model_type=model_type, hidden_size=512, intermediate_size=64, num_hidden_layers=2,
               num_attention_heads=4, num_key_value_heads=4, vocab_size=128, max_position_embeddings=512,
               num_experts_per_tok=4)
    if model_type == "deepseek_v3":
        cfg.update(moe_intermediate_size=32, n_routed_experts=8, n_shared_experts=1, first_k_dense_replace=0,
                   q_lora_rank=64, kv_lora_rank=32, qk_rope_head_dim=16, qk_nope_head_dim=16, v_head_dim=32,
                   n_group=1, topk_group=1)
        shared = 32
    else:
        cfg.update(num_local_experts=8)
        shared = 0
    p = tmp_path / "config.json"
    p.write_text(json.dumps(cfg))
    b, s = 1, 256
    r = vramsym.compare_with_pytorch(str(p), "inference", inputs={"batch": b, "seq": s}, fake=False)
    act = next(row for row in r["rows"] if row["component"] == "activations")
    over = act["predicted_bytes"] - act["measured_bytes"]
    assert 0 <= over <= b * s * 3 * shared * 2 + b * s * 64, act        # before: 4 x 512 x 4 B a token short
