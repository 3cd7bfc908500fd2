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
from ..lang.build import make_symbol, placeholder, substitute, to_sympy
from ..lang.diagnostics import MSG_CYCLE, InputError
from ..lang.library import Library, find_cycle, names_in
from ..lang.parse import deep_recursion
from .options import assembled, interface_of, regime_names, resolve_options


def regime_chain(lib: Library, name: str) -> List[A.RegimeDef]:
    return [lib.regimes[n] for n in regime_names(interface_of(lib), name)]


#: the name of the one phase of a regime that declares none
IMPLICIT_PHASE = ("all", "every component alive at once (the regime declares no phases)")


@dataclass(frozen=True)
class Phase:
    """One phase of a regime's timeline: ``components`` are every component alive in it (those no
    phase names, then its own), in the regime's order; ``own`` are the terms the phase names."""
    name: str
    description: str
    components: Tuple[str, ...]
    own: Tuple[str, ...]


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
    phases: Tuple[Phase, ...] = ()     # the timeline: the total is the largest phase total
    phase_totals: Dict[str, sympy.Expr] = None   # phase name -> its GPU total over declared symbols
    total: sympy.Expr = None           # the GPU total: the largest phase total (host components apart)

    @property
    def static(self) -> Tuple[str, ...]:
        """The components no phase names: alive in every phase."""
        own = {c for p in self.phases for c in p.own}
        return tuple(c for c in self.components if c not in own)

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
    components, phase_defs, lets = assembled(chain)
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

    with deep_recursion():
        definitions = {n: to_sympy(e, resolve, opts, lib.shapes) for n, e in reached.items()}
    expanded: Dict[str, sympy.Expr] = {}

    def expand(n: str) -> sympy.Expr:
        if n in expanded:
            return expanded[n]
        d = definitions[n]
        repl = {}
        for s in d.free_symbols:
            if s.name in reached and s.name != n:
                repl[s] = expand(s.name)
        expanded[n] = substitute(d.xreplace(repl) if repl else d)
        return expanded[n]

    for n in definitions:
        expand(n)
    host = tuple(c for c in components if c in lib.terms and lib.terms[c].host)
    shares = [c for c in components if c in lib.terms and lib.terms[c].share]
    # a phase whose own terms are its alone and all 0 under these options (Gemma 4's per-layer
    # inputs for a model without them) is no moment of this job: its total, the components alive
    # in every phase, is at most every other phase's
    kept = {n: (d, own) for n, (d, own) in phase_defs.items()
             if not (own and all(expanded[t] == 0 for t in own)
                     and not any(t in o for m, (_, o) in phase_defs.items() if m != n for t in own))}
    if kept:
        gone = {t for n, (_, own) in phase_defs.items() if n not in kept for t in own}
        components = [c for c in components if c not in gone]
        phase_defs = kept
    if len(phase_defs) > 1:     # a term every phase names is alive in every phase
        every = set.intersection(*(set(own) for _, own in phase_defs.values()))
        phase_defs = {n: (d, [t for t in own if t not in every]) for n, (d, own) in phase_defs.items()}
    named = {t for _, own in phase_defs.values() for t in own}
    static = [c for c in components if c not in named]
    if not phase_defs:
        phase_defs = {IMPLICIT_PHASE[0]: (IMPLICIT_PHASE[1], [])}
    phases = tuple(Phase(n, d, tuple(c for c in components if c not in named or c in own), tuple(own))
                   for n, (d, own) in phase_defs.items())

    def gpu_sum(names):
        return sympy.Add(*[expanded[c] for c in names if c not in shares and c not in host])

    # the total is the largest phase total: the components alive in every phase, plus the
    # largest of the phases' own terms
    fracs = {c: expanded[c] for c in shares}
    if len(phases) == 1:
        peak = gpu_sum(components)
    else:
        # unevaluated: sympy's Max would compare every pair of phase sums for a provable order
        # (Max._find_localzeros factors each difference), most of a compile's time, to drop a
        # dominated phase that the evaluation and the solver then never pick anyway; a phase with
        # no own terms adds nothing (memory is never negative)
        owns = [o for o in dict.fromkeys(gpu_sum(p.own) for p in phases) if o != 0] or [sympy.Integer(0)]
        peak = gpu_sum(static) + (owns[0] if len(owns) == 1 else sympy.Max(*owns, evaluate=False))
    # a `share` component is a fraction of the regime's other GPU components (e.g. allocator
    # slack): of those of the peak phase
    for c in shares:
        expanded[c] = fracs[c] * peak
    if len(phases) == 1:
        total = sympy.Add(*[expanded[c] for c in components if c not in host])
        phase_totals = {phases[0].name: total}
    else:
        total = peak + sympy.Add(*[expanded[c] for c in shares])
        phase_totals = {}
        for p in phases:
            rest = gpu_sum(p.components)
            phase_totals[p.name] = rest + sympy.Add(*[fracs[c] * rest for c in shares])
    top = chain[-1]
    return Composed(regime=name, description=top.description, chain=tuple(r.name for r in chain),
                    options=tuple(sorted(opts.items())), components=tuple(components),
                    definitions=definitions, expanded=expanded, symbols=symbols,
                    overridden=tuple(sorted(lets)), host=host, phases=phases, phase_totals=phase_totals,
                    total=total)


def used_options(lib: Library, composed: Composed) -> List[str]:
    """Options whose choice changes this regime (they appear in a reached match)."""
    return options_read(lib, composed, composed.definitions)


def options_read(lib: Library, composed: Composed, names) -> List[str]:
    """The options the ``match`` expressions of the terms ``names`` read (a regime's ``let`` in
    place of the library's term), sorted."""
    v = _Options()
    chain = regime_chain(lib, composed.regime)
    lets = {l.name: l.expr for r in chain for l in r.lets}
    for n in names:
        v.visit(lets.get(n) or lib.terms[n].expr)
    return sorted(v.used)


class _Options(A.Visitor):
    """The options a ``match`` reads."""

    def __init__(self):
        self.used = set()

    def visit_Match(self, e):
        self.used.add(e.option)
        self.generic_visit(e)
