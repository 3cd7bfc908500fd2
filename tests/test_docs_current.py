"""Docs that cannot drift from the code.

- Every ``from vramsym ... import ...`` / ``import vramsym...`` line in a code block of README.md or
  docs/*.md is executed, alone, in a fresh namespace: a renamed or removed module fails here.
- Every ``vramsym.NAME`` a Python code block of those docs reads is an attribute of the package.
- docs/pipeline.md's module table is what ``tools/gen_pipeline.py`` generates from the package's
  docstrings now (run ``python tools/gen_pipeline.py`` after adding, removing or redescribing a module).
"""
import importlib.util
import re
from pathlib import Path

import pytest

import vramsym

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))
IMPORT = re.compile(r"^(from\s+vramsym(\.\w+)*\s+import\s|import\s+vramsym(\.\w+)*(\s|,|$))")


def code_blocks(doc: Path):
    """(language, first line number, lines) of each fenced code block of ``doc``."""
    blocks, lang, start, lines = [], None, 0, None
    for n, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), 1):
        fence = line.strip()
        if fence.startswith("```"):
            if lines is None:
                lang, start, lines = fence[3:].strip(), n + 1, []
            else:
                blocks.append((lang, start, lines))
                lines = None
            continue
        if lines is not None:
            lines.append(line)
    return blocks


def import_lines():
    """(where, statement) for each import of vramsym in the docs' code blocks; a parenthesised
    import over several lines is joined."""
    out = []
    for doc in DOCS:
        for _, start, lines in code_blocks(doc):
            i = 0
            while i < len(lines):
                text = re.sub(r"^\s*(>>>|\.\.\.)\s?", "", lines[i]).strip()
                where = f"{doc.relative_to(ROOT)}:{start + i}"
                i += 1
                if not IMPORT.match(text):
                    continue
                stmt = text.split(" #")[0].rstrip()
                while stmt.count("(") > stmt.count(")") and i < len(lines):
                    stmt += " " + lines[i].split(" #")[0].strip()
                    i += 1
                out.append((where, stmt))
    return out


IMPORTS = import_lines()


@pytest.mark.parametrize("where,stmt", IMPORTS, ids=[w for w, _ in IMPORTS])
def test_documented_import_runs(where, stmt):
    exec(compile(stmt, where, "exec"), {})       # our own docs: a fresh namespace per line


def test_the_imports_are_found():
    found = {s for _, s in IMPORTS}
    assert "import vramsym" in found                                         # docs/api.md
    assert any(s.startswith("from vramsym.measure") for s in found)          # docs/measurements.md


def _python_blocks():
    for doc in DOCS:
        for lang, start, lines in code_blocks(doc):
            if lang in ("python", "py", "pycon"):
                yield doc, start, lines


ATTRS = sorted({(str(doc.relative_to(ROOT)), m.group(1))
                for doc, _, lines in _python_blocks() for line in lines
                for m in re.finditer(r"(?<![\w.])vramsym\.(\w+)", line.split("#")[0])})


@pytest.mark.parametrize("doc,name", ATTRS, ids=[f"{d}:vramsym.{n}" for d, n in ATTRS])
def test_documented_api_names_exist(doc, name):
    assert hasattr(vramsym, name) or importlib.util.find_spec(f"vramsym.{name}") is not None, \
        f"{doc} uses vramsym.{name}, which the package does not have"


def _gen_pipeline():
    spec = importlib.util.spec_from_file_location("gen_pipeline", ROOT / "tools" / "gen_pipeline.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_pipeline_module_table_is_current():
    gen = _gen_pipeline()
    text = gen.DOC.read_text(encoding="utf-8")
    assert gen.updated(text) == text, "docs/pipeline.md's module table is stale: run python tools/gen_pipeline.py"


def test_pipeline_lists_every_module():
    text = (ROOT / "docs" / "pipeline.md").read_text(encoding="utf-8")
    pkg = ROOT / "vramsym"
    mods = [p for p in pkg.rglob("*.py") if "_precompiled" not in p.parts]
    assert len(mods) > 40
    missing = [str(p.relative_to(ROOT)) for p in mods if f"`{p.relative_to(ROOT).as_posix()}`" not in text]
    assert not missing, f"docs/pipeline.md does not list {missing}"


def test_pipeline_names_the_parser():
    text = (ROOT / "docs" / "pipeline.md").read_text(encoding="utf-8")
    assert "vramsym/flags.py" in text
    assert "argparse rejected" not in text
