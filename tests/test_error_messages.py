"""Every diagnostic message, verbatim: one table per stage, one row per way to reach a ``MSG_*``.

Each row is (constant, formula text, diagnostic kind, the exact message). The text is loaded
alone (``helpers.load_text``, without the bundled formulas) and must give exactly that one
diagnostic. ``test_every_msg_constant_is_asserted`` greps the package for ``MSG_*`` constants:
a new one must get a row here, or an entry in :data:`UNREACHABLE` saying why no input reaches it.
"""
import re
from pathlib import Path

import pytest

import vramsym
from vramsym.lang import diagnostics as D

from helpers import lib_text, load_text

PACKAGE = Path(vramsym.__file__).resolve().parent

# a few declarations the rows build on (no diagnostics of their own)
H = '''symbol b : sequence "batch" domain posint alias batch
symbol s : token/sequence "sequence length" domain posint alias seq
term eb = 2 * [byte/element] : byte/element "bytes per element" source "t"
term w = 7 * eb * [element] : byte "weights" source "t"
option o {a, c} default a "an option"
'''
UNITS = "B, byte, elem, element, layer, param, parameter, seq, sequence, tensor, tok, token"
FUNCTIONS = "ceil, floor, if, max, min"
DOMAINS = "posint, nonnegint, posreal, nonnegreal, bool"

# ---- parse: lang/parse.py (one file's text -> syntax tree) ----
PARSE = [
    ("MSG_SYNTAX", 'term kv = 2 * * b : byte "x"', "syntax",
     "unexpected '*'; expected '(', '[', '-', a name, a number"),
    ("MSG_SYNTAX", 'term x = b $ 2 : byte "x"', "syntax", "unexpected character '$'"),
    ("MSG_SYNTAX", "term x = ", "syntax",
     "unexpected end of file; expected '(', '[', 'match', '-', a name, a number"),
    ("MSG_BAD_UNIT_ONE", 'term x = 2 * [2] : byte "x" source "t"', "syntax",
     "only the number 1 may stand for a unit, got 2"),
]

# ---- load: lang/library.py reading the files and collecting the declarations ----
LOAD = [
    ("MSG_INCLUDE", 'include "nope.vram"', "include",
     "cannot include '{dir}/nope.vram': No such file or directory"),
    ("MSG_DUPLICATE", H + 'term eb = 3 * [byte/element] : byte/element "again" source "t"', "definition",
     "duplicate definition of 'eb' (first defined at {file}:3:1)"),
    ("MSG_DUPLICATE", H + 'option o {a, c} default c "again"', "definition",
     "duplicate definition of 'o' (first defined at {file}:5:1)"),
]

# ---- names: lang/library.py checking what each expression reads ----
NAMES = [
    ("MSG_UNKNOWN_NAME", H + 'term x = hh * [byte] : byte "x" source "t"', "name",
     "unknown name 'hh': it is neither a declared symbol nor a term"),
    ("MSG_UNKNOWN_NAME", H + 'regime r "r" { add w let hh = 1 }', "name",
     "unknown name 'hh': it is neither a declared symbol nor a term"),
    ("MSG_UNKNOWN_NAME", H + 'symbol n : 1 "n" divides nope', "name",
     "unknown name 'nope': it is neither a declared symbol nor a term"),
    ("MSG_UNKNOWN_FUNCTION", H + 'term x = foo(b) * [byte] : byte "x" source "t"', "name",
     f"unknown function 'foo': known functions are {FUNCTIONS}"),
    ("MSG_ARITY", H + 'term x = ceil(1, 2) * [byte] : byte "x" source "t"', "syntax",
     "function 'ceil' takes 1 arguments, got 2"),
    ("MSG_ARITY", H + 'term x = min(1) * [byte] : byte "x" source "t"', "syntax",
     "function 'min' takes at least 2 arguments, got 1"),
    ("MSG_COMPARE_OUTSIDE_IF", H + 'term x = min(b > 1, b) * [byte/sequence] : byte "x" source "t"', "syntax",
     "a comparison is only allowed as the first argument of if()"),
    ("MSG_IF_CONDITION", H + 'term x = if(b, 1, 2) * [byte] : byte "x" source "t"', "syntax",
     "the first argument of if() must be a comparison"),
    ("MSG_UNKNOWN_OPTION", H + 'term x = match zz { a: [byte] } : byte "x" source "t"', "name",
     "unknown option 'zz'"),
    ("MSG_UNKNOWN_OPTION", H + 'regime r "r" { add w set zz = a }', "name", "unknown option 'zz'"),
    ("MSG_UNKNOWN_CHOICE", H + 'term x = match o { a | c: [byte], d: [byte] } : byte "x" source "t"', "name",
     "option 'o' has no choice 'd': choices are a, c"),
    ("MSG_UNKNOWN_CHOICE", H + 'regime r "r" { add w set o = d }', "name",
     "option 'o' has no choice 'd': choices are a, c"),
    ("MSG_UNKNOWN_CHOICE", H + 'fit r o = d\nregime r "r" { add w }', "name",
     "option 'o' has no choice 'd': choices are a, c"),
    ("MSG_UNKNOWN_CHOICE", 'option p {a, c} default d "p"', "definition",
     "option 'p' has no choice 'd': choices are a, c"),
    ("MSG_MATCH_INCOMPLETE", H + 'term x = match o { a: [byte] } : byte "x" source "t"', "definition",
     "match on 'o' does not cover c"),
    ("MSG_DUPLICATE", H + 'term x = match o { a: [byte], a | c: [byte] } : byte "x" source "t"', "definition",
     "duplicate definition of 'o=a' (first defined at an earlier case)"),
]

