"""Reality check: vramsym's prediction next to what PyTorch allocates for the same job.

Glue between the engine (a regime with its options and inputs) and the
measurement backend (:mod:`vramsym.measure.torch_backend`, optional extra
``vramsym[measure]``: torch, transformers, peft). The core never imports it.
"""
from __future__ import annotations

import importlib.util
from typing import Dict, List, Mapping, Optional

from ..catalog.models import load_model
from ..engine.layouts import layout_of
from ..engine.runtime import compile as _compile
from ..errors import InputError

TRAIN_REGIMES = ("train", "lora", "qlora")
INFER_REGIMES = ("inference", "inference_kv")
# the recipes the harness can run, spelled as the formula files spell them
_TRAIN_PRECISION = ("fp32", "bf16", "mixed_bf16")
_INFER_PRECISION = ("fp32", "bf16", "fp16")
_OPTIMIZER = ("adamw", "adamw_fused", "sgd", "sgd_momentum")
# the fused q/k/v projection and the output projection, by model_type (peft target names)
_FUSED_NAMES = {"gpt2": ("attn.c_attn", "attn.c_proj"), "phi3": ("self_attn.qkv_proj", "self_attn.o_proj"),
                "gpt_neox": ("attention.query_key_value", "attention.dense"),
                "falcon": ("self_attention.query_key_value", "self_attention.dense"),
                "gpt_bigcode": ("attn.c_attn", "attn.c_proj"), "codegen": ("attn.qkv_proj", "attn.out_proj"),
                "bloom": ("self_attention.query_key_value", "self_attention.dense"), "mpt": ("attn.Wqkv", "attn.out_proj")}
# the attention's output projection where a family with separate q, k and v does not call it o_proj
_OUT_NAMES = {"phi": "dense", "opt": "out_proj", "gptj": "out_proj", "gpt_neo": "out_proj"}
# multi-head latent attention's projections (modeling_deepseek_v3.py: q_proj without q_lora_rank)
_MLA_ATTENTION = ["q_a_proj", "q_b_proj", "q_proj", "kv_a_proj_with_mqa", "kv_b_proj", "o_proj"]
_LORA_TARGETS = {"qv": ["q_proj", "v_proj"], "attention": ["q_proj", "k_proj", "v_proj", "o_proj"],
                 "all_linear": "all-linear"}


def _harness():
    """The gate of the measure extra (torch, transformers; tests/test_imports.py GATES): the one-GPU
    harness and the multi-GPU one (torch.distributed, FSDP2, DTensor)."""
    try:
        from . import distributed, torch_backend
    except ImportError as e:
        raise InputError(f"vramsym measure needs PyTorch and transformers: pip install 'vramsym[measure]' "
                         f"(torch==2.13.0 installs the CPU build) ({e})") from None
    return torch_backend, distributed


