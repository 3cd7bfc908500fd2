"""A GGUF file (llama.cpp) as a model: its metadata and its tensors' exact sizes.

Read with the ``gguf`` package (llama.cpp's gguf-py, the ``gguf`` extra; imported only here),
which memory-maps the file and parses its header; no tensor data is read. The architecture's
hyper-parameters (``{arch}.embedding_length``, ``block_count``, ``attention.head_count``, ...)
are mapped onto the Hugging Face config fields the formula files read (``hidden_size``,
``num_hidden_layers``, ...), and every tensor's bytes come from its ggml type and shape
(``GGML_QUANT_SIZES``: elements per block, bytes per block). The file is untrusted: a
truncated or malformed header is an :class:`~vramsym.errors.InputError` naming the file.
"""
from __future__ import annotations

import os
import struct

from ..errors import InputError
from .checkpoints import Checkpoint, Tensor, checkpoint_fields

# GGUF metadata key (after "{arch}.") -> the config.json field the formula files read
HPARAMS = {
    "embedding_length": "hidden_size",
    "block_count": "num_hidden_layers",
    "attention.head_count": "num_attention_heads",
    "attention.head_count_kv": "num_key_value_heads",
    "feed_forward_length": "intermediate_size",
    "context_length": "max_position_embeddings",
    "vocab_size": "vocab_size",
    "attention.key_length": "head_dim",
    "attention.layer_norm_rms_epsilon": "rms_norm_eps",
    "rope.freq_base": "rope_theta",
    "expert_count": "num_local_experts",
    "expert_used_count": "num_experts_per_tok",
    "expert_feed_forward_length": "moe_intermediate_size",
    "attention.sliding_window": "sliding_window",
}
# general.architecture -> Hugging Face model_type, where they differ
ARCH = {"gemma3": "gemma3_text", "qwen3moe": "qwen3_moe", "qwen2moe": "qwen2_moe", "gpt2": "gpt2"}
# general.file_type (llama_ftype) -> the quant option's GGUF choices (formulas/dtypes.vram)
FTYPE_QUANT = {2: "q4_0", 7: "q8_0", 15: "q4_k_m"}

MAX_FIELDS = 1 << 16


def _bad(path, what) -> InputError:
    return InputError(f"GGUF file '{path}': {what}")


def _value(field):
    """A metadata field's value (a scalar, a string, or for an array its length)."""
    from gguf import GGUFValueType
    if not field.types:
        return None
    if field.types[0] == GGUFValueType.ARRAY:
        return len(field.data)
    if field.types[0] == GGUFValueType.STRING:
        return bytes(field.parts[field.data[0]]).decode("utf-8", errors="replace")
    v = field.parts[field.data[0]]
    return v.tolist()[0] if len(v) else None


# GGUF value types (ggml docs/gguf.md, gguf_type): fixed sizes; 8 = string, 9 = array
_SCALAR = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
_MAX_DIMS = 4     # GGML_MAX_DIMS


def _prescan(path, size, n_tensors, n_kv):
    """Walk the metadata and tensor infos with every length checked against the file before the
    gguf reader sees it: its loops trust the counts (an array claiming 2^40 items past the end of
    a small file would spin), this walk stops at the first claim the file cannot hold."""
    with open(path, "rb") as f:
        pos = 24
        f.seek(pos)

        def take(n, what):
            nonlocal pos
            if n < 0 or pos + n > size:
                raise _bad(path, f"{what} at byte {pos:,} needs {n:,} bytes, past the end of the file "
                                 f"({size:,} bytes): truncated or corrupt")
            pos += n
            if n <= 8:
                return f.read(n)
            f.seek(pos)         # skipped, not read: a claimed length never becomes an allocation
            return b""

        def u32(what):
            return struct.unpack("<I", take(4, what))[0]

        def u64(what):
            return struct.unpack("<Q", take(8, what))[0]

        def string(what):
            n = u64(what)
            take(n, what)

        def value(vtype, what, depth=0):
            if vtype in _SCALAR:
                take(_SCALAR[vtype], what)
            elif vtype == 8:
                string(what)
            elif vtype == 9:
                itype, count = u32(what), u64(what)
                if depth > 3:
                    raise _bad(path, f"{what} nests arrays more than 4 deep")
                if itype in _SCALAR:
                    take(count * _SCALAR[itype], what)
                elif itype in (8, 9):
                    if count > (size - pos) // 8:
                        raise _bad(path, f"{what} claims {count:,} items, more than the rest of the file holds")
                    for _ in range(count):
                        value(itype, what, depth + 1)
                else:
                    raise _bad(path, f"{what} is an array of unknown type {itype}")
            else:
                raise _bad(path, f"{what} has an unknown value type {vtype}")

        for i in range(n_kv):
            string(f"metadata key {i}")
            value(u32(f"metadata value {i}"), f"metadata value {i}")
        for i in range(n_tensors):
            string(f"tensor info {i}")
            n_dims = u32(f"tensor info {i}")
            if n_dims > _MAX_DIMS:
                raise _bad(path, f"tensor info {i} claims {n_dims} dimensions (GGUF allows {_MAX_DIMS})")
            take(8 * n_dims + 4 + 8, f"tensor info {i}")


