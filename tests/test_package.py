"""The wheel ships the formula files and the grammar (a non-editable install works anywhere)."""
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_wheel_contains_formulas(tmp_path):
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(ROOT)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot build a wheel here: {r.stderr[-300:]}")
    wheel = next(tmp_path.glob("vramsym-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    for needed in ("vramsym/lang/grammar.lark", "vramsym/formulas/units.txt", "vramsym/formulas/inference.vram",
                   "vramsym/formulas/training.vram", "vramsym/formulas/gpus.json",
                   "vramsym/formulas/models/llama-3.1-8b.json", "vramsym/formulas/architectures.json"):
        assert needed in names, needed
    shipped = {n.split("/")[-1] for n in names if n.startswith("vramsym/formulas/") and n.endswith(".vram")}
    assert shipped == {p.name for p in (ROOT / "formulas").glob("*.vram")}
    # the compiled regimes the repository ships, all of them, and the key they are read under
    # and the calculator page's groups, with theirs
    compiled = {n[len("vramsym/_precompiled/"):] for n in names if n.startswith("vramsym/_precompiled/")}
    assert {"KEY", "interface.json.xz", "digest.json.xz", "units.json.xz", "page/KEY"} <= compiled
    here = ROOT / "vramsym" / "_precompiled"
    assert compiled == {p.relative_to(here).as_posix() for p in here.rglob("*") if p.is_file()}
