"""Every ```vram example of formulas/README.md passes `vramsym check` with the bundled files
(the `include "paged.vram"` examples read the `term` section's example as paged.vram)."""
import re
from pathlib import Path

import pytest

import vramsym

README = Path(__file__).resolve().parents[1] / "formulas" / "README.md"
BLOCKS = re.findall(r"```vram\n(.*?)```", README.read_text(), re.S)


def test_the_readme_has_examples():
    assert len(BLOCKS) >= 10


@pytest.mark.parametrize("i", range(len(BLOCKS)))
def test_example_checks(tmp_path, i):
    paged = next(b for b in BLOCKS if b.lstrip().startswith("term kv_block"))
    (tmp_path / "paged.vram").write_text(paged)
    p = tmp_path / f"example{i}.vram"
    p.write_text(BLOCKS[i])
    lib, diags = vramsym.check([str(p)])
    assert not diags, "\n".join(d.render(lib.sources) for d in diags)
