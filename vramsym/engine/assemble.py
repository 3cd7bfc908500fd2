"""Stage 5: a regime's units joined into the exact Python module that runs, without sympy.

:func:`assemble` takes the library's digest (:func:`vramsym.engine.units.digest`), a regime and
its resolved options, and the compiled definitions (units, :func:`vramsym.engine.units.compile_unit`)
that those options choose, and writes one function, ``_evaluate``, that computes every
definition the regime reaches once, in order, then each phase's total, the total (the largest
phase) and each component: what :func:`vramsym.engine.regimes.compose` expands with sympy, as
arithmetic on the values. ``TERM with {symbol = value}`` evaluates that term's definitions again
with the symbol's value replaced (those that read it); a definition that is 0 under these
options (per-layer inputs of a model without them) is 0 with everything that multiplies it, and
reads nothing. The result is the compiled regime as data (:class:`vramsym.engine.compiled.CompiledRegime`),
which :mod:`vramsym.engine.cache` keeps.
"""
from __future__ import annotations

import keyword
import re

#: the compiled regime's data format (vramsym.engine.compiled.FORMAT)
from .compiled import CHECKPOINT_FIELD, FORMAT
from .unit_keys import UNIT_FORMAT, specialized  # noqa: F401  (UNIT_FORMAT: what runtime checks)

_MARK = re.compile(r"@([A-Za-z_][A-Za-z0-9_]*)@")
_ATOM = re.compile(r"-?[0-9]+|[A-Za-z_][A-Za-z0-9_]*")

_RESERVED = set(keyword.kwlist) | {"Fraction", "math", "min", "max", "int", "float", "_q", "_exact",
                                    "_UNDEF", "_Undefined", "_evaluate", "_total", "_params"}

#: the generated module's first lines: exact quotients, and the value of a definition whose
#: division by zero lies on a branch nothing takes (any use of it divides by zero again)
PRELUDE = '''from fractions import Fraction
import math


def _q(n, d):
    """n / d exactly: an int when d divides n, else a Fraction."""
    if type(n) is int and type(d) is int:
        q, r = divmod(n, d)
        if not r:
            return q
    return Fraction(n, d)


class _Undefined:
    """A definition that divided by zero: computed ahead of the conditional that may not need it;
    any use of it divides by zero again."""

    def _raise(self, *args):
        raise ZeroDivisionError("division by zero")

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __rtruediv__ = _raise
    __floordiv__ = __rfloordiv__ = __pow__ = __rpow__ = __neg__ = __pos__ = __abs__ = _raise
    __lt__ = __le__ = __gt__ = __ge__ = __eq__ = __ne__ = __bool__ = __int__ = __float__ = _raise
    __hash__ = object.__hash__


_UNDEF = _Undefined()
'''


def leaf(tree: dict, options) -> dict:
    """The leaf ``options`` choose in a definition's tree: its unit key ``u`` and the terms ``n``
    it reads."""
    while "u" not in tree:
        tree = tree["c"][options[tree["o"]]]
    return tree


def safe(name: str) -> str:
    while name in _RESERVED:
        name += "_"
    return name


