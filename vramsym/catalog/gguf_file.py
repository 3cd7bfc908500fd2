"""A GGUF file (llama.cpp) as a model: its metadata and its tensors' exact sizes.

The header is walked here (ggml docs/gguf.md), with every length, string and count checked
against the file's size before it is used: scalars and short strings are kept, arrays only as
their item type and count (never materialised: a tokenizer's 150,000 strings are walked, not
decoded), then the tensor infos (name, dimensions, ggml type, offset). No tensor data is read.
The ggml types and their block sizes are data (formulas/ggml_types.json, the table of
llama.cpp's gguf-py): reading a header imports neither numpy nor the gguf package. The architecture's hyper-parameters (``{arch}.embedding_length``,
``block_count``, ``attention.head_count``, ...) are mapped onto the Hugging Face config fields
the formula files read (``hidden_size``, ``num_hidden_layers``, ...), checked to be numbers of
the right kind and to agree with the tensors (the blocks present, the attention projections'
shapes); every tensor's bytes come from its ggml type and shape (elements per block, bytes per
block). The file is untrusted: every problem is an
:class:`~vramsym.errors.InputError` naming the file.
"""
from __future__ import annotations

import functools
import json
import math
import os
import re
import struct
from fractions import Fraction

from ..errors import InputError
from .checkpoints import Checkpoint, Tensor, checkpoint_fields
from .paths import formulas_path, open_member, read_text
from .sources import Found

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
# recurrent general.architecture -> Hugging Face model_type: their ssm.* keys and per-layer arrays are
# mapped onto the config fields the formula files read (_recurrent_config); another architecture
# with ssm.* keys (jamba, falcon-h1, qwen35, ...) is refused rather than read as attention blocks
RECURRENT = {"mamba": "mamba", "mamba2": "mamba2", "granitehybrid": "granitemoehybrid", "qwen3next": "qwen3_next",
             "nemotron_h": "nemotron_h", "nemotron_h_moe": "nemotron_h"}
# general.file_type (llama_ftype) -> the quant option's GGUF choices (formulas/dtypes.vram)
FTYPE_QUANT = {2: "q4_0", 7: "q8_0", 15: "q4_k_m"}

MAX_NAME_BYTES = 65535          # keys and tensor names (gguf.md: a key is at most 65535 bytes)
MAX_STRING_KEPT = 1 << 16        # longer string values are skipped, recorded by their length only
MAX_ARRAY_KEPT = 1 << 16         # integer and bool arrays up to this many items are kept (per-layer values)
_MAX_DIMS = 4                    # GGML_MAX_DIMS
_GATED_Q = {"qwen3next"}         # architectures whose attn_q also holds a gate (twice the outputs)

# GGUF value types (ggml docs/gguf.md, gguf_type): fixed sizes and formats; 8 = string, 9 = array
_SCALAR = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
_FORMAT = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<B", 10: "<Q", 11: "<q", 12: "<d"}
_TYPE_NAMES = {0: "uint8", 1: "int8", 2: "uint16", 3: "int16", 4: "uint32", 5: "int32", 6: "float32",
               7: "bool", 8: "string", 9: "array", 10: "uint64", 11: "int64", 12: "float64"}
_U64 = struct.Struct("<Q")
_WHOLE_ITEMS = {0, 1, 2, 3, 4, 5, 7, 10, 11}     # the integer types and bool: arrays of them are kept


def _bad(path, what) -> InputError:
    return InputError(f"GGUF file '{path}': {what}")


class Array:
    """A metadata array, recorded by its item type and count only."""
    __slots__ = ("itype", "count")

    def __init__(self, itype, count):
        self.itype, self.count = itype, count

    def __repr__(self):
        return f"<array of {self.count:,} {_TYPE_NAMES.get(self.itype, '?')}>"


class LongString:
    """A metadata string longer than MAX_STRING_KEPT bytes, recorded by its length only."""
    __slots__ = ("length",)

    def __init__(self, length):
        self.length = length


