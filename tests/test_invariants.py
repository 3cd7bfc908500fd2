"""Invariants of the whole formula library over the catalog and random inputs (hypothesis).

Each property is one the field relies on; a formula change that breaks one fails here.
"""
from functools import lru_cache

from hypothesis import given, reject, settings, strategies as st, HealthCheck

import vramsym
from vramsym.catalog.models import catalog

MODELS = sorted(catalog())
SETTINGS = settings(max_examples=40, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])

models = st.sampled_from(MODELS)
batches = st.integers(1, 64)
seqs = st.integers(1, 32768)
ranks = st.sampled_from([1, 2, 4, 8, 16, 32, 64, 128])


@lru_cache(maxsize=None)
def _model(name):
    return vramsym.load_model(name)


@lru_cache(maxsize=None)
def _compiled(name, regime, options):
    """The regime as users run it: compiled once per option set (and cached), evaluated per model."""
    return vramsym.compile(_model(name), regime, dict(options))


def _estimate(name, regime, inputs, **options):
    """The estimate; a (model, regime) pair that vramsym refuses (Gemma 4's activations, a hybrid's
    training) is no example of an invariant: hypothesis draws another (tests/test_hostile.py and
    docs/architectures.md check the refusals themselves)."""
    try:
        return _compiled(name, regime, tuple(sorted(options.items()))).evaluate(dict(inputs))
    except vramsym.errors.NotModelled:
        reject()


def total(name, regime, inputs, **options):
    return _estimate(name, regime, inputs, **options).exact_total


def comp(name, regime, component, inputs, **options):
    return next(x.exact for x in _estimate(name, regime, inputs, **options).all_components if x.name == component)


@SETTINGS
@given(models, batches, seqs, ranks)
def test_qlora_below_lora_below_full(name, b, s, r):
    """At the same precision (adapters in the base's dtype) and a rank small against the width
    (r <= h/16). At larger ranks the adapters' own saved activations (r per token per adapted
    linear) can outweigh the optimizer states LoRA saves once activations dominate: GPT-2 at
    r = 128 with 31k tokens is above full fine-tuning, and vramsym says so; so is GPT-2 at r = 32
    with 153k tokens in a step (b = 53, s = 2884), where the activations hide full fine-tuning's
    gradients and step temporaries (peak = static + max(activations, gradients + step)) and only
    its optimizer states (0.5 GB) remain against the adapters' activations (about 1.9 GB). So the
    invariant is stated for steps of at most 16k tokens."""
    from hypothesis import assume
    h = _model(name).config.get("hidden_size") or _model(name).config.get("n_embd")
    assume(r * 16 <= h)
    assume(b * s <= 16384)
    ins = {"batch": b, "seq": s}
    full = total(name, "train", ins, precision="bf16")
    lora = total(name, "lora", dict(ins, lora_rank=r), precision="bf16", lora_dtype="base")
    qlora = total(name, "qlora", dict(ins, lora_rank=r), precision="bf16", lora_dtype="base")
    assert qlora < lora < full


def test_fp32_adapters_can_exceed_full_bf16_at_many_tokens():
    """peft's default fp32 adapters make each adapted linear save an fp32 copy of its input
    (measured), so all-linear LoRA on a bf16 base can pass pure-bf16 full fine-tuning once
    activations dominate. vramsym shows it instead of assuming LoRA is always smaller."""
    ins = {"batch": 64, "seq": 4096}
    assert total("llama-3.1-8b", "lora", ins, precision="bf16", lora_targets="all_linear") > \
        total("llama-3.1-8b", "train", ins, precision="bf16")
    small = {"batch": 1, "seq": 512}
    assert total("llama-3.1-8b", "lora", small, precision="bf16") < total("llama-3.1-8b", "train", small, precision="bf16")


@SETTINGS
@given(models, batches, seqs)
def test_pure_bf16_below_fp32_training(name, b, s):
    ins = {"batch": b, "seq": s}
    assert total(name, "train", ins, precision="bf16") < total(name, "train", ins, precision="fp32")


@SETTINGS
@given(models, batches, seqs)
def test_mixed_precision_wins_only_when_activations_dominate(name, b, s):
    """Autocast keeps fp32 weights, grads and states plus 16-bit weight copies: it is above fp32
    exactly when the copies outweigh the activations it halves."""
    ins = {"batch": b, "seq": s}
    mixed = total(name, "train", ins, precision="mixed_bf16")
    fp32 = total(name, "train", ins, precision="fp32")
    copies = comp(name, "train", "autocast_copies", ins, precision="mixed_bf16")
    if mixed < fp32:
        assert copies > 0  # it wins despite the copies: activations dominate
        act_saving = comp(name, "train", "activations", ins, precision="fp32") - comp(name, "train", "activations", ins, precision="mixed_bf16")
        assert act_saving > 0


