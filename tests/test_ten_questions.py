"""Ten questions people ask in forums (issue 24), typed as a newcomer types them after reading
`--help`, each checked against the public figure it is asked about, within 10%, and each answer's
first line the verdict with the card where a card is given.

Each figure's source is named beside it. The figures are independent of vramsym: a model card, a
paper, a published file's size, a log an engine printed.
"""
import json

import pytest

from helpers import run_cli


def answer(*argv):
    code, out, err = run_cli(["estimate", *argv, "--json"])
    assert code == 0, err
    return json.loads(out)


def near(value, figure, within=0.10):
    return abs(value / figure - 1) <= within


def test_q1_does_gpt_oss_20b_fit_16_gb(tmp_path):
    """"Will gpt-oss-20b run on my 16 GB card?" given as its config.json. OpenAI's model card
    (gpt-oss-120b & gpt-oss-20b, table of checkpoint sizes): 20.91B parameters, checkpoint 12.8 GiB,
    "can run within 16GB of memory". The config's quantization_config (MXFP4) sets the format."""
    cfg = json.loads(open("formulas/models/gpt-oss-20b.json").read())["config"]
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    d = answer("--model", str(path), "--seq", "4096", "--batch", "1", "--gpu", "16GB")
    assert d["options"]["quant"] == "mxfp4" and any("quantization_config" in n for n in d["notes"])
    weights = next(c["bytes"] for c in d["components"] if c["name"] == "weights")
    assert near(weights, 12.8 * 2**30, 0.02) and near(d["params"], 20.91e9, 0.01)
    # transformers' one-shot eager prefill of 4k tokens is another engine's question: llama.cpp fits
    lcpp = answer("--model", str(path), "--regime", "llama-cpp", "--seq", "4096", "--batch", "1", "--gpu", "16GB")
    assert lcpp["fits"]


def test_q2_qlora_70b_on_one_48_gb_card():
    """"Can I QLoRA a 70B model on one 48 GB card?" Dettmers et al. 2023 (QLoRA), abstract: "finetune a
    65B parameter model on a single 48GB GPU"; the issue's figure for the recipe people run (bf16 with
    gradient checkpointing): 47 GB for 70B at 2k tokens."""
    d = answer("--model", "llama-3.1-70b", "--regime", "qlora", "--batch", "1", "--seq", "2048", "--gpu", "48GB")
    assert d["fits"] and near(d["total_bytes"], 47e9)
    assert answer("--model", "llama-65b", "--regime", "qlora", "--batch", "1", "--seq", "512", "--gpu", "48GB")["fits"]


def test_q3_deepseek_v3_weights_per_gpu_on_8_h200():
    """"How much of DeepSeek-V3 does each of 8 GPUs hold?" The model card: 671B total parameters
    (the main model; the MTP module's 14B is extra), FP8 weights: 671 GB, so 83.9 GB per GPU of 8."""
    d = answer("--model", "deepseek-v3", "--regime", "inference_kv", "--quant", "fp8", "--gpus", "8", "--tp", "8",
               "--batch", "1", "--seq", "1")
    assert near(d["params"], 671e9, 0.01)
    weights = next(c["bytes"] for c in d["components"] if c["name"] == "weights")
    assert near(weights, 671e9 / 8)


def test_q4_qwen3_kv_bytes_per_token():
    """"How much KV cache per token does Qwen3-8B take?" From its published config (36 layers, 8 KV
    heads of 128): 2 x 36 x 8 x 128 x 2 B = 147,456 B (144 KiB) per token in bf16."""
    one = answer("--model", "qwen3-8b", "--regime", "inference_kv", "--batch", "1", "--seq", "1")
    two = answer("--model", "qwen3-8b", "--regime", "inference_kv", "--batch", "1", "--seq", "2")
    kv = [next(c["bytes"] for c in d["components"] if c["name"] == "kv_cache") for d in (one, two)]
    assert kv[1] - kv[0] == 147_456 == kv[0]


