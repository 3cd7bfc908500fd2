"""What to change so that a job fits: ``vramsym advise``.

The changes are data (``formulas/advice.json``): options to set, inputs to set, a regime to move
to, or a solve (the largest batch or sequence that fits, the fewest GPUs). Each change is applied
to the user's configuration and evaluated by the same compiled regimes as ``estimate``; a change
the regime does not read, or one that saves nothing, is left out. The rows carry the flags that
reproduce them (``args``: the flags that change; ``argv``: the whole ``vramsym estimate`` command),
so ``estimate`` with them prints the same ``total_bytes``. When no single change fits, the largest
savings are combined, one at a time, until the job fits. The sensitivity of the total to the
continuous inputs (d total / d batch, d total / d seq) comes from the compiled code itself, run on
a Taylor series in that input (:mod:`vramsym.engine.jets`).
"""
from __future__ import annotations

import json
import os

from ..catalog.paths import formulas_path, read_text
from ..errors import DoesNotFit, InputError, SolveError
from .layouts import min_gpus
from .jets import slope
from .runtime import compile as _compile

MAX_COMBINED = 4          # changes combined at most, when no single one fits


def catalog() -> list:
    return json.loads(read_text(os.path.join(formulas_path(), "advice.json")))["changes"]


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _show(value) -> str:
    return str(value).replace("_", "-")


def _by_name(inputs: dict, vocabulary) -> dict:
    """Inputs keyed one way per symbol: its command-line name where it has one (``--set ckpt_ratio=0.25``
    and a change's ``checkpoint_ratio`` are one input, so a change replaces the user's value and the
    flags that reproduce a row never give it twice)."""
    alias = {n: a for a, n in vocabulary.interface.aliases().items()}
    return {alias.get(k, k): v for k, v in inputs.items()}


class Request:
    """One configuration as the user gave it: what ``estimate`` and the rows' ``argv`` are built from."""

    def __init__(self, model, model_ref: str, regime: str, options: dict, inputs: dict, gpu: str, vocabulary, formulas=()):
        self.model, self.model_ref, self.regime = model, model_ref, regime
        self.options, self.gpu = dict(options), gpu
        self.vocabulary, self.formulas = vocabulary, tuple(formulas)
        self.inputs = _by_name(inputs, vocabulary)

    def derived(self, regime=None, options=None, inputs=None, reset=()) -> "Request":
        kept = {k: v for k, v in self.options.items() if k not in reset}
        dropped = [k for k in self.options if k in reset]
        if dropped:     # the new regime's own choice, given explicitly: the flags then say it
            resolved = self.vocabulary.resolve(regime or self.regime, dict(kept, **(options or {})), self.model.config)
            kept.update({k: resolved[k] for k in dropped if k in resolved})
        return Request(self.model, self.model_ref, regime or self.regime, dict(kept, **(options or {})),
                       dict(self.inputs, **_by_name(inputs or {}, self.vocabulary)), self.gpu, self.vocabulary, self.formulas)


    def apply(self, change: dict) -> "Request":
        """This configuration with ``change`` (an entry of formulas/advice.json) made."""
        return self.derived(change.get("regime"), change.get("options"), change.get("inputs"), change.get("reset", ()))

    def compiled(self):
        return _compile(self.model, self.regime, self.options, formulas=self.formulas, vocabulary=self.vocabulary)

    def evaluate(self):
        r = self.compiled()
        return r, r.evaluate(r.with_gpu(self.inputs, self.gpu))

    def argv(self) -> list:
        out = ["estimate", "--model", self.model_ref, "--regime", self.regime]
        for k, v in sorted(self.options.items()):
            out += [_flag(k), _show(v)]
        aliases = self.vocabulary.interface.aliases()
        for k, v in sorted(self.inputs.items()):
            out += [_flag(k), str(v)] if k in aliases else ["--set", f"{k}={v}"]
        return out + ["--gpu", self.gpu]


def _args_of(base: Request, new: Request) -> list:
    """The flags of ``new`` that differ from ``base``."""
    out = [] if new.regime == base.regime else ["--regime", new.regime]
    for k, v in sorted(new.options.items()):
        if base.options.get(k) != v:
            out += [_flag(k), _show(v)]
    aliases = base.vocabulary.interface.aliases()
    for k, v in sorted(new.inputs.items()):
        if str(base.inputs.get(k)) != str(v):
            out += [_flag(k), str(v)] if k in aliases else ["--set", f"{k}={v}"]
    return out


