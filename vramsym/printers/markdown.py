"""Markdown rendering of a derivation: headings, text, tables, ``$...$`` and ``$$...$$`` math
(the math is the LaTeX of :mod:`vramsym.printers.latex`, so GitHub, KaTeX and MathJax show it)."""
from __future__ import annotations

import re
from typing import List

from .latex import Block, Display, Heading, Inline, Items, Para, Table, blocks, render_inline

_MD_SPECIAL = set("\\`*_[]|$")


def md_text(s: str) -> str:
    """Escape text so that Markdown shows it literally (``q_proj``, ``2 * b``, ``|``, ``<tag``)."""
    s = str(s)
    out = []
    for i, ch in enumerate(s):
        nxt = s[i + 1] if i + 1 < len(s) else ""
        if ch in _MD_SPECIAL or (ch == "<" and (nxt.isalpha() or nxt in "/!?")):
            out.append("\\" + ch)
        else:
            out.append(ch)
    return "".join(out)


def _inline(parts: Inline) -> str:
    return render_inline(parts, md_text, lambda s: f"`{s}`")


def _display(d: Display) -> str:
    if len(d.rows) == 1:
        lhs, rhs = d.rows[0]
        return f"$$\n{lhs} {rhs}\n$$"
    body = " \\\\\n".join(f"{lhs} &{rhs}" for lhs, rhs in d.rows)
    return "$$\n\\begin{aligned}\n" + body + "\n\\end{aligned}\n$$"


def render_markdown(bl: List[Block]) -> str:
    parts: List[str] = []
    for b in bl:
        if isinstance(b, Heading):
            parts.append("#" * b.level + " " + b.text)
        elif isinstance(b, Para):
            parts.append(_inline(b.parts))
        elif isinstance(b, Display):
            parts.append(_display(b))
        elif isinstance(b, Items):
            parts.append("\n".join("- " + _inline(i) for i in b.items))
        elif isinstance(b, Table):
            lines = ["| " + " | ".join(md_text(h) for h in b.header) + " |"]
            aligns = re.sub(r"p\{[^}]*\}", "l", b.align) if b.align else "l" * len(b.header)
            lines.append("|" + "|".join("---:" if a == "r" else "---" for a in aligns) + "|")
            for row in b.rows:
                lines.append("| " + " | ".join(_inline(c) for c in row) + " |")
            parts.append("\n".join(lines))
    return "\n\n".join(parts) + "\n"


def derivation_markdown(result, lib) -> str:
    return render_markdown(blocks(result, lib))
