"""What a person types as --model: a catalog entry's Hugging Face id resolves to the entry offline,
and a sequence past the positions the model declares is said, not passed silently."""
import json

import pytest

import vramsym
from vramsym.catalog.models import catalog


def _entries():
    for name, path in sorted(catalog().items()):
        hf = json.loads(open(path, encoding="utf-8").read()).get("hf_id")
        if hf:
            yield name, hf


@pytest.mark.parametrize("name,hf", list(_entries()))
def test_catalog_hf_id_is_the_catalog_entry_offline(monkeypatch, tmp_path, name, hf):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))        # an empty cache: only the catalog can answer
    for typed in (hf, hf.lower()):
        m = vramsym.load_model(typed)
        assert m.name == name
        assert m.config == vramsym.load_model(name).config
        assert any(f"catalog entry {name}" in n for n in m.notes)


def test_unknown_hub_id_still_goes_to_the_hub(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    with pytest.raises(vramsym.InputError, match="cache"):
        vramsym.load_model("meta-llama/Llama-3.1-8B-NotInTheCatalog")


@pytest.mark.parametrize("model,seq,limit,learned", [
    ("llama-2-7b", 4097, 4096, False),       # max_position_embeddings 4096
    ("gpt2", 1025, 1024, True),              # a learned table of n_positions rows: the model cannot run it
    ("qwen3-8b", 40961, 40960, False),
])
def test_sequence_past_the_declared_positions_is_noted(lib, model, seq, limit, learned):
    at = vramsym.estimate(model, "inference", {}, {"batch": 1, "seq": limit}, library=lib)
    assert not any("positions" in n or "position table" in n for n in at.notes)
    past = vramsym.estimate(model, "inference", {}, {"batch": 1, "seq": seq}, library=lib)
    note = [n for n in past.notes if f"{limit:,}" in n]
    assert len(note) == 1
    assert ("cannot run it" in note[0]) == learned


def test_rope_scaling_extends_the_declared_positions():
    from vramsym.engine.runtime import beyond_positions
    cfg = {"max_position_embeddings": 40960,
           "rope_scaling": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}}
    assert beyond_positions(cfg, 131072) == ()
    assert "131,072" in beyond_positions(cfg, 131073)[0]
