"""Domain rules as data: the layer rules that formulas/architectures.json selects per model_type,
the quantization_config table of formulas/quantization.json and the number-format aliases of
formulas/number_formats.json, checked against counts and choices worked out by hand from the
cited sources."""
import json
import os
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vramsym.catalog import checkpoints as C
from vramsym.catalog import dtypes
from vramsym.catalog import models as M
from vramsym.catalog.checkpoints import Tensor

FORMULAS = os.path.join(os.path.dirname(__file__), "..", "formulas")


def load(name):
    with open(os.path.join(FORMULAS, name), encoding="utf-8") as f:
        return json.load(f)


def counts(cfg):
    d = M._derived(dict(cfg))
    return d["arch_moe_layers"], d["arch_sliding_layers"]


# ---- layer rules ----

# (config, expected (MoE layers, sliding layers), how the expectation follows from the source)
CASES = [
    # modeling_gemma2 / configuration_gemma2.py: layer i slides when (i + 1) % 2 -> layers 0, 2, ..., 40 of 42
    ({"model_type": "gemma2", "num_hidden_layers": 42, "sliding_window": 4096}, (0, 21), "gemma2 alternate, even L"),
    ({"model_type": "gemma2", "num_hidden_layers": 5, "sliding_window": 4096}, (0, 3), "gemma2: layers 0, 2, 4"),
    ({"model_type": "gemma2", "num_hidden_layers": 42}, (0, 0), "no sliding_window: nothing slides"),
    # configuration_gemma3.py: layer i is global when (i + 1) % pattern == 0: 62 layers, pattern 6 -> 10 global
    ({"model_type": "gemma3_text", "num_hidden_layers": 62, "sliding_window": 1024, "sliding_window_pattern": 6},
     (0, 52), "gemma3 every 6th global"),
    ({"model_type": "gemma3_text", "num_hidden_layers": 34, "sliding_window": 1024}, (0, 29),
     "gemma3 default pattern 6: 5 global of 34"),
    ({"model_type": "gemma3", "num_hidden_layers": 12, "sliding_window": 512, "sliding_window_pattern": 4}, (0, 9),
     "gemma3 (multimodal type): pattern 4 -> layers 3, 7, 11 global"),
    ({"model_type": "gemma3_text", "num_hidden_layers": 12, "sliding_window": 512, "sliding_window_pattern": 0},
     (0, 10), "pattern 0 is malformed: the default 6"),
    # configuration_qwen2.py: sliding when use_sliding_window and i >= max_window_layers
    ({"model_type": "qwen2", "num_hidden_layers": 28, "sliding_window": 4096, "use_sliding_window": True,
      "max_window_layers": 21}, (0, 7), "qwen2 layers 21..27 slide"),
    ({"model_type": "qwen2", "num_hidden_layers": 28, "sliding_window": 4096, "use_sliding_window": False,
      "max_window_layers": 21}, (0, 0), "qwen2 without use_sliding_window"),
    ({"model_type": "qwen2", "num_hidden_layers": 28, "sliding_window": 4096, "use_sliding_window": True}, (0, 0),
     "qwen2 without max_window_layers: read as L"),
    ({"model_type": "qwen2", "num_hidden_layers": 28, "sliding_window": 4096, "use_sliding_window": True,
      "max_window_layers": 40}, (0, 0), "max_window_layers above L"),
    ({"model_type": "qwen3", "num_hidden_layers": 36, "sliding_window": 4096, "use_sliding_window": True,
      "max_window_layers": 0}, (0, 36), "qwen3: every layer from 0"),
    # modeling_mistral / modeling_mixtral: every layer takes config.sliding_window
    ({"model_type": "mistral", "num_hidden_layers": 32, "sliding_window": 4096}, (0, 32), "mistral all"),
    ({"model_type": "mistral", "num_hidden_layers": 32, "sliding_window": None}, (0, 0), "mistral v0.3: null window"),
    ({"model_type": "mixtral", "num_hidden_layers": 32, "sliding_window": 4096, "num_local_experts": 8}, (32, 32),
     "mixtral: every layer MoE and sliding"),
    ({"model_type": "llama", "num_hidden_layers": 32, "sliding_window": 4096}, (0, 0), "llama has no sliding rule"),
    # layer_types (transformers >= 4.53) wins over every pattern
    ({"model_type": "gemma2", "num_hidden_layers": 4, "sliding_window": 64,
      "layer_types": ["full_attention", "sliding_attention", "sliding_attention", "sliding_attention"]}, (0, 3),
     "layer_types counts its sliding_attention entries"),
    ({"model_type": "llama", "num_hidden_layers": 3, "layer_types": ["sliding_attention"] * 3}, (0, 3),
     "layer_types without sliding_window still counts"),
    # modeling_deepseek_v3.py: MoE when i >= first_k_dense_replace (and i % moe_layer_freq == 0)
    ({"model_type": "deepseek_v3", "num_hidden_layers": 61, "n_routed_experts": 256, "first_k_dense_replace": 3,
      "moe_layer_freq": 1}, (58, 0), "deepseek-v3: 3 dense, 58 MoE"),
    ({"model_type": "deepseek_v3", "num_hidden_layers": 10, "n_routed_experts": 8, "first_k_dense_replace": 1,
      "moe_layer_freq": 2}, (4, 0), "layers 2, 4, 6, 8"),
    ({"model_type": "deepseek_v3", "num_hidden_layers": 10, "n_routed_experts": 8}, (10, 0),
     "no first_k_dense_replace: every layer"),
    ({"model_type": "deepseek_v3", "num_hidden_layers": 10, "n_routed_experts": 0, "first_k_dense_replace": 1}, (0, 0),
     "no routed experts: no MoE layer"),
    ({"model_type": "kimi_k2", "num_hidden_layers": 10, "n_routed_experts": 8, "first_k_dense_replace": 4}, (6, 0),
     "an unknown type with first_k_dense_replace counts as DeepSeek"),
    # modeling_qwen2_moe.py / modeling_qwen3_moe.py: MoE when i not in mlp_only_layers and (i + 1) % step == 0
    ({"model_type": "qwen3_moe", "num_hidden_layers": 48, "num_experts": 128, "decoder_sparse_step": 1,
      "mlp_only_layers": []}, (48, 0), "qwen3-30b-a3b"),
    ({"model_type": "qwen3_moe", "num_hidden_layers": 48, "num_experts": 128, "decoder_sparse_step": 1,
      "mlp_only_layers": [0, 5, 47, 48, -1]}, (45, 0), "three listed layers are dense (48 and -1 are not layers)"),
    ({"model_type": "qwen2_moe", "num_hidden_layers": 24, "num_experts": 60, "decoder_sparse_step": 2,
      "mlp_only_layers": [0, 1, 3]}, (10, 0), "step 2: layers 1, 3, ..., 23 (12), less 1 and 3"),
    ({"model_type": "qwen2_moe", "num_hidden_layers": 24, "num_experts": 60}, (24, 0), "no step: every layer"),
    ({"model_type": "mixtral", "num_hidden_layers": 8, "num_local_experts": 8, "decoder_sparse_step": 4}, (2, 0),
     "an unlisted MoE type with decoder_sparse_step counts as Qwen: layers 3, 7"),
    # closed form: a claimed 10^15 layers costs nothing
    ({"model_type": "gemma2", "num_hidden_layers": 10**15, "sliding_window": 4096}, (0, 5 * 10**14), "huge L"),
    ({"model_type": "deepseek_v3", "num_hidden_layers": 10**15, "n_routed_experts": 8, "first_k_dense_replace": 1,
      "moe_layer_freq": 3}, ((10**15 - 1) // 3, 0), "huge L, layers 3, 6, 9, ..."),
]


@pytest.mark.parametrize("cfg,expected,why", CASES, ids=[c[2] for c in CASES])
def test_layer_rules_hand_counts(cfg, expected, why):
    assert counts(cfg) == expected, why


def test_catalog_models_counts():
    """The published configs, counted by hand from the rules above."""
    expected = {"deepseek-v3": (58, 0), "gemma-2-27b": (0, 23), "gemma-2-9b": (0, 21), "gemma-3-27b": (0, 52),
                "gemma-3-4b": (0, 29), "mistral-7b-v0.1": (0, 32), "mistral-7b-v0.3": (0, 0),
                "mixtral-8x7b": (32, 0), "qwen3-30b-a3b": (48, 0), "qwen2.5-7b": (0, 0),
                "phi-3-mini-4k": (0, 32),    # sliding_window 2047 and sliding_rule 'all': every layer slides
                "gemma-2-2b": (0, 13),       # 26 layers alternating, the even-indexed ones slide
                "gemma-3-1b": (0, 22), "gemma-3-12b": (0, 40),    # every sixth layer full: 26 - 4, 48 - 8
                "gpt-oss-20b": (24, 12), "gpt-oss-120b": (36, 18),   # every layer MoE; layer_types alternate
                "qwen3-235b-a22b": (94, 0), "mixtral-8x22b": (56, 0),
                "gemma-4-e2b": (0, 28), "gemma-4-e4b": (0, 35),    # 4 and 5 sliding per full layer
                "gemma-3n-e2b": (0, 24), "gemma-3n-e4b": (0, 28),  # every fifth layer full: 30 - 6, 35 - 7
                "kimi-k2": (60, 0), "deepseek-v3.2": (58, 0), "glm-4.5-air": (45, 0),    # all but the first k dense
                "phi-4-mini": (0, 32), "ministral-8b": (0, 36),    # a sliding_window set: every layer (sliding_rule 'all')
                "llama-4-scout": (48, 36), "qwen3-next-80b-a3b": (48, 0),    # every layer MoE; Scout: every fourth layer a global NoPE one (an empty no_rope_layers list is the default pattern), the rest chunked
                "granite-4.0-h-small": (40, 0), "qwen3.5-35b-a3b": (40, 0), "jamba-v0.1": (16, 0),    # Jamba: every other
                "smollm3-3b": (0, 0), "olmo-2-13b": (0, 0),    # no sliding_window: SmolLM3's use_sliding_window false
                "command-r7b": (0, 24),     # 32 layers, sliding_window_pattern 4: every fourth global, 32 - 8 slide
                "olmo-3-7b": (0, 24), "olmo-3-32b": (0, 48)}   # layer_types: three sliding then one full
    for name in M.catalog():
        c = M.load_model(name).config
        got = (c["arch_moe_layers"], c["arch_sliding_layers"])
        assert got == expected.get(name, (0, 0)), name
        assert not any(k in c for k in M.RULE_KEYS), name      # rules are not config fields
    # the layers that reuse KV: E2B's last 20 of (4 sliding + 1 full) x 7 are 16 + 4, E4B's last 18 of (5 + 1) x 7 are 15 + 3
    # Gemma 3n E2B's last 10 of (4 sliding + 1 full) x 6 are 8 + 2, E4B's last 15 of x 7 are 12 + 3
    for name, shared in {"gemma-4-e2b": (20, 16), "gemma-4-e4b": (18, 15), "gemma-3n-e2b": (10, 8),
                         "gemma-3n-e4b": (15, 12)}.items():
        c = M.load_model(name).config
        assert (c["arch_kv_shared_layers"], c["arch_kv_shared_sliding"]) == shared, name



@pytest.mark.parametrize("L,shared,types,expected", [
    (8, 2, None, (6, 1)),          # layers 0-4 slide, 5 full, 6 slides, 7 is forced full: 6 sliding, 1 of the last 2
    (12, 0, None, (10, 0)),        # every sixth layer full, none shared
    (7, 3, ["sliding_attention"] * 7, (6, 2)),   # a listed pattern whose last layer the config class forces to full
    (6, 6, None, (5, 5)),          # every layer reuses (the class reads them all as 'reuse')
])
def test_gemma4_shared_and_forced_last_layer_counts(L, shared, types, expected):
    cfg = {"model_type": "gemma4_text", "num_hidden_layers": L, "num_kv_shared_layers": shared, "sliding_window": 8}
    if types is not None:
        cfg["layer_types"] = types
    c = M._derived(cfg)
    assert (c["arch_sliding_layers"], c["arch_kv_shared_sliding"]) == expected

def test_huge_layer_counts_are_closed_form():
    t = time.perf_counter()
    for cfg in ({"model_type": "qwen3_moe", "num_hidden_layers": 10**15, "num_experts": 8, "decoder_sparse_step": 7,
                 "mlp_only_layers": [6, 13]},
                {"model_type": "gemma3_text", "num_hidden_layers": 10**15, "sliding_window": 8},
                {"model_type": "qwen2", "num_hidden_layers": 10**15, "sliding_window": 8, "use_sliding_window": True,
                 "max_window_layers": 10},
                # the last recurrent layer and the first attention layer of a hybrid, and of a model with none
                {"model_type": "jamba", "num_hidden_layers": 10**15, "attn_layer_period": 8, "attn_layer_offset": 4,
                 "num_experts": 16, "expert_layer_period": 2, "expert_layer_offset": 1},
                {"model_type": "llama", "num_hidden_layers": 10**12}):
        M._derived(cfg)
    assert time.perf_counter() - t < 1


def _scanned(cfg, kinds, top):
    """The layer-by-layer answer the bisection must give: the index of the last (top) or first layer
    that one of the rules of these kinds counts, or None."""
    arch = M._architectures()
    rules = [M._rules(arch, cfg["model_type"], k) for k in kinds]
    L = cfg["num_hidden_layers"]
    hit = [i for i in range(L) if any(M._prefix_count(cfg, i + 1, r) > M._prefix_count(cfg, i, r) for r in rules)]
    return (hit[-1] if top else hit[0]) if hit else None


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(["linear_attention", "full_attention"]), min_size=1, max_size=40),
       st.sampled_from(["qwen3_5_text", "qwen3_next"]))
