"""Export a composed regime (or one of its terms) as code, a JSON expression tree, or LaTeX.

Every target prints the engine's sympy expressions with a sympy printer chosen by
dispatch and configured, not rewritten:

=========== ================================ =========================================
target      printer                          arithmetic
=========== ================================ =========================================
python      ``PythonCodePrinter`` subclass   exact: arguments become ``Fraction``\\ s,
                                             rationals print as ``Fraction(p, q)``,
                                             ``math.ceil``/``floor``, ``min``/``max``
numpy       ``NumPyPrinter``                 float64, vectorized over arrays
javascript  ``JavascriptCodePrinter``        Number (double)
c           ``C99CodePrinter``               double
json        ``TreePrinter`` (dicts)          exact (integers and ``p``/``q`` rationals)
latex       ``VramLatexPrinter``             the library's LaTeX names
=========== ================================ =========================================

Function names are ``<regime>_total`` and ``<regime>_<component>``; every function of
one export takes the same arguments, the free symbols left after binding, sorted by name.
"""
from __future__ import annotations

import dataclasses
from fractions import Fraction

import json
from typing import Mapping, Optional

import sympy
from sympy.printing.c import C99CodePrinter
from sympy.printing.jscode import JavascriptCodePrinter
from sympy.printing.numpy import NumPyPrinter
from sympy.printing.precedence import precedence
from sympy.printing.printer import Printer

# the exact Python printer and the prepared regime are the engine's (stage 5 compiles with them)
from ..engine.compiler import (_PY_RESERVED, PHASE_KEY, Entry, ExactPythonPrinter, Prepared,  # noqa: F401
                               _arg_doc, _header_lines, _multiple_bounds, _Renaming, _safe, _text, prepare,
                               py_module_start, py_string, python_module)
from ..engine.regimes import compose
from ..lang.diagnostics import InputError
from ..version import __version__
from .latex import name_latex, split_add
from .page_files import JS_EXACT_RUNTIME_FILE, js_exact_runtime, page_file  # noqa: F401

TARGETS = ("python", "numpy", "javascript", "c", "json", "latex")


# ---------------------------------------------------------------------------
# escaping: every user string (descriptions, sources, options) that goes into generated
# code passes through exactly one of these, chosen by the target

def c_comment(text: str) -> str:
    """``text`` for the inside of a C / JavaScript block comment: it cannot close the comment."""
    return str(text).replace("*/", "* /")


# ---------------------------------------------------------------------------
# identifiers

_JS_RESERVED = set("""break case catch class const continue debugger default delete do else enum export
extends false finally for function if implements import in instanceof interface let new null package
private protected public return static super switch this throw true try typeof var void while with
yield await arguments eval Math Number NaN Infinity undefined module""".split())
_C_RESERVED = set("""auto break case char const continue default do double else enum extern float for goto
if inline int long register restrict return short signed sizeof static struct switch typedef union
unsigned void volatile while _Bool _Complex _Imaginary fmin fmax ceil floor pow sqrt""".split())


# ---------------------------------------------------------------------------
# code printers (configured by dispatch)

class _DivideLast:
    """Mixin for floating-point targets: ``(p/q)*x`` prints as ``(p*x)/q``, so a whole-number
    quotient (``ceil(s/16)``, ``h/n_q``) is exact in double instead of off by one ulp."""
    _q_suffix = ""

    def _print_Mul(self, expr):
        c, rest = expr.as_coeff_Mul()
        if isinstance(c, sympy.Rational) and not isinstance(c, sympy.Integer) and rest != 1:
            num = (-c.p if c < 0 else c.p) * rest
            body = self.parenthesize(num, precedence(sympy.Mul(2, sympy.Symbol("x"), evaluate=False)))
            text = f"{body}/{c.q}{self._q_suffix}"
            return f"-{text}" if c < 0 else text
        return super()._print_Mul(expr)


class VecNumPyPrinter(_DivideLast, _Renaming, NumPyPrinter):
    def __init__(self, renames, settings=None):
        super().__init__(settings or {})
        self._renames = renames


class JSPrinter(_DivideLast, _Renaming, JavascriptCodePrinter):
    def __init__(self, renames, settings=None):
        super().__init__(settings or {})
        self._renames = renames


