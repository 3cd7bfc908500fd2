"""The formula language: parsing, diagnostics with carets, and a fuzz test."""
import pytest
from hypothesis import given, settings, strategies as st, HealthCheck

from vramsym.lang import ast as A
from vramsym.lang.diagnostics import FormulaError, VramError
from vramsym.lang.parse import parse_text
from vramsym.lang.library import load_or_raise

from helpers import load_text, lib_text

HEADER = '''
symbol b : sequence "batch" domain posint alias batch
symbol s : token/sequence "sequence length" domain posint alias seq
symbol h : 1 "hidden size"
symbol L : layer "layers"
term eb = 2 * [byte/element] : byte/element "bytes per element" source "test"
'''


def test_parse_every_construct():
    text = HEADER + '''
include "other.vram"   # a comment
option kind {a, b2} default a "a choice" source "x" from arch_kind
term t = match kind { a: b * s * h * L * [element/(token*layer)] * eb, b2: 0 * eb * [element] } : byte "t"
    source "paper, eq. 1" latex "T"
term u = if(b > 2, min(t, 3*t), max(t, ceil(b/2) * t, floor(b/3) * t)) : byte "u" source "y"
regime r "desc" { add t, u  drop u  let h = 4  set kind = b2  source "z" }
regime r2 extends r "desc2" { add u }
'''
    module, diags = parse_text(text, "x.vram")
    assert diags == []
    kinds = [type(s).__name__ for s in module.statements]
    assert kinds.count("SymbolDecl") == 4 and kinds.count("RegimeDef") == 2 and "Include" in kinds
    opt = next(s for s in module.statements if isinstance(s, A.OptionDecl))
    assert opt.choices == ("a", "b2") and opt.default == "a" and opt.config_keys == ("arch_kind",)
    reg = next(s for s in module.statements if isinstance(s, A.RegimeDef) and s.name == "r")
    assert [a for a, _ in reg.add] == ["t", "u"] and [d for d, _ in reg.drop] == ["u"]
    assert reg.options[0][:2] == ("kind", "b2") and reg.lets[0].name == "h"
    term = next(s for s in module.statements if isinstance(s, A.TermDef) and s.name == "t")
    assert term.sources == ("paper, eq. 1",) and term.latex == "T"


def test_numbers_are_exact():
    module, _ = parse_text('term x = 0.1 * [byte] : byte "x"', "n.vram")
    num = module.statements[0].expr.left
    from fractions import Fraction
    assert num.value == Fraction(1, 10)


# (source, expected rendering): the exact caret output
ERRORS = [
    ('term kv = 2 * * b : byte "x"',
     "e.vram:1:15: syntax error: unexpected '*'"),
    ('symbol b : sequence "batch"\nterm x = b $ 2 : byte "x"',
     "e.vram:2:12: syntax error: unexpected character '$'"),
]


@pytest.mark.parametrize("text,head", ERRORS)
def test_syntax_errors_have_location(text, head):
    _, diags = parse_text(text, "e.vram")
    assert len(diags) == 1
    rendered = diags[0].render({"e.vram": text})
    assert rendered.startswith(head)
    line = text.splitlines()[diags[0].span.line - 1]
    # the source line is shown, then a caret under the column
    assert f"\n  {line}\n" in rendered
    caret_line = rendered.splitlines()[-1]
    assert caret_line.index("^") - 2 == diags[0].span.column - 1


def test_unknown_name_caret_under_the_name():
    lib, diags = load_text(HEADER + 'term kv = 2 * b * s * hh * [byte/token] : byte "kv"', "u.vram")
    d = [d for d in diags if d.kind == "name"]
    assert len(d) == 1 and "unknown name 'hh'" in d[0].message
    out = d[0].render(lib.sources)
    last = out.splitlines()[-1]
    src = out.splitlines()[-2]
    col = last.index("^")
    assert src[col:col + 2] == "hh" and last.count("^") == 2


def test_duplicate_definition():
    _, diags = load_text(HEADER + 'term eb = 3 * [byte/element] : byte/element "again"')
    assert any("duplicate definition of 'eb'" in d.message for d in diags)


def test_cycle_detected():
    _, diags = load_text(HEADER + 'term x = y : byte "x"\nterm y = x : byte "y"')
    assert any(d.kind == "cycle" and "x -> y -> x" in d.message for d in diags)


def test_match_must_cover_every_choice():
    _, diags = load_text(HEADER + 'option o {a, c} default a "o"\nterm x = match o { a: eb * [element] } : byte "x"')
    assert any("does not cover c" in d.message for d in diags)


def test_unknown_unit():
    _, diags = load_text('symbol q : furlong "q"')
    assert any(d.kind == "unit" and "unknown unit 'furlong'" in d.message for d in diags)


def test_every_term_must_cite_a_source():
    _, diags = load_text(HEADER + 'term x = eb * [element] : byte "x"')
    assert [d.message for d in diags] == ["term 'x' cites no source: add source \"paper, eq. N\" (or model code, or a measured run)"]


