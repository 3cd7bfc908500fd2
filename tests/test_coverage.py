"""tools/coverage.py for the catalog's families (what CI runs): every model type of the bundled
catalog (`vramsym models`), built from its config class's defaults on the meta device, has its
parameters counted exactly by vramsym, and the KV per token of its own cache where the forward runs
on meta; and the refusal / --assume llama path of an unknown type."""
import importlib.util
import os

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

HERE = os.path.dirname(__file__)


def _tool():
    spec = importlib.util.spec_from_file_location("coverage_tool", os.path.join(HERE, "..", "tools", "coverage.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def tool():
    return _tool()


def test_catalog_families_are_exact(tool):
    types = tool.catalog_types()
    assert {"llama", "mistral", "mixtral", "qwen2", "qwen3", "qwen3_moe", "gemma2", "gemma3_text", "phi3",
            "deepseek_v3", "gpt2"} <= set(types)
    rows = tool.run(types)
    bad = [(r["model_type"], r["status"], r.get("note")) for r in rows if r["status"] != "exact"]
    assert not bad, bad
    for r in rows:
        assert r["vram_params"] == r["meta_params"], r
        if r["meta_kv"] is not None:                       # the model's own cache after one token on meta
            assert r["vram_kv"] == r["meta_kv"], r
    assert "11 exact" in tool.summary(rows) or f"{len(rows)} exact" in tool.summary(rows)


def test_families_added_as_data_are_exact(tool):
    # the families formulas/architectures.json gained with aliases, defaults and cases
    rows = tool.run(["falcon", "gpt_neox", "starcoder2", "granite", "helium", "ernie4_5", "smollm3", "ministral3", "cwm"])
    bad = [(r["model_type"], r["status"], r.get("note")) for r in rows if r["status"] != "exact"]
    assert not bad, bad


ISSUE21 = ["cohere", "cohere2", "emu3", "exaone", "exaone4", "flex_olmo", "glm", "glm4", "glm4_moe", "granitemoe", "granitemoeshared",
           "hyperclovax", "internlm3", "iquestcoder", "mellum", "minimax_m2", "olmo2", "olmo3", "olmoe", "seed_oss",
           "solar_open", "stablelm", "vaultgemma"]


def test_issue21_families_are_exact_with_their_kv(tool):
    # full-width q/k norms (OLMo 2/3, OLMoE, MiniMax-M2), post-norms (OLMo 2/3, EXAONE 4), parallel blocks behind
    # one bias-free LayerNorm (Cohere), four norms (GLM-4, HyperCLOVA X), fused gate_up (GLM), per-layer MLP types
    # (Mellum), shared experts (Solar-Open), LayerNorm with bias (StableLM): parameters and KV against the meta model
    rows = tool.run(ISSUE21)
    bad = [(r["model_type"], r["status"], r.get("note")) for r in rows if r["status"] != "exact"]
    assert not bad, bad
    for r in rows:
        if r["meta_kv"] is not None:
            assert r["vram_kv"] == r["meta_kv"], r


@pytest.mark.parametrize("mt,field", [("cohere", "use_qk_norm"), ("stablelm", "qk_layernorm"), ("olmoe", "clip_qkv")])
def test_issue21_variants_the_formulas_do_not_read_are_refused(tool, mt, field):
    from transformers import CONFIG_MAPPING
    import json
    raw = json.loads(CONFIG_MAPPING[mt]().to_json_string(use_diff=False))
    raw[field] = 8.0 if field == "clip_qkv" else True
    got = tool.vram(raw)
    assert f"'{field}'" in got.get("refused", ""), got


@pytest.mark.parametrize("mt,change", [("stablelm", {"use_parallel_residual": True, "use_qkv_bias": True}),
                                       ("hyperclovax", {"use_post_norm": False}),
                                       ("granitemoeshared", {"shared_intermediate_size": 1024}),
                                       ("glm4_moe", {"use_qk_norm": True, "attention_bias": True, "head_dim": 128,
                                                     "first_k_dense_replace": 3, "n_shared_experts": 2})])
def test_issue21_config_variants_are_exact(mt, change):
    # a case or an alias of the family changes the structure; the meta model counts the same
    import json
    import torch
    from transformers import AutoModelForCausalLM, CONFIG_MAPPING
    cfg = CONFIG_MAPPING[mt](**change)
    with torch.device("meta"):
        meta = sum(p.numel() for p in AutoModelForCausalLM.from_config(cfg).parameters())
    got = _tool().vram(json.loads(cfg.to_json_string(use_diff=False)))
    assert got.get("params") == meta, (got, meta)


def test_an_unknown_type_is_refused_and_assume_llama_approximates(tool):
    row = tool.row("codegen")
    assert row["status"] == "refused"
    assert "'codegen'" in row["note"] and "nearest supported family" in row["note"] and "--assume llama" in row["note"]
    assert row.get("assume_diff") is not None
    md = tool.markdown([row], 1.0, "test")
    assert "| `codegen` | refused |" in md and "0 exact" in md
