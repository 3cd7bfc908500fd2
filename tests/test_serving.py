"""vLLM-faithful serving: max concurrency = floor(num_blocks / blocks per request) as vLLM computes it."""
from fractions import Fraction

import pytest

import vramsym


GIB = 2**30


def _kv_budget(est):
    """vLLM's available KV memory: utilization x what CUDA reports - (weights + peak + non-torch)."""
    comp = {c.name: c.bytes for c in est.all_components}
    v = est.binding.values
    requested = v["C_cuda"] * v["gpu_util"]
    return requested - comp["weights"] - comp["vllm_rope_cache"] - comp["vllm_profile_activations"] - comp["vllm_non_torch"]


def test_vllm_kv_budget_matches_llm_d_measured_h100_figures(lib):
    """llm-d-benchmark config_explorer/empirical-vllm-memory-results.md, Llama-3.1-8B on one H100
    (vLLM logs): total 79.18 GiB, utilization 0.9, weights 14.99 GiB, activation peak 4.76 GiB,
    non-torch 0.13 GiB, KV cache 51.38 GiB. The figure is derived, not fitted: the target is 0.5 GiB."""
    m = vramsym.load_model("llama-3.1-8b")
    r = vramsym.compile(m, "vllm", library=lib)
    # those runs used vLLM's default of the time, 0.9 (0.92 since vllm-project/vllm pull request 38284)
    est = r.evaluate(r.with_gpu({"batch": 1, "seq": 16000, "gpu_util": "9/10"}, "h100-sxm-80gb"))
    comp = {c.name: c.bytes for c in est.all_components}
    assert round(est.binding.values["C_cuda"] / GIB, 2) == 79.18
    assert abs((comp["weights"] + comp["vllm_rope_cache"]) / GIB - 14.99) < 0.01
    assert abs(comp["vllm_profile_activations"] / GIB - 4.76) < 0.1
    assert abs(_kv_budget(est) / GIB - 51.38) < 0.5
    # the case: 8192-token requests on an H100; vLLM holds 51
    sol = vramsym.solve("max_batch", "h100-sxm-80gb", m, "vllm", inputs={"seq": 8192, "gpu_util": "9/10"}, library=lib)
    assert sol.value == 51


