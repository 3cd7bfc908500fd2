"""One rank of an N-GPU FSDP2 job, measured in one CPU process.

PyTorch's fake process group (``torch.testing._internal.distributed.fake_pg``) stands in for
the other N-1 ranks: collectives return at once with outputs of the right shape, so rank 0
allocates exactly what it would on a real job. ``fully_shard`` is applied per decoder layer
and to the root (``reshard_after_forward=True`` for ``--zero 3``, ``False`` for ``--zero 2``),
with ``MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=fp32)`` for ``mixed_bf16``, and
``torch.distributed._tools.fsdp2_mem_tracker.FSDPMemTracker`` counts every storage by kind
(sharded / unsharded parameter, all-gather and reduce-scatter buffers, gradient, activation,
optimizer state, temporary). The second of two steps is the one reported (the tracker's
statistics are reset after the first, when the optimizer states exist).

With ``fake=True`` the model is built and run under ``FakeTensorMode`` (real-size configs in
seconds); DTensor's sharding propagation, which runs ops on global-shape shadow tensors, is
kept out of the tracker (``ShardingPropagator._propagate_tensor_meta_non_cached``), otherwise
those shadows would count as allocations of the rank.

What a fake group cannot see (NCCL's own buffers, which are not PyTorch tensors) is outside
the figure, as it is outside vramsym's tensor terms.
"""
from __future__ import annotations

import contextlib

import torch
import torch.distributed as dist
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.distributed._tools.fsdp2_mem_tracker import FSDPMemTracker
from torch.distributed._tools.mem_tracker import MemTracker
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
from torch.distributed.tensor import DTensor
from torch.distributed.tensor._sharding_prop import ShardingPropagator
from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module
from torch.testing._internal.distributed.fake_pg import FakeStore
from torch.utils._python_dispatch import _disable_current_modes

from ..errors import InputError
from .hf_model import _build_hf_config, _cuda_kernel_patches, _from_config, _hf_fake_patches
from .tracker import restart_peak


def _fake_group(world_size: int):
    if dist.is_initialized():
        if dist.get_world_size() == world_size:
            return
        dist.destroy_process_group()
    dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=world_size)


@contextlib.contextmanager
def _untracked_sharding_propagation():
    """Run DTensor's shape propagation outside every dispatch mode (the tracker included)."""
    orig = ShardingPropagator._propagate_tensor_meta_non_cached

    def quiet(self, *a, **k):
        with _disable_current_modes():
            return orig(self, *a, **k)
    ShardingPropagator._propagate_tensor_meta_non_cached = quiet
    try:
        yield
    finally:
        ShardingPropagator._propagate_tensor_meta_non_cached = orig


def _build(hf_cfg, dtype, attention: str):
    """The model, its parameters created in ``dtype`` (``.to()`` cannot swap fake parameters)."""
    old = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        return _from_config(hf_cfg, dtype, attention)
    finally:
        torch.set_default_dtype(old)


def _decoder_layers(model):
    """The model's decoder layers: its ``nn.ModuleList`` with one entry per hidden layer
    (``model.model.layers`` in Llama-style code, ``transformer.h`` in GPT-2's)."""
    n = model.config.num_hidden_layers
    for module in model.modules():
        if isinstance(module, torch.nn.ModuleList) and len(module) == n:
            return module
    raise ValueError(f"no list of {n} decoder layers in {type(model).__name__}")


def _by_kind(snap: dict) -> dict:
    by_kind = {}
    for d in snap.values():
        for k, v in d.items():
            name = str(k).split(".")[-1].lower()
            by_kind[name] = by_kind.get(name, 0) + int(v)
    by_kind.setdefault("total", sum(by_kind.values()))
    return by_kind


def _peak_of_second_step(model, ids, opts, tracker) -> dict:
    """Run two training steps under ``tracker`` (statistics reset after the first, when the
    optimizer states exist); the peak's bytes by the tracker's kind, ``total``, and ``phases``:
    the peak of the second step's forward, backward and optimizer step, each measured alone."""
    phases = {}
    with tracker:
        for step in range(2):
            if step == 1:
                tracker.reset_mod_stats()
                restart_peak(tracker)
            loss = model(input_ids=ids, labels=ids).loss
            if step == 1:
                phases["forward"] = _by_kind(tracker.get_tracker_snapshot("peak"))
                restart_peak(tracker)
            loss.backward()
            del loss
            if step == 1:
                phases["backward"] = _by_kind(tracker.get_tracker_snapshot("peak"))
                restart_peak(tracker)
            for o in opts:
                o.step()
                o.zero_grad()
            if step == 1:
                phases["optimizer"] = _by_kind(tracker.get_tracker_snapshot("peak"))
    peak = max(phases, key=lambda p: phases[p]["total"])
    return {"peak_phase": peak, "phases": {p: k["total"] for p, k in phases.items()},
            "categories_at_peak": phases[peak], "categories_by_phase": phases}


