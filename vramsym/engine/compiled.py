"""Stage 5: the compiled regime, the only thing that turns bound numbers into bytes.

``compile_regime(lib, composed)`` runs once per regime and resolved options (sympy is
needed there): it prints the composed regime with the exact Python printer of
``export --to python`` (the same code that command prints) and records the symbol
table binding needs. The result is plain data (JSON), which :mod:`vramsym.engine.cache`
persists. ``CompiledRegime(data)`` runs that code; binding (:mod:`vramsym.engine.bind`),
evaluation and the inverse solve (:mod:`vramsym.engine.inverse`) then need no sympy.
"""
from __future__ import annotations

from fractions import Fraction

FORMAT = 5


def compile_regime(lib, composed) -> dict:
    """The compiled regime as data: its code and its symbol table."""
    from ..printers.codegen import prepare, python_module
    from .regimes import used_options
    from ..lang.parse import deep_recursion
    with deep_recursion():
        prep = prepare(composed, lib, None, None, with_params=True)
        code = python_module(prep, lib)
    extra = _multiple_bounds(lib, composed, prep)
    code += extra["code"]
    defaults = dict(prep.defaults, **extra["defaults"])
    bounds = {n: dict(b) for n, b in prep.bounds.items()}
    for n, v in extra["multiple"].items():
        bounds.setdefault(n, {})["multiple"] = v
    needed = set(prep.args)
    for deps, _ in defaults.values():
        needed |= set(deps)
    for b in bounds.values():
        for kind, v in b.items():
            needed |= set(v) if kind == "divides" else set(v[0])
    symbols = {}
    for n in sorted(needed):
        d = lib.symbols[n]
        symbols[n] = {"alias": d.alias, "domain": d.domain, "keys": list(d.config_keys),
                      "description": d.description, "unit": lib.units.get(n, "1"),
                      "default": list(defaults[n][0]) if n in defaults else None}
        b = bounds.get(n, {})
        for kind in BOUNDS:
            if kind in b:
                symbols[n][kind] = {"args": list(b[kind][0]), "text": _text(lib, b[kind][1]),
                                    "options": _options_read(getattr(d, kind), dict(composed.options))}
        if "divides" in b:
            symbols[n]["divides"] = b["divides"]
        if d.low is not None:
            symbols[n]["range"] = [str(_constant(lib, composed, d.low)), str(_constant(lib, composed, d.high))]
    funcs = {e.key: "_" + e.func for e in prep.entries}
    comps = []
    for c in composed.components:
        t = lib.terms[c]
        comps.append({"name": c, "func": funcs[c], "description": t.description,
                      "unit": "byte" if t.share else lib.units.get(c, "byte"),
                      "host": bool(t.host),
                      "sources": list(t.sources), "definition": str(composed.definitions[c]),
                      "formula": str(composed.expanded[c])})
    # the timeline: each phase with the components alive in it and the function of its total
    # (None when the regime has one phase: its total is the regime's)
    from ..printers.codegen import PHASE_KEY
    phases = [{"name": p.name, "description": p.description, "components": list(p.components),
               "func": funcs.get(PHASE_KEY + p.name)} for p in composed.phases]
    used = used_options(lib, composed)
    used += sorted(p for p, d in lib.presets.items()      # a preset is in effect when what it sets is
                   if any(o in used for _, assigns, _ in d.cases for o, _, _ in assigns))
    # options a checkpoint chooses (read `from` a ckpt_* field), where chosen otherwise than by
    # default: what a message names when a checkpoint's field is missing (--weights-source file)
    opts = dict(composed.options)
    from_ckpt = [[o, opts[o]] for o in sorted(used) if o in lib.options and opts.get(o) != lib.options[o].default
                 and any(k.startswith(CHECKPOINT_FIELD) for k in lib.options[o].config_keys)]
    return {"format": FORMAT, "regime": composed.regime, "description": composed.description,
            "chain": list(composed.chain), "options": [list(kv) for kv in composed.options],
            "used_options": sorted(used), "checkpoint_options": from_ckpt, "overridden": list(composed.overridden),
            "args": list(prep.args), "symbols": symbols, "components": comps, "phases": phases, "total": funcs["total"],
            "params": funcs.get("P"), "code": code}


#: the prefix of the config fields only a checkpoint's headers set (vramsym.catalog.models.INTERNAL_PREFIX)
CHECKPOINT_FIELD = "ckpt_"

#: the bounds a symbol may declare with an expression: at most, at least, a whole multiple of
BOUNDS = ("max", "min", "multiple")


def _multiple_bounds(lib, composed, prep) -> dict:
    """The ``multiple`` bounds of the symbols the regime reads, as code (``_multiple_<symbol>``),
    with the defaults of the symbols they read that the printer did not reach:
    ``{"code": str, "multiple": symbol -> (arguments, expression), "defaults": {...}}``."""
    from ..lang.build import to_sympy
    from ..printers.codegen import _PY_RESERVED, ExactPythonPrinter, _safe
    opts = dict(composed.options)
    reached = [n for n in composed_symbols(prep) if n in lib.symbols]
    multiple, defaults, lines = {}, {}, []
    todo, seen = list(reached), set()
    while todo:
        n = todo.pop(0)
        if n in seen or n in prep.bound:
            continue
        seen.add(n)
        d = lib.symbols[n]
        for kind, e in (("default", d.default), ("multiple", d.multiple)):
            if e is None or (kind == "default" and n in reached):
                continue        # a default of a symbol the printer reached is printed already
            x = to_sympy(e, lambda s: composed.symbols[s], opts)
            deps = tuple(sorted(s.name for s in x.free_symbols))
            todo.extend(s for s in deps if s in lib.symbols)
            (multiple if kind == "multiple" else defaults)[n] = (deps, x)
            ren = {a: _safe(a, _PY_RESERVED) for a in deps}
            lines += ["", f"def _{kind}_{n}({', '.join(ren[a] for a in deps)}):",
                      f"    return {ExactPythonPrinter(ren).doprint(x)}", ""]
    return {"code": "\n".join(["", "# whole-multiple bounds (symbol: its arguments)", *lines]) if lines else "",
            "multiple": multiple, "defaults": defaults}


