"""Hostile model files (issue 19): checkpoint folders, safetensors, GGUF, the Hugging Face cache,
config.json. Every case ends in exit 1 with a sentence naming the file or field the user gave:
never a traceback, a hang, exit 70, a silent fall-back or a file read from outside the folder."""
import json
import os
import signal
import struct
import time

import pytest

import vramsym
from vramsym.cli import ExitStatus, main
from vramsym.errors import InputError

from test_checkpoints import TINY, build_hub_cache, dense_tensors, header_bytes, hub_env, write_safetensors  # noqa: F401


SECRET = "PRIVATE-7f3a9c-DO-NOT-PRINT"
EST = ("estimate", "--batch", "1", "--seq", "8")


@pytest.fixture(autouse=True)
def no_hang():
    """A hang (a FIFO opened for reading, /dev/zero read to the end) fails the test instead."""
    def boom(*_):
        raise TimeoutError("hung")
    old = signal.signal(signal.SIGALRM, boom)
    signal.alarm(30)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)


def cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert code != ExitStatus.INTERNAL, err
    assert "Traceback" not in err, err
    assert SECRET not in out and SECRET not in err, err
    return code, out, err


def refused(capsys, model, *needles):
    code, out, err = cli(capsys, *EST, "--model", str(model))
    assert code == ExitStatus.BAD_INPUT, (code, out, err)
    for n in needles:
        assert n in err, (n, err)
    return err


def secret_safetensors(path):
    """A valid safetensors file whose header carries the secret (were it read, it could be echoed)."""
    write_safetensors(path, {SECRET: ("F16", (2,))}, metadata={"secret": SECRET})
    return path


def folder(tmp_path, name="ckpt"):
    d = tmp_path / name
    d.mkdir()
    (d / "config.json").write_text(json.dumps(TINY))
    return d


# ---- 1. files outside the folder are never read ----

def test_model_safetensors_symlinked_outside_the_folder_is_refused(tmp_path, capsys):
    d = folder(tmp_path)
    os.symlink(secret_safetensors(tmp_path / "private.safetensors"), d / "model.safetensors")
    refused(capsys, d, "model.safetensors", "outside")


def test_config_json_symlinked_outside_the_folder_is_refused(tmp_path, capsys):
    d = tmp_path / "ckpt"
    d.mkdir()
    (tmp_path / "private.json").write_text(json.dumps({**TINY, "note": SECRET}))
    os.symlink(tmp_path / "private.json", d / "config.json")
    refused(capsys, d, "config.json", "outside")


def test_a_symlink_inside_the_folder_is_read(tmp_path, capsys):
    d = folder(tmp_path)
    os.mkdir(d / "blobs")
    write_safetensors(d / "blobs" / "w", dense_tensors(TINY))
    os.symlink("blobs/w", d / "model.safetensors")
    assert vramsym.load_model(str(d)).checkpoint["weight_bytes"] == header_bytes(dense_tensors(TINY))


def test_an_index_entry_symlinked_outside_the_folder_is_refused(tmp_path, capsys):
    d = folder(tmp_path)
    os.symlink(secret_safetensors(tmp_path / "private.safetensors"), d / "model-00001-of-00001.safetensors")
    (d / "model.safetensors.index.json").write_text(json.dumps({"weight_map": {SECRET: "model-00001-of-00001.safetensors"}}))
    refused(capsys, d, "model-00001-of-00001.safetensors", "outside")


def test_an_index_symlinked_outside_the_folder_is_refused(tmp_path, capsys):
    d = folder(tmp_path)
    (tmp_path / "private.json").write_text(json.dumps({"weight_map": {"w": SECRET}}))
    os.symlink(tmp_path / "private.json", d / "model.safetensors.index.json")
    refused(capsys, d, "model.safetensors.index.json", "outside")


def test_a_hub_snapshot_file_symlinked_outside_the_cache_is_refused(hub_env, tmp_path, capsys):
    build_hub_cache(hub_env)
    snap = next((hub_env / "models--tiny-org--tiny-llama" / "snapshots").iterdir())
    os.remove(snap / "model.safetensors")
    os.symlink(secret_safetensors(tmp_path / "private.safetensors"), snap / "model.safetensors")
    refused(capsys, "tiny-org/tiny-llama", "model.safetensors", "outside")


