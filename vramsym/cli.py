"""The command line, declared as data: :data:`COMMANDS` names each command, its help, its
examples and the flag groups it takes; :func:`commands` expands it with the formula
library's vocabulary (options, presets, inputs) and :mod:`vramsym.flags` parses argv and
renders the help from it. Handlers call only the
public API in ``vramsym/__init__.py``. Every command takes ``--json``; exit codes are
named in :class:`ExitStatus`.
"""
from __future__ import annotations

import json
import os
import sys
from enum import IntEnum
from types import SimpleNamespace

import vramsym
from vramsym.catalog.capacity import fmt_bytes
from vramsym.engine.layouts import SEARCH_READS
from vramsym.engine.options import assumed, recipe_options, recipes
from vramsym.engine.sweep import _int
from vramsym.errors import DoesNotFit, InputError, NotModelled, SolveError, VramError
from vramsym.flags import Flag, UsageError, parse, prescan, print_usage_error, show
from vramsym.printers import plot
from vramsym.records import Domain
from vramsym.printers.report import (estimate_data, print_advice, print_estimate, print_min_gpus, print_solution,
                                     solution_data, with_capacity)
from vramsym.terminal import ShownStream


class ExitStatus(IntEnum):
    OK = 0
    BAD_INPUT = 1        # unknown model / GPU / option, malformed formula file, bad size
    USAGE = 2            # wrong flags (vramsym.flags.UsageError)
    DOES_NOT_FIT = 3     # nothing fits the capacity
    NO_SOLUTION = 4      # the inverse problem is ill-posed (unbounded, non-monotone)
    INTERNAL = 70


# name, help, flag groups, examples. Groups: model (--model required), model? (optional),
# regime, inputs, options, gpu (required), gpu? (optional), output (--json, --unit), json.
COMMANDS = [
    ("estimate", "memory of one configuration, by component",
     ("model", "regime", "inputs", "options", "gpu?", "output", "view"),
     ["vramsym estimate --model llama-3.1-8b --batch 1 --seq 4096",
      "vramsym estimate --model llama-3.1-8b --regime train --precision mixed-bf16 --batch 1 --seq 2048",
      "vramsym estimate --model qwen2.5-7b --regime qlora --lora-rank 16 --checkpointing full --batch 4 --seq 2048",
      "vramsym estimate --model mistral-7b-v0.1 --regime train --precision mixed-bf16 --batch 1 --seq 1024 --json"]),
    ("solve", "largest batch / sequence / rank that fits a capacity, or the fewest GPUs (min_gpus)",
     ("target", "model", "regime", "inputs", "options", "gpu", "bound", "output"),
     ["vramsym solve max_batch --model llama-3.1-8b --seq 4096 --gpu 24GB",
      "vramsym solve max_batch --model llama-3.1-8b --seq 4096 --gpu 24GB --bound high",
      "vramsym solve min_gpus --model llama-3.1-70b --regime train --precision mixed-bf16 --gpu h100-sxm-80gb --batch 1 --seq 4096",
      "vramsym solve max_seq --model qwen2.5-7b --batch 4 --gpu rtx-4090 --kv-dtype fp8",
      "vramsym solve max_batch --model llama-3.1-8b --seq 8192 --regime vllm --gpu h100-sxm-80gb"]),
    ("fit", "which regimes, quantizations and optimizers fit one GPU, with headroom (rows: `fit` in formulas/fit.vram)",
     ("model", "fit_inputs", "gpu", "output"),
     ["vramsym fit --model llama-3.1-8b --gpu rtx-4090 --seq 2048"]),
    ("derive", "step-by-step derivation of an estimate or a solve (LaTeX / Markdown)",
     ("model", "regime", "inputs", "options", "gpu?", "derive", "json"),
     ["vramsym derive --model llama-3.1-8b --batch 1 --seq 4096 --format latex --standalone",
      "vramsym derive --model llama-3.1-8b --seq 4096 --gpu 24GB --solve max_batch --format markdown"]),
    ("export", "a regime (or one term) as embeddable code",
     ("model?", "regime", "options", "export", "json"),
     ["vramsym export --regime inference --to python",
      "vramsym export --regime train --to javascript --model llama-3.1-8b",
      "vramsym export --regime inference --term kv_cache --to c"]),
    ("measure", "prediction next to what PyTorch allocates (needs vramsym[measure])",
     ("model", "regime", "inputs", "options", "measure", "json"),
     ["vramsym measure --model llama-3.2-1b --regime train --precision fp32 --batch 1 --seq 256"]),
    ("advise", "what to change so that a job fits: changes ranked by what they cost, each with its new total, "
               "headroom and the flags that reproduce it; d total / d batch and d total / d seq",
     ("model", "regime", "inputs", "options", "gpu", "advise", "output"),
     ["vramsym advise --model llama-3.1-8b --regime train --precision mixed-bf16 --batch 4 --seq 2048 --gpu rtx-4090",
      "vramsym advise --model llama-3.1-8b --batch 16 --seq 8192 --gpu 24GB --allow-smaller --json"]),
    ("plot", "a picture: the components stacked against one input with capacity lines and the solved limits, "
             "or (--map) the total over batch x sequence with the exact fits frontier (needs vramsym[plot])",
     ("model", "regime", "inputs", "options", "plot", "output"),
     ["vramsym plot --model llama-3.1-8b --vary batch --from 1 --to 64 --seq 4096 --gpu rtx-4090 --gpu a100-80gb -o batch.png",
      "vramsym plot --model llama-3.1-8b --vary seq --from 512 --to 131072 --log --batch 1 --gpu 24GB -o seq.svg",
      "vramsym plot --map --model llama-3.1-8b --gpu rtx-4090 -o map.png"]),
    ("html", "a self-contained calculator page (no network): the catalogs, inputs, breakdown, chart and derivation, "
             "computed by the exact JavaScript export of the compiled formulas",
     ("html", "json"),
     ["vramsym html -o calculator.html",
      "vramsym html -o small.html --model llama-3.1-8b --model qwen2.5-7b"]),
    ("dtype", "explain a number format from its bit layout (bf16, fp8-e4m3, nf4, ...)", ("dtype_name", "json"),
     ["vramsym dtype bf16"]),
    ("models", "the bundled model catalog", ("json",), ["vramsym models"]),
    ("gpus", "the bundled GPU catalog", ("json",), ["vramsym gpus"]),
    ("formulas", "every term with its unit and source", ("formulas", "json"), ["vramsym formulas"]),
    ("check", "validate formula files (with the bundled ones)", ("files", "json"),
     ["vramsym check my.vram"]),
    ("completion", "a shell completion script (bash, zsh or fish) generated from this command table: commands, "
                   "flags, choices, regimes, catalog models and GPUs",
     ("shell", "json"),
     ["vramsym completion bash", "vramsym completion zsh", "vramsym completion fish"]),
]


