"""The names of compiled definitions (units), shared by their compiler (vramsym.engine.units,
sympy) and their assembler (vramsym.engine.assemble, no sympy)."""
from __future__ import annotations

#: the format of the digest and of each unit: a shipped or cached one of another format is
#: compiled afresh
UNIT_FORMAT = 1


def unit_key(ref: str, path) -> str:
    """A unit's name: its definition and the option choices on the way to its cases."""
    return ref + "|" + ",".join(f"{o}={c}" for o, c in path)


def specialized(key: str, zeros) -> str:
    """The unit ``key`` with the terms ``zeros`` (0 under the options at hand) substituted."""
    return key + "|0:" + ",".join(sorted(zeros))