def measure_args(est, regime: str, fake: bool, decode_steps: int, model=None) -> Dict:
    opts = dict(est.options)
    if model is not None and model.config.get("arch_attn_layers") == 0:
        opts["attention"] = None      # no attention layer (Mamba, Mamba2): the model class takes no kernel
    b = int(est.binding.values["b"])
    s = int(est.binding.values["s"])
    if regime in INFER_REGIMES:
        prec = opts["precision"] if opts["precision"] in _INFER_PRECISION else None
        if prec is None or opts.get("quant", "none") != "none":
            raise InputError(f"measure supports inference in {', '.join(_INFER_PRECISION)} without quantization")
        n_pos = est.binding.values.get("n_pos")
        if opts.get("positions") == "learned" and n_pos is not None:
            # a learned position table (GPT-2, GPT-Neo) and a causal table of its size end the decode there
            decode_steps = max(0, min(decode_steps, int(n_pos) - s))
        return dict(mode="inference", batch=b, seq=s, precision=prec, attention=opts["attention"],
                    decode_steps=decode_steps, fake=fake, logits_to_keep=1)
    if regime in TRAIN_REGIMES:
        prec = opts["precision"] if opts["precision"] in _TRAIN_PRECISION else None
        if prec is None:
            raise InputError(f"measure supports training precisions {', '.join(p.replace('_', '-') for p in _TRAIN_PRECISION)}")
        opt = opts["optimizer"] if opts["optimizer"] in _OPTIMIZER else None
        if opt is None:
            raise InputError(f"measure supports the optimizers {', '.join(o.replace('_', '-') for o in _OPTIMIZER)} "
                             f"(plain PyTorch); {opts['optimizer']} needs another library")
        if opts["checkpointing"] == "selective":
            raise InputError("measure supports checkpointing none or full (Hugging Face has no selective recomputation)")
        lora = None
        quant = None
        if regime == "qlora":
            quant = opts.get("quant")
            if quant not in ("nf4", "nf4_dq"):
                raise InputError("measure supports QLoRA with --quant nf4 or nf4-dq (bitsandbytes)")
            if importlib.util.find_spec("bitsandbytes") is None:
                raise InputError("measure --regime qlora needs bitsandbytes (its CPU backend runs the 4-bit base): "
                                 "pip install 'vramsym[measure]' (bitsandbytes==0.50.2)")
        if regime in ("lora", "qlora"):
            targets = _LORA_TARGETS[opts["lora_targets"]]
            mtype = model.config.get("model_type") if model is not None else "gpt2"
            if est.binding.values.get("qkv_fused") == 1 and opts["lora_targets"] != "all_linear":
                fused, out = _FUSED_NAMES.get(mtype, _FUSED_NAMES["gpt2"])
                targets = [fused] if opts["lora_targets"] == "qv" else [fused, out]
            elif opts["lora_targets"] == "attention" and mtype in _OUT_NAMES:
                targets = ["q_proj", "k_proj", "v_proj", _OUT_NAMES[mtype]]
            elif opts["lora_targets"] == "attention" and opts.get("attention_arch") == "mla":
                targets = _MLA_ATTENTION       # the projections lora_attn_width counts for MLA
            lora = {"r": int(est.binding.values["r"]), "alpha": 16, "target_modules": targets}
        args = dict(mode="train", batch=b, seq=s, precision=prec, optimizer=opt, attention=opts["attention"],
                    checkpointing=opts["checkpointing"] == "full", lora=lora, fake=fake)
        if opts.get("loop", "trainer") != "trainer":
            args["loop"] = opts["loop"]
        k, layers = est.binding.values.get("L_ck"), est.binding.values.get("L")
        if args["checkpointing"] and k is not None and k != layers:
            args["checkpoint_layers"] = int(k)
        ga = est.binding.values.get("n_ga")
        if ga is not None and ga > 1:
            args["grad_accum"] = int(ga)
        if quant is not None:
            args["quant"] = quant
            args["fake"] = False  # bitsandbytes reads the values: real CPU tensors only
        return args
    raise InputError(f"measure supports the regimes {', '.join(INFER_REGIMES + TRAIN_REGIMES)}; "
                     f"'{regime}' needs hardware or libraries this machine does not have")


def _config_for(model, opts) -> Dict:
    """The model's config as the job runs it: dropout rates as configured (what ``model.train()`` uses),
    or all zero with ``--dropout off``."""
    cfg = dict(model.raw_config or model.config)
    if isinstance(cfg.get("text_config"), dict):     # a multimodal config: the text model vramsym reads
        cfg = {**{k: v for k, v in cfg.items() if k not in ("text_config", "vision_config", "architectures")},
               **cfg["text_config"]}
    if opts.get("dropout") == "off":
        for k, v in list(cfg.items()):
            if ("dropout" in k or "pdrop" in k) and isinstance(v, (int, float)) and not isinstance(v, bool) and v:
                cfg[k] = 0.0
    return cfg


def _row_adder(rows: List[Dict]):
    """``row(component, predicted, measured, note)`` appends a row with its relative error."""
    def row(name, predicted, measured, note=""):
        rel = (predicted - measured) / measured if measured else (0.0 if predicted == measured else None)
        rows.append({"component": name, "predicted_bytes": int(predicted), "measured_bytes": int(measured),
                     "relative_error": rel, "note": note})
    return row


# The harness measures a step in the phases its code can mark (a forward, a backward, an optimizer
# step; a prefill and decode steps); each predicted phase lies inside one of them.
MEASURED_AS = {"forward": "forward", "attention_forward": "forward", "backward_start": "backward", "recompute_first": "backward",
               "backward_end": "backward", "recompute_last": "backward", "backward_top": "backward", "attention_backward": "backward",
               "attention_recompute": "backward", "attention_recompute_last": "backward",
               "optimizer": "optimizer", "optimizer_step": "optimizer", "prefill": "prefill", "logits": "prefill",
               "per_layer_inputs": "prefill", "decode": "decode"}


def _peak_phases(est, measured: Optional[str]) -> Dict:
    """The predicted peak phase, the measured phase it lies in, and the measured peak phase."""
    predicted = est.peak_phase.name if est.peak_phase is not None else None
    return {"predicted_peak_phase": predicted,
            "predicted_peak_phase_measured_as": MEASURED_AS.get(predicted, predicted),
            "measured_peak_phase": MEASURED_AS.get(measured, measured)}


def _phase_note(phases: Dict, where: str = "") -> str:
    same = phases["predicted_peak_phase_measured_as"] == phases["measured_peak_phase"]
    return (f"peak phase: predicted {phases['predicted_peak_phase']}, measured {phases['measured_peak_phase']}"
            + ("" if same else " (differ)") + (f"; {where}" if where else ""))