def _kind(v) -> str:
    """How a metadata value is described when it is not the kind a field needs."""
    if isinstance(v, Array):
        return f"an array of {v.count:,} items"
    if isinstance(v, tuple):
        return f"an array of {len(v):,} items"
    if isinstance(v, bool):
        return f"a boolean ({str(v).lower()})"
    if isinstance(v, (str, LongString)):
        return "a string"
    if isinstance(v, float):
        return f"{v!r} (a floating-point number)"
    return repr(v)


class _Walker:
    """The header of an open GGUF file, walked through a window of bounded reads."""
    CHUNK = 1 << 22

    def __init__(self, path, f, size):
        self.path, self.f, self.size = path, f, size
        self.pos, self.base, self.buf = 24, 0, b""

    def _fill(self, pos, n):
        want = min(self.size - pos, max(n, self.CHUNK))
        try:
            self.f.seek(pos)
            data = self.f.read(want)
        except OSError as e:
            raise InputError(f"cannot read GGUF file '{self.path}': {e.strerror or type(e).__name__}") from None
        if len(data) < n:
            raise _bad(self.path, "the file changed while it was read")
        self.base, self.buf = pos, data

    def _past(self, pos, n, what):
        return _bad(self.path, f"{what} at byte {pos:,} needs {n:,} bytes, past the end of the file "
                               f"({self.size:,} bytes): truncated or corrupt")

    def take(self, n, what) -> int:
        """Claim the next ``n`` bytes (checked against the file); their position."""
        pos = self.pos
        if n < 0 or pos + n > self.size:
            raise self._past(pos, n, what)
        self.pos = pos + n
        return pos

    def read(self, n, what) -> bytes:
        pos = self.take(n, what)
        if pos < self.base or pos + n > self.base + len(self.buf):
            self._fill(pos, n)
        return self.buf[pos - self.base:pos - self.base + n]

    def unpack(self, fmt, n, what):
        pos = self.take(n, what)
        if pos < self.base or pos + n > self.base + len(self.buf):
            self._fill(pos, n)
        return struct.unpack_from(fmt, self.buf, pos - self.base)[0]

    def u32(self, what):
        return self.unpack("<I", 4, what)

    def u64(self, what):
        return self.unpack("<Q", 8, what)

    def name(self, what) -> str:
        n = self.u64(what)
        if n > self.size - self.pos:
            raise self._past(self.pos, n, what)
        if n > MAX_NAME_BYTES:
            raise _bad(self.path, f"{what} is {n:,} bytes long (GGUF allows {MAX_NAME_BYTES:,})")
        try:
            return self.read(n, what).decode("utf-8")
        except UnicodeDecodeError:
            raise _bad(self.path, f"{what} is not UTF-8 text") from None

    def string(self, what):
        n = self.u64(what)
        if n > MAX_STRING_KEPT:
            self.take(n, what)
            return LongString(n)
        return self.read(n, what).decode("utf-8", errors="replace")

    def skip_strings(self, count, what):
        """Walk ``count`` strings: each length read and checked, nothing decoded."""
        size, unpack = self.size, _U64.unpack_from
        pos, base, buf = self.pos, self.base, self.buf
        end = base + len(buf)
        for _ in range(count):
            if pos + 8 > end:
                if pos + 8 > size:
                    raise self._past(pos, 8, what)
                self._fill(pos, 8)
                base, buf = self.base, self.buf
                end = base + len(buf)
            pos += 8 + unpack(buf, pos - base)[0]
            if pos > size:
                self.pos = pos
                raise _bad(self.path, f"{what}: a string ends at byte {pos:,}, past the end of the file "
                                      f"({size:,} bytes): truncated or corrupt")
        self.pos = pos

    def value(self, vtype, what, depth=0):
        if vtype in _SCALAR:
            v = self.unpack(_FORMAT[vtype], _SCALAR[vtype], what)
            return bool(v) if vtype == 7 else v
        if vtype == 8:
            return self.string(what)
        if vtype == 9:
            itype, count = self.u32(what), self.u64(what)
            if depth > 3:
                raise _bad(self.path, f"{what} nests arrays more than 4 deep")
            if itype in _WHOLE_ITEMS and count <= MAX_ARRAY_KEPT:    # per-layer counts: kept as a tuple
                items = struct.unpack(f"<{count}{_FORMAT[itype][1]}", self.read(count * _SCALAR[itype], what))
                return tuple(bool(x) for x in items) if itype == 7 else items
            if itype in _SCALAR:
                self.take(count * _SCALAR[itype], what)
            elif itype in (8, 9):
                if count > (self.size - self.pos) // (8 if itype == 8 else 12):
                    raise _bad(self.path, f"{what} claims {count:,} items, more than the rest of the file holds")
                if itype == 8:
                    self.skip_strings(count, what)
                else:
                    for _ in range(count):
                        self.value(9, what, depth + 1)
            else:
                raise _bad(self.path, f"{what} is an array of unknown type {itype}")
            return Array(itype, count)
        raise _bad(self.path, f"{what} has an unknown value type {vtype}")


