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


def test_an_unknown_type_is_refused_and_assume_llama_approximates(tool):
    row = tool.row("olmo2")
    assert row["status"] == "refused"
    assert "'olmo2'" in row["note"] and "nearest supported family" in row["note"] and "--assume llama" in row["note"]
    assert row.get("assume_diff") is not None
    md = tool.markdown([row], 1.0, "test")
    assert "| `olmo2` | refused |" in md and "0 exact" in md