def test_the_last_recurrent_and_first_attention_layers_are_those_a_scan_finds(types, mt):
    """_derived finds them by bisection (a config may name 10^12 layers); on any layer pattern it agrees with
    the scan of every layer."""
    cfg = {"model_type": mt, "num_hidden_layers": len(types), "layer_types": types}
    d = M._derived(dict(cfg))
    last, first = _scanned(cfg, ["ssm", "gdn"], True), _scanned(cfg, ["attn"], False)
    L = len(types)
    assert d["arch_layers_up"] == L - (L if first is None else first)
    if last is None:
        assert "arch_attn_above_rec" not in d
    else:
        assert d["arch_attn_above_rec"] == types[last + 1:].count("full_attention")
        assert d["arch_ffn_above_rec"] == L - last


def test_every_rule_in_the_data_is_known_and_cited():
    arch = load("architectures.json")
    seen = set()
    for mt, entry in arch.items():
        if mt.startswith("_"):
            continue
        for key in M.RULE_KEYS[:-1]:
            rules = entry.get(key)
            if rules is None:
                continue
            for r in rules if isinstance(rules, list) else [rules]:
                assert r["rule"] in M.LAYER_RULES, (mt, r)
                assert r.get("source"), (mt, key, r)
                seen.add(r["rule"])
                # the parameters each rule reads are present
                need = {"every_nth_global": ("default_period",), "after_max_window_layers": ("from",),
                        "layer_types": ("from", "match"), "first_k_dense": ("k_from", "freq_from"),
                        "sparse_step": ("step_from", "except_from")}.get(r["rule"], ())
                assert all(k in r for k in need), (mt, r)
    assert seen == set(M.LAYER_RULES)


