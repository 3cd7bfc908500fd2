"""Measurement backend: run a Hugging Face model under PyTorch's ``MemTracker``.

This module is an *optional* backend.  It imports torch / transformers / peft only
inside its functions, and the core ``vramsym`` package must never import it at
module level (only lazily, from a ``measure`` command).

The accounting is PyTorch's own ``torch.distributed._tools.mem_tracker.MemTracker``
(a ``TorchDispatchMode`` that follows every tensor storage and labels it
Parameter / Buffer / Gradient / Activation / Temp / Optstate / Other).  By default
the model is built and run inside ``FakeTensorMode``: no real memory is allocated,
so real-size configs (e.g. Llama-3.1-8B) can be traced on a laptop CPU in seconds,
and the byte counts agree exactly with real CPU runs (see tests).

What is *not* counted (these are byte counts of live tensor storages):
  * CUDA context, cuBLAS/cuDNN workspaces, NCCL buffers;
  * caching-allocator fragmentation and the 512-byte rounding of CUDA blocks
    (MemTracker applies that rounding only to CUDA tensors; fake CUDA tensors do
    not work in a CPU-only torch build, so everything here is measured as CPU);
  * kernel-internal scratch memory that is not a tensor.
Also note: with ``precision="mixed_bf16"`` the CPU autocast policy is used (its
lower-precision op list matches CUDA's for linear/matmul), and SDPA dispatches to
the CPU flash kernel (which saves a logsumexp of ``b*heads*s`` fp32, like CUDA's
flash / memory-efficient kernels).
"""

from __future__ import annotations

import contextlib
from typing import Any, Callable

__all__ = ["measure", "MOE_KEYS"]

#: config keys whose presence (with a value > 1) marks a mixture-of-experts model.
MOE_KEYS = ("num_local_experts", "num_experts", "n_routed_experts", "moe_num_experts")

_MOE_REAL_LIMIT_BYTES = 2 * 2**30  # refuse real (non-fake) runs whose weights exceed this

_CATEGORY_NAMES = {
    "Parameter": "parameters",
    "Buffer": "buffers",
    "Gradient": "gradients",
    "Activation": "activations",
    "Temp": "temporaries",
    "Optstate": "optimizer_states",
    "Other": "other",
}

_TRAIN_PRECISIONS = ("fp32", "mixed_bf16", "bf16")
_INFER_PRECISIONS = ("fp32", "bf16", "fp16")
_OPTIMIZERS = ("adamw", "adamw_fused", "sgd", "sgd_momentum")


# ----------------------------------------------------------------------------
# helpers
# ----------------------------------------------------------------------------

def _is_moe(config: dict) -> bool:
    for k in MOE_KEYS:
        v = config.get(k)
        if isinstance(v, int) and v > 1:
            return True
    return False


def _dtype(name: str):
    import torch

    return {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16,
            "mixed_bf16": torch.float32}[name]


def _storage_bytes(tensors) -> int:
    """Bytes of the distinct storages behind ``tensors``."""
    seen = {}
    for t in tensors:
        if t is None:
            continue
        st = t.untyped_storage()
        seen[id(st)] = st.nbytes()
    return sum(seen.values())


def _cache_tensors(cache) -> list:
    """Key/value tensors held by a transformers Cache (DynamicCache, ...) or legacy tuples."""
    out = []
    if cache is None:
        return out
    layers = getattr(cache, "layers", None)
    if layers is not None:  # transformers >= 4.56 / 5.x
        for layer in layers:
            for name in ("keys", "values"):
                t = getattr(layer, name, None)
                if t is not None and hasattr(t, "untyped_storage"):
                    out.append(t)
        return out
    if hasattr(cache, "key_cache"):  # older DynamicCache
        return [t for t in list(cache.key_cache) + list(cache.value_cache) if t is not None]
    for item in cache:  # legacy tuple of tuples
        for t in item:
            if hasattr(t, "untyped_storage"):
                out.append(t)
    return out