def _peak(est, *names) -> int:
    """The predicted bytes of these components in the predicted peak phase (0 for one not alive there)."""
    return sum(c.bytes for c in est.components if c.name in names)


def _comp(est, *names) -> int:
    """The predicted bytes of these components, whatever phase they are alive in."""
    return sum(c.bytes for c in est.all_components if c.name in names)


#: what PyTorch's accounting of live tensors leaves out: the CUDA context and the allocator's reserve
#: beyond the tensors. Alive in every phase (no phase names them), so the peak phase is the same with
#: or without them; the prediction is compiled with the user's --overhead (the shipped, cached
#: combinations: the default) and compared without them.
NOT_TENSORS = ("runtime_overhead", "allocator_slack")


def _tensors(est) -> int:
    """The predicted peak's tensors: its total less :data:`NOT_TENSORS`."""
    return est.total_bytes - _peak(est, *NOT_TENSORS)


def _options(est) -> Dict:
    """The options the prediction used, but --overhead (the comparison leaves out what it adds)."""
    return {k: v for k, v in est.options if k in est.used_options and k != "overhead"}


def compare(model, regime: str = "inference", options: Optional[Mapping[str, str]] = None,
            inputs: Optional[Mapping[str, object]] = None, fake: bool = True, decode_steps: int = 4,
            library=None) -> Dict:
    """Predict (tensors only: less :data:`NOT_TENSORS`) and measure one job; rows per component with
    relative errors."""
    opts = dict(options or {})
    if isinstance(model, str):
        model = load_model(model, [])
    est = _compile(model, regime, opts, library).evaluate(dict(inputs or {}))
    lay = layout_of(est)
    if lay is not None and lay["tp"] > 1 and lay["zero"] == 0:
        return _compare_tp(model, est, regime, lay, fake)
    if lay is not None and (lay["gpus"] > 1 or lay["zero"] > 0):
        return _compare_fsdp(model, est, regime, lay, fake)
    args = measure_args(est, regime, fake, decode_steps, model)
    backend, _ = _harness()
    cfg = _config_for(model, opts)
    m = backend.measure(cfg, **args)
    if opts.get("dropout") == "off":
        m.setdefault("notes", []).append("--dropout off: every dropout rate of the config set to 0 for the measurement")
    rows: List[Dict] = []
    row = _row_adder(rows)

    at_peak = m["categories_at_peak"]
    phases = m["per_phase_peak"]
    if args["mode"] == "train":
        step = phases.get("optimizer_step", {}).get("categories", {})
        fwd_end = phases.get("forward", {}).get("end_categories", {})
        row("parameters", _comp(est, "weights_train"), at_peak.get("parameters", 0))
        row("buffers", _comp(est, "model_buffers"), at_peak.get("buffers", 0))
        row("gradients", _comp(est, "gradients"), step.get("gradients", 0), "at the optimizer step")
        row("optimizer_states", _comp(est, "optimizer_states", "master_weights"), m.get("optimizer_state_bytes", 0))
        row("optimizer_temporaries", _comp(est, "optimizer_temporaries"), step.get("optimizer_temporaries", 0))
        row("activations", _comp(est, "activations", "autocast_copies"), fwd_end.get("activations", 0),
            "saved at the end of forward")
        row("inputs", _comp(est, "batch_tensors"), at_peak.get("other", 0))
    else:
        row("parameters", _comp(est, "weights"), at_peak.get("parameters", 0))
        row("buffers", _comp(est, "model_buffers"), at_peak.get("buffers", 0))
        after = dict(inputs or {})
        after["seq"] = args["seq"] + args["decode_steps"]
        est_after = _compile(model, regime, opts, library).evaluate(after)
        row("kv_cache", _comp(est_after, "kv_cache"), m.get("kv_cache_bytes", 0),
            f"after the prefill and {args['decode_steps']} decode steps")
        ple = est.peak_phase is not None and est.peak_phase.name == "per_layer_inputs"   # before any layer
        row("activations", _comp(est, "prefill_ple") if ple else _comp(est, "prefill_activations", "logits"),
            at_peak.get("activations_excluding_kv_cache", 0), "live intermediates at the peak")
        row("inputs", _comp(est, "input_ids"), at_peak.get("other", 0))
    phases = _peak_phases(est, m.get("peak_phase"))
    row("total (peak)", _tensors(est), m["peak_bytes"], _phase_note(phases))
    return {**phases, "model": model.name, "regime": regime, "options": _options(est),
            "inputs": {"batch": args["batch"], "seq": args["seq"]}, "measure_args": {k: v for k, v in args.items()},
            "rows": rows, "predicted_total_bytes": _tensors(est), "measured_peak_bytes": m["peak_bytes"],
            "measurement": m}