def test_an_underscore_model_type_is_unknown_not_a_crash():
    cfg = {"model_type": "_comment", "num_hidden_layers": 2, "hidden_size": 8}
    with pytest.raises(M.InputError, match="'_comment' .* is not in formulas/architectures.json"):
        M._spec(cfg, "x", "test")
    spec = M._spec(cfg, "x", "test", assume="llama")
    assert "not in formulas/architectures.json" in spec.approximate


def test_rules_only_entry_gives_no_facts():
    cfg = {"model_type": "gemma3", "num_hidden_layers": 12, "sliding_window": 512}
    with pytest.raises(M.InputError, match="'gemma3' .*nearest supported family: gemma3_text"):
        M._spec(cfg, "x", "test")           # rules only: the model_type still counts as unknown
    spec = M._spec(cfg, "x", "test", assume="llama")
    assert spec.config["arch_sliding_layers"] == 10
    assert spec.config["arch_norms_per_layer"] == 2          # the default's, as for any unknown type
    assert "'gemma3' is not in formulas/architectures.json" in spec.approximate


def test_an_entry_like_another_takes_its_keys_and_replaces_its_own(monkeypatch, tmp_path):
    # formulas/architectures.json 'like': FalconMamba is Mamba's structure with its own source
    arch = M._architectures()
    assert arch["falcon_mamba"]["arch_ssm"] == arch["mamba"]["arch_ssm"] == "mamba"
    assert arch["falcon_mamba"]["source"] != arch["mamba"]["source"]
    assert "like" not in arch["falcon_mamba"]
    # a 'like' naming an entry that is itself 'like' another (or none) is refused when the file is read
    data = json.loads(M.read_text(os.path.join(M.formulas_path(), "architectures.json")))
    data["x_like"] = {"like": "falcon_mamba_missing"}
    monkeypatch.setattr(M, "read_text", lambda path: json.dumps(data))
    monkeypatch.setattr(M, "_ARCHITECTURES", {})
    with pytest.raises(M.InputError, match="'x_like' is like 'falcon_mamba_missing', which is not an entry of its own"):
        M._architectures()
    # a chain is refused wherever it stands in the file (falcon_mamba is itself 'like' mamba)
    for first in (True, False):
        data = json.loads(M.read_text(os.path.join(M.formulas_path(), "architectures.json")))
        chain = {"like": "falcon_mamba"}
        data = {"x_chain": chain, **data} if first else {**data, "x_chain": chain}
        monkeypatch.setattr(M, "read_text", lambda path, d=data: json.dumps(d))
        monkeypatch.setattr(M, "_ARCHITECTURES", {})
        with pytest.raises(M.InputError, match="'x_chain' is like 'falcon_mamba', which is not an entry of its own"):
            M._architectures()


