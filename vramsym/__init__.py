"""vramsym: GPU memory of LLM jobs from cited formulas, with the derivation of every number.

Public API (the command line uses only this)::

    import vramsym
    m = vramsym.load_model("llama-3.1-8b")
    r = vramsym.compile(m, regime="inference", options={"precision": "bf16"})
    r.evaluate(batch=4, seq=4096).total_bytes          # int, the CLI's number
    r.solve("batch", "24GB", seq=4096).value           # the largest batch that fits
    vramsym.estimate(m, "inference", inputs={"batch": 1, "seq": 4096})   # one-off
    print(vramsym.derive(vramsym.solve("batch", "24GB", m, inputs={"seq": 4096})))

Every number comes from one compiled regime (vramsym.engine.compiled); sympy composes and
derives, and is imported only when a regime is compiled or a derivation is printed.
"""
from __future__ import annotations

from .errors import DoesNotFit, InputError, SolveError, VramError

__version__ = "0.2.0"

__all__ = [
    "load_library", "load_model", "vocabulary", "compose", "compile", "estimate", "solve", "min_gpus", "derive", "export",
    "advise", "sensitivity", "plot_curve", "plot_map", "calculator_html",
    "resolve_capacity", "find_gpu", "check", "explain_dtype", "catalog_models", "catalog_gpus", "compare_with_pytorch", "Diagnostic", "DoesNotFit", "FormulaError", "InputError", "SolveError",
    "VramError", "__version__",
]


def __getattr__(name):          # the formula-file error types need the AST: import them on use
    if name in ("Diagnostic", "FormulaError"):
        from .lang import diagnostics
        return getattr(diagnostics, name)
    raise AttributeError(f"module 'vramsym' has no attribute '{name}'")


def vocabulary(formulas=()):
    """The formula library's vocabulary (options, presets, regimes, symbol names, `fit` rows) as
    data, read from the cache when it can be: what the command line builds its flags from."""
    from .engine.runtime import vocabulary as _vocabulary
    return _vocabulary(formulas)


def load_library(extra=(), use_cache: bool = True):
    """The bundled formula files plus ``extra`` files or folders, parsed and checked.

    (``use_cache`` is accepted for compatibility: the cache holds compiled regimes, not libraries.)"""
    from pathlib import Path
    from .lang.library import load_or_raise
    from .catalog.paths import formulas_dir
    return load_or_raise([formulas_dir()] + [Path(p) for p in extra])


def load_model(name_or_path: str, extra=()):
    """A catalog name (``llama-3.1-8b``) or the path of a Hugging Face config.json."""
    from .catalog.models import load_model as _load
    return _load(name_or_path, list(extra))


def compose(regime: str = "inference", options=None, model=None, library=None):
    """The regime's sympy composition (for derivations and exports)."""
    from .engine.regimes import compose as _compose
    lib = library or load_library()
    return _compose(lib, regime, dict(options or {}), model.config if model is not None else None)


def compile(model=None, regime: str = "inference", options=None, library=None, formulas=(), vocabulary=None):
    """``regime`` with ``options`` compiled for ``model`` (a name, a path or a loaded model):
    ``.evaluate(batch=.., seq=..)`` and ``.solve(variable, capacity, **inputs)``. ``vocabulary``:
    one already read (:func:`vramsym.vocabulary`), to skip reading it again."""
    from .engine.runtime import compile as _compile
    if isinstance(model, str):
        model = load_model(model, formulas)
    return _compile(model, regime, options, library, formulas, vocabulary)


def estimate(model, regime: str = "inference", options=None, inputs=None, library=None, formulas=()):
    """The memory of one configuration, by component (an :class:`~vramsym.engine.results.Estimate`)."""
    return compile(model, regime, options, library, formulas).evaluate(dict(inputs or {}))


def solve(variable: str, capacity, model, regime: str = "inference", options=None, inputs=None,
          library=None, formulas=()):
    """Largest integer ``variable`` (``batch``, ``seq``, ``max_batch``, ...) whose total fits ``capacity``
    (bytes as an int, a size such as '24GB', or a GPU name)."""
    return compile(model, regime, options, library, formulas).solve(variable, capacity, dict(inputs or {}))


def min_gpus(compiled, capacity, inputs=None) -> dict:
    """The fewest GPUs for a compiled regime (``vramsym.compile(...)``): ``{"best": (estimate,
    layout), "layouts": [...], "searched": {...}, "problems": [...]}``; the degrees given in
    ``inputs`` (tp, pp, cp, ep, zero) are kept, the others searched."""
    from .engine.layouts import min_gpus as _min_gpus
    if not isinstance(capacity, int) or isinstance(capacity, bool):
        capacity = resolve_capacity(capacity)[0]
    return _min_gpus(compiled, capacity, dict(inputs or {}))


def advise(model, regime: str = "inference", options=None, inputs=None, gpu="24GB", model_ref=None,
           formulas=(), vocabulary=None) -> dict:
    """The changes that make a configuration fit ``gpu`` (a size such as '24GB' or a GPU name), ranked:
    ``{"total_bytes", "capacity_bytes", "fits", "headroom_bytes", "changes": [{change, args, argv,
    total_bytes, capacity_bytes, fits, headroom_bytes, saved_bytes, cost_rank, throughput, quality,
    source}, ...], "sensitivity": {...}, "problems": [...], "estimate": Estimate}``. ``argv`` is the
    ``vramsym estimate`` command that gives the row's ``total_bytes``; ``args`` the flags that change."""
    from .engine.advice import Request, advise as _advise, sensitivity as _sens
    from .engine.runtime import vocabulary as _voc
    if isinstance(model, str):
        model_ref = model_ref or model
        model = load_model(model, formulas)
    voc = vocabulary or _voc(formulas)
    capacity = resolve_capacity(gpu)[0] if not isinstance(gpu, int) else gpu
    req = Request(model, model_ref or model.source, regime, dict(options or {}),
                  {k: str(v) for k, v in dict(inputs or {}).items()}, str(gpu), voc, formulas)
    res = _advise(req, capacity)
    res["sensitivity"] = _sens(res["estimate"], library=voc.load_library())
    return res


