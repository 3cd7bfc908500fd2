"""Building the Hugging Face model to measure: its config, the attention kernel, LoRA with
peft, meta weights made fake (FakeTensorMode) and the patches transformers needs for that.

Part of the measurement backend (vramsym.measure.torch_backend); torch and transformers are
imported at the top (only the gate in vramsym.measure.compare imports these modules); peft,
bitsandbytes and the parts of transformers that only some versions have, where they are used."""
from __future__ import annotations

import contextlib
import inspect
import tempfile
from typing import Any

import torch
import torch.nn.functional as F
import transformers
from torch import nn
from torch._guards import active_fake_mode

from ..catalog.models import family_like
from ..errors import InputError

try:            # parts of transformers only some versions have
    import transformers.masking_utils as masking_utils
except ImportError:  # pragma: no cover
    masking_utils = None
try:
    from transformers.modeling_layers import GradientCheckpointingLayer
except ImportError:  # pragma: no cover
    GradientCheckpointingLayer = ()


#: config keys whose presence (with a value > 1) marks a mixture-of-experts model.
MOE_KEYS = ("num_local_experts", "num_experts", "n_routed_experts", "moe_num_experts")


def _is_moe(config: dict) -> bool:
    """The model routes tokens to experts: its config, or the text model's (``text_config`` of a
    multimodal or wrapped config: Qwen3.5-MoE, Llama 4), names more than one expert (MOE_KEYS)."""
    for cfg in (config, config.get("text_config")):
        if isinstance(cfg, dict) and any(isinstance(cfg.get(k), int) and cfg.get(k) > 1 for k in MOE_KEYS):
            return True
    return False


def _dtype(name: str):
    return {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16,
            "mixed_bf16": torch.float32}[name]


def _build_hf_config(config: dict, training: bool = False):
    """The transformers config of ``config`` (a config.json dict with its model_type). ``training``:
    without a KV cache, as Trainer trains (Trainer.__init__ sets config.use_cache =
    TrainingArguments.use_cache, False by default); with the config's use_cache a causal LM builds a
    DynamicCache in training too, whose copies of the keys and values a fused-qkv model keeps beside
    the projection's output."""
    cfg = dict(config)
    model_type = cfg.pop("model_type", None)
    if model_type is None:
        raise ValueError("config dict needs a 'model_type' key (e.g. 'llama', 'gpt2')")
    for k in ("torch_dtype", "dtype", "architectures", "transformers_version"):
        cfg.pop(k, None)
    if model_type not in transformers.CONFIG_MAPPING and family_like(model_type) in transformers.CONFIG_MAPPING:
        # a checkpoint that ships another family's modeling file under its own model_type (auto_map)
        model_type = family_like(model_type)
    hf_cfg = transformers.AutoConfig.for_model(model_type, **cfg)
    pad, vocab = getattr(hf_cfg, "pad_token_id", None), getattr(hf_cfg, "vocab_size", None)
    if isinstance(pad, int) and isinstance(vocab, int) and not 0 <= pad < vocab:
        # nn.Embedding(vocab_size, hidden_size, padding_idx) asserts, so the model cannot be built
        raise InputError(f"pad_token_id {pad} is outside the vocabulary (vocab_size {vocab}): transformers "
                         f"cannot build the model's embedding (nn.Embedding's padding_idx must be below "
                         f"vocab_size); set pad_token_id to null or to a token id below {vocab}")
    if training:
        hf_cfg.use_cache = False
    return hf_cfg


def _from_config(hf_cfg, dtype, attention: str):
    try:
        return transformers.AutoModelForCausalLM.from_config(
            hf_cfg, dtype=dtype, attn_implementation=attention)
    except TypeError:  # transformers < 4.56 spells it torch_dtype
        return transformers.AutoModelForCausalLM.from_config(
            hf_cfg, torch_dtype=dtype, attn_implementation=attention)


@contextlib.contextmanager
def _hf_fake_patches(active: bool):
    """Make transformers take the same code paths under FakeTensorMode as on real tensors.

    transformers' ``find_packed_sequence_indices`` (called in training, when there is no cache and no
    attention mask) cannot read a fake tensor's values, so under FakeTensorMode it reports a "packed"
    batch; the model then materialises a full ``b x 1 x s x s`` causal mask and SDPA loses its
    ``is_causal`` / GQA fast path (extra mask + ``repeat_kv`` copies that a real run does not have).
    Our inputs are never packed, so answer ``None`` as a real run does.
    """
    if not active:
        yield
        return
    mu = masking_utils
    orig = getattr(mu, "find_packed_sequence_indices", None)
    if orig is None:  # pragma: no cover
        yield
        return
    mu.find_packed_sequence_indices = lambda position_ids: None
    try:
        yield
    finally:
        mu.find_packed_sequence_indices = orig