# ---- quantization_config ----

def quant(qc, *tensors):
    return C.quantization({"quantization_config": qc}, [Tensor(n, d, [1], 1, "f") for n, d in tensors])


def test_quant_choices_are_choices_of_the_quant_option():
    from vramsym import load_library
    choices = set(load_library().options["quant"].choices)
    table = load("quantization.json")["methods"]
    for method, spec in table.items():
        assert spec.get("source"), method
        for case in spec["cases"]:
            assert case["quant"] in choices, (method, case["quant"])
            assert case.get("source") and case["confirm"].get("what"), (method, case)


@pytest.mark.parametrize("qc,tensors,expected", [
    # GPTQConfig / AutoGPTQ: 4-bit qweight int32
    ({"quant_method": "gptq", "bits": 4, "group_size": 128}, [("l.qweight", "I32")], ("gptq", 128)),
    ({"quant_method": "awq", "w_bit": 4, "q_group_size": 64}, [("l.qweight", "I32")], ("awq", 64)),
    ({"quant_method": "bitsandbytes", "_load_in_4bit": True, "bnb_4bit_use_double_quant": True},
     [("l.weight.absmax", "F32")], ("nf4_dq", None)),
    ({"quant_method": "bitsandbytes", "load_in_4bit": True}, [("l.weight.quant_state.bitsandbytes__nf4", "U8")],
     ("nf4", None)),
    ({"quant_method": "bitsandbytes", "load_in_8bit": True}, [("l.SCB", "F32")], ("int8", None)),
    ({"quant_method": "compressed-tensors", "config_groups": {"g": {"weights": {"num_bits": 8, "type": "float"}}}},
     [("l.weight", "F8_E4M3")], ("fp8", None)),
    ({"quant_method": "compressed-tensors", "config_groups": {"g": {"weights": {"num_bits": 8, "type": "int"}}}},
     [("l.weight", "I8")], ("int8", None)),
    ({"quant_method": "compressed-tensors",
      "config_groups": {"a": {"targets": ["Linear"]}, "g": {"weights": {"num_bits": 4, "type": "int", "group_size": 32}}}},
     [("l.weight_packed", "I32")], ("gptq", 32)),
    ({"quant_method": "FBGEMM_FP8"}, [("l.weight", "F8_E4M3")], ("fp8", None)),
    ({"quant_method": "mxfp4"}, [("l.gate_up_proj_blocks", "U8")], ("mxfp4", None)),
])
def test_quantization_table_choices(qc, tensors, expected):
    choice, group, notes = quant(qc, *tensors)
    assert (choice, group) == expected
    assert notes[-1].startswith(f"quantization_config selects quant={choice}; the headers confirm it")