def _text(lib, expr) -> str:
    """A bound as messages show it: each symbol by its command-line name (``seq``, ``tp``)."""
    import sympy
    ren = {x: sympy.Symbol(lib.symbols[x.name].alias) for x in expr.free_symbols
           if x.name in lib.symbols and lib.symbols[x.name].alias}
    return str(expr.xreplace(ren))


def composed_symbols(prep):
    """The symbols a prepared regime reads, with those its defaults and bounds read."""
    out = list(prep.args)
    for deps, _ in prep.defaults.values():
        out += deps
    for b in prep.bounds.values():
        for kind, v in b.items():
            out += v if kind == "divides" else v[0]
    return list(dict.fromkeys(out))


def _options_read(expr, options) -> list:
    """The options a bound reads through ``match``, each with the choice in effect, as
    [[option, choice], ...]: what a message names (``with --offload optimizer-params``)."""
    from ..lang import ast as A
    out = []

    class Walk(A.Visitor):
        def visit_Match(self, e):
            chosen = options[e.option]
            if [e.option, chosen] not in out:
                out.append([e.option, chosen])
            for c in e.cases:
                if chosen in c.labels:
                    self.visit(c.expr)

    if expr is not None:
        Walk().visit(expr)
    return out


def _constant(lib, composed, expr) -> Fraction:
    """A constant of the formula files (a run-time range's end) as an exact Fraction."""
    from ..lang.build import to_sympy
    x = to_sympy(expr, lambda s: composed.symbols[s], dict(composed.options))
    return Fraction(str(x))


class CompiledRegime:
    """A regime compiled to exact arithmetic: ``total(values)`` and ``components(values)``
    over a dict of exact values (``int`` or ``Fraction``) for ``args``."""

    __slots__ = ("data", "regime", "description", "options", "used_options", "symbols", "args",
                 "components", "overridden", "_total", "_parts", "_params", "defaults", "code_object", "_alias",
                 "bounds", "checks", "ranges", "checkpoint_options", "phases", "_phase_funcs")

    def __init__(self, data: dict):
        if data.get("format") != FORMAT:
            raise ValueError("compiled regime of another format")
        ns: dict = {}
        # vramsym's own generated module: built in this process by compile_regime, or read
        # back from the private cache after its keyed hash was verified (vramsym.engine.cache);
        # the cache also keeps its bytecode (same interpreter: the cache key names it)
        if data.get("bytecode"):
            import marshal
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
        self.symbols = data["symbols"]
        self.args = tuple(data["args"])
        self.components = data["components"]
        self.overridden = tuple(data["overridden"])
        self._total = ns[data["total"]]
        self._parts = tuple(ns[c["func"]] for c in data["components"])
        self.phases = data["phases"]
        self._phase_funcs = tuple(ns[p["func"]] if p["func"] else self._total for p in self.phases)
        self._params = ns[data["params"]] if data.get("params") else None
        self.defaults = {n: ns["_default_" + n] for n, m in self.symbols.items() if m["default"] is not None}
        self.bounds = {(n, k): ns[f"_{k}_{n}"] for n, m in self.symbols.items() for k in BOUNDS if k in m}
        self._alias = {m["alias"]: n for n, m in self.symbols.items() if m["alias"]}
        # run-time ranges (low, high) around the defaults of symbols such as the CUDA context
        self.ranges = {n: (Fraction(m["range"][0]), Fraction(m["range"][1]))
                       for n, m in self.symbols.items() if m.get("range")}
        # every declared bound as (symbol, kind, the symbols it reads): what binding checks
        self.checks = tuple((n, k, frozenset([n, *m[k]["args"]]), None) for n, m in self.symbols.items()
                            for k in BOUNDS if k in m)
        self.checks += tuple((n, "divides", frozenset((n, t)), t) for n, m in self.symbols.items()
                             for t in m.get("divides") or ())

    def cache_payload(self) -> dict:
        """The data to cache: the compiled regime with its bytecode in place of its source."""
        import marshal
        return dict(self.data, code=None, bytecode=marshal.dumps(self.code_object).hex())

    def _args(self, values):
        return [values[a] for a in self.args]

    def total(self, values):
        """The exact total: an ``int``, or a ``Fraction`` when it is not whole."""
        return self._total(*[values[a] for a in self.args])

    def phase_totals(self, values):
        """The exact total of each phase (``self.phases`` order); the total is the largest."""
        a = self._args(values)
        return [f(*a) for f in self._phase_funcs]

    def parts(self, values):
        a = self._args(values)
        return [Fraction(f(*a)) for f in self._parts]

    def params(self, values):
        return None if self._params is None else int(self._params(*self._args(values)))

    def symbol(self, name_or_alias: str):
        """The symbol name for a name or a command-line alias, or None."""
        if name_or_alias in self.symbols:
            return name_or_alias
        return self._alias.get(name_or_alias)
