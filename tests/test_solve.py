"""Inverse solve: mem(x*) <= capacity < mem(x*+1) by exact integer search; failures reported."""
import pytest
from hypothesis import given, settings, strategies as st, HealthCheck

from vramsym.errors import DoesNotFit, SolveError
from vramsym.engine.inverse import largest_fitting
from vramsym.engine.runtime import compile as compile_regime

from helpers import lib_text

TEMPLATE = '''
symbol x : sequence "the variable" domain posint alias xx
symbol y : 1 "a fixed input" domain posint default {y}
symbol z : 1 "a symbol no term uses" domain posint
term fixed = {c0} * [byte] : byte "constant part" source "test"
term lin = {c1} * y * x * [byte/sequence] : byte "linear part" source "test"
term quad = {c2} * x^2 * [byte/sequence^2] : byte "quadratic part" source "test"
term stepped = {c3} * ceil(x / ({k} * [sequence])) * [byte] + min(x * [byte/sequence], {cap_m} * [byte]) : byte "stepped part" source "test"
regime poly "polynomial" {{ add fixed, lin, quad }}
regime steps extends poly "with ceil and min" {{ add stepped }}
'''

coef = st.integers(min_value=0, max_value=10**6)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(c0=coef, c1=st.integers(1, 10**6), c2=coef, c3=coef, y=st.integers(1, 100), k=st.integers(1, 64),
       cap_m=st.integers(1, 10**4), extra=st.integers(0, 10**12), regime=st.sampled_from(["poly", "steps"]))
def test_largest_fitting_property(c0, c1, c2, c3, y, k, cap_m, extra, regime):
    lib = lib_text(TEMPLATE.format(c0=c0, c1=c1, c2=c2, c3=c3, y=y, k=k, cap_m=cap_m))
    r = compile_regime(None, regime, library=lib)

    def mem(x):
        return r.evaluate(xx=x).exact_total

    capacity = int(mem(1)) + extra
    sol = r.solve("xx", capacity)
    assert mem(sol.value) <= capacity < mem(sol.value + 1)
    assert sol.total_bytes <= capacity < sol.next_total_bytes
    # the answer agrees with the exact closed form where there is one (derivation only)
    if regime == "poly":
        import sympy
        from vramsym.engine.steps import closed_form
        xs = sympy.Symbol("x", positive=True, integer=True)
        _, root = closed_form(c0 + c1 * y * xs + c2 * xs**2, xs, capacity, 1)
        assert root is not None and int(sympy.floor(root)) == sol.value


def test_nothing_fits_reports_shortfall_and_largest_term():
    lib = lib_text(TEMPLATE.format(c0=1000, c1=10, c2=0, c3=0, y=1, k=1, cap_m=1))
    with pytest.raises(DoesNotFit) as ei:
        compile_regime(None, "poly", library=lib).solve("x", 500)
    d = ei.value.details
    assert d["shortfall_bytes"] == 1010 - 500
    assert d["largest_term"]["name"] == "fixed"
    assert "over the capacity" in str(ei.value)


def test_non_monotone_total_is_refused():
    with pytest.raises(SolveError, match="decreases"):
        largest_fitting(lambda x: 100 - 30 * x + x**2, 90, lo=1)
    with pytest.raises(SolveError, match="decreases"):
        largest_fitting(lambda x: 1000 - x, 999, lo=1)


def test_non_monotone_step_is_refused():
    with pytest.raises(SolveError, match="monotone"):
        largest_fitting(lambda x: 10 * x + (1000 if x < 5 else 0), 1100, lo=1)


def test_total_independent_of_variable():
    lib = lib_text(TEMPLATE.format(c0=1, c1=1, c2=0, c3=0, y=1, k=1, cap_m=1))
    with pytest.raises(SolveError, match="does not depend"):
        compile_regime(None, "poly", library=lib).solve("z", 10**6, xx=1)
    with pytest.raises(SolveError, match="does not depend"):
        largest_fitting(lambda x: 5, 10, lo=1)


def test_exact_at_the_boundary():
    # capacity exactly equal to the total at x = 7 must give 7, not 6 (no float rounding)
    f = lambda x: 3 * x**2 + 5 * x + 11   # noqa: E731
    assert largest_fitting(f, f(7), lo=1) == 7
    big = 10**30
    assert largest_fitting(lambda x: big * x + 1, big * 123456789 + 1, lo=1) == 123456789


def test_solve_rebinds_defaults_that_read_the_variable():
    lib = lib_text('''
symbol h : 1 "width" domain posint alias width
symbol d : 1 "a width derived from h" domain posreal default h / 2
term m = (h + d) * 2 * [byte] : byte "three widths" source "test"
regime r "r" { add m }
''')
    r = compile_regime(None, "r", library=lib)
    sol = r.solve("width", 3000)
    assert sol.value == 1000 and sol.total_bytes == 3000     # (1000 + 500) * 2