def _build_hf_config(config: dict):
    import transformers

    cfg = dict(config)
    model_type = cfg.pop("model_type", None)
    if model_type is None:
        raise ValueError("config dict needs a 'model_type' key (e.g. 'llama', 'gpt2')")
    for k in ("torch_dtype", "dtype", "architectures", "transformers_version"):
        cfg.pop(k, None)
    hf_cfg = transformers.AutoConfig.for_model(model_type, **cfg)
    return hf_cfg


def _from_config(hf_cfg, dtype, attention: str):
    import transformers

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
    try:
        import transformers.masking_utils as mu
    except ImportError:  # pragma: no cover
        yield
        return
    orig = getattr(mu, "find_packed_sequence_indices", None)
    if orig is None:  # pragma: no cover
        yield
        return
    mu.find_packed_sequence_indices = lambda position_ids: None
    try:
        yield
    finally:
        mu.find_packed_sequence_indices = orig


def _cache_kwarg(model) -> str:
    """transformers >= 5.x calls the cache argument ``cache``; older versions ``past_key_values``."""
    import inspect

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


def _make_tracker_class():
    from torch.distributed._tools.mem_tracker import MemTracker

    class _PhaseTracker(MemTracker):
        """MemTracker whose peak can be reset per phase, recording an extra probe at each new peak."""

        probe: Callable[[], Any] | None = None
        peak_probe: Any = None

        def reset_peak(self) -> None:
            self._peak_mem_snap = self.get_tracker_snapshot()
            self._peak_mem = {d: s["Total"] for d, s in self._peak_mem_snap.items()}
            self.peak_probe = self.probe() if self.probe else None

        def _track_module_params_and_buffers(self, module, install_grad_hooks: bool = True):
            # Same as MemTracker's, but only hooks parameters that require grad: the stock version
            # calls register_hook on frozen parameters too (LoRA base weights) and raises.
            from torch.distributed._tools.mem_tracker import _MemRefType

            def _grad_hook(grad) -> None:
                self._update_and_maybe_create_winfos(grad, _MemRefType.GRAD)

            param_memory = 0
            for param in module.parameters():
                winfos = self._update_and_maybe_create_winfos(param, _MemRefType.PARAM)
                param_memory += sum(w.mem_consumed for w in winfos)
                if param.grad is not None:
                    self._update_and_maybe_create_winfos(param.grad, _MemRefType.GRAD)
                if (install_grad_hooks and param.requires_grad
                        and self._param_to_grad_hook_handles.get(param, None) is None):
                    self._param_to_grad_hook_handles[param] = (
                        param.register_hook(_grad_hook),
                        param.register_post_accumulate_grad_hook(lambda p: _grad_hook(p.grad)),
                    )
            buffer_memory = 0
            for buffer in module.buffers():
                winfos = self._update_and_maybe_create_winfos(buffer, _MemRefType.BUFFER)
                buffer_memory += sum(w.mem_consumed for w in winfos)
            return param_memory, buffer_memory

        def _update_peak_stats(self, peak_state) -> None:
            # Global peak only: the stock method also walks every tracked module on every op to
            # keep module-wise peaks (unused here), which makes an 8B trace several times slower.
            changed = False
            for dev, dev_snap in self._curr_mem_snap.items():
                if self._peak_mem.get(dev, 0) < dev_snap["Total"]:
                    self._peak_mem[dev] = dev_snap["Total"]
                    self._peak_mem_snap[dev] = dict(dev_snap)
                    changed = True
            if changed and self.probe is not None:
                self.peak_probe = self.probe()

    return _PhaseTracker


def _flatten_snapshot(snap: dict) -> dict:
    """MemTracker snapshot {device: {RefType: bytes, 'Total': bytes}} -> {category: bytes} summed over devices."""
    out = {v: 0 for v in _CATEGORY_NAMES.values()}
    total = 0
    for dev_snap in snap.values():
        for k, v in dev_snap.items():
            key = getattr(k, "value", k)
            if key == "Total":
                total += int(v)
            else:
                name = _CATEGORY_NAMES.get(key, str(key).lower())
                out[name] = out.get(name, 0) + int(v)
    out["total"] = total
    return out


