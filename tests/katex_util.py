"""Check TeX with a real parser: KaTeX under node (tests/katex_check.js).

KaTeX is installed on first use with ``npm install --prefix tests/.node katex`` (the
folder is a cache, not part of the repository). Tests skip only when node or npm is missing.
"""
from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Dict, List

import pytest

HERE = Path(__file__).resolve().parent
NODE_DIR = HERE / ".node"
CHECKER = HERE / "katex_check.js"
KATEX_VERSION = "0.16"


def ensure_katex() -> str:
    """Path of the node executable, with KaTeX installed; skips without node or npm."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed: cannot check the LaTeX with KaTeX")
    if not (NODE_DIR / "node_modules" / "katex" / "package.json").exists():
        npm = shutil.which("npm")
        if npm is None:
            pytest.skip("npm is not installed: cannot install KaTeX to check the LaTeX")
        NODE_DIR.mkdir(exist_ok=True)
        r = subprocess.run([npm, "install", "--prefix", str(NODE_DIR), "--no-audit", "--no-fund",
                            "--loglevel=error", f"katex@{KATEX_VERSION}"],
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, f"npm install katex failed:\n{r.stdout}\n{r.stderr}"
    return node


def katex_failures(items: List[Dict]) -> List[Dict]:
    """Render every ``{"tex", "display"}`` with KaTeX (throwOnError); return the failures."""
    node = ensure_katex()
    r = subprocess.run([node, str(CHECKER)], input=json.dumps(items), capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


_ENV = re.compile(r"\\begin\{(equation\*|align\*)\}(.*?)\\end\{\1\}", re.S)
_INLINE = re.compile(r"(?<!\\)\$(.+?)(?<!\\)\$", re.S)
_MD_DISPLAY = re.compile(r"^\$\$\n(.*?)\n\$\$$", re.S | re.M)
_CODE = re.compile(r"`[^`\n]*`")


def latex_math(text: str) -> List[Dict]:
    """Every equation of a LaTeX text: the display environments, then inline ``$...$``."""
    items = [{"tex": m.group(0), "display": True} for m in _ENV.finditer(text)]
    rest = _ENV.sub(" ", text)
    items += [{"tex": m.group(1), "display": False} for m in _INLINE.finditer(rest)]
    return items


def markdown_math(text: str) -> List[Dict]:
    """Every equation of a Markdown text: ``$$`` blocks, then inline ``$...$`` outside code spans."""
    items = [{"tex": m.group(1), "display": True} for m in _MD_DISPLAY.finditer(text)]
    rest = _CODE.sub(" ", _MD_DISPLAY.sub(" ", text))
    items += [{"tex": m.group(1), "display": False} for m in _INLINE.finditer(rest)]
    return items