def test_a_hub_snapshot_config_symlinked_outside_the_cache_is_refused(hub_env, tmp_path, capsys):
    build_hub_cache(hub_env)
    snap = next((hub_env / "models--tiny-org--tiny-llama" / "snapshots").iterdir())
    (tmp_path / "private.json").write_text(json.dumps({**TINY, "note": SECRET}))
    os.remove(snap / "config.json")
    os.symlink(tmp_path / "private.json", snap / "config.json")
    refused(capsys, "tiny-org/tiny-llama", "config.json", "outside")


def test_hub_snapshot_files_are_read_through_the_blobs(hub_env, capsys):
    """huggingface_hub's own layout: snapshot files are symlinks to ../../blobs/<hash>."""
    tensors = build_hub_cache(hub_env)
    base = hub_env / "models--tiny-org--tiny-llama"
    snap = next((base / "snapshots").iterdir())
    (base / "blobs").mkdir()
    for f in ("config.json", "model.safetensors"):
        os.rename(snap / f, base / "blobs" / f"blob-{f}")
        os.symlink(f"../../blobs/blob-{f}", snap / f)
    assert vramsym.load_model("tiny-org/tiny-llama").checkpoint["weight_bytes"] == header_bytes(tensors)


@pytest.mark.parametrize("ref", ["../../..", "ABSOLUTE", "main", "0123456789abcdef" * 2 + "/../../x", ""])
def test_a_hub_ref_that_is_not_a_commit_hash_is_refused(hub_env, tmp_path, capsys, ref):
    build_hub_cache(hub_env)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    for d in (elsewhere, tmp_path):      # what '../../..' and the absolute path reach
        (d / "config.json").write_text(json.dumps({**TINY, "note": SECRET}))
        secret_safetensors(d / "model.safetensors")
    (hub_env / "models--tiny-org--tiny-llama" / "refs" / "main").write_text(
        str(elsewhere) if ref == "ABSOLUTE" else ref)
    refused(capsys, "tiny-org/tiny-llama", "refs/main", "commit hash")


def test_a_hub_ref_symlinked_outside_the_cache_is_refused(hub_env, tmp_path, capsys):
    build_hub_cache(hub_env)
    ref = hub_env / "models--tiny-org--tiny-llama" / "refs" / "main"
    (tmp_path / "private").write_text(SECRET)
    os.remove(ref)
    os.symlink(tmp_path / "private", ref)
    refused(capsys, "tiny-org/tiny-llama", "refs/main", "outside")


def test_a_64_digit_hub_ref_is_accepted(hub_env, capsys):
    tensors = build_hub_cache(hub_env, rev="ab" * 32)
    assert vramsym.load_model("tiny-org/tiny-llama").checkpoint["weight_bytes"] == header_bytes(tensors)


# ---- 2. and 3. special files: refused before they are opened, never a fall-back ----

def test_a_fifo_config_json_in_a_folder_does_not_hang(tmp_path, capsys):
    d = tmp_path / "ckpt"
    d.mkdir()
    os.mkfifo(d / "config.json")
    t = time.monotonic()
    refused(capsys, d, "config.json", "FIFO")
    assert time.monotonic() - t < 5


def test_a_fifo_config_json_as_a_path_does_not_hang(tmp_path, capsys):
    os.mkfifo(tmp_path / "config.json")
    refused(capsys, tmp_path / "config.json", "config.json", "FIFO")


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
def test_config_json_linked_to_dev_zero_is_refused_at_once(tmp_path, capsys):
    d = tmp_path / "ckpt"
    d.mkdir()
    os.symlink("/dev/zero", d / "config.json")
    t = time.monotonic()
    refused(capsys, d, "config.json")
    refused(capsys, "/dev/zero", "/dev/zero", "not a regular file")
    os.symlink("/dev/zero", tmp_path / "zero.json")
    refused(capsys, tmp_path / "zero.json", "zero.json", "not a regular file")
    assert time.monotonic() - t < 5


def _dangling(p):
    os.symlink(p.parent / "missing.bin", p)


def _fifo(p):
    os.mkfifo(p)


def _zero(p):
    os.symlink("/dev/zero", p)


def _folder(p):
    p.mkdir()


@pytest.mark.parametrize("make,needle", [(_dangling, "dangling"), (_fifo, "FIFO"), (_zero, "outside"),
                                         (_folder, "folder")])
@pytest.mark.parametrize("name", ["model.safetensors", "model-00001-of-00002.safetensors"])
def test_an_unusable_weight_file_is_an_error_not_a_fall_back(tmp_path, capsys, make, needle, name):
    d = folder(tmp_path)
    make(d / name)
    refused(capsys, d, name, needle)


