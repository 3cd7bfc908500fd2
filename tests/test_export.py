"""Exports (vramsym.printers.codegen): round trips against the engine's exact arithmetic.

Each target's text is generated, then run (Python exec'd here, NumPy vectorized, JavaScript
under node, C compiled with gcc, JSON re-evaluated by a tiny evaluator, LaTeX parsed by
KaTeX) on random configurations drawn with hypothesis, and compared with the composed
regime's expressions evaluated exactly (sympy rationals).
"""
from __future__ import annotations

import functools
import json
import math
import shutil
import subprocess
from fractions import Fraction
from typing import Dict, List

import pytest
import sympy
from hypothesis import HealthCheck, given, settings, strategies as st

import vramsym
from vramsym.printers.codegen import export
from vramsym.printers.codegen import prepare
from vramsym.engine.regimes import used_options

from katex_util import katex_failures, latex_math

SETTINGS = settings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck))


# ---------------------------------------------------------------------------
# regimes and option variants

@functools.lru_cache(maxsize=None)
def _lib():
    return vramsym.load_library(use_cache=False)


@functools.lru_cache(maxsize=None)
def composed(regime: str, options: tuple = ()):
    return vramsym.compose(regime, dict(options), library=_lib())


def _regimes() -> List[str]:
    return sorted(_lib().regimes)


def _variants() -> List[tuple]:
    """Every regime with its defaults, plus inference and train with each choice of each option
    they use, one option at a time (min/max, if/Piecewise, ceil and rational formats). Only the
    two defaults are composed here (collection runs in every pytest-xdist worker); a choice the
    library refuses for its regime skips in the test that composes it (:func:`variant_composed`)."""
    out = [(r, ()) for r in _regimes()]
    lib = _lib()
    for r in ("inference", "train"):
        if r not in lib.regimes:
            continue
        for o in used_options(lib, composed(r)):
            out += [(r, ((o, ch),)) for ch in lib.options[o].choices if ch != composed(r).option(o)]
    return out


def _composes(variant) -> bool:
    try:
        composed(*variant)
    except vramsym.VramError:
        return False
    return True


def variant_composed(variant):
    """The variant's composed regime; a choice the library refuses for this regime (an error with a
    sentence, no expressions to export) skips."""
    if variant[1] and not _composes(variant):
        pytest.skip(f"{_id(variant)}: the library refuses this choice for the regime")
    return composed(*variant)


try:    # parameters are needed at collection; a broken library fails test_library_loads instead
    VARIANTS = _variants()
    DEFAULTS = [(r, ()) for r in _regimes()]
    LOAD_ERROR = None
except vramsym.VramError as e:
    VARIANTS, DEFAULTS, LOAD_ERROR = [], [], e


def test_library_loads():
    if LOAD_ERROR is not None:
        raise LOAD_ERROR


def _float_variants() -> List[tuple]:
    """A few regimes, plus the first other choice of the options that bring min/max,
    if (Piecewise), rational formats and recomputation: enough for the float targets."""
    out = [(r, ()) for r in ("inference", "train", "qlora") if r in _lib().regimes] or DEFAULTS[:2]
    seen = set()
    for v in VARIANTS:
        if v[1] and v[1][0][0] in ("kv_window", "attention_arch", "quant", "checkpointing") \
                and (v[0], v[1][0][0]) not in seen and _composes(v):
            seen.add((v[0], v[1][0][0]))
            out.append(v)
    return out


FLOAT_VARIANTS = _float_variants() if LOAD_ERROR is None else []


def _id(v):
    r, opts = v
    return r + "".join(f"[{k}={c}]" for k, c in opts)


# ---------------------------------------------------------------------------
# random configurations

def _symbol_strategy(lib, name: str):
    d = lib.symbols[name]
    unit = lib.units.get(name, "1")
    hi = {"layer": 96, "sequence": 256, "token / sequence": 131072, "byte": 2**34}.get(unit, 16384)
    if d.domain == "bool":
        return st.integers(0, 1).map(Fraction)
    if d.domain == "posint":
        return st.integers(1, hi).map(Fraction)
    if d.domain == "nonnegint":
        return st.integers(0, hi).map(Fraction)
    lo = Fraction(1, 16) if d.domain == "posreal" else Fraction(0)
    return st.fractions(min_value=lo, max_value=hi, max_denominator=64)