def test_regime_components_must_be_bytes():
    _, diags = load_text(HEADER + 'regime r "r" { add eb }')
    assert any("a component must be in [byte]" in d.message for d in diags)


def test_default_may_not_use_a_term():
    _, diags = load_text(HEADER + 'symbol z : byte/element "z" default eb')
    assert any("a default may only use other symbols" in d.message for d in diags)


def test_comparison_only_in_if():
    _, diags = load_text(HEADER + 'term x = min(b > 1, b) * eb * [element/sequence] : byte "x"')
    assert any("only allowed as the first argument of if()" in d.message for d in diags)


def test_formula_error_is_one_exception_with_every_diagnostic():
    with pytest.raises(FormulaError) as ei:
        lib_text(HEADER + 'term x = q : byte "x" source "t"\nterm y = b * eb : byte "y" source "t"')
    e = ei.value
    assert len(e.diagnostics) == 2
    assert "t.vram:" in str(e) and "^" in str(e)


# Fuzz: any text yields a module or diagnostics; loading raises only FormulaError.
TOKENS = st.sampled_from(["term", "symbol", "regime", "option", "match", "include", "add", "let", "set",
                          "x", "b", "=", ":", "byte", "[", "]", "(", ")", "{", "}", "*", "/", "^", "+",
                          "-", ",", "|", "1", "2.5", "1e3", '"d"', "if", "<", "min", "\n", " ", "#c\n",
                          "extends", "default", "from", "element", "@", "0", "ceil"])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(st.text(max_size=80), st.lists(TOKENS, max_size=30).map(" ".join)))
def test_fuzz_parser_never_crashes(text):
    module, diags = parse_text(text, "f.vram")
    assert isinstance(module, A.Module)
    assert all(d.span.file == "f.vram" for d in diags)
    for d in diags:
        d.render({"f.vram": text})


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(TOKENS, max_size=30).map(" ".join))
def test_fuzz_loader_raises_only_formula_errors(text):
    try:
        lib_text(HEADER + text)
    except FormulaError:
        pass


# ---- `with`: a term at other symbol values (layers of another shape, formulas/activations.vram) ----
WITH = HEADER + '''
symbol d : 1 "head dimension" default 64
symbol dg : 1 "the other layers' head dimension" default 256
term per_layer = b * s * h * d * [element/(token*layer)] * eb : byte/layer "one layer" source "test"
term inner = per_layer * L : byte "every layer" source "test"
shape wide "the wide layers" { d = dg, h = 2 * h } source "test"
term both = inner + inner with { d = dg } + inner with wide : byte "the three" source "test"
regime r "r" { add both }
'''


def test_with_substitutes_inside_the_expansion():
    """`TERM with {symbol = value}` and `TERM with SHAPE` give the term's whole expansion (the terms it
    reads included) with the symbols replaced; nested terms need no copy of their own."""
    from vramsym.engine.regimes import compose
    from vramsym.lang.build import Substituted
    lib = lib_text(WITH)
    c = compose(lib, "r")
    sym = {n: c.symbols[n] for n in ("b", "s", "h", "d", "dg", "L")}
    at = {sym["b"]: 2, sym["s"]: 3, sym["h"]: 5, sym["d"]: 7, sym["dg"]: 11, sym["L"]: 13}
    one = 2 * 2 * 3 * 5 * 13
    assert c.expanded["both"].xreplace(at) == one * 7 + one * 11 + 2 * one * 11
    assert c.definitions["both"].has(Substituted) and not c.expanded["both"].has(Substituted)
    import sympy
    tex = sympy.latex(c.definitions["both"])     # a derivation shows the term at the values, before expansion
    assert r"\right|_{" in tex and "dg" in tex


@pytest.mark.parametrize("extra,needle", [
    ('term x = inner with { eb = 2 } : byte "x" source "t"', "'eb' is a term: `with` replaces symbols only"),
    ('term x = inner with { nope = 2 } : byte "x" source "t"', "'nope' is not declared"),
    ('term x = inner with { d = 2 * [byte] } : byte "x" source "t"', "'d' has the unit 1, its value in this `with` byte"),
    ('term x = inner with { d = 1, d = 2 } : byte "x" source "t"', "duplicate definition of 'd'"),
    ('term x = inner with narrow : byte "x" source "t"', "unknown shape 'narrow' (declared shapes: wide)"),
    ('term x = h with { d = 1 } * eb * [element] : byte "x" source "t"', "'h' is a symbol"),
    ('shape odd "reads a term" { d = eb / eb } source "t"', "a shape's values may read symbols only"),
    ('shape bad "wrong unit" { d = 2 * [layer] } source "t"', "'d' is in [1], the value a shape gives it is in [layer]"),
    ('shape wide "again" { d = 1 } source "t"', "duplicate definition of 'wide'"),
    ('shape nosrc "no source" { d = 1 }', "cites no source"),
])
def test_with_and_shape_errors_name_the_problem(extra, needle):
    _, diags = load_text(WITH + extra)
    assert any(needle in d.message for d in diags), [d.message for d in diags]