class _Regime:
    """One regime with its options: which definition each name is, and its unit."""

    def __init__(self, dig: dict, regime: str, options: dict, unit_of: "callable"):
        self.dig, self.options, self.unit_of = dig, options, unit_of
        self.R = dig["regimes"][regime]
        self.lets, self.terms = self.R["lets"], dig["terms"]
        self._units: dict[str, dict] = {}
        self._syms: dict[str, frozenset] = {}
        self._zero: dict[str, bool] = {}

    def is_def(self, n: str) -> bool:
        return n in self.lets or n in self.terms

    def ref(self, n: str) -> str:
        return self.lets[n] if n in self.lets else "t:" + n

    def unit(self, n: str) -> dict:
        """Definition ``n``'s unit for these options, with the terms it reads that are 0 here
        substituted (so what only they multiply is read no more, as sympy's expansion drops it)."""
        u = self._units.get(n)
        if u is None:
            lf = leaf(self.dig["exprs"][self.ref(n)]["tree"], self.options)
            zeros = [c for c in lf["n"] if c != n and self.is_def(c) and self.zero(c)]
            # the unit with those zeros substituted, else (where none is at hand) the unit as it
            # is: the same values (the zeros are 0 in it), perhaps reading a symbol more
            u = self._units[n] = self.unit_of(specialized(lf["u"], zeros), specialized(lf["u"], ()))
        return u

    def symbol_unit(self, n: str, kind: str) -> dict | None:
        ref = self.dig["symbols"][n][kind]
        if ref is None:
            return None
        key = specialized(leaf(self.dig["exprs"][ref]["tree"], self.options)["u"], ())
        return self.unit_of(key, key)

    def zero(self, n: str) -> bool:
        """Whether definition ``n`` is 0 under these options whatever the inputs: its unit is, or
        a term it reads as a factor is, or every term it reads is."""
        z = self._zero.get(n)
        if z is None:
            u = self.unit(n)
            reads = [t for t in set(u["args"]) | {w["target"] for w in u["withs"]} if self.is_def(t)]
            z = bool(u["zero"]) or any(self.is_def(t) and self.zero(t) for t in u.get("zero_if", ())) or \
                bool(u.get("zero_if_all") and reads and all(self.zero(t) for t in reads))
            self._zero[n] = z
        return z

    def symbols_of(self, n: str) -> frozenset:
        """The symbols definition ``n`` reads, through the definitions it reads."""
        s = self._syms.get(n)
        if s is None:
            out = set()
            if not self.zero(n):
                u = self.unit(n)
                for a in list(u["args"]) + [w["target"] for w in u["withs"]]:
                    out |= self.symbols_of(a) if self.is_def(a) else {a}
            s = self._syms[n] = frozenset(out)
        return s

    def resolved_closure(self, roots) -> list[str]:
        """The definitions ``roots`` read through their units (what a component's options are read
        from: vramsym.engine.compiler._reached)."""
        out, seen, todo = [], set(), list(roots)
        while todo:
            n = todo.pop(0)
            if n in seen or not self.is_def(n):
                continue
            seen.add(n)
            out.append(n)
            todo.extend(leaf(self.dig["exprs"][self.ref(n)]["tree"], self.options)["n"])
        return out

    def static_closure(self, roots) -> list[str]:
        """The definitions ``roots`` read in any case of their matches (vramsym.engine.regimes.compose's
        ``reached``)."""
        out, seen, todo = [], set(), list(roots)
        while todo:
            n = todo.pop()
            if n in seen or not self.is_def(n):
                continue
            seen.add(n)
            out.append(n)
            todo.extend(self.dig["exprs"][self.ref(n)]["names"])
        return out