def test_q5_vllm_kv_pool_on_an_h100():
    """"How many tokens of KV does vLLM give Llama-3.1-8B on an H100?" llm-d-benchmark's vLLM log
    (config_explorer/empirical-vllm-memory-results.md): 51.38 GiB of KV cache = 420,906 tokens, with the
    gpu_memory_utilization of that run, 0.9 (vLLM's default before vllm-project/vllm pull request 38284)."""
    d = answer("--model", "llama-3.1-8b", "--regime", "vllm", "--seq", "4096", "--batch", "1", "--gpu", "h100",
               "--gpu-memory-utilization", "0.9")
    assert near(d["vllm"]["kv_cache_tokens"], 51.38 * 2**30 / 131072, 0.01)


def test_q6_llama_cpp_q4_k_m_file_from_a_name():
    """"How big is Llama-3.1-8B in Q4_K_M?" bartowski/Meta-Llama-3.1-8B-Instruct-GGUF lists the Q4_K_M
    file at 4.92 GB; from the name and --quant alone, the GPU's and the host's model buffers hold it."""
    d = answer("--model", "llama-3.1-8b", "--regime", "llama-cpp", "--quant", "q4-k-m", "--seq", "4096",
               "--batch", "1", "--gpu", "rtx-4060")
    size = {c["name"]: c["bytes"] for c in d["components"]}
    assert near(size["lcpp_weights"] + size["lcpp_weights_host"], 4.92e9, 0.02)
    assert d["fits"]


def test_q7_a_consumer_card_by_its_name(monkeypatch):
    """"Does Llama-3.1-8B at Q4 fit my RTX 4060?" The card is known by its name, 8 GB (NVIDIA's
    specifications: 8 GB GDDR6), and the first line is the verdict naming it."""
    monkeypatch.setenv("COLUMNS", "100")
    code, out, _ = run_cli(["estimate", "--model", "llama-3.1-8b", "--regime", "llama-cpp", "--quant", "q4-k-m",
                            "--seq", "4096", "--batch", "1", "--gpu", "rtx-4060"])
    assert code == 0 and out.splitlines()[0].startswith("fits: ") and "on rtx-4060 (8," in out.splitlines()[0]


def test_q8_a_hugging_face_id_offline():
    """"meta-llama/Llama-3.1-8B at 8k on a 24 GB card?" The id of a catalog entry resolves offline to it:
    8.03B parameters (the model card), 16.06 GB of bf16 weights."""
    by_id = answer("--model", "meta-llama/Llama-3.1-8B", "--seq", "8192", "--batch", "1", "--gpu", "24GB")
    by_name = answer("--model", "llama-3.1-8b", "--seq", "8192", "--batch", "1", "--gpu", "24GB")
    assert by_id["total_bytes"] == by_name["total_bytes"] and near(by_id["params"], 8.03e9, 0.01)
    weights = next(c["bytes"] for c in by_id["components"] if c["name"] == "weights")
    assert near(weights, 16.06e9, 0.01)


def test_q9_full_fine_tuning_model_states_per_parameter():
    """"How much memory to fully fine-tune a 7B model?" Rajbhandari et al. 2020 (ZeRO), section 3.1:
    mixed-precision Adam keeps 16 bytes per parameter (a 7.5B model: 120 GB) before activations."""
    d = answer("--model", "llama-2-7b", "--regime", "train-states", "--batch", "1", "--seq", "1")
    assert near(d["total_bytes"], 16 * d["params"], 0.001)


def test_q10_advise_a_single_gpu_lora_job_stays_on_one_gpu():
    """"My LoRA run OOMs on a 4090, what do I change?" Without --allow-gpus, no row proposes more GPUs,
    and a change that fits is found (QLoRA with TRL's recipe)."""
    code, out, err = run_cli(["advise", "--model", "llama-3.1-8b", "--regime", "lora", "--batch", "4", "--seq", "2048",
                              "--gpu", "rtx-4090", "--json"])
    assert code == 0, err
    d = json.loads(out)
    rows = d["changes"]
    assert rows and any(r["fits"] for r in rows)
    for r in rows:
        assert "--gpus" not in r["args"], r
