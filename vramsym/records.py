"""Typed records that pass between the stages: the vocabulary's interface and a compiled regime's tables.

The stages hand each other frozen records, not dicts read by string keys (issue 20):

- :class:`Interface`: what the command line and option resolution need from a checked formula
  library (:func:`vramsym.engine.options.interface_of`): every :class:`Option`, :class:`Preset`,
  :class:`Regime`, :class:`Fit` row and :class:`Symbol` (its command-line alias, description and
  :class:`Domain`).
- a compiled regime's tables (:class:`vramsym.engine.compiled.CompiledRegime`): each
  :class:`Symbol` it reads (with its config keys, unit, default's arguments, :class:`Bound`\\ s and
  run-time range), each :class:`Term` it sums and each :class:`Phase` of its timeline.

The cache and the shipped ``_precompiled/`` folder keep them as JSON, in the same bytes as
before: ``Interface.from_json(data)`` reads that JSON once, ``to_json()`` gives it back; a compiled
regime keeps its JSON beside the records it reads from it (``CompiledRegime.data``).
Ground floor: imports nothing of vramsym's, and nothing the warm path does not import already
(``enum``; not ``typing``). The records are slotted classes written out, not ``@dataclass``:
its code generation at import (an ``exec`` per method of each class) would cost the warm path
about 4 ms, some 5% of a warm ``vramsym estimate``. They behave as frozen dataclasses do:
positional or keyword construction, defaults, no assignment after it, equality and ``repr``
by their fields.
"""
from __future__ import annotations

from enum import Enum


class _Record:
    """Frozen, slotted, compared and shown by its fields (``__slots__``, in order)."""
    __slots__ = ()

    def __setattr__(self, name, value):
        raise AttributeError(f"{type(self).__name__} is a frozen record: cannot set {name}")

    def __delattr__(self, name):
        raise AttributeError(f"{type(self).__name__} is a frozen record: cannot delete {name}")

    def _values(self) -> tuple:
        return tuple(getattr(self, f) for f in self.__slots__)

    def __eq__(self, other):
        return type(other) is type(self) and self._values() == other._values()

    def __hash__(self):
        return hash(self._values())

    def __repr__(self):
        return f"{type(self).__name__}({', '.join(f'{f}={getattr(self, f)!r}' for f in self.__slots__)})"


_set = object.__setattr__


class Domain(str, Enum):
    """A symbol's domain, as the formula files write it. A ``str``: it equals its value, hashes
    like it, prints as it and is written to JSON as it, so the data stays the same bytes."""
    POSINT = "posint"
    NONNEGINT = "nonnegint"
    POSREAL = "posreal"
    NONNEGREAL = "nonnegreal"
    BOOL = "bool"

    __str__ = str.__str__        # "posint", on every Python (3.12 changed the mixin's default)
    __format__ = str.__format__

    @property
    def integer(self) -> bool:
        """A count that ``solve`` can search over (posint, nonnegint)."""
        return self in _INTEGER

    @property
    def whole(self) -> bool:
        """Its values are whole numbers (the integers and bool)."""
        return self in _WHOLE

    @property
    def lowest(self) -> int:
        """The smallest whole value (a search's start): 1 for posint, else 0."""
        return 1 if self is Domain.POSINT else 0


_INTEGER = frozenset((Domain.POSINT, Domain.NONNEGINT))
_WHOLE = frozenset((Domain.POSINT, Domain.NONNEGINT, Domain.BOOL))


class Option(_Record):
    """An option of the formula language: its choices, its default, the config fields that choose it."""
    __slots__ = ("name", "choices", "default", "description", "keys")

    def __init__(self, name: str, choices: tuple, default: str, description: str, keys: tuple = ()):
        _set(self, "name", name)
        _set(self, "choices", choices)
        _set(self, "default", default)
        _set(self, "description", description)
        _set(self, "keys", keys)  # config fields read ``from`` (the first set one chooses)

    def to_json(self) -> dict:
        return {"choices": list(self.choices), "default": self.default, "description": self.description,
                "keys": list(self.keys)}


class Preset(_Record):
    """A preset option (``precision``): each choice sets other options, as (option, choice) pairs."""
    __slots__ = ("name", "choices")

    def __init__(self, name: str, choices: dict):
        _set(self, "name", name)
        _set(self, "choices", choices)  # choice -> ((option, choice), ...)

    def to_json(self) -> dict:
        return {"choices": {label: [list(a) for a in sets] for label, sets in self.choices.items()}}


class Regime(_Record):
    """A regime of the vocabulary: what it extends, its labels, the options it sets, its components
    (the terms its chain adds and its phases name, whatever the options)."""
    __slots__ = ("name", "extends", "description", "labels", "sets", "components")

    def __init__(self, name: str, extends: str | None, description: str, labels: tuple, sets: tuple,
                 components: tuple = ()):
        _set(self, "name", name)
        _set(self, "extends", extends)
        _set(self, "description", description)
        _set(self, "labels", labels)
        _set(self, "sets", sets)  # ((option, choice), ...)
        _set(self, "components", components)

    def to_json(self) -> dict:
        return {"extends": self.extends, "description": self.description, "labels": list(self.labels),
                "sets": [list(s) for s in self.sets], "components": list(self.components)}


class Fit(_Record):
    """A row of ``fit``: a regime with the options it is tried with."""
    __slots__ = ("regime", "options")

    def __init__(self, regime: str, options: dict):
        _set(self, "regime", regime)
        _set(self, "options", options)

    def to_json(self) -> list:
        return [self.regime, dict(self.options)]