class _Phases:
    """Runs named phases under a tracker and records each phase's peak."""

    def __init__(self, tracker):
        self.mt = tracker
        self.per_phase: dict[str, dict] = {}

    @contextlib.contextmanager
    def phase(self, name: str):
        self.mt.reset_peak()
        yield
        snap = _flatten_snapshot(self.mt.get_tracker_snapshot("peak"))
        end = _flatten_snapshot(self.mt.get_tracker_snapshot("current"))
        rec = {"peak_bytes": snap.pop("total"), "categories": snap,
               "end_bytes": end.pop("total"), "end_categories": end}
        if self.mt.probe is not None:
            rec["probe"] = self.mt.peak_probe
        old = self.per_phase.get(name)
        if old is None or rec["peak_bytes"] > old["peak_bytes"]:
            self.per_phase[name] = rec


# ----------------------------------------------------------------------------
# public API
# ----------------------------------------------------------------------------

def measure(config: dict, *, mode: str,
            batch: int, seq: int,
            precision: str = "bf16",
            optimizer: str = "adamw",
            attention: str = "sdpa",
            checkpointing: bool = False,
            lora: dict | None = None,
            decode_steps: int = 4,
            fake: bool = True,
            logits_to_keep: int = 0,
            ) -> dict:
    """Measure the tensor memory of one training step or one prefill+decode run.

    config: a Hugging Face config as a dict, with ``model_type`` (e.g. ``{"model_type": "llama",
        "hidden_size": 4096, ...}``); the model is built from it with random weights.
    mode: ``"train"`` or ``"inference"``.
    precision: inference: weight dtype ``fp32|bf16|fp16``.  train: ``fp32`` (everything fp32),
        ``mixed_bf16`` (fp32 params/grads/optimizer, forward+backward under ``torch.autocast(bf16)``),
        ``bf16`` (pure bf16 params, grads and optimizer states).
    optimizer: ``adamw`` (foreach, as torch defaults to on GPU), ``adamw_fused``, ``sgd`` (no state),
        ``sgd_momentum`` (momentum 0.9, foreach).
    attention: ``eager`` or ``sdpa``.
    checkpointing: HF ``gradient_checkpointing_enable(use_reentrant=False)``.
    lora: peft LoRA settings, e.g. ``{"r": 8, "alpha": 16, "target_modules": ["q_proj", "v_proj"]}``
        or ``"all-linear"``; optional ``"dropout"``.  Base weights are frozen.
    decode_steps: inference only: greedy single-token steps after the prefill, reusing the KV cache.
    fake: run under ``FakeTensorMode`` (no allocation).  Mixture-of-experts models cannot run fake
        (data-dependent routing shapes) and fall back to a real run (refused above 2 GiB of weights).
    logits_to_keep: inference only; ``0`` (HF default of a plain forward) computes logits for every
        position, ``1`` only for the last one (what ``generate()`` does).

    Training measures the *second* iteration (forward with labels -> HF loss, backward,
    optimizer.step(), zero_grad(set_to_none=True)), so optimizer states exist at the peak.
    Inference runs prefill + ``decode_steps`` steps under ``torch.no_grad()``.

    Returns a JSON-able dict; byte counts are live tensor storages (see module docstring).
    """
    import torch
    import transformers

    if mode not in ("train", "inference"):
        raise ValueError(f"mode must be 'train' or 'inference', not {mode!r}")
    if attention not in ("eager", "sdpa"):
        raise ValueError(f"attention must be 'eager' or 'sdpa', not {attention!r}")
    if mode == "train" and precision not in _TRAIN_PRECISIONS:
        raise ValueError(f"train precision must be one of {_TRAIN_PRECISIONS}, not {precision!r}")
    if mode == "inference" and precision not in _INFER_PRECISIONS:
        raise ValueError(f"inference precision must be one of {_INFER_PRECISIONS}, not {precision!r}")
    if optimizer not in _OPTIMIZERS:
        raise ValueError(f"optimizer must be one of {_OPTIMIZERS}, not {optimizer!r}")
    if batch < 1 or seq < 1:
        raise ValueError("batch and seq must be >= 1")

    notes: list[str] = []
    requested_fake = fake
    moe = _is_moe(config)

    hf_cfg = _build_hf_config(config)
    if mode == "train":
        hf_cfg.use_cache = False  # as with gradient checkpointing / Trainer: no KV cache in training

    def run(use_fake: bool) -> dict:
        if use_fake:
            from torch._subclasses.fake_tensor import FakeTensorMode
            mode_ctx = FakeTensorMode(allow_non_fake_inputs=False)
        else:
            mode_ctx = contextlib.nullcontext()
        old_overwrite = torch.__future__.get_overwrite_module_params_on_conversion()
        torch.__future__.set_overwrite_module_params_on_conversion(True)
        try:
            with mode_ctx, _hf_fake_patches(use_fake):
                if mode == "train":
                    return _measure_train(hf_cfg, batch=batch, seq=seq, precision=precision,
                                          optimizer=optimizer, attention=attention,
                                          checkpointing=checkpointing, lora=lora)
                return _measure_inference(hf_cfg, batch=batch, seq=seq, precision=precision,
                                          attention=attention, lora=lora,
                                          decode_steps=decode_steps,
                                          logits_to_keep=logits_to_keep)
        finally:
            torch.__future__.set_overwrite_module_params_on_conversion(old_overwrite)

    def check_real_size(reason: str) -> None:
        # Count parameters on the meta device before allocating anything for real.
        with torch.device("meta"):
            meta_model = _from_config(hf_cfg, _dtype(precision), attention)
        nbytes = sum(p.numel() * p.element_size() for p in meta_model.parameters())
        del meta_model
        if nbytes > _MOE_REAL_LIMIT_BYTES:
            raise ValueError(
                f"mixture-of-experts config could not be traced with FakeTensorMode ({reason}); a real CPU "
                f"run would need {nbytes / 2**30:.1f} GiB of weights, over the "
                f"{_MOE_REAL_LIMIT_BYTES / 2**30:.0f} GiB limit: measure a smaller config of the same family "
                "(MoE routing is data-dependent unless the experts run as grouped_mm in bf16)")

    if fake and moe:
        # transformers 5.x runs experts with torch._grouped_mm (static shapes): that traces under
        # FakeTensorMode in bf16.  Older "eager" expert loops (and grouped_mm in fp32/fp16, whose
        # meta kernel wants bf16) fail; fall back to a real, small run then.
        try:
            result = run(True)
        except Exception as exc:  # noqa: BLE001 - any tracing failure means: try for real
            reason = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}"
            check_real_size(reason)
            fake = False
            notes.append("mixture-of-experts model could not run under FakeTensorMode "
                         f"({reason}); ran for real on CPU instead")
            result = run(False)
    else:
        result = run(fake)

    result.update({
        "mode": mode,
        "batch": batch,
        "seq": seq,
        "precision": precision,
        "attention": attention,
        "torch_version": torch.__version__,
        "transformers_version": transformers.__version__,
        "fake": fake,
        "fake_requested": requested_fake,
        "moe": moe,
        "notes": notes + result.get("notes", []),
    })
    if mode == "train":
        result.update({"optimizer": optimizer, "checkpointing": checkpointing})
    else:
        result.update({"decode_steps": decode_steps, "logits_to_keep": logits_to_keep})
    if lora:
        import peft
        result["lora"] = dict(lora)
        result["peft_version"] = peft.__version__
    return result


