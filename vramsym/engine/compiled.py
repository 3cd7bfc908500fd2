"""Stage 5: the compiled regime, the only thing that turns bound numbers into bytes.

:func:`vramsym.engine.assemble.assemble` runs once per regime and resolved options
(from compiled definitions, without sympy) and gives plain data (JSON), which :mod:`vramsym.engine.cache`
persists. ``CompiledRegime(data)`` runs that code and reads its tables into typed records
(:mod:`vramsym.records`: a :class:`~vramsym.records.Symbol` per symbol, a
:class:`~vramsym.records.Term` per component, a :class:`~vramsym.records.Phase` per phase); binding (:mod:`vramsym.engine.bind`),
evaluation and the inverse solve (:mod:`vramsym.engine.inverse`) then need no sympy.
"""
from __future__ import annotations

import marshal
from fractions import Fraction

from ..records import Phase, Symbol, Term

FORMAT = 7

#: the prefix of the config fields only a checkpoint's headers set (vramsym.catalog.models.INTERNAL_PREFIX)
CHECKPOINT_FIELD = "ckpt_"

#: the bounds a symbol may declare with an expression: at most, at least, a whole multiple of
BOUNDS = ("max", "min", "multiple")


def _whole(v):
    """An exact value as the generated code's callers expect it: an ``int`` when whole."""
    if type(v) is int:
        return v
    v = Fraction(v)
    return v.numerator if v.denominator == 1 else v


class CompiledRegime:
    """A regime compiled to exact arithmetic: ``total(values)`` and ``components(values)``
    over a dict of exact values (``int`` or ``Fraction``) for ``args``."""

    __slots__ = ("data", "regime", "description", "options", "used_options", "symbols", "args",
                 "components", "overridden", "_total", "_evaluate", "_params", "defaults", "code_object", "_alias",
                 "bounds", "checks", "ranges", "checkpoint_options", "phases")

    def __init__(self, data: dict):
        if data.get("format") != FORMAT:
            raise ValueError("compiled regime of another format")
        ns: dict = {}
        # vramsym's own generated module: built in this process by assemble, or read
        # back from the private cache after its keyed hash was verified (vramsym.engine.cache);
        # the cache also keeps its bytecode (same interpreter: the cache key names it)
        if data.get("bytecode"):
            code = marshal.loads(bytes.fromhex(data["bytecode"]))
        else:
            code = compile(data["code"], f"<vramsym regime {data['regime']}>", "exec")
        self.code_object = code
        exec(code, ns)
        self.data = data
        self.regime = data["regime"]
        self.description = data["description"]
        self.options = tuple((k, v) for k, v in data["options"])
        self.used_options = tuple(data["used_options"])
        self.checkpoint_options = tuple(tuple(kv) for kv in data.get("checkpoint_options") or ())
        self.symbols = {n: Symbol.from_json(n, m) for n, m in data["symbols"].items()}
        self.args = tuple(data["args"])
        self.components = tuple(Term.from_json(c) for c in data["components"])
        self.overridden = tuple(data["overridden"])
        self._total = ns[data["total"]]
        self._evaluate = ns["_evaluate"]
        self.phases = tuple(Phase.from_json(p) for p in data["phases"])
        self._params = ns[data["params"]] if data.get("params") else None
        self.defaults = {n: ns["_default_" + n] for n, m in self.symbols.items() if m.default is not None}
        self.bounds = {(n, k): ns[f"_{k}_{n}"] for n, m in self.symbols.items() for k in BOUNDS
                       if m.bound(k) is not None}
        self._alias = {m.alias: n for n, m in self.symbols.items() if m.alias}
        # run-time ranges (low, high) around the defaults of symbols such as the CUDA context
        self.ranges = {n: (Fraction(m.range[0]), Fraction(m.range[1])) for n, m in self.symbols.items() if m.range}
        # every declared bound as (symbol, kind, the symbols it reads): what binding checks
        self.checks = tuple((n, k, frozenset([n, *m.bound(k).args]), None) for n, m in self.symbols.items()
                            for k in BOUNDS if m.bound(k) is not None)
        self.checks += tuple((n, "divides", frozenset((n, t)), t) for n, m in self.symbols.items()
                             for t in m.divides)

    def cache_payload(self) -> dict:
        """The data to cache: the compiled regime with its bytecode in place of its source."""
        return dict(self.data, code=None, bytecode=marshal.dumps(self.code_object).hex())

    def _args(self, values):
        return [values[a] for a in self.args]

    def total(self, values):
        """The exact total: an ``int``, or a ``Fraction`` when it is not whole."""
        return _whole(self._total(*[values[a] for a in self.args]))

    def phase_totals(self, values):
        """The exact total of each phase (``self.phases`` order); the total is the largest."""
        total, phases, _ = self._evaluate(*self._args(values))
        return [_whole(p) for p in phases] if phases else [_whole(total)]

    def parts(self, values):
        return [Fraction(v) for v in self._evaluate(*self._args(values))[2]]

    def params(self, values):
        return None if self._params is None else int(self._params(*self._args(values)))

    def symbol(self, name_or_alias: str):
        """The symbol name for a name or a command-line alias, or None."""
        if name_or_alias in self.symbols:
            return name_or_alias
        return self._alias.get(name_or_alias)
