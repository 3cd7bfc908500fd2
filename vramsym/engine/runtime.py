"""A regime compiled for one model: the object behind ``vramsym.compile``, the CLI and ``fit``.

:class:`Vocabulary` holds the library's :class:`~vramsym.records.Interface`, and
``Vocabulary.compiled`` finds the :class:`~vramsym.engine.compiled.CompiledRegime` for a regime
and its resolved options: in this process's memo, in the cache (verified data), or by loading
the formula library, composing with sympy and compiling (then cached). :func:`compile` gives a
:class:`BoundRegime`, a compiled regime with the model's numbers bound once; ``evaluate`` and ``solve`` bind the inputs (vramsym.engine.bind), evaluate the
compiled code and search exactly (vramsym.engine.inverse). Nothing else computes bytes.
"""
from __future__ import annotations

from ..catalog.gpus import gpu_inputs, resolve_capacity
from ..catalog.models import unmodelled
from . import cache
from .bind import bind, bound_of, check_bounds, user_values
from .assemble import UNIT_FORMAT, assemble
from .compiled import CompiledRegime
from ..errors import DoesNotFit, InputError, NotModelled, SolveError, suggest
from .inverse import largest_fitting
from .options import interface_of, resolve_options
from ..records import Interface
from .results import Binding, Estimate, Solution, negative, to_int_bytes

_MEMO: dict = {}


def _units():
    """The cache miss's gate (tests/test_imports.py GATES): parsing and checking the formula files
    and compiling a definition that neither the package nor the cache holds import lark, pint and
    sympy (vramsym.engine.units), which the warm path never loads."""
    from . import units
    return units