def test_ranges_bracket_the_point_and_bound_high_solves_for_the_worst_case():
    """Run-time ranges (formulas/inference.vram: cuda_ctx 200 MB..2 GB, frag 0..1/4, seed article 2
    section 6.2) give low <= point <= high; --bound high solves with them at their high end."""
    import vramsym
    m = vramsym.load_model("llama-3.1-8b")
    r = vramsym.compile(m, "inference")
    est = r.evaluate(batch=1, seq=4096)
    assert est.low_bytes < est.total_bytes < est.high_bytes
    tensors = est.total_bytes - est.component("runtime_overhead").bytes
    assert est.low_bytes == tensors + 200_000_000
    assert est.high_bytes == (tensors + 2_000_000_000) * 5 // 4
    point = r.solve("batch", "24GB", seq=4096)
    worst = r.solve("batch", "24GB", r.at_bound({"seq": 4096}, "high"))
    assert worst.value < point.value
    assert worst.estimate.total_bytes <= 24 * 10**9 < r.evaluate(r.at_bound({"batch": worst.value + 1, "seq": 4096}, "high")).total_bytes
    # a value the user gives is not a range any more
    given = r.evaluate(batch=1, seq=4096, cuda_ctx=300 * 2**20)
    assert given.low_bytes == given.total_bytes                       # frag's low end is its point, 0
    assert given.high_bytes == -(-given.total_bytes * 5 // 4)        # only the allocator slack moves


def test_estimate_json_has_low_and_high_and_the_worst_case_verdict():
    from helpers import run_cli
    import json
    rc, out, err = run_cli(["estimate", "--model", "llama-3.1-8b", "--batch", "1", "--seq", "4096", "--gpu", "24GB", "--json"])
    assert rc == 0, err
    d = json.loads(out)
    assert d["low_bytes"] <= d["total_bytes"] <= d["high_bytes"]
    assert set(d["ranges"]) == {"cuda_ctx", "frag"}
    assert d["fits_worst_case"] == (d["high_bytes"] <= d["capacity_bytes"])
    rc, out, err = run_cli(["solve", "max_batch", "--model", "llama-3.1-8b", "--seq", "4096", "--gpu", "24GB", "--bound", "high", "--json"])
    assert rc == 0, err
    assert json.loads(out)["value"] >= 1
    rc, out, err = run_cli(["solve", "max_batch", "--model", "llama-3.1-8b", "--seq", "4096", "--gpu", "24GB", "--bound", "worst"])
    assert rc != 0 and "Traceback" not in err


def test_liger_fused_cross_entropy_replaces_the_full_logits():
    """--loss liger (Liger-Kernel fused_linear_cross_entropy): no saved b*s*V fp32 log-softmax and no
    8*b*s*V logits gradients; instead one chunk of logits (chunk = next_power_of_2(ceil(BT / ceil(V/H))),
    bounded by twice that), the head's V x h gradient from forward on, an fp32 loss and a bool mask per token."""
    import math
    import vramsym
    m = vramsym.load_model("llama-3.1-8b")
    b, s, V, h = 4, 4096, 128256, 4096
    hf = vramsym.estimate(m, "train", {"precision": "bf16"}, {"batch": b, "seq": s})
    lg = vramsym.estimate(m, "train", {"precision": "bf16", "loss": "liger"}, {"batch": b, "seq": s})
    act = {e: x.component("activations").bytes for e, x in (("hf", hf), ("liger", lg))}
    assert act["hf"] - act["liger"] == b * s * V * 4
    chunk = min(2 * math.ceil(b * s / math.ceil(V / h)), b * s)
    assert lg.component("logits_buffers").bytes >= chunk * V * 2 + V * h * 2 + b * s * 5
    assert lg.total_bytes < hf.total_bytes


def test_largest_fitting_steps_past_a_sawtooth_below_capacity_and_refuses_one_across_it():
    """SDPA pads a sliding mask to a multiple of 8 keys, so a total can fall from s = 8k + 7 to 8k + 8
    (Gemma 4 E2B at 12 GB: 16,439 -> 16,440). A fall below capacity leaves the answer well defined
    (every smaller value fits) and the search steps past it; any other fall is still refused."""
    from vramsym.engine.inverse import largest_fitting
    from vramsym.errors import SolveError

    def saw(x):                     # rises inside each window of 8, falls at its end
        return 100 * x + (0 if x % 8 == 0 else 20 * (x % 8))

    cap = saw(40) + 50              # 40 fits (a multiple of 8); 39 costs more than 40, 41 more than cap
    assert saw(39) > saw(40) and saw(39) <= cap < saw(41)
    assert largest_fitting(saw, cap, name="s") == 40
    assert largest_fitting(lambda x: 100 * x, 4000, name="s") == 40
    with pytest.raises(SolveError, match="not monotone"):     # a fall that is not a one-step sawtooth
        largest_fitting(lambda x: 10 * x + (1000 if x < 5 else 0), 1100, lo=1)