def test_an_unusable_index_entry_is_an_error(tmp_path, capsys):
    d = folder(tmp_path)
    os.mkfifo(d / "model-1.safetensors")
    (d / "model.safetensors.index.json").write_text(json.dumps({"weight_map": {"w": "model-1.safetensors"}}))
    refused(capsys, d, "model-1.safetensors", "FIFO")


def test_a_fifo_index_does_not_hang(tmp_path, capsys):
    d = folder(tmp_path)
    os.mkfifo(d / "model.safetensors.index.json")
    refused(capsys, d, "model.safetensors.index.json", "FIFO")


def test_a_fifo_gguf_does_not_hang(tmp_path, capsys):
    os.mkfifo(tmp_path / "m.gguf")
    refused(capsys, tmp_path / "m.gguf", "m.gguf", "FIFO")


def test_a_fifo_hub_ref_does_not_hang(hub_env, capsys):
    build_hub_cache(hub_env)
    ref = hub_env / "models--tiny-org--tiny-llama" / "refs" / "main"
    os.remove(ref)
    os.mkfifo(ref)
    refused(capsys, "tiny-org/tiny-llama", "refs/main", "FIFO")


def test_an_oversized_hub_ref_is_refused(hub_env, capsys):
    build_hub_cache(hub_env)
    (hub_env / "models--tiny-org--tiny-llama" / "refs" / "main").write_text("0" * 10_000)
    refused(capsys, "tiny-org/tiny-llama", "refs/main", "larger than")


# ---- 4. internal fields are internal ----

@pytest.mark.parametrize("field", ["ckpt_weight_bytes", "ckpt_weights_source", "ckpt_quant", "ckpt_group_size",
                                   "ckpt_format", "ckpt_embd_bytes", "ckpt_anything"])
@pytest.mark.parametrize("where", ["top", "text_config"])
def test_a_config_cannot_set_vramsym_s_checkpoint_fields(tmp_path, capsys, field, where):
    value = {"ckpt_weights_source": "file", "ckpt_quant": "gptq", "ckpt_format": "gguf"}.get(field, 1)
    cfg = dict(TINY)
    if where == "top":
        cfg[field] = value
    else:
        cfg = {"model_type": "llava", "text_config": {**TINY, field: value}}
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    refused(capsys, tmp_path / "config.json", field)
    d = folder(tmp_path, "withweights")
    (d / "config.json").write_text(json.dumps(cfg))
    write_safetensors(d / "model.safetensors", dense_tensors(TINY))
    refused(capsys, d, field)


# ---- GGUF files written by hand (struct), so that each field can lie ----

def _s(b):
    b = b.encode() if isinstance(b, str) else b
    return struct.pack("<Q", len(b)) + b


def kv(key, vtype, payload):
    return _s(key) + struct.pack("<I", vtype) + payload


def kv_u32(key, v):
    return kv(key, 4, struct.pack("<I", v))


def kv_str(key, v):
    return kv(key, 8, _s(v))


def kv_f32(key, v):
    return kv(key, 6, struct.pack("<f", v))


def kv_str_array(key, items):
    return kv(key, 9, struct.pack("<IQ", 8, len(items)) + b"".join(_s(i) for i in items))


H, NH, NKV, FF, V, L = 64, 4, 2, 128, 32, 2