class CPrinter(_DivideLast, _Renaming, C99CodePrinter):
    _q_suffix = ".0"

    def _print_Integer(self, expr):
        # beyond int: a double literal, so no integer constant can overflow its C type
        return f"{int(expr)}.0" if abs(int(expr)) >= 2**31 else super()._print_Integer(expr)
    def __init__(self, renames, settings=None):
        super().__init__(settings or {})
        self._renames = renames


# ---------------------------------------------------------------------------
# targets

def _numpy(p: Prepared, lib) -> str:
    ren, pr, params, out = py_module_start(p, lib, "numpy", VecNumPyPrinter, [
        "Vectorized: every argument may be a scalar or an array (broadcast together);",
        "arithmetic in float64, results are float64 arrays of the broadcast shape."],
        ["import functools", "import numpy"])
    for e in p.entries:
        out += ["", f"def {e.func}({params}):",
                "    " + py_string(f"{e.description} [{e.unit}], elementwise.")]
        for a in p.args:
            out.append(f"    {ren[a]} = numpy.asarray({ren[a]}, dtype=numpy.float64)")
        shape = f"numpy.broadcast({params}).shape" if p.args else "()"
        if len(p.args) > 32:     # numpy.broadcast takes at most 32 arguments
            shape = f"numpy.broadcast_shapes(*(numpy.shape(v) for v in ({params},)))"
        out.append(f"    result = {pr.doprint(e.expr)}")
        out.append(f"    return numpy.broadcast_to(numpy.asarray(result, dtype=numpy.float64), {shape}).copy()")
        out.append("")
    return "\n".join(out)


def _javascript(p: Prepared, lib) -> str:
    ren = {a: _safe(a, _JS_RESERVED) for a in p.args}
    pr = JSPrinter(ren)
    params = ", ".join(ren[a] for a in p.args)
    out = ["/*"] + [" * " + c_comment(ln) for ln in _header_lines(p, lib, "javascript")] + [
        " * Arithmetic in JavaScript Numbers (IEEE double); no BigInt.", " */", '"use strict";', ""]
    for e in p.entries:
        out.append("/**")
        out.append(" * " + c_comment(f"{e.description} [{e.unit}]."))
        for a in p.args:
            out.append(f" * @param {{number}} {ren[a]} " + c_comment(_arg_doc(lib, a, with_name=False)))
        out.append(" * @returns {number}")
        out.append(" */")
        body = pr.doprint(e.expr).replace("\n", "\n    ")
        out += [f"function {e.func}({params}) {{", f"    return {body};", "}", ""]
    names = ", ".join(e.func for e in p.entries)
    out += ["if (typeof module !== \"undefined\" && module.exports) {",
            f"    module.exports = {{ {names}, ARGUMENTS: {json.dumps([ren[a] for a in p.args])} }};",
            "}", ""]
    return "\n".join(out)


def _c(p: Prepared, lib) -> str:
    ren = {a: _safe(a, _C_RESERVED) for a in p.args}
    pr = CPrinter(ren)
    params = ", ".join(f"double {ren[a]}" for a in p.args) or "void"
    out = ["/*"] + [" * " + c_comment(ln) for ln in _header_lines(p, lib, "c")] + [
        " * Arithmetic in double; link with -lm.", " */", "#include <math.h>", ""]
    for e in p.entries:
        out.append("/* " + c_comment(f"{e.description} [{e.unit}].") + " */")
        body = pr.doprint(e.expr).replace("\n", "\n    ")
        out += [f"double {e.func}({params}) {{", f"    return {body};", "}", ""]
    return "\n".join(out)


# ---- json ----

def _node(op: str, *fields):
    """A :class:`TreePrinter` method: ``{"op": op, "args": [...]}``, the args being the node's
    ``args`` or its named ``fields`` (``lhs``, ``rhs``), each printed in turn."""
    def method(self, expr):
        return {"op": op, "args": [self._print(a) for a in
                                   ([getattr(expr, f) for f in fields] if fields else expr.args)]}
    method.__doc__ = f"op {op!r}"
    return method