class Bound(_Record):
    """A bound a symbol declares with an expression (``max``, ``min``, ``multiple``): the symbols it
    reads, its text as the formula file writes it, the (option, choice) pairs it reads through ``match``."""
    __slots__ = ("args", "text", "options")

    def __init__(self, args: tuple, text: str, options: tuple = ()):
        _set(self, "args", args)
        _set(self, "text", text)
        _set(self, "options", options)


class Symbol(_Record):
    """A symbol: its command-line alias, description and domain (the interface's); a compiled
    regime's adds its config keys, unit, the arguments of its default, its bounds and range."""
    __slots__ = ("name", "alias", "description", "domain", "keys", "unit", "default", "max", "min", "multiple",
                 "divides", "range")

    def __init__(self, name: str, alias: str | None, description: str, domain: Domain, keys: tuple = (),
                 unit: str = "1", default: tuple | None = None, max: Bound | None = None,
                 min: Bound | None = None, multiple: Bound | None = None, divides: tuple = (),
                 range: tuple | None = None):
        _set(self, "name", name)
        _set(self, "alias", alias)
        _set(self, "description", description)
        _set(self, "domain", domain)
        _set(self, "keys", keys)
        _set(self, "unit", unit)
        _set(self, "default", default)  # the symbols its default reads; None: no default
        _set(self, "max", max)
        _set(self, "min", min)
        _set(self, "multiple", multiple)
        _set(self, "divides", divides)  # symbols it must divide
        _set(self, "range", range)  # (low, high) as exact decimal strings: a run-time range

    @property
    def shown(self) -> str:
        """The name a person types: the alias, else the symbol's name."""
        return self.alias or self.name

    def bound(self, kind: str):
        """The :class:`Bound` of ``kind`` (``max``, ``min``, ``multiple``), or None."""
        return getattr(self, kind)

    @classmethod
    def from_json(cls, name: str, m: dict) -> "Symbol":
        b = {k: Bound(tuple(m[k]["args"]), m[k]["text"], tuple(tuple(o) for o in m[k].get("options") or ()))
             for k in ("max", "min", "multiple") if k in m}
        default = m.get("default")
        rng = m.get("range")
        return cls(name, m["alias"], m["description"], Domain(m["domain"]), tuple(m.get("keys") or ()),
                   m.get("unit", "1"), None if default is None else tuple(default), divides=tuple(m.get("divides") or ()),
                   range=None if not rng else (rng[0], rng[1]), **b)


class Interface(_Record):
    """The library's vocabulary as data: options, presets, regimes, ``fit`` rows, symbols (by name)."""
    __slots__ = ("options", "presets", "regimes", "fits", "symbols")

    def __init__(self, options: dict, presets: dict, regimes: dict, fits: tuple, symbols: dict):
        _set(self, "options", options)
        _set(self, "presets", presets)
        _set(self, "regimes", regimes)
        _set(self, "fits", fits)
        _set(self, "symbols", symbols)

    @classmethod
    def from_json(cls, d: dict) -> "Interface":
        return cls(
            {n: Option(n, tuple(o["choices"]), o["default"], o["description"], tuple(o["keys"]))
             for n, o in d["options"].items()},
            {n: Preset(n, {label: tuple(tuple(a) for a in sets) for label, sets in p["choices"].items()})
             for n, p in d.get("presets", {}).items()},
            {n: Regime(n, r["extends"], r["description"], tuple(r["labels"]), tuple(tuple(s) for s in r["sets"]),
                       tuple(r.get("components", ())))
             for n, r in d["regimes"].items()},
            tuple(Fit(r, dict(o)) for r, o in d["fits"]),
            {n: Symbol(n, m["alias"], m["description"], Domain(m["domain"])) for n, m in d["symbols"].items()})

    def to_json(self) -> dict:
        """The JSON the cache keeps (the same keys, in the same order, as ever)."""
        return {"options": {n: o.to_json() for n, o in self.options.items()},
                "presets": {n: p.to_json() for n, p in self.presets.items()},
                "regimes": {n: r.to_json() for n, r in self.regimes.items()},
                "fits": [f.to_json() for f in self.fits],
                "symbols": {n: {"alias": s.alias, "description": s.description, "domain": s.domain.value}
                            for n, s in self.symbols.items()}}

    def aliases(self) -> dict:
        """Command-line alias -> symbol name."""
        return {s.alias: n for n, s in self.symbols.items() if s.alias}


class Term(_Record):
    """A component of a compiled regime: the term it sums, the function that computes it, its
    unit, whether it lives on the host, its sources, its definition and expanded formula, and the
    options its formula reads (through every term it reaches)."""
    __slots__ = ("name", "func", "description", "unit", "host", "sources", "definition", "formula", "options")

    def __init__(self, name: str, func: str, description: str, unit: str, host: bool, sources: tuple,
                 definition: str, formula: str, options: tuple = ()):
        _set(self, "name", name)
        _set(self, "func", func)
        _set(self, "description", description)
        _set(self, "unit", unit)
        _set(self, "host", host)
        _set(self, "sources", sources)
        _set(self, "definition", definition)
        _set(self, "formula", formula)
        _set(self, "options", options)

    @classmethod
    def from_json(cls, m: dict) -> "Term":
        return cls(m["name"], m["func"], m["description"], m["unit"], bool(m["host"]), tuple(m["sources"]),
                   m["definition"], m["formula"], tuple(m["options"]))


class Phase(_Record):
    """A phase of a regime's timeline: the components alive in it and the function of its total
    (None when the regime has one phase: its total is the regime's)."""
    __slots__ = ("name", "description", "components", "func")

    def __init__(self, name: str, description: str, components: tuple, func: str | None):
        _set(self, "name", name)
        _set(self, "description", description)
        _set(self, "components", components)
        _set(self, "func", func)

    @classmethod
    def from_json(cls, m: dict) -> "Phase":
        return cls(m["name"], m["description"], tuple(m["components"]), m["func"])
