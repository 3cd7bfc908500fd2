"""Checkpoints as input: a local safetensors model directory, read from its headers only.

A safetensors file is an 8-byte little-endian header length ``N``, ``N`` bytes of JSON
(per tensor: ``dtype``, ``shape``, ``data_offsets`` [begin, end) into the data that
follows; an optional ``__metadata__`` of strings), then the data
(huggingface/safetensors README, "Format"). Only the header is read: no tensor data, no
torch, no safetensors package. Every header is untrusted input: a length past the file,
non-JSON, a negative or huge shape, an unknown dtype, offsets out of range or overlapping
are each an :class:`~vramsym.errors.InputError` that names the file, and nothing a header
claims is allocated before it is checked against the file's size.

The weights' bytes come from the headers (``ckpt_weight_bytes``, which
``formulas/inference.vram`` reads as ``W_file`` when ``weights_source = file``); the
checkpoint's ``quantization_config`` picks the ``quant`` formulas (``ckpt_quant``,
``ckpt_group_size``), and the headers are checked against that choice.
"""
from __future__ import annotations

import json
import os
import struct

from ..errors import InputError
from .paths import formulas_path, open_member, read_bounded, read_text
from .sources import Found, read_config

MAX_HEADER_BYTES = 100 * 2**20     # a real header is a few MB at most (a 405B model: ~ 2 MB)
MAX_INDEX_BYTES = 64 * 2**20
MAX_RANK = 32                       # real tensors have at most 5 or 6 dimensions
MAX_DIM = 2**62

# bits per element of each safetensors dtype (safetensors/src/tensor.rs, Dtype::bitsize)
DTYPE_BITS = {
    "BOOL": 8, "U8": 8, "I8": 8, "F8_E5M2": 8, "F8_E4M3": 8, "F8_E8M0": 8,
    "I16": 16, "U16": 16, "F16": 16, "BF16": 16,
    "I32": 32, "U32": 32, "F32": 32, "C64": 64,
    "F64": 64, "I64": 64, "U64": 64,
    "F4": 4, "F6_E2M3": 6, "F6_E3M2": 6,
}


class Tensor:
    """One tensor as a header lists it: its name, dtype, shape and exact byte count."""
    __slots__ = ("name", "dtype", "shape", "nbytes", "file")

    def __init__(self, name, dtype, shape, nbytes, file):
        self.name, self.dtype, self.shape, self.nbytes, self.file = name, dtype, tuple(shape), nbytes, file

    def __repr__(self):
        return f"Tensor({self.name!r}, {self.dtype}, {list(self.shape)}, {self.nbytes} B)"


class Checkpoint:
    """The tensors of a checkpoint's files, read from their headers."""
    __slots__ = ("format", "files", "tensors", "notes")

    def __init__(self, fmt, files, tensors, notes=()):
        self.format, self.files, self.tensors, self.notes = fmt, list(files), list(tensors), list(notes)

    @property
    def total_bytes(self) -> int:
        return sum(t.nbytes for t in self.tensors)

    def bytes_by_dtype(self) -> dict:
        out: dict = {}
        for t in self.tensors:
            out[t.dtype] = out.get(t.dtype, 0) + t.nbytes
        return dict(sorted(out.items(), key=lambda kv: -kv[1]))

    def summary(self) -> dict:
        """What the estimate reports as coming from the files (JSON-ready)."""
        return {"format": self.format, "files": [os.path.basename(f) for f in self.files],
                "tensors": len(self.tensors), "weight_bytes": self.total_bytes,
                "bytes_by_dtype": self.bytes_by_dtype()}


def _bad(path, what) -> InputError:
    return InputError(f"safetensors file '{path}': {what}")


def _no_constant(name):
    raise ValueError(f"{name} is not a number JSON allows")


def _unique_keys(pairs):
    out = {}
    for k, v in pairs:
        if k in out:
            raise ValueError(f"the key {k!r} appears twice")
        out[k] = v
    return out


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _shown(name) -> str:
    return name if len(name) <= 80 else name[:77] + "..."


