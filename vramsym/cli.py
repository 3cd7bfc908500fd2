"""The command line: a thin layer over the public API in ``vramsym/__init__.py``.

Every command takes ``--json``; exit codes are named in :class:`ExitStatus`.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from enum import IntEnum
from typing import Dict, List, Optional

import vramsym
from vramsym.diagnostics import DoesNotFit, InputError, SolveError, VramError
from vramsym.report import show as _show


class ExitStatus(IntEnum):
    OK = 0
    BAD_INPUT = 1        # unknown model / GPU / option, malformed formula file, bad size
    USAGE = 2            # argparse: wrong flags
    DOES_NOT_FIT = 3     # nothing fits the capacity
    NO_SOLUTION = 4      # the inverse problem is ill-posed (unbounded, non-monotone)
    INTERNAL = 70


EXAMPLES = """examples:
  vramsym solve max_batch --model llama-3.1-8b --seq 4096 --gpu 24GB
  vramsym solve max_seq --model qwen2.5-7b --batch 4 --gpu rtx-4090 --kv-dtype fp8
  vramsym estimate --model llama-3.1-8b --batch 1 --seq 4096
  vramsym estimate --model mistral-7b-v0.1 --regime train --precision mixed --json
  vramsym estimate --model ./my-model/config.json --batch 8 --seq 2048 --weight-dtype nf4
  vramsym models | vramsym gpus | vramsym formulas | vramsym check my.vram