def _walk(path, f, size, n_tensors, n_kv):
    """(metadata, [(name, dims, ggml type, offset)], data start) of the GGUF file open as ``f``."""
    w = _Walker(path, f, size)
    meta = {}
    for i in range(n_kv):
        key = w.name(f"metadata key {i}")
        shown = f"metadata key {i} ('{key[:80]}')"
        if key in meta:
            raise _bad(path, f"{shown} appears twice")
        meta[key] = w.value(w.u32(shown), shown)
    infos, names = [], set()
    for i in range(n_tensors):
        name = w.name(f"tensor info {i}")
        n_dims = w.u32(f"tensor info {i}")
        if n_dims > _MAX_DIMS:
            raise _bad(path, f"tensor info {i} claims {n_dims} dimensions (GGUF allows {_MAX_DIMS})")
        dims = [w.u64(f"tensor info {i}") for _ in range(n_dims)]
        ttype, offset = w.u32(f"tensor info {i}"), w.u64(f"tensor info {i}")
        if name in names:
            raise _bad(path, f"tensor '{name[:80]}' appears twice")
        names.add(name)
        infos.append((name, dims, ttype, offset))
    align = meta.get("general.alignment", 32)
    if not isinstance(align, int) or isinstance(align, bool) or align <= 0 or align & (align - 1):
        raise _bad(path, f"metadata general.alignment is {_kind(align)}, not a power of two")
    return meta, infos, w.pos + (-w.pos) % align


@functools.lru_cache(maxsize=1)
def ggml_types() -> dict:
    """ggml type number -> (name, values per block, bytes per block), from formulas/ggml_types.json."""
    data = json.loads(read_text(os.path.join(formulas_path(), "ggml_types.json")))["types"]
    return {int(k): (v["name"], v["block"], v["bytes"]) for k, v in data.items()}


