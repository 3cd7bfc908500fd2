"""Stage 4: resolve a regime's inheritance chain and compose its terms into one sympy total.

A regime is a list of component terms plus overrides (``let``) and option
choices (``set``), inherited through ``extends``. Composing it with the user's
options gives a :class:`Composed` regime: each component's definition (with
references to other terms kept as placeholders) and its full expansion into
declared symbols only. Nothing here mutates the library.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Mapping, Optional, Tuple

import sympy

from ..lang import ast as A
from ..lang.build import make_symbol, placeholder, to_sympy
from ..lang.diagnostics import MSG_CYCLE, InputError
from ..lang.library import Library, find_cycle, names_in
from .options import interface_of, regime_names, resolve_options


def regime_chain(lib: Library, name: str) -> List[A.RegimeDef]:
    return [lib.regimes[n] for n in regime_names(interface_of(lib), name)]


@dataclass(frozen=True)
class Composed:
    regime: str
    description: str
    chain: Tuple[str, ...]            # root ... leaf
    options: Tuple[Tuple[str, str], ...]
    components: Tuple[str, ...]
    definitions: Dict[str, sympy.Expr]  # every reached term / overridden name -> expr over placeholders
    expanded: Dict[str, sympy.Expr]     # every reached name -> expr over declared symbols only
    symbols: Dict[str, sympy.Symbol]    # every declared symbol
    overridden: Tuple[str, ...]        # names given by a `let` in this regime chain
    host: Tuple[str, ...] = ()         # components in host (CPU) memory: not part of the GPU total

    @property
    def total(self) -> sympy.Expr:
        """The GPU total: every component but the host ones."""
        return sympy.Add(*[self.expanded[c] for c in self.components if c not in self.host])

    def free_symbols(self) -> List[str]:
        names = set()
        for c in self.components:
            names |= {s.name for s in self.expanded[c].free_symbols}
        return sorted(names)

    def option(self, name: str) -> Optional[str]:
        return dict(self.options).get(name)


def compose(lib: Library, name: str, options: Mapping[str, str] = (),
            config: Optional[Mapping] = None) -> Composed:
    """Compose regime ``name``; ``config`` is the model's config, read by options declared ``from``."""
    chain = regime_chain(lib, name)
    opts = resolve_options(interface_of(lib), name, dict(options), config)
    components: List[str] = []
    lets: Dict[str, A.Let] = {}
    for r in chain:
        for comp, _ in r.add:
            if comp not in components:
                components.append(comp)
        for comp, _ in r.drop:
            if comp in components:
                components.remove(comp)
        for let in r.lets:
            lets[let.name] = let
    symbols = {n: make_symbol(d) for n, d in lib.symbols.items()}

    # Which names are definitions (terms and overrides) rather than free symbols.
    def source_expr(n: str) -> Optional[A.Expr]:
        if n in lets:
            return lets[n].expr
        if n in lib.terms:
            return lib.terms[n].expr
        return None

    reached: Dict[str, A.Expr] = {}
    todo = list(components) + (["P"] if "P" in lib.terms else [])   # the model's size, reported with every result
    while todo:
        n = todo.pop()
        if n in reached:
            continue
        e = source_expr(n)
        if e is None:
            continue
        reached[n] = e
        todo.extend(x.name for x in names_in(e))
    cycle = find_cycle({n: [x.name for x in names_in(e)] for n, e in reached.items()})
    if cycle:
        raise InputError(f"regime '{name}': " + MSG_CYCLE.format(chain=" -> ".join(cycle)))

    def resolve(n: str) -> sympy.Expr:
        if n in reached:
            return symbols[n] if n in symbols else placeholder(n)
        return symbols[n]

    from ..lang.parse import deep_recursion
    with deep_recursion():
        definitions = {n: to_sympy(e, resolve, opts) for n, e in reached.items()}
    expanded: Dict[str, sympy.Expr] = {}

    def expand(n: str) -> sympy.Expr:
        if n in expanded:
            return expanded[n]
        d = definitions[n]
        repl = {}
        for s in d.free_symbols:
            if s.name in reached and s.name != n:
                repl[s] = expand(s.name)
        expanded[n] = d.xreplace(repl) if repl else d
        return expanded[n]

    for n in definitions:
        expand(n)
    # a `share` component is a fraction of the regime's other GPU components (e.g. allocator slack)
    shares = [c for c in components if c in lib.terms and lib.terms[c].share]
    if shares:
        rest = sympy.Add(*[expanded[c] for c in components
                           if c not in shares and not (c in lib.terms and lib.terms[c].host)])
        for c in shares:
            expanded[c] = expanded[c] * rest
    top = chain[-1]
    return Composed(regime=name, description=top.description, chain=tuple(r.name for r in chain),
                    options=tuple(sorted(opts.items())), components=tuple(components),
                    definitions=definitions, expanded=expanded, symbols=symbols,
                    overridden=tuple(sorted(lets)),
                    host=tuple(c for c in components if c in lib.terms and lib.terms[c].host))


def used_options(lib: Library, composed: Composed) -> List[str]:
    """Options whose choice changes this regime (they appear in a reached match)."""
    v = _Options()
    chain = regime_chain(lib, composed.regime)
    lets = {l.name: l.expr for r in chain for l in r.lets}
    for n in composed.definitions:
        v.visit(lets.get(n) or lib.terms[n].expr)
    return sorted(v.used)


class _Options(A.Visitor):
    """The options a ``match`` reads."""

    def __init__(self):
        self.used = set()

    def visit_Match(self, e):
        self.used.add(e.option)
        self.generic_visit(e)