class TreePrinter(Printer):
    """An expression as a JSON tree (:func:`tree`): a sympy ``Printer`` whose ``_print_<Class>``
    methods return dicts, chosen by sympy's dispatch on the node's class (most derived first);
    a node without one is refused by name."""

    def doprint(self, expr) -> dict:
        return self._print(expr)

    def emptyPrinter(self, expr):
        raise InputError(f"cannot export {type(expr).__name__} ({expr}) to JSON")

    def _print_BooleanTrue(self, expr):
        return {"op": "true"}

    def _print_BooleanFalse(self, expr):
        return {"op": "false"}

    def _print_Symbol(self, expr):
        return {"op": "symbol", "name": expr.name}

    def _print_Integer(self, expr):
        return {"op": "integer", "value": int(expr)}

    def _print_Rational(self, expr):
        return {"op": "rational", "p": int(expr.p), "q": int(expr.q)}

    def _print_Number(self, expr):      # every other number (Float, oo, nan): not exact
        raise InputError(f"cannot export the inexact number {expr} to JSON")

    _print_Add = _node("add")
    _print_Mul = _node("mul")
    _print_Pow = _node("pow", "base", "exp")
    _print_Min = _node("min")
    _print_Max = _node("max")
    _print_ceiling = _node("ceil")
    _print_floor = _node("floor")
    _print_StrictLessThan = _node("<", "lhs", "rhs")
    _print_LessThan = _node("<=", "lhs", "rhs")
    _print_StrictGreaterThan = _node(">", "lhs", "rhs")
    _print_GreaterThan = _node(">=", "lhs", "rhs")
    _print_Equality = _node("==", "lhs", "rhs")
    _print_Unequality = _node("!=", "lhs", "rhs")

    def _print_Piecewise(self, expr):
        # pairs [expr, cond] in order; the first true condition wins
        return {"op": "piecewise", "args": [{"op": "case", "args": [self._print(x), self._print(c)]}
                                            for x, c in expr.args]}


def tree(e) -> dict:
    """An expression as ``{"op": ..., "args": [...]}``; leaves: ``{"op": "symbol", "name"}``,
    ``{"op": "integer", "value"}``, ``{"op": "rational", "p", "q"}``, ``{"op": "true"}``.

    Ops: add, mul, pow, min, max, ceil, floor, piecewise (args: pairs [expr, cond], in order,
    the first true condition wins), and comparisons < <= > >= == !=. Printed by :class:`TreePrinter`."""
    return TreePrinter().doprint(e)


def _json(p: Prepared, lib) -> str:

    def sym(n):
        d = lib.symbols.get(n)
        info = {"unit": lib.units.get(n, "1"), "description": d.description if d else "",
                "latex": name_latex(lib, n)}
        if d is not None:
            info.update({"domain": d.domain, "alias": d.alias, "config_keys": list(d.config_keys),
                         "sources": list(d.sources)})
        return info

    def term(n):
        t = lib.terms.get(n)
        return {"description": t.description if t else f"{n} (regime override)",
                "unit": lib.units.get(n, ""), "latex": name_latex(lib, n),
                "sources": list(t.sources) if t else ["regime override (let)"]}

    doc = {
        "format": "vramsym-expression-tree/1",
        "generator": f"vramsym {__version__}",
        "regime": p.regime,
        "description": p.description,
        "options": dict(p.options),
        "arguments": list(p.args),
        "bound": {k: {"p": v.numerator, "q": v.denominator, **sym(k)} for k, v in sorted(p.bound.items())},
        "symbols": {a: sym(a) for a in p.args},
        "functions": [{"name": e.func, "key": e.key, "description": e.description, "unit": e.unit,
                       "sources": list(e.sources), "expr": tree(e.expr)} for e in p.entries],
        "terms": {n: term(n) for n in p.terms},
    }
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def _latex(p: Prepared, lib) -> str:
    lines = ["% " + ln for ln in _header_lines(p, lib, "latex")]
    rows = []
    for e in p.entries:
        if e.key.startswith(PHASE_KEY):
            lhs = r"M_{\mathrm{" + e.key[len(PHASE_KEY):].replace("_", r"\_") + "}}"
        else:
            lhs = "M" if e.key == "total" else name_latex(lib, e.key)
        args = ", ".join(name_latex(lib, a) for a in p.args)
        parts = split_add(e.expr, lib)
        lhs_full = rf"{lhs}\left({args}\right)" if args else lhs
        rows.append(f"{lhs_full} &= {parts[0]}")
        rows += [rf"&\quad {x}" for x in parts[1:]]
    lines += [r"\begin{align*}", " \\\\\n".join(rows), r"\end{align*}", ""]
    return "\n".join(lines)