# ---- units: lang/units.py (pint) through lang/library.py ----
UNIT = [
    ("MSG_UNKNOWN_UNIT", 'symbol q : furlong "q"', "unit",
     f"unknown unit 'furlong': known units are {UNITS}"),
    ("MSG_UNKNOWN_UNIT", H + 'term x = 2 * [furlong] : byte "x" source "t"', "unit",
     f"unknown unit 'furlong': known units are {UNITS}"),
    ("MSG_UNIT_MISMATCH", H + 'term x = eb + [byte] : byte "x" source "t"', "unit",
     "cannot add [byte / element] and [byte]: the operands must share a dimension"),
    ("MSG_UNIT_MISMATCH", H + 'term x = w - eb : byte "x" source "t"', "unit",
     "cannot subtract [byte] and [byte / element]: the operands must share a dimension"),
    ("MSG_UNIT_MISMATCH", H + 'term x = if(b > [byte], 1, 2) * [byte] : byte "x" source "t"', "unit",
     "cannot compare [sequence] and [byte]: the operands must share a dimension"),
    ("MSG_UNIT_MISMATCH", H + 'term x = max([byte], [element]) : byte "x" source "t"', "unit",
     "cannot combine [byte] and [element]: the operands must share a dimension"),
    ("MSG_UNIT_MISMATCH", H + 'term x = match o { a: [byte], c: eb } : byte "x" source "t"', "unit",
     "cannot combine [byte] and [byte / element]: the operands must share a dimension"),
    ("MSG_TERM_UNIT", H + 'term x = eb * [element/token] : byte "x" source "t"', "unit",
     "term 'x' is declared as [byte] but its formula gives [byte / token]"),
    ("MSG_DEFAULT_UNIT", H + 'symbol z : byte/element "z" default 2 * [byte]', "unit",
     "the default of 'z' must be in [byte / element], its formula gives [byte]"),
    ("MSG_BINDING_UNIT", H + 'shape z "z" { b = 2 * [byte] } source "t"', "unit",
     "'b' is in [sequence], the value a shape gives it is in [byte]"),
    ("MSG_LET_UNIT", H + 'regime r "r" { add w let eb = [byte] }', "unit",
     "cannot override 'eb' [byte / element] with a formula in [byte]"),
    ("MSG_COMPONENT_UNIT", H + 'regime r "r" { add eb }', "unit",
     "cannot add 'eb' to a regime: a component must be in [byte], it is in [byte / element]"),
    ("MSG_NOT_DIMENSIONLESS", H + 'term x = ceil(b) * [byte] : byte "x" source "t"', "unit",
     "the argument of ceil() must be dimensionless, got [sequence]"),
    ("MSG_NOT_DIMENSIONLESS", H + 'term x = floor(eb * [element]) : byte "x" source "t"', "unit",
     "the argument of floor() must be dimensionless, got [byte]"),
]

# ---- definitions: symbols, terms and the dependency graph (lang/library.py) ----
DEFINITIONS = [
    ("MSG_NO_SOURCE", H + 'term x = eb * [element] : byte "x"', "definition",
     'term \'x\' cites no source: add source "paper, eq. N" (or model code, or a measured run)'),
    ("MSG_DEFAULT_TERM", H + 'symbol z : byte/element "z" default eb', "definition",
     "a default or bound of 'z' uses the term 'eb': a default may only use other symbols"),
    ("MSG_DEFAULT_TERM", H + 'symbol z : byte "z" max w', "definition",
     "a default or bound of 'z' uses the term 'w': a default may only use other symbols"),
    ("MSG_UNKNOWN_DOMAIN", H + 'symbol z : 1 "z" domain weird', "definition",
     f"unknown domain 'weird': known domains are {DOMAINS}"),
    ("MSG_CYCLE", H + 'term x = y : byte "x" source "t"\nterm y = x : byte "y" source "t"', "cycle",
     "cyclic definition: x -> y -> x"),
    ("MSG_CYCLE", H + 'symbol p : 1 "p" default q\nsymbol q : 1 "q" default p', "cycle",
     "cyclic definition: p -> q -> p"),
]