def test_vllm_max_concurrency_matches_vllm_block_accounting(lib):
    m = vramsym.load_model("llama-3.1-8b")
    capacity = 81559 * 2**20          # a size, not a card name: all of it taken as visible to CUDA
    s = 4096
    sol = vramsym.solve("max_batch", capacity, m, "vllm", inputs={"seq": s}, library=lib)
    # vLLM's own arithmetic, written out independently of the formula files:
    requested = capacity * 23 // 25 + (capacity * 23 % 25) / 25         # gpu_memory_utilization = 0.92
    weights = 2 * 8_030_261_248 + 131072 * 128 * 2                      # parameters and the rotary cos/sin cache
    h, V, nkv, d, L = 4096, 128256, 8, 128, 32
    profile = 8192 * h * 2 + 1024 * V * (2 + 4 + 12 + 8 + 12)          # large GPU: 8192 tokens, 1024 sequences sorted
    non_torch = 139586437                                                # 0.13 GiB at TP=1
    available = requested - weights - profile - non_torch
    page = 16 * 2 * nkv * d * 2 * L                                      # one 16-token block in every layer, bf16
    num_blocks = int(available // page)
    assert sol.value == num_blocks // -(-s // 16)
    assert sol.estimate.binding.values["C_gpu"] == capacity


def test_vllm_tensor_parallel_splits_kv_and_counts_nccl(lib):
    m = vramsym.load_model("llama-3.1-70b")
    one = vramsym.solve("max_batch", "h100-sxm-80gb", m, "vllm", inputs={"seq": 8192, "tp": 4}, library=lib)
    comp = {c.name: c.bytes for c in one.estimate.all_components}
    assert comp["vllm_non_torch"] == 590558003                           # 0.55 GiB with NCCL at TP > 1
    assert comp["weights"] < 2 * 70.6e9 / 4 * 1.01                       # a quarter of the weights per GPU
    eight = vramsym.solve("max_batch", "h100-sxm-80gb", m, "vllm", inputs={"seq": 8192, "tp": 8}, library=lib)
    assert eight.value > 2 * one.value                                   # KV heads split too (8 KV heads over 8 GPUs)


def test_a100_80gb_takes_vllm_small_defaults(lib):
    m = vramsym.load_model("llama-3.1-8b")
    r = vramsym.compile(m, "vllm", library=lib)
    a100 = r.evaluate(r.with_gpu({"batch": 1, "seq": 1024}, "a100-80gb")).binding.values
    h100 = r.evaluate(r.with_gpu({"batch": 1, "seq": 1024}, "h100-sxm-80gb")).binding.values
    assert (a100["t_prof"], a100["n_prof"]) == (2048, 256)
    assert (h100["t_prof"], h100["n_prof"]) == (8192, 1024)


def test_vllm_blocks_round_up_per_request(lib):
    m = vramsym.load_model("llama-3.1-8b")
    one = vramsym.estimate(m, "vllm", inputs={"batch": 1, "seq": 17, "capacity": 80 * 10**9}, library=lib)
    kv = next(c for c in one.all_components if c.name == "vllm_kv_cache").bytes
    assert kv == 2 * 16 * 2 * 8 * 128 * 2 * 32                          # 17 tokens take two blocks



def _vllm_blocks_per_request(kinds, window, s, block=16, batched=8192):
    """vLLM's hybrid KV cache manager, transcribed from v1/core/kv_cache_utils.py independently of
    formulas/serving.vram: ``kinds`` is each layer's spec ('full' or 'sliding'), grouped by
    _get_kv_cache_groups_uniform_page_size (group size: the fewest layers of a kind, or the most when
    max < 1.5 x min; cdiv(n, group_size) groups of each kind); a request of ``s`` tokens takes
    cdiv(s, block) blocks per full group and cdiv(min(window - 1 + max_num_batched_tokens, s), block) + 1
    per sliding group (SlidingWindowSpec.max_memory_usage_bytes). Returns (group size, groups, blocks)."""
    counts = {k: kinds.count(k) for k in set(kinds)}
    if len(counts) == 1:                                   # _get_kv_cache_config_uniform_type
        size, groups = len(kinds), {kinds[0]: 1}
    else:
        size = min(counts.values())
        if max(counts.values()) < size * 1.5:
            size = max(counts.values())
        groups = {k: -(-n // size) for k, n in counts.items()}
    need = {"full": -(-s // block),
            "sliding": -(-min(window - 1 + batched, s) // block) + 1 if window else None}
    return size, sum(groups.values()), sum(n * need[k] for k, n in groups.items())


def _vllm_kinds(name):
    """Each layer's vLLM spec, from transformers' own config class (not vramsym's sliding rules): the
    layers its layer_types call sliding, every layer where the config has a window but no layer_types
    (vLLM's model-wide cache_config.sliding_window: Mistral 7B v0.1), and chunked layers paged whole
    (the hybrid manager is off for chunked local attention by default)."""
    from transformers import AutoConfig
    raw = dict(vramsym.load_model(name).raw_config)
    cfg = AutoConfig.for_model(**raw)
    cfg = cfg.get_text_config()
    types = getattr(cfg, "layer_types", None)
    window = getattr(cfg, "sliding_window", None)
    if not types:
        types = ["sliding_attention" if window else "full_attention"] * cfg.num_hidden_layers
    return ["sliding" if t == "sliding_attention" else "full" for t in types], window


@pytest.mark.parametrize("name", ["gemma-3-27b", "gemma-3-1b", "gemma-2-9b", "gpt-oss-20b", "gpt-oss-120b",
                                  "mistral-7b-v0.1", "command-r7b", "olmo-3-7b", "llama-4-scout",
                                  "llama-3.1-8b", "qwen2.5-7b"])
@pytest.mark.parametrize("s", [700, 32768])
def test_vllm_pages_sliding_window_layers_by_their_window_as_its_hybrid_manager_does(lib, name, s):
    """A sliding-window layer keeps only its window's blocks in vLLM (Gemma 3 27B at 32k on an H100:
    2,048 blocks for its 10 full layers and 577 for each of its 6 groups of sliding ones, 1.90x
    concurrency where every layer paged whole gave 0.55x); the pool's block is one page of every
    layer of a group."""
    pytest.importorskip("transformers")
    m = vramsym.load_model(name)
    kinds, window = _vllm_kinds(name)
    size, groups, per_request = _vllm_blocks_per_request(kinds, window, s)
    r = vramsym.compile(m, "vllm", library=lib)
    est = r.evaluate(r.with_gpu({"batch": 1, "seq": s}, "h100-sxm-80gb"))      # a large GPU: 8,192 batched tokens
    v = est.binding.values
    assert (v["G_vllm"], v["n_full_vllm"] + v["n_swa_vllm"], v["blk_req_vllm"]) == (size, groups, per_request)
    kv = next(c for c in est.all_components if c.name == "vllm_kv_cache").bytes
    elements = 2 * v["n_kv"] * v["d_head"]
    assert kv == per_request * size * 16 * elements * 2                  # bf16 pages of one group's layers
    pool = est.kv_pool(v["C_gpu"])
    assert pool["kv_groups"] == groups and pool["blocks_per_request"] == per_request
    assert pool["kv_cache_tokens"] == pool["num_blocks"] // groups * 16   # _report_kv_cache_config
    if name == "gemma-3-27b" and s == 32768:
        assert (size, groups, per_request) == (10, 7, 2048 + 6 * 577)

# SGLang: python/sglang/srt/server_args.py ServerArgs._handle_gpu_memory_settings (the default
# mem_fraction_static from the card) and the KV pool's size (model_runner profile_max_num_token /
# KVCacheConfigurator._profile_available_bytes). Each golden value below is SGLang's own arithmetic,
# written out from those functions, independently of formulas/serving.vram.

def _sglang_fraction(gpu_mib, tp=1, chunked=None, graph_bs=None):
    """SGLang's default mem_fraction_static for a card of ``gpu_mib`` (nvidia-smi memory.total)."""
    if chunked is None:
        chunked = 2048 if gpu_mib < 35 * 1024 else 4096 if gpu_mib < 60 * 1024 else 8192 if gpu_mib < 160 * 1024 else 16384
    if graph_bs is None:
        graph_bs = (8 if gpu_mib < 20 * 1024 else (80 if tp >= 4 else 24) if gpu_mib < 35 * 1024
                    else (160 if tp >= 4 else 32) if gpu_mib < 60 * 1024 else (512 if tp >= 4 else 256) if gpu_mib < 160 * 1024
                    else 512)
    reserved = 512 + max(chunked, 2048) * 1.5 + graph_bs * 2 + tp * 1 / 8 * 1024
    if gpu_mib > 60 * 1024:
        reserved = max(reserved, 10 * 1024)
    return round((gpu_mib - reserved) / gpu_mib, 3)


@pytest.mark.parametrize("card,gpu_mib,cuda_total,fraction", [
    ("rtx-4090", 24564, 24564 * 2**20, 0.847),          # 24 GB class: reserved 512 + 3072 + 48 + 128 MiB
    ("h100-sxm-80gb", 81559, 85020639232, 0.835),      # 80 GB class: 512 + 12288 + 512 + 128 MiB
    ("h200-141gb", 143771, 150120431616, 0.907),       # 141 GB class: the same 13,440 MiB
])
def test_sglang_sizes_its_pool_as_its_server_args_and_model_runner_do(lib, card, gpu_mib, cuda_total, fraction):
    m = vramsym.load_model("llama-3.1-8b")
    assert _sglang_fraction(gpu_mib) == fraction
    r = vramsym.compile(m, "sglang", library=lib)
    est = r.evaluate(r.with_gpu({"batch": 1, "seq": 4096}, card))
    v = est.binding.values
    assert v["f_sgl"] == Fraction(fraction).limit_denominator(1000) and v["G_sgl"] == gpu_mib
    # max_total_num_tokens = (free before load x fraction - weights) // cell, page size 1
    free_before = cuda_total - 500 * 2**20                               # less the CUDA context (cuda_ctx)
    weights = 2 * 8_030_261_248 + 131072 * 128 * 2                        # parameters and the rotary cos/sin cache
    cell = 8 * (128 + 128) * 32 * 2                                      # kv heads x (head_dim + v_head_dim) x layers x bf16
    tokens = (free_before * Fraction(fraction).limit_denominator(1000) - weights) // cell
    for s in (1024, 4096, 32768):
        sol = vramsym.solve("max_batch", card, m, "sglang", inputs={"seq": s}, library=lib)
        assert sol.value == tokens // s


def test_sglang_keeps_10_gib_on_a_large_card_and_takes_the_flags_given(lib):
    """The 10 GiB floor of reserved memory on cards above 60 GiB: with --chunked-prefill-size 2048 an
    H100's reserve would be 4,224 MiB, and SGLang keeps 10,240; --mem-fraction-static wins over all."""
    m = vramsym.load_model("llama-3.1-8b")
    r = vramsym.compile(m, "sglang", library=lib)
    v = r.evaluate(r.with_gpu({"batch": 1, "seq": 1024, "chunked_prefill_size": 2048}, "h100-sxm-80gb")).binding.values
    assert v["f_sgl"] == Fraction(_sglang_fraction(81559, chunked=2048)).limit_denominator(1000) == Fraction(874, 1000)
    v = r.evaluate(r.with_gpu({"batch": 1, "seq": 1024, "mem_fraction_static": "9/10"}, "h100-sxm-80gb")).binding.values
    assert v["f_sgl"] == Fraction(9, 10)


def test_sglang_refuses_what_its_pool_formula_does_not_hold(lib):
    for name in ("gemma-3-12b", "qwen3-next-80b-a3b", "deepseek-v3.2"):
        with pytest.raises(vramsym.InputError, match="regime 'sglang' does not model"):
            vramsym.solve("max_batch", "h100-sxm-80gb", vramsym.load_model(name), "sglang", inputs={"seq": 1024}, library=lib)


# TensorRT-LLM (PyTorch backend): tensorrt_llm/_torch/pyexecutor/_util.py KvCacheCreator._cal_max_memory
# (available_kv_mem = (total_gpu_memory - peak_memory + allocated_bytes) * free_gpu_memory_fraction) and
# resource_manager.py KVCacheManager (bytes per token, blocks of tokens_per_block). The peak is the dry
# run's (weights, a forward of max_num_tokens = 8192 tokens) with the CUDA context as its extra cost.

@pytest.mark.parametrize("card,cuda_total", [
    ("rtx-4090", 24564 * 2**20),
    ("h100-sxm-80gb", 85020639232),
    ("h200-141gb", 150120431616),
])
def test_trtllm_sizes_its_kv_blocks_as_its_kv_cache_creator_does(lib, card, cuda_total):
    m = vramsym.load_model("llama-3.1-8b")
    h, I, n_q, n_kv, d, L = 4096, 14336, 32, 8, 128, 32
    weights = 2 * 8_030_261_248
    peak = weights + 8192 * 2 * (4 * h + max(3 * I, (2 * n_q + 2 * n_kv) * d))     # the dry run of 8192 tokens
    extra = 500 * 2**20                                                              # the CUDA context (non-torch)
    budget = (cuda_total - peak - extra) * Fraction(9, 10)
    per_token = 2 * L * n_kv * d * 2                                                 # kv_factor x layers x kv heads x head_dim x bf16
    blocks = int(budget // per_token) // 32
    for s in (1000, 4096, 32768):
        sol = vramsym.solve("max_batch", card, m, "trtllm", inputs={"seq": s}, library=lib)
        assert sol.value == blocks // -(-s // 32)
    # the flags the engine takes: free_gpu_memory_fraction, tokens_per_block, max_num_tokens
    sol = vramsym.solve("max_batch", card, m, "trtllm", inputs={"seq": 4096, "free_gpu_memory_fraction": "1/2",
                                                                 "tokens_per_block": 64, "max_num_tokens": 2048}, library=lib)
    peak2 = weights + 2048 * 2 * (4 * h + max(3 * I, (2 * n_q + 2 * n_kv) * d))
    assert sol.value == int((cuda_total - peak2 - extra) * Fraction(1, 2) // per_token) // 64 // (4096 // 64)


def test_trtllm_refuses_what_its_block_formula_does_not_hold(lib):
    for name in ("gemma-3-12b", "qwen3-next-80b-a3b", "deepseek-v3.2"):
        with pytest.raises(vramsym.InputError, match="regime 'trtllm' does not model"):
            vramsym.solve("max_batch", "h100-sxm-80gb", vramsym.load_model(name), "trtllm", inputs={"seq": 1024}, library=lib)


# Ollama: llama-server with -c num_ctx x num_parallel and -np num_parallel, --fit placing the layers
# (Ollama server/routes.go Serve: the default num_ctx from the GPUs' total memory; llm/llama_server.go
# startLlamaServer; llama.cpp common/common.h fit_params_target = 1 GiB).

@pytest.mark.parametrize("card,model,num_ctx", [
    ("rtx-3060-12gb", "llama-3.1-8b", 4096),        # below 23 GiB
    ("rtx-4090", "llama-3.1-8b", 32768),            # 23.99 GiB: at least 23 GiB
    ("h100-sxm-80gb", "llama-3.1-8b", 131072),      # 262144 from the card, capped at the trained 131072
    ("h100-sxm-80gb", "mistral-7b-v0.3", 32768),    # capped at its 32768 positions
])
def test_ollama_picks_its_context_from_the_card_and_caps_it_at_the_trained_one(lib, card, model, num_ctx):
    m = vramsym.load_model(model)
    r = vramsym.compile(m, "ollama", library=lib)
    est = r.evaluate(r.with_gpu({}, card))
    v = est.binding.values
    assert v["num_ctx"] == num_ctx and v["num_parallel"] == 1
    kv = next(c for c in est.all_components if c.name == "lcpp_kv_cache").bytes
    plain = vramsym.estimate(m, "llama_cpp", options={"quant": "q4_k_m"},
                             inputs={"batch": 1, "seq": num_ctx, "gpu_layers": v["n_gpu_layers"]}, library=lib)
    assert kv == next(c for c in plain.all_components if c.name == "lcpp_kv_cache").bytes
    assert next(c for c in est.all_components if c.name == "lcpp_fit_target").bytes == 2**30


@pytest.mark.parametrize("target,card,model,inputs", [
    ("max_gpu_layers", "rtx-4090", "llama-3.1-70b", {}),
    ("max_gpu_layers", "rtx-3060-12gb", "llama-3.1-8b", {"num_ctx": 131072}),
    ("max_num_ctx", "rtx-3060-12gb", "llama-3.1-8b", {}),
    ("max_num_ctx", "rtx-4090", "llama-3.1-8b", {"num_parallel": 4}),
])
def test_ollama_solves_fit_and_one_more_does_not(lib, target, card, model, inputs):
    """`solve max_gpu_layers --regime ollama` gives the layers llama-server's --fit offloads (its 1 GiB
    kept free) and `solve max_num_ctx` the longest context with every layer on the GPU: the answer's own
    estimate fits, one more does not."""
    m = vramsym.load_model(model)
    sol = vramsym.solve(target, card, m, "ollama", inputs=inputs, library=lib)
    cap = sol.capacity_bytes
    assert sol.estimate.total_bytes <= cap < sol.next_total_bytes
    name = target[4:]
    r = vramsym.compile(m, "ollama", library=lib)
    one_more = r.evaluate(r.with_gpu(dict(inputs, **{name: sol.value + 1}), card))
    assert one_more.total_bytes > cap
    if target == "max_gpu_layers":    # the same answer as llama.cpp given Ollama's -c and --fit on
        plain = vramsym.solve("max_gpu_layers", card, m, "llama_cpp", options={"fit": "on", "quant": "q4_k_m"},
                              inputs={"batch": 1, "seq": sol.estimate.binding.values["num_ctx"]}, library=lib)
        assert plain.value == sol.value


def test_max_ctx_is_the_context_of_a_slot_in_llama_cpp_and_ollama(lib):
    """`solve max_ctx`: llama.cpp's -c per slot, which is Ollama's num_ctx and the llama_cpp regime's sequence."""
    m = vramsym.load_model("llama-3.1-8b")
    ctx = vramsym.solve("max_ctx", "rtx-3060-12gb", m, "ollama", library=lib)
    assert ctx.value == vramsym.solve("max_num_ctx", "rtx-3060-12gb", m, "ollama", library=lib).value < 131072
    seq = vramsym.solve("max_ctx", "rtx-3060-12gb", m, "llama_cpp", options={"quant": "q4_k_m"}, inputs={"batch": 1}, library=lib)
    assert seq.value == vramsym.solve("max_seq", "rtx-3060-12gb", m, "llama_cpp", options={"quant": "q4_k_m"},
                                      inputs={"batch": 1}, library=lib).value


def test_vllm_group_counts_given_by_hand_are_refused_when_they_leave_no_group(lib):
    """A pool of no KV-cache group has no blocks to count: refused with the bound's sentence, never a
    division by zero in vLLM's log lines."""
    m = vramsym.load_model("gemma-3-27b")
    r = vramsym.compile(m, "vllm", library=lib)
    with pytest.raises(vramsym.InputError, match="n_swa_vllm .* must be at least"):
        r.evaluate(r.with_gpu({"batch": 1, "seq": 4096, "n_full_vllm": 0, "n_swa_vllm": 0, "blk_req_vllm": 5},
                              "h100-sxm-80gb"))