def measure_fsdp(config: dict, *, gpus: int, zero: int, batch: int, seq: int, precision: str = "mixed_bf16",
                 optimizer: str = "adamw", attention: str = "sdpa", checkpointing: bool = False,
                 fake: bool = True) -> dict:
    """Peak bytes of rank 0 of ``gpus`` ranks training ``config`` under FSDP2, by FSDP category."""

    if zero not in (2, 3):
        raise ValueError("FSDP2 shards parameters: --zero 2 (reshard_after_forward=False) or 3")
    _fake_group(gpus)
    hf_cfg = _build_hf_config(config, training=True)
    dtype = {"fp32": torch.float32, "mixed_bf16": torch.float32, "bf16": torch.bfloat16}[precision]
    mp = (MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
          if precision == "mixed_bf16" else MixedPrecisionPolicy())
    mesh = init_device_mesh("cpu", (gpus,))          # outside fake mode: the mesh reads its ranks
    mode = FakeTensorMode() if fake else contextlib.nullcontext()
    with mode, _untracked_sharding_propagation(), _hf_fake_patches(fake), _cuda_kernel_patches():
        model = _build(hf_cfg, dtype, attention)
        if checkpointing:
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        layers = _decoder_layers(model)
        for layer in layers:
            fully_shard(layer, mesh=mesh, reshard_after_forward=zero == 3, mp_policy=mp)
        fully_shard(model, mesh=mesh, reshard_after_forward=zero == 3, mp_policy=mp)
        model.train()
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4, foreach=optimizer != "adamw_fused",
                                fused=optimizer == "adamw_fused" or None)
        ids = torch.randint(0, hf_cfg.vocab_size, (batch, seq))
        tracker = FSDPMemTracker(model, opt)
        tracker.track_inputs((ids,))
        step = _peak_of_second_step(model, ids, [opt], tracker)
    by_kind = dict(step["categories_at_peak"])
    total = by_kind.pop("total")
    return {"peak_bytes": total, "categories_at_peak": by_kind, "peak_phase": step["peak_phase"],
            "phases": step["phases"], "categories_by_phase": step["categories_by_phase"], "gpus": gpus, "zero": zero, "precision": precision, "fake": fake}


TP_PLAN = {"self_attn.q_proj": "colwise", "self_attn.k_proj": "colwise", "self_attn.v_proj": "colwise",
           "self_attn.o_proj": "rowwise", "mlp.gate_proj": "colwise", "mlp.up_proj": "colwise",
           "mlp.down_proj": "rowwise"}


def measure_tensor_parallel(config: dict, *, tp: int, batch: int, seq: int, precision: str = "bf16",
                            attention: str = "sdpa", checkpointing: bool = False, fake: bool = True) -> dict:
    """Peak bytes of rank 0 of a ``tp``-way tensor-parallel job: PyTorch's ``parallelize_module`` with
    ColwiseParallel on q/k/v/gate/up and RowwiseParallel on o/down of every decoder layer (what
    ``--tp-style dtensor`` models); embeddings, norms and the head stay whole on every rank.
    AdamW with ``foreach=True`` runs over the DTensor parameters and, separately, over the plain
    ones (one foreach list cannot mix them), counted by ``MemTracker``."""

    if precision not in ("fp32", "bf16"):
        raise ValueError("tensor-parallel measurement runs fp32 or bf16 models")
    _fake_group(tp)
    mesh = init_device_mesh("cpu", (tp,))
    hf_cfg = _build_hf_config(config, training=True)
    dtype = torch.bfloat16 if precision == "bf16" else torch.float32
    plan = {k: ColwiseParallel() if v == "colwise" else RowwiseParallel() for k, v in TP_PLAN.items()}
    mode = FakeTensorMode() if fake else contextlib.nullcontext()
    with mode, _untracked_sharding_propagation(), _hf_fake_patches(fake), _cuda_kernel_patches():
        model = _build(hf_cfg, dtype, attention)
        if checkpointing:
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        for layer in _decoder_layers(model):
            names = {n for n, _ in layer.named_modules()}
            missing = sorted(set(TP_PLAN) - names)
            if missing:      # GPT-2's c_attn, Phi-3's qkv_proj: the plan would shard half a layer, or nothing
                raise InputError(f"the measurement's tensor-parallel plan shards {', '.join(sorted(TP_PLAN))}; "
                                 f"the layers of model_type {hf_cfg.model_type!r} have no {', '.join(missing)} "
                                 f"(fused or differently named projections): not measured")
            attn = getattr(layer, "self_attn", None)
            q_norm, q_proj = getattr(attn, "q_norm", None), getattr(attn, "q_proj", None)
            width = getattr(getattr(q_norm, "weight", None), "shape", (0,))[-1]
            if q_proj is not None and width and width == q_proj.out_features and width != getattr(attn, "head_dim", width):
                # OLMo 2's q_norm / k_norm normalise the whole projection: a head-sharded q_proj hands them a
                # slice (transformers' own plan gathers the outputs instead: colwise_gather_output)
                raise InputError(f"the measurement's tensor-parallel plan shards q_proj by heads; model_type "
                                 f"{hf_cfg.model_type!r} normalises the whole q projection (q_norm of {width}), which "
                                 f"a head-sharded projection cannot feed: not measured")
            parallelize_module(layer, mesh, plan)
        model.train()
        sharded = [p for p in model.parameters() if isinstance(p, DTensor)]
        whole = [p for p in model.parameters() if not isinstance(p, DTensor)]
        opts = [torch.optim.AdamW(ps, lr=1e-4, foreach=True) for ps in (sharded, whole) if ps]
        ids = torch.randint(0, hf_cfg.vocab_size, (batch, seq))
        tracker = MemTracker()
        tracker.track_external(model, *opts)
        step = _peak_of_second_step(model, ids, opts, tracker)
    by_kind = dict(step["categories_at_peak"])
    total = by_kind.pop("total")
    return {"peak_bytes": total, "categories_at_peak": by_kind, "peak_phase": step["peak_phase"],
            "phases": step["phases"], "tp": tp, "precision": precision, "checkpointing": checkpointing, "fake": fake}