def _apply_lora(model, lora: dict):
    import peft

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
    import torch
    from torch import nn

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


def _build_model(hf_cfg, dtype, attention: str, *, lora: dict | None, checkpointing: bool):
    """Build the (optionally LoRA-wrapped) model.  Under FakeTensorMode it is built on the meta
    device first (fast, and peft skips its ``.to()`` moves there: ``Module.to`` on fake parameters
    fails in torch 2.13 because ``swap_tensors`` refuses tensors with weakrefs) and then every
    tensor is replaced by a fake CPU tensor."""
    import torch
    from torch._guards import active_fake_mode

    fake = active_fake_mode() is not None
    torch.manual_seed(0)
    if fake:
        with torch.device("meta"):
            model = _from_config(hf_cfg, dtype, attention)
    else:
        model = _from_config(hf_cfg, dtype, attention)
    if checkpointing:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    if lora:
        if fake:
            with torch.device("meta"):
                model = _apply_lora(model, lora)
        else:
            model = _apply_lora(model, lora)
    if fake:
        _materialize_meta_as_fake(model)
    return model


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


def _make_optimizer(name: str, params):
    import torch

    if name == "adamw":
        return torch.optim.AdamW(params, lr=1e-4, foreach=True)
    if name == "adamw_fused":
        return torch.optim.AdamW(params, lr=1e-4, fused=True)
    if name == "sgd":
        return torch.optim.SGD(params, lr=1e-4, foreach=True)
    if name == "sgd_momentum":
        return torch.optim.SGD(params, lr=1e-4, momentum=0.9, foreach=True)
    raise ValueError(name)