def _python_engine(p: Prepared, composed, lib) -> str:
    """``export --to python`` of a whole regime: the module the engine itself runs for it
    (vramsym.engine.assemble: the regime's compiled definitions, one exact function), verbatim,
    then a public function per total, phase and component that passes the bound constants and
    the arguments to it."""
    from ..engine.runtime import Vocabulary     # the regime as the engine runs it (not what page groups read)
    compiled = Vocabulary.of(library=lib).compiled(composed.regime, dict(composed.options))
    args = [a for a in compiled.args if a not in p.bound]
    p = dataclasses.replace(p, args=tuple(args))
    ren, _, params, out = py_module_start(p, lib, "python", ExactPythonPrinter, [
        "Exact: every argument is converted with Fraction() (pass ints, Fractions or decimal",
        "strings); a result is an int when whole, else a Fraction. No sympy needed. The code",
        "below `_evaluate` is the code vramsym runs for this regime and these options."],
        [])
    phases = [ph.name for ph in compiled.phases]
    comps = [c.name for c in compiled.components]

    def const(v):
        v = Fraction(v)
        return str(v.numerator) if v.denominator == 1 else f"Fraction({v.numerator}, {v.denominator})"
    call = "_evaluate(" + ", ".join(const(p.bound[a]) if a in p.bound else f"_exact({ren[a]})"
                                   for a in compiled.args) + ")"
    out += [compiled.data["code"], "", "",
            "def _exact(value):",
            "    value = Fraction(value)",
            "    return value.numerator if value.denominator == 1 else value", ""]
    for e in p.entries:
        if e.key == "total":
            pick = "[0]"
        elif e.key.startswith(PHASE_KEY):
            pick = f"[1][{phases.index(e.key[len(PHASE_KEY):])}]" if len(phases) > 1 else "[0]"
        else:
            pick = f"[2][{comps.index(e.key)}]"
        out += ["", f"def {e.func}({params}):", "    " + py_string(f"{e.description} [{e.unit}]."),
                f"    return _exact({call}{pick})", ""]
    defaults = {n: m.default for n, m in compiled.symbols.items() if m.default is not None and n not in p.bound}
    out += ["", "# defaults of symbols a model's config may leave out (symbol: its arguments): _default_<symbol>",
            f"DEFAULTS = {{{', '.join(f'{n!r}: {tuple(d)!r}' for n, d in defaults.items())}}}", ""]
    return "\n".join(out)


_EMIT = {"python": python_module, "numpy": _numpy, "javascript": _javascript, "js": _javascript,
         "c": _c, "json": _json, "latex": _latex}


def export(composed, lib, target: str, binding_values: Optional[Mapping[str, object]] = None,
           term: Optional[str] = None) -> str:
    emit = _EMIT.get(target.lower())
    if emit is None:
        raise InputError(f"unknown export target '{target}': use one of {', '.join(TARGETS)}")
    prepared = prepare(composed, lib, binding_values, term)
    if emit is python_module and term is None:
        return _python_engine(prepared, composed, lib)
    return emit(prepared, lib)


# ---------------------------------------------------------------------------
# exact JavaScript: BigInt rationals, for the calculator page (vramsym.printers.calculator)

# the runtime the exact expressions call (values are [numerator, denominator] BigInt pairs):
# the JavaScript file ``page/exact.js`` (vramsym.printers.page_files.js_exact_runtime)


def __getattr__(name):
    if name == "JS_EXACT_RUNTIME":       # read on first use, not at import
        return js_exact_runtime()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _js_call(name: str):
    """An :class:`ExactJSPrinter` method: the runtime's function ``known_functions[name]`` of the
    node's printed args."""
    def method(self, expr):
        return f"{self.known_functions[name]}({', '.join(self._print(a) for a in expr.args)})"
    method.__doc__ = f"{name} -> known_functions[{name!r}]"
    return method


def _js_relation(name: str):
    """An :class:`ExactJSPrinter` method: the runtime's comparison ``known_relations[name]``."""
    def method(self, expr):
        return f"{self.known_relations[name]}({self._print(expr.lhs)}, {self._print(expr.rhs)})"
    method.__doc__ = f"{name} -> known_relations[{name!r}]"
    return method


