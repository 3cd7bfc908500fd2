"""Errors as values with a location, and their rendering with a caret.

Every user mistake in a formula file becomes a :class:`Diagnostic`; the
pipeline collects them and raises one :class:`FormulaError` at its edge.
Every exception vramsym raises on purpose derives from :class:`VramError`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Iterable, List, Optional


# Messages are constants, phrased "cannot X: why" where it fits.
MSG_SYNTAX = "{detail}"
MSG_UNKNOWN_NAME = "unknown name '{name}': it is neither a declared symbol nor a term"
MSG_UNKNOWN_UNIT = "unknown unit '{name}': known units are {known}"
MSG_UNIT_MISMATCH = "cannot {op} [{left}] and [{right}]: the operands must share a dimension"
MSG_TERM_UNIT = "term '{name}' is declared as [{declared}] but its formula gives [{actual}]"
MSG_DEFAULT_UNIT = "the default of '{name}' must be in [{declared}], its formula gives [{actual}]"
MSG_BINDING_UNIT = "'{name}' is in [{declared}], the value a shape gives it is in [{actual}]"
MSG_DEFAULT_TERM = "the default of '{name}' uses the term '{term}': a default may only use other symbols"
MSG_NO_SOURCE = "term '{name}' cites no source: add source \"paper, eq. N\" (or model code, or a measured run)"
MSG_COMPONENT_UNIT = "cannot add '{name}' to a regime: a component must be in [byte], it is in [{unit}]"
MSG_LET_UNIT = "cannot override '{name}' [{declared}] with a formula in [{actual}]"
MSG_NOT_DIMENSIONLESS = "{what} must be dimensionless, got [{actual}]"
MSG_EXPONENT = "cannot raise [{unit}] to a non-constant power"
MSG_DUPLICATE = "duplicate definition of '{name}' (first defined at {first})"
MSG_CYCLE = "cyclic definition: {chain}"
MSG_UNKNOWN_FUNCTION = "unknown function '{name}': known functions are {known}"
MSG_ARITY = "function '{name}' takes {expected} arguments, got {got}"
MSG_COMPARE_OUTSIDE_IF = "a comparison is only allowed as the first argument of if()"
MSG_IF_CONDITION = "the first argument of if() must be a comparison"
MSG_UNKNOWN_OPTION = "unknown option '{name}'"
MSG_UNKNOWN_CHOICE = "option '{option}' has no choice '{choice}': choices are {choices}"
MSG_MATCH_INCOMPLETE = "match on '{option}' does not cover {missing}"
MSG_UNKNOWN_REGIME = "unknown regime '{name}'"
MSG_UNKNOWN_COMPONENT = "'{name}' is not a term"
MSG_UNKNOWN_DOMAIN = "unknown domain '{name}': known domains are {known}"
MSG_INCLUDE = "cannot include '{path}': {why}"
MSG_BAD_UNIT_ONE = "only the number 1 may stand for a unit, got {text}"


from ..errors import DoesNotFit, InputError, SolveError, VramError, suggest  # noqa: F401  (re-exported)


@dataclass(frozen=True)
class Diagnostic:
    span: "Span"
    kind: str  # "syntax", "name", "unit", "definition", "cycle"
    message: str

    def render(self, sources: Optional[Dict[str, str]] = None) -> str:
        s = self.span
        head = f"{s.file}:{s.line}:{s.column}: {self.kind} error: {self.message}"
        text = (sources or {}).get(s.file)
        if text is None or s.line <= 0:
            return head
        lines = text.splitlines()
        if s.line > len(lines):
            return head
        src = lines[s.line - 1]
        width = 1
        if s.end_line == s.line and s.end_column > s.column:
            width = s.end_column - s.column
        pad = " " * len(src[: s.column - 1].expandtabs())
        return f"{head}\n  {src.expandtabs()}\n  {pad}{'^' * width}"

    def to_dict(self) -> Dict:
        s = self.span
        return {"file": s.file, "line": s.line, "column": s.column,
                "kind": self.kind, "message": self.message}


class FormulaError(VramError):
    """One or more diagnostics in formula files."""

    kind = "formula"

    def __init__(self, diagnostics: Iterable[Diagnostic], sources: Optional[Dict[str, str]] = None):
        self.diagnostics: List[Diagnostic] = list(diagnostics)
        self.sources = dict(sources or {})
        super().__init__("\n".join(d.render(self.sources) for d in self.diagnostics))

    def to_dict(self) -> Dict:
        return {"kind": self.kind, "message": str(self),
                "diagnostics": [d.to_dict() for d in self.diagnostics]}
