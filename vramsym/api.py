"""The public functions that answer from compiled regimes: models, GPUs, estimates, solves,
the fewest GPUs, plot data. Nothing here imports sympy, pint or lark at import time (a cached
answer needs none of them); the façade (``vramsym/__init__.py``) reads these names from here.
"""
from __future__ import annotations

import json

from .catalog.gpus import catalog as _gpu_catalog, find_gpu as _fg, resolve_capacity as _rc
from .catalog.models import catalog as _model_catalog, load_model as _load
from .catalog.paths import read_text
from .engine.advice import Request, advise as _advise, sensitivity as _sens
from .engine.layouts import min_gpus as _min_gpus
from .engine.runtime import Vocabulary, compile as _compile, vocabulary as _vocabulary
from .engine.sweep import curve, grid, points as _points
from .printers.calculator import page as _page


def vocabulary(formulas=()):
    """The formula library's vocabulary (options, presets, regimes, symbol names, `fit` rows) as
    data, read from the cache when it can be: what the command line builds its flags from."""
    return _vocabulary(formulas)


def load_model(name_or_path: str, extra=(), assume=None):
    """A catalog name (``llama-3.1-8b``), the path of a Hugging Face config.json, a checkpoint folder,
    a ``.gguf`` file or a Hub id. A ``model_type`` that formulas/architectures.json does not describe
    (or a config whose fields contradict the structure the formulas read) is refused with an
    :class:`InputError` unless ``assume="llama"``: then it is read as a Llama-style decoder and
    ``model.approximate`` (and every estimate's ``approximate``) gives the reason."""
    return _load(name_or_path, list(extra), assume)


def compile(model=None, regime: str = "inference", options=None, library=None, formulas=(), vocabulary=None):
    """``regime`` with ``options`` compiled for ``model`` (a name, a path or a loaded model):
    ``.evaluate(batch=.., seq=..)`` and ``.solve(variable, capacity, **inputs)``. ``vocabulary``:
    one already read (:func:`vramsym.vocabulary`), to skip reading it again."""
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
    if not isinstance(capacity, int) or isinstance(capacity, bool):
        capacity = resolve_capacity(capacity)[0]
    return _min_gpus(compiled, capacity, dict(inputs or {}))


def plot_curve(compiled, vary: str, lo: int, hi: int, inputs=None, capacities=(), points: int = 64,
               log: bool = False) -> dict:
    """The data of ``vramsym plot``: every component of ``compiled`` at up to ``points`` integer values
    of ``vary`` (batch, seq, lora_rank, gpus) from ``lo`` to ``hi``, and for each ``(label, bytes)``
    capacity the solved limit."""
    return curve(compiled, vary, _points(lo, hi, points, log), dict(inputs or {}), capacities)


def plot_map(compiled, capacity, inputs=None, points: int = 24, batch=(1, 256), seq=(128, 131072)) -> dict:
    """The data of ``vramsym plot --map``: the total over a log grid of batch x seq and, for each
    sequence length, the largest batch that fits ``capacity`` (exact solve)."""
    if not isinstance(capacity, int) or isinstance(capacity, bool):
        capacity = resolve_capacity(capacity)[0]
    n = max(2, min(points, 64))
    return grid(compiled, _points(batch[0], batch[1], n, True), _points(seq[0], seq[1], n, True),
                dict(inputs or {}), capacity)


def resolve_capacity(text):
    """(bytes, description) for '24GB', '24GiB', '80000MiB' or a GPU name."""
    return _rc(text)


def find_gpu(name: str):
    return _fg(name)


def catalog_models() -> list:
    """The bundled models with their exact parameter counts (from the weights-and-KV regime, which
    every catalog model evaluates, Gemma 4 included)."""
    rows = []
    for name, path in _model_catalog().items():
        d = json.loads(read_text(path))
        m = load_model(name)
        rows.append({"name": name, "hf_id": d.get("hf_id"), "model_type": m.config.get("model_type"),
                     "params": compile(m, "inference_kv").evaluate(batch=1, seq=1).params, "source": d.get("source")})
    return rows


def catalog_gpus() -> list:
    """The bundled GPUs with the memory the driver reports; on unified memory (``unified``: Apple
    silicon) ``capacity_bytes`` is the GPU's working-set limit, from ``capacity_source``."""
    return [{"name": g.name, "memory_mib": g.memory_mib, "capacity_bytes": g.capacity_bytes,
             "marketed": g.marketed, "aliases": list(g.aliases), "source": g.source,
             **({"unified": True, "capacity_source": g.working_set_source} if g.working_set_bytes is not None else {})}
            for g in _gpu_catalog()]


def advise(model, regime: str = "inference", options=None, inputs=None, gpu="24GB", model_ref=None,
           formulas=(), vocabulary=None, allow_gpus=None, allow_smaller=False) -> dict:
    """The changes that make a configuration fit ``gpu`` (a size such as '24GB' or a GPU name), ranked:
    ``{"total_bytes", "capacity_bytes", "fits", "headroom_bytes", "changes": [{change, args, argv,
    total_bytes, capacity_bytes, fits, headroom_bytes, saved_bytes, cost_rank, throughput, quality,
    source}, ...], "sensitivity": {...}, "problems": [...], "estimate": Estimate}``. ``argv`` is the
    ``vramsym estimate`` command that gives the row's ``total_bytes``; ``args`` the flags that change.
    From compiled regimes; sympy only for a sensitivity that is not in the user cache.
    Within the job's constraints: no layout of more GPUs than ``allow_gpus`` (default: the job's own
    count), and no batch or sequence below the one given unless ``allow_smaller``; the changes left
    out for them are listed in ``problems``."""
    if isinstance(model, str):
        model_ref = model_ref or model
        model = load_model(model, formulas)
    vocabulary = vocabulary or Vocabulary.of(formulas)
    capacity = resolve_capacity(gpu)[0] if not isinstance(gpu, int) else gpu
    req = Request(model, model_ref or model.source, regime, dict(options or {}),
                  {k: str(v) for k, v in dict(inputs or {}).items()}, str(gpu), vocabulary, formulas)
    res = _advise(req, capacity, allow_gpus=allow_gpus, allow_smaller=allow_smaller)
    res["sensitivity"] = _sens(res["estimate"], vocabulary=vocabulary)
    return res


def calculator_html(models=None, assume=None) -> str:
    """The self-contained calculator page (``vramsym html``) for ``models`` (default: the catalog);
    ``assume``: as for :func:`load_model`. From compiled regimes and page groups in the user cache;
    sympy only for what is not there."""
    return _page(models, Vocabulary.of(), assume=assume)
