"""GPU capacities from formulas/gpus.json (memory as the driver reports it, in MiB)."""
from __future__ import annotations

import json
import re

from .capacity import parse_size
from ..errors import InputError, suggest
from .paths import formulas_path, read_text


class GPU:
    __slots__ = ("name", "memory_mib", "marketed", "vendor", "kind", "source", "aliases", "inputs",
                 "working_set_bytes", "working_set_source")

    def __init__(self, name: str, memory_mib: int, marketed: str, vendor: str, kind: str, source: str,
                 aliases: tuple[str, ...] = (), inputs=None, working_set_bytes=None, working_set_source=""):
        self.name, self.memory_mib, self.marketed, self.vendor = name, memory_mib, marketed, vendor
        self.kind, self.source, self.aliases = kind, source, tuple(aliases)
        self.inputs = dict(inputs or {})   # formula inputs (by alias) this card fixes, e.g. cuda_total
        # unified memory (Apple silicon): the part the GPU may use, Metal's recommendedMaxWorkingSetSize
        self.working_set_bytes, self.working_set_source = working_set_bytes, working_set_source

    @property
    def capacity_bytes(self) -> int:
        """What a job on this device may take: the driver's total, or on unified memory the GPU's
        working-set limit."""
        return self.working_set_bytes if self.working_set_bytes is not None else self.memory_mib * 2**20


def _norm(s: str) -> str:
    return re.sub(r"[^a-z0-9]", "", s.lower())


def catalog() -> list[GPU]:
    data = json.loads(read_text(formulas_path() + "/gpus.json"))
    return [GPU(g["name"], int(g["memory_mib"]), g.get("marketed", ""), g.get("vendor", ""),
                g.get("kind", ""), g.get("memory_mib_source", ""), tuple(g.get("aliases", ())), g.get("inputs"),
                int(g["working_set_bytes"]) if "working_set_bytes" in g else None, g.get("working_set_source", ""))
            for g in data["gpus"]]


def find_gpu(name: str) -> GPU:
    key = _norm(name)
    gpus = catalog()
    for g in gpus:
        if key in {_norm(g.name), *(_norm(a) for a in g.aliases)}:
            return g
    names = [g.name for g in gpus]
    hint = suggest(name.lower(), names)
    raise InputError(f"unknown GPU '{name}'" + (f"; did you mean {', '.join(hint)}?" if hint else "") +
                     "; give a size such as 24GB or 24GiB, or run `vramsym gpus`")


def resolve_capacity(text: str) -> tuple[int, str]:
    """'24GB' / '24GiB' / '80000MiB' / 'rtx-4090' -> (bytes, description)."""
    t = str(text).strip()
    if t.startswith("-") and t[1:2].isdigit():
        raise InputError(f"a memory size must be positive, got '{t}'")
    if t and t[0].isdigit():
        try:
            n = parse_size(t)
            return n, t
        except InputError:
            # '4090' is a GPU name, not a size
            if not re.fullmatch(r"\d+", t):
                raise
    try:
        g = find_gpu(t)
    except InputError:
        if re.fullmatch(r"[\d_.]+", t):
            raise InputError(f"'{t}' has no unit and is not a GPU name: write {t}GB (10^9 bytes) or "
                             f"{t}GiB (2^30 bytes), or a GPU name (`vramsym gpus`)") from None
        raise
    how = ("as reported by the driver" if g.source.startswith("driver report")
           else "(the marketed size read as GiB; no driver report recorded)")
    desc = f"{g.name}, {g.marketed}: {g.memory_mib:,} MiB {how}"
    if g.working_set_bytes is not None:
        desc = (f"{g.name}, {g.marketed}: the GPU's working set (Metal's recommendedMaxWorkingSetSize) of "
                f"{g.memory_mib:,} MiB unified, which the system and every other app share")
    key = _norm(t)
    others = [o.name for o in catalog() if o.name != g.name and _norm(o.name).startswith(key)]
    if others and _norm(g.name) != key:
        desc += f"; '{t}' is read as {g.name}, name {', '.join(others)} for the other card{'s' if len(others) > 1 else ''}"
    return g.capacity_bytes, desc


def gpu_inputs(text) -> dict:
    """The formula inputs a named GPU fixes (``inputs`` in gpus.json, e.g. ``cuda_total``); {} for a size."""
    t = str(text).strip()
    try:
        resolved = resolve_capacity(t)
    except InputError:
        return {}
    if resolved[1] == t:   # a size such as 80GB
        return {}
    return dict(find_gpu(t).inputs)