def read_gguf(path, root=None):
    """(metadata dict, Checkpoint) of a GGUF file, from its header. Metadata values are ints,
    floats, bools, strings, tuples (arrays of at most MAX_ARRAY_KEPT integers or bools: per-layer
    values), :class:`Array` (any other array: item type and count) or :class:`LongString`."""
    f, size = open_member(path, root, "GGUF file")
    with f:
        try:
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
        meta, infos, data_start = _walk(path, f, size, n_tensors, n_kv)
    meta["GGUF.version"] = version
    if not infos:
        raise _bad(path, "it holds no tensors (a vocabulary-only file?): not a model's weights")
    tensors, spans = [], []
    for name, shape, ttype, offset in infos:
        kind = ggml_types().get(ttype)
        if kind is None:
            raise _bad(path, f"tensor '{name[:80]}' has an unknown ggml type {ttype}")
        tname, block, tsize = kind
        numel = 1
        for d in shape:
            numel *= d
        if numel % block:
            raise _bad(path, f"tensor '{name[:80]}' of type {tname} has {numel:,} elements, not a whole "
                             f"number of its {block}-element blocks")
        nbytes = numel // block * tsize
        begin = data_start + offset
        if begin + nbytes > size:
            raise _bad(path, f"tensor '{name[:80]}' ({nbytes:,} bytes at offset {offset:,}) runs past the end "
                             f"of the file ({size:,} bytes): truncated?")
        tensors.append(Tensor(name, tname, shape, nbytes, path))
        spans.append((begin, begin + nbytes, name))
    spans.sort()
    for (b0, e0, n0), (b1, e1, n1) in zip(spans, spans[1:]):
        if b1 < e0:
            raise _bad(path, f"the data of tensors '{n0[:80]}' and '{n1[:80]}' overlap")
    return meta, Checkpoint("gguf", [path], tensors)


_FLOATS = {"attention.layer_norm_rms_epsilon", "rope.freq_base"}
_BLOCK = re.compile(r"blk\.(\d{1,9})\.")


def _hparam(path, key, v, whole):
    """A hyper-parameter's value, checked to be a whole number (counts) or a finite number."""
    if whole:
        if not isinstance(v, int) or isinstance(v, bool):
            raise _bad(path, f"metadata {key} is {_kind(v)}, not a whole number")
    elif not isinstance(v, (int, float)) or isinstance(v, bool):
        raise _bad(path, f"metadata {key} is {_kind(v)}, not a number")
    elif not math.isfinite(v):
        raise _bad(path, f"metadata {key} is {v!r}, not a finite number")
    return v


def _check_blocks(path, arch, meta, tensors):
    """``{arch}.block_count`` against the ``blk.N.`` blocks the tensors hold (0 .. N-1)."""
    blocks = {int(m.group(1)) for m in (_BLOCK.match(t.name) for t in tensors) if m}
    if not blocks:
        return
    key, n = f"{arch}.block_count", meta.get(f"{arch}.block_count")
    missing = next((i for i in range(len(blocks) + 1) if i not in blocks), None)
    if missing is not None and missing < max(blocks):
        raise _bad(path, f"the tensors' blocks are not blk.0 to blk.{max(blocks)}: blk.{missing} has no tensor "
                         f"(metadata {key} is {n if n is not None else 'not set'})")
    if n is not None and n != len(blocks):
        raise _bad(path, f"metadata {key} is {n}, but the tensors hold {len(blocks)} block(s) "
                         f"(blk.0 to blk.{len(blocks) - 1})")


def _check_heads(path, arch, meta, tensors):
    """The attention head counts against the shapes of the q and k projections, where they exist:
    ``attn_q`` has head_count x key_length outputs, ``attn_k`` head_count_kv x key_length
    (key_length defaults to embedding_length / head_count)."""
    nh = _layers_max(meta.get(f"{arch}.attention.head_count"))
    if not isinstance(nh, int) or nh <= 0:
        return
    nkv_key = f"{arch}.attention.head_count_kv"
    nkv = _layers_max(meta.get(nkv_key, nh))
    kl = meta.get(f"{arch}.attention.key_length")
    emb = meta.get(f"{arch}.embedding_length")
    if kl is None and not isinstance(emb, int):
        return
    gate = 2 if arch in _GATED_Q else 1
    per = f"key_length {kl}" if kl is not None else f"embedding_length {emb} / head_count {nh}"
    width = Fraction(kl) if kl is not None else Fraction(emb, nh)      # outputs per head
    for t in tensors:
        m = _BLOCK.match(t.name)
        if not m or len(t.shape) < 2:
            continue
        rest = t.name[m.end():]
        if rest == "attn_q.weight":
            key, heads, factor = f"{arch}.attention.head_count", nh, gate
        elif rest == "attn_k.weight":
            key, heads, factor = (nkv_key if nkv_key in meta else f"{arch}.attention.head_count"), nkv, 1
        else:
            continue
        out = t.shape[1]         # GGUF order: ne[0] is the input (embedding), ne[1] the outputs
        if width and out == heads * width * factor:
            continue
        said = out / (width * factor) if width else None
        said = f"{int(said)} heads" if said is not None and said.denominator == 1 else "no whole number of heads"
        raise _bad(path, f"metadata {key} is {heads}, but tensor '{t.name[:80]}' has {out:,} outputs (shape "
                         f"{list(t.shape)}), {said} of {per}{' (x 2 for the gate)' if factor > 1 else ''}")