def _applies(change: dict, req: Request, compiled) -> bool:
    if "regimes" in change and req.regime not in change["regimes"]:
        return False
    used = set(compiled.regime.used_options)
    if "regime" not in change and any(o not in used for o in change.get("options", {})):
        return False           # (another regime reads its own options: one it refuses is a problem row)
    current = dict(compiled.regime.options)
    if "regime" not in change and all(current.get(k) == v for k, v in change.get("options", {}).items()) \
            and all(str(req.inputs.get(k)) == str(v) for k, v in change.get("inputs", {}).items()):
        return False           # already so
    for name in change.get("inputs", {}):
        if compiled.regime.symbol(name) is None:
            return False
    return True


def _row(change: dict, base: Request, new: Request, est, capacity: int, base_total: int, extra=None) -> dict:
    row = {"change": change["change"], "args": _args_of(base, new), "argv": new.argv(),
           "regime": new.regime, "total_bytes": est.total_bytes, "capacity_bytes": capacity,
           "fits": est.total_bytes <= capacity, "headroom_bytes": capacity - est.total_bytes,
           "saved_bytes": base_total - est.total_bytes, "cost_rank": change.get("cost_rank", 2),
           "throughput": change.get("throughput", ""), "quality": change.get("quality", ""),
           "source": change.get("source", ""), **({"engine": change["engine"]} if change.get("engine") else {})}
    row.update(extra or {})
    return row


class Outside(Exception):
    """A change that needs what the user did not allow (more GPUs, a smaller batch or sequence)."""


def _given_int(req: Request, name: str):
    try:
        return int(str(req.inputs[name]))
    except (KeyError, ValueError):
        return None


def _solve_row(change: dict, base: Request, r, capacity: int, base_total: int, allow_gpus=None, allow_smaller=False):
    what = change["solve"]
    if what == "gpus":
        if r.regime.symbol("gpus") is None or any(k in base.inputs for k in ("gpus", "n_gpu")):
            return None
        ins = r.with_gpu(base.inputs, base.gpu)
        est, lay = min_gpus(r, capacity, ins, best_only=True)["best"]
        if lay["gpus"] <= 1:
            return None
        if lay["gpus"] > (allow_gpus or 1):
            raise Outside(f"needs {lay['gpus']} GPUs; the job has {allow_gpus or 1} (--allow-gpus {lay['gpus']} "
                          f"proposes it)")
        set_ = {"gpus": lay["gpus"], "tp": lay["tp"], "pp": lay["pp"], "zero": lay["zero"]}
        new = base.derived(inputs={k: v for k, v in set_.items() if not (k in ("tp", "pp") and v == 1
                                                                          and k not in base.inputs)})
        return _row(change, base, new, new.evaluate()[1], capacity, base_total, {"layout": lay})
    if r.regime.symbol(what) is None:
        return None
    new, value = _solved(base, r, what, capacity)
    if str(base.inputs.get(what)) == str(value):
        return None
    asked = _given_int(base, what)
    if not allow_smaller and asked is not None and value < asked:
        raise Outside(f"{what} {value} is below the {asked} asked (--allow-smaller proposes it)")
    return _row(change, base, new, new.evaluate()[1], capacity, base_total, {"solved": {what: value}})


def _solved(req: Request, r, what: str, capacity: int):
    """``req`` with ``what`` (batch, seq) at the largest value that fits, by the exact solve: (request, value)."""
    given = {k: v for k, v in req.inputs.items() if k != what and r.regime.symbol(k) != r.regime.symbol(what)}
    value = r.solve(what, capacity, r.with_gpu(given, req.gpu)).value
    return Request(req.model, req.model_ref, req.regime, req.options, dict(given, **{what: value}),
                   req.gpu, req.vocabulary, req.formulas), value


def sensitivity(est, names=("batch", "seq"), library=None, vocabulary=None) -> dict:
    """d total / d x at this configuration, for the inputs ``names`` the total reads: the compiled
    code run on a Taylor series in x (:func:`vramsym.engine.jets.slope`: each max / min /
    conditional at its active branch, a ceiling's steps averaged), as a polynomial in x and its
    exact value here. No sympy; ``library`` and ``vocabulary`` are not needed (kept for callers)."""
    compiled = est.compiled
    syms = {n: compiled.symbol(n) for n in names if compiled.symbol(n) in compiled.args}
    values = est.binding.values
    return {alias: slope(compiled, values, s) for alias, s in syms.items()}