# the flag groups a command may take; "model?" is the optional form of "model"
ASSUME = Flag("--assume", choices=["llama"],
              help="read a model whose model_type vramsym does not describe (or whose config has fields the "
                   "formulas do not read) as a Llama-style decoder: an approximation, said on stderr, in the "
                   "table and in --json (approximate, approximate_reason); without it such a model is refused")

STATIC_GROUPS = {
    "model": [Flag("--model", required=True, help="catalog name (see `vramsym models`) or path to a config.json"),
              ASSUME],
    "model?": [Flag("--model", help="bind this model's numbers (catalog name or config.json path)"), ASSUME],
    "gpu": [Flag("--gpu", required=True, help="capacity: 24GB (10^9 B), 24GiB (2^30 B), 80000MiB, or a GPU name")],
    "gpu?": [Flag("--gpu", help="capacity to compare with (24GB, 24GiB, a GPU name)")],
    "output": [Flag("--unit", choices=["GiB", "GB"], help="show sizes in GiB (2^30 B) or GB (10^9 B); default both"),
               Flag("--json", "bool", help="machine-readable output")],
    "json": [Flag("--json", "bool", help="machine-readable output")],
    "view": [Flag("--all", "bool", help="also list the components of 0 B and the rules of thumb"),
             Flag("--explain", "bool", help="a formula column beside each component (the whole derivation: "
                                            "`vramsym derive`)")],
    "formulas": [Flag("--formulas", "append", metavar="PATH", help="extra formula file or folder (repeatable)")],
    "target": [Flag("target", "positional", required=True, metavar="TARGET",
                    help="max_batch, max_seq, max_lora_rank or max_<any integer symbol>")],
    "bound": [Flag("--bound", choices=["point", "high", "low"], default="point",
                   help="solve at the point figure (default) or with the run-time ranges (CUDA context, allocator "
                        "slack) at their high (worst case) or low end")],
    "fit_inputs": [Flag("--batch", default="1", help="batch size (default 1)"),
                   Flag("--seq", default="2048", help="sequence length (default 2048)")],
    "derive": [Flag("--format", choices=["markdown", "latex"], default="markdown", help="output format"),
               Flag("--standalone", "bool", help="LaTeX: a complete document"),
               Flag("--solve", metavar="TARGET", help="derive a solve (max_batch, max_seq, ...) instead of an estimate")],
    "export": [Flag("--to", required=True, choices=["python", "numpy", "javascript", "c", "json", "latex"],
                    help="target language or format"),
               Flag("--term", help="export one term instead of the whole regime"),
               Flag("--free", default="batch,seq", help="with --model: symbols left as arguments (default batch,seq)")],
    "measure": [Flag("--real", "bool", help="allocate real CPU tensors instead of FakeTensorMode (tiny models only)"),
                Flag("--decode-steps", default="4", help="inference: decode steps after the prefill (default 4)")],
    "advise": [Flag("--allow-gpus", metavar="N", help="propose layouts of up to N GPUs (default: the job's own "
                                                     "count, --gpus or 1)"),
               Flag("--allow-smaller", "bool", help="propose a batch or sequence below the one given")],
    "plot": [Flag("--vary", choices=["batch", "seq", "lora_rank", "gpus"], default="batch",
                  help="the input on the x axis (default batch)"),
             Flag("--from", dest="x_from", metavar="N", default="1", help="first value of --vary (default 1)"),
             Flag("--to", dest="x_to", metavar="N", help="last value of --vary (default: 64 batches, 131072 tokens, "
                                                          "rank 256, 64 GPUs)"),
             Flag("--points", default="64", help="values plotted at most (default 64)"),
             Flag("--log", "bool", help="a logarithmic x axis (points spaced geometrically)"),
             Flag("--gpu", "append", metavar="GPU", help="a capacity line: 24GB, 24GiB or a GPU name (repeatable)"),
             Flag("--map", "bool", help="a heat map of the total over batch x sequence with the fits frontier "
                                        "(for the first --gpu)"),
             Flag("--output", short="-o", metavar="FILE", help="write the picture: FILE.png, FILE.svg or FILE.pdf")],
    "html": [Flag("--output", short="-o", metavar="FILE", required=True, help="the page to write (calculator.html)"),
             Flag("--model", "append", metavar="MODEL", help="models on the page (repeatable; default the whole catalog)"),
             ASSUME],
    "dtype_name": [Flag("name", "positional", required=True, metavar="FORMAT", help="bf16, fp8-e4m3, nf4, ...")],
    "files": [Flag("files", "positional+", metavar="FILE", help="formula files to check")],
    "shell": [Flag("shell", "positional", required=True, choices=["bash", "zsh", "fish"], metavar="SHELL",
                   help="bash: source it, or save it as ~/.local/share/bash-completion/completions/vramsym; "
                        "zsh: save it as _vramsym in a folder of $fpath; "
                        "fish: save it as ~/.config/fish/completions/vramsym.fish")],
}