def _layers_max(v):
    """A per-layer array's largest item (the attention layers' head count where recurrent layers
    have 0); any other value as it is."""
    if isinstance(v, tuple) and v and all(isinstance(x, int) and not isinstance(x, bool) for x in v):
        return max(v)
    return v


def _per_layer(path, meta, key, n_layers) -> list:
    """``key``'s value for each of the ``n_layers`` blocks: a whole number for all of them, or an
    array of one per block (checked: as many items as blocks, whole numbers >= 0)."""
    v = meta.get(key)
    if v is None:
        raise _bad(path, f"metadata {key} is not set: a recurrent architecture's layout needs it")
    if isinstance(v, bool) or not isinstance(v, (int, tuple)):
        raise _bad(path, f"metadata {key} is {_kind(v)}, not a whole number or one per block")
    items = list(v) if isinstance(v, tuple) else [v] * n_layers
    if len(items) != n_layers:
        raise _bad(path, f"metadata {key} has {len(items):,} items, but block_count is {n_layers:,}")
    if any(isinstance(x, bool) or x < 0 for x in items):
        raise _bad(path, f"metadata {key} holds a value that is not a whole number >= 0")
    return items


def _recurrent_config(path, arch, meta, names) -> dict:
    """The config.json fields of a recurrent GGUF architecture (RECURRENT), from its ssm.* keys
    and the per-layer arrays that say which blocks are recurrent; the keys as llama.cpp's
    conversion/*.py writes them and src/models/*.cpp reads them."""
    def need(key, minimum=1):
        v = meta.get(f"{arch}.{key}")
        if v is None:
            raise _bad(path, f"metadata {arch}.{key} is not set: a {arch} model needs it")
        if isinstance(v, bool) or not isinstance(v, int):
            raise _bad(path, f"metadata {arch}.{key} is {_kind(v)}, not a whole number: a {arch} model needs it")
        if v < minimum:
            raise _bad(path, f"metadata {arch}.{key} is {v}, below {minimum}")
        return v

    h, n = need("embedding_length"), need("block_count")
    inner, state, conv, rank = (need("ssm.inner_size"), need("ssm.state_size"), need("ssm.conv_kernel"),
                                need("ssm.time_step_rank"))
    mt = RECURRENT[arch]
    if arch != "qwen3next" and inner % h:
        raise _bad(path, f"metadata {arch}.ssm.inner_size {inner} is not a whole multiple of embedding_length {h} "
                         "(the expansion factor the Mamba mixers are built from)")
    if arch == "mamba":          # conversion/mamba.py MambaModel: Falcon-Mamba sets ssm.dt_b_c_rms
        mt = "falcon_mamba" if meta.get(f"{arch}.ssm.dt_b_c_rms") is True else "mamba"
        return {"model_type": mt, "intermediate_size": inner, "expand": inner // h, "state_size": state,
                "conv_kernel": conv, "time_step_rank": rank, "use_conv_bias": "blk.0.ssm_conv1d.bias" in names,
                "use_bias": "blk.0.ssm_in.bias" in names}
    if inner % rank:
        raise _bad(path, f"metadata {arch}.ssm.inner_size {inner} is not a whole number of the "
                         f"{rank} heads of {arch}.ssm.time_step_rank")
    groups = need("ssm.group_count")
    if arch == "qwen3next":     # conversion/qwen.py Qwen3NextModel: key heads as groups, value heads as the rank
        if inner != rank * state:
            raise _bad(path, f"metadata {arch}.ssm.inner_size {inner} is not time_step_rank {rank} x "
                             f"state_size {state} (value heads of the key heads' width: llama.cpp's qwen3next)")
        rec = meta.get(f"{arch}.attention.recurrent_layers")
        if rec is not None:
            recurrent = _per_layer(path, meta, f"{arch}.attention.recurrent_layers", n)
            types = ["linear_attention" if r else "full_attention" for r in recurrent]
        else:
            every = need("full_attention_interval")
            types = ["linear_attention" if (i + 1) % every else "full_attention" for i in range(n)]
        out = {"model_type": mt, "layer_types": types, "linear_num_key_heads": groups,
               "linear_num_value_heads": rank, "linear_key_head_dim": state, "linear_value_head_dim": state,
               "linear_conv_kernel_dim": conv}
        shared = meta.get(f"{arch}.expert_shared_feed_forward_length")
        if isinstance(shared, int) and not isinstance(shared, bool):
            out["shared_expert_intermediate_size"] = shared
        return out
    mamba2 = {"mamba_n_heads": rank, "mamba_d_head": inner // rank, "mamba_n_groups": groups,
              "mamba_d_state": state, "mamba_d_conv": conv, "mamba_expand": inner // h,
              "mamba_conv_bias": "blk.0.ssm_conv1d.bias" in names, "mamba_proj_bias": "blk.0.ssm_in.bias" in names}
    if arch == "mamba2":        # conversion/mamba.py Mamba2Model
        return {"model_type": mt, "num_heads": rank, "head_dim": inner // rank, "n_groups": groups,
                "state_size": state, "conv_kernel": conv, "expand": inner // h,
                "use_conv_bias": mamba2["mamba_conv_bias"], "use_bias": mamba2["mamba_proj_bias"]}
    kv = _per_layer(path, meta, f"{arch}.attention.head_count_kv", n)
    if arch == "granitehybrid":  # conversion/granite.py GraniteHybridModel: head_count_kv 0 marks a Mamba2 block
        experts = meta.get(f"{arch}.expert_count", 0)
        ffn = meta.get(f"{arch}.expert_shared_feed_forward_length", meta.get(f"{arch}.feed_forward_length"))
        out = {"model_type": mt, **mamba2, "layer_types": ["attention" if k else "mamba" for k in kv],
               "num_local_experts": experts if isinstance(experts, int) else 0,
               "position_embedding_type": "nope" if meta.get(f"{arch}.rope.scaling.finetuned") is False else "rope"}
        if isinstance(ffn, int) and not isinstance(ffn, bool):
            out["shared_intermediate_size"] = ffn
        return out
    # nemotron_h, nemotron_h_moe (conversion/nemotron.py NemotronHModel): head_count_kv > 0 marks an
    # attention block, feed_forward_length > 0 an MLP (a mixture of experts where there are experts),
    # every other block a Mamba2 mixer
    ff = _per_layer(path, meta, f"{arch}.feed_forward_length", n)
    experts = meta.get(f"{arch}.expert_count", 0)
    moe = isinstance(experts, int) and not isinstance(experts, bool) and experts > 0
    pattern = "".join("*" if k else ("E" if moe else "-") if f else "M" for k, f in zip(kv, ff))
    out = {"model_type": mt, "hybrid_override_pattern": pattern, "mamba_num_heads": rank,
           "mamba_head_dim": inner // rank, "n_groups": groups, "ssm_state_size": state, "conv_kernel": conv,
           "use_conv_bias": mamba2["mamba_conv_bias"], "use_bias": mamba2["mamba_proj_bias"]}
    dense = [f for f in ff if f]
    if dense and not moe:
        out["intermediate_size"] = max(dense)
    if moe:
        out.update(n_routed_experts=experts, moe_intermediate_size=max(dense) if dense else 0)
        shared = meta.get(f"{arch}.expert_shared_feed_forward_length")
        if isinstance(shared, int) and not isinstance(shared, bool):
            out["moe_shared_expert_intermediate_size"] = shared
    return out