"""


def _choice(value: str) -> str:
    return value.replace("-", "_")


def _parser(lib) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="vramsym", description="GPU memory of LLM jobs from cited formulas.",
                                epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", action="version", version=f"vramsym {vramsym.__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    def common(sp, need_model=True):
        sp.add_argument("--model", required=need_model, help="catalog name (see `vramsym models`) or path to a config.json")
        sp.add_argument("--regime", default="inference", type=_choice,
                        help="regime (default: inference): " + ", ".join(_show(r) for r in sorted(lib.regimes)))
        ins = sp.add_argument_group("inputs (symbols of the formula files with a command-line name)")
        for sym in sorted((d for d in lib.symbols.values() if d.alias), key=lambda d: d.alias):
            ins.add_argument(f"--{_show(sym.alias)}", dest=f"in_{sym.alias}", metavar="N",
                             help=f"{sym.description} (symbol {sym.name})")
        sp.add_argument("--set", action="append", default=[], metavar="SYMBOL=VALUE",
                        help="give any declared symbol a value (e.g. --set n_kv=1)")
        grp = sp.add_argument_group("options (from the formula files)")
        for name, o in sorted(lib.options.items()):
            grp.add_argument(f"--{_show(name)}", dest=f"opt_{name}", type=_choice, choices=o.choices,
                             metavar="{" + ",".join(_show(c) for c in o.choices) + "}",
                             help=f"{o.description} (default {_show(o.default)})")
        sp.add_argument("--formulas", action="append", default=[], metavar="PATH", help="extra formula file or folder")
        sp.add_argument("--unit", choices=["GiB", "GB"], default=None, help="show sizes in GiB (2^30 B) or GB (10^9 B); default both")
        sp.add_argument("--json", action="store_true", help="machine-readable output")

    e = sub.add_parser("estimate", help="memory of one configuration, by component",
                       epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    common(e)
    e.add_argument("--gpu", help="also say whether it fits this capacity (24GB, 24GiB, a GPU name)")
    s = sub.add_parser("solve", help="largest batch / sequence / rank that fits a capacity",
                       epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    s.add_argument("target", help="max_batch, max_seq, max_lora_rank or max_<any integer symbol>")
    common(s)
    s.add_argument("--gpu", required=True, help="capacity: 24GB (10^9 B), 24GiB (2^30 B), 80000MiB, or a GPU name")
    ms = sub.add_parser("measure", help="prediction next to what PyTorch allocates (needs vramsym[measure])",
                        epilog="example:\n  vramsym measure --model llama-3.1-8b --regime train --precision fp32 --batch 1 --seq 2048",
                        formatter_class=argparse.RawDescriptionHelpFormatter)
    common(ms)
    ms.add_argument("--real", action="store_true", help="allocate real CPU tensors instead of FakeTensorMode (tiny models only)")
    ms.add_argument("--decode-steps", type=int, default=4, help="inference: decode steps after the prefill (default 4)")
    d = sub.add_parser("derive", help="step-by-step derivation of an estimate or a solve (LaTeX / Markdown)",
                       epilog="examples:\n  vramsym derive --model llama-3.1-8b --batch 1 --seq 4096 --format latex --standalone\n"
                              "  vramsym derive --model llama-3.1-8b --seq 4096 --gpu 24GB --solve max_batch --format markdown",
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    common(d)
    d.add_argument("--format", choices=["markdown", "latex"], default="markdown")
    d.add_argument("--standalone", action="store_true", help="LaTeX: a complete document")
    d.add_argument("--solve", metavar="TARGET", help="derive a solve (max_batch, max_seq, ...) instead of an estimate")
    d.add_argument("--gpu", help="capacity for --solve")
    x = sub.add_parser("export", help="a regime (or one term) as embeddable code",
                       epilog="examples:\n  vramsym export --regime inference --to python\n"
                              "  vramsym export --regime train --to javascript --model llama-3.1-8b\n"
                              "  vramsym export --regime inference --term kv_cache --to c",
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    x.add_argument("--regime", default="inference", type=_choice)
    x.add_argument("--to", required=True, choices=["python", "numpy", "javascript", "c", "json", "latex"])
    x.add_argument("--term", help="export one term instead of the whole regime")
    x.add_argument("--model", help="bind this model's numbers; only --free symbols stay arguments")
    x.add_argument("--free", default="batch,seq", help="with --model: symbols left as arguments (default batch,seq)")
    x.add_argument("--formulas", action="append", default=[], metavar="PATH")
    grp = x.add_argument_group("options (from the formula files)")
    for name, o in sorted(lib.options.items()):
        grp.add_argument(f"--{_show(name)}", dest=f"opt_{name}", type=_choice, choices=o.choices,
                         metavar="{" + ",".join(_show(c) for c in o.choices) + "}", help=f"default {_show(o.default)}")
    x.add_argument("--json", action="store_true", help="wrap the output in a JSON object")
    ft = sub.add_parser("fit", help="which regimes, quantizations and optimizers fit one GPU, with headroom",
                        epilog="example:\n  vramsym fit --model llama-3.1-8b --gpu rtx-4090 --seq 2048",
                        formatter_class=argparse.RawDescriptionHelpFormatter)
    ft.add_argument("--model", required=True)
    ft.add_argument("--gpu", required=True)
    ft.add_argument("--batch", default="1")
    ft.add_argument("--seq", default="2048")
    ft.add_argument("--formulas", action="append", default=[], metavar="PATH")
    ft.add_argument("--unit", choices=["GiB", "GB"], default="GiB")
    ft.add_argument("--json", action="store_true")
    dt = sub.add_parser("dtype", help="explain a number format from its bit layout (bf16, fp8-e4m3, nf4, ...)")
    dt.add_argument("name")
    dt.add_argument("--json", action="store_true")
    m = sub.add_parser("models", help="the bundled model catalog")
    m.add_argument("--json", action="store_true")
    g = sub.add_parser("gpus", help="the bundled GPU catalog")
    g.add_argument("--json", action="store_true")
    f = sub.add_parser("formulas", help="every term with its unit and source")
    f.add_argument("--formulas", action="append", default=[], metavar="PATH")
    f.add_argument("--json", action="store_true")
    c = sub.add_parser("check", help="validate a formula file")
    c.add_argument("files", nargs="+")
    c.add_argument("--json", action="store_true")
    return p


def _inputs(args) -> Dict[str, object]:
    out: Dict[str, object] = {}
    for key, v in vars(args).items():
        if key.startswith("in_") and v is not None:
            out[key[3:]] = v
    for item in args.set:
        if "=" not in item:
            raise InputError(f"--set expects SYMBOL=VALUE, got '{item}'")
        k, v = item.split("=", 1)
        out[k.strip()] = v.strip()
    return out


def _options(args, lib) -> Dict[str, str]:
    return {n: getattr(args, f"opt_{n}") for n in lib.options if getattr(args, f"opt_{n}", None) is not None}


def cmd_estimate(args, lib) -> int:
    from vramsym.report import print_estimate, with_capacity
    model = vramsym.load_model(args.model, args.formulas)
    inputs = _inputs(args)
    capacity = None
    if args.gpu:
        capacity, _ = vramsym.resolve_capacity(args.gpu)
        inputs.setdefault("capacity", capacity)
    data = _estimate_any(lib, model, args.regime, _options(args, lib), inputs, args.formulas)
    if args.regime == "inference" and not _options(args, lib).get("overhead") == "none":
        data["heuristics"] = _heuristics(lib, model, _options(args, lib), inputs, capacity, args.formulas)
    if args.json:
        print(json.dumps(with_capacity(data, capacity), indent=2))
    else:
        print_estimate(data, args.unit, sys.stdout, capacity)
    return ExitStatus.OK


def cmd_solve(args, lib) -> int:
    from vramsym.report import print_solution, solution_data
    capacity, cap_desc = vramsym.resolve_capacity(args.gpu)
    model = vramsym.load_model(args.model, args.formulas)
    from vramsym import fastpath
    data = None if args.formulas else fastpath.solve(lib, model, args.regime, _options(args, lib), _inputs(args),
                                                     args.target, capacity, cap_desc)
    if data is None:
        sol = vramsym.solve(args.target, capacity, model, args.regime, _options(args, lib), _inputs(args), library=lib)
        _remember(lib, sol.estimate)
        data = solution_data(sol, cap_desc)
    if args.json:
        print(json.dumps({k: v for k, v in data.items() if k != "capacity_description"}, indent=2))
    else:
        print_solution(data, args.unit, sys.stdout)
    return ExitStatus.OK


def _estimate_any(lib, model, regime, options, inputs, extra):
    """The estimate as data: the warm path when it can, else the full pipeline."""
    from vramsym import fastpath
    from vramsym.report import estimate_data
    data = None if extra else fastpath.estimate(lib, model, regime, options, inputs)
    if data is None:
        est = vramsym.estimate(model, regime, options, inputs, library=lib)
        _remember(lib, est)
        data = estimate_data(est)
    return data


HEURISTICS = ("heuristic_1_2", "heuristic_1_3")


def _heuristics(lib, model, options, inputs, capacity, extra):
    """The seed articles' rules of thumb for the same job, labelled, beside the derived figure."""
    out = []
    for name in HEURISTICS:
        if name not in lib.regimes or (name == "heuristic_1_3" and capacity is None):
            continue
        opts = {k: v for k, v in options.items() if k != "overhead"}
        ins = dict(inputs)
        if capacity is not None:
            ins["capacity"] = capacity
        try:
            d = _estimate_any(lib, model, name, opts, ins, extra)
        except VramError:
            continue
        out.append({"regime": name, "description": d["description"], "total_bytes": d["total_bytes"]})
    return out