def test_quantization_notes():
    assert quant({"quant_method": "gptq", "bits": 8})[2] == [
        "gptq with 8 bits has no formula in formulas/dtypes.vram: weights from the headers only"]
    assert quant({"quant_method": "bitsandbytes"})[2] == [
        "bitsandbytes quantization_config loads neither 4- nor 8-bit: weights from the headers only"]
    assert quant({"quant_method": "compressed-tensors", "config_groups": {"g": {"weights": {"num_bits": 2}}}})[2] == [
        "compressed-tensors weights of 2 bits (unknown type) have no formula in formulas/dtypes.vram: "
        "weights from the headers only"]
    assert quant({"quant_method": "compressed-tensors", "config_groups": {"g": 1}})[2] == [
        "compressed-tensors quantization_config without config_groups weights: weights from the headers only"]
    assert quant({"quant_method": "hqq"})[2] == [
        "quantization method 'hqq' has no formula in formulas/dtypes.vram: weights from the headers only"]
    choice, group, notes = quant({"quant_method": "gptq", "bits": 4, "group_size": -1}, ("l.qweight", "F16"))
    assert (choice, group) == ("gptq", None)
    assert notes[0] == ("gptq group_size -1 (per-column or unset): the formula's count assumes the default "
                        "group size g_q")
    assert notes[1].startswith("WARNING: quantization_config selects quant=gptq, but the headers have no "
                               "int32 .qweight tensors")