class _Function:
    """The body of one generated function: each definition emitted once per set of symbol values
    it reads (``with`` changes some), in an order where each reads only what is already there."""

    def __init__(self, reg: _Regime, taken: set):
        self.reg = reg
        self.lines: list[str] = []
        self.memo: Dict = {}
        self.args: set = set()
        self.n = 0
        self.prefix = "_t"
        while any(t.startswith(self.prefix) for t in taken):
            self.prefix += "_"

    def fresh(self) -> str:
        self.n += 1
        return f"{self.prefix}{self.n}"

    def symbol(self, a: str, env: dict) -> str:
        if a in env:
            return env[a]
        self.args.add(a)
        return safe(a)

    def assign(self, pairs, guard: bool):
        """``var = code`` for each pair; under ``guard``, a division by zero makes the last one
        ``_UNDEF`` (its value is needed only where the old, inlined expression evaluated it)."""
        if not guard:
            self.lines += [f"    {v} = {c}" for v, c in pairs]
            return
        self.lines.append("    try:")
        self.lines += [f"        {v} = {c}" for v, c in pairs]
        self.lines += ["    except ZeroDivisionError:", f"        {pairs[-1][0]} = _UNDEF"]

    def emit(self, n: str, env: dict) -> str:
        reg = self.reg
        if reg.zero(n):
            return "0"
        syms = reg.symbols_of(n)
        key = (n, tuple(sorted((k, v) for k, v in env.items() if k in syms)))
        hit = self.memo.get(key)
        if hit is not None:
            return hit
        u = reg.unit(n)
        ren: dict[str, str] = {}
        for a in u["args"]:
            ren[a] = self.emit(a, env) if reg.is_def(a) else self.symbol(a, env)
        for w in u["withs"]:
            inner = dict(env)
            for k, code in w["binds"]:
                if reg.is_def(k):      # a definition's name is no symbol a `with` replaces (compose's xreplace)
                    continue
                v = self.fresh()
                self.assign([(v, render(code, ren))], "_q(" in code)
                inner[k] = v
            t = w["target"]
            ren[w["var"]] = self.emit(t, inner) if reg.is_def(t) else (inner[t] if t in inner else self.symbol(t, env))
        if not u["lines"]:      # a number or a name: used in place, no local of its own
            r = render(u["result"], ren)
            if _ATOM.fullmatch(r):
                r = f"({r})" if r.startswith("-") else r
                self.memo[key] = r
                return r
        pairs = []
        for loc, code in u["lines"]:
            v = self.fresh()
            pairs.append((v, render(code, ren)))
            ren[loc] = v
        out = self.fresh()
        pairs.append((out, render(u["result"], ren)))
        self.assign(pairs, any("_q(" in c for _, c in pairs))
        self.memo[key] = out
        return out


def render(code: str, ren: dict[str, str]) -> str:
    return _MARK.sub(lambda m: ren[m.group(1)], code)


def _sum(names) -> str:
    return " + ".join(names) if names else "0"


def _expanded_text(reg: _Regime, n: str, memo: dict, limit: int = 4000) -> str:
    """Definition ``n`` with the definitions it reads written out (a component's ``formula``);
    past ``limit`` characters, the names of those definitions stay."""
    if n in memo:
        return memo[n]
    memo[n] = n     # a guard while it is written
    u = reg.unit(n)
    text = "0" if reg.zero(n) else u["definition"]

    def sub(m):
        name = m.group(0)
        if reg.is_def(name) and name != n and name in u["args"]:
            inner = _expanded_text(reg, name, memo, limit)
            return f"({inner})"
        return name
    full = re.sub(r"[A-Za-z_][A-Za-z0-9_]*", sub, text)
    memo[n] = full if len(full) <= limit else text
    return memo[n]


