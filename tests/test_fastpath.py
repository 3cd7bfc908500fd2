"""The warm path (compiled regimes, no sympy) prints exactly what the full path prints."""
import json
import subprocess
import sys

import pytest

CASES = [
    ["estimate", "--model", "llama-3.1-8b", "--batch", "3", "--seq", "1000"],
    ["estimate", "--model", "qwen3-30b-a3b", "--batch", "2", "--seq", "4096", "--quant", "nf4"],
    ["estimate", "--model", "gpt2", "--regime", "train", "--batch", "8", "--seq", "512", "--precision", "fp32"],
    ["estimate", "--model", "gemma-2-9b", "--regime", "lora", "--batch", "1", "--seq", "2048", "--lora-rank", "16"],
    ["solve", "max_batch", "--model", "llama-3.1-8b", "--seq", "4096", "--gpu", "24GB"],
    ["solve", "max_batch", "--model", "mistral-7b-v0.1", "--seq", "8192", "--gpu", "a100-80gb", "--regime", "vllm"],
    ["solve", "max_seq", "--model", "llama-3.2-1b", "--batch", "4", "--gpu", "rtx-4090", "--attention", "eager"],
    ["solve", "max_batch", "--model", "phi-4", "--seq", "2048", "--gpu", "12GB"],
]


def _run(argv, env):
    r = subprocess.run([sys.executable, "-m", "vramsym.cli", *argv], capture_output=True, text=True, env=env)
    return r.returncode, r.stdout, r.stderr


@pytest.mark.parametrize("argv", CASES, ids=[" ".join(c[:2]) + " " + c[3] for c in CASES])
@pytest.mark.parametrize("json_out", [False, True])
def test_warm_equals_cold(tmp_path, argv, json_out):
    import os
    env = dict(os.environ, VRAMSYM_CACHE_DIR=str(tmp_path))
    env.pop("VRAMSYM_NO_CACHE", None)
    argv = argv + (["--json"] if json_out else [])
    cold = _run(argv, dict(env, VRAMSYM_NO_CACHE="1"))
    first = _run(argv, env)     # full path, writes the compiled regime
    warm = _run(argv, env)      # fast path
    assert cold == first == warm
    if cold[0] == 0:
        assert any(p.name.startswith("compiled-") for p in tmp_path.iterdir())


def test_fast_path_does_not_import_sympy(tmp_path):
    import os
    env = dict(os.environ, VRAMSYM_CACHE_DIR=str(tmp_path))
    env.pop("VRAMSYM_NO_CACHE", None)
    argv = ["estimate", "--model", "llama-3.1-8b", "--batch", "1", "--seq", "8"]
    _run(argv, env)
    code = ("import sys, runpy; sys.argv = ['vramsym'] + %r\n"
            "try:\n    runpy.run_module('vramsym.cli', run_name='__main__')\nexcept SystemExit:\n    pass\n"
            "print('SYMPY' if 'sympy' in sys.modules else 'NOSYMPY', file=sys.stderr)") % (argv,)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert "NOSYMPY" in r.stderr, r.stderr
