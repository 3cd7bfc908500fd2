"""Fuzz: hypothesis over command-line flags, config.json values and formula files.

Whatever comes in: no traceback, no exit 70 (an internal error), no hang (a time limit
per run), exit 1 with a sentence on bad input, and on accepted input no negative figure.
"""
import json
import os
import time

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from vramsym.cli import ExitStatus, main

HERE = os.path.dirname(__file__)
FUZZ = settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))




def run(argv, capsys):
    t = time.perf_counter()
    code = main(list(argv))
    elapsed = time.perf_counter() - t
    out, err = capsys.readouterr()
    assert code != ExitStatus.INTERNAL, (argv, err)
    assert "Traceback" not in err, (argv, err)
    assert elapsed < 60, (argv, elapsed)
    if code == ExitStatus.BAD_INPUT:
        assert len(err.strip()) > 10 or json.loads(out)["error"]["message"], (argv, err, out)
    return code, out, err


def no_negative(out):
    data = json.loads(out)
    est = data.get("estimate", data)
    assert est["total_bytes"] >= 0, data
    for c in est["components"]:
        assert c["bytes"] >= 0, c


numbers = st.one_of(
    st.integers(-10, 10**6).map(str),
    st.sampled_from(["0", "1", "4096", "1.5", "1e3", "1e40", "1e41", "1e400", "-1", "nan", "inf", "0x10",
                     "1/2", "3/0", "", " ", "1_000", "9" * 60, "١٢", "1e-5", "true"]),
    st.text(max_size=12),
)
models = st.sampled_from(["llama-3.1-8b", "gpt2", "qwen3-30b-a3b", "gemma-2-9b", "mistral-7b-v0.1", "nosuch"])
regimes = st.sampled_from(["inference", "train", "lora", "qlora", "vllm", "freeze", "heuristic-1-3", "bogus"])
options = st.lists(st.tuples(st.sampled_from(["--precision", "--quant", "--kv-dtype", "--attention",
                                              "--checkpointing", "--optimizer", "--lora-targets"]),
                             st.sampled_from(["bf16", "mixed-bf16", "fp8", "nf4", "eager", "full", "sgd",
                                              "qv", "fp32", "zero-mixed", "bogus", "none"])), max_size=3)
inputs = st.lists(st.tuples(st.sampled_from(["--batch", "--seq", "--lora-rank", "--gpu-memory-utilization",
                                             "--train-layers", "--set"]), numbers), max_size=4)


@FUZZ
@given(cmd=st.sampled_from(["estimate", "solve"]), model=models, regime=regimes, opts=options, ins=inputs,
       gpu=st.sampled_from(["24GB", "80GiB", "rtx-4090", "24", "0GB", "1e99GB", "h100"]))
def test_fuzz_flags(capsys, cmd, model, regime, opts, ins, gpu):
    argv = [cmd] + (["max_batch"] if cmd == "solve" else []) + ["--model", model, "--regime", regime]
    for flag, value in opts + ins:
        if flag == "--set":
            value = f"n_kv={value}"
        argv += [flag, value]
    if cmd == "solve" and not any(f == "--seq" for f, _ in ins):
        argv += ["--seq", "512"]
    if cmd == "estimate" and not any(f == "--batch" for f, _ in ins):
        argv += ["--batch", "1"]
    if cmd == "estimate" and not any(f == "--seq" for f, _ in ins):
        argv += ["--seq", "64"]
    argv += ["--gpu", gpu, "--json"]
    code, out, err = run(argv, capsys)
    if code == 0:
        no_negative(out)


config_values = st.one_of(
    st.integers(-5, 10**15), st.booleans(), st.none(), st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=8), st.lists(st.integers(0, 5), max_size=4), st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
    st.sampled_from([0, 1, 2, 3, 7, 64, 10**12, -1, 2.5, "llama", "gemma2", "mixtral", ["sliding_attention"] * 50]),
)
config_keys = st.sampled_from(["hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads",
                               "intermediate_size", "vocab_size", "head_dim", "tie_word_embeddings", "model_type",
                               "num_local_experts", "num_experts_per_tok", "sliding_window", "layer_types",
                               "first_k_dense_replace", "moe_layer_freq", "mlp_only_layers", "text_config",
                               "decoder_sparse_step", "max_window_layers", "use_sliding_window"])


@FUZZ
@given(changes=st.dictionaries(config_keys, config_values, min_size=1, max_size=3),
       base=st.sampled_from(["llama-3.2-1b", "mixtral-8x7b", "gemma-2-9b", "qwen3-30b-a3b"]),
       regime=st.sampled_from(["inference", "train", "lora"]))
