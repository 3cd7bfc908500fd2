"""The calculator page (``vramsym html``): one self-contained HTML file, no network.

The page holds the model and GPU catalogs and, for every (regime, resolved options) that its
models and options need, the regime's components as exact JavaScript (BigInt rationals,
:func:`vramsym.printers.codegen.js_exact`) printed from the same sympy expressions as every
other export. Each model's numbers are bound here, by the engine (vramsym.engine.bind), and
travel as exact strings; the page only substitutes the inputs (batch, sequence, LoRA rank, GPUs
and their layout, the GPU's capacity), computes the defaults that read them and checks the
bounds the formula files declare on them (both printed by
:func:`vramsym.printers.codegen.page_group`), and rounds each sum up to a whole byte as the
engine does, so its bytes equal the engine's. All data reaches the page as JSON inside a
``<script type="application/json">`` element with ``<``, ``>``, ``&`` and every non-ASCII
character escaped (a lone surrogate in a model name, from a file name that is not UTF-8, cannot
break the page's UTF-8), the template's slots are filled in one pass (no name can create or hit
a slot), and the page writes text with ``textContent`` only.

Options: each regime offers a few options (:data:`PAGE_REGIMES`: precision, quantization, KV
cache dtype, checkpointing, optimizer), each with a short list of values. Every combination of
resolved options is a compiled group of its own, so the page holds each regime's defaults (for
each model, what the regime resolves to for it) and every offered value of one option with the
others at those defaults: one option changed at a time, said on the page. ``vramsym estimate``
takes any combination.

The page's HTML template and its JavaScript app are files of their own, beside this module
(``page/calculator.html``, ``page/app.js``; the exact runtime is ``page/exact.js``, read by
:func:`vramsym.printers.page_files.js_exact_runtime`), reviewed as HTML and JavaScript and read only
when a page is built.

The page reads its inputs, typed or from the link, as the command line reads its flags
(vramsym.numbers: a decimal or a ratio, at most 40 significant digits, an exponent of at
most 40, then the symbol's domain and its declared bounds); a value the command line would
refuse, or a model, regime, option value or GPU the page does not have, is said alone and
nothing is computed.
"""
from __future__ import annotations

import json
import re
from fractions import Fraction

from ..catalog.gpus import catalog as gpu_catalog
from ..catalog.models import catalog as model_catalog, load_model, unmodelled
from ..engine.bind import bind
from ..engine import cache
from ..engine.runtime import Vocabulary, compile as _runtime_compile, gap_sentence
from ..errors import InputError
from ..version import __version__
from .page_files import APP_FILE, PAGE_DIR, TEMPLATE_FILE, js_exact_runtime, page_file  # noqa: F401

#: the regimes the page offers and, for each, the options it offers with their values (the
#: regime's own default for a model, as resolved for it, is offered too, first). The page holds
#: the defaults and each value of one option with the others at their defaults.
PAGE_REGIMES = {
    "inference": {"precision": ("bf16", "fp32"), "quant": ("none", "fp8", "int8", "nf4", "gptq"),
                  "kv_dtype": ("auto", "fp8")},
    "train": {"precision": ("mixed_bf16", "bf16", "fp32"), "checkpointing": ("none", "full", "selective"),
              "optimizer": ("adamw", "adamw_fused", "adam8bit", "sgd")},
    "lora": {"precision": ("bf16", "fp32"), "checkpointing": ("none", "full"), "optimizer": ("adamw", "adam8bit")},
    "qlora": {"precision": ("bf16", "fp32"), "quant": ("nf4_dq", "nf4", "int8"), "checkpointing": ("full", "none"),
              "optimizer": ("adamw", "adam8bit")},
    "vllm": {"precision": ("bf16",), "quant": ("none", "fp8", "gptq"), "kv_dtype": ("auto", "fp8")},
    "llama_cpp": {"precision": ("bf16",), "quant": ("none", "q8_0", "q4_k_m", "q4_0"),
                  "kv_dtype": ("f16", "q8_0", "q4_0")},
}
#: a page option that sets other engine options in a regime (llama.cpp's K and V cache types)
ENGINE_OPTIONS = {("llama_cpp", "kv_dtype"): ("cache_type_k", "cache_type_v")}
#: the page's option inputs, in the order shown, with their labels
OPTION_LABELS = {"precision": "precision", "quant": "quantization", "kv_dtype": "KV cache dtype",
                 "checkpointing": "checkpointing", "optimizer": "optimizer"}
#: the numeric inputs the page offers where a regime reads them (command-line names)
FREE = ("batch", "seq", "lora_rank", "gpus", "tp", "pp", "zero")
#: what the page opens on: a model whose default inference fits the GPU (chosen by computing it,
#: see :func:`_initial`), the first of these that fits, at the page's default inputs
OPENING = {"regime": "inference", "gpu": "rtx-4090", "models": ("llama-3.1-8b",), "batch": 1, "seq": 4096}
#: a value no input takes, to print what the engine says of a layout above 1 (``{value}``)
_PROBE = 987654321987