def flag_group(group: str, interface) -> list:
    """The flags of ``group``; ``regime``, ``inputs`` and ``options`` come from the formula files."""
    if group in STATIC_GROUPS:
        flags = STATIC_GROUPS[group]
    elif group == "regime":
        flags = [Flag("--regime", default="inference", choices=sorted(interface.regimes),
                      help="regime (default: inference)"),
                 Flag("--recipe", metavar="NAME",
                      help="a named recipe of the regime (formulas/recipes.json): QLoRA's trl (default) or "
                           "peft-kbit, training's mixed-bf16 (default), pure-bf16, ...; a flag still wins over it")]
    elif group == "inputs":
        flags = [Flag(f"--{show(m.alias)}", "switch" if m.domain == Domain.BOOL else "value",
                      dest=f"in_{m.alias}", metavar="0|1" if m.domain == Domain.BOOL else "N",
                      help=f"{m.description} (symbol {name})")
                 for name, m in sorted(interface.symbols.items(), key=lambda x: x[1].alias or "") if m.alias]
        flags.append(Flag("--set", "append", metavar="SYMBOL=VALUE",
                          help="give any declared symbol a value (e.g. --set n_kv=1)"))
    elif group == "options":
        flags = []
        for name, o in sorted(interface.options.items()):
            preset = interface.presets.get(name)
            extra = ""
            if preset:
                extra = "; a preset of " + ", ".join(show(t) for t, _ in next(iter(preset.choices.values())))
            flags.append(Flag(f"--{show(name)}", dest=f"opt_{name}", choices=list(o.choices),
                              help=f"{o.description} (default {show(o.default)}{extra})"))
    else:
        raise AssertionError(group)
    title = {"inputs": "inputs (symbols of the formula files with a command-line name)",
             "options": "options (from the formula files; a preset such as --precision sets several)"}.get(group, "")
    return [Flag(f.name, f.kind, f.help, f.choices, f.required, f.default, f.metavar, f.dest, title, f.short)
            for f in flags]


def commands(interface) -> dict:
    """name -> (help, flags, examples), from :data:`COMMANDS` and the vocabulary."""
    out, made = {}, {}
    for name, help_, groups, examples in COMMANDS:
        groups = list(groups) + (["formulas"] if name not in ("dtype", "models", "gpus", "check") else [])
        for g in groups:       # each group's flags built once, shared by the commands that take it
            if g not in made:
                made[g] = flag_group(g, interface)
        out[name] = (help_, [f for g in groups for f in made[g]], examples)
    return out


# ---- handlers ----

def _inputs(args, interface=None) -> dict:
    """The inputs the flags give, by command-line name; one symbol given two different values
    (``--batch 1 --set b=2``) is an error."""
    return _given_inputs(args, interface)[0]