def _compare_fsdp(model, est, regime: str, lay: dict, fake: bool) -> Dict:
    """One rank of an FSDP2 job under the fake process group (vramsym.measure.distributed)."""
    opts = dict(est.options)
    if regime != "train" or lay.get("zero_impl") != "fsdp2" or lay["zero"] not in (2, 3):
        raise InputError("measure with more than one GPU supports --regime train --zero-impl fsdp2 --zero 2|3 "
                         "(FSDP2 under PyTorch's fake process group)")
    if (lay["tp"], lay["pp"], lay["cp"], lay["ep"]) != (1, 1, 1, 1) or lay.get("offload") != "none":
        raise InputError("measure with more than one GPU supports data-parallel sharding only "
                         "(no --tp, --pp, --cp, --ep or --offload)")
    if opts["precision"] not in _TRAIN_PRECISION or opts["optimizer"] not in ("adamw", "adamw_fused") \
            or opts["checkpointing"] == "selective":
        raise InputError("measure with more than one GPU supports --precision fp32|mixed-bf16|bf16, "
                         "--optimizer adamw|adamw-fused and --checkpointing none|full")
    _, distributed = _harness()
    cfg = _config_for(model, opts)
    b, s = int(est.binding.values["b"]), int(est.binding.values["s"])
    m = distributed.measure_fsdp(cfg, gpus=lay["gpus"], zero=lay["zero"], batch=b, seq=s, precision=opts["precision"],
                     optimizer=opts["optimizer"], attention=opts["attention"],
                     checkpointing=opts["checkpointing"] == "full", fake=fake)
    cat = m["categories_at_peak"]
    rows: List[Dict] = []
    row = _row_adder(rows)
    row("parameters", _peak(est, "weights_train", "zero3_gathered", "zero2_unsharded", "fsdp_root_unsharded"),
        cat.get("sharded_param", 0) + cat.get("unsharded_param", 0) + cat.get("all_gather", 0),
        "sharded, unsharded and all-gather buffers at the peak")
    row("optimizer_states", _comp(est, "optimizer_states", "master_weights"), cat.get("opt", 0))
    phases = _peak_phases(est, m["peak_phase"])
    row("total (peak)", _tensors(est), m["peak_bytes"],
        _phase_note(phases, f"rank 0 of {lay['gpus']}, fake process group"))
    return {**phases, "model": model.name, "regime": regime, "options": _options(est),
            "inputs": {"batch": b, "seq": s}, "layout": lay, "measure_args": {"gpus": lay["gpus"], "zero": lay["zero"]},
            "rows": rows, "predicted_total_bytes": _tensors(est), "measured_peak_bytes": m["peak_bytes"],
            "measurement": m}


def _compare_tp(model, est, regime: str, lay: dict, fake: bool) -> Dict:
    """One rank of a tensor-parallel job (parallelize_module) under the fake process group."""
    opts = dict(est.options)
    if regime != "train" or lay.get("tp_style") != "dtensor" or lay["gpus"] != lay["tp"] \
            or opts["precision"] not in ("fp32", "bf16") or opts["optimizer"] != "adamw" \
            or opts["checkpointing"] == "selective":
        raise InputError("measure with tensor parallelism supports --regime train --tp-style dtensor --gpus T --tp T "
                         "--precision fp32|bf16 --optimizer adamw --checkpointing none|full (parallelize_module under "
                         "PyTorch's fake process group)")
    _, distributed = _harness()
    cfg = _config_for(model, opts)
    b, s = int(est.binding.values["b"]), int(est.binding.values["s"])
    m = distributed.measure_tensor_parallel(cfg, tp=lay["tp"], batch=b, seq=s, precision=opts["precision"],
                                attention=opts["attention"], checkpointing=opts["checkpointing"] == "full", fake=fake)
    cat = m["categories_at_peak"]
    rows: List[Dict] = []
    row = _row_adder(rows)
    row("parameters", _comp(est, "weights_train"), cat.get("param", 0), "one tensor-parallel shard")
    row("optimizer_states", _comp(est, "optimizer_states", "master_weights"), cat.get("opt", 0))
    phases = _peak_phases(est, m["peak_phase"])
    row("total (peak)", _tensors(est), m["peak_bytes"],
        _phase_note(phases, f"rank 0 of {lay['tp']}, fake process group"))
    return {**phases, "model": model.name, "regime": regime, "options": _options(est),
            "inputs": {"batch": b, "seq": s}, "layout": lay, "measure_args": {"tp": lay["tp"]},
            "rows": rows, "predicted_total_bytes": _tensors(est), "measured_peak_bytes": m["peak_bytes"],
            "measurement": m}