class ExactJSPrinter(Printer):
    """Exact JavaScript over the runtime ``Q`` of ``page/exact.js``: a sympy ``Printer`` whose
    ``_print_<Class>`` methods are chosen by sympy's dispatch on the node's class; every number
    prints as a BigInt pair ``[pn, qn]``, every symbol as ``a["name"]`` (setting ``arg``), and a
    node without a method is refused by name."""

    _default_settings = {"arg": "a"}

    #: sympy functions and n-ary operations -> the runtime's function of their arguments
    known_functions = {"Add": "Q.ad", "Mul": "Q.mu", "Max": "Q.mx", "Min": "Q.mn",
                       "ceiling": "Q.ce", "floor": "Q.fl"}
    #: relations -> the runtime's comparison
    known_relations = {"StrictGreaterThan": "Q.gt", "GreaterThan": "Q.ge", "StrictLessThan": "Q.lt",
                       "LessThan": "Q.le", "Equality": "Q.eq", "Unequality": "Q.ne"}

    def emptyPrinter(self, expr):
        raise InputError(f"exact JavaScript has no form for {type(expr).__name__} ({expr})")

    def _print_BooleanTrue(self, expr):
        return "true"

    def _print_BooleanFalse(self, expr):
        return "false"

    def _print_Rational(self, expr):     # and Integer, a subclass
        return f"[{int(expr.p)}n, {int(expr.q)}n]"

    def _print_Symbol(self, expr):
        # the name as a JSON string: it cannot end the expression
        return f"{self._settings['arg']}[{json.dumps(expr.name)}]"

    _print_Add = _js_call("Add")
    _print_Mul = _js_call("Mul")
    _print_Max = _js_call("Max")
    _print_Min = _js_call("Min")
    _print_ceiling = _js_call("ceiling")
    _print_floor = _js_call("floor")
    _print_StrictGreaterThan = _js_relation("StrictGreaterThan")
    _print_GreaterThan = _js_relation("GreaterThan")
    _print_StrictLessThan = _js_relation("StrictLessThan")
    _print_LessThan = _js_relation("LessThan")
    _print_Equality = _js_relation("Equality")
    _print_Unequality = _js_relation("Unequality")

    def _print_Pow(self, expr):
        base, ex = expr.args
        if not ex.is_Integer:
            raise InputError(f"exact JavaScript takes whole powers only, not {expr}")
        return f"Q.pw({self._print(base)}, {int(ex)})"

    def _print_Piecewise(self, expr):
        out = "(() => { throw new Error('no branch of a piecewise term holds'); })()"
        for branch in reversed(expr.args):
            cond = branch.cond
            out = (self._print(branch.expr) if cond is sympy.true
                   else f"({self._print(cond)} ? {self._print(branch.expr)} : {out})")
        return out

    def _print_And(self, expr):
        return "(" + " && ".join(self._print(a) for a in expr.args) + ")"

    def _print_Or(self, expr):
        return "(" + " || ".join(self._print(a) for a in expr.args) + ")"

    def _print_Not(self, expr):
        return f"!({self._print(expr.args[0])})"


def js_exact(expr, arg: str = "a") -> str:
    """``expr`` as exact JavaScript over the runtime :func:`js_exact_runtime`: every number a BigInt
    rational, every symbol ``arg["name"]`` (a name is a JSON string: it cannot end the expression).
    Printed by :class:`ExactJSPrinter`."""
    return ExactJSPrinter({"arg": arg}).doprint(expr)