def sensitivity(estimate, names=("batch", "seq"), library=None) -> dict:
    """d total / d input at an estimate's configuration (sympy): ``{alias: {derivative, exact, ...}}``;
    ``library``: the formula library it was compiled from, when it has files beyond the bundled ones."""
    from .engine.advice import sensitivity as _sens
    return _sens(estimate, names, library)


def plot_curve(compiled, vary: str, lo: int, hi: int, inputs=None, capacities=(), points: int = 64,
               log: bool = False) -> dict:
    """The data of ``vramsym plot``: every component of ``compiled`` at up to ``points`` integer values
    of ``vary`` (batch, seq, lora_rank, gpus) from ``lo`` to ``hi``, and for each ``(label, bytes)``
    capacity the solved limit."""
    from .engine.sweep import curve, points as _points
    return curve(compiled, vary, _points(lo, hi, points, log), dict(inputs or {}), capacities)


def plot_map(compiled, capacity, inputs=None, points: int = 24, batch=(1, 256), seq=(128, 131072)) -> dict:
    """The data of ``vramsym plot --map``: the total over a log grid of batch x seq and, for each
    sequence length, the largest batch that fits ``capacity`` (exact solve)."""
    from .engine.sweep import grid, points as _points
    if not isinstance(capacity, int) or isinstance(capacity, bool):
        capacity = resolve_capacity(capacity)[0]
    n = max(2, min(points, 64))
    return grid(compiled, _points(batch[0], batch[1], n, True), _points(seq[0], seq[1], n, True),
                dict(inputs or {}), capacity)


def calculator_html(models=None) -> str:
    """The self-contained calculator page (``vramsym html``) for ``models`` (default: the catalog)."""
    from .printers.calculator import page
    from .engine.runtime import vocabulary as _voc
    return page(models, _voc())


def derive(result, fmt: str = "markdown", standalone: bool = False, library=None) -> str:
    """The step-by-step derivation of an estimate or a solve, as Markdown or LaTeX."""
    from .printers import derivation
    return derivation(result, library or load_library(), fmt, standalone)


def export(regime: str = "inference", target: str = "python", model=None, options=None,
           free=("b", "s"), term=None, library=None) -> str:
    """A regime (or one ``term``) as code another tool can embed: python, numpy, javascript, c, json, latex.

    With a ``model``, its numbers are bound and only the ``free`` symbols stay arguments."""
    from .printers import export as _export
    lib = library or load_library()
    composed = compose(regime, options, model, lib)
    values = None
    if model is not None:
        from .engine.bind import bind
        r = compile(model, regime, options, lib)
        keep = tuple(r.regime.symbol(f) or f for f in free)
        values = bind(r.regime, model.config, {}, exclude=keep, source=model.source)[0]
    return _export(composed, lib, target, values, term)


def resolve_capacity(text):
    """(bytes, description) for '24GB', '24GiB', '80000MiB' or a GPU name."""
    from .catalog.gpus import resolve_capacity as _rc
    return _rc(text)


def find_gpu(name: str):
    from .catalog.gpus import find_gpu as _fg
    return _fg(name)


def check(files):
    """(library, diagnostics) for the bundled formulas plus ``files`` (each must exist)."""
    from pathlib import Path
    from .lang.library import load
    from .catalog.paths import formulas_dir
    for f in files:
        if not Path(f).exists():
            raise InputError(f"cannot check '{f}': no such file")
    return load([formulas_dir()] + [Path(f) for f in files])


def explain_dtype(name: str, library=None) -> dict:
    """A number format's bit layout, range and storage size (``bf16``, ``fp8-e4m3``, ``nf4``, ...)."""
    from .catalog.dtypes import explain
    return explain(name, library or load_library())


def catalog_models() -> list:
    """The bundled models with their exact parameter counts."""
    import json
    from .catalog.models import catalog
    rows = []
    for name, path in catalog().items():
        d = json.loads(path.read_text())
        m = load_model(name)
        rows.append({"name": name, "hf_id": d.get("hf_id"), "model_type": m.config.get("model_type"),
                     "params": compile(m, "inference").evaluate(batch=1, seq=1).params, "source": d.get("source")})
    return rows


def catalog_gpus() -> list:
    """The bundled GPUs with the memory the driver reports."""
    from .catalog.gpus import catalog
    return [{"name": g.name, "memory_mib": g.memory_mib, "capacity_bytes": g.capacity_bytes,
             "marketed": g.marketed, "aliases": list(g.aliases), "source": g.source} for g in catalog()]


def compare_with_pytorch(model, regime: str = "inference", options=None, inputs=None, fake: bool = True,
            decode_steps: int = 4, library=None) -> dict:
    """The prediction next to what PyTorch allocates for the same job (needs ``vramsym[measure]``)."""
    from .measure.compare import compare
    return compare(model, regime, options, inputs, fake=fake, decode_steps=decode_steps, library=library)