def _remember(lib, est) -> None:
    """Store the compiled regime so that the next run takes the fast path (vramsym.fastpath)."""
    try:
        from vramsym import fastpath
        fastpath.store(lib, est.composed)
    except Exception:  # a cache is an optimisation, never a failure
        pass


def cmd_measure(args, lib) -> int:
    from vramsym.measure import compare
    model = vramsym.load_model(args.model, args.formulas)
    res = compare(model, args.regime, _options(args, lib), _inputs(args), fake=not args.real,
                  decode_steps=args.decode_steps, library=lib)
    if args.json:
        print(json.dumps(res, indent=2, default=str))
        return ExitStatus.OK
    m = res["measurement"]
    print(f"model {res['model']}, regime {res['regime']}, " + ", ".join(f"{k}={_show(v)}" for k, v in res["options"].items()))
    print(f"measured with PyTorch {m.get('torch_version')} / transformers {m.get('transformers_version')}, "
          f"{'FakeTensorMode' if m.get('fake') else 'real CPU tensors'}; predicted with --overhead none (tensors only)")
    for n in m.get("notes", []):
        print(f"note: {n}")
    print(f"  {'component':<18} {'predicted B':>18} {'measured B':>18} {'error':>9}  note")
    for r in res["rows"]:
        err = "" if r["relative_error"] is None else f"{r['relative_error'] * 100:+.2f}%"
        print(f"  {r['component']:<18} {r['predicted_bytes']:>18,} {r['measured_bytes']:>18,} {err:>9}  {r['note']}")
    return ExitStatus.OK


