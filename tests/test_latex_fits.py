"""The LaTeX of a derivation fits the page (issue 24): pdflatex compiles the standalone document,
and its log reports no overfull box, so that no sum runs past the margin, no table is wider than
the text and no display is taller than a page.

The documents: the golden training derivation (tests/golden/derive_train.tex, which
tests/test_derive.py pins), the LaTeX of the golden solve, and derivations of other models, regimes
and layouts. Without pdflatex the test skips, unless VRAMSYM_REQUIRE_LATEX is set (.ci/run sets it
and installs Debian's texlive-latex-base and texlive-latex-recommended).
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from helpers import run_cli

GOLDEN = Path(__file__).resolve().parent / "golden"

# name -> the `vramsym derive` arguments (the golden file for the golden training derivation)
DOCUMENTS = {
    "golden-train": None,
    "solve-max-batch": ["--model", "llama-3.1-8b", "--seq", "4096", "--gpu", "24GB", "--solve", "max_batch"],
    "solve-max-seq": ["--model", "gemma-2-9b", "--batch", "1", "--gpu", "24GB", "--solve", "max_seq"],
    "inference-moe": ["--model", "deepseek-v3", "--batch", "2", "--seq", "8192"],
    "lora": ["--model", "qwen3-8b", "--batch", "1", "--seq", "2048", "--regime", "lora"],
    "qlora-moe": ["--model", "mixtral-8x7b", "--batch", "1", "--seq", "2048", "--regime", "qlora"],
    "train-8-gpus": ["--model", "llama-3.1-70b", "--batch", "1", "--seq", "4096", "--regime", "train",
                     "--gpus", "8", "--tp", "2", "--pp", "2", "--zero", "3"],
    "piecewise-total": ["--model", "llama-3.1-8b", "--batch", "1", "--seq", "2048", "--regime", "deepspeed-estimate"],
}


def pdflatex() -> str:
    exe = shutil.which("pdflatex")
    if exe is None:
        if os.environ.get("VRAMSYM_REQUIRE_LATEX"):
            pytest.fail("the LaTeX test needs pdflatex (Debian's texlive-latex-base and texlive-latex-recommended; "
                        ".ci/run installs them)")
        pytest.skip("pdflatex is not installed")
    return exe


def document(name: str) -> str:
    args = DOCUMENTS[name]
    if args is None:
        return (GOLDEN / "derive_train.tex").read_text(encoding="utf-8")
    code, out, err = run_cli(["derive", *args, "--format", "latex", "--standalone"])
    assert code == 0, err
    return out


@pytest.mark.parametrize("name", sorted(DOCUMENTS))
def test_derivation_compiles_and_fits_the_page(name, tmp_path):
    exe = pdflatex()
    tex = document(name)
    (tmp_path / "d.tex").write_text(tex, encoding="utf-8")
    r = subprocess.run([exe, "-interaction=nonstopmode", "-halt-on-error", "-no-shell-escape", "d.tex"],
                       cwd=tmp_path, capture_output=True, text=True, errors="replace", timeout=300)
    log = (tmp_path / "d.log").read_text(encoding="latin-1") if (tmp_path / "d.log").exists() else r.stdout
    assert r.returncode == 0, "pdflatex failed:\n" + "\n".join(re.findall(r"^!.*(?:\n.*){0,3}", log, re.M)[:3])
    overfull = re.findall(r"^Overfull \\[hv]box .*(?:\n.*){0,2}", log, re.M)
    assert not overfull, f"{len(overfull)} overfull boxes, the first:\n" + "\n".join(overfull[:5])