def llama_tensors(blocks=range(L), q_out=H, k_out=H // NH * NKV, extra=()):
    """(name, dims in GGUF order: ne[0] the input, ne[1] the outputs) of a tiny llama, all F32."""
    out = [("token_embd.weight", [H, V]), ("output_norm.weight", [H]), ("output.weight", [H, V])]
    for i in blocks:
        p = f"blk.{i}."
        out += [(p + "attn_norm.weight", [H]), (p + "attn_q.weight", [H, q_out]), (p + "attn_k.weight", [H, k_out]),
                (p + "attn_v.weight", [H, k_out]), (p + "attn_output.weight", [q_out, H]),
                (p + "ffn_norm.weight", [H]), (p + "ffn_gate.weight", [H, FF]), (p + "ffn_up.weight", [H, FF]),
                (p + "ffn_down.weight", [FF, H])]
    return out + list(extra)


def llama_kvs(**over):
    base = {"llama.block_count": kv_u32("llama.block_count", L),
            "llama.embedding_length": kv_u32("llama.embedding_length", H),
            "llama.attention.head_count": kv_u32("llama.attention.head_count", NH),
            "llama.attention.head_count_kv": kv_u32("llama.attention.head_count_kv", NKV),
            "llama.feed_forward_length": kv_u32("llama.feed_forward_length", FF),
            "llama.context_length": kv_u32("llama.context_length", 256),
            "llama.attention.layer_norm_rms_epsilon": kv_f32("llama.attention.layer_norm_rms_epsilon", 1e-5),
            "tokenizer.ggml.tokens": kv_str_array("tokenizer.ggml.tokens", [f"t{i}" for i in range(V)])}
    base.update(over)
    return [kv_str("general.architecture", "llama")] + [v for v in base.values() if v is not None]


def write_gguf_raw(path, kvs, tensors, align=32):
    infos, offset = b"", 0
    for name, dims in tensors:
        n = 4
        for d in dims:
            n *= d
        infos += _s(name) + struct.pack("<I", len(dims)) + b"".join(struct.pack("<Q", d) for d in dims)
        infos += struct.pack("<IQ", 0, offset)             # F32
        offset += n + (-n) % align
    head = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kvs)) + b"".join(kvs) + infos
    head += bytes(-len(head) % align)
    path.write_bytes(head + bytes(offset))
    return path


def test_the_hand_written_gguf_is_accepted(tmp_path, capsys):
    p = write_gguf_raw(tmp_path / "ok.gguf", llama_kvs(), llama_tensors())
    code, out, err = cli(capsys, *EST, "--model", str(p))
    assert code == 0, err
    m = vramsym.load_model(str(p))
    assert m.config["num_hidden_layers"] == L and m.config["vocab_size"] == V
    assert m.checkpoint["tensors"] == len(llama_tensors())


# ---- 5. GGUF counts must agree with the tensors ----

@pytest.mark.parametrize("kvs,tensors,needles", [
    (llama_kvs(**{"llama.block_count": kv_u32("llama.block_count", 1)}), llama_tensors(),
     ["llama.block_count is 1", "2 block(s)"]),
    (llama_kvs(**{"llama.block_count": kv_u32("llama.block_count", 3)}), llama_tensors(),
     ["llama.block_count is 3", "2 block(s)"]),
    (llama_kvs(), llama_tensors(blocks=[0, 2]), ["blk.1", "llama.block_count"]),
    (llama_kvs(**{"llama.attention.head_count": kv_u32("llama.attention.head_count", 8)}), llama_tensors(),
     ["head_count 8", "attn_k.weight", "4 heads"]),      # without key_length, the k/q ratio shows it
    (llama_kvs(**{"llama.attention.head_count_kv": kv_u32("llama.attention.head_count_kv", 4)}), llama_tensors(),
     ["llama.attention.head_count_kv is 4", "attn_k.weight", "2 heads"]),
    (llama_kvs(**{"llama.attention.head_count_kv": None}), llama_tensors(),
     ["llama.attention.head_count", "attn_k.weight"]),
    (llama_kvs(**{"llama.attention.key_length": kv_u32("llama.attention.key_length", 32)}), llama_tensors(),
     ["key_length 32", "attn_q.weight"]),
], ids=["block_count_low", "block_count_high", "block_gap", "head_count", "head_count_kv", "no_head_count_kv",
        "key_length"])
def test_gguf_counts_that_disagree_with_the_tensors_are_refused(tmp_path, capsys, kvs, tensors, needles):
    p = write_gguf_raw(tmp_path / "lies.gguf", kvs, tensors)
    refused(capsys, p, "lies.gguf", *needles)


# ---- 6. a count must be a whole number, not an array, string, boolean or float ----

@pytest.mark.parametrize("payload,needle", [
    (kv("llama.block_count", 9, struct.pack("<IQ", 4, 2) + struct.pack("<II", 1, 1)), "is an array of 2 items, not a whole number"),
    (kv("llama.block_count", 8, _s("2")), "is a string, not a whole number"),
    (kv("llama.block_count", 7, b"\x01"), "is a boolean (true), not a whole number"),
    (kv("llama.block_count", 6, struct.pack("<f", 2.0)), "is 2.0 (a floating-point number), not a whole number"),
], ids=["array", "string", "bool", "float"])
def test_a_gguf_count_of_the_wrong_kind_is_refused(tmp_path, capsys, payload, needle):
    p = write_gguf_raw(tmp_path / "kind.gguf", llama_kvs(**{"llama.block_count": payload}), llama_tensors())
    refused(capsys, p, "kind.gguf", "metadata llama.block_count " + needle)