@SETTINGS
@given(models, st.sampled_from(["inference", "train", "lora", "qlora"]), batches, seqs)
def test_non_decreasing_in_batch_and_sequence(name, regime, b, s):
    """Non-decreasing in the batch; in the sequence from one multiple of 8 to the next. Between them it is
    not: with a sliding window at s >= W, CUDA's memory-efficient SDPA pads a mask whose key count is not
    a multiple of 8 into a copy (formulas/inference.vram s_mask, measured), so s = 8k - 1 can need more
    than s = 8k (Gemma-3-1B, batch 17: 15,447 tokens 28.35 GB, 15,448 tokens 23.09 GB)."""
    base = total(name, regime, {"batch": b, "seq": s})
    assert total(name, regime, {"batch": b + 1, "seq": s}) >= base
    s8 = -(-s // 8) * 8
    assert total(name, regime, {"batch": b, "seq": s8 + 8}) >= total(name, regime, {"batch": b, "seq": s8})


@SETTINGS
@given(models, batches, seqs)
def test_gqa_kv_not_above_mha(name, b, s):
    m = _model(name)
    gqa = comp(name, "inference", "kv_cache", {"batch": b, "seq": s})
    mha = _estimate(name, "inference", {"batch": b, "seq": s, "n_kv": m.config.get("num_attention_heads") or m.config.get("n_head")})
    assert gqa <= next(x.exact for x in mha.all_components if x.name == "kv_cache")


@SETTINGS
@given(models, st.sampled_from(["inference", "train", "lora"]), batches, seqs)
def test_flash_not_above_eager(name, regime, b, s):
    """SDPA never needs more than eager attention, except for a fused qkv_proj with rotary
    positions (Phi-3) at short sequences: there SDPA keeps the fused projection's whole output
    alive (v is a view of it) and a copy of its output for o_proj, (2 n_q + n_kv) d_h per token
    and layer that eager does not save (measured, formulas/activations.vram act_attn_fused),
    while eager's n_q s scores per token only outgrow it past a few hundred tokens. Nor for a
    model whose SDPA call runs the math kernel (Falcon with multi_query, sdpa_kv_bcast): that
    keeps fp32 scores and probabilities, where Falcon's own eager path keeps them in bf16. Nor
    at a few tokens, where eager saves fewer bytes per token than the fused kernels."""
    from hypothesis import assume
    cfg = _model(name).config
    assume(not (cfg.get("arch_fused_qkv") and cfg.get("arch_positions") == "rotary") or s >= 1024)
    assume(not cfg.get("arch_sdpa_kv_bcast"))
    # at a few tokens SDPA's d_h-wide saved tensors (q, k, v, output, the fp32 logsumexp) exceed eager's
    # n_q s scores per token (GPT-2 LoRA at s = 8: 1,104 B per token and layer more)
    assume(s >= 64)
    ins = {"batch": b, "seq": s}
    assert total(name, regime, ins, attention="sdpa") <= total(name, regime, ins, attention="eager")


@SETTINGS
@given(models, st.sampled_from(["train", "lora"]), st.sampled_from(["sdpa", "eager"]), batches, seqs)
def test_checkpointing_not_above_none(name, regime, attention, b, s):
    ins = {"batch": b, "seq": s}
    none = total(name, regime, ins, checkpointing="none", attention=attention)
    assert total(name, regime, ins, checkpointing="full", attention=attention) <= none
    assert total(name, regime, ins, checkpointing="selective", attention=attention) <= none


@SETTINGS
@given(models)
def test_weight_formats_ordered(name):
    ins = {"batch": 1, "seq": 1}
    w = {q: comp(name, "inference", "weights", ins, quant=q) for q in ("int4", "int8", "none")}
    assert w["int4"] < w["int8"] < w["none"]
    assert comp(name, "inference", "weights", ins, quant="nf4_dq") < comp(name, "inference", "weights", ins, quant="nf4")


@SETTINGS
@given(models, batches, seqs)
def test_fp8_kv_not_above_bf16(name, b, s):
    ins = {"batch": b, "seq": s}
    assert comp(name, "inference", "kv_cache", ins, kv_dtype="fp8") <= comp(name, "inference", "kv_cache", ins, kv_dtype="bf16")


@SETTINGS
@given(models, batches, seqs)
def test_inference_below_training(name, b, s):
    ins = {"batch": b, "seq": s}
    assert total(name, "inference", ins, overhead="none") < total(name, "train", ins)