# ---- number-format aliases ----

def test_number_format_aliases():
    table = load("number_formats.json")
    for alias, target in dtypes.aliases().items():
        assert target in table["formats"], alias
        assert alias == alias.lower().replace("-", "_"), alias      # keys are stored normalised
    for name, key in [("fp8-e4m3", "fp8_e4m3"), ("E4M3", "fp8_e4m3"), ("e5m2", "fp8_e5m2"), ("fp8", "fp8_e4m3"),
                      ("bfloat16", "bf16"), ("float16", "fp16"), ("float32", "fp32"), ("MXFP4", "fp4_e2m1"),
                      ("nf4-dq", "nf4_dq"), ("bf16", "bf16")]:
        assert dtypes.explain(name)["name"] == key, name
    with pytest.raises(Exception, match="unknown number format '_comment'"):
        dtypes.explain("_comment")


# ---- the attention kernel a model gets ----

def _supports_sdpa(model_type):
    """transformers' own answer: the modeling file's ``_supports_sdpa`` (None without a file)."""
    import re
    transformers = pytest.importorskip("transformers")
    path = os.path.join(os.path.dirname(transformers.__file__), "models", model_type, f"modeling_{model_type}.py")
    if not os.path.exists(path):
        return None
    found = re.findall(r"_supports_sdpa = (True|False)", open(path, encoding="utf-8").read())
    return None if not found else found[0] == "True"


def test_default_attention_kernel_is_the_one_transformers_runs():
    # a class with _supports_sdpa = False runs eager (Gemma-2: soft-capping); architectures.json says which
    arch = load("architectures.json")
    for mt, entry in arch.items():
        if mt.startswith("_") or mt == "default" or not isinstance(entry, dict) or entry.get("rules_only"):
            continue
        sdpa = _supports_sdpa(mt)
        if sdpa is None:
            continue
        kernel = entry.get("arch_attention_kernel", arch["default"]["arch_attention_kernel"])
        assert kernel == ("sdpa" if sdpa else "eager"), mt


def test_the_default_kernel_reaches_the_estimate_and_a_flag_overrides_it():
    import vramsym
    gemma = vramsym.load_model("gemma-2-9b")
    eager = vramsym.estimate(gemma, "lora", {}, {"batch": 1, "seq": 2048})
    sdpa = vramsym.estimate(gemma, "lora", {"attention": "sdpa"}, {"batch": 1, "seq": 2048})
    assert dict(eager.options)["attention"] == "eager" and dict(sdpa.options)["attention"] == "sdpa"
    assert eager.total_bytes > sdpa.total_bytes          # the b n s^2 scores eager keeps for backward
    llama = vramsym.estimate(vramsym.load_model("llama-3.2-1b"), "inference", {}, {"batch": 1, "seq": 128})
    assert dict(llama.options)["attention"] == "sdpa"


# ---- the parallel search space (formulas/layouts.json) ----

def test_node_size_agrees_with_the_formulas_gpus_per_node_default():
    """layouts.json's node_gpus is the cap of parallel.vram's gpus_node default, min(n_gpu, 8): on a
    job larger than any node, the bound value of gpus_node is the file's node size."""
    import vramsym
    space = load("layouts.json")
    r = vramsym.compile(vramsym.load_model("llama-3.1-8b"), regime="train", options={"sharding": "hybrid"})
    est = r.evaluate({"batch": 1, "seq": 128, "gpus": 1024, "zero": 3})
    assert est.binding.values["gpus_node"] == space["node_gpus"]