def _json_for_script(data) -> str:
    return (json.dumps(data, separators=(",", ":"), sort_keys=True, ensure_ascii=True)
            .replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026"))


def _frac(v) -> str:
    f = Fraction(v)
    return str(f.numerator) if f.denominator == 1 else f"{f.numerator}/{f.denominator}"


def group_name(regime: str, options: dict, free: dict, given: dict) -> str:
    """The cache entry's name of one page group (the user cache and the shipped copy)."""
    return cache.entry_name("page", regime, sorted(options.items()), sorted(free.items()), sorted(given.items()))


def make_group(lib, regime: str, options: dict, free: dict, given: dict) -> dict:
    """One page group as sympy prints it (:func:`vramsym.printers.codegen.page_group`), in the
    layout the cache keeps (:data:`PAGE_FORMAT`)."""
    from . import codegen       # the cache miss's gate: sympy prints the group
    return dict(codegen.page_group(lib, regime, options, free, sorted(given.values())), format=PAGE_FORMAT)


def _group(vocabulary, regime: str, options: dict, free: dict, given: dict) -> dict:
    """One group of the page, from the user cache, where it is stored beside the compiled regimes
    (same key: the package's code and the formula files), else from the groups the package ships
    (vramsym.precompile: every group of the catalog's page), else printed with sympy; so a
    page of cached or shipped groups is built without sympy."""
    name = group_name(regime, options, free, given)
    accept = lambda hit: isinstance(hit, dict) and hit.get("format") == PAGE_FORMAT    # noqa: E731

    def make():
        hit = cache.shipped(vocabulary.shipped_key and vocabulary.page_key, name, cache.SHIPPED_PAGE)
        return hit if hit is not None and accept(hit) else make_group(vocabulary.load_library(), regime,
                                                                      options, free, given)
    return cache.remembered(vocabulary.key, name, make, accept)


#: the layout of a cached page group (a change of it makes older entries miss)
PAGE_FORMAT = 2


def _variants(vocabulary, regime: str, config: dict) -> tuple[dict, list]:
    """(the page's options at the regime's defaults for this model, [(variant, engine options)]):
    the defaults ("") and each offered value of one option with the others at their defaults."""
    base = vocabulary.resolve(regime, {}, config)
    shown, out = {}, [("", {})]
    for opt, values in PAGE_REGIMES[regime].items():
        engine = ENGINE_OPTIONS.get((regime, opt), (opt,))
        shown[opt] = base[engine[0]]
        for v in values:
            if any(base[e] != v for e in engine):
                out.append((f"{opt}={v}", {e: v for e in engine}))
    return shown, out


def _closure(compiled) -> set:
    """The symbols binding gives a value: the regime's arguments and what their defaults read."""
    out, todo = set(), list(compiled.args)
    while todo:
        n = todo.pop()
        if n in out or n not in compiled.symbols:
            continue
        out.add(n)
        todo.extend(compiled.symbols[n].default or ())
    return out


def group_spec(compiled, gpu_aliases) -> tuple:
    """(regime, options, free, given) of the page group a compiled regime needs: the page's inputs
    (``FREE``) and the GPU's (``gpu_aliases``) that binding leaves to the page, by alias."""
    reach = _closure(compiled)
    overridden = set(compiled.overridden)
    free = {a: compiled.symbol(a) for a in FREE
            if compiled.symbol(a) in reach and compiled.symbol(a) not in overridden}
    given = {a: compiled.symbol(a) for a in gpu_aliases
             if compiled.symbol(a) is not None and compiled.symbol(a) not in overridden}
    return compiled.regime, dict(compiled.options), free, given


def gpu_aliases(gpus) -> list:
    """The GPU's inputs the page substitutes: its capacity and every input a GPU of ``gpus`` sets."""
    return ["capacity"] + sorted({k for g in gpus for k in g.inputs})


def page_variants(vocabulary, config: dict) -> list:
    """(regime, engine options) of every configuration the page holds for a model's ``config``."""
    return [(regime, user) for regime in PAGE_REGIMES for _, user in _variants(vocabulary, regime, config)[1]]


def page_group_specs(vocabulary, models, compiled=None) -> dict:
    """{name: (regime, options, free, given)}: every group the page of ``models`` (loaded specs,
    none with ``--assume``) holds, which vramsym.precompile ships; ``compiled(regime,
    options, config)`` gives the compiled regime, or None where every model is refused it."""
    aliases, out = gpu_aliases(list(gpu_catalog())), {}
    for spec in models:
        for regime, user in page_variants(vocabulary, spec.config):
            c = (compiled or vocabulary.compiled)(regime, user, spec.config)
            if c is not None and unmodelled(spec, [t.name for t in c.components]) is None:
                g = group_spec(c, aliases)
                out[group_name(*g)] = g
    return out


class _Page:
    """The page's data as it is built: the groups, their functions and components, each shared."""

    def __init__(self, vocabulary, gpu_aliases):
        self.vocabulary, self.gpu_aliases = vocabulary, gpu_aliases
        self.groups, self.funcs, self.func_index, self.components, self.component_index = {}, [], {}, [], {}

    def func(self, js: str) -> int:
        """The index of ``js`` in the page's FUNCS (each distinct function once)."""
        if js not in self.func_index:
            self.func_index[js] = len(self.funcs)
            self.funcs.append(js)
        return self.func_index[js]

    def component(self, c: dict) -> int:
        meta = {k: v for k, v in c.items() if k != "js"}
        meta["function"] = self.func(c["js"])
        key = json.dumps(meta, sort_keys=True)
        if key not in self.component_index:
            self.component_index[key] = len(self.components)
            self.components.append(meta)
        return self.component_index[key]

    def group(self, compiled) -> dict:
        regime, options, free, given = group_spec(compiled, self.gpu_aliases)
        key = group_name(regime, options, free, given)
        if key in self.groups:
            return self.groups[key]
        gd = _group(self.vocabulary, regime, options, free, given)
        defaults = {}
        for alias, sym in free.items():     # the inputs' own defaults (a number, not a formula)
            m = compiled.symbols[sym]
            if m.default is not None and not m.default:
                defaults[alias] = _frac(compiled.defaults[sym]())
        g = {"id": f"g{len(self.groups)}", "regime": regime, "args": gd["args"], "free": free, "given": given,
             "defaults": defaults, "description": gd["description"],
             # the options this regime reads, as `vramsym estimate` lists them
             "options": {k: v for k, v in options.items() if k in compiled.used_options},
             "components": [self.component(c) for c in gd["components"]], "peak": gd["peak"],
             "phases": gd["phases"], "symbols": gd["symbols"],
             "derived": [dict(symbol=d["symbol"], args=d["args"], function=self.func(d["js"])) for d in gd["derived"]],
             "checks": [dict({k: v for k, v in c.items() if k != "js"}, **({"function": self.func(c["js"])}
                                                                           if "js" in c else {}))
                        for c in gd["checks"]]}
        self.groups[key] = g
        return g


def _config(page: _Page, spec, regime: str, user: dict) -> dict:
    """One configuration of the page: its group and what binding gives (or why it is refused)."""
    vocabulary = page.vocabulary
    if spec.assume is None:
        terms = [t.name for t in vocabulary.compiled(regime, user, spec.config).components]
        gap = unmodelled(spec, terms)
        if gap is not None:
            return {"refused": _refusal(vocabulary, spec, regime, user, gap)}
    compiled = vocabulary.compiled(regime, user, spec.config)
    g = page.group(compiled)
    moving = set(g["free"].values()) | set(g["given"].values())
    values, prov = bind(compiled, spec.config, {}, exclude=moving, source=spec.source)
    derive = [d["symbol"] for d in g["derived"] if d["symbol"] not in values]
    known = set(values) | moving | set(derive)
    missing = [a for a in g["args"] if a not in known] + \
        [x for d in g["derived"] if d["symbol"] in derive for x in d["args"] if x not in known]
    if missing:
        raise InputError(f"{spec.name}: regime {regime} needs {', '.join(sorted(set(missing)))}, which the model "
                         f"does not give")
    out = {"group": g["id"], "values": {a: _frac(v) for a, v in values.items()},
           "provenance": {a: str(prov.get(a, "")) for a in values}, "derive": derive}
    if spec.assume is None:        # a layout the formulas do not model for this model: what the engine says
        gaps = {}
        for sym in sorted(moving | set(derive)):
            what = unmodelled(spec, (), {sym: _PROBE}, dict(compiled.options))
            if what is not None and str(_PROBE) in what:
                gaps[sym] = _refusal(vocabulary, spec, regime, user, what, layout=True).replace(str(_PROBE), "{value}")
        if gaps:
            out["gaps"] = gaps
    return out


def _refusal(vocabulary, spec, regime: str, user: dict, gap: str, layout: bool = False) -> str:
    """What the engine says when it refuses ``gap`` of this model in this regime (its own
    sentence: vramsym.engine.runtime.BoundRegime); ``layout``: a gap of the inputs' layout."""
    try:
        _runtime_compile(spec, regime, user, vocabulary=vocabulary)._refuse_gap(gap, layout=layout)
    except InputError as e:
        return str(e)
    return gap_sentence(spec, regime, gap)


def _initial(specs: dict, gpus: list, vocabulary) -> dict:
    """What the page opens on: the first model of OPENING that the page has and whose default
    inference at the opening inputs fits the opening GPU, else the largest model of the page that
    fits it, else the first model on the smallest GPU it fits (computed by the engine)."""
    names = list(specs)
    gpu = next((g for g in gpus if g.name == OPENING["gpu"]), gpus[0])
    totals = {}

    def total(name):
        if name not in totals:
            try:
                r = _runtime_compile(specs[name], OPENING["regime"], {}, vocabulary=vocabulary)
                totals[name] = r.evaluate(batch=OPENING["batch"], seq=OPENING["seq"]).total_bytes
            except InputError:
                totals[name] = None
        return totals[name]

    fits = lambda name, g: total(name) is not None and total(name) <= g.capacity_bytes   # noqa: E731
    model = next((n for n in OPENING["models"] if n in specs and fits(n, gpu)), None)
    if model is None:
        fitting = [n for n in names if fits(n, gpu)]
        model = max(fitting, key=lambda n: (total(n), -names.index(n))) if fitting else None
    if model is None:
        model = names[0]
        gpu = next((g for g in sorted(gpus, key=lambda g: g.capacity_bytes) if fits(model, g)), gpu)
    return {"model": model, "regime": OPENING["regime"], "gpu": gpu.name,
            "batch": str(OPENING["batch"]), "seq": str(OPENING["seq"])}


def build_data(models=None, vocabulary=None, assume=None) -> tuple[dict, str]:
    """(data, functions): the page's JSON data and the JavaScript of its groups' functions."""
    vocabulary = vocabulary or Vocabulary.of()
    names = list(models) if models else list(model_catalog())
    if not names:
        raise InputError("the page needs at least one model")
    gpus = list(gpu_catalog())
    page = _Page(vocabulary, gpu_aliases(gpus))
    configs, model_rows, bound, specs = {}, [], {}, {}
    for name in names:
        spec = specs[name] = load_model(name, [], assume)
        label = spec.name + (" (approximate: --assume llama)" if spec.approximate else "")
        model_rows.append({"name": name, "label": label, "source": str(spec.source), "hf_id": spec.hf_id})
        table = bound[name] = {"values": {}, "provenance": {}}
        for regime in PAGE_REGIMES:
            shown, variants = _variants(vocabulary, regime, spec.config)
            for variant, user in variants:
                key = f"{name}|{regime}|{variant}"
                try:
                    cfg = _config(page, spec, regime, user)
                except InputError as e:
                    cfg = {"refused": str(e)}
                if "group" in cfg:
                    # the model's values once; a configuration keeps those that differ
                    for kind in ("values", "provenance"):
                        own = cfg.pop(kind)
                        for a, v in own.items():
                            table[kind].setdefault(a, v)
                        cfg[kind] = {a: v for a, v in own.items() if table[kind][a] != v}
                if variant == "":
                    cfg["options"] = shown
                configs[key] = cfg
    groups = {g["id"]: g for g in page.groups.values()}
    descriptions = {}
    for g in groups.values():
        descriptions.setdefault(g["regime"], g["description"])
    data = {"version": __version__, "models": model_rows, "bound": bound,
            "gpus": [{"name": g.name, "capacity_bytes": str(g.capacity_bytes), "memory_mib": g.memory_mib,
                      "marketed": g.marketed, "inputs": {k: _frac(v) for k, v in g.inputs.items()}} for g in gpus],
            "regimes": {r: {"description": descriptions.get(r) or "",
                            "options": [{"name": o, "label": OPTION_LABELS[o], "values": list(v)}
                                        for o, v in opts.items()]}
                        for r, opts in PAGE_REGIMES.items()},
            "inputs": {"options": list(OPTION_LABELS), "numbers": list(FREE), "regimes": list(PAGE_REGIMES)},
            "groups": groups, "components": page.components, "configs": configs,
            "initial": _initial(specs, gpus, vocabulary)}
    return data, "const FUNCS = [\n" + ",\n".join(page.funcs) + "\n];\n"


_SLOT = re.compile(r"/\*(DATA|RUNTIME|APP)\*/")

def page(models=None, vocabulary=None, assume=None) -> str:
    data, funcs = build_data(models, vocabulary, assume)
    fill = {"DATA": _json_for_script(data), "RUNTIME": js_exact_runtime() + funcs, "APP": page_file(APP_FILE)}
    # one pass over the template: what a slot receives (a model's name, a path) is never searched
    # for another slot, so no data can create one or hit one
    return _SLOT.sub(lambda m: fill[m.group(1)], page_file(TEMPLATE_FILE))


def __getattr__(name):
    # the template and the app as module attributes, read on first use (they live in page/)
    if name == "_HTML":
        return page_file(TEMPLATE_FILE)
    if name == "_APP":
        return page_file(APP_FILE)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
