"""Speed, as ratios measured in one run on one machine (issue 23's targets in brackets):

1. warm ``vramsym estimate`` / ``solve`` (compiled regime from the cache, no sympy) over a
   bare ``python -c pass`` of the same interpreter            [estimate at most 2.5x]
2. cold start (empty user cache)                              [under 1.0 s]
   with the bundled formulas, a first run reads the regimes compiled when the wheel was
   built (vramsym/_precompiled/, see vramsym/engine/precompile.py); an option combination
   that is not shipped (a LoRA with checkpointing and Lion), or ``--formulas`` files of the
   user's, parse, check, compose and compile with sympy
3. ``advise`` for inference and for training, cold and warm   [cold <= 1.0 s, warm <= 0.15 s]
4. ``solve min_gpus`` warm                                     [<= 0.5 s]
5. ``html`` with the whole catalog, warm                       [<= 3 s]
6. in-process ``r.evaluate(batch=.., seq=..)`` of a compiled regime, exact, for inference,
   training and training with FSDP2 on 8 GPUs                 [>= 100,000 / 50,000 / 50,000 a second]
7. ``estimate`` of a GGUF file against the same ``estimate`` of a catalog model, warm (a file with
   Llama 3's tokenizer: 128,256 tokens and 280,000 merges, walked and not decoded)   [<= 2x]
8. with ``--install``: ``pip install --no-deps .`` of the project into a fresh virtual
   environment (the build requirements from pip's cache)      [<= 60 s]

    python benchmarks/startup.py [--runs 15] [--install]

The bare interpreter and the warm commands are timed in alternation, round by round, so that
a drift of the machine's load affects every figure alike; each figure is the median. Cold
figures empty the cache before each run (fewer runs: they are slow).

The entry point measured is the ``vramsym`` console script beside the interpreter (what
users run; ``python -m vramsym.cli`` when there is none). Figures go to docs/performance.md.
"""
import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

COMMANDS = {
    "solve": ["solve", "max_batch", "--model", "llama-3.1-8b", "--seq", "4096", "--gpu", "24GB"],
    "estimate": ["estimate", "--model", "llama-3.1-8b", "--batch", "1", "--seq", "4096"],
}
#: issue 23's other figures: warm and cold (empty cache) each
MORE = {
    "estimate, unshipped options": ["estimate", "--model", "mixtral-8x7b", "--regime", "lora", "--batch", "2",
                                    "--seq", "2048", "--checkpointing", "full", "--optimizer", "lion"],
    "advise inference": ["advise", "--model", "llama-3.1-8b", "--batch", "8", "--seq", "8192", "--gpu", "24GB"],
    "advise train": ["advise", "--model", "llama-3.1-8b", "--regime", "train", "--batch", "1", "--seq", "4096",
                     "--gpu", "24GB"],
    "solve min_gpus": ["solve", "min_gpus", "--model", "llama-3.1-70b", "--regime", "train", "--batch", "1",
                       "--seq", "4096", "--gpu", "80GB"],
}
TARGETS = {"estimate, unshipped options": (None, 1.0), "advise inference": (0.15, 1.0), "advise train": (0.15, 1.0),
           "solve min_gpus": (0.5, None)}


def once(argv, env, before=None):
    if before:
        before()
    t = time.perf_counter()
    r = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    dt = time.perf_counter() - t
    if r.returncode != 0:
        raise SystemExit(f"{argv} failed: {r.stderr.decode()}")
    return dt


def alternating(jobs, runs):
    """{name: median seconds} for jobs {name: (argv, env, before)}, timed round by round."""
    times = {name: [] for name in jobs}
    for _ in range(runs):
        for name, (argv, env, before) in jobs.items():
            times[name].append(once(argv, env, before))
    return {name: statistics.median(ts) for name, ts in times.items()}


