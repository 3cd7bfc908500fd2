"""The calculator page (``vramsym html``): one self-contained HTML file, no network.

The page holds the model and GPU catalogs and, for every (regime, resolved options) that its
models and precisions need, the regime's components as exact JavaScript (BigInt rationals,
:func:`vramsym.printers.codegen.js_exact`) printed from the same sympy expressions as every
other export. Each model's numbers are bound here, by the engine (vramsym.engine.bind), and
travel as exact strings; the page only substitutes the inputs (batch, sequence, LoRA rank) and
rounds each sum up to a whole byte as the engine does, so its bytes equal the engine's. All
data reaches the page as JSON inside a ``<script type="application/json">`` element with ``<``,
``>``, ``&`` and every non-ASCII character escaped (a lone surrogate in a model name, from a
file name that is not UTF-8, cannot break the page's UTF-8), the template's slots are filled in
one pass (no name can create or hit a slot), and the page writes text with ``textContent`` only.

The page's HTML template and its JavaScript app are files of their own, beside this module
(``page/calculator.html``, ``page/app.js``; the exact runtime is ``page/exact.js``, read by
:func:`vramsym.printers.page_files.js_exact_runtime`), reviewed as HTML and JavaScript and read only
when a page is built.

The page reads its inputs, typed or from the link, as the command line reads its flags
(vramsym.numbers: a decimal or a ratio, at most 40 significant digits, an exponent of at
most 40, then the symbol's domain and its declared bounds); a value the command line would
refuse, or a model, regime, precision or GPU the page does not have, is said alone and nothing
is computed.
"""
from __future__ import annotations

import json
import re
from fractions import Fraction

from ..catalog.gpus import catalog as gpu_catalog
from ..catalog.models import catalog as model_catalog, load_model
from ..engine.bind import bind
from ..engine import cache
from ..engine.runtime import Vocabulary, compile as _compile
from ..errors import InputError
from ..version import __version__
from .page_files import APP_FILE, PAGE_DIR, TEMPLATE_FILE, js_exact_runtime, page_file  # noqa: F401

#: the regimes and precisions the page offers (the first precision is the default)
PAGE_REGIMES = {"inference": ("bf16", "fp32"), "train": ("mixed_bf16", "bf16", "fp32"),
                "lora": ("bf16",), "qlora": ("fp32", "bf16")}
FREE = ("batch", "seq", "lora_rank")


def _json_for_script(data) -> str:
    return (json.dumps(data, separators=(",", ":"), sort_keys=True, ensure_ascii=True)
            .replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026"))


def _frac(v) -> str:
    f = Fraction(v)
    return str(f.numerator) if f.denominator == 1 else f"{f.numerator}/{f.denominator}"


def _group(vocabulary, regime: str, options: dict, free: dict) -> dict:
    """One group of the page (:func:`vramsym.printers.codegen.page_group`), from the user cache,
    where it is stored beside the compiled regimes (same key: the package's code and the formula
    files), so a page of cached groups is built without sympy."""
    def make():
        from . import codegen       # the cache miss's gate: sympy prints the group
        return dict(codegen.page_group(vocabulary.load_library(), regime, options, free), format=PAGE_FORMAT)
    name = cache.entry_name("page", regime, sorted(options.items()), sorted(free.items()))
    return cache.remembered(vocabulary.key, name, make,
                            lambda hit: isinstance(hit, dict) and hit.get("format") == PAGE_FORMAT)


#: the layout of a cached page group (a change of it makes older entries miss)
PAGE_FORMAT = 1


def build_data(models=None, vocabulary=None, assume=None) -> tuple[dict, str]:
    """(data, functions): the page's JSON data and the JavaScript of its groups' components."""
    vocabulary = vocabulary or Vocabulary.of()
    names = list(models) if models else list(model_catalog())
    if not names:
        raise InputError("the page needs at least one model")
    groups, configs, model_rows, funcs, descriptions = {}, {}, [], [], {}
    for name in names:
        spec = load_model(name, [], assume)
        label = spec.name + (" (approximate: --assume llama)" if spec.approximate else "")
        model_rows.append({"name": name, "label": label, "source": str(spec.source), "hf_id": spec.hf_id})
        for regime, precisions in PAGE_REGIMES.items():
            for precision in precisions:
                r = _compile(spec, regime, {"precision": precision}, vocabulary=vocabulary)
                key = json.dumps([regime, sorted(r.regime.options)])
                free = {a: r.regime.symbol(a) for a in FREE if r.regime.symbol(a) in r.regime.args}
                if key not in groups:
                    gd = _group(vocabulary, regime, dict(r.regime.options), free)
                    descriptions.setdefault(regime, gd["description"])   # names is not empty: every regime has one
                    meta = {t.name: t for t in r.regime.components}
                    bounds = {}
                    for alias, kinds in gd["bounds"].items():
                        for kind, js in kinds.items():
                            bounds.setdefault(alias, {})[kind] = len(funcs)
                            funcs.append(js)
                    groups[key] = {"id": f"g{len(groups)}", "regime": regime, "args": gd["args"], "free": free,
                                   "domains": {a: r.regime.symbols[s].domain.value for a, s in free.items()},
                                   "options": dict(r.regime.options), "bounds": bounds,
                                   "description": gd["description"], "function": len(funcs),
                                   "components": [dict(c, definition=meta[c["name"]].definition if c["name"] in meta else "",
                                                       formula=meta[c["name"]].formula if c["name"] in meta else "")
                                                  for c in gd["components"]],
                                   "phases": gd["phases"]}
                    funcs.append(gd["js"])
                g = groups[key]
                no_default = tuple(s for s in free.values() if r.regime.symbols[s].default is None)
                values, prov = bind(r.regime, spec.config, {}, exclude=no_default, source=spec.source)
                need = [a for a in g["args"] if a not in free.values()]
                missing = [a for a in need if a not in values]
                if missing:
                    raise InputError(f"{name}: regime {regime} needs {', '.join(missing)}, which the model does not give")
                defaults = {alias: _frac(values[sym]) for alias, sym in free.items() if sym in values}
                configs[f"{name}|{regime}|{precision}"] = {
                    "group": g["id"], "values": {a: _frac(values[a]) for a in need},
                    "provenance": {a: str(prov.get(a, "")) for a in need}, "defaults": defaults}
    gpus = [{"name": g.name, "capacity_bytes": str(g.capacity_bytes), "memory_mib": g.memory_mib,
             "marketed": g.marketed} for g in gpu_catalog()]
    data = {"version": __version__, "models": model_rows, "gpus": gpus,
            "regimes": {k: {"precisions": list(v), "description": descriptions[k]} for k, v in PAGE_REGIMES.items()},
            "groups": {g["id"]: g for g in groups.values()}, "configs": configs}
    return data, "const FUNCS = [\n" + ",\n".join(funcs) + "\n];\n"


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
