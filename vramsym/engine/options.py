"""The library's vocabulary as a typed record, and option resolution over it (no sympy, no AST).

``interface_of(library)`` keeps what the command line and the warm path need from a
checked library without loading it again: every option (choices, default, config
fields), every preset, every regime (its chain and the options it sets) and every
symbol's command-line name, as a :class:`vramsym.records.Interface`; the cache stores its
``to_json()`` and reads it back with ``Interface.from_json``.
"""
from __future__ import annotations

import functools
import json
import os

from ..catalog.paths import formulas_path, read_text
from ..errors import InputError, suggest
from ..records import Interface

RECIPES_FILE = "recipes.json"


def assembled(chain) -> tuple:
    """(components, phases, lets) of a regime chain, root first: the components are the added terms (in
    order), then the phases' terms no ``add`` named; a phase is name -> (description, its own terms)."""
    added = []
    phase_defs = {}    # name -> (description, own terms), in order
    lets = {}
    for r in chain:
        for comp, _ in r.add:
            if comp not in added:
                added.append(comp)
        for ph in r.phases:          # a child's phase of the same name replaces its parent's
            phase_defs[ph.name] = (ph.description, list(dict.fromkeys(t for t, _ in ph.terms)))
        for comp, _ in r.drop:       # drop removes a term everywhere
            if comp in added:
                added.remove(comp)
            for _, own in phase_defs.values():
                if comp in own:
                    own.remove(comp)
        for let in r.lets:
            lets[let.name] = let
    components = list(added)
    for _, own in phase_defs.values():
        components += [t for t in own if t not in components]
    return components, phase_defs, lets


def _chain(lib, name: str) -> list:
    """The regime definitions of ``name``'s chain, root first (what it extends, and so on)."""
    out = []
    while name is not None:
        out.append(lib.regimes[name])
        name = lib.regimes[name].extends
    return out[::-1]


def interface_of(lib) -> Interface:
    cached = getattr(lib, "_interface", None)
    if cached is not None:
        return cached
    interface = Interface.from_json({
        "options": {n: {"choices": list(o.choices), "default": o.default, "description": o.description,
                        "keys": list(o.config_keys)} for n, o in lib.options.items()},
        "presets": {n: {"choices": {label: [[o, c] for o, c, _ in assigns]
                                    for labels, assigns, _ in p.cases for label in labels}}
                    for n, p in lib.presets.items()},
        "regimes": {n: {"extends": r.extends, "description": r.description, "labels": list(r.labels),
                        "sets": [[o, c] for o, c, _ in r.options],
                        "components": assembled(_chain(lib, n))[0]} for n, r in lib.regimes.items()},
        "fits": [[f.regime, {o: c for o, c, _ in f.options}] for f in lib.fits],
        "symbols": {n: {"alias": d.alias, "description": d.description, "domain": d.domain}
                    for n, d in lib.symbols.items()},
    })
    lib._interface = interface
    return interface


def regime_names(interface: Interface, name: str) -> list:
    """The chain of regime names, root first."""
    regimes = interface.regimes
    if name not in regimes:
        hint = suggest(name, regimes)
        raise InputError(f"unknown regime '{name}'" + (f"; did you mean {', '.join(hint)}?" if hint else
                                                        f"; known regimes: {', '.join(sorted(regimes))}"))
    chain, cur = [], name
    while cur is not None:
        chain.append(cur)
        cur = regimes[cur].extends
    return list(reversed(chain))


def _check_choice(interface: Interface, name: str, choice: str, where: str) -> None:
    opts = interface.options
    if name not in opts:
        hint = suggest(name, opts)
        raise InputError(f"unknown option '{name}'" + (f"; did you mean {', '.join(hint)}?" if hint else
                                                       f"; options are {', '.join(sorted(opts))}"))
    if choice not in opts[name].choices:
        raise InputError(f"{where}: option {name.replace('_', '-')} has no choice '{choice.replace('_', '-')}': "
                         f"choices are {', '.join(c.replace('_', '-') for c in opts[name].choices)}")


@functools.lru_cache(maxsize=None)
def _recipes_file() -> dict:
    return json.loads(read_text(os.path.join(formulas_path(), RECIPES_FILE)))["regimes"]


