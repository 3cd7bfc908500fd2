"""Derivations (vramsym.printers.derive.derivation): every regime renders, every equation parses
with KaTeX, and two golden files pin the full text.

Regenerate the golden files with ``VRAMSYM_UPDATE_GOLDEN=1 python -m pytest tests/test_derive.py``
after a change to the formulas or the printers, and read the diff.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

import vramsym
from vramsym.printers.derive import derivation
from vramsym.printers.latex import name_latex

from katex_util import katex_failures, latex_math, markdown_math

GOLDEN = Path(__file__).resolve().parent / "golden"
MODEL = "llama-3.1-8b"
UPDATE = os.environ.get("VRAMSYM_UPDATE_GOLDEN") == "1"


def estimate_any(lib, model, regime):
    """An estimate of ``regime`` for the model at batch 1, seq 4096, supplying whatever else the
    regime asks for (``missing value for X``: X = 1) and dropping inputs it fixes itself."""
    inputs = {"batch": 1, "seq": 4096}
    for _ in range(12):
        try:
            return vramsym.estimate(model, regime=regime, inputs=inputs, library=lib)
        except vramsym.InputError as e:
            msg = str(e)
            m = re.match(r"missing value for (\w+)", msg)
            if m and m.group(1) not in inputs:
                inputs[m.group(1)] = 1
                continue
            m = re.match(r"(\w+) is fixed by regime", msg)
            if m and m.group(1) in inputs:
                del inputs[m.group(1)]
                continue
            pytest.skip(f"regime {regime} needs an input this test cannot guess: {msg}")
    pytest.skip(f"regime {regime}: too many missing inputs ({sorted(inputs)})")


def _check_golden(name: str, text: str):
    path = GOLDEN / name
    if UPDATE or not path.exists():
        if not UPDATE and os.environ.get("CI"):
            pytest.fail(f"golden file {path} is missing; generate it with VRAMSYM_UPDATE_GOLDEN=1")
        path.parent.mkdir(exist_ok=True)
        path.write_text(text, encoding="utf-8")
    expected = path.read_text(encoding="utf-8")
    assert text == expected, (f"{name} differs from the golden file; if the change is intended, "
                              f"regenerate with VRAMSYM_UPDATE_GOLDEN=1 and review the diff")


@pytest.fixture(scope="module")
def llama(model):
    return model(MODEL)


@pytest.fixture(scope="module")
def solution(lib, llama):
    return vramsym.solve("max_batch", "24GB", llama, inputs={"seq": 4096}, library=lib)


def test_every_regime_renders_and_parses_with_katex(lib, llama):
    items, where = [], []
    for regime in sorted(lib.regimes):
        est = estimate_any(lib, llama, regime)
        for fmt, extract in (("latex", latex_math), ("markdown", markdown_math)):
            text = derivation(est, lib, fmt=fmt)
            # every component and the total appear with their exact byte counts
            for c in est.components:
                assert f"{c.bytes:,}" in text, (regime, fmt, c.name)
            assert f"{est.total_bytes:,}" in text
            eqs = extract(text)
            assert eqs, (regime, fmt)
            items += eqs
            where += [f"{regime}/{fmt}"] * len(eqs)
    failures = katex_failures(items)
    assert not failures, "\n".join(f"{where[f['index']]}: {f['error']}\n  {f['tex'][:300]}" for f in failures)


def test_solution_renders_and_parses_with_katex(solution, lib):
    items = []
    for fmt, extract in (("latex", latex_math), ("markdown", markdown_math)):
        text = derivation(solution, lib, fmt=fmt)
        items += extract(text)
    failures = katex_failures(items)
    assert not failures, failures


def test_every_declared_latex_name_parses(lib):
    names = sorted(set(lib.symbols) | set(lib.terms))
    items = [{"tex": name_latex(lib, n), "display": False} for n in names]
    failures = katex_failures(items)
    assert not failures, [(names[f["index"]], f["error"]) for f in failures]


def test_standalone_latex_is_a_document(solution, lib):
    doc = derivation(solution, lib, fmt="latex", standalone=True)
    assert doc.startswith("\\documentclass{article}")
    assert "\\usepackage{amsmath}" in doc
    assert doc.rstrip().endswith("\\end{document}")
    assert doc.count("\\begin{document}") == 1
    frag = derivation(solution, lib, fmt="latex")
    assert "\\documentclass" not in frag and frag.strip() in doc
    # every environment is closed
    for env in ("align*", "equation*", "itemize", "tabular", "center"):
        assert doc.count(f"\\begin{{{env}}}") == doc.count(f"\\end{{{env}}}"), env


def test_solution_derivation_content(solution, lib):
    md = derivation(solution, lib)
    from vramsym.engine.steps import derivation_steps
    all_steps = derivation_steps(solution, lib)
    steps = {s.kind: s for s in all_steps}
    # the steps in order
    order = ["Regime definition", "Term definitions", "Expansion", "Substitution", "Simplification",
             "Inverse solution", "Exact integer check", "Result"]
    pos = [md.index(f". {h}\n") for h in order]
    assert pos == sorted(pos)
    # every term's description and citations
    for s in all_steps:
        if s.kind == "term" and f"`{s.lhs}`" in md:
            for src in s.sources:
                assert src.replace("*", "\\*").replace("_", "\\_")[:40] in md
    # provenance of values, answer, capacity and both units
    for name, (v, prov) in steps["substitution"].value.items():
        assert f"`{name}`" in md
        assert (prov if not prov.startswith("config:") else f"config `{prov[7:]}`") in md
    assert f"b = {solution.value}" in md
    assert f"{solution.capacity_bytes:,} B" in md
    assert "GiB = $2^{30}$ B" in md and "GB = $10^{9}$ B" in md
    assert "\\left\\lfloor b^{*} \\right\\rfloor" in md


def test_unknown_format(solution, lib):
    with pytest.raises(vramsym.InputError):
        derivation(solution, lib, fmt="html")


def test_golden_solve_inference_markdown(solution, lib):
    _check_golden("derive_solve_inference.md", derivation(solution, lib, fmt="markdown"))


def test_golden_train_latex(lib, llama):
    est = estimate_any(lib, llama, "train")
    _check_golden("derive_train.tex", derivation(est, lib, fmt="latex", standalone=True))


def test_integer_search_and_fractional_bytes_parse(lib, model):
    """A non-polynomial total (min(s, W): integer search, no root) and a quantized estimate."""
    items = []
    gemma = model("gemma-2-9b")
    sol = vramsym.solve("max_seq", "24GB", gemma, inputs={"batch": 1}, library=lib)
    for fmt, extract in (("latex", latex_math), ("markdown", markdown_math)):
        text = derivation(sol, lib, fmt=fmt)
        assert sol.method in text
        items += extract(text)
    est = vramsym.estimate(model(MODEL), options={"quant": "nf4"} if "quant" in lib.options else {},
                           inputs={"batch": 1, "seq": 77}, library=lib)
    items += latex_math(derivation(est, lib, fmt="latex"))
    failures = katex_failures(items)
    assert not failures, failures
