"""Results as values: an :class:`Estimate` (components in exact bytes) and a :class:`Solution`.

Plain classes with ``__slots__`` (cheap to import and to build, since an embedding
tool may make a million of them). Sizes are exact ``Fraction``\\ s; ``bytes`` and
``total_bytes`` round up to whole bytes.
"""
from __future__ import annotations

from ..numbers import to_int_bytes  # noqa: F401 (the estimate's sizes; re-exported for its readers)

from fractions import Fraction

from ..errors import InputError


class Binding:
    __slots__ = ("values", "provenance")

    def __init__(self, values, provenance):
        self.values, self.provenance = values, provenance


class Component:
    __slots__ = ("name", "description", "unit", "exact", "sources", "definition", "formula", "host", "options")

    def __init__(self, term, exact):
        """``term``: the component's :class:`vramsym.records.Term`; ``exact``: its exact bytes."""
        self.name, self.description, self.unit = term.name, term.description, term.unit
        self.host = term.host     # host (CPU) memory, outside the GPU total
        self.sources, self.definition, self.formula = term.sources, term.definition, term.formula
        self.options = term.options     # the options its formula reads
        self.exact = exact

    @property
    def bytes(self) -> int:
        return to_int_bytes(self.exact)

    def __repr__(self):
        return f"Component({self.name}={self.bytes:,} B)"


class PhaseTotal:
    """One phase of the regime's timeline at these inputs: its exact total and the names of the
    components alive in it."""
    __slots__ = ("name", "description", "exact", "components")

    def __init__(self, phase, exact):
        """``phase``: the :class:`vramsym.records.Phase`; ``exact``: its exact total."""
        self.name, self.description = phase.name, phase.description
        self.components = phase.components
        self.exact = exact

    @property
    def bytes(self) -> int:
        return to_int_bytes(self.exact)

    def __repr__(self):
        return f"PhaseTotal({self.name}={self.bytes:,} B)"