def test_min_gpus_searches_tp_up_to_the_node_it_is_given():
    """tp is searched over the powers of two up to the node: the file's 8 GPUs, or --gpus-per-node."""
    import vramsym
    m = vramsym.load_model("llama-3.1-70b")
    space = load("layouts.json")
    r = vramsym.compile(m, regime="train")
    default = vramsym.min_gpus(r, "80GB", inputs={"batch": 1, "seq": 2048})
    assert default["searched"]["tp"] == [2**i for i in range(space["node_gpus"].bit_length())]
    assert default["searched"]["pp"] == [p for p in space["pp"] if p <= 80]
    four = vramsym.min_gpus(r, "80GB", inputs={"batch": 1, "seq": 2048, "gpus_per_node": 4})
    assert four["searched"]["tp"] == [1, 2, 4]
    assert all(lay["tp"] <= 4 for _, lay in four["layouts"])


# ---- a family's own unmodelled terms (architectures.json "unmodelled") ----

def test_a_family_whose_all_linear_lora_and_qlora_are_not_modelled_is_refused_not_guessed():
    """Gemma 3n trains and fine-tunes its attention with LoRA (its AltUp streams, LAuReL block and
    activation-sparse MLPs are in the training terms), but all-linear LoRA (adapters on AltUp's and
    LAuReL's linears), QLoRA and freeze tuning are refused naming the type, the regime and what is
    missing, and --assume llama approximates and says so. (Training was this test's refusal before.)"""
    import vramsym
    from vramsym.errors import NotModelled
    assert vramsym.estimate("gemma-3n-e2b", "train", inputs={"batch": 1, "seq": 64}).total_bytes > 0
    assert vramsym.estimate("gemma-3n-e2b", "lora", {"lora_targets": "qv"}, inputs={"batch": 1, "seq": 64}).total_bytes > 0
    with pytest.raises(NotModelled) as e:
        vramsym.estimate("gemma-3n-e2b", "lora", inputs={"batch": 1, "seq": 64})
    assert "gemma3n_text" in str(e.value) and "all_linear" in str(e.value) and "AltUp" in str(e.value)
    for regime in ("qlora", "freeze"):
        with pytest.raises(NotModelled) as e:
            vramsym.estimate("gemma-3n-e2b", regime, inputs={"batch": 1, "seq": 64})
        assert f"'{regime}'" in str(e.value) and "AltUp" in str(e.value)
    approx = vramsym.estimate(M.load_model("gemma-3n-e2b", assume="llama"), "qlora", inputs={"batch": 1, "seq": 64})
    assert approx.approximate and "AltUp" in approx.approximate


def test_node_size_limit_agrees_with_the_formulas_and_refuses_beyond_it():
    """layouts.json's node_gpus_max is gpus_node's declared max in parallel.vram; min_gpus refuses a
    node above it with a sentence, and takes --gpus-per-node without calling it ignored."""
    import vramsym
    from vramsym.engine.bind import bound_of
    space = load("layouts.json")
    r = vramsym.compile(vramsym.load_model("llama-3.1-8b"), regime="train", options={"sharding": "hybrid"})
    assert bound_of(r.regime, "gpus_node", {}, "max") == space["node_gpus_max"]
    plain = vramsym.compile(vramsym.load_model("llama-3.1-8b"), regime="train")
    with pytest.raises(vramsym.InputError, match="at most 1,024"):
        vramsym.min_gpus(plain, "80GB", inputs={"batch": 1, "seq": 512, "gpus_per_node": 10**30})


def test_mistral_window_defaults_only_when_the_field_is_absent():
    """MistralConfig's sliding_window defaults to 4,096 when the field is absent, but an explicit null
    (Mistral-7B-v0.3's config.json) means no window (issue 22's sweep, seed 3 case 132)."""
    base = {"model_type": "mistral", "num_hidden_layers": 4, "hidden_size": 64, "num_attention_heads": 4,
            "intermediate_size": 128, "vocab_size": 100}
    assert M._spec(dict(base), "x", "test").config["arch_sliding_layers"] == 4
    assert M._spec(dict(base, sliding_window=None), "x", "test").config["arch_sliding_layers"] == 0


def _gemma3n(**fields):
    cfg = {"model_type": "gemma3n_text", "hidden_size": 256, "num_hidden_layers": 5, "num_attention_heads": 4,
           "num_key_value_heads": 2, "head_dim": 64, "vocab_size": 1000, "vocab_size_per_layer_input": 1000,
           "hidden_size_per_layer_input": 32, "num_kv_shared_layers": 0, "intermediate_size": 512}
    return M._spec({**cfg, **fields}, "tiny-gemma3n", "test")