def test_fuzz_configs(capsys, tmp_path_factory, changes, base, regime):
    cfg = json.loads(open(os.path.join(HERE, "..", "formulas", "models", f"{base}.json")).read())["config"]
    cfg.update(changes)
    p = tmp_path_factory.mktemp("cfg") / "config.json"
    p.write_text(json.dumps(cfg, allow_nan=True))
    code, out, err = run(["estimate", "--model", str(p), "--regime", regime, "--batch", "2", "--seq", "128",
                          "--json"], capsys)
    if code == 0:
        no_negative(out)


tokens = st.sampled_from([
    "term", "symbol", "regime", "option", "preset", "fit", "match", "extends", "add", "drop", "let", "set",
    "source", "latex", "domain", "default", "from", "alias", "max", "min", "divides", "phase", "label",
    "x", "y", "b", "s", "h", "weights", "kv_cache", "inference", "posint", "byte", "token", "sequence",
    "1", "0", "2.5", "1e3", "1e99", "=", ":", "+", "-", "*", "/", "^", "(", ")", "[", "]", "{", "}", ",", "|",
    "<=", "if", "min(", "max(", "ceil(", '"a source"', '"\\u0007"', '"\\\\input{x}"', "\n", "#",
])


@FUZZ
@given(parts=st.lists(tokens, max_size=40), extra=st.text(max_size=20))
def test_fuzz_formula_files(capsys, tmp_path_factory, parts, extra):
    p = tmp_path_factory.mktemp("vram") / "f.vram"
    p.write_text(" ".join(parts) + " " + extra, encoding="utf-8", errors="surrogatepass") \
        if not any(0xd800 <= ord(c) <= 0xdfff for c in extra) else p.write_text(" ".join(parts))
    run(["check", str(p)], capsys)


@FUZZ
@given(term=st.sampled_from(["1", "b * s", "weights", "-weights", "max(b, s) - 2 * s", "ceil(s / 16)"]),
       desc=st.text(max_size=30).filter(lambda s: '"' not in s and "\\" not in s))
def test_fuzz_regimes_from_formula_files(capsys, tmp_path_factory, term, desc):
    p = tmp_path_factory.mktemp("reg") / "r.vram"
    p.write_text(f'term fz = ({term}) * [byte] : byte "{desc}" source "fuzz"\n'
                 f'regime fz_regime extends inference "fuzzed" {{ add fz }}\n', encoding="utf-8")
    code, out, err = run(["estimate", "--formulas", str(p), "--regime", "fz_regime", "--model", "gpt2",
                          "--batch", "2", "--seq", "64", "--json"], capsys)
    if code == 0:
        no_negative(out)


UNSAFE_TEXT = st.one_of(st.text(alphabet=st.one_of(st.characters(), st.sampled_from(
    ["\x1b", "\x07", "\r", "\x9b", "\u202e", "\ud800", "\udc80", "$", "\\", "{", "}"])), max_size=30),
    st.sampled_from(["/*APP*/", "$\\frac{1}{$", "llama-3.1-8b\x1b]0;t\x07"]))


@FUZZ
@given(name=UNSAFE_TEXT, degree=st.one_of(numbers, st.sampled_from(["2", "3", "64", "1.5", "abc", "2.0"])),
       flag=st.sampled_from(["--tp", "--pp", "--cp", "--ep", "--zero"]))
def test_fuzz_hostile_names_and_layouts(capsys, name, degree, flag):
    """Any text as a model name, any value as a parallel degree: no traceback, no exit 70, and no raw
    control character, lone surrogate or bidirectional control in what is written."""
    for argv in (["estimate", "--model", name, "--batch", "1", "--seq", "16"],
                 ["solve", "min_gpus", "--model", "llama-3.2-1b", "--regime", "train", "--batch", "1", "--seq", "512",
                  "--gpu", "80GB", flag, degree],
                 ["estimate", "--model", "qwen3-30b-a3b", "--regime", "train", "--batch", "1", "--seq", "64",
                  "--gpus", "8", flag, degree, "--json"]):
        code, out, err = run(argv, capsys)
        assert code in (0, ExitStatus.BAD_INPUT, ExitStatus.USAGE, ExitStatus.DOES_NOT_FIT), (argv, code, err)
        from vramsym.terminal import shown
        assert shown(out) == out and shown(err) == err, (argv, out, err)