def config_strategy(lib, names):
    """Values for ``names``; counts of layers (L_swa, L_moe, k_train, ...) stay within L."""
    strat = st.fixed_dictionaries({n: _symbol_strategy(lib, n) for n in names})

    def clip(cfg):
        if "L" in cfg:
            for n, v in cfg.items():
                if n != "L" and lib.units.get(n) == "layer":
                    cfg[n] = min(v, cfg["L"])
        return cfg
    return strat.map(clip)


def exact_value(expr, values: Dict[str, Fraction]) -> Fraction:
    r = expr.xreplace({s: sympy.Rational(values[s.name].numerator, values[s.name].denominator)
                       for s in expr.free_symbols})
    assert r.is_Rational, r
    return Fraction(int(r.p), int(r.q))


def scale_of(expr, values) -> float:
    """The largest magnitude among the summands: the scale of a float rounding error. A product
    scales its factors' scales (a share term multiplies a sum whose summands cancel); a max, a min
    or a piecewise takes the largest scale of what it chooses among (a max of a sum whose summands
    cancel to a small value: the sum's rounding error is the summands' scale, not the value's)."""
    if isinstance(expr, sympy.Mul):
        out = 1.0
        for a in expr.args:
            out *= scale_of(a, values)
        return max(out, 1.0)
    if isinstance(expr, (sympy.Max, sympy.Min)):      # a max of sums: the scale of the sum evaluated
        return max([scale_of(a, values) for a in expr.args] + [1.0])
    if isinstance(expr, sympy.Piecewise):
        return max([scale_of(e, values) for e, _ in expr.args] + [1.0])
    parts = expr.args if isinstance(expr, sympy.Add) else (expr,)
    return max([scale_of(p, values) if isinstance(p, sympy.Mul) and p is not expr else abs(float(exact_value(p, values)))
                for p in parts] + [1.0])


def close(got: float, exp: Fraction, scale: float, rel: float) -> bool:
    return abs(got - float(exp)) <= rel * max(abs(float(exp)), scale)


def load_python(text: str) -> dict:
    ns: dict = {}
    exec(compile(text, "<vramsym export>", "exec"), ns)
    return ns


# ---------------------------------------------------------------------------
# python: exact

@pytest.mark.parametrize("variant", VARIANTS, ids=_id)
def test_python_export_is_exact(variant):
    lib = _lib()
    comp = variant_composed(variant)
    text = export(comp, lib, "python")
    assert "sympy" not in text.split('"""', 2)[-1]      # no sympy import or call in the code
    ns = load_python(text)
    prep = prepare(comp, lib)
    # the engine's module (vramsym.engine.assemble) reads every symbol sympy's expansion keeps, and
    # may read one more whose terms cancel only in the expansion (it changes nothing)
    assert list(prep.args) == comp.free_symbols() and set(prep.args) <= set(ns["ARGUMENTS"])

    @SETTINGS
    @given(config_strategy(lib, ns["ARGUMENTS"]))
    def check(cfg):
        args = [cfg[a] for a in ns["ARGUMENTS"]]
        for e in prep.entries:
            got = ns[e.func](*args)
            assert isinstance(got, (int, Fraction)), type(got)
            assert got == exact_value(e.expr, cfg), (e.func, cfg)
        # ints in, the same exact answer (no float path)
        if all(v.denominator == 1 for v in args):
            assert ns[prep.entries[0].func](*[int(v) for v in args]) == exact_value(prep.entries[0].expr, cfg)
    check()


