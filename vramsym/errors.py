"""The exceptions vramsym raises on purpose (all derive from :class:`VramError`), and
name suggestions for them. Kept free of imports so that every stage can use it."""
from __future__ import annotations


class VramError(Exception):
    """Base of every error vramsym raises for bad input."""

    kind = "error"

    def to_dict(self) -> dict:
        return {"kind": self.kind, "message": str(self)}


class InputError(VramError):
    """Bad user input outside formula files: unknown model, bad capacity, ..."""

    kind = "input"


class NotModelled(InputError):
    """A regime whose terms do not model this model's layers (a hybrid model's training, say):
    refused rather than guessed. ``gap`` says what is not modelled."""

    def __init__(self, message: str, gap: str):
        super().__init__(message)
        self.gap = gap


class DoesNotFit(VramError):
    """Nothing fits the capacity, even at the smallest value of the variable."""

    kind = "does_not_fit"

    def __init__(self, message: str, details: dict = None):
        super().__init__(message)
        self.details = dict(details or {})

    def to_dict(self) -> dict:
        d = super().to_dict()
        d.update(self.details)
        return d


class SolveError(VramError):
    """The inverse problem has no well-defined answer (unbounded, non-monotone)."""

    kind = "solve"


def suggest(name: str, candidates: object, n: int = 3) -> list:
    import difflib
    cands = list(candidates)
    cands = list(dict.fromkeys(cands))
    out = difflib.get_close_matches(name, cands, n=n, cutoff=0.5)
    low = name.lower()
    for c in cands:
        if low and low in c.lower() and c not in out:
            out.append(c)
    return out[:n]