class Vocabulary:
    """The library's interface (options, presets, regimes, symbols) and how to get compiled regimes."""

    def __init__(self, extra=(), library=None, key=None):
        self.extra = tuple(str(e) for e in extra)
        self.library = library
        self.key = self.shipped_key = None
        self._shipped = self._page = None
        self._compiled = {}        # this vocabulary's compiled regimes, by regime and options
        self._digest = None        # the library's structure (vramsym.engine.units.digest)
        self._units = {}           # compiled definitions, by unit key
        self._unit_sources = None  # (shipped units, the user cache's units) once read
        self._new_units = False
        if library is not None:
            self.interface = interface_of(library)
            return
        self.key = key or cache.code_key(self.extra)
        if not self.extra:       # the regimes shipped with the package answer the bundled formulas
            self.shipped_key = self._shipped_key
        self.interface = self._cached(cache.get(self.key, "interface"))
        if self.interface is None:
            self.interface = self._cached(cache.shipped(self.shipped_key, "interface"))
            if self.interface is not None:
                cache.put(self.key, "interface", self.interface.to_json())
        if self.interface is None:
            self.interface = interface_of(self.load_library())
            cache.put(self.key, "interface", self.interface.to_json())

    @staticmethod
    def _cached(data):
        """The interface read from cached JSON, or None (none, or of another format: read again)."""
        if data is None:
            return None
        try:
            return Interface.from_json(data)
        except (ValueError, KeyError, TypeError, AttributeError):
            return None

    @property
    def iface(self) -> dict:
        """The interface as JSON data (what ``vramsym.vocabulary().iface`` gave before the typed
        :attr:`interface`; kept for callers of that name)."""
        return self.interface.to_json()

    def _shipped_key(self):
        if self._shipped is None:
            self._shipped = cache.shipped_key()
        return self._shipped

    def page_key(self):
        """The key of the page groups the package ships (computed once, on a page's first miss)."""
        if self._page is None:
            self._page = cache.shipped_key(page=True)
        return self._page

    def load_library(self):
        if self.library is None:       # a cache miss: parse and check the formula files (lark, pint)
            self.library = _units().load_library(self.extra)
        return self.library

    def known_inputs(self):
        return set(self.interface.symbols) | set(self.interface.aliases())

    def resolve(self, regime: str, options, config=None) -> dict:
        return resolve_options(self.interface, regime, dict(options or {}), config)

    def compiled(self, regime: str, options=None, config=None) -> CompiledRegime:
        """The compiled regime for ``regime`` with ``options`` resolved (against ``config``)."""
        resolved = self.resolve(regime, options, config)
        opts = sorted(resolved.items())
        memo_key = (regime, tuple(opts))
        hit = self._compiled.get(memo_key)
        if hit is not None:
            return hit
        data = None
        if self.key is not None:
            name = cache.entry_name("regime", regime, opts)
            data = cache.get(self.key, name)
        compiled = None
        if data is not None:
            try:
                compiled = CompiledRegime(data)
            except (ValueError, KeyError, TypeError, SyntaxError, EOFError):
                compiled = None      # an entry of another format: rebuilt below
        if compiled is None and self.shipped_key:
            data = cache.shipped(self.shipped_key, name)     # compiled when the package was built
            try:
                compiled = data and CompiledRegime(data)
            except (ValueError, KeyError, TypeError, SyntaxError):
                compiled = None      # shipped by another format: compiled below
            if compiled:
                cache.put(self.key, name, compiled.cache_payload())
        if compiled is None:     # a cache miss: the regime's units joined (vramsym.engine.assemble)
            data = assemble(self.digest(), regime, resolved, self.unit)
            compiled = CompiledRegime(data)
            if self.key is not None:
                cache.put(self.key, name, compiled.cache_payload())
                if self._new_units:     # definitions compiled with sympy here: kept for the next miss
                    cache.put(self.key, "units", self._unit_sources[1])
                    self._new_units = False
        self._compiled[memo_key] = compiled
        return compiled


    def digest(self) -> dict:
        """The library's structure that regimes are assembled from: in the user cache, shipped
        with the package, or read from the formula files (lark, pint, sympy)."""
        if self._digest is None:
            d = cache.get(self.key, "digest") if self.key is not None else None
            if (d is None or d.get("format") != UNIT_FORMAT) and self.shipped_key:
                d = cache.shipped(self.shipped_key, "digest")
                if d is not None and d.get("format") == UNIT_FORMAT and self.key is not None:
                    cache.put(self.key, "digest", d)
            if d is None or d.get("format") != UNIT_FORMAT:
                d = _units().digest(self.load_library())
                if self.key is not None:
                    cache.put(self.key, "digest", d)
            self._digest = d
        return self._digest

    def unit(self, key: str, fallback: str = None) -> dict:
        """The compiled definition ``key`` (vramsym.engine.units.compile_unit): shipped with the
        package, in the user cache, or compiled now with sympy; where ``key`` is not at hand but
        ``fallback`` (the same definition without terms substituted) is, that one."""
        keys = (key,) if self.library is not None and self.key is None else (key, fallback)
        # (a vocabulary of a library, as vramsym.precompile makes one, compiles each unit exactly)
        for k in keys:
            u = self._units.get(k) if k else None
            if u is not None:
                return u
        if self._unit_sources is None:
            shipped = cache.shipped(self.shipped_key, "units") if self.shipped_key else None
            user = cache.get(self.key, "units") if self.key is not None else None
            self._unit_sources = (shipped if isinstance(shipped, dict) else {},
                                  user if isinstance(user, dict) else {})
        for k in keys:
            u = (self._unit_sources[0].get(k) or self._unit_sources[1].get(k)) if k else None
            if u is not None and u.get("format") == UNIT_FORMAT:
                self._units[k] = u
                return u
        u = _units().compile_unit(self.load_library(), key)
        self._unit_sources[1][key] = u
        self._new_units = True
        self._units[key] = u
        return u

    @classmethod
    def of(cls, extra=(), library=None) -> "Vocabulary":
        """The vocabulary of ``library``, or of the bundled formula files plus ``extra`` as they are
        now: keyed by their content, so an edited file is never answered from an earlier reading."""
        if library is not None:
            v = getattr(library, "_vocabulary", None)
            if v is None:
                v = cls(library=library)
                library._vocabulary = v
            return v
        extra = tuple(str(e) for e in extra)
        key = cache.code_key(extra)
        k = ("vocabulary", extra, key)
        if k not in _MEMO:
            _MEMO[k] = cls(extra, key=key)
        return _MEMO[k]


#: the vocabulary of a library or of the bundled formula files (``vramsym.vocabulary``)
vocabulary = Vocabulary.of


def gap_sentence(model, regime: str, gap) -> str:
    return f"model_type {model.config.get('model_type')!r}: regime '{regime}' does not model {gap}"


