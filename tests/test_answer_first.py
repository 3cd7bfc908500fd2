"""The estimate as a person reads it (issue 24, 'the answer first'): the verdict with the card on the
first line, a table that fits the terminal, no rows of 0 B unless asked, and vLLM's own log lines
(KV tokens, blocks, maximum concurrency) beside a vLLM answer."""
import json

import pytest

import vramsym
from helpers import run_cli

JOBS = [
    ["--model", "llama-3.1-70b", "--regime", "qlora", "--batch", "1", "--seq", "2048", "--gpu", "48GB"],
    ["--model", "llama-3.1-8b", "--regime", "train", "--batch", "2", "--seq", "4096", "--gpus", "8", "--zero", "3",
     "--gpu", "h100"],
    ["--model", "deepseek-v3", "--regime", "vllm", "--batch", "4", "--seq", "8192", "--tp", "8", "--gpu", "h200"],
    ["--model", "gpt-oss-20b", "--batch", "1", "--seq", "16384", "--gpu", "rtx-4060-ti-16gb"],
    ["--model", "llama-3.1-8b", "--regime", "train", "--offload", "optimizer", "--zero", "3", "--gpus", "2",
     "--batch", "1", "--seq", "512", "--gpu", "24GB"],
]


@pytest.mark.parametrize("columns", [72, 100, 140])
@pytest.mark.parametrize("job", JOBS, ids=lambda j: j[1] + "-" + j[3])
def test_every_line_fits_the_terminal(monkeypatch, job, columns):
    monkeypatch.setenv("COLUMNS", str(columns))
    code, out, err = run_cli(["estimate", *job])
    assert code == 0, err
    lines = out.splitlines()
    assert max(len(line) for line in lines) <= columns, max(lines, key=len)
    assert lines[0].startswith(("fits: ", "does NOT fit: "))