def test_a_gguf_float_of_the_wrong_kind_is_refused(tmp_path, capsys):
    p = write_gguf_raw(tmp_path / "eps.gguf", llama_kvs(**{"llama.attention.layer_norm_rms_epsilon":
                                                         kv_str("llama.attention.layer_norm_rms_epsilon", "x")}),
                       llama_tensors())
    refused(capsys, p, "eps.gguf", "layer_norm_rms_epsilon is a string, not a number")


# ---- 7. a huge metadata array is walked, not materialised ----

@pytest.mark.parametrize("array", ["u8", "string"])
def test_a_gguf_with_a_950000_item_array_loads_fast(tmp_path, capsys, array):
    n = 950_000
    if array == "u8":
        big = kv("general.junk", 9, struct.pack("<IQ", 0, n) + bytes(n))
    else:
        big = kv("general.junk", 9, struct.pack("<IQ", 8, n) + _s(b"t") * n)
    p = write_gguf_raw(tmp_path / "big.gguf", llama_kvs() + [big], llama_tensors())
    t = time.perf_counter()
    m = vramsym.load_model(str(p))
    elapsed = time.perf_counter() - t
    assert m.checkpoint["tensors"] == len(llama_tensors())
    assert elapsed < 5, elapsed
    if array != "u8":
        return                           # tracing 950,000 string lengths takes seconds on a busy machine
    import tracemalloc                   # again, measured (tracing slows it: not timed)
    tracemalloc.start()
    try:
        vramsym.load_model(str(p))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 200 * 2**20, peak


# ---- 8. no tensors: said at once, naming the file ----

@pytest.mark.parametrize("hdr", [b"{}", json.dumps({"__metadata__": {"format": "pt"}}).encode()])
def test_a_safetensors_file_with_no_tensors_is_refused(tmp_path, capsys, hdr):
    d = folder(tmp_path)
    (d / "model.safetensors").write_bytes(struct.pack("<Q", len(hdr)) + hdr)
    err = refused(capsys, d, "model.safetensors", "holds no tensors")
    assert "W_file" not in err


def test_a_gguf_with_no_tensors_is_refused(tmp_path, capsys):
    p = write_gguf_raw(tmp_path / "vocab.gguf", llama_kvs(), [])
    err = refused(capsys, p, "vocab.gguf", "holds no tensors")
    assert "W_file" not in err


def test_an_empty_weight_map_is_refused(tmp_path, capsys):
    d = folder(tmp_path)
    (d / "model.safetensors.index.json").write_text(json.dumps({"weight_map": {}}))
    refused(capsys, d, "model.safetensors.index.json", "lists no tensors")


# ---- 9. lone surrogates and control characters do not crash the reading ----

def test_a_lone_surrogate_quant_method_does_not_raise(tmp_path):
    d = folder(tmp_path)
    (d / "config.json").write_text(json.dumps({**TINY, "quantization_config": {"quant_method": "\udc80\x1b[31m"}}))
    write_safetensors(d / "model.safetensors", dense_tensors(TINY))
    m = vramsym.load_model(str(d))
    assert any("has no formula" in n for n in m.notes)


def test_control_characters_in_tensor_names_do_not_raise(tmp_path):
    d = folder(tmp_path)
    write_safetensors(d / "model.safetensors", {**dense_tensors(TINY), "evil\x1b[2J\udc80": ("F16", (2,))})
    assert vramsym.load_model(str(d)).checkpoint["tensors"] == len(dense_tensors(TINY)) + 1
    p = write_gguf_raw(tmp_path / "esc.gguf", llama_kvs() + [kv_str("general.name", "\x1b]0;x\x07")],
                       llama_tensors(extra=[("evil\x1b[2J", [4])]))
    assert vramsym.load_model(str(p)).checkpoint["tensors"] == len(llama_tensors()) + 1


def test_a_gguf_name_that_is_not_utf8_is_an_input_error(tmp_path):
    p = write_gguf_raw(tmp_path / "bytes.gguf", llama_kvs() + [kv(b"\xff\xfe", 4, struct.pack("<I", 1))],
                       llama_tensors())
    with pytest.raises(InputError, match="bytes.gguf.*not UTF-8"):
        vramsym.load_model(str(p))