def refuse_gap(model, regime: str, regimes: dict, gap, layout=False) -> None:
    """Refuse a gap of ``model`` in ``regime`` (unless --assume): one of the regime's terms (then the
    regimes of ``regimes`` whose components do model the model are named) or, ``layout``, the layout
    its inputs and options ask (every regime would refuse it). A named regime answers with the option
    choices it sets itself (QLoRA's 4-bit base: refused for a hybrid's mixers)."""
    if gap is not None and model.assume is None:
        answer = [] if layout else [
            n for n, r in sorted(regimes.items()) if r.components and "heuristic" not in r.labels
            and n != regime and unmodelled(model, r.components, options=dict(r.sets), regime=n) is None]
        others = f"; regimes that answer for it: {', '.join(answer)}" if answer else ""
        raise NotModelled(gap_sentence(model, regime, gap) + others + "; refused rather than guessed, "
                          "`--assume llama` gives a Llama-style approximation", gap)


#: how close (relative) a floating-point screen may come to what it is compared with before the
#: comparison is made in exact arithmetic: far above the rounding of a few thousand float operations
SCREEN_MARGIN = 1e-9


def _float_q(n, d=1):
    """The generated code's exact quotient ``_q(n, d)`` and constant ``Fraction(p, q)`` for the
    floating-point screen: an int where d divides n, else a float."""
    if type(n) is int and type(d) is int:
        q, r = divmod(n, d)
        if not r:
            return q
    return n / d


class Screened:
    """A total known first in floating point, exact on demand: a comparison whose sides differ by
    more than :data:`SCREEN_MARGIN` (relative) is decided by the floats, any closer one by the exact
    values (``exact()``), so every decision is the exact one. ``float`` is None where the
    generated code cannot run on floats."""

    __slots__ = ("float", "_exact", "_value")

    def __init__(self, value, exact):
        self.float, self._exact, self._value = value, exact, None

    def exact(self):
        if self._value is None:
            self._value = self._exact()
        return self._value

    @staticmethod
    def _apart(a, b) -> bool:
        """Whether two floats (None: unknown) differ by more than :data:`SCREEN_MARGIN`, relative."""
        return a is not None and b is not None and abs(a - b) > SCREEN_MARGIN * max(abs(a), abs(b), 1.0)

    def _decide(self, other):
        """(a, b) to compare: floats when they are far apart, else the exact values."""
        o = other.float if isinstance(other, Screened) else float(other)
        if self._apart(self.float, o):
            return self.float, o
        return self.exact(), other.exact() if isinstance(other, Screened) else other

    def near(self, other) -> bool:
        """Whether the two floats lie within :data:`SCREEN_MARGIN` of each other (a monotonicity
        check between them is then not worth an exact evaluation: :func:`vramsym.engine.inverse._monotone`)."""
        return isinstance(other, Screened) and self.float is not None and other.float is not None \
            and not self._apart(self.float, other.float)

    def __lt__(self, other):
        a, b = self._decide(other)
        return a < b

    def __le__(self, other):
        a, b = self._decide(other)
        return a <= b

    def __gt__(self, other):
        a, b = self._decide(other)
        return a > b

    def __ge__(self, other):
        a, b = self._decide(other)
        return a >= b

    def __eq__(self, other):
        a, b = self._decide(other)
        return a == b

    __hash__ = None