def checked_tensor(path, name, dtype, shape, offs, data_size) -> Tensor:
    """One header entry, checked: a known dtype, a shape of whole numbers, data_offsets inside the
    ``data_size`` bytes of data (None: not known) spanning exactly the bytes the shape needs."""
    shown = _shown(str(name))
    if not isinstance(dtype, str) or dtype not in DTYPE_BITS:
        d = repr(dtype) if len(repr(dtype)) <= 40 else repr(dtype)[:37] + "..."
        raise _bad(path, f"tensor '{shown}' has an unknown dtype {d} (known: {', '.join(DTYPE_BITS)})")
    if not isinstance(shape, list) or len(shape) > MAX_RANK or \
            not all(_is_int(d) and 0 <= d <= MAX_DIM for d in shape):
        raise _bad(path, f"tensor '{shown}' has a shape that is not a list of at most {MAX_RANK} "
                         f"whole numbers from 0 to 2^62")
    if not isinstance(offs, list) or len(offs) != 2 or not all(_is_int(o) for o in offs):
        raise _bad(path, f"tensor '{shown}' has data_offsets that are not two whole numbers [begin, end]")
    begin, end = offs
    if not 0 <= begin <= end or (data_size is not None and end > data_size):
        where = "" if data_size is None else f" outside the {data_size:,} bytes of data in the file"
        raise _bad(path, f"tensor '{shown}' has data_offsets [{begin}, {end}]{where or ' that are not a range'}")
    numel, limit = (0 if 0 in shape else 1), 8 * (end - begin) + 1
    for d in shape if numel else ():
        numel *= d
        if numel > limit:       # more elements than its bytes could hold, even at one bit
            break
    bits = numel * DTYPE_BITS[dtype]
    if bits % 8 or bits // 8 != end - begin:
        size = "not a whole number of bytes" if bits % 8 else (
            f"{bits // 8:,} bytes" if numel <= limit else "more bytes than the file holds")
        raise _bad(path, f"tensor '{shown}' is {dtype} of shape {shape[:8]}{'...' if len(shape) > 8 else ''}, "
                         f"{size}, but its data_offsets span {end - begin:,} bytes")
    return Tensor(name, dtype, shape, end - begin, path)


def read_header(path, root=None) -> list:
    """The tensors of one safetensors file, from its header, each checked against the file (a
    regular file, inside ``root`` when given)."""
    f, size = open_member(path, root, "safetensors file")
    try:
        with f:
            if size < 8:
                raise _bad(path, f"{size} bytes, shorter than the 8-byte header length")
            head = f.read(8)
            if len(head) != 8:
                raise _bad(path, "the file changed while it was read")
            (n,) = struct.unpack("<Q", head)
            if n > MAX_HEADER_BYTES:
                raise _bad(path, f"the header claims {n:,} bytes, more than the {MAX_HEADER_BYTES:,} "
                                 f"a safetensors header may have here")
            if 8 + n > size:
                raise _bad(path, f"the header claims {n:,} bytes but the file has {size - 8:,} after "
                                 f"the length (truncated, or not a safetensors file)")
            raw = f.read(n)
    except OSError as e:
        raise InputError(f"cannot read safetensors file '{path}': {e.strerror or e}") from None
    if len(raw) != n:
        raise _bad(path, "the file changed while it was read")
    try:
        header = json.loads(raw.decode("utf-8"), parse_constant=_no_constant, object_pairs_hook=_unique_keys)
    except UnicodeDecodeError:
        raise _bad(path, "the header is not UTF-8 text") from None
    except RecursionError:
        raise _bad(path, "the header's JSON nests too deeply") from None
    except ValueError as e:
        raise _bad(path, f"the header is not valid JSON ({str(e)[:120]})") from None
    if not isinstance(header, dict):
        raise _bad(path, f"the header is a JSON {type(header).__name__}, not an object of tensors")
    data_size = size - 8 - n
    tensors, spans = [], []
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        if not isinstance(entry, dict):
            raise _bad(path, f"tensor '{_shown(name)}' is not an object with dtype, shape and data_offsets")
        t = checked_tensor(path, name, entry.get("dtype"), entry.get("shape"), entry.get("data_offsets"), data_size)
        tensors.append(t)
        spans.append((entry["data_offsets"][0], entry["data_offsets"][1], name))
    spans.sort()
    for (b0, e0, n0), (b1, e1, n1) in zip(spans, spans[1:]):
        if b1 < e0:
            raise _bad(path, f"the data of tensors '{n0[:80]}' and '{n1[:80]}' overlap "
                             f"([{b0}, {e0}] and [{b1}, {e1}])")
    if not tensors:
        raise _bad(path, "its header holds no tensors" + (" (only __metadata__)" if header else "")
                   + ": not a checkpoint's weights")
    return tensors


def _safe_member(directory, name, what) -> str:
    """``name`` as a plain file of ``directory`` (an index is untrusted: no paths out of it)."""
    if not isinstance(name, str) or not name or name != os.path.basename(name) or name in (".", "..") \
            or "\\" in name or "\0" in name:
        raise InputError(f"{what} names the file {name!r}, which is not a file of the folder '{directory}'")
    return os.path.join(directory, name)