def advise(req: Request, capacity: int, allow_gpus=None, allow_smaller=False) -> dict:
    """The changes that make ``req`` fit ``capacity`` (bytes), ranked: those that fit first, by what
    they cost (``cost_rank``) and then by bytes saved; then those that do not fit, by bytes saved.
    Within the job's constraints: at most ``allow_gpus`` GPUs (default: the job's own count) and,
    unless ``allow_smaller``, no batch or sequence below the one given (left out with the reason)."""
    r, est = req.evaluate()
    base_total = est.total_bytes
    rows, problems = [], []
    allow_gpus = allow_gpus or _given_int(req, "gpus") or _given_int(req, "n_gpu") or 1
    for change in catalog():
        try:
            if "solve" in change:
                row = _solve_row(change, req, r, capacity, base_total, allow_gpus, allow_smaller)
            else:
                if not _applies(change, req, r):
                    continue
                new = req.apply(change)
                row = _row(change, req, new, new.evaluate()[1], capacity, base_total)
        except (DoesNotFit, InputError, SolveError, Outside) as e:     # this change cannot be made here: say why
            problems.append({"change": change["change"], "error": str(e)})
            continue
        if row is not None and row["saved_bytes"] > 0:
            rows.append(row)
    combined = None
    if not any(x["fits"] for x in rows if _combinable(x)):
        # no single change on the user's engine fits at this batch and sequence on one GPU: combine them
        combined = _combine(req, rows, capacity, base_total, allow_smaller)
        if combined:
            rows.append(combined)
    rows.sort(key=lambda x: (not x["fits"], x["cost_rank"] if x["fits"] else 0, -x["saved_bytes"]))
    return {"total_bytes": base_total, "capacity_bytes": capacity, "fits": base_total <= capacity,
            "headroom_bytes": capacity - base_total, "estimate": est, "changes": rows, "problems": problems}


def _combinable(row: dict) -> bool:
    """A single declared change on the user's engine: not a solved value, a layout or another engine."""
    return "solved" not in row and "layout" not in row and "engine" not in row


def _combine(req: Request, rows: list, capacity: int, base_total: int, allow_smaller=False):
    """The option / regime changes with the largest savings, added one at a time until the job fits."""
    cats = {c["change"]: c for c in catalog()}
    singles = sorted((x for x in rows if _combinable(x)), key=lambda x: -x["saved_bytes"])
    cur, names, seen_keys, cur_total = req, [], set(), base_total
    for row in singles:
        change = cats[row["change"]]
        keys = set(change.get("options", {})) | ({"__regime__"} if "regime" in change else set())
        if keys & seen_keys:
            continue
        if "regimes" in change and cur.regime not in change["regimes"]:
            continue
        trial = cur.apply(change)
        try:
            _, est = trial.evaluate()
        except (InputError, SolveError):
            continue
        if est.total_bytes >= cur_total:
            continue
        cur, seen_keys, cur_total = trial, seen_keys | keys, est.total_bytes
        names.append(change)
        if est.total_bytes <= capacity or len(names) >= MAX_COMBINED:
            break
    if len(names) < 2:
        return None
    r, est = cur.evaluate()
    extra = {"combined": [c["change"] for c in names]}
    asked = _given_int(req, "batch")
    if est.total_bytes > capacity and r.regime.symbol("batch") is not None and (allow_smaller or asked is None):
        try:
            cur, value = _solved(cur, r, "batch", capacity)
        except (DoesNotFit, InputError, SolveError):
            value = None           # even batch 1 does not fit with these changes: the combination as it is
        if value is not None:
            names.append(next(c for c in catalog() if c.get("solve") == "batch"))
            extra = {"combined": [c["change"] for c in names], "solved": {"batch": value}}
            est = cur.evaluate()[1]
    merged = {"change": " + ".join(c["change"] for c in names), "cost_rank": max(c.get("cost_rank", 2) for c in names),
              "throughput": "; ".join(c.get("throughput", "") for c in names),
              "quality": "; ".join(c.get("quality", "") for c in names),
              "source": "; ".join(c.get("source", "") for c in names)}
    return _row(merged, req, cur, est, capacity, base_total, extra)