def _finish(per_phase: dict) -> dict:
    peak_phase = max(per_phase, key=lambda k: per_phase[k]["peak_bytes"])
    for rec in per_phase.values():
        rec.pop("probe", None)
    return {
        "peak_bytes": per_phase[peak_phase]["peak_bytes"],
        "categories_at_peak": dict(per_phase[peak_phase]["categories"]),
        "peak_phase": peak_phase,
        "per_phase_peak": per_phase,
    }


def _measure_train(hf_cfg, *, batch, seq, precision, optimizer, attention, checkpointing, lora):
    import torch

    param_dtype = torch.bfloat16 if precision == "bf16" else torch.float32
    model = _build_model(hf_cfg, param_dtype, attention, lora=lora, checkpointing=checkpointing)
    model.train()
    total, trainable, by_dtype = _param_counts(model)
    params = [p for p in model.parameters() if p.requires_grad]
    opt = _make_optimizer(optimizer, params)

    vocab = int(getattr(hf_cfg, "vocab_size"))
    ids = torch.randint(0, vocab, (batch, seq))
    labels = ids.clone()

    if precision == "mixed_bf16":
        def autocast():
            return torch.autocast("cpu", dtype=torch.bfloat16)
    else:
        autocast = contextlib.nullcontext

    def forward():
        with autocast():
            out = model(input_ids=ids, labels=labels, use_cache=False)
        return out.loss

    # Iteration 1 (untracked): creates the optimizer states lazily.
    loss = forward()
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    del loss

    state_tensors = [v for st in opt.state.values() for v in st.values() if torch.is_tensor(v)]
    opt_state_bytes = _storage_bytes(state_tensors)
    grad_bytes_expected = sum(p.numel() * p.element_size() for p in params)

    Tracker = _make_tracker_class()
    mt = Tracker()
    mt.track_external(model, opt, ids, labels)
    ph = _Phases(mt)
    with mt:
        with ph.phase("forward"):
            loss = forward()
        with ph.phase("backward"):
            loss.backward()
        del loss
        with ph.phase("optimizer_step"):
            opt.step()
        opt.zero_grad(set_to_none=True)

    # During optimizer.step() MemTracker labels every allocation "Optstate"; split off the
    # step's temporaries (the states themselves already existed before this step).
    for rec in ph.per_phase.values():
        cats = rec["categories"]
        extra = cats.get("optimizer_states", 0) - opt_state_bytes
        cats["optimizer_temporaries"] = max(extra, 0)
        cats["optimizer_states"] = cats.get("optimizer_states", 0) - cats["optimizer_temporaries"]

    res = _finish(ph.per_phase)
    res.update({
        "param_count": total,
        "trainable_param_count": trainable,
        "param_bytes_by_dtype": by_dtype,
        "optimizer_state_bytes": opt_state_bytes,
        "gradient_bytes_expected": grad_bytes_expected,
    })
    return res