def write_gguf(path):
    """A Llama-shaped GGUF whose metadata is the size of Llama 3's (128,256 token strings and types,
    280,000 merges) and whose tensors are small (two layers): what the header walk costs."""
    import gguf
    import numpy as np
    T = gguf.GGMLQuantizationType
    w = gguf.GGUFWriter(path, "llama")
    h, L, nq, nkv, ff, V = 256, 2, 4, 2, 512, 128256
    for add, v in [(w.add_context_length, 8192), (w.add_embedding_length, h), (w.add_block_count, L),
                   (w.add_feed_forward_length, ff), (w.add_head_count, nq), (w.add_head_count_kv, nkv),
                   (w.add_layer_norm_rms_eps, 1e-5), (w.add_file_type, 15)]:
        add(v)
    w.add_token_list([f"tok{i}".encode() for i in range(V)])
    w.add_token_types([1] * V)
    w.add_token_merges([f"a{i} b{i}".encode() for i in range(280000)])

    def tensor(name, shape, qt):
        block, size = gguf.GGML_QUANT_SIZES[qt]
        data = (np.zeros(shape, dtype=np.float32) if qt == T.F32
                else np.zeros((*shape[:-1], shape[-1] // block * size), dtype=np.uint8))
        w.add_tensor(name, data, raw_dtype=None if qt == T.F32 else qt)

    d = h // nq
    tensor("token_embd.weight", (V, h), T.Q4_K)
    for i in range(L):
        for n, shape, qt in [("attn_norm", (h,), T.F32), ("attn_q", (nq * d, h), T.Q4_K), ("attn_k", (nkv * d, h), T.Q4_K),
                             ("attn_v", (nkv * d, h), T.Q6_K), ("attn_output", (h, nq * d), T.Q4_K),
                             ("ffn_norm", (h,), T.F32), ("ffn_gate", (ff, h), T.Q4_K), ("ffn_up", (ff, h), T.Q4_K),
                             ("ffn_down", (h, ff), T.Q6_K)]:
            tensor(f"blk.{i}.{n}.weight", shape, qt)
    tensor("output_norm.weight", (h,), T.F32)
    tensor("output.weight", (V, h), T.Q6_K)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def evaluate_rate(regime="inference", options=None, inputs=None, n=20_000):
    import vramsym
    r = vramsym.compile("llama-3.1-8b", regime, dict(options or {"precision": "bf16"}))
    extra = dict(inputs or {})
    t = time.perf_counter()
    total = 0
    for i in range(n):
        total += r.evaluate(dict(extra, batch=1 + i % 64, seq=512 + i % 4096)).total_bytes
    return n / (time.perf_counter() - t)


def install_seconds(py) -> float:
    """``pip install --no-deps .`` of this checkout into a fresh virtual environment: the isolated
    build environment (its requirements from pip's cache or the registry), the build hook, the copy."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([py, "-m", "venv", os.path.join(tmp, "env")], check=True)
        pip = [os.path.join(tmp, "env", "bin", "python"), "-m", "pip", "install", "-q", "--no-deps", root]
        t = time.perf_counter()
        subprocess.run(pip, check=True, cwd=tmp)
        return time.perf_counter() - t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--install", action="store_true", help="also time pip install of the project (minutes)")
    args = ap.parse_args()
    py = sys.executable
    import vramsym
    from vramsym.engine import cache
    # an installed wheel ships bytecode; a checkout run with PYTHONDONTWRITEBYTECODE has none
    subprocess.run([py, "-m", "compileall", "-q", os.path.dirname(vramsym.__file__)], check=True)
    base = dict(os.environ)
    base.pop("VRAMSYM_NO_CACHE", None)
    shipped = cache.shipped(cache.shipped_key, "interface") is not None
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; "
          f"median of {args.runs} alternating runs; compiled regimes shipped with the package: "
          f"{'yes' if shipped else 'NO (run python -m vramsym.engine.precompile, or install the wheel)'}")
    with tempfile.TemporaryDirectory() as tmp:
        warm = dict(base, VRAMSYM_CACHE_DIR=os.path.join(tmp, "warm"))
        cold_dir = os.path.join(tmp, "cold")
        cold = dict(base, VRAMSYM_CACHE_DIR=cold_dir)
        user = os.path.join(tmp, "user.vram")
        with open(user, "w") as fh:      # a user's formula file: nothing shipped can answer
            fh.write("symbol my_extra : byte \"my extra bytes\"\n")
        script = os.path.join(os.path.dirname(py), "vramsym")    # the console script users run
        entry = [script] if os.path.exists(script) else [py, "-m", "vramsym.cli"]
        print(f"  entry point: {' '.join(entry)}")
        clear = lambda: subprocess.run(["rm", "-rf", cold_dir])     # noqa: E731
        jobs = {"pass": ([py, "-c", "pass"], base, None)}
        for name, cmd in COMMANDS.items():
            subprocess.run([*entry, *cmd], env=warm, stdout=subprocess.DEVNULL)
            jobs["warm " + name] = ([*entry, *cmd], warm, None)
        for name, cmd in MORE.items():
            subprocess.run([*entry, *cmd], env=warm, stdout=subprocess.DEVNULL)
            jobs["warm " + name] = ([*entry, *cmd], warm, None)
        gguf_file = os.path.join(tmp, "llama3-tokenizer.gguf")
        write_gguf(gguf_file)
        lcpp = ["--regime", "llama_cpp", "--batch", "1", "--seq", "4096"]
        for name, model in [("gguf", ["--model", gguf_file]), ("gguf catalog", ["--model", "llama-3.1-8b", "--quant", "q4_k_m"])]:
            subprocess.run([*entry, "estimate", *model, *lcpp], env=warm, stdout=subprocess.DEVNULL)
            jobs[name] = ([*entry, "estimate", *model, *lcpp], warm, None)
        t = alternating(jobs, args.runs)
        cold_runs = max(1, args.runs // 5)
        cold_t = alternating({name: ([*entry, *cmd], cold, clear) for name, cmd in {**COMMANDS, **MORE}.items()},
                             cold_runs)
        user_t = alternating({name: ([*entry, *cmd, "--formulas", user], cold, clear)
                              for name, cmd in COMMANDS.items()}, cold_runs)
        page = os.path.join(tmp, "page.html")
        html = [*entry, "html", "--output", page]
        subprocess.run(html, env=warm, stdout=subprocess.DEVNULL)
        html_t = alternating({"html": (html, warm, None)}, max(1, args.runs // 5))["html"]
    bare = t["pass"]
    print(f"  python -c pass                      {bare:.3f} s")
    for name in COMMANDS:
        w = t["warm " + name]
        print(f"  vramsym {name:<9} warm {w:.3f} s = {w / bare:4.1f}x python -c pass [target <= 2.5x]; "
              f"cold (empty cache) {cold_t[name]:.3f} s [target <= 1.0 s]; "
              f"cold with a --formulas file {user_t[name]:.3f} s")
    for name in MORE:
        warm_target, cold_target = TARGETS[name]
        w = t["warm " + name]
        print(f"  vramsym {name:<27} warm {w:.3f} s = {w / bare:5.1f}x"
              + (f" [target <= {warm_target} s]" if warm_target else "")
              + f"; cold {cold_t[name]:.3f} s" + (f" [target <= {cold_target} s]" if cold_target else ""))
    print(f"  vramsym html (whole catalog) warm   {html_t:.3f} s [target <= 3 s]")
    print(f"  vramsym estimate of a GGUF (Llama 3's tokenizer) warm {t['gguf']:.3f} s = "
          f"{t['gguf'] / t['gguf catalog']:.2f}x the catalog model's {t['gguf catalog']:.3f} s [target <= 2x]")
    for label, regime, opts, inputs, target in [
            ("inference", "inference", {"precision": "bf16"}, {}, 100_000),
            ("training", "train", {"precision": "mixed_bf16"}, {}, 50_000),
            ("training, FSDP2 ZeRO-3 x 8", "train", {"precision": "mixed_bf16"}, {"gpus": 8, "zero": 3}, 50_000)]:
        print(f"  r.evaluate(batch, seq), in process, {label:<27} {evaluate_rate(regime, opts, inputs):>9,.0f} "
              f"exact configs/s [target >= {target:,}]")
    if args.install:
        print(f"  pip install --no-deps . (fresh venv) {install_seconds(py):.1f} s [target <= 60 s]")


if __name__ == "__main__":
    main()
