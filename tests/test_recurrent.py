"""Hybrid and recurrent decoders (formulas/recurrent.vram): for each family of formulas/architectures.json
with Mamba / Mamba2 / Gated DeltaNet layers, a tiny config is built on the meta device by transformers
(the independent source): vramsym's parameter count equals the model's, its KV per token equals the
keys and values of the model's own cache after a one-token forward, and its recurrent state per
sequence equals the conv windows and SSM / recurrent states in that cache, the pure SSM types (Mamba,
FalconMamba, Mamba2: no attention, no MLP) among them."""
import importlib.util
import json
import os

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

import vramsym
from vramsym.catalog.models import _spec

HERE = os.path.dirname(__file__)


@pytest.fixture(scope="module")
def tool():
    spec = importlib.util.spec_from_file_location("coverage_tool", os.path.join(HERE, "..", "tools", "coverage.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


ATTN = dict(hidden_size=64, num_attention_heads=4, num_key_value_heads=2, vocab_size=128, intermediate_size=96)
MAMBA2 = dict(mamba_d_state=8, mamba_d_conv=3, mamba_expand=2, mamba_n_heads=8, mamba_d_head=16, mamba_n_groups=2)
GDN = dict(linear_num_value_heads=4, linear_num_key_heads=2, linear_key_head_dim=8, linear_value_head_dim=12,
           linear_conv_kernel_dim=3, head_dim=16)
TINY = {
    "qwen3_next": dict(ATTN, **GDN, num_hidden_layers=5, moe_intermediate_size=32, shared_expert_intermediate_size=48,
                       num_experts=4, num_experts_per_tok=2, decoder_sparse_step=2),
    "qwen3_5_text": dict(ATTN, **GDN, num_hidden_layers=4,
                         layer_types=["linear_attention", "full_attention", "linear_attention", "linear_attention"]),
    "qwen3_5_moe_text": dict(ATTN, **GDN, num_hidden_layers=4, moe_intermediate_size=32, shared_expert_intermediate_size=32,
                             num_experts=4, num_experts_per_tok=2),
    "granitemoehybrid": dict(ATTN, **MAMBA2, num_hidden_layers=3, num_local_experts=4, num_experts_per_tok=2,
                             shared_intermediate_size=48, layer_types=["mamba", "attention", "mamba"],
                             position_embedding_type="nope"),
    "bamba": dict(ATTN, **MAMBA2, num_hidden_layers=4, attn_layer_indices=[1, 3], mlp_bias=True),
    "jamba": dict(ATTN, num_hidden_layers=5, attn_layer_period=3, attn_layer_offset=1, expert_layer_period=2,
                  expert_layer_offset=0, num_experts=4, num_experts_per_tok=2, mamba_d_state=8, mamba_d_conv=3,
                  mamba_expand=2, mamba_dt_rank=6, mamba_proj_bias=True),
    "falcon_h1": dict(ATTN, **MAMBA2, num_hidden_layers=3, mamba_d_ssm=128, mamba_rms_norm=True),
    "nemotron_h": dict(hidden_size=64, num_attention_heads=4, num_key_value_heads=2, head_dim=16, vocab_size=128,
                       intermediate_size=96, layers_block_type=["linear_attention", "mlp", "full_attention", "moe",
                                                            "linear_attention"],
                       ssm_state_size=8, conv_kernel=3, mamba_num_heads=6, mamba_head_dim=12, n_groups=2,
                       n_routed_experts=4, num_experts_per_tok=2, moe_intermediate_size=32,
                       moe_shared_expert_intermediate_size=40),
    "mamba": dict(hidden_size=64, vocab_size=128, num_hidden_layers=3, state_size=8, conv_kernel=3, expand=3,
                  time_step_rank=5, use_bias=True),
    "falcon_mamba": dict(hidden_size=64, vocab_size=128, num_hidden_layers=2, state_size=8, conv_kernel=3,
                         tie_word_embeddings=False),
    "mamba2": dict(hidden_size=64, vocab_size=128, num_hidden_layers=3, state_size=8, conv_kernel=3, expand=2,
                   num_heads=8, head_dim=16, n_groups=2, use_bias=True, tie_word_embeddings=True),
}


@pytest.mark.parametrize("mt", sorted(TINY))
def test_params_kv_and_state_match_the_meta_model(tool, mt):
    ref = tool.reference(mt, **TINY[mt])
    assert "error" not in ref, ref
    assert ref["kv"] is not None and ref["state"], ref.get("kv_note")     # the forward ran and left a state
    got = tool.vram(ref["config"])
    assert "refused" not in got and "error" not in got, got
    assert got["params"] == ref["params"]
    assert got["kv"] == ref["kv"]
    assert got["state"] == ref["state"]


@pytest.mark.parametrize("mt", sorted(TINY))
def test_llama_cpp_recurrent_cells_and_kv_match_the_meta_model(tool, tmp_path, mt):
    # llama.cpp (src/llama-memory-recurrent.cpp, llama-hparams.cpp n_embd_r / n_embd_s): F32 rows per
    # sequence of the conv window's last d_conv - 1 columns and of the whole SSM / delta-rule state, in
    # every recurrent layer; the KV cache holds the attention layers only. Derived here from the
    # transformers model's own cache after a one-token forward (conv windows of d_conv columns there).
    ref = tool.reference(mt, **TINY[mt])
    assert "error" not in ref and ref["state"] and ref["conv_state"], ref
    (k,) = ref["conv_kernels"]
    per_seq = (ref["conv_state"] * (k - 1) // k + ref["state"] - ref["conv_state"]) * 4
    b, s = 3, 512          # 3 slots of 512 cells each (not unified: one stream per slot, each padded to 256)
    p = tmp_path / "config.json"
    p.write_text(json.dumps(ref["config"]))
    est = vramsym.estimate(str(p), "llama_cpp", inputs={"batch": b, "seq": s})
    got = {c.name: c.bytes for c in est.all_components}
    assert got["lcpp_rs_cache"] == b * per_seq and got["lcpp_rs_cache_host"] == 0
    assert got["lcpp_kv_cache"] == b * s * ref["kv"] * 2            # F16 K and V of every attention layer
    half = vramsym.estimate(str(p), "llama_cpp", inputs={"batch": b, "seq": s, "gpu_layers": 0})
    half = {c.name: c.bytes for c in half.all_components}
    assert half["lcpp_rs_cache"] == 0 and half["lcpp_rs_cache_host"] == b * per_seq     # -ngl 0: all on the CPU


def test_llama_cpp_pure_mamba_compute_has_no_attention_mask(tmp_path):
    # a pure Mamba2 model builds no KQ mask and no attention (src/models/mamba2.cpp): the compute buffer
    # does not grow with the context, as an attention model's mask does
    p = tmp_path / "config.json"
    p.write_text(json.dumps(dict(TINY["mamba2"], model_type="mamba2")))
    at = {s: next(c.bytes for c in vramsym.estimate(str(p), "llama_cpp", inputs={"batch": 1, "seq": s}).components
                  if c.name == "lcpp_compute") for s in (512, 8192)}
    assert at[512] == at[8192] > 0


def test_hub_pattern_string_counts_like_the_list(tmp_path):
    # Nemotron-H's hub configs give hybrid_override_pattern (configuration_nemotron_h.py _pattern_to_list)
    cfg = dict(TINY["nemotron_h"], model_type="nemotron_h", hybrid_override_pattern="M-*EM")
    cfg.pop("layers_block_type")
    p = tmp_path / "config.json"
    p.write_text(json.dumps(cfg))
    c = vramsym.load_model(str(p)).config
    assert (c["num_hidden_layers"], c["arch_attn_layers"], c["arch_ssm_layers"], c["arch_ffn_layers"],
            c["arch_moe_layers"]) == (5, 1, 2, 2, 1)


@pytest.mark.parametrize("mt", ["mamba", "mamba2"])
def test_pure_ssm_types_are_exact_at_their_defaults(tool, mt):
    row = tool.row(mt)
    assert row["status"] == "exact", row
    assert row["vram_kv"] == row["meta_kv"] == 0 and row["vram_state"] == row["meta_state"] > 0, row


def _write(tmp_path, mt, **over):
    cfg = dict(TINY[mt], model_type=mt, **over)
    p = tmp_path / "config.json"
    p.write_text(json.dumps(cfg))
    return str(p)


@pytest.mark.parametrize("mt, regime, words", [
    ("qwen3_next", "freeze", "freeze tuning of its Gated DeltaNet layers"),
    ("granitemoehybrid", "qlora", "QLoRA of its Mamba2 layers"),
    ("nemotron_h", "freeze", "freeze tuning of its Mamba2 layers"),
    ("falcon_h1", "adapters", "bottleneck adapters in its Mamba2 layers"),
    ("jamba", "vllm", "vLLM's state of its Mamba layers"),
    ("jamba", "freeze", "freeze tuning of its Mamba layers"),
])
def test_regimes_that_do_not_model_the_mixers_refuse(tmp_path, mt, regime, words):
    # formulas/architectures.json _checks.hybrid_unmodelled: one sentence with the type, the regime and what
    with pytest.raises(vramsym.InputError) as e:
        vramsym.estimate(_write(tmp_path, mt), regime, inputs={"batch": 1, "seq": 64})
    msg = str(e.value)
    assert f"model_type '{mt}'" in msg and f"regime '{regime}'" in msg and words in msg and "--assume llama" in msg
    if regime in ("vllm", "qlora"):
        return      # their approximations need a GPU's capacity or bitsandbytes; the sentence is the point here
    est = vramsym.estimate(vramsym.load_model(_write(tmp_path, mt), assume="llama"), regime,
                           inputs={"batch": 1, "seq": 64})
    assert est.approximate and words in est.approximate


@pytest.mark.parametrize("flag", ["tp", "pp"])
def test_parallel_layouts_that_do_not_split_the_mixers_refuse(tmp_path, flag):
    with pytest.raises(vramsym.InputError) as e:
        vramsym.estimate(_write(tmp_path, "qwen3_next"), "inference", inputs={"batch": 1, "seq": 64, flag: 2})
    assert "model_type 'qwen3_next'" in str(e.value) and f"--{flag} 2" in str(e.value)


@pytest.mark.parametrize("mt, over, b, s", [
    # attention first, so that its KV is allocated before the peak Gated DeltaNet layer
    ("qwen3_5_text", dict(num_hidden_layers=3, layer_types=["full_attention", "linear_attention", "linear_attention"]), 2, 256),
    # wider heads: the peak moves from the chunk x chunk tensors to the scan
    ("qwen3_5_text", dict(num_hidden_layers=3, layer_types=["full_attention", "linear_attention", "linear_attention"],
                          linear_key_head_dim=32, linear_value_head_dim=32), 1, 1024),
])
def test_gated_deltanet_prefill_against_a_measurement(tmp_path, mt, over, b, s):
    pytest.importorskip("torch.distributed._tools.mem_tracker")
    r = vramsym.compare_with_pytorch(_write(tmp_path, mt, **over), "inference", inputs={"batch": b, "seq": s})
    act = next(row for row in r["rows"] if row["component"] == "activations")
    assert abs(act["predicted_bytes"] - act["measured_bytes"]) <= act["measured_bytes"] / 100, act
    assert abs(r["predicted_total_bytes"] - r["measured_peak_bytes"]) <= r["measured_peak_bytes"] * 15 / 1000, r["rows"]


@pytest.mark.parametrize("mt, over, b, s, precision", [
    # a pure Mamba2 (residual_in_fp32), the sequence not a whole number of chunks
    ("mamba2", dict(state_size=16, num_heads=4, head_dim=32, n_groups=1, chunk_size=64), 2, 1000, "fp32"),
    ("mamba2", dict(), 1, 333, "bf16"),
    # hybrids whose Mamba2 layer is the largest: attention, MLP and MoE layers around it
    ("nemotron_h", dict(), 2, 1024, "bf16"),
    ("falcon_h1", dict(), 1, 700, "fp32"),
])
def test_mamba2_prefill_against_a_measurement(tmp_path, mt, over, b, s, precision):
    # formulas/recurrent.vram ssm2_prefill: mamba2_chunk_scan's chunk x chunk, head_dim and state_size tensors,
    # derived from the torch path's code, against what PyTorch allocates (FakeTensorMode)
    pytest.importorskip("torch.distributed._tools.mem_tracker")
    r = vramsym.compare_with_pytorch(_write(tmp_path, mt, **over), "inference", options={"precision": precision},
                                     inputs={"batch": b, "seq": s})
    assert r["measured_peak_phase"] == "prefill"
    assert abs(r["predicted_total_bytes"] - r["measured_peak_bytes"]) <= r["measured_peak_bytes"] * 6 / 1000, r["rows"]


@pytest.mark.parametrize("mt, over, b, s, precision", [
    # pure Mamba (residual_in_fp32): exact in fp32 and bf16
    ("mamba", dict(), 2, 100, "fp32"),
    ("mamba", dict(), 1, 77, "bf16"),
    # Falcon-Mamba: normed B and C replace x_proj's output; its dummy norm weights are buffers
    ("falcon_mamba", dict(time_step_rank=4), 1, 64, "bf16"),
    # Jamba: the peak Mamba layer sits before the last attention layer, whose KV the total already counts
    ("jamba", dict(), 2, 64, "bf16"),
])
def test_mamba_prefill_against_a_measurement(tmp_path, mt, over, b, s, precision):
    # formulas/recurrent.vram ssm1_prefill: the torch fallback of selective_scan_fn discretises A and B for the
    # whole sequence (three fp32 tensors of b x d_in x s x N), derived from the code, against what PyTorch
    # allocates (FakeTensorMode); before, inference on a Mamba layer was refused
    pytest.importorskip("torch.distributed._tools.mem_tracker")
    r = vramsym.compare_with_pytorch(_write(tmp_path, mt, **over), "inference", options={"precision": precision},
                                     inputs={"batch": b, "seq": s})
    assert r["measured_peak_phase"] == "prefill"
    err = r["predicted_total_bytes"] - r["measured_peak_bytes"]
    assert 0 <= err <= r["measured_peak_bytes"] * 6 / 1000, r["rows"]
    if mt != "jamba":
        assert err == 0, r["rows"]



@pytest.mark.parametrize("extra", [{}, {"time_step_rank": "auto"}, {"time_step_rank": 7}])
def test_mamba_time_step_rank_auto_is_ceil_h_over_16(extra):
    """A Mamba config.json without time_step_rank, or with its default 'auto', was refused ('missing
    value for ssm_dt_rank'); transformers reads both as ceil(hidden_size / 16). Parameters exact
    against the meta-device model."""
    transformers = pytest.importorskip("transformers")
    torch = pytest.importorskip("torch")
    cfg = dict(model_type="mamba", hidden_size=96, num_hidden_layers=2, vocab_size=100, **extra)
    est = vramsym.estimate(_spec(dict(cfg), "tiny-mamba", "tests/test_recurrent.py"), "inference",
                           {"precision": "fp32", "overhead": "none"}, {"batch": 1, "seq": 8})
    with torch.device("meta"):
        model = transformers.MambaForCausalLM(transformers.MambaConfig(hidden_size=96, num_hidden_layers=2,
                                                                       vocab_size=100, **extra))
    assert next(c.bytes for c in est.all_components if c.name == "weights") == \
        4 * sum(p.numel() for p in model.parameters())


@pytest.mark.parametrize("mt, targets, words", [
    # peft itself refuses these jobs (peft/tuners/tuners_utils.py _check_lora_target_modules_mamba; a pure
    # Mamba2 has no q_proj / v_proj): refused with the reason, where full training is modelled
    ("nemotron_h", "all_linear", "peft refuses LoRA on out_proj and conv1d"),
    ("falcon_h1", "all_linear", "peft refuses LoRA on out_proj and conv1d"),
    ("mamba2", "all_linear", "peft refuses LoRA on out_proj and conv1d"),
    ("mamba2", "qv", "it has no attention layers"),
])
def test_lora_targets_peft_refuses_are_refused(tmp_path, mt, targets, words):
    with pytest.raises(vramsym.InputError) as e:
        vramsym.estimate(_write(tmp_path, mt), "lora", {"lora_targets": targets}, inputs={"batch": 1, "seq": 64})
    assert f"model_type '{mt}'" in str(e.value) and words in str(e.value) and f"--lora-targets {targets}" in str(e.value)
    est = vramsym.estimate(_write(tmp_path, mt), "train", inputs={"batch": 1, "seq": 64})    # full training answers
    assert est.total_bytes > 0 and not est.approximate


def _against_a_measurement(tmp_path, mt, over, regime, opts, s, act_tol, peak_tol):
    """vramsym's prediction against PyTorch's accounting (FakeTensorMode): the activations saved at the end
    of forward and the peak, within tolerances in thousandths; under LoRA the adapters peft makes, to the
    parameter."""
    pytest.importorskip("torch.distributed._tools.mem_tracker")
    if regime == "lora":
        pytest.importorskip("peft")
    r = vramsym.compare_with_pytorch(_write(tmp_path, mt, **over), regime, options=opts, inputs={"batch": 2, "seq": s})
    rows = {row["component"]: row for row in r["rows"]}
    act = rows["activations"]
    assert abs(act["predicted_bytes"] - act["measured_bytes"]) <= act["measured_bytes"] * act_tol / 1000, r["rows"]
    assert abs(r["predicted_total_bytes"] - r["measured_peak_bytes"]) <= r["measured_peak_bytes"] * peak_tol / 1000, r["rows"]
    if regime == "lora":       # the adapters peft makes, to the parameter
        assert rows["gradients"]["predicted_bytes"] == rows["gradients"]["measured_bytes"], r["rows"]


FALCON_H1_SMALL = dict(TINY["falcon_h1"], mamba_chunk_size=16, mamba_rms_norm=False)
MAMBA2_SMALL = dict(hidden_size=32, vocab_size=16, num_hidden_layers=3, state_size=16, conv_kernel=4, expand=2,
                    num_heads=8, head_dim=8, n_groups=1, use_bias=False, chunk_size=32, tie_word_embeddings=True)


@pytest.mark.parametrize("mt, over, regime, opts, s, act_tol, peak_tol", [
    # formulas/recurrent.vram act_ssm2: what a Mamba2 layer's torch path saves for backward, derived from a
    # live-tensor trace (fp32, bf16, bf16 autocast; the sequence not a whole number of chunks; one chunk)
    ("mamba2", MAMBA2_SMALL, "train", {"precision": "fp32"}, 70, 1, 3),
    ("mamba2", MAMBA2_SMALL, "train", {"precision": "bf16"}, 17, 1, 3),
    ("mamba2", MAMBA2_SMALL, "train", {"precision": "mixed_bf16"}, 100, 3, 3),
    # the hand-written loop keeps outputs.logits, which Mamba2ForCausalLM returns in fp32 (logits_fp32)
    # (the measured activations hold those logits, which the prediction counts apart: loop_logits)
    ("mamba2", MAMBA2_SMALL, "train", {"precision": "bf16", "loop": "manual"}, 70, 3, 3),
    # full checkpointing: the recomputed scan's peak (ssm_recompute_first / _last)
    ("mamba2", MAMBA2_SMALL, "train", {"precision": "fp32", "checkpointing": "full"}, 70, 5, 10),
    # hybrids: attention, MLP, MoE and Mamba2 blocks composed by kind (act_layer_hybrid)
    ("nemotron_h", {}, "train", {"precision": "bf16"}, 37, 5, 5),
    ("bamba", {}, "train", {"precision": "bf16"}, 37, 5, 5),
    # LoRA: the frozen mixer saves less (ssm2_frozen_less); on attention only, nothing below the first
    # attention layer (Lg_*); all-linear adapts in_proj and out_proj (lora_ssm_width)
    ("nemotron_h", {}, "lora", {"precision": "bf16", "lora_targets": "qv"}, 37, 10, 10),
    ("bamba", {}, "lora", {"precision": "bf16", "lora_targets": "all_linear"}, 37, 5, 10),
    ("granitemoehybrid", {}, "lora", {"precision": "bf16", "lora_targets": "all_linear"}, 37, 5, 10),
    # Falcon-H1 (refused before): attention beside the Mamba2 mixer on one input norm (act_shared_norm), each
    # branch saving its own scaled copy of the norm's output; without mamba_rms_norm the gate is a plain
    # product (ssm2_gated_norm_saved); under autocast the mup_vector product is fp32 (ssm2_proj_bytes); the
    # top layer's attention runs after its mixer (L_attn_from_rec) and its backward first
    ("falcon_h1", FALCON_H1_SMALL, "train", {"precision": "bf16"}, 37, 1, 6),
    ("falcon_h1", dict(FALCON_H1_SMALL, mamba_rms_norm=True), "train", {"precision": "fp32"}, 37, 1, 3),
    ("falcon_h1", FALCON_H1_SMALL, "train", {"precision": "mixed_bf16"}, 37, 1, 3),
    ("falcon_h1", dict(FALCON_H1_SMALL, mamba_rms_norm=True), "train", {"precision": "mixed_bf16"}, 37, 1, 3),
    # full checkpointing: the rerun layer holds both mixers (act_layer_max_hybrid), and the gradients of the
    # layers above their Mamba2 mixers' (P_mixer_rank)
    ("falcon_h1", FALCON_H1_SMALL, "train", {"precision": "bf16", "checkpointing": "full"}, 37, 1, 5),
    # LoRA on attention: the first layer's mixer runs before its attention, without autograd (L_ssm_up);
    # peft refuses out_proj, so all-linear is refused
    ("falcon_h1", FALCON_H1_SMALL, "lora", {"precision": "bf16", "lora_targets": "qv"}, 37, 1, 10),
    ("falcon_h1", dict(FALCON_H1_SMALL, mamba_rms_norm=True), "lora", {"precision": "fp32", "lora_targets": "attention"}, 37, 1, 10),
    # (the activations at the end of forward: one h-wide 16-bit tensor per token more than the layer inputs
    # counted, 9,472 B of 98,280 here, not traced)
    ("falcon_h1", FALCON_H1_SMALL, "lora", {"precision": "bf16", "lora_targets": "qv", "checkpointing": "full"}, 37, 100, 15),
])
def test_mamba2_training_against_a_measurement(tmp_path, mt, over, regime, opts, s, act_tol, peak_tol):
    """Mamba2 layers in training (before: refused). Tolerances in thousandths, of the activations saved at
    the end of forward and of the peak (the backward's scan moments are derived, the frozen upper layers of
    a hybrid whose top layer is not a Mamba2 one make the backward term an upper bound)."""
    _against_a_measurement(tmp_path, mt, over, regime, opts, s, act_tol, peak_tol)


GDN_SMALL = dict(hidden_size=64, intermediate_size=96, num_attention_heads=4, num_key_value_heads=2, head_dim=24,
                 vocab_size=64, linear_conv_kernel_dim=4, linear_key_head_dim=32, linear_value_head_dim=24,
                 linear_num_key_heads=4, linear_num_value_heads=8, tie_word_embeddings=False, num_hidden_layers=4,
                 layer_types=["linear_attention"] * 3 + ["full_attention"],
                 rope_parameters={"rope_type": "default", "rope_theta": 10000000, "partial_rotary_factor": 0.25})


@pytest.mark.parametrize("mt, over, regime, opts, s, act_tol, peak_tol", [
    # formulas/recurrent.vram act_gdn: what a Gated DeltaNet layer's torch path saves for backward, derived
    # from live-tensor traces (fp32, bf16, bf16 autocast; s = 300: five chunks, the last padded); the
    # backward's moments (gdn_bwd_moment, gdn_loop_moment) and the scan's forward peak (gdn_scan_live)
    ("qwen3_5_text", GDN_SMALL, "train", {"precision": "bf16"}, 300, 1, 3),
    ("qwen3_5_text", GDN_SMALL, "train", {"precision": "mixed_bf16"}, 300, 1, 3),
    ("qwen3_5_text", GDN_SMALL, "train", {"precision": "fp32"}, 300, 1, 3),
    # H_k = H_v: an fp32 model's l2 norms read views of the conv output (gdn_qk_view)
    ("qwen3_5_text", dict(GDN_SMALL, linear_num_key_heads=8), "train", {"precision": "fp32"}, 100, 1, 3),
    # a sequence of whole chunks (s = 256: nothing padded) in fp32: q, k and k_beta stay transposed views and
    # the chunked matmuls save copies (gdn_view_copies; issue 22's sweep, seed 16 case 10: -3.78% before);
    # bf16 copies nothing more. With H_k < H_v the measured activations are b H_v 2C d_k fp32 per layer below
    # that count (1.3% here, of the activations and of the peak; 0.07% for a full-width layer at s = 2048), though saved-tensor hooks find the same
    # four copies as with H_k = H_v: not explained yet, an over-prediction
    ("qwen3_5_text", dict(GDN_SMALL, linear_num_key_heads=8), "train", {"precision": "fp32"}, 256, 1, 3),
    ("qwen3_5_text", GDN_SMALL, "train", {"precision": "fp32"}, 256, 15, 15),
    ("qwen3_5_text", GDN_SMALL, "train", {"precision": "bf16"}, 256, 1, 3),
    # full checkpointing: the recomputed layer's own MLP released before its mixer's backward (rec_own_ffn_done)
    ("qwen3_5_text", GDN_SMALL, "train", {"precision": "bf16", "checkpointing": "full"}, 300, 15, 5),
    # LoRA: the frozen mixer saves less (gdn_frozen_less); all-linear adapts in_proj_* and out_proj
    # (lora_gdn_width); on q and v the GDN layers below the first attention layer run without autograd
    # and peak as in prefill (rec_low_forward)
    ("qwen3_5_text", GDN_SMALL, "lora", {"precision": "bf16", "lora_targets": "all_linear"}, 300, 5, 10),
    ("qwen3_5_text", GDN_SMALL, "lora", {"precision": "bf16", "lora_targets": "qv"}, 300, 5, 5),
    # Qwen3-Next: fused in_proj_qkvz / in_proj_ba, sparse MoE with a gated shared expert
    ("qwen3_next", dict(GDN_SMALL, num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32,
                        shared_expert_intermediate_size=40, decoder_sparse_step=1), "train", {"precision": "bf16"}, 200, 10, 5),
])
def test_gated_deltanet_training_against_a_measurement(tmp_path, mt, over, regime, opts, s, act_tol, peak_tol):
    """Gated DeltaNet layers (Qwen3.5, Qwen3-Next) in training (before: refused). Tolerances in thousandths,
    of the activations saved at the end of forward and of the peak."""
    _against_a_measurement(tmp_path, mt, over, regime, opts, s, act_tol, peak_tol)


MAMBA_SMALL = dict(hidden_size=32, vocab_size=16, num_hidden_layers=2, state_size=8, conv_kernel=4, expand=2,
                   time_step_rank=4, use_bias=False, tie_word_embeddings=True)
JAMBA_SMALL = dict(hidden_size=32, intermediate_size=48, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                   vocab_size=16, mamba_d_state=8, mamba_d_conv=4, mamba_expand=2, mamba_dt_rank=4, attn_layer_period=2,
                   attn_layer_offset=1, expert_layer_period=2, expert_layer_offset=1, num_experts=4, num_experts_per_tok=2,
                   tie_word_embeddings=False)

# m a m m with dense MLPs: one Mamba layer below the first attention layer, two above it
JAMBA_LORA = dict(JAMBA_SMALL, num_hidden_layers=4, attn_layer_period=4, attn_layer_offset=1, num_experts=1,
                  num_experts_per_tok=1)


@pytest.mark.parametrize("mt, over, regime, opts, s, act_tol, peak_tol", [
    # formulas/recurrent.vram act_ssm1: what a Mamba layer's torch path saves for backward (the recurrent
    # loop's state per position), derived from live-tensor traces (fp32, bf16, bf16 autocast; b = 1 and 2);
    # the backward's peak (ssm1_bwd_moment: four full-size gradients of the discretised A and B)
    ("mamba", MAMBA_SMALL, "train", {"precision": "fp32"}, 37, 1, 1),
    ("mamba", dict(MAMBA_SMALL, num_hidden_layers=1), "train", {"precision": "bf16"}, 37, 1, 1),
    ("mamba", MAMBA_SMALL, "train", {"precision": "mixed_bf16"}, 37, 1, 2),
    # full checkpointing: the peak is the lowest layer's backward beside the gradients of the layer above
    # (ssm_backward_last: -0.52%)
    ("mamba", MAMBA_SMALL, "train", {"precision": "bf16", "checkpointing": "full"}, 37, 1, 6),
    # Falcon-Mamba's weightless dt / B / C norms, Jamba's weighted ones (ssm1_bc_saved)
    ("falcon_mamba", dict(MAMBA_SMALL, hidden_size=64, vocab_size=128), "train", {"precision": "bf16"}, 40, 1, 1),
    # Jamba: a MoE layer (attention) above the last Mamba layer's dense MLP (rec_above_done by block kind)
    ("jamba", JAMBA_SMALL, "train", {"precision": "fp32"}, 64, 1, 1),
    ("jamba", dict(JAMBA_SMALL, num_hidden_layers=4, attn_layer_period=4), "train", {"precision": "mixed_bf16"}, 64, 1, 1),
    # LoRA (refused before): the frozen mixer saves less (ssm1_frozen_less, ssm1_frozen_released); on q and v
    # the Mamba layer below the first attention layer runs without autograd, the two above it frozen;
    # all-linear adapts in_proj, x_proj and out_proj (lora_ssm_inputs), and dt_proj's adapter, whose module
    # forward never runs, has no gradient or optimizer state (P_lora_idle)
    ("jamba", JAMBA_LORA, "lora", {"precision": "bf16", "lora_targets": "qv"}, 37, 1, 1),
    ("jamba", JAMBA_LORA, "lora", {"precision": "fp32", "lora_targets": "qv"}, 37, 1, 1),
    ("jamba", JAMBA_LORA, "lora", {"precision": "bf16", "lora_targets": "all_linear"}, 37, 1, 5),
])
def test_mamba_training_against_a_measurement(tmp_path, mt, over, regime, opts, s, act_tol, peak_tol):
    """Mamba (v1) layers in training: pure Mamba, Falcon-Mamba and Jamba (before: refused). Tolerances
    in thousandths, of the activations saved at the end of forward and of the peak."""
    _against_a_measurement(tmp_path, mt, over, regime, opts, s, act_tol, peak_tol)


def test_partial_checkpointing_of_a_hybrid_of_several_kinds_is_refused(tmp_path):
    """Which kinds the checkpointed bottom layers are is not modelled (seed 15 case 33: +5.8% as the mean
    layer): refused with a sentence; all layers checkpointed, or a pure Mamba2, answer."""
    with pytest.raises(vramsym.InputError) as e:
        vramsym.estimate(_write(tmp_path, "nemotron_h"), "train", {"checkpointing": "full"},
                         inputs={"batch": 1, "seq": 64, "checkpoint_ratio": 0.5})
    assert "partial checkpointing of a hybrid" in str(e.value)
    assert vramsym.estimate(_write(tmp_path, "nemotron_h"), "train", {"checkpointing": "full"},
                            inputs={"batch": 1, "seq": 64}).total_bytes > 0
    assert vramsym.estimate(_write(tmp_path, "mamba2"), "train", {"checkpointing": "full"},
                            inputs={"batch": 1, "seq": 64, "checkpoint_ratio": 0.5}).total_bytes > 0