def _given_inputs(args, interface=None) -> tuple:
    """(inputs by command-line name, the flag that gave each: ``--batch 4`` or ``--set b=4``)."""
    out = {k[3:]: v for k, v in vars(args).items() if k.startswith("in_") and v is not None}
    flag_of = {k: f"--{show(k)} {v}" for k, v in out.items()}
    names = {}
    if interface is not None:
        names = interface.aliases()
    by_symbol = {names.get(k, k): k for k in out}
    for item in getattr(args, "set", None) or []:
        if "=" not in item:
            raise InputError(f"--set expects SYMBOL=VALUE, got '{item}'")
        k, v = (x.strip() for x in item.split("=", 1))
        sym = names.get(k, k)
        if sym in by_symbol and out[by_symbol[sym]] != v:
            raise InputError(f"{sym} is given twice with different values: {flag_of[by_symbol[sym]]} and --set {item}")
        by_symbol[sym] = k
        flag_of[k] = f"--set {item}"
        out[k] = v
    return out, flag_of


def _warn_unused(r, args, interface, also_read=()) -> None:
    """A flag the chosen regime does not read changes nothing: say so (on stderr). ``also_read``:
    inputs the command reads beside the regime (the layout search's GPUs per node)."""
    inputs, flag_of = _given_inputs(args, interface)
    unused = [k for k in r.unused_inputs(inputs) if k not in also_read]
    cfg = getattr(getattr(r, "model", None), "config", None) or {}
    if cfg.get("arch_ffn") == "dense":
        # a model without experts: the expert-parallel degree reaches only terms its MoE flags zero
        # (formulas that read n_ep inside a moe_all factor), so it changes nothing either
        unused += [k for k in inputs if r.regime.symbol(k) == "n_ep" and k not in unused]
    for k in unused:
        flag = flag_of.get(k, k)
        print(f"vramsym: warning: {flag} is ignored: regime {r.regime.regime} with these options does not "
              f"use {k}", file=sys.stderr)
    used = set(r.regime.used_options)
    for k, v in _options(args, explicit=True).items():
        if k not in used:
            print(f"vramsym: warning: --{show(k)} {show(v)} is ignored: regime {r.regime.regime} with these "
                  f"options does not use {k}", file=sys.stderr)


def _options(args, explicit=False):
    """The options of the command: the flags given, over the --recipe's choices (``explicit``: the flags only)."""
    given = {k[4:]: v for k, v in vars(args).items() if k.startswith("opt_") and v is not None}
    return given if explicit else dict(getattr(args, "recipe_options", None) or {}, **given)


def _load_model(args):
    """The --model of a command, with its --assume; an approximate model says so on stderr."""
    model = vramsym.load_model(args.model, args.formulas, assume=getattr(args, "assume", None))
    if model.approximate:
        print(f"vramsym: warning: {model.name} is an approximation: {model.approximate}", file=sys.stderr)
    return model


def _print_json(data) -> None:
    print(json.dumps(data, indent=2))


def recipe_data(interface, args, est) -> dict:
    """``recipe``: the regime's named recipe in effect and its others; ``assumed``: what the answer assumed
    beyond the flags given, each with the bytes it decides, largest first."""
    parts = [(c.name, c.bytes, c.options, c.host) for c in est.components]
    rows = assumed(interface, args.regime, _options(args, explicit=True), args.recipe, parts)
    out = {"assumed": [dict(r, choice=show(r["choice"])) for r in rows]}
    entry = recipes(args.regime)
    if entry is not None:
        name = args.recipe or entry["default"]["name"]
        about = entry["default"] if name == entry["default"]["name"] else entry["recipes"][name]
        out["recipe"] = {"name": name, "description": about["description"], "source": about["source"],
                         "others": [n for n in [entry["default"]["name"], *entry["recipes"]] if n != name],
                         "engines": sorted(entry["engines"])}
    return out


def cmd_estimate(args, vocabulary):
    model = _load_model(args)
    inputs, opts = _inputs(args, vocabulary.interface), _options(args)
    capacity, cap_desc = vramsym.resolve_capacity(args.gpu) if args.gpu else (None, None)
    r = vramsym.compile(model, args.regime, opts, formulas=args.formulas, vocabulary=vocabulary)
    _warn_unused(r, args, vocabulary.interface)
    if capacity is not None:
        inputs = r.with_gpu(inputs, args.gpu)
    est = r.evaluate(inputs)
    data = estimate_data(est)
    data.update(recipe_data(vocabulary.interface, args, est))
    heur = [n for n, reg in vocabulary.interface.regimes.items()       # rules of thumb labelled beside this regime
            if "heuristic" in reg.labels and f"beside_{args.regime}" in reg.labels]
    if heur and opts.get("overhead") != "none":
        data["heuristics"] = []
        for name in heur:
            h = vramsym.compile(model, name, {k: v for k, v in opts.items() if k != "overhead"}, formulas=args.formulas, vocabulary=vocabulary)
            ins = {k: v for k, v in inputs.items() if h.regime.symbol(k)}
            if h.regime.symbol("capacity"):
                if capacity is None:
                    continue
                ins["capacity"] = capacity
            data["heuristics"].append({"regime": name, "description": h.regime.description,
                                       "total_bytes": h.evaluate(ins).total_bytes})
    data = with_capacity(data, capacity, cap_desc, est)
    if args.json:
        _print_json(data)
    else:
        print_estimate(data, args.unit, sys.stdout, capacity, cap_desc, show_all=args.all, explain=args.explain)
    return ExitStatus.OK


