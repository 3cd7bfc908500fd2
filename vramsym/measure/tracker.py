"""PyTorch's MemTracker with phases: the peak of each phase (forward, backward, optimizer
step, prefill, decode) by category (parameters, gradients, activations, ...).

Part of the measurement backend (vramsym.measure.torch_backend); torch and transformers are
imported at the top (only the gate in vramsym.measure.compare imports these modules); peft,
bitsandbytes and the parts of transformers that only some versions have, where they are used."""
from __future__ import annotations

import contextlib
from typing import Any, Callable

from torch.distributed._tools import mod_tracker as _mod_tracker
from torch.distributed._tools.mem_tracker import MemTracker, _MemRefType

from .hf_model import _quant_state_tensors


_CATEGORY_NAMES = {
    "Parameter": "parameters",
    "Buffer": "buffers",
    "Gradient": "gradients",
    "Activation": "activations",
    "Temp": "temporaries",
    "Optstate": "optimizer_states",
    "Other": "other",
}


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


def restart_peak(mt) -> None:
    """Make a MemTracker's peak its current memory, so the next peak read is the coming phase's."""
    mt._peak_mem_snap = mt.get_tracker_snapshot()
    mt._peak_mem = {d: s["Total"] for d, s in mt._peak_mem_snap.items()}


def _make_tracker_class():
    class _PhaseTracker(MemTracker):
        """MemTracker whose peak can be reset per phase, recording an extra probe at each new peak."""

        probe: Callable[[], Any] | None = None
        peak_probe: Any = None
        _grad_hook_handles: list | None = None

        # ModTracker marks each module's backward with torch.autograd.graph.register_multi_grad_hook
        # and drops the handle. On a leaf input that requires grad (the embeddings' output once peft
        # or prepare_model_for_kbit_training makes it require grad for checkpointing) the hook's
        # closure holds the leaf's AccumulateGrad node, which holds the leaf: a cycle through C++
        # that Python's collector never frees, so each micro-step of gradient accumulation would
        # leave that b x s x h tensor and its gradient behind, which the job run without a tracker
        # frees. While the tracker is entered the handles are kept here; the training step removes
        # them after each backward (release_grad_hooks), and leaving the tracker removes the rest.
        def __enter__(self):
            entered = super().__enter__()       # the hooks are registered in forward, after this
            self._grad_hook_handles = []
            self._stock_multi_grad_hook = stock = _mod_tracker.register_multi_grad_hook

            def recording(*args, **kwargs):
                handle = stock(*args, **kwargs)
                self._grad_hook_handles.append(handle)
                return handle

            _mod_tracker.register_multi_grad_hook = recording
            return entered

        def __exit__(self, *exc):
            _mod_tracker.register_multi_grad_hook = self._stock_multi_grad_hook
            self.release_grad_hooks()
            return super().__exit__(*exc)

        def release_grad_hooks(self) -> None:
            for handle in self._grad_hook_handles or ():
                handle.remove()
            self._grad_hook_handles = []

        def reset_peak(self) -> None:
            restart_peak(self)
            self.peak_probe = self.probe() if self.probe else None

        def _track_module_params_and_buffers(self, module, install_grad_hooks: bool = True):
            # Same as MemTracker's, but only hooks parameters that require grad: the stock version
            # calls register_hook on frozen parameters too (LoRA base weights) and raises.

            def _grad_hook(grad) -> None:
                self._update_and_maybe_create_winfos(grad, _MemRefType.GRAD)

            param_memory = 0
            for param in module.parameters():
                winfos = self._update_and_maybe_create_winfos(param, _MemRefType.PARAM)
                param_memory += sum(w.mem_consumed for w in winfos)
                # a bitsandbytes Params4bit's QuantState (absmax, code, ...) is part of the weight
                for t in _quant_state_tensors(param):
                    winfos = self._update_and_maybe_create_winfos(t, _MemRefType.PARAM)
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
