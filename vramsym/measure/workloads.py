"""The jobs measured: a training step (forward, backward, optimizer step) and inference
(prefill plus decode steps), the way users run them.

Part of the measurement backend (vramsym.measure.torch_backend); torch and transformers are
imported at the top (only the gate in vramsym.measure.compare imports these modules); peft,
bitsandbytes and the parts of transformers that only some versions have, where they are used."""
from __future__ import annotations

import contextlib
import tempfile
from typing import Any

import torch

try:
    from transformers import DynamicCache
except ImportError:  # pragma: no cover - very old transformers
    DynamicCache = None

from .hf_model import (_build_model, _build_qlora_model, _cache_kwarg, _dtype, _out_cache, _param_counts,
                       _quant_state_tensors)
from .tracker import _Phases, _cache_tensors, _finish, _flatten_snapshot, _make_tracker_class, _storage_bytes


def _make_optimizer(name: str, params):
    if name == "adamw":
        return torch.optim.AdamW(params, lr=1e-4, foreach=True)
    if name == "adamw_fused":
        return torch.optim.AdamW(params, lr=1e-4, fused=True)
    if name == "sgd":
        return torch.optim.SGD(params, lr=1e-4, foreach=True)
    if name == "sgd_momentum":
        return torch.optim.SGD(params, lr=1e-4, momentum=0.9, foreach=True)
    raise ValueError(name)


def _measure_train(hf_cfg, *, batch, seq, precision, optimizer, attention, checkpointing, lora,
                   checkpoint_layers=None, grad_accum=1, quant=None, loop="trainer"):
    """One training step after an untracked one. ``loop="manual"``: the loop people write by hand
    (``outputs = model(**batch); outputs.loss.backward()``), whose ``outputs`` keep the logits
    until the next forward replaces them; ``"trainer"``: Trainer's, which keeps the loss only."""
    param_dtype = torch.bfloat16 if precision == "bf16" else torch.float32
    if quant:
        # QLoRA: a 4-bit base loaded by bitsandbytes; fp32 / mixed-bf16 run peft's
        # prepare_model_for_kbit_training (the parameters that are not 4-bit become fp32), bf16 skips it
        model = _build_qlora_model(hf_cfg, attention, quant=quant, lora=lora, checkpointing=checkpointing,
                                   prepare=precision != "bf16", checkpoint_layers=checkpoint_layers)
    else:
        model = _build_model(hf_cfg, param_dtype, attention, lora=lora, checkpointing=checkpointing,
                             checkpoint_layers=checkpoint_layers)
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

    kept = []                       # --loop manual: the previous step's outputs, alive until replaced

    def forward():
        with autocast():
            out = model(input_ids=ids, labels=labels, use_cache=False)
        if loop == "manual":
            kept[:] = [out]         # assigned when the forward returns, as `outputs = model(...)` does
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
        for step in range(grad_accum):   # gradient accumulation: the gradients stay between micro-steps
            if step:
                mt.reset_mod_stats()       # MemTracker keeps per-module stats of one iteration only
            with ph.phase("forward"):
                loss = forward()
            with ph.phase("backward"):
                loss.backward()
            del loss
            mt.release_grad_hooks()        # what the tracker's own hooks kept alive (see tracker.py)
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
    if quant:
        res["quant_state_bytes"] = _storage_bytes([t for p in model.parameters() for t in _quant_state_tensors(p)])
    return res


def measure_trainer(hf_cfg, *, batch, seq, bf16=False, checkpointing=False, lora=None, attention="sdpa",
                    dtype=torch.float32, steps=3):
    """The peak of one step of a real ``transformers.Trainer`` run with its defaults (its own
    optimizer, ``adamw_torch_fused``; its own loss path; ``bf16=True``: accelerate's autocast over
    the model, loaded in ``dtype``; ``gradient_checkpointing=True`` without reentrancy), on CPU with real tensors:
    the tracker is entered by a callback at the second step's start and left at its end (after the
    optimizer step and ``zero_grad``), so the first step has created the optimizer's states.
    Returns the tracker's peak by category (``total``: their sum) and the optimizer Trainer made."""
    from transformers import Trainer, TrainerCallback, TrainingArguments   # Trainer's imports: this recipe only
    model = _build_model(hf_cfg, dtype, attention, lora=lora, checkpointing=False)
    vocab = int(getattr(hf_cfg, "vocab_size"))
    torch.manual_seed(0)
    rows = torch.randint(0, vocab, (steps * batch, seq))
    data = [{"input_ids": r, "labels": r.clone()} for r in rows]

    class _Track(TrainerCallback):
        mt = peak = None

        def on_step_begin(self, args, state, control, model=None, optimizer=None, **kw):
            if state.global_step == 1:
                self.mt = _make_tracker_class()()
                self.mt.track_external(model, optimizer)
                self.mt.__enter__()

        def on_step_end(self, args, state, control, **kw):
            if self.mt is not None and self.peak is None:
                self.peak = _flatten_snapshot(self.mt.get_tracker_snapshot("peak"))
                self.mt.__exit__(None, None, None)

    track = _Track()
    with tempfile.TemporaryDirectory() as tmp:
        args = TrainingArguments(output_dir=tmp, per_device_train_batch_size=batch, max_steps=steps,
                                 report_to=[], save_strategy="no", logging_strategy="no", use_cpu=True,
                                 dataloader_num_workers=0, remove_unused_columns=False, bf16=bf16,
                                 gradient_checkpointing=checkpointing,
                                 gradient_checkpointing_kwargs={"use_reentrant": False} if checkpointing else None,
                                 disable_tqdm=True)
        trainer = Trainer(model=model, args=args, train_dataset=data, callbacks=[track])
        trainer.train()
    opt = getattr(trainer.optimizer, "optimizer", trainer.optimizer)
    return {"peak": track.peak, "optimizer": type(opt).__name__,
            "fused": bool(opt.defaults.get("fused")), "foreach": opt.defaults.get("foreach")}


def _measure_inference(hf_cfg, *, batch, seq, precision, attention, lora, decode_steps, logits_to_keep):
    model = _build_model(hf_cfg, _dtype(precision), attention, lora=lora, checkpointing=False)
    model.eval()
    total, trainable, by_dtype = _param_counts(model)

    vocab = int(getattr(hf_cfg, "vocab_size"))
    ids = torch.randint(0, vocab, (batch, seq))

    holder: dict[str, Any] = {"cache": None}

    def kv_bytes() -> int:
        return _storage_bytes(_cache_tensors(holder["cache"]))

    if DynamicCache is not None:
        try:
            holder["cache"] = DynamicCache(config=hf_cfg)
        except TypeError:
            holder["cache"] = DynamicCache()

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