def cmd_solve(args, vocabulary):
    capacity, cap_desc = vramsym.resolve_capacity(args.gpu)
    model = _load_model(args)
    inputs = _inputs(args, vocabulary.interface)
    r = vramsym.compile(model, args.regime, _options(args), formulas=args.formulas, vocabulary=vocabulary)
    _warn_unused(r, args, vocabulary.interface,
                 SEARCH_READS if args.target in ("min_gpus", "gpus") else ())
    if args.target in ("min_gpus", "gpus"):
        return _solve_min_gpus(args, r, capacity, cap_desc, inputs)
    sol = r.solve(args.target, capacity, r.at_bound(r.with_gpu(inputs, args.gpu), args.bound))
    data = solution_data(sol, cap_desc)
    data["estimate"].update(recipe_data(vocabulary.interface, args, sol.estimate))
    if args.json:
        _print_json({k: v for k, v in data.items() if k != "capacity_description"})
    else:
        print_solution(data, args.unit, sys.stdout)
    return ExitStatus.OK


def _solve_min_gpus(args, r, capacity, cap_desc, inputs):
    res = vramsym.min_gpus(r, capacity, inputs)
    est, lay = res["best"]
    data = {"variable": "gpus", "value": lay["gpus"], "layout": lay, "total_bytes": est.total_bytes,
            "host_bytes": est.host_bytes, "capacity_bytes": capacity, "headroom_bytes": capacity - est.total_bytes,
            "searched": res["searched"],
            "layouts": [{"layout": l, "total_bytes": e.total_bytes, "headroom_bytes": capacity - e.total_bytes}
                        for e, l in res["layouts"][:8]],
            "problems": [{"layout": l, "error": m} for l, m in res["problems"]],
            "approximate": est.approximate is not None, "approximate_reason": est.approximate,
            "estimate": estimate_data(est)}
    if args.json:
        _print_json(data)
    else:
        print_min_gpus(data, cap_desc, args.unit, sys.stdout)
    return ExitStatus.OK


def cmd_fit(args, vocabulary):
    capacity, desc = vramsym.resolve_capacity(args.gpu)
    model = _load_model(args)
    unit = args.unit or "GiB"
    rows = []
    for fit in vocabulary.interface.fits:
        regime, opts = fit.regime, fit.options
        try:       # refused when compiled (a combination shipped as refused) or when evaluated
            r = vramsym.compile(model, regime, opts, formulas=args.formulas, vocabulary=vocabulary)
            est = r.evaluate(batch=args.batch, seq=args.seq)
        except NotModelled as e:
            rows.append({"regime": regime, "options": {k: show(v) for k, v in opts.items()}, "refused": str(e)})
            continue       # a regime whose terms do not model this model's layers (a hybrid's training)
        fits = est.total_bytes <= capacity
        max_batch = None
        if fits:
            try:
                max_batch = r.solve("batch", capacity, seq=args.seq).value
            except VramError:
                max_batch = None
        min_gpus, layout = None, None
        if r.regime.symbol("gpus") is not None:       # the fewest GPUs: ZeRO-3, no pipeline, tp searched
            try:
                best = vramsym.min_gpus(r, capacity, {"batch": args.batch, "seq": args.seq, "pp": 1, "zero": 3})["best"]
                min_gpus, layout = best[1]["gpus"], best[1]
            except VramError:
                pass
        rows.append({"regime": regime, "options": {k: show(v) for k, v in opts.items()}, "total_bytes": est.total_bytes,
                     "fits": fits, "headroom_bytes": capacity - est.total_bytes, "max_batch": max_batch,
                     "min_gpus": min_gpus, "min_gpus_layout": layout})
    if args.json:
        _print_json({"model": model.name, "capacity_bytes": capacity, "batch": args.batch, "seq": args.seq,
                     "approximate": model.approximate is not None, "approximate_reason": model.approximate,
                     "scenarios": rows})
        return ExitStatus.OK
    print(f"{model.name} on {desc} = {capacity:,} B; batch {args.batch}, seq {args.seq}; sizes in {unit}")
    if model.approximate:
        print(f"APPROXIMATE: {model.approximate}")
    print(f"  {'regime':<10} {'options':<52} {'total ' + unit:>10} {'headroom ' + unit:>13}  fits  max batch"
          f"  min GPUs (ZeRO-3, tp x dp)")
    notes: list = []        # each distinct refusal once, under the table
    for row in rows:
        opts = ", ".join(f"{k}={v}" for k, v in row["options"].items())
        if "refused" in row:
            if row["refused"] not in notes:
                notes.append(row["refused"])
            print(f"  {row['regime']:<10} {opts:<52} refused [{notes.index(row['refused']) + 1}]")
            continue
        print(f"  {row['regime']:<10} {opts:<52} {fmt_bytes(row['total_bytes'], unit).split()[0]:>10} "
              f"{fmt_bytes(row['headroom_bytes'], unit).split()[0]:>13}  {'yes ' if row['fits'] else 'no  '}  "
              f"{row['max_batch'] if row['max_batch'] is not None else '-':>9}  "
              + (f"{row['min_gpus']} ({row['min_gpus_layout']['tp']} x {row['min_gpus_layout']['dp']})"
                 if row["min_gpus"] else "-"))
    for i, why in enumerate(notes, 1):
        print(f"  [{i}] refused: {why}")
    return ExitStatus.OK