def safetensors_files(directory, root=None) -> tuple:
    """(files, index weight_map or None) of the checkpoint in ``directory``: those its
    ``model.safetensors.index.json`` names, else ``model.safetensors``, else every
    ``*.safetensors``; ``([], None)`` when there is none. Anything present under those names is
    the checkpoint: one that cannot be read (a dangling symlink, a FIFO, a folder, a file outside
    ``root``) is an error when it is read, never a silent fall-back to the config's count."""
    root = directory if root is None else root
    index = os.path.join(directory, "model.safetensors.index.json")
    if os.path.lexists(index):
        raw = read_bounded(index, MAX_INDEX_BYTES, root, "safetensors index")
        try:
            data = json.loads(raw.decode("utf-8"), parse_constant=_no_constant)
        except (ValueError, RecursionError) as e:     # UnicodeDecodeError is a ValueError
            raise InputError(f"cannot read safetensors index '{index}': {str(e)[:160]}") from None
        wmap = data.get("weight_map") if isinstance(data, dict) else None
        if not isinstance(wmap, dict):
            raise InputError(f"safetensors index '{index}' has no weight_map object (tensor -> file)")
        files = sorted({_safe_member(directory, v, f"safetensors index '{index}'") for v in wmap.values()})
        for f in files:
            if not os.path.lexists(f):
                raise InputError(f"safetensors index '{index}' names '{os.path.basename(f)}', which is not "
                                 f"in the folder (an incomplete download?)")
        if not files:
            raise InputError(f"safetensors index '{index}' has an empty weight_map: it lists no tensors")
        return files, wmap
    single = os.path.join(directory, "model.safetensors")
    if os.path.lexists(single):
        return [single], None
    try:
        names = os.listdir(directory)
    except OSError as e:
        raise InputError(f"cannot list the checkpoint folder '{directory}': {e.strerror or e}") from None
    files = sorted(os.path.join(directory, f) for f in names if f.endswith(".safetensors"))
    return files, None


def read_checkpoint(directory, root=None) -> Checkpoint | None:
    """The tensors of the safetensors checkpoint in ``directory``, or None when it has none. Every
    file read is a regular file whose real path lies inside ``root`` (default: ``directory``)."""
    root = directory if root is None else root
    files, wmap = safetensors_files(directory, root)
    if not files:
        return None
    tensors, seen, notes = [], {}, []
    for f in files:
        for t in read_header(f, root):
            if t.name in seen:
                raise InputError(f"tensor '{t.name[:80]}' is in both '{os.path.basename(seen[t.name])}' and "
                                 f"'{os.path.basename(f)}' of the checkpoint '{directory}'")
            seen[t.name] = f
            tensors.append(t)
    if wmap is not None:
        missing = [k for k, v in wmap.items() if k not in seen]
        if missing:
            raise InputError(f"safetensors index of '{directory}' lists {len(missing)} tensor(s) that no "
                             f"header has, e.g. '{str(missing[0])[:80]}' (an incomplete download?)")
        extra = len(seen) - len(wmap)
        if extra > 0:
            notes.append(f"the headers list {extra} tensor(s) that model.safetensors.index.json does not; "
                         f"they are counted")
    elif len(files) > 1:
        notes.append(f"no model.safetensors.index.json: counted every *.safetensors file "
                     f"({', '.join(os.path.basename(f) for f in files)})")
    return Checkpoint("safetensors", files, tensors, notes)


# ---- quantization_config -> the quant option, confirmed by the headers ----

def _int_or_none(v):
    return v if _is_int(v) and v > 0 else None


def _quant_table() -> dict:
    """quant_method -> how to read it (formulas/quantization.json, documented in formulas/README.md)."""
    return json.loads(read_text(os.path.join(formulas_path(), "quantization.json")))["methods"]


def _scope(qc: dict, path):
    """The object at ``path`` in quantization_config ('*': the first value of an object that has
    the rest of the path), or None."""
    if not path:
        return qc if isinstance(qc, dict) else None
    if not isinstance(qc, dict):
        return None
    key, rest = path[0], path[1:]
    if key != "*":
        return _scope(qc.get(key), rest)
    for v in qc.values():
        found = _scope(v, rest)
        if found is not None:
            return found
    return None


def _first_present(scope: dict, keys):
    for k in keys:
        if k in scope:
            return scope[k]
    return None


def _holds(clause: dict, scope: dict, values: dict) -> bool:
    if "any_true" in clause and not any(scope.get(k) for k in clause["any_true"]):
        return False
    return all(values.get(k) == v for k, v in clause.get("equals", {}).items())


