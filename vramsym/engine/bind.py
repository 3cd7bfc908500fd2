"""Binding: give every symbol a compiled regime reads an exact value, once, with its origin.

Order of precedence: the user's input (by symbol name or command-line alias), then the
model's config fields (``from``), then the symbol's default (compiled with the regime).
Every value is checked against its symbol's domain here and nowhere else.
"""
from __future__ import annotations

from fractions import Fraction

from ..errors import InputError, suggest
from .compiled import CHECKPOINT_FIELD
from ..numbers import NumberError, domain_problem, to_fraction
from ..records import Domain


def exact(value, what: str, from_config: bool = False, domain: Domain = Domain.POSINT):
    """``value`` as an exact number (``int`` when whole, else ``Fraction``); a config.json field
    must be a JSON number (a boolean only for a true/false symbol)."""
    if type(value) is int and abs(value) < 10**40:
        return value
    try:
        v = to_fraction(value, allow_bool=not from_config or domain == Domain.BOOL, allow_str=not from_config)
    except NumberError as e:
        shown = repr(value) if len(repr(value)) <= 60 else repr(value)[:57] + "..."
        raise InputError(f"{what} is {shown}: {e}") from None
    return v.numerator if v.denominator == 1 else v


def _shown(name, m):
    return m.alias or name


def user_values(compiled, inputs, known=()) -> tuple:
    """Split ``inputs`` into (symbol -> value for this regime, names this regime does not read)."""
    user, unused = {}, []
    for k, v in inputs.items():
        n = compiled.symbol(k)
        if n is None:
            if k in known:
                unused.append(k)
                continue
            hint = suggest(k, [m.shown for m in compiled.symbols.values()] + list(known))
            raise InputError(f"unknown input '{k}'" + (f"; did you mean {', '.join(hint)}?" if hint else ""))
        if n in compiled.overridden:
            raise InputError(f"{k} is fixed by regime '{compiled.regime}' (a `let` in its chain): "
                             f"it cannot also be given as an input")
        user[n] = v
    return user, unused


def bind(compiled, config, inputs, exclude=(), base=None, source="") -> tuple:
    """(values, provenance) for every symbol of ``compiled`` but ``exclude``.

    ``inputs``: symbol name -> value (see :func:`user_values`); ``base``: values already
    bound (with their provenance) that inputs do not replace."""
    values, prov = ({}, {}) if base is None else (dict(base[0]), dict(base[1]))
    for n in inputs:
        values.pop(n, None)
    cfg = config or {}
    symbols = compiled.symbols

    def value_of(name, stack):
        if name in values:
            return values[name]
        if name in exclude:
            raise _Excluded(name)
        m = symbols[name]
        if name in inputs:
            v = inputs[name]
            if type(v) is not int or not 0 < v < 10**40:
                v = exact(v, f"input {_shown(name, m)}")
            origin = "input"
        else:
            key = next((k for k in m.keys if cfg.get(k) is not None), None)
            if key is not None:
                raw = cfg[key]
                if isinstance(raw, (list, dict)):
                    raise InputError(f"model config field '{key}' is a {type(raw).__name__}, not a number "
                                     f"(needed for {m.description})")
                v, origin = exact(raw, f"model config field '{key}'", True, m.domain), f"config:{key}"
            elif m.default is not None:
                if name in stack:
                    raise InputError(f"cyclic defaults: {' -> '.join(stack + (name,))}")
                args = [value_of(d, stack + (name,)) for d in m.default]
                v = Fraction(compiled.defaults[name](*args))
                v, origin = (v.numerator if v.denominator == 1 else v), "default"
            elif m.keys and all(k.startswith(CHECKPOINT_FIELD) for k in m.keys):
                raise InputError(_needs_checkpoint(compiled, name, m, config, source))
            elif m.keys:
                where = (f"the model config ({source}) has none of the fields {', '.join(m.keys)}"
                         if config is not None else "no model was given")
                raise InputError(f"missing value for {_shown(name, m)} ({m.description}): {where}")
            else:
                flag = _shown(name, m)
                how = f"--{flag} N" if m.alias else f"--set {name}=VALUE"
                if m.alias == "capacity":      # what a person gives: the card (the capacity follows from it)
                    how = "--gpu (24GB, 24GiB or a GPU name such as rtx-4090)"
                raise InputError(f"missing value for {flag} ({m.description}): give it with {how}")
        bad = None if (type(v) is int and v > 0 and m.domain != Domain.BOOL) else domain_problem(m.domain, Fraction(v))
        if bad:
            where = "the input" if origin == "input" else origin
            if origin == "default":       # name the numbers the default was computed from
                where += " (" + ", ".join(f"{_shown(d, symbols[d])}={values[d]}" for d in m.default
                                          if d in values) + ")"
            raise InputError(f"{_shown(name, m)} ({m.description}) must be {bad}, got {v} from {where}")
        values[name] = v
        prov[name] = origin
        return v

    for group in (compiled.args, inputs):
        for n in group:
            if n not in values and n not in exclude:
                try:
                    value_of(n, ())
                except _Excluded:
                    pass        # its default reads an excluded symbol: bound with it
    if compiled.checks:
        check_bounds(compiled, values, prov,
                     None if base is None else (values.keys() - base[0].keys()) | inputs.keys())
    return values, prov