def cmd_derive(args, lib) -> int:
    model = vramsym.load_model(args.model, args.formulas)
    if args.solve:
        if not args.gpu:
            raise InputError("--solve needs --gpu CAPACITY (e.g. 24GB, 24GiB or a GPU name)")
        capacity, _ = vramsym.resolve_capacity(args.gpu)
        result = vramsym.solve(args.solve, capacity, model, args.regime, _options(args, lib), _inputs(args), library=lib)
    else:
        result = vramsym.estimate(model, args.regime, _options(args, lib), _inputs(args), library=lib)
    text = vramsym.derive(result, args.format, args.standalone, library=lib)
    if args.json:
        print(json.dumps({"format": args.format, "text": text}, indent=2))
    else:
        print(text)
    return ExitStatus.OK


def cmd_export(args, lib) -> int:
    model = vramsym.load_model(args.model, args.formulas) if args.model else None
    free = tuple(f.strip() for f in args.free.split(",") if f.strip())
    text = vramsym.export(args.regime, args.to, model, _options(args, lib), free, args.term, library=lib)
    if args.json:
        print(json.dumps({"target": args.to, "regime": args.regime, "code": text}, indent=2))
    else:
        print(text)
    return ExitStatus.OK


FIT_SCENARIOS = [
    ("inference", {"precision": "bf16"}), ("inference", {"precision": "bf16", "kv_dtype": "fp8"}),
    ("inference", {"quant": "int8"}), ("inference", {"quant": "nf4"}), ("inference", {"quant": "gptq"}),
    ("inference", {"quant": "q4_k_m"}), ("inference", {"precision": "fp32"}),
    ("train", {"precision": "mixed_bf16", "optimizer": "adamw"}),
    ("train", {"precision": "mixed_bf16", "optimizer": "adamw_fused", "checkpointing": "full"}),
    ("train", {"precision": "bf16", "optimizer": "adamw_fused", "checkpointing": "full"}),
    ("train", {"precision": "bf16", "optimizer": "adam8bit", "checkpointing": "full"}),
    ("train", {"precision": "bf16", "optimizer": "sgd", "checkpointing": "full"}),
    ("train", {"precision": "fp32", "optimizer": "adamw"}),
    ("lora", {"precision": "bf16"}), ("lora", {"precision": "bf16", "checkpointing": "full"}),
    ("qlora", {"precision": "bf16"}), ("qlora", {"precision": "bf16", "checkpointing": "full"}),
]


def cmd_fit(args, lib) -> int:
    from vramsym.capacity import fmt_bytes
    capacity, desc = vramsym.resolve_capacity(args.gpu)
    model = vramsym.load_model(args.model, args.formulas)
    rows = []
    for regime, opts in FIT_SCENARIOS:
        est = vramsym.estimate(model, regime, opts, {"batch": args.batch, "seq": args.seq}, library=lib)
        fits = est.total_bytes <= capacity
        max_batch = None
        if fits:
            try:
                max_batch = vramsym.solve("batch", capacity, model, regime, opts, {"seq": args.seq}, library=lib).value
            except VramError:
                max_batch = None
        rows.append({"regime": regime, "options": {k: _show(v) for k, v in opts.items()}, "total_bytes": est.total_bytes,
                     "fits": fits, "headroom_bytes": capacity - est.total_bytes, "max_batch": max_batch})
    if args.json:
        print(json.dumps({"model": model.name, "capacity_bytes": capacity, "batch": args.batch, "seq": args.seq,
                          "scenarios": rows}, indent=2))
        return ExitStatus.OK
    print(f"{model.name} on {desc} = {capacity:,} B; batch {args.batch}, seq {args.seq}; sizes in {args.unit}")
    print(f"  {'regime':<10} {'options':<52} {'total ' + args.unit:>10} {'headroom ' + args.unit:>13}  fits  max batch")
    for r in rows:
        opts = ", ".join(f"{k}={v}" for k, v in r["options"].items())
        print(f"  {r['regime']:<10} {opts:<52} {fmt_bytes(r['total_bytes'], args.unit).split()[0]:>10} "
              f"{fmt_bytes(r['headroom_bytes'], args.unit).split()[0]:>13}  {'yes ' if r['fits'] else 'no  '}  "
              f"{r['max_batch'] if r['max_batch'] is not None else '-'}")
    return ExitStatus.OK