def assemble(dig: dict, regime: str, options: dict, unit_of: "callable") -> dict:
    """The compiled regime ``regime`` with ``options`` (all resolved) as data: its code and its
    tables (vramsym.engine.compiled.CompiledRegime reads them)."""
    reg = _Regime(dig, regime, options, unit_of)
    R = reg.R
    terms = dig["terms"]
    taken = set(dig["symbols"])
    components = list(R["components"])
    phase_defs = {n: (d, list(own)) for n, d, own in R["phases"]}
    # the timeline, as compose makes it: a phase whose own terms are all 0 here is no moment of
    # this job; a term every phase names is alive in every phase
    kept = {n: (d, own) for n, (d, own) in phase_defs.items()
            if not (own and all(reg.zero(t) for t in own)
                    and not any(t in o for m, (_, o) in phase_defs.items() if m != n for t in own))}
    if kept:
        gone = {t for n, (_, own) in phase_defs.items() if n not in kept for t in own}
        components = [c for c in components if c not in gone]
        phase_defs = kept
    if len(phase_defs) > 1:
        every = set.intersection(*(set(own) for _, own in phase_defs.values()))
        phase_defs = {n: (d, [t for t in own if t not in every]) for n, (d, own) in phase_defs.items()}
    named = {t for _, own in phase_defs.values() for t in own}
    static = [c for c in components if c not in named]
    if not phase_defs:
        phase_defs = {"all": ("every component alive at once (the regime declares no phases)", [])}
    phases = [(n, d, [c for c in components if c not in named or c in own], own)
              for n, (d, own) in phase_defs.items()]
    host = {c for c in components if terms[c]["host"]}
    shares = [c for c in components if terms[c]["share"]]

    f = _Function(reg, taken)
    val = {c: f.emit(c, {}) for c in components}

    def gpu(names):
        return [val[c] for c in names if c not in shares and c not in host]
    if len(phases) == 1:
        peak = f.fresh()
        f.lines.append(f"    {peak} = {_sum(gpu(components))}")
    else:
        owns = []
        for _, _, _, own in phases:
            kept_own = [c for c in own if c not in shares and c not in host and not reg.zero(c)]
            if kept_own and kept_own not in owns:
                owns.append(kept_own)
        peak = f.fresh()
        top = ("0" if not owns else _sum([val[c] for c in owns[0]]) if len(owns) == 1
               else "max(" + ", ".join(f"({_sum([val[c] for c in o])})" for o in owns) + ")")
        f.lines.append(f"    {peak} = {_sum(gpu(static))} + {top}")
    parts = dict(val)
    for c in shares:
        parts[c] = f.fresh()
        f.lines.append(f"    {parts[c]} = {val[c]} * {peak}")
    total = f.fresh()
    if len(phases) == 1:
        f.lines.append(f"    {total} = {_sum([parts[c] for c in components if c not in host])}")
        phase_exprs = []
    else:
        f.lines.append(f"    {total} = {_sum([peak] + [parts[c] for c in shares])}")
        phase_exprs = []
        for _, _, alive, _ in phases:
            rest = f.fresh()
            f.lines.append(f"    {rest} = {_sum(gpu(alive))}")
            phase_exprs.append(_sum([rest] + [f"{val[c]} * {rest}" for c in shares]))
    args = sorted(f.args)
    params = ", ".join(safe(a) for a in args)
    code = [PRELUDE, "", f"def _evaluate({params}):", *f.lines,
            f"    return ({total}, ({''.join(e + ', ' for e in phase_exprs)}), "
            f"({''.join(parts[c] + ', ' for c in components)}))", "", "",
            f"def _total({params}):", f"    return _evaluate({params})[0]", ""]
    # the model's size, where the total reads every symbol it needs
    has_params = False
    if "P" in terms:
        g = _Function(reg, taken)
        p = g.emit("P", {})
        if g.args <= set(args):
            has_params = True
            code += ["", f"def _params({params}):", *g.lines, f"    return {p}", ""]
    symbols, extra = _symbol_table(reg, args)
    code += extra
    # the options read: anywhere in the definitions the regime reaches (compose's ``used_options``)
    opts = dict(options)
    used = sorted({o for n in reg.static_closure(list(R["components"]) + (["P"] if "P" in terms else []))
                   for o in dig["exprs"][reg.ref(n)]["options"]})
    used += sorted(p for p, assigns in dig["presets"].items() if any(o in used for o in assigns))
    from_ckpt = [[o, opts[o]] for o in sorted(used) if o in dig["options"] and opts.get(o) != dig["options"][o]["default"]
                 and any(k.startswith(CHECKPOINT_FIELD) for k in dig["options"][o]["keys"])]
    memo: dict = {}
    comps = []
    for c in components:
        t = terms[c]
        read = sorted({o for n in reg.resolved_closure([c]) for o in dig["exprs"][reg.ref(n)]["options"]})
        comps.append({"name": c, "func": c, "description": t["description"], "options": read,
                      "unit": "byte" if t["share"] else t["unit"], "host": t["host"], "sources": t["sources"],
                      "definition": reg.unit(c)["definition"],
                      "formula": (f"({_expanded_text(reg, c, memo)}) * (the peak phase's other GPU components)"
                                  if t["share"] else _expanded_text(reg, c, memo))})
    return {"format": FORMAT, "regime": regime, "description": R["description"], "chain": list(R["chain"]),
            "options": [list(kv) for kv in sorted(options.items())], "used_options": sorted(used),
            "checkpoint_options": from_ckpt, "overridden": sorted(R["lets"]), "args": args, "symbols": symbols,
            "components": comps,
            "phases": [{"name": n, "description": d, "components": alive, "func": None if len(phases) == 1 else n}
                       for n, d, alive, _ in phases],
            "total": "_total", "params": "_params" if has_params else None, "code": "\n".join(code)}