def page_group(lib, regime: str, options: dict, free: dict, given=()) -> dict:
    """One group of the calculator page (vramsym.printers.calculator): the regime with its resolved
    options, printed from the sympy expressions as exact JavaScript, each a function of the
    arguments ``a``:

    - ``components``: each component's name, description, sources, whether it is host memory,
      its definition and formula as text and ``js``, the function of its bytes; a ``share``
      component (allocator slack: a fraction of the peak phase's other GPU components) has the
      function of its fraction instead, the page multiplies it by ``peak``;
    - ``peak``: the components whose sum is that peak (``static``, plus the largest of the sums of
      ``owns``), as the engine composes it (vramsym.engine.regimes.compose);
    - ``phases``: the timeline, the components alive in each (indices into components);
    - ``derived``: the symbols whose default reads what the page gives (``free``: input alias ->
      symbol, and ``given``: the symbols the chosen GPU sets), in an order that computes each
      after what it reads, with their domains;
    - ``checks``: every bound the formula files declare (max, min, multiple, divides) that reads
      one of those, as the engine checks them at binding (vramsym.engine.bind.check_bounds);
    - ``symbols``: the alias, description and domain of each symbol these name."""
    composed = compose(lib, regime, dict(options))
    prep = prepare(composed, lib)
    comps = [e for e in prep.entries if e.key != "total" and not e.key.startswith(PHASE_KEY)]
    index = {e.key: i for i, e in enumerate(comps)}
    host = set(composed.host)
    shares = [c for c in composed.components if c in lib.terms and lib.terms[c].share]

    def gpu(names):
        return [c for c in names if c not in shares and c not in host]

    def gpu_sum(names):
        return sympy.Add(*[composed.expanded[c] for c in gpu(names)])

    # the peak the shares are a fraction of, as regimes.compose builds it
    if len(composed.phases) == 1:
        static, owns = gpu(composed.components), []
        peak = gpu_sum(composed.components)
    else:
        static = gpu(composed.static)
        owns = [gpu(p.own) for p in composed.phases if gpu_sum(p.own) != 0]
        exprs = list(dict.fromkeys(gpu_sum(o) for o in owns)) or [sympy.Integer(0)]
        peak = gpu_sum(composed.static) + (exprs[0] if len(exprs) == 1 else sympy.Max(*exprs, evaluate=False))
    fractions = {}
    for c in shares:
        d = composed.definitions[c]
        frac = d.xreplace({s: composed.expanded[s.name] for s in d.free_symbols
                           if s.name in composed.definitions and s.name != c})
        if frac * peak == composed.expanded[c]:     # else printed whole, as every other component
            fractions[c] = frac
    components = []
    for e in comps:
        share = e.key in fractions
        components.append({
            "name": e.key, "description": e.description, "host": e.key in host, "sources": list(e.sources),
            "share": share, "js": f"(a) => {js_exact(fractions[e.key] if share else e.expr)}",
            "definition": str(composed.definitions.get(e.key, "")),
            "formula": (f"{fractions[e.key]} * (the peak phase's other GPU components)" if share
                        else str(composed.expanded.get(e.key, "")))})

    # what the page gives, what defaults read it, and the bounds that read either
    extra = _multiple_bounds(lib, composed, prep)
    defaults = dict(prep.defaults, **extra["defaults"])
    bounds = {n: dict(b) for n, b in prep.bounds.items()}
    for n, v in extra["multiple"].items():
        bounds.setdefault(n, {})["multiple"] = v
    moving = set(free.values()) | set(given)
    # a GPU's symbol has its default where the GPU does not set it (the CUDA total of a card
    # the catalog has no measure of)
    derived, grew = {n for n in given if n in defaults}, True
    while grew:
        grew = False
        for n, (deps, _) in defaults.items():
            if n not in free.values() and n not in derived and set(deps) & (moving | derived):
                derived.add(n)
                grew = True
    order = []
    while len(order) < len(derived):
        ready = sorted(n for n in derived - set(order) if not (set(defaults[n][0]) & derived) - set(order))
        if not ready:
            raise InputError(f"regime {regime}: cyclic defaults among {', '.join(sorted(derived - set(order)))}")
        order += ready
    reads = moving | derived
    checks = []
    for n in sorted(bounds):
        for kind in ("max", "min", "multiple"):
            if kind in bounds[n]:
                deps, x = bounds[n][kind]
                if ({n} | set(deps)) & reads:
                    checks.append({"symbol": n, "kind": kind, "args": list(deps), "text": _text(lib, x),
                                   "js": f"(a) => {js_exact(x)}"})
        for t in bounds[n].get("divides", ()):
            if {n, t} & reads:
                checks.append({"symbol": n, "kind": "divides", "target": t})
    named = reads | {c["symbol"] for c in checks} | {c["target"] for c in checks if "target" in c} \
        | {d for c in checks for d in c.get("args", ())}
    return {"args": list(prep.args), "description": composed.description,
            "components": components,
            "peak": {"static": [index[c] for c in static], "owns": [[index[c] for c in o] for o in owns]},
            # the timeline: the page's total is the largest phase total, the sum of the components
            # alive in the phase (indices into components)
            "phases": [{"name": ph.name, "description": ph.description,
                        "components": [index[c] for c in ph.components]} for ph in composed.phases],
            "derived": [{"symbol": n, "args": list(defaults[n][0]), "js": f"(a) => {js_exact(defaults[n][1])}"}
                        for n in order],
            "checks": checks,
            "symbols": {n: {"alias": lib.symbols[n].alias, "description": lib.symbols[n].description,
                            "domain": str(lib.symbols[n].domain)} for n in sorted(named) if n in lib.symbols}}
