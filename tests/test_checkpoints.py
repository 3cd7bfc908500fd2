"""Real checkpoints as input (issue 13): a safetensors folder, a GGUF file, a Hugging Face id.

The tests write tiny checkpoints themselves (safetensors with plain struct + json, GGUF with
the gguf package's GGUFWriter, a Hugging Face cache in huggingface_hub's layout) and check
that the weights are exactly the bytes the headers list; malformed headers are fuzzed."""
import json
import os
import struct

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import vramsym
from vramsym.cli import ExitStatus, main
from vramsym.errors import InputError

HERE = os.path.dirname(__file__)

SIZES = {"BF16": 2, "F16": 2, "F32": 4, "I32": 4, "I8": 1, "U8": 1, "F8_E4M3": 1}

TINY = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 64,
        "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
        "num_key_value_heads": 2, "vocab_size": 256, "max_position_embeddings": 512,
        "rms_norm_eps": 1e-5, "tie_word_embeddings": False, "torch_dtype": "bfloat16"}


@pytest.fixture(scope="module", autouse=True)
def shared_cache(tmp_path_factory):
    """One cache for the module: each regime and option set compiles once."""
    old = {k: os.environ.get(k) for k in ("VRAMSYM_CACHE_DIR", "VRAMSYM_NO_CACHE")}
    os.environ["VRAMSYM_CACHE_DIR"] = str(tmp_path_factory.mktemp("ckptcache"))
    os.environ.pop("VRAMSYM_NO_CACHE", None)
    yield
    for k, v in old.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


def cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert code != ExitStatus.INTERNAL, err
    assert "Traceback" not in err, err
    return code, out, err


# ---- writing safetensors with struct + json ----

def write_safetensors(path, tensors, metadata=None):
    """tensors: name -> (dtype, shape). Data bytes are zeros; returns the data size."""
    header, offset = {}, 0
    for name, (dtype, shape) in tensors.items():
        n = SIZES[dtype]
        for d in shape:
            n *= d
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + n]}
        offset += n
    if metadata is not None:
        header["__metadata__"] = metadata
    raw = json.dumps(header).encode()
    raw += b" " * (-len(raw) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(raw)) + raw + bytes(offset))
    return offset


def dense_tensors(cfg, dtype="BF16"):
    h, inter, V = cfg["hidden_size"], cfg["intermediate_size"], cfg["vocab_size"]
    d = h // cfg["num_attention_heads"]
    q, kv = cfg["num_attention_heads"] * d, cfg["num_key_value_heads"] * d
    out = {"model.embed_tokens.weight": (dtype, (V, h)), "model.norm.weight": (dtype, (h,)),
           "lm_head.weight": (dtype, (V, h))}
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        out.update({p + "input_layernorm.weight": (dtype, (h,)), p + "post_attention_layernorm.weight": (dtype, (h,)),
                    p + "self_attn.q_proj.weight": (dtype, (q, h)), p + "self_attn.k_proj.weight": (dtype, (kv, h)),
                    p + "self_attn.v_proj.weight": (dtype, (kv, h)), p + "self_attn.o_proj.weight": (dtype, (h, q)),
                    p + "mlp.gate_proj.weight": (dtype, (inter, h)), p + "mlp.up_proj.weight": (dtype, (inter, h)),
                    p + "mlp.down_proj.weight": (dtype, (h, inter))})
    return out