def bound_of(compiled, name, values, kind="max"):
    """The value of ``name``'s declared ``max`` (or ``min``, ``multiple``) at ``values``, or None."""
    f = compiled.bounds.get((name, kind))
    if f is None:
        return None
    deps = compiled.symbols[name].bound(kind).args
    if any(d not in values for d in deps):
        return None
    v = f(*[values[d] for d in deps])
    return v if type(v) is Fraction else Fraction(v)


def _needs_checkpoint(compiled, name, m, config, source) -> str:
    """A symbol read only from a checkpoint's headers (``from ckpt_*``), for a model given without
    one: name the regime and the options that ask for it, and what to give instead."""
    opts = "".join(f" with --{o.replace('_', '-')} {c.replace('_', '-')}" for o, c in compiled.checkpoint_options)
    model = f"the model ({source})" if config is not None and source else "the model" if config is not None \
        else "no model"
    return (f"missing value for {_shown(name, m)} ({m.description}): regime {compiled.regime}{opts} needs a "
            f"checkpoint, and {model} {'was given' if config is None else 'has none'}: give --model a folder "
            f"with *.safetensors files (or ORG/NAME of one) or a .gguf file")


def _given(name, m, v, origin) -> str:
    """What the user gave (``--ep 3``, ``--set n_kv=3``), or where a value came from."""
    if origin == "input":
        return f"--{m.alias.replace('_', '-')} {v}" if m.alias else f"--set {name}={v}"
    if origin == "default":
        return f"{v}, the default of {_flag(name, m)}"
    return f"{v} from {origin}"


def _flag(name, m) -> str:
    return f"--{m.alias.replace('_', '-')}" if m.alias else name


def _with(bound) -> str:
    """The options a bound read, as the flags that chose them: `` with --offload optimizer-params``."""
    opts = [f"--{o.replace('_', '-')} {c.replace('_', '-')}" for o, c in bound.options]
    return " with " + " and ".join(opts) if opts else ""


def check_bounds(compiled, values, prov, changed=None) -> None:
    """Every bound the formula files declare between symbols (``max``, ``min``, ``multiple``,
    ``divides``); with ``changed``, only those that read a symbol in it (the others held already)."""
    for n, kind, reads, t in compiled.checks:
        if n not in values or (changed is not None and reads.isdisjoint(changed)):
            continue
        m, v = compiled.symbols[n], values[n]
        if kind == "divides":
            if t in values and v and (values[t] % v if type(values[t]) is int and type(v) is int
                                      else Fraction(values[t]) % Fraction(v)) != 0:
                tm = compiled.symbols[t]
                raise _refused(f"{_shown(n, m)} ({m.description}) must divide {_shown(t, tm)} "
                               f"({tm.description}) = {values[t]}, got {_given(n, m, v, prov.get(n, ''))}",
                               n, kind, reads, values[t])
            continue
        b = bound_of(compiled, n, values, kind)
        if b is None:
            continue
        if kind == "multiple":
            if not b or Fraction(v) % b == 0:
                continue
            word = "a whole multiple of"
        elif v > b if kind == "max" else v < b:
            word = "at most" if kind == "max" else "at least"
        else:
            continue
        shown_b = b.numerator if b.denominator == 1 else b
        bound = m.bound(kind).text if m.bound(kind).text == str(shown_b) else f"{m.bound(kind).text} = {shown_b}"
        raise _refused(f"{_shown(n, m)} ({m.description}) must be {word} {bound}{_with(m.bound(kind))}, "
                       f"got {_given(n, m, v, prov.get(n, ''))}", n, kind, reads, b)


def _refused(message, name, kind, reads, value) -> InputError:
    """The InputError of a declared bound, with the bound as data (``err.bound``: symbol, kind,
    the symbols it reads, its value) for searches that step over the values it refuses."""
    err = InputError(message)
    err.bound = {"symbol": name, "kind": kind, "reads": reads, "value": value}
    return err


class _Excluded(Exception):
    pass