@pytest.mark.parametrize("regime", ["inference", "train"])
def test_python_export_equals_engine_estimate(regime):
    lib = _lib()
    m = vramsym.load_model("llama-3.1-8b")
    est = vramsym.estimate(m, regime=regime, inputs={"batch": 3, "seq": 1000}, library=lib)
    comp = vramsym.compose(regime, model=m, library=lib)
    ns = load_python(export(comp, lib, "python"))
    vals = est.binding.values
    args = [vals[a] for a in ns["ARGUMENTS"]]
    assert ns[f"{regime}_total"](*args) == est.exact_total
    for c in est.components:
        assert ns[f"{regime}_{c.name}"](*args) == c.exact, c.name
    # bind everything but b and s: a function of the batch and the length only
    bound = {k: v for k, v in vals.items() if k not in ("b", "s")}
    ns2 = load_python(export(comp, lib, "python", binding_values=bound))
    assert ns2["ARGUMENTS"] == ["b", "s"]
    assert ns2[f"{regime}_total"](3, 1000) == est.exact_total
    # one term only
    ns3 = load_python(export(comp, lib, "python", binding_values=bound, term=est.components[0].name))
    assert [k for k in ns3["__all__"]] == [f"{regime}_{est.components[0].name}"]
    assert ns3[ns3["__all__"][0]](*[{"b": 3, "s": 1000}[a] for a in ns3["ARGUMENTS"]]) == est.components[0].exact


def test_bound_aliases_and_errors():
    lib = _lib()
    comp = composed("inference")
    ns = load_python(export(comp, lib, "python", binding_values={"batch": 2, "seq": "4096"}, term="kv_cache"))
    assert "b" not in ns["ARGUMENTS"] and "s" not in ns["ARGUMENTS"]
    with pytest.raises(vramsym.InputError):
        export(comp, lib, "fortran")
    with pytest.raises(vramsym.InputError):
        export(comp, lib, "python", term="no_such_term")
    with pytest.raises(vramsym.InputError):
        export(comp, lib, "python", binding_values={"no_such_symbol": 1})


# ---------------------------------------------------------------------------
# the JSON tree and the exact JavaScript are sympy printers: dispatch by class, refusal by name

def test_tree_and_exact_js_are_sympy_printers():
    from sympy.printing.printer import Printer
    from vramsym.printers.codegen import ExactJSPrinter, TreePrinter, js_exact, tree
    assert issubclass(TreePrinter, Printer) and issubclass(ExactJSPrinter, Printer)
    x, y = sympy.symbols("x y")
    d = sympy.Dummy("d")
    # subclasses dispatch through the MRO: Half -> Rational, One -> Integer, Dummy -> Symbol
    assert tree(sympy.S.Half) == {"op": "rational", "p": 1, "q": 2}
    assert tree(sympy.S.One) == {"op": "integer", "value": 1}
    assert tree(d) == {"op": "symbol", "name": d.name}
    assert tree(sympy.Piecewise((x, x < y), (y, True))) == {"op": "piecewise", "args": [
        {"op": "case", "args": [{"op": "symbol", "name": "x"},
                                {"op": "<", "args": [{"op": "symbol", "name": "x"}, {"op": "symbol", "name": "y"}]}]},
        {"op": "case", "args": [{"op": "symbol", "name": "y"}, {"op": "true"}]}]}
    assert tree(sympy.ceiling(x / 2)) == {"op": "ceil", "args": [{"op": "mul", "args": [
        {"op": "rational", "p": 1, "q": 2}, {"op": "symbol", "name": "x"}]}]}
    assert js_exact(sympy.S.Half) == "[1n, 2n]" and js_exact(x, "b") == 'b["x"]'
    assert js_exact(sympy.Max(x, 3)) == 'Q.mx([3n, 1n], a["x"])'
    assert js_exact(sympy.Piecewise((x, sympy.And(x > 1, sympy.Ne(y, 2))), (y, True))) == \
        '((Q.gt(a["x"], [1n, 1n]) && Q.ne(a["y"], [2n, 1n])) ? a["x"] : a["y"])'
    # a node without a method is refused, by name
    for e, name in ((sympy.exp(x), "exp"), (sympy.pi * x, "Pi"), (sympy.Function("f")(x), "f")):
        with pytest.raises(vramsym.InputError) as info:
            tree(e)
        assert name in str(info.value) and "JSON" in str(info.value)
        with pytest.raises(vramsym.InputError) as info:
            js_exact(e)
        assert name in str(info.value) and "exact JavaScript" in str(info.value)
    with pytest.raises(vramsym.InputError, match="inexact number"):
        tree(sympy.Float(1.5) * x)
    with pytest.raises(vramsym.InputError, match="whole powers"):
        js_exact(sympy.sqrt(x))