class _GroupedMM(torch.autograd.Function):
    """grouped_mm as ATen's autograd runs it (tools/autograd/derivatives.yaml _grouped_mm): mat_a is saved
    only when mat_b needs a gradient (frozen experts, LoRA, save no input), and only the gradients asked
    for are made; the products are transformers' fallback operators, which FakeTensorMode can trace."""

    @staticmethod
    def forward(ctx, a, b, offs):
        ctx.save_for_backward(a if ctx.needs_input_grad[1] else None, b, offs)
        return torch.ops.transformers.grouped_mm_fallback(a, b, offs)

    @staticmethod
    def backward(ctx, grad):
        a, b, offs = ctx.saved_tensors
        grad_a = grad_b = None
        if ctx.needs_input_grad[1]:       # both gradients in one call, as ATen makes them
            grad_a, grad_b = torch.ops.transformers.grouped_mm_fallback_backward(a, b, offs, grad)
            grad_a = grad_a if ctx.needs_input_grad[0] else None
        elif ctx.needs_input_grad[0]:
            grad_a = torch.ops.transformers.grouped_mm_fallback(grad, b.transpose(-2, -1), offs)
        return grad_a, grad_b, None


def _sdpa_signature(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    """F.scaled_dot_product_attention's parameters (a builtin: inspect cannot read its signature)."""


_SDPA_ARGS = inspect.signature(_sdpa_signature)


@contextlib.contextmanager
def _cuda_kernel_patches():
    """Run dropout the way the CUDA kernels that users train on run it.

    * ``F.dropout`` in training: CUDA dispatches to the fused ``native_dropout``, which saves a
      bool mask (1 byte per element); the CPU's composite path instead saves a noise tensor in
      the input's dtype (2-4 bytes).  We call ``torch.native_dropout`` (it has a CPU kernel too).
    * ``F.scaled_dot_product_attention`` with ``dropout_p > 0``: the CUDA flash and
      memory-efficient kernels apply dropout inside the kernel and save only the Philox seed and
      offset; on the CPU a non-zero dropout makes SDPA fall back to the math kernel, which
      materialises the b x n x s x s scores.  We pass ``dropout_p=0`` (same saved tensors as CUDA).
    * ``F.scaled_dot_product_attention`` with a boolean ``attn_mask`` (a sliding-window layer once
      s >= W): both devices turn it into an additive mask of the mask's broadcast shape in the
      query's dtype (aten attention.cpp convert_boolean_attn_mask: at::where), but CUDA's
      memory-efficient kernel, the one a mask selects, then pads its last dimension to a multiple
      of 8 when a stride is not one (preprocess_mask / pad_bias<8>: a second, padded copy, and the
      unpadded one is freed), and its backward keeps the padded copy; the CPU flash kernel takes
      the mask as it is.  We do the conversion and the padding here, as CUDA does.
    * ``F.grouped_mm`` (transformers 5.x runs every routed expert through it) in fp32 or fp16:
      CUDA runs it eagerly through ATen's loop of matmuls into one (S, out) output (pytorch
      PR #162059), saving both operands for backward, but the meta kernel that FakeTensorMode
      uses accepts bf16 only.  We route those dtypes through :class:`_GroupedMM`: transformers' own
      ``transformers::grouped_mm_fallback`` operators (integrations/moe.py, which have fake kernels) for
      the products, with ATen's saved tensors (the input only when the experts are trained), so a
      full-size MoE model in fp32 traces without real weights.
    """

    orig_dropout, orig_sdpa = F.dropout, F.scaled_dot_product_attention
    orig_grouped = getattr(F, "grouped_mm", None)

    def dropout(input, p=0.5, training=True, inplace=False):
        if not training or p == 0.0:
            return input
        if p == 1.0:
            return orig_dropout(input, p, training, inplace)
        return torch.native_dropout(input, p, True)[0]

    def cuda_mask(mask, query):
        if mask is None or mask.dtype != torch.bool:
            return mask
        neg_inf = torch.full((), float("-inf"), dtype=query.dtype, device=query.device)
        mask = torch.where(mask, 0.0, neg_inf)
        n = mask.shape[-1]
        if mask.stride(-1) != 1 or any(st % 8 for st in mask.stride()[:-1]):
            mask = F.pad(mask, (0, 8 - n % 8))[..., :n]
        return mask

    def sdpa(*args, **kwargs):
        if len(args) > 4:
            args = args[:4] + (0.0,) + args[5:]
        elif "dropout_p" in kwargs:
            kwargs["dropout_p"] = 0.0
        if len(args) > 3:
            args = args[:3] + (cuda_mask(args[3], args[0]),) + args[4:]
        elif "attn_mask" in kwargs:
            kwargs["attn_mask"] = cuda_mask(kwargs["attn_mask"], args[0] if args else kwargs["query"])
        a = _SDPA_ARGS.bind(*args, **kwargs)
        a.apply_defaults()
        a = a.arguments
        q, k, v = a["query"], a["key"], a["value"]
        if (active_fake_mode() is not None and q.size(-1) == k.size(-1) != v.size(-1) and q.size(-3) == k.size(-3) == v.size(-3)
                and not a.get("enable_gqa") and a["dropout_p"] == 0.0):
            # keys wider than values (multi-head latent attention: q/k 192, v 128): CUDA's flash
            # kernel refuses the unequal head dimensions and the memory-efficient one takes them
            # (sdp_utils.cpp check_head_dim_size_flash / _mem_efficient), saving the output and an
            # fp32 logsumexp, while the CPU's flash kernel refuses too and the math path would
            # materialize the b x n x s x s scores in fp32. (Traced under FakeTensorMode only: the
            # memory-efficient kernel has no CPU implementation, and a real CPU run keeps the math path.)
            return torch.ops.aten._scaled_dot_product_efficient_attention(
                q, k, v, a["attn_mask"], torch.is_grad_enabled() and any(t.requires_grad for t in (q, k, v)),
                0.0, bool(a["is_causal"]), scale=a["scale"])[0]
        return orig_sdpa(*args, **kwargs)

    def grouped_mm(mat_a, mat_b, *, offs=None, bias=None, out_dtype=None):
        if (mat_a.dtype != torch.bfloat16 and mat_a.dim() == 2 and mat_b.dim() == 3
                and offs is not None and bias is None and out_dtype in (None, mat_a.dtype)
                and hasattr(torch.ops.transformers, "grouped_mm_fallback")):
            return _GroupedMM.apply(mat_a, mat_b, offs)
        return orig_grouped(mat_a, mat_b, offs=offs, bias=bias, out_dtype=out_dtype)

    F.dropout, F.scaled_dot_product_attention = dropout, sdpa
    if orig_grouped is not None:
        F.grouped_mm = grouped_mm
    try:
        yield
    finally:
        F.dropout, F.scaled_dot_product_attention = orig_dropout, orig_sdpa
        if orig_grouped is not None:
            F.grouped_mm = orig_grouped


def _cache_kwarg(model) -> str:
    """transformers >= 5.x calls the cache argument ``cache``; older versions ``past_key_values``."""
    try:
        params = inspect.signature(model.forward).parameters
    except (TypeError, ValueError):  # pragma: no cover
        return "past_key_values"
    return "cache" if "cache" in params else "past_key_values"


def _out_cache(out):
    """The cache returned by a forward (``out.cache`` in transformers 5.x, ``past_key_values`` before)."""
    keys = out.keys() if hasattr(out, "keys") else ()
    for k in ("cache", "past_key_values"):
        if k in keys:
            return out[k]
    return None


def _peft():
    """The gate of peft (LoRA and QLoRA only; tests/test_imports.py GATES)."""
    import peft
    return peft


def _apply_lora(model, lora: dict):
    peft = _peft()

    target = lora.get("target_modules", ["q_proj", "v_proj"])
    kwargs = dict(r=int(lora.get("r", 8)),
                  lora_alpha=lora.get("alpha", lora.get("lora_alpha", 16)),
                  lora_dropout=float(lora.get("dropout", lora.get("lora_dropout", 0.0))),
                  target_modules=target,
                  task_type="CAUSAL_LM")
    return peft.get_peft_model(model, peft.LoraConfig(**kwargs))


def _materialize_meta_as_fake(model) -> None:
    """Replace every meta tensor of ``model`` (parameters, buffers, plain tensor attributes) by an
    empty CPU tensor of the same shape/dtype; called under FakeTensorMode, so these are fake.
    Tied parameters stay tied."""

    memo: dict[int, Any] = {}

    def conv(t):
        new = memo.get(id(t))
        if new is None:
            new = torch.empty(t.shape, dtype=t.dtype, device="cpu")
            if isinstance(t, nn.Parameter):
                new = nn.Parameter(new, requires_grad=t.requires_grad)
            memo[id(t)] = new
        return new

    for mod in model.modules():
        for name, p in list(mod._parameters.items()):
            if p is not None and p.device.type == "meta":
                mod._parameters[name] = conv(p)
        for name, buf in list(mod._buffers.items()):
            if buf is not None and buf.device.type == "meta":
                mod._buffers[name] = conv(buf)
        for name, val in list(vars(mod).items()):
            if isinstance(val, torch.Tensor) and not isinstance(val, nn.Parameter) \
                    and val.device.type == "meta":
                setattr(mod, name, conv(val))


def _build_model(hf_cfg, dtype, attention: str, *, lora: dict | None, checkpointing: bool,
                 checkpoint_layers: int | None = None):
    """Build the (optionally LoRA-wrapped) model.  Under FakeTensorMode it is built on the meta
    device first (fast, and peft skips its ``.to()`` moves there: ``Module.to`` on fake parameters
    fails in torch 2.13 because ``swap_tensors`` refuses tensors with weakrefs) and then every
    tensor is replaced by a fake CPU tensor.  ``checkpoint_layers``: with checkpointing, only the
    bottom k decoder layers are checkpointed (partial checkpointing); None: all of them."""

    fake = active_fake_mode() is not None
    torch.manual_seed(0)
    if fake:
        with torch.device("meta"):
            model = _from_config(hf_cfg, dtype, attention)
    else:
        model = _from_config(hf_cfg, dtype, attention)
    if checkpointing:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        if checkpoint_layers is not None:
            layers = [m for m in model.modules() if isinstance(m, GradientCheckpointingLayer)]
            for layer in layers[checkpoint_layers:]:
                layer.gradient_checkpointing = False
    if lora:
        if fake:
            with torch.device("meta"):
                model = _apply_lora(model, lora)
        else:
            model = _apply_lora(model, lora)
    if fake:
        _materialize_meta_as_fake(model)
    return model


def _bnb_config(quant: str):
    """transformers' BitsAndBytesConfig for QLoRA: NF4 (``nf4``) or NF4 with double quantization
    (``nf4_dq``), computing in bf16, as Dettmers et al.'s qlora.py and the peft / transformers docs load it."""

    if quant not in ("nf4", "nf4_dq"):
        raise ValueError(f"quantized training measures nf4 or nf4_dq (bitsandbytes), not {quant!r}")
    return transformers.BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4",
                                           bnb_4bit_use_double_quant=quant == "nf4_dq",
                                           bnb_4bit_compute_dtype=torch.bfloat16)