def gptq_tensors(cfg, group=32):
    """AutoGPTQ's packing: qweight int32 [in/8, out], qzeros int32 [in/g, out/8], scales fp16
    [in/g, out], g_idx int32 [in]; embeddings, norms and the head stay fp16."""
    out = {}
    for name, (dtype, shape) in dense_tensors(cfg, "F16").items():
        if name.endswith("_proj.weight"):
            base = name[:-len(".weight")]
            o, i = shape
            out.update({base + ".qweight": ("I32", (i // 8, o)), base + ".qzeros": ("I32", (i // group, o // 8)),
                        base + ".scales": ("F16", (i // group, o)), base + ".g_idx": ("I32", (i,))})
        else:
            out[name] = (dtype, shape)
    return out


def header_bytes(tensors):
    total = 0
    for dtype, shape in tensors.values():
        n = SIZES[dtype]
        for d in shape:
            n *= d
        total += n
    return total


def make_dir(path, cfg, tensors, shards=1):
    path.mkdir(parents=True, exist_ok=True)
    (path / "config.json").write_text(json.dumps(cfg))
    if shards == 1:
        write_safetensors(path / "model.safetensors", tensors)
        return path
    names = list(tensors)
    wmap = {}
    for k in range(shards):
        part = {n: tensors[n] for n in names[k::shards]}
        fname = f"model-{k + 1:05d}-of-{shards:05d}.safetensors"
        write_safetensors(path / fname, part, metadata={"format": "pt"})
        wmap.update({n: fname for n in part})
    (path / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": wmap}))
    return path


def estimate_json(capsys, *argv):
    code, out, err = cli(capsys, "estimate", *argv, "--batch", "1", "--seq", "64", "--json")
    assert code == 0, err
    return json.loads(out)


def weights_of(data):
    return next(c["bytes"] for c in data["components"] if c["name"] == "weights")


@pytest.mark.parametrize("shards", [1, 3])
def test_dense_bf16_weights_are_the_headers_bytes(tmp_path, capsys, shards):
    tensors = dense_tensors(TINY)
    d = make_dir(tmp_path / "tiny", TINY, tensors, shards)
    data = estimate_json(capsys, "--model", str(d))
    assert weights_of(data) == header_bytes(tensors)
    notes = " ".join(data["notes"])
    assert "weights from the safetensors headers" in notes
    assert "equal the formulas' count" in notes        # a dense bf16 Llama: the formula is exact too
    assert data["options"]["weights_source"] == "file"


def test_dense_checkpoint_total_matches_the_config_alone_when_the_formula_is_exact(tmp_path, capsys):
    d = make_dir(tmp_path / "tiny", TINY, dense_tensors(TINY))
    with_files = estimate_json(capsys, "--model", str(d))
    config_only = estimate_json(capsys, "--model", str(d / "config.json"))
    assert with_files["total_bytes"] == config_only["total_bytes"]
    assert config_only["options"]["weights_source"] == "formula"


def test_gptq_weights_are_the_headers_bytes_and_the_formula_mismatch_is_reported(tmp_path, capsys):
    cfg = dict(TINY, torch_dtype="float16",
               quantization_config={"quant_method": "gptq", "bits": 4, "group_size": 32, "desc_act": False})
    tensors = gptq_tensors(cfg)
    d = make_dir(tmp_path / "tiny-gptq", cfg, tensors)
    data = estimate_json(capsys, "--model", str(d))
    assert weights_of(data) == header_bytes(tensors)
    assert data["options"]["quant"] == "gptq"
    notes = " ".join(data["notes"])
    assert "headers confirm it" in notes
    assert "weights mismatch" in notes            # g_idx is not in the formula's 4 + 20/g bits
    # the formula with the checkpoint's group size: everything but g_idx (int32 per input row)
    g_idx = sum(header_bytes({k: v}) for k, v in tensors.items() if k.endswith(".g_idx"))
    formula = estimate_json(capsys, "--model", str(d), "--weights-source", "formula")
    assert weights_of(formula) == header_bytes(tensors) - g_idx


def test_quantization_config_without_its_tensors_is_a_warning(tmp_path, capsys):
    cfg = dict(TINY, quantization_config={"quant_method": "gptq", "bits": 4, "group_size": 32})
    d = make_dir(tmp_path / "claims-gptq", cfg, dense_tensors(TINY))
    data = estimate_json(capsys, "--model", str(d))
    assert weights_of(data) == header_bytes(dense_tensors(TINY))
    assert any(n.startswith("WARNING") and "no int32 .qweight" in n for n in data["notes"])


def test_the_text_output_says_where_the_weights_came_from(tmp_path, capsys):
    d = make_dir(tmp_path / "tiny", TINY, dense_tensors(TINY))
    code, out, err = cli(capsys, "estimate", "--model", str(d), "--batch", "1", "--seq", "64")
    assert code == 0, err
    assert "weights from the safetensors headers" in out
    assert "W_file" in out


def test_the_api_carries_the_checkpoint_summary(tmp_path):
    tensors = dense_tensors(TINY)
    d = make_dir(tmp_path / "tiny", TINY, tensors, shards=2)
    m = vramsym.load_model(str(d))
    assert m.checkpoint["weight_bytes"] == header_bytes(tensors)
    assert m.checkpoint["tensors"] == len(tensors)
    assert len(m.checkpoint["files"]) == 2
    est = vramsym.estimate(m, inputs={"batch": 1, "seq": 8})
    assert est.binding.provenance["W_file"] == "config:ckpt_weight_bytes"


def test_a_folder_with_only_a_config_is_unchanged(tmp_path, capsys):
    d = tmp_path / "cfg"
    d.mkdir()
    (d / "config.json").write_text(json.dumps(TINY))
    data = estimate_json(capsys, "--model", str(d))
    assert data["options"]["weights_source"] == "formula"