# ---------------------------------------------------------------------------
# json: exact, through a tiny evaluator

def eval_tree(node, env):
    op = node["op"]
    if op == "symbol":
        return env[node["name"]]
    if op == "integer":
        return Fraction(node["value"])
    if op == "rational":
        return Fraction(node["p"], node["q"])
    if op in ("true", "false"):
        return op == "true"
    args = node.get("args", [])
    if op == "piecewise":
        for case in args:
            expr, cond = case["args"]
            if eval_tree(cond, env):
                return eval_tree(expr, env)
        raise AssertionError("no case applies")
    vals = [eval_tree(a, env) for a in args]
    if op == "add":
        return sum(vals, Fraction(0))
    if op == "mul":
        return math.prod(vals, start=Fraction(1))
    if op == "pow":
        base, exp = vals
        assert exp.denominator == 1, "non-integer power"
        return base ** int(exp)
    if op == "min":
        return min(vals)
    if op == "max":
        return max(vals)
    if op == "ceil":
        return Fraction(math.ceil(vals[0]))
    if op == "floor":
        return Fraction(math.floor(vals[0]))
    cmp = {"<": lambda a, b: a < b, "<=": lambda a, b: a <= b, ">": lambda a, b: a > b,
           ">=": lambda a, b: a >= b, "==": lambda a, b: a == b, "!=": lambda a, b: a != b}
    if op in cmp:
        return cmp[op](*vals)
    raise AssertionError(f"unknown op {op}")


@pytest.mark.parametrize("variant", DEFAULTS + [v for v in FLOAT_VARIANTS if v[1]], ids=_id)
def test_json_tree_is_exact(variant):
    lib = _lib()
    comp = composed(*variant)
    doc = json.loads(export(comp, lib, "json"))
    prep = prepare(comp, lib)
    assert doc["arguments"] == list(prep.args)
    for a in prep.args:
        assert doc["symbols"][a]["unit"] == lib.units.get(a, "1")
        assert doc["symbols"][a]["description"] == lib.symbols[a].description
    for c in comp.components:
        assert doc["terms"][c]["sources"] == list(lib.terms[c].sources)

    @SETTINGS
    @given(config_strategy(lib, prep.args))
    def check(cfg):
        for f, e in zip(doc["functions"], prep.entries):
            assert f["name"] == e.func
            assert eval_tree(f["expr"], cfg) == exact_value(e.expr, cfg), f["name"]
    check()


# ---------------------------------------------------------------------------
# numpy: vectorized float64



@pytest.mark.parametrize("variant", FLOAT_VARIANTS, ids=_id)
def test_numpy_export_vectorized(variant):
    np = pytest.importorskip("numpy")
    lib = _lib()
    comp = composed(*variant)
    text = export(comp, lib, "numpy")
    ns = load_python(text)
    prep = prepare(comp, lib)

    @settings(max_examples=4, deadline=None, suppress_health_check=list(HealthCheck))
    @given(st.lists(config_strategy(lib, prep.args), min_size=1, max_size=8))
    def check(cfgs):
        arrays = [np.array([float(c[a]) for c in cfgs]) for a in prep.args]
        for e in prep.entries:
            got = ns[e.func](*arrays)
            assert got.shape == (len(cfgs),) and got.dtype == np.float64
            for i, cfg in enumerate(cfgs):
                assert close(got[i], exact_value(e.expr, cfg), scale_of(e.expr, cfg), 1e-9), (e.func, cfg)
    check()


# ---------------------------------------------------------------------------
# javascript under node, C under gcc

def _node():
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed: cannot run the JavaScript export")
    return node