def test_gemma3n_sparse_layers_are_counted_from_the_pattern_or_the_class_default():
    """Gemma 3n's activation-sparse MLPs (L_sparse): the entries of activation_sparsity_pattern above 0, or,
    without the list, the config class's default of the first 10 layers when there are more than 10
    (configuration_gemma3n.py __post_init__); non-numbers count as none."""
    assert _gemma3n(activation_sparsity_pattern=[0.95, 0.0, 0.5, 0.0, 0.0]).config["arch_sparse_layers"] == 2
    assert _gemma3n(activation_sparsity_pattern=[None, "x", True, 0.0, 0.9]).config["arch_sparse_layers"] == 1
    assert _gemma3n().config["arch_sparse_layers"] == 0                          # 5 layers: no default sparsity
    assert _gemma3n(num_hidden_layers=12).config["arch_sparse_layers"] == 10
    import vramsym
    assert vramsym.load_model("gemma-3n-e2b").config["arch_sparse_layers"] == 10   # its published pattern


def test_gemma3n_per_layer_widths_are_read_when_equal_and_refused_when_they_differ():
    """Gemma 3n's intermediate_size is one width per layer (configuration_gemma3n.py); the published
    checkpoints give every layer the same one, which the formulas read; different widths are a structure
    they do not have, refused with the field's name (issue 21: never a silent guess)."""
    assert _gemma3n(intermediate_size=[512] * 5).config["intermediate_size"] == 512
    for bad, what in (([512, 512, 1024, 512, 512], "per-layer list of different widths"),
                      ([], "empty per-layer list"), ([512.5] * 5, "not a whole number"),
                      ([True] * 5, "not a whole number"), (["512"] * 5, "not a whole number")):
        with pytest.raises(M.InputError, match=f"'intermediate_size'.*{what}"):
            _gemma3n(intermediate_size=bad)
    approx = M._spec({**_gemma3n().raw_config, "intermediate_size": [512, 1024, 512, 512, 512]}, "tiny", "test",
                     assume="llama")          # --assume llama: the largest width, said so
    assert approx.config["intermediate_size"] == 1024 and "largest entry, 1024" in approx.approximate
    with pytest.raises(M.InputError, match="'hidden_size_per_layer_input'"):
        _gemma3n(hidden_size_per_layer_input=0)
    with pytest.raises(M.InputError, match="'altup_num_inputs'"):
        _gemma3n(altup_num_inputs=0)
    for field in ("altup_num_inputs", "laurel_rank"):      # fields of Gemma 3n's structure on another family
        with pytest.raises(M.InputError, match=f"'{field}'"):
            M._spec({"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
                     "vocab_size": 100, "intermediate_size": 128, field: 4}, "odd-llama", "test")


@settings(max_examples=60, deadline=None)
@given(flags=st.lists(st.sampled_from([0, 1]), min_size=1, max_size=40), interval=st.integers(-9, 9).filter(bool))
def test_llama4_rope_layers_follow_no_rope_layers_or_the_interval(flags, interval):
    """Llama 4's RoPE layers (the others are NoPE layers, which skip the L2 q/k norm and scale their
    queries by a temperature): its rope_rule counts the 1s of no_rope_layers, or, without the list (or
    with an empty one, which configuration_llama4.py replaces by its default), every layer but each
    no_rope_layer_interval-th; arch_rope_first says whether layer 0 applies RoPE."""
    L = len(flags)
    listed = M._derived({"model_type": "llama4_text", "num_hidden_layers": L, "no_rope_layers": flags})
    assert listed["arch_rope_layers"] == sum(flags) and listed["arch_rope_first"] == flags[0]
    for given_list in (None, []):
        cfg = {"model_type": "llama4_text", "num_hidden_layers": L, "no_rope_layer_interval": interval}
        if given_list is not None:
            cfg["no_rope_layers"] = given_list
        default = [int((i + 1) % interval != 0) for i in range(L)]      # configuration_llama4.py
        d = M._derived(cfg)
        assert d["arch_rope_layers"] == sum(default) and d["arch_rope_first"] == default[0]
    assert "arch_rope_layers" not in M._derived({"model_type": "llama", "num_hidden_layers": L})