class Estimate:
    """The memory of one configuration. ``total_bytes`` (int) is what the CLI prints."""
    __slots__ = ("compiled", "model", "binding", "exact_total", "notes", "_components", "_phases", "approximate")

    def __init__(self, compiled, model, binding, exact_total, notes=(), approximate=None):
        self.compiled, self.model, self.binding = compiled, model, binding
        self.exact_total, self.notes, self._components = exact_total, tuple(notes), None
        self._phases = None
        self.approximate = approximate   # why the model's structure is an approximation (--assume), or None

    regime = property(lambda self: self.compiled.regime)
    description = property(lambda self: self.compiled.description)
    options = property(lambda self: self.compiled.options)
    used_options = property(lambda self: self.compiled.used_options)

    @property
    def total_bytes(self) -> int:
        return to_int_bytes(self.exact_total)

    @property
    def all_components(self):
        """Every component of the regime, whatever phase it is alive in."""
        if self._components is None:
            parts = self.compiled.parts(self.binding.values)
            comps = tuple(Component(m, v) for m, v in zip(self.compiled.components, parts))
            self._components = comps
            if any(c.exact < 0 for c in comps):
                negative(self)
        return self._components

    @property
    def phases(self):
        """The regime's timeline: every phase with its total (the total is the largest)."""
        if self._phases is None:
            totals = self.compiled.phase_totals(self.binding.values)
            self._phases = tuple(PhaseTotal(m, Fraction(v)) for m, v in zip(self.compiled.phases, totals))
        return self._phases

    @property
    def peak_phase(self) -> PhaseTotal:
        """The phase whose total is the total (the first one declared, on a tie)."""
        top = max(p.exact for p in self.phases)
        return next(p for p in self.phases if p.exact == top)

    @property
    def components(self):
        """The components alive in the peak phase: their GPU ones sum to the total."""
        alive = set(self.peak_phase.components)
        return tuple(c for c in self.all_components if c.name in alive)

    def at_bound(self, which: str) -> int:
        """The total with every run-time range this estimate took by default (CUDA context,
        allocator slack, ...) at its ``low`` or ``high`` end; the point total when there is none."""
        values, prov = self.binding.values, self.binding.provenance
        moved = {n: r[0 if which == "low" else 1] for n, r in self.compiled.ranges.items()
                 if n in values and prov.get(n) != "input"}
        if not moved:
            return self.total_bytes
        return to_int_bytes(self.compiled.total(dict(values, **moved)))

    low_bytes = property(lambda self: self.at_bound("low"))
    high_bytes = property(lambda self: self.at_bound("high"))

    @property
    def host_bytes(self) -> int:
        """Host (CPU) memory of the components that live there (offload), per GPU process."""
        return sum(c.bytes for c in self.components if c.host)

    @property
    def params(self):
        return self.compiled.params(self.binding.values)

    @property
    def inputs(self):
        return {k: v for k, v in self.binding.values.items() if self.binding.provenance[k] == "input"}

    def kv_pool(self, capacity: int) -> dict | None:
        """vLLM's own figures for this job on ``capacity`` bytes, as its log prints them ("GPU KV cache
        size: N tokens", "Maximum concurrency for S tokens per request: X.XXx"); None for a regime
        without a paged KV cache. The KV memory is what the capacity leaves beside every other
        component (gpu_memory_utilization x what CUDA reports, less the weights, the profiling peak and
        non-torch memory); vLLM cuts it into blocks of one page of every layer of a KV-cache group
        (v1/core/kv_cache_utils.py get_num_blocks: available // page_size // group_size; one group of
        every layer for a model of one attention kind), and a request of S tokens needs the blocks the
        formulas give (``blk_req_vllm``: ceil(S / block_size) for each full-attention group, the window's
        for each sliding one; get_max_concurrency_for_kv_cache_config). The log's token count is the
        pool's blocks shared among the groups (``_report_kv_cache_config``: num_blocks // groups x block)."""
        kv = next((c.exact for c in self.all_components if c.name == "vllm_kv_cache"), None)
        if kv is None:
            return None
        values = self.binding.values
        blk, b, s = Fraction(values["blk"]), Fraction(values["b"]), Fraction(values["s"])
        per_request = Fraction(values["blk_req_vllm"])   # blocks of one group's layers, over every group
        groups = int(values["n_full_vllm"]) + int(values["n_swa_vllm"])
        block = kv / (b * per_request)                   # one page of every layer of a group, in bytes
        others = sum(c.exact for c in self.all_components if c.name != "vllm_kv_cache" and not c.host)
        available = Fraction(capacity) - others
        blocks = max(0, int(available // block))
        return {"kv_cache_bytes": max(0, int(available)), "block_bytes": int(block), "block_tokens": int(blk),
                "num_blocks": blocks, "kv_groups": groups, "kv_cache_tokens": blocks // groups * int(blk),
                "tokens_per_request": int(s), "blocks_per_request": int(per_request),
                "max_concurrency": str(Fraction(blocks) / per_request),
                "max_concurrency_float": float(Fraction(blocks) / per_request)}

    def component(self, name: str) -> Component:
        """A component by name, in the peak phase or not."""
        for c in self.all_components:
            if c.name == name:
                return c
        raise KeyError(name)

    def largest(self) -> Component:
        return max(self.components, key=lambda c: c.exact)

    def __repr__(self):
        return f"Estimate({self.regime}, {self.model}: {self.total_bytes:,} B)"


class Solution:
    """The largest integer ``value`` of ``variable`` whose total fits ``capacity_bytes``."""
    __slots__ = ("variable", "alias", "value", "capacity_bytes", "estimate", "next_total_bytes", "method",
                 "next_refused")

    def __init__(self, variable, alias, value, capacity_bytes, estimate, next_total_bytes,
                 method="exact integer search", next_refused=None):
        self.variable, self.alias, self.value = variable, alias, value
        self.capacity_bytes, self.estimate, self.next_total_bytes = capacity_bytes, estimate, next_total_bytes
        self.method = method
        self.next_refused = next_refused     # value + 1 fits but a declared bound refuses it: why

    @property
    def total_bytes(self) -> int:
        return self.estimate.total_bytes

    @property
    def headroom_bytes(self) -> int:
        return self.capacity_bytes - self.total_bytes

    def __repr__(self):
        return f"Solution({self.alias}={self.value}, {self.total_bytes:,} of {self.capacity_bytes:,} B)"


def negative(est):
    """A total below zero is never an answer: say which component made it so, and for what inputs."""
    bad = [c for c in est.all_components if c.exact < 0] or \
        sorted(est.all_components, key=lambda c: c.exact)[:1]
    ins = ", ".join(f"{k}={v}" for k, v in sorted(est.inputs.items())) or "no inputs"
    c = bad[0]
    raise InputError(f"the {est.regime} total is negative ({est.total_bytes:,} B): the term {c.name} "
                     f"({c.description}) is {c.bytes:,} B with {ins}; the inputs are outside what the "
                     f"formulas describe")