def _build_qlora_model(hf_cfg, attention: str, *, quant: str, lora: dict | None, checkpointing: bool,
                       prepare: bool, checkpoint_layers: int | None = None):
    """A QLoRA model the way users load one: random bf16 weights (seed 0) saved to a temporary
    checkpoint, loaded with ``from_pretrained(quantization_config=BitsAndBytesConfig(load_in_4bit=True,
    ...))`` on the CPU (bitsandbytes quantizes every nn.Linear but the LM head to Params4bit), then
    ``peft.prepare_model_for_kbit_training`` (``prepare``: freezes everything and casts the parameters
    that are not 4-bit to fp32; with ``checkpointing`` it enables gradient checkpointing, non-reentrant
    as the rest of this harness) and LoRA.  Real CPU tensors only: bitsandbytes' kernels read the
    values (no FakeTensorMode)."""

    torch.manual_seed(0)
    base = _from_config(hf_cfg, torch.bfloat16, attention)
    with tempfile.TemporaryDirectory() as tmp:
        base.save_pretrained(tmp)
        del base
        model = transformers.AutoModelForCausalLM.from_pretrained(
            tmp, quantization_config=_bnb_config(quant), dtype=torch.bfloat16, device_map="cpu",
            attn_implementation=attention)
    gc_kwargs = {"use_reentrant": False}
    if prepare:
        model = _peft().prepare_model_for_kbit_training(model, use_gradient_checkpointing=checkpointing,
                                                     gradient_checkpointing_kwargs=gc_kwargs)
    elif checkpointing:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs=gc_kwargs)
    if checkpointing and checkpoint_layers is not None:
        layers = [m for m in model.modules() if isinstance(m, GradientCheckpointingLayer)]
        for layer in layers[checkpoint_layers:]:
            layer.gradient_checkpointing = False
    if lora:
        model = _apply_lora(model, lora)
    return model


def _quant_state_tensors(param) -> list:
    """The tensors a bitsandbytes Params4bit keeps beside its packed uint8 data (its QuantState:
    absmax, the NF4 code, and with double quantization the offset and the second-level absmax and
    code).  They are plain attributes, neither parameters nor buffers."""
    qs = getattr(param, "quant_state", None)
    out = []
    while qs is not None:
        for name in ("absmax", "code", "offset"):
            t = getattr(qs, name, None)
            if t is not None and hasattr(t, "untyped_storage"):
                out.append(t)
        qs = getattr(qs, "state2", None) if getattr(qs, "nested", False) else None
    return out


def _param_counts(model) -> tuple[int, int, dict]:
    total = trainable = 0
    by_dtype: dict[str, int] = {}
    for p in model.parameters():
        total += p.numel()
        if p.requires_grad:
            trainable += p.numel()
        key = str(p.dtype).replace("torch.", "")
        by_dtype[key] = by_dtype.get(key, 0) + p.numel() * p.element_size()
    return total, trainable, by_dtype