def config_of(meta: dict, ckpt: Checkpoint) -> tuple:
    """(a config.json-like dict, notes) from the GGUF metadata."""
    arch = meta.get("general.architecture")
    if not isinstance(arch, str) or not arch:
        raise InputError(f"GGUF file '{ckpt.files[0]}' has no general.architecture")
    cfg = {"model_type": ARCH.get(arch, arch), "architectures": [f"gguf:{arch}"]}
    notes = []
    path = ckpt.files[0]
    names = {t.name for t in ckpt.tensors}
    per_layer = ()
    if arch in RECURRENT:
        cfg.update(_recurrent_config(path, arch, meta, names))
        per_layer = ("attention.head_count", "attention.head_count_kv", "feed_forward_length",
                     "expert_feed_forward_length")     # one per block: the layout is read above
        notes.append(f"recurrent blocks from the ssm.* metadata ({cfg['model_type']})")
    elif any(k.startswith(f"{arch}.ssm.") for k in meta):
        raise _bad(path, f"architecture '{arch[:80]}' has recurrent (ssm.*) metadata whose layout vramsym does "
                         f"not read (it reads {', '.join(sorted(RECURRENT))}): give the model's config.json "
                         "instead, refused rather than read as attention blocks")
    for key, field in HPARAMS.items():
        if f"{arch}.{key}" in meta:
            value = meta[f"{arch}.{key}"]
            if key in per_layer and isinstance(value, tuple):
                value = _layers_max(value)
            cfg[field] = _hparam(path, f"{arch}.{key}", value, key not in _FLOATS)
    tokens = meta.get("tokenizer.ggml.tokens")
    if "vocab_size" not in cfg and isinstance(tokens, Array):
        cfg["vocab_size"] = tokens.count             # the tokenizer's token count
    _check_blocks(path, arch, meta, ckpt.tensors)
    _check_heads(path, arch, meta, ckpt.tensors)
    cfg["tie_word_embeddings"] = "output.weight" not in names
    if f"{arch}.attention.key_length" not in meta:
        notes.append("no attention.key_length in the metadata: head_dim = embedding_length / head_count")
    return cfg, notes


