"""Regime inheritance chains and option resolution (no sympy: the fast path uses this too)."""
from __future__ import annotations

from typing import Dict, List, Mapping, Optional

from . import ast as A
from .diagnostics import InputError, suggest
from .library import Library


def regime_chain(lib: Library, name: str) -> List[A.RegimeDef]:
    if name not in lib.regimes:
        hint = suggest(name, lib.regimes)
        raise InputError(f"unknown regime '{name}'" + (f"; did you mean {', '.join(hint)}?" if hint else
                                                        f"; known regimes: {', '.join(sorted(lib.regimes))}"))
    chain, cur = [], lib.regimes[name]
    while True:
        chain.append(cur)
        if cur.extends is None:
            break
        cur = lib.regimes[cur.extends]
    return list(reversed(chain))


def resolve_options(lib: Library, chain: List[A.RegimeDef], user: Mapping[str, str],
                    config: Optional[Mapping] = None) -> Dict[str, str]:
    """Declared default < the model's config (``from``) < the regime's ``set`` < the user's choice."""
    opts = {name: o.default for name, o in lib.options.items()}
    for name, o in lib.options.items():
        if name in user:
            continue
        for key in o.config_keys:
            value = (config or {}).get(key)
            if value is None:
                continue
            if str(value) not in o.choices:
                raise InputError(f"model config field '{key}' is {value!r}, which is not a choice of option "
                                 f"'{name}' ({', '.join(o.choices)})")
            opts[name] = str(value)
            break
    for r in chain:
        for name, choice, _ in r.options:
            opts[name] = choice
    for name, choice in user.items():
        if name not in lib.options:
            hint = suggest(name, lib.options)
            raise InputError(f"unknown option '{name}'" + (f"; did you mean {', '.join(hint)}?" if hint else
                                                           f"; options are {', '.join(sorted(lib.options))}"))
        o = lib.options[name]
        if choice not in o.choices:
            raise InputError(f"option '{name}' has no choice '{choice}': choices are {', '.join(o.choices)}")
        opts[name] = choice
    return opts