def cmd_derive(args, vocabulary):
    model = _load_model(args)
    lib = vocabulary.load_library()
    r = vramsym.compile(model, args.regime, _options(args), library=lib)
    if args.solve:
        if not args.gpu:
            raise InputError("--solve needs --gpu CAPACITY (e.g. 24GB, 24GiB or a GPU name)")
        result = r.solve(args.solve, vramsym.resolve_capacity(args.gpu)[0], _inputs(args, vocabulary.interface))
    else:
        result = r.evaluate(_inputs(args, vocabulary.interface))
    text = vramsym.derive(result, args.format, args.standalone, library=lib)
    if args.json:
        _print_json({"format": args.format, "text": text})
    else:
        print(text)
    return ExitStatus.OK


def cmd_export(args, vocabulary):
    model = _load_model(args) if args.model else None
    free = tuple(f.strip() for f in args.free.split(",") if f.strip())
    text = vramsym.export(args.regime, args.to, model, _options(args), free, args.term, library=vocabulary.load_library())
    if args.json:
        _print_json({"target": args.to, "regime": args.regime, "code": text})
    else:
        print(text)
    return ExitStatus.OK


def cmd_measure(args, vocabulary):
    model = _load_model(args)
    try:
        steps = int(args.decode_steps)
    except ValueError:
        raise InputError(f"--decode-steps takes a whole number, got '{args.decode_steps}'") from None
    res = vramsym.compare_with_pytorch(model, args.regime, _options(args), _inputs(args, vocabulary.interface), fake=not args.real,
                                       decode_steps=steps, library=vocabulary.load_library())
    if args.json:
        print(json.dumps(res, indent=2, default=str))
        return ExitStatus.OK
    m = res["measurement"]
    print(f"model {res['model']}, regime {res['regime']}, " + ", ".join(f"{k}={show(v)}" for k, v in res["options"].items()))
    print(f"measured with PyTorch {m.get('torch_version')} / transformers {m.get('transformers_version')}, "
          f"{'FakeTensorMode' if m.get('fake') else 'real CPU tensors'}; predicted with --overhead none (tensors only)")
    for n in m.get("notes", []):
        print(f"note: {n}")
    print(f"  {'component':<18} {'predicted B':>18} {'measured B':>18} {'error':>9}  note")
    for row in res["rows"]:
        err = "" if row["relative_error"] is None else f"{row['relative_error'] * 100:+.2f}%"
        print(f"  {row['component']:<18} {row['predicted_bytes']:>18,} {row['measured_bytes']:>18,} {err:>9}  {row['note']}")
    return ExitStatus.OK


def cmd_dtype(args, vocabulary):
    info = vramsym.explain_dtype(args.name, vocabulary.load_library())
    if args.json:
        _print_json({k: (str(v) if hasattr(v, "denominator") and not isinstance(v, int) else v) for k, v in info.items()})
        return ExitStatus.OK
    print(f"{info['name']}: {info.get('source')}")
    if "exponent_bits" in info:
        print(f"  layout: {info['sign_bits']} sign, {info['exponent_bits']} exponent (bias {info['exponent_bias']}), "
              f"{info['mantissa_bits']} mantissa bits = {info['bits']} bits; special values: {info['special_values']}")
        for k in ("max_normal", "min_normal", "min_subnormal", "epsilon"):
            v = info[k]
            print(f"  {k.replace('_', ' '):<14} {float(v):.6g}" + (f"  (= {v})" if v.denominator != 1 and v.denominator < 2**24 else ""))
    elif "min" in info:
        print(f"  {info['bits']}-bit integer, range {info['min']} .. {info['max']}")
    else:
        print(f"  {info['levels']} levels: {info.get('note')}")
    if "bytes_per_element" in info:
        print(f"  stored: {info['bytes_per_element']} bytes per element = {float(info['bits_per_element_stored']):g} bits "
              f"(including block scales; formulas/dtypes.vram)")
    return ExitStatus.OK