def read_gguf(path):
    """(metadata dict, Checkpoint) of a GGUF file, from its header."""
    try:
        import gguf
    except ImportError:
        raise InputError(f"reading '{path}' needs the gguf package (llama.cpp's reader): "
                         f"pip install 'vramsym[gguf]'") from None
    try:
        size = os.path.getsize(path)
        with open(path, "rb") as f:
            head = f.read(24)
    except OSError as e:
        raise InputError(f"cannot read GGUF file '{path}': {e.strerror or e}") from None
    if len(head) < 24:
        raise _bad(path, f"{size} bytes, shorter than the 24-byte GGUF header (truncated?)")
    magic, version = head[:4], struct.unpack("<I", head[4:8])[0]
    if magic != b"GGUF":
        raise _bad(path, f"it does not start with the GGUF magic (got {magic!r})")
    if version not in (2, 3):
        raise _bad(path, f"GGUF version {version} is not one this reader knows (2 or 3)")
    n_tensors, n_kv = struct.unpack("<QQ", head[8:24])
    # every tensor info and key takes at least 8 bytes: counts beyond the file are lies
    if n_tensors > size // 8 or n_kv > size // 8:
        raise _bad(path, f"the header claims {n_tensors:,} tensors and {n_kv:,} metadata keys, more than "
                         f"a file of {size:,} bytes can hold (truncated or corrupt)")
    _prescan(path, size, n_tensors, n_kv)
    try:
        reader = gguf.GGUFReader(path, "r")
        meta = {name: _value(field) for name, field in reader.fields.items()}
        raw_tensors = [(t.name, int(t.tensor_type), [int(d) for d in t.shape], int(t.n_elements), int(t.data_offset))
                       for t in reader.tensors]
        data_start = int(reader.data_offset)
    except (ValueError, IndexError, KeyError, TypeError, OverflowError, struct.error, UnicodeDecodeError,
            OSError, MemoryError) as e:
        msg = str(e).splitlines()[0][:160] if str(e) else type(e).__name__
        raise _bad(path, f"its header is truncated or malformed ({msg})") from None
    tensors, spans = [], []
    for name, ttype, shape, numel, offset in raw_tensors:
        try:
            qtype = gguf.GGMLQuantizationType(ttype)
            block, tsize = gguf.GGML_QUANT_SIZES[qtype]
        except (ValueError, KeyError):
            raise _bad(path, f"tensor '{name[:80]}' has an unknown ggml type {ttype}") from None
        if any(d < 0 for d in shape) or numel < 0:
            raise _bad(path, f"tensor '{name[:80]}' has a negative dimension {shape}")
        if numel % block:
            raise _bad(path, f"tensor '{name[:80]}' of type {qtype.name} has {numel:,} elements, not a whole "
                             f"number of its {block}-element blocks")
        nbytes = numel // block * tsize
        begin = offset            # the reader gives each tensor's absolute offset in the file
        if begin < data_start or begin + nbytes > size:
            raise _bad(path, f"tensor '{name[:80]}' ({nbytes:,} bytes at offset {offset:,}) runs past the end "
                             f"of the file ({size:,} bytes): truncated?")
        tensors.append(Tensor(name, qtype.name, shape, nbytes, path))
        spans.append((begin, begin + nbytes, name))
    spans.sort()
    for (b0, e0, n0), (b1, e1, n1) in zip(spans, spans[1:]):
        if b1 < e0:
            raise _bad(path, f"the data of tensors '{n0[:80]}' and '{n1[:80]}' overlap")
    return meta, Checkpoint("gguf", [path], tensors)


def config_of(meta: dict, ckpt: Checkpoint) -> tuple:
    """(a config.json-like dict, notes) from the GGUF metadata."""
    arch = meta.get("general.architecture")
    if not isinstance(arch, str) or not arch:
        raise InputError(f"GGUF file '{ckpt.files[0]}' has no general.architecture")
    cfg = {"model_type": ARCH.get(arch, arch), "architectures": [f"gguf:{arch}"]}
    notes = []
    for key, field in HPARAMS.items():
        v = meta.get(f"{arch}.{key}")
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            cfg[field] = v
    if "vocab_size" not in cfg and isinstance(meta.get("tokenizer.ggml.tokens"), int):
        cfg["vocab_size"] = meta["tokenizer.ggml.tokens"]     # the tokenizer's token count
    names = {t.name for t in ckpt.tensors}
    cfg["tie_word_embeddings"] = "output.weight" not in names
    if f"{arch}.attention.key_length" not in meta:
        notes.append("no attention.key_length in the metadata: head_dim = embedding_length / head_count")
    return cfg, notes


def load_gguf(path):
    from .models import _spec
    meta, ckpt = read_gguf(path)
    cfg, notes = config_of(meta, ckpt)
    fields, more = checkpoint_fields(ckpt, cfg)
    embd = sum(t.nbytes for t in ckpt.tensors if t.name == "token_embd.weight")
    fields["ckpt_embd_bytes"] = embd
    ftype = meta.get("general.file_type")
    if ftype in FTYPE_QUANT:
        fields["ckpt_quant"] = FTYPE_QUANT[ftype]
    name = meta.get("general.name") if isinstance(meta.get("general.name"), str) else None
    name = name or os.path.splitext(os.path.basename(path))[0]
    notes = [f"GGUF {meta.get('general.architecture')} (version {meta.get('GGUF.version')}): hyper-parameters "
             f"from its metadata ({', '.join(sorted(k for k in cfg if k in HPARAMS.values()))})"] + notes + more
    return _spec(cfg, name, path, fields=fields, extra_notes=notes, checkpoint=ckpt.summary())