def _function(name: str, unit: dict) -> list[str]:
    deps = unit["args"]
    ren = {a: safe(a) for a in deps}
    lines = ["", f"def {name}({', '.join(ren[a] for a in deps)}):"]
    for i, (loc, code) in enumerate(unit["lines"]):
        ren[loc] = f"_l{i}"
        lines.append(f"    _l{i} = {render(code, ren)}")
    return lines + [f"    return {render(unit['result'], ren)}", ""]


def _symbol_table(reg: _Regime, args: list[str]):
    """The symbol table of the regime's arguments and of every symbol their defaults and bounds
    read, with the code of those defaults and bounds: what binding checks and fills in."""
    dsym = reg.dig["symbols"]
    defaults: dict[str, tuple] = {}
    bounds: dict[str, dict] = {}
    seen: set = set()
    todo = [a for a in args if a in dsym]
    while todo:
        n = todo.pop(0)
        if n in seen:
            continue
        seen.add(n)
        for kind in ("default", "max", "min"):
            u = reg.symbol_unit(n, kind)
            if u is None:
                continue
            if kind == "default":
                defaults[n] = (tuple(u["args"]), u)
            else:
                bounds.setdefault(n, {})[kind] = (tuple(u["args"]), u)
            todo.extend(s for s in u["args"] if s in dsym)
        if dsym[n]["divides"]:
            bounds.setdefault(n, {})["divides"] = list(dsym[n]["divides"])
            todo.extend(dsym[n]["divides"])
    reached = list(args)
    for deps, _ in defaults.values():
        reached += deps
    for b in bounds.values():
        for kind, v in b.items():
            reached += v if kind == "divides" else v[0]
    reached = [n for n in dict.fromkeys(reached) if n in dsym]
    code = []
    for n, (deps, u) in defaults.items():
        code += _function(f"_default_{n}", u)
    for n, b in bounds.items():
        for kind in ("max", "min"):
            if kind in b:
                code += _function(f"_{kind}_{n}", b[kind][1])
    extra: dict[str, tuple] = {}
    seen, todo = set(), list(reached)
    while todo:
        n = todo.pop(0)
        if n in seen:
            continue
        seen.add(n)
        for kind in ("default", "multiple"):
            u = reg.symbol_unit(n, kind)
            if u is None or (kind == "default" and n in reached):
                continue
            todo.extend(s for s in u["args"] if s in dsym)
            if kind == "multiple":
                bounds.setdefault(n, {})["multiple"] = (tuple(u["args"]), u)
            else:
                extra[n] = (tuple(u["args"]), u)
            code += _function(f"_{kind}_{n}", u)
    defaults.update(extra)
    needed = set(args)
    for deps, _ in defaults.values():
        needed |= set(deps)
    for b in bounds.values():
        for kind, v in b.items():
            needed |= set(v) if kind == "divides" else set(v[0])
    table = {}
    for n in sorted(needed):
        d = dsym[n]
        m = {"alias": d["alias"], "domain": d["domain"], "keys": list(d["keys"]), "description": d["description"],
             "unit": d["unit"], "default": list(defaults[n][0]) if n in defaults else None}
        for kind in ("max", "min", "multiple"):
            if kind in bounds.get(n, {}):
                deps, u = bounds[n][kind]
                m[kind] = {"args": list(deps), "text": u["text"], "options": [list(p) for p in u["path"]]}
        if "divides" in bounds.get(n, {}):
            m["divides"] = bounds[n]["divides"]
        if d["range"]:
            m["range"] = list(d["range"])
        table[n] = m
    return table, code