def cmd_models(args, vocabulary):
    rows = vramsym.catalog_models()
    if args.json:
        _print_json(rows)
    else:
        for r in rows:
            print(f"{r['name']:<18} {r['params']:>16,} params  {r['model_type']:<12} {r['hf_id']}")
    return ExitStatus.OK


def cmd_gpus(args, vocabulary):
    gpus = vramsym.catalog_gpus()
    if args.json:
        _print_json(gpus)
    else:
        for g in gpus:
            if g.get("unified"):
                print(f"{g['name']:<22} {g['memory_mib']:>8,} MiB unified, the GPU's working set "
                      f"{g['capacity_bytes'] / 2**30:.2f} GiB = {g['capacity_bytes'] / 1e9:.2f} GB")
                continue
            print(f"{g['name']:<22} {g['memory_mib']:>8,} MiB = {g['capacity_bytes'] / 2**30:7.2f} GiB = "
                  f"{g['capacity_bytes'] / 1e9:7.2f} GB  (marketed {g['marketed']})")
    return ExitStatus.OK


def cmd_formulas(args, vocabulary):
    lib = vocabulary.load_library()
    terms = [{"name": t.name, "unit": lib.units.get(t.name), "description": t.description,
              "file": t.span.file, "line": t.span.line, "sources": list(t.sources)} for t in lib.terms.values()]
    regimes = [{"name": r.name, "extends": r.extends, "description": r.description,
                "add": [a for a, _ in r.add], "drop": [d for d, _ in r.drop]} for r in lib.regimes.values()]
    options = [{"name": o.name, "choices": list(o.choices), "default": o.default, "description": o.description}
               for o in lib.options.values()]
    if args.json:
        _print_json({"terms": terms, "regimes": regimes, "options": options, "presets": vocabulary.interface.to_json()["presets"]})
        return ExitStatus.OK
    print("regimes:")
    for r in regimes:
        print(f"  {r['name']}" + (f" (extends {r['extends']})" if r["extends"] else "") + f": {r['description']}")
    print("options:")
    for o in options:
        print(f"  {o['name']} = {{{', '.join(o['choices'])}}}, default {o['default']}: {o['description']}")
    print("terms:")
    for t in terms:
        print(f"  {t['name']} [{t['unit']}] {t['description']}  ({t['file']}:{t['line']})")
        for s in t["sources"]:
            print(f"      source: {s}")
    return ExitStatus.OK


def cmd_check(args, vocabulary):
    lib, diags = vramsym.check(args.files)
    if args.json:
        _print_json({"ok": not diags, "diagnostics": [d.to_dict() for d in diags],
                     "terms": len(lib.terms), "regimes": len(lib.regimes)})
    elif diags:
        for d in diags:
            print(d.render(lib.sources), file=sys.stderr)
    else:
        print(f"ok: {', '.join(args.files)} ({len(lib.terms)} terms, {len(lib.regimes)} regimes with the bundled formulas)")
    return ExitStatus.BAD_INPUT if diags else ExitStatus.OK


def cmd_advise(args, vocabulary):
    capacity, cap_desc = vramsym.resolve_capacity(args.gpu)
    model = _load_model(args)
    allow = _int(args.allow_gpus, "--allow-gpus") if args.allow_gpus is not None else None
    res = vramsym.advise(model, args.regime, _options(args), _inputs(args, vocabulary.interface), args.gpu,
                         model_ref=args.model, formulas=args.formulas, vocabulary=vocabulary,
                         allow_gpus=allow, allow_smaller=args.allow_smaller)
    if args.json:
        _print_json({**{k: v for k, v in res.items() if k != "estimate"},
                     "approximate": model.approximate is not None, "approximate_reason": model.approximate})
    else:
        if model.approximate:
            print(f"APPROXIMATE: {model.approximate}")
        print_advice(res, cap_desc, args.unit, sys.stdout)
    return ExitStatus.OK


_PLOT_TO = {"batch": "64", "seq": "131072", "lora_rank": "256", "gpus": "64"}


