"""The floating-point screen of `solve min_gpus` (vramsym/engine/runtime.py Screened): the compiled
code run once over floats, every comparison close to a tie decided in exact arithmetic, so the
search's decisions are the exact ones."""
from fractions import Fraction

import pytest
from hypothesis import given, settings, strategies as st

import vramsym
from vramsym.engine.runtime import SCREEN_MARGIN, Screened

exact_values = st.one_of(st.integers(-10**15, 10**15),
                         st.fractions(min_value=-10**12, max_value=10**12, max_denominator=10**6))


def _screened(v):
    return Screened(float(v), lambda: v)


@settings(max_examples=300, deadline=None)
@given(exact_values, exact_values, st.integers(-3, 3))
def test_comparisons_are_the_exact_ones(a, b, nudge):
    # b nudged to within a few units of a: floats that round alike, where only exact arithmetic decides
    b = a + Fraction(nudge, 10**9) if nudge else b
    for x, y in ((_screened(a), b), (_screened(a), _screened(b))):
        assert (x < y) == (a < b) and (x <= y) == (a <= b)
        assert (x > y) == (a > b) and (x >= y) == (a >= b) and (x == y) == (a == b)
    assert (b < _screened(a)) == (b < a) and (b >= _screened(a)) == (b >= a)     # the reflected side


def test_a_tie_within_the_margin_is_decided_exactly():
    calls = []
    a = Fraction(10**12) + Fraction(1, 3)
    x = Screened(float(a), lambda: calls.append(1) or a)
    assert x > 10**12 and not x <= 10**12 and calls == [1]          # within the margin: exact, once
    assert x < 2 * 10**12 and calls == [1]                          # far: the float decides
    assert Screened(None, lambda: a) > 10**12                       # no float: exact
    assert SCREEN_MARGIN < 1e-6


@pytest.mark.parametrize("model,regime,inputs", [
    ("llama-3.1-70b", "train", dict(batch=1, seq=4096, gpus=16, tp=8, zero=3)),
    ("mixtral-8x7b", "train", dict(batch=1, seq=512, gpus=4, ep=2, zero=3)),
    ("qwen3-8b", "lora", dict(batch=2, seq=2048)),
    ("llama-3.1-8b", "inference", dict(batch=4, seq=8192)),
])
def test_the_screen_is_the_total(model, regime, inputs):
    r = vramsym.compile(model, regime, {})
    s = r.screen_total(inputs)
    exact = r.evaluate(inputs).exact_total
    assert s.exact() == exact
    assert s.float is not None and abs(s.float - float(exact)) <= 1e-12 * float(exact)


def test_min_gpus_answers_as_the_exact_search(monkeypatch):
    """The same layouts, in the same order, with the screen as with exact totals throughout."""
    from vramsym.engine import runtime
    r = vramsym.compile("llama-3.1-70b", "train", {})
    inputs = dict(batch=1, seq=4096)
    screened = vramsym.min_gpus(r, 80 * 10**9, inputs)
    monkeypatch.setattr(runtime.BoundRegime, "screen_total",       # no float: every comparison exact
                        lambda self, ins: Screened(None, lambda t=self.evaluate(ins).exact_total: t))
    exact = vramsym.min_gpus(r, 80 * 10**9, inputs)
    assert [(e.total_bytes, lay) for e, lay in screened["layouts"]] == [(e.total_bytes, lay) for e, lay in exact["layouts"]]