def _measure_inference(hf_cfg, *, batch, seq, precision, attention, lora, decode_steps, logits_to_keep):
    import torch

    model = _build_model(hf_cfg, _dtype(precision), attention, lora=lora, checkpointing=False)
    model.eval()
    total, trainable, by_dtype = _param_counts(model)

    vocab = int(getattr(hf_cfg, "vocab_size"))
    ids = torch.randint(0, vocab, (batch, seq))

    holder: dict[str, Any] = {"cache": None}

    def kv_bytes() -> int:
        return _storage_bytes(_cache_tensors(holder["cache"]))

    try:
        from transformers import DynamicCache
        try:
            holder["cache"] = DynamicCache(config=hf_cfg)
        except TypeError:
            holder["cache"] = DynamicCache()
    except ImportError:  # pragma: no cover - very old transformers
        holder["cache"] = None

    Tracker = _make_tracker_class()
    mt = Tracker()
    mt.probe = kv_bytes
    mt.track_external(model, ids)
    ph = _Phases(mt)
    kw = {"logits_to_keep": logits_to_keep} if logits_to_keep else {}
    ckw = _cache_kwarg(model.get_base_model() if lora else model)
    with torch.no_grad(), mt:
        with ph.phase("prefill"):
            out = model(input_ids=ids, use_cache=True, **{ckw: holder["cache"]}, **kw)
        holder["cache"] = _out_cache(out)
        logits_bytes_prefill = _storage_bytes([out.logits])
        nxt = out.logits[:, -1, :].argmax(dim=-1, keepdim=True)
        for _ in range(decode_steps):
            mt.reset_mod_stats()
            del out
            with ph.phase("decode"):
                out = model(input_ids=nxt, use_cache=True, **{ckw: holder["cache"]})
            holder["cache"] = _out_cache(out)
            nxt = out.logits[:, -1, :].argmax(dim=-1, keepdim=True)
        final_kv = kv_bytes()
        del out

    per_phase = ph.per_phase
    for rec in per_phase.values():
        kv = rec.get("probe") or 0
        rec["categories"]["kv_cache"] = kv
        # KV tensors are created inside the forward, so MemTracker files them under activations.
        rec["categories"]["activations_excluding_kv_cache"] = rec["categories"]["activations"] - kv
    res = _finish(per_phase)
    res.update({
        "param_count": total,
        "trainable_param_count": trainable,
        "param_bytes_by_dtype": by_dtype,
        "kv_cache_bytes": final_kv,
        "kv_cache_bytes_at_peak": res["categories_at_peak"].get("kv_cache", 0),
        "prefill_logits_bytes": logits_bytes_prefill,
    })
    return res


def main(argv: list[str] | None = None) -> int:
    """``python -m vramsym.measure_torch CONFIG.json --mode train --batch 1 --seq 512 ...``"""
    import argparse
    import json

    ap = argparse.ArgumentParser(description=main.__doc__)
    ap.add_argument("config", help="path to a JSON config dict (with model_type)")
    ap.add_argument("--mode", required=True, choices=["train", "inference"])
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--seq", type=int, default=512)
    ap.add_argument("--precision", default="bf16")
    ap.add_argument("--optimizer", default="adamw")
    ap.add_argument("--attention", default="sdpa")
    ap.add_argument("--checkpointing", action="store_true")
    ap.add_argument("--lora", default=None, help='JSON dict, e.g. \'{"r": 8, "target_modules": "all-linear"}\'')
    ap.add_argument("--decode-steps", type=int, default=4)
    ap.add_argument("--real", action="store_true", help="allocate real CPU tensors instead of FakeTensorMode")
    args = ap.parse_args(argv)
    with open(args.config) as f:
        cfg = json.load(f)
    res = measure(cfg, mode=args.mode, batch=args.batch, seq=args.seq, precision=args.precision,
                  optimizer=args.optimizer, attention=args.attention, checkpointing=args.checkpointing,
                  lora=json.loads(args.lora) if args.lora else None, decode_steps=args.decode_steps,
                  fake=not args.real)
    print(json.dumps(res, indent=2))
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