JS_HARNESS = """
const m = require(process.argv[2]);
let input = "";
process.stdin.on("data", (d) => { input += d; });
process.stdin.on("end", () => {
  const req = JSON.parse(input);
  const out = req.rows.map((row) => req.funcs.map((f) => m[f](...row)));
  process.stdout.write(JSON.stringify(out));
});
"""


@pytest.mark.parametrize("variant", FLOAT_VARIANTS, ids=_id)
def test_javascript_export_under_node(variant, tmp_path):
    node = _node()
    lib = _lib()
    comp = composed(*variant)
    prep = prepare(comp, lib)
    mod = tmp_path / "export.js"
    mod.write_text(export(comp, lib, "javascript"))
    harness = tmp_path / "harness.js"
    harness.write_text(JS_HARNESS)
    funcs = [e.func for e in prep.entries]

    @settings(max_examples=3, deadline=None, suppress_health_check=list(HealthCheck))
    @given(st.lists(config_strategy(lib, prep.args), min_size=1, max_size=12))
    def check(cfgs):
        rows = [[float(c[a]) for a in prep.args] for c in cfgs]
        r = subprocess.run([node, str(harness), str(mod)], input=json.dumps({"rows": rows, "funcs": funcs}),
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        out = json.loads(r.stdout)
        for cfg, vals in zip(cfgs, out):
            for e, v in zip(prep.entries, vals):
                assert close(v, exact_value(e.expr, cfg), scale_of(e.expr, cfg), 1e-12), (e.func, cfg, v)
    check()


def _c_harness(prep) -> str:
    k = len(prep.args)
    calls = ", ".join(f"{e.func}({', '.join(f'a[{i}]' for i in range(k))})" for e in prep.entries)
    fmt = " ".join(["%.17g"] * len(prep.entries))
    return f"""
#include <stdio.h>
int main(void) {{
    double a[{max(k, 1)}];
    for (;;) {{
        for (int i = 0; i < {k}; i++)
            if (scanf("%lf", &a[i]) != 1) return 0;
        printf("{fmt}\\n", {calls});
        if ({k} == 0) return 0;
    }}
}}
"""


@pytest.mark.parametrize("variant", FLOAT_VARIANTS, ids=_id)
def test_c_export_with_gcc(variant, tmp_path):
    gcc = shutil.which("gcc") or shutil.which("cc")
    if gcc is None:
        pytest.skip("gcc is not installed: cannot compile the C export")
    lib = _lib()
    comp = composed(*variant)
    prep = prepare(comp, lib)
    src = tmp_path / "export.c"
    src.write_text(export(comp, lib, "c") + _c_harness(prep))
    exe = tmp_path / "export"
    r = subprocess.run([gcc, "-std=c99", "-Wall", "-Werror", "-O1", str(src), "-o", str(exe), "-lm"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr

    @settings(max_examples=3, deadline=None, suppress_health_check=list(HealthCheck))
    @given(st.lists(config_strategy(lib, prep.args), min_size=1, max_size=12))
    def check(cfgs):
        text = "\n".join(" ".join(repr(float(c[a])) for a in prep.args) for c in cfgs) + "\n"
        r = subprocess.run([str(exe)], input=text, capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        lines = r.stdout.split("\n")
        for cfg, line in zip(cfgs, lines):
            for e, v in zip(prep.entries, line.split()):
                assert close(float(v), exact_value(e.expr, cfg), scale_of(e.expr, cfg), 1e-12), (e.func, cfg, v)
    check()


# ---------------------------------------------------------------------------
# latex: KaTeX

def test_latex_export_parses_with_katex():
    lib = _lib()
    items = []
    for r in _regimes():
        comp = composed(r)
        text = export(comp, lib, "latex")
        eqs = latex_math(text)
        assert len(eqs) == 1 and eqs[0]["tex"].count("&=") == len(comp.components) + 1 + (len(comp.phases) if len(comp.phases) > 1 else 0)
        items += eqs
        items += latex_math(export(comp, lib, "latex", term=comp.components[-1]))
    failures = katex_failures(items)
    assert not failures, failures