def read_gguf_model(path, root=None) -> Found:
    """A GGUF file as a model: its metadata as a config, its tensors' bytes as the checkpoint."""
    meta, ckpt = read_gguf(path, root)
    cfg, notes = config_of(meta, ckpt)
    fields, more = checkpoint_fields(ckpt, cfg)
    embd = sum(t.nbytes for t in ckpt.tensors if t.name == "token_embd.weight")
    fields["ckpt_embd_bytes"] = embd
    fields["ckpt_out_bytes"] = sum(t.nbytes for t in ckpt.tensors if t.name in ("output.weight", "output_norm.weight"))
    ftype = meta.get("general.file_type")
    if isinstance(ftype, int) and not isinstance(ftype, bool) and ftype in FTYPE_QUANT:
        fields["ckpt_quant"] = FTYPE_QUANT[ftype]
    name = meta.get("general.name") if isinstance(meta.get("general.name"), str) else None
    name = name or os.path.splitext(os.path.basename(path))[0]
    notes = [f"GGUF {meta.get('general.architecture')} (version {meta.get('GGUF.version')}): hyper-parameters "
             f"from its metadata ({', '.join(sorted(k for k in cfg if k in HPARAMS.values()))})"] + notes + more
    return Found(cfg, name, path, fields=fields, notes=tuple(notes), checkpoint=ckpt.summary())