def recipes(regime: str) -> dict | None:
    """The named recipes of ``regime`` (formulas/recipes.json): ``{"default": {name, description,
    source}, "recipes": {name: {description, options, source}}}``, or None where it names none."""
    return _recipes_file().get(regime)


def recipe_options(interface: Interface, regime: str, name: str | None) -> dict:
    """The options recipe ``name`` of ``regime`` chooses ({} for its default recipe or no name)."""
    if name is None:
        return {}
    entry = recipes(regime)
    if entry is None:
        named = sorted(r for r in _recipes_file())
        raise InputError(f"regime {regime} has no named recipes (--recipe is for {', '.join(named)}); "
                         "give its options as flags")
    if name == entry["default"]["name"]:
        return {}
    if name not in entry["recipes"]:
        known = [entry["default"]["name"] + " (default)"] + list(entry["recipes"])
        hint = suggest(name, list(entry["recipes"]) + [entry["default"]["name"]])
        raise InputError(f"regime {regime} has no recipe '{name}'" + (f"; did you mean {', '.join(hint)}?" if hint else "")
                         + f"; its recipes: {', '.join(known)}")
    out = dict(entry["recipes"][name]["options"])
    for option, choice in out.items():
        _check_choice(interface, option, choice, f"recipe {name} (formulas/{RECIPES_FILE})")
    return out


def recipe(interface: Interface, regime: str, user: dict, name: str | None = None) -> dict:
    """The options the regime's recipe sets (its chain's ``set`` lines, the regime's own last, then the
    named recipe's choices) that the user did not choose, option by option: what an answer assumed
    beyond the declared defaults."""
    out = {}
    for r in regime_names(interface, regime):
        for option, choice in interface.regimes[r].sets:
            out[option] = choice
    out.update(recipe_options(interface, regime, name))
    return {k: v for k, v in out.items() if k not in user}


def assumed(interface: Interface, regime: str, user: dict, name: str | None, components) -> list:
    """What an answer assumed (:func:`recipe`), each with the bytes it decides: the sum of the components
    on the GPU whose formulas read the option (or, for a preset, an option it sets), largest first.
    ``components``: (name, bytes, options read, host) of each component of the estimate."""
    presets = interface.presets
    rows = []
    for option, choice in recipe(interface, regime, user, name).items():
        reads = {option}
        if option in presets:
            reads |= {t for t, _ in next(iter(presets[option].choices.values()))}
        decided = [(c, b) for c, b, opts, host in components if not host and reads & set(opts)]
        rows.append({"option": option, "choice": choice, "decides_bytes": sum(b for _, b in decided),
                     "components": [c for c, _ in decided]})
    rows.sort(key=lambda r: -r["decides_bytes"])
    return rows


def resolve_options(interface: Interface, regime: str, user: dict, config=None) -> dict:
    """Declared default < the model's config (``from``) < the regime's ``set`` < the user's choice.

    A preset option (``precision``) is a named bundle: choosing it, at any of these levels,
    sets the options it stands for at that level; an option the user names directly wins
    over the preset the user also chose."""
    opts = interface.options
    presets = interface.presets
    out = {n: o.default for n, o in opts.items()}

    def apply(name, choice, level):
        out[name] = choice
        p = presets.get(name)
        if p is not None:
            for target, value in p.choices[choice]:
                if not (level == "user" and target in user):
                    out[target] = value

    for name, o in opts.items():
        if name not in presets:
            continue
        apply(name, o.default, "default")
    for name, o in opts.items():
        if name in user:
            continue
        for key in o.keys:
            value = (config or {}).get(key)
            if value is None:
                continue
            if not isinstance(value, str) or value not in o.choices:
                raise InputError(f"model config field '{key}' is {value!r}, which is not a choice of option "
                                 f"'{name}' ({', '.join(o.choices)})")
            apply(name, value, "config")
            break
    for r in regime_names(interface, regime):
        for name, choice in interface.regimes[r].sets:
            apply(name, choice, "regime")
    for name, choice in user.items():
        _check_choice(interface, name, choice, "the command line")
    for name, choice in user.items():   # presets first, so that a named option wins over its preset
        if name in presets:
            apply(name, choice, "user")
    for name, choice in user.items():
        if name not in presets:
            out[name] = choice
    return out