def quantization(config: dict, tensors, confirm: bool = True) -> tuple:
    """(quant choice or None, group size or None, notes) for a checkpoint's ``quantization_config``,
    by the table in formulas/quantization.json, confirmed against its tensors' names and dtypes
    (``confirm``; a config.json given alone has no tensors to confirm it by, and its notes say so:
    a method without a formula is a WARNING that the weights are counted unquantized)."""
    qc = config.get("quantization_config")
    unread = (": weights from the headers only" if confirm else
              ": WARNING: the weights are counted unquantized (config.json only; --quant picks a format)")
    if qc is None:
        return None, None, []
    if not isinstance(qc, dict):
        return None, None, ["quantization_config is not an object" + unread]
    method = str(qc.get("quant_method", "")).lower()
    spec = _quant_table().get(method)
    if not isinstance(spec, dict):
        shown = method or repr(qc.get("quant_method"))
        return None, None, [f"quantization method '{shown[:40]}' has no formula in formulas/dtypes.vram" + unread]
    scope = _scope(qc, spec.get("scope", []))
    if scope is None:
        return None, None, [spec["no_scope"] + unread]
    values, shown = {}, {"method": method}
    for var, r in spec.get("read", {}).items():
        v = _first_present(scope, r["keys"])
        if r.get("text"):
            v = str(v if any(k in scope for k in r["keys"]) else "").lower()
            shown[var] = v or r.get("shown_if_empty", "")
        else:
            shown[var] = v
        values[var] = v
    for case in spec["cases"]:
        if all(_holds(c, scope, values) for c in case.get("when", [])):
            break
    else:
        return None, None, [spec["otherwise"].format(**shown) + unread]
    choice, group, notes = case["quant"], None, []
    gs = case.get("group_size")
    if gs is not None:
        raw = _first_present(scope, gs["keys"])
        group = _int_or_none(raw)
        if group is None and "note_if_unset" in gs:
            notes.append(gs["note_if_unset"].format_map({**shown, "group_size": raw}))
    if not confirm:
        return choice, group, notes + [f"quantization_config (quant_method {method}) selects quant={choice}: the "
                                       f"weights are counted in that format (config.json only, no weight files "
                                       f"to confirm it; --quant none counts them unquantized)"]
    return choice, group, notes + _confirm(choice, tensors, _tensor_test(case["confirm"]), case["confirm"]["what"])


def _tensor_test(c: dict):
    """A test (name, dtype) -> bool from a case's ``confirm``: the name ends with one of ``suffix`` or
    contains one of ``contains`` (when either is given), and the dtype is one of ``dtype`` (when given)."""
    suffix, contains, dtypes = tuple(c.get("suffix", ())), tuple(c.get("contains", ())), c.get("dtype")

    def test(name, dtype):
        if (suffix or contains) and not (name.endswith(suffix) or any(x in name for x in contains)):
            return False
        return dtypes is None or dtype in dtypes
    return test


def _confirm(choice, tensors, test, what) -> list:
    if any(test(t.name, t.dtype) for t in tensors):
        return [f"quantization_config selects quant={choice}; the headers confirm it ({what})"]
    return [f"WARNING: quantization_config selects quant={choice}, but the headers have no {what}: "
            f"the formula's count is likely wrong for this checkpoint (the weights come from the headers)"]


def checkpoint_fields(ckpt: Checkpoint, config: dict) -> tuple:
    """(config fields the formula files read, notes) for a checkpoint: its header byte total
    and, from its quantization_config, the quant choice and group size."""
    fields = {"ckpt_weights_source": "file", "ckpt_weight_bytes": ckpt.total_bytes, "ckpt_format": ckpt.format}
    by = ", ".join(f"{k} {v:,} B" for k, v in ckpt.bytes_by_dtype().items())
    notes = [f"weights from the {ckpt.format} headers: {len(ckpt.tensors):,} tensors in {len(ckpt.files)} "
             f"file(s), {ckpt.total_bytes:,} B ({by}); --weights-source formula counts them from the config instead"]
    notes += ckpt.notes
    if ckpt.format == "safetensors":
        fields["ckpt_embd_bytes"] = sum(t.nbytes for t in ckpt.tensors
                                        if t.name.endswith(("embed_tokens.weight", "wte.weight", "word_embeddings.weight")))
        quant, group, qnotes = quantization(config, ckpt.tensors)
        if quant is not None:
            fields["ckpt_quant"] = quant
        if group is not None:
            fields["ckpt_group_size"] = group
        notes += qnotes
    return fields, notes


def read_folder(path, name=None, source=None, hf_id=None, root=None) -> Found:
    """A folder with a config.json, and its safetensors checkpoint when it has one. Every file read
    must lie inside ``root`` (default: the folder itself)."""
    root = path if root is None else root
    cfg_path = os.path.join(path, "config.json")
    raw = read_config(cfg_path, root)
    name = name or os.path.basename(os.path.abspath(path))
    ckpt = read_checkpoint(path, root)
    if ckpt is None:
        return Found(raw, name, source or cfg_path, hf_id)
    config = raw.get("text_config") if isinstance(raw.get("text_config"), dict) else raw
    fields, notes = checkpoint_fields(ckpt, {**raw, **config})
    return Found(raw, name, source or path, hf_id, fields=fields, notes=tuple(notes), checkpoint=ckpt.summary())
