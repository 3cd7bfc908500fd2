"""vLLM-faithful serving: max concurrency = floor(num_blocks / blocks per request) as vLLM computes it."""
import vramsym


def test_vllm_max_concurrency_matches_vllm_block_accounting(lib):
    m = vramsym.load_model("llama-3.1-8b")
    capacity = 81559 * 2**20          # H100 80GB as the driver reports it
    s = 4096
    sol = vramsym.solve("max_batch", capacity, m, "vllm", inputs={"seq": s}, library=lib)
    # vLLM's own arithmetic, written out independently of the formula files:
    requested = capacity * 9 // 10 + (capacity * 9 % 10) / 10           # gpu_memory_utilization = 0.9
    weights = 2 * 8_030_261_248
    h, I, V, nkv, d, L = 4096, 14336, 128256, 8, 128, 32
    profile = 8192 * 2 * (4 * h + 3 * I) + 256 * V * (2 + 4)             # 8192 batched tokens, 256 seqs of fp32 logits
    non_torch = 500 * 2**20
    available = requested - weights - profile - non_torch
    page = 16 * 2 * nkv * d * 2 * L                                      # one 16-token block in every layer, bf16
    num_blocks = int(available // page)
    assert sol.value == num_blocks // -(-s // 16)
    assert sol.estimate.binding.values["C_gpu"] == capacity


def test_vllm_blocks_round_up_per_request(lib):
    m = vramsym.load_model("llama-3.1-8b")
    one = vramsym.estimate(m, "vllm", inputs={"batch": 1, "seq": 17, "capacity": 80 * 10**9}, library=lib)
    kv = next(c for c in one.components if c.name == "vllm_kv_cache").bytes
    assert kv == 2 * 16 * 2 * 8 * 128 * 2 * 32                          # 17 tokens take two blocks
