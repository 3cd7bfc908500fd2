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
from helpers import run_cli
from vramsym.cli import ExitStatus, main
from vramsym.errors import InputError

HERE = os.path.dirname(__file__)

SIZES = {"BF16": 2, "F16": 2, "F32": 4, "I32": 4, "I8": 1, "U8": 1, "F8_E4M3": 1}

TINY = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 64,
        "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
        "num_key_value_heads": 2, "vocab_size": 256, "max_position_embeddings": 512,
        "rms_norm_eps": 1e-5, "tie_word_embeddings": False, "torch_dtype": "bfloat16"}




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
    code, out, err = cli(capsys, "estimate", "--model", str(d), "--batch", "1", "--seq", "64", "--explain")
    assert code == 0, err
    assert "weights from the safetensors headers" in out
    assert "W_file" in out          # the formula column (--explain) names the file's bytes


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


# ---- GGUF (written with the gguf package's GGUFWriter) ----

def write_gguf(path, tie=False):
    """A tiny llama-like GGUF with Q4_K, Q6_K and F32 tensors; returns {name: bytes}."""
    gguf = pytest.importorskip("gguf")
    import numpy as np
    T = gguf.GGMLQuantizationType
    w = gguf.GGUFWriter(str(path), "llama")
    h, L, nq, nkv, ff, V = 256, 2, 4, 2, 512, 512
    w.add_context_length(2048)
    w.add_embedding_length(h)
    w.add_block_count(L)
    w.add_feed_forward_length(ff)
    w.add_head_count(nq)
    w.add_head_count_kv(nkv)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_file_type(15)                         # LLAMA_FTYPE_MOSTLY_Q4_K_M
    w.add_token_list([f"t{i}".encode() for i in range(V)])
    sizes = {}

    def add(name, shape, qt):
        block, size = gguf.GGML_QUANT_SIZES[qt]
        if qt == T.F32:
            w.add_tensor(name, np.zeros(shape, dtype=np.float32))
        else:       # quantized tensors are given as their raw bytes, last dimension in bytes
            w.add_tensor(name, np.zeros((*shape[:-1], shape[-1] // block * size), dtype=np.uint8), raw_dtype=qt)
        sizes[name] = int(np.prod(shape)) // block * size

    d = h // nq
    add("token_embd.weight", (V, h), T.Q4_K)
    for i in range(L):
        add(f"blk.{i}.attn_norm.weight", (h,), T.F32)
        add(f"blk.{i}.attn_q.weight", (nq * d, h), T.Q4_K)
        add(f"blk.{i}.attn_k.weight", (nkv * d, h), T.Q4_K)
        add(f"blk.{i}.attn_v.weight", (nkv * d, h), T.Q6_K)
        add(f"blk.{i}.attn_output.weight", (h, nq * d), T.Q4_K)
        add(f"blk.{i}.ffn_norm.weight", (h,), T.F32)
        add(f"blk.{i}.ffn_gate.weight", (ff, h), T.Q4_K)
        add(f"blk.{i}.ffn_up.weight", (ff, h), T.Q4_K)
        add(f"blk.{i}.ffn_down.weight", (h, ff), T.Q6_K)
    add("output_norm.weight", (h,), T.F32)
    if not tie:
        add("output.weight", (V, h), T.Q6_K)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return sizes


def test_gguf_weights_are_the_tensors_bytes(tmp_path, capsys):
    sizes = write_gguf(tmp_path / "tiny.gguf")
    data = estimate_json(capsys, "--model", str(tmp_path / "tiny.gguf"))
    assert weights_of(data) == sum(sizes.values())
    assert data["options"]["weights_source"] == "file"
    assert data["options"]["quant"] in ("q4_k_m", "q4-k-m")        # general.file_type 15
    m = vramsym.load_model(str(tmp_path / "tiny.gguf"))
    assert m.config["hidden_size"] == 256 and m.config["num_hidden_layers"] == 2
    assert m.config["num_key_value_heads"] == 2 and m.config["vocab_size"] == 512
    assert m.config["intermediate_size"] == 512 and m.config["max_position_embeddings"] == 2048
    assert m.checkpoint["bytes_by_dtype"].keys() == {"Q4_K", "Q6_K", "F32"}


@pytest.mark.parametrize("tie", [False, True])
def test_llama_cpp_regime_gives_a_cited_breakdown(tmp_path, capsys, tie):
    sizes = write_gguf(tmp_path / "tiny.gguf", tie=tie)
    data = estimate_json(capsys, "--model", str(tmp_path / "tiny.gguf"), "--regime", "llama_cpp")
    comps = {c["name"]: c for c in data["components"]}
    embd = sizes["token_embd.weight"]
    # the token embedding stays on the CPU; a tied head copies it to the GPU as the output
    assert comps["lcpp_weights"]["bytes"] == sum(sizes.values()) - embd + (embd if tie else 0)
    assert comps["lcpp_weights_host"]["bytes"] == embd
    # K and V in f16: 2 layers x 256 cells (64 tokens padded to 256) x n_kv 2 x d_head 64 x 2 x 2 B
    assert comps["lcpp_kv_cache"]["bytes"] == 2 * 256 * 2 * 64 * 2 * 2
    for c in comps.values():
        assert c["sources"], c["name"]
        if c["name"].startswith("lcpp_"):
            assert any("llama" in s or "ggml" in s for s in c["sources"]), c


def test_llama_cpp_cache_types_and_padding(tmp_path, capsys):
    write_gguf(tmp_path / "tiny.gguf")
    data = estimate_json(capsys, "--model", str(tmp_path / "tiny.gguf"), "--regime", "llama_cpp",
                         "--cache-type-k", "q8_0", "--cache-type-v", "q4_0")
    kv = next(c["bytes"] for c in data["components"] if c["name"] == "lcpp_kv_cache")
    assert kv == 2 * 256 * 128 * (34 + 18) // 32
    code, out, err = cli(capsys, "solve", "max_seq", "--model", str(tmp_path / "tiny.gguf"), "--regime", "llama_cpp",
                         "--batch", "1", "--gpu", "1GB", "--json")
    assert code == 0, err
    assert json.loads(out)["value"] % 256 == 0         # the context is padded to 256 cells


def test_llama4_chunked_layers_keep_a_window_in_llama_cpp():
    # src/models/llama4.cpp: LLAMA_SWA_TYPE_CHUNKED, n_swa 8192, pattern 4 (layers 3, 7, ... full);
    # llama-kv-cache-iswa.cpp: the chunked layers' cache is PAD(min(n_ctx, n_swa + n_ubatch), 256) cells
    model = vramsym.load_model("llama-4-scout")
    cfg = model.config
    layers, kv_heads, d = cfg["num_hidden_layers"], cfg["num_key_value_heads"], cfg["head_dim"]
    full = sum(1 for i in range(layers) if (i + 1) % 4 == 0)
    ctx, window = 65536, -(-(8192 + 512) // 256) * 256
    est = vramsym.estimate(model, "llama_cpp", inputs={"batch": 1, "seq": ctx}, options={"quant": "q4_k_m"})
    kv = next(c.bytes for c in est.components if c.name == "lcpp_kv_cache")
    per_cell = 2 * kv_heads * d * 2            # F16 K and V of one layer
    assert kv == (full * ctx + (layers - full) * window) * per_cell


def test_every_llama_cpp_term_cites_llama_cpp(lib):
    from pathlib import Path
    text = (Path(HERE).parent / "formulas" / "llama_cpp.vram").read_text()
    terms = [line.split()[1] for line in text.splitlines() if line.startswith("term ")]
    assert terms
    for t in terms:
        assert lib.terms[t].sources, t


# ---- recurrent GGUF architectures: the ssm.* metadata and per-block arrays as the config's fields ----

@pytest.fixture(scope="module")
def llama_cpp_check():
    """benchmarks/llama_cpp_check.py, whose write_hybrid writes the recurrent GGUFs that a real
    llama.cpp loads there (docs/llama_cpp_check.md) and returns their equivalent config.json."""
    import importlib.util
    pytest.importorskip("gguf")
    spec = importlib.util.spec_from_file_location("llama_cpp_check", os.path.join(HERE, "..", "benchmarks",
                                                                                    "llama_cpp_check.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _lcpp_parts(model, **inputs):
    est = vramsym.estimate(model, "llama_cpp", inputs={"batch": 3, "seq": 1024, **inputs})
    return {c.name: c.bytes for c in est.all_components}


@pytest.mark.parametrize("arch, pattern", [("mamba", "sss"), ("mamba2", "mmmm"), ("granitehybrid", "mamam"),
                                           ("qwen3next", "gaga"), ("nemotron_h", "mafm")])
def test_recurrent_gguf_reads_as_its_config(tmp_path, llama_cpp_check, arch, pattern):
    # the GGUF (llama.cpp's conversion/*.py keys: ssm.conv_kernel, inner_size, state_size,
    # time_step_rank, group_count; head_count_kv / feed_forward_length per block; Qwen3-Next's
    # full_attention_interval) must give what the model's config.json gives: its KV, recurrent
    # state and compute buffer; the weights are the file's tensors
    gguf_path, cfg_path = tmp_path / f"{arch}.gguf", tmp_path / "config.json"
    cfg_path.write_text(json.dumps(llama_cpp_check.write_hybrid(str(gguf_path), arch, pattern)))
    from_file, from_cfg = _lcpp_parts(str(gguf_path)), _lcpp_parts(str(cfg_path))
    for name in ("lcpp_kv_cache", "lcpp_rs_cache", "lcpp_compute"):
        assert from_file[name] == from_cfg[name], name
    assert from_file["lcpp_rs_cache"] > 0 and (from_file["lcpp_kv_cache"] > 0) == ("a" in pattern)
    m = vramsym.load_model(str(gguf_path))
    assert from_file["lcpp_weights"] + from_file["lcpp_weights_host"] == m.checkpoint["weight_bytes"]
    assert m.config["model_type"] == json.loads(cfg_path.read_text())["model_type"]


def _recurrent_gguf(path, arch="granitehybrid", **kv):
    """A tiny recurrent GGUF header whose metadata ``kv`` (key after the architecture -> value, None
    to leave it out) replaces the usual."""
    gguf = pytest.importorskip("gguf")
    import numpy as np
    w = gguf.GGUFWriter(str(path), arch)
    keys = {"embedding_length": 64, "block_count": 2, "ssm.conv_kernel": 4, "ssm.inner_size": 128,
            "ssm.state_size": 16, "ssm.time_step_rank": 4, "ssm.group_count": 1, "attention.head_count": 4,
            "attention.head_count_kv": [0, 2], "feed_forward_length": 96, **kv}
    for key, value in keys.items():
        if value is None:
            continue
        if isinstance(value, list):
            w.add_array(f"{arch}.{key}", value)
        else:
            w.add_uint32(f"{arch}.{key}", value) if value >= 0 else w.add_int32(f"{arch}.{key}", value)
    w.add_token_list([f"t{i}".encode() for i in range(64)])
    w.add_tensor("token_embd.weight", np.zeros((64, 64), dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return str(path)


@pytest.mark.parametrize("arch, kv, needle", [
    ("granitehybrid", {"attention.head_count_kv": [0, 2, 2]}, "has 3 items, but block_count is 2"),
    ("granitehybrid", {"attention.head_count_kv": [0, -2]}, "not a whole number >= 0"),
    ("granitehybrid", {"ssm.state_size": None}, "ssm.state_size is not set"),
    ("granitehybrid", {"ssm.inner_size": 100}, "not a whole multiple of embedding_length 64"),
    ("mamba2", {"ssm.time_step_rank": 3}, "not a whole number of the 3 heads"),
    ("qwen3next", {"ssm.inner_size": 96}, "not time_step_rank 4 x state_size 16"),
    ("qwen3next", {"ssm.inner_size": 64}, "full_attention_interval is not set"),
    ("nemotron_h", {"feed_forward_length": None}, "feed_forward_length is not set"),
    ("jamba", {}, "recurrent (ssm.*) metadata whose layout vramsym does not read"),
    ("falcon-h1", {}, "recurrent (ssm.*) metadata whose layout vramsym does not read"),
])
def test_recurrent_gguf_metadata_that_cannot_be_read_is_exit_1(tmp_path, capsys, arch, kv, needle):
    path = _recurrent_gguf(tmp_path / "bad.gguf", arch, **kv)
    code, out, err = cli(capsys, "estimate", "--model", path, "--regime", "llama_cpp", "--batch", "1", "--seq", "64")
    assert code == ExitStatus.BAD_INPUT, (code, out, err)
    assert needle in err and "bad.gguf" in err and "Traceback" not in err, err


def test_gguf_per_layer_arrays_are_kept_up_to_a_bound(tmp_path):
    # integer arrays of at most MAX_ARRAY_KEPT items are read (per-block counts); longer ones are
    # walked and recorded by their count, and a field that needs a number says so
    from vramsym.catalog.gguf_file import MAX_ARRAY_KEPT, read_gguf
    path = _recurrent_gguf(tmp_path / "long.gguf", **{"attention.head_count_kv": [0, 2]})
    meta, _ = read_gguf(path)
    assert meta["granitehybrid.attention.head_count_kv"] == (0, 2)
    long = _recurrent_gguf(tmp_path / "long2.gguf", **{"attention.head_count_kv": [1] * (MAX_ARRAY_KEPT + 1)})
    with pytest.raises(InputError) as e:
        vramsym.load_model(long)
    assert f"an array of {MAX_ARRAY_KEPT + 1:,} items" in str(e.value)


# ---- Hugging Face ids from a cache in huggingface_hub's layout ----

def build_hub_cache(root, repo="tiny-org/tiny-llama", tensors=None, rev="0123456789abcdef0123456789abcdef01234567"):
    org, name = repo.split("/")
    base = root / f"models--{org}--{name}"
    snap = base / "snapshots" / rev
    snap.mkdir(parents=True)
    (base / "refs").mkdir()
    (base / "refs" / "main").write_text(rev)
    (snap / "config.json").write_text(json.dumps(TINY))
    tensors = tensors or dense_tensors(TINY)
    write_safetensors(snap / "model.safetensors", tensors)
    return tensors


@pytest.fixture
def hub_env(monkeypatch, tmp_path):
    pytest.importorskip("huggingface_hub")
    cache = tmp_path / "hub"
    cache.mkdir()
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return cache


def test_hub_id_from_the_cache_offline(hub_env, capsys):
    tensors = build_hub_cache(hub_env)
    data = estimate_json(capsys, "--model", "tiny-org/tiny-llama")
    assert weights_of(data) == header_bytes(tensors)
    assert data["options"]["weights_source"] == "file"


def test_hub_id_through_hf_home(monkeypatch, tmp_path, capsys):
    pytest.importorskip("huggingface_hub")
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    (tmp_path / "home" / "hub").mkdir(parents=True)
    tensors = build_hub_cache(tmp_path / "home" / "hub")
    m = vramsym.load_model("tiny-org/tiny-llama")
    assert m.checkpoint["weight_bytes"] == header_bytes(tensors)
    assert m.hf_id == "tiny-org/tiny-llama"


def test_an_unreachable_hub_is_offline_at_once(hub_env, monkeypatch, capsys):
    """Without HF_HUB_OFFLINE and without a network, the cache still answers and a model that is not
    in it fails at once (not after huggingface_hub's 25 s of retries), saying the Hub cannot be reached."""
    import socket
    import time
    from vramsym.catalog import hub_client

    def no_dns(*a, **k):
        raise socket.gaierror("Name or service not known")
    monkeypatch.delenv("HF_HUB_OFFLINE")
    monkeypatch.setattr(hub_client, "offline", lambda: False)
    monkeypatch.setattr(socket, "getaddrinfo", no_dns)
    tensors = build_hub_cache(hub_env)
    assert weights_of(estimate_json(capsys, "--model", "tiny-org/tiny-llama")) == header_bytes(tensors)
    t = time.monotonic()
    code, out, err = cli(capsys, "estimate", "--model", "nobody/not-cached", "--batch", "1", "--seq", "8")
    assert code == ExitStatus.BAD_INPUT and time.monotonic() - t < 10
    assert "cannot be reached" in err and "HF_HUB_CACHE" in err


def test_hub_id_not_cached_offline_is_exit_1_with_both_ways_out(hub_env, capsys):
    code, out, err = cli(capsys, "estimate", "--model", "nobody/not-cached", "--batch", "1", "--seq", "8")
    assert code == ExitStatus.BAD_INPUT
    assert "not in the Hugging Face cache" in err and "HF_HUB_OFFLINE" in err and "HF_HUB_CACHE" in err
    assert "Traceback" not in err


def test_catalog_names_and_paths_win_over_hub_ids(hub_env, tmp_path, monkeypatch, capsys):
    assert vramsym.load_model("llama-3.1-8b").checkpoint is None
    d = make_dir(tmp_path / "org" / "name", TINY, dense_tensors(TINY))
    monkeypatch.chdir(tmp_path)
    assert vramsym.load_model("org/name").source == str(d.relative_to(tmp_path))   # the folder, not the hub
    from vramsym.catalog.hub import is_hub_id
    assert is_hub_id("meta-llama/Llama-3.1-8B")
    assert not is_hub_id("foo/config.json") and not is_hub_id("a/b/c") and not is_hub_id("../x")


# ---- hostile headers ----

def raw_safetensors(path, header_bytes_, data=b"", length=None):
    n = len(header_bytes_) if length is None else length
    path.write_bytes(struct.pack("<Q", n) + header_bytes_ + data)


def ckpt_dir(tmp_path):
    d = tmp_path / "bad"
    d.mkdir(exist_ok=True)
    (d / "config.json").write_text(json.dumps(TINY))
    return d


def header(**tensors):
    return json.dumps(tensors).encode()


@pytest.mark.parametrize("make,needle", [
    (lambda p: p.write_bytes(b"\x01\x02"), "shorter than the 8-byte"),
    (lambda p: raw_safetensors(p, b"{}", length=2**40), "more than"),
    (lambda p: raw_safetensors(p, b"{}", length=1000), "truncated"),
    (lambda p: raw_safetensors(p, b"not json"), "not valid JSON"),
    (lambda p: raw_safetensors(p, b"\xff\xfe"), "not UTF-8"),
    (lambda p: raw_safetensors(p, b"[1, 2]"), "not an object"),
    (lambda p: raw_safetensors(p, b"[" * 100000), "nests too deeply"),
    (lambda p: raw_safetensors(p, header(w={"dtype": "F17", "shape": [2], "data_offsets": [0, 4]}), bytes(4)), "unknown dtype"),
    (lambda p: raw_safetensors(p, header(w={"dtype": "F16", "shape": [-2], "data_offsets": [0, 4]}), bytes(4)), "shape"),
    (lambda p: raw_safetensors(p, header(w={"dtype": "F16", "shape": [2**62] * 30, "data_offsets": [0, 4]}), bytes(4)), "data_offsets span"),
    (lambda p: raw_safetensors(p, header(w={"dtype": "F16", "shape": [2], "data_offsets": [0, 4000]}), bytes(4)), "outside"),
    (lambda p: raw_safetensors(p, header(w={"dtype": "F16", "shape": [2], "data_offsets": [4, 0]}), bytes(4)), "data_offsets"),
    (lambda p: raw_safetensors(p, header(a={"dtype": "F16", "shape": [2], "data_offsets": [0, 4]},
                                         b={"dtype": "F16", "shape": [2], "data_offsets": [2, 6]}), bytes(8)), "overlap"),
    (lambda p: raw_safetensors(p, b'{"w": {"dtype": "F16", "shape": [2], "data_offsets": [0, 4]}, '
                                  b'"w": {"dtype": "F16", "shape": [2], "data_offsets": [0, 4]}}', bytes(4)), "twice"),
    (lambda p: raw_safetensors(p, header(w={"dtype": "F16", "shape": [2], "data_offsets": [0, 4]}, **{"__metadata__": {"x": "y"}})
                               + b"", bytes(2)), "outside"),
])
def test_malformed_safetensors_headers_are_exit_1_naming_the_file(tmp_path, capsys, make, needle):
    d = ckpt_dir(tmp_path)
    make(d / "model.safetensors")
    code, out, err = cli(capsys, "estimate", "--model", str(d), "--batch", "1", "--seq", "8")
    assert code == ExitStatus.BAD_INPUT, (code, err)
    assert needle in err and "model.safetensors" in err, err


def test_an_index_pointing_outside_the_folder_is_refused(tmp_path, capsys):
    d = ckpt_dir(tmp_path)
    write_safetensors(tmp_path / "outside.safetensors", {"w": ("F16", (2,))})
    (d / "model.safetensors.index.json").write_text(json.dumps({"weight_map": {"w": "../outside.safetensors"}}))
    code, out, err = cli(capsys, "estimate", "--model", str(d), "--batch", "1", "--seq", "8")
    assert code == ExitStatus.BAD_INPUT and "not a file of the folder" in err, err


@pytest.mark.parametrize("cut", [3, 10, 24, 40, 200, 2000, -100])
def test_truncated_gguf_is_exit_1_naming_the_file(tmp_path, capsys, cut):
    write_gguf(tmp_path / "full.gguf")
    raw = (tmp_path / "full.gguf").read_bytes()
    bad = tmp_path / "cut.gguf"
    bad.write_bytes(raw[:cut])
    code, out, err = cli(capsys, "estimate", "--model", str(bad), "--batch", "1", "--seq", "8")
    assert code == ExitStatus.BAD_INPUT, (code, err)
    assert "cut.gguf" in err, err


def gguf_kv(key, vtype, payload):
    return struct.pack("<Q", len(key)) + key + struct.pack("<I", vtype) + payload


@pytest.mark.parametrize("kv,needle", [
    (gguf_kv(b"general.junk", 9, struct.pack("<IQ", 0, 2**40)), "past the end"),       # u8 array of 2^40
    (gguf_kv(b"general.junk", 9, struct.pack("<IQ", 8, 2**40)), "more than the rest"),  # 2^40 strings
    (gguf_kv(b"general.junk", 8, struct.pack("<Q", 2**63)), "past the end"),            # a huge string
    (gguf_kv(b"general.junk", 77, b""), "unknown value type"),
    (struct.pack("<Q", 2**62), "past the end"),                                         # a huge key
])
def test_gguf_lengths_past_the_file_are_refused_without_looping(tmp_path, capsys, kv, needle):
    pytest.importorskip("gguf")
    p = tmp_path / "claims.gguf"
    p.write_bytes(b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + kv + bytes(64))
    code, out, err = cli(capsys, "estimate", "--model", str(p), "--batch", "1", "--seq", "8")
    assert code == ExitStatus.BAD_INPUT, (code, err)
    assert needle in err and "claims.gguf" in err, err


# ---- fuzz: whatever the header says, exit 0 or exit 1 with a sentence, never a traceback ----

FUZZ = settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))

_json_scalar = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(allow_nan=False),
                         st.text(max_size=8))
_entry = st.fixed_dictionaries({}, optional={
    "dtype": st.one_of(st.sampled_from(["F16", "BF16", "F32", "I32", "U8", "F4", "X"]), _json_scalar),
    "shape": st.one_of(st.lists(st.integers(-3, 2**64), max_size=6), _json_scalar),
    "data_offsets": st.one_of(st.lists(st.integers(-10, 2**64), min_size=0, max_size=3), _json_scalar)})


@FUZZ
@given(tensors=st.dictionaries(st.text(min_size=1, max_size=12), st.one_of(_entry, _json_scalar), max_size=4),
       data_len=st.integers(0, 64), length_delta=st.sampled_from([0, 0, 0, 1, -1, 2**33]),
       junk=st.binary(max_size=16))
def test_fuzz_safetensors_headers(tmp_path_factory, capsys, tensors, data_len, length_delta, junk):
    d = ckpt_dir(tmp_path_factory.mktemp("fz"))
    raw = json.dumps(tensors).encode() + junk
    raw_safetensors(d / "model.safetensors", raw, bytes(data_len), length=max(0, len(raw) + length_delta))
    try:
        m = vramsym.load_model(str(d))
    except InputError as e:
        assert "model.safetensors" in str(e) or "config" in str(e), str(e)
        return
    assert m.checkpoint["weight_bytes"] <= data_len


@FUZZ
@given(vtype=st.integers(0, 14), itype=st.integers(0, 14), count=st.integers(0, 2**64 - 1),
       n_kv=st.integers(0, 2**64 - 1), tail=st.binary(max_size=64))
def test_fuzz_gguf_metadata_claims(tmp_path_factory, vtype, itype, count, n_kv, tail):
    pytest.importorskip("gguf")
    p = tmp_path_factory.mktemp("gm") / "claims.gguf"
    p.write_bytes(b"GGUF" + struct.pack("<IQQ", 3, 0, n_kv) + gguf_kv(b"k", vtype, struct.pack("<IQ", itype, count)) + tail)
    try:
        vramsym.load_model(str(p))
    except InputError as e:
        assert "claims.gguf" in str(e), str(e)


@FUZZ
@given(cut=st.integers(0, 4000), flips=st.lists(st.tuples(st.integers(0, 4000), st.integers(0, 255)), max_size=4))
def test_fuzz_gguf_headers(tmp_path_factory, cut, flips):
    d = tmp_path_factory.mktemp("gz")
    write_gguf(d / "full.gguf")
    raw = bytearray((d / "full.gguf").read_bytes())
    for pos, val in flips:
        if pos < len(raw):
            raw[pos] = val
    bad = d / "bad.gguf"
    bad.write_bytes(bytes(raw[:len(raw) - cut]))
    try:
        m = vramsym.load_model(str(bad))
    except InputError as e:
        assert "bad.gguf" in str(e), str(e)
        return
    assert m.checkpoint["weight_bytes"] <= len(raw)


# ---- a config.json alone that declares its quantization (issue 24: never a silent dense count) ----

TINY_GPT_OSS = {"model_type": "gpt_oss", "hidden_size": 64, "intermediate_size": 64, "num_hidden_layers": 2,
                "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "num_local_experts": 4,
                "num_experts_per_tok": 2, "vocab_size": 128, "sliding_window": 8,
                "layer_types": ["sliding_attention", "full_attention"], "tie_word_embeddings": False,
                "quantization_config": {"quant_method": "mxfp4",
                                        "modules_to_not_convert": ["model.layers.*.self_attn", "model.layers.*.mlp.router",
                                                                   "model.embed_tokens", "lm_head"]}}


def test_a_config_that_declares_mxfp4_counts_its_experts_in_mxfp4(tmp_path, capsys):
    """gpt-oss's config.json declares quant_method mxfp4: read as dense it was 2.7x its checkpoint.
    The routed experts' matrices are counted in MXFP4 (4.25 bits), everything else 16-bit, and the
    notes say the format came from the config; --quant none still counts the dense model."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps(TINY_GPT_OSS))
    data = estimate_json(capsys, "--model", str(path))
    assert data["options"]["quant"] == "mxfp4"
    assert any("quant_method mxfp4" in n and "config.json only" in n for n in data["notes"])
    dense = estimate_json(capsys, "--model", str(path), "--quant", "none")
    h, i_moe, e, layers = 64, 64, 4, 2
    experts = layers * e * 3 * h * i_moe           # gate_up (2I x h) and down (h x I) per expert
    assert weights_of(dense) - weights_of(data) == experts * 2 - experts * 17 // 32
    no_qc = dict(TINY_GPT_OSS)
    del no_qc["quantization_config"]
    path.write_text(json.dumps(no_qc))
    assert estimate_json(capsys, "--model", str(path))["options"]["quant"] == "none"


def test_a_config_that_declares_gptq_reads_its_group_size(tmp_path, capsys):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(dict(TINY, quantization_config={"quant_method": "gptq", "bits": 4, "group_size": 32})))
    data = estimate_json(capsys, "--model", str(path))
    assert data["options"]["quant"] == "gptq"
    m = vramsym.load_model(str(path))
    assert m.config["ckpt_group_size"] == 32


@pytest.mark.parametrize("qc", [{"quant_method": "hqq"}, {"quant_method": "gptq", "bits": 3}, "mxfp4"])
def test_a_config_that_declares_a_format_without_a_formula_warns(tmp_path, capsys, qc):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(dict(TINY, quantization_config=qc)))
    data = estimate_json(capsys, "--model", str(path))
    assert data["options"]["quant"] == "none"
    warning = [n for n in data["notes"] if "WARNING: the weights are counted unquantized" in n]
    assert len(warning) == 1 and "headers" not in warning[0]


# ---- llama.cpp from a config and --quant, no GGUF file (issue 24) ----

def _use_more_bits(i, n):
    """llama.cpp src/llama-quant.cpp use_more_bits, with C++ integer division."""
    return i < n // 8 or i >= 7 * n // 8 or (i - n // 8) % 3 == 2


def _gguf_bytes(cfg, quant):
    """The GGUF tensors of a Llama config enumerated one by one with llama-quantize's rules for the
    file types Q8_0, Q4_0 and Q4_K_M (an independent count of what the formulas sum): (GPU, host)."""
    rate = {"q8_0": 34 / 32, "q4_0": 18 / 32, "q4_k_m": 144 / 256, "q6_k": 210 / 256}
    h, i_ff, n, v = cfg["hidden_size"], cfg["intermediate_size"], cfg["num_hidden_layers"], cfg["vocab_size"]
    d = h // cfg["num_attention_heads"]
    kv = cfg["num_key_value_heads"] * d
    out = rate["q6_k"] if quant in ("q4_0", "q4_k_m") else rate[quant]
    gpu = v * h * out + (n * 2 * h + h) * 4                      # output, the F32 norms
    for i in range(n):
        more = quant == "q4_k_m" and _use_more_bits(i, n)
        gpu += (h * h + h * kv + h * h + 2 * h * i_ff) * rate[quant]          # q, k, o, gate, up
        gpu += (h * kv + i_ff * h) * (rate["q6_k"] if more else rate[quant])  # v, down
    host = v * h * (out if cfg["tie_word_embeddings"] else rate[quant])
    return gpu, host


@pytest.mark.parametrize("quant", ["q8_0", "q4_0", "q4_k_m"])
@pytest.mark.parametrize("layers,tie", [(32, False), (9, True), (1, False)])
def test_llama_cpp_from_a_config_counts_the_gguf_tensor_types(tmp_path, capsys, quant, layers, tie):
    """`--regime llama_cpp` on a config.json with --quant failed ('missing value for W_file'): the
    GGUF's tensors are counted from the config in the types llama-quantize gives them (Q4_K_M: Q6_K
    for the output and for attn_v and ffn_down of the use_more_bits layers), to the byte of an
    independent per-tensor enumeration."""
    cfg = dict(TINY, hidden_size=256, intermediate_size=512, num_hidden_layers=layers, num_attention_heads=4,
               num_key_value_heads=2, vocab_size=512, tie_word_embeddings=tie)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    data = estimate_json(capsys, "--model", str(path), "--regime", "llama_cpp", "--quant", quant)
    got = {c["name"]: c["bytes"] for c in data["components"]}
    gpu, host = _gguf_bytes(cfg, quant)
    assert got["lcpp_weights"] == int(gpu) and got["lcpp_weights_host"] == int(host)


def test_the_ggml_type_table_is_llama_cpp_s():
    """formulas/ggml_types.json (read when a GGUF is, so that reading one needs neither numpy nor the
    gguf package) holds llama.cpp's gguf-py table: every type's number, name, block and block bytes."""
    gguf = pytest.importorskip("gguf")
    from vramsym.catalog.gguf_file import ggml_types
    theirs = {int(q): (q.name, b, t) for q, (b, t) in gguf.GGML_QUANT_SIZES.items()}
    assert ggml_types() == theirs


def test_reading_a_gguf_imports_neither_numpy_nor_gguf(tmp_path):
    """A GGUF command costs what any other costs: the header walk is plain Python (benchmarks/startup.py
    times it against a catalog estimate)."""
    import subprocess
    import sys
    write_gguf(tmp_path / "tiny.gguf")
    code = ("import sys, vramsym; vramsym.load_model(sys.argv[1]); "
            "print(sorted(m for m in ('numpy', 'gguf') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "tiny.gguf")], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == "[]", out.stderr


# ---- llama.cpp's -ngl: partial offload (issue 25) ----

def _offloaded(n_layer, ngl):
    """Which layers llama.cpp puts on the GPU for -ngl: src/llama-model.cpp load_tensors, written out
    (i_gpu_start, act_gpu_layers; layer n_layer is the output layer)."""
    i_gpu_start = max(n_layer + 1 - ngl, 0)
    act = min(ngl, n_layer + 1)
    return [il for il in range(n_layer + 1) if not (il < i_gpu_start or il - i_gpu_start >= act)]


def _gguf_bytes_by_layer(cfg, quant):
    """Each block's bytes and the output layer's, from the same per-tensor enumeration as _gguf_bytes."""
    rate = {"q8_0": 34 / 32, "q4_0": 18 / 32, "q4_k_m": 144 / 256, "q6_k": 210 / 256}
    h, i_ff, n, v = cfg["hidden_size"], cfg["intermediate_size"], cfg["num_hidden_layers"], cfg["vocab_size"]
    kv = cfg["num_key_value_heads"] * (h // cfg["num_attention_heads"])
    out = rate["q6_k"] if quant in ("q4_0", "q4_k_m") else rate[quant]
    blocks = []
    for i in range(n):
        more = quant == "q4_k_m" and _use_more_bits(i, n)
        blocks.append((h * h + h * kv + h * h + 2 * h * i_ff) * rate[quant] + 2 * h * 4
                      + (h * kv + i_ff * h) * (rate["q6_k"] if more else rate[quant]))
    return blocks, v * h * out + h * 4


@pytest.mark.parametrize("quant", ["q4_k_m", "q8_0"])
@pytest.mark.parametrize("layers", [9, 32])
def test_gpu_layers_place_the_output_first_then_the_last_blocks(tmp_path, capsys, quant, layers):
    """-ngl N: the GPU holds the output layer and the last N - 1 blocks, to the byte of a per-layer
    enumeration with llama.cpp's placement rule and llama-quantize's per-layer types; the host holds
    the rest (the token embedding always); the KV of each layer is on its layer's device."""
    cfg = dict(TINY, hidden_size=256, intermediate_size=512, num_hidden_layers=layers, num_attention_heads=4,
               num_key_value_heads=2, vocab_size=512)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    blocks, output = _gguf_bytes_by_layer(cfg, quant)
    whole = None
    for ngl in sorted({0, 1, 2, 3, layers // 2, layers - 1, layers, layers + 1}):
        data = estimate_json(capsys, "--model", str(path), "--regime", "llama_cpp", "--quant", quant,
                             "--gpu-layers", str(ngl))
        got = {c["name"]: c["bytes"] for c in data["components"]}
        on = _offloaded(layers, ngl)
        gpu = sum(blocks[i] for i in on if i < layers) + (output if layers in on else 0)
        assert got["lcpp_weights"] == int(gpu), ngl
        total = got["lcpp_weights"] + got["lcpp_weights_host"]
        assert whole is None or total == whole
        whole = total
        per_layer_kv = (got["lcpp_kv_cache"] + got.get("lcpp_kv_cache_host", 0)) // layers
        assert got["lcpp_kv_cache"] == per_layer_kv * len([i for i in on if i < layers])


def test_solve_max_gpu_layers_fits_and_one_more_does_not(capsys):
    """`solve max_gpu_layers` for a card too small for the whole model: the answer's estimate fits,
    one more layer's does not; a card that holds everything answers L + 1."""
    argv = ["--model", "llama-3.1-8b", "--regime", "llama_cpp", "--quant", "q4-k-m", "--seq", "4096", "--batch", "1"]
    code, out, err = run_cli(["solve", "max_gpu_layers", *argv, "--gpu", "4GB", "--json"])
    assert code == 0, err
    n = json.loads(out)["value"]
    assert 0 < n < 33
    at = json.loads(run_cli(["estimate", *argv, "--gpu-layers", str(n), "--gpu", "4GB", "--json"])[1])
    over = json.loads(run_cli(["estimate", *argv, "--gpu-layers", str(n + 1), "--gpu", "4GB", "--json"])[1])
    assert at["fits"] and not over["fits"]
    assert json.loads(run_cli(["solve", "max_gpu_layers", *argv, "--gpu", "80GB", "--json"])[1])["value"] == 33


@pytest.mark.parametrize("value,needle", [("-1", "must be non-negative"), ("999", "at most L + 1 = 33"),
                                          ("2.5", "a whole number"), ("all", "not a number")])
def test_a_bad_gpu_layers_is_exit_1_with_a_sentence(value, needle):
    code, _, err = run_cli(["estimate", "--model", "llama-3.1-8b", "--regime", "llama_cpp", "--quant", "q4-k-m",
                            "--seq", "512", "--batch", "1", "--gpu-layers", value])
    assert code == 1 and "gpu_layers" in err and needle in err and "Traceback" not in err


def test_a_gguf_file_partly_offloaded_keeps_the_rest_on_the_host(tmp_path, capsys):
    sizes = write_gguf(tmp_path / "tiny.gguf")
    embd, out = sizes["token_embd.weight"], sizes["output.weight"] + sizes["output_norm.weight"]
    blocks = sum(sizes.values()) - embd - out
    for ngl, gpu in [(0, 0), (1, out), (2, out + blocks // 2), (3, out + blocks)]:
        data = estimate_json(capsys, "--model", str(tmp_path / "tiny.gguf"), "--regime", "llama_cpp",
                             "--gpu-layers", str(ngl))
        got = {c["name"]: c["bytes"] for c in data["components"]}
        assert got["lcpp_weights"] == gpu and got["lcpp_weights"] + got["lcpp_weights_host"] == sum(sizes.values())


@pytest.mark.parametrize("name,window,swa", [("gemma-3-12b", 1024, True), ("gpt-oss-20b", 128, True),
                                             ("mistral-7b-v0.1", 4096, False)])
@pytest.mark.parametrize("seq,ubatch,batch", [(32768, 512, 1), (1000, 512, 1), (8192, 128, 4)])
def test_llama_cpp_keeps_a_window_sized_cache_for_the_sliding_layers(name, window, swa, seq, ubatch, batch):
    """llama_kv_cache_iswa: the sliding layers get GGML_PAD(min(n_ctx_seq, n_swa + n_ubatch), 256) cells per
    sequence, the others n_ctx_seq, written out here from llama.cpp's source; Mistral-7B-v0.1's GGUF is
    llama.cpp's llama architecture, which has no window (its cache is full in every layer)."""
    model = vramsym.load_model(name)
    cfg = model.config
    r = vramsym.compile(model, "llama_cpp", {"quant": "q8_0"})
    est = r.evaluate(batch=batch, seq=seq, n_ubatch=ubatch)
    kv = next(c.bytes for c in est.components if c.name == "lcpp_kv_cache")
    pad = lambda x: -(-x // 256) * 256        # noqa: E731
    ctx = pad(seq)
    layers = cfg["num_hidden_layers"]
    sliding = est.binding.values["L_swa"] if swa else 0
    assert cfg.get("sliding_window") == window and (sliding > 0) == swa
    cells = batch * ((layers - sliding) * ctx + sliding * pad(min(ctx, window + ubatch)))
    d = cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]
    assert kv == cells * cfg["num_key_value_heads"] * d * 2 * 2
    # --kv-unified 1 (llama-server's default slots): one stream of GGML_PAD(b x s, 256) cells, the sliding
    # layers' window once per sequence it holds
    uni = r.evaluate(batch=batch, seq=seq, n_ubatch=ubatch, kv_unified=1)
    kv_uni = next(c.bytes for c in uni.components if c.name == "lcpp_kv_cache")
    n_ctx = pad(batch * seq)
    cells = (layers - sliding) * n_ctx + sliding * pad(min(n_ctx, window * batch + ubatch))
    assert kv_uni == cells * cfg["num_key_value_heads"] * d * 2 * 2
    # --swa-full 1 (the C API's default, llama-cpp-python's): every layer's cache is n_ctx_seq
    full = r.evaluate(batch=batch, seq=seq, n_ubatch=ubatch, swa_full=1)
    kv_full = next(c.bytes for c in full.components if c.name == "lcpp_kv_cache")
    assert kv_full == batch * layers * ctx * cfg["num_key_value_heads"] * d * 2 * 2