def cmd_dtype(args, lib) -> int:
    from vramsym.dtypes import explain
    info = explain(args.name, lib)
    if args.json:
        print(json.dumps({k: (str(v) if hasattr(v, "denominator") and not isinstance(v, int) else v)
                          for k, v in info.items()}, indent=2))
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


def cmd_models(args, lib) -> int:
    from vramsym.models import catalog
    rows = []
    for name, path in catalog().items():
        d = json.loads(path.read_text())
        m = vramsym.load_model(name)
        est = vramsym.estimate(m, "inference", inputs={"batch": 1, "seq": 1}, library=lib)
        p = next(c for c in est.components if c.name == "weights").exact / 2
        rows.append({"name": name, "hf_id": d.get("hf_id"), "model_type": m.config.get("model_type"),
                     "params": int(p), "source": d.get("source")})
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        for r in rows:
            print(f"{r['name']:<18} {r['params']:>16,} params  {r['model_type']:<12} {r['hf_id']}")
    return ExitStatus.OK


def cmd_gpus(args, lib) -> int:
    from vramsym.gpus import catalog
    gpus = catalog()
    if args.json:
        print(json.dumps([{"name": g.name, "memory_mib": g.memory_mib, "capacity_bytes": g.capacity_bytes,
                           "marketed": g.marketed, "aliases": list(g.aliases), "source": g.source} for g in gpus], indent=2))
    else:
        for g in gpus:
            print(f"{g.name:<22} {g.memory_mib:>8,} MiB = {g.capacity_bytes / 2**30:7.2f} GiB = "
                  f"{g.capacity_bytes / 1e9:7.2f} GB  (marketed {g.marketed})")
    return ExitStatus.OK


def cmd_formulas(args, lib) -> int:
    terms = [{"name": t.name, "unit": lib.units.get(t.name), "description": t.description,
              "file": t.span.file, "line": t.span.line, "sources": list(t.sources)} for t in lib.terms.values()]
    regimes = [{"name": r.name, "extends": r.extends, "description": r.description,
                "add": [a for a, _ in r.add], "drop": [d for d, _ in r.drop]} for r in lib.regimes.values()]
    options = [{"name": o.name, "choices": list(o.choices), "default": o.default, "description": o.description}
               for o in lib.options.values()]
    if args.json:
        print(json.dumps({"terms": terms, "regimes": regimes, "options": options}, indent=2))
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


def cmd_check(args, lib) -> int:
    from pathlib import Path
    from vramsym.library import load
    from vramsym.paths import formulas_dir
    paths = [formulas_dir()] + [Path(f) for f in args.files]
    for f in args.files:
        if not Path(f).exists():
            raise InputError(f"cannot check '{f}': no such file")
    checked, diags = load(paths)
    if args.json:
        print(json.dumps({"ok": not diags, "diagnostics": [d.to_dict() for d in diags],
                          "terms": len(checked.terms), "regimes": len(checked.regimes)}, indent=2))
    elif diags:
        for d in diags:
            print(d.render(checked.sources), file=sys.stderr)
    else:
        print(f"ok: {', '.join(args.files)} ({len(checked.terms)} terms, {len(checked.regimes)} regimes with the bundled formulas)")
    return ExitStatus.BAD_INPUT if diags else ExitStatus.OK


COMMANDS = {"estimate": cmd_estimate, "solve": cmd_solve, "measure": cmd_measure, "derive": cmd_derive,
            "export": cmd_export, "dtype": cmd_dtype, "fit": cmd_fit, "models": cmd_models, "gpus": cmd_gpus,
            "formulas": cmd_formulas, "check": cmd_check}


def _extra_formulas(argv: List[str]) -> List[str]:
    out = []
    for i, a in enumerate(argv):
        if a == "--formulas" and i + 1 < len(argv):
            out.append(argv[i + 1])
        elif a.startswith("--formulas="):
            out.append(a.split("=", 1)[1])
    return out


def main(argv: Optional[List[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    wants_json = "--json" in argv
    try:
        lib = vramsym.load_library(_extra_formulas(argv) if (argv[:1] != ["check"]) else ())
        parser = _parser(lib)
        if not argv:
            parser.print_help()
            return ExitStatus.USAGE
        args = parser.parse_args(argv)
        if args.command is None:
            parser.print_help()
            return ExitStatus.USAGE
        return int(COMMANDS[args.command](args, lib))
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