class BoundRegime:
    """A compiled regime bound to one model (what :func:`compile` gives).

    ``evaluate(batch=4, seq=4096)`` returns an :class:`~vramsym.engine.results.Estimate`;
    ``solve("batch", "24GB", seq=4096)`` the largest batch that fits. The model's numbers
    are bound (and domain-checked) once, at construction."""

    def __init__(self, regime, model=None, known=()):
        self.regime = regime
        self.model = model
        self.known = frozenset(known)
        self._free = self._input_symbols()
        self._stale = {}          # frozenset of given / excluded symbols -> base entries they outdate
        cfg = model.config if model is not None else None
        # what this regime's terms do not model for a hybrid model (formulas/architectures.json
        # _checks.hybrid_unmodelled): refused when evaluated, unless --assume llama
        self._gap = None if model is None else unmodelled(model, [m.name for m in regime.components], regime=regime.regime)
        self._options = dict(regime.options)     # the layout rules read them (--tp-style dtensor)
        try:
            self._base = bind(regime, cfg, {}, exclude=self._free, source=model.source if model else "")
        except InputError:
            self._base = None    # reported by evaluate, where the missing value is named

    def _input_symbols(self):
        """The command-line inputs without a default (batch, seq) and every symbol whose default
        reads one: what the model's binding leaves out. Inputs with a default (gpus, tp, zero,
        lora_rank, ...) are bound there with it and replaced when given."""
        aliased = {n for n, m in self.regime.symbols.items() if m.alias and m.default is None}
        return frozenset(aliased | self._readers(aliased))

    def _readers(self, names):
        """The symbols whose defaults read one of ``names``, directly or through other defaults."""
        index = self._read_by
        if index is None:      # symbol -> the symbols whose defaults read it, built once per bound regime
            index = {}
            for n, m in self.regime.symbols.items():
                for d in m.default or ():
                    index.setdefault(d, []).append(n)
            self._read_by = index
        out, frontier = set(), set(names)
        while frontier:
            frontier = {n for d in frontier for n in index.get(d, ()) if n not in out}
            out |= frontier
        return out

    def _base_for(self, names):
        """The model's binding without the entries that ``names`` (given or excluded symbols) and
        the defaults reading them outdate."""
        key = frozenset(names)
        stale = self._stale.get(key)
        if stale is None:
            stale = (key | self._readers(key)) & self._base[0].keys()
            self._stale[key] = stale
        if not stale:
            return self._base
        return ({k: v for k, v in self._base[0].items() if k not in stale},
                {k: v for k, v in self._base[1].items() if k not in stale})

    def _bind(self, inputs, exclude=()):
        user, unused = user_values(self.regime, inputs, self.known)
        base = None if self._base is None else self._base_for(set(user) | set(exclude))
        cfg = self.model.config if self.model is not None else None
        self._refuse_gap(self._gap)          # a term that does not model the model's mixers: before any value
        values, prov = bind(self.regime, cfg, user, exclude=exclude, base=base,
                            source=self.model.source if self.model else "")
        if self.model is not None:
            # a layout the formulas do not model for this structure (--tp 2 of a hybrid, --tp-style dtensor
            # of a fused q/k/v projection)
            self._refuse_gap(unmodelled(self.model, (), values, self._options, self.regime.regime), layout=True)
        return values, prov, unused

    #: the vocabulary's regimes (name -> vramsym.records.Regime), set by :func:`compile`: a refusal names
    #: those whose components model this model
    regimes = {}

    def _refuse_gap(self, gap, layout=False) -> None:
        """Refuse a gap (unless --assume): :func:`refuse_gap` for this regime."""
        refuse_gap(self.model, self.regime.regime, self.regimes, gap, layout)

    def _gap_sentence(self, gap) -> str:
        return gap_sentence(self.model, self.regime.regime, gap)

    def _approximate(self, values):
        """Why this estimate is an approximation (--assume), or None."""
        why = getattr(self.model, "approximate", None)
        gap = None if self.model is None else self._gap or unmodelled(self.model, (), values, self._options, self.regime.regime)
        if gap is None:
            return why
        return (why + "; " if why else f"--assume {self.model.assume}: ") + self._gap_sentence(gap) + \
            " (Llama-style terms stand in)"

    _weights_check = None
    _read_by = None           # see _readers

    def _estimate(self, values, prov):
        notes = self.model.notes if self.model is not None else ()
        if self.model is not None and self.model.checkpoint and "weights_source" not in self.regime.used_options:
            # training and fine-tuning hold the weights in their own formats: the headers are not read
            notes = tuple(n for n in notes if not n.startswith("weights from the ")) + (
                f"regime {self.regime.regime} counts the weights from the formulas in the formats it trains "
                f"with, not from the checkpoint's headers ({self.model.checkpoint.get('weight_bytes', 0):,} B "
                f"as stored)",)
        if self._weights_check is not None:
            notes = tuple(notes) + (self._compare_weights(values, prov),)
        if self.model is not None:
            notes = tuple(notes) + beyond_positions(self.model.config, values.get("s")) + self._loop_cache_note()
        name = self.model.name if self.model is not None else ""
        est = Estimate(self.regime, name, Binding(values, prov), self.regime.total(values), notes,
                       self._approximate(values))
        if est.exact_total < 0:
            negative(est)
        return est

    def _loop_cache_note(self) -> tuple:
        """A hand-written loop (--loop manual) over a config whose use_cache is true (or left out: the
        config classes' default) keeps a KV cache in training unless every layer is checkpointed
        (transformers' GradientCheckpointingLayer turns it off then): what to do, since the terms count
        none (formulas/training.vram, option loop)."""
        if self._options.get("loop") != "manual" or "loop" not in self.regime.used_options \
                or self._options.get("checkpointing") == "full" \
                or self.model.config.get("use_cache", True) is False:
            return ()
        return ("--loop manual counts no KV cache, but this config sets use_cache true (or leaves it to its "
                "class's default, true): call the model with use_cache=False (or set model.config.use_cache = "
                "False), else outputs.past_key_values keeps every layer's keys and values through backward and "
                "the optimizer step, beyond this estimate",)

    def _compare_weights(self, values, prov) -> str:
        """A note comparing the weights the headers give with what the formulas count."""
        filed = to_int_bytes(self.regime.parts(values)[[t.name for t in self.regime.components].index("weights")])
        inputs = {k: v for k, v in values.items() if prov.get(k) == "input" and self._weights_check.regime.symbol(k)}
        try:
            est = self._weights_check.evaluate(inputs)
        except InputError as e:
            return f"the formulas cannot count these weights to compare with the headers: {e}"
        counted = est.component("weights").bytes
        opts = dict(est.options)
        how = f"quant={opts.get('quant', 'none')}" + ("" if opts.get("quant", "none") != "none"
                                                    else f", compute_format={opts.get('compute_format')}")
        if counted == filed:
            return f"weights: the headers' {filed:,} B equal the formulas' count ({how}) exactly"
        diff = filed - counted
        return (f"WARNING: weights mismatch: the headers give {filed:,} B, the formulas count {counted:,} B "
                f"({how}): {diff:+,} B ({diff / counted * 100 if counted else float('inf'):+.2f}%); "
                f"the estimate uses the headers")

    _float_total = None

    def screen_total(self, inputs) -> Screened:
        """The total for these inputs, bound and checked as :meth:`evaluate` does (the same errors), as
        a :class:`Screened` value: the compiled code run once over floats, exact only where a
        comparison needs it (``solve min_gpus`` compares many layouts with the capacity)."""
        values, prov, _ = self._bind(dict(inputs))
        regime = self.regime

        def exact():
            total = regime.total(values)
            if total < 0:
                self._estimate(values, prov)         # the sentence a negative total gets
            return total
        if self._float_total is None:
            ns: dict = {}
            exec(regime.code_object, ns)             # vramsym's own generated module, as CompiledRegime runs it
            # its exact constants Fraction(p, q) and quotients as floats: no Fraction is made
            ns["_q"], ns["_exact"], ns["Fraction"] = _float_q, (lambda v: v), _float_q
            self._float_total = ns[regime.data["total"]]
        try:
            value = float(self._float_total(*[float(values[a]) for a in regime.args]))
        except (TypeError, ValueError, ZeroDivisionError, OverflowError):
            value = None
        if value is not None and value < 0:
            exact()
        return Screened(value, exact)

    def evaluate(self, inputs=None, **kw) -> Estimate:
        """The estimate for these inputs (command-line names such as ``batch`` or symbol names)."""
        values, prov, _ = self._bind(dict(inputs or {}, **kw))
        return self._estimate(values, prov)

    def unused_inputs(self, inputs) -> list:
        """The inputs that this regime does not read (a flag it ignores)."""
        return user_values(self.regime, inputs, self.known)[1]

    def with_gpu(self, inputs, gpu) -> dict:
        """``inputs`` plus what the GPU fixes for the symbols this regime reads and the user did not
        give: ``capacity`` (vLLM's reserve, heuristics) and, for a named card, its catalog inputs
        (gpus.json ``inputs``: ``cuda_total``, ...).  ``gpu``: bytes as an int, a size or a GPU name."""
        inputs = dict(inputs or {})
        named = {} if isinstance(gpu, int) else gpu_inputs(gpu)
        capacity = gpu if isinstance(gpu, int) else resolve_capacity(gpu)[0]
        for alias, value in (("capacity", capacity), *named.items()):
            sym = self.regime.symbol(alias)
            if sym is not None and alias not in inputs and sym not in inputs:
                inputs[alias] = value
        return inputs

    def at_bound(self, inputs, bound: str = "point") -> dict:
        """``inputs`` with every run-time range the user did not give (CUDA context, allocator slack)
        at its ``low`` or ``high`` end; ``point`` leaves the defaults."""
        if bound not in ("point", "low", "high"):
            raise InputError(f"--bound must be point, low or high, not '{bound}'")
        inputs = dict(inputs or {})
        if bound == "point":
            return inputs
        for n, (lo, hi) in self.regime.ranges.items():
            alias = self.regime.symbols[n].alias
            if n not in inputs and (alias is None or alias not in inputs):
                inputs[n] = lo if bound == "low" else hi
        return inputs

    def solve(self, variable: str, capacity, inputs=None, **kw) -> Solution:
        """The largest integer ``variable`` (``batch``, ``max_seq``, any integer symbol) whose
        total fits ``capacity`` (bytes as an int, '24GB', '24GiB' or a GPU name)."""
        inputs = dict(inputs or {}, **kw)
        if not isinstance(capacity, int) or isinstance(capacity, bool):
            inputs = self.with_gpu(inputs, capacity)
            capacity, _ = resolve_capacity(capacity)
        c = self.regime
        var = variable[4:] if variable.startswith("max_") else variable
        name = c.symbol(var)
        if name is None and var == "ctx":     # llama.cpp's -c per slot: Ollama's num_ctx, else the sequence
            name = next((n for n in (c.symbol("num_ctx"), c.symbol("seq")) if n is not None and n in c.args), None)
        if name is None:
            if var in self.known:
                raise SolveError(f"the {c.regime} total does not depend on {var}: there is nothing to solve")
            ints = sorted(m.shown for m in c.symbols.values() if m.domain.integer)
            hint = suggest(var, ints)
            raise InputError(f"cannot solve for '{var}': no such symbol" +
                             (f"; did you mean {', '.join(hint)}?" if hint else f"; integer symbols: {', '.join(ints)}"))
        m = c.symbols[name]
        alias = m.shown
        if not m.domain.integer:
            raise InputError(f"cannot solve for '{variable}': it is not an integer symbol (domain {m.domain})")
        if name in inputs or alias in inputs:
            raise InputError(f"'{alias}' is both given and solved for: drop --{alias.replace('_', '-')}")
        if name not in c.args:
            raise SolveError(f"the {c.regime} total does not depend on {alias} ({m.description}): "
                             f"there is nothing to solve")
        inputs = self.with_gpu(inputs, capacity)
        values, prov, _ = self._bind(inputs, exclude=(name,))
        lo = m.domain.lowest
        if any(n not in values for n in self._readers({name})):
            user = user_values(c, inputs, self.known)[0]
            cfg = self.model.config if self.model is not None else None

            def total(x):      # a default reads the variable: bind again at every x
                v, p = bind(c, cfg, dict(user, **{name: x}))
                values.update(v)
                prov.update(p)
                return c.total(values)
        else:
            def total(x):
                values[name] = x
                return c.total(values)

        at_lo = total(lo)
        if at_lo > capacity:
            prov[name] = "input"
            est = self._estimate(dict(values, **{name: lo}), prov)
            big = est.largest()
            short = to_int_bytes(at_lo - capacity)
            raise DoesNotFit(
                f"nothing fits: even at {alias}={lo} the total is {to_int_bytes(at_lo):,} B, "
                f"{short:,} B over the capacity of {capacity:,} B; the largest term is {big.name} "
                f"({big.description}) at {big.bytes:,} B",
                {"variable": alias, "minimum": lo, "total_bytes_at_minimum": to_int_bytes(at_lo),
                 "capacity_bytes": capacity, "shortfall_bytes": short,
                 "largest_term": {"name": big.name, "bytes": big.bytes},
                 "components": [{"name": x.name, "bytes": x.bytes} for x in est.components]})
        hi = bound_of(c, name, values, "max")
        hi = None if hi is None else int(hi // 1)
        if hi is not None and hi < lo:
            raise SolveError(f"{alias} must be at most {m.max.text} = {hi}, below its "
                             f"smallest value {lo}: there is nothing to solve")
        best = largest_fitting(total, capacity, lo=lo, hi=hi, name=alias)
        best = self._within_bounds(best, lo, total, values, prov, name, alias)
        nxt = to_int_bytes(total(best + 1))
        refused = None
        if nxt <= capacity:         # it fits, but a bound refuses it (--cp must divide the sequence)
            try:
                check_bounds(self.regime, values, dict(prov, **{name: "input"}), {name})
            except InputError as e:
                refused = str(e)
        total(best)         # leaves every value (defaults that read the variable too) at the answer
        prov[name] = "input"
        return Solution(name, alias, best, capacity, self._estimate(values, prov), nxt, next_refused=refused)


    MAX_STEPS_DOWN = 1 << 16

    def _within_bounds(self, best, lo, total, values, prov, name, alias) -> int:
        """The largest value at most ``best`` that every bound reading the variable allows (``--cp``
        divides the sequence: the solved length steps down to a multiple of it); a smaller total
        still fits, since the search found the total does not fall as the variable grows."""
        x = best
        while x >= lo:
            total(x)
            try:
                check_bounds(self.regime, values, dict(prov, **{name: "input"}), {name})
                return x
            except InputError as e:
                if best - x >= self.MAX_STEPS_DOWN:
                    raise SolveError(f"no {alias} from {x} to {best} satisfies the declared bounds: {e}") from None
            x -= 1
        total(best)
        check_bounds(self.regime, values, dict(prov, **{name: "input"}), {name})    # says which bound
        return best


def compile(model=None, regime: str = "inference", options=None, library=None, formulas=(),
            vocabulary=None) -> BoundRegime:
    """``regime`` with ``options`` compiled (or found compiled) and bound to ``model``."""
    vocabulary = vocabulary or Vocabulary.of(formulas, library)
    cfg = model.config if model is not None else None
    c = BoundRegime(vocabulary.compiled(regime, options, cfg), model, vocabulary.known_inputs())
    c.regimes = vocabulary.interface.regimes
    if getattr(model, "checkpoint", None) and dict(c.regime.options).get("weights_source") == "file" \
            and any(t.name == "weights" for t in c.regime.components):
        # the same regime with the weights counted by the formulas, to compare with the headers
        formula = vocabulary.compiled(regime, dict(options or {}, weights_source="formula"), cfg)
        c._weights_check = BoundRegime(formula, model, vocabulary.known_inputs())
    return c


def beyond_positions(config: dict, seq) -> tuple:
    """A note when the sequence runs past the positions the model declares: its learned position
    table's rows (GPT-2's n_positions: the model cannot run it), or max_position_embeddings, or the
    rope scaling's original length x factor where that is longer (YaRN / linear / dynamic /
    LongRoPE); the memory is still derived for the length asked."""
    if seq is None or not isinstance(config, dict):
        return ()
    try:
        s = int(seq)
    except (TypeError, ValueError):
        return ()
    how = "n_positions" if config.get("n_positions") else "max_position_embeddings"
    reach = config.get(how)
    if not isinstance(reach, int) or isinstance(reach, bool) or reach <= 0:
        return ()
    learned = config.get("arch_positions") == "learned" or how == "n_positions"
    rope = config.get("rope_scaling") or config.get("rope_parameters")
    if not learned and isinstance(rope, dict):
        factor, orig = rope.get("factor"), rope.get("original_max_position_embeddings")
        kind = rope.get("rope_type") or rope.get("type")
        if kind in ("yarn", "linear", "dynamic", "longrope") and isinstance(factor, (int, float)) \
                and isinstance(orig, int) and factor > 0 and int(orig * factor) > reach:
            reach, how = int(orig * factor), f"rope scaling {kind}: {orig:,} x {factor:g}"
    if s <= reach:
        return ()
    if learned:
        return (f"sequence {s:,} is longer than the model's learned position table ({reach:,} rows, {how}): "
                f"the model cannot run it (the position lookup fails); the memory is derived for {s:,} anyway",)
    return (f"sequence {s:,} is longer than the {reach:,} positions the model declares ({how}): quality past "
            f"them is not what the model was trained for; the memory is derived for {s:,} anyway",)

