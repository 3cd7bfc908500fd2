"""Exact parameter counts from the architecture, for every catalog model."""
import json
import os

import pytest

import vramsym
from vramsym.catalog.models import catalog
from vramsym.catalog.paths import formulas_path

ARCHITECTURES = json.loads(open(os.path.join(formulas_path(), "architectures.json"), encoding="utf-8").read())


# the weights and buffers alone: a model whose activations every serving regime refuses (Gemma 4) is counted too
COUNTS = os.path.join(os.path.dirname(__file__), "data", "weights_and_buffers.vram")


def _counts(name, options):
    return vramsym.estimate(vramsym.load_model(name), "weights_and_buffers", options, {"batch": 1, "seq": 1},
                            formulas=(COUNTS,))


def params(lib, name):
    # quant none: a catalog config that declares its storage format (DeepSeek-V3's fp8) counts in it by default
    est = _counts(name, {"precision": "fp32", "quant": "none"})
    return next(c for c in est.all_components if c.name == "weights").bytes // 4


# Published exact counts (model cards / safetensors metadata as quoted in the issue tracker).
PUBLISHED = {
    "llama-3.1-8b": 8_030_261_248,
    "mistral-7b-v0.1": 7_241_732_096,
    "llama-2-7b": 6_738_415_616,
    "gpt2": 124_439_808,
}


@pytest.mark.parametrize("name,count", sorted(PUBLISHED.items()))
def test_published_counts(lib, name, count):
    assert params(lib, name) == count


def _meta_model(name):
    """The catalog entry's config built by transformers on the meta device, in fp32 (skipped where
    this transformers version cannot build it)."""
    transformers = pytest.importorskip("transformers")
    torch = pytest.importorskip("torch")
    entry = json.loads(open(catalog()[name], encoding="utf-8").read())
    cfg = dict(entry["config"])
    cfg.pop("quantization_config", None)     # a storage format (DeepSeek-V3's fp8, gpt-oss's MXFP4): the count is the same
    cfg.pop("auto_map", None)
    mt = cfg.pop("model_type")
    if mt not in transformers.CONFIG_MAPPING:    # a checkpoint's own type whose code is another family's (Kimi-K2:
        mt = ARCHITECTURES.get(mt, {}).get("like", mt)     # DeepSeek-V3's modeling file): that family's class
    try:
        config = transformers.AutoConfig.for_model(mt, **cfg)
    except Exception as e:  # model type unknown to this transformers version
        pytest.skip(f"transformers cannot build {mt}: {e}")
    with torch.device("meta"):
        return transformers.AutoModelForCausalLM.from_config(config, dtype=torch.float32)


@pytest.mark.parametrize("name", sorted(catalog()))
def test_catalog_count_matches_transformers(lib, name):
    """transformers instantiates the same config on the meta device; counts must agree to the parameter."""
    expected = sum(p.numel() for p in _meta_model(name).parameters())
    assert params(lib, name) == expected


def test_published_in_catalog_files_agree(lib):
    for name, path in catalog().items():
        pub = json.loads(open(path, encoding="utf-8").read()).get("published_params")
        if pub:
            assert params(lib, name) == pub, name


@pytest.mark.parametrize("name", sorted(catalog()))
def test_catalog_buffers_match_transformers(lib, name):
    """The model's non-parameter buffers (RoPE inv_freq pairs, one per attention type where the model
    builds one rotary embedding per layer type; a scaled embedding's scale; routers' correction
    biases), in fp32, against the meta-device model's named_buffers."""
    expected = sum(b.numel() * b.element_size() for b in _meta_model(name).buffers())
    est = _counts(name, {"precision": "fp32"})
    assert next(c for c in est.all_components if c.name == "model_buffers").bytes == expected


@pytest.mark.parametrize("cfg,fields", [
    ({"model_type": "bloom", "hidden_size": 1000, "n_layer": 2, "n_head": 7, "vocab_size": 100}, ("hidden_size", "n_head")),
    ({"model_type": "mpt", "d_model": 1000, "n_layers": 2, "n_heads": 7, "vocab_size": 100}, ("d_model", "n_heads")),
    ({"model_type": "gpt_neo", "hidden_size": 1000, "num_layers": 2, "num_heads": 7, "vocab_size": 100,
      "attention_types": [[["global"], 2]]}, ("hidden_size", "num_heads")),
])
def test_a_width_the_heads_do_not_divide_is_refused_where_the_model_class_refuses_it(cfg, fields):
    """BLOOM, GPT-Neo and MPT split the hidden size into equal heads and raise otherwise (issue 21's
    families): a config they cannot be built from gets a sentence naming both fields, not a number."""
    from vramsym.catalog.models import _spec
    with pytest.raises(vramsym.InputError) as e:
        _spec(cfg, "odd-heads", "test")
    assert all(f in str(e.value) for f in fields) and "not a multiple" in str(e.value)
    ok = dict(cfg, **{fields[0]: 1001 - 1001 % cfg[fields[1]]})     # the nearest width the heads divide
    assert _spec(ok, "even-heads", "test").config["model_type"] == cfg["model_type"]


GPT_NEO_OK = {"model_type": "gpt_neo", "hidden_size": 256, "num_layers": 4, "num_heads": 4, "vocab_size": 100,
              "attention_types": [[["global", "local"], 2]]}


@pytest.mark.parametrize("cfg,field", [
    (dict(GPT_NEO_OK, attention_types=[[["global", "local"], 1]]), "attention_types"),     # 2 kinds for 4 layers
    (dict(GPT_NEO_OK, attention_types=[[["global", "sparse"], 2]]), "attention_types"),    # no such kind
    (dict(GPT_NEO_OK, attention_types="global"), "attention_types"),                       # not a pattern
    (dict(GPT_NEO_OK, attention_types=[[["global"], True], [["local"], 3]]), "attention_types"),
    ({"model_type": "mpt", "d_model": 256, "n_layers": 2, "n_heads": 4, "vocab_size": 100, "attn_config": "fast"},
     "attn_config"),
    ({"model_type": "mpt", "d_model": 256, "n_layers": 2, "n_heads": 4, "vocab_size": 100, "attn_config": [0]},
     "attn_config"),
])
def test_a_structure_field_the_model_class_cannot_read_is_refused(cfg, field):
    """GPT-Neo expands attention_types into one kind per layer and raises when their number is not
    num_layers or a kind is not 'global' / 'local'; MPT reads attn_config as an object. A config the
    model class cannot be built from gets a sentence naming the field, not a number."""
    from vramsym.catalog.models import _spec
    with pytest.raises(vramsym.InputError) as e:
        _spec(cfg, "hostile", "test")
    assert f"'{field}'" in str(e.value) and "refused" in str(e.value)


def test_the_structure_fields_the_model_class_reads_are_accepted():
    from vramsym.catalog.models import _spec
    assert _spec(GPT_NEO_OK, "neo", "test").config["model_type"] == "gpt_neo"
    mpt = {"model_type": "mpt", "d_model": 256, "n_layers": 2, "n_heads": 4, "vocab_size": 100, "attn_config": {"attn_pdrop": 0}}
    assert _spec(mpt, "mpt", "test").config["model_type"] == "mpt"