def test_the_verdict_names_the_card_first(monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    code, out, _ = run_cli(["estimate", "--model", "llama-3.1-8b", "--batch", "1", "--seq", "4096", "--gpu",
                            "rtx-4090"])
    assert code == 0
    assert out.splitlines()[0].endswith("on rtx-4090 (24,564 MiB)")


def test_rows_of_zero_bytes_only_with_all(monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    argv = ["estimate", "--model", "llama-3.1-8b", "--regime", "lora", "--batch", "1", "--seq", "1024"]
    _, short, _ = run_cli(argv)
    _, full, _ = run_cli(argv + ["--all"])
    _, data, _ = run_cli(argv + ["--json"])
    zero = [c["name"] for c in json.loads(data)["components"] if c["bytes"] == 0 and not c["host"]]
    assert zero, "a LoRA job on one GPU has components of 0 B (master weights, ZeRO buffers)"
    rows = lambda text: {line.split()[0] for line in text.splitlines() if line.startswith("  ")}   # noqa: E731
    assert not rows(short) & set(zero)
    assert set(zero) <= rows(full)
    assert "0 B, not shown (--all lists them): " + zero[0] in short
    assert "formula" not in short.splitlines()[short.splitlines().index(next(
        line for line in short.splitlines() if line.startswith("  component")))]
    _, explained, _ = run_cli(argv + ["--explain"])
    assert any(line.startswith("  component") and "formula" in line for line in explained.splitlines())


def _vllm_arithmetic(capacity, s):
    """vLLM's own arithmetic for Llama-3.1-8B on a capacity it takes as all visible (written out
    independently of the formula files, as tests/test_serving.py does)."""
    requested = capacity * 23 // 25 + (capacity * 23 % 25) / 25         # gpu_memory_utilization = 0.92
    weights = 2 * 8_030_261_248 + 131072 * 128 * 2                      # parameters and the rotary cos/sin cache
    h, V, nkv, d, L = 4096, 128256, 8, 128, 32
    profile = 8192 * h * 2 + 1024 * V * (2 + 4 + 12 + 8 + 12)          # large GPU: 8192 tokens, 1024 sequences sorted
    available = requested - weights - profile - 139586437               # non-torch 0.13 GiB at TP=1
    page = 16 * 2 * nkv * d * 2 * L                                      # one 16-token block in every layer, bf16
    blocks = int(available // page)
    return blocks, blocks * 16, blocks / -(-s // 16)


@pytest.mark.parametrize("s", [1, 4096, 8191, 131072])
def test_vllm_kv_tokens_and_concurrency_as_vllm_logs_them(s):
    capacity = 81559 * 2**20
    r = vramsym.compile("llama-3.1-8b", "vllm")
    pool = r.evaluate({"batch": 3, "seq": s, "C_gpu": capacity}).kv_pool(capacity)
    blocks, tokens, concurrency = _vllm_arithmetic(capacity, s)
    assert (pool["num_blocks"], pool["kv_cache_tokens"]) == (blocks, tokens)
    assert pool["max_concurrency_float"] == pytest.approx(concurrency, rel=1e-12)
    # the pool does not depend on the batch the estimate was asked for
    assert r.evaluate({"batch": 1, "seq": s, "C_gpu": capacity}).kv_pool(capacity) == pool


def test_vllm_pool_near_the_measured_h100_log():
    """llm-d-benchmark config_explorer/empirical-vllm-memory-results.md (vLLM's log, Llama-3.1-8B on one
    H100): 51.38 GiB of KV cache, i.e. 51.38 GiB / 128 KiB per token = 420,906 tokens, at the
    gpu_memory_utilization of those runs, 0.9 (vLLM's default before vllm-project/vllm pull request 38284)."""
    r = vramsym.compile("llama-3.1-8b", "vllm")
    est = r.evaluate(r.with_gpu({"batch": 1, "seq": 4096, "gpu_util": "9/10"}, "h100-sxm-80gb"))
    pool = est.kv_pool(est.binding.values["C_gpu"])
    assert abs(pool["kv_cache_tokens"] / (51.38 * 2**30 / 131072) - 1) < 0.01


def test_vllm_lines_in_the_table_the_json_and_the_solve(monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    argv = ["--model", "llama-3.1-8b", "--regime", "vllm", "--seq", "8192", "--gpu", "h100"]
    code, out, _ = run_cli(["estimate", *argv, "--batch", "1"])
    assert code == 0
    _, data, _ = run_cli(["estimate", *argv, "--batch", "1", "--json"])
    pool = json.loads(data)["vllm"]
    assert (f"GPU KV cache size: {pool['kv_cache_tokens']:,} tokens" in out
            and f"Maximum concurrency for 8,192 tokens per request: {pool['max_concurrency_float']:.2f}x" in out)
    code, out, _ = run_cli(["solve", "max_batch", *argv])
    _, data, _ = run_cli(["solve", "max_batch", *argv, "--json"])
    d = json.loads(data)
    assert code == 0 and "Maximum concurrency for 8,192 tokens per request" in out
    assert d["value"] == int(float(d["vllm"]["max_concurrency_float"]))     # the solve is the concurrency's floor
    _, data, _ = run_cli(["estimate", "--model", "llama-3.1-8b", "--batch", "1", "--seq", "8", "--gpu", "h100",
                          "--json"])
    assert "vllm" not in json.loads(data)                                 # transformers' inference has no pool


def _assumed(d):
    return {r["option"]: r["choice"] for r in d["assumed"]}


def test_the_recipe_a_regime_assumes_is_said_and_a_flag_changes_it(monkeypatch):
    """QLoRA's default recipe is TRL's (bf16 beside the 4-bit base, gradient checkpointing on, as
    SFTConfig defaults); --recipe peft-kbit is peft's prepare_model_for_kbit_training alone (fp32). The
    answer says what the recipe set, largest first, and an option given as a flag is no longer 'assumed'."""
    monkeypatch.setenv("COLUMNS", "200")
    argv = ["estimate", "--model", "llama-3.1-70b", "--regime", "qlora", "--batch", "1", "--seq", "2048",
            "--gpu", "48GB"]
    code, out, _ = run_cli(argv)
    d = json.loads(run_cli(argv + ["--json"])[1])
    assert code == 0 and _assumed(d) == {"precision": "bf16", "quant": "nf4-dq", "checkpointing": "full"}
    assert d["recipe"]["name"] == "trl" and d["recipe"]["others"] == ["peft-kbit", "trl-no-checkpointing"]
    # the figure for the bf16 + checkpointing recipe people run: 47 GB for 70B at 2k tokens, fits 48 GB
    assert abs(d["total_bytes"] / 47e9 - 1) < 0.02 and d["fits"]
    assert out.splitlines()[1].startswith("assumed (qlora's recipe trl; --recipe peft-kbit or "
                                          "trl-no-checkpointing or a flag changes them): precision=bf16 (decides ")
    none = json.loads(run_cli(argv + ["--json", "--checkpointing", "none"])[1])
    assert _assumed(none) == {"precision": "bf16", "quant": "nf4-dq"}
    assert none["total_bytes"] > 2 * d["total_bytes"]        # every layer's activations saved
    peft = json.loads(run_cli(argv + ["--json", "--recipe", "peft-kbit"])[1])
    assert _assumed(peft)["precision"] == "fp32" and peft["recipe"]["name"] == "peft-kbit"
    assert peft["total_bytes"] > d["total_bytes"] and not peft["fits"]
    # a flag wins over the recipe's choice
    both = json.loads(run_cli(argv + ["--json", "--recipe", "peft-kbit", "--precision", "bf16"])[1])
    assert both["total_bytes"] == d["total_bytes"] and "precision" not in _assumed(both)
    assert json.loads(run_cli(["estimate", "--model", "llama-3.1-8b", "--batch", "1", "--seq", "64",
                               "--json"])[1])["assumed"] == []


@pytest.mark.parametrize("regime", ["qlora", "lora", "train"])
def test_assumed_settings_decide_the_bytes_of_the_components_that_read_them(regime):
    """Each assumed setting's bytes are the sum of the peak's GPU components whose formulas read it,
    and the settings come largest first; the component lists are the regime's own."""
    d = json.loads(run_cli(["estimate", "--model", "qwen2.5-7b", "--regime", regime, "--batch", "2",
                            "--seq", "1024", "--json"])[1])
    size = {c["name"]: c["bytes"] for c in d["components"] if not c.get("host")}
    assert d["assumed"], regime
    for r in d["assumed"]:
        assert r["decides_bytes"] == sum(size[c] for c in r["components"])
        assert r["decides_bytes"] <= d["total_bytes"]
    decided = [r["decides_bytes"] for r in d["assumed"]]
    assert decided == sorted(decided, reverse=True)


def test_every_named_recipe_is_a_real_choice_that_changes_something():
    """formulas/recipes.json: each recipe names a regime, options and choices that exist, differs from
    the regime's default recipe, and has a source; each engine named is a regime."""
    from vramsym.engine.options import _recipes_file, recipe_options, resolve_options
    interface = vramsym.vocabulary().interface
    for regime, entry in _recipes_file().items():
        assert regime in interface.regimes and entry["default"]["source"]
        assert all(e in interface.regimes for e in entry["engines"])
        base = resolve_options(interface, regime, {})
        for name, rec in entry["recipes"].items():
            assert rec["source"] and rec["description"]
            chosen = recipe_options(interface, regime, name)
            assert resolve_options(interface, regime, chosen) != base, (regime, name)


def test_an_unknown_recipe_is_refused_with_the_regime_s_recipes():
    code, _, err = run_cli(["estimate", "--model", "gpt2", "--regime", "qlora", "--recipe", "unsloth",
                            "--batch", "1", "--seq", "64"])
    assert code != 0 and "no recipe 'unsloth'" in err and "trl (default), peft-kbit" in err
    code, _, err = run_cli(["estimate", "--model", "gpt2", "--recipe", "trl", "--batch", "1", "--seq", "64"])
    assert code != 0 and "regime inference has no recipe 'trl'; its recipes: transformers (default)" in err
    code, _, err = run_cli(["estimate", "--model", "gpt2", "--regime", "vllm", "--recipe", "trl", "--batch", "1",
                            "--seq", "64"])
    assert code != 0 and "regime vllm has no named recipes" in err and "Traceback" not in err


def test_inference_names_its_engine_and_the_regimes_of_the_others(monkeypatch):
    """transformers' one-shot prefill is one engine's answer: the assumed line says so and names the
    regimes of the engines llama.cpp / Ollama and vLLM users run, each of which is a valid --regime."""
    monkeypatch.setenv("COLUMNS", "100")
    code, out, _ = run_cli(["estimate", "--model", "gpt2", "--batch", "1", "--seq", "64"])
    line = " ".join(l.strip() for l in out.splitlines()[:3])
    assert code == 0 and line.startswith("assumed (inference's recipe transformers: ")
    for regime in ("llama-cpp", "vllm"):
        assert f"--regime {regime}" in line
        assert run_cli(["estimate", "--model", "gpt2", "--regime", regime, "--batch", "1", "--seq", "64",
                        "--gpu", "24GB"])[0] == 0