def cmd_plot(args, vocabulary):
    model = _load_model(args)
    inputs = _inputs(args, vocabulary.interface)
    if not args.output and not args.json:
        raise InputError("plot needs -o FILE.png|FILE.svg|FILE.pdf (or --json for the plotted data)")
    if args.output:
        plot.check_output(args.output)
    r = vramsym.compile(model, args.regime, _options(args), formulas=args.formulas, vocabulary=vocabulary)
    _warn_unused(r, args, vocabulary.interface)
    gpus = [(g, vramsym.resolve_capacity(g)[0]) for g in args.gpu]
    if gpus:
        inputs = r.with_gpu(inputs, gpus[0][0])
    unit = args.unit or "GiB"
    if args.map:
        if not gpus:
            raise InputError("plot --map needs --gpu CAPACITY (the frontier is where the total meets it)")
        data = vramsym.plot_map(r, gpus[0][1], inputs, points=_int(args.points, "--points"))
        data["capacity_label"] = gpus[0][0]
        if args.output:
            plot.heatmap(data, args.output, unit, gpus[0][0])
    else:
        lo = _int(args.x_from, "--from")
        hi = _int(args.x_to or _PLOT_TO[args.vary], "--to")
        data = vramsym.plot_curve(r, args.vary, lo, hi, inputs, gpus, points=_int(args.points, "--points"), log=args.log)
        if args.output:
            plot.curve(data, args.output, unit, args.log)
    if args.output:
        data["output"] = args.output
    if args.json:
        _print_json(data)
    else:
        print(f"wrote {args.output}")
    return ExitStatus.OK


def cmd_html(args, vocabulary):
    for name in args.model if args.assume else ():
        m = vramsym.load_model(name, assume=args.assume)
        if m.approximate:
            print(f"vramsym: warning: {m.name} is an approximation: {m.approximate}", file=sys.stderr)
    text = vramsym.calculator_html(args.model or None, assume=args.assume)
    try:
        with open(args.output, "w", encoding="utf-8") as fh:
            fh.write(text)
    except OSError as e:
        raise InputError(f"cannot write {args.output}: {e.strerror}") from None
    if args.json:
        _print_json({"output": args.output, "bytes": len(text.encode())})
    else:
        print(f"wrote {args.output} ({len(text.encode()):,} bytes)")
    return ExitStatus.OK


def cmd_completion(args, vocabulary):
    from vramsym.completion import script    # this command only: the warm path imports no typing
    text = script(args.shell, commands(vocabulary.interface), vocabulary.interface)
    if args.json:
        _print_json({"shell": args.shell, "script": text})
    else:
        print(text, end="")
    return ExitStatus.OK


HANDLERS = {"completion": cmd_completion, "advise": cmd_advise, "plot": cmd_plot, "html": cmd_html, "estimate": cmd_estimate, "solve": cmd_solve, "fit": cmd_fit, "derive": cmd_derive,
            "export": cmd_export, "measure": cmd_measure, "dtype": cmd_dtype, "models": cmd_models,
            "gpus": cmd_gpus, "formulas": cmd_formulas, "check": cmd_check}


def main(argv=None) -> int:
    """Run one command; every line it writes goes through :func:`vramsym.terminal.shown`."""
    out, err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = ShownStream(out), ShownStream(err)
    try:
        return _main(argv)
    finally:
        if isinstance(sys.stdout, ShownStream):
            sys.stdout = out
        if isinstance(sys.stderr, ShownStream):
            sys.stderr = err


def _main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--version"]:       # reads nothing: no formula file, no cache
        print(f"vramsym {vramsym.__version__}")
        return ExitStatus.OK
    wants_json = prescan(argv, "--json", "bool")
    table = None
    try:
        formulas = prescan(argv, "--formulas") if argv[:1] != ["check"] else []
        vocabulary = vramsym.vocabulary(formulas)
        table = commands(vocabulary.interface)
        command, values = parse(argv, table, vramsym.__version__)
        if command in ("help", "version"):
            print(values, end="" if command == "help" else "\n")
            return ExitStatus.USAGE if not argv else ExitStatus.OK
        if values.get("recipe") is not None:
            values["recipe_options"] = recipe_options(vocabulary.interface, values["regime"], values["recipe"])
        return int(HANDLERS[command](SimpleNamespace(**values), vocabulary))
    except UsageError as e:
        if wants_json:
            print(json.dumps({"error": e.to_dict()}, indent=2))
        else:
            print_usage_error(e, table or {})
        return ExitStatus.USAGE
    except VramError as e:
        status = {DoesNotFit: ExitStatus.DOES_NOT_FIT, SolveError: ExitStatus.NO_SOLUTION}.get(type(e), ExitStatus.BAD_INPUT)
        if wants_json:
            print(json.dumps({"error": e.to_dict()}, indent=2))
        else:
            print(f"vramsym: {e}", file=sys.stderr)
        return status
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # output piped into `head`
        try:
            sys.stdout = open(os.devnull, "w")
        except OSError:
            pass
        return ExitStatus.OK
    except Exception as e:  # an internal bug: say so plainly, no traceback unless asked
        if os.environ.get("VRAMSYM_DEBUG"):
            raise
        print(f"vramsym: internal error: {type(e).__name__}: {e} (set VRAMSYM_DEBUG=1 for a traceback)", file=sys.stderr)
        return ExitStatus.INTERNAL


if __name__ == "__main__":
    sys.exit(main())
