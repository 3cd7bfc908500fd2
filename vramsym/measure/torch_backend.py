"""Measurement backend: run a Hugging Face model under PyTorch's ``MemTracker``.

This module is an *optional* backend.  It imports torch and transformers at its top
(peft and bitsandbytes where LoRA and QLoRA use them), and the core ``vramsym`` package
never imports it at module level: only :func:`vramsym.measure.compare._backend`, the gate of
the ``measure`` extra, does, from a ``measure`` command.

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

import argparse
import contextlib
import json

import torch
import transformers
from torch._subclasses.fake_tensor import FakeTensorMode

from .hf_model import (MOE_KEYS, _build_hf_config, _cuda_kernel_patches, _dtype, _from_config, _hf_fake_patches, _is_moe,
                       _peft)
from .workloads import _measure_inference, _measure_train

__all__ = ["measure", "MOE_KEYS"]


_MOE_REAL_LIMIT_BYTES = 2 * 2**30  # refuse real (non-fake) runs whose weights exceed this


_TRAIN_PRECISIONS = ("fp32", "mixed_bf16", "bf16")


_INFER_PRECISIONS = ("fp32", "bf16", "fp16")


_OPTIMIZERS = ("adamw", "adamw_fused", "sgd", "sgd_momentum")


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
            checkpoint_layers: int | None = None,
            grad_accum: int = 1,
            quant: str | None = None,
            loop: str = "trainer",
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
    checkpoint_layers: with checkpointing, checkpoint only the bottom k decoder layers (partial).
    grad_accum: forward/backward micro-steps per optimizer step (gradient accumulation).
    quant: train only: ``"nf4_dq"`` or ``"nf4"`` for QLoRA: the base is loaded 4-bit by bitsandbytes
        (``BitsAndBytesConfig``, compute dtype bf16); precision ``fp32`` / ``mixed_bf16`` run
        ``peft.prepare_model_for_kbit_training`` first (the parameters that are not 4-bit become fp32),
        ``bf16`` keeps them bf16.  Always real CPU tensors (bitsandbytes reads the values), refused
        above 2 GiB of weights.
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

    if mode not in ("train", "inference"):
        raise ValueError(f"mode must be 'train' or 'inference', not {mode!r}")
    if attention not in ("eager", "sdpa", None):     # None: a model without attention layers
        raise ValueError(f"attention must be 'eager' or 'sdpa', or None (no attention layer), not {attention!r}")
    if mode == "train" and precision not in _TRAIN_PRECISIONS:
        raise ValueError(f"train precision must be one of {_TRAIN_PRECISIONS}, not {precision!r}")
    if mode == "inference" and precision not in _INFER_PRECISIONS:
        raise ValueError(f"inference precision must be one of {_INFER_PRECISIONS}, not {precision!r}")
    if optimizer not in _OPTIMIZERS:
        raise ValueError(f"optimizer must be one of {_OPTIMIZERS}, not {optimizer!r}")
    if batch < 1 or seq < 1:
        raise ValueError("batch and seq must be >= 1")

    if quant is not None and mode != "train":
        raise ValueError("quant is measured for training (QLoRA) only")
    if quant is not None and not lora:
        raise ValueError("quantized training needs LoRA adapters (the 4-bit base is frozen)")

    notes: list[str] = []
    requested_fake = fake
    moe = _is_moe(config)

    hf_cfg = _build_hf_config(config, training=mode == "train")

    def run(use_fake: bool) -> dict:
        if use_fake:
            mode_ctx = FakeTensorMode(allow_non_fake_inputs=True)  # Gemma builds a meta scalar buffer with torch.tensor()
        else:
            mode_ctx = contextlib.nullcontext()
        old_overwrite = torch.__future__.get_overwrite_module_params_on_conversion()
        torch.__future__.set_overwrite_module_params_on_conversion(True)
        try:
            with mode_ctx, _hf_fake_patches(use_fake), _cuda_kernel_patches():
                if mode == "train":
                    return _measure_train(hf_cfg, batch=batch, seq=seq, precision=precision,
                                          optimizer=optimizer, attention=attention,
                                          checkpointing=checkpointing, lora=lora,
                                          checkpoint_layers=checkpoint_layers, grad_accum=grad_accum,
                                          quant=quant, loop=loop)
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
            why = ("QLoRA runs on real tensors (bitsandbytes)" if quant is not None else
                   f"mixture-of-experts config could not be traced with FakeTensorMode ({reason})")
            raise ValueError(
                f"{why}; a real CPU run would need {nbytes / 2**30:.1f} GiB of weights, over the "
                f"{_MOE_REAL_LIMIT_BYTES / 2**30:.0f} GiB limit: measure a smaller config of the same family"
                + ("" if quant is not None else
                   " (MoE routing is data-dependent unless the experts run as grouped_mm)"))

    if quant is not None:
        bnb = _bitsandbytes()
        check_real_size("bitsandbytes 4-bit")
        if fake:
            notes.append("QLoRA runs on real CPU tensors (bitsandbytes' kernels read the values; no FakeTensorMode)")
        fake = False
        result = run(False)
    elif fake and moe:
        # transformers 5.x runs experts with grouped_mm (static shapes): that traces under
        # FakeTensorMode (in fp32 / fp16 through hf_model._GroupedMM, as CUDA's ATen
        # fallback runs it: hf_model._cuda_kernel_patches).  Older "eager" expert loops read the
        # routing's values and fail; fall back to a real, small run then.
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
    if quant is not None:
        result["quant"] = quant
        result["bitsandbytes_version"] = bnb.__version__
    if lora:
        result["lora"] = dict(lora)
        result["peft_version"] = _peft().__version__
    return result


def _bitsandbytes():
    """The gate of bitsandbytes (QLoRA only; tests/test_imports.py GATES)."""
    try:
        import bitsandbytes
    except ImportError as e:
        raise ImportError(f"QLoRA is measured with bitsandbytes: pip install bitsandbytes==0.50.2 ({e})") from None
    return bitsandbytes


def main(argv: list[str] | None = None) -> int:
    """``python -m vramsym.measure.torch_backend CONFIG.json --mode train --batch 1 --seq 512 ...``"""

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