# ---- regimes: their declarations (lang/library.py) ----
REGIMES = [
    ("MSG_UNKNOWN_REGIME", H + 'regime r extends nope "r" { add w }', "name", "unknown regime 'nope'"),
    ("MSG_UNKNOWN_REGIME", H + 'fit nope o = a', "name", "unknown regime 'nope'"),
    ("MSG_UNKNOWN_COMPONENT", H + 'regime r "r" { add nothing }', "name", "'nothing' is not a term"),
    ("MSG_UNKNOWN_COMPONENT", H + 'regime r "r" { add w drop nothing }', "name", "'nothing' is not a term"),
    # two regimes extending each other: one diagnostic from each side of the loop
    ("MSG_CYCLE", H + 'regime r1 extends r2 "a" { add w }\nregime r2 extends r1 "b" { add w }', "cycle",
     ["cyclic definition: r1 -> r2 -> r1", "cyclic definition: r2 -> r1 -> r2"]),
]

STAGES = {"parse": PARSE, "load": LOAD, "names": NAMES, "units": UNIT, "definitions": DEFINITIONS,
          "regimes": REGIMES}
ROWS = [(stage, *row) for stage, rows in STAGES.items() for row in rows]

# ---- compose: engine/regimes.py raises, the formula files themselves being fine ----
# a `let` may close a loop the files do not have: the term x reads k, the regime sets k = x
COMPOSE = [
    ("MSG_CYCLE", H + 'symbol k : byte "k" default 1 * [byte]\nterm x = k : byte "x" source "t"\n'
                      'regime r "r" { add x let k = x }', "r",
     "regime 'r': cyclic definition: k -> x -> k"),
]

# Constants no input reaches, with the reason (dead code, left for whoever owns the module).
UNREACHABLE = {
    "MSG_EXPONENT": "lang/library.py's name check refuses every exponent that is not a whole-number "
                    "constant (its own 'an exponent must be a whole-number constant ...' message) before "
                    "units.UnitOf runs, so UnitOf never meets a non-constant power",
}

# The message as printed where the code edits the constant's text before use.
AS_PRINTED = {
    "MSG_DEFAULT_TERM": D.MSG_DEFAULT_TERM.replace("the default", "a default or bound"),
}


def _messages(text):
    lib, diags = load_text(text)
    path = Path(lib.files[0]) if lib.files else None
    return lib, diags, path


def _fill(expected, path):
    return expected.format(file=path, dir=path.resolve().parent)


@pytest.mark.parametrize("stage,const,text,kind,expected", ROWS,
                         ids=[f"{r[0]}-{r[1]}-{i}" for i, r in enumerate(ROWS)])
def test_message_verbatim(stage, const, text, kind, expected):
    lib, diags, path = _messages(text)
    want = expected if isinstance(expected, list) else [expected]
    assert [d.message for d in diags] == [_fill(w, path) for w in want]
    assert {d.kind for d in diags} == {kind}
    # the row really is this constant's message: its template (placeholders as wildcards) matches
    template = AS_PRINTED.get(const, getattr(D, const))
    pattern = re.escape(template)
    pattern = re.sub(r"\\\{[a-z_]+\\\}", ".+", pattern)
    for d in diags:
        assert re.fullmatch(pattern, d.message, re.S), (const, d.message)


@pytest.mark.parametrize("const,text,regime,expected", COMPOSE)
def test_compose_message_verbatim(const, text, regime, expected):
    from vramsym.engine.regimes import compose
    lib = lib_text(text)          # the files are fine
    with pytest.raises(vramsym.InputError) as e:
        compose(lib, regime)
    assert str(e.value) == expected


def _package_constants():
    found = {}
    for f in sorted(PACKAGE.rglob("*.py")):
        if "_precompiled" in f.parts:
            continue
        for m in re.finditer(r"^(MSG_[A-Z0-9_]+)\s*=", f.read_text(encoding="utf-8"), re.M):
            found[m.group(1)] = f.relative_to(PACKAGE.parent)
    return found


def test_every_msg_constant_is_asserted():
    found = _package_constants()
    assert len(found) >= 26
    asserted = {r[1] for r in ROWS} | {r[0] for r in COMPOSE}
    missing = {c: str(f) for c, f in found.items() if c not in asserted and c not in UNREACHABLE}
    assert not missing, f"MSG_* constants with no row in tests/test_error_messages.py: {missing}"
    assert not set(UNREACHABLE) & asserted
    assert set(UNREACHABLE) <= set(found), "an UNREACHABLE entry names a constant that is gone"


def test_unreachable_exponent_is_refused_earlier():
    """If this fails, MSG_EXPONENT became reachable: move it from UNREACHABLE into the UNIT table."""
    for expr in ("[byte] ^ k", "2 ^ b * [byte]", "[byte] ^ (2 * [byte])"):
        _, diags, _ = _messages(H + f'symbol k : 1 "k"\nterm x = {expr} : byte "x" source "t"')
        assert [d.message for d in diags] == [
            "an exponent must be a whole-number constant between -64 and 64"], expr
